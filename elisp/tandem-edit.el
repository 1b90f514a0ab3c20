;;; tandem-edit.el --- Edit and resend a request; fork a session  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Edit and resend: `e' on an earlier turn of a session buffer puts that
;; turn's request in the composer, which says "editing turn N".  C-c C-c
;; then rewinds before turn N and sends the edited text as a new turn, in
;; one backend call (`turns/resend'): the rewind's plan is shown and
;; confirmed once, as `tandem-rewind' does, and nothing can start in the
;; session between the rewind and the new turn.  `tandem-rewind-undo'
;; undoes it: the discarded turns and their files come back and the
;; resent turn goes.  C-c C-k in the composer drops the edit (the text
;; stays as an ordinary draft).
;;
;; Fork: `tandem-fork-session' starts a new session whose conversation is
;; this one's up to a chosen turn (`sessions/fork'), leaves the files as
;; they are, and opens it in its own buffer.
;;
;; Public API:
;;   `tandem-edit-turn-at-point' -- e on a turn: edit its request.
;;   `tandem-edit-editing'       -- the turn being edited, or nil.
;;   `tandem-edit-drop'          -- leave the edit (C-c C-k while editing).
;;   `tandem-edit-resend'        -- rewind before a turn and send a text.
;;   `tandem-fork-session'       -- fork a session at a turn.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-composer)
(require 'tandem-read)
(require 'tandem-review)
(require 'tandem-rewind)
(require 'tandem-sessions)
(require 'tandem-view)

(defvar tandem-directive-changed-functions)

(defvar-local tandem-edit--turn nil
  "The turn whose request is being edited in the composer, or nil.")

(defvar-local tandem-edit--saved nil
  "The composer's send and queue functions before the edit began.")

;;;; Editing a turn's request

(defun tandem-edit-editing ()
  "Return the turn whose request is being edited in this buffer's composer, or nil."
  tandem-edit--turn)

(defun tandem-edit--request (turn)
  "Return the request text of TURN in this session buffer.
Signal a `user-error' when TURN is not shown or is a directive turn."
  (let* ((block (or (gethash turn (tandem-view-state-by-turn tandem-view--state))
                    (user-error "Turn %s is not shown here" turn)))
         (entries (reverse (tandem-view-block-entries block)))
         (start (cl-find "turn_start" entries :key (lambda (e) (plist-get e :type))
                         :test #'equal))
         (user (cl-find "user" entries :key (lambda (e) (plist-get e :type)) :test #'equal)))
    (when (or (equal (plist-get start :origin) "directive")
              (cl-find "directive_open" entries :key (lambda (e) (plist-get e :type))
                       :test #'equal))
      (user-error "Turn %s is a directive turn: its prompt is the directive's (rewind it with R)"
                  turn))
    (or (plist-get user :text) (user-error "Turn %s has no request to edit" turn))))

(defun tandem-edit--refuse-queue (_text)
  "Refuse to queue while a turn's request is edited (a turn is running)."
  (user-error "A turn is running: edit and resend rewinds, which waits for it to end \
\(C-c C-k drops the edit, then C-c C-k cancels the turn)"))

(defvar tandem-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-k") #'tandem-edit-drop)
    map)
  "Keys of the composer while it edits a turn's request.")

(define-minor-mode tandem-edit-mode
  "Minor mode of a session buffer whose composer edits an earlier turn's request.
\\<tandem-edit-mode-map>\\[tandem-edit-drop] drops the edit; \\<tandem-composer-mode-map>\\[tandem-composer-send] rewinds and resends."
  :lighter nil
  :keymap tandem-edit-mode-map)

(function-put 'tandem-edit-mode 'completion-predicate #'ignore)

(defun tandem-edit--start (turn text)
  "Put TEXT, TURN's request, in the composer and mark it as editing TURN."
  (unless tandem-edit--turn
    (setq tandem-edit--saved (cons tandem-composer-send-function
                                   tandem-composer-queue-function)))
  (let ((draft (string-trim (tandem-composer-draft))))
    (unless (or tandem-edit--turn (string-empty-p draft))
      (kill-new draft)
      (message "tandem: the composer's draft is in the kill ring")))
  (setq tandem-edit--turn turn
        tandem-composer-send-function #'tandem-edit--send
        tandem-composer-queue-function #'tandem-edit--refuse-queue
        tandem-composer-note (format "editing turn %s: C-c C-c rewinds and resends · \
C-c C-k drops the edit" turn))
  (tandem-edit-mode 1)
  (tandem-composer-set-draft text)
  (tandem-composer-refresh)
  (goto-char (point-max)))

(defun tandem-edit--stop ()
  "Leave the edit mode; the draft stays as it is."
  (when tandem-edit--turn
    (setq tandem-composer-send-function (car tandem-edit--saved)
          tandem-composer-queue-function (cdr tandem-edit--saved)
          tandem-edit--saved nil tandem-edit--turn nil tandem-composer-note nil)
    (tandem-edit-mode -1)
    (tandem-composer-refresh)))

(defun tandem-edit-turn-at-point ()
  "Put the request of the turn at point in the composer, to edit and resend it.
The composer then says \"editing turn N\".  Sending rewinds before turn
N (asking first, as \\[tandem-rewind-before-turn-at-point] does) and sends
the edited text as a new turn; `tandem-rewind-undo' undoes both.
\\<tandem-edit-mode-map>\\[tandem-edit-drop] in the composer drops the edit.
A draft already in the composer goes to the kill ring."
  (interactive nil tandem-view-mode)
  (let ((turn (or (tandem-read-turn-at-point) (user-error "Point is not on a turn"))))
    (unless (eq (tandem-composer-scope) 'chat)
      (user-error "Edit and resend sends a chat message: C-c C-b goes back to chat first"))
    (when (and (fboundp 'tandem-view-queue-editing) (tandem-view-queue-editing))
      (user-error "A queued message is being edited in the composer; send or drop it first"))
    (tandem-edit--start turn (tandem-edit--request turn))
    (message "Editing turn %s: C-c C-c rewinds before it and sends the edit; C-c C-k drops it"
             turn)))

(defun tandem-edit-drop ()
  "Drop the edit of an earlier turn's request; the text stays as a draft.
While no edit is going on, cancel the running turn as the composer does."
  (interactive nil tandem-view-mode)
  (if (not tandem-edit--turn)
      (tandem-composer-cancel)
    (let ((turn tandem-edit--turn))
      (tandem-edit--stop)
      (message "No longer editing turn %s: C-c C-c sends the text as a new message%s" turn
               (if (tandem-composer-busy-p) " (C-c C-k cancels the running turn)" "")))))

;;;; Resending

(defun tandem-edit--prompt (plan)
  "The one question asked before resending over PLAN, a rewind plan."
  (let ((external (length (plist-get plan :changed-externally))))
    (format "Edit and resend turn %s: rewind (restore %d file(s), delete %d, discard %d \
turn(s)%s), then send the edited request? "
            (plist-get plan :before-turn) (length (plist-get plan :to-restore))
            (length (plist-get plan :to-delete)) (length (plist-get plan :turns))
            (if (> external 0) (format ", overwriting %d outside change(s)" external) ""))))

(defun tandem-edit-resend (session turn text &optional no-confirm)
  "Rewind SESSION before TURN, then send TEXT as a new turn, in one step.
Show the rewind's plan and ask once, unless NO-CONFIRM (a plan that
changed meanwhile is shown and asked about again).  Return the reply
plist (:session :turn :before-turn :rewind-seq :rewound ...), or signal
a `user-error' when declined (nothing changed)."
  (tandem-rewind--check session turn)
  (unless (and (stringp text) (not (string-empty-p (string-trim text))))
    (user-error "The edited request is empty"))
  (tandem-configure)
  (let ((tries 0) (result nil))
    (while (not result)
      (let ((plan (tandem-rewind-plan session turn)))
        (unless (or no-confirm
                    (progn (tandem-rewind-show-plan plan)
                           (funcall tandem-rewind-confirm-function
                                    (tandem-edit--prompt plan))))
          (user-error "Edit and resend cancelled; nothing changed"))
        (condition-case err
            (setq result (tandem-request "turns/resend"
                                         (list :session session :turn turn :text text
                                               :digest (plist-get plan :digest))
                                         tandem-send-timeout))
          (tandem-error
           (unless (and (equal (tandem-error-code err) "stale")
                        (< (cl-incf tries) tandem-rewind--attempts))
             (signal (car err) (cdr err)))
           (message "tandem: %s" (tandem-error-message err))))))
    (setq session (plist-get result :session))
    (save-current-buffer
      (let ((window (get-buffer-window tandem-rewind--buffer-name t)))
        (when window (quit-window nil window)))
      (let ((buffer (tandem-view-buffer session)))
        (when buffer
          (with-current-buffer buffer (tandem-revert-stale-buffers (tandem-view--root))))))
    (tandem-review-rewound session (mapcar (lambda (n) (cons n t)) (plist-get result :rewound)))
    (when (boundp 'tandem-directive-changed-functions)
      (run-hooks 'tandem-directive-changed-functions))
    (run-hook-with-args 'tandem-rewind-finished-functions session result)
    (message "Rewound before turn %s and resent it as turn %s; undo: %s" turn
             (plist-get result :turn) (tandem-rewind--undo-hint))
    result))

(defun tandem-edit--send (text _scope)
  "Send TEXT as the edit of the turn being edited: rewind, then a new turn.
The composer's send function while editing; return the new turn's number."
  (let* ((buffer (current-buffer))
         (session (tandem-view-state-session tandem-view--state))
         (turn (plist-get (tandem-edit-resend session tandem-edit--turn text) :turn)))
    (with-current-buffer buffer
      (tandem-edit--stop)
      ;; Events may have ended the turn while the request waited.
      (let ((block (gethash turn (tandem-view-state-by-turn tandem-view--state))))
        (unless (and block (tandem-view-block-end-entry block))
          (tandem-view--set-running turn)))
      (tandem-view-flush))
    turn))

;;;; Forking

(defun tandem-edit--read-fork-turn (session at-point)
  "Read the last turn of SESSION to keep in a fork.
The default is AT-POINT when it is a chat turn, else the last one."
  (let* ((rows (cl-remove-if (lambda (r) (or (plist-get r :rewound)
                                             (equal (plist-get r :origin) "directive")))
                             (plist-get (tandem-request "sessions/turns" (list :session session))
                                        :turns)))
         (numbers (mapcar (lambda (r) (plist-get r :turn)) rows)))
    (unless rows (user-error "This session has no chat turn to fork from"))
    (string-to-number
     (tandem-read-choice "Fork keeping the conversation up to turn"
                         (mapcar (lambda (r) (cons (number-to-string (plist-get r :turn))
                                                   (tandem-read--turn-note r)))
                                 rows)
                         :default (number-to-string
                                   (if (memq at-point numbers) at-point (car (last numbers))))
                         :require-match t :what "turn"))))

(defun tandem-fork-session (session turn)
  "Start a new session whose conversation is SESSION's up to TURN (included).
The files are not touched; the new session's journal records where it
came from (`forked_from'), and it opens in its own buffer.
Interactively, SESSION is this buffer's (else the project's) and TURN is
read, the turn at point (else the last) being the default.  Return the
new session's reply plist."
  (interactive
   (let ((session (or (tandem-view-session-here) (tandem-project-session))))
     (list session (tandem-edit--read-fork-turn
                    session (and (derived-mode-p 'tandem-view-mode)
                                 (tandem-read-turn-at-point))))))
  (tandem-rewind--check session turn)
  (let ((reply (tandem-request "sessions/fork" (list :session session :turn turn))))
    (tandem-sessions--activated reply)
    (tandem-view-show reply)
    (message "Forked %s at turn %s: new session %s" (substring session 0 (min 13 (length session)))
             turn (plist-get reply :id))
    reply))

(provide 'tandem-edit)
;;; tandem-edit.el ends here
