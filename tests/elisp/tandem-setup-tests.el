;;; tandem-setup-tests.el --- First run and the settings as user options  -*- lexical-binding: t; -*-

;;; Commentary:
;; The first-run flow of `M-x tandem' with answers given at the prompt
;; seam (`tandem-setup-read-function'), against the real backend and the
;; real fake OpenAI-compatible server; and the customization group: every
;; option documented and typed, every key of the backend's settings model
;; an option, and what is set reaching the backend through `configure'.

;;; Code:

(require 'tandem-view-test-helpers)
(require 'tandem-setup)
(require 'cus-edit)

(defmacro tandem-setup-test--fresh (&rest body)
  "Run BODY as a new user: nothing configured, empty settings, a scratch custom file.
Binds `fake' (the fake server), `project' and `custom'."
  (declare (indent 0) (debug t))
  `(let* ((fake (tandem-view-test-start-fake '(:steps [(:reply (:text "Hello, new user!"))
                                                                (:reply (:text "Hello, new user!"))])))
          (project (file-name-as-directory (make-temp-file "tandem-setup-project-" t)))
          (config (make-temp-file "tandem-setup-config-" t))
          (custom (make-temp-file "tandem-setup-custom-" nil ".el"))
          (custom-file custom)
          ;; Not "emacs -q": customize saves into `custom-file'.
          (user-init-file custom)
          (process-environment (append (list (concat "XDG_CONFIG_HOME=" config)
                                             "OPENAI_API_KEY" "OPENAI_BASE_URL")
                                       process-environment))
          (tandem-provider nil) (tandem-permission-mode nil) (tandem-openai-base-url nil)
          (tandem-provider-hosts tandem-provider-hosts) (tandem-acp-agents nil))
     (unwind-protect
         (tandem-test-with-backend ,@body)
       (delete-process (car fake))
       (dolist (b (buffer-list))
         (when (string-prefix-p "*tandem: " (buffer-name b)) (kill-buffer b)))
       (delete-directory project t)
       (delete-directory config t)
       (delete-file custom))))

(ert-deftest tandem-setup-first-run-asks-saves-and-answers ()
  "`M-x tandem' with nothing configured asks, saves in settings.json, then a turn streams.
The answers are the user's settings file, the one `tandem ask' reads:
none of them lands in customize, and every prompt shows its default."
  (tandem-setup-test--fresh
    (let* ((asked nil)
           (tandem-setup-read-function
            (lambda (prompt choices &optional default)
              (push (list prompt choices default) asked)
              (cond ((string-prefix-p "Provider" prompt)
                     (should (member "Anthropic" choices))
                     (should (member "OpenAI" choices))
                     (cl-find-if (lambda (c) (string-prefix-p "OpenAI-compatible" c)) choices))
                    ((string-prefix-p "Base URL" prompt)
                     (should (equal default "http://127.0.0.1:8080/v1"))
                     (cdr fake))
                    ((string-prefix-p "Where is the openai key" prompt)
                     ;; A loopback server needs no key, and that is the default shown.
                     (should (string-prefix-p "no key" default))
                     default)
                    ((string-prefix-p "Model" prompt)
                     ;; Listed by the fake's GET /v1/models.
                     (should (equal choices '("fake-model")))
                     "fake-model")
                    ((string-prefix-p "Permission mode" prompt) "auto-edit")
                    (t (ert-fail (format "unexpected question %S" prompt))))))
           (settings (expand-file-name "tandem/settings.json" config))
           (messages nil))
      (should (tandem-setup-needed-p))
      (cl-letf (((symbol-function 'message)
                 (lambda (fmt &rest args)
                   (when fmt (push (apply #'format-message fmt args) messages)))))
        (tandem project))
      (should (equal (length asked) 5))
      (dolist (question asked)          ; every question has a default to show
        (should (nth 2 question)))
      (should (cl-some (lambda (m) (string-match-p (regexp-quote "saved in ") m)) messages))
      ;; Nothing in customize: the one place is the settings file.
      (should-not tandem-provider)
      (should-not tandem-openai-base-url)
      (let ((saved (with-temp-buffer
                     (insert-file-contents settings)
                     (json-parse-buffer :object-type 'alist))))
        (should (equal (alist-get 'default_provider saved) "openai:fake-model"))
        (should (equal (alist-get 'permission_mode saved) "auto-edit"))
        (should (equal (alist-get 'base_url (alist-get 'openai saved)) (cdr fake))))
      (should (equal (file-modes settings) #o600))
      (should-not (tandem-setup-needed-p))
      (with-current-buffer (tandem-view-buffer (tandem-project-session project))
        (tandem-view-test-wait-turn (tandem-view-test-send "hi"))
        (should (string-match-p "Hello, new user!" (tandem-view-test-text))))
      ;; The CLI reads the same file: no flag, no variable.
      (let* ((default-directory project)
             (process-environment (cons (concat "TANDEM_HOME=" tandem-home)
                                        process-environment))
             status
             (out (with-temp-buffer
                    (setq status (call-process
                                  (expand-file-name ".venv/bin/tandem" tandem-test-root)
                                  nil t nil "ask" "hi again"))
                    (buffer-string))))
        (ert-info (out :prefix "tandem ask said: ")
          (should (eq status 0))
          (should (string-match-p "Hello, new user!" out)))))))

(ert-deftest tandem-setup-save-settings-refuses-bad-values-and-keeps-the-file ()
  "A value the settings model refuses is an error and the file is left as it was."
  (tandem-setup-test--fresh
    (let ((settings (expand-file-name "tandem/settings.json" config)))
      (tandem-setup-save-settings '(("permission_mode" . "ask")))
      (let ((before (with-temp-buffer (insert-file-contents settings) (buffer-string))))
        (should-error (tandem-setup-save-settings '(("permission_mode" . "yolo")))
                      :type 'tandem-invalid-settings)
        (should (equal before (with-temp-buffer (insert-file-contents settings)
                                                (buffer-string)))))
      ;; :null removes a key.
      (tandem-setup-save-settings '(("permission_mode" . :null) ("auto_compact" . t)))
      (let ((saved (with-temp-buffer (insert-file-contents settings)
                                     (json-parse-buffer :object-type 'alist))))
        (should-not (assq 'permission_mode saved))
        (should (eq (alist-get 'auto_compact saved) t))))))

(defun tandem-setup-test--options (group)
  "Return every user option of GROUP and its subgroups."
  (let ((out nil))
    (dolist (member (get group 'custom-group))
      (pcase (cadr member)
        ('custom-variable (push (car member) out))
        ('custom-group (setq out (append (tandem-setup-test--options (car member)) out)))))
    out))

(ert-deftest tandem-setup-every-option-documented-and-typed ()
  "`M-x customize-group RET tandem' lists options that each have a docstring and a type."
  (let ((options (tandem-setup-test--options 'tandem)))
    (should (memq 'tandem-prices options))
    (should (memq 'tandem-native-max-steps options))
    (dolist (option options)
      (should (stringp (documentation-property option 'variable-documentation)))
      (should (get option 'custom-type)))))

(ert-deftest tandem-setup-every-settings-key-is-an-option ()
  "Each key of the backend's settings model has a user option, and it reaches the backend."
  (tandem-test-with-backend
    (let ((keys (tandem-request "debug/settings-keys"))
          (options (tandem-setup-test--options 'tandem)))
      (should (member "native.max_steps" keys))
      (dolist (key keys)
        (let ((option (cdr (assoc key tandem-settings-keys)))
              (command (cdr (assoc key tandem-settings-command-keys))))
          (cond (option (should (memq option options)))
                ;; Kept in the user's file only, edited by a command of its own.
                (command (require 'tandem-permissions)
                         (should (commandp command)))
                (t (ert-fail (format "settings key %s has no user option" key)))))))
    ;; What is set is laid on top of the settings files and validated.
    (let ((tandem-compaction-threshold 0.5) (tandem-auto-compact 'off)
          (tandem-native-max-steps 7)
          (tandem-context-windows '(("openai:tiny" . 4096))))
      (let ((json (json-read-from-string (tandem-settings-json))))
        (should (equal (alist-get 'native json) '((max_steps . 7))))
        (should (equal (alist-get 'context_windows json) '((openai:tiny . 4096))))
        (should (equal (alist-get 'compaction_threshold json) 0.5))
        (should (eq (alist-get 'auto_compact json) :json-false)))
      (tandem-configure))
    (let ((tandem-compaction-threshold 7))
      (should (string-match-p "compaction_threshold"
                              (cadr (should-error (tandem-configure) :type 'tandem-error)))))))

(ert-deftest tandem-setup-families-come-from-the-backend ()
  "The provider kinds the setup offers are the backend's families (its `hello' reply).
Each at its default host with its key variable, then the servers that
speak a family's wire format, asked for their URL; a local server may
need no key, a family without compatible servers always does."
  (tandem-test-with-backend
    (should (equal (tandem-setup--families)
                   '(("Anthropic" "anthropic" "api.anthropic.com" "ANTHROPIC_API_KEY")
                     ("OpenAI" "openai" "api.openai.com" "OPENAI_API_KEY")
                     ("OpenAI-compatible server (llama.cpp, Ollama, vLLM…)" "openai" nil
                      "OPENAI_API_KEY"))))
    (should (equal (plist-get (tandem-setup--family "anthropic") :default-base-url)
                   "https://api.anthropic.com"))
    (should-not (tandem-setup--family "no-such-family"))
    (let (offered
          (tandem-provider-hosts tandem-provider-hosts)
          (process-environment (cons "ANTHROPIC_API_KEY=sk-x" process-environment)))
      (dolist (family '("openai" "anthropic"))
        (let ((tandem-setup-read-function
               (lambda (_prompt choices &optional _default)
                 (push (cons family (length choices)) offered)
                 (nth 1 choices))))       ; the environment variable
          (tandem-setup--key family "api.example.com" "ANTHROPIC_API_KEY")))
      (should (equal (nreverse offered) '(("openai" . 3) ("anthropic" . 2)))))))

(provide 'tandem-setup-tests)
;;; tandem-setup-tests.el ends here
