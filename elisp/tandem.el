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
  "Function that opens the session buffer for a project root, or nil.
The view sets it; until then `tandem' shows a placeholder buffer.")

;;;###autoload
(defun tandem (&optional directory)
  "Open the tandem session buffer for the project of DIRECTORY.
With no view loaded yet this shows a placeholder that says so."
  (interactive)
  (let ((root (tandem-project-root directory)))
    (if tandem-open-session-function
        (funcall tandem-open-session-function root)
      (tandem--placeholder root))))

(defun tandem--placeholder (root)
  "Show a placeholder buffer for ROOT (the view is not loaded)."
  (let ((info (oref (tandem--ensure) info)))
    (with-current-buffer (get-buffer-create (format "*tandem: %s*" (file-name-nondirectory
                                                                    (directory-file-name root))))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "tandem %s — backend pid %s, state in %s\n\n"
                        (plist-get info :version) (plist-get info :pid) (plist-get info :home))
                (format "Project: %s\n\n" root)
                "This is a placeholder: the session view is not built yet.\n"
                "The backend is running; M-x tandem-doctor shows what it found.\n"))
      (special-mode)
      (pop-to-buffer (current-buffer)))))

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
(require 'tandem-view)
(require 'tandem-sessions)
(require 'tandem-directive)
(require 'tandem-inspector)
(require 'tandem-compact)
(require 'tandem-remote)
(require 'tandem-rewind)

;;; tandem.el ends here
