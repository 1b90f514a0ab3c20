;;; tandem-view-model.el --- The model behind a tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Blocks built from journal entries (a turn, or an entry outside turns),
;; the turn index, and fold state: explicit choices in a buffer-local hash
;; keyed by (session turn part), defaults otherwise.  Turns a compaction
;; summarised are left out; its row stands in their place
;; (tandem-view-compaction.el).  No drawing here.

;;; Code:

(require 'cl-lib)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-view-kinds)
(require 'tandem-view-compaction)

(defun tandem-view--fold-key (block part)
  "Return the fold-state key of PART of BLOCK."
  (list (tandem-view-state-session tandem-view--state)
        (or (tandem-view-block-turn block) (tandem-view-block-key block))
        part))

(defun tandem-view--newest-turn-block ()
  "Return the newest block that is a turn."
  (let ((st tandem-view--state))
    (or (tandem-view-state-newest st)
        (setf (tandem-view-state-newest st)
              (cl-find-if #'tandem-view-block-turn (reverse (tandem-view-state-blocks st)))))))

(defun tandem-view--default-folded (block part)
  "Return non-nil when PART of BLOCK is folded by default."
  (pcase part
    ('turn (and (tandem-view-block-directive block)
                (tandem-view-block-end-entry block)
                (not (eq block (tandem-view--newest-turn-block)))))
    ('live-reasoning t)
    ;; Old turns inside an unfolded compaction row: open, their parts as usual.
    (`(compacted ,_ turn) nil)
    (`(compacted ,_ ,inner) (tandem-view--default-folded block inner))
    ;; An entry's part, (reasoning SEQ) say: as its kind registered it.
    (`(,(and part (pred symbolp)) . ,_) (tandem-view-kinds-folded-by-default-p part))))

(defun tandem-view--folded-p (block part)
  "Return non-nil when PART of BLOCK is folded (an explicit fold wins)."
  (pcase (gethash (tandem-view--fold-key block part) (tandem-view-state-folds tandem-view--state))
    ('folded t)
    ('open nil)
    (_ (tandem-view--default-folded block part))))

(defun tandem-view-history-entry (row)
  "Return the journal entry that ROW, one row of `sessions/history', stands for.
ROW is [SEQ TYPE TURN TS TEXT REST]: the entry is the plist (:seq SEQ
:type TYPE :turn TURN :ts TS :text TEXT . REST), each of TURN, TS and TEXT
left out when nil.  A row of another shape is an error that names it."
  (unless (and (vectorp row) (= (length row) 6) (integerp (aref row 0)) (stringp (aref row 1))
               (listp (aref row 5)))
    (error "Malformed entry in a session history reply: %S" row))
  (let ((entry (aref row 5)))
    (when (aref row 4) (setq entry (cons :text (cons (aref row 4) entry))))
    (when (aref row 3) (setq entry (cons :ts (cons (aref row 3) entry))))
    (when (aref row 2) (setq entry (cons :turn (cons (aref row 2) entry))))
    (cons :seq (cons (aref row 0) (cons :type (cons (aref row 1) entry))))))

(defun tandem-view-history-entries (rows)
  "Return ROWS of `sessions/history' as journal entry plists, in order."
  (mapcar #'tandem-view-history-entry rows))

(defun tandem-view--new-block (entry)
  "Return a new block whose first entry is ENTRY."
  (tandem-view-block-create :key (plist-get entry :seq) :turn (plist-get entry :turn)))

(defun tandem-view-cancelled-rewinds (entries)
  "Return the seqs of the rewinds a `rewind_undo' entry in ENTRIES cancels.
A cancelled rewind hides nothing; an undo with `:files-only' cancels none."
  (cl-loop for e in entries
           when (and (equal (plist-get e :type) "rewind_undo")
                     (not (plist-get e :files-only))
                     (integerp (plist-get e :rewind-seq)))
           collect (plist-get e :rewind-seq)))

(defun tandem-view--build (entries &optional later)
  "Return blocks (oldest first) for ENTRIES, a list oldest first.
Turns a later `rewind' hides are left out (unless a `rewind_undo'
cancelled it), and so are the turns a
compaction summarised (its row is placed where they were); LATER are
compaction entries newer than ENTRIES that count too.  Uses no buffer
state."
  (let ((by-turn (make-hash-table)) (blocks nil)
        (cancelled (tandem-view-cancelled-rewinds entries)))
    (dolist (e entries)
      (let ((turn (plist-get e :turn)) (type (plist-get e :type)))
        (cond
         ;; The queue is not conversation: its rows under the running turn show it.
         ((equal type "queue"))
         ((or (and (equal type "rewind") (not (memq (plist-get e :seq) cancelled)))
              ;; The undo of an edit-and-resend also takes the resent turn back.
              (and (equal type "rewind_undo") (integerp (plist-get e :hides-from))
                   (not (plist-get e :files-only))))
          (let ((before (or (plist-get e :hides-from) (plist-get e :before-turn))))
            (setq blocks (cl-remove-if (lambda (b) (and (tandem-view-block-turn b)
                                                        (>= (tandem-view-block-turn b) before)))
                                       blocks))
            (maphash (lambda (k _) (when (>= k before) (remhash k by-turn))) by-turn)
            (push (tandem-view--new-block e) blocks)
            (push e (tandem-view-block-entries (car blocks)))))
         ((null turn)
          (push (tandem-view--new-block e) blocks)
          (push e (tandem-view-block-entries (car blocks))))
         (t
          (let ((block (gethash turn by-turn)))
            (when (or (null block)
                      (and (equal type "turn_start") (tandem-view-block-find block "turn_start")))
              (setq block (tandem-view--new-block e))
              (puthash turn block by-turn)
              (push block blocks))
            (push e (tandem-view-block-entries block)))))))
    (tandem-view-compaction-arrange
     (tandem-view-compaction-drop (nreverse blocks) entries later))))

(defun tandem-view--index ()
  "Rebuild the turn -> block index from the state's blocks."
  (setf (tandem-view-state-by-turn tandem-view--state) (make-hash-table))
  (dolist (b (tandem-view-state-blocks tandem-view--state))
    (when (tandem-view-block-turn b)
      (puthash (tandem-view-block-turn b) b (tandem-view-state-by-turn tandem-view--state)))))

(provide 'tandem-view-model)
;;; tandem-view-model.el ends here
