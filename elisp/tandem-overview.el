;;; tandem-overview.el --- Every tandem session at a glance  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-sessions-list' shows every session of every project (with a
;; prefix argument: this project's) in a `tabulated-list-mode' buffer:
;; state (waiting for you / running / idle / closed / directory gone),
;; title, engine and provider, last activity, turns, tokens, project.
;; Rows are grouped by project, the sessions that wait for the user first.
;; A parallel session (`tandem-parallel') sits in its project's group; its
;; state says "ready to land" or "landed" when no turn runs, and its
;; project cell names its tree, base commit, files and lines changed.  The rows come from the
;; backend's `sessions/overview'; the buffer refreshes itself when an event
;; says a session's state changed (a turn started or ended, a question was
;; asked or answered).
;;
;; Keys: RET opens the session at point, k closes it (a live one), /
;; filters (a regexp over the row; empty clears), r resumes by id, s
;; switches to it, g refreshes.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'tandem-client)
(require 'tandem-sessions)
(require 'tandem-usage)

(defconst tandem-overview--buffer-name "*tandem sessions*"
  "Name of the overview buffer.")

(defconst tandem-overview--state-kinds '("turn-started" "interaction" "turn-ended")
  "Event kinds that change a session's state.")

(defconst tandem-overview--state-entries '("interaction_answer" "rewind" "revert")
  "Entry types whose arrival changes what the overview shows.")

(defvar tandem-overview-refresh-delay 0.1
  "Seconds to wait after a state event before refreshing (events come in bursts).")

(defvar-local tandem-overview--project nil
  "The project directory this list is limited to, or nil for every project.")

(defvar-local tandem-overview--filter nil
  "Regexp rows must match to be shown, or nil.")

(defvar-local tandem-overview--rows nil
  "The last `sessions/overview' rows received.")

(defvar tandem-overview--timer nil
  "The pending refresh timer, or nil.")

(defvar tandem-sessions-list-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'tandem-sessions-list-open)
    (define-key map "k" #'tandem-sessions-list-close)
    (define-key map "/" #'tandem-sessions-list-filter)
    (define-key map "r" #'tandem-sessions-list-resume)
    (define-key map "s" #'tandem-sessions-list-switch)
    map)
  "Keys of `tandem-sessions-list-mode'.")

(define-derived-mode tandem-sessions-list-mode tabulated-list-mode "tandem-sessions"
  "Every tandem session at a glance, those waiting for you first.
\\<tandem-sessions-list-mode-map>\\[tandem-sessions-list-open] opens the session at point,
\\[tandem-sessions-list-close] closes it, \\[tandem-sessions-list-filter] filters the rows,
\\[tandem-sessions-list-resume] resumes it by id (asking to re-root it when its
directory is gone), \\[tandem-sessions-list-switch] switches to it,
\\[revert-buffer] refreshes.  The list follows the backend's events."
  (setq tabulated-list-format
        ;; Fits 120 columns.  The id's first 13 characters: UUIDv7s of
        ;; sessions made within a minute share their first 8.
        [("Id" 13 t) ("State" 16 t) ("Title" 24 t) ("Engine" 20 t)
         ("Last activity" 16 t) ("Turns" 5 t :right-align t)
         ("Tokens" 15 tandem-overview--fewer-tokens-p :right-align t)
         ("Project" 0 t)])
  (setq tabulated-list-sort-key nil)
  (add-hook 'tabulated-list-revert-hook #'tandem-overview--fetch nil t)
  (tabulated-list-init-header))

;; Only the buffers made for it use it: M-x does not offer it.
(function-put 'tandem-sessions-list-mode 'completion-predicate #'ignore)

(defun tandem-overview--state (row)
  "The State cell of ROW.
A parallel session that is neither running nor waiting says where its
change stands: ready to land, landed, or removed."
  (pcase (if (and (member (plist-get row :state) '("idle" "closed" "directory-gone"))
                  (member (plist-get (plist-get row :parallel) :state)
                          '("ready" "landed" "removed")))
             (plist-get (plist-get row :parallel) :state)
           (plist-get row :state))
    ("ready" (propertize "⇡ ready to land" 'face 'success))
    ("landed" "✓ landed")
    ("removed" "(removed)")
    ("waiting" (propertize (concat "⏸ waiting for you"
                                   (if (plist-get row :question)
                                       (concat ": " (plist-get row :question)) ""))
                           'face 'warning))
    ("running" (propertize (format "▶ running turn %s" (plist-get row :turn))
                           'face 'success))
    ("directory-gone" "(directory gone)")
    ("damaged" "(damaged)")
    (state state)))

(defun tandem-overview--tokens (row)
  "The Tokens cell of ROW, as the session's header writes them: \"80 in · 40 out\"."
  (or (tandem-usage-format (list :input-tokens (plist-get row :input-tokens)
                                 :output-tokens (plist-get row :output-tokens)))
      "0"))

(defun tandem-overview--fewer-tokens-p (a b)
  "Return non-nil when entry A's session used fewer tokens than entry B's."
  (cl-flet ((sum (entry) (+ (or (plist-get (car entry) :input-tokens) 0)
                            (or (plist-get (car entry) :output-tokens) 0))))
    (< (sum a) (sum b))))

(defun tandem-overview--entry (row)
  "The `tabulated-list-entries' element of ROW."
  (list row
        (vector (substring (plist-get row :id) 0 13)
                (tandem-overview--state row)
                (tandem-sessions--title row)
                (string-trim (format "%s%s %s" (plist-get row :engine)
                                     (if (plist-get row :host) (concat ":" (plist-get row :host)) "")
                                     (plist-get row :provider)))
                (let ((ts (or (plist-get row :last-activity) "")))
                  (replace-regexp-in-string "T" " " (substring ts 0 (min 16 (length ts)))))
                (number-to-string (or (plist-get row :turns) 0))
                (tandem-overview--tokens row)
                (tandem-overview--project row))))

(defun tandem-overview--project (row)
  "The Project cell of ROW: its project (a parallel session's: also its tree)."
  (let ((parallel (plist-get row :parallel)))
    (if (not parallel)
        (abbreviate-file-name (or (plist-get row :cwd) ""))
      (format "%s ⑂ %s %s%s · %d file%s +%d −%d"
              (abbreviate-file-name (or (plist-get row :project) ""))
              (plist-get parallel :name)
              (if (plist-get parallel :host) ; a host's path is no file here
                  (format "%s:%s" (plist-get parallel :host) (plist-get parallel :worktree))
                (abbreviate-file-name (plist-get parallel :worktree)))
              (if (plist-get parallel :base-commit)
                  (format " @%s" (substring (plist-get parallel :base-commit) 0 7))
                " (copy)")
              (or (plist-get parallel :files) 0)
              (if (eql (plist-get parallel :files) 1) "" "s")
              (or (plist-get parallel :additions) 0)
              (or (plist-get parallel :deletions) 0)))))

(defun tandem-overview--show (rows)
  "Show ROWS (from `sessions/overview') in the current buffer, keeping point."
  (setq tandem-overview--rows rows)
  (setq tabulated-list-entries
        (cl-loop for row in rows
                 for entry = (tandem-overview--entry row)
                 when (or (not tandem-overview--filter)
                          (string-match-p tandem-overview--filter
                                          (mapconcat #'identity (cadr entry) " ")))
                 collect entry))
  (tabulated-list-print t))

(defun tandem-overview--params ()
  "The `sessions/overview' parameters of this buffer."
  (and tandem-overview--project (list :cwd tandem-overview--project)))

(defun tandem-overview--fetch ()
  "Fill the list from the backend (synchronously; for `revert-buffer')."
  (let ((rows (plist-get (tandem-request "sessions/overview" (tandem-overview--params)) :rows)))
    (setq tandem-overview--rows rows)
    (setq tabulated-list-entries (mapcar #'tandem-overview--entry rows))
    (when tandem-overview--filter
      (setq tabulated-list-entries
            (cl-remove-if-not (lambda (e) (string-match-p tandem-overview--filter
                                                          (mapconcat #'identity (cadr e) " ")))
                              tabulated-list-entries)))))

(defun tandem-overview-refresh ()
  "Refresh every overview buffer from the backend, without waiting for it."
  (setq tandem-overview--timer nil)
  (let ((buffer (get-buffer tandem-overview--buffer-name)))
    (when (and (buffer-live-p buffer) (tandem-backend-pid))
      (tandem-request-async
       "sessions/overview" (with-current-buffer buffer (tandem-overview--params))
       (lambda (reply)
         (when (buffer-live-p buffer)
           (with-current-buffer buffer (tandem-overview--show (plist-get reply :rows)))))
       #'ignore))))

(defun tandem-overview--on-event (event)
  "Schedule a refresh for EVENT when it is a session state change."
  (when (and (get-buffer tandem-overview--buffer-name)
             (or (member (plist-get event :kind) tandem-overview--state-kinds)
                 (and (equal (plist-get event :kind) "entry")
                      (member (plist-get (plist-get event :entry) :type)
                              tandem-overview--state-entries))))
    (unless tandem-overview--timer
      (setq tandem-overview--timer
            (run-with-timer tandem-overview-refresh-delay nil #'tandem-overview-refresh)))))

;;;###autoload
(defun tandem-sessions-list (&optional project-only)
  "List every tandem session of every project, those waiting for you first.
With prefix argument PROJECT-ONLY, only this project's.  Return the buffer."
  (interactive "P")
  (let ((dir default-directory)
        (project (and project-only (tandem-sessions--launch-dir))))
    (with-current-buffer (get-buffer-create tandem-overview--buffer-name)
      (setq default-directory dir)
      (tandem-sessions-list-mode)
      (setq tandem-overview--project project)
      (add-hook 'tandem-event-functions #'tandem-overview--on-event)
      (tandem-overview--fetch)
      (tabulated-list-print)
      (pop-to-buffer (current-buffer))
      (current-buffer))))

(defun tandem-sessions--row-at-point ()
  "The session row at point, or a user error."
  (or (tabulated-list-get-id) (user-error "No tandem session on this line")))

(defun tandem-sessions-list-open ()
  "Open the session at point directly, without moving it."
  (interactive nil tandem-sessions-list-mode)
  (tandem-open-session-file (plist-get (tandem-sessions--row-at-point) :path)))

(defun tandem-sessions-list-close ()
  "Close the live session at point: stop its agent processes, release its journal."
  (interactive nil tandem-sessions-list-mode)
  (let ((row (tandem-sessions--row-at-point)))
    (unless (member (plist-get row :state) '("idle" "waiting" "running"))
      (user-error "Session %s is not open" (substring (plist-get row :id) 0 13)))
    (tandem-request "sessions/close" (list :session (plist-get row :id)))
    (message "tandem: closed session %s" (substring (plist-get row :id) 0 13))
    (revert-buffer)))

(defun tandem-sessions-list-filter (regexp)
  "Show only the rows matching REGEXP (in any column); empty: every row."
  (interactive (list (read-regexp "Filter sessions (regexp, empty: all)")) tandem-sessions-list-mode)
  (setq tandem-overview--filter (and regexp (not (string-empty-p regexp)) regexp))
  (tandem-overview--show tandem-overview--rows))

(defun tandem-sessions-list-resume ()
  "Resume the session at point by id.
When its directory is gone, ask whether to re-root it here."
  (interactive nil tandem-sessions-list-mode)
  (tandem-sessions-resume-id (plist-get (tandem-sessions--row-at-point) :id)))

(defun tandem-sessions-list-switch ()
  "Switch the running session to the one at point."
  (interactive nil tandem-sessions-list-mode)
  (tandem-switch-session (plist-get (tandem-sessions--row-at-point) :path)))

(provide 'tandem-overview)
;;; tandem-overview.el ends here
