;;; tandem-shape-tests.el --- Edit a proposed write, reject with a reason  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend and the fake OpenAI server (recording every request):
;; the model calls write_file in ask mode.  `e' on the question opens
;; the proposal in the file's major mode; `C-c C-k' goes back to the
;; question, `C-c C-c' writes the user's text, and the model's next
;; request carries the diff from its proposal.  `n' asks for a reason
;; that the model's next request carries as the rejection.

;;; Code:

(require 'tandem-view-test-helpers)

(defmacro tandem-shape-test-with-session (steps &rest body)
  "Run BODY in a session buffer in ask mode against a fake playing STEPS.
Binds `project' and `fake-record' (the file of recorded requests).  The
session has a title: an untitled one would ask the model for one."
  (declare (indent 1) (debug t))
  `(let* ((script (make-temp-file "tandem-shape-script-" nil ".json"
                                  (json-encode (list :steps ,steps))))
          (fake-record (make-temp-file "tandem-shape-record-" nil ".jsonl"))
          (fake (tandem-test-start-fake "openai" script fake-record))
          (project (file-name-as-directory (make-temp-file "tandem-shape-project-" t)))
          (process-environment
           (cons (format "OPENAI_BASE_URL=http://127.0.0.1:%d/v1" (cdr fake))
                 process-environment))
          (tandem-provider "openai:fake-model")
          (tandem-permission-mode 'ask)
          (tandem-provider-hosts nil))
     (unwind-protect
         (tandem-test-with-backend
           (with-current-buffer (tandem-view-show (tandem-request "sessions/new"
                                                                  (list :cwd project :title "shape test")))
             ,@body))
       (delete-process (car fake))
       (dolist (b (buffer-list))
         (when (string-match-p "\\`\\*tandem\\(: \\| proposed\\)" (buffer-name b))
           (kill-buffer b)))
       (delete-directory project t)
       (delete-file script)
       (delete-file fake-record))))

(defun tandem-shape-test--row ()
  "Wait for a pending question row and return its position (past the indent)."
  (let ((pos (tandem-test-wait-until
              (lambda () (and (not (tandem-view-state-dirty tandem-view--state))
                              (next-single-property-change (point-min) 'tandem-interaction)))
              20)))
    (+ pos 4)))

(defun tandem-shape-test--last-request (record)
  "Return the text of the last request in the RECORD file (JSON lines)."
  (with-temp-buffer
    (insert-file-contents record)
    (goto-char (point-max))
    (skip-chars-backward "\n")
    (buffer-substring (line-beginning-position) (point))))

(defconst tandem-shape-test--write
  '[(:reply (:text "Writing it." :tool_calls [(:name "write_file"
                                               :input (:path "hello.py"
                                                       :content "print('model')\n"))]))
    (:reply (:text "Noted."))]
  "A model that writes hello.py once, then answers.")

(ert-deftest tandem-shape-edited-proposal-lands-and-the-model-is-told ()
  "`e' edits the proposal; `C-c C-c' writes the user's text; the model reads the diff."
  (tandem-shape-test-with-session tandem-shape-test--write
    (let* ((view (current-buffer))
           (turn (tandem-view-test-send "write hello.py"))
           (row (tandem-shape-test--row)))
      (should (string-match-p "\\[y\\] Allow once .*\\[n\\] Reject \\[e\\] Edit"
                              (tandem-view-test-text)))
      ;; `e' opens the whole proposed file in its major mode.
      (goto-char row)
      (execute-kbd-macro "e")
      (should (equal (buffer-name) "*tandem proposed: hello.py*"))
      (should (derived-mode-p 'python-mode))
      (should tandem-view-shape-mode)
      (should (equal (buffer-string) "print('model')\n"))
      ;; C-c C-k goes back: the question still waits.
      (execute-kbd-macro (kbd "C-c C-k"))
      (should (eq (current-buffer) view))
      (should-not (get-buffer "*tandem proposed: hello.py*"))
      (should (plist-get (tandem-view-state-running tandem-view--state) :waiting))
      (goto-char (tandem-shape-test--row))
      (execute-kbd-macro "e")
      ;; The user's version, and its diff against the (absent) file.
      (goto-char (point-max))
      (insert "print('user')\n")
      (let ((diff (tandem-view-shape-diff)))
        (with-current-buffer diff
          (tandem-test-wait-until (lambda () (string-match-p "Diff finished" (buffer-string))))
          (should (derived-mode-p 'diff-mode))
          (should (string-match-p "^\\+print('user')$" (buffer-string)))))
      (execute-kbd-macro (kbd "C-c C-c"))
      (should (eq (current-buffer) view))
      (tandem-view-test-wait-turn turn)
      (should (equal (with-temp-buffer
                       (insert-file-contents (expand-file-name "hello.py" project))
                       (buffer-string))
                     "print('model')\nprint('user')\n"))
      ;; The journal says so and the tool row shows it.
      (should (string-match-p "⚙ write_file Write hello.py  \\[completed, edited by you\\]"
                              (tandem-view-test-text)))
      ;; The model's next request carries what happened and the diff.
      (let ((request (tandem-shape-test--last-request fake-record)))
        (should (string-search "The user edited your proposed change before it was written"
                               request))
        (should (string-search "--- hello.py (your proposal)\\n+++ hello.py (written)" request))
        (should (string-search "+print('user')" request))))))

(ert-deftest tandem-shape-reject-sends-the-reason ()
  "`n' asks for a reason; the model's next request has it as the rejection."
  (tandem-shape-test-with-session tandem-shape-test--write
    (let ((turn (tandem-view-test-send "write hello.py")))
      (goto-char (tandem-shape-test--row))
      ;; A reason with an allow, or content with a reject, is refused with a sentence.
      (let ((id (plist-get (get-text-property (point) 'tandem-interaction) :id))
            (session (tandem-view-state-session tandem-view--state)))
        (should (string-match-p "a reason goes with the answer reject, not allow_once"
                                (cadr (should-error
                                       (tandem-request "turns/answer"
                                                       (list :session session :interaction-id id
                                                             :answer "allow_once" :reason "x"))
                                       :type 'tandem-error)))))
      (execute-kbd-macro (vconcat "n" "call it main.py" (kbd "RET")))
      (tandem-view-test-wait-turn turn)
      (should-not (file-exists-p (expand-file-name "hello.py" project)))
      (should (string-match-p "\\? Write hello.py — Reject" (tandem-view-test-text)))
      (should (string-search "The user rejected this tool call; it did not run. The user's reason: call it main.py"
                             (tandem-shape-test--last-request fake-record))))))

(ert-deftest tandem-shape-protected-write-offers-no-edit ()
  "A protected write's question has no `e', and the backend refuses content for it."
  (tandem-shape-test-with-session
      '[(:reply (:text "Hook." :tool_calls [(:name "write_file"
                                            :input (:path ".envrc" :content "echo hi"))]))
        (:reply (:text "Fine."))]
    (let ((turn (tandem-view-test-send "set it up")))
      (goto-char (tandem-shape-test--row))
      (should-not (string-search "[e] Edit" (tandem-view-test-text)))
      (should-error (tandem-view-shape-at (point)) :type 'user-error)
      (let ((id (plist-get (get-text-property (point) 'tandem-interaction) :id)))
        (should (string-match-p "write to a protected path is allowed or rejected as the model"
                                (cadr (should-error
                                       (tandem-request "turns/answer"
                                                       (list :session (tandem-view-state-session
                                                                       tandem-view--state)
                                                             :interaction-id id
                                                             :answer "allow_once"
                                                             :content "echo mine"))
                                       :type 'tandem-error)))))
      (execute-kbd-macro "n")  ; not a write offered for editing: no reason asked
      (tandem-view-test-wait-turn turn)
      (should-not (file-exists-p (expand-file-name ".envrc" project))))))

(ert-deftest tandem-shape-proposal-of-an-edit-is-the-replaced-file ()
  "An edit_file call's proposal is the file with its replacement made."
  (should (equal (tandem-view-shape-proposal "edit_file" '(:path "a" :old-text "b" :new-text "B")
                                             "abc")
                 "aBc"))
  (should (equal (tandem-view-shape-proposal "edit_file" '(:path "a" :old_text "b" :new_text "B"
                                                           :replace_all t)
                                             "bab")
                 "BaB"))
  (should (string-match-p "occurs 2 times"
                          (cadr (should-error (tandem-view-shape-proposal
                                               "edit_file" '(:old-text "b" :new-text "B") "bab")
                                              :type 'user-error))))
  (should (string-match-p "not in the file"
                          (cadr (should-error (tandem-view-shape-proposal
                                               "edit_file" '(:old-text "z" :new-text "B") "bab")
                                              :type 'user-error))))
  (should-error (tandem-view-shape-proposal "shell" '(:command "ls") nil) :type 'user-error))

(provide 'tandem-shape-tests)
;;; tandem-shape-tests.el ends here
