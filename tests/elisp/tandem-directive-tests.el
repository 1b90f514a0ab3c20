;;; tandem-directive-tests.el --- Directives from Emacs against a real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, a real HTTP server speaking the OpenAI
;; streaming format.  The directive scenario: create a directive on a
;; region, Implement, see the turn in the session buffer with its badge,
;; follow up with Discuss result in sticky scope, Back to chat, View
;; changes, Rewind before this implementation, inspect after deleting the
;; journal.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-turns)
(require 'tandem-view)
(require 'tandem-composer)
(require 'tandem-directive)
(require 'tandem-inspector)

(defconst tandem-directive-test--script
  (expand-file-name "scripts/directive-scenario.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Implement writes a.txt; Discuss result answers about attempt 1.")

(defun tandem-directive-test--requests (record-file)
  "Return the request bodies the fake server recorded in RECORD-FILE, as strings."
  (with-temp-buffer
    (insert-file-contents record-file)
    (split-string (buffer-string) "\n" t)))

(defun tandem-directive-test--buffer-text (buffer)
  "Return BUFFER's text without properties."
  (with-current-buffer buffer (buffer-substring-no-properties (point-min) (point-max))))

(ert-deftest tandem-directive-scenario ()
  "Create, Implement, follow up in sticky scope, back to chat, changes, rewind, inspect."
  (tandem-test-with-fake-openai tandem-directive-test--script
    (let* ((tandem-permission-mode 'auto-edit)
           (default-directory project)
           (file (expand-file-name "a.txt" project)))
      (write-region "hello\nworld\n" nil file)
      (let* ((session (plist-get (tandem-request "sessions/new"
                                                 (list :cwd (directory-file-name project)))
                                 :id))
             (source (find-file-noselect file))
             (id (tandem-directive-create file 1 7 "Make the greeting loud")))
        (should (equal id "D1"))
        ;; The region is tinted and labelled.
        (with-current-buffer source
          (let ((ov (tandem-directive--overlay "D1")))
            (should ov)
            (should (equal (buffer-substring (overlay-start ov) (overlay-end ov)) "hello\n"))
            (should (string-match-p "D1 · Ready" (overlay-get ov 'before-string)))
            (should (eq (overlay-get ov 'face) 'tandem-directive-ready))))
        (should (string-match-p "^## Request\nMake the greeting loud"
                                (tandem-directive-preview id 'implement)))
        ;; Implement: the turn shows in the bound session's buffer with its badge.
        ;; The session buffer is open before the action, as `tandem-directive-run' does.
        (let* ((view (tandem-directive-session-buffer session project t))
               (started (tandem-directive-act id 'implement)))
          (should (equal started (cons session 1)))
          (should (equal (plist-get (tandem-wait-turn session 1 60) :outcome) "succeeded"))
          (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string))
                         "HELLO\nworld\n"))
          (should (buffer-live-p view))
          (tandem-test-wait-until
           (lambda () (string-match-p "Directive D1 · implement · \\[excluded from chat\\]"
                                      (tandem-directive-test--buffer-text view)))
           20)
          (let ((record (tandem-directive-record id)))
            (should (equal (plist-get record :state) "implemented"))
            (should (equal (plist-get record :session) session))
            (should (= 1 (length (plist-get record :attempts))))
            ;; The system directive went from `tandem-directives' as data and was recorded.
            (should (equal (plist-get (plist-get (car (plist-get record :attempts)) :directive)
                                      :system)
                           (alist-get 'implement tandem-directives))))
          ;; The overlay follows the lifecycle once refreshed.
          (tandem-directive-overlays-refresh project)
          (with-current-buffer source
            (revert-buffer t t)
            (tandem-directive-overlays-refresh project)
            (should (string-match-p "Implemented"
                                    (overlay-get (tandem-directive--overlay "D1")
                                                 'before-string))))
          ;; Follow up with Discuss result in the sticky directive scope.
          (should (eq view (tandem-directive-enter-scope id 'discuss-result 1)))
          (with-current-buffer view
            (should (equal (tandem-composer-scope) '(:directive "D1" :action discuss-result)))
            (tandem-composer-set-draft "DR-Q is attempt 1 right?")
            (should (= 2 (tandem-composer-send)))
            (should (equal (plist-get (tandem-wait-turn session 2 60) :outcome) "succeeded"))
            ;; The scope is sticky: still the directive after sending.
            (should (equal (tandem-composer-scope) '(:directive "D1" :action discuss-result)))
            (let ((disc (plist-get (tandem-directive-record id) :discussion)))
              (should (= 1 (length disc)))
              (should (equal (plist-get (car disc) :attempt) 1))
              (should (string-match-p "DR-ANSWER" (plist-get (car disc) :answer))))
            ;; Back to chat.
            (tandem-composer-back-to-chat)
            (should (eq (tandem-composer-scope) 'chat)))
          ;; The Request changes command asks for feedback in the sticky scope.
          (let ((tandem-directive-root project))
            (tandem-directive-run id 'request-changes))
          (with-current-buffer view
            (should (equal (tandem-composer-scope) '(:directive "D1" :action request-changes)))
            (should (string-match-p "D1 request-changes"
                                    (buffer-substring-no-properties
                                     (line-beginning-position) (line-end-position))))
            (tandem-composer-back-to-chat))
          ;; The discussion request carried attempt 1's answer and no chat.
          (let ((last-request (car (last (tandem-directive-test--requests fake-record)))))
            (should (string-match-p "IMPL-DONE" last-request))
            (should (string-match-p "DR-Q" last-request)))
          ;; View changes: the attempt's patch in diff-mode.
          (let ((changes (tandem-directive-view-changes id)))
            (with-current-buffer changes
              (should (eq major-mode 'diff-mode))
              (should (string-match-p "^\\+HELLO" (buffer-string)))))
          ;; Rewind before this implementation goes to turn 1 of the session.
          (if (fboundp 'tandem-rewind)
              (message "tandem-rewind is defined; the rewind transaction is tested there")
            (should-not (tandem-directive-rewind-before id))
            (let ((called nil))
              (cl-letf (((symbol-function 'tandem-rewind)
                         (lambda (s turn) (setq called (list s turn)))))
                (tandem-directive-rewind-before id))
              (fmakunbound 'tandem-rewind)
              (should (equal called (list session 1)))))
          ;; Inspect with the journal deleted: the record alone suffices.
          (let ((journal (plist-get (tandem-request "sessions/lookup"
                                                    (list :query session :cwd project))
                                    :path)))
            (kill-buffer view)
            (tandem-request "sessions/close" (list :session session))
            (delete-file journal))
          (let ((inspector (tandem-inspect-directive id project)))
            (with-current-buffer inspector
              (should buffer-read-only)
              (let ((text (buffer-string)))
                (should (string-match-p "Directive D1 — Discussed" text))
                (should (string-match-p "Attempt 1 · implement · succeeded" text))
                (should (string-match-p "IMPL-DONE" text))
                (should (string-match-p "session .*, turn 1" text))
                (should (string-match-p "DR-Q is attempt 1 right" text))
                (should (string-match-p "a.txt (modified)" text))))))))))

(ert-deftest tandem-directive-detach-and-missing-source ()
  "Deleting the region detaches; a deleted file is source-missing until it returns."
  (tandem-test-with-backend
    (let* ((project (file-name-as-directory (make-temp-file "tandem-dir-project-" t)))
           (default-directory project)
           (file (expand-file-name "b.txt" project)))
      (unwind-protect
          (progn
            (write-region "one\ntwo\nthree\n" nil file)
            (let ((id (tandem-directive-create file 5 9 "Explain two")))
              (with-current-buffer (find-file-noselect file)
                (let ((ov (tandem-directive--overlay id)))
                  ;; A partial edit resizes.
                  (goto-char (overlay-start ov))
                  (insert "TWO ")
                  (should (equal (buffer-substring (overlay-start ov) (overlay-end ov))
                                 "TWO two\n"))
                  ;; Deleting the whole region detaches to one compact line.
                  (delete-region (overlay-start ov) (overlay-end ov))
                  (should (overlay-get ov 'tandem-detached))
                  (should (string-match-p "D1 detached" (overlay-get ov 'before-string)))
                  (tandem-test-wait-until
                   (lambda () (equal (plist-get (plist-get (tandem-directive-record id) :anchor)
                                                :status)
                                     "detached")))
                  (set-buffer-modified-p nil)))
              ;; The file goes away: source-missing.
              (kill-buffer (get-file-buffer file))
              (delete-file file)
              (tandem-directive-sync project)
              (should (equal (plist-get (plist-get (tandem-directive-record id) :anchor) :status)
                             "source-missing"))
              (let ((row (car (tandem-directive-list project))))
                (should (equal (plist-get row :anchor-status) "source-missing")))
              ;; It comes back twice over: ambiguous, it waits.
              (write-region "two\nx\ntwo\n" nil file)
              (tandem-directive-sync project)
              (should (equal (plist-get (plist-get (tandem-directive-record id) :anchor) :status)
                             "source-missing"))
              ;; Back with one exact match: reattached there.
              (write-region "zero\ntwo\n" nil file)
              (tandem-directive-sync project)
              (let ((anchor (plist-get (tandem-directive-record id) :anchor)))
                (should (equal (plist-get anchor :status) "attached"))
                (should (= (plist-get anchor :start-line) 2)))
              ;; The list shows it.
              (with-current-buffer (tandem-directives project)
                (should (string-match-p "D1 +Ready +Explain two +b.txt" (buffer-string)))
                (goto-char (point-min))
                (while (and (not (tabulated-list-get-id)) (not (eobp))) (forward-line 1))
                (should (equal (tandem-directive-id-at-point) "D1"))
                (kill-buffer))
              ;; Archive hides, unarchive shows.
              (tandem-directive-archive id)
              (should-not (tandem-directive-list project))
              (tandem-directive-archive id t)
              (should (tandem-directive-list project))))
        (delete-directory project t)))))

(ert-deftest tandem-directive-system-directives-and-errors ()
  "The gptel-shaped alist resolves; bad input is refused with readable errors."
  (let ((tandem-directives '((terse . "Be terse.")
                             (templ . ("Sys" "u1" "a1"))
                             (fn . (lambda () "From a function"))
                             (odd . ("Sys" "only-user"))
                             (bad . 42))))
    (should (equal (tandem-directive-system 'terse) '(:name "terse" :system "Be terse."
                                                            :template nil)))
    (should (equal (tandem-directive-system 'templ) '(:name "templ" :system "Sys"
                                                            :template ("u1" "a1"))))
    (should (equal (plist-get (tandem-directive-system 'fn) :system) "From a function"))
    (should-error (tandem-directive-system 'odd) :type 'user-error)
    (should-error (tandem-directive-system 'bad) :type 'user-error)
    (should-error (tandem-directive-system 'nope) :type 'user-error))
  (should-error (tandem-directive-record "X1") :type 'user-error)
  (should-error (tandem-directive-preview "D1" 'explode) :type 'user-error)
  (should-error (tandem-directive-create "/no/such/file" 1 2 "x") :type 'user-error)
  (tandem-test-with-backend
    (let* ((project (file-name-as-directory (make-temp-file "tandem-dir-project-" t)))
           (default-directory project)
           (file (expand-file-name "c.txt" project)))
      (unwind-protect
          (progn
            (write-region "abc\n" nil file)
            (should-error (tandem-directive-create file 1 3 "  ") :type 'user-error)
            (should-error (tandem-directive-create file 1 99 "x") :type 'user-error)
            (let ((id (tandem-directive-create file 1 3 "Do it")))
              (let ((err (should-error (tandem-directive-preview id 'retry)
                                       :type 'tandem-error)))
                (should (string-match-p "Retry follows a failed" (tandem-error-message err))))
              (let ((err (should-error (tandem-directive-record "D9") :type 'tandem-error)))
                (should (equal (tandem-error-code err) "not-found")))))
        (delete-directory project t)))))

(defun tandem-directive-test--menu-face (label)
  "Return the face of menu item LABEL in the open transient menu."
  (with-current-buffer (get-buffer " *transient*")
    (goto-char (point-min))
    (search-forward label)
    (get-text-property (1- (point)) 'face)))

(ert-deftest tandem-directive-menu-follows-the-lifecycle ()
  "C-c C-d on the overlay opens the menu; unavailable actions are inapt."
  (tandem-test-with-backend
    (let* ((project (file-name-as-directory (make-temp-file "tandem-dir-project-" t)))
           (default-directory project)
           (file (expand-file-name "m.txt" project)))
      (unwind-protect
          (progn
            (write-region "alpha\nbeta\n" nil file)
            (let ((id (tandem-directive-create file 1 6 "Rename alpha")))
              (with-current-buffer (find-file-noselect file)
                (goto-char (point-min))
                (should (eq (key-binding (kbd "C-c C-d")) #'tandem-directive-menu))
                (call-interactively #'tandem-directive-menu)
                (should (equal tandem-directive--menu-id id))
                (should (string-match-p "D1 · Ready — Rename alpha"
                                        (with-current-buffer (get-buffer " *transient*")
                                          (buffer-string))))
                (should-not (tandem-directive-test--menu-face "d Discuss"))
                (should-not (tandem-directive-test--menu-face "i Implement"))
                (dolist (label '("t Implement this" "r Discuss result" "c Request changes"
                                 "y Retry" "v View changes"))
                  (should (eq (tandem-directive-test--menu-face label)
                              'transient-inapt-suffix)))
                (transient-quit-all))))
        ;; Batch Emacs runs no command loop, so quitting leaves the menu's
        ;; keymap active: later tests' keys would run its suffixes.
        (when transient--prefix (transient--emergency-exit))
        (kill-buffer (get-file-buffer file))
        (delete-directory project t)))))

(provide 'tandem-directive-tests)
;;; tandem-directive-tests.el ends here
