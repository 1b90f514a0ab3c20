;;; tandem-view-kinds.el --- Journal entry kinds: the one registry the view reads  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every entry kind tandem writes is registered here, once, with
;; `tandem-view-kinds-define': the function that inserts its row(s), the
;; part it folds as and whether that part starts folded, where it belongs
;; (in a turn, outside any turn, or either), or, for a kind with no row of
;; its own, where it shows instead.  Rendering (`tandem-view-render-block',
;; defined here since it dispatches through the registry), folding
;; (`tandem-view--default-folded') and the list of kinds shown elsewhere
;; (`tandem-view-kinds-shown-elsewhere') all read it.  A kind from a newer
;; tandem that this package does not know keeps its honest one-line row
;; "· KIND (seq N)".  The rows of the common kinds are drawn in
;; tandem-view-render.el; the rest are here.

;;; Code:

(require 'cl-lib)
(require 'tandem-view-render)

;;;; The registry

(cl-defstruct (tandem-view-kind (:constructor tandem-view-kind--create) (:copier nil))
  "How the session buffer shows one kind of journal entry."
  (type nil :read-only t :documentation "The entry's `:type', a string.")
  (render nil :read-only t
          :documentation "Function of (BLOCK ENTRY FOLDED-P) inserting the rows, or nil.")
  (place nil :read-only t
         :documentation "`turn', `outside' (no turn), or nil for either.")
  (fold nil :read-only t
        :documentation "Symbol S: the rows fold as the part (S ID), or nil.")
  (folded nil :read-only t
          :documentation "Non-nil when that part is folded until opened.")
  (elsewhere nil :read-only t
             :documentation "Where a kind with no row of its own shows, in words."))

(defvar tandem-view-kinds--registry (make-hash-table :test #'equal)
  "Every known entry kind: its type string to its `tandem-view-kind'.")

(defvar tandem-view-kinds--folded nil
  "The part symbols of the registered kinds that start folded.
Made from `tandem-view-kinds--registry' by each definition: folding asks
for every part of every block of a long history.")

(defun tandem-view-kinds-define (type &rest props)
  "Register how the view is to show entries of TYPE, a string.
PROPS: either :render FUNCTION (called with the block, the entry and the
fold predicate, point at a line's start, to insert the entry's rows) or
:elsewhere TEXT (the kind has no row; TEXT says where it shows); :place
`turn' or `outside' where the kind belongs (nil: either; in the other
place an entry keeps the unknown kind's row); :fold SYMBOL when the rows
fold as the part (SYMBOL ID), with :folded non-nil when that part starts
folded.  A second definition of TYPE replaces the first."
  (let ((render (plist-get props :render)) (elsewhere (plist-get props :elsewhere))
        (place (plist-get props :place)) (fold (plist-get props :fold)))
    (unless (stringp type) (error "Entry kind type is not a string: %S" type))
    (let ((bad (cl-set-difference (cl-loop for k in props by #'cddr collect k)
                                  '(:render :elsewhere :place :fold :folded))))
      (when bad (error "Entry kind %s: unknown properties %S" type bad)))
    (unless (eq (null render) (stringp elsewhere))
      (error "Entry kind %s needs either :render or :elsewhere, not %s" type
             (if render "both" "neither")))
    (unless (or (null render) (functionp render))
      (error "Entry kind %s: :render is not a function: %S" type render))
    (unless (memq place '(nil turn outside))
      (error "Entry kind %s: :place is not `turn', `outside' or nil: %S" type place))
    (unless (and (symbolp fold) (or fold (not (plist-get props :folded))))
      (error "Entry kind %s: :fold is not a part symbol: %S" type fold))
    (puthash type (tandem-view-kind--create :type type :render render :place place :fold fold
                                            :folded (and (plist-get props :folded) t)
                                            :elsewhere elsewhere)
             tandem-view-kinds--registry)
    (setq tandem-view-kinds--folded nil)
    (maphash (lambda (_ kind) (when (tandem-view-kind-folded kind)
                                (cl-pushnew (tandem-view-kind-fold kind) tandem-view-kinds--folded)))
             tandem-view-kinds--registry)))

(defun tandem-view-kinds-get (type)
  "Return the registered `tandem-view-kind' of TYPE, or nil for an unknown kind."
  (gethash type tandem-view-kinds--registry))

(defun tandem-view-kinds-shown-elsewhere ()
  "Return the entry kinds with no row of their own, sorted."
  (let ((out nil))
    (maphash (lambda (type kind) (when (tandem-view-kind-elsewhere kind) (push type out)))
             tandem-view-kinds--registry)
    (sort out #'string<)))

(defun tandem-view-kinds-folded-by-default-p (part)
  "Return non-nil when a part keyed (PART ID) is folded until opened.
PART is a symbol such as `reasoning', registered by a kind's :fold."
  (memq part tandem-view-kinds--folded))

;;;; Rendering a block through the registry

(defun tandem-view-kinds--insert (block entry folded-p place)
  "Insert ENTRY of BLOCK, found in PLACE (`turn' or `outside').
FOLDED-P tells whether a part key is folded.  A kind not known, or not
known in PLACE, keeps the one-line row \"· KIND (seq N)\"."
  (let ((kind (tandem-view-kinds-get (plist-get entry :type))))
    (if (and kind (memq (tandem-view-kind-place kind) (list nil place)))
        (when (tandem-view-kind-render kind)
          (funcall (tandem-view-kind-render kind) block entry folded-p))
      (tandem-view-render--line
       (propertize (format "%s· %s (seq %s)" (if (eq place 'turn) tandem-view-render-indent "")
                           (plist-get entry :type) (plist-get entry :seq))
                   'font-lock-face 'tandem-view-muted)
       nil))))

(defun tandem-view-render-block (block folded-p)
  "Insert BLOCK at point.
FOLDED-P is called with a part key and returns non-nil when that part
is folded.  The block ends with an empty line."
  (if (null (tandem-view-block-turn block))
      (tandem-view-kinds--insert block (car (tandem-view-block-entries block)) folded-p 'outside)
    (let ((folded (funcall folded-p 'turn)))
      (tandem-view-render--header block folded)
      (unless folded
        (let ((ordered (tandem-view-block-ordered block)) (end nil))
          (dolist (entry ordered)
            (if (equal (plist-get entry :type) "turn_end")
                (setq end entry)
              (tandem-view-kinds--insert block entry folded-p 'turn)))
          (dolist (i (reverse (tandem-view-block-interactions block)))
            (unless (cl-find (plist-get i :interaction-id) ordered
                             :key (lambda (e) (and (equal (plist-get e :type) "interaction")
                                                   (plist-get e :interaction-id)))
                             :test #'equal)
              (tandem-view-render--interaction block i)))
          (tandem-view-render--live block folded-p)
          (when end (tandem-view-kinds--insert block end folded-p 'turn))))))
  (insert "\n"))

;;;; Rows of the less common kinds

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

;;;; Every kind

(tandem-view-kinds-define "user" :place 'turn :render #'tandem-view-render--user
                          :fold 'prompt :folded t)
(tandem-view-kinds-define "assistant" :place 'turn :render #'tandem-view-render--assistant)
(tandem-view-kinds-define "reasoning" :place 'turn :render #'tandem-view-render--reasoning
                          :fold 'reasoning :folded t)
(tandem-view-kinds-define "tool_call" :place 'turn :render #'tandem-view-render--tool-call
                          :fold 'tool :folded t)
(tandem-view-kinds-define "interaction" :place 'turn
                          :render #'tandem-view-render--interaction-row)
(tandem-view-kinds-define "turn_end" :place 'turn :render #'tandem-view-render--turn-end)
(tandem-view-kinds-define "directive_close" :place 'turn
                          :render #'tandem-view-render--directive-close)
(tandem-view-kinds-define "turn_start" :place 'turn
                          :elsewhere "The turn's header (time, provider, model).")
(tandem-view-kinds-define "directive_open" :place 'turn
                          :elsewhere "The header of a directive turn (directive and action).")
(tandem-view-kinds-define "tool_result" :place 'turn
                          :elsewhere "The status and output of its tool call's row.")
(tandem-view-kinds-define "interaction_answer" :place 'turn
                          :elsewhere "The answered question's row says the answer.")
(tandem-view-kinds-define "remote_turn" :place 'turn
                          :elsewhere "Where a turn started on the agent-server, for Rewind; \
the header line names the host.")
(tandem-view-kinds-define "rewind" :place 'outside :render #'tandem-view-render--rewind)
(tandem-view-kinds-define "rewind_undo" :place 'outside :render #'tandem-view-render--rewind-undo)
(tandem-view-kinds-define "rewind_recovery" :place 'outside
                          :render #'tandem-view-render--rewind-recovery)
(tandem-view-kinds-define "revert" :place 'outside :render #'tandem-view-render--revert)
(tandem-view-kinds-define "compaction" :place 'outside :render #'tandem-view-render--compaction
                          :fold 'compaction :folded t)
(tandem-view-kinds-define "steer" :place 'turn :render #'tandem-view-kinds--steer)
(tandem-view-kinds-define "queue" :render #'tandem-view-kinds--queue)
(tandem-view-kinds-define "plan" :render #'tandem-view-kinds--plan)
(tandem-view-kinds-define "acp_session" :render #'tandem-view-kinds--acp-session)
(tandem-view-kinds-define "provider_change" :render #'tandem-view-kinds--provider-change)
(tandem-view-kinds-define "acp_option" :render #'tandem-view-kinds--acp-option)

(provide 'tandem-view-kinds)
;;; tandem-view-kinds.el ends here
