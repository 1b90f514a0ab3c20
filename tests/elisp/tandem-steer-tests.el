;;; tandem-steer-tests.el --- Steer: guidance for the running turn  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend and the fake OpenAI server: while a turn's tool call
;; waits for a permission answer, C-c C-s (`tandem-composer-steer', what
;; M-x tandem-steer runs with a draft) hands the draft to the turn; the
;; fake model's next request in the same turn ends with it as a user
;; message (the script answers differently only then), and the
;; transcript shows where the turn took it.  Until it is taken, a
;; waiting row under the running turn shows it; a turn cancelled first
;; leaves it first in the held queue, a queued row.  An ACP agent (the fake agent
;; process) takes no input mid-turn: the backend says so and the answer
;; yes to the offer queues the draft, which goes as the next turn.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'seq)
(require 'json)
(require 'tandem-view-test-helpers)
(require 'tandem)

(defconst tandem-steer-test--text "Use NOTES.md instead, please"
  "The guidance the tests steer with.")

(defconst tandem-steer-test--script
  `(:default (:text "(no more steps)")
    :steps [(:match (:has_tools t :last_user_contains "write notes")
             :reply (:text "I will write notes.txt."
                     :tool_calls [(:name "write_file"
                                   :input (:path "notes.txt" :content "noted\n"))]))
            ;; Only a request whose last user message is the steer gets this.
            (:match (:has_tools t :last_user_contains ,tandem-steer-test--text)
             :reply (:text "Steered: I will use NOTES.md."))])
  "A turn whose tool call waits for an answer; the next step answers the steer.")

(defun tandem-steer-test--wait-question ()
  "Wait until the running turn asks; return the question row's position."
  (tandem-test-wait-until
   (lambda () (next-single-property-change (point-min) 'tandem-interaction))
   20))

(defun tandem-steer-test--entries ()
  "Return this buffer's session's journal entries (plists)."
  (append (plist-get (tandem-request "sessions/entries"
                                     (list :session (tandem-view-state-session
                                                     tandem-view--state)))
                     :entries)
          nil))

(ert-deftest tandem-steer-reaches-the-next-request-of-the-running-turn ()
  "C-c C-s during a tool call's permission wait: the turn's next request carries it."
  (tandem-view-test-with-session tandem-steer-test--script
    (should (equal (tandem-view-test-send "write notes") 1))
    (tandem-steer-test--wait-question)
    (should (eq (key-binding (kbd "C-c C-s")) #'tandem-composer-steer))
    (goto-char (point-max))
    (insert tandem-steer-test--text)
    (execute-kbd-macro (kbd "C-c C-s"))
    (should (equal (tandem-composer-draft) ""))
    (should (tandem-view-state-running tandem-view--state))  ; still the same turn
    (tandem-view-answer-at (tandem-steer-test--wait-question) "allow_once")
    (tandem-view-test-wait-turn 1 30)
    (let* ((entries (tandem-steer-test--entries))
           (steer (seq-find (lambda (e) (equal (plist-get e :type) "steer")) entries))
           (answers (delq nil (mapcar (lambda (e) (and (equal (plist-get e :type) "assistant")
                                                       (plist-get e :text)))
                                      entries))))
      (should steer)
      (should (equal (plist-get steer :turn) 1))
      (should (equal (plist-get steer :text) tandem-steer-test--text))
      ;; The fake model answered the steer in the same turn: its request ended with it.
      (should (member "Steered: I will use NOTES.md." answers))
      (should (= 1 (seq-count (lambda (e) (equal (plist-get e :type) "turn_start")) entries))))
    (tandem-view-flush)
    (let ((text (tandem-view-test-text)))
      (should (string-match-p "↪ You steered" text))
      (should (< (string-match "↪ You steered" text)
                 (string-match "Steered: I will use NOTES.md." text)))
      (should-not (string-match-p "aborted" text)))))

(defconst tandem-steer-test--waiting "↪ You steered · waiting for the next step"
  "The start of the row of a steer the running turn has not taken yet.")

(defun tandem-steer-test--wait-text (regexp)
  "Wait until the drawn buffer matches REGEXP."
  (tandem-test-wait-until
   (lambda () (tandem-view-flush) (string-match-p regexp (tandem-view-test-text)))
   20))

(defun tandem-steer-test--steer-while-asked ()
  "Send the write turn, steer while its tool call waits; return the question's position."
  (should (equal (tandem-view-test-send "write notes") 1))
  (tandem-steer-test--wait-question)
  (goto-char (point-max))
  (insert tandem-steer-test--text)
  (execute-kbd-macro (kbd "C-c C-s"))
  (tandem-steer-test--wait-text
   (concat (regexp-quote tandem-steer-test--waiting) " · [0-9:]+ · "
           (regexp-quote tandem-steer-test--text)))
  (tandem-steer-test--wait-question))

(ert-deftest tandem-steer-shows-a-waiting-row-until-the-turn-takes-it ()
  "A steer given is a waiting row under the running turn; taken, the taken row replaces it."
  (tandem-view-test-with-session tandem-steer-test--script
    (let ((question (tandem-steer-test--steer-while-asked)))
      ;; Above the composer, under the running turn: not a transcript row.
      (should (< (string-match (regexp-quote tandem-steer-test--waiting) (tandem-view-test-text))
                 (string-match "chat ❯" (tandem-view-test-text))))
      (should-not (string-match-p "taken at the next step" (tandem-view-test-text)))
      (tandem-view-answer-at question "allow_once"))
    (tandem-view-test-wait-turn 1 30)
    (tandem-steer-test--wait-text "taken at the next step")
    (let ((text (tandem-view-test-text)))
      (should-not (string-match-p (regexp-quote tandem-steer-test--waiting) text))
      (should (< (string-match "↪ You steered · taken at the next step" text)
                 (string-match "Steered: I will use NOTES.md." text))))))

(ert-deftest tandem-steer-waiting-row-becomes-a-queued-row-when-the-turn-ends ()
  "Cancelled before it took the steer: the waiting row goes, the held queue has it first."
  (tandem-view-test-with-session tandem-steer-test--script
    (tandem-steer-test--steer-while-asked)
    (let ((tandem-view-cancel-confirm-function #'always))
      (execute-kbd-macro (kbd "C-c C-k")))
    (tandem-view-test-wait-turn 1 30)
    (tandem-steer-test--wait-text (concat "⧗ Queued q1 · " (regexp-quote tandem-steer-test--text)))
    (let ((text (tandem-view-test-text)))
      (should-not (string-match-p (regexp-quote tandem-steer-test--waiting) text))
      (should (string-match-p "Queue held: turn 1 was cancelled" text)))))

(ert-deftest tandem-steer-with-no-turn-running-says-so ()
  "C-c C-s with no turn running refuses and keeps the draft."
  (tandem-view-test-with-session tandem-steer-test--script
    (goto-char (point-max))
    (insert "go left")
    (let ((err (should-error (tandem-composer-steer) :type 'user-error)))
      (should (string-match-p "No turn is running" (cadr err))))
    (should (equal (tandem-composer-draft) "go left"))))

(ert-deftest tandem-steer-an-acp-turn-offers-the-queue ()
  "An ACP agent cannot take input mid-turn: yes to the offer queues the draft."
  (tandem-view-test-with-session tandem-steer-test--script
    (let* ((script (make-temp-file "tandem-steer-agent-" nil ".json"))
           (log (make-temp-file "tandem-steer-agent-log-" nil ".jsonl"))
           (tandem-provider "acp:fake")
           (tandem-acp-agents
            `(("fake" :command (,(expand-file-name ".venv/bin/python" tandem-test-root)
                                ,(expand-file-name "tests/python/acp/fake_agent.py"
                                                   tandem-test-root)
                                ,script ,log))))
           (asked nil))
      (with-temp-file script
        (insert (json-encode '((prompts . [[((say . "working")) ((sleep . 3))
                                             ((say . " done"))]
                                            [((say . "second turn"))]])))))
      (unwind-protect
          (progn
            (should (equal (tandem-view-test-send "first") 1))
            (tandem-test-wait-until (lambda () (tandem-view-state-running tandem-view--state)))
            (goto-char (point-max))
            (insert "go left")
            (cl-letf (((symbol-function 'y-or-n-p)
                       (lambda (prompt) (setq asked prompt) t)))
              (tandem-composer-steer))
            (should (string-match-p "acp:fake cannot take guidance" asked))
            (should (string-match-p "Queue it for after the turn\\?" asked))
            (should (equal (tandem-composer-draft) ""))
            (tandem-view-test-wait-turn 2 40)
            (let ((entries (tandem-steer-test--entries)))
              (should (equal (delq nil (mapcar (lambda (e) (and (equal (plist-get e :type) "user")
                                                                (plist-get e :text)))
                                               entries))
                             '("first" "go left")))
              (should-not (seq-find (lambda (e) (equal (plist-get e :type) "steer")) entries))))
        (ignore-errors (delete-file script))
        (ignore-errors (delete-file log))))))

(provide 'tandem-steer-tests)
;;; tandem-steer-tests.el ends here
