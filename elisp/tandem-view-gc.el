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
;;
;; The hold is one for every session buffer, and it scales with the
;; streams: each session streaming at once adds its own
;; `tandem-view-stream-gc-cons-threshold' (four streams allocate ~40 MB,
;; more than one stream's 32 MB, and a collection then marks four
;; buffers' text properties: 100-150 ms).  A turn's end takes its own
;; stream off; the user's value comes back when the last one ends,
;; once its turn's end has settled (`tandem-view-gc--after').

;;; Code:

(require 'cl-lib)
(require 'tandem-core)

(defcustom tandem-view-stream-gc-cons-threshold (* 32 1024 1024)
  "Bytes Emacs may allocate between garbage collections, per answer streaming.
While streamed text arrives in session buffers, `gc-cons-threshold'
is raised to this value times the number of sessions streaming at
once (at most `tandem-view-gc-max-streams'; never lowered), and your
own value comes back when the last of those turns ends or no text has
come for a second; the next allocation then collects once.  That keeps
collections, and the pauses they cause, out of the stream.  The memory
it may take meanwhile is at most this value per session streaming.
nil leaves `gc-cons-threshold' alone."
  :type '(choice (const :tag "Leave gc-cons-threshold alone" nil)
                 (integer :tag "Bytes"))
  :group 'tandem-view)

(defcustom tandem-view-gc-max-streams 8
  "Most streams `tandem-view-stream-gc-cons-threshold' is counted for at once."
  :type 'natnum
  :group 'tandem-view)

(defvar tandem-view-gc--saved nil
  "The `gc-cons-threshold' to restore while collections are held, or nil.")

(defvar tandem-view-gc--held nil
  "The `gc-cons-threshold' this package set while held.
Compared at release: a value that differs was set by someone else
\(see `tandem-view-gc-release').")

(defvar tandem-view-gc--last 0.0
  "The `float-time' of the last streamed text, while held.")

(defvar tandem-view-gc--streams nil
  "The streams holding collections off: an alist (KEY . LAST-TEXT-TIME).")

(defvar tandem-view-gc--timer nil
  "The timer that releases the hold once no text has arrived for a second.")

(defconst tandem-view-gc--quiet 1.0
  "Seconds without streamed text after which the hold is released.")

(defun tandem-view-gc--limit ()
  "The threshold the streams held now call for, or nil for none."
  (let ((limit tandem-view-stream-gc-cons-threshold)
        ;; A value that is not a count (set by hand) counts one stream.
        (most (if (natnump tandem-view-gc-max-streams) (max 1 tandem-view-gc-max-streams) 1)))
    (and (integerp limit)
         (* limit (max 1 (min (length tandem-view-gc--streams) most))))))

(defconst tandem-view-gc--after 0.2
  "Seconds after the last stream's end before the value is given back.
Four frames (`tandem-view-frame-interval'): the turns' ends settle first.")

(defvar tandem-view-gc--pending nil
  "The timer giving the value back after the last stream's end, or nil.")

(defun tandem-view-gc-hold (&optional key)
  "Note that streamed text arrived for KEY: hold collections off, if not already.
KEY names the stream (a session buffer; default t); each stream held
at once raises the hold by `tandem-view-stream-gc-cons-threshold'.
Does nothing when that option is nil or the hold would not be larger
than the current `gc-cons-threshold'."
  (let* ((now (float-time))
         (key (or key t))
         (cell (assq key tandem-view-gc--streams)))
    (setq tandem-view-gc--last now)
    (if cell
        (setcdr cell now)
      (push (cons key now) tandem-view-gc--streams))
    (when tandem-view-gc--pending       ; streaming again: keep the hold
      (cancel-timer tandem-view-gc--pending)
      (setq tandem-view-gc--pending nil))
    (let ((limit (tandem-view-gc--limit)))
      (when (and limit (> limit gc-cons-threshold))
        (cond ((null tandem-view-gc--saved)
               (setq tandem-view-gc--saved gc-cons-threshold
                     tandem-view-gc--held limit
                     gc-cons-threshold limit
                     tandem-view-gc--timer (run-at-time tandem-view-gc--quiet tandem-view-gc--quiet
                                                        #'tandem-view-gc--check)))
              ;; One more stream: raise the hold, unless someone else set the value.
              ((eql gc-cons-threshold tandem-view-gc--held)
               (setq tandem-view-gc--held limit
                     gc-cons-threshold limit)))))))

(defvar tandem-view-gc--tries 0
  "Releases tried while `gc-cons-threshold' was not the value set here.")

(defconst tandem-view-gc--max-tries 10
  "Quiet checks after which a value set by someone else is left for good.")

(defun tandem-view-gc--check ()
  "Release the hold when no streamed text has arrived for a while.
A stream quiet that long (its turn's end never came) is forgotten."
  (let ((now (float-time)))
    (if (>= (- now tandem-view-gc--last) tandem-view-gc--quiet)
        (tandem-view-gc-release)
      ;; Not lowered meanwhile: that would collect while the others stream.
      (setq tandem-view-gc--streams
            (cl-remove-if (lambda (s) (>= (- now (cdr s)) tandem-view-gc--quiet))
                          tandem-view-gc--streams)))))

(defun tandem-view-gc-release (&optional key)
  "Take KEY's stream off the hold; when none is left, give the value back.
Without KEY every stream is taken off.  Giving back: `gc-cons-threshold'
gets its own value back, if this package set it.
When the value is not the one set here, someone else set it: a binding
of theirs around this call (once it ends the value set here is back,
and the next quiet check gives the user's value back), or a value they
chose, which is left as it is after `tandem-view-gc--max-tries' checks."
  (setq tandem-view-gc--streams
        (and key (cl-remove key tandem-view-gc--streams :key #'car)))
  (cond
   ((not (and tandem-view-gc--saved (null tandem-view-gc--streams))))
   ;; A turn's end: given back once its settling frames are drawn, so the
   ;; collection that follows does not add to theirs (one pause, not two).
   (key
    (unless tandem-view-gc--pending
      (setq tandem-view-gc--pending
            (run-at-time tandem-view-gc--after nil #'tandem-view-gc--give-back))))
   (t (tandem-view-gc--give-back))))

(defun tandem-view-gc--give-back ()
  "Give the value back now, unless a stream began meanwhile."
  (when tandem-view-gc--pending
    (cancel-timer tandem-view-gc--pending)
    (setq tandem-view-gc--pending nil))
  (when (and tandem-view-gc--saved (null tandem-view-gc--streams))
    (cond ((eql gc-cons-threshold tandem-view-gc--held)
           (setq gc-cons-threshold tandem-view-gc--saved)
           (tandem-view-gc--drop))
          ((>= (cl-incf tandem-view-gc--tries) tandem-view-gc--max-tries)
           (tandem-view-gc--drop)))))

(defun tandem-view-gc--drop ()
  "Forget the hold: nothing to give back any more."
  (when tandem-view-gc--timer
    (cancel-timer tandem-view-gc--timer))
  (when tandem-view-gc--pending
    (cancel-timer tandem-view-gc--pending))
  (setq tandem-view-gc--timer nil
        tandem-view-gc--pending nil
        tandem-view-gc--streams nil
        tandem-view-gc--saved nil
        tandem-view-gc--held nil
        tandem-view-gc--tries 0))

(provide 'tandem-view-gc)
;;; tandem-view-gc.el ends here
