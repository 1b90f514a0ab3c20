;;; tandem-trust.el --- Trusting a project's .tandem/settings.json  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A project's `.tandem/settings.json' is data from whoever wrote the
;; repository: until you trust it, the backend ignores the keys that choose
;; where your API key goes (base URLs), which programs run (ACP agents, MCP
;; servers) or a looser permission mode than yours.  Trust is given to one
;; content of the file: when the file changes it must be trusted again.
;;
;;   M-x tandem-trust-project     show the file and what trust grants, ask
;;   M-x tandem-untrust-project   revoke
;;
;; `tandem-trust-header-string' gives the session buffer's header its
;; notice when settings were ignored.

;;; Code:

(require 'tandem-client)

(declare-function tandem-project-root "tandem" (&optional directory))

(defvar tandem-trust-confirm-function #'yes-or-no-p
  "Function asking the user a yes-or-no question; called with the prompt.
Tests bind it to give the answer.")

(defface tandem-trust-warning '((t :inherit warning))
  "Face of the ignored-settings notice in a session header."
  :group 'tandem)

(defun tandem-trust--root (directory)
  "Return the project root of DIRECTORY without a trailing slash."
  (directory-file-name (expand-file-name (tandem-project-root directory))))

(defun tandem-trust-report (&optional directory)
  "Return the backend's trust report of DIRECTORY's project settings.
A plist with :path :exists :trusted :changed :sha256 :grants :text :error
:agent-files (each a plist :path :sha256 :text)."
  (tandem-request "settings/report" (list :cwd (tandem-trust--root directory))))

(defun tandem-trust--agent-files (report)
  "The text of REPORT's agent configuration files, for the trust buffer."
  (mapconcat
   (lambda (file)
     (format "\n\nAgent configuration (trust lets the agent read it): %s\n\n%s"
             (plist-get file :path) (or (plist-get file :text) "")))
   (plist-get report :agent-files) ""))

(defun tandem-trust--show (report)
  "Display REPORT's file and the keys trust grants in a help buffer."
  (with-current-buffer (get-buffer-create "*tandem-trust*")
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert (format "Project settings: %s\n" (plist-get report :path))
              (if (plist-get report :changed)
                  "It changed since you trusted it.\n" "")
              "Trusting it lets it set:\n"
              (mapconcat (lambda (key) (concat "  - " key)) (plist-get report :grants) "\n")
              "\n\nIts content:\n\n" (or (plist-get report :text) "")
              (tandem-trust--agent-files report)))
    (goto-char (point-min))
    (special-mode)
    (display-buffer (current-buffer))))

;;;###autoload
(defun tandem-trust-project (&optional directory)
  "Show DIRECTORY's project settings and what trusting them grants, then ask.
DIRECTORY defaults to the current project.  Return the new report when
trusted, nil otherwise."
  (interactive)
  (let* ((root (tandem-trust--root directory))
         (report (tandem-request "settings/report" (list :cwd root))))
    (cond
     ((not (plist-get report :exists))
      (user-error "Nothing to trust: no %s and no agent configuration"
                  (plist-get report :path)))
     ((plist-get report :error)
      (user-error "Cannot trust %s: %s" (plist-get report :path) (plist-get report :error)))
     ((plist-get report :trusted)
      (message "%s is already trusted" (plist-get report :path))
      report)
     (t
      (tandem-trust--show report)
      (if (funcall tandem-trust-confirm-function
                   (format "Trust %s (%s)? " (plist-get report :path)
                           (or (mapconcat #'identity (plist-get report :grants) ", ")
                               "")))
          (prog1 (tandem-request "settings/trust"
                                 (list :cwd root :sha256 (plist-get report :sha256)))
            (message "Trusted %s" (plist-get report :path)))
        (message "Not trusted: %s" (plist-get report :path))
        nil)))))

;;;###autoload
(defun tandem-untrust-project (&optional directory)
  "Revoke the trust of DIRECTORY's project settings (default: this project).
Return non-nil when there was a grant."
  (interactive)
  (let ((root (tandem-trust--root directory)))
    (prog1 (plist-get (tandem-request "settings/untrust" (list :cwd root)) :revoked)
      (message "%s: project settings no longer trusted" root))))

(defun tandem-trust-header-string (info)
  "Return the header notice for session INFO's ignored settings, or \"\"."
  (let ((warnings (plist-get info :settings-warnings)))
    (if (null warnings) ""
      (concat " · " (propertize (substitute-command-keys
                                 "settings ignored (\\[tandem-trust-project])")
                                'face 'tandem-trust-warning
                                'help-echo (mapconcat #'identity warnings "\n"))))))

(provide 'tandem-trust)
;;; tandem-trust.el ends here
