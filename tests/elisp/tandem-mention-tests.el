;;; tandem-mention-tests.el --- @ mentions in the composer: real completion, real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; `@' in the composer completes through `completion-at-point' (so corfu,
;; company and the default UI all work): a project's file, a symbol of a
;; visiting buffer (inserted as its definition's line range).  Then a real
;; turn against the fake OpenAI server: the request the server receives
;; carries the mentioned file's text, unsaved edits of its buffer
;; included, and the session buffer shows the mention as a chip with the
;; request's context row.

;;; Code:

(require 'cl-lib)
(require 'python)
(require 'tandem-test-helpers)
(require 'tandem-view-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem)

(defconst tandem-mention-test--script
  (expand-file-name "scripts/mention.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Every request gets the answer MENTION-SEEN.")

(defun tandem-mention-test--project ()
  "Return a fresh git project with main.py and src/util.py."
  (let ((dir (file-name-as-directory (make-temp-file "tandem-mention-" t))))
    (let ((default-directory dir))
      (call-process "git" nil nil nil "init" "-q"))
    (make-directory (expand-file-name "src" dir))
    (write-region "print('hello from main')\n" nil (expand-file-name "main.py" dir))
    (write-region "import os\n\ndef helper():\n    return os.sep\n\nX = 1\n" nil
                  (expand-file-name "src/util.py" dir))
    dir))

(defmacro tandem-mention-test--composer (root &rest body)
  "Run BODY in a temporary buffer holding a composer whose session works in ROOT."
  (declare (indent 1) (debug t))
  `(with-temp-buffer
     (tandem-composer-setup)
     (setq-local tandem-composer-root-function (lambda () ,root))
     (goto-char (point-max))
     ,@body))

(ert-deftest tandem-mention-completes-a-file ()
  "`@mai' then `completion-at-point' inserts the project file main.py."
  (let ((root (tandem-mention-test--project)))
    (unwind-protect
        (tandem-mention-test--composer root
          (should (memq #'tandem-composer-mention-capf completion-at-point-functions))
          (insert "look at @mai")
          (completion-at-point)
          (should (equal (tandem-composer-draft) "look at @main.py"))
          ;; An address is no mention: nothing to complete there.
          (insert " me@ex")
          (should-not (tandem-composer-mention-capf)))
      (delete-directory root t))))

(ert-deftest tandem-mention-completes-a-symbol-as-its-region ()
  "A symbol of a visiting buffer (imenu) is inserted as its definition's lines."
  (let* ((root (tandem-mention-test--project))
         (util (find-file-noselect (expand-file-name "src/util.py" root))))
    (unwind-protect
        (progn
          (with-current-buffer util (python-mode))
          (tandem-mention-test--composer root
            (insert "why @helpe")
            (completion-at-point)
            (should (equal (tandem-composer-draft) "why @src/util.py#L3-4"))))
      (kill-buffer util)
      (delete-directory root t))))

(defun tandem-mention-test--requests (file)
  "The chat request bodies recorded in FILE, as JSON strings."
  (with-temp-buffer
    (insert-file-contents file)
    (cl-remove-if-not (lambda (l) (string-match-p "chat/completions" l))
                      (split-string (buffer-string) "\n" t))))

(ert-deftest tandem-mention-turn-sends-the-file-text ()
  "A turn with @main.py: the fake server receives the buffer's unsaved text; a chip shows."
  (tandem-test-with-fake-openai tandem-mention-test--script
    (let* ((default-directory project)
           (main (expand-file-name "main.py" project)))
      (write-region "print('hello from disk')\n" nil main)
      (write-region "Answer in French.\n" nil (expand-file-name "AGENTS.md" project))
      (let* ((visiting (find-file-noselect main))
             (info (tandem-request "sessions/new" (list :cwd (directory-file-name project))))
             (session (plist-get info :id))
             (view (tandem-view-show info t)))
        (unwind-protect
            (progn
              ;; Unsaved edits: the request carries the buffer's text, not the file's.
              (with-current-buffer visiting
                (goto-char (point-max))
                (insert "print('unsaved edit')\n"))
              (with-current-buffer view
                (goto-char (point-max))
                (insert "explain @main")
                (completion-at-point)
                (should (equal (tandem-composer-draft) "explain @main.py"))
                (tandem-view-test-press-send))
              (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
              (let ((request (car (last (tandem-mention-test--requests fake-record)))))
                (should (string-match-p "unsaved edit" request))
                (should (string-match-p "hello from disk" request))
                (should (string-match-p "Answer in French" request)))
              (with-current-buffer view
                (tandem-test-wait-until
                 (lambda () (save-excursion
                              (goto-char (point-min))
                              (search-forward "MENTION-SEEN" nil t))) 20)
                (goto-char (point-min))
                (should (search-forward "explain @main.py" nil t))
                (should (eq (get-text-property (- (point) 2) 'face) 'tandem-view-mention))
                (should (equal (plist-get (get-text-property (- (point) 2) 'tandem-mention)
                                          :path)
                               "main.py"))
                (should (re-search-forward "context: @main\\.py .* · AGENTS\\.md (instructions)"
                                           nil t))
                ;; The header names the instruction files the next request carries.
                (tandem-view-usage-update)
                (tandem-test-wait-until
                 (lambda () (string-match-p "instructions: AGENTS\\.md"
                                            (tandem-view--header-line)))
                 20)))
          (with-current-buffer visiting (set-buffer-modified-p nil))
          (kill-buffer visiting)
          (kill-buffer view))))))

(ert-deftest tandem-mention-unknown-directive-sends-nothing ()
  "@D99 names no directive: the send fails with a sentence and the draft stays."
  (tandem-test-with-fake-openai tandem-mention-test--script
    (let* ((default-directory project)
           (info (tandem-request "sessions/new" (list :cwd (directory-file-name project))))
           (view (tandem-view-show info t)))
      (unwind-protect
          (with-current-buffer view
            (goto-char (point-max))
            (insert "like @D99")
            (let ((err (should-error (tandem-view-test-press-send))))
              (should (string-match-p "D99" (error-message-string err))))
            (should (equal (tandem-composer-draft) "like @D99"))
            (should (null (tandem-mention-test--requests fake-record))))
        (kill-buffer view)))))

(provide 'tandem-mention-tests)
;;; tandem-mention-tests.el ends here
