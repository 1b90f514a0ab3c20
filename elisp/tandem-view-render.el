;;; tandem-view-render.el --- Turn rendering for the tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A session buffer shows blocks: one per turn (every journal entry that
;; names the turn) and one per entry that belongs to no turn (rewind,
;; compaction, unknown types).  This file draws the parts of a block: the
;; header, the rows of the common entry kinds, the streamed text.  Which
;; row an entry gets is the kind registry's choice (tandem-view-kinds.el,
;; where `tandem-view-render-block' inserts a block at point, given a
;; predicate that says which parts are folded).
;;
;; Parts are named by keys: `turn' (the whole turn), (prompt SEQ) for a
;; directive's submitted prompt, (reasoning SEQ), (tool CALL-ID),
;; `live-reasoning', (compaction SEQ), and (compacted TURN PART) for a
;; part of a turn shown inside an unfolded compaction row.  Rendering
;; never decides fold state itself; tandem-view-model.el does.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-view-format)
(require 'tandem-view-markdown)
(require 'tandem-view-segments)
(require 'tandem-view-lazy)
(require 'tandem-view-fontify)
(require 'tandem-usage)
(require 'tandem-view-block)
(require 'tandem-composer)

;;;; Inserting

(defvar tandem-view-render-plain nil
  "When non-nil, lines and bodies are inserted as text only, no properties.
Bound while a settled turn of a long history is inserted undecorated:
its properties come from a rendering made when it is first displayed
\(`tandem-view--finish'), so making them now would be work thrown away.")

(defun tandem-view-render--line (text part &rest props)
  "Insert TEXT and a newline; mark it as PART with extra PROPS."
  (if tandem-view-render-plain
      ;; A copy without properties only when there are some to drop.
      (insert (if (or (text-properties-at 0 text) (next-property-change 0 text))
                  (substring-no-properties text)
                text)
              "\n")
    (let ((start (point)))
      (insert text "\n")
      (when part (put-text-property start (point) 'tandem-part part))
      (when props (add-text-properties start (point) props)))))

(defvar tandem-view-render-lazy nil
  "When non-nil, Markdown bodies are fontified when first displayed.
They are cut into segments marked with a `tandem-markdown' property
\(tandem-view-segments.el) that `tandem-view-fontify-region' (run by
jit-lock) replaces with faces, one displayed segment at a time.
Session buffers set it locally; elsewhere bodies are fontified at once.")

(defun tandem-view-render--body (text &optional face)
  "Insert TEXT as an indented Markdown body (or in FACE, not as Markdown)."
  (if tandem-view-render-plain
      (progn (insert text) (unless (bolp) (insert "\n")))
    (let ((start (point)))
      (insert (cond (face (propertize text 'font-lock-face face))
                    (tandem-view-render-lazy text)
                    (t (tandem-view-markdown-fontify text))))
      (when (and tandem-view-render-lazy (not face))
        (if tandem-view-lazy-defer
            (tandem-view-lazy-mark start (point))
          (tandem-view-segments-mark start (point) (tandem-view-scan-create))))
      (unless (bolp) (insert "\n"))
      (add-text-properties start (point) (list 'line-prefix tandem-view-render-indent
                                               'wrap-prefix tandem-view-render-indent)))))

(defvar tandem-view-render--kept nil
  "A body text left where it is shown: its rendering inserts nothing.
Bound by a re-rendering around that body (tandem-view-stream.el); the
text is compared with `eq', so it is the entry's own string.")

(defvar tandem-view-render--kept-at nil
  "Position of the body `tandem-view-render--kept' in the rendering.")

(defun tandem-view-render--kept-place (text)
  "Note the place of the kept TEXT; insert only what follows it in a body.
That is the newline ending a body that does not end a line."
  (setq tandem-view-render--kept-at (point))
  (unless (string-suffix-p "\n" text)
    (insert (propertize "\n" 'line-prefix tandem-view-render-indent
                        'wrap-prefix tandem-view-render-indent))))

(defun tandem-view-render--arrow (folded)
  "Return the fold arrow for FOLDED."
  (if folded "▸ " "▾ "))

(defun tandem-view-render--header (block folded)
  "Insert BLOCK's header line, with a one-line summary when FOLDED."
  (let* ((start (tandem-view-block-find block "turn_start"))
         (meta (tandem-view-block-meta block))
         (directive (tandem-view-block-directive block))
         (end (tandem-view-block-end-entry block))
         (provider (or (plist-get start :provider) (plist-get meta :provider) ""))
         (model (or (plist-get start :model) (plist-get meta :model) ""))
         (who (if directive
                  (concat (propertize (format "Directive %s" (plist-get directive :directive))
                                      'font-lock-face 'tandem-view-directive-header)
                          (if (plist-get directive :action)
                              (format " · %s" (plist-get directive :action)) "")
                          " · " (propertize "[excluded from chat]"
                                            'font-lock-face 'tandem-view-badge))
                "You"))
         ;; "provider model", either alone when the other is empty, the
         ;; model left out when the provider ends with it.  Built with one
         ;; `concat': this runs for every turn of a long history.
         (model (if (string-suffix-p model provider) "" model))
         (provider-label (cond ((string-empty-p provider) model)
                               ((string-empty-p model) provider)
                               (t (concat provider " " model))))
         (turn (tandem-view-block-turn block))
         (line (concat (tandem-view-render--arrow folded)
                       "Turn " (if (integerp turn) (number-to-string turn) (format "%s" turn))
                       " · " who
                       (if start (concat " · " (tandem-view-render-time (plist-get start :ts))) "")
                       (if (string-empty-p provider-label) "" (concat " · " provider-label)))))
    (when folded
      (let ((user (tandem-view-block-find block "user")))
        (setq line (concat line
                           (if (and user (not directive))
                               (concat " — " (tandem-view-render--first-line
                                              (plist-get user :text) 50))
                             "")
                           (if end (concat "  " (tandem-view-render--outcome
                                                 (plist-get end :outcome)))
                             "  …")))))
    (tandem-view-render--line
     (if tandem-view-render-plain line  ; Its face would be dropped at once.
       (propertize line 'font-lock-face (if directive 'tandem-view-directive-header
                                          'tandem-view-header)))
     'turn 'tandem-header t)))

(defun tandem-view-render--tool (block call folded)
  "Insert the tool CALL entry of BLOCK as one line, expanded unless FOLDED."
  (let* ((id (plist-get call :call-id))
         (result (cl-find-if (lambda (e) (and (equal (plist-get e :type) "tool_result")
                                               (equal (plist-get e :call-id) id)))
                             (tandem-view-block-entries block)))
         (status (cond (result (plist-get result :status))
                       ((tandem-view-block-end-entry block) "no result")
                       (t "running…")))
         (status (if (tandem-view-render--edited-p block id)
                     (concat status ", edited by you")
                   status))
         (title (or (plist-get call :title) ""))
         (rule (plist-get call :decided-by)))
    (tandem-view-render--line
     (concat tandem-view-render-indent (tandem-view-render--arrow folded)
             (propertize (format "⚙ %s" (plist-get call :name)) 'font-lock-face 'tandem-view-tool)
             (if (string-empty-p title) "" (concat " " title))
             (propertize (format "  [%s]" status)
                         'font-lock-face (if (member status '("failed" "refused"))
                                             'tandem-view-error 'tandem-view-muted))
             ;; The kept permission rule that decided the call, never asked.
             (if (stringp rule) (propertize (format " · %s" rule) 'font-lock-face 'tandem-view-muted)
               ""))
     (list 'tool id))
    (unless folded
      (tandem-view-render--body (concat "input:\n" (tandem-view-render--value (plist-get call :input)))
                                'tandem-view-muted)
      (when result
        (tandem-view-render--body (concat "output:\n" (tandem-view-render--value
                                                       (plist-get result :output)))
                                  'tandem-view-muted)))))

(defun tandem-view-render--edited-p (block call-id)
  "Return non-nil when the user edited the change of tool call CALL-ID in BLOCK.
The journal says so in the answer to the call's question (`:edited')."
  (let ((entries (tandem-view-block-entries block)))
    (when-let* ((asked (cl-find-if (lambda (e) (and (equal (plist-get e :type) "interaction")
                                                    (equal (plist-get e :call-id) call-id)))
                                   entries)))
      (cl-some (lambda (e) (and (equal (plist-get e :type) "interaction_answer")
                                (equal (plist-get e :interaction-id)
                                       (plist-get asked :interaction-id))
                                (eq (plist-get e :edited) t)))
               entries))))

(defvar tandem-view-interaction-map)

(defun tandem-view-render--options (entry)
  "Return ENTRY's answers as a list of (ID LABEL KEY), in the offered order.
Options come from the backend as plists (:id :label :key); missing
ones fall back to `tandem-view-answer-labels' and `tandem-view-answer-keys'."
  (let ((out nil))
    (dolist (o (plist-get entry :options))
      (let ((id (cond ((stringp o) o)
                      ((consp o) (or (plist-get o :id) (plist-get o :option-id))))))
        (when (assoc id tandem-view-answer-labels)
          (push (list id
                      (or (and (consp o) (plist-get o :label))
                          (cdr (assoc id tandem-view-answer-labels)))
                      (or (and (consp o) (plist-get o :key))
                          (cdr (assoc id tandem-view-answer-keys))))
                out))))
    (or (nreverse out)
        (mapcar (lambda (a) (list (car a) (cdr a) (cdr (assoc (car a) tandem-view-answer-keys))))
                tandem-view-answer-labels))))

(defun tandem-view-render--row-map (options &optional editable rule)
  "Return the keymap of an interaction row offering OPTIONS.
EDITABLE adds \`e', which opens the proposed change for editing; RULE
adds \`A', which keeps a permission rule for the call."
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tandem-view-interaction-map)
    (dolist (o options)
      (let ((answer (car o)))
        (define-key map (nth 2 o)
                    (lambda () (interactive) (tandem-view-answer-at (point) answer)))))
    (when editable
      (define-key map "e" #'tandem-view-shape-at-point))
    (when rule
      (define-key map "A" #'tandem-permissions-always))
    map))

(defun tandem-view-render--interaction (block entry)
  "Insert the interaction ENTRY of BLOCK: actionable when pending."
  (let* ((id (plist-get entry :interaction-id))
         (answer (tandem-view-block-answered block id))
         (options (tandem-view-render--options entry))
         (editable (eq (plist-get entry :editable) t))
         (rule (and (stringp (plist-get entry :rule-pattern)) (plist-get entry :rule-pattern)))
         (title (or (plist-get entry :title) "Permission")))
    (if (or answer (tandem-view-block-end-entry block))
        (tandem-view-render--line
         (propertize (format "%s? %s — %s" tandem-view-render-indent title
                             (or (cadr (assoc answer options))
                                 (cdr (assoc answer tandem-view-answer-labels))
                                 "not answered"))
                     'font-lock-face 'tandem-view-muted)
         nil)
      (let ((start (point)))
        (insert tandem-view-render-indent
                (propertize (format "? %s  " title) 'font-lock-face 'tandem-view-interaction))
        (dolist (o options)
          (insert-text-button (format "[%s] %s" (nth 2 o) (nth 1 o))
                              'type 'tandem-view-answer 'tandem-answer (car o))
          (insert " "))
        (when editable
          (insert-text-button "[e] Edit" 'follow-link t
                              'help-echo "Edit the proposed change before it is written"
                              'action (lambda (b) (tandem-view-shape-at (button-start b))))
          (insert " "))
        (when rule
          (insert-text-button "[A] Always…" 'follow-link t
                              'help-echo "Keep a rule that allows calls like this one"
                              'action (lambda (b) (tandem-permissions-always-at (button-start b))))
          (insert " "))
        (insert "\n")
        (add-text-properties start (point)
                             (list 'tandem-interaction (list :id id :turn (tandem-view-block-turn block)
                                                             :call-id (plist-get entry :call-id)
                                                             :editable editable
                                                             :tool (plist-get entry :tool)
                                                             :rule-pattern rule)
                                   'keymap (tandem-view-render--row-map options editable rule)
                                   'tandem-part (list 'interaction id)))))))

(declare-function tandem-view-answer-at "tandem-view-commands" (pos answer))
(declare-function tandem-permissions-always-at "tandem-permissions" (pos))
(declare-function tandem-permissions-always "tandem-permissions" ())
(declare-function tandem-view-shape-at "tandem-view-shape" (pos))
(declare-function tandem-view-shape-at-point "tandem-view-shape" ())
;; Not required: tandem-view-compaction needs tandem-compact, which needs this file.
(declare-function tandem-view-compaction-insert-old "tandem-view-compaction" (entry folded-p))

(define-button-type 'tandem-view-answer
  'follow-link t
  'help-echo "Answer this question"
  'action (lambda (button)
            (tandem-view-answer-at (button-start button)
                     (button-get button 'tandem-answer))))

;;;; The rows of each kind (tandem-view-kinds.el registers them)

(defun tandem-view-render--user (block entry folded-p)
  "Insert ENTRY, a `user' message of BLOCK: a directive's prompt, else its body.
The prompt is a fold; FOLDED-P tells whether a part key is folded."
  (if (tandem-view-block-directive block)
      (let* ((seq (plist-get entry :seq))
             (folded (funcall folded-p (list 'prompt seq)))
             (text (plist-get entry :text)))
        (tandem-view-render--line
         (concat tandem-view-render-indent (tandem-view-render--arrow folded)
                 (propertize (let ((n (1+ (cl-count ?\n (string-trim-right text)))))
                               (format "Prompt (%d line%s, exactly as submitted)"
                                       n (if (= n 1) "" "s")))
                             'font-lock-face 'tandem-view-muted))
         (list 'prompt seq))
        (unless folded (tandem-view-render--body text))
        (tandem-view-render--context (plist-get entry :context)))
    (let ((start (point)))
      (tandem-view-render--body (plist-get entry :text))
      (tandem-view-render--chips start (point) (plist-get entry :context)))
    (tandem-view-render--context (plist-get entry :context)))
  (dolist (image (plist-get entry :images))
    (tandem-view-render--image image)))

(defcustom tandem-view-image-max-width 240
  "Width in pixels of an image's thumbnail in a graphical frame."
  :type 'integer
  :group 'tandem)

(defvar tandem-home)                    ; tandem-client.el

(defun tandem-view-render--image-file (digest)
  "Return the image store's file of DIGEST (the backend's TANDEM_HOME), or nil."
  (when (and (stringp digest) (string-match-p "\\`[0-9a-f]\\{64\\}\\'" digest))
    (let ((home (or (and (boundp 'tandem-home) tandem-home)
                    (getenv "TANDEM_HOME")
                    (expand-file-name "tandem" (or (getenv "XDG_STATE_HOME")
                                                   "~/.local/state")))))
      (expand-file-name (concat "images/" (substring digest 0 2) "/" digest) home))))

(defun tandem-view-render--image (image)
  "Insert the line of IMAGE, a `user' entry's image record.
A named placeholder [image: NAME SIZE]; in a graphical frame a thumbnail
from the image store shows over it (the text stays for copying)."
  (let* ((label (tandem-composer-image-label (or (plist-get image :name) "image")
                                             (or (plist-get image :size) 0)))
         (file (and (not tandem-view-render-plain) (display-images-p)
                    (tandem-view-render--image-file (plist-get image :digest))))
         (picture (and file (file-readable-p file)
                       (ignore-errors
                         (create-image file nil nil :max-width tandem-view-image-max-width
                                       :max-height tandem-view-image-max-width)))))
    (tandem-view-render--line
     (concat tandem-view-render-indent
             (if picture
                 (propertize label 'display picture 'help-echo label)
               (propertize label 'font-lock-face 'tandem-view-muted)))
     nil)))


;;;; Mentions and the request's context

(declare-function tandem-view-goto-turn "tandem-view-commands" (turn))
(declare-function tandem-inspect-directive "tandem-inspector" (id &optional root))

(defface tandem-view-mention '((t :inherit link :underline nil :box (:line-width -1)))
  "Face of an @ mention (a chip) in a request."
  :group 'tandem-view)

(defvar tandem-view-mention-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'tandem-view-visit-mention)
    (define-key map [mouse-2] #'tandem-view-visit-mention)
    (define-key map [follow-link] 'mouse-face)
    map)
  "Keys on an @ mention chip (the transcript's keys are its parent's).")

(defun tandem-view-render--size (bytes)
  "Return BYTES as a short size (\"1.2k\")."
  (if (numberp bytes) (file-size-human-readable bytes) "?"))

(defun tandem-view-render--chips (start end context)
  "Show the @ mentions CONTEXT records between START and END as chips."
  (unless tandem-view-render-plain
    (dolist (rec context)
      (let ((token (plist-get rec :mention)))
        (when (stringp token)
          (save-excursion
            (goto-char start)
            (while (search-forward (concat "@" token) end t)
              (add-text-properties
               (match-beginning 0) (match-end 0)
               (list 'face 'tandem-view-mention 'font-lock-face 'tandem-view-mention
                     'mouse-face 'highlight 'tandem-mention rec
                     'keymap tandem-view-mention-map
                     'help-echo (format "%s · %s sent%s" (plist-get rec :kind)
                                        (tandem-view-render--size (plist-get rec :sent))
                                        (if (eq (plist-get rec :truncated) t)
                                            " (cut)" "")))))))))))

(defun tandem-view-render--context (context)
  "Insert the row listing CONTEXT: what the request carried besides its text."
  (when context
    (tandem-view-render--line
     (concat tandem-view-render-indent
             (propertize
              (concat "context: "
                      (mapconcat
                       (lambda (rec)
                         (concat (if (equal (plist-get rec :kind) "instructions")
                                     (concat (plist-get rec :path) " (instructions)")
                                   (concat "@" (or (plist-get rec :mention) "?")))
                                 " " (tandem-view-render--size (plist-get rec :sent))
                                 (if (eq (plist-get rec :truncated) t) " (cut)" "")))
                       context " · "))
              'font-lock-face 'tandem-view-muted))
     'context)))

(defun tandem-view-visit-mention (&optional event)
  "Visit what the @ mention at point (or at EVENT) names.
That is its file (at its lines), its directive or its turn."
  (interactive (list last-nonmenu-event) tandem-view-mode)
  (let* ((pos (if (mouse-event-p event) (posn-point (event-start event)) (point)))
         (rec (get-text-property pos 'tandem-mention))
         (kind (plist-get rec :kind)))
    (pcase kind
      ("file" (let ((file (expand-file-name (plist-get rec :path)
                                            (funcall 'tandem-view--root))))
                (find-file-other-window file)
                (when-let* ((lines (plist-get rec :lines)))
                  (goto-char (point-min))
                  (forward-line (1- (car lines))))))
      ("turn" (tandem-view-goto-turn
               (string-to-number (substring (plist-get rec :mention) 1))))
      ("directive" (tandem-inspect-directive (plist-get rec :mention)))
      (_ (user-error "No mention here")))))

(defun tandem-view-render--assistant (_block entry _folded-p)
  "Insert ENTRY, an `assistant' message: its role line and its body."
  (tandem-view-render--line (concat tandem-view-render-indent
                                    (propertize "Assistant" 'font-lock-face 'tandem-view-role))
                            nil)
  (let ((text (plist-get entry :text)) (start (point)))
    (if (and tandem-view-render--kept (eq text tandem-view-render--kept))
        (tandem-view-render--kept-place text)
      (tandem-view-render--body text)
      ;; Where the body is, for a re-rendering to leave it there.
      (when (and tandem-view-render-lazy (not tandem-view-render-plain))
        (put-text-property start (+ start (length text)) 'tandem-body text)))))

(defun tandem-view-render--reasoning (_block entry folded-p)
  "Insert ENTRY, a `reasoning' entry: a fold line, then its text.
The text is left out when FOLDED-P says its part is folded."
  (let* ((seq (plist-get entry :seq))
         (folded (funcall folded-p (list 'reasoning seq))))
    (tandem-view-render--line
     (concat tandem-view-render-indent (tandem-view-render--arrow folded)
             (propertize (format "Reasoning (%d words)"
                                 (length (split-string (plist-get entry :text))))
                         'font-lock-face 'tandem-view-reasoning))
     (list 'reasoning seq))
    (unless folded (tandem-view-render--body (plist-get entry :text) 'tandem-view-reasoning))))

(defun tandem-view-render--tool-call (block entry folded-p)
  "Insert ENTRY, a `tool_call' of BLOCK, folded or not as FOLDED-P answers."
  (tandem-view-render--tool block entry (funcall folded-p (list 'tool (plist-get entry :call-id)))))

(defun tandem-view-render--interaction-row (block entry _folded-p)
  "Insert ENTRY, an `interaction' of BLOCK (`tandem-view-render--interaction')."
  (tandem-view-render--interaction block entry))

(defun tandem-view-render--turn-end (block entry _folded-p)
  "Insert ENTRY, BLOCK's `turn_end': outcome, files changed, tokens."
  ;; The live `turn-ended' event names the files; a turn read back
  ;; from the journal has them in its `turn_end' entry's patch.
  (let ((files (or (tandem-view-block-files-changed block)
                   (tandem-view-render--patch-files entry))))
    (tandem-view-render--line
     (concat tandem-view-render-indent
             (tandem-view-render--outcome (plist-get entry :outcome) (plist-get entry :error))
             (if files (propertize (format " · %d file%s changed" (length files)
                                           (if (cdr files) "s" ""))
                                   'font-lock-face 'tandem-view-muted)
               "")
             (tandem-view-render--usage block entry))
     nil)))

(defun tandem-view-render--directive-close (_block entry _folded-p)
  "Insert ENTRY, a `directive_close': the directive's outcome and summary."
  (tandem-view-render--line
   (concat tandem-view-render-indent
           (propertize (format "◇ Directive %s closed: " (plist-get entry :directive))
                       'font-lock-face 'tandem-view-muted)
           (tandem-view-render--outcome (plist-get entry :outcome))
           (let ((summary (plist-get entry :summary)))
             (if (and summary (not (string-empty-p summary)))
                 (concat " — " (tandem-view-render--first-line summary 70)) "")))
   nil))

(defun tandem-view-render--patch-files (end)
  "Return the paths of the files changed in the turn END closes.
END is a `turn_end' entry; its patch names the files."
  (let ((patch (plist-get end :patch)))
    (and (consp patch)
         (delq nil (mapcar (lambda (f) (and (consp f) (plist-get f :path)))
                           (append (plist-get patch :files) nil))))))

(defun tandem-view-render--usage (block end)
  "Return the token counts (and cost) of BLOCK's turn, ended by END, or \"\"."
  (let* ((usage (plist-get end :usage))
         (text (and (consp usage) (tandem-usage-format usage)))
         (start (and text (tandem-view-block-find block "turn_start")))
         (cost (and text (tandem-usage-cost usage (plist-get start :provider)
                                            (plist-get start :model)))))
    (if text
        (propertize (concat " · " text (if cost (concat " · " (tandem-usage-format-cost cost)) ""))
                    'font-lock-face 'tandem-view-muted)
      "")))

(defvar tandem-view-live-fontify-interval 0.25
  "Seconds between two fontifications of the paragraph still streaming.
Completed segments are fontified as soon as they are shown; the last,
growing one is redone at most this often (it costs its whole length each
time), and shows plain in between.")

(defun tandem-view-render-live-mark (block beg end &optional throttle)
  "Mark BLOCK's streamed text, from BEG (its start) to END, for fontification.
Only lines not scanned before are read (see tandem-view-segments.el).
With THROTTLE, the segment still growing is marked only when
`tandem-view-live-fontify-interval' has passed since it last was.
Outside a session buffer (eager rendering) it is fontified now."
  (let* ((scan (tandem-view-block-text-scan block))
         (now (float-time))
         (skip (and throttle (< (- now (tandem-view-block-text-fontified block))
                                tandem-view-live-fontify-interval))))
    (unless skip (setf (tandem-view-block-text-fontified block) now))
    (let ((from (tandem-view-segments-mark beg end scan t skip)))
      (unless tandem-view-render-lazy (tandem-view-fontify-region from end)))))

(defun tandem-view-render--live (block folded-p)
  "Insert BLOCK's streamed reasoning and text, with their markers.
FOLDED-P tells whether a part key is folded."
  (let ((reasoning (tandem-view-block-live-reasoning block))
        (text (tandem-view-block-live-text block)))
    ;; Markers left in the buffer slow every edit until collected.
    (dolist (m (list (tandem-view-block-reasoning-marker block)
                     (tandem-view-block-text-marker block)))
      (when (markerp m) (set-marker m nil)))
    (setf (tandem-view-block-reasoning-marker block) nil
          (tandem-view-block-text-marker block) nil)
    (unless (string-empty-p reasoning)
      (let ((folded (funcall folded-p 'live-reasoning)))
        (tandem-view-render--line
         (concat tandem-view-render-indent (tandem-view-render--arrow folded)
                 (propertize "Reasoning…" 'font-lock-face 'tandem-view-reasoning))
         'live-reasoning)
        (unless folded
          (let ((start (point)))
            (insert (propertize reasoning 'font-lock-face 'tandem-view-reasoning))
            ;; The marker is made after the newline so that it stays before it.
            (let ((end (point)))
              (insert "\n")
              (setf (tandem-view-block-reasoning-marker block) (copy-marker end t)))
            (put-text-property start (point) 'line-prefix tandem-view-render-indent)))))
    (setf (tandem-view-block-reasoning-shown block) (length reasoning))
    (unless (string-empty-p text)
      (tandem-view-render--line (concat tandem-view-render-indent
                                        (propertize "Assistant" 'font-lock-face 'tandem-view-role))
                                nil)
      (let ((start (point)) (scan (tandem-view-scan-create)))
        (insert (propertize text 'tandem-body scan))
        (let ((end (point)))
          (setf (tandem-view-block-text-scan block) scan)
          (tandem-view-render-live-mark block start end)
          (insert "\n")
          (setf (tandem-view-block-text-marker block) (copy-marker end t)))
        (add-text-properties start (point) (list 'line-prefix tandem-view-render-indent
                                                 'wrap-prefix tandem-view-render-indent))))
    (setf (tandem-view-block-text-shown block) (length text))))

;;;; Rows of entries outside any turn

(defun tandem-view-render--rewind (_block entry _folded-p)
  "Insert ENTRY, a `rewind': the turn it went back to before."
  (tandem-view-render--line
   (propertize (format "⟲ Rewound to before turn %s · %s" (plist-get entry :before-turn)
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil))

(defun tandem-view-render--rewind-undo (_block entry _folded-p)
  "Insert ENTRY, a `rewind_undo': the rewind undone, or only its files."
  (tandem-view-render--line
   (propertize (format (if (plist-get entry :files-only)
                           "⟲ Files put back as before the rewind before turn %s \
(its turns stay rewound) · %s"
                         "⟲ Undid the rewind before turn %s · %s")
                       (plist-get entry :before-turn)
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil))

(defun tandem-view-render--rewind-recovery (_block entry _folded-p)
  "Insert ENTRY, a `rewind_recovery'.
That is a rewind (or its undo) a crash interrupted, settled when the
backend came back."
  (tandem-view-render--line
   (propertize (format "⟲ Interrupted %s before turn %s %s · %s"
                       (if (plist-get entry :undo) "undo of the rewind" "rewind")
                       (plist-get entry :before-turn)
                       (if (equal (plist-get entry :outcome) "committed")
                           "kept" "rolled back")
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil)
  (let ((note (plist-get entry :message)))
    (when (and (stringp note) (not (string-empty-p note)))
      (tandem-view-render--body note 'tandem-view-muted))))

(defun tandem-view-render--revert (_block entry _folded-p)
  "Insert ENTRY, a `revert': a hunk or file of a turn reverted from its review."
  (tandem-view-render--line
   (propertize (format "↶ Reverted %s%s of turn %s · %s"
                       (if (integerp (plist-get entry :hunk))
                           (format "hunk %d of " (1+ (plist-get entry :hunk)))
                         "")
                       (plist-get entry :path) (plist-get entry :of-turn)
                       (tandem-view-render-time (plist-get entry :ts)))
               'font-lock-face 'tandem-view-muted)
   nil))

(defun tandem-view-render--compaction (_block entry folded-p)
  "Insert ENTRY, a `compaction': a fold line, its summary and the old turn rows.
FOLDED-P tells whether a part key is folded."
  (let* ((seq (plist-get entry :seq))
         (folded (funcall folded-p (list 'compaction seq)))
         (first-kept (plist-get entry :first-kept-turn)))
    (tandem-view-render--line
     (propertize (format "%s≡ Compacted%s%s" (tandem-view-render--arrow folded)
                         (if (plist-get entry :tokens-before)
                             (format " (%s → %s tokens)" (plist-get entry :tokens-before)
                                     (plist-get entry :tokens-after))
                           "")
                         (if (integerp first-kept)
                             (format " · turns before %d" first-kept)
                           ""))
                 'font-lock-face 'tandem-view-muted)
     (list 'compaction seq))
    (unless folded
      (tandem-view-render--body (plist-get entry :summary))
      ;; The summarised turns themselves, from the journal (read-only).
      (when (and (integerp first-kept) (fboundp 'tandem-view-compaction-insert-old))
        (tandem-view-compaction-insert-old entry folded-p)))))

(provide 'tandem-view-render)
;;; tandem-view-render.el ends here
