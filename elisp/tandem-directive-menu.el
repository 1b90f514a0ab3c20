;;; tandem-directive-menu.el --- The directive menu and the directive list  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-directive-menu' (C-c C-d on a directive's region, list row,
;; turn header or in directive scope) is a transient menu: the actions the
;; directive's lifecycle offers now, plus Preview, Inspect, View changes,
;; Rewind before this implementation…, Edit request, Rebind and Archive.
;; A prefix argument on an action asks which system directive to use.
;;
;; `tandem-directives' lists the workspace's directives in
;; `tabulated-list-mode': id, state, request, file, attempts, session.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'transient)
(require 'tabulated-list)
(require 'tandem-directive)
(require 'tandem-directive-source)

(declare-function tandem-inspect-directive "tandem-inspector" (id &optional root))
(require 'tandem-core)
(require 'tandem-view-state)

(defvar tandem-directive--menu-id nil "The directive the open menu acts on.")
(defvar tandem-directive--menu-root nil "The project root of the open menu.")
(defvar tandem-directive--menu-record nil "The record the open menu was built from.")

(defun tandem-directive--menu-can (action)
  "Return non-nil when ACTION is available on the menu's directive."
  (member action (plist-get tandem-directive--menu-record :actions)))

(defun tandem-directive--menu-title ()
  "The menu's heading: id, lifecycle and request."
  (let ((r tandem-directive--menu-record))
    (format "%s · %s%s — %s" (plist-get r :id) (tandem-directive-state-label r)
            (if (plist-get r :archived) " · archived" "")
            (tandem-directive--first-line (plist-get r :request) 60))))

(defun tandem-directive--menu-root-here ()
  "Return the project root for a menu opened in the current buffer."
  (or tandem-directive-root
      (let ((info (tandem-view-info-here)))
        (and info (or (plist-get info :active-cwd) (plist-get info :cwd))))
      (let ((ov (cl-find-if (lambda (o) (overlay-get o 'tandem-root))
                            (overlays-at (point)))))
        (and ov (overlay-get ov 'tandem-root)))
      (tandem-project-root)))

(defmacro tandem-directive--in-menu (&rest body)
  "Run BODY with the menu's directive root bound."
  (declare (indent 0) (debug t))
  `(let ((tandem-directive-root tandem-directive--menu-root)) ,@body))

(defun tandem-directive--menu-act (action)
  "Run ACTION on the menu's directive.
A prefix argument asks which system directive to use."
  (tandem-directive--in-menu
    (tandem-directive-run tandem-directive--menu-id action current-prefix-arg
                          (and (eq action 'discuss-result)
                               (tandem-directive--menu-read-attempt)))))

(defun tandem-directive--menu-read-attempt ()
  "Read which attempt of the menu's directive to discuss (one: taken as is)."
  (let ((attempts (plist-get tandem-directive--menu-record :attempts)))
    (string-to-number
     (tandem-read-choice "Attempt"
                         (mapcar (lambda (a)
                                   (cons (number-to-string (plist-get a :seq))
                                         (format "turn %s%s" (plist-get a :turn)
                                                 (if (plist-get a :outcome)
                                                     (format " · %s" (plist-get a :outcome))
                                                   ""))))
                                 attempts)
                         :default (and attempts (number-to-string
                                                 (plist-get (car (last attempts)) :seq)))
                         :require-match t :what "attempt"))))

(defmacro tandem-directive--define-action (action)
  "Define the menu command for ACTION."
  (let ((name (intern (format "tandem-directive-menu-%s" action))))
    `(transient-define-suffix ,name ()
       ,(format "Run %s on the menu's directive." action)
       (interactive)
       (tandem-directive--menu-act ',action))))

(tandem-directive--define-action discuss)
(tandem-directive--define-action implement)
(tandem-directive--define-action implement-this)
(tandem-directive--define-action discuss-result)
(tandem-directive--define-action request-changes)
(tandem-directive--define-action retry)

(transient-define-suffix tandem-directive-menu-preview (action)
  "Show the exact prompt ACTION would send now."
  (interactive (list (intern (let ((actions (plist-get tandem-directive--menu-record :actions)))
                               (tandem-read-choice "Preview action" actions
                                                   :default (car actions) :require-match t
                                                   :what "action")))))
  (let ((prompt (tandem-directive--in-menu
                  (tandem-directive-preview tandem-directive--menu-id action
                                            (if (eq action 'request-changes) "(your feedback)"
                                              "")))))
    (with-current-buffer (get-buffer-create (format "*tandem-preview: %s %s*"
                                                    tandem-directive--menu-id action))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert prompt))
      (goto-char (point-min))
      (special-mode)
      (display-buffer (current-buffer)))))

(transient-define-suffix tandem-directive-menu-inspect ()
  "Open the read-only inspector of the menu's directive."
  (interactive)
  (require 'tandem-inspector)
  (tandem-inspect-directive tandem-directive--menu-id tandem-directive--menu-root))

(transient-define-suffix tandem-directive-menu-changes ()
  "Show the latest attempt's patch."
  (interactive)
  (tandem-directive--in-menu (tandem-directive-view-changes tandem-directive--menu-id)))

(transient-define-suffix tandem-directive-menu-show-result ()
  "Show the result's turn in the session buffer."
  (interactive)
  (tandem-directive-show-result tandem-directive--menu-id tandem-directive--menu-root))

(transient-define-suffix tandem-directive-menu-rewind ()
  "Rewind the bound session to before the latest implementation."
  (interactive)
  (tandem-directive--in-menu (tandem-directive-rewind-before tandem-directive--menu-id)))

(transient-define-suffix tandem-directive-menu-edit ()
  "Edit the request."
  (interactive)
  (tandem-directive--in-menu
    (tandem-directive-edit tandem-directive--menu-id
                           (tandem-read-text "Request" :initial (plist-get tandem-directive--menu-record
                                                                           :request)))))

(transient-define-suffix tandem-directive-menu-rebind ()
  "Move future activity to another session (warned)."
  (interactive)
  (tandem-directive--in-menu
    (tandem-directive-rebind tandem-directive--menu-id
                             (tandem-directive-read-session tandem-directive--menu-id))))

(transient-define-suffix tandem-directive-menu-archive ()
  "Archive (or unarchive) the directive."
  (interactive)
  (tandem-directive--in-menu
    (tandem-directive-archive tandem-directive--menu-id
                              (plist-get tandem-directive--menu-record :archived))))

;; The suffixes act on the open menu's directive: M-x does not offer them
;; (with `read-extended-command-predicate' `command-completion-default-include-p').
(dolist (command '(tandem-directive-menu-discuss tandem-directive-menu-implement
                   tandem-directive-menu-implement-this tandem-directive-menu-discuss-result
                   tandem-directive-menu-request-changes tandem-directive-menu-retry
                   tandem-directive-menu-preview tandem-directive-menu-inspect
                   tandem-directive-menu-changes tandem-directive-menu-show-result
                   tandem-directive-menu-rewind
                   tandem-directive-menu-edit tandem-directive-menu-rebind
                   tandem-directive-menu-archive))
  (function-put command 'completion-predicate #'ignore))

(defun tandem-directive--no-result-p ()
  "Return non-nil when the menu's directive has no result yet."
  (not (consp (plist-get tandem-directive--menu-record :result))))

(defun tandem-directive--no-attempt-p ()
  "Return non-nil when the menu's directive has no surviving attempt."
  (null (plist-get tandem-directive--menu-record :attempts)))

;;;###autoload (autoload 'tandem-directive-menu "tandem-directive-menu" nil t)
(transient-define-prefix tandem-directive-menu (&optional id)
  "The actions and tools of directive ID (default: the one at point)."
  [:description tandem-directive--menu-title
   ["Actions"
    ("d" "Discuss" tandem-directive-menu-discuss
     :inapt-if-not (lambda () (tandem-directive--menu-can "discuss")))
    ("i" "Implement" tandem-directive-menu-implement
     :inapt-if-not (lambda () (tandem-directive--menu-can "implement")))
    ("t" "Implement this" tandem-directive-menu-implement-this
     :inapt-if-not (lambda () (tandem-directive--menu-can "implement-this")))
    ("r" "Discuss result" tandem-directive-menu-discuss-result
     :inapt-if-not (lambda () (tandem-directive--menu-can "discuss-result")))
    ("c" "Request changes" tandem-directive-menu-request-changes
     :inapt-if-not (lambda () (tandem-directive--menu-can "request-changes")))
    ("y" "Retry" tandem-directive-menu-retry
     :inapt-if-not (lambda () (tandem-directive--menu-can "retry")))]
   ["Record"
    ("p" "Preview…" tandem-directive-menu-preview)
    ("I" "Inspect" tandem-directive-menu-inspect)
    ("s" "Show result" tandem-directive-menu-show-result :inapt-if tandem-directive--no-result-p)
    ("v" "View changes" tandem-directive-menu-changes :inapt-if tandem-directive--no-attempt-p)
    ("R" "Rewind before this implementation…" tandem-directive-menu-rewind
     :inapt-if tandem-directive--no-attempt-p)]
   ["Directive"
    ("e" "Edit request" tandem-directive-menu-edit)
    ("b" "Rebind…" tandem-directive-menu-rebind)
    ("a" "Archive / unarchive" tandem-directive-menu-archive)]]
  (interactive)
  (let* ((root (tandem-directive--menu-root-here))
         (id (or id (let ((tandem-directive-root root)) (tandem-directive-id-at-point t)))))
    (setq tandem-directive--menu-root (directory-file-name (expand-file-name root))
          tandem-directive--menu-id id
          tandem-directive--menu-record (tandem-directive-record id root))
    (transient-setup 'tandem-directive-menu)))

;;;; The list

(defvar-local tandem-directives--root nil "The project root this list shows.")

(defvar tandem-directives-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'tandem-directives-visit)
    (define-key map (kbd "C-c C-d") #'tandem-directive-menu)
    (define-key map "i" #'tandem-directives-inspect)
    (define-key map "a" #'tandem-directives-toggle-archived)
    map)
  "Keys of `tandem-directives-mode'.")

(defvar-local tandem-directives--show-archived nil "Non-nil: the list shows archived ones.")

(define-derived-mode tandem-directives-mode tabulated-list-mode "Tandem-Directives"
  "The directives of one workspace.
\\{tandem-directives-mode-map}"
  (setq tabulated-list-format [("Id" 5 t) ("State" 24 t) ("Request" 40 t) ("File" 24 t)
                               ("Attempts" 8 t) ("Session" 10 t)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'tandem-directives--fill nil t)
  (tabulated-list-init-header))

;; Only the buffers made for it use it: M-x does not offer it.
(function-put 'tandem-directives-mode 'completion-predicate #'ignore)

(defun tandem-directives--fill ()
  "Fill the list from the backend (marking lost sources first)."
  (let* ((tandem-directive-root tandem-directives--root)
         (rows (tandem-directive-sync tandem-directives--root
                                      (tandem-directive-list tandem-directives--root t))))
    (setq tabulated-list-entries
          (cl-loop for r in rows
                   when (or tandem-directives--show-archived (not (plist-get r :archived)))
                   collect (list (plist-get r :id)
                                 (vector (plist-get r :id)
                                         (concat (tandem-directive-state-label r)
                                                 (if (plist-get r :archived) " ⌫" ""))
                                         (tandem-directive--first-line (plist-get r :request)
                                                                       60)
                                         (concat (plist-get r :path)
                                                 (pcase (plist-get r :anchor-status)
                                                   ("detached" " (detached)")
                                                   ("source-missing" " (missing)")
                                                   (_ "")))
                                         (number-to-string (or (plist-get r :attempts) 0))
                                         (substring (or (plist-get r :session) "—") 0
                                                    (min 8 (length (or (plist-get r :session)
                                                                       "—"))))))))))

;;;###autoload
(defun tandem-directives (&optional root)
  "List the directives of ROOT's workspace (default: the current project)."
  (interactive)
  (let* ((root (tandem-directive--root root))
         (buffer (get-buffer-create (format "*tandem-directives: %s*"
                                            (file-name-nondirectory root)))))
    (with-current-buffer buffer
      (tandem-directives-mode)
      (setq tandem-directives--root root)
      (setq-local tandem-directive-root root)
      (setq default-directory (file-name-as-directory root))
      (tandem-directives--fill)
      (tabulated-list-print t))
    (pop-to-buffer buffer)
    buffer))

(defun tandem-directives--id-in-list ()
  "Return the directive id of the list row at point."
  (and (derived-mode-p 'tandem-directives-mode) (tabulated-list-get-id)))

(add-hook 'tandem-directive-id-functions #'tandem-directives--id-in-list)

(defun tandem-directives-visit ()
  "Visit the anchor of the directive at point."
  (interactive nil tandem-directives-mode)
  (let* ((id (or (tabulated-list-get-id) (user-error "No directive on this line")))
         (record (tandem-directive-record id tandem-directives--root))
         (anchor (plist-get record :anchor))
         (file (expand-file-name (plist-get anchor :path) tandem-directives--root)))
    (unless (file-exists-p file) (user-error "%s is missing; %s waits for it" file id))
    (find-file file)
    (goto-char (point-min))
    (forward-line (1- (plist-get anchor :start-line)))))

(defun tandem-directives-inspect ()
  "Inspect the directive at point."
  (interactive nil tandem-directives-mode)
  (require 'tandem-inspector)
  (tandem-inspect-directive (or (tabulated-list-get-id) (user-error "No directive here"))
                            tandem-directives--root))

(defun tandem-directives-toggle-archived ()
  "Show or hide archived directives."
  (interactive nil tandem-directives-mode)
  (setq tandem-directives--show-archived (not tandem-directives--show-archived))
  (revert-buffer))

(defun tandem-directives--refresh-lists ()
  "Refresh every live directive list."
  (dolist (b (buffer-list))
    (when (eq (buffer-local-value 'major-mode b) 'tandem-directives-mode)
      (with-current-buffer b (ignore-errors (revert-buffer))))))

(add-hook 'tandem-directive-changed-functions #'tandem-directives--refresh-lists)

(provide 'tandem-directive-menu)
;;; tandem-directive-menu.el ends here
