;;; tandem-edit-tests.el --- Edit and resend, and fork, from Emacs: real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, real checkpoints, the fake OpenAI server
;; recording every request.  Three turns (turn 2 rewrites a.txt); `e' on
;; turn 2 edits its request in the composer, C-c C-c rewinds and resends
;; in one step (one question), the next request carries the edited text
;; and nothing of turns 2-3, and `tandem-rewind-undo' brings them back.
;; A fork at turn 2 starts a session whose first request carries turns
;; 1-2 and nothing of turn 3.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-rewind)
(require 'tandem-rewind-test-helpers)
(require 'tandem)

(defconst tandem-edit-test--script
  (expand-file-name "scripts/rewind-three-turns.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Turn 1 writes notes.txt, turn 2 rewrites a.txt, turn 3 only answers.")

(defun tandem-edit-test--requests (file)
  "The chat request bodies recorded in FILE, as JSON strings."
  (with-temp-buffer
    (insert-file-contents file)
    (cl-remove-if-not (lambda (l) (string-match-p "chat/completions" l))
                      (split-string (buffer-string) "\n" t))))

(defun tandem-edit-test--last-request (file)
  "The last chat request body recorded in FILE."
  (car (last (tandem-edit-test--requests file))))

(defmacro tandem-edit-test--three-turns (&rest body)
  "Run BODY after three chat turns in a fresh session shown in a buffer.
BODY sees `session', `view', `a' (a.txt) and `fake-record'."
  (declare (indent 0) (debug t))
  `(tandem-test-with-fake-openai tandem-edit-test--script
     (let* ((tandem-permission-mode 'auto-edit)
            (default-directory project)
            (a (expand-file-name "a.txt" project)))
       (write-region "hello\nworld\n" nil a)
       (let* ((info (tandem-request "sessions/new" (list :cwd (directory-file-name project))))
              (session (plist-get info :id))
              (view (tandem-view-show info t)))
         (dolist (n '(1 2 3))
           (should (equal (tandem-send (format "TURN %d please" n) session) (cons session n)))
           (should (equal (plist-get (tandem-wait-turn session n 60) :outcome) "succeeded")))
         (tandem-test-wait-until
          (lambda () (string-match-p "THIRD-DONE" (tandem-rewind-test--text view))) 20)
         (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
         ;; The view has seen the last turn end (its events arrive on their own).
         (tandem-test-wait-until
          (lambda () (null (with-current-buffer view
                             (tandem-view-state-running tandem-view--state))))
          20)
         (ignore fake-record)
         ,@body))))

(ert-deftest tandem-edit-keys ()
  "`e' on the transcript edits a turn; C-c C-k drops the edit only while editing."
  (should (eq (lookup-key tandem-view-transcript-map "e") #'tandem-edit-turn-at-point))
  (should (eq (lookup-key tandem-edit-mode-map (kbd "C-c C-k")) #'tandem-edit-drop)))

(ert-deftest tandem-edit-resend-rewinds-sends-and-undoes ()
  "Edit turn 2's request and resend it: one question; the request; the undo."
  (tandem-edit-test--three-turns
    (with-current-buffer view
      (should (tandem-view-goto-turn 2))
      (tandem-edit-turn-at-point)
      (should (equal (tandem-edit-editing) 2))
      (should (equal (tandem-composer-draft) "TURN 2 please"))
      ;; The composer says what it is doing.
      (should (string-match-p "editing turn 2" (tandem-rewind-test--text view)))
      (tandem-composer-set-draft "TURN 2 EDITED please")
      (let* ((prompts nil)
             (tandem-rewind-confirm-function (lambda (p) (push p prompts) t))
             (turn (tandem-composer-send)))
        (should (equal turn 4))
        ;; One question, not two.
        (should (= 1 (length prompts)))
        (should (string-match-p "\\`Edit and resend turn 2: rewind (restore 1 file(s), \
delete 0, discard 2 turn(s)), then send" (car prompts))))
      (should-not (tandem-edit-editing))
      (should-not (string-match-p "editing turn" (tandem-rewind-test--text view)))
      (should (equal (tandem-composer-draft) "")))
    (should (equal (plist-get (tandem-wait-turn session 4 60) :outcome) "succeeded"))
    ;; The files went back before turn 2.
    (should (equal (tandem-rewind-test--read a) "hello\nworld\n"))
    ;; The request carries the edit and turn 1, nothing of the discarded turns.
    (let ((last (tandem-edit-test--last-request fake-record)))
      (should (string-match-p "TURN 2 EDITED please" last))
      (should (string-match-p "TURN 1 please" last))
      (should (string-match-p "FIRST-DONE" last))
      (dolist (gone '("TURN 2 please" "SECOND-DONE" "TURN 3 please" "THIRD-DONE"))
        (should-not (string-match-p (regexp-quote gone) last))))
    (tandem-test-wait-until
     (lambda () (string-match-p "Turn 4 · You" (tandem-rewind-test--text view))) 20)
    (should-not (string-match-p "Turn 2 · You" (tandem-rewind-test--text view)))
    ;; Undo: turns 2-3 and their file come back, the resent turn goes.
    (let* ((prompts nil)
           (tandem-rewind-confirm-function
            (lambda (p)
              (push p prompts)
              (should (string-match-p "Resent turn taken back (edit and resend) (1)"
                                      (tandem-rewind-test--text (get-buffer "*tandem-rewind*"))))
              t))
           (result (tandem-rewind-undo session)))
      (should (string-match-p "2 turn(s) return, the resent turn goes" (car prompts)))
      (should (equal (plist-get result :turns) '(2 3))))
    (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
    (tandem-test-wait-until
     (lambda () (let ((text (tandem-rewind-test--text view)))
                  (and (string-match-p "Turn 2 · You" text)
                       (not (string-match-p "Turn 4 · You" text)))))
     20)
    (should (string-match-p "THIRD-DONE" (tandem-rewind-test--text view)))
    (should-not (string-match-p "TURN 2 EDITED" (tandem-rewind-test--text view)))
    ;; The next request carries the discarded turns again, not the edit.
    (should (equal (tandem-send "AFTER the undo" session) (cons session 5)))
    (should (equal (plist-get (tandem-wait-turn session 5 60) :outcome) "succeeded"))
    (let ((last (tandem-edit-test--last-request fake-record)))
      (dolist (back '("TURN 2 please" "SECOND-DONE" "TURN 3 please" "THIRD-DONE"
                      "AFTER the undo"))
        (should (string-match-p (regexp-quote back) last)))
      (should-not (string-match-p "EDITED" last)))))

(ert-deftest tandem-edit-drop-and-decline-change-nothing ()
  "C-c C-k drops the edit (the text stays); declining the question changes nothing."
  (tandem-edit-test--three-turns
    (with-current-buffer view
      (should (tandem-view-goto-turn 1))
      (tandem-edit-turn-at-point)
      (goto-char (point-max))
      (should (eq (key-binding (kbd "C-c C-k")) #'tandem-edit-drop))
      (tandem-composer-set-draft "TURN 1 EDITED")
      ;; Declined: a user error, the draft and the edit stay, nothing changed.
      (let ((tandem-rewind-confirm-function #'ignore))
        (should-error (tandem-composer-send) :type 'user-error))
      (should (equal (tandem-composer-draft) "TURN 1 EDITED"))
      (should (equal (tandem-edit-editing) 1))
      (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
      (call-interactively (key-binding (kbd "C-c C-k")))
      (should-not (tandem-edit-editing))
      (should (equal (tandem-composer-draft) "TURN 1 EDITED"))
      (should (eq tandem-composer-send-function #'tandem-view--send))
      (should-not (string-match-p "editing turn" (tandem-rewind-test--text view)))
      (should-not (eq (key-binding (kbd "C-c C-k")) #'tandem-edit-drop)))
    (should (= 3 (length (plist-get (tandem-request "sessions/turns" (list :session session))
                                    :turns))))))

(ert-deftest tandem-edit-fork-carries-the-conversation-up-to-its-turn ()
  "Fork at turn 2: its own buffer, forked_from, files untouched; its request has turns 1-2."
  (tandem-edit-test--three-turns
    (let* ((prompt nil)
           (turn (cl-letf (((symbol-function 'completing-read)
                            ;; RET on an empty answer: `completing-read' gives DEF.
                            (lambda (p _coll &optional _pred _req _init _hist def &rest _)
                              (setq prompt p)
                              (if (consp def) (car def) def))))
                   (with-current-buffer view
                     (tandem-view-goto-turn 2)
                     (tandem-edit--read-fork-turn session (tandem-read-turn-at-point))))))
      ;; The default, the turn at point, is shown in the prompt.
      (should (string-match-p "(default 2)" prompt))
      (should (equal turn 2)))
    (let ((err (should-error (tandem-fork-session session 9) :type 'tandem-error)))
      (should (equal (tandem-error-code err) "not-found")))
    (let* ((reply (tandem-fork-session session 2))
           (fork (plist-get reply :id))
           (buffer (tandem-view-buffer fork)))
      (should-not (equal fork session))
      (should (equal (plist-get (plist-get reply :forked-from) :session) session))
      (should (equal (plist-get (plist-get reply :forked-from) :turn) 2))
      (should (buffer-live-p buffer))
      (should-not (eq buffer view))
      (should (equal (tandem-rewind-test--read a) "HELLO\nworld\n"))
      (with-temp-buffer
        (insert-file-contents (plist-get reply :path))
        (should (string-match-p (format "\"forked_from\":{\"session\":\"%s\",\"turn\":2}"
                                        session)
                                (buffer-substring (point-min) (line-end-position)))))
      (tandem-test-wait-until
       (lambda () (string-match-p "SECOND-DONE" (tandem-rewind-test--text buffer))) 20)
      (should (equal (tandem-send "FORKED next" fork) (cons fork 3)))
      (should (equal (plist-get (tandem-wait-turn fork 3 60) :outcome) "succeeded"))
      (let ((last (tandem-edit-test--last-request fake-record)))
        (dolist (kept '("TURN 1 please" "FIRST-DONE" "TURN 2 please" "SECOND-DONE"
                        "FORKED next"))
          (should (string-match-p (regexp-quote kept) last)))
        (dolist (gone '("TURN 3 please" "THIRD-DONE"))
          (should-not (string-match-p (regexp-quote gone) last))))
      ;; The source is unchanged.
      (should (= 3 (length (plist-get (tandem-request "sessions/turns" (list :session session))
                                      :turns)))))))

(provide 'tandem-edit-tests)
;;; tandem-edit-tests.el ends here
