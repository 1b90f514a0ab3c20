;;; tandem-client.el --- Backend process and RPC for tandem  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; tandem's Emacs side talks to a Python backend (`tandem serve') over EPC:
;; frames of six hexadecimal digits of byte length followed by an
;; S-expression.  This file starts and stops the backend, authenticates with
;; a per-backend token, sends requests (synchronous and asynchronous),
;; answers the backend's calls into Emacs (event batches above all), and
;; fetches large replies page by page.  A call from the backend is handled
;; with the connection it came on: each connection keeps its own event
;; sequence, and the event hooks see it as `tandem-event-connection'.
;;
;; It is a small client of its own rather than epc.el: `epc:call-sync' waits
;; in 150 ms slices through deferred.el (about 300 ms a call here), and
;; docs/performance.md shows this one answering in well under a millisecond.
;;
;; Public API:
;;   `tandem-start', `tandem-stop', `tandem-restart' -- the backend process.
;;   `tandem-request'       -- call a method and wait for its value.
;;   `tandem-request-async' -- call a method, continue in a callback.
;;   `tandem-event-functions' -- hook run with each event from the backend.
;;   `tandem-event-connection' -- the connection those events came on.
;;   `tandem-error'         -- the error every failed call signals; each
;;                            code is a condition below it (tandem-errors.el).

;;; Code:

(require 'cl-lib)
(require 'eieio)
(require 'seq)
(require 'subr-x)
(require 'json)
(require 'tandem-core)
(require 'tandem-install)
(require 'tandem-errors)
(require 'tandem-wire)
(require 'tandem-events-log)

(defcustom tandem-python nil
  "Python interpreter that runs the tandem backend.
When nil, use the venv `tandem-install-backend' made when there is one,
else the `.venv' of the tandem checkout when there is one, else
\"python3\" from the variable `exec-path'."
  :type '(choice (const :tag "Automatic" nil) (file :tag "Interpreter"))
  :group 'tandem)

(defcustom tandem-backend-arguments '("-m" "tandem.cli" "serve")
  "Arguments given to `tandem-python' to start the backend."
  :type '(repeat string)
  :group 'tandem)

(defcustom tandem-home nil
  "State directory of the backend (TANDEM_HOME), or nil for its default.
The default is $XDG_STATE_HOME/tandem, i.e. ~/.local/state/tandem."
  :type '(choice (const :tag "Default" nil) directory)
  :group 'tandem)

(defcustom tandem-request-timeout 30
  "Seconds a synchronous request waits for its reply before failing."
  :type 'number
  :group 'tandem)

(defcustom tandem-start-timeout 60
  "Seconds to wait for a starting backend to announce its port."
  :type 'number
  :group 'tandem)

(defvar tandem-event-functions nil
  "Abnormal hook run with each event the backend publishes.
Each function receives one plist (:session ID :seq N :kind KIND ...);
`tandem-event-connection' is the connection it arrived on.")

(defvar tandem-event-connection nil
  "The `tandem-connection' whose events the event hooks are running for.
Bound while `tandem-event-functions' and `tandem-event-gap-functions'
run for a batch; nil when a hook is run by other code.")

(defvar tandem-event-gap-functions nil
  "Abnormal hook run when events of a session arrive out of sequence.
Each function receives SESSION, the EXPECTED seq and the one that ARRIVED;
a view refetches from the journal.")

(defvar tandem-client-methods nil
  "Alist of (NAME . FUNCTION): methods the backend may call in Emacs.
FUNCTION receives the connection the call came on, then the call's
arguments, and returns the reply value.")

(defconst tandem--read-max (* 1024 1024)
  "Bytes read from the backend at once while waiting for a reply.")

(defconst tandem--read-copy-min (* 256 1024)
  "Bytes from which a frame is read from a string copy, not the inbox.
`read' from a buffer costs ~1.6 times `read-from-string' on the many
small objects of a large reply (40 against 25 ms for the 2 MB history of
a long session; 34 against 25 ms for a 350 KB reply of 10k plists), far
more than the copy.  Below this size the copy's garbage costs more than
it saves: a 100 KB round trip makes three 100 KB strings with it, two
without, enough to set off a collection every other call instead of
every third (3 against 14 ms, median), while the read of one long
string takes as long either way.")

(defconst tandem--gc-threshold (* 64 1024 1024)
  "`gc-cons-threshold' while a frame is encoded or decoded.
A 100 KB frame makes a few 100 KB strings; with the default threshold each
one can set off a full collection in the middle of a round trip.  Garbage
is collected as usual once the frame is done.")

(defconst tandem-client--root
  (file-name-directory
   (directory-file-name
    (file-name-directory (or load-file-name buffer-file-name default-directory))))
  "The tandem checkout this file was loaded from.")

;;;; The connection

(defclass tandem-connection ()
  ((name :initarg :name :initform "tandem"
         :documentation "A name for messages and buffer names.")
   (process :initarg :process :initform nil
            :documentation "The backend subprocess running `tandem serve'.")
   (socket :initform nil
           :documentation "The network process connected to the backend's port.")
   (token :initarg :token
          :documentation "The secret the backend expects in `hello'.")
   (port :initform nil
         :documentation "The backend's port on 127.0.0.1.")
   (next-uid :initform 0
             :documentation "Last uid given to a call from Emacs.")
   (pending :initform (make-hash-table)
            :documentation "Calls awaiting replies: uid -> (METHOD SUCCESS . ERROR).")
   (inbox :initform nil
          :documentation "Unibyte buffer collecting bytes not yet read as frames.")
   (stderr :initform nil
           :documentation "Buffer receiving the backend's stderr.")
   (info :initform nil
         :documentation "The backend's reply to `hello' (a plist).")
   (last-seq :initform (make-hash-table :test #'equal)
             :documentation "Per session: seq of the last event applied.")
   (dead :initform nil
         :documentation "Non-nil once the backend or its socket went away."))
  "A live connection to one tandem backend.")

(defvar tandem--connection nil
  "The current `tandem-connection', or nil before the first start.")

(cl-defgeneric tandem-connection-live-p (conn)
  "Return non-nil when CONN is usable (mandatory).")

(cl-defmethod tandem-connection-live-p ((conn tandem-connection))
  "Return non-nil when CONN's socket is open and its backend alive."
  (and (not (oref conn dead))
       (process-live-p (oref conn process))
       (oref conn socket)
       (process-live-p (oref conn socket))))

(cl-defgeneric tandem-connection-shutdown (conn)
  "Stop CONN's backend and fail every pending call (mandatory).")

;;;; Sending

(defun tandem--send (conn message)
  "Send MESSAGE to CONN's backend.
The frame is built in a buffer and sent from it: no string of the whole
frame is made, which keeps large requests from setting off a collection."
  (tandem--log '-> message)
  (let ((gc-cons-threshold (max gc-cons-threshold tandem--gc-threshold)))
    (with-current-buffer (get-buffer-create " *tandem-out*")
      (tandem--frame-into-buffer message)
      (process-send-region (oref conn socket) (point-min) (point-max))
      (erase-buffer))))

;;;; Receiving

(defun tandem--filter (conn)
  "Return the process filter of CONN's socket.
The socket decodes UTF-8 itself (across read boundaries); frames are
found by byte positions in the multibyte inbox.  A frame is read
straight from the inbox, or from a string copy of its text when it has
at least `tandem--read-copy-min' bytes (see there)."
  (lambda (_proc string)
    (let ((inbox (oref conn inbox)) (messages nil))
      ;; The threshold covers decoding only: what the handlers set (the
      ;; view's hold while text streams) must outlive this call.
      (let ((gc-cons-threshold (max gc-cons-threshold tandem--gc-threshold)))
        (with-current-buffer inbox
          (goto-char (point-max))
          (insert string)
          (goto-char (point-min))
          (let (len end)
            (while (and (>= (- (point-max) (point)) 6)
                        (setq len (string-to-number
                                   (buffer-substring-no-properties (point) (+ (point) 6)) 16))
                        (setq end (byte-to-position (+ (position-bytes (+ (point) 6)) len))))
              (forward-char 6)
              (push (condition-case err
                        (if (< len tandem--read-copy-min)
                            (read (current-buffer))
                          (car (read-from-string (buffer-substring-no-properties (point) end))))
                      (error (tandem--log '<- (list 'unreadable err)) nil))
                    messages)
              (goto-char end)))
          (delete-region (point-min) (point))))
      (dolist (message (nreverse messages))
        (when message
          (tandem--log '<- message)
          (tandem--dispatch conn message))))))

(defun tandem--dispatch (conn message)
  "Act on MESSAGE, one decoded frame from CONN."
  (pcase message
    (`(return ,uid . ,rest) (tandem--settle conn uid t (car rest)))
    (`(,(and kind (or 'return-error 'epc-error)) ,uid . ,rest)
     (tandem--settle conn uid nil (tandem--error-from-reply kind (car rest))))
    (`(call ,uid ,method . ,rest) (tandem--answer-call conn uid method (car rest)))
    (`(methods ,uid)
     (tandem--send conn `(return ,uid ,(mapcar (lambda (m) (list (car m) "" "")) tandem-client-methods))))))

(defun tandem--settle (conn uid ok value)
  "Run the continuation of call UID on CONN: success with VALUE when OK."
  (let ((entry (gethash uid (oref conn pending))))
    (when entry
      (remhash uid (oref conn pending))
      (funcall (if ok (cadr entry) (cddr entry)) value))))

(defun tandem--answer-call (conn uid method args)
  "Answer the backend's call UID of METHOD with ARGS on CONN."
  (let ((fn (alist-get method tandem-client-methods nil nil
                       (lambda (a b) (string= (format "%s" a) (format "%s" b))))))
    (condition-case err
        (if (not fn)
            (tandem--send conn `(epc-error ,uid ,(format "No such method in Emacs: %s" method)))
          (tandem--send conn `(return ,uid ,(tandem--plain (apply fn conn args)))))
      (error (tandem--send conn `(return-error ,uid ,(error-message-string err)))))))

(defun tandem--on-events (conn events)
  "Apply EVENTS, a batch from the backend of CONN: check sequence, run the hook.
Sequence is kept per connection, and the hooks see CONN as
`tandem-event-connection': a view applies only the events of the
backend it follows."
  (let ((tandem-event-connection conn))
    (dolist (event events)
      (let* ((session (plist-get event :session))
             (seq (plist-get event :seq))
             ;; Seqs start at 1 per connection: a first event past 1 is a gap too.
             (last (and conn (gethash session (oref conn last-seq) 0))))
        (when (and last seq (/= seq (1+ last)))
          (run-hook-with-args 'tandem-event-gap-functions session (1+ last) seq))
        (when seq (puthash session seq (oref conn last-seq)))
        (with-demoted-errors "tandem event handler: %S"
          (run-hook-with-args 'tandem-event-functions event))))
    nil))

(setf (alist-get 'tandem--events tandem-client-methods) #'tandem--on-events)
(setf (alist-get 'echo tandem-client-methods) (lambda (_conn &rest args) args))

;;;; Requests

(defun tandem-ensure-connection ()
  "Return the current live connection, starting the backend when there is none."
  (if (and tandem--connection (tandem-connection-live-p tandem--connection))
      tandem--connection
    (tandem-start)))

(defun tandem--call (conn method params success error)
  "Send METHOD with PARAMS on CONN; run SUCCESS or ERROR with the reply.
Return the call's uid.  Paged replies are joined before SUCCESS runs."
  (let ((uid (cl-incf (oref conn next-uid))))
    (puthash uid (cons method
                       (cons (lambda (value)
                               (if (and (consp value) (plist-get value :tandem-paged))
                                   (tandem--fetch-pages conn value success error)
                                 (funcall success value)))
                             error))
             (oref conn pending))
    (tandem--send conn `(call ,uid ,(intern method)
                              ,(if params (list (tandem--plain params)) nil)))
    uid))

(defun tandem--fetch-pages (conn marker success error)
  "Fetch every page of MARKER on CONN, then run SUCCESS with the read value.
ERROR runs instead if a page cannot be had."
  (let ((handle (plist-get marker :tandem-paged))
        (count (plist-get marker :pages))
        (pages nil))
    (cl-labels ((next (index)
                  (if (= index count)
                      (funcall success
                               (car (read-from-string (apply #'concat (nreverse pages)))))
                    (tandem--call conn "page" (list :handle handle :index index)
                                  (lambda (text) (push text pages) (next (1+ index)))
                                  error))))
      (next 0))))

(defun tandem-request-async (method params callback &optional errback connection)
  "Call METHOD with PARAMS (a plist) in the backend; don't wait.
CALLBACK receives the reply value.  ERRBACK, if non-nil, receives the
error as (CODE MESSAGE DATA COMMAND); without it the error is shown as a
message.
CONNECTION, if non-nil, is the live connection to call on (default: the
current one, started when needed).  Return the call's uid."
  (tandem--call (or connection (tandem-ensure-connection)) method params callback
                (or errback
                    (lambda (err)
                      (message "tandem: %s failed: %s" method (nth 1 err))))))

(defun tandem-request (method &optional params timeout cancel-on-input)
  "Call METHOD with PARAMS (a plist) in the backend and return its value.
Wait at most TIMEOUT seconds (default `tandem-request-timeout').  When
CANCEL-ON-INPUT is non-nil, pending user input cancels the wait.  Failures
of any kind -- an error reply, a timeout, a cancel, the backend dying --
signal `tandem-error' with a readable message."
  (let* ((conn (tandem-ensure-connection))
         (state nil) (value nil)
         (uid (tandem--call conn method params
                            (lambda (v) (setq state 'ok value v))
                            (lambda (e) (setq state 'error value e))))
         (deadline (+ (float-time) (or timeout tandem-request-timeout))))
    (unwind-protect
        (while (not state)
          (cond ((or (oref conn dead) (not (process-live-p (oref conn process))))
                 (setq state 'error
                       value (list "backend-died"
                                   (format "%s: the tandem backend died (%s)" method
                                           (tandem--death-note conn))
                                   nil)))
                ((> (float-time) deadline)
                 (setq state 'error
                       value (list "timeout" (format "%s: no reply within %ss" method
                                                     (or timeout tandem-request-timeout))
                                   nil)))
                ((and cancel-on-input (input-pending-p))
                 (setq state 'error value (list "cancelled" (format "%s: cancelled" method) nil)))
                (t (let ((read-process-output-max (max read-process-output-max tandem--read-max)))
                     (accept-process-output (oref conn socket) 0.05)))))
      (remhash uid (oref conn pending)))
    (if (eq state 'ok)
        value
      (apply #'tandem--signal value))))

;;;; Starting and stopping

(defun tandem--python ()
  "Return the Python interpreter for the backend."
  (or tandem-python
      (tandem-install-venv-python)
      (let ((venv (expand-file-name ".venv/bin/python" tandem-client--root)))
        (and (file-executable-p venv) venv))
      (executable-find "python3")
      (user-error "No Python found for tandem; set `tandem-python'")))

(defun tandem--death-note (conn)
  "Return a short account of why CONN's backend is gone, from its stderr."
  (let ((buf (oref conn stderr)))
    (if (and (buffer-live-p buf) (> (buffer-size buf) 0))
        (with-current-buffer buf
          (let ((text (string-trim (buffer-substring-no-properties
                                    (max (point-min) (- (point-max) 400)) (point-max)))))
            ;; The last line but the pipe's own "Process ... finished".
            (car (last (seq-remove
                        (lambda (line) (string-match-p "\\`Process .* finished\\'" line))
                        (split-string text "\n" t "[ \t]+"))))))
      (let ((proc (oref conn process)))
        (if (processp proc)
            (format "%s, exit status %s" (process-status proc) (process-exit-status proc))
          "not started")))))

(defun tandem--mark-dead (conn why)
  "Mark CONN dead because of WHY and fail every pending call at once."
  (unless (oref conn dead)
    (oset conn dead t)
    (let ((pending (oref conn pending)) (calls nil))
      (maphash (lambda (uid entry) (push (cons uid entry) calls)) pending)
      (clrhash pending)
      (dolist (call calls)
        (funcall (cddr (cdr call))
                 (list "backend-died"
                       (format "%s: the tandem backend died (%s)" (cadr call) why)
                       nil))))))

(defun tandem--sentinel (conn)
  "Return a sentinel to mark CONN dead when its process exits."
  (lambda (proc _event)
    (unless (process-live-p proc)
      (tandem--mark-dead conn (tandem--death-note conn)))))

(defconst tandem--secret-variable-regexp
  "\\`[^=]*\\(?:_API_KEY\\|_APIKEY\\|_TOKEN\\|_SECRET\\|_SECRET_KEY\\|_ACCESS_KEY\\|_PASSWORD\\)\\(?:=\\|\\'\\)"
  "Matches a `process-environment' entry holding a secret (as tandem.secrets says).")

(defun tandem--split-secrets (env)
  "Return (CLEAN . SECRETS): ENV without secret variables, and those as an alist.
The backend gets SECRETS on its stdin, so that they are never in its
initial environment, which any process of the user can read."
  (let ((case-fold-search t) (clean nil) (secrets nil))
    (dolist (entry env)
      (if (not (string-match-p tandem--secret-variable-regexp entry))
          (push entry clean)
        (let* ((cut (string-match "=" entry))
               (name (substring entry 0 cut)))
          ;; The first entry of a name wins, as in the environment itself;
          ;; an entry without "=" unsets it.
          (unless (assoc name secrets)
            (push (cons name (and cut (substring entry (1+ cut)))) secrets)))))
    (cons (nreverse clean) (seq-filter #'cdr (nreverse secrets)))))

(defun tandem--handover (conn secrets)
  "Return the line giving the backend CONN's token and SECRETS (an alist)."
  (concat (json-encode (list (cons "token" (oref conn token))
                             (cons "secrets" (or secrets (make-hash-table)))))
          "\n"))

(defun tandem--start-process (conn)
  "Start CONN's backend process and return the port it announces."
  (let* ((port nil) (out "")
         (stderr (generate-new-buffer " *tandem-stderr*"))
         (split (tandem--split-secrets process-environment))
         (process-environment
          (append (list "PYTHONUNBUFFERED=1")
                  ;; The installed venv runs the code pip put there (so that
                  ;; its version is the one `hello' reports); any other
                  ;; Python runs this checkout's sources.
                  (unless (equal (tandem--python) (tandem-install-venv-python))
                    (list (concat "PYTHONPATH=" (expand-file-name "python" tandem-client--root))))
                  (and tandem-home (list (concat "TANDEM_HOME" "=" (expand-file-name tandem-home))))
                  (car split)))
         (proc (make-process
                :name "tandem-backend" :noquery t
                :command (cons (tandem--python) tandem-backend-arguments)
                :connection-type 'pipe :coding 'utf-8
                :stderr stderr
                :filter (lambda (_p s)
                          (unless port
                            (setq out (concat out s))
                            (when (string-match "\\`\\([0-9]+\\)\n" out)
                              (setq port (string-to-number (match-string 1 out))))))
                :sentinel (tandem--sentinel conn))))
    (oset conn process proc)
    (oset conn stderr stderr)
    (process-send-string proc (tandem--handover conn (cdr split)))
    (let ((deadline (+ (float-time) tandem-start-timeout)))
      (while (and (not port) (process-live-p proc) (< (float-time) deadline))
        (accept-process-output proc 0.05 nil t)))
    (unless port
      (when (process-live-p proc) (delete-process proc))
      ;; Read the rest of its stderr (the reason, e.g. a missing module):
      ;; the loop above read only the process itself.
      (let ((pipe (get-buffer-process stderr)) (until (+ (float-time) 2)))
        (while (and pipe (process-live-p pipe) (< (float-time) until))
          (accept-process-output pipe 0.05)))
      (tandem--signal "start-failed"
                      (format "tandem backend did not start: %s"
                              (string-trim (concat out " " (tandem--death-note conn))))))
    port))

(defun tandem-start ()
  "Start a tandem backend, connect and authenticate; return the connection.
An earlier backend is stopped first."
  (interactive)
  (when tandem--connection (tandem-connection-shutdown tandem--connection))
  (let* ((read-process-output-max (max read-process-output-max tandem--read-max))
         (conn (tandem-connection
                :token (secure-hash 'sha256 (format "%s%s%s" (random t) (float-time) (emacs-pid)))))
         (port (condition-case err (tandem--start-process conn)
                 (tandem-error
                  (when (tandem-install-offer-after-failure (tandem-error-message err))
                    (user-error "Installing the tandem backend (see *tandem-install*); try again when it has finished"))
                  (signal (car err) (cdr err)))))
         (inbox (generate-new-buffer " *tandem-inbox*")))
    (with-current-buffer inbox (set-buffer-multibyte t))
    (oset conn inbox inbox)
    (oset conn port port)
    (oset conn socket
          ;; Adaptive read buffering delays reading after a short read (up
          ;; to 20 ms): the tail of every large reply would wait for it.
          (let ((process-adaptive-read-buffering nil))
            (make-network-process
             :name "tandem-socket" :host "127.0.0.1" :service port :noquery t
             :coding '(utf-8 . binary) :filter (tandem--filter conn)
             :sentinel (tandem--sentinel conn))))
    (setq tandem--connection conn)
    (oset conn info (tandem-request "hello" (list :token (oref conn token)
                                                  :client (format "Emacs %s" emacs-version))))
    (tandem-install-check-hello (oref conn info))
    (when (called-interactively-p 'interactive)
      (message "tandem backend %s started (pid %s)"
               (plist-get (oref conn info) :version) (plist-get (oref conn info) :pid)))
    conn))

(cl-defmethod tandem-connection-shutdown ((conn tandem-connection))
  "Stop CONN's backend process and socket; fail every pending call."
  (tandem--mark-dead conn "stopped")
  (dolist (proc (list (oref conn socket) (oref conn process)))
    (when (processp proc) (delete-process proc)))
  (dolist (buf (list (oref conn inbox) (oref conn stderr)))
    (when (buffer-live-p buf) (kill-buffer buf))))

(defun tandem-stop ()
  "Stop the tandem backend; the next command will start a new one."
  (interactive)
  (when tandem--connection
    (tandem-connection-shutdown tandem--connection)
    (setq tandem--connection nil)))

(defun tandem-restart ()
  "Stop the tandem backend and start a new one."
  (interactive)
  (tandem-stop)
  (tandem-start))

(defun tandem-backend-pid ()
  "Return the pid of the running backend, or nil."
  (let ((conn tandem--connection))
    (and conn (tandem-connection-live-p conn) (process-id (oref conn process)))))

(provide 'tandem-client)
;;; tandem-client.el ends here
