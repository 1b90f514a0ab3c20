;;; tandem-view-compaction.el --- Compaction rows of the tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A `compaction' entry stands in for the turns it summarised
;; (`tandem-compact-summarised-turns'): their blocks are left out of the
;; view and the row goes where they were, just before the first turn the
;; compaction kept (kept turns precede the compaction entry in the
;; journal).  Unfolded, the row shows the summary and then the old turns,
;; fetched from the journal by tandem-compact.el and rendered read-only
;; with the view's renderer.  Parts inside those old turns fold on their
;; own: their keys are (compacted TURN PART) within the row's block.

;;; Code:

(require 'cl-lib)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-compact)

(defun tandem-view-compaction-entry (block)
  "Return BLOCK's compaction entry when BLOCK is a compaction row, else nil."
  (and (null (tandem-view-block-turn block))
       (let ((entry (car (tandem-view-block-entries block))))
         (and (equal (plist-get entry :type) "compaction") entry))))

(defun tandem-view-compaction-entries (blocks)
  "Return the compaction entries of BLOCKS, in their order."
  (delq nil (mapcar #'tandem-view-compaction-entry blocks)))

(defun tandem-view-compaction-drop (blocks entries later)
  "Return BLOCKS, leaving out what compaction rows stand in for.
BLOCKS were built from ENTRIES (plists, oldest first); LATER are
compaction entries newer than ENTRIES (already in the view), which
also summarise turns of ENTRIES."
  ;; An inline loop: ENTRIES may be a whole history (20k entries).
  (if (not (or later (cl-loop for e in entries
                              thereis (equal (plist-get e :type) "compaction"))))
      blocks
    (let ((gone (make-hash-table)))
      (dolist (turn (tandem-compact-summarised-turns (append entries later)))
        (puthash turn t gone))
      (if (zerop (hash-table-count gone))
          blocks
        (cl-remove-if (lambda (b) (and (tandem-view-block-turn b)
                                       (gethash (tandem-view-block-turn b) gone)))
                      blocks)))))

(defun tandem-view-compaction-arrange (blocks)
  "Return BLOCKS with each compaction row moved before the oldest turn it kept.
The kept turns are the turn blocks (and rows between them) right before
the row whose turn is at least the row's first kept turn."
  (let ((out nil))                      ; the result, newest first
    (dolist (b blocks)
      (let* ((entry (tandem-view-compaction-entry b))
             (first-kept (and entry (plist-get entry :first-kept-turn))))
        (if (not (integerp first-kept))
            (push b out)
          (let ((kept nil))             ; oldest first
            (while (and out (not (tandem-view-compaction-entry (car out)))
                        (let ((turn (tandem-view-block-turn (car out))))
                          (or (null turn) (>= turn first-kept))))
              (push (pop out) kept))
            ;; Rows older than the oldest kept turn stay before the row.
            (while (and kept (null (tandem-view-block-turn (car kept))))
              (push (pop kept) out))
            (setq out (nconc (nreverse kept) (cons b out)))))))
    (nreverse out)))

(defun tandem-view-compaction-insert-old (entry folded-p)
  "Insert, read-only at point, what the compaction ENTRY summarised.
FOLDED-P is the row's fold predicate: part PART of old turn TURN is
asked as (compacted TURN PART), and the inserted text is marked with
those keys, so TAB folds it.  A failure to fetch the turns is shown as
a line instead of signalled."
  (let ((starts nil) (start (point)))
    (condition-case err
        (progn
          (insert (propertize "\n── the summarised turns, from the journal (read-only) ──\n\n"
                              'font-lock-face 'tandem-view-muted))
          (tandem-compact-insert-old-turns
           (tandem-view-state-session tandem-view--state) entry
           (lambda (block part)
             ;; The renderer asks about a turn's `turn' part before it
             ;; inserts anything of it: that first question marks its start.
             (unless (assq block starts) (push (cons block (point)) starts))
             (funcall folded-p (list 'compacted (tandem-view-block-turn block) part))))
          (let ((end (point)))
            (dolist (s starts)            ; newest first: each ends where the next began
              (tandem-view-compaction--mark (cdr s) end (tandem-view-block-turn (car s)))
              (setq end (cdr s)))))
      (error
       (delete-region start (point))
       (insert (propertize (format "  (could not load the compacted turns: %s)\n"
                                   (error-message-string err))
                           'font-lock-face 'tandem-view-error))))))

(defun tandem-view-compaction--mark (start end turn)
  "Rename the fold parts between START and END to parts of old TURN."
  (let ((pos start))
    (while (< pos end)
      (let ((next (next-single-property-change pos 'tandem-part nil end))
            (part (get-text-property pos 'tandem-part)))
        (when part
          (put-text-property pos next 'tandem-part (list 'compacted turn part)))
        (setq pos next)))))

(provide 'tandem-view-compaction)
;;; tandem-view-compaction.el ends here
