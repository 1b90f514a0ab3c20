;;; tandem-view-queue.el --- Queued messages under the running turn  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; While a turn runs, C-c C-c in the composer queues the draft
;; (`turns/queue'): the backend journals it and sends it as the next turn
;; once the running one ends well, so the queue goes on while Emacs is
;; busy or away.  A turn that fails or is cancelled holds the queue; `s'
;; on a queued row (or M-x tandem-queue-send) sends it on.
;;
;; The rows sit under the progress row of the session buffer, one per
;; message, oldest first:
;;
;;   ⏸ Queue held: turn 3 failed: … · s or M-x tandem-queue-send sends it on
;;   ⧗ Queued q1 · then run the tests  [e edit · k delete]
;;
;; On a row: RET or e puts the message in the composer, where C-c C-c
;; saves it in its place (`turns/queue-edit'); k or DEL deletes it; s
;; sends a held queue on.  What the rows show is the backend's
;; `turns/queue-list' reply, asked again after each `queue' entry.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-turns)
(require 'tandem-view-state)
(require 'tandem-view-draw)
(require 'tandem-view-frame)

(defvar-local tandem-view-queue--reply nil
  "The session's queue as the backend last said (a `turns/queue-list' reply).")

(defvar-local tandem-view-queue--editing nil
  "Id of the queued message whose text is in the composer for editing, or nil.")

(defface tandem-view-queued '((t :inherit font-lock-doc-face))
  "Face of a queued message's row."
  :group 'tandem-view)

(defface tandem-view-queue-held '((t :inherit warning))
  "Face of the row that says the queue is held."
  :group 'tandem-view)

(defconst tandem-view-queue--help
  "RET/e: edit in the composer (C-c C-c saves it) · k/DEL: delete · s: send a held queue on"
  "The help echo of a queued row: its keys.")

(defvar tandem-view-queue-row-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tandem-view-transcript-map)
    (define-key map (kbd "RET") #'tandem-queue-edit)
    (define-key map "e" #'tandem-queue-edit)
    (define-key map "k" #'tandem-queue-delete)
    (define-key map (kbd "DEL") #'tandem-queue-delete)
    (define-key map "s" #'tandem-queue-send)
    map)
  "Keys on a queued message's row (the transcript's keys too).")

;;;; The queue as the backend says it

(defun tandem-view-queue--items ()
  "Return the queued messages, oldest first, each a plist (:id :text :ts)."
  (append (plist-get tandem-view-queue--reply :items) nil))

(defun tandem-view-queue-steers ()
  "Return the guidance the running turn has not taken yet, oldest first.
Each is a plist (:text :given), from the same `turns/queue-list' reply."
  (append (plist-get tandem-view-queue--reply :steers) nil))

(defun tandem-view-queue--item (id)
  "Return the queued message ID, or nil."
  (cl-find id (tandem-view-queue--items) :key (lambda (m) (plist-get m :id)) :test #'equal))

(defun tandem-view-queue-set (reply)
  "Show REPLY, the session's queue from the backend, under the running turn."
  (setq tandem-view-queue--reply reply)
  (when (and tandem-view-queue--editing (not (tandem-view-queue--item tandem-view-queue--editing)))
    (message "Queued %s was sent or deleted meanwhile: your text stays in the composer \
\(C-c C-c sends it as a new message)" tandem-view-queue--editing)
    (tandem-view-queue--stop-editing))
  (when (markerp (tandem-view-state-tail tandem-view--state))
    (setf (tandem-view-state-progress-dirty tandem-view--state) t)
    (tandem-view--schedule)))

(defun tandem-view-queue-fetch ()
  "Ask the backend for this session's queue without waiting; the rows follow."
  (let ((buffer (current-buffer))
        (session (tandem-view-state-session tandem-view--state))
        (conn (tandem-view--connection)))
    (when (and session conn)
      (tandem-request-async
       "turns/queue-list" (list :session session)
       (lambda (reply)
         (when (buffer-live-p buffer)
           (with-current-buffer buffer (tandem-view-queue-set reply))))
       (lambda (err)
         ;; A dead backend is already said once, by the connection.
         (unless (equal (car err) "backend-died")
           (message "tandem: could not read the queue: %s" (nth 1 err))))
       conn))))

;;;; Rows

(defun tandem-view-queue-first-line (text)
  "Return TEXT's first line, cut to 60 columns."
  (truncate-string-to-width (car (split-string text "\n")) 60 nil nil "…"))

(defun tandem-view-queue-rows ()
  "Return the queued rows of this buffer's session (empty when nothing is queued)."
  (let ((items (tandem-view-queue--items))
        (held (plist-get tandem-view-queue--reply :held)))
    (if (null items) ""
      (concat
       (when held
         (propertize (format "⏸ Queue held: %s · s or M-x tandem-queue-send sends it on\n" held)
                     'font-lock-face 'tandem-view-queue-held
                     'keymap tandem-view-queue-row-map 'help-echo tandem-view-queue--help))
       (mapconcat
        (lambda (m)
          (let ((id (plist-get m :id)))
            (propertize
             (format "⧗ Queued %s · %s  %s\n" id
                     (tandem-view-queue-first-line (plist-get m :text))
                     (if (equal id tandem-view-queue--editing) "[✎ in the composer]"
                       "[e edit · k delete]"))
             'font-lock-face 'tandem-view-queued 'tandem-queue-item id
             'keymap tandem-view-queue-row-map 'help-echo tandem-view-queue--help)))
        items "")
       "\n"))))

(add-hook 'tandem-view-progress-rows-functions #'tandem-view-queue-rows)

;;;; Queueing and editing

(defun tandem-view-queue--stop-editing ()
  "Forget the message being edited (its text stays in the composer)."
  (setq tandem-view-queue--editing nil tandem-composer-note nil)
  (tandem-composer-refresh))

(defun tandem-view-queue-editing ()
  "Return the id of the queued message being edited in the composer, or nil."
  tandem-view-queue--editing)

(defun tandem-view-queue-submit (text)
  "Queue TEXT, or save it as the queued message being edited; return the reply.
The composer calls this for \\<tandem-composer-mode-map>\\[tandem-composer-send] \
while a turn runs."
  ;; The backend sends the queue itself: it needs the provider settings a
  ;; send would give it (a restarted backend has none yet).
  (tandem-configure)
  (let* ((session (tandem-view-state-session tandem-view--state))
         (editing tandem-view-queue--editing)
         (reply (if (not editing)
                    (tandem-request "turns/queue" (list :session session :text text))
                  (condition-case err
                      (tandem-request "turns/queue-edit"
                                      (list :session session :item editing :text text))
                    (tandem-error
                     (when (equal (tandem-error-code err) "not-found")
                       (tandem-view-queue--stop-editing))
                     (signal (car err) (cdr err)))))))
    (when editing (tandem-view-queue--stop-editing))
    (tandem-view-queue-set reply)
    (let ((sent (plist-get reply :sent-turn)) (running (plist-get reply :running)))
      (message "%s" (cond (editing (format "Saved queued %s" editing))
                          (sent (format "The turn had ended: sent as turn %s" sent))
                          (running (format "Queued: it goes when turn %s ends well \
\(k on its row deletes it)" running))
                          (t "Queued"))))
    reply))

(defun tandem-view-queue--at-point ()
  "Return the id of the queued message on the row at point, or signal a user error."
  (or (get-text-property (point) 'tandem-queue-item)
      (user-error "No queued message on this row")))

(defun tandem-queue-edit ()
  "Put the queued message at point in the composer, to edit it there.
The composer's send key then saves it in its place.  A draft already
there is set aside and comes back once the edit is saved."
  (interactive nil tandem-view-mode)
  (let* ((id (tandem-view-queue--at-point))
         (item (or (tandem-view-queue--item id) (user-error "Queued %s is gone" id)))
         (draft (string-trim (tandem-composer-draft))))
    (unless (eq (tandem-composer-scope) 'chat)
      (user-error "A queued message is a chat message: C-c C-b goes back to chat first"))
    (unless (or tandem-view-queue--editing (string-empty-p draft))
      (setq tandem-composer-after-send-draft draft))
    (setq tandem-view-queue--editing id
          tandem-composer-note (format "editing queued %s: C-c C-c saves it" id))
    (tandem-composer-set-draft (plist-get item :text))
    (tandem-composer-refresh)
    (goto-char (point-max))
    (setf (tandem-view-state-progress-dirty tandem-view--state) t)
    (tandem-view--schedule)
    (message "Editing queued %s: C-c C-c saves it in its place" id)))

(defun tandem-queue-delete ()
  "Delete the queued message at point."
  (interactive nil tandem-view-mode)
  (let ((id (tandem-view-queue--at-point)))
    (tandem-view-queue-set
     (tandem-request "turns/queue-remove"
                     (list :session (tandem-view-state-session tandem-view--state) :item id)))
    (when (equal id tandem-view-queue--editing) (tandem-view-queue--stop-editing))
    (message "Deleted queued %s" id)))

(defun tandem-queue-send ()
  "Send this session's held queue on.
Its first message goes now, or after the running turn."
  (interactive nil tandem-view-mode)
  (unless (derived-mode-p 'tandem-view-mode) (user-error "Not a tandem session buffer"))
  (tandem-configure)
  (let* ((reply (tandem-request "turns/queue-send"
                                (list :session (tandem-view-state-session tandem-view--state))))
         (sent (plist-get reply :sent-turn)))
    (tandem-view-queue-set reply)
    (message "%s" (cond (sent (format "Sent the first queued message as turn %s" sent))
                        ((plist-get reply :running)
                         (format "The queue goes on after turn %s" (plist-get reply :running)))
                        (t (format "The queue is still held: %s" (plist-get reply :held)))))))

(provide 'tandem-view-queue)
;;; tandem-view-queue.el ends here
