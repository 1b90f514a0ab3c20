;;; tandem-view-steer.el --- Guidance for the running turn at its next step  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; While a turn runs, C-c C-s in the composer (or M-x tandem-steer)
;; hands the draft to that turn (`turns/steer'): the native engine sends
;; it as a user message with the turn's next model request, after the
;; tool calls running now finish, inside the same turn; the remote
;; engine at the agent-server's next stop (its next tool call, which it
;; then does not run, or a refusal).  Until the turn takes it, a row
;; under the running turn says it waits:
;;
;;   ↪ You steered · waiting for the next step · 14:02 · use NOTES.md
;;
;; Then the transcript shows it as a "↪ You steered" row where the
;; model took it (a `steer' entry), and later turns keep it in their
;; context.  A turn that ends before taking it puts the guidance first
;; in the queue, and its row becomes a queued one: it goes as the next
;; turn (or waits, first, in a held queue).  An ACP agent takes no input
;; mid-turn: the backend says so (`unsupported') and this offers to
;; queue the guidance instead (C-c C-c would have queued it too).

;;; Code:

(require 'subr-x)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-turns)
(require 'tandem-view-state)
(require 'tandem-view-queue)
(require 'tandem-view-format)

(defface tandem-view-steer-waiting '((t :inherit font-lock-doc-face))
  "Face of the row of guidance the running turn has not taken yet."
  :group 'tandem-view)

(defun tandem-view-steer-rows ()
  "Return the rows of the guidance the running turn has not taken yet.
Empty when none waits.  What they show is the backend's `turns/queue-list'
reply (its `steers'), asked again after each steer, each `steer' entry
and each `queue' entry, so a taken steer's row goes and one the turn
ended before taking becomes a queued row."
  (let ((steers (tandem-view-queue-steers)))
    (if (null steers) ""
      (concat
       (mapconcat
        (lambda (s)
          (propertize
           (format "↪ You steered · waiting for the next step · %s · %s\n"
                   (tandem-view-render-time (plist-get s :given))
                   (tandem-view-queue-first-line (plist-get s :text)))
           'font-lock-face 'tandem-view-steer-waiting 'tandem-steer-waiting t
           'help-echo "Goes to the running turn at its next step, or first in the queue"))
        steers "")
       "\n"))))

(add-hook 'tandem-view-progress-rows-functions #'tandem-view-steer-rows)

(defun tandem-view-steer-submit (text)
  "Give TEXT to this session's running turn; return the backend's reply.
When the turn cannot take guidance (an ACP agent, a directive request),
offer to queue TEXT instead; the queue's reply is returned then.  Signal
an error when TEXT was neither given nor queued."
  (let ((session (tandem-view-state-session tandem-view--state)))
    (condition-case err
        (let ((reply (tandem-request "turns/steer" (list :session session :text text))))
          (tandem-view-queue-fetch)  ; its row, until the turn takes it
          (message "Steering turn %s: it goes at the turn's next step%s"
                   (plist-get reply :turn)
                   (let ((n (plist-get reply :waiting)))
                     (if (and n (> n 1)) (format " (%d steers wait)" n) "")))
          reply)
      (tandem-error
       (if (not (equal (tandem-error-code err) "unsupported"))
           (signal (car err) (cdr err))
         (if (y-or-n-p (format "%s.  Queue it for after the turn? "
                               (string-remove-suffix "." (tandem-error-message err))))
             (tandem-view-queue-submit text)
           (user-error "Not sent: the draft stays in the composer")))))))

;;;###autoload
(defun tandem-steer (&optional text)
  "Give TEXT to the running turn of this session, for its next step.
Interactively TEXT is the composer's draft, or read in the minibuffer when
the draft is empty.  The native engine sends it as a user message before
the turn's next model request, in the same turn, and the remote engine at
the agent-server's next stop; a turn that ends first queues it as the next
turn.  For an ACP agent, which takes no input mid-turn, this offers to
queue it instead."
  (interactive nil tandem-view-mode)
  (unless (derived-mode-p 'tandem-view-mode) (user-error "Not a tandem session buffer"))
  (cond
   (text
    (unless (tandem-composer-busy-p) (user-error "No turn is running: send it as a message"))
    (tandem-view-steer-submit text))
   ((not (string-empty-p (string-trim (tandem-composer-draft))))
    (tandem-composer-steer))
   (t
    (unless (tandem-composer-busy-p)
      (user-error "No turn is running: C-c C-c sends a message"))
    (let ((read (string-trim (read-string "Steer the running turn: "))))
      (when (string-empty-p read) (user-error "Nothing to steer with"))
      (tandem-view-steer-submit read)))))

(provide 'tandem-view-steer)
;;; tandem-view-steer.el ends here
