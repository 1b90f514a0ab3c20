;;; tandem-best-of-tests.el --- Best-of-N and the compare view  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, a real git repository, real turns
;; against the fake OpenAI server (one model per result).
;; `tandem-best-of' sends one request to two parallel sessions; the
;; project's test command (from `tandem-test-commands', the user's own
;; setting) runs in each tree after its turn; the compare view's rows show
;; each result's provider, mode, outcome, stats, test and answer; `l'
;; opens the landing review of the result at point.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-parallel)

(defconst tandem-best-of-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "The directory of this file.")

(ert-deftest tandem-best-of-parse-reads-provider-and-mode ()
  "\"PROVIDER [MODE]\": the mode defaults to auto-edit; a bad mode is refused."
  (should (equal (tandem-best-of--parse "openai:m ask")
                 '(:provider "openai:m" :permission-mode "ask")))
  (should (equal (tandem-best-of--parse "default")
                 '(:provider nil :permission-mode "auto-edit")))
  (should-error (tandem-best-of--parse "openai:m sloppy") :type 'user-error))

(ert-deftest tandem-best-of-test-command-comes-from-the-user ()
  "The per-project setting wins; the variable is risky as a directory local."
  (let* ((dir (make-temp-file "tandem-proj-" t))
         (tandem-test-commands (list (cons dir "make check")))
         (tandem-test-command "fallback"))
    (unwind-protect
        (progn
          (should (equal (tandem-parallel-test-command (file-name-as-directory dir))
                         "make check"))
          (should (equal (tandem-parallel-test-command temporary-file-directory) "fallback"))
          (should (risky-local-variable-p 'tandem-test-command))
          (should-not (safe-local-variable-p 'tandem-test-command "make")))
      (delete-directory dir t))))

(ert-deftest tandem-best-of-two-results-in-the-compare-view ()
  "Two results, two models, a test command: the compare rows say what each did."
  (tandem-test-with-fake-openai (expand-file-name "scripts/best-of-two.json"
                                                  tandem-best-of-test--dir)
    (let* ((default-directory project)
           (trees (make-temp-file "tandem-trees-" t))
           (tandem-parallel-directory trees)
           (tandem-test-commands
            (list (cons project "grep -q good a.txt && echo passed || { echo failed; exit 4; }"))))
      (unwind-protect
          (progn
            (write-region (mapconcat (lambda (i) (format "line %d\n" i))
                                     (number-sequence 1 20) "")
                          nil (expand-file-name "a.txt" project))
            (call-process "git" nil nil nil "add" "a.txt")
            (call-process "git" nil nil nil "-c" "user.name=t" "-c" "user.email=t@t"
                          "commit" "-qm" "init")
            (let ((buffer (tandem-best-of
                           2 "improve line 2"
                           (list (tandem-best-of--parse "openai:model-one")
                                 (tandem-best-of--parse "openai:model-two auto-edit")))))
              (with-current-buffer buffer
                (should (eq major-mode 'tandem-compare-mode))
                (should (eq (lookup-key tandem-compare-mode-map "l") #'tandem-compare-land))
                ;; Until both turns and both tests have ended.
                (let ((deadline (+ (float-time) 60)))
                  (while (and (tandem-compare--running-p tandem-compare--reply)
                              (< (float-time) deadline))
                    (sleep-for 0.3)
                    (tandem-compare-refresh)))
                (should-not (tandem-compare--running-p tandem-compare--reply))
                (let ((rows (mapcar (lambda (e) (append (cadr e) nil)) tabulated-list-entries)))
                  (should (= (length rows) 2))
                  (should (equal (nth 0 rows)
                                 (list (nth 0 (nth 0 rows)) "openai:model-one" "auto-edit"
                                       "succeeded" "1" "+1 −1" "passed" "Made it good")))
                  (should (equal (cdr (nth 1 rows))
                                 (list "openai:model-two" "auto-edit" "succeeded" "1"
                                       "+1 −2" "failed (4)" "Made it bad"))))
                (should (equal (mapcar #'car tabulated-list-format)
                               '("Result" "Provider" "Mode" "State" "Files" "+/−" "Test"
                                 "Answer")))
                ;; RET: the result's answer, test and patch in diff-mode.
                (goto-char (point-min))
                (let ((shown (tandem-compare-show)))
                  (with-current-buffer shown
                    (should (eq major-mode 'diff-mode))
                    (should (string-match-p "# > Made it good" (buffer-string)))
                    (should (string-match-p "# test: passed" (buffer-string)))
                    (should (string-match-p "^\\+line 2 good$" (buffer-string)))))
                ;; l: the landing review of that result.
                (let ((land (tandem-compare-land)))
                  (with-current-buffer land
                    (should tandem-land-mode)
                    (should (string-match-p "line 2 good" (buffer-string)))))
                ;; t: the test's whole output (of the second result).
                (set-buffer buffer)
                (goto-char (point-min))
                (forward-line 1)
                (with-current-buffer (window-buffer (progn (tandem-compare-test-output)
                                                           (selected-window)))
                  (should (string-match-p "failed" (buffer-string)))))))
        (ignore-errors (delete-directory trees t))))))

(provide 'tandem-best-of-tests)
;;; tandem-best-of-tests.el ends here
