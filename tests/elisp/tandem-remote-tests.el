;;; tandem-remote-tests.el --- Remote uploads through the real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend (`tandem serve') talks to the agent-server stand-in of
;; tests/python/remote/fake_server.py on a real socket (the Python tests
;; check that stand-in against the real openhands-agent-server).  Keys come
;; from a temporary netrc file through auth-source, or from the environment.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-remote)
(require 'dired)

(defconst tandem-remote-test--root
  (expand-file-name "../.." (file-name-directory (or load-file-name buffer-file-name)))
  "The tandem checkout.")

(defvar tandem-remote-test--dirs nil
  "Temporary folders to remove at exit.")

(add-hook 'kill-emacs-hook
          (lambda () (dolist (d tandem-remote-test--dirs) (ignore-errors (delete-directory d t)))))

(defun tandem-remote-test--tmpdir (prefix)
  "Return a new temporary folder named after PREFIX."
  (let ((d (make-temp-file prefix t)))
    (push d tandem-remote-test--dirs)
    d))

(defmacro tandem-remote-test-with-server (spec &rest body)
  "Run BODY with a fake agent-server; SPEC is (URL-VAR HOME-VAR [KEY]).
The server's home is a fresh folder; `tandem-remote-hosts' names it \"box\"."
  (declare (indent 1) (debug t))
  (let ((proc (make-symbol "proc")) (out (make-symbol "out")))
    `(let* ((,(nth 1 spec) (tandem-remote-test--tmpdir "tandem-remote-home-"))
            (,out "")
            (,proc (make-process
                    :name "fake-agent-server" :noquery t :connection-type 'pipe
                    :command (append (list (tandem--python)
                                           (expand-file-name "tests/python/remote/fake_server.py"
                                                             tandem-remote-test--root)
                                           ,(nth 1 spec))
                                     (and ,(nth 2 spec) (list ,(nth 2 spec))))
                    :filter (lambda (_p s) (setq ,out (concat ,out s)))))
            (,(nth 0 spec) (progn (tandem-test-wait-until
                                   (lambda () (string-match "\\`\\(http://[^\n]+\\)\n" ,out)))
                                  (match-string 1 ,out)))
            (tandem-remote-hosts (list (cons "box" ,(nth 0 spec)))))
       (unwind-protect (progn ,@body)
         (delete-process ,proc)))))

(defun tandem-remote-test--upload (files host wd)
  "Upload FILES to HOST in WD and wait; return (UPLOADED FAILURES)."
  (let (result)
    (tandem-remote-upload-files files host wd (lambda (u f) (setq result (list u f))))
    (tandem-test-wait-until (lambda () result) 20)
    result))

(defun tandem-remote-test--netrc (url key)
  "Return a temporary netrc file giving KEY for URL's host and port."
  (let* ((parsed (url-generic-parse-url url))
         (file (expand-file-name "netrc" (tandem-remote-test--tmpdir "tandem-netrc-"))))
    (with-temp-file file
      (insert (format "machine %s port %d login tandem password %s\n"
                      (url-host parsed) (url-port parsed) key)))
    file))

(ert-deftest tandem-remote-api-key-lookup ()
  "Keys come from auth-source by host and port, else from the environment."
  (let* ((netrc (tandem-remote-test--netrc "http://127.0.0.1:4567" "from-netrc"))
         (auth-sources (list netrc))
         (process-environment (cons "TANDEM_REMOTE_API_KEY_MY_BOX=from-env" process-environment)))
    (auth-source-forget-all-cached)
    (should (equal (tandem-remote-api-key "my-box" "http://127.0.0.1:4567") "from-netrc"))
    (should (equal (tandem-remote-api-key "my-box" "http://example.invalid:1") "from-env"))
    (should-not (tandem-remote-api-key "other" "http://example.invalid:1"))))

(ert-deftest tandem-remote-upload-current-file-and-dired ()
  "The visited file, then Dired's marked files, land in the resolved dir."
  (tandem-test-with-backend
    (tandem-remote-test-with-server (url home)
      (let* ((src (tandem-remote-test--tmpdir "tandem-remote-src-"))
             (one (expand-file-name "one.el" src))
             (two (expand-file-name "two.txt" src))
             (three (expand-file-name "three.txt" src))
             (wd "workspace/project/ert"))
        (with-temp-file one (insert "(message \"one\")\n"))
        (with-temp-file two (insert "two\n"))
        (with-temp-file three (insert "three\n"))
        (with-current-buffer (find-file-noselect one)
          (let ((files (tandem-remote--files-here)))
            (should (equal files (list one)))
            (let ((result (tandem-remote-test--upload files "box" wd)))
              (should-not (nth 1 result))
              (should (equal (plist-get (car (nth 0 result)) :path)
                             (concat home "/" wd "/one.el")))))
          (kill-buffer))
        (should (equal (with-temp-buffer
                         (insert-file-contents (expand-file-name (concat wd "/one.el") home))
                         (buffer-string))
                       "(message \"one\")\n"))
        (with-current-buffer (dired-noselect src)
          (dired-goto-file two) (dired-mark 1)
          (dired-goto-file three) (dired-mark 1)
          (let* ((files (tandem-remote--files-here))
                 (result (tandem-remote-test--upload files "box" wd)))
            (should (equal (sort (copy-sequence files) #'string<) (list three two)))
            (should-not (nth 1 result))
            (should (= (length (nth 0 result)) 2)))
          (kill-buffer))
        (should (file-exists-p (expand-file-name (concat wd "/two.txt") home)))
        (should (file-exists-p (expand-file-name (concat wd "/three.txt") home)))))))

(ert-deftest tandem-remote-upload-failures-name-file-and-server-message ()
  "A wrong key and a folder in the way fail with the file and the server's words."
  (tandem-test-with-backend
    (tandem-remote-test-with-server (url home "right-key")
      (let* ((src (tandem-remote-test--tmpdir "tandem-remote-src-"))
             (file (expand-file-name "clash.txt" src))
             (auth-sources (list (tandem-remote-test--netrc url "wrong-key"))))
        (with-temp-file file (insert "x"))
        (auth-source-forget-all-cached)
        (let ((failures (nth 1 (tandem-remote-test--upload (list file) "box" "w"))))
          (should (= (length failures) 1))
          (should (string-match-p (regexp-quote file) (cdar failures)))
          (should (string-match-p "Unauthorized" (cdar failures))))
        (setq auth-sources (list (tandem-remote-test--netrc url "right-key")))
        (auth-source-forget-all-cached)
        (make-directory (expand-file-name "w/clash.txt" home) t)
        (let* ((result (tandem-remote-test--upload (list file src) "box" "w"))
               (failures (nth 1 result)))
          (should (= (length failures) 2))
          (should (string-match-p (regexp-quote file) (cdr (nth 0 failures))))
          (should (string-match-p "Path is a directory" (cdr (nth 0 failures))))
          (should (string-match-p "it is a folder" (cdr (nth 1 failures)))))
        ;; The key never reached the event log.
        (with-current-buffer (tandem-events-buffer)
          (should-not (string-match-p "right-key\\|wrong-key" (buffer-string))))))))

(ert-deftest tandem-remote-attach-target-header ()
  "Attaching records the resolved target; the header names it; detach clears it."
  (tandem-test-with-backend
    (tandem-remote-test-with-server (url home)
      (clrhash tandem-remote--targets)
      (let ((target (tandem-remote-attach "sess-1" "box" "workspace/project/p")))
        (should (equal (plist-get target :resolved-working-dir)
                       (concat home "/workspace/project/p")))
        (should (equal (tandem-remote-header-string "sess-1")
                       (concat "remote: box (" home "/workspace/project/p), no editor tools")))
        (clrhash tandem-remote--targets)
        (should (equal (tandem-remote-target "sess-1") target))
        (tandem-remote-detach "sess-1")
        (should-not (tandem-remote-target "sess-1" t))
        (should-not (tandem-remote-header-string "sess-1"))
        (let ((err (should-error (tandem-remote-attach "sess-2" "box" "../up")
                                 :type 'tandem-error)))
          (should (string-match-p "'\\.\\.'" (tandem-error-message err))))))))

(provide 'tandem-remote-tests)
;;; tandem-remote-tests.el ends here
