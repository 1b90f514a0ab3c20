;;; tandem-session-menu.el --- The session's transient menu  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-session-menu' (C-c C-t in a session buffer) gathers what a
;; session's turns use and reach — provider and model, an ACP agent's
;; mode and model, MCP servers — with its history (compact, undo the
;; latest rewind) and the project-wide commands (trust, every session,
;; the waiting question).  Each entry is an ordinary command that works
;; without the menu too; the menu only names them in one place.

;;; Code:

(require 'transient)
(require 'tandem-acp)
(require 'tandem-compact)
(require 'tandem-indicator)
(require 'tandem-mcp)
(require 'tandem-overview)
(require 'tandem-rewind)
(require 'tandem-setup)
(require 'tandem-trust)

;;;###autoload (autoload 'tandem-session-menu "tandem-session-menu" nil t)
(transient-define-prefix tandem-session-menu ()
  "What this session's turns use and reach, its history, and the project."
  [["What turns use"
    ("p" "Provider and model…" tandem-set-provider)
    ("m" "Agent mode…" tandem-acp-set-mode)
    ("M" "Agent model…" tandem-acp-set-model)
    ("s" "MCP servers" tandem-mcp)]
   ["History"
    ("n" "Rename the session…" tandem-rename-session)
    ("c" "Compact" tandem-compact)
    ("u" "Undo the latest rewind…" tandem-rewind-undo)]
   ["Parallel"
    ("P" "Parallel session in its own worktree…" tandem-parallel)
    ("L" "Land a parallel session…" tandem-land)
    ("R" "Remove a parallel session's worktree…" tandem-parallel-remove)]
   ["Project"
    ("t" "Trust its settings…" tandem-trust-project)
    ("T" "Untrust" tandem-untrust-project)
    ("l" "Every session" tandem-sessions-list)
    ("a" "Answer a waiting question" tandem-answer)
    ("d" "Doctor" tandem-doctor)]])

(provide 'tandem-session-menu)
;;; tandem-session-menu.el ends here
