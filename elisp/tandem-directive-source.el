;;; tandem-directive-source.el --- Directive anchors in source buffers  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Each directive shows in its file as a tinted overlay with a one-line
;; lifecycle label above it.  Edits inside the region resize the overlay;
;; deleting the whole region detaches the directive and leaves one compact
;; line at the spot.  A file that is gone marks its directives
;; source-missing; when it comes back, one exact unique match of the anchor
;; text reattaches them, otherwise they wait for `tandem-directive-reattach'.
;; Saving a buffer tells the backend where its anchors are now.
;;
;; Once the directive has a result (the backend's one-line `:result' of its
;; latest exchange: the answer's first line, "N files changed", or the
;; failure), a second line shows it with the menu keys of its follow-ups.
;; A click on that line, or RET with point at the region's start (just
;; under it), shows the exchange's turn in the session buffer.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'tandem-client)

(require 'tandem-core)
(declare-function tandem-directive-list "tandem-directive" (&optional root archived))
(declare-function tandem-directive-menu "tandem-directive-menu" (&optional id))
(declare-function tandem-directive--region-lines "tandem-directive" (beg end))
(declare-function tandem-directive-record "tandem-directive" (id &optional root))
(declare-function tandem-directive--root "tandem-directive" (&optional root))
(declare-function tandem-directive-id-at-point "tandem-directive" (&optional ask))
(declare-function tandem-directive-session-buffer "tandem-directive"
                  (session root &optional no-select))
(declare-function tandem-view-goto-turn "tandem-view-commands" (turn))
(defvar tandem-directive-id-functions)
(defvar tandem-directive-changed-functions)

(defface tandem-directive-ready
  '((((background dark)) :background "#1f2b3d" :extend t)
    (t :background "#eaf1fb" :extend t))
  "Tint of a Ready directive's region."
  :group 'tandem-directive)

(defface tandem-directive-discussed
  '((((background dark)) :background "#38321c" :extend t)
    (t :background "#fbf6e3" :extend t))
  "Tint of a Discussed directive's region."
  :group 'tandem-directive)

(defface tandem-directive-implemented
  '((((background dark)) :background "#1e3524" :extend t)
    (t :background "#e9f7ec" :extend t))
  "Tint of an Implemented directive's region."
  :group 'tandem-directive)

(defface tandem-directive-failed
  '((((background dark)) :background "#3d1f22" :extend t)
    (t :background "#fbeaea" :extend t))
  "Tint of a Failed directive's region."
  :group 'tandem-directive)

(defface tandem-directive-label
  '((t :inherit font-lock-comment-face :weight bold))
  "Face of a directive's one-line label."
  :group 'tandem-directive)

(defface tandem-directive-result
  '((t :inherit font-lock-doc-face))
  "Face of a directive's one-line result, under its label."
  :group 'tandem-directive)

(defface tandem-directive-result-failed
  '((t :inherit error))
  "Face of the one-line result of a failed or aborted exchange."
  :group 'tandem-directive)

(defcustom tandem-directive-ret-shows-result t
  "Non-nil: RET at the start of a directive's region shows its result.
The start of the region is just under the result line (point can never
be on the line itself: it is display text).  Elsewhere in the region RET
is the buffer's own; with nil it is everywhere, and a click on the line
or \`s' in `tandem-directive-menu' shows the result."
  :type 'boolean
  :group 'tandem-directive)

(defconst tandem-directive-followups
  '(("implement-this" "t" "implement this") ("request-changes" "c" "request changes")
    ("retry" "y" "retry") ("discuss-result" "r" "discuss result")
    ("discuss" "d" "discuss") ("implement" "i" "implement"))
  "The follow-ups a result line may offer: (ACTION KEY WORDS).
KEY is ACTION's key in `tandem-directive-menu'.")

(defconst tandem-directive--followup-order
  '(("discussion" "implement-this" "discuss" "implement")
    ("attempt" "retry" "request-changes" "discuss-result" "implement-this" "discuss"))
  "By the kind of the result, the follow-ups most wanted first.")

(defconst tandem-directive--followups-shown 2
  "How many follow-ups a result line names.")

(defun tandem-directive--result-overlay (pos)
  "Return the directive overlay with a result whose start is POS, or nil."
  (cl-find-if (lambda (ov) (and (overlay-get ov 'tandem-result)
                                (eql (overlay-start ov) pos)))
              (overlays-at pos)))

(defun tandem-directive-show-result (id &optional root)
  "Show directive ID's result: its latest exchange's turn in the session buffer.
The session buffer is selected with that turn at the top of its window.
ROOT is the project root (default: the current one).  Return the buffer."
  (interactive (list (tandem-directive-id-at-point t)))
  (let* ((root (tandem-directive--root root))
         (result (plist-get (tandem-directive-record id root) :result)))
    (unless (consp result)
      (user-error "%s has no result yet (C-c C-d for its actions)" id))
    (let ((buffer (tandem-directive-session-buffer (plist-get result :session) root)))
      (when buffer
        (with-current-buffer buffer
          (unless (tandem-view-goto-turn (plist-get result :turn))
            (message "Turn %s of the session is not shown (rewound?)"
                     (plist-get result :turn)))))
      buffer)))

(defun tandem-directive-show-result-here (&optional event)
  "Show the result of the directive whose result line is at point.
With a mouse EVENT, the one clicked on.  The exchange's turn is shown in
the session buffer."
  (interactive (list last-nonmenu-event))
  (let* ((pos (if (mouse-event-p event) (posn-point (event-start event)) (point)))
         (buffer (if (mouse-event-p event) (window-buffer (posn-window (event-start event)))
                   (current-buffer)))
         (ov (with-current-buffer buffer
               (or (tandem-directive--result-overlay pos)
                   (cl-find-if (lambda (o) (overlay-get o 'tandem-result))
                               (overlays-at pos))))))
    (unless ov (user-error "No directive result here"))
    (tandem-directive-show-result (overlay-get ov 'tandem-directive)
                                  (overlay-get ov 'tandem-root))))

;; Bound on the result line only: M-x offers `tandem-directive-show-result'.
(function-put 'tandem-directive-show-result-here 'completion-predicate #'ignore)

(defvar tandem-directive-result-map
  (let ((map (make-sparse-keymap)))
    (define-key map [mouse-1] #'tandem-directive-show-result-here)
    (define-key map [mouse-2] #'tandem-directive-show-result-here)
    map)
  "Keys on a directive's result line (clicks: the line is display text).")

(defvar tandem-directive-overlay-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-d") #'tandem-directive-menu)
    ;; RET shows the result only at the region's start, under the result
    ;; line; elsewhere in the region it is the buffer's own RET.
    (define-key map (kbd "RET")
                `(menu-item "" tandem-directive-show-result-here
                            :filter ,(lambda (command)
                                       (and tandem-directive-ret-shows-result
                                            (tandem-directive--result-overlay (point))
                                            command))))
    map)
  "Keys on a directive's region.")

(defvar-local tandem-directive--overlays nil
  "This buffer's directive overlays.")

(defun tandem-directive-state-label (row)
  "Return the lifecycle label of directive ROW (a list row or record plist)."
  (let ((state (or (plist-get row :state) "ready")))
    (concat (capitalize state)
            (if (plist-get row :request-changed) " (request changed)" ""))))

(defun tandem-directive--face (row)
  "Return the tint face of ROW's lifecycle state."
  (pcase (plist-get row :state)
    ("discussed" 'tandem-directive-discussed)
    ("implemented" 'tandem-directive-implemented)
    ("failed" 'tandem-directive-failed)
    (_ 'tandem-directive-ready)))

(defun tandem-directive--first-line (text width)
  "Return TEXT's first line cut to WIDTH characters."
  (truncate-string-to-width (car (split-string (or text "") "\n")) width nil nil "…"))

(defun tandem-directive--followups (row)
  "Return the follow-ups ROW's actions allow, as a string of menu keys and words."
  (let* ((actions (plist-get row :actions))
         (kind (plist-get (plist-get row :result) :kind))
         (again (equal kind "discussion"))
         (wanted (cl-remove-if-not (lambda (a) (member a actions))
                                   (cdr (assoc kind tandem-directive--followup-order))))
         (shown (seq-take (mapcar (lambda (a) (assoc a tandem-directive-followups)) wanted)
                          tandem-directive--followups-shown)))
    (mapconcat (lambda (f)
                 (format "%s %s" (nth 1 f)
                         (if (and again (equal (car f) "discuss")) "discuss again" (nth 2 f))))
               shown ", ")))

(defun tandem-directive--result-line (row)
  "Return the result line of ROW (with its keys), or \"\" before any result."
  (let ((result (plist-get row :result)))
    (if (not (consp result)) ""
      (let ((followups (tandem-directive--followups row))
            (face (if (equal (plist-get result :outcome) "succeeded")
                      'tandem-directive-result 'tandem-directive-result-failed)))
        (concat
         (propertize "  ↳ " 'face 'tandem-directive-label)
         (propertize (or (plist-get result :text) "") 'face face)
         (propertize (concat "  — RET: show"
                             (if (string-empty-p followups) ""
                               (concat " · C-c C-d " followups)))
                     'face 'tandem-directive-label)
         "\n")))))

(defun tandem-directive--label (row detached)
  "Return the label line of ROW; DETACHED gives the compact detached form.
An attached directive with a result has a second line: the result."
  (if detached
      (propertize (format "◇ %s detached — %s  (M-x tandem-directive-reattach)\n"
                          (plist-get row :id)
                          (tandem-directive--first-line (plist-get row :request) 50))
                  'face 'tandem-directive-label)
    (let ((line (tandem-directive--result-line row)))
      (unless (string-empty-p line)
        (add-text-properties 0 (length line)
                             (list 'keymap tandem-directive-result-map 'mouse-face 'highlight
                                   'help-echo "mouse-1 or RET: show the result in the \
session buffer")
                             line))
      (concat (propertize (format "◆ %s · %s — %s\n" (plist-get row :id)
                                  (tandem-directive-state-label row)
                                  (tandem-directive--first-line (plist-get row :request) 60))
                          'face 'tandem-directive-label)
              line))))

(defun tandem-directive--locate (row)
  "Return (BEG . END) of ROW's anchor in the current buffer, or nil."
  (let ((text (plist-get row :anchor-text))
        (start (plist-get row :start-line))
        (end (plist-get row :end-line))
        (case-fold-search nil))
    (save-excursion
      (save-restriction
        (widen)
        (or (and (stringp text) (not (string-empty-p text))
                 (progn (goto-char (point-min)) (search-forward text nil t))
                 (let ((found (cons (match-beginning 0) (match-end 0))))
                   (unless (search-forward text nil t) found)))
            (and start (<= start (line-number-at-pos (point-max)))
                 (progn (goto-char (point-min)) (forward-line (1- start))
                        (let ((beg (point)))
                          (forward-line (1+ (- end start)))
                          (cons beg (point))))))))))

(defun tandem-directive--overlay (id)
  "Return this buffer's overlay of directive ID, or nil."
  (cl-find-if (lambda (ov) (equal (overlay-get ov 'tandem-directive) id))
              tandem-directive--overlays))

(defun tandem-directive--style (ov row)
  "Give overlay OV the face and label of ROW."
  (let ((detached (overlay-get ov 'tandem-detached)))
    (overlay-put ov 'tandem-row row)
    (overlay-put ov 'tandem-result (and (not detached) (consp (plist-get row :result))
                                        (plist-get row :result)))
    (overlay-put ov 'face (unless detached (tandem-directive--face row)))
    (overlay-put ov 'before-string (tandem-directive--label row detached))
    (overlay-put ov 'help-echo (format "%s: %s (C-c C-d for actions)" (plist-get row :id)
                                       (plist-get row :request)))))

(defun tandem-directive--place (row root)
  "Show directive ROW of ROOT in the current buffer (update it when shown)."
  (let ((ov (tandem-directive--overlay (plist-get row :id))))
    (unless (or ov (equal (plist-get row :anchor-status) "source-missing"))
      (let* ((detached (equal (plist-get row :anchor-status) "detached"))
             (where (tandem-directive--locate row)))
        (when where
          (setq ov (if detached
                       (make-overlay (car where) (car where))
                     (make-overlay (car where) (cdr where) nil nil nil)))
          (overlay-put ov 'tandem-directive (plist-get row :id))
          (overlay-put ov 'tandem-root root)
          (overlay-put ov 'tandem-detached detached)
          (overlay-put ov 'keymap tandem-directive-overlay-map)
          (overlay-put ov 'modification-hooks (list #'tandem-directive--modified))
          (overlay-put ov 'tandem-anchor (list (plist-get row :start-line)
                                               (plist-get row :end-line)
                                               (plist-get row :anchor-text)))
          (push ov tandem-directive--overlays)
          (add-hook 'after-save-hook #'tandem-directive--after-save nil t))))
    (when ov (tandem-directive--style ov row))))

(defun tandem-directive--send-anchor (ov status)
  "Tell the backend where overlay OV's anchor is now, with STATUS (async)."
  (let* ((beg (overlay-start ov)) (end (overlay-end ov))
         (lines (if (< beg end) (tandem-directive--region-lines beg end)
                  (let ((l (line-number-at-pos beg t)))
                    (list l l (nth 2 (overlay-get ov 'tandem-anchor)))))))
    (overlay-put ov 'tandem-anchor lines)
    (tandem-request-async "directives/anchor"
                          (list :root (overlay-get ov 'tandem-root)
                                :id (overlay-get ov 'tandem-directive)
                                :path (buffer-file-name) :start-line (nth 0 lines)
                                :end-line (nth 1 lines) :text (nth 2 lines) :status status)
                          #'ignore)))

(defun tandem-directive--modified (ov after _beg _end &optional _len)
  "Detach overlay OV when an edit (AFTER it) left its region empty."
  (when (and after (overlay-buffer ov) (not (overlay-get ov 'tandem-detached))
             (= (overlay-start ov) (overlay-end ov)))
    (overlay-put ov 'tandem-detached t)
    (tandem-directive--style ov (overlay-get ov 'tandem-row))
    (when (buffer-file-name)
      (tandem-directive--send-anchor ov "detached"))))

(defun tandem-directive--after-save ()
  "Record the anchors of this buffer's directives that moved or changed."
  (dolist (ov tandem-directive--overlays)
    (when (and (overlay-buffer ov) (not (overlay-get ov 'tandem-detached))
               (< (overlay-start ov) (overlay-end ov))
               (not (equal (tandem-directive--region-lines (overlay-start ov) (overlay-end ov))
                           (overlay-get ov 'tandem-anchor))))
      (tandem-directive--send-anchor ov "attached"))))

(defun tandem-directive--backend-live-p ()
  "Return non-nil when a backend is running (never start one from a hook)."
  (and tandem--connection (tandem-connection-live-p tandem--connection)))

(defun tandem-directive-sync (&optional root rows)
  "Mark ROOT's directives whose file is lost source-missing; reattach others.
A directive whose file came back is reattached where its text occurs once.
ROWS are ROOT's directive rows when already fetched.  Return the rows after."
  (let* ((root (directory-file-name (expand-file-name (or root (tandem-project-root)))))
         (rows (or rows (tandem-directive-list root)))
         (changed nil))
    (dolist (row rows)
      (let ((exists (file-exists-p (expand-file-name (plist-get row :path) root)))
            (status (plist-get row :anchor-status)))
        (cond ((and (not exists) (not (equal status "source-missing")))
               (tandem-request "directives/anchor"
                               (list :root root :id (plist-get row :id)
                                     :path (plist-get row :path)
                                     :start-line (plist-get row :start-line)
                                     :end-line (plist-get row :end-line)
                                     :text (plist-get row :anchor-text)
                                     :status "source-missing"))
               (setq changed t))
              ((and exists (equal status "source-missing"))
               (condition-case err
                   (progn (tandem-request "directives/reattach"
                                          (list :root root :id (plist-get row :id)))
                          (setq changed t))
                 (tandem-error
                  (message "%s waits for M-x tandem-directive-reattach: %s"
                           (plist-get row :id) (error-message-string err))))))))
    (if changed (tandem-directive-list root) rows)))

(defun tandem-directive-overlays-refresh (&optional root)
  "Refresh the directive overlays of every live file buffer under ROOT.
Without ROOT, refresh every root that has overlays now."
  (let ((roots (if root (list (directory-file-name (expand-file-name root)))
                 (delete-dups
                  (cl-loop for b in (buffer-list)
                           append (mapcar (lambda (ov) (overlay-get ov 'tandem-root))
                                          (buffer-local-value 'tandem-directive--overlays b)))))))
    (dolist (r roots)
      (let ((rows (tandem-directive-sync r)))
        (dolist (b (buffer-list))
          (let ((file (buffer-file-name b)))
            (when (and file (file-in-directory-p file r))
              (with-current-buffer b
                (tandem-directive--show-rows r rows)))))))))

(defun tandem-directive--show-rows (root rows)
  "Show ROWS of ROOT anchored in the current buffer; drop other overlays."
  (let* ((rel (file-relative-name (buffer-file-name) root))
         (mine (cl-remove-if-not (lambda (r) (equal (plist-get r :path) rel)) rows))
         (ids (mapcar (lambda (r) (plist-get r :id)) mine)))
    (dolist (ov tandem-directive--overlays)
      (unless (and (overlay-buffer ov) (member (overlay-get ov 'tandem-directive) ids))
        (delete-overlay ov)))
    (setq tandem-directive--overlays (cl-remove-if-not #'overlay-buffer
                                                        tandem-directive--overlays))
    (dolist (row mine) (tandem-directive--place row root))))

(defun tandem-directive--find-file ()
  "Show the directives of a file just visited, when a backend is up."
  (when (and buffer-file-name (tandem-directive--backend-live-p))
    (condition-case nil
        (let* ((root (directory-file-name (tandem-project-root)))
               (rows (tandem-directive-list root)))
          (when rows
            (tandem-directive--show-rows root (tandem-directive-sync root rows))))
      (tandem-error nil))))

(add-hook 'find-file-hook #'tandem-directive--find-file)

(defun tandem-directive--id-in-overlay ()
  "Return the id of the directive overlay at point, or nil."
  (cl-some (lambda (ov) (overlay-get ov 'tandem-directive))
           (append (overlays-at (point))
                   (overlays-in (line-beginning-position) (line-end-position)))))

(add-hook 'tandem-directive-id-functions #'tandem-directive--id-in-overlay)

(defun tandem-directive--refresh-soon ()
  "Refresh overlays after the current command (never inside a process filter)."
  (run-at-time 0 nil (lambda ()
                       (when (tandem-directive--backend-live-p)
                         (ignore-errors (tandem-directive-overlays-refresh))))))

(defun tandem-directive--on-event (event)
  "Refresh directive displays when a turn ended (EVENT from the backend)."
  (when (equal (plist-get event :kind) "turn-ended")
    (tandem-directive--refresh-soon)))

(add-hook 'tandem-event-functions #'tandem-directive--on-event)
(add-hook 'tandem-directive-changed-functions #'tandem-directive--refresh-soon)

(provide 'tandem-directive-source)
;;; tandem-directive-source.el ends here
