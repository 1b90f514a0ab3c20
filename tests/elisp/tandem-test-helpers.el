;;; tandem-test-helpers.el --- Shared fixtures for tandem's ERT tests  -*- lexical-binding: t; -*-

;;; Commentary:
;; Every test runs against a real backend process with its own state
;; directory, so tests never touch the user's state and never share it.
;; Loading this file also gives the whole Emacs (and every process it
;; starts) a HOME, XDG directories and TANDEM_HOME of its own; the
;; programs `make test-deps' installed stay reachable through
;; `tandem-test-cache' (TANDEM_TEST_CACHE).

;;; Code:

(require 'ert)
(require 'tandem)

;; A test that hides a session buffer must not reach the desktop of the
;; user running the tests: notifications go to the echo area.
(with-eval-after-load 'tandem-notify
  (setq tandem-notify-dbus-check #'ignore
        tandem-notify-alert-check #'ignore))

(defconst tandem-test-cache-directory
  (or (getenv "TANDEM_TEST_CACHE")
      (expand-file-name "tandem-test" (or (getenv "XDG_CACHE_HOME") "~/.cache")))
  "Where `make test-deps' installed the integration tests' programs.
Read before the tests' own HOME replaces the user's.")

(defun tandem-test-cache ()
  "The directory of the integration tests' installed programs."
  tandem-test-cache-directory)

(defconst tandem-test-user-directory
  (let ((dir (make-temp-file "tandem-test-user-" t)))
    (setenv "TANDEM_TEST_CACHE" tandem-test-cache-directory)
    (dolist (var '(("HOME" . "home") ("XDG_CONFIG_HOME" . "config")
                   ("XDG_STATE_HOME" . "state") ("XDG_DATA_HOME" . "data")
                   ("XDG_CACHE_HOME" . "cache") ("XDG_RUNTIME_DIR" . "run")
                   ("TANDEM_HOME" . "tandem")))
      (let ((sub (expand-file-name (cdr var) dir)))
        (make-directory sub t)
        (setenv (car var) sub)))
    dir)
  "The HOME, XDG directories and default TANDEM_HOME of this test Emacs.")

(defvar tandem-test--homes nil
  "State directories made by `tandem-test-with-backend', removed at exit.")

(defun tandem-test-make-home ()
  "Return a fresh temporary TANDEM_HOME."
  (let ((dir (make-temp-file "tandem-test-home-" t)))
    (push dir tandem-test--homes)
    dir))

(add-hook 'kill-emacs-hook
          (lambda ()
            (tandem-stop)
            (dolist (dir (cons tandem-test-user-directory tandem-test--homes))
              (ignore-errors (delete-directory dir t)))))

(defmacro tandem-test-with-backend (&rest body)
  "Run BODY with a fresh backend on a fresh state directory, then stop it."
  (declare (indent 0) (debug t))
  `(let ((tandem-home (tandem-test-make-home))
         (tandem-event-functions nil)
         (tandem-event-gap-functions nil))
     (unwind-protect
         (progn (tandem-start) ,@body)
       (tandem-stop))))

(defun tandem-test-wait-until (predicate &optional timeout)
  "Wait until PREDICATE returns non-nil, at most TIMEOUT seconds (default 10).
Return its value, or fail the test."
  (let ((deadline (+ (float-time) (or timeout 10))) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or value (ert-fail (format "condition not met within %ss" (or timeout 10))))))

;;;; Fake model servers

(defconst tandem-test-root
  (file-name-directory (directory-file-name
                        (file-name-directory (directory-file-name
                                              (file-name-directory load-file-name)))))
  "The tandem checkout the tests run from.")

(defun tandem-test-start-fake (kind script &optional record)
  "Start the fake KIND server (\"openai\" or \"anthropic\") playing SCRIPT.
SCRIPT is a JSON file; RECORD, if non-nil, a file receiving every request
as a JSON line.  Return (PROCESS . PORT)."
  (let* ((out "")
         (proc (make-process
                :name (concat "tandem-fake-" kind) :noquery t :connection-type 'pipe
                :command (append (list (expand-file-name ".venv/bin/python" tandem-test-root)
                                       (expand-file-name (format "tests/fakes/%s_server.py" kind)
                                                         tandem-test-root)
                                       "--port" "0" "--script" script)
                                 (and record (list "--record" record)))
                :filter (lambda (_p s) (setq out (concat out s))))))
    (tandem-test-wait-until (lambda () (string-match "\\`\\([0-9]+\\)\n" out)) 30)
    (cons proc (string-to-number (match-string 1 out)))))

(defmacro tandem-test-with-fake-openai (script &rest body)
  "Run BODY with a fake OpenAI server playing SCRIPT and a backend using it.
Inside BODY, `fake-record' names the file of recorded requests and
`project' a fresh project directory (a git repository)."
  (declare (indent 1) (debug t))
  `(let* ((fake-record (make-temp-file "tandem-fake-record-" nil ".jsonl"))
          (fake (tandem-test-start-fake "openai" ,script fake-record))
          (project (file-name-as-directory (make-temp-file "tandem-project-" t)))
          (process-environment
           (append (list (format "OPENAI_BASE_URL=http://127.0.0.1:%d/v1" (cdr fake))
                         "OPENAI_API_KEY=sk-test-key-not-real")
                   process-environment))
          (tandem-provider "openai:gpt-test"))
     (ignore fake-record)
     (let ((default-directory project))
       (call-process "git" nil nil nil "init" "-q"))
     (unwind-protect
         (tandem-test-with-backend ,@body)
       (delete-process (car fake))
       (ignore-errors (delete-directory project t))
       (ignore-errors (delete-file fake-record)))))

(provide 'tandem-test-helpers)
;;; tandem-test-helpers.el ends here
