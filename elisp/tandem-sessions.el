;;; tandem-sessions.el --- Resume, continue, switch and list tandem sessions  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The Emacs entry paths of tandem sessions (docs/sessions.md):
;;
;;   `tandem-resume'             -- by id or unique id prefix; when the
;;                                  session's directory is gone, asks the
;;                                  relocation question (empty answer = yes).
;;                                  Choosing a listed completion instead is the
;;                                  picker path: a direct open, never a move.
;;   `tandem-open-session-file'  -- open a journal file directly; never moves.
;;   `tandem-switch-session'     -- switch the running session; keeps the
;;                                  active directory when the target's is gone.
;;   `tandem-continue'           -- continue this project's latest session.
;;   (`tandem-sessions-list', the overview of every session, is in
;;   tandem-overview.el.)
;;
;; The relocation question goes through `tandem-sessions-prompt-function'
;; (a seam tests bind).  In batch Emacs with the default prompt there is no
;; one to ask, so the ID path fails with an instruction to run interactively.
;;
;; Every path ends in `tandem-sessions--activated', which records the reply
;; in `tandem-sessions-current' and runs `tandem-sessions-activated-functions'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)

(require 'tandem-core)

(defconst tandem-sessions-cancelled "Resume cancelled: session was not moved."
  "What a declined relocation says (exactly).")

(defvar tandem-sessions-prompt-function #'read-string
  "Function asking the relocation question: called with the prompt string.
It returns the typed answer; an empty answer or one starting with y accepts.
Tests bind it to inject an answer.")

(defvar tandem-sessions-activated-functions nil
  "Abnormal hook run with the reply plist of every activated session.
The plist has :id :path :cwd :active-cwd :relocated :previous-files
:title :writable :notices :settings.")

(defvar tandem-sessions-current nil
  "Reply plist of the session made active last from this Emacs, or nil.")

(defun tandem-sessions--launch-dir ()
  "The directory this command was launched from: the current project root."
  (directory-file-name (tandem-project-root)))

(defun tandem-sessions--activated (info)
  "Record INFO (a session reply plist), tell the user, run the hook; return INFO."
  (setq tandem-sessions-current info)
  (dolist (notice (plist-get info :notices))
    (display-warning 'tandem notice :warning))
  (message "tandem: session %s%s in %s%s"
           (substring (plist-get info :id) 0 13)
           (let ((title (plist-get info :title)))
             (if (and title (not (string-empty-p title))) (format " (%s)" title) ""))
           (plist-get info :active-cwd)
           (if (plist-get info :relocated) " (re-rooted here)" ""))
  (run-hook-with-args 'tandem-sessions-activated-functions info)
  info)

;;;; Asking

(defun tandem-sessions--yes-p (answer)
  "Non-nil when ANSWER to a [Y/n] question accepts (empty means yes)."
  (let ((a (downcase (string-trim (or answer "")))))
    (or (string-empty-p a) (string= a "y") (string= a "yes"))))

(defun tandem-sessions--ask (prompt)
  "Ask PROMPT through `tandem-sessions-prompt-function'.
In batch Emacs with the default prompt, signal the interactive-use error."
  (when (and noninteractive (eq tandem-sessions-prompt-function #'read-string))
    (user-error "%s" (concat "Moving a tandem session whose directory is gone needs "
                             "your consent; run M-x tandem-resume interactively")))
  (funcall tandem-sessions-prompt-function prompt))

;;;; Listing and completion

(defun tandem-sessions--list (&optional all)
  "Sessions of this project, or of every project when ALL (newest first)."
  (tandem-request "sessions/list"
                  (if all (list :all t) (list :cwd (tandem-sessions--launch-dir)))))

(defun tandem-sessions--title (row)
  "The title shown for session ROW: why it is damaged, its title, or \"(untitled)\"."
  (let ((damaged (plist-get row :damaged))
        (title (plist-get row :title)))
    (cond (damaged (format "(%s)" damaged))
          ((string-empty-p title) "(untitled)")
          (t title))))

(defun tandem-sessions--candidate (row)
  "The completion string of session ROW."
  (format "%s  %s  %s%s"
          (substring (plist-get row :id) 0 13)
          (tandem-sessions--title row)
          (plist-get row :cwd)
          (if (plist-get row :cwd-exists) "" "  (directory gone)")))

(defun tandem-sessions--read (prompt)
  "Read a session with PROMPT; return (picked . ROW) or (typed . TEXT).
This project's sessions come first, then the others."
  (let* ((local (tandem-sessions--list))
         (ids (mapcar (lambda (r) (plist-get r :id)) local))
         (rows (append local (cl-remove-if (lambda (r) (member (plist-get r :id) ids))
                                           (tandem-sessions--list t))))
         (table (mapcar (lambda (r) (cons (tandem-sessions--candidate r) r)) rows))
         (default (car (car table)))
         (choice (completing-read (format-prompt prompt (and default (substring default 0 13)))
                                  (lambda (string pred action)
                                    (if (eq action 'metadata)
                                        '(metadata (display-sort-function . identity))
                                      (complete-with-action action table string pred)))
                                  nil nil nil nil default))
         (row (cdr (assoc choice table))))
    (if row (cons 'picked row) (cons 'typed (string-trim choice)))))

;;;; Entry paths

(defun tandem-sessions-resume-id (query)
  "Resume the session with id QUERY, or the one id beginning with QUERY.
This is the ID path.
When its directory is gone, ask whether to re-root it here."
  (let* ((cwd (tandem-sessions--launch-dir))
         (found (tandem-request "sessions/lookup" (list :query query :cwd cwd))))
    (if (plist-get found :cwd-exists)
        (tandem-sessions--activated
         (tandem-request "sessions/resume" (list :query (plist-get found :id) :cwd cwd)))
      (if (tandem-sessions--yes-p (tandem-sessions--ask (plist-get found :prompt)))
          (tandem-sessions--activated
           (tandem-request "sessions/resume"
                           (list :query (plist-get found :id) :cwd cwd :relocate t)))
        (message "%s" tandem-sessions-cancelled)
        nil))))

;;;###autoload
(defun tandem-resume (target)
  "Resume a tandem session.
Interactively, choose from the list (a direct open: a session whose
directory is gone runs in this project without moving), or type an id or
unique id prefix (which asks to re-root a session whose directory is gone).
TARGET is an id string, or a session row plist from the list."
  (interactive
   (list (cdr (tandem-sessions--read "Resume session (or type an id)"))))
  (cond ((and (listp target) (plist-get target :path))
         (tandem-open-session-file (plist-get target :path)))
        ((and (stringp target) (not (string-empty-p target)))
         (tandem-sessions-resume-id target))
        (t (user-error "No tandem session given"))))

;;;###autoload
(defun tandem-open-session-file (file)
  "Open the session journal FILE directly; it is never moved.
The active directory is its recorded one, or this project when that is gone."
  (interactive
   (list (read-file-name "Session journal: " nil nil t nil
                         (lambda (f) (or (file-directory-p f) (string-suffix-p ".jsonl" f))))))
  (tandem-sessions--activated
   (tandem-request "sessions/open-file"
                   (list :path (expand-file-name file) :cwd (tandem-sessions--launch-dir)))))

;;;###autoload
(defun tandem-switch-session (target)
  "Switch the running session to TARGET (a journal path or a session id).
When TARGET's directory is gone, the current active directory stays."
  (interactive
   (progn
     (unless (tandem-request "sessions/current")
       (user-error "No tandem session is active; use M-x tandem-resume"))
     (let ((choice (tandem-sessions--read "Switch to session")))
       (list (if (eq (car choice) 'picked) (plist-get (cdr choice) :path) (cdr choice))))))
  (unless (tandem-request "sessions/current")
    (user-error "No tandem session is active; use M-x tandem-resume"))
  (tandem-sessions--activated (tandem-request "sessions/switch" (list :target target))))

;;;###autoload
(defun tandem-continue ()
  "Continue this project's latest session (or re-root a lost one, or start one)."
  (interactive)
  (tandem-sessions--activated
   (tandem-request "sessions/continue" (list :cwd (tandem-sessions--launch-dir)))))

(provide 'tandem-sessions)
;;; tandem-sessions.el ends here
