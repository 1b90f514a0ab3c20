;;; tandem-install-tests.el --- Finding, checking and offering the backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Installing the backend, in the checkout: which Python runs the backend, what
;; `hello' says about its versions, and the offers to (re)install.  The
;; install itself, from a clean clone into a fresh venv, is
;; tests/package/run.sh (`make package-test').

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-install)

(defun tandem-install-test--offers (fn)
  "Call FN with the install offers recorded and declined; return the questions."
  (let* ((asked nil)
         (tandem-install-offer-function (lambda (q) (push q asked) nil)))
    (funcall fn)
    (nreverse asked)))

(ert-deftest tandem-install-manual-is-found-where-emacs-looks ()
  "A clone on the `load-path' puts its doc/ where \\[info] looks, built or not.
`make test' builds the manual before ERT: the Info directory then lists
tandem (\\[info] m tandem) and `tandem-manual' opens its Top node."
  (require 'info)
  (info-initialize)                     ; what \\[info] does first
  (should tandem--manual-directory)
  (should (member tandem--manual-directory Info-directory-list))
  (should (file-exists-p (expand-file-name "tandem.info" tandem--manual-directory)))
  (let ((Info-dir-contents nil))
    (with-temp-buffer
      (Info-mode)
      (Info-find-node "dir" "top")
      (should (re-search-forward "^\\* tandem: " nil t))))
  (save-window-excursion
    (tandem-manual)
    (with-current-buffer "*info*"
      (should (string-match-p "tandem" (file-name-nondirectory Info-current-file)))
      (should (equal Info-current-node "Top")))
    (kill-buffer "*info*")))

(ert-deftest tandem-install-links-the-command-for-the-shell ()
  "After an install the `tandem' command is linked where the shell finds it.
A file of someone else's at that place is left alone and named."
  (let* ((dir (make-temp-file "tandem-link-" t))
         (venv (file-name-as-directory (expand-file-name "venv" dir)))
         (tandem-install-command-link (expand-file-name "bin/tandem" dir))
         (exec-path (list (expand-file-name "bin" dir))))
    (unwind-protect
        (progn
          (make-directory (expand-file-name "bin" venv) t)
          (write-region "" nil (expand-file-name "bin/tandem" venv))
          (should (equal (tandem-install-link-command venv)
                         (format "the tandem command is %s"
                                 (abbreviate-file-name tandem-install-command-link))))
          (should (equal (file-symlink-p tandem-install-command-link)
                         (expand-file-name "bin/tandem" venv)))
          ;; Again: the same link is kept.
          (tandem-install-link-command venv)
          (should (file-symlink-p tandem-install-command-link))
          ;; Not on the PATH: the sentence says what to add.
          (let ((exec-path nil))
            (should (string-match-p "add .* to your PATH"
                                    (tandem-install-link-command venv))))
          (delete-file tandem-install-command-link)
          (write-region "mine" nil tandem-install-command-link)
          (should (string-match-p "another file, left alone"
                                  (tandem-install-link-command venv)))
          (should (equal (with-temp-buffer (insert-file-contents tandem-install-command-link)
                                           (buffer-string))
                         "mine")))
      (delete-directory dir t))))

(ert-deftest tandem-install-sources-are-found-in-the-checkout ()
  "In a clone the backend's sources are the parent of `elisp/'."
  (should (equal (file-truename (tandem-install-source-directory))
                 (file-truename tandem-test-root))))

(ert-deftest tandem-install-sources-are-found-through-a-linked-build ()
  "straight and elpaca: .el links in a build directory, .elc compiled there."
  (let ((build (make-temp-file "tandem-build-" t))
        (source (locate-library "tandem-install.el")))
    (unwind-protect
        (let ((link (expand-file-name "tandem-install.el" build)))
          (make-symbolic-link source link)
          (let ((byte-compile-dest-file-function
                 (lambda (_) (expand-file-name "tandem-install.elc" build))))
            (byte-compile-file link))
          (should (file-regular-p (expand-file-name "tandem-install.elc" build)))
          ;; Loaded from the build directory, it still finds the clone.
          (load (expand-file-name "tandem-install.elc" build) nil t t)
          (should (equal tandem-install--library-directory
                         (file-name-directory (file-truename source))))
          (should (equal (file-truename (tandem-install-source-directory))
                         (file-truename tandem-test-root))))
      (delete-directory build t))))

(ert-deftest tandem-install-venv-python-becomes-the-default ()
  "An installed venv's interpreter is `tandem-python''s default."
  (let* ((venv (make-temp-file "tandem-venv-" t))
         (tandem-backend-directory venv)
         (tandem-python nil))
    (unwind-protect
        (progn
          (should-not (tandem-install-venv-python))
          (should-not (equal (tandem--python) (expand-file-name "bin/python" venv)))
          (make-directory (expand-file-name "bin" venv))
          (make-symbolic-link (executable-find "python3") (expand-file-name "bin/python" venv))
          (should (equal (tandem--python) (expand-file-name "bin/python" venv))))
      (delete-directory venv t))))

(ert-deftest tandem-install-default-venv-is-under-xdg-data ()
  "Without `tandem-backend-directory' the venv is $XDG_DATA_HOME/tandem/venv."
  (let ((tandem-backend-directory nil)
        (process-environment (cons "XDG_DATA_HOME=/tmp/xdg-data-test" process-environment)))
    (should (equal (tandem-install-venv) "/tmp/xdg-data-test/tandem/venv/"))))

(ert-deftest tandem-install-too-old-python-says-which-to-install ()
  "A Python older than 3.11 is refused with the version found and what to install."
  (let* ((old (make-temp-file "python-3.9-" nil nil
                              ;; Answers the version question as Python 3.9 would.
                              "#!/bin/sh\necho 3 9\n"))
         (tandem-install-python old))
    (unwind-protect
        (progn
          (set-file-modes old #o755)
          (let ((err (should-error (tandem-install-find-python) :type 'user-error)))
            (should (string-match-p "needs Python 3.11 or newer" (cadr err)))
            (should (string-match-p (regexp-quote (concat old " (3.9)")) (cadr err)))
            (should (string-match-p "python3-venv" (cadr err)))))
      (delete-file old))))

(ert-deftest tandem-install-finds-this-python ()
  "The Python running the tests' backend (3.11 or newer) is accepted."
  (let ((tandem-install-python (tandem--python)))
    (should (equal (tandem-install-find-python) (tandem--python)))))

(ert-deftest tandem-install-hello-reports-versions ()
  "The real backend's `hello' carries its version, protocol and interpreter."
  (tandem-test-with-backend
    (let ((info (oref tandem--connection info)))
      (should (equal (plist-get info :protocol) tandem-protocol-version))
      (should (stringp (plist-get info :version)))
      (should (file-executable-p (plist-get info :executable)))
      (should (file-directory-p (plist-get info :prefix))))))

(ert-deftest tandem-install-protocol-mismatch-says-so-and-offers ()
  "A backend speaking another protocol: a message, and a reinstall offered."
  (let* ((messages nil)
         (asked (tandem-install-test--offers
                 (lambda ()
                   (let ((tandem-protocol-version 999))
                     (cl-letf (((symbol-function 'message)
                                (lambda (fmt &rest args)
                                  (push (apply #'format-message fmt args) messages))))
                       (tandem-test-with-backend (tandem-request "ping"))))))))
    (should (cl-some (lambda (m) (string-match-p "speaks protocol 1, this package 999" m))
                     messages))
    (should (cl-some (lambda (m) (string-match-p "tandem-install-backend" m)) messages))
    (should (equal (length asked) 1))
    (should (string-match-p "Reinstall the backend now" (car asked)))))

(ert-deftest tandem-install-missing-backend-is-offered-an-install ()
  "A Python without the backend's dependencies: the start fails, an install is offered."
  (let* ((venv (make-temp-file "tandem-empty-venv-" t))
         (python (expand-file-name "bin/python" venv)))
    (unwind-protect
        (progn
          (should (eq 0 (call-process (tandem--python) nil nil nil
                                      "-m" "venv" "--without-pip" venv)))
          (let* ((err nil)
                 (asked (tandem-install-test--offers
                         (lambda ()
                           (let ((tandem-python python))
                             (setq err (should-error (tandem-test-with-backend nil)
                                                     :type 'tandem-error)))))))
            (should (string-match-p "No module named" (cadr err)))
            (should (equal (length asked) 1))
            (should (string-match-p "not installed" (car asked)))))
      (delete-directory venv t))))

(provide 'tandem-install-tests)
;;; tandem-install-tests.el ends here
