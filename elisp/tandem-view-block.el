;;; tandem-view-block.el --- The blocks of a tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A block is one rendered unit of a session buffer: a turn (every
;; journal entry naming it) or one entry outside turns.  This file holds
;; the struct and the questions asked of it (its entries in order, its
;; directive, its pending questions); tandem-view-render.el draws it.

;;; Code:

(require 'cl-lib)

;;;; Streamed text

;; A delta must cost what it brings: `concat' onto the answer so far
;; copies all of it each time (quadratic, and garbage for the collector).
;; A rope keeps the pieces, newest first, and joins them only when the
;; whole text is asked for (a re-render), keeping the joined string.

(cl-defstruct (tandem-view-rope (:constructor tandem-view-rope-create) (:copier nil))
  "Text streamed in pieces."
  (parts nil :documentation "The pieces, newest first.")
  (length 0 :documentation "Characters in all pieces."))

(defun tandem-view-rope-append (rope text)
  "Add TEXT at the end of ROPE."
  (unless (equal text "")
    (push text (tandem-view-rope-parts rope))
    (cl-incf (tandem-view-rope-length rope) (length text))))

(defun tandem-view-rope-string (rope)
  "Return ROPE's whole text (joined once, then kept joined)."
  (let ((parts (tandem-view-rope-parts rope)))
    (cond ((null parts) "")
          ((null (cdr parts)) (car parts))
          (t (let ((whole (apply #'concat (nreverse parts))))
               (setf (tandem-view-rope-parts rope) (list whole))
               whole)))))

(defun tandem-view-rope-insert-since (rope from)
  "Insert ROPE's text from character FROM on at point, piece by piece.
That costs the new text only, and no string of it is made."
  (let ((want (- (tandem-view-rope-length rope) from)) (got 0) (pieces nil)
        (parts (tandem-view-rope-parts rope)))
    (while (and parts (< got want))
      (push (car parts) pieces)
      (cl-incf got (length (car parts)))
      (setq parts (cdr parts)))
    (when (> got want)
      (setcar pieces (substring (car pieces) (- got want))))
    (dolist (piece pieces) (insert piece))))

(defun tandem-view-rope-clear (rope)
  "Empty ROPE."
  (setf (tandem-view-rope-parts rope) nil (tandem-view-rope-length rope) 0))

(cl-defstruct (tandem-view-block (:constructor tandem-view-block-create) (:copier nil))
  "One rendered unit of the session buffer: a turn, or an entry outside turns."
  (key nil :documentation "Unique key: seq of the block's first entry.")
  (turn nil :documentation "Turn number, or nil for an entry outside turns.")
  (entries nil :documentation "Journal entries (plists), newest first.")
  (start nil :documentation "Marker at the block's first character once rendered.")
  (meta nil :documentation "Plist from a `turn-started' event (:provider :model :directive).")
  (text-rope (tandem-view-rope-create)
             :documentation "Streamed assistant text not yet in an entry (a rope).")
  (reasoning-rope (tandem-view-rope-create)
                  :documentation "Streamed reasoning not yet in an entry (a rope).")
  (text-marker nil :documentation "Marker where streamed text is appended.")
  (text-shown 0 :documentation "Characters of the streamed text already in the buffer.")
  (text-fontified 0 :documentation "When the growing end of the streamed text was last marked.")
  (text-scan nil :documentation "Markdown segment scan of the streamed text (a `tandem-view-scan').")
  (settling nil :documentation "Text of the assistant entry that completes the streamed text.")
  (body-text nil :documentation "A settled streamed body: (TOKEN . TEXT).
Its `tandem-body' property is TOKEN (its scan); TEXT is its entry's text.")
  (reasoning-marker nil :documentation "Marker where streamed reasoning is appended.")
  (reasoning-shown 0 :documentation "Characters of the streamed reasoning already in the buffer.")
  (interactions nil :documentation "Interaction plists announced by events, newest first.")
  (files-changed nil :documentation "Files changed, from the `turn-ended' event.")
  (directive-memo nil :documentation "(ENTRIES META . DIRECTIVE): the last answer of
`tandem-view-block-directive', good while the entries and meta are those
\(compared with `eq': entries are only ever pushed onto)."))


(defconst tandem-view-answer-labels
  '(("allow_once" . "Allow once") ("allow_session" . "Allow for session")
    ("reject" . "Reject"))
  "Answers of a permission interaction with their button labels.")

(defconst tandem-view-answer-keys
  '(("allow_once" . "y") ("allow_session" . "a") ("reject" . "n"))
  "Default key of each answer while point is on an interaction row.
The backend's options may name other keys.")

;;;; Block queries

(defun tandem-view-block-live-text (block)
  "Return BLOCK's streamed assistant text not yet in an entry."
  (tandem-view-rope-string (tandem-view-block-text-rope block)))

(defun tandem-view-block-live-reasoning (block)
  "Return BLOCK's streamed reasoning not yet in an entry."
  (tandem-view-rope-string (tandem-view-block-reasoning-rope block)))

(defun tandem-view-block-live-p (block)
  "Return non-nil when BLOCK has streamed text not yet in an entry."
  (or (> (tandem-view-rope-length (tandem-view-block-text-rope block)) 0)
      (> (tandem-view-rope-length (tandem-view-block-reasoning-rope block)) 0)))

(defun tandem-view-block-ordered (block)
  "Return BLOCK's entries oldest first."
  (reverse (tandem-view-block-entries block)))

(defun tandem-view-block-find (block type)
  "Return BLOCK's oldest entry of TYPE (a string), or nil."
  (let ((found nil))
    ;; Entries are kept newest first: the last match is the oldest.
    (dolist (e (tandem-view-block-entries block) found)
      (when (equal (plist-get e :type) type) (setq found e)))))

(defun tandem-view-block-end-entry (block)
  "Return BLOCK's `turn_end' entry, or nil while the turn is in flight."
  ;; A plain loop: this runs several times for every turn of a long history.
  (let ((entries (tandem-view-block-entries block)) (found nil))
    (while (and entries (not found))
      (when (equal (plist-get (car entries) :type) "turn_end") (setq found (car entries)))
      (setq entries (cdr entries)))
    found))

(defun tandem-view-block-directive (block)
  "Return BLOCK's directive as (:directive ID :action ACTION), or nil."
  ;; Asked for several times per turn drawn (header, folds, rows).
  (let ((memo (tandem-view-block-directive-memo block))
        (entries (tandem-view-block-entries block))
        (meta (tandem-view-block-meta block)))
    (if (and memo (eq (car memo) entries) (eq (cadr memo) meta))
        (cddr memo)
      (let ((value (tandem-view-block--directive block)))
        (setf (tandem-view-block-directive-memo block) (cons entries (cons meta value)))
        value))))

(defun tandem-view-block--directive (block)
  "Return BLOCK's directive as `tandem-view-block-directive' does, computed."
  (let ((open (tandem-view-block-find block "directive_open"))
        (meta (plist-get (tandem-view-block-meta block) :directive))
        (start (tandem-view-block-find block "turn_start")))
    (cond (open (list :directive (plist-get open :directive)
                      :action (plist-get open :action)))
          ((stringp meta) (list :directive meta :action nil))
          ((consp meta) (list :directive (or (plist-get meta :directive) (plist-get meta :id))
                              :action (plist-get meta :action)))
          ((equal (plist-get start :origin) "directive") (list :directive "?" :action nil)))))

(defun tandem-view-block-answered (block interaction-id)
  "Return the answer given to INTERACTION-ID in BLOCK, or nil."
  (cl-loop for e in (tandem-view-block-entries block)
           when (and (equal (plist-get e :type) "interaction_answer")
                     (equal (plist-get e :interaction-id) interaction-id))
           return (plist-get e :answer)))

(defun tandem-view-block-pending-interactions (block)
  "Return BLOCK's interactions still waiting for an answer (plists), oldest first."
  (unless (tandem-view-block-end-entry block)
    (let ((seen nil) (out nil))
      (dolist (i (append (cl-remove-if-not (lambda (e) (equal (plist-get e :type) "interaction"))
                                           (tandem-view-block-ordered block))
                         (reverse (tandem-view-block-interactions block))))
        (let ((id (plist-get i :interaction-id)))
          (unless (or (member id seen) (tandem-view-block-answered block id))
            (push id seen)
            (push i out))))
      (nreverse out))))

(provide 'tandem-view-block)
;;; tandem-view-block.el ends here
