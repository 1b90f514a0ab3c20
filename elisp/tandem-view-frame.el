;;; tandem-view-frame.el --- The frame: applying a session buffer's pending changes  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Events only change the model (tandem-view-model.el) and mark what
;; is dirty here; one timer per buffer (`tandem-view-frame-interval')
;; then applies everything at once: doomed blocks go, dirty ones are
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
  (pcase anchor
    (`(block ,b ,offset)
     (if (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b))
              (memq b (tandem-view-state-blocks tandem-view--state)))
         (min (+ (tandem-view-block-start b) offset) (max (tandem-view-block-start b)
                                                         (1- (tandem-view--block-end b))))
       (marker-position (tandem-view-state-tail tandem-view--state))))
    (`(progress) (marker-position (tandem-view-state-tail tandem-view--state)))
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

;;;; Turn state

(defun tandem-view--set-running (turn)
  "Mark TURN as the turn in flight (nil: none)."
  (let ((was (tandem-view-state-running tandem-view--state)))
    (setf (tandem-view-state-running tandem-view--state)
          (and turn (if (equal (plist-get was :turn) turn) was
                      (list :turn turn :since (float-time) :waiting nil))))
    (unless (equal (and was t) (and turn t))
      (setf (tandem-view-state-composer-dirty tandem-view--state) t)
      (when (tandem-view-state-clock tandem-view--state) (cancel-timer (tandem-view-state-clock tandem-view--state)) (setf (tandem-view-state-clock tandem-view--state) nil))
      (when turn
        (setf (tandem-view-state-lost tandem-view--state) nil)
        (let ((buffer (current-buffer)))
          (setf (tandem-view-state-clock tandem-view--state)
                (run-at-time 1 1 (lambda ()
                                   (when (buffer-live-p buffer)
                                     (with-current-buffer buffer
                                       (tandem-view--check-backend)
                                       (setf (tandem-view-state-progress-dirty tandem-view--state) t)
                                       (tandem-view--schedule)))))))))
    (setf (tandem-view-state-progress-dirty tandem-view--state) t)
    (tandem-view--schedule)))

(defun tandem-view--check-backend ()
  "Notice that the backend died while a turn was running: it will not end.
Run by the one-second clock; the progress row then says so until `g'."
  (when (and (tandem-view-state-running tandem-view--state) (not (tandem-backend-pid)))
    (let ((turn (plist-get (tandem-view-state-running tandem-view--state) :turn)))
      (tandem-view--set-running nil)
      (setf (tandem-view-state-lost tandem-view--state) turn))))

(defun tandem-view--set-waiting (turn title)
  "Say TURN waits for the user on TITLE (nil: no longer waiting)."
  (when (equal (plist-get (tandem-view-state-running tandem-view--state) :turn) turn)
    (setf (tandem-view-state-running tandem-view--state) (plist-put (copy-sequence (tandem-view-state-running tandem-view--state)) :waiting title)
          (tandem-view-state-progress-dirty tandem-view--state) t)
    (tandem-view--schedule)))

;;;; The frame

(defun tandem-view--block-for-turn (turn &optional seq)
  "Return the live block of TURN, creating one (key SEQ) at the end if needed."
  (or (gethash turn (tandem-view-state-by-turn tandem-view--state))
      (let ((b (tandem-view-block-create :key (or seq (+ (tandem-view-state-last-seq tandem-view--state) 0.5)) :turn turn)))
        (tandem-view--append-block b)
        b)))

(defun tandem-view--append-block (block)
  "Add BLOCK at the end of the model; it is drawn at the next frame."
  (let ((previous (tandem-view--newest-turn-block)))
    ;; The newest turn changes: a settled directive turn may now fold.
    (when previous (tandem-view--mark previous)))
  (setf (tandem-view-state-blocks tandem-view--state) (nconc (tandem-view-state-blocks tandem-view--state) (list block))
        (tandem-view-state-newest tandem-view--state) nil)
  (when (tandem-view-block-turn block)
    (puthash (tandem-view-block-turn block) block (tandem-view-state-by-turn tandem-view--state)))
  (tandem-view--mark block))

(defun tandem-view--mark (block)
  "Mark BLOCK for re-rendering at the next frame."
  (unless (memq block (tandem-view-state-dirty tandem-view--state)) (push block (tandem-view-state-dirty tandem-view--state)))
  (tandem-view--schedule))

(defun tandem-view--schedule ()
  "Arrange one frame soon, shared by every call made before it fires."
  (unless (tandem-view-state-timer tandem-view--state)
    (setf (tandem-view-state-timer tandem-view--state)
          (run-at-time tandem-view-frame-interval nil #'tandem-view--tick (current-buffer)))))

(defun tandem-view--tick (buffer)
  "Apply what is pending in BUFFER."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setf (tandem-view-state-timer tandem-view--state) nil)
      (when (tandem-view-state-refresh-pending tandem-view--state)
        (setf (tandem-view-state-refresh-pending tandem-view--state) nil)
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
  (when (or (tandem-view-state-dirty tandem-view--state) (tandem-view-state-live-dirty tandem-view--state) (tandem-view-state-progress-dirty tandem-view--state)
            (tandem-view-state-doomed tandem-view--state) (tandem-view-state-composer-dirty tandem-view--state))
    (cl-incf (tandem-view-state-flush-count tandem-view--state))
    (let ((dirty (reverse (tandem-view-state-dirty tandem-view--state)))
          (live (tandem-view-state-live-dirty tandem-view--state))
          (doomed (tandem-view-state-doomed tandem-view--state))
          (progress (tandem-view-state-progress-dirty tandem-view--state))
          (composer (tandem-view-state-composer-dirty tandem-view--state))
          (inhibit-modification-hooks nil))
      (setf (tandem-view-state-dirty tandem-view--state) nil (tandem-view-state-live-dirty tandem-view--state) nil (tandem-view-state-doomed tandem-view--state) nil
            (tandem-view-state-progress-dirty tandem-view--state) nil (tandem-view-state-composer-dirty tandem-view--state) nil)
      (tandem-view--keeping-place
        (dolist (b doomed)
          (when (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b)))
            (delete-region (tandem-view-block-start b)
                           (next-single-property-change (tandem-view-block-start b) 'tandem-block
                                                        nil (marker-position (tandem-view-state-tail tandem-view--state)))))
          (tandem-view--release b))
        (dolist (b (sort (cl-remove-if-not (lambda (b) (memq b (tandem-view-state-blocks tandem-view--state))) dirty)
                         (lambda (a b) (< (tandem-view-block-key a) (tandem-view-block-key b)))))
          (if (and (tandem-view-block-start b) (marker-position (tandem-view-block-start b)))
              (tandem-view--rerender b)
            (tandem-view--insert-before (tandem-view-state-tail tandem-view--state)
                                        (lambda () (tandem-view--insert-block b)))))
        (dolist (b live)
          (unless (memq b dirty) (tandem-view--append-live b)))
        (when progress (tandem-view--redraw-progress)))
      (when composer (tandem-composer-refresh))
      (force-mode-line-update))))

(provide 'tandem-view-frame)
;;; tandem-view-frame.el ends here
