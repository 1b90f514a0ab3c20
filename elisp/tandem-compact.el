;;; tandem-compact.el --- Compaction of tandem sessions  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-compact' asks the backend to summarise the older chat turns of a
;; session (`sessions/compact'): the session's provider writes the summary
;; from the chat projection, so directive turns never enter it.  The
;; journal keeps every old entry; the model's context starts from the
;; summary.  `tandem-compact-cancel' stops a compaction (nothing changes),
;; `tandem-compact-status' says how full the context is.
;;
;; For the session buffer this file offers what a compaction row needs:
;; `tandem-compact-summarised-turns' (the turns a compaction row stands
;; for, so the view can leave their blocks out),
;; `tandem-compact-old-entries' (those turns' entries, fetched from the
;; journal with `sessions/entries' and cached), and
;; `tandem-compact-insert-old-turns' (renders them read-only at point with
;; the view's own renderer).  `tandem-compact-show-old-turns' opens them
;; in a read-only buffer from a compaction row.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-view-kinds)

;; The view is above this file (its compaction rows use it).
(declare-function tandem-view-refresh "tandem-view-live" ())

(defcustom tandem-compact-timeout 600
  "Seconds a synchronous `tandem-compact' waits for the summary."
  :type 'integer
  :group 'tandem)

(defvar tandem-compact--old-cache (make-hash-table :test #'equal)
  "(SESSION . SEQ) of a compaction entry -> its old entries, oldest first.
The journal is append-only, so a compaction's old turns never change.")

(defvar tandem-compact-finished-functions nil
  "Abnormal hook run when a compaction started by `tandem-compact' ends.
Each function gets SESSION and the reply plist, or nil and the error text.")

;;;; Commands

(defun tandem-compact--session (session)
  "Return SESSION, else the session of this buffer or project."
  (or session
      (tandem-view-session-here)
      (tandem-project-session)))

(defun tandem-compact--done (session reply)
  "Report REPLY, the result of compacting SESSION, and refresh its buffer."
  (message "tandem: compacted; turns before %s summarised (%s → %s tokens)"
           (plist-get reply :first-kept-turn) (plist-get reply :tokens-before)
           (plist-get reply :tokens-after))
  (let ((buffer (tandem-view-buffer session)))
    (when (and buffer (fboundp 'tandem-view-refresh))
      (with-current-buffer buffer (tandem-view-refresh))))
  (run-hook-with-args 'tandem-compact-finished-functions session reply))

;;;###autoload
(defun tandem-compact (&optional session provider wait)
  "Compact SESSION by having its provider summarise the older chat.
SESSION defaults to this buffer's session.  With a prefix argument, ask
for PROVIDER (e.g. a cheaper model to write the summary).  The summary is
written in the background unless WAIT is non-nil; then return the reply
plist (:seq :first-kept-turn :tokens-before :tokens-after :acp-session-id)."
  (interactive
   (list nil (and current-prefix-arg
                  (read-string (format-prompt "Summarise with provider (e.g. openai:gpt-4o-mini)"
                                              "the session's own")))
         nil))
  (tandem-configure)
  (let* ((session (tandem-compact--session session))
         (params (append (list :session session)
                         (and provider (not (string-empty-p provider))
                              (list :provider provider)))))
    (if wait
        (let ((reply (tandem-request "sessions/compact" params tandem-compact-timeout)))
          (tandem-compact--done session reply)
          reply)
      (message "tandem: compacting… (M-x tandem-compact-cancel stops it)")
      (tandem-request-async
       "sessions/compact" params
       (lambda (reply) (tandem-compact--done session reply))
       (lambda (err)
         (message "tandem: compaction failed: %s" (nth 1 err))
         (run-hook-with-args 'tandem-compact-finished-functions session (nth 1 err))))
      nil)))

;;;###autoload
(defun tandem-compact-cancel (&optional session)
  "Cancel the compaction of SESSION; the session stays exactly as it was."
  (interactive)
  (let ((cancelled (plist-get (tandem-request "sessions/compact-cancel"
                                              (list :session (tandem-compact--session session)))
                              :cancelled)))
    (when (called-interactively-p 'interactive)
      (message (if cancelled "tandem: compaction cancelled" "tandem: no compaction running")))
    cancelled))

;;;###autoload
(defun tandem-compact-status (&optional session)
  "Show how full SESSION's chat context is; return the status plist."
  (interactive)
  (let ((status (tandem-request "sessions/compaction-status"
                                (list :session (tandem-compact--session session)))))
    (when (called-interactively-p 'interactive)
      (message "tandem: ~%s tokens of %s (compacts past %s%s)%s"
               (plist-get status :tokens) (or (plist-get status :window) "?")
               (or (plist-get status :limit) "?")
               (if (plist-get status :auto) "" ", automatic compaction off")
               (if (plist-get status :compacting) " · compacting now" "")))
    status))

;;;; What the session buffer needs

(defun tandem-compact--compactions (entries)
  "The compaction entries of ENTRIES (plists, oldest first), oldest first."
  (cl-remove-if-not (lambda (e) (equal (plist-get e :type) "compaction")) entries))

(defun tandem-compact-summarised-turns (entries)
  "Return the turn numbers in ENTRIES that a compaction row stands in for.
ENTRIES are entry plists, oldest first.
These are the turns before the `first_kept_turn' of the latest compaction
among ENTRIES, directive turns included: the view shows the compaction
row in their place and leaves their blocks out."
  (let* ((latest (car (last (tandem-compact--compactions entries))))
         (first-kept (and latest (plist-get latest :first-kept-turn)))
         (turns nil))
    (when (integerp first-kept)
      (dolist (e entries)
        (let ((turn (plist-get e :turn)))
          (when (and (integerp turn) (< turn first-kept) (not (memq turn turns)))
            (push turn turns)))))
    (nreverse turns)))

(defun tandem-compact--fetch-before (session seq)
  "Every entry of SESSION before SEQ, oldest first (paged)."
  (let ((out nil) (before seq) (done nil))
    (while (not done)
      (let* ((reply (tandem-request "sessions/entries"
                                    (list :session session :before before :limit 2000)))
             (page (plist-get reply :entries)))
        (setq out (append page out))
        (if (or (null page) (<= (plist-get (car page) :seq) 1))
            (setq done t)
          (setq before (plist-get (car page) :seq)))))
    out))

(defun tandem-compact-old-entries (session compaction)
  "Return the entries COMPACTION (an entry plist) summarised.
SESSION is the session id.  These are the turns before its first kept
turn and not already summarised by an earlier compaction, directive
turns included, fetched from the journal (oldest first) and cached."
  (let ((key (cons session (plist-get compaction :seq))))
    (or (gethash key tandem-compact--old-cache)
        (let* ((entries (tandem-compact--fetch-before session (plist-get compaction :seq)))
               (previous (car (last (tandem-compact--compactions entries))))
               (from (or (and previous (plist-get previous :first-kept-turn)) 0))
               (upto (or (plist-get compaction :first-kept-turn) most-positive-fixnum))
               (old (cl-remove-if-not
                     (lambda (e) (let ((turn (plist-get e :turn)))
                                   (and (integerp turn) (>= turn from) (< turn upto))))
                     entries)))
          (puthash key old tandem-compact--old-cache)))))

(defun tandem-compact--blocks (entries)
  "Group ENTRIES (oldest first) into view blocks, one per turn, oldest first."
  (let ((blocks nil) (by-turn (make-hash-table)))
    (dolist (e entries)
      (let* ((turn (plist-get e :turn))
             (block (gethash turn by-turn)))
        (unless block
          (setq block (tandem-view-block-create :key (plist-get e :seq) :turn turn))
          (puthash turn block by-turn)
          (push block blocks))
        (push e (tandem-view-block-entries block))))
    (nreverse blocks)))

(defun tandem-compact-insert-old-turns (session compaction &optional folded-p)
  "Insert what COMPACTION (an entry plist of SESSION) summarised at point.
They are rendered by the view's renderer, every part open unless
FOLDED-P (called with a block and a part key) says otherwise, and the
inserted text is read-only.  Return the number of turns inserted."
  (let ((start (point))
        (blocks (tandem-compact--blocks (tandem-compact-old-entries session compaction))))
    (if (null blocks)
        (insert (propertize "(no earlier turns in the journal)\n" 'font-lock-face
                            'tandem-view-muted))
      (dolist (b blocks)
        (tandem-view-render-block b (lambda (part) (and folded-p (funcall folded-p b part))))))
    (add-text-properties start (point) '(read-only t tandem-compacted t))
    (length blocks)))

(defun tandem-compact--entry-at (pos)
  "The compaction entry rendered at POS in a session buffer, or nil."
  (let ((block (get-text-property pos 'tandem-block)))
    (and block
         (cl-find "compaction" (tandem-view-block-entries block)
                  :key (lambda (e) (plist-get e :type)) :test #'equal))))

(define-derived-mode tandem-compact-old-mode special-mode "Tandem-Compacted"
  "Read-only view of the turns a compaction summarised."
  (setq-local truncate-lines nil)
  (setq-local word-wrap t))

;; Only the buffers made for it use it: M-x does not offer it.
(function-put 'tandem-compact-old-mode 'completion-predicate #'ignore)

;;;###autoload
(defun tandem-compact-show-old-turns (&optional session compaction)
  "Show what COMPACTION of SESSION summarised, read-only, in its own buffer.
Interactively, COMPACTION is the compaction row at point in a session
buffer.  Return the buffer."
  (interactive nil tandem-view-mode)
  (let* ((session (or session (tandem-view-session-here)))
         (compaction (or compaction (tandem-compact--entry-at (point))
                         (user-error "No compaction row at point"))))
    (unless session (user-error "Not in a tandem session buffer"))
    (let ((buffer (get-buffer-create (format "*tandem compacted: %s #%s*"
                                             (substring session 0 (min 8 (length session)))
                                             (plist-get compaction :seq)))))
      (with-current-buffer buffer
        (let ((inhibit-read-only t))
          (erase-buffer)
          (tandem-compact-old-mode)
          (insert (propertize (format "Turns summarised by compaction #%s (%s → %s tokens)\n\n"
                                      (plist-get compaction :seq)
                                      (plist-get compaction :tokens-before)
                                      (plist-get compaction :tokens-after))
                              'font-lock-face 'tandem-view-header))
          (tandem-compact-insert-old-turns session compaction)
          (goto-char (point-min))))
      (when (called-interactively-p 'interactive) (pop-to-buffer buffer))
      buffer)))

(provide 'tandem-compact)
;;; tandem-compact.el ends here
