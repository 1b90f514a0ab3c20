;;; tandem-settings.el --- Every backend setting as a user option  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Each key the backend reads from settings.json has a `defcustom' here
;; (or, for the provider, the permission mode and the ACP agents, in
;; tandem-turns.el), in the `tandem' group, so that
;; `M-x customize-group RET tandem' shows them all.  nil means "not set
;; here": the settings files decide.  What is set is sent with every
;; `tandem-configure' and laid on top of the files; it is the user's own,
;; so it is trusted like the user's settings file.
;; `tandem-settings-keys' maps each settings key to its option, and
;; `tandem-settings-command-keys' names the command of each key that has
;; none; a test checks that together they cover every key of the
;; backend's settings model.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'tandem-core)

(defmacro tandem-settings--option (name doc type)
  "Define the user option NAME with DOC, of TYPE or nil (from settings)."
  (declare (indent 1) (doc-string 2))
  `(defcustom ,name nil
     ,(concat doc "\nnil: from the settings files.")
     :type '(choice (const :tag "From settings.json" nil) ,type)
     :group 'tandem))

(tandem-settings--option tandem-openai-base-url
  "Base URL of the OpenAI-compatible server, including /v1.
For a local llama.cpp, Ollama or vLLM, e.g. \"http://127.0.0.1:8080/v1\"."
  (string :tag "URL"))

(tandem-settings--option tandem-anthropic-base-url
  "Base URL of the Anthropic Messages API (without /v1)."
  (string :tag "URL"))

(tandem-settings--option tandem-anthropic-thinking-budget
  "Tokens of extended thinking per Anthropic request (0: none)."
  (integer :tag "Tokens"))

(tandem-settings--option tandem-anthropic-prompt-cache
  "Whether Anthropic requests mark the prompt for caching."
  (choice (const :tag "On" on) (const :tag "Off" off)))

(tandem-settings--option tandem-native-max-retries
  "Retries of a failed provider request in tandem's own agent loop."
  (integer :tag "Retries"))

(tandem-settings--option tandem-native-backoff
  "Seconds before the first retry (doubled each time)."
  (number :tag "Seconds"))

(tandem-settings--option tandem-native-max-retry-wait
  "Longest wait, in seconds, between two retries."
  (number :tag "Seconds"))

(tandem-settings--option tandem-native-max-steps
  "Most model requests (steps) in one turn of tandem's own agent loop."
  (integer :tag "Steps"))

(tandem-settings--option tandem-native-connect-timeout
  "Seconds to connect to the provider."
  (number :tag "Seconds"))

(tandem-settings--option tandem-native-read-timeout
  "Seconds without a byte from the provider before a request fails."
  (number :tag "Seconds"))

(tandem-settings--option tandem-native-shell-timeout
  "Seconds a shell command of the agent may run."
  (number :tag "Seconds"))

(tandem-settings--option tandem-native-output-cap
  "Characters of a tool's output kept for the model."
  (integer :tag "Characters"))

(tandem-settings--option tandem-native-max-tool-input-bytes
  "Bytes of tool input one model response may stream; past it the call fails."
  (integer :tag "Bytes"))

(tandem-settings--option tandem-native-tool-timeout
  "Seconds a file tool (read, grep, list) may run."
  (number :tag "Seconds"))

(tandem-settings--option tandem-mcp-servers
  "MCP servers by name: an alist of (NAME :command LIST :env ALIST :url URL)."
  (alist :key-type string :value-type plist))

(tandem-settings--option tandem-context-windows
  "Context window sizes in tokens, by provider name, model or model-name prefix.
An alist, e.g. ((\"openai:my-model\" . 32768))."
  (alist :key-type string :value-type integer))

(tandem-settings--option tandem-compaction-threshold
  "Share of the context window (0.05-1) past which a chat turn compacts first."
  (number :tag "Share"))

(tandem-settings--option tandem-compaction-keep-turns
  "Newest chat turns a compaction keeps verbatim."
  (integer :tag "Turns"))

(tandem-settings--option tandem-checkpoints-keep-turns
  "Checkpoints of the newest turns kept per session; older ones are pruned.
Unset keeps every checkpoint while its session's journal exists."
  (integer :tag "Turns"))

(tandem-settings--option tandem-checkpoints-keep-days
  "Days a checkpoint is kept; older ones are pruned.
Unset keeps every checkpoint while its session's journal exists."
  (integer :tag "Days"))

(tandem-settings--option tandem-auto-compact
  "Whether a long session is compacted automatically before a turn."
  (choice (const :tag "On" on) (const :tag "Off" off)))

(tandem-settings--option tandem-image-max-bytes
  "The largest image a request may carry, in bytes (unset: 5 MiB).
The composer checks it when an image is attached (C-c C-a), the backend
again when the request is sent."
  (integer :tag "Bytes"))

(tandem-settings--option tandem-protected-paths
  "Paths whose writes are always asked about, in every permission mode.
Writing them would change what runs or how tandem is configured: an
agent's hooks, an .envrc, a CI workflow.  Each entry is a path relative
to the project, a folder ending in /; it matches at any depth, in any
case.  Setting this replaces the default list (.tandem/ .claude/
.mcp.json .envrc .dir-locals.el .vscode/ .github/workflows/); a project
can add to it, never shorten it."
  (repeat (string :tag "Path")))

(defconst tandem-settings-keys
  '(("default_provider" . tandem-provider)
    ("permission_mode" . tandem-permission-mode)
    ("acp_agents" . tandem-acp-agents)
    ("openai.base_url" . tandem-openai-base-url)
    ("anthropic.base_url" . tandem-anthropic-base-url)
    ("anthropic.thinking_budget" . tandem-anthropic-thinking-budget)
    ("anthropic.prompt_cache" . tandem-anthropic-prompt-cache)
    ("native.max_retries" . tandem-native-max-retries)
    ("native.backoff" . tandem-native-backoff)
    ("native.max_retry_wait" . tandem-native-max-retry-wait)
    ("native.max_steps" . tandem-native-max-steps)
    ("native.connect_timeout" . tandem-native-connect-timeout)
    ("native.read_timeout" . tandem-native-read-timeout)
    ("native.shell_timeout" . tandem-native-shell-timeout)
    ("native.output_cap" . tandem-native-output-cap)
    ("native.tool_timeout" . tandem-native-tool-timeout)
    ("native.max_tool_input_bytes" . tandem-native-max-tool-input-bytes)
    ("mcp_servers" . tandem-mcp-servers)
    ("context_windows" . tandem-context-windows)
    ("compaction_threshold" . tandem-compaction-threshold)
    ("compaction_keep_turns" . tandem-compaction-keep-turns)
    ("checkpoints.keep_turns" . tandem-checkpoints-keep-turns)
    ("checkpoints.keep_days" . tandem-checkpoints-keep-days)
    ("auto_compact" . tandem-auto-compact)
    ("image_max_bytes" . tandem-image-max-bytes)
    ("protected_paths" . tandem-protected-paths))
  "Each settings.json key (dotted) and the user option that sets it.
default_provider, permission_mode and acp_agents are sent by
`tandem-configure' in their own fields; the rest by `tandem-settings-json'.")

(defconst tandem-settings-command-keys
  '(("permission_rules" . tandem-permissions))
  "Settings keys with no user option, each with the command that edits it.
Permission rules are kept only in the user's settings file (never sent
by Emacs on top of the files, never read from a project's), so their one
place is that file, edited through the command.")

(defconst tandem-settings--own-fields '("default_provider" "permission_mode" "acp_agents")
  "Keys `tandem-configure' sends in fields of their own.")

(defun tandem-settings--json-value (value)
  "Return VALUE, a user option's, as `json-encode' should write it."
  (pcase value
    ('on t)
    ('off :json-false)
    ((pred (lambda (v) (and (consp v) (stringp (car v))))) (vconcat value)) ; strings
    ((pred (lambda (v) (and (consp v) (consp (car v)) (stringp (caar v)))))
     ;; An alist by name: an object; an entry's plist becomes an object too.
     (mapcar (lambda (pair)
               (cons (car pair)
                     (if (and (consp (cdr pair)) (keywordp (cadr pair)))
                         (cl-loop for (k v) on (cdr pair) by #'cddr
                                  collect (cons (substring (symbol-name k) 1)
                                                (if (and (eq k :env) (consp v))
                                                    (mapcar (lambda (e) (cons (car e) (cdr e))) v)
                                                  (if (listp v) (vconcat v) v))))
                       (cdr pair))))
             value))
    (_ value)))

(defun tandem-settings-json ()
  "Return the set options as a settings.json object (a JSON string), or nil."
  (let ((root nil))
    (dolist (pair tandem-settings-keys)
      (let ((value (symbol-value (cdr pair))))
        (when (and value (not (member (car pair) tandem-settings--own-fields)))
          (let* ((path (split-string (car pair) "\\."))
                 (json (tandem-settings--json-value value)))
            (if (cdr path)
                (let ((section (assoc (car path) root)))
                  (unless section (push (setq section (list (car path))) root))
                  (setcdr section (cons (cons (cadr path) json) (cdr section))))
              (push (cons (car path) json) root))))))
    (and root (let ((json-encoding-pretty-print nil)) (json-encode root)))))

(provide 'tandem-settings)
;;; tandem-settings.el ends here
