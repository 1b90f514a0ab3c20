;;; tandem-view-tests.el --- The session buffer against a real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Every test drives a real `tandem serve' and, for live turns, the fake
;; OpenAI-compatible server of tests/fakes playing a script: real turns,
;; real journal entries, real events.

;;; Code:

(require 'tandem-view-test-helpers)

(defconst tandem-view-test--write-script
  '(:steps [(:reply (:thinking "The user wants a file. Look first." :text "Let me look."
                     :tool_calls [(:name "list_files" :input (:path "."))]))
            (:reply (:text "I will write it."
                     :tool_calls [(:name "write_file"
                                   :input (:path "hello.txt" :content "hi\n"))]))
            (:reply (:text "Done. Here is how to read it:\n\n```python\ndef read():\n    return open('hello.txt').read()\n```\n"))])
  "A turn with reasoning, a tool call, a permission prompt and code.")

(defun tandem-view-test--line-matching (regexp)
  "Return the start of the first line matching REGEXP, or nil."
  (save-excursion
    (goto-char (point-min))
    (and (re-search-forward regexp nil t) (line-beginning-position))))

(defun tandem-view-test--wait-interaction ()
  "Wait for a pending interaction row; return its position."
  (tandem-test-wait-until
   (lambda () (and (not (tandem-view-state-dirty tandem-view--state))
                   (next-single-property-change (point-min) 'tandem-interaction)))
   20))

;;;; A real turn, every part of it

(ert-deftest tandem-view-real-turn-renders-every-kind ()
  "A live turn shows header, reasoning, tool calls, the prompt row and the outcome."
  (tandem-view-test-with-session tandem-view-test--write-script
    (should (string-match-p "\\`\\*tandem: tandem-view-project-.* — view test\\*\\'" (buffer-name)))
    (let ((turn (tandem-view-test-send "Please create hello.txt")))
      (should (equal turn 1))
      (should (string-match-p "cancel" (tandem-view-test-text)))
      (let ((row (tandem-view-test--wait-interaction)))
        (should (string-match-p "waiting for you: Write hello.txt" (tandem-view-test-text)))
        (goto-char row)
        (execute-kbd-macro "y"))
      (tandem-view-test-wait-turn turn)
      (let ((text (tandem-view-test-text)))
        (should (string-match-p "▾ Turn 1 · You · [0-9:]+ · openai:fake-model" text))
        (should (string-match-p "Please create hello.txt" text))
        (should (string-match-p "▸ Reasoning (7 words)" text))
        (should-not (string-match-p "Look first" text)) ; folded
        (should (string-match-p "▸ ⚙ list_files .*\\[completed\\]" text))
        (should (string-match-p "▸ ⚙ write_file .*\\[completed\\]" text))
        (should (string-match-p "\\? Write hello.txt — Allow once" text))
        (should (string-match-p "✔ succeeded · 1 file changed" text))
        (should (string-match-p "C-c C-c send" text)))
      ;; Markdown: fontified when displayed (jit-lock), the code block in
      ;; python-mode.  Batch Emacs has no redisplay: run what jit-lock runs.
      (goto-char (point-min))
      (search-forward "def read")
      (should (get-text-property (match-beginning 0) 'tandem-markdown))
      (tandem-view-fontify-region (point-min) (point-max))
      (should-not (text-property-not-all (point-min) (point-max) 'tandem-markdown nil))
      (goto-char (point-min))
      (search-forward "def read")
      (should (memq 'font-lock-keyword-face
                    (ensure-list (get-text-property (match-beginning 0) 'font-lock-face))))
      ;; A tool call expands to its input and output with TAB.
      (goto-char (tandem-view-test--line-matching "⚙ write_file"))
      (tandem-view-toggle-fold)
      (should (string-match-p "content: hi" (tandem-view-test-text)))
      (should (string-match-p "Created hello.txt" (tandem-view-test-text)))
      (should (file-exists-p (expand-file-name "hello.txt" project))))))

(ert-deftest tandem-view-interaction-key-only-on-row ()
  "An answer key acts only while point is on the interaction row."
  (tandem-view-test-with-session
      '(:steps [(:reply (:text "Writing." :tool_calls [(:name "write_file"
                                                        :input (:path "a.txt" :content "x"))]))
                (:reply (:text "Refused, fine."))])
    (let ((turn (tandem-view-test-send "write a.txt"))
          (row (tandem-view-test--wait-interaction)))
      ;; On the header line, "n" is a transcript key (next turn), not an answer.
      (goto-char (tandem-view-test--line-matching "▾ Turn 1"))
      (execute-kbd-macro "n")
      ;; In the composer it is just a letter.
      (goto-char (point-max))
      (execute-kbd-macro "n")
      (should (equal (tandem-composer-draft) "n"))
      (accept-process-output nil 0.3)
      (should (plist-get (tandem-view-state-running tandem-view--state) :waiting))
      (should (next-single-property-change (point-min) 'tandem-interaction))
      ;; The command refuses a position off the row.
      (should-error (tandem-view-answer-at (point-min) "reject") :type 'user-error)
      ;; On the row, "n" rejects (RET: no reason for the model).
      (goto-char (+ row 4))
      (execute-kbd-macro (kbd "n RET"))
      (tandem-view-test-wait-turn turn)
      (should (string-match-p "\\? Write a.txt — Reject" (tandem-view-test-text)))
      (should-not (file-exists-p (expand-file-name "a.txt" project)))
      (should (equal (tandem-composer-draft) "n")))))

;;;; Journals of every entry type

(defconst tandem-view-test--kinds
  (append
   (tandem-view-test-chat-turn 1)
   '((:type "turn_start" :turn 2 :origin "directive" :provider "openai:fake-model" :model "fake-model")
     (:type "directive_open" :turn 2 :workspace "w1" :directive "D7" :action "implement" :attempt 1)
     (:type "user" :turn 2 :text "Directive D7: make it async.\nAnchor: a.py 1-3\nReferences: none")
     (:type "assistant" :turn 2 :text "Made it async.")
     (:type "directive_close" :turn 2 :directive "D7" :outcome "succeeded" :summary "Made it async.")
     (:type "turn_end" :turn 2 :outcome "succeeded")
     (:type "compaction" :summary "Earlier we talked about files." :tokens_before 900 :tokens_after 90)
     (:type "mystery_kind" :note "from a newer tandem")
     (:type "rewind_recovery" :before_turn 2 :outcome "rolled-back"
            :message "A rewind before turn 2 was interrupted by a crash; it was rolled back.")
     (:type "turn_start" :turn 3 :origin "chat" :provider "openai:fake-model" :model "fake-model")
     (:type "user" :turn 3 :text "This one is rewound")
     (:type "turn_end" :turn 3 :outcome "failed" :error "boom")
     (:type "rewind" :before_turn 3)
     (:type "turn_start" :turn 3 :origin "directive" :provider "openai:fake-model")
     (:type "directive_open" :turn 3 :workspace "w1" :directive "D8" :action "discuss")
     (:type "user" :turn 3 :text "Discuss D8")
     (:type "assistant" :turn 3 :text "Sure.")
     (:type "directive_close" :turn 3 :directive "D8" :outcome "succeeded")
     (:type "turn_end" :turn 3 :outcome "succeeded")))
  "A journal with every kind of entry.")

(ert-deftest tandem-view-renders-journal-kinds ()
  "Directive turns, compaction, rewind and unknown entries render from the journal."
  (tandem-test-with-backend
    (let* ((dir (make-temp-file "tandem-view-kinds-" t))
           (info (tandem-view-test-session-with dir tandem-view-test--kinds "kinds")))
      (with-current-buffer (tandem-view-show info t)
        (let ((text (tandem-view-test-text)))
          ;; Older settled directive turn: folded to one line with its badge.
          (should (string-match-p "▸ Turn 2 · Directive D7 · implement · \\[excluded from chat\\].*✔ succeeded"
                                  text))
          (should-not (string-match-p "Made it async" text))
          ;; The newest (directive) turn stays open; its prompt is folded.
          (should (string-match-p "▾ Turn 3 · Directive D8 · discuss · \\[excluded from chat\\]" text))
          (should (string-match-p "▸ Prompt (1 line, exactly as submitted)" text))
          (should-not (string-match-p "Discuss D8" text))
          (should (string-match-p "◇ Directive D8 closed: ✔ succeeded" text))
          (should (string-match-p "▸ ≡ Compacted (900 → 90 tokens)" text))
          (should (string-match-p "· mystery_kind (seq [0-9]+)" text))
          (should (string-match-p "⟲ Interrupted rewind before turn 2 rolled back" text))
          (should (string-match-p "it was rolled back\\." text))
          (should (string-match-p "⟲ Rewound to before turn 3" text))
          (should-not (string-match-p "This one is rewound" text)))
        ;; Unfold the older directive turn; its answer appears; `g' keeps it open.
        (goto-char (tandem-view-test--line-matching "Turn 2 · Directive D7"))
        (tandem-view-toggle-fold)
        (should (string-match-p "Made it async" (tandem-view-test-text)))
        (tandem-view-refresh)
        (should (string-match-p "▾ Turn 2 · Directive D7" (tandem-view-test-text)))
        ;; Fold the newest one explicitly: that wins over "newest stays open".
        (goto-char (tandem-view-test--line-matching "Turn 3 · Directive D8"))
        (tandem-view-toggle-fold)
        (tandem-view-refresh)
        (should (string-match-p "▸ Turn 3 · Directive D8" (tandem-view-test-text)))
        (kill-buffer))
      (delete-directory dir t))))

(ert-deftest tandem-view-fold-survives-live-rerender ()
  "An explicit unfold of reasoning survives `g' and an event-driven re-render."
  (tandem-view-test-with-session
      '(:steps [(:reply (:thinking "Deep thought here." :text "First answer."))
                (:reply (:text "Second answer."))])
    (tandem-view-test-wait-turn (tandem-view-test-send "one"))
    (goto-char (tandem-view-test--line-matching "Reasoning"))
    (tandem-view-toggle-fold)
    (should (string-match-p "Deep thought here" (tandem-view-test-text)))
    (tandem-view-refresh)
    (should (string-match-p "Deep thought here" (tandem-view-test-text)))
    ;; A new turn re-renders the previous newest block through events.
    (tandem-view-test-wait-turn (tandem-view-test-send "two"))
    (should (string-match-p "Second answer" (tandem-view-test-text)))
    (should (string-match-p "Deep thought here" (tandem-view-test-text)))
    (goto-char (tandem-view-test--line-matching "Reasoning"))
    (tandem-view-toggle-fold)
    (should-not (string-match-p "Deep thought here" (tandem-view-test-text)))))

;;;; Streaming

(defun tandem-view-test--count-edits-outside-flush (thunk)
  "Run THUNK; return (EDITS-OUTSIDE-FLUSH . FLUSHES) for the current buffer."
  (let ((outside 0) (flushing nil) (flushes 0))
    (cl-letf* ((orig (symbol-function 'tandem-view-flush))
               ((symbol-function 'tandem-view-flush)
                (lambda () (setq flushing t)
                  (unwind-protect (progn (cl-incf flushes) (funcall orig))
                    (setq flushing nil)))))
      (let ((hook (lambda (&rest _) (unless flushing (cl-incf outside)))))
        (add-hook 'after-change-functions hook nil t)
        (unwind-protect (funcall thunk)
          (remove-hook 'after-change-functions hook t))))
    (cons outside flushes)))

(ert-deftest tandem-view-streams-10k-deltas-in-frames ()
  "10k deltas from the backend are applied in timer frames only, not per delta."
  (tandem-view-test-with-session '(:steps [])
    (let* ((t0 (float-time)) (session (tandem-view-state-session tandem-view--state))
           (buffer (current-buffer))
           (result
            (tandem-view-test--count-edits-outside-flush
             (lambda ()
               (should (= 10000 (tandem-request "debug/emit" (list :session session :count 10000
                                                                   :text "ab" :kind "delta"))))
               (tandem-test-wait-until
                (lambda () (with-current-buffer buffer
                             (let ((b (gethash 1 (tandem-view-state-by-turn tandem-view--state))))
                               (and b (= 20000 (tandem-view-block-text-shown b))))))
                30))))
           (elapsed (- (float-time) t0))
           (ticks (ceiling (/ elapsed tandem-view-frame-interval))))
      (should (= 0 (car result)))
      (should (> (cdr result) 0))
      ;; At most one frame per timer interval (plus the one that ends it).
      (should (<= (cdr result) (1+ ticks)))
      (should (< (cdr result) 1000))
      (let ((b (gethash 1 (tandem-view-state-by-turn tandem-view--state))))
        (should (equal (tandem-view-block-live-text b) (apply #'concat (make-list 10000 "ab")))))
      (should (string-match-p "ababab" (tandem-view-test-text))))))

(ert-deftest tandem-view-keeps-scroll-when-reading-above ()
  "Scrolled up, point and window start stay on their text while the tip streams."
  (tandem-test-with-backend
    (let* ((dir (make-temp-file "tandem-view-scroll-" t))
           (info (tandem-view-test-session-with
                  dir (apply #'append (mapcar #'tandem-view-test-chat-turn (number-sequence 1 30)))
                  "scroll")))
      (with-current-buffer (tandem-view-show info t)
        (set-window-buffer (selected-window) (current-buffer))
        (let* ((win (selected-window))
               (start (tandem-view-test--line-matching "▾ Turn 25 "))
               (pt (tandem-view-test--line-matching "Question number 26")))
          (set-window-start win start)
          (set-window-point win pt)
          (goto-char pt)
          (tandem-request "debug/emit" (list :session (tandem-view-state-session tandem-view--state) :count 3000
                                             :text "tip " :kind "delta"))
          ;; The deltas name turn 1: fold it open state changes nothing above.
          (tandem-test-wait-until
           (lambda () (let ((b (gethash 1 (tandem-view-state-by-turn tandem-view--state))))
                        (and b (= 12000 (length (tandem-view-block-live-text b)))
                             (not (tandem-view-state-dirty tandem-view--state)) (not (tandem-view-state-live-dirty tandem-view--state)))))
           20)
          (should (string-prefix-p "▾ Turn 25 " (buffer-substring-no-properties
                                                  (window-start win) (+ 10 (window-start win)))))
          (should (string-prefix-p "Question number 26"
                                   (buffer-substring-no-properties (window-point win)
                                                                   (+ 18 (window-point win)))))
          ;; Following: point in the composer stays in the draft at its offset.
          (goto-char (point-max))
          (insert "draft")
          (set-window-point win (point))
          (let ((offset (- (point) tandem-composer--draft-start)))
            (dotimes (i 3)
              (tandem-view-handle-event (list :kind "entry"
                                              :entry (list :type "mystery" :seq (+ 1000 i))))
              (tandem-view-flush))
            (should (= (- (window-point win) tandem-composer--draft-start) offset))
            (should (= (point) (point-max)))))
        (kill-buffer))
      (delete-directory dir t))))

(ert-deftest tandem-view-draft-and-point-kept-across-redraws ()
  "The draft and point survive 100 event-driven redraws (progress and prefix too)."
  (tandem-view-test-with-session '(:steps [])
    (goto-char (point-max))
    (insert "hello world\nsecond line")
    (goto-char (- (point-max) 5))
    (let ((offset (- (point) tandem-composer--draft-start))
          (session (tandem-view-state-session tandem-view--state))
          (kinds ["turn-started" "delta" "turn-ended"]))
      (dotimes (i 100)
        (let ((before (tandem-view-state-flush-count tandem-view--state)))
          (tandem-request "debug/emit" (list :session session :count 1 :text "x"
                                             :kind (aref kinds (% i 3))))
          (tandem-test-wait-until (lambda () (> (tandem-view-state-flush-count tandem-view--state) before)) 5))
        (should (equal (tandem-composer-draft) "hello world\nsecond line"))
        (should (= (- (point) tandem-composer--draft-start) offset)))
      (should (>= (tandem-view-state-flush-count tandem-view--state) 100)))))

;;;; Cancel and gaps

(ert-deftest tandem-view-cancel-key-cancels-running-turn ()
  "While a turn runs, the prefix says so and the cancel key cancels it."
  (tandem-view-test-with-session '(:steps [(:reply (:text "Thinking forever" :stall t))])
    (let ((turn (tandem-view-test-send "never ends")))
      (tandem-test-wait-until (lambda () (string-match-p "Thinking forever" (tandem-view-test-text))))
      (should (string-match-p "C-c C-c queue · C-c C-s steer · C-c C-k cancel the running turn"
                              (tandem-view-test-text)))
      (should (string-match-p "⏵ Turn 1 running" (tandem-view-test-text)))
      (goto-char (point-max))
      (insert "next question")
      (execute-kbd-macro (kbd "C-c C-k"))
      (tandem-view-test-wait-turn turn)
      (should (string-match-p "⊘ aborted: cancelled" (tandem-view-test-text)))
      ;; Cancelling never consumed the draft.
      (should (equal (tandem-composer-draft) "next question")))))

(ert-deftest tandem-view-refetches-after-missed-events ()
  "Events lost in transit are recovered from the journal on a gap."
  (tandem-view-test-with-session '(:steps [(:reply (:text "You missed me."))])
    (let ((session (tandem-view-state-session tandem-view--state)) (buffer (current-buffer)))
      ;; Miss every event of a whole turn.
      (remove-hook 'tandem-event-functions #'tandem-view--on-event)
      (let ((turn (cdr (tandem-send "are you there?" session))))
        (tandem-wait-turn session turn 30))
      (should-not (string-match-p "You missed me" (tandem-view-test-text)))
      (tandem-view-install-hooks)
      ;; The client reports the gap when the next event arrives.
      (run-hook-with-args 'tandem-event-gap-functions session 1 99)
      (tandem-test-wait-until
       (lambda () (with-current-buffer buffer
                    (string-match-p "You missed me" (tandem-view-test-text)))))
      (should (string-match-p "✔ succeeded" (tandem-view-test-text)))
      ;; An entry far ahead of what the view has also triggers a fetch.
      (let ((last (tandem-view-state-last-seq tandem-view--state)))
        (tandem-view-apply-entry (list :type "assistant" :turn 1 :seq (+ last 5) :text "bogus"))
        (tandem-test-wait-until (lambda () (not (tandem-view-state-catching-up tandem-view--state))))
        (should (= (tandem-view-state-last-seq tandem-view--state) last))
        (should-not (string-match-p "bogus" (tandem-view-test-text))))
      (should-error (tandem-view-apply-entry '(:type "user" :text "no seq"))))))

;;;; Composer

(ert-deftest tandem-view-undo-in-draft-while-streaming ()
  "Undo in the composer undoes the draft, not the transcript that streamed above."
  (tandem-view-test-with-session '(:steps [])
    (buffer-enable-undo)
    (goto-char (point-max))
    (insert "first")
    (undo-boundary)
    (insert " second")
    (undo-boundary)
    (let ((before (tandem-view-state-flush-count tandem-view--state)))
      (tandem-request "debug/emit" (list :session (tandem-view-state-session tandem-view--state) :count 500 :text "zz"
                                         :kind "delta"))
      ;; Any flush counts (the opening's may come late on a loaded machine):
      ;; wait for the streamed text itself.
      (tandem-test-wait-until (lambda () (and (> (tandem-view-state-flush-count tandem-view--state) before)
                                              (not (tandem-view-state-live-dirty tandem-view--state))
                                              (not (tandem-view-state-dirty tandem-view--state))
                                              (string-match-p "zzzz" (tandem-view-test-text))))))
    (should (string-match-p "zzzz" (tandem-view-test-text)))
    (goto-char (point-max))
    (let ((last-command nil)) (undo))
    (should (equal (tandem-composer-draft) "first"))
    (should (string-match-p "zzzz" (tandem-view-test-text)))))

(ert-deftest tandem-view-composer-scope-stash-and-back ()
  "Directive scope stashes the chat draft, Back to chat restores it; sticky."
  (tandem-view-test-with-session '(:steps [(:reply (:text "ok"))])
    (let ((buffer (current-buffer)) (sent nil))
      (goto-char (point-max))
      (insert "my chat draft")
      (should-error (tandem-composer-set-scope buffer '(:directive "" :action implement)))
      (should-error (tandem-composer-set-scope buffer '(:directive "D7" :action fly)))
      (should-error (tandem-composer-set-scope buffer "D7"))
      (should (equal (tandem-composer-draft) "my chat draft"))
      (tandem-composer-set-scope buffer '(:directive "D7" :action implement))
      (should (equal (tandem-composer-draft) ""))
      (should (string-match-p "D7 implement ❯ \\'" (tandem-view-test-text)))
      (should (string-match-p "directive D7 implement · C-c C-c send · C-c C-b back to chat"
                              (tandem-view-test-text)))
      (should (string-match-p "D7 · next: implement" (tandem-view--header-line)))
      (should (string-match-p "D7 implement" mode-line-process))
      ;; Without the directive code a send fails and keeps the draft.
      (goto-char (point-max))
      (insert "make it async")
      (let ((tandem-composer-directive-send-function nil))
        (should-error (tandem-composer-send) :type 'user-error))
      (should (equal (tandem-composer-draft) "make it async"))
      ;; With it, the send goes through and the scope stays.
      (let ((tandem-composer-directive-send-function
             (lambda (id action text buf) (setq sent (list id action text buf)))))
        (tandem-composer-send))
      (should (equal sent (list "D7" 'implement "make it async" buffer)))
      (should (equal (tandem-composer-scope) '(:directive "D7" :action implement)))
      (should (equal (tandem-composer-draft) ""))
      ;; C-c C-b: back to chat with the stashed draft.
      (goto-char (point-max))
      (execute-kbd-macro (kbd "C-c C-b"))
      (should (eq (tandem-composer-scope) 'chat))
      (should (equal (tandem-composer-draft) "my chat draft"))
      (should (string-match-p "chat ❯ my chat draft\\'" (tandem-view-test-text)))
      ;; The chat send is a real turn; history has it.
      (tandem-view-test-wait-turn (tandem-view-test-press-send)
                                  )
      (should (string-match-p "▾ Turn 1 · You" (tandem-view-test-text)))
      (execute-kbd-macro (kbd "M-p"))
      (should (equal (tandem-composer-draft) "my chat draft"))
      (execute-kbd-macro (kbd "M-n"))
      (should (equal (tandem-composer-draft) "")))))

(ert-deftest tandem-view-composer-refuses-edits-of-transcript ()
  "The transcript and prompt are read-only; RET in the draft is a newline."
  (tandem-view-test-with-session '(:steps [])
    (goto-char (point-min))
    (should-error (insert "x") :type 'text-read-only)
    (goto-char tandem-composer--start)
    (should-error (insert "x") :type 'text-read-only)
    (goto-char (point-max))
    (execute-kbd-macro (kbd "a RET b"))
    (should (equal (tandem-composer-draft) "a\nb"))
    (should-error (progn (tandem-composer-set-draft "") (tandem-composer-send))
                  :type 'user-error)))

;;;; Large sessions

(ert-deftest tandem-view-pages-older-turns ()
  "A long session opens on its newest turns and loads older ones on demand."
  (tandem-test-with-backend
    (let* ((dir (make-temp-file "tandem-view-paging-" t))
           (tandem-view-initial-entries 40)
           (tandem-view-page-entries 100)
           (info (tandem-view-test-session-with
                  dir (apply #'append (mapcar (lambda (n) (tandem-view-test-chat-turn n "a"))
                                              (number-sequence 1 300)))
                  "long")))
      (with-current-buffer (tandem-view-show info)
        (should (= 10 (length (tandem-view-state-blocks tandem-view--state))))
        (should (equal (tandem-view-block-turn (car (tandem-view-state-blocks tandem-view--state))) 291))
        (should (string-match-p "Load older turns" (tandem-view-test-text)))
        (goto-char (point-min))
        (execute-kbd-macro "o")
        (should (= 35 (length (tandem-view-state-blocks tandem-view--state))))
        (tandem-view-load-older t)
        (should (= 300 (length (tandem-view-state-blocks tandem-view--state))))
        (should (string-match-p "start of session" (tandem-view-test-text)))
        (should-error (tandem-view-load-older) :type 'user-error)
        ;; Turns are in order in the buffer.
        (let ((turns nil))
          (goto-char (point-min))
          (while (re-search-forward "^▾ Turn \\([0-9]+\\)" nil t)
            (push (string-to-number (match-string 1)) turns))
          (should (equal (nreverse turns) (number-sequence 1 300))))
        (kill-buffer))
      (delete-directory dir t))))

;;;; Markdown, both engines

(ert-deftest tandem-view-markdown-engines ()
  "Both the markdown-mode path and the built-in fallback fontify code blocks."
  (dolist (engine '(markdown-mode builtin))
    (let* ((tandem-view-markdown-engine engine)
           (out (tandem-view-markdown-fontify
                 "# Title\n\nSome **bold** and `code`.\n\n```python\ndef f():\n    return 1\n```\n")))
      (should (equal (substring-no-properties out)
                     "# Title\n\nSome **bold** and `code`.\n\n```python\ndef f():\n    return 1\n```\n"))
      (should-not (text-property-not-all 0 (length out) 'face nil out))
      (let ((def (string-match "def f" out)))
        (should (memq 'font-lock-keyword-face
                      (ensure-list (get-text-property def 'font-lock-face out)))))
      (let ((bold (string-match "bold" out)))
        (should (get-text-property bold 'font-lock-face out)))))
  ;; The work buffer is reused: a later, different message still gets its
  ;; code block found (syntax-propertize state is reset between uses).
  (let ((tandem-view-markdown-engine 'markdown-mode))
    (dotimes (i 3)
      (let* ((text (format "Step %d `x`\n\n```python\nimport os%d\n```\n" i i))
             (out (tandem-view-markdown-fontify text)))
        (should (memq 'font-lock-keyword-face
                      (ensure-list (get-text-property (string-match "import" out)
                                                      'font-lock-face out)))))))
  (should-error (tandem-view-markdown-fontify 42) :type 'wrong-type-argument))

(ert-deftest tandem-view-m-x-tandem-opens-the-view ()
  "`tandem' (M-x tandem) opens the project's session buffer through the view."
  (tandem-test-with-backend
    (let ((dir (make-temp-file "tandem-view-mx-" t))
          ;; A provider is configured: no first-run questions (tandem-setup-tests.el).
          (tandem-provider "openai:fake-model"))
      (should (eq tandem-open-session-function #'tandem-view-open))
      (let ((buffer (tandem dir)))
        (should (bufferp buffer))
        (with-current-buffer buffer
          (should (derived-mode-p 'tandem-view-mode))
          (should (string-match-p (regexp-quote (file-name-nondirectory dir)) (buffer-name)))
          (should (string-match-p "start of session" (tandem-view-test-text)))
          (should (string-match-p "chat ❯ \\'" (tandem-view-test-text))))
        ;; Twice: the same buffer.
        (should (eq (tandem dir) buffer))
        (kill-buffer buffer))
      (delete-directory dir t))))

(ert-deftest tandem-view-open-validates ()
  "Opening refuses bad input with a clear error."
  (should-error (tandem-view-show '(:title "no id")) :type 'error)
  (should-error (tandem-view-open "/no/such/dir/anywhere") :type 'user-error))

(provide 'tandem-view-tests)
;;; tandem-view-tests.el ends here
