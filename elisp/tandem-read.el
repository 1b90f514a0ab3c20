;;; tandem-read.el --- Prompts that show their choices and their default  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every question tandem asks in the minibuffer goes through here, so
;; each one behaves the same way:
;;
;; - the default is in the prompt (`format-prompt': "Turn (default 3): ")
;;   and RET takes it;
;; - the choices are listed as the prompt opens (Emacs's own completion
;;   only: icomplete, fido, vertico, ivy and helm list them already), with
;;   a note beside each;
;; - a pick from a fixed list with one entry is taken without asking (the
;;   echo area says which);
;; - RET on an empty answer with no default is a sentence (`user-error'),
;;   never a Lisp error from deeper down.
;;
;; `tandem-read-choice' is the general form, `tandem-read-turn' picks a
;; turn of a session (default: the turn at point, else the latest turn
;; that changed files), `tandem-read-text' reads free text.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-core)
(require 'tandem-client)

(defcustom tandem-read-show-choices t
  "Non-nil: a prompt with choices lists them in *Completions* as it opens.
Only with Emacs's own minibuffer completion; icomplete, fido, vertico,
ivy and helm list the choices their own way, and then nothing is added."
  :type 'boolean
  :group 'tandem)

(defun tandem-read--list-choices-p ()
  "Return non-nil when opening a prompt should list its choices."
  (and tandem-read-show-choices
       (not noninteractive)
       (eq completing-read-function #'completing-read-default)
       (not (bound-and-true-p icomplete-mode))
       (not (bound-and-true-p fido-mode))
       (not (bound-and-true-p vertico-mode))))

(defun tandem-read--table (choices)
  "A completion table of CHOICES, strings or (STRING . NOTE), kept in order."
  (let ((names (mapcar (lambda (c) (if (consp c) (car c) c)) choices))
        (notes (delq nil (mapcar (lambda (c) (and (consp c) c)) choices))))
    (lambda (string pred action)
      (if (eq action 'metadata)
          `(metadata (display-sort-function . identity)
                     (cycle-sort-function . identity)
                     ,@(and notes
                            (list (cons 'annotation-function
                                        (lambda (name)
                                          (let ((note (cdr (assoc name notes))))
                                            (if note (concat "  " note) "")))))))
        (complete-with-action action names string pred)))))

(cl-defun tandem-read-choice (prompt choices &key default require-match what)
  "Read one of CHOICES with PROMPT and return the string chosen.
PROMPT has no colon: `format-prompt' adds DEFAULT and \": \".  CHOICES
is a list of strings, or of (STRING . NOTE) where NOTE is shown beside
STRING.  With REQUIRE-MATCH the answer must be one of CHOICES: then no
choice at all is a `user-error', and a single choice is taken without
asking.  RET on an empty answer gives DEFAULT; with no DEFAULT it is a
`user-error' naming WHAT (default: PROMPT)."
  (let ((names (mapcar (lambda (c) (if (consp c) (car c) c)) choices))
        (what (or what (downcase prompt))))
    (cond
     ((and require-match (null names))
      (user-error "There is no %s to choose" what))
     ((and require-match (null (cdr names)))
      (message "%s: %s (the only one)" prompt (car names))
      (car names))
     (t
      (let* ((default (and default (if (numberp default) (number-to-string default) default)))
             (answer (minibuffer-with-setup-hook
                         (lambda ()
                           (when (and names (tandem-read--list-choices-p))
                             (minibuffer-completion-help)))
                       (completing-read (format-prompt prompt default)
                                        (tandem-read--table choices)
                                        nil require-match nil nil default))))
        (when (string-empty-p (string-trim answer))
          (user-error "No %s given%s" what
                      (if names " (TAB lists the choices)" "")))
        answer)))))

(cl-defun tandem-read-text (prompt &key default initial what)
  "Read free text with PROMPT and return it, trimmed.
PROMPT has no colon; DEFAULT is shown in it and taken on RET; INITIAL
is text to edit.  An empty answer with no DEFAULT is a `user-error'
naming WHAT (default: PROMPT)."
  (let ((answer (string-trim (read-string (format-prompt prompt default)
                                          initial nil default))))
    (when (string-empty-p answer)
      (user-error "No %s given" (or what (downcase prompt))))
    answer))

;;;; Turns

(declare-function tandem-view-block-p "tandem-view-block" (object))
(declare-function tandem-view-block-turn "tandem-view-block" (block))

(defun tandem-read-turn-at-point ()
  "Return the number of the turn at point in a session buffer, or nil."
  (let ((block (get-text-property (point) 'tandem-block)))
    (and block (fboundp 'tandem-view-block-p) (tandem-view-block-p block)
         (tandem-view-block-turn block))))

(defun tandem-read--turn-note (row)
  "Return the note shown beside turn ROW in a prompt."
  (let ((files (plist-get row :files)))
    (concat (pcase (plist-get row :outcome)
              ("succeeded" "✔") ("failed" "✘") ("aborted" "⊘") (_ "▶"))
            (if files (format " %d file%s" (length files) (if (cdr files) "s" "")) "")
            (if (plist-get row :rewound) " · rewound" "")
            (if (equal (plist-get row :origin) "directive") " · directive" "")
            " · " (plist-get row :request))))

(defun tandem-read-turn-default (rows &optional at-point)
  "Return the turn a prompt proposes among ROWS: AT-POINT when it is one.
Else the latest turn that changed files, else the latest turn."
  (let ((numbers (mapcar (lambda (r) (plist-get r :turn)) rows)))
    (or (and at-point (memq at-point numbers) at-point)
        (plist-get (cl-find-if (lambda (r) (plist-get r :files)) rows :from-end t) :turn)
        (car (last numbers)))))

(cl-defun tandem-read-turn (session prompt &key at-point visible-only)
  "Read a turn of SESSION with PROMPT (no colon) and return its number.
The choices are SESSION's turns, each with its outcome, files changed and
request; the default is AT-POINT, else the latest turn that changed
files.  With VISIBLE-ONLY, turns a rewind hid are not offered."
  (let* ((rows (plist-get (tandem-request "sessions/turns" (list :session session)) :turns))
         (rows (if visible-only (cl-remove-if (lambda (r) (plist-get r :rewound)) rows) rows)))
    (unless rows
      (user-error "This session has no turn yet"))
    (string-to-number
     (tandem-read-choice prompt
                         (mapcar (lambda (r) (cons (number-to-string (plist-get r :turn))
                                                   (tandem-read--turn-note r)))
                                 rows)
                         :default (tandem-read-turn-default rows at-point)
                         :require-match t :what "turn"))))

(provide 'tandem-read)
;;; tandem-read.el ends here
