;;; tty_stream_driver.el --- One run of bench_stream_tty.py, inside `emacs -nw'  -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded by an interactive `emacs -nw' that bench/bench_stream_tty.py
;; starts in a detached tmux session.  It streams a long Markdown answer
;; into one full-frame window (or four), then writes what it measured as JSON to
;; $BENCH_TTY_OUT and exits.  $BENCH_TTY_MODE says into what:
;;
;;   tandem  the session buffer, through the real path: a real backend,
;;           the fake OpenAI server streaming the answer in CHUNK-character
;;           deltas at RATE a second, the client's dispatch, the view;
;;   tandem-markdown-mode  the same with `markdown-mode' as the fontifier;
;;   tandem-x4  four sessions (four projects, one backend) streaming the
;;           same answer at once, each in a window of its own (a 2x2 grid)
;;           above the overview (`tandem-sessions-list'), which follows them;
;;   idle    nothing streams, for as long: the floor (keys, timer, redisplay);
;;   anchor  a `markdown-mode' buffer (code blocks fontified natively) the
;;           same chunks are appended to at the same rate, point at its end.
;;
;; Measured in Emacs: its CPU (utime+stime of /proc/self/stat) from the
;; first chunk to one second after the last (the settle included), the
;; lateness of a 10 ms timer, and when each <f5> was handled (the harness
;; sends them with tmux at a steady rate and knows when it sent them).
;; $BENCH_TTY_READY is written once <f5> is bound, so no key is lost.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'tandem-view-test-helpers)
(require 'markdown-mode)
(defvar markdown-fontify-code-blocks-natively)

(defvar bench-tty-mode (getenv "BENCH_TTY_MODE") "What the answer streams into.")
(defvar bench-tty-size (string-to-number (or (getenv "BENCH_TTY_SIZE") "200000"))
  "Characters of the answer.")
(defvar bench-tty-chunk (string-to-number (or (getenv "BENCH_TTY_CHUNK") "111"))
  "Characters per delta.")
(defvar bench-tty-rate (string-to-number (or (getenv "BENCH_TTY_RATE") "200"))
  "Deltas a second.")
(defvar bench-tty-idle 2.0 "Seconds of idle key latency before the stream.")
(defvar bench-tty-tail 1.0 "Seconds measured after the last chunk (the settle).")

(defvar bench-tty-keys nil "When each <f5> was handled, newest first.")
(defvar bench-tty-ticks nil "Timer firings (float-time), newest first.")
(defvar bench-tty-first nil
  "When the first chunk arrived: (TIME CPU-TICKS GCS-DONE GC-ELAPSED CONSED STIME).")
(defvar bench-tty-last nil "When the last chunk arrived (or the turn ended).")
(defvar bench-tty-chunks 0 "Chunks (events) applied.")
(defvar bench-tty-extra nil "More to report: a plist.")
(defvar bench-tty-go nil "When the stream was asked for (the idle phase ends).")
(defvar bench-tty-gc-log nil
  "Each collection once the stream began: (END-TIME . GC-ELAPSED-BEFORE), newest first.
`post-gc-hook' runs before `gc-elapsed' counts that collection: its
duration is the next entry's `gc-elapsed' (or the last one's) minus its own.")
(defvar bench-tty-marks nil
  "Moments of the run worth setting beside the keys: (TIME . WHAT), newest first.
WHAT is \"send\" (a prompt's send command returned; with how long it took),
\"ended\" (a turn-ended event) or \"overview\" (a redraw; how long).")

(defun bench-tty--gc-done ()
  "Note a collection (from `post-gc-hook')."
  (when bench-tty-first
    (push (cons (float-time) gc-elapsed) bench-tty-gc-log)))

(defun bench-tty--gc-durations ()
  "Return each collection as [END-TIME SECONDS], oldest first."
  (let ((next gc-elapsed) (out nil))
    (dolist (g bench-tty-gc-log)        ; newest first
      (push (vector (car g) (- next (cdr g))) out)
      (setq next (cdr g)))
    (vconcat out)))

(defun bench-tty-key ()
  "Record when this key was handled."
  (interactive)
  (push (float-time) bench-tty-keys))

(defun bench-tty-cpu (&optional system-only)
  "Return this Emacs's CPU time so far in clock ticks (utime + stime).
With SYSTEM-ONLY, stime alone (time in the kernel)."
  (with-temp-buffer
    (insert-file-contents "/proc/self/stat")
    (goto-char (point-max))
    (let ((fields (split-string (buffer-substring (1+ (search-backward ")")) (point-max)))))
      ;; Fields after the command name start at field 3; utime is 14, stime 15.
      (+ (if system-only 0 (string-to-number (nth 11 fields)))
         (string-to-number (nth 12 fields))))))

(defun bench-tty-consed ()
  "Return what Emacs allocated so far, in bytes, by kind (what GC counts)."
  (list (* 16 cons-cells-consed) string-chars-consed (* 8 vector-cells-consed)
        (* 56 intervals-consed) (* 8 floats-consed)))

(defun bench-tty-profile ()
  "Return the file name stem for a profile of this run, or nil for none."
  (let ((stem (getenv "BENCH_TTY_PROFILE"))) (and stem (not (string-empty-p stem)) stem)))

(defvar bench-tty-sync nil "Synchronous requests during the stream: (METHOD . SECONDS).")

(defun bench-tty--time-request (fn method &rest args)
  "Call FN with METHOD and ARGS, noting how long Emacs waited."
  (let ((t0 (float-time)))
    (prog1 (apply fn method args)
      (when bench-tty-first (push (cons method (- (float-time) t0)) bench-tty-sync)))))

(defun bench-tty-chunk-arrived ()
  "Note one chunk."
  (when (and (not bench-tty-first) (bench-tty-profile))
    (require 'profiler)
    (advice-add 'tandem-request :around #'bench-tty--time-request)
    (profiler-start (intern (or (getenv "BENCH_TTY_PROFILER") "cpu"))))
  (unless bench-tty-first
    (setq bench-tty-first (list (float-time) (bench-tty-cpu) gcs-done gc-elapsed
                                (bench-tty-consed) (bench-tty-cpu t))))
  (cl-incf bench-tty-chunks))

(defun bench-tty-finish ()
  "Write the figures of this run and exit (on an error, say so in the report)."
  (condition-case err (bench-tty-report)
    (error (with-temp-file (getenv "BENCH_TTY_OUT")
             (insert (json-encode (list :error (format "%s first=%S last=%S" (error-message-string err) bench-tty-first bench-tty-last)))))
           (kill-emacs 1))))

(defun bench-tty--heap ()
  "Collect once more (after the measured window) and return what it cost.
A plist: :ms, the collection's duration, nearly all of it marking (little
garbage is left by then), and :live_mb, the live heap it marked."
  (let* ((t0 (float-time))
         (stats (garbage-collect))
         (ms (* 1000 (- (float-time) t0))))
    (list :gc_after_ms ms
          :live_mb (/ (apply #'+ (mapcar (lambda (s) (* (nth 1 s) (nth 2 s)))
                                         (cl-remove-if-not (lambda (s) (integerp (nth 2 s)))
                                                           stats)))
                      1e6))))

(defun bench-tty-report ()
  "Write the figures of this run and exit."
  (when (bench-tty-profile)
    (profiler-report)
    (with-current-buffer (seq-find (lambda (b) (string-match-p "Profiler-Report" (buffer-name b)))
                                   (buffer-list))
      (goto-char (point-min))
      (while (not (eobp)) (ignore-errors (profiler-report-expand-entry t)) (forward-line 1))
      (write-region (point-min) (point-max)
                    (concat (bench-tty-profile) "-" bench-tty-mode ".txt")))
    (with-temp-file (concat (bench-tty-profile) "-" bench-tty-mode "-sync.txt")
      (insert (format "%S" bench-tty-sync))))
  (let* ((log (get-buffer "*tandem-events*"))
         (bench-tty-extra
          (append bench-tty-extra
                  (list :events_log_chars (if log (buffer-size log) 0)
                        ;; The overview's redraws after the streams were asked for.
                        :overview_refreshes (cl-count-if (lambda (o) (> (car o) bench-tty-go))
                                                         bench-tty-overview)
                        :overview_running_max (apply #'max 0 (mapcar #'cdr bench-tty-overview))
                        :overview_running_last (or (cdar bench-tty-overview) 0)
                        :overview_max_ms bench-tty-overview-ms
                        :gcs (- gcs-done (nth 2 bench-tty-first))
                        ;; Each collection: [end-time seconds], oldest first.
                        :gc_log (bench-tty--gc-durations)
                        :marks (vconcat (mapcar (lambda (m) (vector (car m) (cdr m)))
                                                (reverse bench-tty-marks)))
                        :gc_seconds (- gc-elapsed (nth 3 bench-tty-first))
                        :stime_ticks (- (bench-tty-cpu t) (nth 5 bench-tty-first))
                        :consed (vconcat (cl-mapcar #'- (bench-tty-consed)
                                                    (nth 4 bench-tty-first))))))
         (end (+ bench-tty-last bench-tty-tail))
         (cpu (- (bench-tty-cpu) (nth 1 bench-tty-first)))
         ;; Last: its collection is counted in none of the figures above.
         (heap (bench-tty--heap)))
    (with-temp-file (getenv "BENCH_TTY_OUT")
      (insert (json-encode
               (append
                (list :mode bench-tty-mode :cpu_ticks cpu :go bench-tty-go :start (car bench-tty-first)
                      :last bench-tty-last :end end :chunks bench-tty-chunks
                      :wall (- (float-time) (car bench-tty-first))
                      :keys (vconcat (reverse bench-tty-keys))
                      :ticks (vconcat (reverse bench-tty-ticks)))
                bench-tty-extra heap))))
    (kill-emacs 0)))

(defun bench-tty-after-last ()
  "The last chunk is in: measure the settle, then finish."
  (setq bench-tty-last (float-time))
  (run-at-time bench-tty-tail nil #'bench-tty-finish))

;;;; Into the tandem view

(defvar bench-tty-overview nil
  "What the overview showed while the streams ran: (TIME . RUNNING-ROWS), newest first.")

(defvar bench-tty-overview-ms 0.0 "The longest redraw of the overview, in ms.")

(defun bench-tty--overview-shown (show rows)
  "Redraw the overview with ROWS by SHOW; note when, how long, how many were running."
  (let ((t0 (float-time)) (gcs gcs-done))
    (funcall show rows)
    (let ((ms (* 1000 (- (float-time) t0))))
      (setq bench-tty-overview-ms (max bench-tty-overview-ms ms))
      (push (cons (float-time) (format "overview %.1f ms%s" ms (if (> gcs-done gcs) " (a collection in it)" "")))
            bench-tty-marks)))
  (push (cons (float-time) (cl-count "running" rows :key (lambda (r) (plist-get r :state))
                                     :test #'equal))
        bench-tty-overview))

(defun bench-tty--windows (n)
  "Split the frame into N windows (1 or 4: a 2x2 grid) above a 10-line one.
Return the N windows, then the bottom one (or nil when N is 1)."
  (delete-other-windows)
  (if (= n 1)
      (list (selected-window) nil)
    (let* ((top (selected-window))
           (bottom (split-window top -10 'below))
           (right (split-window top nil 'right))
           (bottom-left (split-window top nil 'below))
           (bottom-right (split-window right nil 'below)))
      (list top right bottom-left bottom-right bottom))))

(defun bench-tty-tandem (text &optional n)
  "Stream TEXT into N session buffers (1 by default) at once.
Through one real backend and the fake model, each session in a project of
its own.  With N above 1 each buffer has a window of its own and the
overview (`tandem-sessions-list') is shown below them, following the
sessions' states while they stream."
  (let* ((n (or n 1))
         (reply `(:reply (:text ,text :chunk_size ,bench-tty-chunk
                          :delay ,(/ 1.0 bench-tty-rate))))
         (fake (tandem-view-test-start-fake `(:steps ,(make-vector n reply))))
         (windows nil) (views nil) (ended 0))
    (setenv "OPENAI_BASE_URL" (cdr fake))
    (setq tandem-python (getenv "BENCH_TTY_PYTHON")
          tandem-home (make-temp-file "bench-tty-home-" t)
          tandem-provider "openai:fake-model")
    (tandem-start)
    (dotimes (i n)
      (let ((info (tandem-request "sessions/new"
                                  (list :cwd (make-temp-file "bench-tty-project-" t)
                                        :title (format "stream %d" (1+ i))))))
        (push (save-window-excursion (tandem-view-show info)) views)))
    (setq views (nreverse views))
    ;; The windows once every buffer exists: showing one may split the frame.
    (setq windows (bench-tty--windows n))
    (cl-mapc #'set-window-buffer windows views)
    (select-window (car windows))
    (when (> n 1)
      (advice-add 'tandem-overview--show :around #'bench-tty--overview-shown)
      (let ((overview (save-window-excursion (tandem-sessions-list))))
        (set-window-buffer (car (last windows)) overview)))
    (add-hook 'tandem-event-functions
              (lambda (e)
                (pcase (plist-get e :kind)
                  ("delta" (bench-tty-chunk-arrived))
                  ("turn-ended"
                   (push (cons (float-time) "ended") bench-tty-marks)
                   (when (= (cl-incf ended) n) (bench-tty-after-last))))))
    (lambda ()
      ;; One send a command, 50 ms apart (faster than a user switches and
      ;; types): four sends in one command held the keys up for 140-260 ms.
      (let ((delay 0))
        (dolist (view views)        ; a binding of its own for each closure
          (run-at-time delay nil (lambda ()
                                   (let ((t0 (float-time)))
                                     (with-current-buffer view
                                       ;; The send key as typed: no waiting for the reply.
                                       (goto-char (point-max))
                                       (insert "Stream the long answer, please.")
                                       (funcall (key-binding (kbd "C-c C-c"))))
                                     (push (cons (float-time) (format "send %.1f ms" (* 1000 (- (float-time) t0))))
                                           bench-tty-marks))))
          (setq delay (+ delay 0.05)))))))

;;;; Into a markdown-mode buffer (the anchor)

(defun bench-tty-anchor (text)
  "Append TEXT in chunks to a `markdown-mode' buffer, at the same rate."
  (switch-to-buffer (get-buffer-create "*anchor*"))
  (delete-other-windows)
  (markdown-mode)
  (setq-local markdown-fontify-code-blocks-natively t)
  (lambda ()
    (let ((pos 0) (timer nil))
      (setq timer
            (run-at-time
             0 (/ 1.0 bench-tty-rate)
             (lambda ()
               (when pos
                 (with-current-buffer "*anchor*"
                   (goto-char (point-max))
                   (insert (substring text pos (min (length text) (+ pos bench-tty-chunk))))
                   (set-window-point (get-buffer-window (current-buffer)) (point-max)))
                 (bench-tty-chunk-arrived)
                 (setq pos (+ pos bench-tty-chunk))
                 (when (>= pos (length text))
                   (setq pos nil)
                   (cancel-timer timer)
                   (bench-tty-after-last)))))))))

;;;; Nothing streamed (the harness's own floor)

(defun bench-tty-idle (text)
  "Stream nothing for as long as TEXT would take: the harness's own floor.
Emacs still handles the keys and the 10 ms timer, and redisplays."
  (switch-to-buffer (get-buffer-create "*idle*"))
  (delete-other-windows)
  (insert (substring text 0 8000))
  (lambda ()
    (bench-tty-chunk-arrived)
    (setq bench-tty-chunks (/ (length text) bench-tty-chunk))
    (run-at-time (/ (length text) bench-tty-chunk 1.0 bench-tty-rate) nil #'bench-tty-after-last)))

(defun bench-tty-main ()
  "Set up the mode's buffer, signal readiness, idle a while, then stream."
  (let* ((text (tandem-view-test-markdown-answer bench-tty-size))
         (go (pcase bench-tty-mode
               ("tandem" (bench-tty-tandem text))
               ("tandem-markdown-mode" (setq tandem-view-markdown-engine 'markdown-mode)
                (bench-tty-tandem text))
               ("tandem-x4" (bench-tty-tandem text 4))
               ("idle" (bench-tty-idle text))
               (_ (bench-tty-anchor text)))))
    (global-set-key [f5] #'bench-tty-key)
    (run-at-time 0.01 0.01 (lambda () (push (float-time) bench-tty-ticks)))
    (garbage-collect)
    (add-hook 'post-gc-hook #'bench-tty--gc-done)
    (with-temp-file (getenv "BENCH_TTY_READY") (insert (number-to-string (emacs-pid))))
    (run-at-time bench-tty-idle nil (lambda () (setq bench-tty-go (float-time)) (funcall go)))))

(let ((form (getenv "BENCH_TTY_EVAL")))
  ;; An experiment: a form evaluated once the package is loaded.
  (when (and form (not (string-empty-p form))) (eval (car (read-from-string form)) t)))

(run-at-time 0.2 nil #'bench-tty-main)

(provide 'tty_stream_driver)
;;; tty_stream_driver.el ends here
