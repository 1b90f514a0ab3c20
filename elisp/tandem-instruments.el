;;; tandem-instruments.el --- Emacs as the agent's instruments  -*- lexical-binding: t; -*-

;;; Commentary:
;; The editor tools of an agent (diagnostics, definitions, references,
;; outline, open_buffers, project_files) ask Emacs what it knows of the
;; workspace.  The backend calls `tandem--instrument' with the name of an
;; instrument and a plist of parameters (always :root, the workspace's
;; real root, and :budget, the seconds the backend waits); the reply is a
;; plist of plain data.  Every instrument only reads: it never saves,
;; never runs a file's mode hooks, never starts a language server.  A
;; file that no buffer visits is read into a temporary buffer in its
;; major mode (mode hooks delayed) when xref or an outline needs one;
;; diagnostics come from visited buffers only.  The backend checks every
;; path it is given back against the root again and caps what it shows.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'xref)
(require 'imenu)

(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function flymake-diagnostic-beg "flymake" (diag))
(declare-function flymake-diagnostic-end "flymake" (diag))
(declare-function flymake-diagnostic-type "flymake" (diag))
(declare-function flymake-diagnostic-text "flymake" (diag))
(declare-function flymake-diagnostic-backend "flymake" (diag))
(declare-function flymake-start "flymake" (&optional deferred force))
(declare-function flymake-running-backends "flymake" ())
(declare-function flymake-reporting-backends "flymake" ())
(declare-function flycheck-error-line "ext:flycheck" (err))
(declare-function flycheck-error-column "ext:flycheck" (err))
(declare-function flycheck-error-level "ext:flycheck" (err))
(declare-function flycheck-error-message "ext:flycheck" (err))
(declare-function flycheck-error-checker "ext:flycheck" (err))
(declare-function project-files "project" (project &optional dirs))
(declare-function project-root "project" (project))
(declare-function treesit-parser-list "treesit" (&optional buffer language))
(declare-function treesit-node-at "treesit" (pos &optional parser-or-lang named))
(declare-function treesit-parent-until "treesit" (node pred &optional include-node))
(declare-function treesit-node-type "treesit" (node))
(declare-function treesit-node-end "treesit" (node))
(defvar flymake-mode)
(defvar flycheck-mode)
(defvar flycheck-current-errors)
(defvar treesit-defun-type-regexp)

(defconst tandem-instruments--max-text 2000
  "Characters of one message or summary sent to the backend.")

(defconst tandem-instruments--max-read (* 10 1024 1024)
  "Bytes of a file no buffer visits that may be read into a temporary buffer.")

;;;; Shared

(defun tandem-instruments--under (file root)
  "Whether FILE is ROOT or inside it (both as true names).
A remote file (TRAMP) never is: its true name could cost a connection."
  (and (stringp file) (stringp root)
       (not (file-remote-p file))
       (file-in-directory-p (file-truename file) (file-truename root))))

(defun tandem-instruments--limit (params)
  "The :limit of PARAMS, a positive integer (at most 10000)."
  (let ((limit (plist-get params :limit)))
    (if (and (natnump limit) (> limit 0)) (min limit 10000) 500)))

(defun tandem-instruments--take (n list)
  "The first N elements of LIST."
  (if (> (length list) n) (cl-subseq list 0 n) list))

(defun tandem-instruments--cut (text)
  "TEXT as a plain string of at most `tandem-instruments--max-text' characters."
  (let ((text (substring-no-properties (format "%s" (or text "")))))
    (if (> (length text) tandem-instruments--max-text)
        (substring text 0 tandem-instruments--max-text)
      text)))

(defun tandem-instruments--line (pos)
  "The line number of POS, counted in the whole buffer."
  (save-restriction (widen) (line-number-at-pos pos t)))

(defun tandem-instruments--call-in-file (file fn)
  "Call FN in a buffer holding FILE; return (VISITED . VALUE).
VISITED says whether a buffer visits FILE; VALUE is what FN returned.
A buffer visiting FILE is used as it is (unsaved edits included).
Otherwise FILE is read into a temporary buffer in its major mode, its
mode hooks delayed (they could start servers or ask questions)."
  (let ((visiting (find-buffer-visiting file)))
    (if visiting
        (cons t (with-current-buffer visiting
                  (save-excursion (save-restriction (widen) (funcall fn)))))
      (unless (file-regular-p file)
        (error "%s: not a regular file" file))
      (when (> (or (file-attribute-size (file-attributes file)) 0)
               tandem-instruments--max-read)
        (error "%s: too large to read for this (over %d bytes); visit it first"
               file tandem-instruments--max-read))
      (with-temp-buffer
        (insert-file-contents file)
        (setq default-directory (file-name-directory file))
        (let ((buffer-file-name file))
          (delay-mode-hooks (set-auto-mode)))
        (cons nil (save-excursion (funcall fn)))))))

;;;; Diagnostics

(defun tandem-instruments--severity (type)
  "The severity name of a Flymake diagnostic TYPE (error, warning or note)."
  (let ((category (and (symbolp type) (get type 'flymake-category))))
    (pcase category
      ('flymake-error "error")
      ('flymake-warning "warning")
      ('flymake-note "note")
      (_ (string-remove-prefix ":" (format "%s" type))))))

(defun tandem-instruments--flymake-settle (seconds)
  "Start Flymake in the current buffer; wait at most SECONDS for its backends."
  (flymake-start)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (< (float-time) deadline)
                (cl-set-difference (flymake-running-backends)
                                   (flymake-reporting-backends)))
      (accept-process-output nil 0.05))))

(defun tandem-instruments--flymake (limit)
  "At most LIMIT Flymake diagnostics of the current buffer, as plists."
  (let (out)
    (dolist (d (flymake-diagnostics))
      (when (< (length out) limit)
        (let ((beg (flymake-diagnostic-beg d)) (end (flymake-diagnostic-end d)))
          (push (list :line (tandem-instruments--line beg)
                      :col (save-excursion (goto-char beg) (current-column))
                      :end-line (tandem-instruments--line end)
                      :severity (tandem-instruments--severity (flymake-diagnostic-type d))
                      :message (tandem-instruments--cut (flymake-diagnostic-text d))
                      :source (format "flymake: %s" (flymake-diagnostic-backend d)))
                out))))
    (sort (nreverse out) (lambda (a b) (< (plist-get a :line) (plist-get b :line))))))

(defun tandem-instruments--flycheck (limit)
  "At most LIMIT Flycheck errors of the current buffer, as plists."
  (mapcar (lambda (e)
            (list :line (or (flycheck-error-line e) 0)
                  :col (or (flycheck-error-column e) 0)
                  :severity (format "%s" (flycheck-error-level e))
                  :message (tandem-instruments--cut (flycheck-error-message e))
                  :source (format "flycheck: %s" (flycheck-error-checker e))))
          (tandem-instruments--take limit flycheck-current-errors)))

(defun tandem-instruments--buffer-diagnostics (budget limit)
  "The current buffer's diagnostics, at most LIMIT, within BUDGET seconds."
  (let (checkers items)
    (when (bound-and-true-p flymake-mode)
      (tandem-instruments--flymake-settle (/ budget 2.0))
      (push (format "flymake (%s)"
                    (mapconcat (lambda (b) (format "%s" b)) (flymake-running-backends) ", "))
            checkers)
      (setq items (tandem-instruments--flymake limit)))
    (when (and (bound-and-true-p flycheck-mode) (fboundp 'flycheck-error-line))
      (push "flycheck" checkers)
      (setq items (append items (tandem-instruments--flycheck limit))))
    (list :file (file-truename buffer-file-name)
          :modified (buffer-modified-p)
          :checkers (nreverse checkers)
          :items (tandem-instruments--take limit items))))

(defun tandem-instruments-diagnostics (params)
  "Answer the diagnostics instrument for PARAMS.
That is of :path, or of every buffer visiting a file under :root."
  (let* ((root (plist-get params :root))
         (path (plist-get params :path))
         (budget (or (plist-get params :budget) 5))
         (limit (tandem-instruments--limit params))
         (buffers (if path
                      (let ((b (find-buffer-visiting path))) (and b (list b)))
                    (cl-remove-if-not
                     (lambda (b) (tandem-instruments--under (buffer-file-name b) root))
                     (buffer-list))))
         (share (/ budget (max 1 (length buffers)) 1.0)))
    (list :buffers
          (mapcar (lambda (b)
                    (with-current-buffer b
                      (save-excursion
                        (save-restriction
                          (widen)
                          (tandem-instruments--buffer-diagnostics share limit)))))
                  (tandem-instruments--take limit buffers)))))

;;;; Cross-references

(defun tandem-instruments--identifier (backend symbol line)
  "SYMBOL as BACKEND's identifier, taken where it occurs in the buffer.
On LINE if given, else at its first occurrence as a whole symbol; a
language server resolves an identifier by its position.  SYMBOL as it is
when it does not occur."
  (goto-char (point-min))
  (or (and (if line
               (progn (forward-line (1- line))
                      (search-forward symbol (line-end-position) t))
             (re-search-forward (concat "\\_<" (regexp-quote symbol) "\\_>") nil t))
           (progn (goto-char (match-beginning 0))
                  (let ((id (xref-backend-identifier-at-point backend)))
                    (and (stringp id) (string= (substring-no-properties id) symbol) id))))
      symbol))

(defun tandem-instruments--location (location)
  "LOCATION of an xref as (FILE LINE COLUMN), reading no file."
  (cond
   ((xref-file-location-p location)
    (list (xref-file-location-file location)
          (xref-file-location-line location)
          (xref-file-location-column location)))
   ((xref-buffer-location-p location)
    (let ((buffer (xref-buffer-location-buffer location))
          (pos (xref-buffer-location-position location)))
      (when (buffer-live-p buffer)
        (with-current-buffer buffer
          (list buffer-file-name (tandem-instruments--line pos)
                (save-excursion (goto-char pos) (current-column)))))))
   (t (let ((group (ignore-errors (xref-location-group location))))
        (and (stringp group) (file-name-absolute-p group)
             (list group (ignore-errors (xref-location-line location)) 0))))))

(defun tandem-instruments-xref (params)
  "Answer the xref instrument for PARAMS.
That is the definitions or references (:kind) of :symbol, as the
backend of a buffer of :path finds them."
  (let* ((file (plist-get params :path))
         (symbol (plist-get params :symbol))
         (line (plist-get params :line))
         (kind (plist-get params :kind))
         (budget (or (plist-get params :budget) 5))
         (limit (tandem-instruments--limit params))
         (answer
          (tandem-instruments--call-in-file
           file
           (lambda ()
             (let* ((backend (xref-find-backend))
                    (id (tandem-instruments--identifier backend symbol line))
                    (items (with-timeout (budget (error "Xref ran out of time"))
                             (if (equal kind "references")
                                 (xref-backend-references backend id)
                               (xref-backend-definitions backend id)))))
               (list :backend (format "%s" backend)
                     :items
                     (delq nil
                           (mapcar
                            (lambda (item)
                              (let ((where (tandem-instruments--location
                                            (xref-item-location item))))
                                (when (car where)
                                  (list :file (file-truename (nth 0 where))
                                        :line (or (nth 1 where) 0)
                                        :col (or (nth 2 where) 0)
                                        :summary (tandem-instruments--cut
                                                  (xref-item-summary item))))))
                            (tandem-instruments--take limit items)))))))))
    (append (cdr answer) (list :visited (car answer)))))

;;;; Outline

(defun tandem-instruments--position (value)
  "The buffer position an imenu entry's VALUE stands for, or nil."
  (when (overlayp value) (setq value (overlay-start value)))
  (when (markerp value) (setq value (marker-position value)))
  (when (consp value) (setq value (car value)))
  (and (integerp value) value))

(defun tandem-instruments--self-entry-p (entry)
  "Whether ENTRY names the group it is in (Python's \"*class definition*\")."
  (and (consp entry) (not (imenu--subalist-p entry)) (stringp (car entry))
       (string-match-p "\\`\\*.*\\*\\'" (car entry))))

(defun tandem-instruments--flatten (index depth)
  "Entries (NAME KIND POS DEPTH) of the imenu INDEX at DEPTH.
A group with an entry naming itself is a symbol whose members are one
deeper (a class and its methods); any other group names the kind of its
entries (\"Variables\")."
  (let (out)
    (dolist (entry index)
      (cond
       ((imenu--subalist-p entry)
        (let* ((children (cdr entry))
               (self (cl-find-if #'tandem-instruments--self-entry-p children))
               (pos (and self (tandem-instruments--position (cdr self)))))
          (if pos
              (setq out (append out
                                (list (list (substring-no-properties (car entry)) nil pos depth))
                                (tandem-instruments--flatten (remq self children)
                                                             (1+ depth))))
            (setq out (append out
                              (mapcar (lambda (e)
                                        (if (nth 1 e) e
                                          (list (nth 0 e)
                                                (substring-no-properties (car entry))
                                                (nth 2 e) (nth 3 e))))
                                      (tandem-instruments--flatten children depth)))))))
       ((consp entry)
        (let ((pos (tandem-instruments--position (cdr entry))))
          (when (and pos (not (equal (car entry) "*Rescan*")))
            (setq out (append out (list (list (substring-no-properties (car entry))
                                              nil pos depth)))))))))
    out))

(defun tandem-instruments--end-line (pos)
  "The last line of the definition starting at POS.
From treesit where the buffer has a parser, else `end-of-defun'."
  (save-excursion
    (or (and (fboundp 'treesit-parser-list) (treesit-parser-list)
             (bound-and-true-p treesit-defun-type-regexp)
             (let* ((node (treesit-node-at pos))
                    (defun (and node (treesit-parent-until
                                      node (lambda (n) (string-match-p
                                                        treesit-defun-type-regexp
                                                        (treesit-node-type n)))
                                      t))))
               (and defun (tandem-instruments--line (treesit-node-end defun)))))
        (ignore-errors
          (goto-char pos)
          (end-of-defun)
          (skip-chars-backward " \t\n")
          (let ((end (tandem-instruments--line (point))))
            (and (>= end (tandem-instruments--line pos)) end))))))

(defun tandem-instruments-outline (params)
  "Answer the outline instrument for PARAMS: the symbols of :path.
Each with its kind, first and last line and nesting depth."
  (let* ((limit (tandem-instruments--limit params))
         (answer
          (tandem-instruments--call-in-file
           (plist-get params :path)
           (lambda ()
             (let* ((imenu-auto-rescan t)
                    (index (ignore-errors (imenu--make-index-alist t)))
                    (treesit (and (fboundp 'treesit-parser-list) (treesit-parser-list) t))
                    (entries (tandem-instruments--take
                              limit (tandem-instruments--flatten index 0))))
               (list :source (if treesit "treesit (imenu)" "imenu")
                     :mode (format "%s" major-mode)
                     :modified (and buffer-file-name (buffer-modified-p))
                     :items (mapcar (lambda (e)
                                      (list :name (nth 0 e) :kind (nth 1 e)
                                            :line (tandem-instruments--line (nth 2 e))
                                            :end-line (tandem-instruments--end-line (nth 2 e))
                                            :depth (nth 3 e)))
                                    entries)))))))
    (append (cdr answer) (list :visited (car answer)))))

;;;; Buffers and project files

(defun tandem-instruments-open-buffers (params)
  "Answer the open_buffers instrument for PARAMS: visited files under :root.
With whether each is modified, and the selected window's point and region."
  (let* ((root (plist-get params :root))
         (limit (tandem-instruments--limit params))
         (buffers (cl-remove-if-not
                   (lambda (b) (tandem-instruments--under (buffer-file-name b) root))
                   (buffer-list)))
         (window (selected-window))
         (shown (window-buffer window)))
    (list :buffers
          (mapcar (lambda (b)
                    (with-current-buffer b
                      (list :file (file-truename buffer-file-name)
                            :modified (buffer-modified-p)
                            :read-only buffer-read-only
                            :mode (format "%s" major-mode))))
                  (tandem-instruments--take limit buffers))
          :window
          (when (tandem-instruments--under (buffer-file-name shown) root)
            (with-current-buffer shown
              (let ((point (window-point window)))
                (append (list :file (file-truename buffer-file-name)
                              :line (tandem-instruments--line point))
                        (and (region-active-p)
                             (list :region-start (tandem-instruments--line (region-beginning))
                                   :region-end (tandem-instruments--line (region-end)))))))))))

(defun tandem-instruments-project-files (params)
  "Answer the project_files instrument for PARAMS.
That is project.el's files of the project at :root (its ignores
honoured), at most :limit, and how many there are in all."
  (require 'project)
  (let* ((root (plist-get params :root))
         (limit (tandem-instruments--limit params))
         (project (project-current nil root)))
    (if (not project)
        (list :project nil)
      (let ((files (project-files project)))
        (list :project (format "%s project at %s" (car-safe project)
                               (abbreviate-file-name (project-root project)))
              :total (length files)
              :files (mapcar #'expand-file-name (tandem-instruments--take limit files)))))))

;;;; The bridge

(defconst tandem-instruments--table
  '(("diagnostics" . tandem-instruments-diagnostics)
    ("xref" . tandem-instruments-xref)
    ("outline" . tandem-instruments-outline)
    ("open_buffers" . tandem-instruments-open-buffers)
    ("project_files" . tandem-instruments-project-files))
  "Each instrument the backend may ask for, with the function answering it.")

(defun tandem--instrument (_conn name params)
  "Answer the backend's question NAME (an instrument) with PARAMS, a plist.
Paths in PARAMS are absolute and inside :root (the backend checked
them); an unknown NAME or a path outside :root signals an error, as
does anything that would ask the user a question meanwhile."
  (let ((fn (cdr (assoc (format "%s" name) tandem-instruments--table)))
        (path (plist-get params :path))
        (root (plist-get params :root)))
    (unless fn (error "No such instrument: %s" name))
    (unless (and (stringp root) (file-name-absolute-p root))
      (error "Instrument %s: no workspace root" name))
    (when (and path (not (and (stringp path) (file-name-absolute-p path)
                              (tandem-instruments--under path root))))
      (error "Instrument %s: %s is outside the workspace root" name path))
    ;; Nothing may ask the user (a backend's "Select project:"): the
    ;; question would wait for an answer inside the backend's call.
    (let ((inhibit-interaction t)
          (default-directory (file-name-as-directory root)))
      (condition-case nil
          (funcall fn params)
        (inhibited-interaction
         (error "Instrument %s: Emacs would have asked the user a question %s"
                name "(no project there? no tags table?); it asked nothing"))))))

(setf (alist-get 'tandem--instrument tandem-client-methods) #'tandem--instrument)

(provide 'tandem-instruments)
;;; tandem-instruments.el ends here
