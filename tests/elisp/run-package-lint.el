;;; run-package-lint.el --- Run package-lint on tandem, fail on any finding  -*- lexical-binding: t; -*-

;;; Commentary:
;; Usage: emacs -Q --batch -L PACKAGE-LINT-DIR -l run-package-lint.el MAIN FILE...
;;
;; MAIN is the file with the package headers (`package-lint-main-file').
;; Debian's package-lint 0.16 predates Emacs 28.1, so its "uninstallable
;; in all released Emacs versions" about (emacs "28.1") is out of date:
;; it is printed as ignored.  Every other error or warning fails.

;;; Code:

(require 'package)
(require 'package-lint)

(defconst tandem-lint--stale
  '("This makes the package uninstallable in all released Emacs versions.")
  "Messages of package-lint 0.16 that are wrong about released Emacs versions.")

(package-initialize)

(let* ((files (mapcar #'expand-file-name command-line-args-left))
       (package-lint-main-file (car files))
       (failures 0)
       (text-quoting-style 'grave))
  (dolist (file files)
    (with-temp-buffer
      (insert-file-contents file t)
      (emacs-lisp-mode)
      (pcase-dolist (`(,line ,col ,type ,text) (package-lint-buffer))
        (if (member text tandem-lint--stale)
            (message "%s:%d:%d: ignored (package-lint %s predates Emacs 28.1): %s"
                     (file-name-nondirectory file) line col
                     (or (ignore-errors (lm-version (locate-library "package-lint.el"))) "?")
                     text)
          (setq failures (1+ failures))
          (message "%s:%d:%d: %s: %s" (file-name-nondirectory file) line col type text)))))
  (setq command-line-args-left nil)
  (message "package-lint: %d finding(s) in %d files" failures (length files))
  (kill-emacs (if (zerop failures) 0 1)))

;;; run-package-lint.el ends here
