;;; demo.el --- `make demo': tandem against a scripted local model  -*- lexical-binding: t; -*-

;;; Commentary:
;; Loaded by tests/demo/run-demo.sh in `emacs -nw -Q'.  The backend talks
;; to the fake OpenAI-compatible server of tests/fakes, which plays
;; tests/demo/demo_script.json: the answers are scripted, no API key is
;; needed, nothing leaves the machine.

;;; Code:

(require 'tandem)
(require 'tandem-view)

(setq tandem-provider "openai:fake-model"
      tandem-permission-mode 'ask
      tandem-provider-hosts nil
      inhibit-startup-screen t)

(defun tandem-demo-start (directory)
  "Open a new demo session on the project in DIRECTORY."
  (let ((info (tandem-request "sessions/new" (list :cwd directory :title "demo"))))
    (switch-to-buffer (tandem-view-show info))
    (delete-other-windows)
    (goto-char (point-max))
    (message "tandem demo: answers are SCRIPTED (local fake model). Type, then C-c C-c to send; C-x C-c quits.")))

(provide 'demo)
;;; demo.el ends here
