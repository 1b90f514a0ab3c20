;;; tandem-view-history-tests.el --- The whole history of a long session, lazily rendered  -*- lexical-binding: t; -*-

;;; Commentary:
;; `tandem-view-load-older' with a prefix fetches every older entry in the
;; compact form of `sessions/history' and inserts the older turns with
;; their Markdown bodies unscanned (tandem-view-lazy.el): these tests hold
;; that such a block, once displayed (what jit-lock runs), is the block the
;; eager path renders, and that commands work on it before it is displayed.
;; A real backend, real journals.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-view-test-helpers)
(require 'tandem-rewind)

(defun tandem-view-history-test--turn (n)
  "Return the entries of turn N, of a shape that depends on N."
  (pcase (% n 6)
    (0 (list (list :type "turn_start" :turn n :origin "chat" :provider "anthropic:claude"
                   :model "claude")
             (list :type "user" :turn n :text (format "Read the file %d\nand fix it" n))
             (list :type "reasoning" :turn n :text "Look at it first, then edit.")
             (list :type "tool_call" :turn n :call_id (format "c%d" n) :name "read_file"
                   :title "a.py" :input '(:path "a.py"))
             (list :type "tool_result" :turn n :call_id (format "c%d" n) :status "completed"
                   :output "def f():\n    pass\n")
             (list :type "assistant" :turn n :text (tandem-view-test-markdown-answer 2500))
             (list :type "turn_end" :turn n :outcome "succeeded"
                   :usage '(:input_tokens 1200 :output_tokens 300))))
    (1 (list (list :type "turn_start" :turn n :origin "directive" :provider "openai:fake-model"
                   :model "fake-model")
             (list :type "directive_open" :turn n :workspace "w1" :directive (format "D%d" n)
                   :action "implement")
             (list :type "user" :turn n :text (format "Directive D%d: do it.\nAnchor: a.py 1-3" n))
             (list :type "assistant" :turn n :text "Done, **see** `a.py`.")
             (list :type "directive_close" :turn n :directive (format "D%d" n)
                   :outcome "succeeded" :summary "Did it.")
             (list :type "turn_end" :turn n :outcome "succeeded")))
    (2 (list (list :type "turn_start" :turn n :origin "chat" :provider "openai:fake-model"
                   :model "fake-model")
             (list :type "user" :turn n :text "This fails")
             (list :type "turn_end" :turn n :outcome "failed" :error "boom")))
    ;; A turn the backend never ended (it crashed): not settled, so inserted
    ;; decorated, its Markdown body scanned when displayed.
    (3 (butlast (tandem-view-test-chat-turn n (tandem-view-test-markdown-answer 1500))))
    (_ (tandem-view-test-chat-turn n))))

(defconst tandem-view-history-test--entries
  (append (apply #'append (mapcar #'tandem-view-history-test--turn (number-sequence 1 40)))
          '((:type "mystery_kind" :note "from a newer tandem")
            (:type "rewind" :before_turn 40))
          (apply #'append (mapcar #'tandem-view-history-test--turn (number-sequence 40 48))))
  "A journal of 48 turns of several shapes, a rewind and an unknown kind.")

(defconst tandem-view-history-test--props
  '(font-lock-face tandem-part tandem-header read-only front-sticky keymap line-prefix
                   wrap-prefix tandem-markdown tandem-interaction button)
  "The properties a rendering must give alike, with the block's identity.")

(defun tandem-view-history-test--display ()
  "Run on the whole transcript what jit-lock runs when it is displayed."
  (let ((end (marker-position (tandem-view-state-tail tandem-view--state))))
    (dolist (fn jit-lock-functions)
      (unless (eq fn t) (funcall fn (point-min) end)))))

(defun tandem-view-history-test--display-region (beg end)
  "Run on BEG..END what jit-lock runs when that text is displayed."
  (dolist (fn jit-lock-functions)
    (unless (eq fn t) (funcall fn beg end))))

(defun tandem-view-history-test--snapshot ()
  "Return the transcript as runs of (TEXT BLOCK-ID PROPERTY-VALUES...)."
  (let ((pos (point-min)) (end (marker-position (tandem-view-state-tail tandem-view--state)))
        (runs nil))
    (while (< pos end)
      (let* ((next (min end (next-property-change pos nil end)))
             (block (get-text-property pos 'tandem-block))
             (key (cons (and block (or (tandem-view-block-turn block)
                                       (tandem-view-block-key block)))
                        (mapcar (lambda (p) (get-text-property pos p))
                                tandem-view-history-test--props)))
             (text (buffer-substring-no-properties pos next)))
        ;; Runs that differ only in properties not compared are one run.
        (if (and runs (equal (cdr (car runs)) key))
            (setcar (car runs) (concat (car (car runs)) text))
          (push (cons text key) runs))
        (setq pos next)))
    (nreverse runs)))

(defmacro tandem-view-history-test--with-session (var &rest body)
  "Run BODY with VAR bound to the info of a session holding the test journal."
  (declare (indent 1) (debug t))
  `(tandem-test-with-backend
     (let* ((dir (make-temp-file "tandem-view-history-" t))
            (,var (tandem-view-test-session-with dir tandem-view-history-test--entries "history")))
       (unwind-protect (progn ,@body)
         (delete-directory dir t)))))

(ert-deftest tandem-view-lazy-history-renders-as-the-eager-path ()
  "Older turns loaded at once and then displayed look as if rendered at open.
Text, faces, fold parts, keymaps, prefixes and the block of every
character are compared against the buffer built with every turn
rendered at open (bodies scanned at insertion)."
  (tandem-view-history-test--with-session info
    (let (lazy eager)
      (let ((tandem-view-initial-entries 30))
        (with-current-buffer (tandem-view-show info t)
          (should (< (length (tandem-view-state-blocks tandem-view--state)) 10))
          (tandem-view-load-older t)
          ;; Inserted undecorated: no faces, no Markdown segments yet.
          (goto-char (point-min))
          (search-forward "Read the file 6")
          (should (get-text-property (point) 'tandem-undecorated))
          (should-not (get-text-property (point) 'tandem-markdown))
          (should-not (get-text-property (point) 'line-prefix))
          (re-search-forward "^▾ Turn 9 · ")
          (should-not (get-text-property (point) 'tandem-undecorated))
          (search-forward "Intro **bold**")
          (should (get-text-property (point) 'tandem-unscanned))
          (tandem-view-history-test--display)
          (dolist (prop '(tandem-undecorated tandem-unscanned))
            (should-not (text-property-not-all (point-min) (point-max) prop nil)))
          (setq lazy (tandem-view-history-test--snapshot))
          (kill-buffer)))
      (let ((tandem-view-initial-entries 100000))
        (with-current-buffer (tandem-view-show info t)
          (tandem-view-history-test--display)
          (setq eager (tandem-view-history-test--snapshot))
          (kill-buffer)))
      (should (> (length eager) 500))
      ;; The code of a long answer is fontified as code in both.
      (should (cl-some (lambda (run) (memq 'font-lock-keyword-face
                                           (ensure-list (nth 2 run))))
                       lazy))
      (should (equal (mapconcat #'car lazy "") (mapconcat #'car eager "")))
      (should (equal lazy eager)))))

(ert-deftest tandem-view-commands-act-on-turns-not-yet-displayed ()
  "Navigation, folding, rewind at point and copying work on a lazily inserted turn."
  (tandem-view-history-test--with-session info
    (let ((tandem-view-initial-entries 30))
      (with-current-buffer (tandem-view-show info t)
        (tandem-view-load-older t)
        (should (string-match-p "start of session" (tandem-view-test-text)))
        ;; By turn: n from the top reaches turns 1, 2, 3 in order.
        (goto-char (point-min))
        (dolist (n '(1 2 3))
          (tandem-view-next-turn)
          (should (looking-at (format "[▾▸] Turn %d · " n))))
        (tandem-view-previous-turn)
        (should (looking-at "▾ Turn 2 · You"))
        ;; Rewind at point knows the session and the turn.
        (let ((map (get-text-property (point) 'keymap)))
          (should (eq (lookup-key map "R") #'tandem-rewind-before-turn-at-point)))
        (should (equal (tandem-rewind--at-point) (list (plist-get info :id) 2)))
        ;; Copy: the text of a turn not displayed yet is its text.
        (goto-char (point-min))
        (re-search-forward "^▾ Turn 6 · ")
        (let* ((block (get-text-property (point) 'tandem-block))
               (start (tandem-view-block-start block)) (end (tandem-view--block-end block)))
          (copy-region-as-kill start end)
          (should (string-match-p "\\`▾ Turn 6 · You · .*\nRead the file 6\nand fix it\n"
                                  (car kill-ring)))
          (should (string-match-p "def f" (car kill-ring)))
          ;; Fold it and open it again: rendered in place, the rest untouched.
          (let ((before (tandem-view-test-text)))
            (goto-char start)
            (tandem-view-toggle-fold)
            (should (looking-at "▸ Turn 6 · You · .* — Read the file 6  ✔ succeeded"))
            (tandem-view-toggle-fold)
            (should (equal (tandem-view-test-text) before))))
        ;; TAB on a part inside a turn not shown yet folds that part, not the turn.
        (goto-char (point-min))
        (re-search-forward "^▾ Turn 12 · ")
        (should (get-text-property (point) 'tandem-undecorated))
        (re-search-forward "^  ▸ Reasoning (6 words)")
        (beginning-of-line)
        (tandem-view-toggle-fold)
        (should (looking-at "  ▾ Reasoning (6 words)"))
        (forward-line 1)
        (should (looking-at "Look at it first, then edit."))
        (should (eq (get-text-property (point) 'font-lock-face) 'tandem-view-reasoning))
        (kill-buffer)))))

(ert-deftest tandem-view-whole-history-collects-once-inside-the-command ()
  "Loading the whole history collects garbage exactly once, at its end.
The collection is not left to the next command: after the load the
allocation counter starts from zero again, so a later figure pays none
of this load's garbage."
  (tandem-view-history-test--with-session info
    (let ((tandem-view-initial-entries 30) (gc-cons-threshold 800000))
      (with-current-buffer (tandem-view-show info t)
        (garbage-collect)
        (let ((before gcs-done))
          (tandem-view-load-older t)
          (should (= (- gcs-done before) 1)))
        ;; The threshold was raised for the one call only.
        (should (= gc-cons-threshold 800000))
        (kill-buffer)))))

(ert-deftest tandem-view-history-rows-become-entries ()
  "A `sessions/history' row is the entry as written; a malformed row is named."
  (should (equal (tandem-view-history-entry [7 "user" 3 "2026-01-01T00:00:00Z" "hi" nil])
                 '(:seq 7 :type "user" :turn 3 :ts "2026-01-01T00:00:00Z" :text "hi")))
  (should (equal (tandem-view-history-entry [8 "rewind" nil "t" nil (:before-turn 2)])
                 '(:seq 8 :type "rewind" :ts "t" :before-turn 2)))
  (dolist (bad '([1 "user"] (1 "user" 3 "t" "x" nil) ["1" "user" 3 "t" "x" nil]
                 [1 user 3 "t" "x" nil] [1 "user" 3 "t" "x" "rest"]))
    (let ((err (should-error (tandem-view-history-entry bad))))
      (should (string-match-p "Malformed entry in a session history reply" (cadr err))))))

(ert-deftest tandem-view-render-time-cached-by-minute-is-exact ()
  "Header times cached by minute equal the time formatted from scratch.
Today and another day, in zones a whole, half and three quarters of an
hour from UTC, second by second across a minute boundary."
  (let ((zone (getenv "TZ")))
    (unwind-protect
        (dolist (tz '("UTC0" "IST-5:30" "NST3:30" "NPT-5:45"))
          (set-time-zone-rule tz)
          (setq tandem-view-render--today nil)
          (dolist (base (list (current-time) (time-subtract (current-time) (* 3 86400))))
            (dotimes (i 4)
              (let* ((time (time-add base (* i 29)))
                     (ts (format-time-string "%FT%T.123Z" time t))
                     (want (format-time-string
                            (if (equal (format-time-string "%F" time) (format-time-string "%F"))
                                "%H:%M:%S" "%F %H:%M")
                            time)))
                (should (equal (tandem-view-render-time ts) want))
                ;; Asked again: from the cache, still the same.
                (should (equal (tandem-view-render-time ts) want))))))
      (set-time-zone-rule zone)
      (setq tandem-view-render--today nil))))

;; Asked for every header of a long history: the cached minute is used
;; only when the rest of the timestamp is what the full match accepts.
(ert-deftest tandem-view-render-time-cached-checks-the-rest ()
  "A cached minute serves only timestamps the full match would accept.
Other seconds and a +00:00 zone take it; another zone, a bad second or
a cut timestamp are formatted from scratch, as before the cache."
  (let ((zone (getenv "TZ")))
    (unwind-protect
        (progn
          (set-time-zone-rule "IST-5:30")
          (setq tandem-view-render--today nil)
          (let ((minute (format-time-string "%FT%H:%M" (current-time) t)))
            ;; The first one matches whole and caches its minute.
            (should (tandem-view-render-time (concat minute ":07.5Z")))
            (dolist (tail '(":08Z" ":59.999Z" ":09+00:00"))
              (let ((ts (concat minute tail)))
                (should (tandem-view-render--time-cached ts))
                (should (equal (tandem-view-render-time ts) (tandem-view-render--time-parsed ts)))))
            (dolist (tail '(":08+01:00" ":0xZ" ":08" ":08Zjunk" "Z"))
              (let ((ts (concat minute tail)))
                (should-not (tandem-view-render--time-cached ts))
                (should (equal (tandem-view-render-time ts)
                               (tandem-view-render--time-parsed ts)))))))
      (set-time-zone-rule zone)
      (setq tandem-view-render--today nil))))

(ert-deftest tandem-view-block-directive-follows-new-entries ()
  "A block's directive, kept between calls, changes with its entries and meta."
  (let ((b (tandem-view-block-create :key 1 :turn 1)))
    (push (list :type "turn_start" :turn 1 :origin "chat") (tandem-view-block-entries b))
    (should-not (tandem-view-block-directive b))
    (should-not (tandem-view-block-directive b))
    (setf (tandem-view-block-meta b) (list :directive "D1"))
    (should (equal (tandem-view-block-directive b) '(:directive "D1" :action nil)))
    (push (list :type "directive_open" :turn 1 :directive "D2" :action "review")
          (tandem-view-block-entries b))
    (should (equal (tandem-view-block-directive b) '(:directive "D2" :action "review")))
    (should (equal (tandem-view-block-end-entry b) nil))
    (push (list :type "turn_end" :turn 1 :outcome "succeeded") (tandem-view-block-entries b))
    (should (equal (plist-get (tandem-view-block-end-entry b) :outcome) "succeeded"))))

;;;; Placeholders of a long load (tandem-view-fill.el)

(defmacro tandem-view-history-test--with-placeholders (var &rest body)
  "Run BODY in a buffer of the test session whose older turns are placeholders.
VAR is bound to the session's info; the oldest and the newest older turn
are drawn."
  (declare (indent 1) (debug t))
  `(tandem-view-history-test--with-session ,var
     (let ((tandem-view-initial-entries 30) (tandem-view-fill-min 5) (tandem-view-fill-drawn 1))
       (let ((buffer (tandem-view-show ,var t)))
         (unwind-protect (with-current-buffer buffer (tandem-view-load-older t) ,@body)
           (when (buffer-live-p buffer) (kill-buffer buffer)))))))

(defun tandem-view-history-test--eager (info)
  "Return the snapshot of INFO's session with every turn rendered at open."
  (let ((tandem-view-initial-entries 100000))
    (with-current-buffer (tandem-view-show info t)
      (prog1 (progn (tandem-view-history-test--display) (tandem-view-history-test--snapshot))
        (kill-buffer)))))

(ert-deftest tandem-view-fill-placeholders-drawn-on-idle-as-the-eager-path ()
  "A long load leaves placeholders; drawn on idle, they look as if rendered at open."
  (tandem-view-history-test--with-session info
    (let ((eager (tandem-view-history-test--eager info))
          (tandem-view-initial-entries 30) (tandem-view-fill-min 5) (tandem-view-fill-drawn 1))
      (with-current-buffer (tandem-view-show info t)
        (tandem-view-load-older t)
        (should (text-property-any (point-min) (point-max) 'tandem-undrawn t))
        ;; The oldest turn (what a window at the top shows) is drawn.
        (goto-char (point-min))
        (should (re-search-forward "^▸ Turn 1 · Directive D1 · " nil t))
        (should (search-forward "▸ Turn 2 …\n" nil t))
        (should-not (search-forward "Read the file 6" nil t))
        ;; Every block is in the buffer, one placeholder each, in order.
        (goto-char (point-min))
        (dolist (n '(1 2 3))
          (tandem-view-next-turn)
          (should (looking-at (format "[▾▸] Turn %d " n)))
          (should (eq (tandem-view-block-turn (get-text-property (point) 'tandem-block)) n)))
        (should tandem-view-fill--timer)
        ;; What the idle timer runs: every placeholder drawn, the timer gone.
        (tandem-view-fill--idle (current-buffer))
        (should-not tandem-view-fill--pending)
        (should-not tandem-view-fill--timer)
        (should-not (text-property-any (point-min) (point-max) 'tandem-undrawn t))
        (tandem-view-history-test--display)
        (should (equal (tandem-view-history-test--snapshot) eager))
        (kill-buffer)))))

(ert-deftest tandem-view-fill-search-and-display-draw-placeholders ()
  "A search draws every placeholder first; displaying one draws it at the next frame."
  (tandem-view-history-test--with-placeholders info
    ;; Displayed (jit-lock): the turn is drawn by the next frame, not inside
    ;; redisplay; the turns around it stay placeholders.
    (goto-char (point-min))
    (search-forward "▸ Turn 2 …")
    (let ((beg (line-beginning-position)))
      (tandem-view-history-test--display-region beg (1+ (line-end-position)))
      (should (get-text-property beg 'tandem-undrawn))
      (tandem-view-flush)
      (goto-char beg)
      (should (looking-at "▾ Turn 2 · You · "))
      (should-not (get-text-property beg 'tandem-undrawn))
      ;; Turn 3 never ended (drawn at once); turn 4 is still a placeholder.
      (should (search-forward "▸ Turn 4 …" nil t)))
    ;; A search: the hook draws every one before it looks.
    (should (memq #'tandem-view-fill-all isearch-mode-hook))
    (set-window-buffer (selected-window) (current-buffer))
    (goto-char (point-min))
    (isearch-mode t)
    (unwind-protect
        (should-not (text-property-any (point-min) (point-max) 'tandem-undrawn t))
      (isearch-done))
    (goto-char (point-min))
    (should (search-forward "Read the file 6" nil t))))

(ert-deftest tandem-view-fill-commands-draw-the-turn-they-act-on ()
  "Folding a placeholder draws its turn; point and the other blocks stay."
  (tandem-view-history-test--with-placeholders info
    (goto-char (point-min))
    (search-forward "▸ Turn 6 …")
    (beginning-of-line)
    (let ((block (get-text-property (point) 'tandem-block)))
      ;; Unfolded by default: TAB on its header folds it, drawn first.
      (tandem-view-toggle-fold)
      (should (looking-at "▸ Turn 6 · You · .* — Read the file 6  ✔ succeeded"))
      (should (eq (get-text-property (point) 'tandem-block) block))
      (tandem-view-toggle-fold)
      (should (looking-at "▾ Turn 6 · You · "))
      (forward-line 1)
      (should (looking-at "Read the file 6")))
    ;; The next turn is still a placeholder, where it was.
    (should (search-forward "▸ Turn 7 …" nil t))
    ;; Killing the buffer stops its idle drawing.
    (let ((timer tandem-view-fill--timer))
      (should (timerp timer))
      (kill-buffer)
      (should-not (memq timer timer-idle-list)))))

(ert-deftest tandem-view-fill-choose-leaves-both-ends-drawn ()
  "Only a long load has placeholders, and never at its oldest or newest end."
  (let ((tandem-view-fill-min 5) (tandem-view-fill-drawn 2)
        (blocks (cl-loop for i from 1 to 9 collect (tandem-view-block-create :key i :turn i))))
    (should-not (tandem-view-fill-choose (seq-take blocks 5)))
    (let ((table (tandem-view-fill-choose blocks)))
      (should (equal (cl-loop for b in blocks when (gethash b table) collect (tandem-view-block-turn b))
                     '(3 4 5 6 7)))))
  (let ((tandem-view-fill-min 5) (tandem-view-fill-drawn 4)
        (blocks (cl-loop for i from 1 to 8 collect (tandem-view-block-create :key i :turn i))))
    ;; Both ends would cover every block: none is left.
    (should-not (tandem-view-fill-choose blocks))))

(ert-deftest tandem-view-fill-refresh-forgets-placeholders ()
  "`g' renders the buffer again: nothing is left to draw, the idle timer stops."
  (tandem-view-history-test--with-placeholders info
    (should tandem-view-fill--pending)
    (let ((timer tandem-view-fill--timer))
      (tandem-view-refresh)
      (should-not tandem-view-fill--pending)
      (should-not tandem-view-fill--timer)
      (should-not (memq timer timer-idle-list))
      (should-not (text-property-any (point-min) (point-max) 'tandem-undrawn t)))))

(provide 'tandem-view-history-tests)
;;; tandem-view-history-tests.el ends here
