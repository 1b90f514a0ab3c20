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

(declare-function tandem-view--set-running "tandem-view-live" (turn))
(declare-function tandem-view-install-hooks "tandem-view-live" ())
(declare-function tandem-view--send "tandem-view-live" (text scope))
(declare-function tandem-view-cancel "tandem-view-live" ())
(declare-function tandem-view-toggle-fold "tandem-view-live" (&optional pos))
(declare-function tandem-view-next-turn "tandem-view-live" (&optional n))
(declare-function tandem-view-previous-turn "tandem-view-live" (&optional n))
(declare-function tandem-view-load-older "tandem-view-live" (&optional all))
(declare-function tandem-view-answer-at "tandem-view-live" (pos answer))
(declare-function tandem-view-goto-question "tandem-view-live" ())

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
  (add-hook 'kill-buffer-hook #'tandem-view--forget nil t))

(defun tandem-view--header-line ()
  "Return the header line: project, title, scope and turn state."
  (let ((scope (tandem-composer-scope)))
    (concat " " (propertize "tandem" 'face 'bold) " · "
            (tandem-view--project-name) " · " (tandem-view--title)
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
    (remhash tandem-view--session tandem-view--buffers)))

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
    (let ((buffer (gethash id tandem-view--buffers)))
      (unless (buffer-live-p buffer)
        (setq buffer (generate-new-buffer "*tandem*"))
        (with-current-buffer buffer
          (tandem-view-mode)
          (setq tandem-view--session id)
          (setq-local tandem-session id)
          (puthash id buffer tandem-view--buffers)))
      (tandem-view-install-hooks)
      (with-current-buffer buffer
        (setq tandem-view--info info)
        (rename-buffer (format "*tandem: %s — %s*" (tandem-view--project-name) (tandem-view--title))
                       t)
        (tandem-view-refresh))
      (unless no-select (pop-to-buffer buffer))
      buffer)))

(defun tandem-view-buffer (session)
  "Return the live buffer of SESSION (an id), or nil."
  (let ((b (gethash session tandem-view--buffers)))
    (and (buffer-live-p b) b)))

;;;; Drawing

(defun tandem-view--block-end (block)
  "Return the position where BLOCK's text ends."
  (let ((start (marker-position (tandem-view-block-start block))))
    (next-single-property-change start 'tandem-block nil (marker-position tandem-view--tail))))

(defun tandem-view--insert-block (block)
  "Insert BLOCK at point, marking its text, and set its start marker."
  (let ((start (point)))
    (tandem-view-render-block block (lambda (part) (tandem-view--folded-p block part)))
    (tandem-view--protect start (point) block)
    (if (tandem-view-block-start block)
        (set-marker (tandem-view-block-start block) start)
      (setf (tandem-view-block-start block) (copy-marker start)))))

(defun tandem-view--live-p (block)
  "Return non-nil when BLOCK has streamed text (its markers must live here)."
  (not (and (string-empty-p (tandem-view-block-live-text block))
            (string-empty-p (tandem-view-block-live-reasoning block)))))

(defun tandem-view--insert-blocks (blocks boundary)
  "Insert BLOCKS (in order) before the marker BOUNDARY.
Runs of blocks are rendered in a scratch buffer and inserted with one
edit: thousands of small insertions would each pay for every marker of
the buffer.  A block with streamed text is rendered in place."
  (let ((folds tandem-view--folds) (session tandem-view--session)
        (all tandem-view--blocks) (newest (tandem-view--newest-turn-block))
        (runs nil) (run nil))
    (dolist (b blocks)
      (if (not (tandem-view--live-p b))
          (push b run)
        (when run (push (cons 'bulk (nreverse run)) runs) (setq run nil))
        (push (cons 'one b) runs)))
    (when run (push (cons 'bulk (nreverse run)) runs))
    (dolist (r (nreverse runs))
      (if (eq (car r) 'one)
          (tandem-view--insert-before boundary (lambda () (tandem-view--insert-block (cdr r))))
        (let ((offsets nil) (text nil))
          (with-temp-buffer
            (setq-local tandem-view--folds folds)
            (setq-local tandem-view--session session)
            (setq-local tandem-view--blocks all)
            (setq-local tandem-view--newest newest)
            (setq-local tandem-view-render-lazy t)
            (dolist (b (cdr r))
              (let ((start (point)))
                (tandem-view-render-block b (lambda (part) (tandem-view--folded-p b part)))
                (tandem-view--protect start (point) b)
                (push (cons b (1- start)) offsets)))
            (setq text (buffer-string)))
          (let ((base (marker-position boundary)))
            (goto-char boundary)
            (insert text)
            (set-marker boundary (point))
            (dolist (o offsets)
              (let ((b (car o)) (pos (+ base (cdr o))))
                (if (tandem-view-block-start b)
                    (set-marker (tandem-view-block-start b) pos)
                  (setf (tandem-view-block-start b) (copy-marker pos)))))))))))

(defun tandem-view--protect (start end block)
  "Make START..END read-only transcript text of BLOCK."
  (let ((inhibit-read-only t))
    (add-text-properties start end (list 'read-only t 'tandem-block block
                                         'front-sticky '(read-only)))
    ;; Interaction rows and buttons carry their own map; the rest the transcript's.
    (let ((pos start))
      (while (< pos end)
        (let ((next (next-single-property-change pos 'tandem-interaction nil end)))
          (unless (get-text-property pos 'keymap)
            (put-text-property pos next 'keymap
                               (if (get-text-property pos 'tandem-interaction)
                                   tandem-view-interaction-map tandem-view-transcript-map)))
          (setq pos next))))))

(defun tandem-view--insert-before (marker fn)
  "Call FN with point at MARKER, then move MARKER after what FN inserted."
  (goto-char marker)
  (funcall fn)
  (set-marker marker (point)))

(defun tandem-view--rerender (block)
  "Replace BLOCK's text with a fresh rendering."
  (let* ((start (tandem-view-block-start block))
         (end (tandem-view--block-end block))
         (next (cl-find-if (lambda (b) (and (tandem-view-block-start b)
                                            (marker-position (tandem-view-block-start b))))
                           (cdr (memq block tandem-view--blocks))))
         (boundary (if next (tandem-view-block-start next) tandem-view--tail)))
    (delete-region start end)
    (tandem-view--insert-before boundary (lambda () (tandem-view--insert-block block)))))

(defun tandem-view--remove-block (block)
  "Delete BLOCK's text and drop it from the model."
  (when (tandem-view-block-start block)
    (delete-region (tandem-view-block-start block) (tandem-view--block-end block))
    (set-marker (tandem-view-block-start block) nil))
  (setq tandem-view--blocks (delq block tandem-view--blocks)
        tandem-view--newest nil))

(defun tandem-view--older-row ()
  "Insert the top row, a button for older history or the start marker."
  (let ((start (point)))
    (if (and tandem-view--first-seq (> tandem-view--first-seq 1))
        (progn
          (insert-text-button (format "▲ Load older turns (o) — entries before #%d"
                                      tandem-view--first-seq)
                              'action (lambda (_) (tandem-view-load-older))
                              'follow-link t)
          (insert "\n\n"))
      (insert (propertize "── start of session ──\n\n" 'font-lock-face 'tandem-view-muted)))
    (add-text-properties start (point) (list 'read-only t 'tandem-older t
                                             'keymap tandem-view-transcript-map
                                             'front-sticky '(read-only)))))

(defun tandem-view--redraw-older-row ()
  "Redraw the top row (after paging)."
  (let* ((end (next-single-property-change (point-min) 'tandem-older nil (point-max)))
         (first (car tandem-view--blocks))
         (boundary (if first (tandem-view-block-start first) tandem-view--tail)))
    (delete-region (point-min) end)
    (tandem-view--insert-before boundary #'tandem-view--older-row)))

(defun tandem-view--progress-text ()
  "Return the progress row's text."
  (if (not tandem-view--running)
      "\n"
    (let* ((elapsed (- (float-time) (plist-get tandem-view--running :since)))
           (waiting (plist-get tandem-view--running :waiting)))
      (concat
       (propertize
        (if waiting
            (format "⏸ Turn %s · waiting for you: %s · %s"
                    (plist-get tandem-view--running :turn) waiting (tandem-view--duration elapsed))
          (format "⏵ Turn %s running · %s · C-c C-c in the composer cancels"
                  (plist-get tandem-view--running :turn) (tandem-view--duration elapsed)))
        'font-lock-face (if waiting 'tandem-view-interaction 'tandem-view-muted))
       "\n\n"))))

(defun tandem-view--duration (seconds)
  "Format SECONDS as 12s or 3m05s."
  (let ((s (floor seconds)))
    (if (< s 60) (format "%ds" s) (format "%dm%02ds" (/ s 60) (% s 60)))))

(defun tandem-view--redraw-progress ()
  "Redraw the progress row between the transcript and the composer."
  (delete-region tandem-view--tail tandem-composer--start)
  (tandem-view--insert-before
   tandem-composer--start
   #'tandem-view--insert-progress))

(defun tandem-view--insert-progress ()
  "Insert the progress row at point."
  (let ((start (point)))
    (insert (tandem-view--progress-text))
    (add-text-properties start (point) (list 'read-only t 'tandem-progress t
                                             'keymap tandem-view-transcript-map
                                             'front-sticky '(read-only)))))

(defun tandem-view--release (block)
  "Detach BLOCK's markers from the buffer (they slow every edit otherwise)."
  (dolist (m (list (tandem-view-block-start block) (tandem-view-block-text-marker block)
                   (tandem-view-block-reasoning-marker block)))
    (when (markerp m) (set-marker m nil))))

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
The composer's draft, scope and point are kept; fold choices too."
  (interactive)
  (unless (derived-mode-p 'tandem-view-mode) (user-error "Not a tandem session buffer"))
  (let* ((entries (tandem-view--fetch-before most-positive-fixnum tandem-view-initial-entries))
         (live (and tandem-view--running
                    (gethash (plist-get tandem-view--running :turn) (or tandem-view--by-turn
                                                                         (make-hash-table)))))
         (inhibit-read-only t))
    (unless tandem-view--folds (setq tandem-view--folds (make-hash-table :test #'equal)))
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
;;; tandem-view.el ends here
