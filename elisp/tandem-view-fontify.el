;;; tandem-view-fontify.el --- Fontifying the displayed Markdown segments in place  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; jit-lock runs `tandem-view-fontify-region' on what is displayed; it
;; fontifies the Markdown segments there that are still plain
;; (tandem-view-segments.el cut and marked them), one at a time.
;;
;; The built-in engine works in place: its rules run on the session
;; buffer itself and a code block's text goes straight into its
;; language's work buffer, whose faces are copied back as
;; `font-lock-face'.  No string of the segment is made, none of its
;; fontified copy: a frame's garbage, and so the collections of a long
;; stream, stay small.  With `markdown-mode' the segment goes through
;; its work buffer as a string (tandem-view-markdown.el).
;;
;; A segment of code whose fence has not closed yet (the answer is still
;; streaming) is PENDING: its code shows plain and the segment stays
;; marked; when the fence closes its segments are fontified once, in the
;; language's mode, when displayed.

;;; Code:

(require 'tandem-view-markdown)
(require 'tandem-view-segments)

(defvar python-indent-guess-indent-offset)

(defcustom tandem-view-code-warm-languages '("python")
  "Fence languages whose mode is made ready once Emacs is idle in a session.
Loading a language's mode (python.el: about 0.1 s) would otherwise stall
the first code block of that language that streams in."
  :type '(repeat string)
  :group 'tandem-view)

(defvar tandem-view-fontify--warmed nil
  "Non-nil once `tandem-view-fontify-warm' has run.")

(defun tandem-view-fontify-warm ()
  "Make the work buffers of `tandem-view-code-warm-languages' when Emacs is idle.
Once per Emacs session."
  (unless tandem-view-fontify--warmed
    (setq tandem-view-fontify--warmed t)
    (run-with-idle-timer
     0.5 nil
     (lambda ()
       (dolist (lang tandem-view-code-warm-languages)
         (let ((mode (tandem-view-markdown--language-mode lang)))
           (when mode
             (with-demoted-errors "tandem: could not prepare a code mode: %S"
               (tandem-view-markdown--quietly (tandem-view-markdown--code-buffer mode))))))))))

(defun tandem-view-fontify--code (beg end lang)
  "Fontify BEG..END of the current buffer as code of language LANG, in place.
Without a mode for LANG (or when the mode fails) the code gets
`font-lock-constant-face', as in `tandem-view-markdown-fontify-code'."
  (let* ((mode (tandem-view-markdown--language-mode lang))
         ;; The work buffer's faces as a flat list (FROM TO FACE ...), applied
         ;; here afterwards: `put-text-property' on another buffer switches to
         ;; it and back each time, swapping every buffer-local variable.
         (runs (and mode
                    (condition-case nil
                        ;; The code as one plain string: copying the region would
                        ;; copy its text property intervals, to drop them at once.
                        (let ((code (buffer-substring-no-properties beg end)))
                          (with-current-buffer (tandem-view-markdown--code-buffer mode)
                            ;; The mode's caches (`syntax-ppss') follow edits through
                            ;; the modification hooks, which the caller may inhibit.
                            (let ((inhibit-modification-hooks nil))
                              (erase-buffer)
                              (insert code))
                            (font-lock-ensure)
                            (let ((pos (point-min)) (max (point-max)) (runs (list t)))
                              (while (< pos max)
                                (let ((next (next-single-property-change pos 'face nil max))
                                      (face (get-text-property pos 'face)))
                                  (when face (setq runs (cons face (cons next (cons pos runs)))))
                                  (setq pos next)))
                              runs)))
                      (error nil)))))
    (if (not runs)
        (put-text-property beg end 'font-lock-face 'font-lock-constant-face)
      (let ((offset (- beg 1)))
        (while (cdr runs)
          (put-text-property (+ (nth 2 runs) offset) (+ (nth 1 runs) offset)
                             'font-lock-face (car runs))
          (setq runs (nthcdr 3 runs)))))))

(defun tandem-view-fontify--code-block (open-beg body-beg fence lang stop pending)
  "Fontify the fenced block opened at OPEN-BEG, its code from BODY-BEG on.
FENCE is its fence (three backquotes or tildes), LANG its language; the
block ends at its closing line or at STOP.  PENDING leaves the code
plain.  Return the block's span (OPEN-BEG . END); point is at END."
  (goto-char body-beg)
  (let* ((close (and (re-search-forward (concat "^[ \t]*" fence "[ \t]*$") stop t)
                     (match-beginning 0)))
         (end (if close (line-end-position) stop)))
    (unless pending (tandem-view-fontify--code body-beg (or close stop) lang))
    (when close (put-text-property close end 'font-lock-face 'shadow))
    (goto-char end)
    (cons open-beg end)))

(defun tandem-view-fontify--builtin (start stop prefix pending)
  "Fontify START..STOP in place with the built-in Markdown rules.
PREFIX is the fence line the segment starts inside of (or \"\"); PENDING
leaves code plain.  The result is that of `tandem-view-markdown-fontify'
on the segment with the built-in engine."
  (let ((spans nil))
    (save-excursion
      (save-match-data
        (when (string-match tandem-view-markdown--fence-open-re prefix)
          (push (tandem-view-fontify--code-block start start (match-string 2 prefix)
                                              (match-string 3 prefix) stop pending)
                spans))
        (goto-char (if spans (cdar spans) start))
        (while (re-search-forward tandem-view-markdown--fence-open-re stop t)
          (let ((open-beg (match-beginning 0)) (body-beg (match-end 0)))
            (put-text-property open-beg body-beg 'font-lock-face 'shadow)
            (push (tandem-view-fontify--code-block open-beg body-beg (match-string 2)
                                                (match-string-no-properties 3) stop pending)
                  spans)))
        ;; A segment of code only has no prose to look at.
        (unless (and spans (null (cdr spans)) (<= (caar spans) start) (>= (cdar spans) stop))
          (goto-char start)
          (while (re-search-forward "^#+[ \t]+.*$" stop t)
            (unless (tandem-view-fontify--in-code (match-beginning 0) spans)
              (tandem-view-markdown-style-heading)))
          (dolist (rule tandem-view-markdown--inline-rules)
            (goto-char start)
            (while (re-search-forward (car rule) stop t)
              (unless (tandem-view-fontify--in-code (match-beginning 1) spans)
                (tandem-view-markdown-style-match (cdr rule))))))))))

(defun tandem-view-fontify--in-code (pos spans)
  "Return non-nil when POS is within one of SPANS, a list of (BEG . END)."
  (let ((in nil))
    (while (and spans (not in))
      (setq in (and (>= pos (caar spans)) (<= pos (cdar spans))) spans (cdr spans)))
    in))

(defun tandem-view-markdown--apply (start stop segment)
  "Fontify START..STOP, a segment marked SEGMENT (see tandem-view-segments.el).
SEGMENT is [PREFIX SUFFIX OPEN PENDING]: the text is fontified between
PREFIX and SUFFIX (the fence lines that give a piece of code its
context), not cached when OPEN (it is still growing), its code left
plain and the segment left marked when PENDING (the built-in engine).  A
value that is not a vector stands for a whole body."
  (let* ((prefix (if (vectorp segment) (aref segment 0) ""))
         (suffix (if (vectorp segment) (aref segment 1) ""))
         (open (and (vectorp segment) (aref segment 2)))
         (builtin (eq (tandem-view-markdown-engine) 'builtin))
         (pending (and builtin (vectorp segment) (aref segment 3)))
         ;; Outside `with-silent-modifications': markdown-mode's work buffer
         ;; needs its modification hooks (see `tandem-view-markdown-fontify').
         (text (unless builtin
                 (concat prefix (buffer-substring-no-properties start stop) suffix)))
         (styled (and text (tandem-view-markdown-fontify text open))))
    (with-silent-modifications
      (remove-list-of-text-properties start stop (if pending '(font-lock-face invisible)
                                                   '(tandem-markdown font-lock-face invisible)))
      (if builtin
          (tandem-view-markdown--quietly (tandem-view-fontify--builtin start stop prefix pending))
        (let ((i (length prefix)) (len (- (length text) (length suffix))))
          (while (< i len)
            (let ((next (next-single-property-change i 'font-lock-face styled len))
                  (face (get-text-property i 'font-lock-face styled)))
              (when face
                (put-text-property (+ start (- i (length prefix)))
                                   (+ start (- next (length prefix)))
                                   'font-lock-face face))
              (setq i next))))))))

(defun tandem-view-fontify-region (beg end)
  "Fontify the Markdown segments that overlap BEG..END and are still plain.
Run by jit-lock when text is displayed, so only what is shown is
fontified, one segment at a time (tandem-view-segments.el); call it
with the buffer's bounds to fontify everything at once (batch use)."
  (let ((pos (if (get-text-property beg 'tandem-markdown) beg
               (next-single-property-change beg 'tandem-markdown nil end)))
        (inhibit-read-only t))
    (while (and pos (< pos end))
      (let* ((segment (get-text-property pos 'tandem-markdown))
             (start (if (and (> pos (point-min))
                             (eq segment (get-text-property (1- pos) 'tandem-markdown)))
                        (previous-single-property-change pos 'tandem-markdown nil (point-min))
                      pos))
             (stop (next-single-property-change pos 'tandem-markdown nil (point-max))))
        (tandem-view-markdown--apply start stop segment)
        (setq pos (if (get-text-property stop 'tandem-markdown) stop
                    (next-single-property-change stop 'tandem-markdown nil end)))))))

(provide 'tandem-view-fontify)
;;; tandem-view-fontify.el ends here
