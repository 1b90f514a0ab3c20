;;; tandem-view-usage.el --- A session's tokens, cost and context in its header  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The header line of a session buffer shows the session's token totals
;; (every turn that ended, as `sessions/usage' counts them), their cost
;; when `tandem-prices' prices every model used, and how full the context
;; window is against the compaction threshold (`sessions/compaction-status').
;; Both are fetched without waiting after each refresh and each turn's end.

;;; Code:

(require 'subr-x)
(require 'tandem-client)
(require 'tandem-usage)
(require 'tandem-view-state)

(declare-function tandem-view-set-title "tandem-view" (buffer title))

(defun tandem-view-usage-update (&optional buffer)
  "Fetch the token totals and context fill of BUFFER's session.
Its header line is redrawn when they arrive.
BUFFER defaults to the current buffer.  Nothing waits: the replies
arrive later; a failure leaves the header as it was."
  (let* ((buffer (or buffer (current-buffer)))
         (st (buffer-local-value 'tandem-view--state buffer))
         (session (and st (tandem-view-state-session st)))
         (conn (and st (tandem-view-state-connection st))))
    (when (and session conn (tandem-connection-live-p conn))
      (cl-flet ((store (key)
                  (lambda (value)
                    (when (buffer-live-p buffer)
                      (setf (tandem-view-state-usage st)
                            (plist-put (copy-sequence (tandem-view-state-usage st)) key value))
                      (with-current-buffer buffer (force-mode-line-update))))))
        (tandem-request-async "sessions/usage" (list :session session)
                              (let ((keep (store :totals)))
                                (lambda (value)
                                  (funcall keep value)
                                  ;; A first request names the session.
                                  (when (stringp (plist-get value :title))
                                    (tandem-view-set-title buffer (plist-get value :title)))))
                              #'ignore conn)
        (tandem-request-async "sessions/compaction-status" (list :session session)
                              (store :context) #'ignore conn)))))

(defun tandem-view-usage--cost (parts)
  "Return the summed cost of PARTS (per-provider totals).
Return nil if one has no price."
  (let ((sum 0.0))
    (catch 'unpriced
      (dolist (p parts sum)
        (let ((cost (tandem-usage-cost p (plist-get p :provider) (plist-get p :model))))
          (unless cost (throw 'unpriced nil))
          (setq sum (+ sum cost)))))))

(defun tandem-view-usage-header ()
  "Return the header's usage part.
For example \" · 1.2k in · 300 out · $0.01 · context 12% of 200k
\(compacts at 80%)\"; \"\" until the backend answered."
  (let* ((usage (and tandem-view--state (tandem-view-state-usage tandem-view--state)))
         (totals (plist-get usage :totals))
         (total (plist-get totals :total))
         (tokens (and total (> (or (plist-get total :turns) 0) 0) (tandem-usage-format total)))
         (cost (and tokens (tandem-view-usage--cost (plist-get totals :by-provider))))
         (context (plist-get usage :context))
         (window (plist-get context :window))
         (threshold (plist-get context :threshold)))
    (concat
     (if tokens (concat " · " tokens) "")
     (if cost (concat " · " (tandem-usage-format-cost cost)) "")
     (if (and (numberp window) (> window 0))
         (format " · context %d%% of %s%s"
                 (round (* 100.0 (/ (float (or (plist-get context :tokens) 0)) window)))
                 (tandem-usage-tokens window)
                 (if (numberp threshold)
                     (format " (compacts at %d%%)" (round (* 100 threshold))) ""))
       ""))))

(defun tandem-view-provider-header ()
  "Return the header's provider part: \" · provider: openai:gpt-4o\", or \"\".
It is the session's own choice (`tandem-set-provider'), else the default
its next turn would use, as the backend last said."
  (let* ((usage (and tandem-view--state (tandem-view-state-usage tandem-view--state)))
         (totals (plist-get usage :totals))
         (provider (plist-get totals :provider)))
    (if (stringp provider)
        (concat " · provider: " provider (if (plist-get totals :chosen) "" " (default)"))
      "")))

(defun tandem-view-instructions-header ()
  "Return the header's instructions part, e.g. \" · instructions: AGENTS.md\".
It names the project instruction files (`tandem-project-instructions')
the session's next request carries, as the backend last said; \"\" for none."
  (let* ((usage (and tandem-view--state (tandem-view-state-usage tandem-view--state)))
         (found (plist-get (plist-get usage :totals) :instructions)))
    (if found
        (concat " · instructions: "
                (mapconcat (lambda (i) (format "%s" (plist-get i :path))) found ", "))
      "")))

(provide 'tandem-view-usage)
;;; tandem-view-usage.el ends here
