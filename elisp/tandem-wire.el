;;; tandem-wire.el --- EPC frames and error replies of the tandem backend  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; What goes over the wire between Emacs and the backend, with no
;; connection in sight: a message printed into one EPC frame (six
;; hexadecimal digits of byte length, then the S-expression in UTF-8),
;; and an error reply turned into the Emacs error callers catch.  The
;; connection that sends and receives frames is tandem-client.el's.

;;; Code:

(require 'subr-x)
(require 'tandem-errors)

;;;; Errors

;; Each error code (a string from the backend, e.g. "invalid") has its own
;; error condition `tandem-CODE' whose parent is `tandem-error', defined
;; by tandem-errors.el from the backend's list, so that callers can catch
;; one kind; the data stays (MESSAGE), and the message Emacs shows is just
;; the backend's sentence.  A code this Emacs does not know (a newer
;; backend) signals `tandem-error' itself, with data (MESSAGE CODE).
;; Messages name no keys: an error whose way out is a command carries it
;; in `:command', and its key is shown here, from this Emacs's keymaps.

(defun tandem--error-symbol (code)
  "Return the error condition of CODE, or `tandem-error' for an unknown code."
  (let ((sym (and (stringp code) (intern-soft (concat "tandem-" code)))))
    (if (and sym (get sym 'tandem-code)) sym 'tandem-error)))

(defun tandem--signal (code message &optional _data _command)
  "Signal the error condition of CODE with the readable MESSAGE.
The key of the command an error names is in MESSAGE already."
  (let ((sym (tandem--error-symbol code)) (text (format "%s" message)))
    (signal sym (if (and (eq sym 'tandem-error) code) (list text code) (list text)))))

(defun tandem-error-code (err)
  "Return the code string of ERR, a caught `tandem-error' (e.g. \"invalid\").
A code this Emacs does not know is the second element of ERR's data."
  (or (get (car err) 'tandem-code) (nth 2 err)))

(defun tandem-error-message (err)
  "Return the readable message of ERR, a caught `tandem-error'."
  (cadr err))

(defun tandem-error-hint (command)
  "Return how to run COMMAND, a command or its name, for an error message.
It is COMMAND's key in the current buffer, by `substitute-command-keys',
or its `execute-extended-command' form when it has none.  When COMMAND
has no key but its `tandem-hint-command' property names a command that
has one (a key that does COMMAND's job in this buffer), that key is shown."
  (let* ((command (if (symbolp command) command (intern command)))
         (via (get command 'tandem-hint-command))
         (shown (if (and via (not (where-is-internal command nil t))
                         (where-is-internal via nil t))
                    via
                  command)))
    (substitute-command-keys (format "\\[%s]" shown))))

(defun tandem--error-from-reply (kind err)
  "Turn an error reply ERR of KIND into (CODE MESSAGE DATA COMMAND).
When the reply names a COMMAND, its key follows MESSAGE in parentheses."
  (cond ((and (listp err) (plist-get err :message))
         (let ((command (plist-get err :command)))
           (list (plist-get err :code)
                 (if command
                     (format "%s (%s)" (plist-get err :message) (tandem-error-hint command))
                   (plist-get err :message))
                 (plist-get err :data)
                 command)))
        ((eq kind 'epc-error) (list "protocol" (format "Protocol error: %s" err) nil))
        (t (list "remote" (format "%s" err) nil))))

;;;; Encoding

(defun tandem--plain (value)
  "Return VALUE with text properties removed from every string in it.
Strings without properties are returned as they are (no copy)."
  (cond ((stringp value)
         (if (next-property-change 0 value) (substring-no-properties value)
           (if (text-properties-at 0 value) (substring-no-properties value) value)))
        ((consp value) (cons (tandem--plain (car value)) (tandem--plain (cdr value))))
        ((vectorp value) (vconcat (mapcar #'tandem--plain value)))
        (t value)))

(defun tandem--insert-value (value)
  "Insert VALUE at point, printed for the backend's reader.
Strings are escaped with `string-replace' and inserted, never copied into
intermediate strings: `prin1' and `concat' on large text cost
milliseconds per 100 KB here.  Our reader takes other characters raw."
  (cond ((stringp value)
         (insert "\"" (string-replace "\"" "\\\"" (string-replace "\\" "\\\\" value)) "\""))
        ((and (consp value) (proper-list-p value))
         (insert "(")
         (tandem--insert-value (car value))
         (dolist (item (cdr value))
           (insert " ")
           (tandem--insert-value item))
         (insert ")"))
        ((vectorp value)
         (insert "[")
         (dotimes (i (length value))
           (unless (zerop i) (insert " "))
           (tandem--insert-value (aref value i)))
         (insert "]"))
        (t (let ((print-escape-newlines nil) (print-length nil) (print-level nil)
                 (print-circle nil) (float-output-format nil))
             (prin1 value (current-buffer))))))

(defun tandem--frame-into-buffer (message)
  "Make the current buffer hold MESSAGE as one EPC frame, in bytes."
  (erase-buffer)
  (set-buffer-multibyte t)
  (tandem--insert-value message)
  ;; Encoding a region copies it into a string first: garbage the size of
  ;; the frame.  ASCII text (as many bytes as characters) is its own UTF-8.
  (unless (= (position-bytes (point-max)) (point-max))
    (encode-coding-region (point-min) (point-max) 'utf-8))
  (set-buffer-multibyte nil)
  (let ((length (buffer-size)))
    (when (> length #xffffff)
      (tandem--signal "too-large" (format "Request of %d bytes is too large for one frame"
                                          length)))
    (goto-char (point-min))
    (insert (format "%06x" length))))

(defun tandem--frame (message)
  "Return MESSAGE as an EPC frame (a unibyte string)."
  (with-temp-buffer
    (tandem--frame-into-buffer message)
    (buffer-string)))

(provide 'tandem-wire)
;;; tandem-wire.el ends here
