;;; tandem-view-compaction-tests.el --- Compaction rows in the session buffer  -*- lexical-binding: t; -*-

;;; Commentary:
;; Against a real backend: journals written ahead of time (a compaction
;; entry among settled turns), and a live compaction by the session's
;; provider (the fake OpenAI server) announced only by its `entry' event.

;;; Code:

(require 'tandem-view-test-helpers)
(require 'tandem-compact)

(defun tandem-view-compaction-test--pos (regexp)
  "Return the start of the first match of REGEXP in the buffer, or nil."
  (save-excursion (goto-char (point-min)) (and (re-search-forward regexp nil t) (match-beginning 0))))

(defun tandem-view-compaction-test--journal ()
  "Turns 1-4 (2 a directive turn), a compaction keeping turns 3 and 4, then turn 5."
  (append (tandem-view-test-chat-turn 1)
          '((:type "turn_start" :turn 2 :origin "directive" :provider "openai:fake-model")
            (:type "directive_open" :turn 2 :workspace "w1" :directive "D7" :action "implement")
            (:type "user" :turn 2 :text "Directive D7: make it async.")
            (:type "assistant" :turn 2 :text "Made it async.")
            (:type "directive_close" :turn 2 :directive "D7" :outcome "succeeded")
            (:type "turn_end" :turn 2 :outcome "succeeded"))
          (apply #'append (mapcar #'tandem-view-test-chat-turn '(3 4)))
          '((:type "compaction" :summary "SUMMARY: one and two were asked."
             :first_kept_turn 3 :tokens_before 800 :tokens_after 80))
          (tandem-view-test-chat-turn 5)))

(ert-deftest tandem-view-compaction-row-replaces-turns ()
  "The row stands where the summarised turns were; it expands to them, read-only."
  (tandem-test-with-backend
    (let* ((dir (make-temp-file "tandem-view-compaction-" t))
           (info (tandem-view-test-session-with dir (tandem-view-compaction-test--journal) "c")))
      (with-current-buffer (tandem-view-show info t)
        (let ((text (tandem-view-test-text)))
          (should (string-match-p "▸ ≡ Compacted (800 → 80 tokens) · turns before 3" text))
          (should-not (string-match-p "Question number 1\\?\\|Directive D7" text))
          (should-not (string-match-p "SUMMARY" text))
          (dolist (n '(3 4 5)) (should (string-match-p (format "Question number %d\\?" n) text))))
        ;; In place of turns 1-2: before the first kept turn, not after turn 4.
        (should (< (tandem-view-compaction-test--pos "≡ Compacted")
                   (tandem-view-compaction-test--pos "Turn 3 ·")))
        (should (equal (mapcar #'tandem-view-block-turn (tandem-view-state-blocks tandem-view--state)) '(nil 3 4 5)))
        ;; Unfold: the summary, then the old turns from the journal.
        (goto-char (tandem-view-compaction-test--pos "≡ Compacted"))
        (tandem-view-toggle-fold)
        (let ((text (tandem-view-test-text)))
          (should (string-match-p "SUMMARY: one and two" text))
          (should (string-match-p "▾ Turn 1 · You.*\n.*Question number 1\\?" text))
          ;; The directive turn too (open: the reader asked to see them).
          (should (string-match-p "▾ Turn 2 · Directive D7 · implement" text))
          (should (string-match-p "Made it async" text))
          (dolist (n '(3 4 5)) (should (string-match-p (format "Question number %d\\?" n) text))))
        (let ((old (tandem-view-compaction-test--pos "Question number 1\\?")))
          (should (< old (tandem-view-compaction-test--pos "▾ Turn 3 ·")))
          (should (get-text-property old 'tandem-compacted))
          (goto-char old)
          (should-error (insert "x") :type 'text-read-only))
        ;; TAB folds an old turn on its own; `g' keeps both choices.
        (goto-char (tandem-view-compaction-test--pos "▾ Turn 1 ·"))
        (tandem-view-toggle-fold)
        (should (string-match-p "▸ Turn 1 · You" (tandem-view-test-text)))
        (should (looking-at "▸ Turn 1"))
        (tandem-view-refresh)
        (let ((text (tandem-view-test-text)))
          (should-not (string-match-p "Question number 1\\?\n" text))
          (should (string-match-p "Made it async" text))
          (should (string-match-p "SUMMARY: one and two" text)))
        ;; E opens the old turns in a read-only buffer of their own.
        (goto-char (tandem-view-compaction-test--pos "≡ Compacted"))
        (let ((old (funcall (key-binding "E"))))
          (should (bufferp old))
          (with-current-buffer old
            (should buffer-read-only)
            (should (string-match-p "Question number 1\\?" (buffer-string)))
            (should-not (string-match-p "Question number 3\\?" (buffer-string))))
          (kill-buffer old))
        (kill-buffer))
      (delete-directory dir t))))

(ert-deftest tandem-view-compaction-row-moves-when-older-page-loads ()
  "A row whose first kept turn arrives with an older page moves before it."
  (tandem-test-with-backend
    (let* ((dir (make-temp-file "tandem-view-compaction-" t))
           (tandem-view-initial-entries 30)
           (info (tandem-view-test-session-with
                  dir (append (apply #'append (mapcar (lambda (n) (tandem-view-test-chat-turn n "a"))
                                                      (number-sequence 1 20)))
                              '((:type "compaction" :summary "S" :first_kept_turn 18
                                 :tokens_before 10 :tokens_after 1))
                              (apply #'append (mapcar (lambda (n) (tandem-view-test-chat-turn n "a"))
                                                      (number-sequence 21 25))))
                  "paged")))
      (with-current-buffer (tandem-view-show info t)
        ;; The newest page starts at turn 19: the row goes before it.
        (should (equal (mapcar #'tandem-view-block-turn (tandem-view-state-blocks tandem-view--state))
                       '(nil 19 20 21 22 23 24 25)))
        (tandem-view-load-older t)
        (should (equal (mapcar #'tandem-view-block-turn (tandem-view-state-blocks tandem-view--state))
                       '(nil 18 19 20 21 22 23 24 25)))
        (let ((text (tandem-view-test-text)))
          (should-not (string-match-p "Question number 17\\?" text))
          (should (< (tandem-view-compaction-test--pos "≡ Compacted")
                     (tandem-view-compaction-test--pos "Turn 18 ·")
                     (tandem-view-compaction-test--pos "Turn 19 ·"))))
        ;; The buffer is what a fresh rendering of the whole journal gives.
        (let ((paged (tandem-view-test-text)))
          (let ((tandem-view-initial-entries 1000)) (tandem-view-refresh))
          (should (equal paged (tandem-view-test-text))))
        (kill-buffer))
      (delete-directory dir t))))

(ert-deftest tandem-view-compaction-live-entry-rerenders ()
  "A compaction announced by its `entry' event replaces the turns it summarised."
  (tandem-view-test-with-session
      '(:steps [(:reply (:text "alpha answer")) (:reply (:text "bravo answer"))
                (:reply (:text "charlie answer"))
                (:reply (:text "SUMMARY-LIVE: alpha and bravo."))])
    (let ((session (tandem-view-state-session tandem-view--state)))
      (make-directory (expand-file-name ".tandem" project))
      (with-temp-file (expand-file-name ".tandem/settings.json" project)
        (insert "{\"compaction_keep_turns\": 1}"))
      (dolist (q '("ALPHA question" "BRAVO question" "CHARLIE question"))
        (tandem-view-test-wait-turn (tandem-view-test-send q) 30))
      (should (string-match-p "ALPHA question" (tandem-view-test-text)))
      ;; Straight to the backend: only the event tells the view.
      (let ((reply (tandem-request "sessions/compact" (list :session session) 60)))
        (should (equal (plist-get reply :first-kept-turn) 3)))
      (tandem-test-wait-until
       (lambda () (not (string-match-p "ALPHA question" (tandem-view-test-text)))) 10)
      (let ((text (tandem-view-test-text)))
        (should (string-match-p "▸ ≡ Compacted (.*) · turns before 3" text))
        (should-not (string-match-p "BRAVO question" text))
        (should (string-match-p "CHARLIE question" text))
        (should (< (tandem-view-compaction-test--pos "≡ Compacted")
                   (tandem-view-compaction-test--pos "Turn 3 ·"))))
      (goto-char (tandem-view-compaction-test--pos "≡ Compacted"))
      (tandem-view-toggle-fold)
      (should (string-match-p "SUMMARY-LIVE" (tandem-view-test-text)))
      (should (string-match-p "ALPHA question" (tandem-view-test-text))))))

(provide 'tandem-view-compaction-tests)
;;; tandem-view-compaction-tests.el ends here
