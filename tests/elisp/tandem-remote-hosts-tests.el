;;; tandem-remote-hosts-tests.el --- Host entries, the config push, the engine shown  -*- lexical-binding: t; -*-

;;; Commentary:
;; `tandem-remote-hosts' in both forms, what `tandem-configure' hands the
;; real backend about them (the backend's own reply lists what it took),
;; the once-per-host question about forwarding the LLM key, and where a
;; session's engine and host are shown: the view's header line from the
;; session reply, the overview's engine column from `sessions/overview'.

;;; Code:

(require 'tandem-remote-tests)
(require 'tandem-view)
(require 'tandem-overview)

(ert-deftest tandem-remote-host-entry-both-forms ()
  "A (NAME . URL) entry and a (NAME :url ...) entry read the same way."
  (let ((tandem-remote-hosts '(("old" . "http://127.0.0.1:1")
                               ("new-box" :url "http://127.0.0.1:2" :forward-keys t)
                               ("prof" :url "http://127.0.0.1:3" :agent-profile "p-1")
                               ("broken" :forward-keys t))))
    (should (equal (tandem-remote-host-entry "old")
                   '(:url "http://127.0.0.1:1" :forward-keys nil :agent-profile nil)))
    (should (equal (tandem-remote-host-url "new-box") "http://127.0.0.1:2"))
    (should (tandem-remote-forward-keys-p "new-box"))
    (should-not (tandem-remote-forward-keys-p "prof"))
    (should (string-match-p "has no :url"
                            (cadr (should-error (tandem-remote-host-url "broken")
                                                :type 'user-error))))
    (should (string-match-p "No host"
                            (cadr (should-error (tandem-remote-host-url "nope")
                                                :type 'user-error))))))

(ert-deftest tandem-remote-forward-question-asked-once-per-host ()
  "A host that neither forwards keys nor names a profile is asked about once."
  (let ((tandem-remote-hosts '(("ask-me" . "http://127.0.0.1:1")
                               ("yes-box" :url "http://127.0.0.1:2" :forward-keys t)
                               ("prof" :url "http://127.0.0.1:3" :agent-profile "p")))
        (tandem-remote--forward-answers (make-hash-table :test #'equal))
        (prompts nil))
    (cl-letf (((symbol-function 'yes-or-no-p)
               (lambda (prompt) (push prompt prompts) t)))
      (dolist (host '("ask-me" "ask-me" "yes-box" "prof"))
        (tandem-remote--maybe-ask-forward host)))
    (should (= (length prompts) 1))
    (should (string-match-p "agent-server ask-me (http://127.0.0.1:1)" (car prompts)))
    (should (tandem-remote-forward-keys-p "ask-me"))
    ;; A "no" is remembered too, and keeps the key home.
    (let ((tandem-remote--forward-answers (make-hash-table :test #'equal)))
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_) nil)))
        (tandem-remote--maybe-ask-forward "ask-me"))
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_) (ert-fail "asked twice"))))
        (tandem-remote--maybe-ask-forward "ask-me"))
      (should-not (tandem-remote-forward-keys-p "ask-me")))))

(ert-deftest tandem-remote-hosts-reach-the-backend-in-the-config-push ()
  "`tandem-configure' hands every host (names kept as written) to the backend.
The backend's reply lists the hosts it took; the session key is in the
push but never in `*tandem-events*'."
  (tandem-test-with-backend
    (let* ((tandem-log-events t)
           (tandem-provider-hosts nil)
           (process-environment (cons "TANDEM_REMOTE_API_KEY_MY_BOX=sekrit-session-key"
                                      process-environment))
           (auth-sources nil)
           (tandem-remote-hosts '(("my-box" :url "http://127.0.0.1:9" :forward-keys t)
                                  ("old" . "http://127.0.0.1:8")))
           (sent nil)
           (reply (cl-letf* ((real (symbol-function 'tandem-request))
                             ((symbol-function 'tandem-request)
                              (lambda (method &optional params &rest rest)
                                (when (equal method "turns/configure") (setq sent params))
                                (apply real method params rest))))
                    (tandem-configure))))
      (should (equal (plist-get reply :remote-hosts) '("my-box" "old")))
      (let ((hosts (plist-get sent :remote-hosts)))
        (should (equal (plist-get (car hosts) :forward-keys) t))
        (should (equal (plist-get (car hosts) :api-key) "sekrit-session-key"))
        (should-not (plist-member (cadr hosts) :forward-keys)))
      ;; The log prints what it kept when it is shown: print it now, so the
      ;; check does not depend on an earlier test having shown it.
      (tandem--log-print)
      (with-current-buffer "*tandem-events*"
        (should (string-match-p "turns/configure" (buffer-string)))
        (should-not (string-match-p "sekrit-session-key" (buffer-string)))))))

(ert-deftest tandem-remote-engine-in-header-and-overview ()
  "A session attached to a host shows it in the header and the overview."
  (tandem-test-with-backend
    (tandem-remote-test-with-server (url home)
      (let* ((project (tandem-remote-test--tmpdir "tandem-remote-project-"))
             (info (tandem-request "sessions/new" (list :cwd project :title "remote one")))
             (sid (plist-get info :id)))
        (should (plist-member info :remote))
        (should-not (plist-get info :remote))
        (tandem-remote-attach sid "box" "w")
        ;; Forget what the attach told Emacs: the session reply alone must say it.
        (clrhash tandem-remote--targets)
        (let ((again (tandem-request "sessions/continue" (list :cwd project))))
          (should (equal (plist-get (plist-get again :remote) :host) "box"))
          (cl-letf (((symbol-function 'tandem-remote-target) #'ignore))
            (with-current-buffer (tandem-view-show again t)
              (unwind-protect
                  (should (string-match-p (regexp-quote (format "remote: box (%s/w)" home))
                                          (tandem-view--header-line)))
                (kill-buffer)))))
        (let ((row (car (plist-get (tandem-request "sessions/overview" (list :cwd project))
                                   :rows))))
          (should (equal (plist-get row :engine) "remote"))
          (should (equal (plist-get row :host) "box"))
          (should (string-prefix-p "remote:box" (aref (cadr (tandem-overview--entry row)) 3))))
        (tandem-remote-detach sid)
        (let ((row (car (plist-get (tandem-request "sessions/overview" (list :cwd project))
                                   :rows))))
          (should-not (equal (plist-get row :engine) "remote"))
          (should-not (plist-get row :host)))))))

(provide 'tandem-remote-hosts-tests)
;;; tandem-remote-hosts-tests.el ends here
