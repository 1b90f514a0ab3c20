;;; tandem-view-markdown.el --- Markdown fontification for the tandem view  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Turns a Markdown message into a string with `font-lock-face'
;; properties, ready to insert into the session buffer.  By default a
;; small built-in fontifier handles headings, emphasis, inline code and
;; fenced code blocks (those in their language's mode); `markdown-mode'
;; can be chosen instead (`tandem-view-markdown-engine'; code blocks
;; fontified natively).  In session buffers segments are fontified in
;; place when displayed (tandem-view-fontify.el).
;;
;; `face' properties are turned into `font-lock-face' so that font-lock in
;; the view buffer never strips them.  Results are cached by text, so a
;; re-render of the same message costs one hash lookup.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-core)

(defcustom tandem-view-markdown-engine 'builtin
  "How message bodies are fontified as Markdown.
`builtin' (the default) is the small built-in fontifier: in a session
buffer it works in place and leaves a streaming code block plain until
its fence closes, so a streamed answer costs little.  `markdown-mode'
uses that package (richer, and several times the cost: about 7 us a
character); `auto' uses `markdown-mode' when it can be loaded, else the
built-in fontifier."
  :type '(choice (const auto) (const markdown-mode) (const builtin))
  :group 'tandem-view)

(defcustom tandem-view-code-languages
  '(("py" . python-mode) ("python" . python-mode) ("sh" . sh-mode)
    ("bash" . sh-mode) ("shell" . sh-mode) ("console" . sh-mode)
    ("js" . js-mode) ("javascript" . js-mode) ("ts" . js-mode)
    ("json" . js-mode) ("el" . emacs-lisp-mode) ("elisp" . emacs-lisp-mode)
    ("emacs-lisp" . emacs-lisp-mode) ("lisp" . lisp-mode) ("c" . c-mode)
    ("cpp" . c++-mode) ("c++" . c++-mode) ("rust" . rust-mode) ("go" . go-mode)
    ("diff" . diff-mode) ("patch" . diff-mode) ("ruby" . ruby-mode)
    ("java" . java-mode) ("css" . css-mode) ("html" . mhtml-mode)
    ("xml" . nxml-mode) ("sql" . sql-mode) ("makefile" . makefile-mode))
  "Alist of fence language name to major mode, for the built-in fontifier.
A language not listed uses LANG-mode when that function exists."
  :type '(alist :key-type string :value-type function)
  :group 'tandem-view)

(defvar tandem-view-markdown--cache (make-hash-table :test #'equal)
  "Fontified strings by (ENGINE . TEXT).")

(defconst tandem-view-markdown--cache-limit 4000
  "Entries kept in `tandem-view-markdown--cache' before it is cleared.")

(declare-function markdown-mode "markdown-mode")
(defvar markdown-fontify-code-blocks-natively)
(defvar markdown-hide-markup)
(defvar python-indent-guess-indent-offset)

(defun tandem-view-markdown--load ()
  "Load `markdown-mode' if possible; return non-nil when it is available.
Under `emacs -Q' the Debian package's directory is not on `load-path';
look for it there too."
  (or (featurep 'markdown-mode)
      (require 'markdown-mode nil t)
      (let ((dir (car (file-expand-wildcards
                       "/usr/share/emacs/site-lisp/elpa/markdown-mode-*"))))
        (when dir
          (add-to-list 'load-path dir t)
          (require 'markdown-mode nil t)))))

(defun tandem-view-markdown-engine ()
  "Return the engine in use: the symbol `markdown-mode' or `builtin'."
  (pcase tandem-view-markdown-engine
    ('builtin 'builtin)
    ('markdown-mode (if (tandem-view-markdown--load) 'markdown-mode
                      (user-error "Markdown-mode is not installed")))
    (_ (if (tandem-view-markdown--load) 'markdown-mode 'builtin))))

(defun tandem-view-markdown--face-to-font-lock (string)
  "Return STRING with its `face' properties moved to `font-lock-face'."
  (let ((pos 0) (len (length string)))
    (while (< pos len)
      (let ((next (next-single-property-change pos 'face string len))
            (face (get-text-property pos 'face string)))
        (when face
          (put-text-property pos next 'font-lock-face face string))
        (setq pos next)))
    (remove-list-of-text-properties 0 len '(face fontified) string)
    string))

(defun tandem-view-markdown--work-buffer (name setup)
  "Return the hidden work buffer NAME, creating it with SETUP on first use."
  (or (get-buffer name)
      (with-current-buffer (get-buffer-create name)
        (funcall setup)
        (current-buffer))))

(defun tandem-view-markdown--with-markdown-mode (text)
  "Fontify TEXT with `markdown-mode'; return the propertized copy."
  (with-current-buffer
      (tandem-view-markdown--work-buffer
       " *tandem-markdown*"
       (lambda ()
         (delay-mode-hooks (markdown-mode))
         (setq-local markdown-fontify-code-blocks-natively t)
         (setq-local markdown-hide-markup nil)))
    ;; Modification hooks must run: they reset `syntax-propertize' state,
    ;; which markdown-mode relies on to find fenced code blocks.
    (erase-buffer)
    (insert text)
    (font-lock-ensure)
    (buffer-substring (point-min) (point-max))))

(defun tandem-view-markdown--language-mode (lang)
  "Return the major mode for fence language LANG, or nil."
  (let* ((name (downcase (or lang "")))
         (mode (or (cdr (assoc name tandem-view-code-languages))
                   (and (not (string-empty-p name)) (intern (concat name "-mode"))))))
    (and mode (fboundp mode) mode)))

(defcustom tandem-view-code-decoration 2
  "Font-lock level of code blocks, fontified in their language's mode.
The value given to `font-lock-maximum-decoration' there: 2 shows
keywords, builtins, strings and comments at half the cost of the
maximum (t), which also marks assignments and more."
  :type '(choice (const :tag "Maximum" t) (integer :tag "Level"))
  :group 'tandem-view)

(defvar tandem-view-markdown--code-buffers nil
  "Work buffers where code is fontified, by major mode: (MODE . BUFFER).")

(defun tandem-view-markdown--code-buffer (mode)
  "Return the work buffer where code of major MODE is fontified."
  (let ((known (cdr (assq mode tandem-view-markdown--code-buffers))))
    (if (buffer-live-p known) known
      (let ((buffer (tandem-view-markdown--work-buffer
                     (format " *tandem-code-%s*" mode)
                     (lambda ()
                       (delay-mode-hooks (funcall mode))
                       ;; Read when font-lock first sets itself up, below.
                       (setq-local font-lock-maximum-decoration
                                   tandem-view-code-decoration)))))
        (setf (alist-get mode tandem-view-markdown--code-buffers) buffer)
        buffer))))

(defun tandem-view-markdown-fontify-code (code lang)
  "Return CODE fontified in the major mode of language LANG.
Without a mode for LANG, CODE comes back with `font-lock-constant-face'
only.  Errors of the language's mode never reach the caller."
  (let ((mode (tandem-view-markdown--language-mode lang)))
    (or (and mode
             (condition-case nil
                 (with-current-buffer (tandem-view-markdown--code-buffer mode)
                   (erase-buffer)
                   (insert code)
                   (font-lock-ensure)
                   (tandem-view-markdown--face-to-font-lock
                    (buffer-substring (point-min) (point-max))))
               (error nil)))
        (propertize code 'font-lock-face 'font-lock-constant-face))))

(defcustom tandem-view-markdown-hide-markup t
  "Non-nil: the built-in fontifier hides Markdown's markup.
The backquotes of code, the stars of emphasis and the hashes of a
heading are made invisible; the text keeps them, so copying it copies
the Markdown.  Fence lines stay, dimmed: they show where code begins."
  :type 'boolean
  :group 'tandem-view)

(defun tandem-view-markdown-hide (beg end)
  "Hide the markup BEG..END when `tandem-view-markdown-hide-markup' is on."
  (when (and tandem-view-markdown-hide-markup (< beg end))
    (put-text-property beg end 'invisible 'tandem-markup)))

(defun tandem-view-markdown-style-match (face)
  "Give the last inline match group 1 FACE and hide its delimiters.
The delimiters are as long on both sides: what follows group 1 in the match."
  (let ((n (- (match-end 0) (match-end 1))))
    (put-text-property (match-beginning 1) (match-end 1) 'font-lock-face face)
    (tandem-view-markdown-hide (- (match-beginning 1) n) (match-beginning 1))
    (tandem-view-markdown-hide (match-end 1) (match-end 0))))

(defun tandem-view-markdown-style-heading ()
  "Make the heading line just matched bold and hide its hashes."
  (put-text-property (match-beginning 0) (match-end 0) 'font-lock-face 'bold)
  (save-excursion
    (goto-char (match-beginning 0))
    (when (looking-at "#+[ \t]+")
      (tandem-view-markdown-hide (match-beginning 0) (match-end 0)))))

(defconst tandem-view-markdown--inline-rules
  '(("\\*\\*\\([^*\n]+\\)\\*\\*" . bold)
    ("`\\([^`\n]+\\)`" . font-lock-constant-face)
    ("\\(?:^\\|[^*]\\)\\*\\([^*\n]+\\)\\*" . italic))
  "Inline rules of the built-in fontifier: (REGEXP . FACE of group 1).")

(defconst tandem-view-markdown--fence-open-re
  "^\\([ \t]*\\)\\(```\\|~~~\\)[ \t]*\\([[:alnum:]+#_-]*\\)[^\n]*\n"
  "A fence's opening line: group 2 the fence, group 3 the language.")

(defun tandem-view-markdown--builtin (text)
  "Fontify TEXT with the small built-in Markdown fontifier."
  (with-temp-buffer
    (insert text)
    (goto-char (point-min))
    ;; Fenced code blocks first: nothing inside them is Markdown.
    (let ((code-spans nil))
      (while (re-search-forward tandem-view-markdown--fence-open-re nil t)
        (let* ((open-beg (match-beginning 0)) (body-beg (match-end 0))
               (lang (match-string 3))
               (close (and (re-search-forward (concat "^[ \t]*" (match-string 2) "[ \t]*$") nil t)
                           (match-beginning 0)))
               (body-end (or close (point-max)))
               (code (buffer-substring-no-properties body-beg body-end)))
          (put-text-property open-beg body-beg 'font-lock-face 'shadow)
          (when close (put-text-property close (line-end-position) 'font-lock-face 'shadow))
          (delete-region body-beg body-end)
          (goto-char body-beg)
          (insert (tandem-view-markdown-fontify-code code lang))
          (push (cons open-beg (if close (line-end-position) (point-max))) code-spans)
          (goto-char (if close (line-end-position) (point-max)))))
      (cl-flet ((in-code (pos) (cl-some (lambda (s) (and (>= pos (car s)) (<= pos (cdr s))))
                                        code-spans)))
        (goto-char (point-min))
        (while (re-search-forward "^#+[ \t]+.*$" nil t)
          (unless (in-code (match-beginning 0))
            (tandem-view-markdown-style-heading)))
        (dolist (rule tandem-view-markdown--inline-rules)
          (goto-char (point-min))
          (while (re-search-forward (car rule) nil t)
            (unless (in-code (match-beginning 1))
              (tandem-view-markdown-style-match (cdr rule)))))))
    (buffer-string)))

(defmacro tandem-view-markdown--quietly (&rest body)
  "Run BODY with language modes kept from guessing aloud."
  (declare (indent 0) (debug t))
  `(let ((python-indent-guess-indent-offset nil)
         (inhibit-message t)
         (message-log-max nil))
     ,@body))

(defun tandem-view-markdown-fontify (text &optional no-cache)
  "Return TEXT, a Markdown string, with `font-lock-face' properties.
The engine is chosen by `tandem-view-markdown-engine'.  The result is a
fresh string; the cache keeps its own copy, unless NO-CACHE (text that
is still growing would only fill it)."
  (unless (stringp text)
    (signal 'wrong-type-argument (list 'stringp text)))
  (let* ((engine (tandem-view-markdown-engine))
         (key (cons engine text))
         (hit (and (not no-cache) (gethash key tandem-view-markdown--cache))))
    (unless hit
      (setq hit (tandem-view-markdown--quietly
                  (if (eq engine 'markdown-mode)
                      (tandem-view-markdown--face-to-font-lock
                       (tandem-view-markdown--with-markdown-mode text))
                    (tandem-view-markdown--builtin text))))
      (unless no-cache
        (when (> (hash-table-count tandem-view-markdown--cache)
                 tandem-view-markdown--cache-limit)
          (clrhash tandem-view-markdown--cache))
        (puthash key hit tandem-view-markdown--cache)))
    (if no-cache hit (copy-sequence hit))))

(provide 'tandem-view-markdown)
;;; tandem-view-markdown.el ends here
