;;; tandem-mcp-tests.el --- M-x tandem-mcp against the real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs, real backend, a real MCP server (the SDK-written
;; tests/fakes/mcp_server.py) configured in the user settings: the list
;; shows the server running with its tools and the tokens their
;; definitions cost; disabling it is shown and stops it.

;;; Code:

(require 'tandem-test-helpers)
(require 'tandem-mcp)

(defconst tandem-mcp-test--repo
  (expand-file-name "../.." (file-name-directory (or load-file-name buffer-file-name)))
  "The checkout this test runs in.")

(ert-deftest tandem-mcp-lists-tools-tokens-and-disables ()
  "The server is listed running, with its tool count and token figure; d disables it."
  (let* ((config (directory-file-name (file-truename (make-temp-file "tandem-mcp-cfg-" t))))
         (root (directory-file-name (file-truename (make-temp-file "tandem-mcp-proj-" t))))
         (process-environment (cons (concat "XDG_CONFIG_HOME=" config) process-environment)))
    (push config tandem-test--homes)
    (push root tandem-test--homes)
    (make-directory (expand-file-name "tandem" config) t)
    (with-temp-file (expand-file-name "tandem/settings.json" config)
      (insert (json-encode
               `((mcp_servers
                  . ((t . ((command . ,(expand-file-name ".venv/bin/python" tandem-mcp-test--repo))
                           (args . [,(expand-file-name "tests/fakes/mcp_server.py"
                                                       tandem-mcp-test--repo)])))))))))
    (tandem-test-with-backend
      (let* ((session (plist-get (tandem-request "sessions/new" (list :cwd root)) :id)))
        (tandem-mcp session)
        (with-current-buffer (format "*tandem-mcp %s*" session)
          (goto-char (point-min))
          (should (eq major-mode 'tandem-mcp-mode))
          (let ((entry (cadr (assoc "t" tabulated-list-entries))))
            (should (equal (aref entry 1) "yes"))
            (should (equal (aref entry 2) "running"))
            (should (equal (aref entry 3) "7"))  ; the test server's seven tools
            (should (> (string-to-number (aref entry 4)) 100)))
          (should (string-match-p "Tokens/request" (format "%s" header-line-format)))
          (goto-char (point-min))
          (tandem-mcp-disable)
          (let ((entry (cadr (assoc "t" tabulated-list-entries))))
            (should (equal (aref entry 1) "no"))
            (should (equal (aref entry 2) "stopped"))
            (should (string-match-p "(last run)" (aref entry 4)))))))))

(provide 'tandem-mcp-tests)
;;; tandem-mcp-tests.el ends here
