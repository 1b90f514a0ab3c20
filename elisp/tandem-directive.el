;;; tandem-directive.el --- Directives: durable requests anchored in the source  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A directive is a request anchored on a region ("make this function
;; async").  The backend owns its record (workspace log); this file shows
;; it in the source through tandem-directive-source.el (a tinted overlay
;; with a one-line lifecycle label) and starts its actions as turns of the
;; bound session.  The menu and the list are in tandem-directive-menu.el
;; and the inspector in tandem-inspector.el, both above this file.
;;
;;   M-x tandem-directive      on the region (or the line at point)
;;   C-c C-d                   the directive menu (on an overlay, a list row,
;;                             a directive turn header, or in directive scope)
;;   M-x tandem-directives     the workspace's directives (`tabulated-list-mode')
;;
;; Public API for scripts and batch tests:
;;   (tandem-directive-create FILE BEG END REQUEST)             -> "D1"
;;   (tandem-directive-act ID ACTION &optional TEXT ATTEMPT PROVIDER)
;;                                                             -> (SESSION . TURN)
;;   (tandem-directive-preview ID ACTION &optional TEXT ATTEMPT) -> prompt string
;;   (tandem-directive-record ID)    -> (:id :state :request :session :attempts …)
;; ACTION is one of `discuss' `implement' `implement-this' `discuss-result'
;; `request-changes' `retry'.  Functions taking only an ID use the project
;; of `default-directory' (or `tandem-directive-root' when bound).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tandem-client)
(require 'tandem-core)
(require 'tandem-client)
(require 'tandem-turns)
(require 'tandem-composer)
(require 'tandem-view-state)
(require 'tandem-directive-source)
(require 'tandem-review)
(require 'tandem-read)

;; The view is above this file (it renders directive turns).
(declare-function tandem-view-show "tandem-view" (info &optional no-select))

(defgroup tandem-directive nil
  "Directives: durable requests anchored in the source."
  :group 'tandem)

(defcustom tandem-directives
  '((implement . "You are a careful coding agent working in the user's project. Carry out \
the directive: make the change in the files, keep it minimal, and end with a short summary \
of what you changed.")
    (discuss . "You are a coding assistant discussing a directive with the user. You may \
read files but must not change anything. Answer concisely."))
  "System directives for directive requests, in the shape of `gptel-directives'.
Each entry maps a symbol to a string (the system prompt), a list (the
system prompt followed by alternating user and assistant template turns)
or a function returning either.  Discussions use `discuss', implementation
actions `implement' unless \\[universal-argument] on an action asks which.
When gptel is loaded, its `gptel-directives' are offered too."
  :type '(alist :key-type symbol
                :value-type (choice string (repeat string) function))
  :group 'tandem-directive)

(defvar tandem-directive-root nil
  "When non-nil, the project root the directive functions use.")

(defconst tandem-directive-actions
  '(discuss implement implement-this discuss-result request-changes retry)
  "The directive actions, in menu order.")

(defconst tandem-directive--discussion-actions '(discuss discuss-result)
  "Actions that run read-only and record a discussion turn.")

;;;; Records

(defun tandem-directive--root (&optional root)
  "Return ROOT, else `tandem-directive-root', else the current project root."
  (directory-file-name
   (expand-file-name (or root tandem-directive-root (tandem-project-root)))))

(defun tandem-directive--check-id (id)
  "Signal an error unless ID has the form of a directive id (D1, D2…)."
  (unless (and (stringp id) (string-match-p "\\`D[1-9][0-9]*\\'" id))
    (user-error "Not a directive id (D1, D2…): %S" id)))

(defun tandem-directive-record (id &optional root)
  "Return the record of directive ID (in ROOT's workspace) as a plist.
Keys include :id :state :request :session :attempts :discussion :anchor
:actions :archived :request-changed."
  (tandem-directive--check-id id)
  (tandem-request "directives/get" (list :root (tandem-directive--root root) :id id)))

(defun tandem-directive-list (&optional root archived)
  "Return the directive rows of ROOT's workspace.
With ARCHIVED non-nil, include archived ones."
  (tandem-request "directives/list" (list :root (tandem-directive--root root)
                                          :archived (and archived t))))

(defun tandem-directive--mention-candidates (root)
  "Return ROOT's directives as (ID . REQUEST) for @ mentions.
Without a live backend, return nil."
  (when (and tandem--connection (tandem-connection-live-p tandem--connection))
    (mapcar (lambda (row) (cons (plist-get row :id) (plist-get row :request)))
            (ignore-errors (tandem-directive-list root)))))

(setq tandem-composer-directives-function #'tandem-directive--mention-candidates)

;;;; System directives (the gptel model)

(defun tandem-directive--all-directives ()
  "Return `tandem-directives' followed by gptel's, when gptel is loaded."
  (append tandem-directives
          (and (boundp 'gptel-directives)
               (cl-remove-if (lambda (e) (assq (car e) tandem-directives))
                             (symbol-value 'gptel-directives)))))

(defun tandem-directive-system (name)
  "Return the system directive NAME as a plist (:name :system :template).
NAME is a key of `tandem-directives' (or of `gptel-directives')."
  (let* ((entry (assq name (tandem-directive--all-directives)))
         (value (cdr entry)))
    (unless entry (user-error "No system directive named %s" name))
    (when (functionp value) (setq value (funcall value)))
    (cond ((stringp value) (list :name (symbol-name name) :system value :template nil))
          ((and (consp value) (cl-every (lambda (x) (or (null x) (stringp x))) value))
           (let ((template (mapcar (lambda (x) (or x "")) (cdr value))))
             (when (cl-oddp (length template))
               (user-error "System directive %s: template turns must alternate user/assistant"
                           name))
             (list :name (symbol-name name) :system (or (car value) "") :template template)))
          (t (user-error "System directive %s must be a string, a list of strings or a \
function returning one" name)))))

(defun tandem-directive--default-system (action)
  "Return the name of ACTION's default system directive."
  (if (memq action tandem-directive--discussion-actions) 'discuss 'implement))

(defun tandem-directive--choose-system (action)
  "Ask for the system directive of ACTION (default: its usual one)."
  (let* ((default (symbol-name (tandem-directive--default-system action)))
         (names (mapcar (lambda (e) (symbol-name (car e))) (tandem-directive--all-directives))))
    (intern (tandem-read-choice "System directive" names :default default :require-match t
                                :what "system directive"))))

;;;; Acting

(defun tandem-directive--action (action)
  "Return ACTION as a symbol of `tandem-directive-actions', or signal."
  (let ((sym (if (stringp action) (intern action) action)))
    (unless (memq sym tandem-directive-actions)
      (user-error "Unknown directive action %S: use one of %s" action
                  (mapconcat #'symbol-name tandem-directive-actions " ")))
    sym))

(defun tandem-directive--action-params (id action text attempt system root)
  "Return the params of ACTION on ID with TEXT, ATTEMPT and SYSTEM in ROOT."
  (tandem-directive--check-id id)
  (when (and text (not (stringp text))) (user-error "TEXT must be a string: %S" text))
  (when (and attempt (not (natnump attempt))) (user-error "ATTEMPT must be a number: %S"
                                                          attempt))
  (append (list :root (tandem-directive--root root) :id id
                :action (symbol-name (tandem-directive--action action))
                :text (or text "")
                :system-directive (tandem-directive-system
                                   (or system (tandem-directive--default-system
                                               (tandem-directive--action action)))))
          (and attempt (list :attempt attempt))))

(defun tandem-directive-preview (id action &optional text attempt system)
  "Return the exact prompt ACTION on directive ID would send now.
TEXT is the question, guidance or feedback; ATTEMPT the attempt a
discuss-result attaches; SYSTEM a `tandem-directives' name.  Nothing is sent."
  (plist-get (tandem-request "directives/preview"
                             (tandem-directive--action-params id action text attempt system nil))
             :prompt))

(defvar tandem-directive-after-act-functions nil
  "Abnormal hook run with (ID ACTION SESSION TURN) after an action started.")

(defun tandem-directive-act (id action &optional text attempt provider system)
  "Start ACTION on directive ID as a turn; return (SESSION . TURN).
TEXT is the question, guidance or feedback; ATTEMPT the attempt a
discuss-result attaches (default: the latest); PROVIDER overrides
`tandem-provider' for this request; SYSTEM names the system directive.
The first accepted request binds the directive to the project's session."
  (tandem-configure)
  (let* ((root (tandem-directive--root))
         (params (tandem-directive--action-params id action text attempt system root))
         (bound (plist-get (tandem-directive-record id root) :session))
         (reply (tandem-request
                 "directives/act"
                 (append params
                         ;; Only an unbound directive takes the project's session.
                         (and (not bound)
                              (list :session (let ((default-directory
                                                     (file-name-as-directory root)))
                                               (tandem-project-session root))))
                         (and (or provider tandem-provider)
                              (list :provider (or provider tandem-provider))))
                 60))
         (session (plist-get reply :session))
         (turn (plist-get reply :turn)))
    (run-hook-with-args 'tandem-directive-after-act-functions id
                        (tandem-directive--action action) session turn)
    (cons session turn)))

;;;; Showing the session

(defun tandem-directive-session-buffer (session root &optional no-select)
  "Show SESSION's buffer (ROOT's project) when the view is loaded.
Return the buffer, or nil.
Unless NO-SELECT, the buffer is displayed."
  (when (fboundp 'tandem-view-show)
    (or (and (not no-select) (tandem-view-buffer session)
             (pop-to-buffer (tandem-view-buffer session)))
        (tandem-view-buffer session)
        (tandem-view-show (tandem-request "sessions/lookup" (list :query session :cwd root))
                          no-select))))

(defvar-local tandem-directive--scope-attempt nil
  "In a session buffer: the attempt a discuss-result scope attaches, or nil.")

(defun tandem-directive-enter-scope (id action &optional attempt session root)
  "Put SESSION's composer into the sticky scope of ACTION on directive ID.
ATTEMPT is kept for a discuss-result.  Return the session buffer, or nil
when the view is not loaded."
  (let* ((root (tandem-directive--root root))
         (session (or session (plist-get (tandem-directive-record id root) :session)
                      (let ((default-directory (file-name-as-directory root)))
                        (tandem-project-session root))))
         (buffer (tandem-directive-session-buffer session root)))
    (when (and buffer (fboundp 'tandem-composer-set-scope))
      (tandem-composer-set-scope buffer (list :directive id :action action))
      (with-current-buffer buffer
        (setq tandem-directive--scope-attempt attempt)
        (setq-local tandem-directive-root root)
        (goto-char (point-max)))
      buffer)))

(defun tandem-directive--buffer-root (buffer)
  "Return the project root of session BUFFER, or nil."
  (with-current-buffer buffer
    (or tandem-directive-root
        (let ((info (tandem-view-info-here)))
          (and info (or (plist-get info :active-cwd) (plist-get info :cwd)))))))

(defun tandem-directive--composer-send (id action text buffer)
  "Send TEXT as ACTION on directive ID from the composer of BUFFER.
The composer keeps its directive scope (it is sticky)."
  (let ((tandem-directive-root (tandem-directive--buffer-root buffer)))
    (cdr (tandem-directive-act id action text
                               (and (eq action 'discuss-result)
                                    (buffer-local-value 'tandem-directive--scope-attempt
                                                        buffer))))))

(setq tandem-composer-directive-send-function #'tandem-directive--composer-send)

;;;; Commands

(defun tandem-directive--region-lines (beg end)
  "Return (START-LINE END-LINE TEXT) of BEG..END in the current buffer.
A region ending at the start of a line does not include that line."
  (let* ((start-line (line-number-at-pos beg t))
         (end* (if (and (> end beg) (save-excursion (goto-char end) (bolp))) (1- end) end))
         (end-line (max start-line (line-number-at-pos end* t))))
    (list start-line end-line (buffer-substring-no-properties beg end))))

(defun tandem-directive-create (file beg end request)
  "Create a directive on FILE between BEG and END asking REQUEST.
Return its id."
  (unless (and (stringp file) (file-exists-p file))
    (user-error "No such file: %S" file))
  (unless (and (stringp request) (not (string-blank-p request)))
    (user-error "The directive request is empty: say what to do"))
  (with-current-buffer (find-file-noselect file)
    (unless (and (integer-or-marker-p beg) (integer-or-marker-p end) (<= (point-min) beg)
                 (<= beg end) (<= end (point-max)))
      (user-error "Region %S..%S is not inside %s" beg end file))
    (when (= beg end)
      (setq beg (line-beginning-position) end (min (point-max) (1+ (line-end-position)))))
    (pcase-let* ((`(,start-line ,end-line ,text) (tandem-directive--region-lines beg end))
                 (root (tandem-directive--root (tandem-project-root
                                                (file-name-directory
                                                 (expand-file-name file)))))
                 (record (tandem-request "directives/create"
                                         (list :root root :path (expand-file-name file)
                                               :start-line start-line :end-line end-line
                                               :text text :request request))))
      (when (fboundp 'tandem-directive-overlays-refresh)
        (tandem-directive-overlays-refresh root))
      (plist-get record :id))))

(declare-function treesit-available-p "treesit" ())
(declare-function treesit-parser-list "treesit" (&optional buffer language))
(declare-function treesit-defun-at-point "treesit" ())
(declare-function treesit-node-start "treesit" (node))
(declare-function treesit-node-end "treesit" (node))

(defun tandem-directive--definition-at-point ()
  "Return (BEG . END) of the whole lines of the definition at point, or nil.
In code, \"this\" means the enclosing function: a tree-sitter parser's
defun where the buffer has one, else `bounds-of-thing-at-point' `defun'."
  (when (derived-mode-p 'prog-mode)
    (let ((bounds
           (or (and (fboundp 'treesit-defun-at-point) (treesit-available-p)
                    (treesit-parser-list)
                    (let ((node (ignore-errors (treesit-defun-at-point))))
                      (and node (cons (treesit-node-start node) (treesit-node-end node)))))
               (bounds-of-thing-at-point 'defun))))
      (when (and bounds (<= (car bounds) (point)) (<= (point) (cdr bounds)))
        (save-excursion
          (cons (progn (goto-char (car bounds)) (line-beginning-position))
                (progn (goto-char (cdr bounds))
                       (if (bolp) (point) (min (point-max) (1+ (line-end-position)))))))))))

;;;###autoload
(defun tandem-directive (request)
  "Create a directive asking REQUEST on the region.
Without a region: in code, the definition (function) around point;
elsewhere the line at point."
  (interactive (progn (unless buffer-file-name
                        (user-error "A directive needs a file: save this buffer first"))
                      (list (tandem-read-text "Directive request"))))
  (let* ((def (and (not (use-region-p)) (tandem-directive--definition-at-point)))
         (beg (cond ((use-region-p) (region-beginning)) (def (car def))
                    (t (line-beginning-position))))
         (end (cond ((use-region-p) (region-end)) (def (cdr def))
                    (t (min (point-max) (1+ (line-end-position))))))
         (id (tandem-directive-create buffer-file-name beg end request)))
    (deactivate-mark)
    (message "Directive %s created (C-c C-d on it for actions)" id)
    id))

(defun tandem-directive--read-text (action)
  "Read the text ACTION takes in the minibuffer (required for request-changes)."
  (pcase action
    ('request-changes (tandem-read-text "What should change" :what "change asked for"))
    ('discuss-result (tandem-read-text "Question about the attempt" :what "question"))
    ('discuss (read-string "Question (empty: discuss the request): "))
    (_ (read-string "Guidance (optional): "))))

(defun tandem-directive-run (id action &optional choose-system attempt)
  "Run ACTION on directive ID from a command.
Questions and feedback go through the session's composer in directive
scope when the view is loaded (the scope is sticky); other actions start
at once.  CHOOSE-SYSTEM asks for the system directive; ATTEMPT is the
attempt a discuss-result attaches."
  (let* ((root (tandem-directive--root))
         (system (and choose-system (tandem-directive--choose-system action))))
    (if (and (memq action '(discuss discuss-result request-changes))
             (fboundp 'tandem-composer-set-scope) (fboundp 'tandem-view-show)
             (null system))
        (progn (tandem-directive-enter-scope id action attempt nil root)
               (message "%s %s: type in the composer, C-c C-c sends, C-c C-b back to chat"
                        id action))
      (let ((text (if (memq action '(implement implement-this)) ""
                    (tandem-directive--read-text action)))
            (session (or (plist-get (tandem-directive-record id root) :session)
                         (let ((default-directory (file-name-as-directory root)))
                           (tandem-project-session root))))
            started)
        ;; Show the session first, so the turn streams in at its tip.
        (tandem-directive-session-buffer session root)
        (setq started (tandem-directive-act id action text attempt nil system))
        (message "%s %s started as turn %s" id action (cdr started))
        started))))

(defun tandem-directive-edit (id request)
  "Change directive ID's REQUEST.
The directive goes back to Ready; earlier activity is kept."
  (interactive (let* ((id (tandem-directive-id-at-point t))
                      (old (plist-get (tandem-directive-record id) :request)))
                 (list id (tandem-read-text "Request" :initial old))))
  (tandem-request "directives/edit" (list :root (tandem-directive--root) :id id
                                          :request request))
  (tandem-directive--changed))

(defun tandem-directive-archive (id &optional unarchive)
  "Archive directive ID: hide it, nothing is deleted.
With UNARCHIVE, show it again."
  (interactive (list (tandem-directive-id-at-point t) current-prefix-arg))
  (tandem-request "directives/archive" (list :root (tandem-directive--root) :id id
                                             :archived (not unarchive)))
  (tandem-directive--changed)
  (message "%s %s" id (if unarchive "unarchived" "archived")))

(defun tandem-directive-read-session (id)
  "Read the session directive ID should move to, among this project's sessions.
The default is the project's current session; an id typed in full works too."
  (let* ((rows (cl-remove-if (lambda (r) (plist-get r :damaged))
                             (tandem-request "sessions/list"
                                             (list :cwd (tandem-directive--root)))))
         (bound (plist-get (tandem-directive-record id) :session))
         (choices (mapcar (lambda (r)
                            (cons (plist-get r :id)
                                  (concat (let ((title (plist-get r :title)))
                                            (if (string-empty-p (or title "")) "(untitled)"
                                              title))
                                          (if (equal (plist-get r :id) bound)
                                              " · bound now" ""))))
                          rows)))
    (tandem-read-choice "Rebind to session"
                        choices
                        :default (car (cl-find-if-not (lambda (c) (equal (car c) bound))
                                                      choices))
                        :what "session")))

(defun tandem-directive-rebind (id session)
  "Move directive ID's future activity to SESSION, after a warning.
Earlier attempts keep pointing at their old session and turn."
  (interactive (let ((id (tandem-directive-id-at-point t)))
                 (list id (tandem-directive-read-session id))))
  (let* ((root (tandem-directive--root))
         (asked (tandem-request "directives/rebind" (list :root root :id id :session session))))
    (when (or noninteractive (yes-or-no-p (concat (plist-get asked :warning) " Rebind? ")))
      (tandem-request "directives/rebind" (list :root root :id id :session session
                                                :confirm t))
      (tandem-directive--changed)
      (message "%s now runs in session %s" id session)
      t)))

(defun tandem-directive-reattach (id &optional beg end)
  "Reattach directive ID on the region BEG..END.
Without a region, where its anchor text occurs exactly once."
  (interactive (list (tandem-directive-id-at-point t)
                     (and (use-region-p) (region-beginning))
                     (and (use-region-p) (region-end))))
  (let ((params (list :root (tandem-directive--root) :id id)))
    (when beg
      (pcase-let ((`(,s ,e ,_) (tandem-directive--region-lines beg end)))
        (setq params (append params (list :start-line s :end-line e)))))
    (tandem-request "directives/reattach" params)
    (tandem-directive--changed)
    (message "%s reattached" id)))

(defun tandem-directive-view-changes (id &optional attempt)
  "Review the patch of directive ID's ATTEMPT (`tandem-review-turn').
ATTEMPT defaults to the latest one.  When its turn's checkpoints cannot
be reached, show the patch the attempt recorded, read-only.  Return the buffer."
  (interactive (list (tandem-directive-id-at-point t)))
  (let* ((root (tandem-directive--root))
         (attempt (or attempt (tandem-directive--latest-attempt id root)))
         (record (cl-find attempt (plist-get (tandem-directive-record id root) :attempts)
                          :key (lambda (a) (plist-get a :seq)))))
    (or (and record (plist-get record :session) (plist-get record :turn)
             (condition-case err
                 (tandem-review-turn (plist-get record :session) (plist-get record :turn))
               (tandem-error
                (message "tandem: %s; showing the recorded patch" (tandem-error-message err))
                nil)))
        (tandem-directive--recorded-changes id attempt root))))

(defun tandem-directive--recorded-changes (id attempt root)
  "Show the patch directive ID's ATTEMPT recorded in ROOT, read-only.
Return the buffer."
  (let* ((reply (tandem-request "directives/diff" (list :root root :id id :attempt attempt)))
         (buffer (get-buffer-create (format "*tandem-changes: %s #%s*" id attempt))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or (plist-get reply :diff) ""))
        (when (string-empty-p (or (plist-get reply :diff) ""))
          (insert (format "# Attempt %s of %s recorded no diff (completeness: %s)\n"
                          attempt id (plist-get reply :completeness)))))
      (setq default-directory (file-name-as-directory root))
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min)))
    (display-buffer buffer)
    buffer))

(defun tandem-directive--latest-attempt (id root)
  "Return the number of directive ID's latest surviving attempt in ROOT."
  (let ((attempts (plist-get (tandem-directive-record id root) :attempts)))
    (or (plist-get (car (last attempts)) :seq)
        (user-error "%s has no attempt yet" id))))

(defun tandem-directive-rewind-before (id &optional attempt)
  "Rewind the bound session to before directive ID's ATTEMPT.
ATTEMPT defaults to the latest one.  This calls `tandem-rewind' (the
rewind transaction) with the attempt's checkpoint link."
  (interactive (list (tandem-directive-id-at-point t)))
  (let* ((root (tandem-directive--root))
         (record (tandem-directive-record id root))
         (seq (or attempt (tandem-directive--latest-attempt id root)))
         (a (cl-find seq (plist-get record :attempts) :key (lambda (x) (plist-get x :seq)))))
    (unless a (user-error "%s has no surviving attempt %s" id seq))
    (if (fboundp 'tandem-rewind)
        (funcall 'tandem-rewind (plist-get a :session) (plist-get a :turn))
      (message "Rewind is not available yet (tandem-rewind is not loaded); attempt %s is \
turn %s of session %s" seq (plist-get a :turn) (plist-get a :session))
      nil)))

(defvar tandem-directive-changed-functions nil
  "Hook run with no argument after a directive changed.")

(defun tandem-directive--changed ()
  "Run `tandem-directive-changed-functions'."
  (run-hooks 'tandem-directive-changed-functions))

;;;; Which directive is at point

(defvar tandem-directive-id-functions nil
  "Functions returning the directive id at point, or nil.")

(defun tandem-directive--id-in-view ()
  "Return the directive id of the turn or composer scope at point."
  (let ((block (get-text-property (point) 'tandem-block)))
    (or (and block (fboundp 'tandem-view-block-directive)
             (plist-get (funcall 'tandem-view-block-directive block) :directive))
        (and (fboundp 'tandem-composer-scope) (boundp 'tandem-composer--scope)
             (let ((scope (tandem-composer-scope)))
               (and (consp scope) (plist-get scope :directive)))))))

(add-hook 'tandem-directive-id-functions #'tandem-directive--id-in-view)

(defun tandem-directive-id-at-point (&optional ask)
  "Return the id of the directive at point; with ASK, read one when there is none."
  (or (run-hook-with-args-until-success 'tandem-directive-id-functions)
      (and ask (tandem-directive--read-id))))

(defun tandem-directive--read-id ()
  "Read one of this project's directives; return its id.
The default is the directive of this file nearest point, else the newest."
  (let* ((rows (tandem-directive-list))
         (rel (and buffer-file-name
                   (file-relative-name buffer-file-name (tandem-directive--root))))
         (line (line-number-at-pos))
         (lines-away (lambda (r) (abs (- (or (plist-get r :start-line) 0) line))))
         (here (cl-remove-if-not (lambda (r) (equal (plist-get r :path) rel)) rows))
         (near (car (sort (copy-sequence here)
                          (lambda (a b) (< (funcall lines-away a) (funcall lines-away b)))))))
    (unless rows
      (user-error "This project has no directives yet (M-x tandem-directive makes one)"))
    (tandem-read-choice "Directive"
                        (mapcar (lambda (r)
                                  (cons (plist-get r :id)
                                        (format "%s · %s · %s" (tandem-directive-state-label r)
                                                (plist-get r :path)
                                                (tandem-directive--first-line
                                                 (plist-get r :request) 60))))
                                rows)
                        :default (plist-get (or near (car (last rows))) :id)
                        :require-match t :what "directive")))

(provide 'tandem-directive)
;;; tandem-directive.el ends here
