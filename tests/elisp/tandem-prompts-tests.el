;;; tandem-prompts-tests.el --- Prompts that show their answer, review that follows, M-x in place  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs and a real backend (with the fake OpenAI server where
;; a turn runs).  The minibuffer is answered at Emacs's own seam,
;; `completing-read-function': the stand-in records the prompt and
;; answers what RET would (the default), or an empty string.
;;
;; - `M-x tandem-review-turn' proposes the latest turn that changed
;;   files, shows it in the prompt, and selects the review buffer;
;; - `k' reloads the review and marks the reverted hunk, and a reload
;;   from the journal keeps the mark;
;; - a rewind marks the open review of a discarded turn, its undo clears it;
;; - `C-c C-d' away from a directive proposes the nearest one; an empty
;;   answer is a sentence;
;; - Discuss result with one attempt takes it without asking;
;; - `M-x tandem-' with `command-completion-default-include-p' offers
;;   in `fundamental-mode' only the commands a user calls, each in the manual.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-review)
(require 'tandem-rewind)
(require 'tandem-view)
(require 'tandem-directive)
(require 'tandem-directive-menu)

(defconst tandem-prompts-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "The directory of this file.")

(defvar tandem-prompts-test--asked nil
  "Prompts the stand-in minibuffer was asked, newest first.")

(defun tandem-prompts-test--ret (prompt _collection &optional _pred _req _init _hist default
                                        &rest _)
  "Answer PROMPT as RET would: DEFAULT (its first element when a list), else \"\"."
  (push prompt tandem-prompts-test--asked)
  (or (if (consp default) (car default) default) ""))

(defun tandem-prompts-test--empty (prompt &rest _)
  "Answer PROMPT with an empty string, as a completion UI that ignores the default."
  (push prompt tandem-prompts-test--asked)
  "")

(defun tandem-prompts-test--never (prompt &rest _)
  "Fail: PROMPT should not have been asked."
  (ert-fail (format "asked %S" prompt)))

(defconst tandem-prompts-test--old
  (mapconcat (lambda (i) (format "line %d\n" i)) (number-sequence 1 20) "")
  "a.txt before turn 1.")

(defun tandem-prompts-test--two-turns (project)
  "In PROJECT, run turn 1 (edits a.txt in two hunks) and turn 2 (no file); return the session."
  (write-region tandem-prompts-test--old nil (expand-file-name "a.txt" project))
  (let ((session (plist-get (tandem-request "sessions/new"
                                            (list :cwd (directory-file-name project)))
                            :id)))
    (tandem-send "FIRST edit a" session)
    (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
    (tandem-send "SECOND say something" session)
    (should (equal (plist-get (tandem-wait-turn session 2 60) :outcome) "succeeded"))
    session))

(defun tandem-prompts-test--marks (buffer)
  "The `after-string's of BUFFER's reverted marks, in buffer order."
  (with-current-buffer buffer
    (delq nil (mapcar (lambda (ov) (and (overlay-get ov 'tandem-reverted)
                                        (overlay-get ov 'after-string)
                                        (substring-no-properties
                                         (overlay-get ov 'after-string))))
                      (sort (overlays-in (point-min) (point-max))
                            (lambda (a b) (< (overlay-start a) (overlay-start b))))))))

(defmacro tandem-prompts-test--with-two-turns (&rest body)
  "Run BODY with `session' holding two turns (see `tandem-prompts-test--two-turns')."
  (declare (indent 0) (debug t))
  `(tandem-test-with-fake-openai (expand-file-name "scripts/prompts-review.json"
                                                   tandem-prompts-test--dir)
     (let* ((tandem-permission-mode 'auto-edit)
            (default-directory project)
            (session (tandem-prompts-test--two-turns project)))
       ,@body)))

(ert-deftest tandem-prompts-review-turn-proposes-and-is-selected ()
  "M-x tandem-review-turn proposes the latest turn that changed files and selects the review."
  (tandem-prompts-test--with-two-turns
    (let ((tandem-prompts-test--asked nil)
          (completing-read-function #'tandem-prompts-test--ret))
      (save-window-excursion
        (let ((review (with-current-buffer (find-file-noselect
                                            (expand-file-name "a.txt" project))
                        (switch-to-buffer (current-buffer))
                        (let ((tandem-session session))
                          (call-interactively #'tandem-review-turn)))))
          ;; The prompt named its default: turn 1, the latest that changed files.
          (should (equal (car tandem-prompts-test--asked) "Review turn (default 1): "))
          (should (equal (buffer-local-value 'tandem-review--turn review) 1))
          ;; The review is the selected window's buffer, so k lands there.
          (should (eq (window-buffer (selected-window)) review))
          (kill-buffer review))))))

(ert-deftest tandem-prompts-k-refreshes-the-review ()
  "k reverts the hunk, and the review reloads with it marked; a reload keeps the mark."
  (tandem-prompts-test--with-two-turns
    (let ((review (save-window-excursion (tandem-review-turn session 1))))
      (with-current-buffer review
        (goto-char (point-min))
        (re-search-forward "^@@" nil t 2)
        (forward-line 1)
        (tandem-review-revert-hunk))
      (should (equal (with-temp-buffer
                       (insert-file-contents (expand-file-name "a.txt" project))
                       (buffer-string))
                     (replace-regexp-in-string "line 2\n" "LINE 2\n"
                                               tandem-prompts-test--old)))
      (should (equal (tandem-prompts-test--marks review) '("   ↶ reverted")))
      ;; The mark comes from the journal: a reload keeps it, on the second hunk.
      (with-current-buffer review
        (tandem-review-reload)
        (should (equal (tandem-prompts-test--marks review) '("   ↶ reverted")))
        (let ((mark (cl-find-if (lambda (ov) (overlay-get ov 'after-string))
                                (overlays-in (point-min) (point-max)))))
          (goto-char (overlay-start mark))
          (should (looking-back "^@@ -16,.*" (line-beginning-position)))))
      (kill-buffer review))))

(ert-deftest tandem-prompts-rewind-marks-the-open-review ()
  "A rewind marks the open review of a turn it discarded; its undo clears the mark."
  (tandem-prompts-test--with-two-turns
    (let ((review (save-window-excursion (tandem-review-turn session 1))))
      (with-current-buffer review (should-not header-line-format))
      (tandem-rewind session 1 t)
      (with-current-buffer review
        (should (stringp header-line-format))
        (should (string-match-p "Turn 1 was discarded by a rewind" header-line-format))
        (should (string-match-p "tandem-rewind-undo" header-line-format)))
      (tandem-rewind-undo session t)
      (with-current-buffer review (should-not header-line-format))
      (kill-buffer review))))

(ert-deftest tandem-prompts-review-of-a-rewound-turn-says-so ()
  "A review opened on a turn a rewind discarded carries the banner from the start."
  (tandem-prompts-test--with-two-turns
    (tandem-rewind session 1 t)
    (let ((review (save-window-excursion (tandem-review-turn session 1))))
      (with-current-buffer review
        (should (stringp header-line-format))
        (should (string-match-p "Turn 1 was discarded by a rewind" header-line-format)))
      (kill-buffer review))))

(ert-deftest tandem-prompts-directive-menu-away-from-a-directive ()
  "C-c C-d away from a directive proposes the nearest; an empty answer is a sentence."
  (tandem-test-with-backend
    (let* ((project (file-name-as-directory (make-temp-file "tandem-prompts-project-" t)))
           (default-directory project)
           (file (expand-file-name "m.txt" project))
           (tandem-prompts-test--asked nil))
      (unwind-protect
          (progn
            (write-region "alpha\nbeta\ngamma\ndelta\nepsilon\n" nil file)
            (should (equal (tandem-directive-create file 1 6 "Rename alpha") "D1"))
            (should (equal (tandem-directive-create file 18 24 "Rename delta") "D2"))
            (with-current-buffer (find-file-noselect file)
              (goto-char (point-max))
              ;; RET takes the default: D2, nearest point; the prompt shows it.
              (let ((completing-read-function #'tandem-prompts-test--ret))
                (should (equal (tandem-directive-id-at-point t) "D2"))
                (should (equal (car tandem-prompts-test--asked)
                               "Directive (default D2): ")))
              ;; An empty answer is a user error with a sentence, not a Lisp error.
              (let* ((completing-read-function #'tandem-prompts-test--empty)
                     (err (should-error (call-interactively #'tandem-directive-menu)
                                        :type 'user-error)))
                (should (equal (cadr err) "No directive given (TAB lists the choices)")))
              (kill-buffer (current-buffer))))
        (when transient--prefix (transient--emergency-exit))
        (delete-directory project t)))))

(ert-deftest tandem-prompts-single-attempt-taken-without-asking ()
  "Discuss result on a directive with one attempt uses it; nothing is asked."
  (tandem-test-with-fake-openai (expand-file-name "scripts/directive-scenario.json"
                                                  tandem-prompts-test--dir)
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (file (expand-file-name "a.txt" project)))
      (write-region "hello\nworld\n" nil file)
      (let* ((session (plist-get (tandem-request "sessions/new"
                                                 (list :cwd (directory-file-name project)))
                                 :id))
             (id (tandem-directive-create file 1 7 "Make the greeting loud"))
             (view (tandem-directive-session-buffer session project t)))
        (tandem-directive-act id 'implement)
        (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
        (let ((tandem-directive--menu-id id)
              (tandem-directive--menu-root (directory-file-name project))
              (tandem-directive--menu-record (tandem-directive-record id project))
              (completing-read-function #'tandem-prompts-test--never)
              (current-prefix-arg nil))
          (should (= 1 (length (plist-get tandem-directive--menu-record :attempts))))
          (tandem-directive--menu-act 'discuss-result))
        (with-current-buffer view
          (should (equal (tandem-composer-scope) (list :directive id :action 'discuss-result)))
          (should (equal tandem-directive--scope-attempt 1)))))))

(defconst tandem-prompts-test--user-commands
  '(tandem tandem-acp-set-mode tandem-acp-set-model tandem-answer tandem-best-of
    tandem-cancel-turn tandem-compact tandem-compact-cancel tandem-compact-status tandem-continue
    tandem-directive tandem-directive-archive tandem-directive-edit tandem-directive-menu
    tandem-directive-reattach tandem-directive-rebind tandem-directive-rewind-before
    tandem-directive-show-result
    tandem-directive-view-changes tandem-directives tandem-doctor tandem-indicator-mode
    tandem-fork-session tandem-inspect-directive tandem-install-backend tandem-manual tandem-mcp
    tandem-notify-visit
    tandem-open-session-file tandem-land tandem-parallel tandem-parallel-remove
    tandem-permissions
    tandem-remote-attach tandem-remote-detach tandem-remote-hosts-status
    tandem-remote-upload tandem-rename-session tandem-restart tandem-resume tandem-review-turn tandem-rewind
    tandem-rewind-undo tandem-session-menu tandem-sessions-list tandem-set-provider
    tandem-setup tandem-show-events tandem-start tandem-stop tandem-switch-session
    tandem-trust-project tandem-untrust-project tandem-view-turn-patch)
  "The commands a user calls by name from any buffer.")

(defun tandem-prompts-test--offered (buffer)
  "The tandem commands M-x offers in BUFFER with the mode-aware predicate, sorted."
  (let ((out nil))
    (mapatoms (lambda (sym)
                (when (and (commandp sym)
                           (string-match-p "\\`tandem\\(-\\|\\'\\)" (symbol-name sym))
                           (command-completion-default-include-p sym buffer))
                  (push sym out))))
    (sort out #'string<)))

(ert-deftest tandem-prompts-m-x-offers-what-a-user-calls ()
  "In fundamental-mode, M-x tandem- offers the user's commands only, each in the manual."
  (let ((manual (with-temp-buffer
                  (insert-file-contents (expand-file-name "../../doc/tandem.texi"
                                                          tandem-prompts-test--dir))
                  (buffer-string))))
    (with-temp-buffer
      (fundamental-mode)
      (let ((offered (tandem-prompts-test--offered (current-buffer))))
        ;; Nothing of the composer, the menus' suffixes, the lists, the review.
        (should-not (cl-remove-if-not
                     (lambda (s) (string-match-p "\\`tandem-\\(composer\\|directive-menu-\\|\
sessions-list-\\|directives-\\|review-\\(revert\\|ediff\\|reload\\|mode\\)\\|view-\\(mode\\|\
refresh\\|toggle\\|next\\|previous\\|cancel\\|goto\\|load\\)\\|mcp-\\|inspector-\\)"
                                                 (symbol-name s)))
                     offered))
        (should (equal offered (sort (copy-sequence tandem-prompts-test--user-commands)
                                     #'string<)))
        ;; Each is where a user looks for it.
        (dolist (command offered)
          (should (string-match-p (format "\\(M-x \\|@code{\\|@findex \\)%s[^a-z-]"
                                          (regexp-quote (symbol-name command)))
                                  manual)))))
    ;; In their own buffers the mode-internal commands are offered.
    (with-temp-buffer
      (tandem-sessions-list-mode)
      (should (memq 'tandem-sessions-list-resume
                    (tandem-prompts-test--offered (current-buffer)))))
    (with-temp-buffer
      (diff-mode)
      (tandem-review-mode 1)
      (should (memq 'tandem-review-revert-hunk
                    (tandem-prompts-test--offered (current-buffer)))))))

(provide 'tandem-prompts-tests)
;;; tandem-prompts-tests.el ends here
