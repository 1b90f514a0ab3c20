;;; tandem-rewind-undo-tests.el --- Undo a rewind from Emacs, real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, real checkpoints, the fake OpenAI server
;; recording every request.  A chat turn and a directive attempt edit
;; files; a rewind before turn 1 hides both; undoing it brings back the
;; files, the view, the next request's context and the attempt.  After a
;; later turn the undo is refused and only the files can come back.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-directive)
(require 'tandem-rewind)
(require 'tandem-rewind-test-helpers)

(defun tandem-rewind-undo-test--requests (file)
  "The chat request bodies recorded in FILE, as JSON strings."
  (with-temp-buffer
    (insert-file-contents file)
    (cl-remove-if-not (lambda (l) (string-match-p "chat/completions" l))
                      (split-string (buffer-string) "\n" t))))

(defmacro tandem-rewind-undo-test--two-turns (&rest body)
  "Run BODY after a chat turn and a directive attempt in a fresh session.
BODY sees `session', `view', `id' (the directive), `a', `b', `notes'."
  (declare (indent 0) (debug t))
  `(tandem-test-with-fake-openai tandem-rewind-test--script
     (let* ((tandem-permission-mode 'auto-edit)
            (default-directory project)
            (a (expand-file-name "a.txt" project))
            (b (expand-file-name "b.txt" project))
            (notes (expand-file-name "notes.txt" project)))
       (write-region "hello\nworld\n" nil a)
       (pcase-let ((`(,session ,view ,id) (tandem-rewind-test--chat-then-implement project a)))
         (should (equal (tandem-rewind-test--read b) "new file\n"))
         (should (plist-get (tandem-rewind session 1 t) :seq))
         (should (equal (tandem-rewind-test--read a) "hello\nworld\n"))
         (should-not (file-exists-p b))
         (should-not (file-exists-p notes))
         (should (null (plist-get (tandem-directive-record id) :attempts)))
         (ignore view fake-record)
         ,@body))))

(ert-deftest tandem-rewind-undo-brings-everything-back ()
  "Rewind before turn 1 of two, undo it: files, view, context and attempts return."
  (tandem-rewind-undo-test--two-turns
    (let* ((asked nil)
           (tandem-rewind-confirm-function
            (lambda (prompt)
              (setq asked prompt)
              (let ((impact (tandem-rewind-test--text (get-buffer "*tandem-rewind*"))))
                (should (string-match-p "Turns returning (2)" impact))
                (should (string-match-p
                         "Directive attempts returning (1)\n  D1 · implement · attempt 1 (turn 2)"
                         impact)))
              t))
           (result (tandem-rewind-undo session)))
      (should (string-match-p "restore 3 file(s), delete 0, 2 turn(s) return" asked))
      (should (equal (plist-get result :turns) '(1 2)))
      (should-not (plist-get result :files-only)))
    ;; The files byte for byte as before the rewind.
    (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
    (should (equal (tandem-rewind-test--read b) "new file\n"))
    (should (equal (tandem-rewind-test--read notes) "first\n"))
    ;; The directive's attempt is live again.
    (let ((record (tandem-directive-record id)))
      (should (= 1 (length (plist-get record :attempts)))))
    ;; The view shows both turns again, and the undo row.
    (tandem-test-wait-until
     (lambda () (string-match-p "Turn 1 · You" (tandem-rewind-test--text view))) 20)
    (let ((text (tandem-rewind-test--text view)))
      (should (string-match-p "FIRST-DONE" text))
      (should (string-match-p "Undid the rewind before turn 1" text)))
    ;; The next chat request carries turn 1 again.
    (should (equal (tandem-send "THIRD after the undo" session) (cons session 3)))
    (should (equal (plist-get (tandem-wait-turn session 3 60) :outcome) "succeeded"))
    (let ((last (car (last (tandem-rewind-undo-test--requests fake-record)))))
      (should (string-match-p "THIRD after the undo" last))
      (should (string-match-p "FIRST please write notes" last))
      (should (string-match-p "FIRST-DONE" last)))
    ;; Nothing is left to undo.
    (let ((err (should-error (tandem-rewind-undo-plan session) :type 'tandem-error)))
      (should (equal (tandem-error-code err) "not-found")))))

(ert-deftest tandem-rewind-undo-refused-after-a-later-turn ()
  "After a later turn the undo is refused (the plan says which); files only is allowed."
  (tandem-rewind-undo-test--two-turns
    (should (equal (tandem-send "THIRD after the rewind" session) (cons session 3)))
    (should (equal (plist-get (tandem-wait-turn session 3 60) :outcome) "succeeded"))
    (let ((plan (tandem-rewind-undo-plan session)))
      (should (equal (plist-get plan :later-turns) '(3)))
      (should (string-match-p "turn(s) 3 ran after the rewind" (plist-get plan :refusal))))
    (let ((err (should-error (tandem-request "sessions/rewind-undo"
                                             (list :session session
                                                   :digest (plist-get
                                                            (tandem-rewind-undo-plan session)
                                                            :digest)))
                             :type 'tandem-error)))
      (should (equal (tandem-error-code err) "later-turns")))
    (should-not (file-exists-p b))
    (let* ((prompts nil)
           (tandem-rewind-confirm-function (lambda (p) (push p prompts) t))
           (result (tandem-rewind-undo session)))
      (should (string-match-p "put back only the files" (cadr prompts)))
      (should (string-match-p "turns stay rewound" (car prompts)))
      (should (plist-get result :files-only)))
    (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
    (should (equal (tandem-rewind-test--read b) "new file\n"))
    ;; The turns stay rewound: view and attempts unchanged.
    (should (null (plist-get (tandem-directive-record id) :attempts)))
    (tandem-test-wait-until
     (lambda () (string-match-p "Files put back as before the rewind"
                                (tandem-rewind-test--text view)))
     20)
    (should-not (string-match-p "Turn 1 · You" (tandem-rewind-test--text view)))))

(provide 'tandem-rewind-undo-tests)
;;; tandem-rewind-undo-tests.el ends here
