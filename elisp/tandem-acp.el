;;; tandem-acp.el --- ACP agents: buffers as their file system, modes, models  -*- lexical-binding: t; -*-

;;; Commentary:
;; An ACP agent reads and writes files through the client (ACP `fs/*').
;; The backend answers those requests from the Emacs buffer visiting the
;; file when there is one, by calling the two functions below:
;;
;;   `tandem--buffer-text'  -- the text of the buffer visiting a file,
;;                             unsaved edits included (nil: none visits it).
;;   `tandem--write-buffer' -- replace that text (one undoable change) and
;;                             save the buffer (nil: none visits it).
;;
;; The commands `tandem-acp-set-mode' and `tandem-acp-set-model' offer the
;; modes and models the session's ACP agent announces and apply the choice
;; to the session (the backend records it in the journal).

;;; Code:

(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-read)

(defun tandem--buffer-text (_conn file)
  "Return the whole text of the buffer visiting FILE, or nil when none does.
The text is what the user sees, unsaved edits included; narrowing is
ignored."
  (let ((buffer (find-buffer-visiting file)))
    (when buffer
      (with-current-buffer buffer
        (save-restriction
          (widen)
          (buffer-substring-no-properties (point-min) (point-max)))))))

(defun tandem--write-buffer (_conn file content)
  "Replace the text of the buffer visiting FILE by CONTENT and save it.
Return t, or nil when no buffer visits FILE.  The change is one undo
step; point and markers stay where the text around them is unchanged.
A read-only buffer signals an error, which the agent is told."
  (let ((buffer (find-buffer-visiting file)))
    (when buffer
      (with-current-buffer buffer
        (when buffer-read-only
          (error "Buffer %s is read-only" (buffer-name)))
        (let ((source (generate-new-buffer " *tandem-acp-write*" t)))
          (unwind-protect
              (progn
                (with-current-buffer source (insert content))
                ;; Boundaries on both sides and none inside: one undo step,
                ;; separate from the user's own edits before it.
                (undo-boundary)
                (save-restriction
                  (widen)
                  (replace-buffer-contents source 1.0))
                (undo-boundary))
            (kill-buffer source)))
        ;; Saved, so that the turn's checkpoint and patch (taken from disk)
        ;; and the agent's other tools see what the agent wrote.
        (save-buffer))
      t)))

(setf (alist-get 'tandem--buffer-text tandem-client-methods) #'tandem--buffer-text)
(setf (alist-get 'tandem--write-buffer tandem-client-methods) #'tandem--write-buffer)

(defun tandem-acp--options (&optional session)
  "Return the modes and models of SESSION's ACP agent (current and chosen too)."
  (tandem-configure)
  (tandem-request "acp/options"
                  (append (list :session (or session (tandem-project-session)))
                          (and tandem-provider (list :provider tandem-provider)))
                  120))

(defun tandem-acp--choose (kind value &optional session)
  "Choose VALUE as SESSION's agent KIND (\"mode\" or \"model\"); return the options."
  (tandem-request "acp/choose"
                  (append (list :session (or session (tandem-project-session))
                                :kind kind :value value)
                          (and tandem-provider (list :provider tandem-provider)))
                  120))

(defun tandem-acp--read (kind choices current)
  "Read one of CHOICES (plists :id :name) as a KIND, CURRENT first; return its id."
  (let* ((table (mapcar (lambda (c)
                          (cons (if (equal (plist-get c :id) (plist-get c :name))
                                    (plist-get c :id)
                                  (format "%s (%s)" (plist-get c :id) (plist-get c :name)))
                                (plist-get c :id)))
                        choices))
         (default (car (rassoc current table)))
         (picked (tandem-read-choice (format "Agent %s" kind) (mapcar #'car table)
                                     :default default :require-match t)))
    (cdr (assoc picked table))))

(defun tandem-acp--set (kind value)
  "Ask for (unless VALUE) and apply the session agent's KIND: \"mode\" or \"model\"."
  (let* ((options (tandem-acp--options))
         (choices (plist-get options (if (equal kind "mode") :modes :models)))
         (current (plist-get options (if (equal kind "mode") :mode :model))))
    (unless choices
      (user-error "ACP agent %s offers no %ss" (plist-get options :agent) kind))
    (let* ((value (or value (tandem-acp--read kind choices current)))
           (after (tandem-acp--choose kind value)))
      (message "Agent %s: %s" kind (plist-get after (if (equal kind "mode") :mode :model)))
      after)))

;;;###autoload
(defun tandem-acp-set-mode (&optional mode)
  "Choose the session's ACP agent MODE (e.g. plan), read with completion.
The choice holds for the session's later turns, within the permission
mode: a read-only turn still runs in the agent's read-only mode."
  (interactive)
  (tandem-acp--set "mode" mode))

;;;###autoload
(defun tandem-acp-set-model (&optional model)
  "Choose the session's ACP agent MODEL, read with completion."
  (interactive)
  (tandem-acp--set "model" model))

(provide 'tandem-acp)
;;; tandem-acp.el ends here
