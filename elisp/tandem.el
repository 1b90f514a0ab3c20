;;; tandem.el --- Work with a coding agent on a project, from Emacs  -*- lexical-binding: t; -*-

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
;; publishes and sends what you do.  Start with `M-x tandem'.

;;; Code:

(require 'tandem-client)
(require 'project)

(defun tandem-project-root (&optional directory)
  "Return the project root of DIRECTORY (default: `default-directory').
Uses `project.el'; outside any project, DIRECTORY itself."
  (let* ((dir (or directory default-directory))
         (project (project-current nil dir)))
    (expand-file-name (if project (project-root project) dir))))

(defvar tandem-open-session-function nil
  "Function that opens the session buffer for a project root.
`tandem-view' sets it to `tandem-view-open'.")

;;;###autoload
(defun tandem (&optional directory)
  "Open the tandem session buffer for the project of DIRECTORY."
  (interactive)
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
                  "Something required is missing (lines marked MISSING).\n")))
      (special-mode)
      (display-buffer (current-buffer)))
    report))

(provide 'tandem)

;; The parts, loaded after `tandem' is provided because several require it.
(require 'tandem-turns)
(require 'tandem-trust)
(require 'tandem-view)
(require 'tandem-sessions)
(require 'tandem-directive)
(require 'tandem-inspector)
(require 'tandem-compact)
(require 'tandem-remote)
(require 'tandem-rewind)

;;; tandem.el ends here
