;;; tandem-queue-tests.el --- Send never cancels: the queue  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend and the fake OpenAI server: while a turn runs, C-c C-c
;; queues the draft (a row under the running turn, editable and
;; deletable); the backend sends the queue as the next turns when the
;; turn ends well, holds it when the turn fails or stops, and keeps it
;; across a backend restart.  C-c C-k cancels, and asks when the turn
;; already did work.

;;; Code:

(require 'ert)
(require 'tandem-view-test-helpers)
(require 'tandem)

(defconst tandem-queue-test--write
  '(:default (:text "(no more steps)")
    :steps [(:match (:has_tools t)
             :reply (:text "I will write notes.txt."
                     :tool_calls [(:name "write_file"
                                   :input (:path "notes.txt" :content "noted\n"))]))
            (:match (:has_tools t) :reply (:text "Done: notes.txt is written."))])
  "A turn that waits for a permission answer, then ends well.")

(defun tandem-queue-test--wait-question ()
  "Wait until the running turn asks; return the question row's position."
  (tandem-test-wait-until
   (lambda () (next-single-property-change (point-min) 'tandem-interaction))
   20))

(defun tandem-queue-test--answer ()
  "Allow the waiting question once."
  (tandem-view-answer-at (tandem-queue-test--wait-question) "allow_once"))

(defun tandem-queue-test--queue (text)
  "Type TEXT in the composer and press C-c C-c while the turn runs."
  (goto-char (point-max))
  (insert text)
  (execute-kbd-macro (kbd "C-c C-c"))
  (should (equal (tandem-composer-draft) "")))

(defun tandem-queue-test--wait-text (regexp &optional timeout)
  "Wait until the buffer shows REGEXP (at most TIMEOUT seconds)."
  (let ((buffer (current-buffer)))
    (tandem-test-wait-until
     (lambda () (with-current-buffer buffer
                  (tandem-view-flush)
                  (string-match-p regexp (tandem-view-test-text))))
     (or timeout 20))))

(defun tandem-queue-test--requests ()
  "Return the user texts of this buffer's session, from its journal."
  (let ((session (tandem-view-state-session tandem-view--state)))
    (delq nil (mapcar (lambda (e) (and (equal (plist-get e :type) "user") (plist-get e :text)))
                      (plist-get (tandem-request "sessions/entries" (list :session session))
                                 :entries)))))

(defun tandem-queue-test--row (item)
  "Move to the queued row of ITEM and return its position."
  (tandem-view-flush)
  (goto-char (point-min))
  (let ((pos (point-min)))
    (while (and pos (not (equal (get-text-property pos 'tandem-queue-item) item)))
      (setq pos (next-single-property-change pos 'tandem-queue-item)))
    (should pos)
    (goto-char pos)))

(defun tandem-queue-test--two-queued (one two)
  "Send a turn that waits for an answer, then queue ONE and TWO while it waits."
  (tandem-view-test-send "write notes")
  (tandem-queue-test--wait-question)
  (tandem-queue-test--queue one)
  (tandem-queue-test--queue two)
  (tandem-queue-test--wait-text "Queued q2"))

(ert-deftest tandem-queue-during-a-permission-wait-goes-after-the-answer ()
  "C-c C-c while a turn waits for an answer queues; it never cancels the turn.
Two queued messages go, in order, as the next turns once it ends well."
  (tandem-view-test-with-session tandem-queue-test--write
    (should (equal (tandem-view-test-send "write notes") 1))
    (tandem-queue-test--wait-question)
    (tandem-view-flush)
    (should (string-match-p "C-c C-c queue · C-c C-s steer · C-c C-k cancel" (tandem-view-test-text)))
    (tandem-queue-test--queue "then the second")
    (tandem-queue-test--queue "and the third")
    (tandem-queue-test--wait-text "⧗ Queued q2 · and the third")
    (let ((text (tandem-view-test-text)))
      (should (string-match-p "⧗ Queued q1 · then the second" text))
      (should (< (string-match "Queued q1" text) (string-match "Queued q2" text)))
      ;; The rows sit under the running turn, above the composer.
      (should (< (string-match "waiting for you" text) (string-match "Queued q1" text)))
      (should-not (string-match-p "aborted" text)))
    (should (tandem-view-state-running tandem-view--state))
    (tandem-queue-test--answer)
    (tandem-view-test-wait-turn 3 30)
    (should (equal (tandem-queue-test--requests)
                   '("write notes" "then the second" "and the third")))
    (let ((text (tandem-view-test-text)))
      (should-not (string-match-p "aborted" text))
      (should-not (string-match-p "Queued q" text))
      (should (string-match-p "Turn 3 · You" text)))))

(ert-deftest tandem-queue-rows-edit-and-delete ()
  "`e' on a queued row puts it in the composer, C-c C-c saves it in place; `k' deletes."
  (tandem-view-test-with-session tandem-queue-test--write
    (tandem-queue-test--two-queued "frist" "drop me")
    (tandem-queue-test--row "q1")
    (should (string-match-p "RET/e: edit" (or (get-text-property (point) 'help-echo) "")))
    (execute-kbd-macro (kbd "e"))
    (should (equal (tandem-composer-draft) "frist"))
    (tandem-composer-set-draft "first")
    (execute-kbd-macro (kbd "C-c C-c"))
    (tandem-queue-test--wait-text "Queued q1 · first")
    (tandem-queue-test--row "q2")
    (execute-kbd-macro (kbd "k"))
    (tandem-test-wait-until (lambda () (tandem-view-flush)
                              (not (string-match-p "Queued q2" (tandem-view-test-text)))))
    (let ((text (tandem-view-test-text)))
      (should (string-match-p "Queued q1 · first" text))
      (should-not (string-match-p "frist" text)))
    (tandem-queue-test--answer)
    (tandem-view-test-wait-turn 2 30)
    (should (equal (tandem-queue-test--requests) '("write notes" "first")))))

(ert-deftest tandem-queue-a-failed-turn-holds-the-queue ()
  "A turn that fails holds the queue and says so; `tandem-queue-send' sends it on."
  (tandem-view-test-with-session
      '(:default (:text "(no more steps)")
        :steps [(:match (:has_tools t)
                 :reply (:text "Writing." :tool_calls [(:name "write_file"
                                                        :input (:path "n.txt" :content "n\n"))]))
                (:match (:has_tools t) :reply (:status 400 :message "model refused"))])
    (tandem-view-test-send "write n")
    (tandem-queue-test--wait-question)
    (tandem-queue-test--queue "after it")
    (tandem-queue-test--wait-text "Queued q1")
    (tandem-queue-test--answer)
    (tandem-view-test-wait-turn 1 30)
    (tandem-queue-test--wait-text "Queue held: turn 1 failed")
    (should (string-match-p "⧗ Queued q1 · after it" (tandem-view-test-text)))
    (should (equal (tandem-queue-test--requests) '("write n")))
    (tandem-queue-test--row "q1")
    (call-interactively #'tandem-queue-send)
    (tandem-view-test-wait-turn 2 30)
    (should (equal (tandem-queue-test--requests) '("write n" "after it")))
    (should-not (string-match-p "Queue held" (tandem-view-test-text)))))

(ert-deftest tandem-queue-survives-a-backend-restart ()
  "The queue is in the journal: a backend killed mid-turn finds it again, held."
  (tandem-view-test-with-session tandem-queue-test--write
    (tandem-queue-test--two-queued "one" "two")
    (signal-process (tandem-backend-pid) 9)
    (tandem-queue-test--wait-text "backend stopped during turn 1" 10)
    (goto-char (point-min))
    (funcall (key-binding "g"))
    (tandem-queue-test--wait-text "Queue held: turn 1 was interrupted")
    (let ((text (tandem-view-test-text)))
      (should (string-match-p "Queued q1 · one" text))
      (should (string-match-p "Queued q2 · two" text)))
    (tandem-queue-test--row "q1")
    (execute-kbd-macro (kbd "s"))
    (tandem-view-test-wait-turn 3 30)
    (should (equal (tandem-queue-test--requests) '("write notes" "one" "two")))))

(ert-deftest tandem-queue-cancel-asks-when-the-turn-did-work ()
  "C-c C-k cancels; it asks first once a tool ran, and a no keeps the turn."
  (tandem-view-test-with-session
      '(:steps [(:match (:has_tools t)
                 :reply (:text "Looking." :tool_calls [(:name "list_files" :input (:path "."))]))
                (:match (:has_tools t) :reply (:text "Thinking forever" :stall t))])
    (let* ((asked nil) (yes nil)
           (tandem-view-cancel-confirm-function
            (lambda (prompt) (push prompt asked) yes)))
      (tandem-view-test-send "look around")
      (tandem-queue-test--wait-text "Thinking forever")
      (goto-char (point-max))
      (execute-kbd-macro (kbd "C-c C-k"))
      (should (string-match-p "ran 1 tool" (car asked)))
      (sit-for 0.3)
      (should (tandem-view-state-running tandem-view--state))
      (setq yes t)
      (execute-kbd-macro (kbd "C-c C-k"))
      (tandem-view-test-wait-turn 1)
      (should (= (length asked) 2))
      (should (string-match-p "⊘ aborted" (tandem-view-test-text))))))

(ert-deftest tandem-queue-cancel-of-a-turn-without-work-does-not-ask ()
  "A turn that did nothing yet is cancelled by C-c C-k at once; C-c C-c never cancels."
  (tandem-view-test-with-session '(:steps [(:reply (:text "Thinking forever" :stall t))])
    (let ((tandem-view-cancel-confirm-function
           (lambda (_) (ert-fail "asked to confirm a cancel of a turn that did nothing"))))
      (tandem-view-test-send "never ends")
      (tandem-queue-test--wait-text "Thinking forever")
      (tandem-queue-test--queue "waits")
      (sit-for 0.3)
      (should (tandem-view-state-running tandem-view--state))
      (execute-kbd-macro (kbd "C-c C-k"))
      (tandem-view-test-wait-turn 1)
      (tandem-queue-test--wait-text "Queue held: turn 1 was cancelled")
      (should (string-match-p "⊘ aborted: cancelled" (tandem-view-test-text))))))

(ert-deftest tandem-queue-back-to-chat-keeps-a-key ()
  "Back to chat from a directive scope is on C-c C-b; C-c C-k is cancel everywhere."
  (with-temp-buffer
    (tandem-view-mode)
    (should (eq (key-binding (kbd "C-c C-b")) #'tandem-composer-back-to-chat))
    (should (eq (key-binding (kbd "C-c C-k")) #'tandem-composer-cancel))
    (should (eq (key-binding (kbd "C-c C-c")) #'tandem-composer-send))))

(provide 'tandem-queue-tests)
;;; tandem-queue-tests.el ends here
