;;; tandem-usage.el --- Tokens and what they cost  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Formatting a turn's token counts (input, output, cache read and write,
;; as the backend records them in `turn_end.usage') and, when the user
;; gave prices in `tandem-prices', their cost.  tandem never invents a
;; price: with no entry for a model, no cost is shown.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-core)

(defcustom tandem-prices nil
  "Prices per million tokens, by model, to show what turns cost.
An alist of (MODEL . PLIST); MODEL is a model name (\"gpt-4o\") or a
provider name (\"openai:gpt-4o\", which wins), PLIST has :input and
:output and optionally :cache-read and :cache-write (a missing cache
price counts those tokens at the :input price).  Prices are in
`tandem-currency'.  For example:
  ((\"claude-sonnet-4-5\" :input 3.0 :output 15.0
    :cache-read 0.3 :cache-write 3.75))
With no entry for a turn's model, no cost is shown; tandem never
guesses one."
  :type '(alist :key-type (string :tag "Model or provider")
                :value-type (plist :key-type (choice (const :input) (const :output)
                                                     (const :cache-read) (const :cache-write))
                                   :value-type number))
  :group 'tandem)

(defcustom tandem-currency "$"
  "Symbol put before costs computed from `tandem-prices'."
  :type 'string
  :group 'tandem)

(defconst tandem-usage-keys
  '((:input-tokens . :input) (:output-tokens . :output)
    (:cache-read-tokens . :cache-read) (:cache-write-tokens . :cache-write))
  "Token counters of a usage plist and the price key of each.")

(defun tandem-usage--count (usage key)
  "Return the counter KEY of USAGE as a number (0 when missing)."
  (let ((v (plist-get usage key))) (if (numberp v) v 0)))

(defun tandem-usage-tokens (n)
  "Return N tokens in a short form: 950, 12.3k, 1.2M."
  (cond ((< n 1000) (format "%d" n))
        ((< n 1000000) (format "%.1fk" (/ n 1000.0)))
        (t (format "%.1fM" (/ n 1000000.0)))))

(defun tandem-usage-format (usage)
  "Return USAGE (a plist of token counters) as \"12 in · 3 out · cache 4 read\".
Return nil when USAGE counts nothing."
  (let* ((in (tandem-usage--count usage :input-tokens))
         (out (tandem-usage--count usage :output-tokens))
         (read (tandem-usage--count usage :cache-read-tokens))
         (write (tandem-usage--count usage :cache-write-tokens)))
    (unless (= 0 in out read write)
      (concat (format "%s in · %s out" (tandem-usage-tokens in) (tandem-usage-tokens out))
              (if (or (> read 0) (> write 0))
                  (format " · cache %s read, %s written"
                          (tandem-usage-tokens read) (tandem-usage-tokens write))
                "")))))

(defun tandem-usage-price (provider model)
  "Return the price plist `tandem-prices' has for PROVIDER or MODEL, or nil."
  (cdr (or (and provider (assoc provider tandem-prices))
           (and model (not (string-empty-p model)) (assoc model tandem-prices))
           (and provider (string-match ":\\(.+\\)\\'" provider)
                (assoc (match-string 1 provider) tandem-prices)))))

(defun tandem-usage-cost (usage provider model)
  "Return what USAGE cost with PROVIDER's MODEL, or nil without a price."
  (let ((price (tandem-usage-price provider model)))
    (when (and price (numberp (plist-get price :input)) (numberp (plist-get price :output)))
      (/ (cl-loop for (counter . key) in tandem-usage-keys
                  sum (* (tandem-usage--count usage counter)
                         (or (plist-get price key) (plist-get price :input))))
         1000000.0))))

(defun tandem-usage-format-cost (cost)
  "Return COST as money: $0.0123, $1.23."
  (format (if (< cost 0.1) "%s%.4f" "%s%.2f") tandem-currency cost))

(provide 'tandem-usage)
;;; tandem-usage.el ends here
