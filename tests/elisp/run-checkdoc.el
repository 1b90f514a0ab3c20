;;; run-checkdoc.el --- Run checkdoc on files, fail on any warning  -*- lexical-binding: t; -*-

;;; Commentary:
;; Usage: emacs -Q --batch -l run-checkdoc.el FILE...

;;; Code:

(require 'checkdoc)

(let ((failures 0))
  (dolist (file command-line-args-left)
    (with-current-buffer (find-file-noselect file)
      (let ((checkdoc-diagnostic-buffer "*checkdoc*")
            (checkdoc-autofix-flag nil))
        (with-current-buffer (get-buffer-create "*checkdoc*")
          (let ((inhibit-read-only t)) (erase-buffer)))
        (checkdoc-current-buffer t)
        (with-current-buffer "*checkdoc*"
          (goto-char (point-min))
          (while (re-search-forward "^\\(.*:[0-9]+: .*\\)$" nil t)
            (setq failures (1+ failures))
            (message "%s" (match-string 1)))))))
  (setq command-line-args-left nil)
  (message "checkdoc: %d warning(s)" failures)
  (kill-emacs (if (zerop failures) 0 1)))

;;; run-checkdoc.el ends here
