;;; tandem-install.el --- Install tandem's Python backend into a venv  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; An Emacs package manager installs tandem's elisp; the backend is a
;; Python package whose sources travel with it (`pyproject.toml' and
;; `python/' beside or above this file).  `tandem-install-backend' makes a
;; virtual environment under the XDG data directory (or
;; `tandem-backend-directory') with a Python 3.11 or newer it finds, and
;; pip-installs the backend from those sources, showing pip's progress in
;; a `compilation-mode' buffer.  `tandem-python' then defaults to that
;; venv's interpreter.
;;
;; The client calls in here after `hello' (a backend speaking another
;; protocol version is offered a reinstall) and when a backend fails to
;; start because its Python lacks tandem or its dependencies.

;;; Code:

(require 'compile)
(require 'seq)
(require 'subr-x)

(defconst tandem-protocol-version 1
  "Protocol version this package speaks (the backend's PROTOCOL_VERSION).")

(defcustom tandem-backend-directory nil
  "Virtual environment `tandem-install-backend' installs the backend into.
When nil, $XDG_DATA_HOME/tandem/venv, i.e. ~/.local/share/tandem/venv.
When its interpreter exists it is the default of `tandem-python'."
  :type '(choice (const :tag "Default" nil) directory)
  :group 'tandem)

(defcustom tandem-install-python nil
  "Python that creates the backend's venv, or nil to search the PATH.
The search tries python3.13, python3.12, python3.11 and python3 and takes
the first that is 3.11 or newer."
  :type '(choice (const :tag "Search the PATH" nil) file)
  :group 'tandem)

(defvar tandem-install-offer-function #'tandem-install--ask
  "Function asking a yes-or-no QUESTION before tandem (re)installs its backend.
It receives the question and returns non-nil for yes.  Tests replace it.")

(defconst tandem-install--minimum '(3 11)
  "Oldest Python (major minor) the backend runs on.")

(defun tandem-install--real-directory (file)
  "Return the directory of FILE, this library, where its source really is.
straight and elpaca link the .el files into a build directory and compile
them there: from a .elc, follow the link of the .el beside it."
  (let ((el (concat (file-name-sans-extension file) ".el")))
    (file-name-directory (file-truename (if (file-exists-p el) el file)))))

(defconst tandem-install--library-directory
  (tandem-install--real-directory (or load-file-name buffer-file-name
                                      (expand-file-name "tandem-install.el")))
  "Directory of this file's source, symbolic links resolved.")

(defvar tandem-install--last-buffer nil
  "The compilation buffer of the latest `tandem-install-backend'.")

(defvar-local tandem-install--succeeded nil
  "In an install buffer: t once it succeeded, nil while running or failed.")

(declare-function tandem-restart "tandem-client" ())
(declare-function tandem-backend-pid "tandem-client" ())

(defun tandem-install--ask (question)
  "Ask QUESTION with `y-or-n-p'; never in batch Emacs (answer no)."
  (and (not noninteractive) (y-or-n-p question)))

(defun tandem-install-venv ()
  "Return the directory of the backend's virtual environment."
  (file-name-as-directory
   (expand-file-name
    (or tandem-backend-directory
        (expand-file-name "tandem/venv"
                          (or (getenv "XDG_DATA_HOME") (expand-file-name "~/.local/share")))))))

(defun tandem-install-venv-python ()
  "Return the interpreter of the installed backend's venv, or nil if none."
  (let ((python (expand-file-name "bin/python" (tandem-install-venv))))
    (and (file-executable-p python) python)))

(defun tandem-install-source-directory ()
  "Return the directory holding the backend's `pyproject.toml', or nil.
It is this file's directory (a package tarball) or its parent (a clone of
the repository, elisp under `elisp/')."
  (seq-find (lambda (dir)
              (and (file-exists-p (expand-file-name "pyproject.toml" dir))
                   (file-directory-p (expand-file-name "python/tandem" dir))))
            (list tandem-install--library-directory
                  (file-name-directory (directory-file-name tandem-install--library-directory)))))

(defun tandem-install--python-version (python)
  "Return (MAJOR MINOR) of the interpreter PYTHON, or nil if it does not run."
  (let ((out (ignore-errors
               (with-temp-buffer
                 (and (eq 0 (call-process python nil t nil "-c"
                                          "import sys; print(*sys.version_info[:2])"))
                      (buffer-string))))))
    (and out (string-match "\\`\\([0-9]+\\) \\([0-9]+\\)" out)
         (list (string-to-number (match-string 1 out))
               (string-to-number (match-string 2 out))))))

(defun tandem-install--new-enough-p (version)
  "Return non-nil when VERSION, (MAJOR MINOR), is at least the minimum."
  (and version (version-list-<= tandem-install--minimum version)))

(defun tandem-install-find-python ()
  "Return a Python 3.11 or newer to create the venv with, or signal why not."
  (let ((found nil) (chosen nil))
    (dolist (name (if tandem-install-python (list tandem-install-python)
                    '("python3.13" "python3.12" "python3.11" "python3")))
      (let ((path (if (file-name-absolute-p name) name (executable-find name))))
        (when (and path (not chosen))
          (let ((version (tandem-install--python-version path)))
            (if (tandem-install--new-enough-p version)
                (setq chosen path)
              (push (format "%s (%s)" path
                            (if version (mapconcat #'number-to-string version ".")
                              "does not run"))
                    found))))))
    (or chosen
        (user-error "The tandem backend needs Python %s or newer; %s.  Install python3.11 or newer with its venv module (Debian: apt-get install python3 python3-venv), or set `tandem-install-python'"
                    (mapconcat #'number-to-string tandem-install--minimum ".")
                    (if found (concat "found only " (string-join (nreverse found) ", "))
                      "found none on the PATH")))))

(defun tandem-install--command (python source venv)
  "Return the shell command installing SOURCE into VENV made with PYTHON."
  (let ((vpy (shell-quote-argument (expand-file-name "bin/python" venv)))
        (q #'shell-quote-argument))
    (string-join
     (list "set -e"
           (format "echo %s" (funcall q (format "Creating %s with %s" venv python)))
           (format "%s -m venv %s" (funcall q python) (funcall q (directory-file-name venv)))
           ;; Remove an older copy first: a reinstall of the same version
           ;; number would otherwise be "already satisfied" and kept.
           (format "%s -m pip uninstall -q -y tandem-emacs" vpy)
           (format "%s -m pip install --disable-pip-version-check %s" vpy (funcall q source))
           (format "%s -c %s" vpy
                   (funcall q "import tandem, sys; print('tandem backend', tandem.__version__, 'installed in', sys.prefix)")))
     " && ")))

(defun tandem-install--finished (buffer status)
  "Report the end of the install in BUFFER, which ended with STATUS."
  (let ((ok (string-prefix-p "finished" status)))
    (with-current-buffer buffer
      (setq-local tandem-install--succeeded ok))
    (if (not ok)
        (message "tandem: installing the backend failed (%s); see %s"
                 (string-trim status) (buffer-name buffer))
      (message "tandem: backend installed in %s; %s" (tandem-install-venv)
               (tandem-install-link-command (tandem-install-venv)))
      (when (and (fboundp 'tandem-backend-pid) (tandem-backend-pid)
                 (funcall tandem-install-offer-function
                          "tandem backend installed.  Restart the running backend now? "))
        (tandem-restart)))))

(defcustom tandem-install-command-link "~/.local/bin/tandem"
  "Where `tandem-install-backend' links the `tandem' command for the shell.
~/.local/bin is on the PATH of most login shells.  nil: make no link."
  :type '(choice (const :tag "No link" nil) file)
  :group 'tandem)

(defun tandem-install-link-command (venv)
  "Link `tandem-install-command-link' to VENV's `tandem' command.
Return a sentence saying where the command is.  A file already there
that is not such a link is left alone, and the sentence says so."
  (let* ((command (expand-file-name "bin/tandem" venv))
         (link (and tandem-install-command-link
                    (expand-file-name tandem-install-command-link)))
         (target (and link (file-symlink-p link))))
    (cond
     ((null link) (format "the tandem command is %s" (abbreviate-file-name command)))
     ((and (file-exists-p link) (not target))
      (format "the tandem command is %s (%s is another file, left alone)"
              (abbreviate-file-name command) (abbreviate-file-name link)))
     (t
      (make-directory (file-name-directory link) t)
      (unless (equal target command)
        (when target (delete-file link))
        (make-symbolic-link command link))
      (format "the tandem command is %s%s" (abbreviate-file-name link)
              (if (member (directory-file-name (file-name-directory link))
                          (mapcar (lambda (d) (directory-file-name (expand-file-name d)))
                                  exec-path))
                  ""
                (format " (add %s to your PATH)"
                        (abbreviate-file-name (file-name-directory link)))))))))

;;;###autoload
(defun tandem-install-backend (&optional venv)
  "Install the tandem backend into a venv and return the install buffer.
VENV defaults to `tandem-install-venv' (see `tandem-backend-directory');
interactively with a prefix argument, ask for it.  The venv is made with
the Python `tandem-install-find-python' picks; the backend is installed
with pip from this package's own sources, its dependencies from the
package index.  Progress shows in the buffer `*tandem-install*'."
  (interactive
   (list (and current-prefix-arg
              (read-directory-name "Install the backend into venv: " (tandem-install-venv)))))
  (let* ((venv (file-name-as-directory (expand-file-name (or venv (tandem-install-venv)))))
         (source (or (tandem-install-source-directory)
                     (user-error "This copy of tandem has no backend sources (pyproject.toml and python/ beside or above %s); install tandem from its repository or from a tarball made by `make package'"
                                 tandem-install--library-directory)))
         (python (tandem-install-find-python))
         (default-directory source))
    (make-directory (file-name-directory (directory-file-name venv)) t)
    (let ((buffer (compilation-start (tandem-install--command python source venv)
                                     'compilation-mode (lambda (_mode) "*tandem-install*"))))
      (with-current-buffer buffer
        (setq tandem-install--succeeded nil)
        (add-hook 'compilation-finish-functions #'tandem-install--finished nil t))
      (setq tandem-install--last-buffer buffer))))

;;;; Called by the client

(defun tandem-install-check-hello (info)
  "Say so when INFO, the backend's `hello' reply, speaks another protocol.
Offer to reinstall the backend then.  Return non-nil when they match."
  (let ((theirs (plist-get info :protocol)))
    (or (equal theirs tandem-protocol-version)
        (let ((text (format "tandem: the backend %s (%s) speaks protocol %s, this package %s"
                            (or (plist-get info :version) "?")
                            (or (plist-get info :executable) "?")
                            (or theirs "unknown (older)") tandem-protocol-version)))
          (message "%s; M-x tandem-install-backend reinstalls it" text)
          (when (funcall tandem-install-offer-function
                         (concat text ".  Reinstall the backend now? "))
            (tandem-install-backend))
          nil))))

(defun tandem-install-missing-p (why)
  "Return non-nil when WHY, a failed start's account, means no backend installed."
  (string-match-p "No module named\\|ModuleNotFoundError" why))

(defun tandem-install-offer-after-failure (why)
  "Offer to install the backend when WHY, why a start failed, means none.
Return non-nil when an install was started."
  (when (and (tandem-install-missing-p why)
             (funcall tandem-install-offer-function
                      "The tandem backend is not installed for this Python.  Install it now? "))
    (tandem-install-backend)
    t))

(provide 'tandem-install)
;;; tandem-install.el ends here
