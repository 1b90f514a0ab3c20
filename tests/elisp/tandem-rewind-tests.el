;;; tandem-rewind-tests.el --- Rewind from Emacs against a real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, real checkpoints, a real HTTP server
;; speaking the OpenAI streaming format.  Two turns edit files; a rewind
;; before the second brings the view and the files back to after the
;; first.  The directive path goes through the directive menu's command.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-composer)
(require 'tandem-directive)
(require 'tandem-rewind)
(require 'tandem-rewind-test-helpers)

(ert-deftest tandem-rewind-two-turns ()
  "Two turns edit files; rewind before the second: view and files as after the first."
  (tandem-test-with-fake-openai tandem-rewind-test--script
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (a (expand-file-name "a.txt" project))
           (b (expand-file-name "b.txt" project))
           (notes (expand-file-name "notes.txt" project)))
      (write-region "hello\nworld\n" nil a)
      (let* ((info (tandem-request "sessions/new" (list :cwd (directory-file-name project))))
             (session (plist-get info :id))
             (view (tandem-view-show info t)))
        (should (equal (tandem-send "FIRST please write notes" session) (cons session 1)))
        (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
        (should (equal (tandem-rewind-test--read notes) "first\n"))
        (should (equal (tandem-send "SECOND make it loud" session) (cons session 2)))
        (should (equal (plist-get (tandem-wait-turn session 2 60) :outcome) "succeeded"))
        (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
        (should (equal (tandem-rewind-test--read b) "new file\n"))
        (tandem-test-wait-until
         (lambda () (string-match-p "SECOND-DONE" (tandem-rewind-test--text view))) 20)
        ;; The plan, as a plist.
        (let ((plan (tandem-rewind-plan session 2)))
          (should (equal (plist-get plan :to-restore) '("a.txt")))
          (should (equal (plist-get plan :to-delete) '("b.txt")))
          (should (equal (mapcar (lambda (tu) (plist-get tu :turn)) (plist-get plan :turns))
                         '(2)))
          (should (null (plist-get plan :changed-externally)))
          (should (= 64 (length (plist-get plan :digest)))))
        ;; One turn's patch in a reusable diff-mode buffer.
        (let ((patch (tandem-view-turn-patch session 2)))
          (with-current-buffer patch
            (should (eq major-mode 'diff-mode))
            (should buffer-read-only)
            (should (string-match-p "^\\+HELLO" (buffer-string)))
            (should (string-match-p "^\\+new file" (buffer-string))))
          (should (eq patch (tandem-view-turn-patch session 1))))
        ;; A draft waits in the composer; declining changes nothing.
        (with-current-buffer view (tandem-composer-set-draft "unsent words"))
        (let* ((asked nil)
               (tandem-rewind-confirm-function (lambda (prompt) (setq asked prompt) nil)))
          (should-not (tandem-rewind session 2))
          (should (string-match-p "restore 1 file(s), delete 1, discard 1 turn" asked))
          (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n")))
        ;; The file is edited by hand while the user reads the plan: the backend
        ;; refuses the stale plan, the new plan shows the outside edit, and
        ;; confirming that one rewinds.
        (let* ((impact nil) (calls 0)
               (tandem-rewind-confirm-function
                (lambda (prompt)
                  (cl-incf calls)
                  (if (= calls 1)
                      (progn (write-region "HELLO\nworld\nby hand\n" nil a) t)
                    (setq impact (tandem-rewind-test--text (get-buffer "*tandem-rewind*")))
                    (with-current-buffer "*tandem-rewind*" (should (eq major-mode 'diff-mode)))
                    (should (string-match-p "overwriting 1 outside change" prompt))
                    t)))
               (result (tandem-rewind session 2)))
          (should (= calls 2))
          (should (string-match-p "Turns discarded (1)" impact))
          (should (string-match-p "Turn 2 · chat · succeeded — SECOND make it loud" impact))
          (should (string-match-p "overwrites these edits (1)\n  a.txt (since turn 2 ended)"
                                  impact))
          (should (string-match-p "^-by hand" impact))
          (should (string-match-p "^  delete  b.txt" impact))
          (should (equal (plist-get result :restored) '("a.txt")))
          (should (equal (plist-get result :deleted) '("b.txt"))))
        ;; Files as after the first turn.
        (should (equal (tandem-rewind-test--read a) "hello\nworld\n"))
        (should-not (file-exists-p b))
        (should (equal (tandem-rewind-test--read notes) "first\n"))
        ;; The view re-rendered without turn 2; the composer is empty, in chat scope.
        (with-current-buffer view
          (let ((text (tandem-rewind-test--text view)))
            (should (string-match-p "Turn 1 · You" text))
            (should-not (string-match-p "Turn 2 · You" text))
            (should-not (string-match-p "SECOND-DONE" text))
            (should (string-match-p "Rewound to before turn 2" text)))
          (should (equal (tandem-composer-draft) ""))
          (should (eq (tandem-composer-scope) 'chat))
          (should (equal (car kill-ring) "unsent words"))
          ;; R and = act on the turn at point.
          (goto-char (point-min))
          (re-search-forward "Turn 1 · You")
          ;; (The transcript's keymap text property; `key-binding' would also see
          ;; a transient menu another test may have left active.)
          (let ((map (get-text-property (point) 'keymap)))
            (should (eq (lookup-key map "R") #'tandem-rewind-before-turn-at-point))
            (should (eq (lookup-key map "=") #'tandem-review-turn-at-point)))
          (should (equal (tandem-rewind--at-point) (list session 1))))
        ;; The rewound turn is gone: a second rewind of it is refused.
        (let ((err (should-error (tandem-rewind-plan session 2) :type 'tandem-error)))
          (should (equal (tandem-error-code err) "not-found")))
        (should-error (tandem-rewind-plan session 0) :type 'wrong-type-argument)
        (should-error (tandem-rewind "" 1 t) :type 'wrong-type-argument)))))

(ert-deftest tandem-rewind-directive-menu ()
  "The directive menu's Rewind before this implementation… rewinds the attempt's turn."
  (tandem-test-with-fake-openai tandem-rewind-test--script
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (a (expand-file-name "a.txt" project))
           (notes (expand-file-name "notes.txt" project)))
      (write-region "hello\nworld\n" nil a)
      (pcase-let ((`(,session ,view ,id) (tandem-rewind-test--chat-then-implement project a)))
        (let ((plan (tandem-rewind-plan session 2)))
          (should (equal (plist-get (car (plist-get plan :attempts)) :directive) id))
          (should (equal (plist-get (car (plist-get plan :attempts)) :action) "implement")))
        ;; Through the menu's own command, as the transient would run it.
        (let ((tandem-directive--menu-id id)
              (tandem-directive--menu-root (directory-file-name project))
              (tandem-rewind-confirm-function
               (lambda (_prompt)
                 (should (string-match-p
                          "Directive attempts discarded (1)\n  D1 · implement · attempt 1 (turn 2)"
                          (tandem-rewind-test--text (get-buffer "*tandem-rewind*"))))
                 t)))
          (should (plist-get (call-interactively #'tandem-directive-menu-rewind) :seq)))
        (should (equal (tandem-rewind-test--read a) "hello\nworld\n"))
        (should (equal (tandem-rewind-test--read notes) "first\n"))
        (should-not (file-exists-p (expand-file-name "b.txt" project)))
        ;; The attempt left the directive's live state; the request survives.
        (let ((record (tandem-directive-record id)))
          (should (null (plist-get record :attempts)))
          (should (equal (plist-get record :state) "ready"))
          (should (equal (plist-get record :request) "Make the greeting loud")))
        (should-not (string-match-p "Directive D1 · implement"
                                    (tandem-rewind-test--text view)))))))

(provide 'tandem-rewind-tests)
;;; tandem-rewind-tests.el ends here
