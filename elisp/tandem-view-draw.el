;;; tandem-view-draw.el --- Drawing blocks and rows of the tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Edits of the session buffer below the full rendering: inserting and
;; re-rendering blocks (in a scratch buffer for runs of them), making
;; their text read-only transcript with the transcript's keymaps (defined
;; here), and the top row and the progress row.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-composer)
(require 'tandem-view-state)
(require 'tandem-view-render)
(require 'tandem-view-kinds)
(require 'tandem-view-model)

;; The top row's button pages in older turns (tandem-view-live.el, above).
(declare-function tandem-view-load-older "tandem-view-live" (&optional all))
;; A turn that no longer renders to its text waits for the next frame (above).
(declare-function tandem-view--mark "tandem-view-frame" (block))
;; A placeholder a command acts on is drawn first (tandem-view-fill.el, above).
(declare-function tandem-view-fill-draw "tandem-view-fill" (blocks))

;;;; Keymaps of the transcript

;; The commands are defined in the files above this one (they draw
;; with it), so they are named here by symbol.
(defvar tandem-view-transcript-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") 'tandem-view-toggle-fold)
    (define-key map (kbd "<tab>") 'tandem-view-toggle-fold)
    (define-key map "g" 'tandem-view-refresh)
    (define-key map "n" 'tandem-view-next-turn)
    (define-key map "p" 'tandem-view-previous-turn)
    (define-key map "o" 'tandem-view-load-older)
    (define-key map "E" #'tandem-compact-show-old-turns)
    (define-key map "q" #'quit-window)
    map)
  "Keys on rendered text (the transcript); the composer has ordinary keys.")

;; A mention chip keeps the transcript's keys beside its own RET.
(set-keymap-parent tandem-view-mention-map tandem-view-transcript-map)

(defvar tandem-view-interaction-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tandem-view-transcript-map)
    (define-key map (kbd "RET") #'push-button)
    (define-key map [mouse-2] #'push-button)
    (define-key map [follow-link] 'mouse-face)
    map)
  "Parent keymap of a pending interaction row.
Each row adds the keys of its answers; they act only while point is on it.")

;;;; Blocks

(defun tandem-view--block-end (block)
  "Return the position where BLOCK's text ends."
  (let ((start (marker-position (tandem-view-block-start block))))
    (next-single-property-change start 'tandem-block nil
                                 (marker-position (tandem-view-state-tail tandem-view--state)))))
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
  (tandem-view-block-live-p block))

(defvar tandem-view--undrawn nil
  "Nil, or a table of the blocks to insert as placeholders (tandem-view-fill.el).
Bound while a long load of older turns is inserted.")

(defconst tandem-view--bulk-gc-blocks 200
  "Above this many blocks one insertion collects garbage less often.")

(defun tandem-view--insert-blocks (blocks boundary &optional defer)
  "Insert BLOCKS (in order) before the marker BOUNDARY.
Runs of blocks are rendered in a scratch buffer and inserted with one
edit: thousands of small insertions would each pay for every marker of
the buffer.  A block with streamed text is rendered in place.  With
DEFER, the runs' Markdown bodies are scanned when first displayed
\(tandem-view-lazy.el), not now."
  (let ((state tandem-view--state)
        (runs nil) (run nil)
        ;; Thousands of blocks allocate tens of MB; at the default
        ;; percentage each of ~25 collections marks the whole (large)
        ;; heap, most of the time of loading a long history.  Collect in
        ;; proportion to the heap instead, for this call only.
        (gc-cons-percentage (if (> (length blocks) tandem-view--bulk-gc-blocks)
                                (max gc-cons-percentage 0.5)
                              gc-cons-percentage)))
    (dolist (b blocks)
      (if (not (tandem-view--live-p b))
          (push b run)
        (when run (push (cons 'bulk (nreverse run)) runs) (setq run nil))
        (push (cons 'one b) runs)))
    (when run (push (cons 'bulk (nreverse run)) runs))
    (dolist (r (nreverse runs))
      (if (eq (car r) 'one)
          (tandem-view--insert-before boundary (lambda () (tandem-view--insert-block (cdr r))))
        (let* ((base (marker-position boundary))
               (offsets (tandem-view--render-run (cdr r) state defer boundary)))
          (dolist (o offsets)
            (let ((b (car o)) (pos (+ base (cdr o))))
              (if (tandem-view-block-start b)
                  (set-marker (tandem-view-block-start b) pos)
                (setf (tandem-view-block-start b) (copy-marker pos))))))))))

(defun tandem-view--render-run (blocks state defer boundary)
  "Render BLOCKS, a run of a view whose state is STATE, before the marker BOUNDARY.
The run is rendered in a scratch buffer and copied in with one edit,
BOUNDARY moved after it.  Return a list of (BLOCK . OFFSET), the offset
of each block's text from where the run starts.  With DEFER, settled
turns go in undecorated and other bodies unscanned."
  (let ((offsets nil) (plain nil) (pending nil))
    (unwind-protect
        (with-temp-buffer
          ;; The same state: folds, session, blocks and newest turn as there.
          (setq-local tandem-view--state state)
          (setq-local tandem-view-render-lazy t)
          (let ((tandem-view-lazy-defer defer) (inhibit-read-only t))
            (dolist (b blocks)
              (if (and defer (tandem-view--undecorated-p b))
                  ;; Consecutive settled turns are rendered one after the
                  ;; other into the scratch buffer, then copied in at once.
                  (progn
                    (unless plain (setq plain (tandem-view--scratch state)))
                    (push (cons b (with-current-buffer plain (point))) pending)
                    (if (and tandem-view--undrawn (gethash b tandem-view--undrawn))
                        (tandem-view--render-placeholder b plain)
                      (tandem-view--render-plain b plain)))
                (when pending
                  (setq offsets (tandem-view--copy-plain pending plain offsets) pending nil))
                (let ((start (point)))
                  (tandem-view-render-block b (lambda (part) (tandem-view--folded-p b part)))
                  (tandem-view--protect start (point) b)
                  (push (cons b (1- start)) offsets))))
            (when pending
              (setq offsets (tandem-view--copy-plain pending plain offsets))))
          ;; Straight from buffer to buffer: no string of the whole run.
          (let ((scratch (current-buffer)))
            (with-current-buffer (marker-buffer boundary)
              (goto-char boundary)
              (insert-buffer-substring scratch)
              (set-marker boundary (point))))
          offsets)
      (when plain (kill-buffer plain)))))

(defun tandem-view--copy-plain (pending plain offsets)
  "Insert the text of the scratch buffer PLAIN at point, undecorated; empty PLAIN.
PENDING lists (BLOCK . POSITION IN PLAIN) of the blocks rendered there,
newest first.  Return OFFSETS with (BLOCK . OFFSET) of each pushed on."
  (let* ((base (1- (point)))
         (end (+ base (with-current-buffer plain (point-max)))))
    (insert-buffer-substring-no-properties plain)
    (with-current-buffer plain (erase-buffer))
    (dolist (p pending)
      (let ((start (+ base (cdr p))))
        (tandem-view--undecorate start end (car p)
                                 (and tandem-view--undrawn
                                      (gethash (car p) tandem-view--undrawn)))
        (setq end start)))
    (goto-char (point-max))
    (dolist (p (nreverse pending) offsets)
      (push (cons (car p) (+ base (cdr p) -1)) offsets))))

(defun tandem-view--scratch (state)
  "Return a new hidden buffer to render blocks of the view whose state is STATE."
  (let ((buffer (generate-new-buffer " *tandem-view-plain*" t)))
    (with-current-buffer buffer
      (setq-local tandem-view--state state)
      (setq-local tandem-view-render-lazy t))
    buffer))

(defun tandem-view--render-plain (block buffer)
  "Render BLOCK as text only at the end of the scratch BUFFER.
The buffer holds no text properties, so rendering into it builds no
interval tree: the text costs its characters only."
  (with-current-buffer buffer
    (goto-char (point-max))
    (let ((tandem-view-render-plain t))
      (tandem-view-render-block block (lambda (part) (tandem-view--folded-p block part))))))

(defun tandem-view--render-placeholder (block buffer)
  "Insert BLOCK's one-line placeholder at the end of the scratch BUFFER."
  (with-current-buffer buffer
    (goto-char (point-max))
    (let ((turn (tandem-view-block-turn block)))
      (insert "▸ Turn " (if (integerp turn) (number-to-string turn) (format "%s" turn))
              " …\n\n"))))

;;;; Turns inserted undecorated

;; Loading a whole history inserts thousands of settled turns at once.
;; Their text goes in with the properties commands need and no more (the
;; block, the header line's part, read-only, the keymap): one or two
;; intervals instead of a dozen, each of which every later copy and every
;; collection pays for.  When jit-lock first shows a part of one,
;; `tandem-view--finish-region' renders the turn again and gives its text
;; the properties of that rendering: the reader sees the eager rendering.

(defun tandem-view--undecorated-p (block)
  "Return non-nil when BLOCK may be inserted undecorated.
A settled turn only: no streamed text, no question waiting for its buttons."
  (and (tandem-view-block-turn block) (tandem-view-block-end-entry block)
       (not (tandem-view--live-p block))))

(defun tandem-view--undecorate (start end block &optional undrawn)
  "Mark START..END, BLOCK rendered as plain text, as BLOCK's and undecorated.
The header line gets its part and header marks (navigation, folding);
whatever properties a renderer added regardless are dropped (the text
is not fontified either): they all come when it is finished.  With
UNDRAWN the text is BLOCK's placeholder (tandem-view-fill.el)."
  ;; With what `tandem-view--protect' adds, in the one plist of the block.
  (set-text-properties start end (list 'tandem-block block 'tandem-undecorated t
                                       'fontified nil 'read-only t
                                       'front-sticky '(read-only)
                                       'keymap tandem-view-transcript-map
                                       'tandem-undrawn undrawn))
  (add-text-properties start (min end (1+ (progn (goto-char start) (line-end-position))))
                       (list 'tandem-part 'turn 'tandem-header t))
  (goto-char end))

(defun tandem-view--finish (block)
  "Give BLOCK's undecorated text the properties of its full rendering now.
When the text no longer is what BLOCK renders to (its fold state or the
newest turn changed meanwhile), BLOCK is re-rendered at the next frame."
  (if (get-text-property (tandem-view-block-start block) 'tandem-undrawn)
      ;; A placeholder (tandem-view-fill.el): drawn by the next frame, as
      ;; this runs inside redisplay, where the text had better not change.
      (let ((start (marker-position (tandem-view-block-start block))) (inhibit-read-only t))
        (with-silent-modifications
          (remove-list-of-text-properties start (tandem-view--block-end block)
                                          '(tandem-undecorated)))
        (tandem-view--mark block))
    (tandem-view--finish-drawn block)))

(defun tandem-view--finish-drawn (block)
  "Finish BLOCK, whose undecorated text is drawn (`tandem-view--finish')."
  (let* ((start (marker-position (tandem-view-block-start block)))
         (end (tandem-view--block-end block))
         (state tandem-view--state)
         (inhibit-read-only t))
    (with-silent-modifications
      (remove-list-of-text-properties start end '(tandem-undecorated)))
    (with-temp-buffer
      (setq-local tandem-view--state state)
      (setq-local tandem-view-render-lazy t)
      (tandem-view-render-block block (lambda (part) (tandem-view--folded-p block part)))
      (tandem-view--protect (point-min) (point-max) block)
      (let ((scratch (current-buffer)))
        (if (not (= (buffer-size) (- end start)))
            (with-current-buffer (marker-buffer (tandem-view-block-start block))
              (tandem-view--mark block))
          (with-current-buffer (marker-buffer (tandem-view-block-start block))
            (if (not (equal (buffer-substring-no-properties start end)
                            (with-current-buffer scratch (buffer-string))))
                (tandem-view--mark block)
              (with-silent-modifications
                (let ((pos 1) (size (1+ (- end start))))
                  (while (< pos size)
                    (let ((next (with-current-buffer scratch
                                  (next-property-change pos nil size)))
                          (props (with-current-buffer scratch (text-properties-at pos))))
                      (set-text-properties (+ start pos -1) (+ start next -1) props)
                      (setq pos next))))))))))))

(defun tandem-view--finish-region (beg end)
  "Finish every undecorated turn that overlaps BEG..END (`tandem-view--finish').
A jit-lock function, run before the others: they then fontify the
finished text as they would have at insertion."
  (let ((pos (if (get-text-property beg 'tandem-undecorated) beg
               (next-single-property-change beg 'tandem-undecorated nil end))))
    (while (and pos (< pos end))
      (let ((block (get-text-property pos 'tandem-block)))
        (if (and (tandem-view-block-p block) (markerp (tandem-view-block-start block)))
            (tandem-view--finish block)
          ;; Not a block's text (never made so): nothing to finish it from.
          (with-silent-modifications
            (let ((inhibit-read-only t))
              (remove-list-of-text-properties
               pos (next-single-property-change pos 'tandem-undecorated nil (point-max))
               '(tandem-undecorated)))))
        (setq pos (next-single-property-change pos 'tandem-undecorated nil end)))))
  nil)

(defun tandem-view--finish-at (pos)
  "Finish the undecorated turn at POS (if any) for a command to act on."
  (when (get-text-property pos 'tandem-undrawn)
    (tandem-view-fill-draw (list (get-text-property pos 'tandem-block))))
  (when (get-text-property pos 'tandem-undecorated)
    (tandem-view--finish (get-text-property pos 'tandem-block))))

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
                           (cdr (memq block (tandem-view-state-blocks tandem-view--state)))))
         (boundary (if next (tandem-view-block-start next)
                     (tandem-view-state-tail tandem-view--state))))
    (delete-region start end)
    (tandem-view--insert-before boundary (lambda () (tandem-view--insert-block block)))))

(defun tandem-view--remove-block (block)
  "Delete BLOCK's text and drop it from the model."
  (when (tandem-view-block-start block)
    (delete-region (tandem-view-block-start block) (tandem-view--block-end block))
    (set-marker (tandem-view-block-start block) nil))
  (let ((st tandem-view--state))
    (setf (tandem-view-state-blocks st) (delq block (tandem-view-state-blocks st))
          (tandem-view-state-newest st) nil)))

(defun tandem-view--older-row ()
  "Insert the top row, a button for older history or the start marker."
  (let ((start (point))
        (first-seq (tandem-view-state-first-seq tandem-view--state)))
    (if (and first-seq (> first-seq 1))
        (progn
          (insert-text-button (format "▲ Load older turns (o) — entries before #%d" first-seq)
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
         (first (car (tandem-view-state-blocks tandem-view--state)))
         (boundary (if first (tandem-view-block-start first)
                     (tandem-view-state-tail tandem-view--state))))
    (delete-region (point-min) end)
    (tandem-view--insert-before boundary #'tandem-view--older-row)))

(defun tandem-view--progress-text ()
  "Return the progress row's text."
  (let ((lost (tandem-view-state-lost tandem-view--state))
        (running (tandem-view-state-running tandem-view--state)))
    (cond
     (lost
      (concat (propertize (format "⚠ The tandem backend stopped during turn %s · g reloads \
the session from its journal" lost)
                          'font-lock-face 'tandem-view-error)
              "\n\n"))
     ((not running) "\n")
     (t
      (let ((elapsed (tandem-view--duration (- (float-time) (plist-get running :since))))
            (waiting (plist-get running :waiting)))
        (concat
         (propertize
          (if waiting
              (format "⏸ Turn %s · waiting for you: %s · %s · %s"
                      (plist-get running :turn) waiting elapsed
                      (substitute-command-keys
                       "\\<tandem-view-mode-map>\\[tandem-view-goto-question] goes to \
the question, \\[tandem-answer] answers it from anywhere"))
            (format "⏵ Turn %s running · %s · C-c C-k cancels it, C-c C-c queues a message"
                    (plist-get running :turn) elapsed))
          'font-lock-face (if waiting 'tandem-view-interaction 'tandem-view-muted))
         "\n\n"))))))

(defun tandem-view--duration (seconds)
  "Format SECONDS as 12s or 3m05s."
  (let ((s (floor seconds)))
    (if (< s 60) (format "%ds" s) (format "%dm%02ds" (/ s 60) (% s 60)))))

(defun tandem-view--redraw-progress ()
  "Redraw the progress row between the transcript and the composer."
  (delete-region (tandem-view-state-tail tandem-view--state) tandem-composer--start)
  (tandem-view--insert-before
   tandem-composer--start
   #'tandem-view--insert-progress))

(defvar tandem-view-progress-rows-functions nil
  "Functions returning rows to show under the progress row.
Each is called in a session buffer and returns a string, maybe empty,
e.g. the queued messages.  Text with a `keymap' property keeps it; the
rest gets the transcript keymap.")

(defun tandem-view--insert-progress ()
  "Insert the progress row at point, then the rows of other features.
Those are what `tandem-view-progress-rows-functions' return."
  (let ((start (point)))
    (insert (tandem-view--progress-text))
    (dolist (fn tandem-view-progress-rows-functions)
      (insert (funcall fn)))
    (add-text-properties start (point) (list 'read-only t 'tandem-progress t
                                             'front-sticky '(read-only)))
    (let ((pos start) (end (point)))
      (while (< pos end)
        (let ((next (next-single-property-change pos 'keymap nil end)))
          (unless (get-text-property pos 'keymap)
            (put-text-property pos next 'keymap tandem-view-transcript-map))
          (setq pos next))))))

(defun tandem-view--release (block)
  "Detach BLOCK's markers from the buffer (they slow every edit otherwise)."
  (dolist (m (list (tandem-view-block-start block) (tandem-view-block-text-marker block)
                   (tandem-view-block-reasoning-marker block)))
    (when (markerp m) (set-marker m nil))))

(provide 'tandem-view-draw)
;;; tandem-view-draw.el ends here
