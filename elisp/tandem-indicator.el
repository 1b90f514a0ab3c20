;;; tandem-indicator.el --- Never miss a question: mode line, answer from anywhere  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A session may wait for the user (a permission question) while its
;; buffer is buried.  `tandem-indicator-mode', a global minor mode on
;; when tandem is loaded, keeps the questions the backend asked and not
;; yet answered, from its events, and shows in every mode line how many
;; wait and for which project.  `tandem-answer', from any buffer,
;; answers one with `read-multiple-choice'.  A session buffer you do not
;; see also tells you through `tandem-notify-function' (tandem-notify.el).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-read)
(require 'tandem-view-state)
(require 'tandem-view-render)

(make-obsolete-variable 'tandem-notify-questions 'tandem-notify-events "0.2.0")

(defvar tandem-indicator--pending nil
  "Questions waiting for the user, oldest first.
Each a plist (:session :turn :interaction-id :title :options :project).")

(defvar tandem-indicator--string ""
  "The mode-line text of `tandem-indicator-mode' (empty when nothing waits).")
(put 'tandem-indicator--string 'risky-local-variable t)

(defvar tandem-indicator-map
  (let ((map (make-sparse-keymap)))
    (define-key map [mode-line mouse-1] #'tandem-answer)
    map)
  "Keymap of the mode-line indicator: a click answers.")

(defun tandem-indicator--project (session)
  "Return the project name of SESSION's buffer, or a short id."
  (let ((buffer (tandem-view-buffer session)))
    (or (and buffer
             (let ((info (tandem-view-state-info (buffer-local-value 'tandem-view--state buffer))))
               (and info (file-name-nondirectory
                          (directory-file-name (or (plist-get info :active-cwd)
                                                   (plist-get info :cwd) ""))))))
        (substring session 0 (min 8 (length session))))))

(defun tandem-indicator--redraw ()
  "Recompute the mode-line text from the pending questions."
  (setq tandem-indicator--string
        (if (null tandem-indicator--pending) ""
          (propertize
           (format " tandem?%d[%s]" (length tandem-indicator--pending)
                   (string-join (delete-dups (mapcar (lambda (q) (plist-get q :project))
                                                     tandem-indicator--pending))
                                ","))
           'face 'warning 'mouse-face 'mode-line-highlight
           'local-map tandem-indicator-map
           'help-echo (substitute-command-keys
                       "A tandem session waits for you: \\[tandem-answer] or mouse-1 answers"))))
  (force-mode-line-update t))

(defun tandem-indicator--drop (pred)
  "Forget the pending questions PRED is true of; redraw when one went."
  (let ((before (length tandem-indicator--pending)))
    (setq tandem-indicator--pending (cl-remove-if pred tandem-indicator--pending))
    (unless (= before (length tandem-indicator--pending)) (tandem-indicator--redraw))))

(defun tandem-indicator--on-event (event)
  "Keep the pending questions up to date with EVENT from the backend."
  (let ((session (plist-get event :session)) (turn (plist-get event :turn)))
    (pcase (plist-get event :kind)
      ("interaction"
       (let ((id (plist-get event :interaction-id)))
         (unless (cl-find-if (lambda (q) (and (equal (plist-get q :session) session)
                                              (equal (plist-get q :interaction-id) id)))
                             tandem-indicator--pending)
           (let ((q (list :session session :turn turn :interaction-id id
                          :title (plist-get event :title) :options (plist-get event :options)
                          :project (tandem-indicator--project session))))
             (setq tandem-indicator--pending (append tandem-indicator--pending (list q)))
             (tandem-indicator--redraw)))))
      ("entry"
       (let ((entry (plist-get event :entry)))
         (when (equal (plist-get entry :type) "interaction_answer")
           (tandem-indicator--drop
            (lambda (q) (and (equal (plist-get q :session) session)
                             (equal (plist-get q :interaction-id)
                                    (plist-get entry :interaction-id))))))))
      ("turn-ended"
       (tandem-indicator--drop (lambda (q) (and (equal (plist-get q :session) session)
                                                (equal (plist-get q :turn) turn))))))))

(defun tandem-indicator-pending ()
  "Return the questions waiting for the user (plists), oldest first."
  ;; A question of a backend that stopped can no longer be answered.
  (unless (and tandem--connection (tandem-connection-live-p tandem--connection))
    (tandem-indicator--drop #'identity))
  tandem-indicator--pending)

;;;###autoload
(define-minor-mode tandem-indicator-mode
  "Show in the mode line how many tandem sessions wait for you, and which.
\\[tandem-answer] answers from any buffer."
  :global t
  :init-value nil
  :group 'tandem
  (if tandem-indicator-mode
      (progn
        (add-hook 'tandem-event-functions #'tandem-indicator--on-event)
        (unless (memq 'tandem-indicator--string global-mode-string)
          (setq global-mode-string (append (or global-mode-string '(""))
                                           '(tandem-indicator--string)))))
    (remove-hook 'tandem-event-functions #'tandem-indicator--on-event)
    (setq global-mode-string (delq 'tandem-indicator--string global-mode-string))))

(defvar tandem-answer-read-function #'read-multiple-choice
  "Function asking for the answer, called like `read-multiple-choice'.
Tests replace it to answer at this seam.")

(defun tandem-answer--choose ()
  "Return the pending question to answer: the only one, or one the user picks."
  (let ((pending (tandem-indicator-pending)))
    (unless pending (user-error "No tandem question is waiting for you"))
    (if (null (cdr pending)) (car pending)
      (let* ((names (mapcar (lambda (q) (cons (format "%s, turn %s: %s" (plist-get q :project)
                                                      (plist-get q :turn) (plist-get q :title))
                                              q))
                            pending)))
        (cdr (assoc (tandem-read-choice "Answer which question" (mapcar #'car names)
                                        :default (caar names) :require-match t
                                        :what "question")
                    names))))))

;;;###autoload
(defun tandem-answer ()
  "Answer a question a tandem session waits on, from any buffer.
With several waiting, first choose which.  Return the answer given."
  (interactive)
  (let* ((q (tandem-answer--choose))
         (options (tandem-view-render--options q))
         (choice (funcall tandem-answer-read-function
                          (format "%s (%s, turn %s): " (or (plist-get q :title) "Permission")
                                  (plist-get q :project) (plist-get q :turn))
                          (mapcar (lambda (o) (list (string-to-char (nth 2 o)) (nth 1 o)))
                                  options)))
         (answer (car (cl-find (car choice) options
                               :key (lambda (o) (string-to-char (nth 2 o)))))))
    (tandem-answer-interaction (plist-get q :session) (plist-get q :interaction-id) answer)
    (tandem-indicator--drop (lambda (p) (eq p q)))
    (message "Answered: %s" (nth 1 (assoc answer options)))
    answer))

(tandem-indicator-mode 1)

(provide 'tandem-indicator)
;;; tandem-indicator.el ends here
