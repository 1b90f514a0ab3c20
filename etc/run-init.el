;;; run-init.el --- The init file `make run' starts Emacs with  -*- lexical-binding: t; -*-

;;; Commentary:

;; `make run' is not `emacs -Q': what you choose is kept between runs.
;; This file stands in for an init file of your own.  Its state (the
;; custom file, history, auto-saves) lives in .cache/run/ of the clone,
;; so your ~/.emacs.d is left alone, and tandem's own configuration is
;; the one every tandem reads: the first-run setup writes your settings
;; file (~/.config/tandem/settings.json), which `tandem ask' reads too.

;;; Code:

(let* ((root (file-name-directory (directory-file-name
                                   (file-name-directory load-file-name))))
       (state (expand-file-name ".cache/run/" root)))
  (make-directory state t)
  (setq user-emacs-directory state
        custom-file (expand-file-name "custom.el" state)
        inhibit-startup-screen t)
  (load custom-file t t)
  (add-to-list 'load-path (expand-file-name "elisp" root))
  (require 'tandem)
  (add-hook 'emacs-startup-hook #'tandem))

;;; run-init.el ends here
