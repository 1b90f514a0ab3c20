;;; tandem-view-commands.el --- Commands of the tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Folding, moving between turns, answering questions, sending and
;; cancelling turns in a session buffer (tandem-view.el loads this file).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-view-model)
(require 'tandem-view-draw)
(require 'tandem-view-frame)
(require 'tandem-view-queue)

(defcustom tandem-view-cancel-confirm-function #'y-or-n-p
  "Function asked, with a prompt, before cancelling a turn that already did work.
A turn did work once a tool ran in it (a file may have changed).  It
returns non-nil to cancel."
  :type 'function
  :group 'tandem-view)

(defun tandem-view--part-at (pos)
  "Return (BLOCK . PART) at POS for folding, or nil."
  (let ((block (get-text-property pos 'tandem-block))
        (part (or (get-text-property pos 'tandem-part)
                  (get-text-property (save-excursion (goto-char pos) (line-beginning-position))
                                     'tandem-part))))
    (when block
      (cond ((and part (not (eq (car-safe part) 'interaction))) (cons block part))
            ((tandem-view-block-turn block) (cons block 'turn))))))

(defun tandem-view-toggle-fold (&optional pos)
  "Fold or unfold the part at POS (default point).
A part is a turn, a directive prompt, reasoning or a tool call.
The choice is remembered for this buffer and wins over the defaults."
  (interactive nil tandem-view-mode)
  (let* ((pos (or pos (point)))
         (found (progn (tandem-view--finish-at pos)
                       (or (tandem-view--part-at pos) (user-error "Nothing to fold here"))))
         (block (car found)) (part (cdr found))
         (folded (tandem-view--folded-p block part)))
    (puthash (tandem-view--fold-key block part) (if folded 'open 'folded)
             (tandem-view-state-folds tandem-view--state))
    (tandem-view--keeping-place (tandem-view--rerender block))
    (goto-char (tandem-view-block-start block))
    (let ((end (tandem-view--block-end block)) (pos (point)))
      ;; Parts are lists made afresh by each rendering: compare with `equal'.
      (while (and (< pos end) (not (equal (get-text-property pos 'tandem-part) part)))
        (setq pos (next-single-property-change pos 'tandem-part nil end)))
      (when (< pos end) (goto-char pos)))
    (not folded)))

(defun tandem-view-next-turn (&optional n)
  "Move to the header of the next turn (N times)."
  (interactive "p" tandem-view-mode)
  (let ((tail (tandem-view-state-tail tandem-view--state)))
    (dotimes (_ (or n 1))
      (let ((next (next-single-property-change (line-end-position) 'tandem-header nil tail)))
        (when (and next (< next tail))
          (goto-char (if (get-text-property next 'tandem-header) next
                       (or (next-single-property-change next 'tandem-header nil tail)
                           next))))))))

(declare-function tandem-view-load-older "tandem-view-live" (&optional all))

(defun tandem-view-goto-turn (turn)
  "Move point to the start of TURN, loading older history while it is not shown.
Windows showing the buffer start there.  Return point, or nil when the
session shows no such turn (a rewind hid it)."
  (tandem-view-flush)
  (let ((st tandem-view--state) (block nil))
    (while (and (null (setq block (gethash turn (tandem-view-state-by-turn st))))
                (let ((first (tandem-view-state-first-seq st))) (and first (> first 1)))
                (condition-case nil (tandem-view-load-older) (user-error nil))))
    (when (and block (markerp (tandem-view-block-start block))
               (marker-position (tandem-view-block-start block)))
      (goto-char (tandem-view-block-start block))
      (dolist (w (get-buffer-window-list nil nil t))
        (set-window-point w (point))
        (set-window-start w (line-beginning-position)))
      (point))))

(defun tandem-view-previous-turn (&optional n)
  "Move to the header of the previous turn (N times)."
  (interactive "p" tandem-view-mode)
  (dotimes (_ (or n 1))
    (let ((pos (previous-single-property-change (line-beginning-position) 'tandem-header)))
      (while (and pos (> pos (point-min)) (not (get-text-property pos 'tandem-header)))
        (setq pos (previous-single-property-change pos 'tandem-header)))
      (when pos (goto-char pos) (beginning-of-line)))))

(defvar-local tandem-view--question-return nil
  "Where `tandem-view-goto-question' came from in the composer, or nil.
Answering the question goes back there, so typing goes on where it was.")

(defcustom tandem-view-reject-reason t
  "Whether rejecting a write or edit question asks for a reason.
The reason, one line (empty for none), goes back to the model with the
rejection, in the tool result it reads."
  :type 'boolean
  :group 'tandem-view)

(defun tandem-view-answer-at (pos answer)
  "Answer the interaction on the row at POS with ANSWER (e.g. \"allow_once\").
Nothing happens unless POS is on a pending interaction row.  Rejecting
a write or edit asks for a reason (see `tandem-view-reject-reason')."
  (let ((interaction (get-text-property pos 'tandem-interaction)) (reason nil))
    (unless interaction (user-error "No question at point"))
    (unless (assoc answer tandem-view-answer-labels)
      (error "Unknown answer %S" answer))
    (when (and (equal answer "reject") tandem-view-reject-reason
               (plist-get interaction :editable))
      (setq reason (string-trim (read-string "Reason for the model (RET: none): "))))
    (tandem-request "turns/answer" (append
                                    (list :session (tandem-view-state-session tandem-view--state)
                                          :interaction-id (plist-get interaction :id)
                                          :answer answer)
                                    ;; One line: the backend refuses a reason with a newline.
                                    (and reason (not (string-empty-p reason))
                                         (list :reason (replace-regexp-in-string
                                                        "[\n\r]+" " " reason)))))
    (message "Answered: %s" (cdr (assoc answer tandem-view-answer-labels)))
    (when (markerp tandem-view--question-return)
      (let ((back (marker-position tandem-view--question-return)))
        (set-marker tandem-view--question-return nil)
        (setq tandem-view--question-return nil)
        (when back (goto-char back))))
    answer))

(defun tandem-view-goto-question ()
  "Move point to the first pending question (permission prompt) row.
Answering it from there brings point back to the composer when it came
from there."
  (interactive nil tandem-view-mode)
  (let ((pos (next-single-property-change (point-min) 'tandem-interaction)))
    (unless pos (user-error "No question is waiting for you"))
    (when (and (markerp tandem-composer--start)
               (>= (point) tandem-composer--start))
      (setq tandem-view--question-return (copy-marker (point) t)))
    (goto-char pos)
    (skip-chars-forward " ")
    (message "Answer with the key shown in brackets (or RET on a button)")))

(defun tandem-view--send (text _scope)
  "Send TEXT as a chat turn of this buffer's session, without waiting.
While a queued message is being edited, TEXT is saved as its text
instead.  The turn is drawn when the backend accepts it
\(`tandem-view--send-turn')."
  (if (tandem-view-queue-editing)
      (if tandem-composer-attachments
          (user-error "A queued message carries no image: C-u C-c C-a removes it")
        (tandem-view-queue-submit text))
    (tandem-view--send-turn text)))

(put 'tandem-view--send 'tandem-composer-images t)
(defvar tandem-composer-attachments)    ; tandem-composer.el

(defvar-local tandem-view--sending nil
  "The chat send on its way to the backend, (TEXT . ATTACHMENTS), or nil.")

(defvar-local tandem-view-last-send nil
  "How this buffer's last chat send ended, or nil.
\(turn . N) once accepted, (error . CONDITION) once refused; nil also
while a send is on its way (`tandem-view-sending-p').")

(defun tandem-view-sending-p ()
  "Return non-nil while this buffer's chat send awaits the backend's reply."
  (and tandem-view--sending t))

(defun tandem-view--send-turn (text)
  "Send TEXT as a new chat turn of this buffer's session; return nil at once.
The composer's attachments go with it (`tandem-composer-attachments').
Nothing waits for the backend (a send may first configure it, and
compact the session): the turn is marked running and drawn when the
reply comes (`tandem-view--sent'); a refusal puts TEXT and the
attachments back in the composer and says why (`tandem-view--send-failed').
A second send while one is on its way is queued, as while a turn runs."
  (if tandem-view--sending
      (tandem-view-queue-submit text)
    (let ((buffer (current-buffer))
          (images tandem-composer-attachments))
      (setq tandem-view--sending (cons text images)
            tandem-view-last-send nil)
      (condition-case err
          (tandem-send-async
           text (tandem-view-state-session tandem-view--state)
           (lambda (reply)
             (when (buffer-live-p buffer)
               (with-current-buffer buffer (tandem-view--sent (cdr reply)))))
           (lambda (failure)
             (when (buffer-live-p buffer)
               (with-current-buffer buffer
                 (tandem-view--send-failed
                  (condition-case c (apply #'tandem--signal failure) (tandem-error c))))))
           nil images)
        ;; Not even sent (no backend could start): the draft stays, as before.
        (error (setq tandem-view--sending nil)
               (signal (car err) (cdr err))))
      nil)))

(defun tandem-view--sent (turn)
  "The backend accepted this buffer's send as TURN: mark it running, draw it."
  (setq tandem-view--sending nil
        tandem-view-last-send (cons 'turn turn))
  (let ((block (gethash turn (tandem-view-state-by-turn tandem-view--state))))
    ;; Events may have ended the turn before the reply came.
    (unless (and block (tandem-view-block-end-entry block))
      (tandem-view--set-running turn)))
  ;; The next frame draws it, with whatever else is pending.
  (tandem-view--schedule))

(defun tandem-view--send-failed (condition)
  "This buffer's send was refused with CONDITION: give the draft back, say why.
The text and attachments go back into the composer unless something was
typed there meanwhile (then
\\<tandem-composer-mode-map>\\[tandem-composer-history-previous] recalls the text)."
  (let ((sent tandem-view--sending))
    (setq tandem-view--sending nil
          tandem-view-last-send (cons 'error condition))
    (when sent
      (if (string-empty-p (string-trim (tandem-composer-draft)))
          (progn (tandem-composer-set-draft (car sent))
                 (setq tandem-composer-attachments (cdr sent))
                 (tandem-composer-refresh))
        (setf (tandem-view-state-composer-dirty tandem-view--state) t)))
    (message "%s" (error-message-string condition))
    (ding t)))

(defun tandem-view--tools-run (turn)
  "Return how many tools ran in TURN so far (a refused one did nothing)."
  (let ((block (gethash turn (tandem-view-state-by-turn tandem-view--state))))
    (cl-count-if (lambda (e) (and (equal (plist-get e :type) "tool_result")
                                  (not (equal (plist-get e :status) "refused"))))
                 (and block (tandem-view-block-entries block)))))

(defun tandem-view-cancel ()
  "Cancel the turn in flight in this session.
When it already did work (a tool ran), ask `tandem-view-cancel-confirm-function'
first; what a cancelled turn changed stays (Rewind takes it back)."
  (interactive nil tandem-view-mode)
  (let* ((turn (plist-get (tandem-view-state-running tandem-view--state) :turn))
         (tools (if turn (tandem-view--tools-run turn) 0)))
    (if (and (> tools 0)
             (not (funcall tandem-view-cancel-confirm-function
                           (format "Turn %s already ran %d tool%s; cancel it? " turn tools
                                   (if (= tools 1) "" "s")))))
        (progn (message "The turn goes on") nil)
      (let ((cancelled (tandem-cancel-turn (tandem-view-state-session tandem-view--state))))
        (message (if cancelled "Cancelling the turn…" "No turn to cancel"))
        cancelled))))

(provide 'tandem-view-commands)
;;; tandem-view-commands.el ends here
