;;; tandem-view-stream.el --- Streamed text in the session buffer: appending it, settling it  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A frame appends the streamed text that arrived since the last one at
;; its block's markers (`tandem-view--append-live'), cutting only the new
;; lines into Markdown segments.  When the answer's entry arrives, or a
;; block with a long answer is re-rendered for any other reason (the
;; turn's end), the body is left where it is, with its segments and
;; faces: only the block's text before and after it is rendered again
;; (`tandem-view-settle-rerender').  Copying a 200 KB body with its
;; thousands of text property intervals, or cutting and fontifying it
;; again, would cost a stall and megabytes of garbage at the end of
;; every long answer.

;;; Code:

(require 'cl-lib)
(require 'tandem-view-state)
(require 'tandem-view-block)
(require 'tandem-view-render)
(require 'tandem-view-kinds)
(require 'tandem-view-segments)
(require 'tandem-view-draw)

;; Streamed text takes its constant properties from this symbol through
;; `category': one property instead of five in every interval of a long
;; answer, whose plists each face of its code splits and copies.
(put 'tandem-view-streamed 'read-only t)
(put 'tandem-view-streamed 'front-sticky '(read-only))
(put 'tandem-view-streamed 'keymap tandem-view-transcript-map)
(put 'tandem-view-streamed 'line-prefix tandem-view-render-indent)
(put 'tandem-view-streamed 'wrap-prefix tandem-view-render-indent)

(defun tandem-view--append-live (block)
  "Append BLOCK's streamed text that is not in the buffer yet at its markers.
Only the new text is inserted (`tandem-view-rope-insert-since'), and
only the assistant text's new lines are cut into Markdown segments: a
frame costs what arrived since the last one, not the answer so far."
  (cl-flet ((append-at (marker rope shown face)
              (when (and marker (marker-buffer marker) (> (tandem-view-rope-length rope) shown))
                (goto-char marker)
                (let ((start (point)))
                  (tandem-view-rope-insert-since rope shown)
                  (add-text-properties
                   start (point)
                   (if face
                       (list 'category 'tandem-view-streamed 'tandem-block block
                             'font-lock-face face)
                     (list 'category 'tandem-view-streamed 'tandem-block block
                           'tandem-body (tandem-view-block-text-scan block))))
                  start))))
    (let ((rope (tandem-view-block-reasoning-rope block)))
      (when (append-at (tandem-view-block-reasoning-marker block) rope
                       (tandem-view-block-reasoning-shown block) 'tandem-view-reasoning)
        (setf (tandem-view-block-reasoning-shown block) (tandem-view-rope-length rope))))
    (let* ((rope (tandem-view-block-text-rope block))
           (shown (tandem-view-block-text-shown block))
           (start (append-at (tandem-view-block-text-marker block) rope shown nil)))
      (when start
        (let ((end (marker-position (tandem-view-block-text-marker block))))
          (when (tandem-view-block-text-scan block)
            (tandem-view-render-live-mark block (- start shown) end t)))
        (setf (tandem-view-block-text-shown block) (tandem-view-rope-length rope))))))

(defconst tandem-view-settle-min 1024
  "Characters of a body above which a re-rendering leaves it in place.")

(defun tandem-view-settle--streamed (block)
  "Return BLOCK's streamed text as (BEG END TEXT SCAN) once its entry came.
BLOCK's assistant entry arrived with the whole text (`settling'): what
was not shown yet is appended first.  Nil when the shown text is not
the entry's text (then the block is rendered afresh)."
  (let ((text (tandem-view-block-settling block))
        (marker (tandem-view-block-text-marker block))
        (scan (tandem-view-block-text-scan block))
        (rope (tandem-view-block-text-rope block)))
    (setf (tandem-view-block-settling block) nil)
    (when (and (markerp marker) (marker-buffer marker) scan
               (<= (tandem-view-block-text-shown block) (length text))
               (zerop (tandem-view-rope-length rope)))
      (tandem-view-rope-append rope text)
      (tandem-view--append-live block)
      (tandem-view-rope-clear rope)
      (let ((beg (- marker (length text))) (end (marker-position marker)))
        (when (and (>= beg (point-min))
                   (eq (get-text-property beg 'tandem-body) scan)
                   (string= (buffer-substring-no-properties beg end) text))
          (list beg end text scan))))))

(defun tandem-view-settle--shown (block)
  "Return BLOCK's longest settled body shown as (BEG END TEXT nil), or nil."
  (let* ((end (tandem-view--block-end block))
         (pos (marker-position (tandem-view-block-start block)))
         (token (car (tandem-view-block-body-text block)))
         (best nil))
    (while (< pos end)
      (let* ((value (get-text-property pos 'tandem-body))
             (next (next-single-property-change pos 'tandem-body nil end))
             (text (cond ((stringp value) value)
                         ((and value (eq value token)) (cdr (tandem-view-block-body-text block))))))
        (when (and text (= (length text) (- next pos)) (>= (- next pos) tandem-view-settle-min)
                   (or (null best) (> (- next pos) (- (nth 1 best) (nth 0 best)))))
          (setq best (list pos next text nil)))
        (setq pos next)))
    best))

(defun tandem-view-settle-rerender (block)
  "Re-render BLOCK, leaving its long body (streamed or settled) where it is.
Only the text before and after the body is replaced; a streamed body's
open segment is then marked as complete.  Without such a body, or when
the fresh rendering has no place for it, the block is rendered afresh."
  (let* ((body (and (not (tandem-view-block-live-p block))
                    (or (and (tandem-view-block-settling block)
                             (tandem-view-settle--streamed block))
                        (tandem-view-settle--shown block))))
         (parts (and body (tandem-view-settle--parts block (nth 2 body)))))
    (setf (tandem-view-block-settling block) nil)
    (if (not parts)
        (tandem-view--rerender block)
      (pcase-let ((`(,beg ,end ,text ,scan) body)
                  (`(,before . ,after) parts)
                  (start (marker-position (tandem-view-block-start block)))
                  (block-end (tandem-view--block-end block)))
        (goto-char end)
        (delete-region end block-end)
        ;; What follows (the next block, the tail) starts after the new text.
        (insert-before-markers after)
        (goto-char start)
        (delete-region start beg)
        (insert before)
        (when scan
          (let ((beg (+ start (length before))))
            (tandem-view-segments-mark beg (+ beg (length text)) scan))
          (setf (tandem-view-block-body-text block) (cons scan text)))))))

(defun tandem-view-settle--parts (block text)
  "Render BLOCK with TEXT, its body, left out; return (BEFORE . AFTER) or nil.
Nil when the rendering has no place for TEXT (the turn is folded)."
  (let ((state tandem-view--state) (folded (lambda (part) (tandem-view--folded-p block part))))
    (with-temp-buffer
      (setq-local tandem-view--state state)
      (setq-local tandem-view-render-lazy t)
      (let ((tandem-view-render--kept text) (tandem-view-render--kept-at nil))
        (tandem-view-render-block block folded)
        (tandem-view--protect (point-min) (point-max) block)
        (when tandem-view-render--kept-at
          (cons (buffer-substring (point-min) tandem-view-render--kept-at)
                (buffer-substring tandem-view-render--kept-at (point-max))))))))

(provide 'tandem-view-stream)
;;; tandem-view-stream.el ends here
