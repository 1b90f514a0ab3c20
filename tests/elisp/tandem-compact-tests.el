;;; tandem-compact-tests.el --- ERT tests of compaction  -*- lexical-binding: t; -*-

;;; Commentary:
;; Against a real backend and the fake OpenAI server: a session with chat
;; and directive turns is compacted from Emacs; the summary request holds no
;; directive text, the session buffer shows the compaction row, the row
;; expands, the summarised turns open read-only from the journal, and the
;; directive's workspace record (what the inspector shows) keeps every
;; attempt.

;;; Code:

(require 'ert)
(require 'json)
(require 'tandem-test-helpers)
(require 'tandem-compact)
(require 'tandem-view)

(declare-function tandem-inspect-directive "tandem-inspector" (id &optional root))

(defconst tandem-compact-test--register
  (concat "import sys, tandem.server.table as t, tandem.cli as c\n"
          "m = 'tandem.sessions.compaction_api'\n"
          "if m not in t.DOMAIN_APIS:\n"
          "    t.DOMAIN_APIS += (m,)\n"
          "    t.build_table.__defaults__ = (t.DOMAIN_APIS,)\n"
          "sys.exit(c.main(['serve']))\n")
  "Start the backend with the compaction methods in its table.
Until the lead lists `tandem.sessions.compaction_api' in the server's
DOMAIN_APIS this adds it; afterwards it changes nothing.")

(defun tandem-compact-test--script ()
  "Write the fake model's script; return its file name."
  (let ((file (make-temp-file "tandem-compact-script-" nil ".json")))
    (with-temp-file file
      (insert (json-encode
               (list (list (cons 'text (mapconcat #'identity (make-list 40 "alpha answer") " ")))
                     (list (cons 'text "directive attempt answer DIRSECRET-ANSWER"))
                     (list (cons 'text "bravo answer"))
                     (list (cons 'text "charlie answer"))
                     (list (cons 'text "SUMMARY-ERT: alpha and bravo were discussed."))
                     (list (cons 'text "delta answer"))))))
    file))

(defun tandem-compact-test--turn (reply)
  "Wait for the turn of REPLY (:session :turn) to end successfully."
  (let ((ended (tandem-wait-turn (plist-get reply :session) (plist-get reply :turn) 60)))
    (should (equal (plist-get ended :outcome) "succeeded"))))

(defun tandem-compact-test--chat (session text)
  "Send TEXT in SESSION and wait for it."
  (let ((st (tandem-send text session)))
    (tandem-compact-test--turn (list :session (car st) :turn (cdr st)))))

(defun tandem-compact-test--records (file)
  "The request bodies recorded in FILE, as JSON strings."
  (with-temp-buffer
    (insert-file-contents file)
    (cl-remove-if-not (lambda (l) (string-match-p "chat/completions" l))
                      (split-string (buffer-string) "\n" t))))

(ert-deftest tandem-compact-session-with-directive-turns ()
  "Compact from Emacs; the row renders, expands, and the old turns open read-only."
  (let ((script (tandem-compact-test--script))
        (tandem-backend-arguments (list "-c" tandem-compact-test--register)))
    (unwind-protect
        (tandem-test-with-fake-openai script
          (make-directory (expand-file-name ".tandem" project))
          (with-temp-file (expand-file-name ".tandem/settings.json" project)
            (insert "{\"compaction_keep_turns\": 1}"))
          (with-temp-file (expand-file-name "a.py" project) (insert "x = 1\n"))
          (let* ((default-directory project)
                 (root (directory-file-name project))
                 (session (tandem-project-session project)))
            (tandem-compact-test--chat session "ALPHA request")
            ;; A directive implementation request, bound to this session.
            (tandem-request "directives/create"
                            (list :root root :path "a.py" :start-line 1 :end-line 1
                                  :text "x = 1" :request "DIRSECRET make x two"))
            (tandem-compact-test--turn
             (tandem-request "directives/act"
                             (list :root root :id "D1" :action "implement"
                                   :provider "openai:gpt-test" :session session
                                   :permission-mode "auto-edit")))
            (tandem-compact-test--chat session "BRAVO request")
            (tandem-compact-test--chat session "CHARLIE request")
            (let ((reply (tandem-compact session nil t)))
              (should (equal (plist-get reply :first-kept-turn) 4))
              (should (< (plist-get reply :tokens-after) (plist-get reply :tokens-before))))
            ;; The summary request (the fifth) holds no directive text.
            (let ((summary-request (nth 4 (tandem-compact-test--records fake-record))))
              (should (string-match-p "ALPHA request" summary-request))
              (should-not (string-match-p "DIRSECRET" summary-request)))
            ;; The next chat request carries the summary and the kept turn only.
            (tandem-compact-test--chat session "DELTA request")
            (let ((next (nth 5 (tandem-compact-test--records fake-record))))
              (should (string-match-p "SUMMARY-ERT" next))
              (should (string-match-p "CHARLIE request" next))
              (should-not (string-match-p "ALPHA request\\|BRAVO request\\|DIRSECRET" next)))
            ;; The session buffer shows the compaction row; TAB expands it.
            (let ((buffer (tandem-view-show (tandem-request "sessions/current") t)))
              (unwind-protect
                  (with-current-buffer buffer
                    (goto-char (point-min))
                    (should (search-forward "≡ Compacted" nil t))
                    (let ((row (line-beginning-position)))
                      (should (tandem-compact--entry-at row))
                      (should-not (save-excursion (search-forward "SUMMARY-ERT" nil t)))
                      (tandem-view-toggle-fold row)
                      (tandem-view-flush)
                      (goto-char (point-min))
                      (should (search-forward "SUMMARY-ERT" nil t))
                      ;; The summarised turns, from the journal, read-only.
                      (let* ((compaction (tandem-compact--entry-at
                                          (progn (goto-char (point-min))
                                                 (search-forward "≡ Compacted")
                                                 (line-beginning-position))))
                             (old (tandem-compact-show-old-turns session compaction)))
                        (should (equal (tandem-compact-summarised-turns
                                        (append (tandem-compact-old-entries session compaction)
                                                (list compaction)))
                                       '(1 2 3)))
                        (with-current-buffer old
                          (should buffer-read-only)
                          (let ((text (buffer-string)))
                            (should (string-match-p "ALPHA request" text))
                            (should (string-match-p "DIRSECRET make x two" text))
                            (should (string-match-p "DIRSECRET-ANSWER" text))
                            (should (string-match-p "BRAVO request" text))
                            (should-not (string-match-p "CHARLIE request" text)))
                          (goto-char (point-max))
                          (should-error (insert "x") :type 'buffer-read-only))
                        (kill-buffer old))))
                (kill-buffer buffer)))
            ;; The directive's record (what the inspector shows) keeps its attempt.
            (let* ((record (tandem-request "directives/get" (list :root root :id "D1")))
                   (attempts (plist-get record :attempts)))
              (should (= (length attempts) 1))
              (should (equal (plist-get (car attempts) :outcome) "succeeded"))
              (should (string-match-p "DIRSECRET-ANSWER"
                                      (format "%S" (car attempts)))))
            ;; The inspector opens that record after compaction, every attempt intact.
            (if (not (require 'tandem-inspector nil t))
                (message "SKIPPED part: elisp/tandem-inspector.el is missing; the record it \
would show was checked through directives/get")
              (let ((inspector (tandem-inspect-directive "D1" root)))
                (unwind-protect
                    (with-current-buffer inspector
                      (let ((text (buffer-string)))
                        (should (string-match-p "Attempt 1 · implement · succeeded" text))
                        (should (string-match-p "DIRSECRET-ANSWER" text))
                        (should (string-match-p "DIRSECRET make x two" text))))
                  (kill-buffer inspector))))))
      (delete-file script))))

(ert-deftest tandem-compact-failure-changes-nothing ()
  "A compaction the provider fails leaves the journal byte-identical."
  (let ((script (make-temp-file "tandem-compact-script-" nil ".json"))
        (tandem-backend-arguments (list "-c" tandem-compact-test--register)))
    (with-temp-file script
      (insert "[{\"text\": \"one\"}, {\"text\": \"two\"}, {\"status\": 400, \"message\": \"no summary for you\"}]"))
    (unwind-protect
        (tandem-test-with-fake-openai script
          (make-directory (expand-file-name ".tandem" project))
          (with-temp-file (expand-file-name ".tandem/settings.json" project)
            (insert "{\"compaction_keep_turns\": 1}"))
          (let* ((default-directory project)
                 (session (tandem-project-session project)))
            (tandem-compact-test--chat session "first request")
            (tandem-compact-test--chat session "second request")
            (let* ((path (plist-get (tandem-request "sessions/current") :path))
                   (before (with-temp-buffer (insert-file-contents-literally path)
                                             (secure-hash 'sha256 (current-buffer))))
                   (err (should-error (tandem-compact session "openai:gpt-test" t)
                                      :type 'tandem-error)))
              (should (string-match-p "no summary for you" (format "%S" err)))
              (should (equal before (with-temp-buffer (insert-file-contents-literally path)
                                                      (secure-hash 'sha256 (current-buffer))))))
            (should (equal (plist-get (tandem-compact-status session) :latest) nil))))
      (delete-file script))))

(provide 'tandem-compact-tests)
;;; tandem-compact-tests.el ends here
