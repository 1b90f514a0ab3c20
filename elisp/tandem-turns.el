;;; tandem-turns.el --- Sending turns, waiting for them, provider settings  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The public API for scripts and batch tests, and the options that decide
;; which provider a turn uses:
;;
;;   (tandem-send TEXT &optional SESSION PROVIDER) -> (SESSION . TURN)
;;   (tandem-send-async TEXT SESSION CALLBACK ERRBACK) -> nil, CALLBACK
;;       gets (SESSION . TURN) later (the composer's send: Emacs goes on)
;;   (tandem-wait-turn SESSION TURN &optional TIMEOUT)
;;       -> (:outcome "succeeded" :files-changed ("a.txt") :error nil)
;;   `tandem-cancel-turn', `tandem-answer-interaction'.
;;
;; Keys are looked up with `auth-source' by the hosts of
;; `tandem-provider-hosts' (api.openai.com and api.anthropic.com by default)
;; and handed to the backend in memory, each with the host it was found
;; for: the backend refuses to send a key to a base URL on another host.
;; They are never written anywhere.

;;; Code:

(require 'auth-source)
(require 'cl-lib)
(require 'tandem-client)
(require 'tandem-remote)
(require 'tandem-settings)

(require 'tandem-core)

(defcustom tandem-provider nil
  "Provider of new turns: \"openai:MODEL\", \"anthropic:MODEL\" or \"acp:AGENT\".
When nil, the backend uses `default_provider' from its settings."
  :type '(choice (const :tag "From settings" nil) string)
  :group 'tandem)

(defcustom tandem-permission-mode nil
  "Permission mode of new turns.
`ask' asks before edits and commands, `auto-edit' allows edits and asks
before commands, `read-only' refuses both.  When nil, the backend uses
`permission_mode' from its settings, else `ask'."
  :type '(choice (const :tag "From settings" nil)
                 (const ask) (const auto-edit) (const read-only))
  :group 'tandem)

(defcustom tandem-acp-agents nil
  "ACP agents by name: an alist of (NAME :command LIST :env ALIST).
For example:
  ((\"claude\" :command (\"claude-agent-acp\") :env ((\"FOO\" . \"1\"))))
Use one as provider \"acp:NAME\".  An entry may also say
:project-config-files (a list of paths inside the project): the files the
agent reads as its own configuration, so that tandem does not start it in a
project you have not trusted while one of them is there."
  :type '(alist :key-type string :value-type plist)
  :group 'tandem)

(defcustom tandem-provider-hosts
  '(("openai" . "api.openai.com") ("anthropic" . "api.anthropic.com"))
  "Hosts whose `auth-source' entries hold each provider family's key."
  :type '(alist :key-type string :value-type string)
  :group 'tandem)

(defcustom tandem-send-timeout 300
  "Seconds `tandem-send' waits for a turn to be accepted.
Long because acceptance may first compact a long session."
  :type 'number
  :group 'tandem)

(defvar-local tandem-session nil
  "The session id a buffer belongs to (set by session buffers).")

(defun tandem--auth-key (host)
  "Return the secret `auth-source' has for HOST, or nil."
  (let* ((found (car (auth-source-search :host host :max 1 :require '(:secret))))
         (secret (plist-get found :secret)))
    (if (functionp secret) (funcall secret) secret)))

(defun tandem--agents-list ()
  "Return `tandem-acp-agents' in the shape the backend takes."
  (mapcar (lambda (agent)
            (list :name (car agent)
                  :command (plist-get (cdr agent) :command)
                  :env (mapcar (lambda (pair) (list (car pair) (cdr pair)))
                               (plist-get (cdr agent) :env))
                  :project-config-files (plist-get (cdr agent) :project-config-files)))
          tandem-acp-agents))

(defun tandem--configure-params ()
  "Return the parameters of the backend's configure request, a plist.
Agents, keys, remote hosts, defaults and settings."
  (let ((credentials nil))
    (dolist (pair tandem-provider-hosts)
      (let ((key (tandem--auth-key (cdr pair))))
        (when key
          (setq credentials (append credentials
                                    (list (intern (concat ":" (car pair)))
                                          ;; The key is bound to the host it is for:
                                          ;; the backend sends it nowhere else.
                                          (list :api-key key :host (cdr pair))))))))
    (append (list :acp-agents (tandem--agents-list)
                  :credentials credentials
                  ;; Which agent-servers may receive the key.
                  :remote-hosts (tandem-remote-hosts-config))
            (and tandem-provider (list :default-provider tandem-provider))
            (let ((json (tandem-settings-json)))
              (and json (list :settings-json json)))
            (and tandem-permission-mode
                 (list :permission-mode (symbol-name tandem-permission-mode))))))

(defun tandem-configure ()
  "Send ACP agents, keys, remote hosts, defaults and settings to the backend.
The settings are the options of tandem-settings.el that are set.
Called before each turn, so that changes to the options take effect."
  (tandem-request "turns/configure" (tandem--configure-params)))

(defun tandem-project-session (&optional directory)
  "Return the id of the session for DIRECTORY's project, creating one if needed.
Uses the buffer's `tandem-session' when set."
  (or tandem-session
      (let* ((root (directory-file-name (tandem-project-root directory)))
             ;; A damaged journal is listed (last) but cannot be opened: skip it.
             (sessions (cl-remove-if (lambda (r) (plist-get r :damaged))
                                     (tandem-request "sessions/list" (list :cwd root)))))
        (if sessions
            (plist-get (car sessions) :id)
          (plist-get (tandem-request "sessions/new" (list :cwd root)) :id)))))

(defun tandem-send (text &optional session provider images)
  "Send TEXT as a chat turn of SESSION with PROVIDER; return (SESSION . TURN).
SESSION defaults to the current project's session.  Without PROVIDER the
backend uses the session's own choice (`tandem-set-provider'), else
`tandem-provider' (sent by `tandem-configure'), else its settings.
IMAGES are the composer's attachments (plists with :path or :data, and
:name); the backend checks them and refuses, sending nothing, when one is
not an image, is too big, or the provider takes no images."
  (tandem-configure)
  (let* ((session (or session (tandem-project-session)))
         ;; Sending may first compact the session (a provider round trip).
         (reply (tandem-request "turns/send" (tandem--send-params text session provider images)
                                tandem-send-timeout)))
    (cons (plist-get reply :session) (plist-get reply :turn))))

(defun tandem--send-params (text session provider images)
  "Return the parameters of the backend's send request, a plist.
For TEXT in SESSION, with PROVIDER and IMAGES (as `tandem-send' takes them)."
  (let ((wire (mapcar (lambda (a)
                        (append (if (plist-get a :path) (list :path (plist-get a :path))
                                  (list :data (plist-get a :data)))
                                (list :name (plist-get a :name))))
                      images)))
    (append (list :session session :text text)
            (and provider (list :provider provider))
            (and wire (list :images wire)))))

(defun tandem-send-async (text session callback errback &optional provider images)
  "Send TEXT as a chat turn of SESSION without waiting; return nil.
Like `tandem-send' (PROVIDER and IMAGES as there), but Emacs goes on at
once: CALLBACK receives (SESSION . TURN) once the backend has accepted
the turn, ERRBACK the error as (CODE MESSAGE DATA COMMAND) when the
configuration or the send fails (then nothing was sent).  The options
go first (`turns/configure'), the send once they are in, so the turn
sees them.  The backend times neither out; the turn's events may arrive
before CALLBACK runs."
  (unless (and (stringp text) (stringp session))
    (signal 'wrong-type-argument (list 'stringp (if (stringp text) session text))))
  (unless (and (functionp callback) (functionp errback))
    (signal 'wrong-type-argument (list 'functionp (if (functionp callback) errback callback))))
  (let ((params (tandem--send-params text session provider images))
        (conn (tandem-ensure-connection)))
    (tandem-request-async
     "turns/configure" (tandem--configure-params)
     (lambda (_)
       (tandem-request-async
        "turns/send" params
        (lambda (reply)
          (funcall callback (cons (plist-get reply :session) (plist-get reply :turn))))
        errback conn))
     errback conn)
    nil))

(defun tandem-wait-turn (session turn &optional timeout)
  "Wait for TURN of SESSION to end; return (:outcome :files-changed :error).
Wait at most TIMEOUT seconds (default 300); a turn still running then
returns :outcome nil.  The reply comes after the turn's events: the hooks
of `tandem-event-functions' have seen them all when this returns."
  (let* ((timeout (or timeout 300))
         ;; The backend may hold the reply up to 10 s more, behind the events.
         (status (tandem-request "turns/wait" (list :session session :turn turn
                                                    :timeout timeout)
                                 (+ timeout 20))))
    (list :outcome (plist-get status :outcome)
          :files-changed (plist-get status :files-changed)
          :error (plist-get status :error))))

(defun tandem-cancel-turn (&optional session)
  "Cancel the turn in flight in SESSION (default: this buffer's session)."
  (interactive)
  (plist-get (tandem-request "turns/cancel"
                             (list :session (or session (tandem-project-session))))
             :cancelled))

(defun tandem-answer-interaction (session interaction answer)
  "Answer INTERACTION of SESSION's running turn with ANSWER.
ANSWER is \"allow_once\", \"allow_session\" or \"reject\"."
  (tandem-request "turns/answer" (list :session session :interaction-id interaction
                                       :answer answer)))

(provide 'tandem-turns)
;;; tandem-turns.el ends here
