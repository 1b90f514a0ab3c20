;;; tandem-security-tests.el --- Secrets and tool processes of a real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, the fake OpenAI server: an approved shell
;; command sees neither key nor token, not even in the backend's initial
;; environment, and a tool shell dies with a backend killed by SIGKILL.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)

(defconst tandem-security-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "Folder of this file.")

(defun tandem-security-test--approve (session events)
  "Answer the first permission question of SESSION in EVENTS (a symbol) with yes."
  (let ((ask (tandem-test-wait-until
              (lambda () (seq-find (lambda (e) (equal (plist-get e :kind) "interaction"))
                                   (symbol-value events)))
              20)))
    (tandem-answer-interaction session (plist-get ask :interaction-id) "allow_once")))

(defun tandem-security-test--pids (args)
  "Return the pids of living processes whose command line is ARGS."
  (seq-filter (lambda (pid)
                (let ((attrs (process-attributes pid)))
                  (and (equal (alist-get 'args attrs) args)
                       (not (member (alist-get 'state attrs) '("Z" "X"))))))
              (list-system-processes)))

(defvar tandem-security-test--events nil
  "Events seen by the running test.")

(ert-deftest tandem-security-shell-sees-no-secret ()
  "An approved shell command reads its parent's environment: no key, no token."
  (let ((process-environment (append '("ANTHROPIC_API_KEY=sk-ant-canary-1"
                                       "GITHUB_TOKEN=ghp-canary-2")
                                     process-environment)))
    (tandem-test-with-fake-openai
        (expand-file-name "scripts/shell-env.json" tandem-security-test--dir)
      (setq tandem-security-test--events nil)
      (let ((tandem-permission-mode 'ask))
        (add-hook 'tandem-event-functions (lambda (e) (push e tandem-security-test--events)))
        (let* ((session (tandem-project-session project))
               (turn (cdr (tandem-send "Show the environment" session)))
               (token (oref tandem--connection token))
               (environ (with-temp-buffer
                          (insert-file-contents-literally
                           (format "/proc/%d/environ" (tandem-backend-pid)))
                          (buffer-string))))
          (tandem-security-test--approve session 'tandem-security-test--events)
          (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome) "succeeded"))
          (let* ((result (seq-find (lambda (e)
                                     (equal (plist-get (plist-get e :entry) :type)
                                            "tool_result"))
                                   tandem-security-test--events))
                 (output (format "%s" (plist-get (plist-get result :entry) :output))))
            ;; The command did run and print both environments.
            (should (string-match-p "---" output))
            (should (string-match-p "PATH=.*\\(?:.\\|\n\\)*---\\(?:.\\|\n\\)*PATH=" output))
            (dolist (secret (list "sk-test-key-not-real" "sk-ant-canary-1" "ghp-canary-2" token))
              (should-not (string-search secret output))
              (should-not (string-search secret environ))))
          ;; The key still reached the model server, from memory.
          (should (string-search "Seen." (prin1-to-string tandem-security-test--events))))))))

(ert-deftest tandem-security-shell-dies-with-the-backend ()
  "A tool shell of a backend killed with SIGKILL is gone within two seconds."
  (tandem-test-with-fake-openai
      (expand-file-name "scripts/shell-sleep.json" tandem-security-test--dir)
    (setq tandem-security-test--events nil)
    (let ((tandem-permission-mode 'ask))
      (add-hook 'tandem-event-functions (lambda (e) (push e tandem-security-test--events)))
      (let ((session (tandem-project-session project)))
        (tandem-send "Sleep" session)
        (tandem-security-test--approve session 'tandem-security-test--events)
        (let ((sleeps (tandem-test-wait-until
                       (lambda () (tandem-security-test--pids "sleep 311")) 20)))
          (signal-process (tandem-backend-pid) 'SIGKILL)
          (tandem-test-wait-until
           (lambda () (not (seq-some (lambda (pid) (process-attributes pid)) sleeps)))
           2))))))

(provide 'tandem-security-tests)
;;; tandem-security-tests.el ends here
