;;; tandem-acp-tests.el --- ACP agents read and write Emacs buffers, take modes  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, the real backend, the real Claude Code ACP adapter
;; from npm (cached by tests/acp_adapter.py) and the fake Anthropic server:
;; the agent reads the unsaved text of a buffer, writes through the buffer
;; (one undo step), and a mode chosen in Emacs reaches the agent.  Each
;; test skips, saying why, when its adapter is not installed.

;;; Code:

(require 'ert)
(require 'json)
(require 'cl-lib)
(require 'tandem-test-helpers)

(defun tandem-acp-test--adapter (version)
  "The cached adapter executable of VERSION, or skip the test."
  (let ((bin (expand-file-name
              (format "acp/%s/node_modules/.bin/claude-agent-acp" version)
              (tandem-test-cache))))
    (unless (file-executable-p bin)
      (message "skipping: Claude Code ACP adapter %s not installed (make test-deps)" version)
      (ert-skip (format "adapter %s not installed: %s" version bin)))
    bin))

(defun tandem-acp-test--script (steps)
  "Write the fake model script of STEPS (a list of alists) to a file; return it."
  (let ((file (make-temp-file "tandem-acp-script-" nil ".json")))
    (with-temp-file file
      (insert (json-encode `((default . ((text . "OK"))) (steps . ,(vconcat steps))))))
    file))

(defun tandem-acp-test--records (file)
  "The request bodies the fake server recorded in FILE, as JSON strings."
  (with-temp-buffer
    (insert-file-contents file)
    (split-string (buffer-string) "\n" t)))

(defmacro tandem-acp-test--with-claude (version steps &rest body)
  "Run BODY with the adapter VERSION against a fake playing STEPS.
Inside BODY, `project' is a fresh git repository, `record' the file of
recorded requests; the session's provider is the agent acp:claude."
  (declare (indent 2) (debug t))
  `(let* ((adapter (tandem-acp-test--adapter ,version))
          (project (file-name-as-directory (make-temp-file "tandem-acp-project-" t)))
          (agent-home (make-temp-file "tandem-acp-home-" t))
          (script (tandem-acp-test--script ,steps))
          (record (make-temp-file "tandem-acp-record-" nil ".jsonl"))
          (fake (tandem-test-start-fake "anthropic" script record))
          (tandem-provider "acp:claude")
          (tandem-acp-agents
           `(("claude" :command (,adapter)
              :env (("ANTHROPIC_BASE_URL" . ,(format "http://127.0.0.1:%d" (cdr fake)))
                    ("ANTHROPIC_API_KEY" . "sk-fake-key")
                    ("HOME" . ,agent-home)
                    ("DISABLE_TELEMETRY" . "1")
                    ("DISABLE_AUTOUPDATER" . "1")
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC" . "1"))))))
     (let ((default-directory project))
       (call-process "git" nil nil nil "init" "-q"))
     (unwind-protect
         (let ((default-directory project))
           (tandem-test-with-backend ,@body))
       (delete-process (car fake))
       (dolist (dir (list project agent-home)) (ignore-errors (delete-directory dir t)))
       (dolist (file (list script record)) (ignore-errors (delete-file file))))))

(defun tandem-acp-test--read-write-steps (target)
  "Fake model steps: read TARGET, then (only if it saw the buffer) write it."
  `(((match . ((has_tools . t) (last_user_contains . "read-and-write")))
     (reply . ((text . "Reading.")
               (tool_calls . [((name . "mcp__acp__Read") (input . ((file_path . ,target))))]))))
    ;; Only the buffer's unsaved text has this marker: reading the disk
    ;; would get the default answer, and no write.
    ((match . ((has_tools . t) (last_user_contains . "UNSAVED-EDIT")))
     (reply . ((text . "Writing.")
               (tool_calls . [((name . "mcp__acp__Write")
                               (input . ((file_path . ,target)
                                         (content . "AGENT WROTE\n"))))]))))
    ((match . ((has_tools . t))) (reply . ((text . "Done."))))))

(ert-deftest tandem-acp-agent-reads-unsaved-buffer-and-writes-through-it ()
  "The agent reads the buffer's unsaved text; its write lands in the buffer, undoably."
  (tandem-acp-test--with-claude "0.17.1"
      (tandem-acp-test--read-write-steps (expand-file-name "notes.txt" project))
    (let* ((file (expand-file-name "notes.txt" project))
           (buffer (progn (with-temp-file file (insert "disk text\n"))
                          (find-file-noselect file)))
           (tandem-permission-mode 'auto-edit))
      (unwind-protect
          (progn
            (with-current-buffer buffer
              (goto-char (point-min))
              (insert "UNSAVED-EDIT\n")
              (undo-boundary))
            (let* ((sent (tandem-send "please read-and-write notes.txt"))
                   (end (tandem-wait-turn (car sent) (cdr sent) 120)))
              (should (equal (plist-get end :outcome) "succeeded")))
            (should (cl-some (lambda (r) (string-match-p "UNSAVED-EDIT" r))
                             (tandem-acp-test--records record)))
            (with-current-buffer buffer
              (should (equal (buffer-string) "AGENT WROTE\n"))
              (should-not (buffer-modified-p))
              (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string))
                             "AGENT WROTE\n"))
              ;; One undo step brings back the user's unsaved text.
              (let ((last-command nil)) (undo))
              (should (equal (buffer-string) "UNSAVED-EDIT\ndisk text\n"))))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)))))

(ert-deftest tandem-acp-mode-chosen-in-emacs-reaches-the-agent ()
  "`tandem-acp-set-mode' offers the agent's modes; the choice reaches the agent."
  (tandem-acp-test--with-claude "0.23.1"
      '(((match . ((has_tools . t))) (reply . ((text . "Planned.")))))
    (let ((offered (mapcar (lambda (m) (plist-get m :id))
                           (plist-get (tandem-acp--options) :modes))))
      (should (member "plan" offered))
      (should (member "acceptEdits" offered)))
    (let ((after (cl-letf (((symbol-function 'completing-read)
                            (lambda (_prompt table &rest _)
                              (cl-find-if (lambda (c) (string-prefix-p "plan" c))
                                          (all-completions "" table)))))
                   (call-interactively #'tandem-acp-set-mode))))
      (should (equal (plist-get after :mode) "plan")))
    (let* ((sent (tandem-send "make a plan"))
           (end (tandem-wait-turn (car sent) (cdr sent) 120)))
      (should (equal (plist-get end :outcome) "succeeded")))
    ;; What the adapter sent the model: Claude Code's plan-mode instructions.
    (should (cl-some (lambda (r) (string-match-p "Plan mode is active" r))
                     (tandem-acp-test--records record)))
    ;; The choice is in the journal, for the session's later providers.
    (should (cl-some (lambda (journal)
                       (with-temp-buffer
                         (insert-file-contents journal)
                         (search-forward "\"acp_option\"" nil t)))
                     (directory-files-recursively tandem-home "\\.jsonl\\'")))))

(provide 'tandem-acp-tests)
;;; tandem-acp-tests.el ends here
