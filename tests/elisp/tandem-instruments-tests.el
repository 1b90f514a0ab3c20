;;; tandem-instruments-tests.el --- Emacs as the agent's instruments  -*- lexical-binding: t; -*-

;;; Commentary:
;; The editor tools against a real batch Emacs: a Flymake backend defined
;; here reports on an unsaved edit, etags answers definitions from a TAGS
;; file made here, and a native turn of the real backend against the fake
;; OpenAI server calls diagnostics and definitions: the model's next
;; request carries what Emacs knew, unsaved edit included.  A busy Emacs
;; makes the call fail within its budget, and the turn goes on.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-instruments)
(require 'flymake)
(require 'etags)
(require 'json)
(require 'cl-lib)
(require 'seq)

(defconst tandem-instruments-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "Folder of this file.")

(defun tandem-instruments-test--flymake (report-fn &rest _)
  "A Flymake backend: a warning at each FIXME of the buffer, sent to REPORT-FN."
  (let (diags)
    (save-excursion
      (goto-char (point-min))
      (while (search-forward "FIXME" nil t)
        (push (flymake-make-diagnostic
               (current-buffer) (match-beginning 0) (line-end-position) :warning
               (format "fixme left: %s"
                       (string-trim (buffer-substring-no-properties
                                     (match-end 0) (line-end-position)))))
              diags)))
    (funcall report-fn diags)))

(defun tandem-instruments-test--project ()
  "Make notes.sample, lib.py and its TAGS in a fresh folder; return the folder."
  (let ((root (file-name-as-directory (make-temp-file "tandem-instruments-" t))))
    (with-temp-file (expand-file-name "notes.sample" root)
      (insert "first line\nsecond line calls sample_helper\n"))
    (with-temp-file (expand-file-name "lib.py" root)
      (insert "x = 1\n\n\ndef sample_helper():\n    return 2\n"))
    (let ((default-directory root))
      (call-process "etags" nil nil nil "-o" "TAGS" "lib.py"))
    root))

(defun tandem-instruments-test--visit (root)
  "Visit ROOT's notes.sample with the test's Flymake backend, edit it unsaved."
  (let ((buffer (find-file-noselect (expand-file-name "notes.sample" root))))
    (with-current-buffer buffer
      (setq-local flymake-diagnostic-functions (list #'tandem-instruments-test--flymake))
      (flymake-mode 1)
      (goto-char (point-max))
      (insert "FIXME unsaved-edit-marker\n"))
    buffer))

(ert-deftest tandem-instruments-flymake-sees-the-unsaved-edit ()
  "Diagnostics come from the buffer as the user sees it, not from the disk."
  (let* ((root (tandem-instruments-test--project))
         (buffer (tandem-instruments-test--visit root)))
    (unwind-protect
        (let* ((file (file-truename (expand-file-name "notes.sample" root)))
               (answer (tandem--instrument nil "diagnostics"
                                           (list :root (file-truename root) :path file
                                                 :budget 5)))
               (buf (car (plist-get answer :buffers)))
               (item (car (plist-get buf :items))))
          (should (equal (plist-get buf :file) file))
          (should (plist-get buf :modified))
          (should (equal (plist-get item :line) 3))
          (should (equal (plist-get item :severity) "warning"))
          (should (equal (plist-get item :message) "fixme left: unsaved-edit-marker"))
          (should (string-match-p "tandem-instruments-test--flymake"
                                  (plist-get item :source)))
          ;; Nothing of the edit reached the disk.
          (should-not (with-temp-buffer
                        (insert-file-contents file)
                        (search-forward "FIXME" nil t))))
      (with-current-buffer buffer (set-buffer-modified-p nil))
      (kill-buffer buffer)
      (delete-directory root t))))

(ert-deftest tandem-instruments-xref-etags-and-refusals ()
  "Definitions through etags name their backend; a file outside the root is refused."
  (let* ((root (tandem-instruments-test--project))
         (tags-file-name (expand-file-name "TAGS" root))
         (tags-table-list nil))
    (unwind-protect
        (let* ((real (file-truename root))
               (answer (tandem--instrument
                        nil "xref" (list :root real :kind "definitions"
                                         :path (expand-file-name "notes.sample" real)
                                         :symbol "sample_helper" :budget 5)))
               (item (car (plist-get answer :items))))
          (should (equal (plist-get answer :backend) "etags"))
          (should-not (plist-get answer :visited))
          (should (equal (plist-get item :file) (expand-file-name "lib.py" real)))
          (should (equal (plist-get item :line) 4))
          ;; The temporary buffer is gone: nothing visits the file.
          (should-not (find-buffer-visiting (expand-file-name "notes.sample" real)))
          (should-error (tandem--instrument nil "xref" (list :root real :path "/etc/passwd"
                                                             :symbol "x" :kind "definitions")))
          (should-error (tandem--instrument nil "no-such" (list :root real))))
      (delete-directory root t))))

(defvar tandem-instruments-test--asked nil
  "The identifiers the test's xref backend was asked about.")

(defun tandem-instruments-test--xref-backend ()
  "The test's xref backend, in a buffer that chose it."
  'tandem-test)

(cl-defmethod xref-backend-identifier-at-point ((_backend (eql tandem-test)))
  "The symbol at point, carrying the position it was taken at."
  (let ((name (thing-at-point 'symbol t)))
    (and name (propertize name 'tandem-test-pos (point)))))

(cl-defmethod xref-backend-definitions ((_backend (eql tandem-test)) identifier)
  "One definition of IDENTIFIER at line 1; for ask_me, a question first."
  (push identifier tandem-instruments-test--asked)
  (when (equal identifier "ask_me")
    (read-string "Which one? "))
  (list (xref-make "the definition" (xref-make-buffer-location (current-buffer) 1))))

(cl-defmethod xref-backend-references ((_backend (eql tandem-test)) identifier)
  "Two references of IDENTIFIER: one in the buffer's file, one elsewhere."
  (push identifier tandem-instruments-test--asked)
  (list (xref-make "used here" (xref-make-file-location buffer-file-name 2 6))
        (xref-make "elsewhere" (xref-make-file-location "/etc/hosts" 1 0))))

(ert-deftest tandem-instruments-xref-backend-of-the-buffer ()
  "The buffer's own xref backend answers, named, with the identifier taken at its place."
  (let* ((root (tandem-instruments-test--project))
         (real (file-truename root))
         (file (expand-file-name "notes.sample" real))
         (buffer (find-file-noselect file))
         (tandem-instruments-test--asked nil))
    (with-current-buffer buffer
      (setq-local xref-backend-functions (list #'tandem-instruments-test--xref-backend)))
    (unwind-protect
        (let ((defs (tandem--instrument nil "xref" (list :root real :path file :kind "definitions"
                                                         :symbol "sample_helper")))
              (refs (tandem--instrument nil "xref" (list :root real :path file :kind "references"
                                                         :symbol "sample_helper" :line 2))))
          (should (equal (plist-get defs :backend) "tandem-test"))
          (should (plist-get defs :visited))
          (should (equal (plist-get defs :items)
                         (list (list :file file :line 1 :col 0 :summary "the definition"))))
          (should (equal (mapcar (lambda (i) (plist-get i :line)) (plist-get refs :items))
                         '(2 1)))
          ;; Both identifiers came from the buffer, where the symbol is (line 2).
          (should (equal (mapcar (lambda (id) (get-text-property 0 'tandem-test-pos id))
                                 tandem-instruments-test--asked)
                         (list 30 30)))
          ;; A backend that asks the user a question fails instead of waiting.
          (let ((err (should-error (tandem--instrument
                                    nil "xref" (list :root real :path file :kind "definitions"
                                                     :symbol "ask_me")))))
            (should (string-match-p "it asked nothing" (error-message-string err)))))
      (kill-buffer buffer)
      (delete-directory root t))))

(ert-deftest tandem-instruments-outline-buffers-project ()
  "Outline by imenu with line ranges; open buffers with their state; project.el's files."
  (let* ((root (tandem-instruments-test--project))
         (real (file-truename root))
         (el (expand-file-name "code.el" real)))
    (with-temp-file el
      (insert ";;; code.el --- x\n(defun code-one ()\n  \"One.\"\n  1)\n\n"
              "(defvar code-two 2\n  \"Two.\")\n"))
    (with-temp-file (expand-file-name ".gitignore" real) (insert "ignored.txt\n"))
    (with-temp-file (expand-file-name "ignored.txt" real) (insert "x\n"))
    (let ((default-directory real))
      (call-process "git" nil nil nil "init" "-q")
      (call-process "git" nil nil nil "add" "."))
    (let ((buffer (find-file-noselect el)))
      (unwind-protect
          (let* ((outline (tandem--instrument nil "outline" (list :root real :path el)))
                 (one (seq-find (lambda (i) (equal (plist-get i :name) "code-one"))
                                (plist-get outline :items)))
                 (buffers (tandem--instrument nil "open_buffers" (list :root real)))
                 (files (tandem--instrument nil "project_files" (list :root real :limit 100))))
            (should (equal (plist-get outline :source) "imenu"))
            (should (plist-get outline :visited))
            (should (equal (list (plist-get one :line) (plist-get one :end-line)) '(2 4)))
            ;; Python's classes nest their methods (a file no buffer visits).
            (with-temp-file (expand-file-name "cls.py" real)
              (insert "class A:\n    def m(self):\n        return 1\n\n\ndef f():\n    pass\n"))
            (let ((items (plist-get (tandem--instrument
                                     nil "outline" (list :root real
                                                         :path (expand-file-name "cls.py" real)))
                                    :items)))
              (should (equal (mapcar (lambda (i) (list (car (split-string (plist-get i :name)))
                                                       (plist-get i :depth) (plist-get i :line)
                                                       (plist-get i :end-line)))
                                     items)
                             '(("A" 0 1 3) ("m" 1 2 3) ("f" 0 6 7)))))
            (with-current-buffer buffer (insert ";; edit\n"))
            (setq buffers (tandem--instrument nil "open_buffers" (list :root real)))
            (should (equal (mapcar (lambda (b) (list (plist-get b :file) (plist-get b :modified)))
                                   (plist-get buffers :buffers))
                           (list (list el t))))
            ;; The selected window shows it, with lines 3 to 5 in the region.
            (set-window-buffer (selected-window) buffer)
            (with-current-buffer buffer
              (transient-mark-mode 1)
              (goto-char (point-min)) (forward-line 2)
              (push-mark (point) t t)
              (forward-line 2)
              (set-window-point (selected-window) (point)))
            (let ((window (plist-get (tandem--instrument nil "open_buffers" (list :root real))
                                     :window)))
              (should (equal window (list :file el :line 5 :region-start 3 :region-end 5))))
            (should (member el (plist-get files :files)))
            (should (member (expand-file-name "lib.py" real) (plist-get files :files)))
            (should-not (member (expand-file-name "ignored.txt" real) (plist-get files :files)))
            (should (string-match-p "vc" (plist-get files :project))))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)
        (delete-directory root t)))))

(defun tandem-instruments-test--requests (file)
  "The requests the fake model recorded in FILE, as JSON strings."
  (with-temp-buffer
    (insert-file-contents file)
    (split-string (buffer-string) "\n" t)))

(ert-deftest tandem-instruments-native-turn-asks-emacs ()
  "A native turn calls diagnostics and definitions; the next request carries Emacs's answers."
  (tandem-test-with-fake-openai
      (expand-file-name "scripts/instruments-turn.json" tandem-instruments-test--dir)
    (let* ((root (directory-file-name project)))
      (with-temp-file (expand-file-name "notes.sample" project)
        (insert "first line\nsecond line calls sample_helper\n"))
      (with-temp-file (expand-file-name "lib.py" project)
        (insert "x = 1\n\n\ndef sample_helper():\n    return 2\n"))
      (let ((default-directory project))
        (call-process "etags" nil nil nil "-o" "TAGS" "lib.py"))
      (let ((buffer (tandem-instruments-test--visit project))
            (tags-file-name (expand-file-name "TAGS" project))
            (tags-table-list nil)
            (tandem-permission-mode 'ask))
        (unwind-protect
            (let* ((session (tandem-project-session project))
                   (turn (cdr (tandem-send "What does Emacs know?" session))))
              (ignore root)
              ;; Read tools ask nothing, even in ask mode: the turn just runs.
              (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome)
                             "succeeded"))
              (let ((last (car (last (tandem-instruments-test--requests fake-record)))))
                (should (string-search "fixme left: unsaved-edit-marker" last))
                (should (string-search "notes.sample (unsaved edits)" last))
                (should (string-search "xref backend: etags" last))
                (should (string-search "lib.py:4:0" last))
                (should (string-search "Buffers visiting files under the workspace root" last))))
          (with-current-buffer buffer (set-buffer-modified-p nil))
          (kill-buffer buffer))))))

(ert-deftest tandem-instruments-busy-emacs-fails-the-call-not-the-turn ()
  "An Emacs that does not answer within the budget: the tool fails, the turn ends."
  (tandem-test-with-fake-openai
      (expand-file-name "scripts/instruments-busy.json" tandem-instruments-test--dir)
    (make-directory (expand-file-name ".tandem" project))
    (with-temp-file (expand-file-name ".tandem/settings.json" project)
      (insert "{\"native\": {\"tool_timeout\": 1}}"))
    (with-temp-file (expand-file-name "notes.sample" project) (insert "text\n"))
    (let* ((busy nil)
           (tandem-instruments--table
            (cons (cons "outline" (lambda (_params)
                                    ;; Busy: the answer comes after the budget.
                                    (setq busy t)
                                    (sleep-for 2.5)
                                    (list :source "late")))
                  tandem-instruments--table))
           (session (tandem-project-session project))
           (turn (cdr (tandem-send "Outline please" session))))
      (should (equal (plist-get (tandem-wait-turn session turn 60) :outcome) "succeeded"))
      (should busy)
      (let ((last (car (last (tandem-instruments-test--requests fake-record)))))
        (should (string-search "outline: Emacs did not answer within 1 s" last))))))

(ert-deftest tandem-instruments-acp-agent-calls-them-over-mcp ()
  "A local ACP agent starts tandem's MCP server it was given; Emacs answers its calls."
  (let* ((project (file-name-as-directory (make-temp-file "tandem-instruments-acp-" t)))
         (script (make-temp-file "tandem-mcp-agent-" nil ".json"))
         (log (make-temp-file "tandem-mcp-agent-" nil ".jsonl"))
         (tandem-provider "acp:editorcheck")
         (tandem-acp-agents
          `(("editorcheck"
             :command (,(expand-file-name ".venv/bin/python" tandem-test-root)
                       ,(expand-file-name "tests/python/acp/mcp_agent.py" tandem-test-root)
                       ,script ,log)))))
    (with-temp-file script
      (insert (json-encode
               '((calls . [((tool . "diagnostics") (arguments . ((path . "notes.sample"))))
                           ((tool . "outline") (arguments . ((path . "/etc/passwd"))))])))))
    (with-temp-file (expand-file-name "notes.sample" project) (insert "first line\n"))
    (let ((default-directory project))
      (call-process "git" nil nil nil "init" "-q"))
    (let ((buffer (tandem-instruments-test--visit project)))
      (unwind-protect
          (tandem-test-with-backend
            (let* ((default-directory project)
                   (session (tandem-project-session project))
                   (turn (cdr (tandem-send "Use the editor" session))))
              (should (equal (plist-get (tandem-wait-turn session turn 90) :outcome)
                             "succeeded"))
              (let ((calls (with-temp-buffer
                             (insert-file-contents log)
                             (seq-filter (lambda (r) (equal (alist-get 'method r) "mcp-call"))
                                         (mapcar (lambda (l) (json-read-from-string l))
                                                 (split-string (buffer-string) "\n" t))))))
                (should (= (length calls) 2))
                (let ((diag (alist-get 'params (nth 0 calls)))
                      (refused (alist-get 'params (nth 1 calls))))
                  (should (eq (alist-get 'is_error diag) :json-false))
                  (should (string-search "fixme left: unsaved-edit-marker"
                                         (alist-get 'text diag)))
                  (should (eq (alist-get 'is_error refused) t))
                  (should (string-search "outside the workspace root"
                                         (alist-get 'text refused)))))))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)
        (ignore-errors (delete-directory project t))
        (dolist (file (list script log)) (ignore-errors (delete-file file)))))))

(provide 'tandem-instruments-tests)
;;; tandem-instruments-tests.el ends here
