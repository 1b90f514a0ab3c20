;;; tandem-permissions.el --- Permission rules you keep  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A permission rule answers a question before it is asked: it allows (or
;; denies) a tool for a shell command prefix (`shell') or a path glob
;; (`write_file', `edit_file'), in one project (by its root) or
;; everywhere.  Rules are kept in your own settings file only
;; (~/.config/tandem/settings.json); a project's `.tandem/settings.json'
;; never supplies one.
;;
;;   A on a question      keep a rule for it (pattern and scope asked),
;;                        then allow the call once
;;   M-x tandem-permissions   the rules, one a line: d deletes, g refreshes

;;; Code:

(require 'tabulated-list)
(require 'tandem-client)

(declare-function tandem-view-answer-at "tandem-view-commands" (pos answer))
(declare-function tandem-view--root "tandem-view-state" ())

(defgroup tandem-permissions nil
  "Permission rules kept in your settings file."
  :group 'tandem
  :prefix "tandem-permissions-")

(defcustom tandem-permissions-default-scope 'project
  "The scope an \"always\" answer proposes: this project or everywhere."
  :type '(choice (const :tag "This project" project) (const :tag "Everywhere" everywhere))
  :group 'tandem-permissions)

(defvar tandem-permissions-confirm-function #'yes-or-no-p
  "Function asking the user a yes-or-no question; called with the prompt.
Tests bind it to give the answer.")

(defconst tandem-permissions-buffer-name "*tandem permissions*"
  "Name of the buffer `tandem-permissions' shows.")

(defun tandem-permissions--params (rule)
  "Return the request parameters naming RULE (a plist as the backend lists it)."
  (list :tool (plist-get rule :tool) :pattern (plist-get rule :pattern)
        :scope (plist-get rule :scope) :decision (plist-get rule :decision)))

(defun tandem-permissions--entries ()
  "Return the rules as `tabulated-list-entries', each with its rule plist as id."
  (let ((reply (tandem-request "permissions/rules" nil)))
    (mapcar (lambda (rule)
              (list rule
                    (vector (plist-get rule :tool)
                            (plist-get rule :pattern)
                            (or (plist-get rule :scope) "everywhere")
                            (plist-get rule :decision))))
            (append (plist-get reply :rules) nil))))

(defvar tandem-permissions-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map "d" #'tandem-permissions-delete)
    (define-key map "D" #'tandem-permissions-delete)
    map)
  "Keymap of `tandem-permissions-mode'.")

(define-derived-mode tandem-permissions-mode tabulated-list-mode "Tandem-Permissions"
  "The permission rules of your settings file, one a line.
\\<tandem-permissions-mode-map>\\[tandem-permissions-delete] deletes the rule at point \
\(after asking), \\[revert-buffer] refreshes.

\\{tandem-permissions-mode-map}"
  (setq tabulated-list-format [("Tool" 11 t) ("Pattern" 30 t) ("Scope" 40 t)
                               ("Decision" 8 t)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook
            (lambda () (setq tabulated-list-entries (tandem-permissions--entries)))
            nil t)
  (tabulated-list-init-header))

;; Entered through `tandem-permissions', never by name from M-x.
(function-put 'tandem-permissions-mode 'completion-predicate #'ignore)

;;;###autoload
(defun tandem-permissions ()
  "Show the permission rules kept in your settings file.
Each line is one rule: the tool, its pattern (a command prefix or a
path glob), its scope (a project root or everywhere) and its decision."
  (interactive)
  (let ((buffer (get-buffer-create tandem-permissions-buffer-name)))
    (with-current-buffer buffer
      (tandem-permissions-mode)
      (setq tabulated-list-entries (tandem-permissions--entries))
      (tabulated-list-print))
    (pop-to-buffer buffer)))

(defun tandem-permissions-delete ()
  "Delete the rule at point from your settings file, after asking."
  (interactive nil tandem-permissions-mode)
  (let ((rule (tabulated-list-get-id)))
    (unless rule (user-error "No rule at point"))
    (when (funcall tandem-permissions-confirm-function
                   (format "Delete %s? " (plist-get rule :description)))
      (tandem-request "permissions/remove-rule" (tandem-permissions--params rule))
      (revert-buffer)
      (message "Deleted %s" (plist-get rule :description)))))

(defun tandem-permissions-read-rule (tool pattern root)
  "Ask for a rule of TOOL, proposing PATTERN and the scope ROOT; return its params.
The scope is read with `completing-read' (this project or everywhere),
the default named in the prompt."
  (let* ((kind (if (equal tool "shell") "Command prefix" "Path glob"))
         (pattern (read-string (format "%s to always allow for %s (default %s): "
                                       kind tool pattern)
                               nil nil pattern))
         (here (directory-file-name (expand-file-name root)))
         (default (if (eq tandem-permissions-default-scope 'everywhere) "everywhere" here))
         (scope (completing-read (format "Scope (default %s): " default)
                                 (list here "everywhere") nil t nil nil default)))
    (list :tool tool :pattern pattern
          :scope (if (equal scope "everywhere") nil scope) :decision "allow")))

(defun tandem-permissions-always-at (pos)
  "Keep a rule for the question on the row at POS, then allow the call once."
  (let ((interaction (get-text-property pos 'tandem-interaction)))
    (unless (and interaction (plist-get interaction :rule-pattern))
      (user-error "No question a rule can answer at point"))
    (let* ((params (tandem-permissions-read-rule (plist-get interaction :tool)
                                                 (plist-get interaction :rule-pattern)
                                                 (tandem-view--root)))
           (reply (tandem-request "permissions/add-rule" params)))
      (tandem-view-answer-at pos "allow_once")
      (message "Kept %s (%s)" (plist-get (car (last (append (plist-get reply :rules) nil)))
                                         :description)
               (plist-get reply :path)))))

(defun tandem-permissions-always ()
  "Keep a rule for the question at point (asked: pattern and scope), then allow it."
  (interactive nil tandem-view-mode)
  (tandem-permissions-always-at (point)))

(provide 'tandem-permissions)
;;; tandem-permissions.el ends here
