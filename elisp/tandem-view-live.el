;;; tandem-view-live.el --- Events, streaming and commands of the tandem view  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The live half of the session buffer (tandem-view.el holds the state
;; and the full rendering).  Backend events change the model and mark
;; blocks dirty; a single timer applies them in one frame; streamed text
;; is appended at a marker without re-rendering its block.  Also here:
;; paging of older turns, folding, the send / cancel / answer commands.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-turns)
(require 'tandem-view-render)
(require 'tandem-view-compaction)

;; State and helpers of tandem-view.el (which loads this file).
(defvar tandem-view--session)
(defvar tandem-view--blocks)
(defvar tandem-view--by-turn)
(defvar tandem-view--first-seq)
(defvar tandem-view--last-seq)
(defvar tandem-view--folds)
(defvar tandem-view--tail)
(defvar tandem-view--dirty)
(defvar tandem-view--live-dirty)
(defvar tandem-view--progress-dirty)
(defvar tandem-view--timer)
(defvar tandem-view--clock)
(defvar tandem-view--running)
(defvar tandem-view--newest)
(defvar tandem-view-flush-count)
(defvar tandem-view--refreshing)
(defvar tandem-view--queued)
(defvar tandem-view--lost)
(defvar tandem-view-frame-interval)
(defvar tandem-view-page-entries)
(defvar tandem-view-transcript-map)
(declare-function tandem-view-buffer "tandem-view" (session))
(declare-function tandem-view-refresh "tandem-view" ())
(declare-function tandem-view--block-end "tandem-view-draw" (block))
(declare-function tandem-view--build "tandem-view-model" (entries &optional later))
(declare-function tandem-view--index "tandem-view-model" ())
(declare-function tandem-view--fetch-before "tandem-view" (before limit))
(declare-function tandem-view--insert-before "tandem-view-draw" (marker fn))
(declare-function tandem-view--insert-block "tandem-view-draw" (block))
(declare-function tandem-view--insert-blocks "tandem-view-draw" (blocks boundary))
(declare-function tandem-view--rerender "tandem-view-draw" (block))
(declare-function tandem-view--remove-block "tandem-view-draw" (block))
(declare-function tandem-view--redraw-older-row "tandem-view-draw" ())
(declare-function tandem-view--redraw-progress "tandem-view-draw" ())
(declare-function tandem-view--newest-turn-block "tandem-view-model" ())
(declare-function tandem-view--folded-p "tandem-view-model" (block part))
(declare-function tandem-view--fold-key "tandem-view-model" (block part))
(declare-function tandem-view--new-block "tandem-view-model" (entry))
(declare-function tandem-view--release "tandem-view-draw" (block))


;;;; Keeping point and window start

(defun tandem-view--anchor (pos)
  "Return an anchor for POS that survives re-rendering, or nil for the composer."
  (cond ((>= pos tandem-composer--start) nil)
        ((get-text-property pos 'tandem-block)
         (let ((b (get-text-property pos 'tandem-block)))
           (list 'block b (- pos (tandem-view-block-start b)))))
        ((>= pos tandem-view--tail) (list 'progress))
        (t (list 'top (- pos (point-min))))))

(defun tandem-view--resolve (anchor)
  "Return the position ANCHOR now names."
  (pcase anchor
    (`(block ,b ,offset)
     (if (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b))
              (memq b tandem-view--blocks))
         (min (+ (tandem-view-block-start b) offset) (max (tandem-view-block-start b)
                                                         (1- (tandem-view--block-end b))))
       (marker-position tandem-view--tail)))
    (`(progress) (marker-position tandem-view--tail))
    (`(top ,offset) (min (+ (point-min) offset) (point-max)))))

(defmacro tandem-view--keeping-place (&rest body)
  "Run BODY; keep point and every window's point and start where they were.
Positions in the composer need nothing: BODY never edits it."
  (declare (indent 0) (debug t))
  (let ((saved (make-symbol "saved")) (pt (make-symbol "pt")) (modified (make-symbol "modified")))
    `(let* ((,modified (buffer-modified-p))
            (,pt (tandem-view--anchor (point)))
            (,saved (mapcar (lambda (w)
                              (list w (tandem-view--anchor (window-point w))
                                    (tandem-view--anchor (window-start w))))
                            (get-buffer-window-list (current-buffer) nil t))))
       (prog1 (tandem-composer-outside-draft
                (save-excursion (let ((inhibit-read-only t)) ,@body)))
         ;; Rendering is not an edit of the user's: keep the modified flag.
         (restore-buffer-modified-p ,modified)
         (when ,pt (goto-char (tandem-view--resolve ,pt)))
         (dolist (s ,saved)
           (when (nth 1 s) (set-window-point (nth 0 s) (tandem-view--resolve (nth 1 s))))
           (when (nth 2 s)
             (set-window-start (nth 0 s) (tandem-view--resolve (nth 2 s)) t)))))))

(defun tandem-view-load-older (&optional all)
  "Load one more page of older history, or with ALL (prefix argument) all of it."
  (interactive "P")
  (unless (and tandem-view--first-seq (> tandem-view--first-seq 1))
    (user-error "The session's first turn is already shown"))
  (let ((entries (tandem-view--fetch-before
                  tandem-view--first-seq (if all 10000 tandem-view-page-entries))))
    (while (and all entries (> (plist-get (car entries) :seq) 1))
      (setq entries (append (tandem-view--fetch-before (plist-get (car entries) :seq) 10000)
                            entries)))
    (when entries
      (let* ((later-rewinds
              (cl-loop for b in tandem-view--blocks
                       for e = (car (tandem-view-block-entries b))
                       when (equal (plist-get e :type) "rewind")
                       collect (plist-get e :before-turn)))
             (blocks (cl-remove-if (lambda (b) (and (tandem-view-block-turn b)
                                                    (cl-some (lambda (r) (>= (tandem-view-block-turn b) r))
                                                             later-rewinds)))
                                   (tandem-view--build entries (tandem-view-compaction-entries
                                                                tandem-view--blocks)))))
        (tandem-view--keeping-place
          (setq tandem-view--first-seq (plist-get (car entries) :seq))
          (let ((first (car tandem-view--blocks)))
            (tandem-view--insert-blocks
             blocks (if first (tandem-view-block-start first) tandem-view--tail)))
          (tandem-view--place-rows (append blocks tandem-view--blocks))
          (tandem-view--redraw-older-row))
        (tandem-view--index)
        (length blocks)))))

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
    (setq tandem-view--blocks arranged tandem-view--newest nil)))


;;;; Events

(defun tandem-view--on-event (event)
  "Route EVENT from the backend to the buffer of its session.
During a refresh it waits in the buffer's queue (see `tandem-view--replay')."
  (let ((buffer (tandem-view-buffer (plist-get event :session))))
    (when buffer
      (with-current-buffer buffer
        (if tandem-view--refreshing
            (push event tandem-view--queued)
          (tandem-view-handle-event event))))))

(defun tandem-view--on-gap (session _expected _arrived)
  "Events of SESSION were lost: fetch the journal entries we miss."
  (let ((buffer (tandem-view-buffer session)))
    (when buffer
      (with-current-buffer buffer
        (if tandem-view--refreshing
            (push 'gap tandem-view--queued)
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

(defun tandem-view--block-for-turn (turn &optional seq)
  "Return the live block of TURN, creating one (key SEQ) at the end if needed."
  (or (gethash turn tandem-view--by-turn)
      (let ((b (tandem-view-block-create :key (or seq (+ tandem-view--last-seq 0.5)) :turn turn)))
        (tandem-view--append-block b)
        b)))

(defun tandem-view--append-block (block)
  "Add BLOCK at the end of the model; it is drawn at the next frame."
  (let ((previous (tandem-view--newest-turn-block)))
    ;; The newest turn changes: a settled directive turn may now fold.
    (when previous (tandem-view--mark previous)))
  (setq tandem-view--blocks (nconc tandem-view--blocks (list block))
        tandem-view--newest nil)
  (when (tandem-view-block-turn block)
    (puthash (tandem-view-block-turn block) block tandem-view--by-turn))
  (tandem-view--mark block))

(defun tandem-view--mark (block)
  "Mark BLOCK for re-rendering at the next frame."
  (unless (memq block tandem-view--dirty) (push block tandem-view--dirty))
  (tandem-view--schedule))

(defun tandem-view-handle-event (event)
  "Apply EVENT (a plist with :kind) to the current session buffer."
  (let ((turn (plist-get event :turn)))
    (pcase (plist-get event :kind)
      ("turn-started"
       (let ((b (tandem-view--block-for-turn turn)))
         (setf (tandem-view-block-meta b) event)
         (tandem-view--set-running turn)
         (tandem-view--mark b)))
      ("delta"
       (let* ((b (tandem-view--block-for-turn turn))
              (reasoning (equal (plist-get event :stream) "reasoning"))
              (text (or (plist-get event :text) "")))
         (if reasoning
             (setf (tandem-view-block-live-reasoning b)
                   (concat (tandem-view-block-live-reasoning b) text))
           (setf (tandem-view-block-live-text b) (concat (tandem-view-block-live-text b) text)))
         (if (if reasoning (tandem-view-block-reasoning-marker b) (tandem-view-block-text-marker b))
             (unless (memq b tandem-view--live-dirty) (push b tandem-view--live-dirty))
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
       (let ((b (gethash turn tandem-view--by-turn)))
         (when b
           (setf (tandem-view-block-files-changed b) (plist-get event :files-changed))
           (tandem-view--mark b)))
       (when (equal (plist-get tandem-view--running :turn) turn)
         (tandem-view--set-running nil))))))

(defun tandem-view-apply-entry (entry)
  "Add the journal ENTRY (a plist as written) to the view, in seq order.
An entry seen before is ignored; one after a gap triggers a fetch."
  (let ((seq (plist-get entry :seq)))
    (unless (integerp seq) (error "Journal entry without an integer :seq: %S" entry))
    (setq tandem-view--seen-seq (max tandem-view--seen-seq seq))
    (cond ((<= seq tandem-view--last-seq) (tandem-view--settle-stream entry))
          ((or tandem-view--catching-up (> seq (1+ tandem-view--last-seq)))
           (tandem-view--catch-up))
          (t (tandem-view--add-entry entry)))))

(defun tandem-view--settle-stream (entry)
  "Drop streamed text that ENTRY, already shown (from a fetch), completes.
Events come in order, so the text streamed before ENTRY's own event
belongs to entries already in the buffer."
  (let ((b (and (plist-get entry :turn) (gethash (plist-get entry :turn) tandem-view--by-turn))))
    (when b
      (pcase (plist-get entry :type)
        ("assistant" (unless (string-empty-p (tandem-view-block-live-text b))
                       (setf (tandem-view-block-live-text b) "")
                       (tandem-view--mark b)))
        ("reasoning" (unless (string-empty-p (tandem-view-block-live-reasoning b))
                       (setf (tandem-view-block-live-reasoning b) "")
                       (tandem-view--mark b)))))))

(defun tandem-view--add-entry (entry)
  "Add ENTRY, the next one in seq order, to the model."
  (let ((type (plist-get entry :type)) (turn (plist-get entry :turn)))
    (setq tandem-view--last-seq (plist-get entry :seq))
    (unless tandem-view--first-seq (setq tandem-view--first-seq (plist-get entry :seq)))
    (cond
     ((equal type "rewind")
      (let ((before (plist-get entry :before-turn)))
        (dolist (b (copy-sequence tandem-view--blocks))
          (when (and (tandem-view-block-turn b) (>= (tandem-view-block-turn b) before))
            (push b tandem-view--doomed)
            (setq tandem-view--blocks (delq b tandem-view--blocks)
                  tandem-view--newest nil)
            (remhash (tandem-view-block-turn b) tandem-view--by-turn)))
        (let ((b (tandem-view--new-block entry)))
          (push entry (tandem-view-block-entries b))
          (tandem-view--append-block b))))
     ((null turn)
      (let ((b (tandem-view--new-block entry)))
        (push entry (tandem-view-block-entries b))
        (tandem-view--append-block b))
      ;; A compaction replaces turns above it: re-render from the journal
      ;; at the next frame (not here: this may run in a process filter).
      (when (equal type "compaction")
        (setq tandem-view--refresh-pending t)
        (tandem-view--schedule)))
     (t
      (let ((b (gethash turn tandem-view--by-turn)))
        (when (or (null b) (and (equal type "turn_start")
                                (tandem-view-block-find b "turn_start")))
          (setq b (tandem-view--new-block entry))
          (tandem-view--append-block b))
        (push entry (tandem-view-block-entries b))
        (pcase type
          ("assistant" (setf (tandem-view-block-live-text b) ""))
          ("reasoning" (setf (tandem-view-block-live-reasoning b) ""))
          ("user" (unless (or (tandem-view-block-directive b)
                              (equal (plist-get entry :text) (car tandem-composer-history)))
                    (push (plist-get entry :text) tandem-composer-history)))
          ("interaction" (tandem-view--set-waiting turn (or (plist-get entry :title) "a question")))
          ("interaction_answer" (tandem-view--set-waiting turn nil))
          ("turn_end" (when (equal (plist-get tandem-view--running :turn) turn)
                        (tandem-view--set-running nil))))
        (tandem-view--mark b))))))

(defun tandem-view--catch-up ()
  "Fetch the journal entries after the last applied one (asynchronously)."
  (unless tandem-view--catching-up
    (setq tandem-view--catching-up t)
    (let ((buffer (current-buffer)))
      (tandem-request-async
       "sessions/entries" (list :session tandem-view--session :after tandem-view--last-seq
                                :limit 10000)
       (lambda (reply)
         (when (buffer-live-p buffer)
           (with-current-buffer buffer
             (setq tandem-view--catching-up nil)
             (dolist (e (plist-get reply :entries))
               (when (> (plist-get e :seq) tandem-view--last-seq) (tandem-view--add-entry e)))
             ;; The journal is the authority: an event announcing a seq it
             ;; does not hold is forgotten; one it grew past is fetched.
             (setq tandem-view--seen-seq tandem-view--last-seq)
             (when (> (or (plist-get reply :last-seq) 0) tandem-view--last-seq)
               (tandem-view--catch-up)))))
       (lambda (err)
         (when (buffer-live-p buffer)
           (with-current-buffer buffer (setq tandem-view--catching-up nil)))
         (message "tandem: could not fetch missing entries: %s" (nth 1 err)))))))

;;;; Turn state

(defun tandem-view--set-running (turn)
  "Mark TURN as the turn in flight (nil: none)."
  (let ((was tandem-view--running))
    (setq tandem-view--running
          (and turn (if (equal (plist-get was :turn) turn) was
                      (list :turn turn :since (float-time) :waiting nil))))
    (unless (equal (and was t) (and turn t))
      (setq tandem-view--composer-dirty t)
      (when tandem-view--clock (cancel-timer tandem-view--clock) (setq tandem-view--clock nil))
      (when turn
        (setq tandem-view--lost nil)
        (let ((buffer (current-buffer)))
          (setq tandem-view--clock
                (run-at-time 1 1 (lambda ()
                                   (when (buffer-live-p buffer)
                                     (with-current-buffer buffer
                                       (tandem-view--check-backend)
                                       (setq tandem-view--progress-dirty t)
                                       (tandem-view--schedule)))))))))
    (setq tandem-view--progress-dirty t)
    (tandem-view--schedule)))

(defun tandem-view--check-backend ()
  "Notice that the backend died while a turn was running: it will not end.
Run by the one-second clock; the progress row then says so until `g'."
  (when (and tandem-view--running (not (tandem-backend-pid)))
    (let ((turn (plist-get tandem-view--running :turn)))
      (tandem-view--set-running nil)
      (setq tandem-view--lost turn))))

(defun tandem-view--set-waiting (turn title)
  "Say TURN waits for the user on TITLE (nil: no longer waiting)."
  (when (equal (plist-get tandem-view--running :turn) turn)
    (setq tandem-view--running (plist-put (copy-sequence tandem-view--running) :waiting title)
          tandem-view--progress-dirty t)
    (tandem-view--schedule)))

;;;; The frame

(defun tandem-view--schedule ()
  "Arrange one frame soon, shared by every call made before it fires."
  (unless tandem-view--timer
    (setq tandem-view--timer
          (run-at-time tandem-view-frame-interval nil #'tandem-view--tick (current-buffer)))))

(defun tandem-view--tick (buffer)
  "Apply what is pending in BUFFER."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setq tandem-view--timer nil)
      (when tandem-view--refresh-pending
        (setq tandem-view--refresh-pending nil)
        (condition-case err
            (tandem-view-refresh)
          (error (message "tandem: could not re-render %s: %s" (buffer-name)
                          (error-message-string err)))))
      (tandem-view-flush))))

(defun tandem-view--append-live (block)
  "Append BLOCK's streamed text that is not in the buffer yet at its markers."
  (cl-flet ((append-at (marker text shown face)
              (when (and marker (marker-buffer marker) (> (length text) shown))
                (goto-char marker)
                (insert (propertize (substring text shown)
                                    'read-only t 'tandem-block block 'font-lock-face face
                                    'keymap tandem-view-transcript-map
                                    'line-prefix tandem-view-render-indent
                                    'wrap-prefix tandem-view-render-indent))
                t)))
    (when (append-at (tandem-view-block-reasoning-marker block)
                     (tandem-view-block-live-reasoning block)
                     (tandem-view-block-reasoning-shown block) 'tandem-view-reasoning)
      (setf (tandem-view-block-reasoning-shown block)
            (length (tandem-view-block-live-reasoning block))))
    (when (append-at (tandem-view-block-text-marker block) (tandem-view-block-live-text block)
                     (tandem-view-block-text-shown block) nil)
      (setf (tandem-view-block-text-shown block) (length (tandem-view-block-live-text block))))))

(defun tandem-view-flush ()
  "Apply every pending change to the buffer now, as one batch."
  (when (or tandem-view--dirty tandem-view--live-dirty tandem-view--progress-dirty
            tandem-view--doomed tandem-view--composer-dirty)
    (cl-incf tandem-view-flush-count)
    (let ((dirty (reverse tandem-view--dirty))
          (live tandem-view--live-dirty)
          (doomed tandem-view--doomed)
          (progress tandem-view--progress-dirty)
          (composer tandem-view--composer-dirty)
          (inhibit-modification-hooks nil))
      (setq tandem-view--dirty nil tandem-view--live-dirty nil tandem-view--doomed nil
            tandem-view--progress-dirty nil tandem-view--composer-dirty nil)
      (tandem-view--keeping-place
        (dolist (b doomed)
          (when (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b)))
            (delete-region (tandem-view-block-start b)
                           (next-single-property-change (tandem-view-block-start b) 'tandem-block
                                                        nil (marker-position tandem-view--tail))))
          (tandem-view--release b))
        (dolist (b (sort (cl-remove-if-not (lambda (b) (memq b tandem-view--blocks)) dirty)
                         (lambda (a b) (< (tandem-view-block-key a) (tandem-view-block-key b)))))
          (if (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b)))
              (tandem-view--rerender b)
            (tandem-view--insert-before tandem-view--tail
                                        (lambda () (tandem-view--insert-block b)))))
        (dolist (b live)
          (unless (memq b dirty) (tandem-view--append-live b)))
        (when progress (tandem-view--redraw-progress)))
      (when composer (tandem-composer-refresh))
      (force-mode-line-update))))


(provide 'tandem-view-live)
;;; tandem-view-live.el ends here
