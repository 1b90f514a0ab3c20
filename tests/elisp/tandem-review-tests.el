;;; tandem-review-tests.el --- Review a turn, and every session at a glance  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, real checkpoints, a real HTTP server
;; speaking the OpenAI streaming format.  A turn edits two files; its
;; review reverts one hunk, and the next turn's pre-turn checkpoint holds
;; the file as reverted; a revert after an outside edit is refused.  The
;; overview follows a turn in another project's session through running,
;; waiting for you and idle, from events alone.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-review)
(require 'tandem-overview)
(require 'tandem-view)

(defconst tandem-review-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "The directory of this file.")

(defconst tandem-review-test--old
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 20) "")
  "a.txt before turn 1.")

(defun tandem-review-test--read (file)
  "Return FILE's contents, or nil when it does not exist."
  (and (file-exists-p file)
       (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun tandem-review-test--hunk (buffer path n)
  "Move point in BUFFER to the Nth hunk (1-based) of PATH's section."
  (with-current-buffer buffer
    (goto-char (point-min))
    (should (re-search-forward (format "^\\+\\+\\+ b/%s$" (regexp-quote path)) nil t))
    (dotimes (_ n) (should (re-search-forward "^@@" nil t)))
    (forward-line 1)))

(ert-deftest tandem-review-revert-a-hunk-of-a-two-file-turn ()
  "Review a two-file turn, revert one hunk: the file and the next pre-turn checkpoint agree."
  (tandem-test-with-fake-openai (expand-file-name "scripts/review-two-files.json"
                                                  tandem-review-test--dir)
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (a (expand-file-name "a.txt" project))
           (b (expand-file-name "b.txt" project)))
      (write-region tandem-review-test--old nil a)
      (let* ((info (tandem-request "sessions/new" (list :cwd (directory-file-name project))))
             (session (plist-get info :id))
             (view (tandem-view-show info t)))
        (tandem-send "FIRST edit two files" session)
        (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
        (let ((review (tandem-review-turn session 1)))
          (with-current-buffer review
            (should (eq major-mode 'diff-mode))
            (should tandem-review-mode)
            (should buffer-read-only)
            (should (string-match-p "^\\+\\+\\+ b/a.txt" (buffer-string)))
            (should (string-match-p "^\\+\\+\\+ b/b.txt" (buffer-string)))
            ;; The buffer's emulation map (outranking diff-mode's read-only k);
            ;; `key-binding' would also see a transient menu another test left.
            (let ((map (alist-get 'tandem-review-mode tandem-review--keys)))
              (should (memq 'tandem-review--keys emulation-mode-map-alists))
              (should (eq (lookup-key map "k") #'tandem-review-revert-hunk))
              (should (eq (lookup-key map "K") #'tandem-review-revert-file))
              (should (eq (lookup-key map "e") #'tandem-review-ediff))))
          ;; k on the second hunk of a.txt (line 19) reverts that hunk only.
          (tandem-review-test--hunk review "a.txt" 2)
          (let ((entry (with-current-buffer review (tandem-review-revert-hunk))))
            (should (equal (plist-get entry :type) "revert"))
            (should (equal (plist-get entry :hunk) 1)))
          (should (equal (tandem-review-test--read a)
                         (replace-regexp-in-string "line 2\n" "LINE 2\n"
                                                   tandem-review-test--old)))
          (should (equal (tandem-review-test--read b) "bee\n"))
          ;; The session buffer shows the revert entry as it arrives.
          (tandem-test-wait-until
           (lambda () (with-current-buffer view
                        (string-match-p "↶ Reverted hunk 2 of a.txt of turn 1"
                                        (buffer-substring-no-properties (point-min)
                                                                        (point-max)))))
           10)
          ;; The next turn starts from the reverted file: its pre-turn checkpoint
          ;; and the files now differ only by what turn 2 wrote.
          (tandem-send "SECOND write c" session)
          (should (equal (plist-get (tandem-wait-turn session 2 60) :outcome) "succeeded"))
          (let* ((entries (plist-get (tandem-request "sessions/entries"
                                                     (list :session session :limit 1000))
                                     :entries))
                 (start (cl-find-if (lambda (e) (and (equal (plist-get e :type) "turn_start")
                                                     (equal (plist-get e :turn) 2)))
                                    entries))
                 (patch (tandem-request "checkpoints/diff"
                                        (list :root (directory-file-name project)
                                              :start (plist-get start :checkpoint)))))
            (should (cl-find-if (lambda (e) (equal (plist-get e :type) "revert")) entries))
            (should (equal (mapcar (lambda (f) (plist-get f :path)) (plist-get patch :files))
                           '("c.txt"))))
          ;; An edit by hand, then k on the first hunk: refused, nothing changes.
          (write-region "by hand\n" nil a t)
          (let ((before (tandem-review-test--read a)))
            (tandem-review-test--hunk review "a.txt" 1)
            (let ((err (should-error (with-current-buffer review (tandem-review-revert-hunk))
                                     :type 'tandem-error)))
              (should (equal (tandem-error-code err) "stale"))
              (should (string-match-p "changed since the turn" (tandem-error-message err))))
            (should (equal (tandem-review-test--read a) before)))
          ;; K on b.txt (created by the turn) deletes it, after the question.
          (tandem-review-test--hunk review "b.txt" 1)
          (let* ((asked nil)
                 (tandem-review-confirm-function (lambda (p) (setq asked p) t)))
            (with-current-buffer review (tandem-review-revert-file))
            (should (string-match-p "Revert b.txt to before turn 1" asked)))
          (should-not (file-exists-p b))
          ;; e: ediff of a.txt against its version before the turn.
          (tandem-review-test--hunk review "a.txt" 1)
          (let ((old (with-current-buffer review (tandem-review-ediff))))
            (should (buffer-live-p old))
            (with-current-buffer old
              (should (equal (buffer-string) tandem-review-test--old))
              (should buffer-read-only))
            (should (get-buffer "*Ediff Control Panel*"))
            (ignore-errors (with-current-buffer "*Ediff Control Panel*"
                             (let ((ediff-keep-variants nil)) (ediff-really-quit nil))))))))))

(defun tandem-review-test--row (session)
  "The overview row of SESSION in the overview buffer, or nil."
  (with-current-buffer tandem-overview--buffer-name
    (cl-find session tandem-overview--rows :key (lambda (r) (plist-get r :id)) :test #'equal)))

(defun tandem-review-test--line (session)
  "The overview buffer's line for SESSION, as text."
  (with-current-buffer tandem-overview--buffer-name
    (save-excursion
      (goto-char (point-min))
      (and (search-forward (substring session 0 13) nil t)
           (buffer-substring-no-properties (line-beginning-position) (line-end-position))))))

(ert-deftest tandem-overview-follows-a-turn-in-another-project ()
  "The overview shows running, then waiting for you, then idle, from events."
  (tandem-test-with-fake-openai (expand-file-name "scripts/overview-permission.json"
                                                  tandem-review-test--dir)
    (let* ((tandem-permission-mode 'ask)
           (other (make-temp-file "tandem-other-project-" t))
           (default-directory project)
           (asked nil)
           (tandem-event-functions
            (list (lambda (e) (when (equal (plist-get e :kind) "interaction")
                                (setq asked (plist-get e :interaction-id)))))))
      (unwind-protect
          (let* ((here (plist-get (tandem-request "sessions/new"
                                                  (list :cwd (directory-file-name project)
                                                        :title "here"))
                                  :id))
                 (there (plist-get (tandem-request "sessions/new" (list :cwd other
                                                                        :title "there"))
                                   :id))
                 (list (save-window-excursion (tandem-sessions-list))))
            (should (equal (buffer-name list) tandem-overview--buffer-name))
            (should (equal (plist-get (tandem-review-test--row here) :state) "idle"))
            (tandem-send "please write notes" there)
            (tandem-test-wait-until
             (lambda () (equal (plist-get (tandem-review-test--row there) :state) "running"))
             30)
            (should (string-match-p "▶ running turn 1" (tandem-review-test--line there)))
            (tandem-test-wait-until
             (lambda () (equal (plist-get (tandem-review-test--row there) :state) "waiting"))
             30)
            (let ((line (tandem-review-test--line there)))
              (should (string-match-p "waiting for you: .*notes.txt" line))
              (should (string-match-p "native openai:gpt-test" line)))
            ;; Waiting sorts first.
            (should (equal (plist-get (car (buffer-local-value 'tandem-overview--rows list))
                                      :id)
                           there))
            (should (equal (plist-get (tandem-review-test--row here) :state) "idle"))
            (tandem-request "turns/answer" (list :session there :interaction-id asked
                                                 :answer "allow_once"))
            (tandem-test-wait-until
             (lambda () (equal (plist-get (tandem-review-test--row there) :state) "idle"))
             30)
            (should (equal (plist-get (tandem-wait-turn there 1 30) :outcome) "succeeded"))
            (tandem-test-wait-until
             (lambda () (equal (plist-get (tandem-review-test--row there) :turns) 1)) 10)
            ;; / filters; k closes the live session at point.
            (with-current-buffer list
              (tandem-sessions-list-filter "there")
              (should (tandem-review-test--line there))
              (should-not (tandem-review-test--line here))
              (tandem-sessions-list-filter "")
              (goto-char (point-min))
              (search-forward (substring here 0 13))
              (tandem-sessions-list-close)
              (should (equal (plist-get (tandem-review-test--row here) :state) "closed"))
              (should (string-match-p "closed" (tandem-review-test--line here))))
            (kill-buffer list))
        (ignore-errors (delete-directory other t))))))

(provide 'tandem-review-tests)
;;; tandem-review-tests.el ends here
