;;; tandem-directive-result-tests.el --- A directive's result at the code  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, the fake OpenAI server.  After a
;; discussion the directive's overlay shows the answer's first line and
;; the menu keys of its follow-ups; RET on that line shows the turn in the
;; session buffer; after Implement this it says "1 file changed".

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-directive)
(require 'tandem-directive-menu)

(defconst tandem-directive-result-test--script
  (expand-file-name "scripts/directive-result.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Discuss answers two lines; Implement this writes a.txt.")

(defun tandem-directive-result-test--label (source id)
  "Return the label text of directive ID's overlay in SOURCE, without properties."
  (with-current-buffer source
    (tandem-directive-overlays-refresh)
    (substring-no-properties (overlay-get (tandem-directive--overlay id) 'before-string))))

(ert-deftest tandem-directive-result-at-the-code ()
  "The overlay shows the answer's first line and follow-up keys; RET shows the turn."
  (tandem-test-with-fake-openai tandem-directive-result-test--script
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (file (expand-file-name "a.txt" project)))
      (write-region "hello\nworld\n" nil file)
      (let* ((session (plist-get (tandem-request "sessions/new"
                                                 (list :cwd (directory-file-name project)))
                                 :id))
             (source (find-file-noselect file))
             (id (tandem-directive-create file 1 7 "Make the greeting loud"))
             (view (tandem-directive-session-buffer session project t)))
        ;; No result yet: one line, and RET at the region's start is the usual RET.
        (should-not (string-match-p "↳" (tandem-directive-result-test--label source id)))
        (with-current-buffer source
          (goto-char (point-min))
          (should-not (eq (key-binding (kbd "RET")) #'tandem-directive-show-result-here)))
        ;; Discuss: the answer's first line and the keys of what can follow.
        (should (equal (tandem-directive-act id 'discuss "DISCUSS-Q should we shout?")
                       (cons session 1)))
        (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
        (let ((label (tandem-directive-result-test--label source id)))
          (should (string-match-p "D1 · Discussed" label))
          (should (string-match-p "↳ Shout it: use upper case\\." label))
          (should-not (string-match-p "second line" label))
          (should (string-match-p "RET: show · C-c C-d t implement this, d discuss again" label)))
        ;; The keys named are the menu's own.
        (dolist (f tandem-directive-followups)
          (should (eq (plist-get (nth 2 (transient-get-suffix 'tandem-directive-menu (nth 1 f)))
                                 :command)
                      (intern (format "tandem-directive-menu-%s" (car f))))))
        ;; A click on the result line runs the same command (the line's own keymap).
        (with-current-buffer source
          (let* ((label (overlay-get (tandem-directive--overlay id) 'before-string))
                 (map (get-text-property (string-match "↳" label) 'keymap label)))
            (should (eq (lookup-key map [mouse-1]) #'tandem-directive-show-result-here))))
        ;; RET on the result line (point at the region's start) shows turn 1.
        (switch-to-buffer source)
        (goto-char (point-min))
        (should (eq (key-binding (kbd "RET")) #'tandem-directive-show-result-here))
        ;; Only there, and only while the option says so.
        (let ((tandem-directive-ret-shows-result nil))
          (should-not (eq (key-binding (kbd "RET")) #'tandem-directive-show-result-here)))
        (forward-char 1)
        (should-not (eq (key-binding (kbd "RET")) #'tandem-directive-show-result-here))
        (goto-char (point-min))
        (with-current-buffer view (goto-char (point-max)))
        (execute-kbd-macro (kbd "RET"))
        (should (eq (window-buffer (selected-window)) view))
        (with-current-buffer view
          (should (equal (tandem-read-turn-at-point) 1))
          (should (string-match-p "Turn 1\\|Directive D1"
                                  (buffer-substring-no-properties
                                   (line-beginning-position) (line-end-position)))))
        (should (= (window-start) (with-current-buffer view (line-beginning-position))))
        ;; The source is untouched by the label.
        (with-current-buffer source
          (should (equal (buffer-string) "hello\nworld\n"))
          (should-not (buffer-modified-p)))
        ;; Implement this: "1 file changed".
        (should (equal (tandem-directive-act id 'implement-this "WRITE-IT") (cons session 2)))
        (should (equal (plist-get (tandem-wait-turn session 2 60) :outcome) "succeeded"))
        (with-current-buffer source (revert-buffer t t))
        (let ((label (tandem-directive-result-test--label source id)))
          (should (string-match-p "D1 · Implemented" label))
          (should (string-match-p "↳ 1 file changed" label))
          (should (string-match-p "C-c C-d c request changes, r discuss result\n" label)))
        (should (equal (plist-get (plist-get (tandem-directive-record id) :result) :turn) 2))))))

(provide 'tandem-directive-result-tests)
;;; tandem-directive-result-tests.el ends here
