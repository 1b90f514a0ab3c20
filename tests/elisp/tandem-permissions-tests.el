;;; tandem-permissions-tests.el --- Permission rules against a real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, the fake OpenAI server: a kept rule lets
;; `git status' through the shell tool without a question and the call's
;; row names the rule; `A' on a question keeps a rule; `tandem-permissions'
;; lists the rules and deletes the one at point.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-permissions)

(defconst tandem-permissions-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "Folder of this file.")

(defvar tandem-permissions-test--events nil
  "Events seen by the running test.")

(defun tandem-permissions-test--script ()
  "Return the fake model's script: one `git status -s' through the shell tool."
  (expand-file-name "scripts/shell-git-status.json" tandem-permissions-test--dir))

(defun tandem-permissions-test--text (buffer)
  "Return BUFFER's text without properties."
  (with-current-buffer buffer (buffer-substring-no-properties (point-min) (point-max))))

(defmacro tandem-permissions-test--clean (&rest body)
  "Run BODY with no rule kept before, and none left after (other tests share the file)."
  (declare (indent 0) (debug t))
  `(progn (tandem-permissions-test--clear)
          (unwind-protect (progn ,@body) (ignore-errors (tandem-permissions-test--clear)))))

(defun tandem-permissions-test--clear ()
  "Remove every rule from the user's (test) settings file: each test starts with none."
  (tandem-request "settings/save-user" (list :settings-json "{\"permission_rules\": null}"))
  (should (null (plist-get (tandem-request "permissions/rules" nil) :rules))))

(ert-deftest tandem-permissions-rule-allows-git-status-without-asking ()
  "A kept shell rule runs `git status -s' unasked; the row and journal name the rule."
  (tandem-test-with-fake-openai (tandem-permissions-test--script)
				(setq tandem-permissions-test--events nil)
				(let ((tandem-permission-mode 'ask)
				      (hook (lambda (e) (push e tandem-permissions-test--events))))
				  (add-hook 'tandem-event-functions hook)
				  (unwind-protect
				      (tandem-permissions-test--clean
				       (tandem-request "permissions/add-rule" (list :tool "shell" :pattern "git status"))
				       (let* ((session (tandem-project-session project))
					      (turn (cdr (tandem-send "What changed?" session))))
					 (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome)
							"succeeded"))
					 (should-not (seq-find (lambda (e) (equal (plist-get e :kind) "interaction"))
							       tandem-permissions-test--events))
					 (let* ((entries (mapcar (lambda (e) (plist-get e :entry))
								 tandem-permissions-test--events))
						(call (seq-find (lambda (e) (equal (plist-get e :type) "tool_call"))
								entries))
						(result (seq-find (lambda (e) (equal (plist-get e :type) "tool_result"))
								  entries)))
					   (should (equal (plist-get call :decided-by)
							  "rule: shell git status (everywhere)"))
					   (should (equal (plist-get result :status) "completed")))
					 (tandem-view-open project)
					 (let ((view (tandem-view-buffer session)))
					   (should (tandem-test-wait-until
						    (lambda ()
						      (string-match-p
						       "⚙ shell .*\\[completed\\] · rule: shell git status (everywhere)"
						       (tandem-permissions-test--text view)))
						    20)))))
				    (remove-hook 'tandem-event-functions hook)))))

(ert-deftest tandem-permissions-always-on-a-question-keeps-a-rule ()
  "`A' on the question proposes the prefix and this project, keeps the rule, allows once."
  (tandem-test-with-fake-openai (tandem-permissions-test--script)
				(let ((tandem-permission-mode 'ask)
				      (prompts nil))
				  (tandem-permissions-test--clean
				   (let* ((session (tandem-project-session project))
					  (turn (cdr (tandem-send "What changed?" session))))
				     (tandem-view-open project)
				     (let* ((view (tandem-view-buffer session))
					    (pos (tandem-test-wait-until
						  (lambda ()
						    (with-current-buffer view
						      (let ((at (next-single-property-change (point-min)
											     'tandem-interaction)))
							(and at (get-text-property at 'tandem-interaction) at))))
						  20)))
				       (with-current-buffer view
					 (should (string-match-p "\\[A\\] Always" (tandem-permissions-test--text view)))
					 (cl-letf (((symbol-function 'read-string)
						    (lambda (p _init _hist def &rest _) (push p prompts) def))
						   ((symbol-function 'completing-read)
						    (lambda (p _coll &optional _pred _req _init _hist def &rest _)
						      (push p prompts) def)))
						  (goto-char pos)
						  (should (eq (key-binding "A") #'tandem-permissions-always))
						  (call-interactively #'tandem-permissions-always))))
				     (should (seq-find (lambda (p) (string-match-p "(default git status)" p)) prompts))
				     (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome) "succeeded"))
				     (let ((rules (append (plist-get (tandem-request "permissions/rules" nil) :rules) nil))
					   (root (directory-file-name (expand-file-name project))))
				       (should (= 1 (length rules)))
				       (should (equal (plist-get (car rules) :pattern) "git status"))
				       (should (equal (file-truename (plist-get (car rules) :scope))
						      (file-truename root)))))))))

(ert-deftest tandem-permissions-lists-and-deletes ()
  "`tandem-permissions' lists every rule; `d' deletes the one at point after asking."
  (tandem-test-with-backend
   (tandem-permissions-test--clean
    (tandem-request "permissions/add-rule" (list :tool "shell" :pattern "make test"))
    (tandem-request "permissions/add-rule" (list :tool "write_file" :pattern "src/*.py"
                                                 :scope "/work/proj" :decision "deny"))
    (tandem-permissions)
    (with-current-buffer tandem-permissions-buffer-name
      (should (derived-mode-p 'tabulated-list-mode))
      (let ((text (tandem-permissions-test--text (current-buffer))))
        (should (string-match-p "shell +make test +everywhere +allow" text))
        (should (string-match-p "write_file +src/\\*\\.py +/work/proj +deny" text)))
      (goto-char (point-min))
      (should (search-forward "make test" nil t))
      (let ((asked nil))
        (let ((tandem-permissions-confirm-function (lambda (p) (setq asked p) nil)))
          (call-interactively (key-binding "d")))
        (should (string-match-p "rule: shell make test" asked))
        (should (= 2 (length (plist-get (tandem-request "permissions/rules" nil) :rules))))
        (let ((tandem-permissions-confirm-function (lambda (_) t)))
          (call-interactively (key-binding "D"))))
      (let ((rules (append (plist-get (tandem-request "permissions/rules" nil) :rules) nil)))
        (should (equal (mapcar (lambda (r) (plist-get r :pattern)) rules) '("src/*.py"))))
      (should-not (string-match-p "make test" (tandem-permissions-test--text (current-buffer))))
      (should (eq (key-binding "g") #'revert-buffer))))))

(provide 'tandem-permissions-tests)
;;; tandem-permissions-tests.el ends here
