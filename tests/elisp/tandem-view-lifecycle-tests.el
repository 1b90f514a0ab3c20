;;; tandem-view-lifecycle-tests.el --- Opening mid-turn, backend death, remote header  -*- lexical-binding: t; -*-

;;; Commentary:
;; Against a real backend: a session buffer opened while a turn streams
;; into it, a backend killed mid-turn, and the remote execution target in
;; the header line (with the agent-server stand-in of the remote tests).

;;; Code:

(require 'tandem-view-test-helpers)
(require 'tandem-remote-tests)

(defun tandem-view-lifecycle-test--count (regexp text)
  "Return how many times REGEXP matches in TEXT."
  (let ((n 0) (start 0))
    (while (string-match regexp text start) (setq n (1+ n) start (match-end 0)))
    n))

(ert-deftest tandem-view-open-while-a-turn-streams ()
  "Events arriving during the first refresh wait for it; none fails, none is lost."
  (let* ((answer (mapconcat (lambda (i) (format "word%d" i)) (number-sequence 1 150) " "))
         (fake (tandem-view-test-start-fake
                `(:steps [(:reply (:text ,answer :chunk_size 3 :delay 0.003))])))
         (project (make-temp-file "tandem-view-project-" t))
         (process-environment (cons (concat "OPENAI_BASE_URL=" (cdr fake)) process-environment))
         (tandem-provider "openai:fake-model")
         (tandem-permission-mode 'ask)
         (tandem-provider-hosts nil)
         (errors nil) (replayed 0)
         (record (lambda (events) (cl-incf replayed (length events))))
         ;; A slow first fetch: the stream goes on while the view waits.
         (slow (lambda (&rest _) (accept-process-output nil 0.3))))
    (advice-add 'tandem-view--replay :before record)
    (advice-add 'tandem-view--fetch :after slow)
    (unwind-protect
        (tandem-test-with-backend
          (let* ((info (tandem-request "sessions/new" (list :cwd project :title "mid-turn")))
                 (session (plist-get info :id)))
            (cl-letf* ((orig-message (symbol-function 'message))
                       ((symbol-function 'message)
                        (lambda (fmt &rest args)
                          (when (and fmt (string-match-p "event handler\\|tandem view:" fmt))
                            (push (apply #'format fmt args) errors))
                          (apply orig-message fmt args))))
              (tandem-view-install-hooks)
              (let ((turn (cdr (tandem-send "stream please" session)))
                    (buffer (tandem-view-show info t)))
                (advice-remove 'tandem-view--fetch slow)
                (with-current-buffer buffer
                  (tandem-view-test-wait-turn turn 30)
                  (let ((text (tandem-view-test-text)))
                    (should (= 1 (tandem-view-lifecycle-test--count "word150\\b" text)))
                    (should (= 1 (tandem-view-lifecycle-test--count "word1\\b" text)))
                    (should (string-match-p "✔ succeeded" text))
                    (should-not (string-match-p "running" text)))
                  (kill-buffer))))
            (should-not errors)
            (should (> replayed 0))))
      (advice-remove 'tandem-view--replay record)
      (advice-remove 'tandem-view--fetch slow)
      (delete-process (car fake))
      (delete-directory project t))))

(ert-deftest tandem-view-notices-backend-death-mid-turn ()
  "A backend killed mid-turn: the progress row says so within seconds; `g' recovers."
  (tandem-view-test-with-session '(:steps [(:reply (:text "Thinking forever" :stall t))])
    (let ((turn (tandem-view-test-send "never ends")))
      (should (equal turn 1))
      (tandem-test-wait-until (lambda () (string-match-p "⏵ Turn 1 running" (tandem-view-test-text))))
      (signal-process (tandem-backend-pid) 9)
      (tandem-test-wait-until
       (lambda () (string-match-p "backend stopped during turn 1" (tandem-view-test-text)))
       5)
      (should-not (tandem-view-state-running tandem-view--state))
      (should-not (string-match-p "running" (tandem-view-test-text)))
      ;; The send key sends again (it no longer cancels).
      (should (string-match-p "C-c C-c send" (tandem-view-test-text)))
      (goto-char (point-min))
      (funcall (key-binding "g"))
      (should (tandem-backend-pid))
      (should-not (string-match-p "backend stopped" (tandem-view-test-text)))
      (should (string-match-p "never ends" (tandem-view-test-text))))))

(ert-deftest tandem-view-failed-open-leaves-no-buffer ()
  "A session the backend does not know: a clear error, no half-built buffer left."
  (tandem-test-with-backend
    (let ((before (buffer-list)))
      (let ((err (should-error (tandem-view-show '(:id "no-such-session" :title "ghost") t)
                               :type 'tandem-error)))
        (should (string-match-p "no-such-session" (tandem-error-message err))))
      (should-not (tandem-view-buffer "no-such-session"))
      (should-not (cl-find-if (lambda (b) (and (buffer-live-p b)
                                               (string-match-p "\\`\\*tandem\\(: \\|\\*\\)" (buffer-name b))
                                               (not (memq b before))))
                              (buffer-list))))))

(defun tandem-view-lifecycle-test--header (buffer)
  "Return BUFFER's header line as displayed (its `:eval' evaluated).
Batch Emacs has no frame, where `format-mode-line' gives \"\": evaluate
the form as redisplay would."
  (with-current-buffer buffer
    (should (eq (car-safe header-line-format) :eval))
    (substring-no-properties (eval (cadr header-line-format) t))))

(ert-deftest tandem-view-header-shows-remote-target ()
  "The header line names the session's remote target; attach, detach and `g' update it."
  (tandem-test-with-backend
    (tandem-remote-test-with-server (url home)
      (clrhash tandem-remote--targets)
      (let* ((dir (make-temp-file "tandem-view-remote-" t))
             (info (tandem-request "sessions/new" (list :cwd dir :title "remote")))
             (session (plist-get info :id))
             (buffer (tandem-view-show info t))
             (shown (concat "remote: box (" home "/workspace/project/v)")))
        (unwind-protect
            (progn
              (should-not (string-match-p "remote: box" (tandem-view-lifecycle-test--header buffer)))
              ;; M-x tandem-remote-attach in the buffer acts on its session.
              (with-current-buffer buffer
                (should (equal (funcall tandem-remote-session-function) session)))
              (tandem-remote-attach session "box" "workspace/project/v")
              (should (string-match-p (regexp-quote shown)
                                      (tandem-view-lifecycle-test--header buffer)))
              (tandem-remote-detach session)
              (should-not (string-match-p "remote: box" (tandem-view-lifecycle-test--header buffer)))
              ;; Changed behind Emacs's back (straight to the backend): `g' sees it.
              (tandem-request "remote/attach" (list :session session :host "box" :url url
                                                    :working-dir "workspace/project/v"))
              (should-not (string-match-p "remote: box" (tandem-view-lifecycle-test--header buffer)))
              (with-current-buffer buffer (tandem-view-refresh))
              (should (string-match-p (regexp-quote shown)
                                      (tandem-view-lifecycle-test--header buffer))))
          (kill-buffer buffer)
          (delete-directory dir t))))))

(ert-deftest tandem-view-events-follow-their-connection ()
  "A buffer applies the events of the backend it follows, not another connection's.
When that backend is gone, the buffer follows the next one."
  (tandem-view-test-with-session '(:steps [])
    (let* ((st tandem-view--state)
           (session (tandem-view-state-session st))
           (text (lambda () (let ((b (gethash 1 (tandem-view-state-by-turn st))))
                              (and b (tandem-view-block-live-text b)))))
           ;; A connection the buffer does not follow (never started).
           (stranger (tandem-connection :token "not-ours")))
      (should (eq (tandem-view-state-connection st) tandem--connection))
      (tandem--on-events stranger (list (list :session session :seq 1 :kind "delta" :turn 1
                                              :stream "text" :text "stray")))
      (tandem-view-flush)
      (should-not (funcall text))
      ;; The same kind of event from the backend it follows is applied.
      (tandem-request "debug/emit" (list :session session :count 1 :text "ours" :kind "delta"))
      (tandem-test-wait-until (lambda () (equal (funcall text) "ours")))
      ;; A new backend: the old connection is gone, the buffer follows this one.
      (tandem-restart)
      (tandem-request "debug/emit" (list :session session :count 1 :text "+new" :kind "delta"))
      (tandem-test-wait-until (lambda () (equal (funcall text) "ours+new")))
      (should (eq (tandem-view-state-connection st) tandem--connection))
      (should-not (string-match-p "stray" (tandem-view-test-text))))))

(provide 'tandem-view-lifecycle-tests)
;;; tandem-view-lifecycle-tests.el ends here
