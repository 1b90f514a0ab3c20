;;; tandem-view-frame.el --- The frame: applying a session buffer's pending changes  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Events only change the model (tandem-view-model.el) and mark what
;; is dirty here; one timer for every session buffer
;; (`tandem-view-frame-interval') then applies everything at once: doomed blocks go, dirty ones are
;; re-rendered, streamed text is appended at its markers, the progress
;; row and the composer prefix are redrawn.  Also here: the turn in flight
;; (its one-second clock, backend death) and keeping point and window
;; start on their text across those edits.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-view-model)
(require 'tandem-view-draw)
(require 'tandem-view-stream)

;; A compaction asks the next frame for a full rendering (tandem-view-live.el,
;; above this file).
(declare-function tandem-view-refresh "tandem-view-live" ())

;;;; Keeping point and window start

(defun tandem-view--anchor (pos)
  "Return an anchor for POS that survives re-rendering, or nil for the composer."
  (cond ((>= pos tandem-composer--start) nil)
        ((get-text-property pos 'tandem-block)
         (let ((b (get-text-property pos 'tandem-block)))
           (list 'block b (- pos (tandem-view-block-start b)))))
        ((>= pos (tandem-view-state-tail tandem-view--state)) (list 'progress))
        (t (list 'top (- pos (point-min))))))

(defun tandem-view--resolve (anchor)
  "Return the position ANCHOR now names."
  (let ((tail (marker-position (tandem-view-state-tail tandem-view--state))))
    (pcase anchor
      (`(block ,b ,offset)
       (if (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b))
                (memq b (tandem-view-state-blocks tandem-view--state)))
           (let ((pos (+ (tandem-view-block-start b) offset)))
             ;; Still inside its block: no need for the block's end, whose
             ;; search costs every face change of a long streamed answer.
             (if (and (< pos (point-max)) (eq (get-text-property pos 'tandem-block) b))
                 pos
               (min pos (max (tandem-view-block-start b) (1- (tandem-view--block-end b))))))
         tail))
      (`(progress) tail)
      (`(top ,offset) (min (+ (point-min) offset) (point-max))))))

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

;;;; Turn state

(defun tandem-view--set-running (turn)
  "Mark TURN as the turn in flight (nil: none)."
  (let* ((st tandem-view--state)
         (was (tandem-view-state-running st)))
    (setf (tandem-view-state-running st)
          (and turn (if (equal (plist-get was :turn) turn) was
                      (list :turn turn :since (float-time) :waiting nil))))
    (unless (equal (and was t) (and turn t))
      (setf (tandem-view-state-composer-dirty st) t)
      (when (tandem-view-state-clock st)
        (cancel-timer (tandem-view-state-clock st))
        (setf (tandem-view-state-clock st) nil))
      (when turn
        (setf (tandem-view-state-lost st) nil)
        (let ((buffer (current-buffer)))
          (setf (tandem-view-state-clock st)
                (run-at-time 1 1 (lambda ()
                                   (when (buffer-live-p buffer)
                                     (with-current-buffer buffer
                                       (tandem-view--check-backend)
                                       (setf (tandem-view-state-progress-dirty st) t)
                                       (tandem-view--schedule)))))))))
    (setf (tandem-view-state-progress-dirty st) t)
    (tandem-view--schedule)))

(defun tandem-view--check-backend ()
  "Notice that the backend died while a turn was running: it will not end.
The backend is the one this buffer follows.  Run by the one-second
clock; the progress row then says so until `g'."
  (let ((running (tandem-view-state-running tandem-view--state)))
    (when (and running (not (tandem-view--connection)))
      (tandem-view--set-running nil)
      (setf (tandem-view-state-lost tandem-view--state) (plist-get running :turn)))))

(defun tandem-view--set-waiting (turn title)
  "Say TURN waits for the user on TITLE (nil: no longer waiting)."
  (let* ((st tandem-view--state)
         (running (tandem-view-state-running st)))
    (when (equal (plist-get running :turn) turn)
      (setf (tandem-view-state-running st) (plist-put (copy-sequence running) :waiting title)
            (tandem-view-state-progress-dirty st) t)
      (tandem-view--schedule))))

;;;; The frame

(defun tandem-view--block-for-turn (turn &optional seq)
  "Return the live block of TURN, creating one (key SEQ) at the end if needed."
  (let ((st tandem-view--state))
    (or (gethash turn (tandem-view-state-by-turn st))
        (let ((b (tandem-view-block-create
                  :key (or seq (+ (tandem-view-state-last-seq st) 0.5)) :turn turn)))
          (tandem-view--append-block b)
          b))))

(defun tandem-view--append-block (block)
  "Add BLOCK at the end of the model; it is drawn at the next frame."
  (let ((st tandem-view--state)
        (previous (tandem-view--newest-turn-block)))
    ;; The newest turn changes: a settled directive turn may now fold.
    (when previous (tandem-view--mark previous))
    (setf (tandem-view-state-blocks st) (nconc (tandem-view-state-blocks st) (list block))
          (tandem-view-state-newest st) nil)
    (when (tandem-view-block-turn block)
      (puthash (tandem-view-block-turn block) block (tandem-view-state-by-turn st)))
    (tandem-view--mark block)))

(defun tandem-view--mark (block)
  "Mark BLOCK for re-rendering at the next frame."
  (let ((st tandem-view--state))
    (unless (memq block (tandem-view-state-dirty st))
      (push block (tandem-view-state-dirty st))))
  (tandem-view--schedule))

(defvar tandem-view--frame-timer nil
  "The one frame timer of every session buffer, or nil when none is due.")

(defvar tandem-view--frame-buffers nil
  "The session buffers the next frame applies, in the order they asked.")

(defconst tandem-view--frame-min-gap 0.005
  "Fewest seconds between two buffers' frames (many sessions streaming).")

(defvar tandem-view--last-frame 0.0
  "When the last frame began (`float-time').
A frame asked for an interval or more after it comes at once.")

(defvar tandem-view--frame-at-once nil
  "Non-nil while the pending frame, or else the last one, came at once.")

(defun tandem-view--frame-delay ()
  "Seconds until the frame asked for now.
At once after a quiet spell (no frame began for an interval).  The
frame after one that came at once keeps the interval from it: the rest
of a burst whose start showed at once follows one interval later, not
two.  Otherwise an interval from now."
  (let ((since (- (float-time) tandem-view--last-frame)))
    (cond ((> since tandem-view-frame-interval) (setq tandem-view--frame-at-once t) 0)
          (tandem-view--frame-at-once
           (setq tandem-view--frame-at-once nil)
           (- tandem-view-frame-interval since))
          (t tandem-view-frame-interval))))

(defun tandem-view--schedule ()
  "Arrange one frame soon, shared by every call made before it fires.
One timer serves every session buffer (`tandem-view--frame'), one
buffer a firing, so that sessions streaming at once take turns.  When
the frame comes: `tandem-view--frame-delay'.  (Timing every frame from
the last one kept a stream at a full 20 frames a second: a third more
CPU while streaming.)"
  (unless (tandem-view-state-timer tandem-view--state)
    (setf (tandem-view-state-timer tandem-view--state) t)
    (setq tandem-view--frame-buffers (nconc tandem-view--frame-buffers (list (current-buffer))))
    ;; Still pending, not merely set: a timer cancelled by someone else
    ;; would otherwise stop every session buffer's frames for good.
    (unless (and tandem-view--frame-timer (memq tandem-view--frame-timer timer-list))
      (setq tandem-view--frame-timer
            (run-at-time (tandem-view--frame-delay) nil #'tandem-view--frame)))))

(defun tandem-view--unschedule ()
  "Take this buffer out of the next frame (it is being killed)."
  (setf (tandem-view-state-timer tandem-view--state) nil)
  (setq tandem-view--frame-buffers (delq (current-buffer) tandem-view--frame-buffers)))

(defun tandem-view--frame ()
  "Apply what is pending in the buffer that asked first; the others follow.
Each buffer still gets a frame every `tandem-view-frame-interval', but
with several asking their frames are spread over that interval instead
of run back to back: a key typed meanwhile waits for one session's
frame (its appended text, or its turn's end settling), not for all of
them, and four turns ending together settle in four firings."
  (setq tandem-view--frame-timer nil
        tandem-view--last-frame (float-time))
  (let ((buffer (pop tandem-view--frame-buffers)))
    (when tandem-view--frame-buffers
      (setq tandem-view--frame-timer
            (run-at-time (max tandem-view--frame-min-gap
                              (/ tandem-view-frame-interval
                                 (1+ (length tandem-view--frame-buffers))))
                         nil #'tandem-view--frame)))
    (when (buffer-live-p buffer)
      (with-demoted-errors "tandem view frame: %S" (tandem-view--tick buffer)))))

(defun tandem-view--tick (buffer)
  "Apply what is pending in BUFFER."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (let ((st tandem-view--state))
        (setf (tandem-view-state-timer st) nil)
        (when (tandem-view-state-refresh-pending st)
          (setf (tandem-view-state-refresh-pending st) nil)
          (condition-case err
              (tandem-view-refresh)
            (error (message "tandem: could not re-render %s: %s" (buffer-name)
                            (error-message-string err))))))
      (tandem-view-flush))))

(defun tandem-view--append-streamed (blocks)
  "Append the streamed text of BLOCKS, the only change of this frame.
Nothing is deleted, so point and the windows' points and starts, all
markers, stay on their text: no anchoring, and no `set-window-start',
which would make redisplay lay the whole window out again instead of
scrolling it."
  (let ((modified (buffer-modified-p)))
    (tandem-composer-outside-draft
     (save-excursion (let ((inhibit-read-only t)) (mapc #'tandem-view--append-live blocks))))
    (restore-buffer-modified-p modified)))

(defun tandem-view-flush ()
  "Apply every pending change to the buffer now, as one batch."
  (let ((st tandem-view--state))
    (when (or (tandem-view-state-dirty st) (tandem-view-state-live-dirty st)
              (tandem-view-state-progress-dirty st) (tandem-view-state-doomed st)
              (tandem-view-state-composer-dirty st))
      (cl-incf (tandem-view-state-flush-count st))
      (let ((dirty (reverse (tandem-view-state-dirty st)))
            (live (tandem-view-state-live-dirty st))
            (doomed (tandem-view-state-doomed st))
            (progress (tandem-view-state-progress-dirty st))
            (composer (tandem-view-state-composer-dirty st))
            (tail (tandem-view-state-tail st))
            (inhibit-modification-hooks nil))
        (setf (tandem-view-state-dirty st) nil
              (tandem-view-state-live-dirty st) nil
              (tandem-view-state-doomed st) nil
              (tandem-view-state-progress-dirty st) nil
              (tandem-view-state-composer-dirty st) nil)
        (if (not (or dirty doomed progress))
            (tandem-view--append-streamed live)
          (tandem-view--keeping-place
           (dolist (b doomed)
             (when (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b)))
               (delete-region (tandem-view-block-start b)
                              (next-single-property-change (tandem-view-block-start b) 'tandem-block
                                                           nil (marker-position tail))))
             (tandem-view--release b))
           (dolist (b (sort (cl-remove-if-not (lambda (b) (memq b (tandem-view-state-blocks st)))
                                              dirty)
                            (lambda (a b) (< (tandem-view-block-key a) (tandem-view-block-key b)))))
             (if (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b)))
                 (tandem-view-settle-rerender b)
               (tandem-view--insert-before tail (lambda () (tandem-view--insert-block b)))))
           (dolist (b live)
             (unless (memq b dirty) (tandem-view--append-live b)))
           (when progress (tandem-view--redraw-progress))))
        (when composer (tandem-composer-refresh))
        ;; The header line says what the blocks and the turn state say;
        ;; streamed text alone changes neither (and redrawing it costs).
        (when (or dirty doomed progress composer) (force-mode-line-update))))))

(provide 'tandem-view-frame)
;;; tandem-view-frame.el ends here
