;;; tandem-view.el --- The shared session buffer of tandem  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; One buffer per execution session, named after the project and the
;; session title.  It is a projection of the session journal: `g'
;; rebuilds it from the backend, and nothing durable lives only here.
;;
;; Layout, top to bottom: a row to load older turns, the turn blocks
;; (tandem-view-render.el), a progress row, the composer
;; (tandem-composer.el).  Rendered text is read-only through the
;; `read-only' text property and carries its own keymap, so the
;; transcript behaves like `special-mode' (g, TAB, n, p, q) while the
;; composer at the end stays ordinary editable text.
;;
;; Streaming: events only change the model and mark what is dirty; one
;; timer (`tandem-view-frame-interval', about 30 Hz) applies everything
;; at once.  Streamed text is appended at a marker; a block is re-rendered
;; only when its structure changes.  Windows whose point is in the
;; transcript keep point and start (anchored to blocks); a window whose
;; point is in the composer follows the end.
;;
;; Public API:
;;   `tandem-view-open'    -- open the session buffer of a project root.
;;   `tandem-view-show'    -- open the buffer of a session (its info plist).
;;   `tandem-view-refresh' (g), `tandem-view-toggle-fold' (TAB),
;;   `tandem-view-load-older', `tandem-view-answer-at'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-turns)
(require 'tandem-view-render)
(require 'tandem-view-model)
(require 'tandem-view-draw)
(require 'tandem-remote)

(declare-function tandem-view--set-running "tandem-view-live" (turn))
(declare-function tandem-view-install-hooks "tandem-view-live" ())
(declare-function tandem-view--send "tandem-view-commands" (text scope))
(declare-function tandem-view-cancel "tandem-view-commands" ())
(declare-function tandem-view-toggle-fold "tandem-view-commands" (&optional pos))
(declare-function tandem-view-next-turn "tandem-view-commands" (&optional n))
(declare-function tandem-view-previous-turn "tandem-view-commands" (&optional n))
(declare-function tandem-view-load-older "tandem-view-live" (&optional all))
(declare-function tandem-view-answer-at "tandem-view-commands" (pos answer))
(declare-function tandem-view-goto-question "tandem-view-commands" ())
(declare-function tandem-view--replay "tandem-view-live" (events))

(defcustom tandem-view-frame-interval (/ 1.0 30)
  "Seconds between two applications of streamed events (one timer)."
  :type 'number
  :group 'tandem-view)

(defcustom tandem-view-initial-entries 160
  "Journal entries fetched when a session buffer opens (the newest ones)."
  :type 'integer
  :group 'tandem-view)

(defcustom tandem-view-page-entries 400
  "Journal entries fetched by one `tandem-view-load-older'."
  :type 'integer
  :group 'tandem-view)

(defvar tandem-sessions-activated-functions)

(defvar tandem-view--buffers (make-hash-table :test #'equal)
  "Session id -> its live session buffer.")

(defvar-local tandem-view--session nil "Session id shown in this buffer.")
(defvar-local tandem-view--info nil "Session info plist from the backend.")
(defvar-local tandem-view--blocks nil "Rendered blocks, oldest first.")
(defvar-local tandem-view--by-turn nil "Hash: turn number -> its live block.")
(defvar-local tandem-view--first-seq nil "Seq of the oldest loaded entry (nil: none).")
(defvar-local tandem-view--last-seq 0 "Seq of the newest applied entry.")
(defvar-local tandem-view--folds nil "Hash: (session turn part) -> `folded' or `open'.")
(defvar-local tandem-view--tail nil "Marker: end of the transcript, start of the progress row.")
(defvar-local tandem-view--dirty nil "Blocks to re-render at the next tick.")
(defvar-local tandem-view--live-dirty nil "Blocks with streamed text to append.")
(defvar-local tandem-view--progress-dirty nil "Non-nil when the progress row must be redrawn.")
(defvar-local tandem-view--timer nil "The pending frame timer, or nil.")
(defvar-local tandem-view--clock nil "Repeating one-second timer while a turn runs.")
(defvar-local tandem-view--running nil
  "The turn in flight: plist (:turn N :since TIME :waiting TITLE), or nil.")
(defvar-local tandem-view--refreshing nil
  "Non-nil while `tandem-view-refresh' runs: events wait in `tandem-view--queued'.")
(defvar-local tandem-view--queued nil
  "Events (and `gap' markers) that arrived during a refresh, newest first.")
(defvar-local tandem-view--lost nil
  "Turn that was running when the backend died (progress row says so), or nil.")
(defvar-local tandem-view-flush-count 0
  "Number of frames applied in this buffer (for tests and benchmarks).")

;;;; Mode

(defvar tandem-view-transcript-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'tandem-view-toggle-fold)
    (define-key map (kbd "<tab>") #'tandem-view-toggle-fold)
    (define-key map "g" #'tandem-view-refresh)
    (define-key map "n" #'tandem-view-next-turn)
    (define-key map "p" #'tandem-view-previous-turn)
    (define-key map "o" #'tandem-view-load-older)
    (define-key map "E" #'tandem-compact-show-old-turns)
    (define-key map "q" #'quit-window)
    map)
  "Keys on rendered text (the transcript); the composer has ordinary keys.")

(defvar tandem-view-interaction-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tandem-view-transcript-map)
    (define-key map (kbd "RET") #'push-button)
    (define-key map [mouse-2] #'push-button)
    (define-key map [follow-link] 'mouse-face)
    map)
  "Parent keymap of a pending interaction row.
Each row adds the keys of its answers; they act only while point is on it.")

(defvar tandem-view-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tandem-composer-mode-map)
    (define-key map (kbd "C-c C-g") #'tandem-view-refresh)
    (define-key map (kbd "C-c C-q") #'tandem-view-goto-question)
    map)
  "Keymap of `tandem-view-mode' (the composer's keys and a few more).")

(define-derived-mode tandem-view-mode fundamental-mode "Tandem"
  "Major mode of a tandem session buffer.
The transcript is read-only (text properties); the composer at the end is
editable.  On the transcript:
\\{tandem-view-transcript-map}
In the composer:
\\{tandem-view-mode-map}"
  (setq-local font-lock-defaults '(nil t))
  (font-lock-mode 1)
  (setq-local tandem-view-render-lazy t)
  (jit-lock-register #'tandem-view-fontify-region)
  (setq-local scroll-conservatively 101)
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  (setq-local header-line-format '(:eval (tandem-view--header-line)))
  (setq-local tandem-composer-send-function #'tandem-view--send)
  (setq-local tandem-composer-cancel-function #'tandem-view-cancel)
  (setq-local tandem-composer-busy-function (lambda () (and tandem-view--running t)))
  ;; What events touch exists before the first rendering.
  (setq tandem-view--by-turn (make-hash-table)
        tandem-view--folds (make-hash-table :test #'equal))
  ;; `tandem-remote-attach', `-upload' … here act on this buffer's session.
  (setq-local tandem-remote-session-function (lambda () tandem-view--session))
  (add-hook 'kill-buffer-hook #'tandem-view--forget nil t))

(defface tandem-view-remote '((t :inherit font-lock-constant-face))
  "Face of the remote execution target in the header line."
  :group 'tandem-view)

(defun tandem-view--header-line ()
  "Return the header line: project, title, remote target, scope and turn state.
The remote target is what `tandem-remote-attach' / `-detach' last
recorded, or what the backend said at the last `g'."
  (let ((scope (tandem-composer-scope))
        (remote (and tandem-view--session (tandem-remote-header-string tandem-view--session))))
    (concat " " (propertize "tandem" 'face 'bold) " · "
            (tandem-view--project-name) " · " (tandem-view--title)
            (if remote (concat " · " (propertize remote 'face 'tandem-view-remote)) "")
            (if (fboundp 'tandem-trust-header-string) (tandem-trust-header-string tandem-view--info) "")
            " · scope: "
            (if (eq scope 'chat) "chat"
              (propertize (format "directive %s · next: %s" (plist-get scope :directive)
                                  (plist-get scope :action))
                          'face 'tandem-composer-directive))
            (if tandem-view--running
                (format " · turn %s running" (plist-get tandem-view--running :turn))
              ""))))

(defun tandem-view--project-name ()
  "Return the project's directory name."
  (file-name-nondirectory
   (directory-file-name (or (plist-get tandem-view--info :active-cwd)
                            (plist-get tandem-view--info :cwd) "?"))))

(defun tandem-view--title ()
  "Return the session title, or a short id when it has none."
  (let ((title (plist-get tandem-view--info :title)))
    (if (and title (not (string-empty-p title))) title
      (concat "session " (substring (or tandem-view--session "?") 0
                                    (min 8 (length (or tandem-view--session ""))))))))

(defun tandem-view--forget ()
  "Drop this buffer from the registry and stop its timers."
  (when tandem-view--timer (cancel-timer tandem-view--timer))
  (when tandem-view--clock (cancel-timer tandem-view--clock))
  (when (eq (gethash tandem-view--session tandem-view--buffers) (current-buffer))
    (remhash tandem-view--session tandem-view--buffers)
    ;; The session's last buffer is gone: let the backend stop its agent
    ;; processes and release the journal (it refuses while a turn runs).
    (when (and tandem-view--session tandem--connection
               (tandem-connection-live-p tandem--connection))
      (tandem-request-async "sessions/close" (list :session tandem-view--session)
                            #'ignore #'ignore))))

;;;; Opening

;;;###autoload
(defun tandem-view-open (root)
  "Open the session buffer of the project at ROOT (continue its latest session)."
  (unless (and (stringp root) (file-directory-p root))
    (user-error "Not a directory: %S" root))
  (tandem-view-show (tandem-request "sessions/continue" (list :cwd (expand-file-name root)))))

;;;###autoload
(defun tandem-view-show (info &optional no-select)
  "Show the session buffer of INFO, a session plist with :id; return the buffer.
Unless NO-SELECT, the buffer is displayed and selected."
  (let ((id (plist-get info :id)))
    (unless (and (stringp id) (not (string-empty-p id)))
      (error "tandem-view-show: INFO has no session :id: %S" info))
    (let ((buffer (gethash id tandem-view--buffers)) (fresh nil))
      (unless (buffer-live-p buffer)
        (setq buffer (generate-new-buffer "*tandem*") fresh t)
        (with-current-buffer buffer
          (tandem-view-mode)
          (setq tandem-view--session id)
          (setq-local tandem-session id)))
      (tandem-view-install-hooks)
      (with-current-buffer buffer
        (setq tandem-view--info info)
        (rename-buffer (format "*tandem: %s — %s*" (tandem-view--project-name) (tandem-view--title))
                       t)
        ;; Registered before the first refresh: events arriving while it
        ;; fetches wait in the queue and are applied after it.
        (puthash id buffer tandem-view--buffers)
        (if (not fresh)
            (tandem-view-refresh)
          (condition-case err
              (tandem-view-refresh)
            (error (kill-buffer buffer) (signal (car err) (cdr err))))))
      (unless no-select (pop-to-buffer buffer))
      buffer)))

(defun tandem-view-buffer (session)
  "Return the live buffer of SESSION (an id), or nil."
  (let ((b (gethash session tandem-view--buffers)))
    (and (buffer-live-p b) b)))

;;;; Full rendering

(defun tandem-view--fetch (params)
  "Call `sessions/entries' for this buffer's session with PARAMS."
  (tandem-request "sessions/entries" (append (list :session tandem-view--session) params)))

(defun tandem-view--trim-partial (entries)
  "Drop ENTRIES (oldest first) before the first whole turn; return the rest.
When ENTRIES start at seq 1 nothing is dropped."
  (if (or (null entries) (<= (plist-get (car entries) :seq) 1))
      entries
    (let ((tail entries))
      (while (and tail (plist-get (car tail) :turn)
                  (not (member (plist-get (car tail) :type) '("turn_start" "directive_open"))))
        (setq tail (cdr tail)))
      tail)))

(defun tandem-view--fetch-before (before limit)
  "Return entries (oldest first) before seq BEFORE, starting at a turn boundary.
Fetch LIMIT entries, more when one turn alone is longer than that."
  (let ((limit limit) (result nil) (done nil))
    (while (not done)
      (let* ((reply (tandem-view--fetch (list :before before :limit limit)))
             (entries (plist-get reply :entries))
             (kept (tandem-view--trim-partial entries)))
        (setq tandem-view--last-seq (max tandem-view--last-seq (or (plist-get reply :last-seq) 0)))
        (if (or kept (null entries) (>= limit 10000))
            (setq result (or kept entries) done t)
          (setq limit (min 10000 (* 4 limit))))))
    result))

(defun tandem-view-refresh ()
  "Re-render the whole buffer from the backend's journal.
The composer's draft, scope and point are kept; fold choices too.
Events arriving meanwhile are applied after it; a refresh asked for
during one (from a timer) is left to the running one."
  (interactive)
  (unless (derived-mode-p 'tandem-view-mode) (user-error "Not a tandem session buffer"))
  (unless tandem-view--refreshing
    (setq tandem-view--refreshing t)
    (unwind-protect
        (progn
          (tandem-view--refresh-now)
          ;; The remote target may have changed elsewhere: ask again.
          (condition-case err
              (tandem-remote-target tandem-view--session t)
            (tandem-error (message "tandem: could not read the remote target: %s"
                                  (tandem-error-message err)))))
      (setq tandem-view--refreshing nil)
      (let ((events (nreverse tandem-view--queued)))
        (setq tandem-view--queued nil)
        ;; Never drawn (a failed first refresh): nothing to apply them to.
        (when (markerp tandem-view--tail) (tandem-view--replay events))))))

(defun tandem-view--refresh-now ()
  "Fetch the newest entries and render the buffer from them."
  (let* ((entries (tandem-view--fetch-before most-positive-fixnum tandem-view-initial-entries))
         (live (and tandem-view--running
                    (gethash (plist-get tandem-view--running :turn) (or tandem-view--by-turn
                                                                         (make-hash-table)))))
         (inhibit-read-only t))
    ;; The journal answered: whatever the backend lost, it says what is true.
    (setq tandem-view--lost nil)
    (if (markerp tandem-composer--draft-start)
        (tandem-composer-outside-draft (tandem-view--render-all entries live))
      (let ((buffer-undo-list t)) (tandem-view--render-all entries live)))))

(defun tandem-view--render-all (entries live)
  "Replace the transcript with blocks for ENTRIES; LIVE is the old running block."
  (let* ((modified (buffer-modified-p))
         (had-composer (markerp tandem-composer--start))
         (old-blocks tandem-view--blocks)
         (draft-point (and had-composer (>= (point) tandem-composer--draft-start)
                           (- (point) tandem-composer--draft-start)))
         (inhibit-read-only t))
    (setq tandem-view--first-seq (and entries (plist-get (car entries) :seq))
          tandem-view--last-seq (max tandem-view--last-seq
                                     (or (plist-get (car (last entries)) :seq) 0))
          tandem-view--blocks (tandem-view--build entries)
          tandem-view--newest nil
          tandem-view--dirty nil tandem-view--live-dirty nil)
    (tandem-view--index)
    (when live
      (let ((b (gethash (tandem-view-block-turn live) tandem-view--by-turn)))
        (when b
          (setf (tandem-view-block-live-text b) (tandem-view-block-live-text live)
                (tandem-view-block-live-reasoning b) (tandem-view-block-live-reasoning live)
                (tandem-view-block-meta b) (tandem-view-block-meta live)
                (tandem-view-block-interactions b) (tandem-view-block-interactions live)))))
    (unless tandem-view--running (tandem-view--adopt-running))
    (dolist (b old-blocks) (tandem-view--release b))
    (if had-composer
        (delete-region (point-min) tandem-composer--start)
      (erase-buffer))
    (goto-char (point-min))
    (tandem-view--older-row)
    (setq tandem-view--tail (copy-marker (point)))
    (tandem-view--insert-progress)
    (if had-composer
        (set-marker tandem-composer--start (point))
      (tandem-composer-setup))
    (tandem-view--insert-blocks tandem-view--blocks tandem-view--tail)
    (tandem-composer-refresh)
    (restore-buffer-modified-p modified)
    (setq tandem-composer-history (tandem-view--chat-history))
    (goto-char (if draft-point (+ tandem-composer--draft-start draft-point) (point-max)))
    (dolist (w (get-buffer-window-list (current-buffer) nil t))
      (when (or draft-point (not had-composer)) (set-window-point w (point))))))

(defun tandem-view--adopt-running ()
  "Mark the newest turn as running when the journal has not ended it."
  (let ((b (tandem-view--newest-turn-block)))
    (when (and b (not (tandem-view-block-end-entry b)))
      (let ((status (condition-case nil
                        (tandem-request "turns/status" (list :session tandem-view--session
                                                             :turn (tandem-view-block-turn b))
                                        5)
                      (tandem-error nil))))
        (when (equal (plist-get status :state) "running")
          (tandem-view--set-running (tandem-view-block-turn b)))))))

(defun tandem-view--chat-history ()
  "Return the chat request texts of the loaded history, newest first."
  (let ((out nil))
    (dolist (b tandem-view--blocks)
      (unless (tandem-view-block-directive b)
        (let ((u (tandem-view-block-find b "user")))
          (when u (push (plist-get u :text) out)))))
    out))

;;;; Entry points

(defun tandem-view--on-activated (info)
  "Show the session buffer of INFO, a session made active by a command."
  (when (plist-get info :id) (tandem-view-show info)))

(setq tandem-open-session-function #'tandem-view-open)
(add-hook 'tandem-sessions-activated-functions #'tandem-view--on-activated)

(provide 'tandem-view)
(require 'tandem-view-live)
(require 'tandem-view-commands)
;;; tandem-view.el ends here
