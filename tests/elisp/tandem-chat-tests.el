;;; tandem-chat-tests.el --- A chat turn from the composer, across a restart  -*- lexical-binding: t; -*-

;;; Commentary:
;; A chat turn sent from the composer streams into the session
;; buffer, and the buffer survives a backend restart: it is rebuilt from
;; the journal by the new backend, with nothing kept only in Emacs.

;;; Code:

(require 'tandem-view-test-helpers)

(defconst tandem-chat-test--script
  '(:steps [(:reply (:text "Streaming an answer in several pieces, about **tandem**."
                     :delay 0.01))
            (:reply (:text "Second answer after the restart."))])
  "Two plain answers.")

(ert-deftest tandem-chat-composer-turn-survives-backend-restart ()
  "Send from the composer; kill -9 the backend; `g' shows the same turn."
  (tandem-view-test-with-session tandem-chat-test--script
    (let ((deltas 0))
      (add-hook 'tandem-event-functions
                (lambda (e) (when (equal (plist-get e :kind) "delta") (cl-incf deltas))))
      (let ((turn (tandem-view-test-send "Tell me about tandem")))
        (should (equal turn 1))
        (tandem-view-test-wait-turn turn 30)
        (should (> deltas 0)))
      (let ((before (tandem-view-test-text))
            (pid (tandem-backend-pid)))
        (should (string-match-p "Tell me about tandem" before))
        (should (string-match-p "Streaming an answer in several pieces" before))
        (signal-process pid 9)
        (tandem-test-wait-until (lambda () (not (process-live-p (oref tandem--connection process)))))
        ;; `g' re-renders from the journal through a new backend.
        (goto-char (point-min))
        (funcall (key-binding (kbd "g")))
        (tandem-test-wait-until (lambda () (not (equal (tandem-backend-pid) pid))))
        (tandem-test-wait-until
         (lambda () (string-match-p "Streaming an answer in several pieces"
                                    (tandem-view-test-text))))
        (should-not (equal (tandem-backend-pid) pid))
        (should (string-match-p "Tell me about tandem" (tandem-view-test-text)))
        (should (string-match-p "succeeded" (tandem-view-test-text)))
        ;; And the session goes on: turn 2 in the new backend.
        (let ((turn (tandem-view-test-send "And now?")))
          (should (equal turn 2))
          (tandem-view-test-wait-turn turn 30)
          (should (string-match-p "Second answer after the restart"
                                  (tandem-view-test-text))))))))

(ert-deftest tandem-chat-send-key-returns-before-the-reply ()
  "C-c C-c returns at once; the turn is drawn when the backend accepts it.
No request is waited for (the draft is cleared, the send is on its
way); a second C-c C-c meanwhile queues; a refusal puts the draft back
and says why in the echo area."
  (tandem-view-test-with-session tandem-chat-test--script
    (let ((waited nil))
      (cl-letf* ((sync (symbol-function 'tandem-request))
                 ((symbol-function 'tandem-request)
                  (lambda (method &rest args) (push method waited) (apply sync method args))))
        (goto-char (point-max))
        (insert "Tell me about tandem")
        (should-not (funcall (key-binding (kbd "C-c C-c"))))
        (should-not waited)
        (should (tandem-view-sending-p))
        (should (equal (tandem-composer-draft) ""))
        (should (tandem-composer-busy-p)))
      (tandem-test-wait-until (lambda () (not (tandem-view-sending-p))) 30)
      (should (equal tandem-view-last-send '(turn . 1)))
      (tandem-view-test-wait-turn 1 30)
      (should (string-match-p "Tell me about tandem" (tandem-view-test-text))))
    ;; Refused by the backend (a session it does not know): the draft comes back.
    (let ((messages nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (fmt &rest args) (push (apply #'format fmt args) messages)))
                ((symbol-function 'ding) #'ignore))
        (setf (tandem-view-state-session tandem-view--state) "no-such-session")
        (goto-char (point-max))
        (insert "Lost words")
        (funcall (key-binding (kbd "C-c C-c")))
        (should (equal (tandem-composer-draft) ""))
        (tandem-test-wait-until (lambda () (not (tandem-view-sending-p))) 30))
      (should (eq (car tandem-view-last-send) 'error))
      (should (equal (tandem-composer-draft) "Lost words"))
      (should (cl-some (lambda (m) (string-prefix-p "tandem: " m)) messages)))))

(provide 'tandem-chat-tests)
;;; tandem-chat-tests.el ends here
