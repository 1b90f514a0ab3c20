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
;;   M-x tandem-trust-project     show what trust grants, the values it
;;                                would let apply, the file whole; ask
;;   M-x tandem-untrust-project   revoke
;;
;; `tandem-trust-header-string' gives the session buffer's header its
;; notice when settings were ignored.

;;; Code:

(require 'seq)
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
A plist with :root :path :exists :trusted :changed :sha256 :grants
:restricted :files :error.  Each of :files (the files trust covers,
read once: the settings file, and each agent configuration file that is
there) has :rel :path :exists :size :sha256 :text :error; each of
:restricted (a key only trust allows, or only tighter than yours) has
:key :file :value \(its parsed value as JSON) :needs-trust."
  (tandem-request "settings/report" (list :cwd (tandem-trust--root directory))))

(defun tandem-trust--indent (text)
  "Return TEXT with every line indented by four spaces."
  (replace-regexp-in-string "^" "    " text))

(defun tandem-trust--where (report)
  "Return what REPORT is about: its settings file, else its project root.
A project may hold no `.tandem/settings.json' but an agent's own
configuration, which trust covers as well."
  (if (seq-some (lambda (file) (and (plist-get file :exists)
                                    (equal (plist-get file :path) (plist-get report :path))))
                (plist-get report :files))
      (plist-get report :path)
    (plist-get report :root)))

(defun tandem-trust--show (report)
  "Display REPORT in a help buffer: what trust grants, the values, each file whole.
The parsed values of the restricted keys come first, so what would run or
where a key would go is read without reading the files; each file
follows whole, as the backend read it for the digest trust is given to."
  (with-current-buffer (get-buffer-create "*tandem-trust*")
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert (format "Project settings: %s\n" (tandem-trust--where report))
              (if (plist-get report :changed)
                  "It changed since you trusted it.\n" "")
              "Trusting it lets it set:\n"
              (mapconcat (lambda (key) (concat "  - " key)) (plist-get report :grants) "\n")
              "\n\nWhat it sets that needs trust, or may only tighten yours:\n")
      (dolist (item (plist-get report :restricted))
        (insert (format "  %s (%s, in %s):\n%s\n"
                        (plist-get item :key)
                        (if (plist-get item :needs-trust) "needs trust" "applies anyway")
                        (plist-get item :file)
                        (tandem-trust--indent (plist-get item :value)))))
      (insert "\nIts content:\n")
      (dolist (file (plist-get report :files))
        (when (plist-get file :exists)
          (insert (format "\n--- %s (%d bytes%s) ---\n"
                          (plist-get file :rel) (or (plist-get file :size) 0)
                          (if (equal (plist-get file :path) (plist-get report :path))
                              ""
                            "; the agent's own configuration, trust lets it read it"))
                  (or (plist-get file :text) "")))))
    (goto-char (point-min))
    (special-mode)
    ;; Characters in logical order: a bidi override in the file cannot
    ;; make one text display as another.
    (setq-local bidi-display-reordering nil)
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
      (user-error "Cannot trust %s: %s" (tandem-trust--where report)
                  (plist-get report :error)))
     ((plist-get report :trusted)
      (message "%s is already trusted" (tandem-trust--where report))
      report)
     (t
      (tandem-trust--show report)
      (if (funcall tandem-trust-confirm-function
                   (format "Trust %s (%s)? " (tandem-trust--where report)
                           (or (mapconcat #'identity (plist-get report :grants) ", ")
                               "")))
          (prog1 (tandem-request "settings/trust"
                                 (list :cwd root :sha256 (plist-get report :sha256)))
            (message "Trusted %s" (tandem-trust--where report)))
        (message "Not trusted: %s" (tandem-trust--where report))
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
