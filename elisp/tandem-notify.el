;;; tandem-notify.el --- Hear when a session needs you  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; When a turn starts waiting for the user (a permission question) or
;; ends, and its session buffer is not shown on a focused frame, tandem
;; tells the user through `tandem-notify-function'.  The default,
;; `tandem-notify-default', tries a desktop notification (D-Bus,
;; `notifications-notify'), then `alert' when installed, then the echo
;; area (the mode-line indicator of tandem-indicator.el shows waiting
;; questions as well).  `tandem-notify-events' says which events count;
;; `tandem-notify-visit' (or the notification's action) goes to the
;; buffer.
;;
;; The session buffer calls `tandem-notify-view-event' from the one
;; place where it applies live backend events
;; (`tandem-view-handle-event'): a journal read back (a refresh, a
;; catch-up) never notifies.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-view-state)

(defgroup tandem-notify nil
  "Telling the user that a tandem session waits or finished."
  :group 'tandem
  :prefix "tandem-notify-")

(defconst tandem-notify--kinds '(waiting finished failed)
  "The kinds of event `tandem-notify-events' may name.")

(defcustom tandem-notify-events '(waiting)
  "Which events of a session whose buffer you do not see tell you.
`waiting': the turn asks you a question (a permission) and waits.
`finished': the turn ended and succeeded.  `failed': the turn failed
or was aborted."
  :type '(set (const :tag "A question waits for you" waiting)
              (const :tag "A turn finished" finished)
              (const :tag "A turn failed or was aborted" failed))
  :group 'tandem-notify)

(defcustom tandem-notify-function #'tandem-notify-default
  "Function telling the user of an event, called with one plist.
Its keys: :kind (`waiting', `finished' or `failed'), :session (the
id), :title (the session's title or project), :message (a short
sentence), :buffer (the session buffer), :turn, and for `waiting'
:interaction-id.  Called from a timer, never from a process filter."
  :type '(choice (function-item tandem-notify-default) function)
  :group 'tandem-notify)

(defvar tandem-notify-dbus-check #'tandem-notify--dbus-p
  "Function telling whether desktop notifications can go through D-Bus.
`tandem-notify-default' calls it; tests bind it to see the next way.")

(defvar tandem-notify-alert-check #'tandem-notify--alert-p
  "Function telling whether the `alert' package is there to use.
`tandem-notify-default' calls it; tests bind it to see the next way.")

(defvar tandem-notify--last nil
  "The event of the latest notification (a plist), for `tandem-notify-visit'.")

(defvar-local tandem-notify--sent nil
  "Keys of this session buffer's events already considered: never twice.
A key is (waiting . INTERACTION-ID) or (ended . TURN).")

;;;; Deciding

(defun tandem-notify--frame-focused-p (frame)
  "Non-nil when FRAME has the focus or Emacs cannot tell.
When focus is unknown (a terminal without focus reports, the only
frame of batch Emacs), being shown counts as seen."
  (let ((state (if (fboundp 'frame-focus-state) (frame-focus-state frame) 'unknown)))
    (or (eq state t) (eq state 'unknown)
        ;; Batch: `frame-focus-state' says nil on the initial terminal,
        ;; which never reports focus.  (A daemon's initial frame, seen by
        ;; nobody, keeps its nil: a buffer shown only there is not seen.)
        (and noninteractive
             (equal (terminal-name (frame-terminal frame)) "initial_terminal")))))

(defun tandem-notify-seen-p (buffer)
  "Non-nil when BUFFER is shown in a window of a visible, focused frame."
  (cl-some (lambda (w) (tandem-notify--frame-focused-p (window-frame w)))
           (get-buffer-window-list buffer nil 'visible)))

(defun tandem-notify--check-events ()
  "Signal a clear error unless `tandem-notify-events' is a list of known kinds."
  (unless (and (listp tandem-notify-events)
               (cl-every (lambda (k) (memq k tandem-notify--kinds)) tandem-notify-events))
    (user-error "Option tandem-notify-events must be a list of %s, not %S"
                (mapconcat #'symbol-name tandem-notify--kinds ", ") tandem-notify-events)))

(defun tandem-notify--label ()
  "Return the current session buffer's title, else its project's name."
  (let ((info (tandem-view-state-info tandem-view--state)))
    (or (let ((title (plist-get info :title))) (and (stringp title) (not (string-empty-p title)) title))
        (file-name-nondirectory (directory-file-name (tandem-view--root))))))

(defun tandem-notify--event-for (event)
  "Return the notification for the backend EVENT in this buffer, or nil.
Nil when EVENT is no kind that notifies, or was already considered."
  (let ((turn (plist-get event :turn)))
    (pcase (plist-get event :kind)
      ;; A turn number comes back after a rewind: its new end is news.
      ("turn-started" (setq tandem-notify--sent (delete (cons 'ended turn) tandem-notify--sent))
                      nil)
      ("interaction"
       (let ((key (cons 'waiting (plist-get event :interaction-id))))
         (unless (member key tandem-notify--sent)
           (push key tandem-notify--sent)
           (list :kind 'waiting :turn turn :interaction-id (plist-get event :interaction-id)
                 :message (format "Waits for you: %s" (or (plist-get event :title) "a question"))))))
      ("turn-ended"
       (let ((key (cons 'ended turn))
             (outcome (plist-get event :outcome)) (err (plist-get event :error)))
         (unless (member key tandem-notify--sent)
           (push key tandem-notify--sent)
           (list :kind (if (equal outcome "succeeded") 'finished 'failed) :turn turn
                 :message (cond ((equal outcome "succeeded") (format "Turn %s finished" turn))
                                (t (format "Turn %s %s%s" turn
                                           (if (equal outcome "aborted") "was aborted" "failed")
                                           (if (stringp err) (concat ": " err) "")))))))))))

(defun tandem-notify-view-event (event)
  "Tell the user of the live backend EVENT of the current session buffer.
Only when its kind is in `tandem-notify-events', the buffer is not
seen (`tandem-notify-seen-p') and this wait or end was not considered
before.  `tandem-notify-function' runs from a timer, so that it never
runs inside the process filter that delivered EVENT."
  (let ((note (tandem-notify--event-for event)))
    (when note
      (tandem-notify--check-events)
      (when (and (memq (plist-get note :kind) tandem-notify-events)
                 (not (tandem-notify-seen-p (current-buffer))))
        (let ((note (append (list :session (tandem-view-state-session tandem-view--state)
                                  :title (tandem-notify--label) :buffer (current-buffer))
                            note))
              (fn tandem-notify-function))
          (unless (functionp fn)
            (user-error "Option tandem-notify-function is not a function: %S" fn))
          (setq tandem-notify--last note)
          (run-at-time 0 nil (lambda ()
                               (with-demoted-errors "tandem-notify-function: %S"
                                 (funcall fn note)))))))))

;;;; The default: desktop, alert, echo area

(declare-function notifications-notify "notifications" (&rest params))
(declare-function dbus-get-unique-name "dbusbind" (bus))
(declare-function alert "alert" (message &rest args))

(defun tandem-notify--dbus-p ()
  "Non-nil when Emacs has D-Bus and a session bus answers."
  (and (featurep 'dbusbind)
       (require 'dbus nil t)
       (ignore-errors (dbus-get-unique-name :session))
       t))

(defun tandem-notify--alert-p ()
  "Non-nil when the `alert' package can be loaded."
  (and (require 'alert nil t) t))

(defun tandem-notify--heading (event)
  "Return the one-line heading of EVENT's notification."
  (format "tandem: %s" (plist-get event :title)))

(defun tandem-notify--by-dbus (event)
  "Show EVENT as a desktop notification; its action visits the buffer.
Return non-nil when the notification went out."
  (and (require 'notifications nil t)
       ;; Its id when it went out; nil (and an "Error:" message, no
       ;; signal) when no bus or notification service answers.
       (integerp (ignore-errors
                   (notifications-notify
                    :title (tandem-notify--heading event) :body (plist-get event :message)
                    :app-name "Emacs" :actions '("default" "Show")
                    :on-action (lambda (_id _key) (tandem-notify--visit event)))))))

(defun tandem-notify--by-alert (event)
  "Tell EVENT through the `alert' package.  Return non-nil when it went out."
  (condition-case nil
      (progn (alert (plist-get event :message) :title (tandem-notify--heading event)
                    :severity (if (eq (plist-get event :kind) 'waiting) 'high 'normal)
                    :buffer (plist-get event :buffer))
             t)
    (error nil)))

(defun tandem-notify--in-echo-area (event)
  "Say EVENT in the echo area, with the key that visits its buffer."
  (message "%s — %s (%s)" (tandem-notify--heading event) (plist-get event :message)
           (substitute-command-keys "\\[tandem-notify-visit] shows it")))

(defun tandem-notify-default (event)
  "Tell the user of EVENT the best way there is; return which was used.
A desktop notification when D-Bus is there (`dbus'), else `alert' when
installed (`alert'), else the echo area (`echo'), where the mode-line
indicator also shows waiting questions.  A way that fails passes to
the next."
  (cond ((and (funcall tandem-notify-dbus-check) (tandem-notify--by-dbus event)) 'dbus)
        ((and (funcall tandem-notify-alert-check) (tandem-notify--by-alert event)) 'alert)
        (t (tandem-notify--in-echo-area event) 'echo)))

;;;; Going there

(defun tandem-notify--visit (event)
  "Show EVENT's buffer, at its question when it waits; return the buffer."
  (let ((buffer (plist-get event :buffer)))
    (unless (buffer-live-p buffer)
      (user-error "The session buffer of that notification is gone"))
    (let ((window (get-buffer-window buffer t)))
      (when window (select-frame-set-input-focus (window-frame window))))
    (pop-to-buffer buffer)
    (when (eq (plist-get event :kind) 'waiting)
      (let ((pos (next-single-property-change (point-min) 'tandem-interaction)))
        (when pos (goto-char pos) (skip-chars-forward " "))))
    buffer))

;;;###autoload
(defun tandem-notify-visit ()
  "Go to the session buffer of the latest tandem notification.
At its question when the notification said one waits."
  (interactive)
  (unless tandem-notify--last (user-error "No tandem notification to visit"))
  (tandem-notify--visit tandem-notify--last))

(provide 'tandem-notify)
;;; tandem-notify.el ends here
