;;; tandem-turns-tests.el --- Turns from Emacs against a fake model  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, a real HTTP server speaking the OpenAI
;; streaming format with a scripted conversation.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)

(defconst tandem-turns-test--script
  (expand-file-name "scripts/permission-edit.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "A conversation that writes a file after asking permission.")

(ert-deftest tandem-turns-send-permission-and-wait ()
  "A turn asks permission, the answer from Emacs lets it write, it succeeds."
  (tandem-test-with-fake-openai tandem-turns-test--script
    (let* ((events nil)
           (tandem-permission-mode 'ask))
      (add-hook 'tandem-event-functions (lambda (e) (push e events)))
      (let* ((session (tandem-project-session project))
             (accepted (tandem-send "Please write notes" session))
             (turn (cdr accepted)))
        (should (equal (car accepted) session))
        (should (= turn 1))
        (let ((ask (tandem-test-wait-until
                    (lambda () (seq-find (lambda (e) (equal (plist-get e :kind) "interaction"))
                                         events)) 20)))
          (should (string-match-p "notes.txt" (plist-get ask :title)))
          (tandem-answer-interaction session (plist-get ask :interaction-id) "allow_once"))
        (let ((result (tandem-wait-turn session turn 60)))
          (should (equal (plist-get result :outcome) "succeeded"))
          (should (equal (plist-get result :files-changed) '("notes.txt"))))
        (should (equal (with-temp-buffer
                         (insert-file-contents (expand-file-name "notes.txt" project))
                         (buffer-string))
                       "written by the model\n"))
        ;; Text streamed as deltas, entries arrived, one terminal event.
        (should (seq-find (lambda (e) (equal (plist-get e :kind) "delta")) events))
        (tandem-test-wait-until
         (lambda () (seq-find (lambda (e) (equal (plist-get e :kind) "turn-ended")) events)))
        (should (= 1 (seq-count (lambda (e) (equal (plist-get e :kind) "turn-ended")) events)))
        ;; The key never reached an event.
        (should-not (string-match-p "sk-test-key-not-real" (prin1-to-string events)))))))

(ert-deftest tandem-turns-reject-and-cancel ()
  "A rejected permission leaves the file unwritten; cancel ends a turn aborted."
  (tandem-test-with-fake-openai (expand-file-name "reject-then-cancel.json"
                                                  (file-name-directory tandem-turns-test--script))
    (let ((events nil) (tandem-permission-mode 'ask))
      (add-hook 'tandem-event-functions (lambda (e) (push e events)))
      (let* ((session (tandem-project-session project))
             (turn (cdr (tandem-send "Please write notes" session))))
        (let ((ask (tandem-test-wait-until
                    (lambda () (seq-find (lambda (e) (equal (plist-get e :kind) "interaction"))
                                         events)) 20)))
          (tandem-answer-interaction session (plist-get ask :interaction-id) "reject"))
        (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome) "succeeded"))
        (should-not (file-exists-p (expand-file-name "notes.txt" project)))
        ;; Second turn: cancel while it waits for permission.
        (setq events nil)
        (let ((turn2 (cdr (tandem-send "Please write notes again" session))))
          (should (= turn2 2))
          (tandem-test-wait-until
           (lambda () (seq-find (lambda (e) (equal (plist-get e :kind) "interaction")) events))
           20)
          (should (tandem-cancel-turn session))
          (should (equal (plist-get (tandem-wait-turn session turn2 30) :outcome) "aborted")))))))

;; `tandem-wait-turn' then reading what the hooks saw is what every test
;; of a turn does; a busy Emacs (slow to return each event batch) once got
;; the reply before the turn's last entries and read a journal without them.
(ert-deftest tandem-turns-wait-returns-after-the-turns-events ()
  "With Emacs slow to take each event batch, the wait still returns last."
  (tandem-test-with-fake-openai tandem-turns-test--script
    (let* ((kinds nil)
           (tandem-permission-mode 'auto-edit)
           (hook (lambda (e)
                   (push (or (plist-get (plist-get e :entry) :type) (plist-get e :kind))
                         kinds)
                   (sleep-for 0.1))))
      (add-hook 'tandem-event-functions hook)
      (unwind-protect
          (let* ((session (tandem-project-session project))
                 (turn (cdr (tandem-send "Please write notes" session))))
            (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome)
                           "succeeded"))
            (should (member "tool_result" kinds))
            (should (member "turn_end" kinds))
            (should (equal (car kinds) "turn-ended")))
        (remove-hook 'tandem-event-functions hook)))))

(ert-deftest tandem-turns-bad-requests ()
  "Bad sends are refused with readable errors and change nothing."
  (tandem-test-with-backend
    (let ((session (plist-get (tandem-request "sessions/new"
                                              (list :cwd (tandem-test-make-home)))
                              :id)))
      (let ((err (should-error (tandem-request "turns/send" (list :session session :text "hi"
                                                                  :provider "nonsense"))
                               :type 'tandem-error)))
        (should (string-match-p "must look like openai:MODEL" (tandem-error-message err))))
      (let ((err (should-error (tandem-request "turns/send" (list :session session :text ""))
                               :type 'tandem-error)))
        (should (equal (tandem-error-code err) "invalid")))
      (let ((err (should-error (tandem-request "turns/status" (list :session session :turn 1))
                               :type 'tandem-error)))
        (should (equal (tandem-error-code err) "not-found"))))))

(provide 'tandem-turns-tests)
;;; tandem-turns-tests.el ends here
