;;; tandem-view-kinds.el --- Journal entry kinds told in words  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every entry kind tandem writes either has a row that says what
;; happened, in the user's words, or is part of another row (listed in
;; `tandem-view-kinds-shown-elsewhere').  A kind from a newer tandem that
;; this package does not know keeps its honest one-line row "· KIND (seq
;; N)".  tandem-view-render.el draws the common kinds; the rest are here,
;; registered in `tandem-view-render-kind-functions'.

;;; Code:

(require 'tandem-view-render)

(defconst tandem-view-kinds-shown-elsewhere
  '("turn_start" "directive_open" "tool_result" "interaction_answer" "remote_turn")
  "Entry kinds with no row of their own, and where they show instead.
turn_start: the turn's header (time, provider, model).
directive_open: the header of a directive turn (directive and action).
tool_result: the status and output of its tool call's row.
interaction_answer: the answered question's row says the answer.
remote_turn: where a turn started on the agent-server, for Rewind; the
header line names the host.")

(defconst tandem-view-kinds--acp-how
  '(("new" . "started a new conversation")
    ("load" . "reloaded its conversation")
    ("resume" . "resumed its conversation")
    ("seeded" . "started a new conversation from the session's history"))
  "What each `acp_session' way of going on means, in words.")

(defun tandem-view-kinds--acp-session (_block entry _folded-p)
  "Insert the row of ENTRY, an `acp_session': how the agent went on."
  (tandem-view-render--line
   (propertize (format "%s↻ The agent %s" tandem-view-render-indent
                       (or (cdr (assoc (plist-get entry :how) tandem-view-kinds--acp-how))
                           (format "went on (%s)" (plist-get entry :how))))
               'font-lock-face 'tandem-view-muted)
   nil))

(defun tandem-view-kinds--provider-change (_block entry _folded-p)
  "Insert the row of ENTRY, a `provider_change': the session's new provider."
  (tandem-view-render--line
   (propertize (format "⇄ Provider for the next turns: %s · %s" (plist-get entry :provider)
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil))

(defun tandem-view-kinds--acp-option (_block entry _folded-p)
  "Insert the row of ENTRY, an `acp_option': the agent's mode or model chosen."
  (tandem-view-render--line
   (propertize (format "⚙ %s %s set to %s · %s" (plist-get entry :agent)
                       (plist-get entry :option) (plist-get entry :value)
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil))

(defconst tandem-view-kinds--plan-marks
  '(("pending" . "☐") ("in_progress" . "◐") ("completed" . "☑"))
  "The mark of each plan step's status.")

(defun tandem-view-kinds--plan (_block entry _folded-p)
  "Insert the rows of ENTRY, an agent's `plan': one line per step."
  (let ((steps (plist-get entry :entries)))
    (tandem-view-render--line
     (propertize (format "%sPlan (%d step%s)" tandem-view-render-indent (length steps)
                         (if (= (length steps) 1) "" "s"))
                 'font-lock-face 'tandem-view-muted)
     nil)
    (dolist (step steps)
      (tandem-view-render--line
       (format "%s  %s %s" tandem-view-render-indent
               (or (cdr (assoc (plist-get step :status) tandem-view-kinds--plan-marks)) "·")
               (tandem-view-render--first-line (format "%s" (or (plist-get step :content) "")) 100))
       nil))))

(defun tandem-view-kinds--queue-words (entry)
  "Return what ENTRY, a `queue' change, did, in words."
  (let ((item (plist-get entry :item)))
    (pcase (plist-get entry :op)
      ("add" (format "queued %s · %s" item
                     (tandem-view-render--first-line (format "%s" (or (plist-get entry :text) ""))
                                                     60)))
      ("edit" (format "edited queued %s" item))
      ("remove" (format "deleted queued %s" item))
      ("sent" (format "queued %s sent as turn %s" item (plist-get entry :sent-turn)))
      ("hold" (format "held: %s" (plist-get entry :reason)))
      ("resume" "sent on")
      (op (format "%s %s" op item)))))

(defun tandem-view-kinds--queue (_block entry _folded-p)
  "Insert the row of ENTRY, a `queue' change, where one is rendered on its own.
The session buffer shows none of these entries in its transcript: the rows
under the running turn show the queue as it is (tandem-view-queue.el)."
  (tandem-view-render--line
   (propertize (format "⧗ Queue: %s · %s" (tandem-view-kinds--queue-words entry)
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil))

(defun tandem-view-kinds--steer (_block entry _folded-p)
  "Insert the rows of ENTRY, a `steer': guidance the model took mid-turn.
The model saw it as a user message there, after the step's tool results."
  (tandem-view-render--line
   (concat tandem-view-render-indent
           (propertize "↪ You steered" 'font-lock-face 'tandem-view-role)
           (propertize (format " · taken at the next step · %s"
                               (tandem-view-render-time (plist-get entry :ts)))
                       'font-lock-face 'tandem-view-muted))
   nil)
  (tandem-view-render--body (format "%s" (or (plist-get entry :text) ""))))

(setf (alist-get "steer" tandem-view-render-kind-functions nil nil #'equal)
      #'tandem-view-kinds--steer)
(setf (alist-get "queue" tandem-view-render-kind-functions nil nil #'equal)
      #'tandem-view-kinds--queue)
(setf (alist-get "plan" tandem-view-render-kind-functions nil nil #'equal)
      #'tandem-view-kinds--plan)
(setf (alist-get "acp_session" tandem-view-render-kind-functions nil nil #'equal)
      #'tandem-view-kinds--acp-session
      (alist-get "provider_change" tandem-view-render-kind-functions nil nil #'equal)
      #'tandem-view-kinds--provider-change
      (alist-get "acp_option" tandem-view-render-kind-functions nil nil #'equal)
      #'tandem-view-kinds--acp-option)

(provide 'tandem-view-kinds)
;;; tandem-view-kinds.el ends here
