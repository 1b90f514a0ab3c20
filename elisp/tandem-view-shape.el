;;; tandem-view-shape.el --- Edit a proposed write before it lands  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; In ask mode a `write_file' or `edit_file' call waits on a question
;; row of the session buffer.  \`e' there opens the change the model
;; proposes -- the whole new content of the file -- in a buffer of the
;; file's major mode.  There:
;;
;;   C-c C-c  write what the buffer holds instead of the model's content;
;;            the backend writes it through the write tools' own guards
;;            (never under .git, never a protected path) and tells the
;;            model the diff between its proposal and what was written;
;;   C-c C-d  show the buffer as a diff against the file on disk;
;;   C-c C-k  go back to the question, which still waits.
;;
;; The diff is a `diff-mode' buffer made by `diff-no-select', the view
;; `diff-buffer-with-file' gives before saving a buffer: read-only,
;; one window, the usual `diff-mode' keys.  Ediff is for merging two
;; versions with a control panel; here there is one version to judge.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'diff)
(require 'tandem-client)
(require 'tandem-view-state)
(require 'tandem-view-block)

(defvar-local tandem-view-shape--question nil
  "The question this buffer answers, a plist.
Keys: :session, :interaction-id, :view (the session buffer), :file
\(absolute) and :path (as the model gave it).")
;; The major mode is set after the question is known; it must survive that.
(put 'tandem-view-shape--question 'permanent-local t)

(defvar tandem-view-shape-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'tandem-view-shape-accept)
    (define-key map (kbd "C-c C-k") #'tandem-view-shape-back)
    (define-key map (kbd "C-c C-d") #'tandem-view-shape-diff)
    map)
  "Keys of a buffer holding a proposed change being edited.")

(define-minor-mode tandem-view-shape-mode
  "Minor mode of a buffer holding the model's proposed change to one file.
\\<tandem-view-shape-mode-map>\\[tandem-view-shape-accept] writes this \
buffer's text instead of the model's,
\\[tandem-view-shape-diff] shows it as a diff against the file on disk,
\\[tandem-view-shape-back] goes back to the question.

\\{tandem-view-shape-mode-map}"
  :lighter " Proposed"
  :keymap tandem-view-shape-mode-map)

;; Turned on by `tandem-view-shape-at' only: M-x does not offer it.
(put 'tandem-view-shape-mode 'completion-predicate #'ignore)

(defun tandem-view-shape--get (input key)
  "Return KEY of the tool INPUT plist, spelled with `-' or with `_'."
  (let ((name (substring (symbol-name key) 1)))
    (or (plist-get input key)
        (plist-get input (intern (concat ":" (replace-regexp-in-string "-" "_" name)))))))

(defun tandem-view-shape--file-text (file)
  "Return FILE's text (UTF-8, line ends kept), or nil when there is no FILE.
The backend compares and writes exact text: a CRLF file stays CRLF."
  (when (file-regular-p file)
    (with-temp-buffer
      (let ((coding-system-for-read 'utf-8-unix))
        (insert-file-contents file))
      (buffer-string))))

(defun tandem-view-shape-proposal (name input current)
  "Return the file content tool call NAME with INPUT proposes.
CURRENT is the file's text now (nil: no such file).  Signal a
`user-error' when the call does not apply to it."
  (pcase name
    ("write_file"
     (or (tandem-view-shape--get input :content)
         (user-error "The proposed content is not in the journal")))
    ("edit_file"
     (let ((old (tandem-view-shape--get input :old-text))
           (new (or (tandem-view-shape--get input :new-text) ""))
           (all (eq (tandem-view-shape--get input :replace-all) t)))
       (unless current (user-error "The file to edit does not exist"))
       (unless (and (stringp old) (not (string-empty-p old)))
         (user-error "The edit names no text to replace"))
       (let ((count (cl-loop with start = 0 while (string-search old current start)
                             count t do (setq start (+ (string-search old current start)
                                                       (length old))))))
         (cond ((zerop count) (user-error "The text to replace is not in the file now"))
               ((and (> count 1) (not all))
                (user-error "The text to replace occurs %d times in the file" count)))
         (string-replace old new current))))
    (_ (user-error "Only a write_file or edit_file call can be edited"))))

(defun tandem-view-shape--call (block call-id)
  "Return the tool_call entry CALL-ID of BLOCK, or nil."
  (cl-find-if (lambda (e) (and (equal (plist-get e :type) "tool_call")
                               (equal (plist-get e :call-id) call-id)))
              (tandem-view-block-entries block)))

(defun tandem-view-shape-at (pos)
  "Open the change proposed by the question at POS for editing.
The buffer holds the whole new content of the file in its major mode;
\\<tandem-view-shape-mode-map>\\[tandem-view-shape-accept] accepts it."
  (let* ((interaction (get-text-property pos 'tandem-interaction))
         (_ (unless interaction (user-error "No question at point")))
         (_ (unless (plist-get interaction :editable)
              (user-error "This question offers no editing")))
         (block (gethash (plist-get interaction :turn)
                         (tandem-view-state-by-turn tandem-view--state)))
         (call (and block (tandem-view-shape--call block (plist-get interaction :call-id))))
         (_ (unless call (user-error "The proposed change is not in this buffer")))
         (input (plist-get call :input))
         (path (tandem-view-shape--get input :path))
         (file (expand-file-name path (tandem-view--root)))
         (proposal (tandem-view-shape-proposal (plist-get call :name) input
                                               (tandem-view-shape--file-text file)))
         (question (list :session (tandem-view-state-session tandem-view--state)
                         :interaction-id (plist-get interaction :id)
                         :view (current-buffer) :file file :path path))
         (buffer (get-buffer-create (format "*tandem proposed: %s*" path))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert proposal))
      (goto-char (point-min))
      ;; The mode comes from the file name alone: the model wrote the text,
      ;; so neither its mode line nor its local variables are obeyed.
      (let ((buffer-file-name file) (enable-local-variables nil))
        (set-auto-mode t))
      (setq tandem-view-shape--question question)
      (set-buffer-modified-p nil)
      (tandem-view-shape-mode 1))
    (pop-to-buffer buffer)
    (message (substitute-command-keys
              "\\<tandem-view-shape-mode-map>Edit the change; \\[tandem-view-shape-accept] \
writes it, \\[tandem-view-shape-diff] diffs, \\[tandem-view-shape-back] goes back"))
    buffer))

(defun tandem-view-shape-at-point ()
  "Open the change proposed by the question at point for editing."
  (interactive nil tandem-view-mode)
  (tandem-view-shape-at (point)))

(defun tandem-view-shape--question ()
  "Return this buffer's question, or signal a `user-error'."
  (or tandem-view-shape--question (user-error "This buffer holds no proposed change")))

(defun tandem-view-shape--leave ()
  "Kill this buffer and return to its session buffer's question row."
  (let ((view (plist-get (tandem-view-shape--question) :view))
        (diff (get-buffer "*tandem proposed diff*")))
    (dolist (b (list diff (get-buffer " *tandem no file*")))
      (when b (kill-buffer b)))
    (quit-window t)
    (when (buffer-live-p view)
      (pop-to-buffer view)
      (let ((pos (next-single-property-change (point-min) 'tandem-interaction)))
        (when pos (goto-char pos) (skip-chars-forward " "))))))

(defun tandem-view-shape-accept ()
  "Write this buffer's text instead of the model's proposed content."
  (interactive nil tandem-view-shape-mode)
  (let ((q (tandem-view-shape--question)))
    (tandem-request "turns/answer"
                    (list :session (plist-get q :session)
                          :interaction-id (plist-get q :interaction-id)
                          :answer "allow_once"
                          :content (buffer-substring-no-properties (point-min) (point-max))))
    (message "Your version of %s goes to the model's write" (plist-get q :path))
    (tandem-view-shape--leave)))

(defun tandem-view-shape-back ()
  "Leave this buffer without answering: the question still waits."
  (interactive nil tandem-view-shape-mode)
  (tandem-view-shape--question)
  (tandem-view-shape--leave))

(defun tandem-view-shape-diff ()
  "Show this buffer's text as a diff against the file on disk, in `diff-mode'."
  (interactive nil tandem-view-shape-mode)
  (let* ((q (tandem-view-shape--question))
         (file (plist-get q :file))
         (old (if (file-exists-p file) file
                (with-current-buffer (get-buffer-create " *tandem no file*")
                  (erase-buffer)
                  (current-buffer))))
         (buffer (diff-no-select old (current-buffer) "-u" t
                                 (get-buffer-create "*tandem proposed diff*"))))
    (display-buffer buffer)
    buffer))

(provide 'tandem-view-shape)
;;; tandem-view-shape.el ends here
