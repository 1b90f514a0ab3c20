;;; tandem-core.el --- What every part of tandem shares  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bottom of tandem's require graph: the customization groups and
;; the project root, which nearly every part needs.  It requires no other
;; tandem file, so each part can require it and the graph stays one-way:
;; parts require what is below them, and tandem.el, at the top, requires
;; the parts.  tests/elisp/tandem-require-graph-tests.el checks that.

;;; Code:

(require 'project)
(require 'subr-x)

(defgroup tandem nil
  "Work with a coding agent on a project, from Emacs."
  :group 'tools
  :prefix "tandem-")

(defgroup tandem-view nil
  "The tandem session buffer."
  :group 'tandem
  :prefix "tandem-view-")

(defun tandem-project-root (&optional directory)
  "Return the project root of DIRECTORY (default: `default-directory').
Uses `project.el'; outside any project, DIRECTORY itself."
  (let* ((dir (or directory default-directory))
         (project (project-current nil dir)))
    (expand-file-name (if project (project-root project) dir))))

(defcustom tandem-revert-buffers t
  "Whether buffers of files a turn, a rewind or a revert changed are reverted.
Only buffers you have not modified are reverted; a modified one is
named in a message and left as it is."
  :type 'boolean
  :group 'tandem)

(defun tandem-revert-stale-buffers (directory)
  "Revert unmodified buffers visiting files under DIRECTORY that changed on disk.
Return the buffers reverted.  Called after tandem changed files (a
turn's end, a rewind, its undo, a review revert), so that no buffer
shows what the file no longer holds."
  (let ((root (file-name-as-directory (expand-file-name directory)))
        (reverted nil) (kept nil))
    (when tandem-revert-buffers
      (dolist (buffer (buffer-list))
        (let ((file (buffer-file-name buffer)))
          (when (and file (string-prefix-p root (expand-file-name file))
                     (not (verify-visited-file-modtime buffer)))
            (if (buffer-modified-p buffer)
                (push (buffer-name buffer) kept)
              (with-current-buffer buffer
                (if (file-exists-p file)
                    (revert-buffer t t t)
                  ;; Gone from disk (a rewind deleted it): say so, keep the text.
                  (set-buffer-modified-p t)))
              (push buffer reverted)))))
      (when kept
        (message "tandem: %s changed on disk; your unsaved edits are kept"
                 (string-join kept ", "))))
    reverted))

(provide 'tandem-core)
;;; tandem-core.el ends here
