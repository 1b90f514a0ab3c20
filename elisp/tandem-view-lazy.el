;;; tandem-view-lazy.el --- Old turns' bodies scanned when first displayed  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Loading a long history inserts thousands of turns at once, most of
;; which nobody will look at.  Their Markdown bodies go in as plain text,
;; marked `tandem-unscanned' (and `fontified' nil); the first time
;; jit-lock displays a part of one, `tandem-view-lazy-scan' cuts the
;; whole body into segments exactly as the eager path does
;; (`tandem-view-segments-mark'), and `tandem-view-fontify-region', run
;; by jit-lock right after it, fontifies the segments shown.  So a body
;; costs its scan when it is first seen, and looks then as if it had been
;; scanned at insertion.

;;; Code:

(require 'tandem-view-segments)

(defvar tandem-view-lazy-defer nil
  "When non-nil, Markdown bodies are inserted unscanned (see this file).
Bound while a run of older turns is inserted at once.")

(defun tandem-view-lazy-mark (beg end)
  "Leave the Markdown body from BEG to END to be scanned when displayed."
  (when (< beg end)
    ;; A fresh value per body: two bodies side by side stay apart.
    (put-text-property beg end 'tandem-unscanned (list beg))
    (put-text-property beg end 'fontified nil)))

(defun tandem-view-lazy-scan (beg end)
  "Cut the unscanned bodies overlapping BEG..END into Markdown segments.
Each body is scanned whole, from its first character, as it would have
been when it was inserted.  A jit-lock function: it runs before
`tandem-view-fontify-region', which then fontifies what is displayed."
  (let ((pos (if (get-text-property beg 'tandem-unscanned) beg
               (next-single-property-change beg 'tandem-unscanned nil end)))
        (inhibit-read-only t))
    (while (and pos (< pos end))
      (let* ((body (get-text-property pos 'tandem-unscanned))
             (start (if (and (> pos (point-min))
                             (eq body (get-text-property (1- pos) 'tandem-unscanned)))
                        (previous-single-property-change pos 'tandem-unscanned nil (point-min))
                      pos))
             (stop (next-single-property-change pos 'tandem-unscanned nil (point-max))))
        (with-silent-modifications
          (remove-list-of-text-properties start stop '(tandem-unscanned)))
        (tandem-view-segments-mark start stop (tandem-view-scan-create))
        (setq pos (next-single-property-change stop 'tandem-unscanned nil end))
        (when (and pos (get-text-property stop 'tandem-unscanned)) (setq pos stop)))))
  nil)

(provide 'tandem-view-lazy)
;;; tandem-view-lazy.el ends here
