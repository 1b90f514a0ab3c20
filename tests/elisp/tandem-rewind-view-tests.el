;;; tandem-rewind-view-tests.el --- What the view shows after a rewind and its undo  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, the fake OpenAI server.  Three turns
;; (the first two each write one file); a rewind before turn 2 leaves turn
;; 1 on the screen (never a blank view), and its message says how to undo
;; it; after the undo, a refresh and a reopening, turn 2's footer still
;; says it changed one file.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-rewind)
(require 'tandem-rewind-test-helpers)
(require 'tandem)

(defconst tandem-rewind-view-test--script
  (expand-file-name "scripts/rewind-three-turns.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Turn 1 writes notes.txt, turn 2 rewrites a.txt, turn 3 only answers.")

(defun tandem-rewind-view-test--footer (buffer turn)
  "Return the text of TURN's block in BUFFER (up to the next turn's header)."
  (let ((text (tandem-rewind-test--text buffer)))
    (and (string-match (format "Turn %d · You" turn) text)
         (let ((start (match-beginning 0)))
           (substring text start (or (string-match "Turn [0-9]+ · You" text (match-end 0))
                                     (length text)))))))

(defun tandem-rewind-view-test--settle ()
  "Let events and view frames that are due run (half a second)."
  (let ((until (+ (float-time) 0.5)))
    (while (< (float-time) until) (accept-process-output nil 0.05))))

(ert-deftest tandem-rewind-view-never-blank-and-footers-return ()
  "Rewind turn 2 of 3: turn 1 stays shown, the message names the undo; footers return."
  (tandem-test-with-fake-openai tandem-rewind-view-test--script
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (a (expand-file-name "a.txt" project)))
      (write-region "hello\nworld\n" nil a)
      (let* ((info (tandem-request "sessions/new" (list :cwd (directory-file-name project))))
             (session (plist-get info :id))
             (view (tandem-view-show info t))
             (messages nil))
        (dolist (n '(1 2 3))
          (should (equal (tandem-send (format "TURN %d please" n) session) (cons session n)))
          (should (equal (plist-get (tandem-wait-turn session n 60) :outcome) "succeeded")))
        (tandem-test-wait-until
         (lambda () (string-match-p "THIRD-DONE" (tandem-rewind-test--text view))) 20)
        (should (string-match-p "1 file changed" (tandem-rewind-view-test--footer view 2)))
        ;; Rewind before turn 2, from the session buffer, as R does.
        (cl-letf* ((real-message (symbol-function 'message))
                   ((symbol-function 'message)
                    (lambda (format &rest args)
                      (when format (push (apply #'format-message format args) messages))
                      (apply real-message format args))))
          (with-current-buffer view
            (should (plist-get (tandem-rewind session 2 t) :seq))))
        (tandem-rewind-view-test--settle)
        (let ((text (tandem-rewind-test--text view)))
          (should (string-match-p "Turn 1 · You" text))
          (should (string-match-p "FIRST-DONE" text))
          (should (string-match-p "Rewound to before turn 2" text))
          (should-not (string-match-p "Turn 2 · You" text)))
        ;; The message says how to undo it: the command and its key.
        (let ((said (cl-find-if (lambda (m) (string-match-p "\\`Rewound before turn 2" m))
                                messages)))
          (should said)
          (should (string-match-p "tandem-rewind-undo" said))
          (should (string-match-p "C-c C-t u" said)))
        ;; Undo: the turns come back, each footer with its files.
        (should (plist-get (tandem-rewind-undo session t) :seq))
        (tandem-test-wait-until
         (lambda () (string-match-p "THIRD-DONE" (tandem-rewind-test--text view))) 20)
        (tandem-rewind-view-test--settle)
        (should (string-match-p "Turn 1 · You" (tandem-rewind-test--text view)))
        (should (string-match-p "1 file changed" (tandem-rewind-view-test--footer view 2)))
        ;; A refresh reads the turns back from the journal: the footer stays.
        (with-current-buffer view (tandem-view-refresh))
        (should (string-match-p "1 file changed" (tandem-rewind-view-test--footer view 2)))
        (should (string-match-p "1 file changed" (tandem-rewind-view-test--footer view 1)))
        (should-not (string-match-p "file changed" (tandem-rewind-view-test--footer view 3)))
        ;; So does a reopened buffer.
        (kill-buffer view)
        (let ((again (tandem-view-show (tandem-request "sessions/lookup"
                                                       (list :query session :cwd project))
                                       t)))
          (tandem-test-wait-until
           (lambda () (string-match-p "THIRD-DONE" (tandem-rewind-test--text again))) 20)
          (should (string-match-p "1 file changed"
                                  (tandem-rewind-view-test--footer again 2))))))))

(provide 'tandem-rewind-view-tests)
;;; tandem-rewind-view-tests.el ends here
