;;; tandem-rewind.el --- Rewind a tandem session before a turn  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Rewind before turn N puts the workspace files back to the checkpoint
;; taken before turn N and hides turns N and later from the view and the
;; model's context, as one transaction in the backend
;; (`sessions/rewind').  The journal keeps every byte: a `rewind' entry
;; does the hiding.
;;
;; `tandem-rewind' first shows the impact plan in a `diff-mode' buffer:
;; the turns and directive attempts discarded, files changed outside
;; tandem since (which the rewind overwrites), known capture gaps, then
;; the diff the restore applies.  It asks with `y-or-n-p' (see
;; `tandem-rewind-confirm-function'); the backend refuses when the plan
;; changed since it was shown, and the new plan is shown instead.
;; Afterwards the session buffer re-renders and its composer is empty, in
;; chat scope.
;;
;; Public API:
;;   `tandem-rewind-plan'  -- the impact plan of a rewind, as a plist.
;;   `tandem-rewind'       -- show the plan, confirm, rewind.
;;   `tandem-rewind-before-turn-at-point' -- R on a turn in a session buffer.
;;   `tandem-rewind-undo-plan', `tandem-rewind-undo' -- undo the latest rewind.
;;   `tandem-view-turn-patch' -- one turn's patch (= on a turn).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'diff-mode)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-composer)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-review)
(require 'tandem-read)

(declare-function tandem-view-refresh "tandem-view-live" ())
(defvar tandem-directive-changed-functions)

(defvar tandem-rewind-confirm-function #'y-or-n-p
  "Function asking the user to confirm a rewind; called with the prompt.
Tests bind it to answer without a minibuffer.")

(defvar tandem-rewind-finished-functions nil
  "Abnormal hook run after a rewind.
Each function gets SESSION and the reply plist.")

(defconst tandem-rewind--buffer-name "*tandem-rewind*"
  "Name of the impact buffer (one, reused).")

(defconst tandem-rewind--patch-buffer-name "*tandem-patch*"
  "Name of the turn patch buffer (one, reused).")

(defconst tandem-rewind--attempts 3
  "How many times `tandem-rewind' re-plans when the plan changed under it.")

;;;; The plan

(defun tandem-rewind--check (session turn)
  "Signal an error unless SESSION is a session id and TURN a turn number."
  (unless (and (stringp session) (not (string-empty-p session)))
    (signal 'wrong-type-argument (list 'stringp session)))
  (unless (and (integerp turn) (> turn 0))
    (signal 'wrong-type-argument (list 'natnump turn))))

(defun tandem-rewind-plan (session turn)
  "Return the impact plan of rewinding SESSION before TURN, as a plist.
Keys: :session :before-turn :root :checkpoint :to-restore :to-delete
:changed-externally (plists :path :when) :turns (plists :turn :origin
:request :outcome :directive :files) :attempts (plists :turn :directive
:action :attempt) :gaps (plists :kind :path :detail :turn) :diff
:diff-truncated :acp-reset :digest.  Signals `tandem-error' when the
rewind is refused (busy, not-found, no-checkpoint, compaction)."
  (tandem-rewind--check session turn)
  (tandem-request "sessions/rewind-plan" (list :session session :turn turn) 120))

(defun tandem-rewind--section (title items fn &optional face)
  "Insert a section TITLE listing ITEMS, each inserted by FN; nothing when empty.
The title shows in FACE (default `bold')."
  (when items
    (insert (propertize (format "%s (%d)\n" title (length items))
                        'font-lock-face (or face 'bold)))
    (dolist (item items) (insert "  " (funcall fn item) "\n"))
    (insert "\n")))

(defun tandem-rewind--turn-line (turn)
  "A one-line description of TURN, a discarded turn plist."
  (format "Turn %s · %s · %s%s"
          (plist-get turn :turn)
          (if (plist-get turn :directive)
              (format "directive %s" (plist-get turn :directive))
            (or (plist-get turn :origin) "chat"))
          (or (plist-get turn :outcome) "not ended")
          (let ((request (plist-get turn :request)))
            (if (and request (not (string-empty-p request))) (concat " — " request) ""))))

(defun tandem-rewind--insert-plan (plan)
  "Insert the impact description of PLAN at point."
  (let ((external (plist-get plan :changed-externally)))
    (insert (propertize (format "Rewind before turn %s\n" (plist-get plan :before-turn))
                        'font-lock-face 'diff-file-header)
            (format "Session %s in %s\n" (plist-get plan :session) (plist-get plan :root))
            (format "Files go back to the checkpoint taken before turn %s; turns %s and later \
leave the view and the model's context.\n\n"
                    (plist-get plan :before-turn) (plist-get plan :before-turn)))
    (tandem-rewind--section "Turns discarded" (plist-get plan :turns) #'tandem-rewind--turn-line)
    (tandem-rewind--section
     "Directive attempts discarded" (plist-get plan :attempts)
     (lambda (a) (format "%s · %s%s (turn %s)" (plist-get a :directive) (plist-get a :action)
                         (if (plist-get a :attempt) (format " · attempt %s" (plist-get a :attempt))
                           " · discussion")
                         (plist-get a :turn))))
    (tandem-rewind--section
     "Changed outside tandem — the rewind overwrites these edits" external
     (lambda (c) (format "%s (%s)" (plist-get c :path) (plist-get c :when)))
     'warning)
    (tandem-rewind--section
     "Known gaps" (plist-get plan :gaps)
     (lambda (g) (format "%s%s: %s" (or (plist-get g :path)
                                        (format "turn %s" (plist-get g :turn)))
                         (format " [%s]" (plist-get g :kind)) (plist-get g :detail))))
    (tandem-rewind--section
     "Files" (append (mapcar (lambda (p) (cons "restore" p)) (plist-get plan :to-restore))
                     (mapcar (lambda (p) (cons "delete " p)) (plist-get plan :to-delete)))
     (lambda (f) (format "%s %s" (car f) (cdr f))))
    (when (and (null (plist-get plan :to-restore)) (null (plist-get plan :to-delete)))
      (insert "No file changes: the files already match the checkpoint.\n\n"))
    (when (plist-get plan :acp-reset)
      (insert "The agent's conversation starts afresh from the kept turns.\n\n"))
    (insert (or (plist-get plan :diff) ""))
    (when (plist-get plan :diff-truncated)
      (insert "\n# The diff is cut here (too long); every listed file is restored.\n"))))

(defun tandem-rewind-show-plan (plan)
  "Show PLAN in the impact buffer (`diff-mode'); return the buffer."
  (let ((buffer (get-buffer-create tandem-rewind--buffer-name)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (setq default-directory (file-name-as-directory (plist-get plan :root)))
        (tandem-rewind--insert-plan plan)
        (diff-mode)
        (setq buffer-read-only t)
        (goto-char (point-min))))
    (display-buffer buffer)
    buffer))

(defun tandem-rewind--prompt (plan)
  "The confirmation question for PLAN."
  (let ((external (length (plist-get plan :changed-externally))))
    (format "Rewind before turn %s: restore %d file(s), delete %d, discard %d turn(s)%s? "
            (plist-get plan :before-turn) (length (plist-get plan :to-restore))
            (length (plist-get plan :to-delete)) (length (plist-get plan :turns))
            (if (> external 0) (format ", overwriting %d outside change(s)" external) ""))))

;;;; Rewinding

(defun tandem-rewind--after (session)
  "Re-render SESSION's buffer and leave its composer empty, in chat scope.
Buffers visiting files the rewind restored are reverted."
  (let ((buffer (tandem-view-buffer session)))
    (when buffer
      (with-current-buffer buffer
        (tandem-revert-stale-buffers (tandem-view--root))
        (when (fboundp 'tandem-view-refresh) (tandem-view-refresh))
        (when (markerp tandem-composer--start)
          (tandem-composer-set-scope buffer 'chat)
          (let ((draft (tandem-composer-draft buffer)))
            (unless (string-empty-p draft)
              (kill-new draft)
              (message "tandem: the composer's draft is in the kill ring")))
          (tandem-composer-set-draft "" buffer)))))
  (when (boundp 'tandem-directive-changed-functions)
    (run-hooks 'tandem-directive-changed-functions)))

(defun tandem-rewind (session turn &optional no-confirm)
  "Rewind SESSION before TURN, restoring the files of TURN's checkpoint.
TURN and later turns leave the view and the model's context.  Show the
impact plan and ask first, unless NO-CONFIRM.  Return the reply
plist (:seq :restored :deleted :turns :backup ...), or nil when declined.
When the plan changed before the rewind ran, the new plan is shown and
asked about again."
  (interactive (tandem-rewind--at-point "Rewind before turn" t))
  (tandem-rewind--check session turn)
  (let ((tries 0) (result nil) (done nil))
    (while (not done)
      (let ((plan (tandem-rewind-plan session turn)))
        (if (and (not no-confirm)
                 (progn (tandem-rewind-show-plan plan)
                        (not (funcall tandem-rewind-confirm-function
                                      (tandem-rewind--prompt plan)))))
            (progn (message "Rewind cancelled; nothing changed") (setq done t))
          (condition-case err
              (setq result (tandem-request "sessions/rewind"
                                           (list :session session :turn turn
                                                 :digest (plist-get plan :digest))
                                           120)
                    done t)
            (tandem-error
             (unless (and (equal (tandem-error-code err) "stale")
                          (< (cl-incf tries) tandem-rewind--attempts))
               (signal (car err) (cdr err)))
             (message "tandem: %s" (tandem-error-message err)))))))
    (when result
      ;; The reply names the session by its full id (SESSION may be a prefix).
      (setq session (or (plist-get result :session) session))
      (save-current-buffer
        (let ((window (get-buffer-window tandem-rewind--buffer-name t)))
          (when window (quit-window nil window)))
        (tandem-rewind--after session))
      (tandem-review-rewound session (mapcar (lambda (n) (cons n t)) (plist-get result :turns)))
      (message "Rewound before turn %s: %d file(s) restored, %d deleted; undo: %s"
               turn (length (plist-get result :restored)) (length (plist-get result :deleted))
               (tandem-rewind--undo-hint))
      (run-hook-with-args 'tandem-rewind-finished-functions session result))
    result))

(declare-function transient-get-suffix "transient" (prefix loc))

(defun tandem-rewind--undo-hint ()
  "Return how to undo a rewind: the key of `tandem-rewind-undo' and its name.
A direct binding of the session buffer wins; else the session menu's key
followed by the menu's own key for it."
  (let* ((maps (delq nil (mapcar (lambda (m) (and (boundp m) (symbol-value m)))
                                 '(tandem-view-mode-map tandem-view-transcript-map))))
         (direct (where-is-internal 'tandem-rewind-undo maps t))
         (menu (where-is-internal 'tandem-session-menu maps t))
         (suffix (and menu (fboundp 'transient-get-suffix)
                      (ignore-errors (transient-get-suffix 'tandem-session-menu
                                                           'tandem-rewind-undo))))
         (key (cond (direct (key-description direct))
                    ((and menu (plist-get (nth 2 suffix) :key))
                     (concat (key-description menu) " " (plist-get (nth 2 suffix) :key))))))
    (if key (format "%s in the session buffer (M-x tandem-rewind-undo)" key)
      "M-x tandem-rewind-undo")))

(defun tandem-rewind--session-here ()
  "Return this buffer's session id, or nil."
  (and (boundp 'tandem-session) tandem-session))

(defun tandem-rewind--turn-at (pos)
  "Return the turn number of the turn block at POS in a session buffer, or nil."
  (save-excursion (goto-char pos) (tandem-read-turn-at-point)))

(defun tandem-rewind--at-point (&optional prompt visible-only)
  "Return (SESSION TURN) for the turn at point, else read TURN with PROMPT.
The turn read offers the session's turns (with VISIBLE-ONLY, those no
rewind hid), the latest that changed files as default."
  (let ((session (or (tandem-rewind--session-here) (tandem-project-session)))
        (turn (tandem-rewind--turn-at (point))))
    (list session (or turn (tandem-read-turn session (or prompt "Turn")
                                             :visible-only visible-only)))))

(defun tandem-rewind-before-turn-at-point ()
  "Rewind this buffer's session before the turn at point (after confirmation)."
  (interactive nil tandem-view-mode)
  (let ((turn (tandem-rewind--turn-at (point)))
        (session (tandem-rewind--session-here)))
    (unless session (user-error "This buffer shows no tandem session"))
    (unless turn (user-error "Point is not on a turn"))
    (tandem-rewind session turn)))

;;;; Undoing a rewind

(defun tandem-rewind--check-session (session)
  "Signal an error unless SESSION is a session id."
  (unless (and (stringp session) (not (string-empty-p session)))
    (signal 'wrong-type-argument (list 'stringp session))))

(defun tandem-rewind-undo-plan (session &optional files-only)
  "Return the plan of undoing SESSION's latest rewind, as a plist.
With FILES-ONLY, only the files would go back; the turns stay rewound.
Keys: :session :rewind-seq :before-turn :root :checkpoint :to-restore
:to-delete :changed-externally :turns (returning) :attempts (returning)
:later-turns :refusal (a sentence when a full undo is refused) :gaps
:diff :files-only :acp-reset :digest.  Signals `tandem-error' when
there is no rewind to undo."
  (tandem-rewind--check-session session)
  (tandem-request "sessions/rewind-undo-plan"
                  (list :session session :files-only (and files-only t)) 120))

(defun tandem-rewind--insert-undo-plan (plan)
  "Insert the impact description of PLAN, an undo plan, at point."
  (let ((before (plist-get plan :before-turn)))
    (insert (propertize (format "Undo the rewind before turn %s%s\n" before
                                (if (plist-get plan :files-only) " (files only)" ""))
                        'font-lock-face 'diff-file-header)
            (format "Session %s in %s\n" (plist-get plan :session) (plist-get plan :root))
            (if (plist-get plan :files-only)
                "Files go back to what they were just before the rewind; the rewound turns \
stay rewound (the journal's turns do not change).\n\n"
              "Files go back to what they were just before the rewind, and the \
rewound turns return to the view and the model's context.\n\n"))
    (when (plist-get plan :refusal)
      (insert (propertize (format "Refused: %s.\n\n" (plist-get plan :refusal))
                          'font-lock-face 'error)))
    (tandem-rewind--section
     "Turns returning" (plist-get plan :turns) #'tandem-rewind--turn-line)
    (tandem-rewind--section
     "Resent turn taken back (edit and resend)" (plist-get plan :takes-back)
     #'tandem-rewind--turn-line)
    (tandem-rewind--section
     "Directive attempts returning" (plist-get plan :attempts)
     (lambda (a) (format "%s · %s%s (turn %s)" (plist-get a :directive) (plist-get a :action)
                         (if (plist-get a :attempt) (format " · attempt %s" (plist-get a :attempt))
                           " · discussion")
                         (plist-get a :turn))))
    (tandem-rewind--section
     "Changed since the rewind — the undo overwrites these edits"
     (plist-get plan :changed-externally)
     (lambda (c) (plist-get c :path)) 'warning)
    (tandem-rewind--section
     "Known gaps" (plist-get plan :gaps)
     (lambda (g) (format "%s [%s]: %s" (or (plist-get g :path) "-") (plist-get g :kind)
                         (plist-get g :detail))))
    (tandem-rewind--section
     "Files" (append (mapcar (lambda (p) (cons "restore" p)) (plist-get plan :to-restore))
                     (mapcar (lambda (p) (cons "delete " p)) (plist-get plan :to-delete)))
     (lambda (f) (format "%s %s" (car f) (cdr f))))
    (when (plist-get plan :acp-reset)
      (insert "The agent's conversation cannot be un-reset: its next turn starts a new \
one seeded with the returned turns.\n\n"))
    (insert (or (plist-get plan :diff) ""))))

(defun tandem-rewind--show-undo-plan (plan)
  "Show the undo PLAN in the impact buffer; return the buffer."
  (let ((buffer (get-buffer-create tandem-rewind--buffer-name)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (setq default-directory (file-name-as-directory (plist-get plan :root)))
        (tandem-rewind--insert-undo-plan plan)
        (diff-mode)
        (setq buffer-read-only t)
        (goto-char (point-min))))
    (display-buffer buffer)
    buffer))

(defun tandem-rewind-undo (session &optional no-confirm files-only)
  "Undo the latest rewind of SESSION: put its files and rewound part back.
Show the impact plan and ask first, unless NO-CONFIRM.  A full undo is
refused when a turn ran after the rewind (the plan names it); then
putting back only the files is offered.  With FILES-ONLY (a prefix
argument interactively) only the files go back and the rewound part of
the session stays rewound.  Return the reply plist (:seq :restored
:deleted :turns :files-only ...), or nil when declined."
  (interactive (list (or (tandem-rewind--session-here) (tandem-project-session))
                     nil current-prefix-arg))
  (tandem-rewind--check-session session)
  (let ((plan (tandem-rewind-undo-plan session files-only)) (result nil))
    (when (and (plist-get plan :refusal) (not no-confirm))
      (tandem-rewind--show-undo-plan plan)
      (if (funcall tandem-rewind-confirm-function
                   (format "Undo refused (%s); put back only the files? "
                           (plist-get plan :refusal)))
          (setq plan (tandem-rewind-undo-plan session t))
        (setq plan nil)))
    (when (and plan (plist-get plan :refusal))
      (user-error "Cannot undo the rewind: %s" (plist-get plan :refusal)))
    (if (and plan
             (or no-confirm
                 (progn (tandem-rewind--show-undo-plan plan)
                        (funcall tandem-rewind-confirm-function
                                 (format "Undo the rewind before turn %s: restore %d file(s), \
delete %d, %s? "
                                         (plist-get plan :before-turn)
                                         (length (plist-get plan :to-restore))
                                         (length (plist-get plan :to-delete))
                                         (if (plist-get plan :files-only)
                                             "turns stay rewound"
                                           (format "%d turn(s) return%s"
                                                   (length (plist-get plan :turns))
                                                   (if (plist-get plan :takes-back)
                                                       ", the resent turn goes"
                                                     ""))))))))
        (setq result (tandem-request "sessions/rewind-undo"
                                     (list :session session :digest (plist-get plan :digest)
                                           :files-only (plist-get plan :files-only))
                                     120))
      (message "Undo cancelled; nothing changed"))
    (when result
      (setq session (or (plist-get result :session) session))
      (save-current-buffer
        (let ((window (get-buffer-window tandem-rewind--buffer-name t)))
          (when window (quit-window nil window)))
        (let ((buffer (tandem-view-buffer session)))
          (when buffer
            (with-current-buffer buffer
              (tandem-revert-stale-buffers (tandem-view--root))
              (when (fboundp 'tandem-view-refresh) (tandem-view-refresh))))))
      (tandem-review-rewound session (mapcar (lambda (n) (cons n nil)) (plist-get result :turns)))
      (when (boundp 'tandem-directive-changed-functions)
        (run-hooks 'tandem-directive-changed-functions))
      (message "Undid the rewind before turn %s: %d file(s) restored, %d deleted%s"
               (plist-get result :before-turn) (length (plist-get result :restored))
               (length (plist-get result :deleted))
               (if (plist-get result :files-only) " (turns stay rewound)" "")))
    result))

;;;; One turn's patch

(defun tandem-review-turn-at-point (session turn)
  "Review the patch of the turn at point (TURN of SESSION) in `tandem-review-mode'.
Revert hunks (k) or files (K) there, or compare a file with before the turn (e)."
  (interactive (tandem-rewind--at-point "Review turn") tandem-view-mode)
  (tandem-rewind--check session turn)
  (tandem-review-turn session turn))

(defun tandem-view-turn-patch (session turn)
  "Show the patch of TURN of SESSION in a reusable `diff-mode' buffer.
Interactively, the turn at point (else read) of this buffer's session.
Return the buffer."
  (interactive (tandem-rewind--at-point "Show the patch of turn"))
  (tandem-rewind--check session turn)
  (let* ((reply (tandem-request "sessions/turn-patch" (list :session session :turn turn) 120))
         (buffer (get-buffer-create tandem-rewind--patch-buffer-name)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (tandem-review-insert-turn-patch reply)
        (setq default-directory (file-name-as-directory (plist-get reply :root)))
        (diff-mode)
        (setq buffer-read-only t)
        (goto-char (point-min))))
    (display-buffer buffer)
    buffer))

(provide 'tandem-rewind)
;;; tandem-rewind.el ends here
