;;; tandem-test-helpers.el --- Shared fixtures for tandem's ERT tests  -*- lexical-binding: t; -*-

;;; Commentary:
;; Every test runs against a real backend process with its own state
;; directory, so tests never touch the user's state and never share it.

;;; Code:

(require 'ert)
(require 'tandem)

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
            (dolist (dir tandem-test--homes)
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

(provide 'tandem-test-helpers)
;;; tandem-test-helpers.el ends here
