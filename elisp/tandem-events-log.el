;;; tandem-events-log.el --- The log of messages to and from the backend  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every message to and from the backend can be read in `*tandem-events*'
;; (`tandem-log-events', on by default).  Logging must cost nothing when
;; nobody reads the log: a message is only kept, redacted and cut short,
;; in a ring of `tandem-events-buffer-lines' entries; it is printed into
;; the buffer when the buffer is shown (in any window, or through
;; `tandem-show-events' / `tandem-events-buffer'), and while it is shown,
;; a few times a second.  Secrets are redacted when the message is kept,
;; so what a `tandem-log-events' nil binding keeps out is never kept.

;;; Code:

(require 'ring)
(require 'tandem-core)

(defcustom tandem-log-events t
  "When non-nil, log every message to and from the backend.
The log is the buffer `*tandem-events*'; it keeps the last
`tandem-events-buffer-lines' lines.  Messages are printed into it only
when it is shown, so an unread log costs almost nothing."
  :type 'boolean
  :group 'tandem)

(defcustom tandem-events-buffer-lines 2000
  "Lines kept in the `*tandem-events*' buffer."
  :type 'integer
  :group 'tandem)

(defconst tandem--secret-keys '(:token :api-key :session-api-key :secret :password)
  "Plist keys whose values never reach the events buffer.")

(defconst tandem--log-string-max 300
  "Characters of a string a kept message holds (the log prints no more).")

(defconst tandem--log-name "*tandem-events*"
  "Name of the events buffer.")

(defvar tandem--log-ring nil
  "Messages not printed yet: a ring of (TIME DIRECTION MESSAGE), redacted.")

(defvar tandem--log-timer nil
  "Timer printing kept messages while the events buffer is shown.")

(defun tandem--redact (value depth)
  "Return VALUE with secrets replaced, looking DEPTH levels down.
Only as deep and as far as the log prints, so logging stays cheap and
what is kept holds no large string: long strings are cut, deeper lists
become `...' (the log's `print-level' would not show them)."
  (cond ((stringp value)
         (if (> (length value) tandem--log-string-max)
             (concat (substring value 0 tandem--log-string-max) "…")
           value))
        ((not (consp value)) value)
        ((<= depth 0) '...)
        (t (let ((out nil) (n 0) (rest value))
             (while (and (consp rest) (< n 24))
               (let ((item (car rest)))
                 (push (tandem--redact item (1- depth)) out)
                 (when (and (memq item tandem--secret-keys) (consp (cdr rest)))
                   (push "***" out)
                   (setq rest (cdr rest))))
               (setq rest (cdr rest) n (1+ n)))
             (nconc (nreverse out) (and (consp rest) '(...)))))))

(defun tandem--log (direction message)
  "Keep MESSAGE going in DIRECTION (`->' or `<-') for `*tandem-events*'."
  (when tandem-log-events
    (unless (and tandem--log-ring (= (ring-size tandem--log-ring) tandem-events-buffer-lines))
      (setq tandem--log-ring (make-ring (max 1 tandem-events-buffer-lines))))
    (ring-insert tandem--log-ring (list (float-time) direction (tandem--redact message 5)))
    (let ((buffer (get-buffer tandem--log-name)))
      (if (not buffer)
          (tandem--log-buffer-create)
        (when (and (not tandem--log-timer) (get-buffer-window buffer t))
          (setq tandem--log-timer (run-at-time 0.2 nil #'tandem--log-print)))))))

(defun tandem--log-buffer-create ()
  "Create the events buffer, printing what is kept whenever it is shown."
  (with-current-buffer (get-buffer-create tandem--log-name)
    (setq buffer-undo-list t buffer-read-only t)
    (add-hook 'window-buffer-change-functions
              (lambda (_window) (tandem--log-print)) nil t)
    (current-buffer)))

(defun tandem--log-line (entry)
  "Return the log line of ENTRY, a kept (TIME DIRECTION MESSAGE)."
  (let ((text (let ((print-length 12) (print-level 4)) (prin1-to-string (nth 2 entry)))))
    (format "%s %s %s\n" (format-time-string "%T.%3N" (nth 0 entry)) (nth 1 entry)
            (if (> (length text) 300) (concat (substring text 0 300) "…") text))))

(defun tandem--log-print ()
  "Print the kept messages into the events buffer, oldest first."
  (setq tandem--log-timer nil)
  (let ((buffer (or (get-buffer tandem--log-name) (tandem--log-buffer-create))))
    (when (and tandem--log-ring (not (ring-empty-p tandem--log-ring)))
      (let ((entries (nreverse (ring-elements tandem--log-ring))))
        (setq tandem--log-ring (make-ring (ring-size tandem--log-ring)))
        (with-current-buffer buffer
          (let ((inhibit-read-only t))
            (save-excursion
              (goto-char (point-max))
              (insert (mapconcat #'tandem--log-line entries ""))
              (when (> (count-lines (point-min) (point-max)) tandem-events-buffer-lines)
                (goto-char (point-max))
                (forward-line (- tandem-events-buffer-lines))
                (delete-region (point-min) (point))))))))
    buffer))

(defun tandem-events-buffer ()
  "Return the `*tandem-events*' buffer with every kept message printed."
  (tandem--log-print))

(defun tandem-show-events ()
  "Show the log of messages to and from the backend (`*tandem-events*')."
  (interactive)
  (pop-to-buffer (tandem-events-buffer)))

(provide 'tandem-events-log)
;;; tandem-events-log.el ends here
