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
;; This file is the top of the view: the mode, the header line, opening
;; a session's buffer and closing it.  Below it, each requiring only
;; files further down:
;;   tandem-view-commands.el   -- folding, moving, answering, send, cancel.
;;   tandem-view-live.el       -- full rendering, older pages, events.
;;   tandem-view-queue.el      -- the queued drafts' rows under a turn.
;;   tandem-view-frame.el      -- the one timer that applies changes.
;;   tandem-view-stream.el     -- streamed text appended; long bodies kept.
;;   tandem-view-draw.el       -- editing blocks and rows; the keymaps.
;;   tandem-view-model.el      -- blocks from entries, folds.
;;   tandem-view-compaction.el -- compaction rows and the turns they hold.
;;   tandem-view-kinds.el      -- the entry-kind registry; a block at point.
;;   tandem-view-render.el     -- the parts of a block: header, rows, live.
;;   tandem-view-usage.el      -- the header line's token totals and cost.
;;   tandem-view-state.el      -- the buffer's state, the buffer registry.
;;   tandem-view-gc.el         -- garbage collection paced while streaming.
;;   tandem-view-fontify.el    -- jit-lock fontifying displayed segments.
;;   tandem-view-lazy.el       -- bodies of a long history marked later.
;;   tandem-view-markdown.el   -- Markdown to propertized text.
;;   tandem-view-segments.el   -- bodies cut into segments fontified alone.
;;   tandem-view-format.el     -- faces, indentation, small formatters.
;;   tandem-view-block.el      -- the block struct and questions about it.
;;
;; Streaming: events only change the model and mark what is dirty; one
;; timer (`tandem-view-frame-interval', 0.05 s: 20 Hz) applies everything
;; at once.  Streamed text is appended at a marker; a block is re-rendered
;; only when its structure changes.  Windows whose point is in the
;; transcript keep point and start (anchored to blocks); a window whose
;; point is in the composer follows the end.
;;
;; Public API:
;;   `tandem-view-open'    -- open the session buffer of a project root.
;;   `tandem-view-show'    -- open the buffer of a session (its info plist).
;;   `tandem-view-buffer'  -- the live buffer of a session, or nil.
;;   `tandem-view-refresh' (g), `tandem-view-toggle-fold' (TAB),
;;   `tandem-view-load-older', `tandem-view-answer-at'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-composer)
(require 'tandem-remote)
(require 'tandem-trust)
(require 'tandem-permissions)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-view-draw)
(require 'tandem-view-frame)
(require 'tandem-view-fill)
(require 'tandem-view-live)
(require 'tandem-view-commands)
(require 'tandem-view-shape)
(require 'tandem-view-kinds)
(require 'tandem-view-queue)
(require 'tandem-view-steer)

;;;; Mode

(defvar tandem-view-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tandem-composer-mode-map)
    (define-key map (kbd "C-c C-l") #'tandem-view-refresh)
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
  ;; Older turns inserted undecorated are finished first, bodies inserted
  ;; unscanned scanned next (depths -60, -50): then fontified as usual.
  (add-hook 'jit-lock-functions #'tandem-view--finish-region -60 t)
  (add-hook 'jit-lock-functions #'tandem-view-lazy-scan -50 t)
  ;; Placeholders of a long load are drawn before a search, and their
  ;; idle drawing stops with the buffer (tandem-view-fill.el).
  (add-hook 'isearch-mode-hook #'tandem-view-fill-all nil t)
  (add-hook 'kill-buffer-hook #'tandem-view-fill-stop nil t)
  (tandem-view-fontify-warm)
  (setq-local scroll-conservatively 101)
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  ;; An :eval result is a mode-line construct: its % signs must be doubled
  ;; or "12% of 128k" shows as "12of 128k".
  (setq-local header-line-format
              '(:eval (string-replace "%" "%%" (tandem-view--header-line))))
  (setq-local tandem-composer-send-function #'tandem-view--send)
  (setq-local tandem-composer-queue-function #'tandem-view-queue-submit)
  (setq-local tandem-composer-steer-function #'tandem-view-steer-submit)
  (setq-local tandem-composer-cancel-function #'tandem-view-cancel)
  ;; A send on its way counts: a second C-c C-c queues, as while a turn runs.
  (setq-local tandem-composer-busy-function
              (lambda () (and (or (tandem-view-state-running tandem-view--state)
                                  (tandem-view-sending-p))
                              t)))
  ;; @ mentions complete the session root's files and this buffer's turns.
  (setq-local tandem-composer-root-function #'tandem-view--root)
  (setq-local tandem-composer-turns-function #'tandem-view--mention-turns)
  ;; What events touch (the turn index, folds) exists before the first rendering.
  (setq tandem-view--state (tandem-view-state-create))
  ;; `tandem-remote-attach', `-upload' … here act on this buffer's session.
  (setq-local tandem-remote-session-function #'tandem-view-session-here)
  (add-hook 'kill-buffer-hook #'tandem-view--forget nil t))

;; Only the buffers made for it use it: M-x does not offer it.
(function-put 'tandem-view-mode 'completion-predicate #'ignore)

(defface tandem-view-remote '((t :inherit font-lock-constant-face))
  "Face of the remote execution target in the header line."
  :group 'tandem-view)

(defun tandem-view--mention-turns ()
  "Return (NUMBER . REQUEST) for each chat turn in this buffer, newest first."
  (let (out)
    (maphash (lambda (turn block)
               (let ((user (tandem-view-block-find block "user")))
                 (when (and (integerp turn) user (not (tandem-view-block-directive block)))
                   (push (cons turn (tandem-view-render--first-line
                                     (or (plist-get user :text) "") 60))
                         out))))
             (tandem-view-state-by-turn tandem-view--state))
    (sort out (lambda (a b) (> (car a) (car b))))))

(defun tandem-view--header-line ()
  "Return the header line: project, title, engine and host, scope and turn state.
A remote session shows \"remote: HOST (WORKING-DIR)\": what the session
reply, `tandem-remote-attach' / `-detach' or the last `g' said."
  (let* ((scope (tandem-composer-scope))
         (session (tandem-view-state-session tandem-view--state))
         (running (tandem-view-state-running tandem-view--state))
         (remote (and session (tandem-remote-header-string session))))
    (concat " " (propertize "tandem" 'face 'bold) " · "
            (tandem-view--project-name) " · " (tandem-view--title)
            (if remote (concat " · " (propertize remote 'face 'tandem-view-remote)) "")
            (tandem-trust-header-string (tandem-view-state-info tandem-view--state))
            " · scope: "
            (if (eq scope 'chat) "chat"
              (propertize (format "directive %s · next: %s" (plist-get scope :directive)
                                  (plist-get scope :action))
                          'face 'tandem-composer-directive))
            (tandem-view-usage-header)
            (tandem-view-provider-header)
            (tandem-view-instructions-header)
            (if running (format " · turn %s running" (plist-get running :turn)) ""))))

(defun tandem-view--project-name ()
  "Return the project's directory name."
  (let ((info (tandem-view-state-info tandem-view--state)))
    (file-name-nondirectory
     (directory-file-name (or (plist-get info :active-cwd) (plist-get info :cwd) "?")))))

(defun tandem-view--title ()
  "Return the session title, or a short id when it has none."
  (let ((title (plist-get (tandem-view-state-info tandem-view--state) :title))
        (session (or (tandem-view-state-session tandem-view--state) "?")))
    (if (and title (not (string-empty-p title))) title
      (concat "session " (substring session 0 (min 8 (length session)))))))

(defun tandem-view--name-buffer ()
  "Name this session buffer after its project and title."
  (rename-buffer (format "*tandem: %s — %s*" (tandem-view--project-name) (tandem-view--title))
                 t))

(defun tandem-view-set-title (buffer title)
  "Show TITLE as the title of session BUFFER's session: header and buffer name."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (let ((info (tandem-view-state-info tandem-view--state)))
        (unless (equal (plist-get info :title) title)
          (setf (tandem-view-state-info tandem-view--state)
                (plist-put (copy-sequence info) :title title))
          (tandem-view--name-buffer)
          (force-mode-line-update))))))

;;;###autoload
(defun tandem-rename-session (title &optional session)
  "Give SESSION the title TITLE; the overview and the pickers show it.
SESSION defaults to this buffer's, else the project's.  A session is
named after its first request until you rename it."
  (interactive
   (let* ((session (tandem-project-session))
          (buffer (tandem-view-buffer session))
          (current (and buffer (with-current-buffer buffer
                                 (plist-get (tandem-view-state-info tandem-view--state)
                                            :title)))))
     (list (read-string (format-prompt "Title of this session"
                                       (and current (not (string-empty-p current)) current))
                        nil nil current)
           session)))
  (let* ((session (or session (tandem-project-session)))
         (reply (tandem-request "sessions/rename" (list :session session :title title))))
    (tandem-view-set-title (tandem-view-buffer session) (plist-get reply :title))
    (message "tandem: session titled %s" (plist-get reply :title))
    reply))

(defun tandem-view--forget ()
  "Drop this buffer from the registry and stop its timers."
  (let* ((st tandem-view--state)
         (session (tandem-view-state-session st))
         (conn (tandem-view--connection)))
    (tandem-view--unschedule)
    (when (tandem-view-state-clock st) (cancel-timer (tandem-view-state-clock st)))
    (when (eq (gethash session tandem-view--buffers) (current-buffer))
      (remhash session tandem-view--buffers)
      ;; The session's last buffer is gone: let the backend it follows stop
      ;; its agent processes and release the journal (it refuses while a
      ;; turn runs).
      (when (and session conn)
        (tandem-request-async "sessions/close" (list :session session)
                              #'ignore #'ignore conn)))))

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
          (setf (tandem-view-state-session tandem-view--state) id)
          (setq-local tandem-session id)))
      (tandem-view-install-hooks)
      (with-current-buffer buffer
        (setf (tandem-view-state-info tandem-view--state) info)
        ;; A session reply says where the session executes (the header's engine).
        (when (plist-member info :remote)
          (tandem-remote-remember id (plist-get info :remote)))
        (tandem-view--name-buffer)
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

;;;; Entry points

(defun tandem-view--on-activated (info)
  "Show the session buffer of INFO, a session made active by a command."
  (when (plist-get info :id) (tandem-view-show info)))

(defvar tandem-sessions-activated-functions)
(add-hook 'tandem-sessions-activated-functions #'tandem-view--on-activated)

(provide 'tandem-view)
;;; tandem-view.el ends here
