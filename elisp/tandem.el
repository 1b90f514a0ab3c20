;;; tandem.el --- Work with a coding agent on a project  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;; Author: The tandem authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, convenience
;; URL: https://example.invalid/tandem

;;; Commentary:

;; tandem lets you work with a coding agent on a project from inside
;; Emacs.  Ordinary chat and directives (durable requests anchored in the
;; source) share one session buffer; every turn has a checkpoint you can
;; rewind to; sessions survive the loss or move of their project directory.
;;
;; A Python backend owns every durable thing; this package renders what it
;; publishes and sends what you do.  Start with `M-x tandem'; the first
;; time, `M-x tandem-install-backend' installs the backend (Python 3.11 or
;; newer) into a venv of its own.  The manual: (info "tandem").
;;
;; This file is the top of the require graph: it loads every part, and no
;; part requires it.  What the parts share (the customization groups, the
;; project root) is in tandem-core.el, at the bottom.
;;
;; transient is not in Package-Requires: the 0.3.7 that is part of Emacs
;; 28.1 has all tandem uses, and Emacs 28's package.el does not count it
;; as built in, so listing it would fetch another transient (and compat)
;; from GNU ELPA.

;;; Code:

;; The top of the require graph: the parts never require this file, so
;; it requires them all, after which everything is loaded.
(require 'tandem-core)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-trust)
(require 'tandem-view)
(require 'tandem-sessions)
(require 'tandem-directive)
(require 'tandem-directive-menu)
(require 'tandem-inspector)
(require 'tandem-compact)
(require 'tandem-remote)
(require 'tandem-rewind)
(require 'tandem-session-menu)
(require 'tandem-acp)
(require 'tandem-mcp)
(require 'tandem-indicator)
(require 'tandem-setup)
(require 'tandem-review)
(require 'tandem-overview)
(require 'tandem-parallel)
(require 'tandem-edit)

(defvar tandem-open-session-function #'tandem-view-open
  "Function that opens the session buffer for a project root.
`tandem' calls it; the default is the session buffer of tandem-view.el.")

;;;###autoload
(defun tandem (&optional directory)
  "Open the tandem session buffer for the project of DIRECTORY.
The first time, with no provider configured anywhere, `tandem-setup'
asks for one first."
  (interactive)
  (let ((default-directory (or directory default-directory)))
    (when (tandem-setup-needed-p) (tandem-setup)))
  (funcall tandem-open-session-function (tandem-project-root directory)))

;;;###autoload
(defun tandem-doctor ()
  "Show what tandem found on this machine and what is missing."
  (interactive)
  (let ((report (tandem-request "doctor" nil 60)))
    (with-current-buffer (get-buffer-create "*tandem-doctor*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (plist-get report :text) "\n\n"
                (if (plist-get report :ok)
                    "Everything required is present.\n"
                  "Something required is missing (lines marked MISSING).\n")
                (if (plist-get report :too-open)
                    (concat "Some of tandem's own files are too open (lines marked"
                            " TOO OPEN): `tandem doctor --fix' makes them private.\n")
                  "")))
      (special-mode)
      (display-buffer (current-buffer)))
    report))


;; Keys one part binds in another's map, once both are loaded.
(define-key tandem-view-transcript-map (kbd "C-c C-d") #'tandem-directive-menu)
(define-key tandem-view-mode-map (kbd "C-c C-d") #'tandem-directive-menu)
(define-key tandem-view-mode-map (kbd "C-c C-t") #'tandem-session-menu)
(define-key tandem-view-transcript-map "R" #'tandem-rewind-before-turn-at-point)
(define-key tandem-view-transcript-map "=" #'tandem-review-turn-at-point)
(define-key tandem-view-transcript-map "e" #'tandem-edit-turn-at-point)

(defvar Info-directory-list)

(defun tandem--manual-directory ()
  "Return the doc/ folder of a clone this tandem was loaded from, or nil.
package.el and package-vc install the manual in the package's own folder."
  (let ((doc (expand-file-name "../doc/" (file-name-directory
                                          (or load-file-name buffer-file-name
                                              default-directory)))))
    (and (file-exists-p (expand-file-name "tandem.texi" doc)) doc)))

(defconst tandem--manual-directory (tandem--manual-directory)
  "The doc/ folder of the clone tandem was loaded from, or nil.")

;; Let \[info] find the manual of a clone on the `load-path', built or
;; not yet (a running Emacs finds it right after `make info').  An
;; autoload form, so that loading only tandem-autoloads.el does it too;
;; package.el and package-vc add their package directory themselves.
;;;###autoload
(let ((doc (and load-file-name
                (expand-file-name "../doc/" (file-name-directory load-file-name)))))
  (when (and doc (file-exists-p (expand-file-name "tandem.texi" doc)))
    ;; The defaults `info-initialize' starts from, and the list itself
    ;; when Info is already initialized.
    (add-to-list 'Info-default-directory-list doc t)
    (when (bound-and-true-p Info-directory-list)
      (add-to-list 'Info-directory-list doc t))))

;;;###autoload
(defun tandem-manual ()
  "Read the tandem manual in Info."
  (interactive)
  (let ((file (and tandem--manual-directory
                   (expand-file-name "tandem.info" tandem--manual-directory))))
    (cond ((and file (file-exists-p file)) (info file))
          (file (user-error "The manual is not built yet: run `make info' in %s"
                            (abbreviate-file-name
                             (file-name-directory
                              (directory-file-name tandem--manual-directory)))))
          (t (info "tandem")))))


(provide 'tandem)
;;; tandem.el ends here
