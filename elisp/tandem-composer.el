;;; tandem-composer.el --- The composer at the bottom of a tandem session buffer  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The composer is the last part of a session buffer: a read-only prompt
;; prefix, then the editable draft up to the end of the buffer.  RET
;; inserts a newline; C-c C-c always sends: while a turn is in flight it
;; queues the message for after it (`tandem-composer-queue-function'),
;; it never cancels; C-c C-k cancels the turn in flight; M-p / M-n walk
;; the history.  C-c C-a attaches an image (a file, or in a graphical
;; frame the clipboard's image; yanking an image attaches it too): the
;; attachments show under the rule line and go with the next chat send;
;; C-u C-c C-a removes one.
;;
;; It has a scope: chat (the default) or a directive with its next action,
;; e.g. (:directive "D7" :action implement).  The scope shows in the
;; prefix, the header line and the mode line; it is sticky across sends
;; and left only with C-c C-b (Back to chat), which restores the chat
;; draft that entering the directive scope stashed.
;;
;; The composer does not talk to the backend itself: the buffer that hosts
;; it sets `tandem-composer-send-function', `tandem-composer-queue-function',
;; `tandem-composer-cancel-function' and `tandem-composer-busy-function'.
;; Directive sends go through `tandem-composer-directive-send-function'
;; (set by the directive code).
;;
;; Public API:
;;   `tandem-composer-setup'       -- insert the composer at the buffer's end.
;;   `tandem-composer-set-scope'   -- chat or (:directive ID :action ACTION).
;;   `tandem-composer-scope'       -- the current scope.
;;   `tandem-composer-draft', `tandem-composer-set-draft'.
;;   `tandem-composer-refresh'     -- redraw the prefix (draft and point kept).
;;   `tandem-composer-attachments' -- the images the next send carries.

;;; Code:

(require 'cl-lib)
(require 'imenu)
(require 'project)
(require 'seq)
(require 'subr-x)

(defconst tandem-composer-actions
  '(discuss implement implement-this discuss-result request-changes retry)
  "The directive actions a directive scope may name.")

(defvar-local tandem-composer-send-function nil
  "Function called as (FUNCTION TEXT SCOPE) to send the draft.
It signals an error when the text could not be sent; the draft is then
kept.  Set by the buffer hosting the composer.")

(defvar-local tandem-composer-queue-function nil
  "Function called as (FUNCTION TEXT) to queue the draft while a turn is in flight.
The message goes as the next turn once the running one ends well.  It
signals an error when the text could not be queued; the draft is then
kept.  While nil, sending during a turn fails with a message.")

(defvar-local tandem-composer-steer-function nil
  "Function called as (FUNCTION TEXT) to give the draft to the turn in flight.
The running turn takes it at its next step (C-c C-s).  It signals an
error when the text was neither given nor queued; the draft is then
kept.  While nil, steering fails with a message.")

(defvar-local tandem-composer-cancel-function nil
  "Function called with no argument to cancel the turn in flight (C-c C-k).")

(defvar-local tandem-composer-busy-function nil
  "Function returning non-nil while a turn is in flight (C-c C-c then queues).")

(defvar-local tandem-composer-note nil
  "A short note the rule line shows after the keys, or nil.
For example, which queued message is being edited.")

(defvar-local tandem-composer-after-send-draft nil
  "Draft to show after the next successful send instead of an empty one.
Used once, then cleared: editing a queued message restores the draft it
set aside.")

(defvar tandem-composer-directive-send-function nil
  "Function called as (FUNCTION ID ACTION TEXT BUFFER) for a directive send.
ID is the directive id, ACTION a symbol of `tandem-composer-actions'.
It is set by the directive code; while nil a directive send fails with
a message and the draft is kept.")

(defvar tandem-composer-scope-change-functions nil
  "Abnormal hook run with (BUFFER OLD NEW) after a scope change.")

(defvar-local tandem-composer--start nil
  "Marker: start of the composer (its prefix).")

(defvar-local tandem-composer--draft-start nil
  "Marker: start of the editable draft (end of the prefix).")

(defvar-local tandem-composer--scope 'chat
  "The scope: `chat' or a plist (:directive ID :action ACTION).")

(defvar-local tandem-composer--chat-stash nil
  "The chat draft stashed while a directive scope is active.")

(defvar-local tandem-composer--directive-drafts nil
  "Alist of directive id to the draft left there by Back to chat.")

(defvar-local tandem-composer-history nil
  "Sent texts of this buffer, newest first (M-p / M-n walk them).")

(defvar-local tandem-composer--history-index -1
  "Index into `tandem-composer-history' shown in the draft; -1 is the draft.")

(defvar-local tandem-composer--history-saved nil
  "The draft as it was before the history walk started.")

(defvar-local tandem-composer-attachments nil
  "Images the next chat send carries, oldest first.
Each is a plist (:name NAME :size BYTES :type MEDIA-TYPE) with either
:path FILE (a file the user chose) or :data BASE64 (the clipboard's
bytes).  A send function that takes them has the symbol property
`tandem-composer-images' and reads this variable; they are cleared only
once the send succeeded.")

(defvar tandem-image-max-bytes)         ; tandem-settings.el

(defface tandem-composer-prefix
  '((t :inherit minibuffer-prompt))
  "Face of the composer's prompt prefix."
  :group 'tandem)

(defface tandem-composer-rule
  '((t :inherit shadow))
  "Face of the rule line above the composer."
  :group 'tandem)

(defface tandem-composer-directive
  '((t :inherit font-lock-keyword-face :weight bold))
  "Face of a directive scope in the prefix."
  :group 'tandem)

(defvar tandem-composer-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'newline)
    (define-key map (kbd "C-c C-c") #'tandem-composer-send)
    (define-key map (kbd "C-c C-k") #'tandem-composer-cancel)
    (define-key map (kbd "C-c C-s") #'tandem-composer-steer)
    (define-key map (kbd "C-c C-b") #'tandem-composer-back-to-chat)
    (define-key map (kbd "C-c C-a") #'tandem-composer-attach-image)
    (define-key map [remap yank] #'tandem-composer-yank)
    (define-key map (kbd "M-p") #'tandem-composer-history-previous)
    (define-key map (kbd "M-n") #'tandem-composer-history-next)
    map)
  "Keys of the composer; a session buffer's mode map inherits them.")

;; C-c C-k cancels the turn in flight: an error that names
;; `tandem-cancel-turn' as the way out shows that key here.
(put 'tandem-cancel-turn 'tandem-hint-command #'tandem-composer-cancel)

;;;; Scope

(defun tandem-composer--valid-scope (scope)
  "Return SCOPE normalized (`chat' or a directive plist), or signal an error."
  (cond ((memq scope '(nil chat)) 'chat)
        ((and (consp scope) (plist-member scope :directive))
         (let ((id (plist-get scope :directive))
               (action (plist-get scope :action)))
           (when (stringp action) (setq action (intern action)))
           (unless (and (stringp id) (string-match-p "\\`[[:alnum:]_.-]+\\'" id))
             (error "Directive scope: the id must be a non-empty word, not %S" id))
           (unless (memq action tandem-composer-actions)
             (error "Directive scope: action must be one of %s, not %S"
                    (mapconcat #'symbol-name tandem-composer-actions " ") action))
           (list :directive id :action action)))
        (t (error "Composer scope must be `chat' or (:directive ID :action ACTION), not %S"
                  scope))))

(defun tandem-composer-scope (&optional buffer)
  "Return the composer scope of BUFFER (default: current buffer)."
  (buffer-local-value 'tandem-composer--scope (or buffer (current-buffer))))

(defun tandem-composer-scope-label (&optional scope)
  "Return a short label for SCOPE (default: the current one)."
  (let ((scope (or scope tandem-composer--scope)))
    (if (eq scope 'chat) "chat"
      (format "%s %s" (plist-get scope :directive) (plist-get scope :action)))))

(defun tandem-composer-set-scope (buffer scope)
  "Set the composer scope of BUFFER to SCOPE and redraw it.
SCOPE is `chat' (or nil) or a plist (:directive ID :action ACTION) with
ACTION one of `tandem-composer-actions'.  Entering a directive scope
from chat stashes the chat draft; returning to chat restores it."
  (unless (buffer-live-p buffer) (error "No live buffer: %S" buffer))
  (let ((new (tandem-composer--valid-scope scope)))
    (with-current-buffer buffer
      (unless (markerp tandem-composer--start)
        (error "Buffer %s has no composer" (buffer-name)))
      (let ((old tandem-composer--scope)
            (draft (tandem-composer-draft)))
        (cond
         ((equal old new))
         ((eq new 'chat)
          (unless (string-empty-p draft)
            (setf (alist-get (plist-get old :directive) tandem-composer--directive-drafts
                             nil nil #'equal)
                  draft))
          (setq tandem-composer--scope 'chat)
          (tandem-composer-set-draft (or tandem-composer--chat-stash ""))
          (setq tandem-composer--chat-stash nil))
         (t
          (when (eq old 'chat) (setq tandem-composer--chat-stash draft))
          (setq tandem-composer--scope new)
          (when (eq old 'chat)
            (tandem-composer-set-draft
             (or (alist-get (plist-get new :directive) tandem-composer--directive-drafts
                            nil nil #'equal)
                 "")))))
        (tandem-composer-refresh)
        (unless (equal old new)
          (run-hook-with-args 'tandem-composer-scope-change-functions buffer old new))
        new))))

(defun tandem-composer-back-to-chat ()
  "Leave the directive scope and restore the stashed chat draft."
  (interactive nil tandem-view-mode)
  (if (eq tandem-composer--scope 'chat)
      (message "The composer is already in chat scope")
    (tandem-composer-set-scope (current-buffer) 'chat)
    (goto-char (point-max))
    (message "Back to chat")))

;;;; Keeping undo to the draft

(defun tandem-composer--shift-undo (list from delta)
  "Move positions at or after FROM in the undo LIST by DELTA, in place."
  (let ((shift (lambda (pos) (if (and (integerp pos) (>= pos from)) (+ pos delta) pos))))
    (while (consp list)
      (let ((e (car list)))
        (cond ((integerp e) (setcar list (funcall shift e)))
              ((and (consp e) (integerp (car e)) (integerp (cdr e)))
               (setcar e (funcall shift (car e)))
               (setcdr e (funcall shift (cdr e))))
              ((and (consp e) (stringp (car e)) (integerp (cdr e)))
               (setcdr e (if (>= (abs (cdr e)) from)
                             (* (cl-signum (cdr e)) (+ (abs (cdr e)) delta))
                           (cdr e))))
              ((and (consp e) (null (car e)) (consp (cdr e)) (consp (cddr e))
                    (consp (cdr (cddr e))))
               (let ((range (cdr (cddr e))))
                 (setcar range (funcall shift (car range)))
                 (setcdr range (funcall shift (cdr range)))))))
      (setq list (cdr list)))))

(defmacro tandem-composer-outside-draft (&rest body)
  "Run BODY, which edits only text before the draft, without undo records.
The draft's own undo records are moved by the size change, so undo in
the composer keeps working while the transcript changes above it."
  (declare (indent 0) (debug t))
  (let ((old (make-symbol "old")) (saved (make-symbol "saved")))
    `(let ((,old (and (markerp tandem-composer--draft-start)
                      (marker-position tandem-composer--draft-start)))
           (,saved buffer-undo-list))
       (prog1 (let ((buffer-undo-list t)) ,@body)
         (when (and ,old (consp ,saved)
                    (/= ,old tandem-composer--draft-start))
           (tandem-composer--shift-undo ,saved ,old
                                        (- tandem-composer--draft-start ,old)))))))

;;;; Drawing

(defun tandem-composer-busy-p ()
  "Return non-nil while the host reports a turn in flight."
  (and tandem-composer-busy-function (funcall tandem-composer-busy-function)))

(defun tandem-composer--prefix ()
  "Return the prefix text for the current scope and state."
  (let* ((busy (tandem-composer-busy-p))
         (directive (not (eq tandem-composer--scope 'chat)))
         (label (tandem-composer-scope-label))
         (keys (concat (if busy "C-c C-c queue · C-c C-s steer · C-c C-k cancel the running turn"
                         "C-c C-c send")
                       (if directive " · C-c C-b back to chat" " · M-p/M-n history")
                       (if tandem-composer-note (concat " · " tandem-composer-note) "")))
         (rule (format "── %s · %s " (if directive (concat "directive " label) "chat") keys)))
    (concat (propertize (concat rule (make-string (max 3 (- 72 (string-width rule))) ?─) "\n")
                        'font-lock-face 'tandem-composer-rule)
            (tandem-composer--attachments-line)
            (if directive
                (propertize label 'font-lock-face 'tandem-composer-directive)
              (propertize "chat" 'font-lock-face 'tandem-composer-prefix))
            (propertize " ❯ " 'font-lock-face 'tandem-composer-prefix))))

(defun tandem-composer--insert-prefix ()
  "Insert the prefix at point with the properties that protect it."
  (let ((start (point)))
    (insert (tandem-composer--prefix))
    (add-text-properties start (point)
                         '(read-only "The composer prompt is not editable; type after it"
                                     tandem-composer-prefix t
                                     front-sticky (read-only)
                                     rear-nonsticky t))))

(defun tandem-composer--update-modeline ()
  "Show the scope in the mode line and the header line."
  (setq mode-line-process (format " [%s%s]" (tandem-composer-scope-label)
                                  (if (tandem-composer-busy-p) " · running" "")))
  (force-mode-line-update))

(defun tandem-composer-setup ()
  "Insert the composer at the end of the current buffer.
The prefix is read-only; everything after it is the draft."
  (goto-char (point-max))
  (let ((inhibit-read-only t))
    (setq tandem-composer--start (copy-marker (point)))
    (tandem-composer--insert-prefix)
    (setq tandem-composer--draft-start (copy-marker (point))))
  (add-hook 'completion-at-point-functions #'tandem-composer-mention-capf nil t)
  (tandem-composer--update-modeline))

(defun tandem-composer--positions ()
  "Return the draft offsets of point and of every window point in the draft.
The result is a list of (WINDOW-OR-nil . OFFSET) for positions at or
after the draft start."
  (let ((start (marker-position tandem-composer--draft-start)) (out nil))
    (when (>= (point) start) (push (cons nil (- (point) start)) out))
    (dolist (w (get-buffer-window-list (current-buffer) nil t))
      (when (>= (window-point w) start) (push (cons w (- (window-point w) start)) out)))
    out))

(defun tandem-composer--restore-positions (saved)
  "Restore the positions SAVED by `tandem-composer--positions'."
  (let ((start (marker-position tandem-composer--draft-start)))
    (dolist (entry saved)
      (let ((pos (min (point-max) (+ start (cdr entry)))))
        (if (car entry) (set-window-point (car entry) pos) (goto-char pos))))))

(defun tandem-composer-refresh ()
  "Redraw the composer prefix; the draft and point stay as they are."
  (when (markerp tandem-composer--start)
    (let ((saved (tandem-composer--positions))
          (modified (buffer-modified-p))
          (inhibit-read-only t)
          (inhibit-modification-hooks t))
      (tandem-composer-outside-draft
        (save-excursion
          (delete-region tandem-composer--start tandem-composer--draft-start)
          (goto-char tandem-composer--start)
          (tandem-composer--insert-prefix)
          (set-marker tandem-composer--draft-start (point))))
      (tandem-composer--restore-positions saved)
      (restore-buffer-modified-p modified))
    (tandem-composer--update-modeline)))

(defun tandem-composer-draft (&optional buffer)
  "Return the draft text of BUFFER (default: current buffer), without properties."
  (with-current-buffer (or buffer (current-buffer))
    (unless (markerp tandem-composer--draft-start)
      (error "Buffer %s has no composer" (buffer-name)))
    (buffer-substring-no-properties tandem-composer--draft-start (point-max))))

(defun tandem-composer-set-draft (text &optional buffer)
  "Replace the draft of BUFFER (default: current buffer) with TEXT.
Point moves to the end of the draft when it was in it."
  (unless (stringp text) (signal 'wrong-type-argument (list 'stringp text)))
  (with-current-buffer (or buffer (current-buffer))
    (let ((in-draft (>= (point) tandem-composer--draft-start)))
      (delete-region tandem-composer--draft-start (point-max))
      (save-excursion (goto-char (point-max)) (insert text))
      (when in-draft (goto-char (point-max))))))

;;;; Images

(defconst tandem-composer-image-default-max (* 5 1024 1024)
  "The image size limit while `tandem-image-max-bytes' is unset.
The backend's default is the same.")

(defconst tandem-composer-image-extensions '("png" "jpg" "jpeg" "gif" "webp")
  "File name extensions the attach prompt offers (the bytes decide the type).")

(defun tandem-composer-image-type (bytes)
  "Return the media type BYTES start like (PNG, JPEG, GIF, WebP), or nil."
  (cond ((string-prefix-p "\x89PNG\r\n\x1a\n" bytes) "image/png")
        ((string-prefix-p "\xff\xd8\xff" bytes) "image/jpeg")
        ((or (string-prefix-p "GIF87a" bytes) (string-prefix-p "GIF89a" bytes)) "image/gif")
        ((and (>= (length bytes) 12) (string-prefix-p "RIFF" bytes)
              (equal (substring bytes 8 12) "WEBP"))
         "image/webp")))

(defun tandem-composer-size-label (bytes)
  "Return the size BYTES the way a placeholder writes it: \"120 KB\", \"1.5 MB\"."
  (if (>= bytes (* 1024 1024))
      (format "%.1f MB" (/ bytes 1048576.0))
    (format "%d KB" (max 1 (round bytes 1024.0)))))

(defun tandem-composer-image-label (name size)
  "Return the placeholder of an image: [image: NAME SIZE]."
  (format "[image: %s %s]" name (tandem-composer-size-label size)))

(defun tandem-composer--image-max ()
  "Return the largest image an attachment may be, in bytes."
  (or (and (boundp 'tandem-image-max-bytes) (natnump tandem-image-max-bytes)
           tandem-image-max-bytes)
      tandem-composer-image-default-max))

(defun tandem-composer--check-image (name bytes-or-size head)
  "Return the media type of an image whose first bytes are HEAD.
Signal a `user-error' when HEAD is no image's start or BYTES-OR-SIZE,
its size, is over the limit.  NAME names it in the message."
  (let ((max (tandem-composer--image-max)))
    (when (> bytes-or-size max)
      (user-error "%s is %s, over the %s limit for an image (tandem-image-max-bytes)"
                  name (tandem-composer-size-label bytes-or-size)
                  (tandem-composer-size-label max)))
    (or (tandem-composer-image-type head)
        (user-error "%s is not a PNG, JPEG, GIF or WebP image (by its first bytes)" name))))

(defun tandem-composer--file-head (file)
  "Return the first 16 bytes of FILE, unibyte."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert-file-contents-literally file nil 0 16)
    (buffer-string)))

(defun tandem-composer--image-file-p (file)
  "Return non-nil when FILE is a folder or is named like an image.
The attach prompt's filter."
  (or (file-directory-p file)
      (member (downcase (or (file-name-extension file) "")) tandem-composer-image-extensions)))

(defun tandem-composer--default-image ()
  "Return the newest image file of `default-directory', or nil."
  (let ((files (cl-remove-if-not
                (lambda (f) (and (file-regular-p f) (tandem-composer--image-file-p f)))
                (directory-files default-directory t "\\`[^.]" t))))
    (car (sort files #'file-newer-than-file-p))))

(defun tandem-composer-attach-file (file)
  "Attach the image FILE to the next send; return its attachment plist."
  (let* ((file (expand-file-name file))
         (name (file-name-nondirectory file))
         (attrs (file-attributes file)))
    (unless (and attrs (file-regular-p file))
      (user-error "%s is not a regular file" file))
    (let* ((size (file-attribute-size attrs))
           (type (tandem-composer--check-image name size (tandem-composer--file-head file))))
      (tandem-composer--add (list :name name :size size :type type :path file)))))

(defconst tandem-composer-image-data-max (* 12 1024 1024)
  "The largest image attached by its bytes (the clipboard's).
In base64 it must fit one message to the backend (16 MiB); a larger
image can be saved to a file and attached as the file.")

(defun tandem-composer-attach-data (bytes &optional name)
  "Attach the image BYTES (a unibyte string) under NAME; return its plist."
  (let* ((name (or name "clipboard.png"))
         (type (tandem-composer--check-image name (length bytes) bytes)))
    (when (> (length bytes) tandem-composer-image-data-max)
      (user-error "The clipboard's image is %s: save it to a file and attach the file"
                  (tandem-composer-size-label (length bytes))))
    (tandem-composer--add (list :name name :size (length bytes) :type type
                                :data (base64-encode-string bytes t)))))

(defun tandem-composer--add (attachment)
  "Add ATTACHMENT to the composer's attachments, redraw, return it."
  (setq tandem-composer-attachments (append tandem-composer-attachments (list attachment)))
  (tandem-composer-refresh)
  (message "Attached %s (C-u C-c C-a removes it)"
           (tandem-composer-image-label (plist-get attachment :name)
                                        (plist-get attachment :size)))
  attachment)

(defun tandem-composer--clipboard-image ()
  "Return the clipboard's PNG bytes in a graphical frame, or nil."
  (when (display-graphic-p)
    (let ((data (ignore-errors (gui-get-selection 'CLIPBOARD 'image/png))))
      (and (stringp data) (> (length data) 0)
           (string-to-unibyte (if (multibyte-string-p data) (encode-coding-string data 'binary)
                                data))))))

(defun tandem-composer-remove-attachment (&optional attachment)
  "Remove ATTACHMENT (asked for when there are several) from the next send."
  (interactive nil tandem-view-mode)
  (unless tandem-composer-attachments (user-error "Nothing is attached"))
  (let ((attachment
         (or attachment
             (if (cdr tandem-composer-attachments)
                 (let* ((labels (mapcar (lambda (a) (cons (tandem-composer-image-label
                                                           (plist-get a :name)
                                                           (plist-get a :size))
                                                          a))
                                        tandem-composer-attachments))
                        (chosen (completing-read "Remove the attachment: " labels nil t)))
                   (cdr (assoc chosen labels)))
               (car tandem-composer-attachments)))))
    (setq tandem-composer-attachments (delq attachment tandem-composer-attachments))
    (tandem-composer-refresh)
    (message "Removed %s" (plist-get attachment :name))))

(defun tandem-composer-attach-image (&optional remove)
  "Attach an image to the next request: the clipboard's, or a file.
In a graphical frame with an image on the clipboard, offer that first;
otherwise read an image file (the newest image of the folder is the
default).  With REMOVE (\[universal-argument]), remove an attachment instead."
  (interactive "P" tandem-view-mode)
  (if remove
      (tandem-composer-remove-attachment)
    (let ((clip (tandem-composer--clipboard-image)))
      (if (and clip (y-or-n-p "Attach the image on the clipboard? "))
          (tandem-composer-attach-data clip)
        (let ((default (tandem-composer--default-image)))
          (tandem-composer-attach-file
           (read-file-name (if default
                               (format "Attach image (default %s): "
                                       (file-name-nondirectory default))
                             "Attach image: ")
                           nil default t nil #'tandem-composer--image-file-p)))))))

(defun tandem-composer-yank (&optional arg)
  "Yank as `yank' does (ARG too); an image on the clipboard is attached instead.
Only in a graphical frame, and only when the clipboard holds no text."
  (interactive "*P" tandem-view-mode)
  (let ((clip (and (not arg)
                   (not (ignore-errors (gui-get-selection 'CLIPBOARD 'UTF8_STRING)))
                   (tandem-composer--clipboard-image))))
    (if clip
        (tandem-composer-attach-data clip)
      (setq this-command 'yank)
      (yank arg))))

(define-button-type 'tandem-composer-attachment
  'follow-link t
  'help-echo "Remove this attachment"
  'action (lambda (button)
            (tandem-composer-remove-attachment (button-get button 'tandem-attachment))))

(defun tandem-composer--attachments-line ()
  "Return the line listing the attachments, or \"\".
Each attachment is a button that removes it."
  (if (null tandem-composer-attachments)
      ""
    (concat (propertize "attached: " 'font-lock-face 'tandem-composer-rule)
            (mapconcat
             (lambda (a)
               (let ((label (tandem-composer-image-label (plist-get a :name) (plist-get a :size))))
                 (if (fboundp 'make-text-button)
                     (make-text-button label nil 'type 'tandem-composer-attachment
                                       'tandem-attachment a)
                   label)))
             tandem-composer-attachments " ")
            (propertize "  (C-u C-c C-a or a click removes)\n"
                        'font-lock-face 'tandem-composer-rule))))

;;;; Sending and history

(defun tandem-composer-send ()
  "Send the draft in the current scope; it never cancels anything.
While a turn is in flight, a chat draft is queued: it goes as the next
turn once the running one ends well (`tandem-composer-queue-function').
Return what the send or queue function returned (a session buffer's
chat send returns nil at once: the turn is drawn when the backend
accepts it)."
  (interactive nil tandem-view-mode)
  (let ((text (string-trim (tandem-composer-draft)))
        (scope tandem-composer--scope)
        (busy (tandem-composer-busy-p))
        (images tandem-composer-attachments)
        (result nil))
    (when (string-empty-p text) (user-error "The draft is empty"))
    (when images
      (cond ((not (eq scope 'chat))
             (user-error "Images go with chat requests: C-c C-b back to chat, or C-u C-c C-a \
removes them"))
            (busy
             (user-error "An image goes with a request sent when no turn runs: wait for it, \
C-c C-k cancels it, or C-u C-c C-a removes the image"))
            ((not (and (symbolp tandem-composer-send-function)
                       (get tandem-composer-send-function 'tandem-composer-images)))
             (user-error "This send takes no images: C-u C-c C-a removes them"))))
    (setq result
          (cond
           ((and busy (eq scope 'chat))
            (unless tandem-composer-queue-function
              (user-error "A turn is running and this buffer cannot queue; C-c C-k cancels it"))
            (funcall tandem-composer-queue-function text))
           ((eq scope 'chat)
            (unless tandem-composer-send-function
              (user-error "This buffer cannot send"))
            (funcall tandem-composer-send-function text scope))
           (busy
            (user-error "A turn is running: a directive action waits for it (C-c C-b back \
to chat queues a message, C-c C-k cancels the turn)"))
           (t
            (unless tandem-composer-directive-send-function
              (user-error "Directive actions are not available (tandem-directive is not loaded)"))
            (funcall tandem-composer-directive-send-function
                     (plist-get scope :directive) (plist-get scope :action) text
                     (current-buffer)))))
    ;; Sent: only now is the draft cleared (a failure above keeps it).
    (unless (equal text (car tandem-composer-history))
      (push text tandem-composer-history))
    (setq tandem-composer--history-index -1 tandem-composer--history-saved nil)
    (tandem-composer-set-draft (or tandem-composer-after-send-draft ""))
    (setq tandem-composer-after-send-draft nil
          tandem-composer-attachments nil)
    (tandem-composer-refresh)
    result))

(defun tandem-composer-steer ()
  "Give the draft to the turn in flight, for the turn's next step.
Unlike \\[tandem-composer-send], which queues the draft for after the
turn, this hands it to the running turn (`tandem-composer-steer-function').
Return what that function returned."
  (interactive nil tandem-view-mode)
  (let ((text (string-trim (tandem-composer-draft))))
    (when (string-empty-p text) (user-error "The draft is empty"))
    (unless (tandem-composer-busy-p)
      (user-error "No turn is running: C-c C-c sends the draft"))
    (unless (eq tandem-composer--scope 'chat)
      (user-error "Steering is chat guidance: C-c C-b goes back to chat first"))
    (unless tandem-composer-steer-function (user-error "This buffer cannot steer"))
    (prog1 (funcall tandem-composer-steer-function text)
      ;; Given (or queued instead): only now is the draft cleared.
      (unless (equal text (car tandem-composer-history))
        (push text tandem-composer-history))
      (setq tandem-composer--history-index -1 tandem-composer--history-saved nil)
      (tandem-composer-set-draft "")
      (tandem-composer-refresh))))

(defun tandem-composer-cancel ()
  "Cancel the turn in flight (the host asks first when it already did work).
The draft is never touched."
  (interactive nil tandem-view-mode)
  (cond ((not (tandem-composer-busy-p)) (message "No turn is running"))
        ((not tandem-composer-cancel-function) (user-error "Nothing can cancel this turn"))
        (t (funcall tandem-composer-cancel-function))))

(defun tandem-composer--history-move (delta)
  "Show the history item DELTA places older (negative: newer) in the draft."
  (let* ((index (+ tandem-composer--history-index delta))
         (size (length tandem-composer-history)))
    (cond ((>= index size) (user-error "No older history item"))
          ((< index -1) (user-error "No newer history item")))
    (when (= tandem-composer--history-index -1)
      (setq tandem-composer--history-saved (tandem-composer-draft)))
    (setq tandem-composer--history-index index)
    (tandem-composer-set-draft (if (= index -1)
                                   (or tandem-composer--history-saved "")
                                 (nth index tandem-composer-history)))
    (goto-char (point-max))))

(defun tandem-composer-history-previous ()
  "Replace the draft with the previous (older) sent text."
  (interactive nil tandem-view-mode)
  (tandem-composer--history-move 1))

(defun tandem-composer-history-next ()
  "Replace the draft with the next (newer) sent text, or the saved draft."
  (interactive nil tandem-view-mode)
  (tandem-composer--history-move -1))

;;;; Mentions

(defvar-local tandem-composer-root-function nil
  "Function returning the session's root directory, or nil.
An @ mention completes the files of that project; nil means
`default-directory'.  Set by the buffer hosting the composer.")

(defvar-local tandem-composer-turns-function nil
  "Function returning this session's turns as (NUMBER . REQUEST) pairs.
Their @T mentions complete from it.  Set by the hosting buffer.")

(defvar tandem-composer-directives-function nil
  "Function called with a project ROOT, returning its directives.
Each is a pair (ID . REQUEST); @D mentions complete from them.  Set
by the directive code; nil offers none.")

(defcustom tandem-composer-mention-max-files 20000
  "Most project files an @ mention offers (project.el's list, cut)."
  :type 'integer
  :group 'tandem)

(defun tandem-composer--mention-root ()
  "Return the directory whose files @ mentions complete, with a final slash."
  (file-name-as-directory
   (expand-file-name (or (and tandem-composer-root-function
                              (funcall tandem-composer-root-function))
                         default-directory))))

(defun tandem-composer--walk (root limit)
  "Return at most LIMIT files under ROOT, breadth first.
Symlinked folders and those of version control or tools are skipped."
  (let ((queue (list root)) (out nil) (n 0))
    (while (and queue (< n limit))
      (dolist (f (ignore-errors
                   (directory-files (pop queue) t directory-files-no-dot-files-regexp t)))
        (cond ((file-directory-p f)
               (unless (or (file-symlink-p f)
                           (member (file-name-nondirectory f)
                                   '(".git" ".hg" ".svn" "node_modules" ".venv"
                                     "__pycache__")))
                 (setq queue (nconc queue (list f)))))
              ((< n limit) (push f out) (setq n (1+ n))))))
    (nreverse out)))

(defun tandem-composer--project-files (root)
  "Return ROOT's files, relative to it: project.el's list, else a bounded walk."
  (let* ((project (project-current nil root))
         (limit tandem-composer-mention-max-files)
         (files (if project (project-files project) (tandem-composer--walk root limit))))
    (mapcar (lambda (f) (file-relative-name f root))
            (seq-take (seq-filter (lambda (f) (string-prefix-p root (expand-file-name f)))
                                  files)
                      limit))))

(defun tandem-composer--buffer-symbols (buffer root)
  "Return BUFFER's imenu symbols as (NAME BUFFER POSITION PATH), PATH under ROOT."
  (with-current-buffer buffer
    (let ((index (ignore-errors (imenu--make-index-alist t)))
          (path (file-relative-name buffer-file-name root))
          (out nil))
      (cl-labels ((walk (items)
                    (dolist (item items)
                      (cond ((imenu--subalist-p item) (walk (cdr item)))
                            ((and (consp item) (not (equal (car item) imenu--rescan-item))
                                  (or (number-or-marker-p (cdr item))
                                      (overlayp (cdr item))))
                             (push (list (car item) buffer
                                         (let ((pos (cdr item)))
                                           (if (overlayp pos) (overlay-start pos) pos))
                                         path)
                                   out))))))
        (walk index))
      (nreverse out))))

(defun tandem-composer--symbol-range (buffer position path)
  "Return the mention PATH#La-b of the definition at POSITION in BUFFER."
  (with-current-buffer buffer
    (save-excursion
      (goto-char position)
      (let ((start (line-number-at-pos (line-beginning-position) t)))
        (ignore-errors (end-of-defun))
        (let ((end (max start (line-number-at-pos
                               (if (bolp) (max (point-min) (1- (point))) (point)) t))))
          (format "%s#L%d-%d" path start end))))))

(defvar-local tandem-composer--mention-cache nil
  "The candidates of the mention being completed: (START TIME . TABLE).
A front end that completes as you type (corfu, company) asks on every
key; the project's files are listed once per mention, for a few seconds.")

(defun tandem-composer--mention-candidates (start)
  "Return the candidates of the mention at START.
The value is a hash table: candidate -> (KIND . DATA).  KIND is
`file', `buffer', `symbol', `directive' or `turn'."
  (let ((cached tandem-composer--mention-cache))
    (if (and cached (eql (car cached) start) (< (- (float-time) (cadr cached)) 5))
        (cddr cached)
      (let ((table (tandem-composer--mention-table)))
        (setq tandem-composer--mention-cache (cons start (cons (float-time) table)))
        table))))

(defun tandem-composer--mention-table ()
  "Return a fresh hash of every @ mention candidate: candidate -> (KIND . DATA)."
  (let* ((root (tandem-composer--mention-root))
         (table (make-hash-table :test #'equal)))
    (dolist (file (ignore-errors (tandem-composer--project-files root)))
      (puthash file (cons 'file file) table))
    (dolist (buffer (buffer-list))
      (let ((file (buffer-local-value 'buffer-file-name buffer)))
        (when (and file (file-in-directory-p file root))
          (puthash (file-relative-name file root)
                   (cons 'buffer (buffer-modified-p buffer)) table)
          (dolist (sym (tandem-composer--buffer-symbols buffer root))
            (unless (gethash (car sym) table)
              (puthash (car sym) (cons 'symbol (cdr sym)) table))))))
    (when tandem-composer-directives-function
      (dolist (d (ignore-errors (funcall tandem-composer-directives-function root)))
        (puthash (car d) (cons 'directive (cdr d)) table)))
    (when tandem-composer-turns-function
      (dolist (turn (ignore-errors (funcall tandem-composer-turns-function)))
        (puthash (format "T%d" (car turn)) (cons 'turn (cdr turn)) table)))
    table))

(defun tandem-composer--mention-annotation (table)
  "Return an annotation function for the candidates of TABLE."
  (lambda (candidate)
    (pcase (gethash candidate table)
      (`(file . ,_) "  file")
      (`(buffer . ,modified) (if modified "  buffer (unsaved edits)" "  buffer"))
      (`(symbol ,_ ,_ ,path) (concat "  symbol in " path))
      (`(directive . ,request)
       (concat "  directive " (truncate-string-to-width (or request "") 40 nil nil "…")))
      (`(turn . ,request)
       (concat "  turn " (truncate-string-to-width (or request "") 40 nil nil "…")))
      (_ ""))))

(defun tandem-composer-mention-capf ()
  "Complete an @ mention at point in the composer's draft.
Candidates are the project's files, the buffers visiting them, the
symbols of those buffers (imenu), directives (D3) and turns (T12).  A
symbol is inserted as the range of its definition (path#L10-24).  The
backend attaches what each mention names when the request is sent."
  (when (and tandem-composer--draft-start (>= (point) tandem-composer--draft-start))
    (let ((end (point))
          (start (save-excursion
                   (skip-chars-backward "^ \t\n@`'\"()[]{}<>" tandem-composer--draft-start)
                   (and (eq (char-before) ?@)
                        (or (= (1- (point)) tandem-composer--draft-start)
                            (memq (char-before (1- (point))) '(?\s ?\t ?\n)))
                        (point)))))
      (when start
        (let ((table (tandem-composer--mention-candidates start)))
          (list start end table
                :exclusive 'no
                :annotation-function (tandem-composer--mention-annotation table)
                :company-kind (lambda (c) (pcase (car (gethash c table))
                                            ('symbol 'function) ('directive 'event)
                                            ('turn 'text) (_ 'file)))
                :exit-function
                (lambda (candidate status)
                  (when (memq status '(finished exact sole))
                    (pcase (gethash candidate table)
                      (`(symbol ,buffer ,position ,path)
                       (let ((from (- (point) (length candidate))))
                         (when (and (buffer-live-p buffer) (>= from start)
                                    (equal (buffer-substring-no-properties from (point))
                                           candidate))
                           (delete-region from (point))
                           (insert (tandem-composer--symbol-range
                                    buffer position path))))))))))))))

(provide 'tandem-composer)
;;; tandem-composer.el ends here
