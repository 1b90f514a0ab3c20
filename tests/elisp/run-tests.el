;;; run-tests.el --- Load every tandem ERT file and run them  -*- lexical-binding: t; -*-

;;; Commentary:
;; Loaded by `make ert' in batch Emacs.  Prints ERT's own summary and
;; exits non-zero when a test fails.

;;; Code:

(require 'ert)
(require 'tandem-test-helpers)          ; a HOME of its own, before any test file
(let ((dir (file-name-directory load-file-name)))
  (dolist (file (directory-files dir t "\\`tandem-.*-tests\\.el\\'"))
    (load file nil t)))
(ert-run-tests-batch-and-exit)

;;; run-tests.el ends here
