;;; tandem-errors-tests.el --- Error conditions per code, keys from commands  -*- lexical-binding: t; -*-

;;; Commentary:
;; elisp/tandem-errors.el (generated from the backend's enumeration)
;; defines a condition per error code at load; an error that names a
;; command shows that command's key from this Emacs's keymaps; a code
;; this Emacs does not know falls back to `tandem-error'.  The busy error
;; comes from a real backend with a real turn waiting on a fake model.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)

(defconst tandem-errors-test--script
  (expand-file-name "scripts/permission-edit.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "A conversation whose turn waits for a permission answer.")

(ert-deftest tandem-errors-a-condition-per-code ()
  "After load every code is a condition `tandem-CODE' below `tandem-error'."
  (should (> (length tandem-error-codes) 30))
  (dolist (entry tandem-error-codes)
    (let ((condition (intern-soft (concat "tandem-" (car entry)))))
      (should condition)
      (should (memq 'tandem-error (get condition 'error-conditions)))
      (should (equal (get condition 'error-message) "tandem"))
      (should (equal (get condition 'tandem-code) (car entry)))
      (should (string-match-p "\\.\\'" (get condition 'tandem-meaning)))))
  (should (equal (cdr (assoc "busy" tandem-error-codes))
                 (get 'tandem-busy 'tandem-meaning)))
  ;; Every command an error may name is one this Emacs has.
  (dolist (command tandem-error-commands)
    (should (commandp command))))

(ert-deftest tandem-errors-known-code-signals-its-own-condition ()
  "A backend error of a known code is caught by its condition and by `tandem-error'."
  (tandem-test-with-backend
    (let ((err (should-error (tandem-request "no/such-method") :type 'tandem-no-such-method)))
      (should (eq (car err) 'tandem-no-such-method))
      (should (equal (tandem-error-code err) "no-such-method"))
      (should (equal (error-message-string err) "tandem: \"No such method: no/such-method\"")))))

(ert-deftest tandem-errors-unknown-code-falls-back-to-tandem-error ()
  "A code from a newer backend signals `tandem-error' itself and keeps the code."
  (let* ((reply (tandem--error-from-reply
                 'return-error '(:code "from-a-newer-backend" :message "Something new" :data nil)))
         (err (should-error (apply #'tandem--signal reply) :type 'tandem-error)))
    (should (eq (car err) 'tandem-error))
    (should (equal (tandem-error-code err) "from-a-newer-backend"))
    (should (equal (tandem-error-message err) "Something new"))
    ;; Nothing was defined (or interned) for the unknown code.
    (should-not (intern-soft "tandem-from-a-newer-backend"))))

(ert-deftest tandem-errors-command-key-through-substitute-command-keys ()
  "A busy refusal names `tandem-cancel-turn'; Emacs shows the key it has here."
  (tandem-test-with-fake-openai tandem-errors-test--script
    (let ((events nil) (tandem-permission-mode 'ask))
      (add-hook 'tandem-event-functions (lambda (e) (push e events)))
      (let* ((session (tandem-project-session project))
             (turn (cdr (tandem-send "Please write notes" session)))
             (ask (tandem-test-wait-until
                   (lambda () (seq-find (lambda (e) (equal (plist-get e :kind) "interaction"))
                                        events))
                   20))
             (busy (lambda ()
                     (should-error (tandem-send "again" session) :type 'tandem-busy))))
        ;; A buffer binding the command: its key, read from the keymap.
        (with-temp-buffer
          (let ((map (make-sparse-keymap)))
            (define-key map (kbd "C-c x") #'tandem-cancel-turn)
            (use-local-map map)
            (let ((err (funcall busy)))
              (should (equal (tandem-error-code err) "busy"))
              (should (string-suffix-p "cancel it first (C-c x)" (tandem-error-message err)))
              (should-not (string-match-p "C-c C-c" (tandem-error-message err))))))
        ;; No key for it here: the M-x form.
        (with-temp-buffer
          (should (string-suffix-p (format "(%s)" (substitute-command-keys
                                                   "\\[tandem-cancel-turn]"))
                                   (tandem-error-message (funcall busy))))
          (should (string-suffix-p "(M-x tandem-cancel-turn)"
                                   (tandem-error-message (funcall busy)))))
        ;; The composer: C-c C-k cancels a running turn, so that key is shown.
        (with-temp-buffer
          (use-local-map tandem-composer-mode-map)
          (should (string-suffix-p "cancel it first (C-c C-k)"
                                   (tandem-error-message (funcall busy)))))
        (tandem-answer-interaction session (plist-get ask :interaction-id) "reject")
        (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome)
                       "succeeded"))))))

(provide 'tandem-errors-tests)
;;; tandem-errors-tests.el ends here
