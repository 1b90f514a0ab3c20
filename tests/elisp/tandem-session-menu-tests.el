;;; tandem-session-menu-tests.el --- The session menu  -*- lexical-binding: t; -*-

;;; Commentary:

;; Every entry of `tandem-session-menu' is a command, and the menu is on
;; C-c C-t in a session buffer.

;;; Code:

(require 'cl-lib)
(require 'ert)
(require 'tandem)

(ert-deftest tandem-session-menu-entries-are-commands ()
  "Each suffix of the session menu is an interactive command; C-c C-t opens it."
  (let ((suffixes nil))
    ;; The layout transient stores: groups (vectors) of (LEVEL CLASS PLIST).
    (cl-labels ((walk (node)
                  (cond ((vectorp node) (mapc #'walk node))
                        ((and (consp node) (plist-get (nth 2 node) :command))
                         (push (plist-get (nth 2 node) :command) suffixes))
                        ((consp node) (mapc #'walk node)))))
      (walk (get 'tandem-session-menu 'transient--layout)))
    (should (memq 'tandem-set-provider suffixes))
    (should (memq 'tandem-acp-set-mode suffixes))
    (should (memq 'tandem-mcp suffixes))
    (should (>= (length suffixes) 10))
    (dolist (command suffixes)
      (should (commandp command))))
  (should (eq (lookup-key tandem-view-mode-map (kbd "C-c C-t")) #'tandem-session-menu)))

(provide 'tandem-session-menu-tests)
;;; tandem-session-menu-tests.el ends here
