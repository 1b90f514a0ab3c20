;;; tandem-remote-engine-tests.el --- Turns on the real agent-server, driven from Emacs  -*- lexical-binding: t; -*-

;;; Commentary:
;; The remote engine's whole story, from Emacs: batch Emacs drives the real backend,
;; whose session is attached to the REAL openhands-agent-server (started
;; by tests/python/remote/agent_server.py, as the Python integration tests
;; start it); the server's agent talks to tandem's fake OpenAI server.
;; Attach, a chat turn streamed into the view (text and a tool row for a
;; command the remote agent ran, its confirmation answered from the view),
;; a second turn in the same conversation, a directive Discuss and an
;; Implement each in a conversation of its own, a Rewind before the first
;; turn that puts the server's files and the conversation back, a cancel.
;;
;; The evidence is what reached the server and the fake LLM -- the file the
;; command wrote in the server's working dir, the conversations the server
;; lists, the requests the fake recorded (the server's agent offers its own
;; `terminal' tool and runs on the key it was handed) -- not what tandem
;; says.  Without the server (no Python >= 3.12) the test skips, saying why.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-view-test-helpers)
(require 'tandem-remote)
(require 'tandem-directive)
(require 'tandem-rewind)
(require 'json)
(require 'url)

(defconst tandem-remote-engine-test--script
  (json-encode
   '(:default (:text "a title")
     :steps
     [(:match (:has_tools t :last_user_contains "RUN-HI")
       :reply (:text "Running it." :tool_calls
                     [(:name "terminal" :input (:command "echo hi > hi.txt && echo changed > seed.txt && cat hi.txt"
                                                :summary "write hi.txt"))]))
      (:match (:has_tools t :any_contains "RUN-HI") :reply (:text "FIRST-DONE: wrote hi.txt"))
      (:match (:has_tools t :last_user_contains "SECOND-Q") :reply (:text "SECOND-ANSWER"))
      (:match (:has_tools t :last_user_contains "DISC-Q") :reply (:text "DISC-ANSWER"))
      (:match (:has_tools t :last_user_contains "Implement the request")
       :reply (:text "IMPL-DONE"))
      (:match (:has_tools t :last_user_contains "SLOW-Q")
       :reply (:text "Waiting." :tool_calls
                     [(:name "terminal" :input (:command "sleep 60" :summary "wait"))]))]))
  "What the fake LLM answers the server's agent, request by request.")

(defvar tandem-remote-engine-test--server nil
  "The running agent-server: (PROCESS URL HOME KEY), started once per Emacs.")

(defun tandem-remote-engine-test--stop ()
  "Stop the agent-server: closing its stdin makes it shut the server down."
  (when-let* ((proc (car tandem-remote-engine-test--server)))
    (when (process-live-p proc)
      (ignore-errors (process-send-eof proc))
      (let ((deadline (+ (float-time) 20)))
        (while (and (process-live-p proc) (< (float-time) deadline))
          (accept-process-output proc 0.1))))
    (delete-process proc)
    (setq tandem-remote-engine-test--server nil)))

(add-hook 'kill-emacs-hook #'tandem-remote-engine-test--stop)

(defun tandem-remote-engine-test--server ()
  "Return (PROCESS URL HOME KEY) of the agent-server, starting it if needed.
Skip the test, printing the reason, when it cannot run here."
  (or tandem-remote-engine-test--server
      (let* ((key (format "ert-%x" (random most-positive-fixnum)))
             (out "")
             (proc (make-process
                    :name "tandem-agent-server" :noquery t :connection-type 'pipe
                    :command (list (tandem--python)
                                   (expand-file-name "tests/python/remote/agent_server.py"
                                                     tandem-test-root)
                                   "serve" key)
                    :stderr (get-buffer-create " *tandem-agent-server*")
                    :filter (lambda (_p s) (setq out (concat out s))))))
        (tandem-test-wait-until (lambda () (or (string-search "\n" out)
                                               (not (process-live-p proc))))
                                180)
        (cond ((string-prefix-p "SKIP " out)
               (delete-process proc)
               (message "SKIP tandem-remote-engine: %s" (string-trim (substring out 5)))
               (ert-skip (string-trim (substring out 5))))
              ((string-match "\\`\\(http://[^ ]+\\) \\([^\n]+\\)\n" out)
               (setq tandem-remote-engine-test--server
                     (list proc (match-string 1 out) (match-string 2 out) key)))
              (t (ert-fail (format "the agent-server did not start: %s %s" out
                                   (with-current-buffer " *tandem-agent-server*"
                                     (buffer-string)))))))))

(defun tandem-remote-engine-test--get (url key path)
  "GET PATH of the agent-server at URL with session KEY; return the parsed JSON."
  (let ((url-request-extra-headers (list (cons "X-Session-API-Key" key)))
        (url-show-status nil))
    (with-current-buffer (url-retrieve-synchronously (concat url path) t t 30)
      (goto-char (point-min))
      (re-search-forward "\n\n")
      (prog1 (json-parse-buffer :object-type 'plist :array-type 'list :null-object nil)
        (kill-buffer)))))

(defun tandem-remote-engine-test--conversations (url key)
  "The ids and statuses of every conversation on the server: ((ID . STATUS) ...)."
  (mapcar (lambda (c) (cons (plist-get c :id) (plist-get c :execution_status)))
          (plist-get (tandem-remote-engine-test--get url key
                                                     "/api/conversations/search?limit=100")
                     :items)))

(defun tandem-remote-engine-test--read (dir file)
  "The text of FILE in DIR (the server's working dir, on this machine's disk)."
  (with-temp-buffer (insert-file-contents (expand-file-name file dir)) (buffer-string)))

(defun tandem-remote-engine-test--requests (record)
  "The requests the fake LLM recorded in the file RECORD, parsed."
  (with-temp-buffer
    (insert-file-contents record)
    (mapcar (lambda (line) (json-parse-string line :object-type 'alist :array-type 'list
                                              :null-object nil :false-object nil))
            (split-string (buffer-string) "\n" t))))

(defun tandem-remote-engine-test--tools (request)
  "The names of the tools REQUEST offered."
  (mapcar (lambda (tool) (alist-get 'name (alist-get 'function tool)))
          (alist-get 'tools (alist-get 'body request))))

(defvar tandem-remote-engine-test--record nil
  "The fake LLM's record file of the running test (for failure reports).")

(defun tandem-remote-engine-test--wait (session turn)
  "Wait for TURN of SESSION to end; return its outcome plist.
A turn that does not end fails the test with the view and what the LLM got."
  (let ((status (tandem-wait-turn session turn 90)))
    (unless (plist-get status :outcome)
      (ert-fail (list "turn did not end" turn
                      (and (buffer-live-p (tandem-view-buffer session))
                           (with-current-buffer (tandem-view-buffer session)
                             (tandem-view-test-text)))
                      (and tandem-remote-engine-test--record
                           (mapcar (lambda (r) (json-encode (alist-get 'body r)))
                                   (tandem-remote-engine-test--requests
                                    tandem-remote-engine-test--record))))))
    status))

(ert-deftest tandem-remote-engine-from-emacs ()
  "Attach, chat twice, a confirmation, Discuss, Implement, cancel -- all on the server."
  (pcase-let* ((`(,_proc ,url ,home ,key) (tandem-remote-engine-test--server))
               (record (setq tandem-remote-engine-test--record
                             (make-temp-file "tandem-remote-llm-" nil ".jsonl")))
               (script (make-temp-file "tandem-remote-script-" nil ".json"
                                       tandem-remote-engine-test--script))
               (fake (tandem-test-start-fake "openai" script record))
               (llm-key (format "sk-remote-%x" (random most-positive-fixnum)))
               (project (file-name-as-directory (make-temp-file "tandem-remote-proj-" t)))
               (process-environment
                (append (list (format "OPENAI_BASE_URL=http://127.0.0.1:%d/v1" (cdr fake))
                              (concat "OPENAI_API_KEY=" llm-key)
                              (concat "TANDEM_REMOTE_API_KEY_BOX=" key))
                        process-environment))
               (auth-sources nil)
               (tandem-provider "openai:fake-model")
               (tandem-provider-hosts nil)
               (tandem-permission-mode 'ask)
               (tandem-remote-hosts `(("box" :url ,url :forward-keys t)))
               (wd (format "workspace/ert-%x" (random most-positive-fixnum)))
               (before (mapcar #'car (tandem-remote-engine-test--conversations url key))))
    (let ((default-directory project))
      (call-process "git" nil nil nil "init" "-q"))
    (write-region "hello\nworld\n" nil (expand-file-name "a.txt" project))
    (unwind-protect
        (tandem-test-with-backend
          (let* ((info (tandem-request "sessions/new" (list :cwd (directory-file-name project)
                                                            :title "remote")))
                 (sid (plist-get info :id))
                 (remote-dir (concat home "/" wd)))
            (make-directory remote-dir t)
            (write-region "seed\n" nil (expand-file-name "seed.txt" remote-dir))
            (with-current-buffer (tandem-view-show info)
              ;; Attach: the header names the engine and the host.
              (tandem-remote-attach sid "box" wd)
              (should (string-match-p (regexp-quote (format "remote: box (%s)" remote-dir))
                                      (tandem-view--header-line)))
              ;; Turn 1: the agent asks to run a command; answered from the view.
              (let ((turn (tandem-view-test-send "RUN-HI please")))
                (let ((row (tandem-test-wait-until
                            (lambda () (and (not (tandem-view-state-dirty tandem-view--state))
                                            (next-single-property-change
                                             (point-min) 'tandem-interaction)))
                            90)))
                  (goto-char row)
                  (execute-kbd-macro "y"))
                (should (equal (plist-get (tandem-remote-engine-test--wait sid turn) :outcome)
                               "succeeded"))
                (tandem-view-test-wait-turn turn)
                (let ((text (tandem-view-test-text)))
                  (should (string-match-p "FIRST-DONE: wrote hi.txt" text))
                  (should (string-match-p "⚙ terminal.*\\[completed\\]" text))))
              ;; It ran on the server, in the target's dir; nothing local.
              (should (equal (tandem-remote-engine-test--read remote-dir "hi.txt") "hi\n"))
              (should (equal (tandem-remote-engine-test--read remote-dir "seed.txt") "changed\n"))
              (should-not (file-exists-p (expand-file-name "hi.txt" project)))
              (let ((chat (cl-set-difference
                           (mapcar #'car (tandem-remote-engine-test--conversations url key))
                           before :test #'equal)))
                (should (= (length chat) 1))
                ;; Turn 2: the same conversation.
                (let ((turn (tandem-view-test-send "SECOND-Q now")))
                  (should (equal (plist-get (tandem-remote-engine-test--wait sid turn) :outcome)
                                 "succeeded"))
                  (tandem-view-test-wait-turn turn)
                  (should (string-match-p "SECOND-ANSWER" (tandem-view-test-text))))
                (should (equal (cl-set-difference
                                (mapcar #'car (tandem-remote-engine-test--conversations url key))
                                before :test #'equal)
                               chat))
                ;; The second request carried the first exchange: one conversation.
                (let ((second (cl-find-if (lambda (r) (string-match-p
                                                       "SECOND-Q" (json-encode (alist-get 'body r))))
                                          (tandem-remote-engine-test--requests record))))
                  (should (string-match-p "RUN-HI" (json-encode (alist-get 'body second)))))
                ;; Rewind before turn 1: the server's files and the conversation go back.
                (let* ((tandem-rewind-confirm-function #'always)
                       (done (tandem-rewind sid 1)))
                  (should done)
                  (should-not (file-exists-p (expand-file-name "hi.txt" remote-dir)))
                  (should (equal (tandem-remote-engine-test--read remote-dir "seed.txt")
                                 "seed\n"))
                  (tandem-test-wait-until
                   (lambda () (not (string-match-p "RUN-HI\\|SECOND-ANSWER"
                                                   (tandem-view-test-text))))
                   20))
                ;; Directives: Discuss, then Implement, each a conversation of its own.
                (let* ((tandem-permission-mode 'auto-edit)
                       (default-directory project)
                       (id (tandem-directive-create (expand-file-name "a.txt" project) 1 7
                                                    "Make it loud"))
                       (seen (append chat before)))
                  (pcase-dolist (`(,action ,text ,answer)
                                 '((discuss "DISC-Q is this loud?" "DISC-ANSWER")
                                   (implement nil "IMPL-DONE")))
                    (let* ((started (tandem-directive-act id action text))
                           (status (tandem-remote-engine-test--wait (car started)
                                                                    (cdr started)))
                           (fresh (cl-set-difference
                                   (mapcar #'car (tandem-remote-engine-test--conversations
                                                  url key))
                                   seen :test #'equal)))
                      (should (equal (car started) sid))
                      (should (equal (plist-get status :outcome) "succeeded"))
                      (should (= (length fresh) 1))
                      (setq seen (append fresh seen))
                      (let ((asked (car (last (tandem-remote-engine-test--requests record)))))
                        ;; The turn's end is the backend's; its text reaches the
                        ;; view as events, which may still be on their way.
                        (should (tandem-test-wait-until
                                 (lambda () (string-match-p answer (tandem-view-test-text)))
                                 30))
                        ;; Its own context: nothing of the chat went with it.
                        (should-not (string-match-p "RUN-HI\\|SECOND-Q"
                                                    (json-encode (alist-get 'body asked))))))))
                ;; Cancel: the agent runs a long command; the turn ends aborted and
                ;; the server's conversation stops running.  Its request also shows
                ;; the Rewind reached the agent: nothing of the rewound turns.
                (let ((turn (tandem-view-test-send "SLOW-Q wait a minute")))
                  (let ((row (tandem-test-wait-until
                              (lambda () (and (not (tandem-view-state-dirty tandem-view--state))
                                              (next-single-property-change
                                               (point-min) 'tandem-interaction)))
                              90)))
                    ;; No engine switch under a running turn.
                    (dolist (switch (list (lambda () (tandem-remote-detach sid))
                                          (lambda () (tandem-remote-attach sid "box" wd))))
                      (let ((err (should-error (funcall switch) :type 'tandem-error)))
                        (should (equal (tandem-error-code err) "busy"))))
                    (should (string-match-p "remote: box" (tandem-view--header-line)))
                    (goto-char row)
                    (execute-kbd-macro "y"))
                  (tandem-test-wait-until
                   (lambda () (string-match-p "⚙ terminal.*sleep 60\\|sleep 60"
                                              (tandem-view-test-text)))
                   30)
                  (let ((slow (cl-find-if (lambda (r) (string-match-p
                                                       "SLOW-Q" (json-encode (alist-get 'body r))))
                                          (tandem-remote-engine-test--requests record))))
                    (should-not (string-match-p "RUN-HI\\|SECOND-Q"
                                                (json-encode (alist-get 'body slow)))))
                  (sleep-for 1)
                  (should (tandem-view-cancel))
                  (should (equal (plist-get (tandem-remote-engine-test--wait sid turn) :outcome)
                                 "aborted"))
                  (tandem-test-wait-until
                   (lambda () (not (equal (cdr (assoc (car chat)
                                                      (tandem-remote-engine-test--conversations
                                                       url key)))
                                          "running")))
                   30)
                  ;; The rewound conversation went on (navigated, not replaced): three
                  ;; conversations in all, the chat's and the two directives'.
                  (should (= 3 (length (cl-set-difference
                                        (mapcar #'car (tandem-remote-engine-test--conversations
                                                       url key))
                                        before :test #'equal))))))
              ;; Every LLM request came from the server's agent: its own tools, the
              ;; key it was handed; none of tandem's native tools.
              (let ((requests (tandem-remote-engine-test--requests record)))
                (should (> (length requests) 5))
                (dolist (r requests)
                  (should (equal (alist-get 'authorization (alist-get 'headers r))
                                 (concat "Bearer " llm-key)))
                  (let ((tools (tandem-remote-engine-test--tools r)))
                    (should-not (member "write_file" tools))
                    (when tools (should (member "terminal" tools))))))
              (kill-buffer))))
      (delete-process (car fake))
      (dolist (f (list record script)) (ignore-errors (delete-file f)))
      (ignore-errors (delete-directory project t)))))

(provide 'tandem-remote-engine-tests)
;;; tandem-remote-engine-tests.el ends here
