;;; tandem-view-segments.el --- Markdown bodies cut into segments fontified on their own  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A Markdown body is cut into segments that can each be fontified
;; alone, so that fontifying what is shown costs what is shown, not the
;; whole answer: a segment ends at a blank line outside code once it has
;; `tandem-view-segments-min' characters, before a fence opens and after
;; it closes, and at a line end once it reaches `tandem-view-segments-max'
;; (inside a long code block too).  A segment that starts or ends inside a
;; fence carries the fence lines that put it back in context (its prefix
;; and suffix), so a piece of a code block is still fontified as code.
;;
;; The scan is incremental: it reads complete lines only, once each, and
;; keeps its state (where the open segment starts, the fence open at the
;; scan point) in a `tandem-view-scan'.  A streamed body and the same text
;; rendered at once are cut identically, so they are fontified alike.
;;
;; Each segment is marked with a `tandem-markdown' property whose value is
;; a fresh [PREFIX SUFFIX OPEN PENDING] vector (one per segment, so
;; neighbours stay apart) and `fontified' nil; jit-lock then fontifies the segments that
;; are displayed (`tandem-view-fontify-region').

;;; Code:

(require 'cl-lib)

;; Sizes: markdown-mode costs about 7 us a character in pieces of a few
;; hundred characters and more per character in larger ones; small
;; segments keep the piece still growing at the end cheap to redo.
(defconst tandem-view-segments-min 384
  "Characters a segment has before a blank line may end it.")

(defconst tandem-view-segments-max 1024
  "Characters after which a segment ends at the next line end.")

(defconst tandem-view-segments--fence-re
  "^[ \t]*\\(```+\\|~~~+\\)[ \t]*\\([^`\n]*\\)$"
  "A fence line: group 1 the fence, group 2 the info string.")

(cl-defstruct (tandem-view-scan (:constructor tandem-view-scan-create) (:copier nil))
  "Where an incremental segment scan of one body stands (offsets from its start)."
  (start 0 :documentation "Offset of the open segment's first character.")
  (pos 0 :documentation "Offset of the first line not scanned yet.")
  (prefix "" :documentation "Fence line the open segment starts inside of, with its newline.")
  (fence nil :documentation "The open fence, as (FENCE . OPENING-LINE), or nil.")
  (fence-start 0 :documentation "Offset of the open fence's opening line.")
  (closed-fences nil :documentation "Code blocks closed by the last scan: (FROM . TO) offsets."))

(defun tandem-view-segments--closer (fence)
  "Return the line that closes FENCE, a (FENCE . OPENING-LINE) pair."
  (concat (car fence) "\n"))

(defun tandem-view-segments--closes-p (fence)
  "Return non-nil when the line at point closes FENCE."
  (and (looking-at tandem-view-segments--fence-re)
       (string-empty-p (match-string 2))
       (eq (aref (match-string 1) 0) (aref (car fence) 0))
       (>= (length (match-string 1)) (length (car fence)))))

(defun tandem-view-segments--close (scan beg at suffix prefix closed)
  "End SCAN's open segment at AT with SUFFIX, opening the next inside PREFIX.
BEG is where the body starts.  Return CLOSED with the segment, as
\(FROM TO PREFIX SUFFIX), pushed on it, or CLOSED when it is empty."
  (let ((start (+ beg (tandem-view-scan-start scan))))
    (if (<= at start) closed
      (prog1 (cons (list start at (tandem-view-scan-prefix scan) suffix) closed)
        (setf (tandem-view-scan-start scan) (- at beg)
              (tandem-view-scan-prefix scan) prefix)))))

(defun tandem-view-segments-scan (beg end scan)
  "Scan the complete lines of the body starting at BEG, up to END.
SCAN is the body's `tandem-view-scan', updated in place.  Return the
segments that closed, oldest first, as (FROM TO PREFIX SUFFIX) in buffer
positions."
  (let ((closed nil))
    (setf (tandem-view-scan-closed-fences scan) nil)
    (save-excursion
      (save-match-data
        (goto-char (+ beg (tandem-view-scan-pos scan)))
        (while (search-forward "\n" end t)
          (let* ((next (point))
                 (line (progn (forward-line -1) (point)))
                 (start (+ beg (tandem-view-scan-start scan)))
                 (fence (tandem-view-scan-fence scan)))
            (cond
             ((and fence (tandem-view-segments--closes-p fence))
              (setf (tandem-view-scan-fence scan) nil)
              (push (cons (tandem-view-scan-fence-start scan) (- next beg))
                    (tandem-view-scan-closed-fences scan))
              (setq closed (tandem-view-segments--close scan beg next "" "" closed)))
             (fence
              (when (>= (- next start) tandem-view-segments-max)
                (setq closed (tandem-view-segments--close
                              scan beg next (tandem-view-segments--closer fence)
                              (concat (cdr fence) "\n") closed))))
             ((looking-at tandem-view-segments--fence-re)
              (setq closed (tandem-view-segments--close scan beg line "" "" closed))
              (setf (tandem-view-scan-fence-start scan) (- line beg)
                    (tandem-view-scan-fence scan)
                    (cons (match-string-no-properties 1)
                          (buffer-substring-no-properties line (1- next)))))
             ((or (and (looking-at "[ \t]*$") (>= (- next start) tandem-view-segments-min))
                  (>= (- next start) tandem-view-segments-max))
              (setq closed (tandem-view-segments--close scan beg next "" "" closed))))
            (goto-char next)
            (setf (tandem-view-scan-pos scan) (- next beg))))))
    (nreverse closed)))

(defun tandem-view-segments-open-suffix (scan text-ends-in-newline)
  "Return the suffix of SCAN's open segment.
TEXT-ENDS-IN-NEWLINE tells whether the body's text ends a line."
  (let ((fence (tandem-view-scan-fence scan)))
    (if fence
        (concat (if text-ends-in-newline "" "\n") (tandem-view-segments--closer fence))
      "")))

(defun tandem-view-segments--settle-pending (from to)
  "Make the pending segments between FROM and TO fontify their code now.
Their fence closed (or the body ended): they are marked again, plain."
  (let ((pos from))
    (while (< pos to)
      (let ((segment (get-text-property pos 'tandem-markdown))
            (next (next-single-property-change pos 'tandem-markdown nil to)))
        (when (vectorp segment) (aset segment 3 nil))
        (setq pos next))))
  (put-text-property from to 'fontified nil))

(defun tandem-view-segments-mark (beg end scan &optional open skip-open)
  "Cut the body from BEG to END into segments and mark them for fontification.
SCAN is the body's `tandem-view-scan' (updated); only lines after its
point are read.  The segment still open at END is marked too, with OPEN
non-nil when more text will come (it is then not cached), unless
SKIP-OPEN.  While more text will come, the segments of a code block not
closed yet are pending (their code shows plain); the segments of a
block that closes are marked again.  Return the first position marked."
  (let* ((closed (tandem-view-segments-scan beg end scan))
         (open-start (+ beg (tandem-view-scan-start scan)))
         (fence-from (and (tandem-view-scan-fence scan) (+ beg (tandem-view-scan-fence-start scan))))
         (pending-from (and open fence-from))
         (settled (mapcar (lambda (f) (cons (+ beg (car f)) (+ beg (cdr f))))
                          (tandem-view-scan-closed-fences scan)))
         (from (if closed (car (car closed)) open-start)))
    ;; The body is complete: a fence it leaves open is closed by its end.
    (when (and fence-from (not open)) (push (cons fence-from end) settled))
    (with-silent-modifications
      (dolist (range settled)
        (tandem-view-segments--settle-pending (car range) (min (cdr range) from))
        (setq from (min from (car range))))
      (dolist (seg closed)
        (put-text-property (nth 0 seg) (nth 1 seg) 'tandem-markdown
                           (vector (nth 2 seg) (nth 3 seg) nil
                                   (and pending-from (>= (nth 0 seg) pending-from)))))
      (when (and (< open-start end) (not skip-open))
        (put-text-property open-start end 'tandem-markdown
                           (vector (tandem-view-scan-prefix scan)
                                   (tandem-view-segments-open-suffix
                                    scan (eq (char-before end) ?\n))
                                   open (and pending-from t))))
      (let ((to (if skip-open open-start end)))
        (when (< from to) (put-text-property from to 'fontified nil))))
    from))

(provide 'tandem-view-segments)
;;; tandem-view-segments.el ends here
