;;; tandem-review.el --- Review a turn's patch hunk by hunk  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-review-turn' shows the whole patch of one turn (every file it
;; changed: headers, hunks, binary and gap notes) in a `diff-mode' buffer
;; with `tandem-review-mode' on top:
;;
;;   k  revert the hunk at point   (backend `review/revert' with its index)
;;   K  revert the file at point   (after `tandem-review-confirm-function')
;;   e  ediff the file at point against its version before the turn
;;   g  reload
;;
;; The review buffer is selected when it opens, so its keys are at hand.
;; Reverts go through the backend against the files as they are now: one
;; refused when the file changed since the turn says why and changes
;; nothing; one done is journaled (a `revert' entry) and checkpointed,
;; and the review reloads.  The patch shown is the turn's and does not
;; change; the parts reverted so far (the backend lists them with the
;; patch) are dimmed and marked "↶ reverted".  A rewind that discards
;; the turn says so in the header line of its open reviews
;; (`tandem-review-rewound'), and its undo takes that back.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'diff-mode)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-read)

(declare-function ediff-buffers "ediff" (buffer-a buffer-b &optional startup-hooks job-name))

(defvar tandem-review-confirm-function #'y-or-n-p
  "Function asking before a whole file is reverted; called with a prompt.")

(defvar tandem-review-reverted-functions nil
  "Abnormal hook run with (SESSION ENTRY) after each revert the backend recorded.")

(defvar-local tandem-review--session nil "Session id of this review buffer.")
(defvar-local tandem-review--turn nil "Turn number of this review buffer.")
(defvar-local tandem-review--root nil "Workspace root the patch's paths are relative to.")
(defvar-local tandem-review--rewound nil
  "Non-nil when a rewind discarded this review's turn (its patch is history).")

(defvar tandem-review-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "k" #'tandem-review-revert-hunk)
    (define-key map "K" #'tandem-review-revert-file)
    (define-key map "e" #'tandem-review-ediff)
    (define-key map "g" #'tandem-review-reload)
    map)
  "Keys of `tandem-review-mode'.")

(defvar-local tandem-review--keys nil
  "Buffer-local `emulation-mode-map-alists' element of a review buffer.
A read-only `diff-mode' buffer's own minor mode binds k (kill hunk); an
emulation map outranks every minor mode, so the review's keys win there.")

(add-to-list 'emulation-mode-map-alists 'tandem-review--keys)

(define-minor-mode tandem-review-mode
  "Review one turn's patch.
\\<tandem-review-mode-map>\\[tandem-review-revert-hunk] reverts the hunk at point,
\\[tandem-review-revert-file] the file at point, \\[tandem-review-ediff] compares
the file with its version before the turn, \\[tandem-review-reload] reloads."
  :lighter " Review"
  (setq tandem-review--keys
        (and tandem-review-mode (list (cons 'tandem-review-mode tandem-review-mode-map)))))

;; Review buffers turn it on: M-x does not offer it.
(function-put 'tandem-review-mode 'completion-predicate #'ignore)

(defun tandem-review--buffer-name (session turn)
  "The review buffer's name for TURN of SESSION."
  (format "*tandem-review: %s turn %s*" (substring session 0 (min 8 (length session))) turn))

(defun tandem-review-insert-turn-patch (reply &optional notes)
  "Insert REPLY (a `sessions/turn-patch' reply) at point as a commented patch.
A header line names the turn, then NOTES (a function of the patch
plist that inserts lines of its own, or nil), the capture gaps and the
diff.  Both the review buffer and Rewind's turn patch show a turn so."
  (let* ((patch (plist-get reply :patch))
         (diff (or (plist-get patch :diff) "")))
    (insert (format "# Turn %s of session %s%s%s — %s\n" (plist-get reply :turn)
                    (plist-get reply :session)
                    (if (plist-get reply :running) " (running: changes so far)" "")
                    (if (plist-get reply :rewound) " (rewound)" "")
                    (plist-get patch :completeness)))
    (when notes (funcall notes patch))
    (tandem-review-insert-gaps patch)
    (insert (if (string-empty-p diff) "# No file changed.\n" diff))
    (when (plist-get patch :diff-truncated)
      (insert "\n# The diff is cut here (too long); the files after it are not shown.\n"))))

(defun tandem-review-insert-gaps (patch)
  "Insert a `# gap:' line for each capture gap of PATCH (a patch plist)."
  (dolist (g (plist-get patch :gaps))
    (insert (format "# gap: %s%s %s\n" (plist-get g :kind)
                    (if (plist-get g :path) (concat " " (plist-get g :path)) "")
                    (or (plist-get g :detail) "")))))

(defun tandem-review--insert (reply)
  "Insert the review of REPLY (a `sessions/turn-patch' reply) at point."
  (tandem-review-insert-turn-patch
   reply
   (lambda (patch)
     (insert "# k reverts the hunk at point, K the file, e compares it with before the turn\n")
     (dolist (f (plist-get patch :files))
       (when (plist-get f :binary)
         (insert (format "# binary: %s (revert it whole with K)\n" (plist-get f :path))))))))

(defun tandem-review--read-args ()
  "Return (SESSION TURN) for `tandem-review-turn' from where it is called.
SESSION is this review's or this buffer's (else the project's); TURN is
read with the turn at point as default, else the latest turn that changed files."
  (let ((session (or tandem-review--session (tandem-project-session))))
    (list session (tandem-read-turn session "Review turn"
                                    :at-point (or tandem-review--turn (tandem-read-turn-at-point))))))

;;;###autoload
;;;###autoload
(defun tandem-review-turn (session turn &optional no-select)
  "Review the patch of TURN of SESSION: revert hunks or files, compare them.
Interactively, this buffer's session (else the project's) and a turn read
with the turn at point, else the latest turn that changed files, as
default.  The review buffer is selected, unless NO-SELECT.  Return the buffer."
  (interactive (tandem-review--read-args))
  (unless (and (stringp session) (not (string-empty-p session)))
    (signal 'wrong-type-argument (list 'stringp session)))
  (unless (and (integerp turn) (> turn 0))
    (signal 'wrong-type-argument (list 'natnump turn)))
  (let* ((reply (tandem-request "sessions/turn-patch" (list :session session :turn turn) 120))
         (session (plist-get reply :session))
         (buffer (get-buffer-create (tandem-review--buffer-name session turn))))
    (tandem-review-show-patch
     buffer (plist-get reply :root) (buffer-local-value 'tandem-review--session buffer)
     (lambda () (tandem-review--insert reply))
     (lambda ()
       (setq tandem-review--session session
             tandem-review--turn turn
             tandem-review--root (plist-get reply :root)
             tandem-review--rewound (plist-get reply :rewound))
       (tandem-review--mark-reverted (plist-get reply :reverted))
       (tandem-review-mode 1)
       (tandem-review--banner))
     no-select)))

(defun tandem-review-show-patch (buffer root again insert setup &optional no-select)
  "Fill BUFFER with a patch review, display it and return it.
INSERT inserts the text; ROOT becomes the default directory; SETUP runs
after `diff-mode' is on (the buffer's variables and modes).  When AGAIN
\=(a reload) point keeps its line, else it goes to the first hunk.  The
buffer is selected unless NO-SELECT.  A turn's review and a parallel
session's landing are shown so."
  (with-current-buffer buffer
    (let ((inhibit-read-only t)
          (line (and again (line-number-at-pos))))
      (erase-buffer)
      (remove-overlays)
      (funcall insert)
      (setq default-directory (file-name-as-directory root))
      (diff-mode)
      (funcall setup)
      (setq buffer-read-only t)
      (goto-char (point-min))
      (if line (forward-line (1- line))
        (when (re-search-forward "^@@" nil t) (beginning-of-line)))))
  (if no-select (display-buffer buffer) (pop-to-buffer buffer))
  buffer)

(defun tandem-review-reload ()
  "Fetch this review's patch again; point stays on its line."
  (interactive nil tandem-review-mode)
  (tandem-review-turn tandem-review--session tandem-review--turn t))

;;;; Where point is

(defun tandem-review--unquote (name)
  "NAME from a git patch header, unquoted, without its a/ or b/ prefix."
  (let ((plain (if (string-prefix-p "\"" name)
                   (decode-coding-string (read name) 'utf-8)
                 name)))
    (if (string-match "\\`[ab]/" plain) (substring plain 2) plain)))

(defun tandem-review--file-at-point ()
  "Return (PATH START END) of the file section at point, or signal a user error.
PATH is the file's name after the turn (its old name when the turn deleted it)."
  (save-excursion
    (end-of-line)
    (unless (re-search-backward "^diff --git " nil t)
      (user-error "Point is not on a file of the patch"))
    (let* ((start (point))
           (end (save-excursion
                  (forward-line 1)
                  (if (re-search-forward "^diff --git " nil t) (match-beginning 0) (point-max))))
           (head-end (save-excursion
                       (if (re-search-forward "^@@" end t) (match-beginning 0) end)))
           (path nil))
      (dolist (re '("^rename to \\(.*\\)$" "^\\+\\+\\+ \\(b/.*\\|\".*\\)$"
                    "^--- \\(a/.*\\|\".*\\)$"))
        (unless path
          (save-excursion
            (when (re-search-forward re head-end t)
              (setq path (tandem-review--unquote (match-string-no-properties 1)))))))
      (unless path
        (save-excursion
          (when (looking-at "^diff --git a/\\(.*\\) b/")
            (setq path (match-string-no-properties 1)))))
      (list path start end))))

(defun tandem-review--hunk-at-point ()
  "Return (PATH INDEX HEADER START END) of the hunk at point.
Signal a user error when point is on no hunk."
  (cl-destructuring-bind (path start end) (tandem-review--file-at-point)
    (save-excursion
      (end-of-line)
      (unless (and (re-search-backward "^@@" start t) (< (point) end))
        (user-error "Point is not on a hunk (K reverts the whole file)"))
      (let* ((hstart (point))
             (header (buffer-substring-no-properties hstart (line-end-position)))
             (hend (save-excursion (forward-line 1)
                                   (if (re-search-forward "^\\(@@\\|diff --git \\)" end t)
                                       (match-beginning 0) end)))
             (index 0))
        (goto-char start)
        (while (re-search-forward "^@@" hstart t) (cl-incf index))
        (list path index header hstart hend)))))

;;;; Reverting

(defun tandem-review--revert (params what)
  "Ask the backend to revert PARAMS; reload the review and report WHAT on success.
The reloaded review marks every part reverted so far (from the journal)."
  (let ((entry (tandem-request "review/revert"
                               (append (list :session tandem-review--session
                                             :turn tandem-review--turn)
                                       params)
                               120)))
    (tandem-review-reload)
    (tandem-revert-stale-buffers default-directory)
    (message "tandem: reverted %s" what)
    (run-hook-with-args 'tandem-review-reverted-functions tandem-review--session entry)
    entry))

(defun tandem-review--mark (start end label)
  "Dim START..END and show LABEL at the end of its first line."
  (let ((ov (make-overlay start end)))
    (overlay-put ov 'face 'shadow)
    (overlay-put ov 'tandem-reverted t))
  (let ((ov (make-overlay (save-excursion (goto-char start) (line-end-position))
                          (save-excursion (goto-char start) (line-end-position)))))
    (overlay-put ov 'tandem-reverted t)
    (overlay-put ov 'after-string (propertize (concat "   " label) 'face 'warning))))

(defun tandem-review-mark-parts (parts hunk-label file-label)
  "Dim the PARTS of the patch shown, labelled HUNK-LABEL or FILE-LABEL.
PARTS are plists (:path P :hunk N), N nil for a whole file (FILE-LABEL)."
  (save-excursion
    (dolist (part parts)
      (goto-char (point-min))
      (let ((path (plist-get part :path)) (hunk (plist-get part :hunk)) (found nil))
        (while (and (not found) (re-search-forward "^diff --git " nil t))
          (let ((file (tandem-review--file-at-point)))
            (when (equal (car file) path) (setq found file))
            (goto-char (nth 2 file))))
        (when found
          (cl-destructuring-bind (_ start end) found
            (if (null hunk)
                (tandem-review--mark start end file-label)
              (goto-char start)
              (when (and (re-search-forward "^@@" end t (1+ hunk)) (< (point) end))
                (let* ((hstart (line-beginning-position))
                       (hend (save-excursion
                               (forward-line 1)
                               (if (re-search-forward "^\\(@@\\|diff --git \\)" end t)
                                   (match-beginning 0) end))))
                  (tandem-review--mark hstart hend hunk-label))))))))))

(defun tandem-review--mark-reverted (parts)
  "Mark the PARTS of the patch shown that a review reverted.
PARTS are plists (:path P :hunk N), N nil for a whole file."
  (tandem-review-mark-parts parts "↶ reverted" "↶ reverted (whole file)"))

(defun tandem-review--banner ()
  "Say in the header line when a rewind discarded this review's turn."
  (setq header-line-format
        (and tandem-review--rewound
             (propertize (format " Turn %s was discarded by a rewind: this patch is \
history (M-x tandem-rewind-undo brings it back)" tandem-review--turn)
                         'face 'warning))))

(defun tandem-review-rewound (session turns)
  "Mark the open reviews of SESSION: discarded by a rewind, or no longer.
TURNS holds (TURN . REWOUND) pairs.  A rewind and its undo call this."
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and tandem-review-mode (equal tandem-review--session session))
        (let ((hit (assq tandem-review--turn turns)))
          (when hit
            (setq tandem-review--rewound (cdr hit))
            (tandem-review--banner)
            (force-mode-line-update)))))))

(defun tandem-review-revert-hunk ()
  "Revert the hunk at point in the file as it is now (refused if it changed since)."
  (interactive nil tandem-review-mode)
  (cl-destructuring-bind (path index header _start _end) (tandem-review--hunk-at-point)
    (tandem-review--revert (list :path path :hunk index :hunk-header header)
                           (format "hunk %d of %s" (1+ index) path))))

(defun tandem-review-revert-file ()
  "Revert the whole file at point to its state before the turn."
  (interactive nil tandem-review-mode)
  (cl-destructuring-bind (path _start _end) (tandem-review--file-at-point)
    (when (funcall tandem-review-confirm-function
                   (format "Revert %s to before turn %s? " path tandem-review--turn))
      (tandem-review--revert (list :path path) path))))

(defun tandem-review-ediff ()
  "Compare the file at point with its version before the turn, in ediff.
Return the buffer holding the version before the turn."
  (interactive nil tandem-review-mode)
  (let* ((path (car (tandem-review--file-at-point)))
         (reply (tandem-request "review/before" (list :session tandem-review--session
                                                      :turn tandem-review--turn :path path)))
         (root tandem-review--root)
         (old (get-buffer-create (format "*tandem-before: %s (turn %s)*"
                                         (plist-get reply :path) tandem-review--turn))))
    (with-current-buffer old
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (plist-get reply :text)))
      (let ((buffer-file-name (expand-file-name (plist-get reply :path) root)))
        (set-auto-mode t))
      (setq buffer-read-only t)
      (set-buffer-modified-p nil))
    (require 'ediff)
    (ediff-buffers old (find-file-noselect (expand-file-name path root)))
    old))

(provide 'tandem-review)
;;; tandem-review.el ends here
