;;; tandem-setup.el --- First run and switching a session's provider  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-setup' asks what a new user must choose: a provider
;; (Anthropic, OpenAI, an OpenAI-compatible server such as llama.cpp,
;; Ollama or vLLM, or an ACP agent found on PATH), where its key is (an
;; auth-source entry, whose line it shows, or an environment variable),
;; a model (listed by the server's /v1/models when it answers) and a
;; permission mode, and saves them with `customize-save-variable'.
;; `tandem' runs it when no provider is configured anywhere.
;;
;; `tandem-set-provider' switches the provider (and so the model) of
;; one session: a `provider_change' journal entry that its next turns
;; follow and the header shows.
;;
;; Every question goes through `tandem-setup-read-function', the seam
;; tests answer at.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'url-parse)
(require 'tandem-client)
(require 'tandem-read)
(require 'tandem-settings)
(require 'tandem-turns)
(require 'tandem-view-state)
(require 'tandem-view-usage)

(defvar tandem-setup-read-function #'tandem-setup--read
  "Function asking one setup question: (PROMPT CHOICES &optional DEFAULT).
CHOICES is a list of strings (nil: free text).  Returns a string.")

(defun tandem-setup--read (prompt choices &optional default)
  "Ask PROMPT among CHOICES (or free text) with DEFAULT shown and taken on RET.
The choices are listed as the prompt opens (`tandem-read-choice')."
  (let ((prompt (replace-regexp-in-string "[:?] *\\'" "" prompt)))
    (if choices
        (tandem-read-choice prompt choices :default default)
      (tandem-read-text prompt :default default))))

(defun tandem-setup--ask (prompt choices &optional default)
  "Ask PROMPT (CHOICES, DEFAULT) through `tandem-setup-read-function'."
  (funcall tandem-setup-read-function prompt choices default))

(defconst tandem-setup-acp-programs
  '(("claude" "claude-agent-acp" "claude-code-acp")
    ("codex" "codex-acp")
    ("gemini" "gemini"))
  "Known ACP agents: (NAME PROGRAM...), the first program found on PATH is used.
gemini is started with --experimental-acp.")

(defun tandem-setup--acp-found ()
  "Return the known ACP agents on PATH as (NAME . COMMAND)."
  (cl-loop for (name . programs) in tandem-setup-acp-programs
           for found = (cl-some #'executable-find programs)
           when found
           collect (cons name (if (equal name "gemini") (list found "--experimental-acp")
                                (list found)))))

;; The families come from the backend (its `hello' reply), the one place
;; that knows which wire formats it speaks: none is named here.
(defun tandem-setup--backend-families ()
  "Return the API families the backend speaks, as plists (the `hello' reply's).
Each has :name, :label, :default-base-url, :key-env and, when other
servers speak its wire format, :compatible-label."
  (plist-get (oref (tandem-ensure-connection) info) :families))

(defun tandem-setup--family (name)
  "Return the backend's plist of the family NAME, or nil."
  (cl-find name (tandem-setup--backend-families)
           :key (lambda (f) (plist-get f :name)) :test #'equal))

(defun tandem-setup--families ()
  "Return the provider kinds offered first: (LABEL FAMILY HOST KEY-VARIABLE).
One row per API family at its default host, then one per family other
servers speak (HOST nil: the setup asks for their URL), each part
sorted by label."
  (let* ((families (tandem-setup--backend-families))
         (by-label (lambda (a b) (string< (car a) (car b))))
         (own (mapcar (lambda (f)
                        (list (plist-get f :label) (plist-get f :name)
                              (url-host (url-generic-parse-url
                                         (plist-get f :default-base-url)))
                              (plist-get f :key-env)))
                      families))
         (compatible (cl-loop for f in families
                              for label = (plist-get f :compatible-label)
                              when (stringp label)
                              collect (list label (plist-get f :name) nil
                                            (plist-get f :key-env)))))
    (append (sort own by-label) (sort compatible by-label))))

(defun tandem-setup-needed-p ()
  "Return non-nil when no provider is chosen, neither here nor in settings.json."
  (and (null tandem-provider)
       (null (plist-get (tandem-request "providers/default"
                                        (list :cwd (directory-file-name (tandem-project-root))))
                        :provider))))

(defun tandem-setup--save (variable value)
  "Set VARIABLE to VALUE and save it for future sessions when Emacs can."
  (condition-case err
      (customize-save-variable variable value)
    (error
     ;; emacs -Q has no init file to save into: the value holds for now.
     (set-default variable value)
     (message "tandem: %s set, not saved (%s)" variable (error-message-string err)))))

(defun tandem-setup--key (family host variable)
  "Ask where FAMILY's key is: auth-source for HOST, or the environment VARIABLE.
Return nil when the key is found or not needed, else a note for the user."
  (let* ((auth (format "auth-source (~/.authinfo.gpg: machine %s)" host))
         (env (format "environment variable %s" variable))
         (none "no key (a local server)")
         (local (member host '("127.0.0.1" "localhost" "::1" "[::1]")))
         (default (if local none auth))
         (where (tandem-setup--ask (format "Where is the %s key? " family)
                                   (if (stringp (plist-get (tandem-setup--family family)
                                                           :compatible-label))
                                       (list auth env none)
                                     (list auth env))
                                   default)))
    (cond
     ((equal where none) nil)
     ((equal where env)
      (unless (getenv variable)
        (format "Set %s in the environment Emacs starts from, then M-x tandem-restart"
                variable)))
     ((progn (tandem-setup--remember-host family host) (tandem--auth-key host)) nil)
     (t (let ((line (format "machine %s password YOUR-KEY" host)))
          (with-current-buffer (get-buffer-create "*tandem-setup*")
            (let ((inhibit-read-only t))
              (erase-buffer)
              (insert "Add this line to ~/.authinfo.gpg (or ~/.authinfo),\n"
                      "with your key in place of YOUR-KEY:\n\n  " line "\n"))
            (special-mode)
            (display-buffer (current-buffer)))
          (format "Add \"%s\" to ~/.authinfo.gpg" line))))))

(defun tandem-setup--remember-host (family host)
  "Make auth-source look for FAMILY's key under HOST from now on.
Which auth-source entry holds a key is Emacs's own concern (keys are
never written to settings.json), so it is kept with customize."
  (unless (equal (cdr (assoc family tandem-provider-hosts)) host)
    (tandem-setup--save 'tandem-provider-hosts
                        (cons (cons family host)
                              (assoc-delete-all family (copy-sequence tandem-provider-hosts))))))

(defun tandem-setup--models (family base-url)
  "Return the models FAMILY's server at BASE-URL lists.
Return nil when it does not answer."
  (condition-case nil
      (progn
        (tandem-configure)
        (plist-get (tandem-request "providers/models"
                                   (append (list :family family :timeout 10)
                                           (and base-url (list :base-url base-url)))
                                   20)
                   :models))
    (tandem-error nil)))

;;;###autoload
(defun tandem-setup ()
  "Choose a provider, its key, a model and a permission mode; save them.
The choices go to the user's settings file (settings.json under
`$XDG_CONFIG_HOME/tandem/'), the one configuration that Emacs,
`tandem ask' and `tandem doctor' all read.  Return the provider chosen."
  (interactive)
  (let* ((agents (tandem-setup--acp-found))
         (families (tandem-setup--families))
         (labels (append (mapcar #'car families)
                         (mapcar (lambda (a) (format "ACP agent: %s (%s)" (car a) (cadr a)))
                                 agents)))
         (label (tandem-setup--ask "Provider: " labels
                                   (car labels)))
         (family-row (assoc label families))
         (agent (and (null family-row)
                     (cl-find-if (lambda (a) (string-prefix-p (format "ACP agent: %s " (car a))
                                                              label))
                                 agents)))
         (changes nil) (note nil) provider)
    (cond
     (agent
      (push (list "acp_agents" (list (car agent) (cons "command" (vconcat (cdr agent)))))
            changes)
      (setq provider (concat "acp:" (car agent))))
     (family-row
      (let* ((family (nth 1 family-row))
             (base-url (unless (nth 2 family-row)
                         (tandem-setup--ask "Base URL of the server (with /v1): "
                                            nil tandem-setup-default-base-url)))
             (host (or (nth 2 family-row) (url-host (url-generic-parse-url base-url)))))
        (when base-url
          (push (list family (cons "base_url" base-url)) changes))
        (setq note (tandem-setup--key family host (nth 3 family-row)))
        (let* ((models (tandem-setup--models family base-url))
               (model (tandem-setup--ask (if models "Model: "
                                           "Model (the server listed none; type its name): ")
                                         models (car models))))
          (setq provider (concat family ":" model)))))
     (t (user-error "Unknown provider choice: %s" label)))
    (let ((mode (tandem-setup--ask "Permission mode (ask before edits and \
commands, auto-edit, read-only): " '("ask" "auto-edit" "read-only") "ask")))
      (push (cons "permission_mode" mode) changes))
    (push (cons "default_provider" provider) changes)
    (let ((path (tandem-setup-save-settings changes)))
      (message "tandem: provider %s, saved in %s%s" provider (abbreviate-file-name path)
               (if note (concat " · " note) "")))
    provider))

(defcustom tandem-setup-default-base-url "http://127.0.0.1:8080/v1"
  "Base URL the first-run setup offers for an OpenAI-compatible server."
  :type 'string
  :group 'tandem)

(defun tandem-setup-save-settings (settings)
  "Write SETTINGS to the user's settings file (`tandem ask' and Emacs share it).
SETTINGS is an alist shaped as `json-encode' writes objects: nested
alists merge into the file key by key, a value of `:null' removes the
key.  Return the file's name."
  (let ((json-null :null))
    (plist-get (tandem-request "settings/save-user"
                               (list :settings-json (json-encode settings)))
               :path)))

(defun tandem-setup--provider-choices ()
  "Return provider names worth offering: the current ones and the ACP agents."
  (delete-dups
   (delq nil (append (list tandem-provider
                           (plist-get (plist-get (and tandem-view--state
                                                      (tandem-view-state-usage tandem-view--state))
                                                 :totals)
                                      :provider))
                     (mapcar (lambda (a) (concat "acp:" (car a))) tandem-acp-agents)
                     (mapcar (lambda (a) (concat "acp:" (car a))) (tandem-setup--acp-found))))))

;;;###autoload
(defun tandem-set-provider (provider &optional session)
  "Make PROVIDER (\"openai:MODEL\", \"anthropic:MODEL\", \"acp:AGENT\") SESSION's.
SESSION defaults to this buffer's.  The switch is a journal entry: the
session's next turns use PROVIDER, and its header says so."
  (interactive
   (let ((choices (tandem-setup--provider-choices)))
     (list (tandem-setup--ask "Provider for this session's next turns: " choices
                              (car choices)))))
  (let* ((session (or session (tandem-project-session)))
         (entry (tandem-request "turns/set-provider"
                                (list :session session :provider provider)))
         (buffer (tandem-view-buffer session)))
    (when buffer (tandem-view-usage-update buffer))
    (message "tandem: next turns use %s" (plist-get entry :provider))
    entry))

(provide 'tandem-setup)
;;; tandem-setup.el ends here
