;;; tandem-rewind-test-helpers.el --- Shared set-up of the rewind and undo tests  -*- lexical-binding: t; -*-

;;; Commentary:
;; The script both suites play, file and buffer readers, and the two turns
;; they start from: a chat turn that writes notes.txt, then a directive's
;; implementation attempt that rewrites a.txt and creates b.txt.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-directive)

(defconst tandem-rewind-test--script
  (expand-file-name "scripts/rewind-two-turns.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Turn 1 writes notes.txt; turn 2 rewrites a.txt and creates b.txt.")

(defun tandem-rewind-test--read (file)
  "Return FILE's contents, or nil when it does not exist."
  (and (file-exists-p file)
       (with-temp-buffer (insert-file-contents file) (buffer-string))))

(defun tandem-rewind-test--text (buffer)
  "Return BUFFER's text without properties."
  (with-current-buffer buffer (buffer-substring-no-properties (point-min) (point-max))))

(defun tandem-rewind-test--chat-then-implement (project a)
  "In a new session of PROJECT, run the chat turn, then implement a directive on A.
Return (SESSION VIEW ID): the session, its buffer and the directive."
  (let* ((session (plist-get (tandem-request "sessions/new"
                                             (list :cwd (directory-file-name project)))
                             :id))
         (view (tandem-directive-session-buffer session project t))
         (id (tandem-directive-create a 1 7 "Make the greeting loud")))
    (should (equal (tandem-send "FIRST please write notes" session) (cons session 1)))
    (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
    (should (equal (tandem-directive-act id 'implement) (cons session 2)))
    (should (equal (plist-get (tandem-wait-turn session 2 60) :outcome) "succeeded"))
    (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
    (should (= 1 (length (plist-get (tandem-directive-record id) :attempts))))
    (list session view id)))

(provide 'tandem-rewind-test-helpers)
;;; tandem-rewind-test-helpers.el ends here
