;;; tandem-view-gc.el --- Fewer garbage collections while an answer streams  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A streamed answer allocates steadily (the events read from the
;; backend, the fontifier's work), ~12 MB for a 200 KB answer.  At the
;; default `gc-cons-threshold' that is a dozen collections during the
;; stream, each one marking the whole heap (25-40 ms in an `emacs -nw'
;; with the package loaded): a key typed meanwhile waits for it, and
;; those waits are the input latency of a streaming session
;; (docs/performance.md, "Streaming into a real terminal").  The Emacs
;; manual's advice for "a program that creates lots of Lisp data" is a
;; larger threshold; this does that for the stream only, as gcmh does
;; when Emacs is busy:
;; while streamed text keeps arriving the threshold is at least
;; `tandem-view-stream-gc-cons-threshold'; the user's own value comes
;; back when the turn ends, or when no text has arrived for a second,
;; and the next allocation then collects once.  A user value that is
;; already larger is never lowered, and one the user sets while held is
;; kept.

;;; Code:

(require 'cl-lib)
(require 'tandem-core)

(defcustom tandem-view-stream-gc-cons-threshold (* 32 1024 1024)
  "Bytes Emacs may allocate between garbage collections while an answer streams.
While streamed text arrives in a session buffer, `gc-cons-threshold'
is raised to this value (never lowered), and your own value comes back
when the turn ends or no text has come for a second; the next
allocation then collects once.  That keeps collections, and the pauses
they cause, out of the stream.  The memory it may take meanwhile is at
most this value.  nil leaves `gc-cons-threshold' alone."
  :type '(choice (const :tag "Leave gc-cons-threshold alone" nil)
                 (integer :tag "Bytes"))
  :group 'tandem-view)

(defvar tandem-view-gc--saved nil
  "The `gc-cons-threshold' to restore while collections are held, or nil.")

(defvar tandem-view-gc--held nil
  "The `gc-cons-threshold' this package set while held.
Compared at release: a value that differs was set by someone else
\(see `tandem-view-gc-release').")

(defvar tandem-view-gc--last 0.0
  "The `float-time' of the last streamed text, while held.")

(defvar tandem-view-gc--timer nil
  "The timer that releases the hold once no text has arrived for a second.")

(defconst tandem-view-gc--quiet 1.0
  "Seconds without streamed text after which the hold is released.")

(defun tandem-view-gc-hold ()
  "Note that streamed text arrived: hold collections off, if not already.
Does nothing when `tandem-view-stream-gc-cons-threshold' is nil or not
larger than the current `gc-cons-threshold'."
  (setq tandem-view-gc--last (float-time))
  (let ((limit tandem-view-stream-gc-cons-threshold))
    (when (and (null tandem-view-gc--saved) (integerp limit) (> limit gc-cons-threshold))
      (setq tandem-view-gc--saved gc-cons-threshold
            tandem-view-gc--held limit
            gc-cons-threshold limit
            tandem-view-gc--timer (run-at-time tandem-view-gc--quiet tandem-view-gc--quiet
                                               #'tandem-view-gc--check)))))

(defvar tandem-view-gc--tries 0
  "Releases tried while `gc-cons-threshold' was not the value set here.")

(defconst tandem-view-gc--max-tries 10
  "Quiet checks after which a value set by someone else is left for good.")

(defun tandem-view-gc--check ()
  "Release the hold when no streamed text has arrived for a while."
  (when (>= (- (float-time) tandem-view-gc--last) tandem-view-gc--quiet)
    (tandem-view-gc-release)))

(defun tandem-view-gc-release ()
  "Give `gc-cons-threshold' its own value back, if this package set it.
When the value is not the one set here, someone else set it: a binding
of theirs around this call (once it ends the value set here is back,
and the next quiet check gives the user's value back), or a value they
chose, which is left as it is after `tandem-view-gc--max-tries' checks."
  (when tandem-view-gc--saved
    (cond ((eql gc-cons-threshold tandem-view-gc--held)
           (setq gc-cons-threshold tandem-view-gc--saved)
           (tandem-view-gc--drop))
          ((>= (cl-incf tandem-view-gc--tries) tandem-view-gc--max-tries)
           (tandem-view-gc--drop)))))

(defun tandem-view-gc--drop ()
  "Forget the hold: nothing to give back any more."
  (when tandem-view-gc--timer
    (cancel-timer tandem-view-gc--timer))
  (setq tandem-view-gc--timer nil
        tandem-view-gc--saved nil
        tandem-view-gc--held nil
        tandem-view-gc--tries 0))

(provide 'tandem-view-gc)
;;; tandem-view-gc.el ends here
