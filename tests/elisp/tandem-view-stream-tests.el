;;; tandem-view-stream-tests.el --- The live path: streamed Markdown and the events log  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend and a real session buffer; the events of a streamed
;; answer go through the client's own dispatch (`tandem--on-events', what
;; the backend's `tandem--events' call runs), cut at awkward places
;; (inside fences), with frames and jit-lock run by hand: batch Emacs has
;; no redisplay.  The rendering while streaming must equal the settled
;; one, and what a frame fontifies must depend on the new text only.

;;; Code:

(require 'tandem-view-test-helpers)

(defun tandem-view-stream-test--send (events)
  "Deliver EVENTS (plists without :seq) as one batch on the current connection."
  (let* ((conn tandem--connection)
         (session (tandem-view-state-session tandem-view--state))
         (seq (gethash session (oref conn last-seq) 0)))
    (tandem--on-events conn (mapcar (lambda (e) (append (list :session session :seq (cl-incf seq))
                                                        e))
                                    events))))

(defun tandem-view-stream-test--entry (type &rest props)
  "Return an `entry' event for the next journal entry of TYPE with PROPS."
  (list :kind "entry"
        :entry (append (list :seq (1+ (tandem-view-state-last-seq tandem-view--state))
                             :type type :turn 1 :ts "2026-12-01T10:00:00.000Z")
                       props)))

(defun tandem-view-stream-test--start ()
  "Start turn 1 in the current session buffer (its first entries)."
  (tandem-view-stream-test--send (list (tandem-view-stream-test--entry
                                        "turn_start" :origin "chat"
                                        :provider "openai:fake-model" :model "fake-model")))
  (tandem-view-stream-test--send (list (list :kind "turn-started" :turn 1
                                             :provider "openai:fake-model" :model "fake-model")
                                       (tandem-view-stream-test--entry "user" :text "Go")))
  (tandem-view-flush))

(defun tandem-view-stream-test--pieces (text size cuts)
  "Cut TEXT into pieces of SIZE characters, also cutting at each of CUTS."
  (let ((points (sort (delete-dups (append cuts (number-sequence size (1- (length text)) size)))
                      #'<))
        (from 0) (out nil))
    (dolist (p points) (when (< from p (length text)) (push (substring text from p) out) (setq from p)))
    (nreverse (cons (substring text from) out))))

(defun tandem-view-stream-test--body (text)
  "Return the bounds (BEG . END) of the body showing TEXT in the buffer."
  (goto-char (point-min))
  (let ((beg (search-forward (substring text 0 20))))
    (cons (- beg 20) (+ (- beg 20) (length text)))))

(defun tandem-view-stream-test--faces (bounds)
  "Return the `font-lock-face' of every character within BOUNDS."
  (cl-loop for pos from (car bounds) below (cdr bounds)
           collect (get-text-property pos 'font-lock-face)))

(defun tandem-view-stream-test--face-at (bounds string)
  "Return the faces (a list) at the first STRING within BOUNDS."
  (goto-char (car bounds))
  (search-forward string (cdr bounds))
  (ensure-list (get-text-property (match-beginning 0) 'font-lock-face)))

(ert-deftest tandem-view-stream-live-equals-settled ()
  "While it streams the answer is Markdown; once settled it is rendered alike.
Deltas are cut every 7 characters and inside fences (\"``\" | \"`python\");
each frame is followed by what jit-lock would run.  Both engines."
  (dolist (engine '(markdown-mode builtin))
    ;; Every frame redoes the growing paragraph (no throttle), as when idle.
    (let ((tandem-view-markdown-engine engine) (tandem-view-live-fontify-interval 0))
      (tandem-view-test-with-session '(:steps [])
        (let* ((text (tandem-view-test-markdown-answer 14000))
               (fence (string-match "```python" text))
               (close (string-match "^```$" text fence))
               (pieces (tandem-view-stream-test--pieces text 7 (list (+ fence 2) (+ close 1))))
               (sent 0) (checked nil))
          (tandem-view-stream-test--start)
          (while pieces
            (let ((batch (cl-loop repeat 20 while pieces collect (pop pieces))))
              (tandem-view-stream-test--send
               (mapcar (lambda (p) (list :kind "delta" :turn 1 :stream "text" :text p)) batch))
              (cl-incf sent (apply #'+ (mapcar #'length batch)))
              (tandem-view-flush)
              (tandem-view-fontify-region (point-min) (point-max))
              ;; Live Markdown: the first code block is code once it closed.
              (when (and (not checked) (> sent (+ close 4)))
                (setq checked t)
                (let ((bounds (tandem-view-stream-test--body (substring text 0 sent))))
                  (should (memq 'font-lock-keyword-face
                                (tandem-view-stream-test--face-at bounds "def f_1_1")))
                  (should-not (memq 'font-lock-keyword-face
                                    (tandem-view-stream-test--face-at bounds "Intro")))))))
          (should checked)
          (let* ((bounds (tandem-view-stream-test--body text))
                 (live (tandem-view-stream-test--faces bounds)))
            (should (equal (buffer-substring-no-properties (car bounds) (cdr bounds)) text))
            ;; A piece of a long block (section 3, split into segments) is code.
            (should (memq 'font-lock-keyword-face
                          (tandem-view-stream-test--face-at bounds "def f_3_100(")))
            (should (memq 'font-lock-keyword-face
                          (tandem-view-stream-test--face-at bounds "def f_4_2(")))
            ;; Prose after a tilde fence is prose again.
            (should-not (memq 'font-lock-keyword-face
                              (tandem-view-stream-test--face-at bounds "After the code of section 4")))
            (tandem-view-stream-test--send
             (list (tandem-view-stream-test--entry "assistant" :text text)))
            (tandem-view-flush)
            (should (string-empty-p (tandem-view-block-live-text
                                     (gethash 1 (tandem-view-state-by-turn tandem-view--state)))))
            (tandem-view-fontify-region (point-min) (point-max))
            (let ((settled-bounds (tandem-view-stream-test--body text)))
              (should (equal (tandem-view-stream-test--faces settled-bounds) live))
              ;; Shown once: the streamed text gave way to the entry.
              (goto-char (cdr settled-bounds))
              (should-not (search-forward "Intro **bold** start" nil t)))))))))

(ert-deftest tandem-view-stream-fontifies-new-and-visible-text-only ()
  "A 200 KB answer: each frame fontifies what is new; the settle reuses it.
The fontifier is watched: no call sees more than a segment and a line,
whatever the answer's length.  Settling neither cuts the answer into
segments again nor fontifies it again: the streamed text, its segments
and faces become the settled body; only the segment still open is redone."
  (dolist (engine '(builtin markdown-mode))
    (let ((tandem-view-markdown-engine engine))
      (tandem-view-test-with-session '(:steps [])
        (let* ((text (tandem-view-test-markdown-answer 200000))
               (pieces (tandem-view-stream-test--pieces text 700 nil))
               (calls nil) (scanned nil) (window 3000)
               (bound (+ (* 2 tandem-view-segments-max) 200))
               (watch (lambda (start stop &rest _) (push (- stop start) calls)))
               (watch-scan (lambda (beg end scan)
                             (push (- end beg (tandem-view-scan-pos scan)) scanned))))
          (tandem-view-stream-test--start)
          (advice-add 'tandem-view-markdown--apply :before watch '((name . stream-test)))
          (advice-add 'tandem-view-segments-scan :before watch-scan '((name . stream-test)))
          (unwind-protect
              (let ((b nil))
                (while pieces
                  (tandem-view-stream-test--send
                   (list (list :kind "delta" :turn 1 :stream "text" :text (pop pieces))))
                  (tandem-view-flush)
                  (setq b (gethash 1 (tandem-view-state-by-turn tandem-view--state)))
                  ;; jit-lock: the window shows the newest WINDOW characters.
                  (let ((end (marker-position (tandem-view-block-text-marker b))))
                    (tandem-view-fontify-region (max (point-min) (- end window)) end)))
                (should (= (tandem-view-rope-length (tandem-view-block-text-rope b)) (length text)))
                (should (> (length calls) 250))
                (should (<= (apply #'max calls) bound))
                (should (<= (apply #'max scanned) bound))
                (setq calls nil scanned nil)
                (let* ((bounds (tandem-view-stream-test--body text))
                       (streamed (tandem-view-stream-test--faces
                                  (cons (car bounds) (+ (car bounds) 2000)))))
                  (should (get-text-property (+ (car bounds) 8) 'font-lock-face)) ; **bold**
                  (tandem-view-stream-test--send
                   (list (tandem-view-stream-test--entry "assistant" :text text)))
                  (tandem-view-flush)
                  ;; The turn's end re-renders the block again: the body is reused again.
                  (tandem-view-stream-test--send
                   (list (tandem-view-stream-test--entry "turn_end" :outcome "completed")))
                  (tandem-view-flush)
                  (should (tandem-view-block-end-entry
                           (gethash 1 (tandem-view-state-by-turn tandem-view--state))))
                  (let ((bounds (tandem-view-stream-test--body text)))
                    (tandem-view-fontify-region (- (cdr bounds) window) (cdr bounds))
                    (tandem-view-fontify-region (car bounds) (+ (car bounds) window))
                    ;; The last line and the open segment, not the 200 KB.
                    (should (<= (apply #'+ scanned) bound))
                    (should (<= (apply #'+ calls) bound))
                    ;; The beginning kept the faces it got while streaming (a
                    ;; code block that closed once out of sight is code now).
                    (should (cl-every (lambda (was now) (or (null was) (equal was now)))
                                      streamed
                                      (tandem-view-stream-test--faces
                                       (cons (car bounds) (+ (car bounds) 2000)))))
                    (should (string-empty-p (tandem-view-block-live-text
                                             (gethash 1 (tandem-view-state-by-turn
                                                         tandem-view--state))))))))
            (advice-remove 'tandem-view-markdown--apply 'stream-test)
            (advice-remove 'tandem-view-segments-scan 'stream-test)))))))

(defun tandem-view-stream-test--stream (text pieces)
  "Stream PIECES of TEXT as deltas of turn 1, a frame and a full jit-lock pass each.
Return the bounds of the body once all of it is in."
  (dolist (p pieces)
    (tandem-view-stream-test--send (list (list :kind "delta" :turn 1 :stream "text" :text p)))
    (tandem-view-flush)
    (tandem-view-fontify-region (point-min) (point-max)))
  (tandem-view-stream-test--body text))

(defun tandem-view-stream-test--fresh-faces (text)
  "Return the faces of TEXT's body after rendering turn 1 afresh (not in place)."
  (let ((b (gethash 1 (tandem-view-state-by-turn tandem-view--state)))
        (inhibit-read-only t))
    (setf (tandem-view-block-body-text b) nil)
    (remove-text-properties (point-min) (point-max) '(tandem-body nil))
    (tandem-view--rerender b)
    (tandem-view-fontify-region (point-min) (point-max))
    (tandem-view-stream-test--faces (tandem-view-stream-test--body text))))

(ert-deftest tandem-view-stream-code-block-closed-across-deltas ()
  "A streaming code block shows plain until its fence closes, then as code.
The block is longer than a segment, its closing fence comes in two
deltas; the segments shown plain before are fontified once it closes.
Settled, the faces are those of a fresh rendering; a block the answer
never closes is code once the answer settles."
  (let ((tandem-view-markdown-engine 'builtin) (tandem-view-live-fontify-interval 0))
    (tandem-view-test-with-session '(:steps [])
      (let* ((code (mapconcat (lambda (i) (format "def f_%d(x):\n    return x + %d\n" i i))
                              (number-sequence 1 60) ""))
             (text (concat "Intro **bold**.\n\n```python\n" code "`"))
             (rest "``\n\nAfter the code, *prose*.\n"))
        (tandem-view-stream-test--start)
        (let ((bounds (tandem-view-stream-test--stream
                       text (tandem-view-stream-test--pieces text 50 nil))))
          ;; Shown while the fence is open: plain code, Markdown prose.
          (should-not (memq 'font-lock-keyword-face
                            (tandem-view-stream-test--face-at bounds "def f_1(")))
          (should-not (memq 'font-lock-keyword-face
                            (tandem-view-stream-test--face-at bounds "def f_59(")))
          (should (memq 'bold (tandem-view-stream-test--face-at bounds "bold"))))
        (let* ((whole (concat text rest))
               (bounds (tandem-view-stream-test--stream whole (list (substring rest 0 3)
                                                                   (substring rest 3)))))
          (should (memq 'font-lock-keyword-face
                        (tandem-view-stream-test--face-at bounds "def f_1(")))
          (should (memq 'font-lock-keyword-face
                        (tandem-view-stream-test--face-at bounds "def f_59(")))
          (should (memq 'italic (tandem-view-stream-test--face-at bounds "prose")))
          (let ((live (tandem-view-stream-test--faces bounds)))
            (tandem-view-stream-test--send
             (list (tandem-view-stream-test--entry "assistant" :text whole)))
            (tandem-view-flush)
            (tandem-view-fontify-region (point-min) (point-max))
            (should (equal (tandem-view-stream-test--faces (tandem-view-stream-test--body whole))
                           live))
            (should (equal (tandem-view-stream-test--fresh-faces whole) live))))))
    ;; A fence left open by the whole answer: code once settled, as a fresh rendering.
    (tandem-view-test-with-session '(:steps [])
      (let ((text "Look:\n\n```python\ndef g(x):\n    return x\n"))
        (tandem-view-stream-test--start)
        (let ((bounds (tandem-view-stream-test--stream
                       text (tandem-view-stream-test--pieces text 9 nil))))
          (should-not (memq 'font-lock-keyword-face
                            (tandem-view-stream-test--face-at bounds "def g("))))
        (tandem-view-stream-test--send
         (list (tandem-view-stream-test--entry "assistant" :text text)))
        (tandem-view-flush)
        (tandem-view-fontify-region (point-min) (point-max))
        (let* ((bounds (tandem-view-stream-test--body text))
               (settled (tandem-view-stream-test--faces bounds)))
          (should (memq 'font-lock-keyword-face
                        (tandem-view-stream-test--face-at bounds "def g(")))
          (should (equal (tandem-view-stream-test--fresh-faces text) settled)))))))

(ert-deftest tandem-view-stream-in-place-builtin-equals-the-string-one ()
  "The built-in engine in place (session buffers) gives the faces of its string form.
Headings, emphasis, inline code, fence lines, code in its language's
mode, a language without a mode, and a tilde fence."
  (let ((tandem-view-markdown-engine 'builtin)
        (text (concat "# Title\n\nSome **bold**, *it*, `code`.\n\n"
                      "```python\ndef f():\n    return 1  # c\n```\n\n"
                      "~~~nosuchlang\nplain *not italic*\n~~~\n\nAfter **more**.\n")))
    (let ((string (tandem-view-markdown-fontify text)))
      (with-temp-buffer
        (insert text)
        (tandem-view-segments-mark (point-min) (point-max) (tandem-view-scan-create))
        (tandem-view-fontify-region (point-min) (point-max))
        (should (equal (cl-loop for pos from (point-min) below (point-max)
                                collect (get-text-property pos 'font-lock-face))
                       (cl-loop for i from 0 below (length string)
                                collect (get-text-property i 'font-lock-face string))))
        (goto-char (point-min))
        (search-forward "def")
        (should (memq 'font-lock-keyword-face
                      (ensure-list (get-text-property (match-beginning 0) 'font-lock-face))))))))

(ert-deftest tandem-view-stream-events-log-costs-nothing-unread ()
  "The events log keeps messages unprinted until read; then every one is shown.
Only the last `tandem-events-buffer-lines' are kept."
  (let ((tandem-log-events t) (tandem-events-buffer-lines 50))
    (when (get-buffer "*tandem-events*") (kill-buffer "*tandem-events*"))
    (tandem-test-with-backend
      (tandem-events-buffer)            ; whatever the start logged
      (dotimes (i 20) (tandem-request "debug/echo" (list :value (format "message-%02d" i))))
      (with-current-buffer "*tandem-events*"
        (should-not (string-match-p "message-" (buffer-string))))
      (with-current-buffer (tandem-events-buffer)
        (dotimes (i 20)
          (should (string-match-p (format "-> .*message-%02d" i) (buffer-string)))
          (should (string-match-p (format "<- .*message-%02d" i) (buffer-string))))
        ;; Oldest first.
        (should (< (string-match "message-03" (buffer-string))
                   (string-match "message-04" (buffer-string)))))
      (dotimes (i 40) (tandem-request "debug/echo" (list :value (format "again-%02d" i))))
      (with-current-buffer (tandem-events-buffer)
        (should (<= (count-lines (point-min) (point-max)) 50))
        (should (string-match-p "again-39" (buffer-string)))
        (should-not (string-match-p "again-10" (buffer-string))))
      ;; A long string is kept cut short, so the ring holds no large text.
      (tandem-request "debug/echo" (list :value (make-string 100000 ?z)))
      (should (< (length (format "%S" (ring-elements tandem--log-ring))) 2000)))))

(ert-deftest tandem-view-stream-holds-collections-off-and-gives-them-back ()
  "While text streams `gc-cons-threshold' is raised; the user's value comes back.
At the turn's end, or after a quiet second; a larger user value is
never lowered, and one the user set while held is kept."
  ;; A hold left by an earlier test's stream (no turn end) is forgotten first.
  (tandem-view-gc-release)
  (tandem-view-gc--drop)
  (tandem-view-test-with-session '(:steps [])
    (let ((gc-cons-threshold 800000)
          (tandem-view-stream-gc-cons-threshold (* 32 1024 1024)))
      (unwind-protect
          (cl-flet ((delta (text) (tandem-view-stream-test--send
                                   (list (list :kind "delta" :turn 1 :stream "text" :text text)))))
            (tandem-view-stream-test--start)
            (should (= gc-cons-threshold 800000))
            (delta "Hello")
            (should (= gc-cons-threshold (* 32 1024 1024)))
            (delta " world")
            (tandem-view-stream-test--send (list (list :kind "turn-ended" :turn 1 :status "succeeded")))
            ;; Given back once the turn's end has settled (a few frames).
            (should (= gc-cons-threshold (* 32 1024 1024)))
            (tandem-test-wait-until (lambda () (= gc-cons-threshold 800000)) 2)
            (should-not tandem-view-gc--timer)
            ;; No turn end (the backend went away): a quiet second releases it.
            (delta "more")
            (should (= gc-cons-threshold (* 32 1024 1024)))
            (setq tandem-view-gc--last (- (float-time) 2))
            (tandem-view-gc--check)
            (should (= gc-cons-threshold 800000))
            ;; A binding around the turn's end (a whole-history load, say):
            ;; the hold outlives it and the next quiet check gives it back.
            (delta "more")
            (let ((gc-cons-threshold (* 512 1024 1024)))
              (tandem-view-stream-test--send
               (list (list :kind "turn-ended" :turn 1 :status "succeeded")))
              (tandem-view-gc--give-back))
            (should (= gc-cons-threshold (* 32 1024 1024)))
            (setq tandem-view-gc--last (- (float-time) 2))
            (tandem-view-gc--check)
            (should (= gc-cons-threshold 800000))
            (should-not tandem-view-gc--timer)
            ;; Set by the user while held: kept, and the hold given up.
            (delta "more")
            (setq gc-cons-threshold (* 5 1024 1024))
            (dotimes (_ tandem-view-gc--max-tries) (tandem-view-gc-release))
            (should (= gc-cons-threshold (* 5 1024 1024)))
            (should-not tandem-view-gc--saved)
            (should-not tandem-view-gc--timer)
            ;; Already larger: never lowered, nothing to give back.
            (setq gc-cons-threshold (* 100 1024 1024))
            (delta "more")
            (should (= gc-cons-threshold (* 100 1024 1024)))
            (should-not tandem-view-gc--saved)
            ;; Off: left alone.
            (setq gc-cons-threshold 800000)
            (let ((tandem-view-stream-gc-cons-threshold nil))
              (delta "more")
              (should (= gc-cons-threshold 800000))))
        (tandem-view-gc--drop)))))

(ert-deftest tandem-view-stream-hold-scales-with-the-streams ()
  "Each session streaming at once adds its share; the last turn's end gives back.
One stream's end while others stream lowers nothing (that would collect
mid-stream); a stream whose end never came is forgotten after a quiet
second; the number of streams counted is capped."
  (tandem-view-gc--drop)
  (let ((gc-cons-threshold 800000)
        (tandem-view-stream-gc-cons-threshold (* 32 1024 1024))
        (tandem-view-gc-max-streams 3)
        (mb (* 1024 1024)))
    (unwind-protect
        (progn
          (tandem-view-gc-hold 'a)
          (should (= gc-cons-threshold (* 32 mb)))
          (tandem-view-gc-hold 'b)
          (tandem-view-gc-hold 'a)
          (should (= gc-cons-threshold (* 64 mb)))
          (tandem-view-gc-hold 'c)
          (tandem-view-gc-hold 'd)
          (should (= gc-cons-threshold (* 96 mb)))     ; capped at three
          (tandem-view-gc-release 'a)
          (tandem-view-gc-release 'b)
          (tandem-view-gc-release 'c)
          (should (= gc-cons-threshold (* 96 mb)))
          ;; d's end never comes; e keeps streaming: d is forgotten, nothing lowered.
          (tandem-view-gc-hold 'e)
          (setcdr (assq 'd tandem-view-gc--streams) (- (float-time) 2))
          (tandem-view-gc--check)
          (should (equal (mapcar #'car tandem-view-gc--streams) '(e)))
          (should (= gc-cons-threshold (* 96 mb)))
          (tandem-view-gc-release 'e)
          (should (= gc-cons-threshold (* 96 mb)))   ; once the end has settled
          (should tandem-view-gc--pending)
          (tandem-view-gc--give-back)
          (should (= gc-cons-threshold 800000))
          (should-not tandem-view-gc--timer)
          (should-not tandem-view-gc--streams))
      (tandem-view-gc--drop))))

(ert-deftest tandem-view-frame-delay-after-a-quiet-spell ()
  "At once after a quiet spell; the next frame an interval after that one.
Only then an interval from when it is asked: the rest of a burst whose
first text showed at once waits one interval, not two."
  (let* ((tandem-view-frame-interval 0.05)
         (tandem-view--frame-at-once nil)
         (tandem-view--last-frame (- (float-time) 1)))
    (should (= 0 (tandem-view--frame-delay)))
    (should tandem-view--frame-at-once)
    ;; That frame began 10 ms ago: the next comes 40 ms from now.
    (setq tandem-view--last-frame (- (float-time) 0.01))
    (let ((delay (tandem-view--frame-delay)))
      (should (< 0.03 delay 0.0401)))
    (should-not tandem-view--frame-at-once)
    ;; Streaming on: an interval from now.
    (should (= 0.05 (tandem-view--frame-delay)))))

(ert-deftest tandem-view-frames-of-several-buffers-take-turns ()
  "One timer serves every session buffer, one buffer a firing, in the order asked.
Asking again before the frame changes nothing; with three asking, the
frames are spread over one `tandem-view-frame-interval', not run back to back."
  ;; The real queue and timer (a let would hand a frame already pending,
  ;; firing meanwhile, this test's queue): set aside, then put back.
  (let ((saved tandem-view--frame-buffers)
        (tandem-view-frame-interval 0.06)
        (ticks nil)
        (buffers (mapcar (lambda (name) (generate-new-buffer name)) '("a" "b" "c"))))
    (when tandem-view--frame-timer (cancel-timer tandem-view--frame-timer))
    (setq tandem-view--frame-buffers nil tandem-view--frame-timer nil)
    (unwind-protect
        (cl-letf (((symbol-function 'tandem-view--tick)
                   (lambda (b)
                     (push (cons (buffer-name b) (float-time)) ticks)
                     (with-current-buffer b (setf (tandem-view-state-timer tandem-view--state) nil)))))
          (dolist (b buffers)
            (with-current-buffer b
              (setq tandem-view--state (tandem-view-state-create))
              (tandem-view--schedule)
              (tandem-view--schedule)))
          (should (= 3 (length tandem-view--frame-buffers)))
          (tandem-test-wait-until (lambda () (= 3 (length ticks))) 2)
          (setq ticks (nreverse ticks))
          (should (equal (mapcar #'car ticks) (mapcar #'buffer-name buffers)))
          ;; b and c came a third and two thirds of an interval later (not at once).
          (should (> (- (cdr (nth 1 ticks)) (cdr (nth 0 ticks))) 0.01))
          (should (> (- (cdr (nth 2 ticks)) (cdr (nth 1 ticks))) 0.01))
          (should-not tandem-view--frame-timer)
          ;; A killed buffer leaves the queue.
          (with-current-buffer (car buffers) (tandem-view--schedule) (tandem-view--unschedule))
          (should-not tandem-view--frame-buffers)
          ;; A frame timer cancelled by someone else does not stop the frames.
          (cancel-timer tandem-view--frame-timer)
          (setq ticks nil)
          (with-current-buffer (nth 1 buffers) (tandem-view--schedule))
          (tandem-test-wait-until (lambda () ticks) 2))
      (when tandem-view--frame-timer (cancel-timer tandem-view--frame-timer))
      (setq tandem-view--frame-buffers saved
            tandem-view--frame-timer (and saved (run-at-time 0 nil #'tandem-view--frame)))
      (mapc #'kill-buffer buffers))))

(provide 'tandem-view-stream-tests)
;;; tandem-view-stream-tests.el ends here
