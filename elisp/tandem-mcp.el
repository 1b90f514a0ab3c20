;;; tandem-mcp.el --- Which MCP servers a session's turns carry  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; M-x tandem-mcp lists the MCP servers of the current session (from
;; `mcp_servers' in your settings, and a trusted project's): their
;; status, their tools, and the tokens their tool definitions cost per
;; request (characters of the definitions' JSON divided by four), so you
;; can see what a server costs before a turn.  Keys in the list:
;;
;;   e  enable the server at point in this session's turns
;;   d  disable it (and stop it)
;;   r  restart it
;;   l  show its log
;;   g  refresh (starting the enabled servers to list their tools)

;;; Code:

(require 'tabulated-list)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-view-state)

(defvar-local tandem-mcp--session nil
  "The session whose MCP servers this buffer lists.")

(defun tandem-mcp--entry (row)
  "Return the `tabulated-list-entries' entry of server ROW (a plist)."
  (let ((tools (plist-get row :tools))
        (tokens (plist-get row :tokens)))
    (list (plist-get row :name)
          (vector (plist-get row :name)
                  (if (eq (plist-get row :enabled) t) "yes" "no")
                  (or (plist-get row :status) "")
                  (if tools (number-to-string (length tools)) "-")
                  (if tokens
                      (concat (number-to-string tokens)
                              (if (eq (plist-get row :stale) t) " (last run)" ""))
                    "-")
                  (or (plist-get row :target) "")))))

(defun tandem-mcp-refresh (&optional connect)
  "Fetch this buffer's session's MCP servers again.
With CONNECT non-nil, start the enabled servers first to list their tools."
  (interactive (list t) tandem-mcp-mode)
  (let ((reply (tandem-request "mcp/list" (list :session tandem-mcp--session
                                                :connect (and connect t))
                               120)))
    (setq tabulated-list-entries
          (mapcar #'tandem-mcp--entry (plist-get reply :servers)))
    (tabulated-list-print t)))

(defun tandem-mcp--name ()
  "Return the name of the server at point, or signal a user error."
  (or (tabulated-list-get-id) (user-error "No MCP server on this line")))

(defun tandem-mcp--act (method)
  "Call METHOD on the server at point, then refresh."
  (tandem-request method (list :session tandem-mcp--session :name (tandem-mcp--name)) 120)
  (tandem-mcp-refresh))

(defun tandem-mcp-enable ()
  "Enable the MCP server at point for this session."
  (interactive nil tandem-mcp-mode)
  (tandem-mcp--act "mcp/enable"))

(defun tandem-mcp-disable ()
  "Disable the MCP server at point for this session (and stop it)."
  (interactive nil tandem-mcp-mode)
  (tandem-mcp--act "mcp/disable"))

(defun tandem-mcp-restart ()
  "Restart the MCP server at point."
  (interactive nil tandem-mcp-mode)
  (tandem-mcp--act "mcp/restart"))

(defun tandem-mcp-log ()
  "Show the log of the MCP server at point."
  (interactive nil tandem-mcp-mode)
  (let* ((name (tandem-mcp--name))
         (reply (tandem-request "mcp/log" (list :session tandem-mcp--session :name name))))
    (with-current-buffer (get-buffer-create (format "*tandem-mcp-log %s*" name))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (mapconcat #'identity (plist-get reply :lines) "\n") "\n"))
      (special-mode)
      (display-buffer (current-buffer)))))

(defvar tandem-mcp-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "e" #'tandem-mcp-enable)
    (define-key map "d" #'tandem-mcp-disable)
    (define-key map "r" #'tandem-mcp-restart)
    (define-key map "l" #'tandem-mcp-log)
    (define-key map "g" #'tandem-mcp-refresh)
    map)
  "Keys of `tandem-mcp-mode'.")

(define-derived-mode tandem-mcp-mode tabulated-list-mode "tandem-mcp"
  "The MCP servers of one tandem session.
\\{tandem-mcp-mode-map}"
  (setq tabulated-list-format [("Server" 16 t) ("On" 4 t) ("Status" 9 t)
                               ("Tools" 6 nil :right-align t)
                               ("Tokens/request" 16 nil :right-align t)
                               ("Command or URL" 0 t)]
        tabulated-list-padding 1)
  (tabulated-list-init-header))

;; Only the buffers made for it use it: M-x does not offer it.
(function-put 'tandem-mcp-mode 'completion-predicate #'ignore)

;;;###autoload
(defun tandem-mcp (&optional session)
  "List SESSION's MCP servers: status, tools, tokens per request.
SESSION defaults to this buffer's session, else the project's."
  (interactive)
  (tandem-configure)
  (let ((session (or session (tandem-view-session-here) (tandem-project-session)
                     (user-error "No tandem session here"))))
    (with-current-buffer (get-buffer-create (format "*tandem-mcp %s*" session))
      (tandem-mcp-mode)
      (setq tandem-mcp--session session)
      (tandem-mcp-refresh t)
      (pop-to-buffer (current-buffer)))))

(provide 'tandem-mcp)
;;; tandem-mcp.el ends here
