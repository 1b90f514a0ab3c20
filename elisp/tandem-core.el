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

(provide 'tandem-core)
;;; tandem-core.el ends here
