;;; tandem-view-live.el --- Rendering a session buffer from the journal and its events  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The session buffer as a projection of the journal: the full
;; rendering (`tandem-view-refresh', g), paging of older turns
;; (`tandem-view-load-older'), and backend events, which arrive through
;; `tandem-event-functions' and go to the buffer of their session when
;; that buffer follows the connection they arrived on.  Events that come
;; during a refresh wait for it; a gap in seq fetches the missing entries.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-remote)
(require 'tandem-view-state)
(require 'tandem-view-usage)
(require 'tandem-view-render)
(require 'tandem-view-compaction)
(require 'tandem-view-model)
(require 'tandem-view-draw)
(require 'tandem-view-frame)
(require 'tandem-view-fill)
(require 'tandem-view-gc)
(require 'tandem-view-queue)
(require 'tandem-notify)

;;;; Full rendering

(defconst tandem-view--fetch-max 100000
  "Most entries one `sessions/history' call returns.")

(defun tandem-view--fetch (params)
  "Call `sessions/history' for this buffer's session with PARAMS.
Return the reply, its :entries made plists (`tandem-view-history-entries')."
  (let ((reply (tandem-request "sessions/history"
                               (append (list :session (tandem-view-state-session tandem-view--state))
                                       params))))
    (plist-put reply :entries (tandem-view-history-entries (plist-get reply :entries)))))

(defun tandem-view--trim-partial (entries)
  "Drop ENTRIES (oldest first) before the first whole turn; return the rest.
When ENTRIES start at seq 1 nothing is dropped."
  (if (or (null entries) (<= (plist-get (car entries) :seq) 1))
      entries
    (let ((tail entries))
      (while (and tail (plist-get (car tail) :turn)
                  (not (member (plist-get (car tail) :type) '("turn_start" "directive_open"))))
        (setq tail (cdr tail)))
      tail)))

(defun tandem-view--fetch-before (before limit)
  "Return entries (oldest first) before seq BEFORE, starting at a turn boundary.
Fetch LIMIT entries, more when one turn alone is longer than that."
  (let ((st tandem-view--state) (limit limit) (result nil) (done nil))
    (while (not done)
      (let* ((reply (tandem-view--fetch (list :before before :limit limit)))
             (entries (plist-get reply :entries))
             (kept (tandem-view--trim-partial entries)))
        (setf (tandem-view-state-last-seq st)
              (max (tandem-view-state-last-seq st) (or (plist-get reply :last-seq) 0)))
        (if (or kept (null entries) (>= limit tandem-view--fetch-max))
            (setq result (or kept entries) done t)
          (setq limit (min tandem-view--fetch-max (* 4 limit))))))
    result))

(defun tandem-view-refresh ()
  "Re-render the whole buffer from the backend's journal.
The composer's draft, scope and point are kept; fold choices too.
Events arriving meanwhile are applied after it; a refresh asked for
during one (from a timer) is left to the running one."
  (interactive nil tandem-view-mode)
  (unless (derived-mode-p 'tandem-view-mode) (user-error "Not a tandem session buffer"))
  (let ((st tandem-view--state))
    (unless (tandem-view-state-refreshing st)
      (setf (tandem-view-state-refreshing st) t)
      (unwind-protect
          (progn
            (tandem-view--refresh-now)
            ;; The remote target may have changed elsewhere: ask again.
            (condition-case err
                (tandem-remote-target (tandem-view-state-session st) t)
              (tandem-error (message "tandem: could not read the remote target: %s"
                                    (tandem-error-message err)))))
        (setf (tandem-view-state-refreshing st) nil)
        (tandem-view-usage-update)
        (tandem-view-queue-fetch)
        (let ((events (nreverse (tandem-view-state-queued st))))
          (setf (tandem-view-state-queued st) nil)
          ;; Never drawn (a failed first refresh): nothing to apply them to.
          (when (markerp (tandem-view-state-tail st)) (tandem-view--replay events)))))))

(defun tandem-view--refresh-now ()
  "Fetch the newest entries and render the buffer from them.
The buffer follows the connection it fetched from from now on."
  (let* ((st tandem-view--state)
         (conn (tandem-ensure-connection))
         (entries (tandem-view--fetch-before most-positive-fixnum tandem-view-initial-entries))
         (running (tandem-view-state-running st))
         (live (and running (gethash (plist-get running :turn) (tandem-view-state-by-turn st))))
         (inhibit-read-only t))
    (setf (tandem-view-state-connection st) conn
          ;; The journal answered: whatever the backend lost, it says what is true.
          (tandem-view-state-lost st) nil)
    (if (markerp tandem-composer--draft-start)
        (tandem-composer-outside-draft (tandem-view--render-all entries live))
      (let ((buffer-undo-list t)) (tandem-view--render-all entries live)))))

(defun tandem-view--render-all (entries live)
  "Replace the transcript with blocks for ENTRIES; LIVE is the old running block."
  (let* ((st tandem-view--state)
         (modified (buffer-modified-p))
         (had-composer (markerp tandem-composer--start))
         (old-blocks (tandem-view-state-blocks st))
         (draft-point (and had-composer (>= (point) tandem-composer--draft-start)
                           (- (point) tandem-composer--draft-start)))
         (inhibit-read-only t))
    (setf (tandem-view-state-first-seq st) (and entries (plist-get (car entries) :seq))
          (tandem-view-state-last-seq st) (max (tandem-view-state-last-seq st)
                                               (or (plist-get (car (last entries)) :seq) 0))
          (tandem-view-state-blocks st) (tandem-view--build entries)
          (tandem-view-state-newest st) nil
          (tandem-view-state-dirty st) nil
          (tandem-view-state-live-dirty st) nil)
    ;; Blocks a rewind entry doomed before this refresh are gone with the
    ;; old text: left for the next frame, their markers (collapsed to the
    ;; buffer's start) would delete the first blocks of the new text.
    (dolist (b (tandem-view-state-doomed st)) (tandem-view--release b))
    (setf (tandem-view-state-doomed st) nil)
    (tandem-view--index)
    (when live
      (let ((b (gethash (tandem-view-block-turn live) (tandem-view-state-by-turn st))))
        (when b
          (setf (tandem-view-block-text-rope b) (tandem-view-block-text-rope live)
                (tandem-view-block-reasoning-rope b) (tandem-view-block-reasoning-rope live)
                (tandem-view-block-meta b) (tandem-view-block-meta live)
                (tandem-view-block-interactions b) (tandem-view-block-interactions live)))))
    (unless (tandem-view-state-running st) (tandem-view--adopt-running))
    (dolist (b old-blocks) (tandem-view--release b))
    (tandem-view-fill-forget)
    (if had-composer
        (delete-region (point-min) tandem-composer--start)
      (erase-buffer))
    (goto-char (point-min))
    (tandem-view--older-row)
    (setf (tandem-view-state-tail st) (copy-marker (point)))
    (tandem-view--insert-progress)
    (if had-composer
        (set-marker tandem-composer--start (point))
      (tandem-composer-setup))
    (tandem-view--insert-blocks (tandem-view-state-blocks st) (tandem-view-state-tail st))
    (tandem-composer-refresh)
    (restore-buffer-modified-p modified)
    (setq tandem-composer-history (tandem-view--chat-history))
    (goto-char (if draft-point (+ tandem-composer--draft-start draft-point) (point-max)))
    (dolist (w (get-buffer-window-list (current-buffer) nil t))
      (when (or draft-point (not had-composer)) (set-window-point w (point))))))

(defun tandem-view--adopt-running ()
  "Mark the newest turn as running when the journal has not ended it."
  (let ((b (tandem-view--newest-turn-block)))
    (when (and b (not (tandem-view-block-end-entry b)))
      (let ((status (condition-case nil
                        (tandem-request "turns/status"
                                        (list :session (tandem-view-state-session tandem-view--state)
                                              :turn (tandem-view-block-turn b))
                                        5)
                      (tandem-error nil))))
        (when (equal (plist-get status :state) "running")
          (tandem-view--set-running (tandem-view-block-turn b)))))))

(defun tandem-view--chat-history ()
  "Return the chat request texts of the loaded history, newest first."
  (let ((out nil))
    (dolist (b (tandem-view-state-blocks tandem-view--state))
      (unless (tandem-view-block-directive b)
        (let ((u (tandem-view-block-find b "user")))
          (when u (push (plist-get u :text) out)))))
    out))

;;;; Older history

(defconst tandem-view--bulk-gc-threshold (* 512 1024 1024)
  "`gc-cons-threshold' while the whole history is loaded (then one collection).
A 5,000-turn load stays below it; above it, collections resume as usual.")

(defun tandem-view-load-older (&optional all)
  "Load one more page of older history, or with ALL (prefix argument) all of it."
  (interactive "P" tandem-view-mode)
  (let* ((st tandem-view--state)
         (first-seq (tandem-view-state-first-seq st)))
    (unless (and first-seq (> first-seq 1))
      (user-error "The session's first turn is already shown"))
    (let* (;; The whole history allocates tens of MB (the reply, its plists,
           ;; thousands of blocks) while the heap grows to ~30 MB: each
           ;; collection on the way marks all of it.  Collect none until
           ;; the load is done, then once (below), for this call only.
           (gc-cons-threshold (if all (max gc-cons-threshold tandem-view--bulk-gc-threshold)
                                gc-cons-threshold))
           (entries (tandem-view--fetch-before first-seq (if all tandem-view--fetch-max
                                                           tandem-view-page-entries))))
      (while (and all entries (> (plist-get (car entries) :seq) 1))
        (setq entries (append (tandem-view--fetch-before (plist-get (car entries) :seq)
                                                         tandem-view--fetch-max)
                              entries)))
      (when entries
        (let* ((shown (mapcar (lambda (b) (car (tandem-view-block-entries b)))
                              (tandem-view-state-blocks st)))
               (cancelled (tandem-view-cancelled-rewinds shown))
               (later-rewinds
                (cl-loop for e in shown
                         when (and (equal (plist-get e :type) "rewind")
                                   (not (memq (plist-get e :seq) cancelled)))
                         collect (plist-get e :before-turn)))
               (blocks (cl-remove-if
                        (lambda (b) (and (tandem-view-block-turn b)
                                         (cl-some (lambda (r) (>= (tandem-view-block-turn b) r))
                                                  later-rewinds)))
                        (tandem-view--build entries (tandem-view-compaction-entries
                                                     (tandem-view-state-blocks st))))))
          (tandem-view--keeping-place
            (setf (tandem-view-state-first-seq st) (plist-get (car entries) :seq))
            (let ((first (car (tandem-view-state-blocks st)))
                  ;; A long load draws its newest few screens now, the rest
                  ;; on idle or when needed (tandem-view-fill.el).
                  (tandem-view--undrawn (tandem-view-fill-choose blocks)))
              (tandem-view--insert-blocks
               blocks (if first (tandem-view-block-start first) (tandem-view-state-tail st)) t)
              (when tandem-view--undrawn (tandem-view-fill-schedule blocks)))
            (tandem-view--place-rows (append blocks (tandem-view-state-blocks st)))
            (tandem-view--redraw-older-row))
          (tandem-view--index)
          ;; The one collection deferred above, paid here, inside the
          ;; command: left to the next command it would cost the same.
          (when all (garbage-collect))
          (length blocks))))))

(defun tandem-view--place-rows (blocks)
  "Make BLOCKS, all drawn, the model, moving compaction rows where they belong.
A row whose kept turns just arrived with an older page moves before them."
  (let ((arranged (tandem-view-compaction-arrange blocks)))
    (dolist (row (tandem-view-compaction-entries arranged))
      (let* ((block (cl-find row arranged :key #'tandem-view-compaction-entry))
             (next (cadr (memq block arranged))))
        (unless (or (null next) (eq next (cadr (memq block blocks))))
          (delete-region (tandem-view-block-start block) (tandem-view--block-end block))
          (tandem-view--insert-before (tandem-view-block-start next)
                                      (lambda () (tandem-view--insert-block block))))))
    (setf (tandem-view-state-blocks tandem-view--state) arranged
          (tandem-view-state-newest tandem-view--state) nil)))

;;;; Events

(defun tandem-view--buffer-for (conn session)
  "Return the buffer of SESSION when it follows CONN, else nil.
A buffer follows the connection it last fetched the journal from; once
that connection is gone (the backend stopped), it follows CONN, the
first backend to publish events of its session."
  (let ((buffer (tandem-view-buffer session)))
    (when buffer
      (with-current-buffer buffer
        (let ((mine (tandem-view-state-connection tandem-view--state)))
          (cond ((or (null conn) (eq mine conn)) buffer)
                ((not (tandem-view--connection))
                 (setf (tandem-view-state-connection tandem-view--state) conn)
                 buffer)))))))

(defun tandem-view--event-connection ()
  "Return the connection the events being handled arrived on.
That is `tandem-event-connection' while the client runs the event
hooks, and the current connection when other code runs them."
  (or tandem-event-connection tandem--connection))

(defun tandem-view--on-event (event)
  "Route EVENT from the backend to the buffer of its session.
Only a buffer that follows the connection EVENT arrived on takes it.
During a refresh it waits in the buffer's queue (see `tandem-view--replay')."
  (let ((buffer (tandem-view--buffer-for (tandem-view--event-connection)
                                         (plist-get event :session))))
    (when buffer
      (with-current-buffer buffer
        (if (tandem-view-state-refreshing tandem-view--state)
            (push event (tandem-view-state-queued tandem-view--state))
          (tandem-view-handle-event event))))))

(defun tandem-view--on-gap (session _expected _arrived)
  "Events of SESSION were lost: fetch the journal entries we miss."
  (let ((buffer (tandem-view--buffer-for (tandem-view--event-connection) session)))
    (when buffer
      (with-current-buffer buffer
        (if (tandem-view-state-refreshing tandem-view--state)
            (push 'gap (tandem-view-state-queued tandem-view--state))
          (tandem-view--catch-up))))))

(defun tandem-view--replay (events)
  "Apply EVENTS (oldest first) that arrived during a refresh.
Entries the refresh already rendered are skipped by seq; the symbol
`gap' stands for lost events (fetched again)."
  (dolist (event events)
    (with-demoted-errors "tandem view: %S"
      (if (eq event 'gap) (tandem-view--catch-up) (tandem-view-handle-event event)))))

(defun tandem-view-install-hooks ()
  "Make sure backend events reach session buffers."
  (add-hook 'tandem-event-functions #'tandem-view--on-event)
  (add-hook 'tandem-event-gap-functions #'tandem-view--on-gap))

(defun tandem-view-handle-event (event)
  "Apply EVENT (a plist with :kind) to the current session buffer."
  (let ((st tandem-view--state) (turn (plist-get event :turn)))
    (pcase (plist-get event :kind)
      ("turn-started"
       (let ((b (tandem-view--block-for-turn turn)))
         (setf (tandem-view-block-meta b) event)
         (tandem-view--set-running turn)
         (tandem-view--mark b)))
      ("delta"
       (tandem-view-gc-hold (current-buffer))
       (let* ((b (tandem-view--block-for-turn turn))
              (reasoning (equal (plist-get event :stream) "reasoning"))
              (text (or (plist-get event :text) "")))
         (tandem-view-rope-append (if reasoning (tandem-view-block-reasoning-rope b)
                                    (tandem-view-block-text-rope b))
                                  text)
         (if (if reasoning (tandem-view-block-reasoning-marker b) (tandem-view-block-text-marker b))
             (unless (memq b (tandem-view-state-live-dirty st))
               (push b (tandem-view-state-live-dirty st)))
           (tandem-view--mark b))
         (tandem-view--schedule)))
      ("entry" (tandem-view-apply-entry (plist-get event :entry)))
      ("interaction"
       (let ((b (tandem-view--block-for-turn turn))
             (id (plist-get event :interaction-id)))
         (unless (cl-find id (tandem-view-block-interactions b)
                          :key (lambda (i) (plist-get i :interaction-id)) :test #'equal)
           (push (list :type "interaction" :turn turn :interaction-id id
                       :title (plist-get event :title) :options (plist-get event :options))
                 (tandem-view-block-interactions b)))
         (tandem-view--set-waiting turn (or (plist-get event :title) "a question"))
         (tandem-view--mark b)))
      ("turn-ended"
       (tandem-view-gc-release (current-buffer))
       (let ((b (gethash turn (tandem-view-state-by-turn st))))
         (when b
           (setf (tandem-view-block-files-changed b) (plist-get event :files-changed))
           (tandem-view--mark b)))
       (when (equal (plist-get (tandem-view-state-running st) :turn) turn)
         (tandem-view--set-running nil))
       ;; Steers it did not take are queued now (or were lost with a refused write).
       (when (tandem-view-queue-steers) (tandem-view-queue-fetch))
       (when (plist-get event :files-changed)
         (tandem-revert-stale-buffers (tandem-view--root)))
       (tandem-view-usage-update)))
    ;; The one place live events meet the buffer: a wait or an end may
    ;; tell a user who does not see it (tandem-notify.el).
    (tandem-notify-view-event event)))

(defun tandem-view-apply-entry (entry)
  "Add the journal ENTRY (a plist as written) to the view, in seq order.
An entry seen before is ignored; one after a gap triggers a fetch."
  (let ((st tandem-view--state) (seq (plist-get entry :seq)))
    (unless (integerp seq) (error "Journal entry without an integer :seq: %S" entry))
    (setf (tandem-view-state-seen-seq st) (max (tandem-view-state-seen-seq st) seq))
    (cond ((<= seq (tandem-view-state-last-seq st)) (tandem-view--settle-stream entry))
          ((or (tandem-view-state-catching-up st) (> seq (1+ (tandem-view-state-last-seq st))))
           (tandem-view--catch-up))
          (t (tandem-view--add-entry entry)))))

(defun tandem-view--settle-stream (entry)
  "Drop streamed text that ENTRY, already shown (from a fetch), completes.
Events come in order, so the text streamed before ENTRY's own event
belongs to entries already in the buffer."
  (let ((b (and (plist-get entry :turn)
                (gethash (plist-get entry :turn) (tandem-view-state-by-turn tandem-view--state)))))
    (when b
      (pcase (plist-get entry :type)
        ("assistant" (let ((rope (tandem-view-block-text-rope b)))
                       (when (> (tandem-view-rope-length rope) 0)
                         (tandem-view-rope-clear rope)
                         (tandem-view--mark b))))
        ("reasoning" (let ((rope (tandem-view-block-reasoning-rope b)))
                       (when (> (tandem-view-rope-length rope) 0)
                         (tandem-view-rope-clear rope)
                         (tandem-view--mark b))))))))

(defun tandem-view--add-entry (entry)
  "Add ENTRY, the next one in seq order, to the model."
  (let ((st tandem-view--state) (type (plist-get entry :type)) (turn (plist-get entry :turn)))
    (setf (tandem-view-state-last-seq st) (plist-get entry :seq))
    (unless (tandem-view-state-first-seq st)
      (setf (tandem-view-state-first-seq st) (plist-get entry :seq)))
    ;; A steer taken: its waiting row under the running turn goes.
    (when (equal type "steer") (tandem-view-queue-fetch))
    (cond
     ((equal type "rewind")
      (let ((before (plist-get entry :before-turn)))
        (dolist (b (copy-sequence (tandem-view-state-blocks st)))
          (when (and (tandem-view-block-turn b) (>= (tandem-view-block-turn b) before))
            (push b (tandem-view-state-doomed st))
            (setf (tandem-view-state-blocks st) (delq b (tandem-view-state-blocks st))
                  (tandem-view-state-newest st) nil)
            (remhash (tandem-view-block-turn b) (tandem-view-state-by-turn st))))
        (let ((b (tandem-view--new-block entry)))
          (push entry (tandem-view-block-entries b))
          (tandem-view--append-block b))))
     ;; Not conversation: the rows under the running turn show the queue.
     ((equal type "queue") (tandem-view-queue-fetch))
     ((null turn)
      (let ((b (tandem-view--new-block entry)))
        (push entry (tandem-view-block-entries b))
        (tandem-view--append-block b))
      ;; A compaction replaces turns above it, an undone rewind brings its
      ;; turns back: re-render from the journal at the next frame (not
      ;; here: this may run in a process filter).
      (when (or (equal type "compaction")
                (and (equal type "rewind_undo") (not (plist-get entry :files-only))))
        (setf (tandem-view-state-refresh-pending st) t)
        (tandem-view--schedule)))
     (t
      (let ((b (gethash turn (tandem-view-state-by-turn st))))
        (when (or (null b) (and (equal type "turn_start")
                                (tandem-view-block-find b "turn_start")))
          (setq b (tandem-view--new-block entry))
          (tandem-view--append-block b))
        (push entry (tandem-view-block-entries b))
        (pcase type
          ("assistant"
           ;; The next frame settles the shown text in place (tandem-view-frame.el).
           (when (tandem-view-block-text-marker b)
             (setf (tandem-view-block-settling b) (plist-get entry :text)))
           (tandem-view-rope-clear (tandem-view-block-text-rope b)))
          ("reasoning" (tandem-view-rope-clear (tandem-view-block-reasoning-rope b)))
          ("user" (unless (or (tandem-view-block-directive b)
                              (equal (plist-get entry :text) (car tandem-composer-history)))
                    (push (plist-get entry :text) tandem-composer-history)))
          ("interaction" (tandem-view--set-waiting turn (or (plist-get entry :title) "a question")))
          ("interaction_answer" (tandem-view--set-waiting turn nil))
          ("turn_end" (when (equal (plist-get (tandem-view-state-running st) :turn) turn)
                        (tandem-view--set-running nil))))
        (tandem-view--mark b))))))

(defun tandem-view--catch-up ()
  "Fetch the journal entries after the last applied one (asynchronously).
The call goes to the backend this buffer follows while it lives."
  (let ((st tandem-view--state))
    (unless (tandem-view-state-catching-up st)
      (setf (tandem-view-state-catching-up st) t)
      (let ((buffer (current-buffer)))
        (tandem-request-async
         "sessions/entries" (list :session (tandem-view-state-session st)
                                  :after (tandem-view-state-last-seq st) :limit 10000)
         (lambda (reply)
           (when (buffer-live-p buffer)
             (with-current-buffer buffer
               (setf (tandem-view-state-catching-up st) nil)
               (dolist (e (plist-get reply :entries))
                 (when (> (plist-get e :seq) (tandem-view-state-last-seq st))
                   (tandem-view--add-entry e)))
               ;; The journal is the authority: an event announcing a seq it
               ;; does not hold is forgotten; one it grew past is fetched.
               (setf (tandem-view-state-seen-seq st) (tandem-view-state-last-seq st))
               (when (> (or (plist-get reply :last-seq) 0) (tandem-view-state-last-seq st))
                 (tandem-view--catch-up)))))
         (lambda (err)
           (when (buffer-live-p buffer)
             (setf (tandem-view-state-catching-up st) nil))
           (message "tandem: could not fetch missing entries: %s" (nth 1 err)))
         (tandem-view--connection))))))

(provide 'tandem-view-live)
;;; tandem-view-live.el ends here
