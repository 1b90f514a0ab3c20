;;; tandem-view-format.el --- Faces and small formatters of the tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The faces a session buffer's blocks are drawn with, the indentation
;; of their bodies, and the small formatters a block's lines are made
;; of: journal times (cached by minute: 5,000 headers of a long
;; history format a few hundred distinct minutes), first lines, tool
;; values and outcomes.  tandem-view-render.el puts them together.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'iso8601)
(require 'seq)
(require 'tandem-core)

(defface tandem-view-header '((t :inherit font-lock-function-name-face :weight bold))
  "Face of a turn's header line."
  :group 'tandem-view)
(defface tandem-view-directive-header '((t :inherit font-lock-keyword-face :weight bold))
  "Face of a directive turn's header line."
  :group 'tandem-view)
(defface tandem-view-badge '((t :inherit warning :weight normal))
  "Face of the \"excluded from chat\" badge."
  :group 'tandem-view)
(defface tandem-view-role '((t :inherit font-lock-type-face :weight bold))
  "Face of a role label (Assistant)."
  :group 'tandem-view)
(defface tandem-view-muted '((t :inherit shadow))
  "Face of muted lines: unknown entries, meta information."
  :group 'tandem-view)
(defface tandem-view-reasoning '((t :inherit shadow :slant italic))
  "Face of reasoning text."
  :group 'tandem-view)
(defface tandem-view-tool '((t :inherit font-lock-builtin-face))
  "Face of a tool call line."
  :group 'tandem-view)
(defface tandem-view-interaction '((t :inherit warning :weight bold))
  "Face of a pending interaction row."
  :group 'tandem-view)
(defface tandem-view-error '((t :inherit error))
  "Face of a failed outcome."
  :group 'tandem-view)
(defface tandem-view-success '((t :inherit success))
  "Face of a succeeded outcome."
  :group 'tandem-view)

(defconst tandem-view-render-indent "  "
  "Line prefix of everything inside a turn.")

;;;; Small formatters

(defvar tandem-view-render--today nil
  "Cache of today's date: (TIME-IN-SECONDS . \"YYYY-MM-DD\").")

(defun tandem-view-render--today ()
  "Return today's local date as YYYY-MM-DD (recomputed at most every 10 s)."
  (let ((now (float-time)))
    (unless (and tandem-view-render--today (< (- now (car tandem-view-render--today)) 10))
      (setq tandem-view-render--today (cons now (format-time-string "%F"))))
    (cdr tandem-view-render--today)))

(defconst tandem-view-render--utc-re
  "\\`\\([0-9]\\{4\\}\\)-\\([0-9]\\{2\\}\\)-\\([0-9]\\{2\\}\\)T\\([0-9]\\{2\\}\\):\\([0-9]\\{2\\}\\):\\([0-9]\\{2\\}\\)\\(?:\\.[0-9]*\\)?\\(?:Z\\|[+]00:00\\)\\'"
  "A journal timestamp: UTC, groups year, month, day, hour, minute, second.")

(defvar tandem-view-render--minutes (cons nil (make-hash-table :test #'equal))
  "Local times of journal minutes: (TODAY . HASH of \"YYYY-MM-DDTHH:MM\" -> TEXT).
TODAY is the value of `tandem-view-render--today' the table was made
under.  TEXT is the local \"HH:MM:\" of that minute when it is today (the
seconds follow), else its \"YYYY-MM-DD HH:MM\"; nil for a zone whose
offset is not whole minutes.  Offsets from UTC are whole minutes, so a
minute's seconds are the same in local time.")

(defun tandem-view-render--minute (ts)
  "Return the cached local text of TS's minute (see `tandem-view-render--minutes').
TS has just matched `tandem-view-render--utc-re'; nil when its zone's
offset is not whole minutes."
  (let ((today (tandem-view-render--today)) (cache tandem-view-render--minutes))
    ;; Kept while `tandem-view-render--today' is (at most 10 s): a new day or
    ;; time zone is seen as soon as there.
    (unless (and (eq (car cache) tandem-view-render--today)
                 (< (hash-table-count (cdr cache)) 10000))
      (setq cache (setq tandem-view-render--minutes
                        (cons tandem-view-render--today (make-hash-table :test #'equal)))))
    (let* ((key (substring ts 0 16))
           (hit (gethash key (cdr cache) 'none)))
      (if (not (eq hit 'none)) hit
        (let* ((time (encode-time (list 0 (string-to-number (match-string 5 ts))
                                        (string-to-number (match-string 4 ts))
                                        (string-to-number (match-string 3 ts))
                                        (string-to-number (match-string 2 ts))
                                        (string-to-number (match-string 1 ts))
                                        nil nil t)))
               (text (and (equal (format-time-string "%S" time) "00")
                          (if (equal (format-time-string "%F" time) today)
                              (format-time-string "%H:%M:" time)
                            (format-time-string "%F %H:%M" time)))))
          (puthash key text (cdr cache)))))))

(defconst tandem-view-render--utc-tail-re
  ":[0-9]\\{2\\}\\(?:\\.[0-9]*\\)?\\(?:Z\\|[+]00:00\\)\\'"
  "What follows a journal timestamp's minute (`tandem-view-render--utc-re').")

(defun tandem-view-render--time-cached (ts)
  "Return the local time text of TS when its minute is cached, else nil.
The same text `tandem-view-render-time' makes, without its full match:
a minute is cached only after its timestamp matched whole, so the
first 16 characters are known good and only the rest is checked."
  (when (and (stringp ts) (> (length ts) 19))
    ;; The table is good only under the current date (refreshed here).
    (tandem-view-render--today)
    (let ((cache tandem-view-render--minutes))
      (when (eq (car cache) tandem-view-render--today)
        (let ((minute (gethash (substring ts 0 16) (cdr cache))))
          (when (and minute (eql (string-match-p tandem-view-render--utc-tail-re ts 16) 16))
            (if (eq (aref minute (1- (length minute))) ?:)
                (concat minute (substring ts 17 19))
              minute)))))))

(defun tandem-view-render-time (ts)
  "Format the ISO 8601 timestamp TS as local time (HH:MM:SS today, else a date).
Journal timestamps are UTC (\"2026-11-30T04:59:22.551Z\"); anything
else goes through `iso8601-parse'."
  (or (tandem-view-render--time-cached ts)
      (tandem-view-render--time-parsed ts)))

(defun tandem-view-render--time-parsed (ts)
  "Format TS as `tandem-view-render-time' does, matching it whole."
  (condition-case nil
      (let* ((utc (string-match tandem-view-render--utc-re ts))
             (minute (and utc (tandem-view-render--minute ts))))
        (cond ((null minute)
               (let ((time (if utc
                               (encode-time (list (string-to-number (match-string 6 ts))
                                                  (string-to-number (match-string 5 ts))
                                                  (string-to-number (match-string 4 ts))
                                                  (string-to-number (match-string 3 ts))
                                                  (string-to-number (match-string 2 ts))
                                                  (string-to-number (match-string 1 ts))
                                                  nil nil t))
                             (encode-time (iso8601-parse ts)))))
                 (format-time-string (if (equal (format-time-string "%F" time)
                                                (tandem-view-render--today))
                                         "%H:%M:%S" "%F %H:%M")
                                     time)))
              ;; Today: the minute's "HH:MM:" and the seconds as written.
              ((eq (aref minute (1- (length minute))) ?:)
               (concat minute (substring ts 17 19)))
              (t minute)))
    (error (or ts ""))))

(defun tandem-view-render--first-line (text &optional width)
  "Return the first non-blank line of TEXT, cut to WIDTH (default 60)."
  (let* ((line (or (cl-find-if (lambda (l) (not (string-blank-p l)))
                               (split-string (or text "") "\n"))
                   ""))
         (line (string-trim line)))
    (truncate-string-to-width line (or width 60) nil nil "…")))

(defun tandem-view-render--value (value)
  "Return VALUE (a tool input or output from the journal) as readable text."
  (cond ((stringp value) value)
        ((null value) "")
        ((and (consp value) (keywordp (car value)))
         (mapconcat (lambda (pair)
                      (format "%s: %s" (substring (symbol-name (car pair)) 1)
                              (let ((v (cadr pair)))
                                (if (stringp v) v (prin1-to-string v)))))
                    (seq-partition value 2) "\n"))
        (t (prin1-to-string value))))

(defun tandem-view-render--outcome (outcome &optional error)
  "Return a propertized outcome label for OUTCOME and ERROR."
  (pcase outcome
    ("succeeded" (propertize "✔ succeeded" 'font-lock-face 'tandem-view-success))
    ("failed" (propertize (concat "✘ failed" (if error (concat ": " error) ""))
                          'font-lock-face 'tandem-view-error))
    ("aborted" (propertize (concat "⊘ aborted" (if error (concat ": " error) ""))
                           'font-lock-face 'tandem-view-muted))
    (_ (propertize (format "%s" outcome) 'font-lock-face 'tandem-view-muted))))

(provide 'tandem-view-format)
;;; tandem-view-format.el ends here
