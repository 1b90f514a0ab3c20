;;; tandem-titles-tests.el --- Named sessions in Emacs  -*- lexical-binding: t; -*-

;;; Commentary:
;; A session is named after its first request: the buffer's name, its
;; header and the sessions list show the title; `tandem-rename-session'
;; replaces it.  Against the real backend and the fake model server.

;;; Code:

(require 'tandem-view-test-helpers)
(require 'tandem-sessions)

(ert-deftest tandem-titles-first-request-names-the-session-and-rename-replaces-it ()
  "The first request titles the session everywhere; a rename shows at once."
  (let ((tandem-view-test-title nil))
    (tandem-view-test-with-session '(:steps [(:reply (:text "Sure."))])
      (let ((session (tandem-view-state-session tandem-view--state))
            (buffer (current-buffer)))
        (should (string-match-p "— session " (buffer-name)))
        (tandem-view-test-wait-turn (tandem-view-test-send "Make the parser async\nand fast"))
        (tandem-test-wait-until
         (lambda () (string-match-p "— Make the parser async\\*" (buffer-name buffer))))
        (should (string-match-p "Make the parser async" (tandem-view--header-line)))
        (let ((row (cl-find session (tandem-request "sessions/list" (list :cwd project))
                            :key (lambda (r) (plist-get r :id)) :test #'equal)))
          (should (equal (tandem-sessions--title row) "Make the parser async")))
        (let ((tandem-session session))
          (tandem-rename-session "Parser work"))
        (should (string-match-p "— Parser work\\*" (buffer-name)))
        (should (string-match-p "Parser work" (tandem-view--header-line)))
        (should-error (tandem-rename-session "  " session) :type 'tandem-invalid)))))

(provide 'tandem-titles-tests)
;;; tandem-titles-tests.el ends here
