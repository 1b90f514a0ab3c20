;;; bench_view.el --- Session buffer figures beside same-run anchors  -*- lexical-binding: t; -*-

;;; Commentary:
;; Run by bench/run.py in batch Emacs (`bench-view-main').  Prints one JSON
;; line per figure, each a median over several runs, beside an anchor
;; measured in the same run against the same real backend:
;;
;;   view_open_5k_first_screen   open a 5000-turn session buffer
;;                               (anchor: open it rendering every turn at once)
;;   view_open_5k_whole_history  open it and load the whole history: fetch
;;                               and render (anchor: fetching the entries alone)
;;   view_open_5k_history_drawn_later  what that load leaves to idle time: its
;;                               placeholders, all drawn at once (reported)
;;   view_open_5k_whole_history_gc  the garbage collection inside that load
;;   sessions_history_fetch_all  that fetch alone, `sessions/history'
;;                               (anchor: the same with `sessions/entries')
;;   history_reply_read[_gc]     `read' of that reply, and the collections it
;;                               sets off (anchor: the `sessions/entries' pages)
;;   view_stream_10k_deltas      10k streamed deltas until all are on screen
;;                               (anchor: the same events to a no-op handler)
;;   view_input_latency_p99      lateness of a 10 ms timer while they stream
;;                               (anchor: the same with a no-op handler)
;;
;; Batch Emacs has no redisplay, so the figures are Lisp-side costs.

;;; Code:

(require 'cl-lib)
(require 'json)
(defvar bench-view-root (expand-file-name ".." (file-name-directory load-file-name))
  "The tandem checkout.")
(add-to-list 'load-path (expand-file-name "tests/elisp" bench-view-root))

;; Measure compiled code, as an installed package runs: byte-compile every
;; package file into a scratch directory that comes first on `load-path'
;; (tandem-client stays the checkout's, it finds the backend from there).
;; Every file, not a list: a file left out (the block struct, the state)
;; runs interpreted, at several times the cost and garbage.
(defvar bench-view-elc
  (let ((dir (make-temp-file "bench-view-elc-" t))
        (names (cl-loop for f in (directory-files (expand-file-name "elisp" bench-view-root) t
                                                  "\\`tandem.*\\.el\\'")
                        unless (equal (file-name-nondirectory f) "tandem-client.el")
                        collect (file-name-base f))))
    (dolist (name names)
      (copy-file (expand-file-name (concat "elisp/" name ".el") bench-view-root)
                 (expand-file-name (concat name ".el") dir)))
    ;; In a child Emacs: compiling here would load the sources it requires,
    ;; and `require' would then never load the compiled files.
    (unless (zerop (apply #'call-process "emacs" nil nil nil "-Q" "--batch" "-L" dir
                          "-L" (expand-file-name "elisp" bench-view-root)
                          "-f" "batch-byte-compile"
                          (mapcar (lambda (n) (expand-file-name (concat n ".el") dir)) names)))
      (error "Could not byte-compile the package for the benchmark"))
    (push dir load-path)
    dir)
  "Scratch directory holding the compiled view.")
(require 'tandem-view-test-helpers)

(defun bench-view-emit (name value unit anchor anchor-value target)
  "Print figure NAME (VALUE in UNIT) beside ANCHOR (ANCHOR-VALUE) and TARGET."
  (princ (concat (json-encode `((bench . ,name) (value . ,(bench-view-round value))
                                (unit . ,unit) (anchor . ,anchor)
                                (anchor_value . ,(bench-view-round anchor-value))
                                (target . ,target)))
                 "\n")))

(defun bench-view-round (x)
  "Round X to 3 decimals."
  (/ (fround (* x 1000)) 1000.0))

(defun bench-view-median (samples)
  "Return the median of SAMPLES."
  (nth (/ (length samples) 2) (sort (copy-sequence samples) #'<)))

(defun bench-view-ms (fn)
  "Return the milliseconds FN takes (after a garbage collection)."
  (garbage-collect)
  (let ((t0 (float-time))) (funcall fn) (* 1000 (- (float-time) t0))))

(defun bench-view-kill ()
  "Kill every session buffer."
  (dolist (b (buffer-list))
    (when (string-prefix-p "*tandem: " (buffer-name b)) (kill-buffer b))))

;;;; Opening a long session

(defun bench-view-open (info)
  "Figures for opening the session INFO and loading its whole history."
  (let (first all whole fill fetch gc old-fetch read read-gc old-read old-read-gc)
    (dotimes (_ 5)
      (bench-view-kill)
      (let (buffer (open 0) (g0 gc-elapsed))
        (push (setq open (bench-view-ms (lambda () (setq buffer (tandem-view-show info t))))) first)
        (with-current-buffer buffer
          ;; Whole history = open + every older page fetched and rendered.
          (push (+ open (bench-view-ms (lambda () (setq g0 gc-elapsed) (tandem-view-load-older t))))
                whole)
          (push (* 1000 (- gc-elapsed g0)) gc)
          (cl-assert (= 5000 (length (tandem-view-state-blocks tandem-view--state))))
          ;; What the load left to idle time: every placeholder drawn at once.
          (push (bench-view-ms #'tandem-view-fill-all) fill)
          (cl-assert (not (text-property-any (point-min) (point-max) 'tandem-undrawn t))))))
    (dotimes (_ 3)
      (bench-view-kill)
      ;; Anchor: the same buffer built with every turn rendered at open.
      (let ((tandem-view-initial-entries 100000))
        (push (bench-view-ms (lambda () (tandem-view-show info t))) all)))
    (dotimes (_ 5)
      ;; Anchor of the whole history: fetching it alone, as the view does.
      (push (bench-view-ms (lambda () (bench-view-fetch-history (plist-get info :id)))) fetch)
      ;; And the old way: `sessions/entries', 10k entries a page.
      (push (bench-view-ms (lambda () (bench-view-fetch-entries (plist-get info :id)))) old-fetch))
    (let ((new (prin1-to-string (tandem-request "sessions/history"
                                                (list :session (plist-get info :id)
                                                      :limit 100000))))
          (old (mapcar #'prin1-to-string (bench-view-fetch-entries (plist-get info :id)))))
      (dotimes (_ 5)
        (let ((n (bench-view-read-gc (list new))) (o (bench-view-read-gc old)))
          (push (car n) read) (push (cdr n) read-gc)
          (push (car o) old-read) (push (cdr o) old-read-gc))))
    (bench-view-kill)
    (bench-view-emit "view_open_5k_first_screen" (bench-view-median first) "ms"
                     "view_open_5k_render_all_at_open" (bench-view-median all) 150)
    (bench-view-emit "view_open_5k_whole_history" (bench-view-median whole) "ms"
                     "sessions_history_fetch_all" (bench-view-median fetch) 300)
    (bench-view-emit "view_open_5k_history_drawn_later" (bench-view-median fill) "ms"
                     "view_open_5k_whole_history" (bench-view-median whole) nil)
    (bench-view-emit "view_open_5k_whole_history_gc" (bench-view-median gc) "ms"
                     "view_open_5k_whole_history" (bench-view-median whole) nil)
    (bench-view-emit "sessions_history_fetch_all" (bench-view-median fetch) "ms"
                     "sessions_entries_fetch_all" (bench-view-median old-fetch) nil)
    (bench-view-emit "history_reply_read" (bench-view-median read) "ms"
                     "entries_replies_read" (bench-view-median old-read) nil)
    (bench-view-emit "history_reply_read_gc" (bench-view-median read-gc) "ms"
                     "entries_replies_read_gc" (bench-view-median old-read-gc) nil)))

(defun bench-view-fetch-history (session)
  "Fetch every entry of SESSION as the view does (rows made plists)."
  (tandem-view-history-entries
   (plist-get (tandem-request "sessions/history" (list :session session :limit 100000))
              :entries)))

(defun bench-view-fetch-entries (session)
  "Fetch every entry of SESSION with `sessions/entries'; return the replies."
  (let ((before most-positive-fixnum) (replies nil))
    (while (let* ((reply (tandem-request "sessions/entries"
                                         (list :session session :before before :limit 10000)))
                  (page (plist-get reply :entries)))
             (push reply replies)
             (when page (setq before (plist-get (car page) :seq)))
             (and page (> before 1))))
    replies))

(defun bench-view-read-gc (texts)
  "Read TEXTS at the default collection settings: (MS . GC-MS) in all."
  (garbage-collect)
  (let ((gc-cons-threshold 800000) (gc-cons-percentage 0.1)
        (g0 gc-elapsed) (t0 (float-time)))
    (dolist (text texts) (read-from-string text))
    (cons (* 1000 (- (float-time) t0)) (* 1000 (- gc-elapsed g0)))))

;;;; Streaming

(defun bench-view-stream-once (session buffer noop)
  "Stream 10k deltas to SESSION; return (TOTAL-MS . LATENESS-SAMPLES).
With NOOP the events go to a handler that does nothing (the anchor);
else to the session BUFFER."
  (let* ((received 0) (late nil) (last (float-time))
         (tandem-event-functions
          (if noop (list (lambda (e) (cl-incf received (length (plist-get e :text)))))
            tandem-event-functions))
         (timer (run-at-time 0.01 0.01 (lambda ()
                                         (let ((now (float-time)))
                                           (push (* 1000 (max 0 (- now last 0.01))) late)
                                           (setq last now)))))
         (t0 (float-time)))
    (unwind-protect
        (progn
          (tandem-request "debug/emit" (list :session session :count 10000 :text "ab"
                                             :kind "delta"))
          (tandem-test-wait-until
           (if noop (lambda () (>= received 20000))
             (lambda () (with-current-buffer buffer
                          (let ((b (gethash 1 (tandem-view-state-by-turn tandem-view--state))))
                            (and b (>= (tandem-view-block-text-shown b)
                                       (length (tandem-view-block-live-text b)))
                                 (>= (length (tandem-view-block-live-text b)) 20000))))))
           60))
      (cancel-timer timer))
    (cons (* 1000 (- (float-time) t0)) late)))

(defun bench-view-stream ()
  "Figures for 10k streamed deltas: total time and timer lateness."
  (let (totals anchors late anchor-late)
    (dotimes (_ 5)
      (bench-view-kill)
      (let* ((dir (make-temp-file "bench-view-stream-" t))
             (info (tandem-request "sessions/new" (list :cwd dir)))
             (buffer (tandem-view-show info t))
             (ours (bench-view-stream-once (plist-get info :id) buffer nil))
             (anchor (bench-view-stream-once (plist-get info :id) buffer t)))
        (push (car ours) totals)
        (push (car anchor) anchors)
        (setq late (append (cdr ours) late) anchor-late (append (cdr anchor) anchor-late))
        (delete-directory dir t)))
    (cl-flet ((p99 (xs) (nth (min (1- (length xs)) (floor (* 0.99 (length xs))))
                             (sort (copy-sequence xs) #'<))))
      (bench-view-emit "view_stream_10k_deltas" (bench-view-median totals) "ms"
                       "event_transport_10k_deltas_noop" (bench-view-median anchors) 1000)
      (bench-view-emit "view_input_latency_p99" (p99 late) "ms"
                       "timer_latency_p99_noop_handler" (p99 anchor-late) 50))))

(defun bench-view-main ()
  "Run every view figure against a fresh backend and state directory."
  (let ((tandem-home (make-temp-file "bench-view-home-" t))
        (dir (make-temp-file "bench-view-5k-" t))
        (tandem-log-events nil))
    (unwind-protect
        (progn
          (tandem-start)
          (bench-view-open
           (tandem-view-test-session-with
            dir (apply #'append (mapcar #'tandem-view-test-chat-turn (number-sequence 1 5000)))
            "five thousand turns"))
          (bench-view-stream))
      (tandem-stop)
      (delete-directory bench-view-elc t)
      (delete-directory tandem-home t)
      (delete-directory dir t))))

(provide 'bench_view)
;;; bench_view.el ends here
