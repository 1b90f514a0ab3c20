;;; tandem-remote.el --- Remote workspaces on an OpenHands agent-server  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A session can execute on an OpenHands agent-server instead of this
;; machine.  Hosts are named in `tandem-remote-hosts'; each host's session
;; API key comes from auth-source (by the URL's host and port) or from the
;; environment variable TANDEM_REMOTE_API_KEY_<NAME>, and is sent with each
;; call to the backend -- never saved, and kept out of `*tandem-events*'.
;;
;; Working dirs are resolved by the backend against the server's home
;; (`GET /api/file/home'), so uploads and the conversation's worktree land
;; in the same folder.  See docs/remote.md.
;;
;; Commands:
;;   `tandem-remote-upload'  -- the current file, or the marked files in Dired.
;;   `tandem-remote-attach'  -- make a host a session's execution target.
;;   `tandem-remote-detach'  -- undo that.
;;   `tandem-remote-hosts-status' -- each host's home, or why it is unreachable.
;; For the session view: `tandem-remote-header-string'.

;;; Code:

(require 'auth-source)
(require 'url-parse)
(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-read)

(declare-function dired-get-marked-files "dired")

(defgroup tandem-remote nil
  "Remote workspaces of tandem on an OpenHands agent-server."
  :group 'tandem
  :prefix "tandem-remote-")

(defcustom tandem-remote-hosts nil
  "Agent-servers a session can execute on, by name.
Each entry is (NAME . URL), or (NAME :url URL :forward-keys BOOL
:agent-profile ID):

  :forward-keys   when non-nil, your LLM key (the provider key tandem
                  found in auth-source) is handed to this agent-server
                  for its agent, as the LLM of each conversation.  When
                  nil, the key never leaves this machine: the server's
                  agent profile is used, or the turn is refused.
  :agent-profile  a server-side agent profile id (`agent_profile_id'),
                  used when no key is handed over.

Only the hosts named here may receive a key; a host named by project
settings never does.  The session API key of a host is looked up in
auth-source by the URL's host (and port), else read from the environment
variable TANDEM_REMOTE_API_KEY_<NAME> (NAME upcased, other characters
as _)."
  :type '(alist :key-type (string :tag "Name")
                :value-type (choice (string :tag "URL")
                                    (plist :tag "URL and options"
                                           :options ((:url string)
                                                     (:forward-keys boolean)
                                                     (:agent-profile string))))))

(defcustom tandem-remote-default-working-dir "workspace/project"
  "Working dir offered for a new remote target, relative to the server's home."
  :type 'string)

(defvar tandem-remote-session-function #'tandem-remote--buffer-session
  "Function of no arguments returning the current session id, or nil.")

(defvar tandem-remote--targets (make-hash-table :test #'equal)
  "Session id -> its remote target plist (or :none), as last fetched.")

(defvar tandem-remote--forward-answers (make-hash-table :test #'equal)
  "Host name -> `yes' or `no': whether to hand it the LLM key this Emacs session.
Asked once per host by `tandem-remote-attach'; never saved.")

;;;; Hosts and keys

(defun tandem-remote--buffer-session ()
  "Return the buffer's session id (the variable `tandem-session'), or nil."
  (and (boundp 'tandem-session) (symbol-value 'tandem-session)))

(defun tandem-remote-host-entry (name)
  "Return host NAME of `tandem-remote-hosts' as a plist.
The plist is (:url URL :forward-keys BOOL :agent-profile ID).  Both
entry forms are accepted; signal a `user-error' for an unknown NAME or
an entry without a URL."
  (let* ((cell (or (assoc name tandem-remote-hosts)
                   (user-error "No host %S in `tandem-remote-hosts'" name)))
         (value (cdr cell))
         (url (if (stringp value) value (plist-get value :url))))
    (unless (and (stringp url) (not (string-empty-p url)))
      (user-error "Host %S in `tandem-remote-hosts' has no :url" name))
    (list :url url
          :forward-keys (and (consp value) (plist-get value :forward-keys) t)
          :agent-profile (and (consp value) (plist-get value :agent-profile)))))

(defun tandem-remote-host-url (name)
  "Return the URL of host NAME from `tandem-remote-hosts', or signal."
  (plist-get (tandem-remote-host-entry name) :url))

(defun tandem-remote-forward-keys-p (name)
  "Return non-nil when host NAME may receive the user's LLM key.
Its entry says :forward-keys, or the user said yes this Emacs session."
  (or (plist-get (tandem-remote-host-entry name) :forward-keys)
      (eq (gethash name tandem-remote--forward-answers) 'yes)))

(defun tandem-remote--maybe-ask-forward (name)
  "Ask once per Emacs session whether host NAME may receive the LLM key.
Only for a host whose entry neither forwards keys nor names an agent
profile: without either its turns would be refused."
  (let ((entry (tandem-remote-host-entry name)))
    (unless (or (plist-get entry :forward-keys) (plist-get entry :agent-profile)
                (gethash name tandem-remote--forward-answers))
      (puthash name
               (if (yes-or-no-p
                    (format "Hand your LLM key to agent-server %s (%s) for its agent, \
this Emacs session only? " name (plist-get entry :url)))
                   'yes 'no)
               tandem-remote--forward-answers))))

(defun tandem-remote-hosts-config ()
  "Return `tandem-remote-hosts' in the shape the backend's configure call takes.
A list of (:name :url [:forward-keys t] [:agent-profile ID] [:api-key KEY]);
the session API key is looked up as for every other call."
  (mapcar (lambda (cell)
            (let* ((name (car cell))
                   (entry (tandem-remote-host-entry name))
                   (key (tandem-remote-api-key name (plist-get entry :url))))
              (append (list :name name :url (plist-get entry :url))
                      (and (tandem-remote-forward-keys-p name) (list :forward-keys t))
                      (and (plist-get entry :agent-profile)
                           (list :agent-profile (plist-get entry :agent-profile)))
                      (and key (list :api-key key)))))
          tandem-remote-hosts))

(defun tandem-remote-read-host (&optional prompt)
  "Read a host name from `tandem-remote-hosts' with PROMPT."
  (unless tandem-remote-hosts
    (user-error "Set `tandem-remote-hosts' first: ((NAME . URL) ...)"))
  (tandem-read-choice (or prompt "Agent-server") (mapcar #'car tandem-remote-hosts)
                      :default (caar tandem-remote-hosts) :require-match t
                      :what "agent-server"))

(defun tandem-remote--env-name (name)
  "Return the environment variable holding the key of host NAME."
  (concat "TANDEM_REMOTE_API_KEY_"
          (replace-regexp-in-string "[^A-Z0-9]" "_" (upcase name))))

(defun tandem-remote-api-key (name url)
  "Return the session API key of host NAME at URL, or nil if it has none.
Looks in auth-source by URL's host and port, then by host alone, then in
the environment variable of `tandem-remote--env-name'."
  (let* ((parsed (url-generic-parse-url url))
         (host (url-host parsed))
         (port (url-port parsed))
         (found (or (and port (car (auth-source-search :host host :port (number-to-string port)
                                                       :max 1 :require '(:secret))))
                    (car (auth-source-search :host host :max 1 :require '(:secret)))))
         (secret (plist-get found :secret)))
    (cond ((functionp secret) (funcall secret))
          ((stringp secret) secret)
          (t (let ((env (getenv (tandem-remote--env-name name))))
               (and env (not (string-empty-p env)) env))))))

(defun tandem-remote--server (name)
  "Return the params naming host NAME: (:url URL [:api-key KEY])."
  (let* ((url (tandem-remote-host-url name))
         (key (tandem-remote-api-key name url)))
    (append (list :url url) (and key (list :api-key key)))))

(defun tandem-remote--request-async (method params callback errback)
  "Call METHOD with PARAMS, which may hold a key; run CALLBACK or ERRBACK.
The call is kept out of the `*tandem-events*' log: it may carry the key."
  (let ((tandem-log-events nil))
    (tandem-request-async method params callback errback)))

(defun tandem-remote--request (method params &optional timeout)
  "Call METHOD with PARAMS (which may hold a key) and wait at most TIMEOUT."
  (let ((tandem-log-events nil))
    (tandem-request method params timeout)))

;;;; Session targets

(defun tandem-remote-attach (session host working-dir)
  "Make HOST the execution target of SESSION, in WORKING-DIR on the server.
WORKING-DIR may be relative to the server's home.  Return the target."
  (interactive
   (let ((session (or (funcall tandem-remote-session-function)
                      (tandem-read-text "Session id" :what "session id"))))
     (list session (tandem-remote-read-host)
           (tandem-read-text "Working dir (relative to the server's home)"
                             :default tandem-remote-default-working-dir
                             :what "working dir"))))
  (when (called-interactively-p 'interactive)
    (tandem-remote--maybe-ask-forward host))
  (let ((target (tandem-remote--request
                 "remote/attach"
                 (append (list :session session :host host :working-dir working-dir)
                         (tandem-remote--server host)))))
    (puthash session target tandem-remote--targets)
    (when (called-interactively-p 'interactive)
      (message "Session %s now executes on %s in %s" session host
               (plist-get target :resolved-working-dir)))
    target))

(defun tandem-remote-detach (session)
  "Stop SESSION from executing remotely."
  (interactive (list (or (funcall tandem-remote-session-function)
                         (tandem-read-text "Session id" :what "session id"))))
  (tandem-remote--request "remote/detach" (list :session session))
  (puthash session :none tandem-remote--targets))

(defun tandem-remote-target (session &optional refresh)
  "Return SESSION's remote target plist, or nil; REFRESH asks the backend again."
  (let ((known (gethash session tandem-remote--targets)))
    (when (or refresh (null known))
      (setq known (or (tandem-request "remote/target" (list :session session)) :none))
      (puthash session known tandem-remote--targets))
    (and (not (eq known :none)) known)))

(defun tandem-remote-remember (session target)
  "Record TARGET (a plist, or nil for none) as SESSION's remote target."
  (puthash session (or target :none) tandem-remote--targets))

(defun tandem-remote-header-string (session)
  "Return a short header text naming SESSION's engine and host, or nil.
\"remote: HOST (WORKING-DIR), no editor tools\" for a session that
executes on an agent-server (its agent is never given the editor tools:
a local Emacs is not opened to a remote host); nil for a local one.  It
uses what is known; call `tandem-remote-target' to fetch first."
  (let ((target (gethash session tandem-remote--targets)))
    (when (and target (not (eq target :none)))
      (format "remote: %s (%s), no editor tools" (plist-get target :host)
              (plist-get target :resolved-working-dir)))))

;;;; Uploads

(defun tandem-remote--files-here ()
  "Return the files to upload: Dired's marked files, else the visited file."
  (cond ((derived-mode-p 'dired-mode) (dired-get-marked-files nil nil))
        (buffer-file-name
         (when (and (buffer-modified-p)
                    (y-or-n-p (format "Save %s before uploading? " (buffer-name))))
           (save-buffer))
         (list buffer-file-name))
        (t (user-error "No file here: visit a file or mark files in Dired"))))

(defun tandem-remote--size-string (bytes)
  "Return BYTES as a short human size."
  (file-size-human-readable (or bytes 0) nil " " "B"))

(defun tandem-remote-upload-files (files host working-dir &optional done)
  "Upload FILES to HOST into WORKING-DIR (resolved by the backend).
Files go one by one, with a progress reporter; folders are refused.
DONE, if non-nil, is called with (UPLOADED FAILURES): UPLOADED the reply
entries, FAILURES a list of (FILE . MESSAGE) where MESSAGE names the file
and carries the server's words.  Failures are also shown as a warning."
  (let* ((server (tandem-remote--server host))
         (files (mapcar #'expand-file-name files))
         (sizes (mapcar (lambda (f)
                          (if (file-regular-p f) (file-attribute-size (file-attributes f)) 0))
                        files))
         (total (max 1 (apply #'+ sizes)))
         (count (length files))
         (reporter (make-progress-reporter
                    (format "Uploading %d file%s to %s... " count (if (= count 1) "" "s") host)
                    0 total))
         (sent 0) (index 0) (uploaded nil) (failures nil))
    (cl-labels
        ((finish ()
           (progress-reporter-done reporter)
           (setq uploaded (nreverse uploaded) failures (nreverse failures))
           (when failures
             (display-warning 'tandem-remote
                              (mapconcat #'cdr failures "\n") :error))
           (message "Uploaded %d of %d file%s to %s:%s%s" (length uploaded) count
                    (if (= count 1) "" "s") host working-dir
                    (if failures (format "; %d failed (see *Warnings*)" (length failures)) ""))
           (when done (funcall done uploaded failures)))
         (next (files sizes)
           (if (null files)
               (finish)
             (let ((file (car files)) (size (car sizes)))
               (cl-incf index)
               (progress-reporter-force-update
                reporter sent
                (format "Uploading %s (%d/%d, %s) to %s... " (file-name-nondirectory file)
                        index count (tandem-remote--size-string size) host))
               (cl-flet ((step () (cl-incf sent size) (next (cdr files) (cdr sizes))))
                 (if (file-directory-p file)
                     (progn (push (cons file (format "Upload of %s refused: it is a folder" file))
                                  failures)
                            (step))
                   (tandem-remote--request-async
                    "remote/upload"
                    (append (list :working-dir working-dir :files (list file)) server)
                    (lambda (reply)
                      (push (car (plist-get reply :uploaded)) uploaded)
                      (step))
                    (lambda (err)
                      (push (cons file (tandem-remote--failure-text file (nth 1 err))) failures)
                      (step)))))))))
      (next files sizes))))

(defun tandem-remote--failure-text (file message)
  "Return MESSAGE about FILE, naming FILE if the message does not already."
  (if (string-search file message) message (format "%s: %s" file message)))

;;;###autoload
(defun tandem-remote-upload (files host working-dir)
  "Upload FILES to the remote working dir WORKING-DIR on HOST.
Interactively: the marked files in Dired, else the current file; the
session's remote target when it has one, else ask (always ask with a
prefix argument)."
  (interactive
   (let* ((files (tandem-remote--files-here))
          (session (funcall tandem-remote-session-function))
          (target (and session (not current-prefix-arg) (tandem-remote-target session))))
     (if target
         (list files (plist-get target :host) (plist-get target :resolved-working-dir))
       (list files (tandem-remote-read-host "Upload to")
             (tandem-read-text "Remote working dir (relative to the server's home)"
                               :default tandem-remote-default-working-dir
                               :what "working dir")))))
  (tandem-remote-upload-files files host working-dir))

;;;; Hosts status

(defun tandem-remote-hosts-status ()
  "Show each host of `tandem-remote-hosts' with its home or its error."
  (interactive)
  (let* ((hosts (mapcar (lambda (h)
                          (append (list :name (car h)) (tandem-remote--server (car h))))
                        tandem-remote-hosts))
         (rows (tandem-remote--request "remote/hosts" (list :hosts hosts) 60)))
    (with-current-buffer (get-buffer-create "*tandem-remote-hosts*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (dolist (row rows)
          (insert (format "%-16s %-32s %s\n" (plist-get row :name) (plist-get row :url)
                          (or (plist-get row :home) (plist-get row :error))))))
      (special-mode)
      (display-buffer (current-buffer)))
    rows))

(provide 'tandem-remote)
;;; tandem-remote.el ends here
