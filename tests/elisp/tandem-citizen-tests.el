;;; tandem-citizen-tests.el --- Tokens, cost, waiting questions, entry kinds  -*- lexical-binding: t; -*-

;;; Commentary:
;; Against the real backend and the real fake
;; OpenAI-compatible server (tests/fakes): a turn's tokens and cost in its
;; footer, the session's totals and context in the header, the provider
;; switch, the mode-line indicator and `tandem-answer' for a question in a
;; buffer that is not displayed, and every entry kind the backend defines.

;;; Code:

(require 'tandem-view-test-helpers)
(require 'tandem-indicator)
(require 'tandem-setup)

(ert-deftest tandem-citizen-turn-footer-and-header-count-tokens ()
  "A turn's footer shows its tokens and cost; the header the session's totals."
  (tandem-view-test-with-session
      '(:steps [(:reply (:text "First." :input_tokens 1200 :output_tokens 300
                         :cache_read_tokens 800))
                (:reply (:text "Second." :input_tokens 100 :output_tokens 50))])
    (let ((tandem-prices '(("fake-model" :input 2.0 :output 10.0 :cache-read 0.5))))
      (tandem-view-test-wait-turn (tandem-view-test-send "one"))
      ;; 1200*2 + 300*10 + 800*0.5 = 5800 per million.
      (should (string-match-p "✔ succeeded · 1.2k in · 300 out · cache 800 read, 0 written · \\$0.0058"
                              (tandem-view-test-text)))
      (tandem-view-test-wait-turn (tandem-view-test-send "two"))
      (should (string-match-p "100 in · 50 out · \\$0.0007" (tandem-view-test-text)))
      (let ((header (tandem-test-wait-until
                     (lambda () (let ((h (tandem-view--header-line)))
                                  (and (string-match-p "1.3k in" h) h))))))
        (should (string-match-p "1.3k in · 350 out · cache 800 read, 0 written · \\$0.0065" header))
        ;; The fake model has the default window; the threshold is visible.
        (should (string-match-p "context [0-9]+% of 128.0k (compacts at 80%)" header))
        (should (string-match-p "provider: openai:fake-model (default)" header))))))

(ert-deftest tandem-citizen-no-price-no-cost ()
  "Without a price for the model no cost is shown: tandem never invents one."
  (tandem-view-test-with-session '(:steps [(:reply (:text "Hi." :input_tokens 10
                                                    :output_tokens 2))])
    (let ((tandem-prices '(("another-model" :input 1.0 :output 1.0))))
      (tandem-view-test-wait-turn (tandem-view-test-send "one"))
      (should (string-match-p "✔ succeeded · 10 in · 2 out\n" (tandem-view-test-text)))
      (should-not (string-match-p "\\$" (tandem-view-test-text))))))

(ert-deftest tandem-citizen-set-provider-is-journaled-and-used ()
  "`tandem-set-provider' records the switch, shows it, and the next turn uses it."
  (tandem-view-test-with-session '(:steps [(:reply (:text "From the other model."))])
    (let ((tandem-setup-read-function
           (lambda (_prompt _choices &rest _) "openai:other-model")))
      (call-interactively #'tandem-set-provider))
    (tandem-test-wait-until
     (lambda () (string-match-p "⇄ Provider for the next turns: openai:other-model"
                                (tandem-view-test-text))))
    (tandem-test-wait-until
     (lambda () (string-match-p "provider: openai:other-model\\'" (tandem-view--header-line))))
    (tandem-view-test-wait-turn (tandem-view-test-send "go"))
    (should (string-match-p "Turn 1 · You · .* openai:other-model" (tandem-view-test-text)))))

(ert-deftest tandem-citizen-indicator-and-answer-from-another-buffer ()
  "A question in a buried session buffer shows in the mode line; `tandem-answer' answers it."
  (tandem-view-test-with-session
      '(:steps [(:reply (:text "Writing." :tool_calls [(:name "write_file"
                                                        :input (:path "a.txt" :content "x"))]))
                (:reply (:text "Written."))])
    (tandem-indicator-mode 1)
    (let ((session-buffer (current-buffer))
          (turn (tandem-view-test-send "write a.txt"))
          (asked nil))
      (with-temp-buffer
        ;; Not displayed anywhere: the user is elsewhere.
        (dolist (w (get-buffer-window-list session-buffer nil t))
          (set-window-buffer w (get-buffer-create "*scratch*")))
        (should-not (get-buffer-window session-buffer t))
        (tandem-test-wait-until (lambda () (tandem-indicator-pending)))
        (should (string-match-p "\\` tandem\\?1\\[tandem-view-project-" tandem-indicator--string))
        (should (memq 'tandem-indicator--string global-mode-string))
        (let ((tandem-answer-read-function
               (lambda (prompt choices)
                 (setq asked (cons prompt choices))
                 (assq ?a choices))))
          (should (equal (tandem-answer) "allow_session")))
        (should (string-match-p "Write a.txt" (car asked)))
        (should (equal (mapcar #'car (cdr asked)) '(?y ?a ?n)))
        (should (equal tandem-indicator--string "")))
      (tandem-view-test-wait-turn turn)
      (should (file-exists-p (expand-file-name "a.txt" project)))
      (should (string-match-p "Write a.txt — Allow for this session" (tandem-view-test-text))))))

(ert-deftest tandem-citizen-progress-row-names-the-keys ()
  "The progress row of a waiting turn names the key that goes to the question."
  (tandem-view-test-with-session
      '(:steps [(:reply (:text "Writing." :tool_calls [(:name "write_file"
                                                        :input (:path "a.txt" :content "x"))]))
                (:reply (:text "Refused."))])
    (let ((turn (tandem-view-test-send "write a.txt")))
      (tandem-test-wait-until
       (lambda () (string-match-p "C-c C-q goes to the question, M-x tandem-answer answers it"
                                  (tandem-view-test-text))))
      (tandem-cancel-turn (tandem-view-state-session tandem-view--state))
      (tandem-view-test-wait-turn turn))))

(defconst tandem-citizen-test--samples
  '(("turn_start" :origin "chat" :provider "openai:m" :model "m")
    ("user" :text "hello") ("assistant" :text "answer") ("reasoning" :text "thinking")
    ("tool_call" :call-id "c1" :name "read_file" :input nil)
    ("tool_result" :call-id "c1" :status "completed" :output "x")
    ("interaction" :interaction-id "1.1" :title "Write a.txt")
    ("interaction_answer" :interaction-id "1.1" :answer "reject")
    ("turn_end" :outcome "succeeded")
    ("directive_open" :workspace "w" :directive "d1" :action "do")
    ("directive_close" :directive "d1" :outcome "succeeded")
    ("rewind" :before-turn 1 :outside t) ("rewind_recovery" :before-turn 1 :outcome "committed"
                                          :outside t)
    ("compaction" :summary "short" :outside t)
    ("acp_session" :acp-session-id "s" :how "resume")
    ("remote_turn" :conversation-id "0f3a9c2e-77" :after-event-id nil)
    ("plan" :entries ((:content "Read the code" :status "completed")
                      (:content "Fix it" :status "in_progress")))
    ("provider_change" :provider "openai:m" :model "m" :outside t)
    ("acp_option" :agent "claude" :option "mode" :value "plan" :outside t)
    ("revert" :of-turn 1 :path "a.txt" :hunk 0 :outside t)
    ("rewind_undo" :before-turn 1 :rewind-seq 5 :outside t)
    ("queue" :op "add" :item "q1" :text "next" :outside t)
    ("steer" :text "use b.txt instead" :given "2026-01-01T00:00:00Z"))
  "A minimal entry of each kind, as the view receives them.")

(ert-deftest tandem-citizen-every-entry-kind-speaks ()
  "Every entry type the backend's models define renders in words or is documented as hidden."
  (tandem-test-with-backend
    (let ((types (tandem-request "debug/entry-types")))
      (should (member "acp_session" types))
      (dolist (type types)
        (let ((sample (cdr (assoc type tandem-citizen-test--samples))))
          (unless (assoc type tandem-citizen-test--samples)
            (ert-fail (format "entry type %s has no sample here: render it or hide it" type)))
          (let* ((outside (plist-get sample :outside))
                 (entry (append (list :type type :seq 7 :ts "2026-01-01T00:00:00Z")
                                (unless outside (list :turn 1)) sample))
                 (block (tandem-view-block-create :key 7 :turn (unless outside 1)
                                                  :entries (list entry)))
                 (text (with-temp-buffer
                         (tandem-view-render-block block (lambda (_) nil))
                         (buffer-string))))
            (should-not (string-match-p (format "· %s (seq 7)" type) text))
            (should (tandem-view-kinds-get type))
            (when (member type (tandem-view-kinds-shown-elsewhere))
              ;; The turn's header line and the block's empty line: no row of its own.
              (should (string-match-p "\\`[^\n]*\n\n\\'" text))
              (should (string-match-p "[[:alpha:]]" (tandem-view-kind-elsewhere
                                                      (tandem-view-kinds-get type)))))))))))

(ert-deftest tandem-citizen-unknown-kind-keeps-its-row ()
  "A kind from a newer tandem keeps its honest one-line row."
  (let ((text (with-temp-buffer
                (tandem-view-render-block
                 (tandem-view-block-create :key 3 :entries (list (list :type "from_the_future"
                                                                       :seq 3)))
                 (lambda (_) nil))
                (buffer-string))))
    (should (string-match-p "· from_the_future (seq 3)" text))))

;; The kind registry itself: elisp only, no backend.
(ert-deftest tandem-citizen-kind-registry-drives-folding ()
  "The parts registered as folded start folded; other parts start open."
  (dolist (part '(prompt reasoning tool compaction))
    (should (tandem-view-kinds-folded-by-default-p part)))
  (should-not (tandem-view-kinds-folded-by-default-p 'interaction))
  (should (equal (tandem-view-kind-fold (tandem-view-kinds-get "reasoning")) 'reasoning))
  (should (equal (tandem-view-kinds-shown-elsewhere)
                 '("directive_open" "interaction_answer" "remote_turn" "tool_result"
                   "turn_start"))))

(ert-deftest tandem-citizen-kind-out-of-place-keeps-the-unknown-row ()
  "A kind registered for turns, found outside one, keeps the honest unknown row."
  (let ((text (with-temp-buffer
                (tandem-view-render-block
                 (tandem-view-block-create :key 4 :entries (list (list :type "user" :seq 4
                                                                       :text "hi")))
                 (lambda (_) nil))
                (buffer-string))))
    (should (equal text "· user (seq 4)\n\n"))))

(ert-deftest tandem-citizen-kind-definition-refuses-bad-input ()
  "A malformed kind definition is an error that names what is wrong."
  (dolist (case '((("x") . "needs either :render or :elsewhere, not neither")
                  (("x" :render ignore :elsewhere "there") . "not both")
                  (("x" :render 42) . ":render is not a function")
                  (("x" :render ignore :place inside) . ":place is not")
                  (("x" :render ignore :fold "tool") . ":fold is not a part symbol")
                  (("x" :render ignore :folded t) . ":fold is not a part symbol")
                  (("x" :render ignore :colour red) . "unknown properties (:colour)")
                  ((x :render ignore) . "type is not a string")))
    (let ((err (should-error (apply #'tandem-view-kinds-define (car case)))))
      (should (string-match-p (regexp-quote (cdr case)) (error-message-string err)))))
  (should-not (tandem-view-kinds-get "x")))

(ert-deftest tandem-citizen-directive-at-point-anchors-the-function ()
  "`tandem-directive' with point inside a function and no region anchors the whole function."
  (let ((project (file-name-as-directory (make-temp-file "tandem-directive-point-" t))))
    (unwind-protect
        (tandem-test-with-backend
          (let ((default-directory project)
                (file (expand-file-name "code.py" project))
                (source "import os\n\ndef greet(name):\n    text = 'hi ' + name\n    return text\n\n\ndef other():\n    return 1\n"))
            (call-process "git" nil nil nil "init" "-q")
            (write-region source nil file)
            (with-current-buffer (find-file-noselect file)
              (python-mode)
              (goto-char (point-min))
              (search-forward "text = ")
              (let* ((id (tandem-directive "Make it polite"))
                     (record (tandem-directive-record id project))
                     (anchor (plist-get record :anchor)))
                (should (equal (plist-get anchor :start-line) 3))
                (should (equal (plist-get anchor :end-line) 5))
                (should (string-prefix-p "def greet(name):" (plist-get anchor :text)))
                (should-not (string-match-p "other" (plist-get anchor :text))))
              (set-buffer-modified-p nil)
              (kill-buffer))))
      (dolist (b (buffer-list))
        (when (string-prefix-p "*tandem" (buffer-name b)) (kill-buffer b)))
      (delete-directory project t))))

(provide 'tandem-citizen-tests)
;;; tandem-citizen-tests.el ends here
