;;; tandem-protected-tests.el --- A protected write's question in the session buffer  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend and the fake OpenAI server: the model writes
;; .claude/settings.json; the question row says why and offers no
;; "for this session" answer; `tandem-protected-paths' reaches the backend.

;;; Code:

(require 'tandem-view-test-helpers)

(ert-deftest tandem-protected-question-says-why-and-allows-once-only ()
  "The question about a protected write names the reason and offers two answers."
  (tandem-view-test-with-session
      '(:steps [(:reply (:text "Adding a hook."
                         :tool_calls [(:name "write_file"
                                       :input (:path ".claude/settings.json" :content "{}"))]))
                (:reply (:text "Fine."))])
    (let ((turn (tandem-view-test-send "set it up")))
      (tandem-test-wait-until
       (lambda () (next-single-property-change (point-min) 'tandem-interaction)) 20)
      (let ((text (tandem-view-test-text)))
        (should (string-match-p "Write \\.claude/settings\\.json — \\.claude/ is a protected path"
                                text))
        (should (string-match-p "would change what runs" text))
        (should (string-match-p "\\[y\\] Allow once \\[n\\] Reject" text))
        (should-not (string-match-p "Allow for this session" text)))
      (goto-char (next-single-property-change (point-min) 'tandem-interaction))
      (execute-kbd-macro "n")
      (tandem-view-test-wait-turn turn)
      (should-not (file-exists-p (expand-file-name ".claude/settings.json" project))))))

(ert-deftest tandem-protected-paths-option-reaches-the-backend ()
  "`tandem-protected-paths' is sent as a JSON list and validated by the backend."
  (let ((tandem-protected-paths '(".envrc" "deploy/")))
    (should (equal (alist-get 'protected_paths (json-read-from-string (tandem-settings-json)))
                   [".envrc" "deploy/"])))
  (tandem-test-with-backend
    (let ((tandem-protected-paths '("../up")))
      (should (string-match-p "protected_paths"
                              (cadr (should-error (tandem-configure) :type 'tandem-error)))))
    (let ((tandem-protected-paths '(".envrc")))
      (tandem-configure))))

(provide 'tandem-protected-tests)
;;; tandem-protected-tests.el ends here
