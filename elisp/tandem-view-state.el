;;; tandem-view-state.el --- The state of a tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Everything a session buffer knows, in one `tandem-view-state' held by
;; the buffer-local `tandem-view--state' (made by `tandem-view-mode'), the
;; registry of session buffers, and the view's settings.  Every view file
;; requires this one; none declares the state again.
;;
;; The state's slots, in groups: what the buffer shows (session, info,
;; connection); the model (blocks, by-turn, newest, first-seq, last-seq,
;; seen-seq, folds); what the next frame applies (dirty, live-dirty,
;; doomed, progress-dirty, composer-dirty, refresh-pending, timer); the
;; turn in flight (running, clock, lost); fetching (refreshing, queued,
;; catching-up); and a frame counter for tests and benchmarks.

;;; Code:

(require 'cl-lib)
(require 'tandem-core)
(require 'tandem-client)

(defcustom tandem-view-frame-interval 0.05
  "Seconds between two applications of streamed events (one timer).
Each frame costs a redisplay of the window, whatever it brings: 20 a
second keep a stream smooth at a fraction of the cost of 30."
  :type 'number
  :group 'tandem-view)

(defcustom tandem-view-initial-entries 160
  "Journal entries fetched when a session buffer opens (the newest ones)."
  :type 'integer
  :group 'tandem-view)

(defcustom tandem-view-page-entries 400
  "Journal entries fetched by one `tandem-view-load-older'."
  :type 'integer
  :group 'tandem-view)

(cl-defstruct (tandem-view-state (:constructor tandem-view-state-create) (:copier nil))
  "What one session buffer knows; nothing durable lives only here."
  (session nil :documentation "Session id shown in this buffer.")
  (info nil :documentation "Session info plist from the backend.")
  (connection nil :documentation "The `tandem-connection' whose events this buffer applies.
Set by each refresh; a buffer whose connection died follows the next
backend that publishes its session's events.")
  (blocks nil :documentation "Rendered blocks (`tandem-view-block'), oldest first.")
  (by-turn (make-hash-table) :documentation "Hash: turn number -> its live block.")
  (newest nil :documentation "Cache of `tandem-view--newest-turn-block' (nil: compute it again).")
  (first-seq nil :documentation "Seq of the oldest loaded entry (nil: none).")
  (last-seq 0 :documentation "Seq of the newest applied entry.")
  (seen-seq 0 :documentation "Highest entry seq announced by an event.")
  (folds (make-hash-table :test #'equal)
         :documentation "Hash: (session turn part) -> `folded' or `open'.")
  (tail nil :documentation "Marker: end of the transcript, start of the progress row.")
  (dirty nil :documentation "Blocks to re-render at the next frame.")
  (live-dirty nil :documentation "Blocks with streamed text to append at the next frame.")
  (doomed nil :documentation "Blocks whose text goes at the next frame.")
  (progress-dirty nil :documentation "Non-nil when the progress row must be redrawn.")
  (composer-dirty nil :documentation "Non-nil when the composer prefix must be redrawn.")
  (refresh-pending nil
                   :documentation "Non-nil when the next frame re-renders from the journal.
A compaction arrived: it replaces turns above it.")
  (timer nil :documentation "Non-nil while the next frame will apply this buffer.")
  (running nil :documentation "The turn in flight, or nil.
A plist (:turn N :since TIME :waiting TITLE).")
  (clock nil :documentation "Repeating one-second timer while a turn runs.")
  (lost nil :documentation "Turn that was running when the backend died, or nil.
The progress row says so until the next refresh.")
  (refreshing nil :documentation "Non-nil while `tandem-view-refresh' runs.
Events wait in the queued slot meanwhile.")
  (queued nil :documentation "Events (and `gap' markers) that came during a refresh.
Newest first.")
  (catching-up nil :documentation "Non-nil while missing entries are fetched.")
  (usage nil :documentation "Plist (:totals T :context C) for the header line.
T is the reply of `sessions/usage', C of `sessions/compaction-status'.")
  (flush-count 0 :documentation "Number of frames applied in this buffer.
For tests and benchmarks."))

(defvar-local tandem-view--state nil
  "This session buffer's `tandem-view-state' (nil outside session buffers).")

(defvar tandem-view--buffers (make-hash-table :test #'equal)
  "Session id -> its live session buffer.")

(defun tandem-view-buffer (session)
  "Return the live buffer of SESSION (an id), or nil."
  (let ((b (gethash session tandem-view--buffers)))
    (and (buffer-live-p b) b)))

(defun tandem-view-session-here ()
  "Return the session id of the current buffer when it is a session buffer."
  (and tandem-view--state (tandem-view-state-session tandem-view--state)))

(defun tandem-view-info-here ()
  "Return the session info plist of the current buffer when it is a session buffer."
  (and tandem-view--state (tandem-view-state-info tandem-view--state)))

(defun tandem-view--connection ()
  "Return the live connection this session buffer follows, or nil."
  (let ((conn (tandem-view-state-connection tandem-view--state)))
    (and conn (tandem-connection-live-p conn) conn)))

(defun tandem-view--root ()
  "Return the directory this session buffer's session works in."
  (let ((info (tandem-view-state-info tandem-view--state)))
    (or (plist-get info :active-cwd) (plist-get info :cwd) default-directory)))

(provide 'tandem-view-state)
;;; tandem-view-state.el ends here
