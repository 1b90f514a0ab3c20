;;; tandem-inspector.el --- Read-only view of one directive record  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-inspect-directive' shows one directive straight from the
;; workspace record: request history, anchor, binding, attempts (exact
;; prompt, answer, outcome, capture completeness, checkpoint link, patch on
;; demand) and discussion.  It needs neither the session journal nor the
;; source file, so it works after compaction, archive, or their loss.  It
;; owns no streaming and no composer.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'button)
(require 'tandem-directive)

(defvar-local tandem-inspector--id nil "The directive this inspector shows.")
(defvar-local tandem-inspector--root nil "The project root of that directive.")

(defface tandem-inspector-heading '((t :inherit font-lock-function-name-face :weight bold))
  "Face of the inspector's section headings."
  :group 'tandem-directive)

(defvar tandem-inspector-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map special-mode-map)
    (define-key map "g" #'tandem-inspector-refresh)
    (define-key map (kbd "TAB") #'forward-button)
    (define-key map (kbd "<backtab>") #'backward-button)
    map)
  "Keys of `tandem-inspector-mode'.")

(define-derived-mode tandem-inspector-mode special-mode "Tandem-Inspect"
  "Read-only view of one directive record.
\\{tandem-inspector-mode-map}"
  (setq-local truncate-lines nil)
  (setq-local word-wrap t))

;; Only the buffers made for it use it: M-x does not offer it.
(function-put 'tandem-inspector-mode 'completion-predicate #'ignore)

(defun tandem-inspector--heading (text)
  "Insert TEXT as a section heading."
  (insert "\n" (propertize text 'face 'tandem-inspector-heading) "\n"))

(defun tandem-inspector--field (label value)
  "Insert LABEL: VALUE on one line when VALUE is non-nil."
  (when (and value (not (equal value "")))
    (insert (format "  %-14s %s\n" (concat label ":") value))))

(defun tandem-inspector--block (text)
  "Insert TEXT indented."
  (let ((start (point)))
    (insert (string-trim-right (or text "")) "\n")
    (indent-rigidly start (point) 4)))

(defun tandem-inspector--toggle (label text)
  "Insert a button LABEL to show or hide TEXT below it (hidden at first)."
  (insert "  ")
  (let ((marker nil))
    (insert-text-button
     label 'follow-link t
     'action (lambda (_b)
               (let ((inhibit-read-only t))
                 (save-excursion
                   (goto-char marker)
                   (if (get-text-property (point) 'tandem-inspector-shown)
                       (delete-region (point) (or (next-single-property-change
                                                   (point) 'tandem-inspector-shown)
                                                  (point-max)))
                     (let ((start (point)))
                       (tandem-inspector--block text)
                       (put-text-property start (point) 'tandem-inspector-shown t)))))))
    (insert "\n")
    (setq marker (copy-marker (point)))))

(defun tandem-inspector--attempt (a id root)
  "Insert attempt A of directive ID in ROOT."
  (tandem-inspector--heading (format "Attempt %s · %s · %s%s" (plist-get a :seq)
                                     (plist-get a :action) (plist-get a :outcome)
                                     (if (plist-get a :repaired) " (recorded after a crash)"
                                       "")))
  (tandem-inspector--field "Checkpoint" (format "session %s, turn %s%s" (plist-get a :session)
                                                (plist-get a :turn)
                                                (if (plist-get a :checkpoint)
                                                    (format " (checkpoint %s)"
                                                            (substring (plist-get a :checkpoint)
                                                                       0 12))
                                                  "")))
  (tandem-inspector--field "Provider" (plist-get a :provider))
  (tandem-inspector--field "System" (plist-get (plist-get a :directive) :name))
  (tandem-inspector--field "Completeness" (plist-get a :completeness))
  (tandem-inspector--field "Based on" (and (plist-get a :based-on)
                                           (format "attempt %s" (plist-get a :based-on))))
  (tandem-inspector--field "Text" (plist-get a :text))
  (tandem-inspector--field "Error" (plist-get a :error))
  (let ((files (mapcar (lambda (f) (format "%s (%s)" (plist-get f :path) (plist-get f :status)))
                       (plist-get (plist-get a :patch) :files))))
    (tandem-inspector--field "Files" (and files (string-join files ", "))))
  (tandem-inspector--toggle "[Prompt]" (plist-get a :prompt))
  (insert "  Answer:\n")
  (tandem-inspector--block (if (string-empty-p (or (plist-get a :answer) "")) "(no answer)"
                             (plist-get a :answer)))
  (let ((seq (plist-get a :seq)))
    (insert "  ")
    (insert-text-button "[View patch]" 'follow-link t
                        'action (lambda (_b)
                                  (let ((tandem-directive-root root))
                                    (tandem-directive-view-changes id seq))))
    (insert "\n")))

(defun tandem-inspector--render (record)
  "Insert RECORD (a directive record plist)."
  (let ((id (plist-get record :id))
        (root (plist-get record :root))
        (anchor (plist-get record :anchor)))
    (insert (propertize (format "Directive %s — %s" id (tandem-directive-state-label record))
                        'face 'tandem-inspector-heading)
            (if (plist-get record :archived) "  [archived]" "") "\n")
    (tandem-inspector--field "Workspace" root)
    (tandem-inspector--field "Anchor" (format "%s, lines %s-%s (%s)" (plist-get anchor :path)
                                              (plist-get anchor :start-line)
                                              (plist-get anchor :end-line)
                                              (plist-get anchor :status)))
    (tandem-inspector--field "Session" (plist-get record :session))
    (tandem-inspector--field "Before" (and (plist-get record :previous-sessions)
                                           (string-join (plist-get record :previous-sessions)
                                                        ", ")))
    (tandem-inspector--field "Actions" (string-join (plist-get record :actions) ", "))
    (let ((discarded (plist-get record :discarded)))
      (when (or (plist-get discarded :attempts) (plist-get discarded :discussion))
        (tandem-inspector--field "Rewound" (format "attempts %S, discussion %S"
                                                   (plist-get discarded :attempts)
                                                   (plist-get discarded :discussion)))))
    (tandem-inspector--heading "Request")
    (tandem-inspector--block (plist-get record :request))
    (when (cdr (plist-get record :request-history))
      (tandem-inspector--heading "Request history")
      (dolist (h (plist-get record :request-history))
        (insert (format "  %s\n" (plist-get h :ts)))
        (tandem-inspector--block (plist-get h :request))))
    (tandem-inspector--heading "Anchor text")
    (tandem-inspector--block (plist-get anchor :text))
    (dolist (a (plist-get record :attempts))
      (tandem-inspector--attempt a id root))
    (when (plist-get record :discussion)
      (tandem-inspector--heading "Discussion")
      (dolist (d (plist-get record :discussion))
        (insert (format "  #%s %s%s · %s · session %s, turn %s\n" (plist-get d :seq)
                        (plist-get d :action)
                        (if (plist-get d :attempt) (format " (attempt %s)" (plist-get d :attempt))
                          "")
                        (plist-get d :outcome) (plist-get d :session) (plist-get d :turn)))
        (insert "  You:\n")
        (tandem-inspector--block (if (string-empty-p (or (plist-get d :text) ""))
                                     "(discuss the request)" (plist-get d :text)))
        (insert "  Answer:\n")
        (tandem-inspector--block (or (plist-get d :error) (plist-get d :answer)))
        (tandem-inspector--toggle "[Prompt]" (plist-get d :prompt))))))

;;;###autoload
(defun tandem-inspect-directive (id &optional root)
  "Open the read-only inspector of directive ID (in ROOT's workspace).
Return its buffer."
  (interactive (list (tandem-directive-id-at-point t)))
  (let* ((root (tandem-directive--root root))
         (record (tandem-directive-record id root))
         (buffer (get-buffer-create (format "*tandem-inspect: %s %s*" id
                                            (file-name-nondirectory root)))))
    (with-current-buffer buffer
      (tandem-inspector-mode)
      (setq tandem-inspector--id id tandem-inspector--root root)
      (setq-local tandem-directive-root root)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (tandem-inspector--render record))
      (goto-char (point-min)))
    (pop-to-buffer buffer)
    buffer))

(defun tandem-inspector-refresh ()
  "Re-read the record and redraw."
  (interactive nil tandem-inspector-mode)
  (tandem-inspect-directive tandem-inspector--id tandem-inspector--root))

(defun tandem-inspector--id-here ()
  "Return the inspected directive's id in an inspector buffer."
  (and (derived-mode-p 'tandem-inspector-mode) tandem-inspector--id))

(add-hook 'tandem-directive-id-functions #'tandem-inspector--id-here)

(provide 'tandem-inspector)
;;; tandem-inspector.el ends here
