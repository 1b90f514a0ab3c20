;;; tandem-parallel-tests.el --- Parallel sessions, landed from Emacs  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, a real git repository, real turns
;; against the fake OpenAI server.  Two parallel sessions edit a.txt in
;; their worktrees; `tandem-land' of the first takes everything cleanly
;; (and offers to remove the worktree); of the second, `a' takes one
;; hunk (merged cleanly, the open buffer follows), the rest meets a buffer
;; with unsaved edits (refused), then merges three ways: the conflict is
;; written with markers and the file's buffer is in `smerge-mode'.  The
;; overview groups both under the project and says "landed".

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-parallel)
(require 'tandem-overview)
(require 'smerge-mode)

(defconst tandem-parallel-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "The directory of this file.")

(defconst tandem-parallel-test--old
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 20) "")
  "a.txt as committed.")

(defun tandem-parallel-test--read (file)
  "Return FILE's contents."
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(defun tandem-parallel-test--make (project name)
  "Run `tandem-parallel' NAME from a buffer of PROJECT; return the new session's id."
  (with-temp-buffer
    (setq default-directory project)
    (plist-get (plist-get (tandem-parallel name) :record) :session)))

(defun tandem-parallel-test--turn (session text)
  "Run one chat turn TEXT of SESSION to its successful end."
  (tandem-send text session)
  (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded")))

(ert-deftest tandem-parallel-land-cleanly-then-with-a-conflict-in-smerge ()
  "Two parallel sessions edit a.txt; the second landing opens the conflict in smerge-mode."
  (tandem-test-with-fake-openai (expand-file-name "scripts/parallel-two-sessions.json"
                                                  tandem-parallel-test--dir)
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (trees (make-temp-file "tandem-trees-" t))
           (tandem-parallel-directory trees)
           (a (expand-file-name "a.txt" project))
           (asked nil)
           (tandem-parallel-confirm-function (lambda (p) (push p asked) nil)))
      (unwind-protect
          (progn
            (write-region tandem-parallel-test--old nil a)
            (call-process "git" nil nil nil "add" "a.txt")
            (call-process "git" nil nil nil "-c" "user.name=t" "-c" "user.email=t@t"
                          "commit" "-qm" "init")
            (let* ((main (plist-get (tandem-request "sessions/new"
                                                    (list :cwd (directory-file-name project)))
                                    :id))
                   (one (tandem-parallel-test--make project "A"))
                   (two (tandem-parallel-test--make project "B"))
                   (wa (expand-file-name "A" trees)))
              (should (file-exists-p (expand-file-name ".git" wa)))
              (should (equal (plist-get (tandem-request "parallel/record" (list :session one))
                                        :parent-session)
                             main))
              (tandem-parallel-test--turn one "edit in A")
              (tandem-parallel-test--turn two "edit in B")
              ;; Land A: everything, cleanly; the removal is offered (and declined).
              (let ((land (tandem-land one)))
                (with-current-buffer land
                  (should (eq major-mode 'diff-mode))
                  (should tandem-land-mode)
                  (let ((map (alist-get 'tandem-land-mode tandem-land--keys)))
                    (should (eq (lookup-key map "a") #'tandem-land-hunk))
                    (should (eq (lookup-key map "A") #'tandem-land-file))
                    (should (eq (lookup-key map (kbd "RET")) #'tandem-land-all)))
                  (should (string-match-p "^\\+\\+\\+ b/a_only.txt" (buffer-string)))
                  (tandem-land-all)))
              (should (string-match-p "line 2 from A" (tandem-parallel-test--read a)))
              (should (file-exists-p (expand-file-name "a_only.txt" project)))
              (should (string-match-p "Remove worktree .*A and branch tandem/A" (car asked)))
              (should (file-directory-p wa))
              ;; The overview: both under the project, A landed.
              (with-current-buffer (tandem-sessions-list)
                (let* ((row (cl-find one tandem-overview--rows
                                     :key (lambda (r) (plist-get r :id)) :test #'equal))
                       (cells (cadr (tandem-overview--entry row))))
                  (should (equal (aref cells 1) "✓ landed"))
                  (should (string-match-p "⑂ A .* 2 files \\+2 −1" (aref cells 7)))))
              ;; Land B: one hunk, then the rest.
              (let ((visiting (find-file-noselect a)))
                (let ((land (tandem-land two)))
                  ;; a on B's second hunk (line 19): merged into A's landing cleanly.
                  (with-current-buffer land
                    (goto-char (point-min))
                    (re-search-forward "^\\+\\+\\+ b/a.txt$")
                    (re-search-forward "^@@" nil t 2)
                    (forward-line 1)
                    (should (null (plist-get (tandem-land-hunk) :conflicts)))
                    (should (string-match-p "✓ landed"
                                            (mapconcat (lambda (o) (or (overlay-get o 'after-string) ""))
                                                       (overlays-in (point-min) (point-max)) ""))))
                  (let ((now (tandem-parallel-test--read a)))
                    (should (string-match-p "line 2 from A\n" now))
                    (should (string-match-p "line 19 from B\n" now)))
                  ;; Everything else: refused while a.txt's buffer has unsaved edits.
                  (with-current-buffer visiting
                    (should (string-match-p "line 19 from B" (buffer-string))) ; reverted
                    (goto-char (point-max))
                    (insert "unsaved\n"))
                  (should-error (with-current-buffer land (tandem-land-all)) :type 'user-error)
                  (should-not (string-match-p "<<<<<<<" (tandem-parallel-test--read a)))
                  (with-current-buffer visiting (revert-buffer t t))
                  (with-current-buffer land (tandem-land-all)))
                (with-current-buffer visiting
                  (should smerge-mode)
                  (should (string-match-p
                           "<<<<<<< main\nline 2 from A\n=======\nline 2 from B\n>>>>>>> tandem/B"
                           (buffer-string)))
                  (should (string-match-p "line 19 from B" (buffer-string)))
                  (set-buffer-modified-p nil)
                  (kill-buffer)))
              ;; Remove both: the branches go, the journals stay.
              (dolist (s (list one two))
                (tandem-parallel-remove s t))
              (should-not (file-exists-p wa))
              (let ((default-directory project))
                (should (equal (with-output-to-string
                                 (call-process "git" nil standard-output nil
                                               "branch" "--list" "tandem/*"))
                               "")))))
        (ignore-errors (delete-directory trees t))))))

;; A tree on an agent-server host is no folder here: the session opens in the project.
(ert-deftest tandem-parallel-on-a-host-opens-in-the-project-and-names-the-host ()
  (let* ((project (file-name-as-directory (make-temp-file "tandem-par-host-" t)))
         (record (list :session "s2" :name "A" :host "box" :kind "worktree"
                       :worktree "/srv/p.tandem-worktrees/A" :branch "tandem/A"
                       :project project))
         sent shown)
    (unwind-protect
        (cl-letf (((symbol-function 'tandem-request)
                   (lambda (method params &rest _)
                     (push (cons method params) sent)
                     (pcase method
                       ("parallel/create" (list :record record :path "/j/s2.jsonl"))
                       ("sessions/open-file" (list :id "s2")))))
                  ((symbol-function 'tandem-project-session) (lambda (&rest _) "s1"))
                  ((symbol-function 'tandem-view-show) (lambda (info) (setq shown info))))
          (with-temp-buffer
            (setq default-directory project)
            (tandem-parallel "A"))
          (let ((open (cdr (assoc "sessions/open-file" sent))))
            (should (equal (plist-get open :cwd) (directory-file-name project)))
            (should (equal shown '(:id "s2"))))
          (should (equal (tandem-parallel--where record) "box:/srv/p.tandem-worktrees/A"))
          (should (string-match-p
                   "⑂ A box:/srv/p.tandem-worktrees/A @1a2b3c4 · 1 file \\+1 −0"
                   (tandem-overview--project
                    (list :project project
                          :parallel (list :name "A" :host "box" :base-commit "1a2b3c4d"
                                          :worktree "/srv/p.tandem-worktrees/A"
                                          :files 1 :additions 1 :deletions 0))))))
      (delete-directory project t))))

(provide 'tandem-parallel-tests)
;;; tandem-parallel-tests.el ends here
