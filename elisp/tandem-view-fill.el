;;; tandem-view-fill.el --- Older turns drawn after a long load, on idle and on demand  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Loading thousands of older turns at once (`C-u o') draws the oldest
;; and the newest few screens of them (what a window shows after it) and
;; puts in a one-line placeholder for each of the others ("▸ Turn 12 …",
;; marked `tandem-undrawn'): their text costs ~20 µs a turn in Lisp,
;; most of the load.  The placeholders are drawn later, as the same text
;; a load would have inserted:
;;
;; * on idle, newest first, a chunk at a time, stopping as soon as input
;;   arrives (`tandem-view-fill-all' draws the rest at once);
;; * when a search starts (`isearch-mode-hook'): search sees every turn;
;; * when one is displayed (jit-lock: `tandem-view--finish' marks it for
;;   the next frame, which renders it) or a command acts on it
;;   (`tandem-view--finish-at').
;;
;; Each placeholder is its block's text (`tandem-block', a header line
;; with `tandem-header' and `tandem-part'), so moving between turns, point
;; and window anchoring and every command that walks the blocks see a
;; block where it belongs.

;;; Code:

(require 'cl-lib)
(require 'tandem-view-state)
(require 'tandem-view-draw)
(require 'tandem-view-frame)

(defvar tandem-view-fill-min 400
  "A load of more blocks than this leaves the older ones as placeholders.")

(defvar tandem-view-fill-drawn 30
  "How many of a long load's oldest, and of its newest, blocks are drawn at once.
A few screens at each end: a window at the top of the buffer shows the
session's start after the load, one below shows the newest loaded turns.")

(defconst tandem-view-fill-chunk 200
  "How many placeholders one step of the idle drawing replaces.")

(defconst tandem-view-fill-idle 0.2
  "Seconds of idle time before placeholders are drawn.")

(defvar-local tandem-view-fill--pending nil
  "Blocks left as placeholders, newest first (some may be drawn since).")

(defvar-local tandem-view-fill--timer nil
  "The idle timer drawing this buffer's placeholders, or nil.")

(defun tandem-view-fill-choose (blocks)
  "Return the blocks of BLOCKS (oldest first) to insert as placeholders, or nil.
Only a load longer than `tandem-view-fill-min' has any: every block but
the oldest and the newest `tandem-view-fill-drawn'.  A table, keyed by
the block."
  (let ((n (length blocks)) (keep tandem-view-fill-drawn))
    (when (and (> n tandem-view-fill-min) (> n (* 2 keep)))
      (let ((table (make-hash-table :test #'eq :size n)))
        (cl-loop for b in (nthcdr keep blocks) repeat (- n (* 2 keep))
                 do (puthash b t table))
        table))))

(defun tandem-view-fill-undrawn-p (block)
  "Return non-nil when BLOCK's text in this buffer is its placeholder."
  (let ((start (tandem-view-block-start block)))
    (and (markerp start) (marker-position start)
         (< start (point-max))
         (eq (get-text-property start 'tandem-block) block)
         (get-text-property start 'tandem-undrawn))))

(defun tandem-view-fill-schedule (blocks)
  "Remember BLOCKS (oldest first), just inserted; draw their placeholders on idle."
  (let ((undrawn (cl-remove-if-not #'tandem-view-fill-undrawn-p blocks)))
    (when undrawn
      (setq tandem-view-fill--pending (nconc (nreverse undrawn) tandem-view-fill--pending))
      (unless tandem-view-fill--timer
        (setq tandem-view-fill--timer
              (run-with-idle-timer tandem-view-fill-idle t #'tandem-view-fill--idle
                                   (current-buffer)))))))

(defun tandem-view-fill-stop ()
  "Cancel this buffer's idle drawing (also when it is killed)."
  (when (timerp tandem-view-fill--timer) (cancel-timer tandem-view-fill--timer))
  (setq tandem-view-fill--timer nil))

(defun tandem-view-fill-forget ()
  "Forget the placeholders left to draw: the whole text is rendered again."
  (setq tandem-view-fill--pending nil)
  (tandem-view-fill-stop))

(defun tandem-view-fill--idle (buffer)
  "Draw BUFFER's placeholders a chunk at a time until input arrives."
  (if (not (buffer-live-p buffer))
      ;; Killed without its hook having run (it always runs; a safeguard).
      (dolist (tm timer-idle-list)
        (when (and (eq (timer--function tm) #'tandem-view-fill--idle)
                   (eq (car (timer--args tm)) buffer))
          (cancel-timer tm)))
    (with-current-buffer buffer
      (while (and tandem-view-fill--pending (not (input-pending-p)))
        (tandem-view-fill--step tandem-view-fill-chunk))
      (unless tandem-view-fill--pending (tandem-view-fill-stop)))))

(defun tandem-view-fill--step (n)
  "Draw up to N of the pending placeholders, newest first."
  (let ((chunk nil) (i 0))
    (while (and tandem-view-fill--pending (< i n))
      (let ((b (pop tandem-view-fill--pending)))
        (when (tandem-view-fill-undrawn-p b) (push b chunk) (cl-incf i))))
    ;; CHUNK is oldest first now, as buffer order.
    (when chunk (tandem-view-fill-draw chunk))))

(defun tandem-view-fill-all ()
  "Draw every placeholder of this buffer now (before a search, say)."
  (when tandem-view-fill--pending
    (tandem-view-fill--step most-positive-fixnum)
    (tandem-view-fill-stop)))

(defun tandem-view-fill-draw (blocks)
  "Replace the placeholders of BLOCKS (in buffer order) with their text.
Adjacent placeholders are replaced with one edit each run (every edit
pays for the buffer's markers); point and windows stay on their text."
  (let ((runs nil) (run nil) (run-end nil))
    (dolist (b blocks)
      (when (tandem-view-fill-undrawn-p b)
        (let ((start (marker-position (tandem-view-block-start b))))
          (unless (and run (= start run-end))
            (when run (push (nreverse run) runs))
            (setq run nil))
          (push b run)
          (setq run-end (tandem-view--block-end b)))))
    (when run (push (nreverse run) runs))
    (when runs
      (tandem-view--keeping-place
        (dolist (r runs)
          (let* ((start (marker-position (tandem-view-block-start (car r))))
                 (size (- (tandem-view--block-end (car (last r))) start))
                 (boundary (copy-marker start)))
            ;; Inserted before the placeholders, which then go: a marker
            ;; at their end (the next block's start) stays after the text.
            (tandem-view--insert-blocks r boundary t)
            (delete-region boundary (+ boundary size))
            (set-marker boundary nil)))))))

(provide 'tandem-view-fill)
;;; tandem-view-fill.el ends here
