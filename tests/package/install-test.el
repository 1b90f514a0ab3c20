;;; install-test.el --- tandem installed as a package, its backend by itself  -*- lexical-binding: t; -*-

;;; Commentary:
;; Run by tests/package/run.sh (`make package-test'), which sets the
;; environment: a clean clone of HEAD, a fresh HOME, and
;; TANDEM_PACKAGE_TEST_{METHOD,PACKAGE,WORK,CHECKOUT}.  Installs the
;; package into a fresh `package-user-dir' with no archives, installs the
;; backend with `tandem-install-backend' into a fresh venv, and sends a
;; chat turn to the fake OpenAI server.  Nothing may come from the
;; checkout the test was started from.

;;; Code:

(require 'ert)
(require 'package)
(require 'cl-lib)

(defconst tandem-package-test--work (getenv "TANDEM_PACKAGE_TEST_WORK")
  "Temporary directory of this run (removed by run.sh).")

(defconst tandem-package-test--checkout
  (file-name-as-directory (file-truename (getenv "TANDEM_PACKAGE_TEST_CHECKOUT")))
  "The checkout run.sh was started from: nothing of it may be used.")

(defconst tandem-package-test--clone
  (file-name-directory (directory-file-name
                        (file-name-directory
                         (directory-file-name (file-name-directory load-file-name)))))
  "The clean clone this file was loaded from.")

(setq package-user-dir (expand-file-name "elpa" tandem-package-test--work)
      package-archives nil
      package-check-signature nil)
(package-initialize)

(defvar tandem-backend-directory)
(defvar tandem-python)
(defvar tandem-install--succeeded)
(defvar tandem--connection)
(defvar Info-directory-list)
(declare-function tandem--python "tandem-client" ())
(declare-function tandem-install-source-directory "tandem-install" ())
(declare-function Info-find-file "info" (filename &optional noerror no-pop-to-dir))

(defun tandem-package-test--under (dir file)
  "Return non-nil when FILE (symbolic links resolved) is inside DIR."
  (string-prefix-p (file-name-as-directory (file-truename dir)) (file-truename file)))

(defun tandem-package-test--install ()
  "Install the package the way run.sh chose; return the seconds it took."
  (let ((start (float-time))
        (package (getenv "TANDEM_PACKAGE_TEST_PACKAGE")))
    (pcase (getenv "TANDEM_PACKAGE_TEST_METHOD")
      ("vc" (with-no-warnings
              (package-vc-install `(tandem :url ,package :lisp-dir "elisp"
                                           :doc "doc/tandem.texi"))))
      (_ (package-install-file package)))
    (- (float-time) start)))

(defun tandem-package-test--install-backend (venv)
  "Run `tandem-install-backend' into VENV and wait; return the seconds it took."
  (let* ((start (float-time))
         (buffer (tandem-install-backend venv)))
    (while (get-buffer-process buffer)
      (accept-process-output nil 0.5))
    (let ((ok (buffer-local-value 'tandem-install--succeeded buffer)))
      (unless ok
        (message "%s" (with-current-buffer buffer (buffer-string))))
      (should ok))
    (should (eq (buffer-local-value 'major-mode buffer) 'compilation-mode))
    (- (float-time) start)))

(ert-deftest tandem-package-installs-and-chats ()
  "From a clean clone: the package, then the backend, then a chat turn."
  (let ((package-seconds (tandem-package-test--install)))
    ;; Activated, with its generated autoloads.
    (should (fboundp 'tandem-install-backend))
    (should (file-exists-p (expand-file-name
                            "tandem-autoloads.el"
                            (package-desc-dir (cadr (assq 'tandem package-alist))))))
    (should (tandem-package-test--under package-user-dir (locate-library "tandem")))
    (require 'tandem)
    (should (tandem-package-test--under package-user-dir (symbol-file 'tandem-start)))
    (should (tandem-package-test--under package-user-dir (tandem-install-source-directory)))
    ;; The manual is found by Info.
    (require 'info)
    (info-initialize)
    (should (tandem-package-test--under package-user-dir (Info-find-file "tandem")))
    (let* ((venv (expand-file-name "venv" tandem-package-test--work))
           (python (expand-file-name "bin/python" venv))
           (backend-seconds (progn (setq tandem-backend-directory venv)
                                   (tandem-package-test--install-backend venv))))
      (setq tandem-python nil)
      (should (equal (tandem--python) python))
      (add-to-list 'load-path (expand-file-name "tests/elisp" tandem-package-test--clone))
      (require 'tandem-view-test-helpers)
      (tandem-view-test-with-session
          '(:steps [(:reply (:text "Installed as a package, answering from the venv."))])
        (let ((info (oref tandem--connection info)))
          ;; The backend is the new venv's Python, nothing of the checkout.
          (should (equal (file-truename (plist-get info :prefix)) (file-truename venv)))
          ;; (sys.executable is the venv's link, not resolved.)
          (should (string-prefix-p (file-name-as-directory venv) (plist-get info :executable)))
          (should-not (tandem-package-test--under tandem-package-test--checkout
                                                  (plist-get info :prefix)))
          (should (equal (plist-get info :protocol) tandem-protocol-version)))
        (let ((turn (tandem-view-test-send "Are you installed?")))
          (should (equal turn 1))
          (tandem-view-test-wait-turn turn 60)
          (should (string-match-p "answering from the venv" (tandem-view-test-text)))
          (should (string-match-p "succeeded" (tandem-view-test-text)))))
      (message "package-test: package installed in %.1f s, backend in %.1f s"
               package-seconds backend-seconds))))

;;; install-test.el ends here
