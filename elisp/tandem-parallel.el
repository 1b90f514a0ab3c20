;;; tandem-parallel.el --- Parallel sessions in their own worktrees, landed hunk by hunk  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The tandem authors
;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `tandem-parallel' starts a session in its own tree: a git worktree of
;; the project on a new branch tandem/NAME made from HEAD, in
;; `tandem-parallel-directory' (by default PROJECT/../PROJECT.tandem-worktrees/NAME),
;; or a copy for a project that is no git repository.  A main tree with
;; uncommitted changes is refused; tandem then offers to carry them over
;; as the parallel session's first checkpoint.
;;
;; `tandem-land' shows the parallel session's whole change against its
;; base in a `diff-mode' buffer with `tandem-land-mode' on top:
;;
;;   a    take the hunk at point into the main tree
;;   A    take the file at point
;;   RET  take everything shown
;;   g    reload
;;
;; Each take is one turn of the project's own session, checkpointed
;; before and after: Rewind in that session undoes it like any turn.
;; Where the main tree changed the same file since the base, the three
;; versions are merged (`git merge-file'); a conflict is written with its
;; markers and the file opens in `smerge-mode'.  A file whose buffer has
;; unsaved edits is never written: save or revert it first.  After
;; everything is taken, tandem offers to remove the worktree and its
;; branch (`tandem-parallel-remove'); the session's journal stays.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'tabulated-list)
(require 'diff-mode)
(require 'tandem-client)
(require 'tandem-core)
(require 'tandem-turns)
(require 'tandem-read)
(require 'tandem-review)
(require 'tandem-sessions)
(require 'tandem-setup)
(require 'tandem-view)

(declare-function smerge-mode "smerge-mode" (&optional arg))

(defgroup tandem-parallel nil
  "Parallel tandem sessions in their own git worktrees."
  :group 'tandem)

(defcustom tandem-parallel-directory nil
  "Folder the parallel sessions' trees are made in, or nil for the default.
The default is PROJECT.tandem-worktrees beside the project (for
~/src/p: ~/src/p.tandem-worktrees/NAME).  A relative name is read
from the project's parent folder.  It must lie outside the project."
  :type '(choice (const :tag "Beside the project" nil) directory)
  :group 'tandem-parallel)

(defvar tandem-parallel-confirm-function #'y-or-n-p
  "Function asking the questions of parallel sessions; called with a prompt.")

(defvar tandem-parallel-created-functions nil
  "Hook run with the `parallel/create' reply of each parallel session made.")

(defvar-local tandem-land--session nil "The parallel session this landing buffer shows.")
(defvar-local tandem-land--host nil
  "The agent-server host the landing's trees are on, or nil.
On a host, no local buffer visits the main tree's files.")
(defvar-local tandem-land--project nil "The main tree the landing writes into.")
(defvar-local tandem-land--name nil "The parallel session's name.")
(defvar-local tandem-land--paths nil "Every file of the change shown.")

(defun tandem-parallel--folder (project)
  "The folder PROJECT's parallel trees go in, for the backend (nil: its default)."
  (and tandem-parallel-directory
       (expand-file-name tandem-parallel-directory
                         (file-name-directory (directory-file-name project)))))

;;;###autoload
(defun tandem-parallel (name)
  "Start parallel session NAME of this project in its own git worktree (or a copy).
Its branch is tandem/NAME from HEAD, its tree in `tandem-parallel-directory'.
When the project has uncommitted changes, ask whether to carry them over
as the session's first checkpoint.  Open its session buffer and return
the `parallel/create' reply."
  (interactive (list (tandem-read-text "Parallel session name" :what "name")))
  (let* ((project (tandem-sessions--launch-dir))
         (params (list :project project :name name
                       :parent-session (tandem-project-session project)
                       :directory (tandem-parallel--folder project)))
         (reply (condition-case err
                    (tandem-request "parallel/create" params 300)
                  (tandem-conflict
                   (unless (funcall tandem-parallel-confirm-function
                                    (format "%s.  Carry them over? "
                                            (tandem-error-message err)))
                     (user-error "No parallel session made: the project has uncommitted \
changes"))
                   (tandem-request "parallel/create" (append params (list :carry t)) 300))))
         (record (plist-get reply :record)))
    (message "tandem: parallel session %s in %s%s" name (tandem-parallel--where record)
             (if (plist-get reply :carried)
                 (format " (carried over %d files)" (length (plist-get reply :carried)))
               ""))
    (run-hook-with-args 'tandem-parallel-created-functions reply)
    (tandem-view-show (tandem-request "sessions/open-file"
                                      (list :path (plist-get reply :path)
                                            ;; A host's tree is no folder here.
                                            :cwd (if (plist-get record :host) project
                                                   (plist-get record :worktree)))))
    reply))

(defun tandem-parallel--where (record)
  "Where RECORD's tree is: its folder, or HOST:FOLDER on an agent-server host."
  (if (plist-get record :host)
      (format "%s:%s" (plist-get record :host) (plist-get record :worktree))
    (plist-get record :worktree)))

(defun tandem-parallel--session ()
  "This buffer's parallel session, else one of this project's, read.
The buffer's session or the tree it is in names it; else the choice is
among the parallel sessions of this project that were not removed."
  (let* ((dir (tandem-sessions--launch-dir))
         (records (cl-remove-if (lambda (r) (plist-get r :removed))
                                (plist-get (tandem-request "parallel/list" nil) :records)))
         (mine (or (and tandem-session
                        (cl-find tandem-session records
                                 :key (lambda (r) (plist-get r :session)) :test #'equal))
                   (cl-find-if (lambda (r) (file-equal-p (plist-get r :worktree) dir))
                               records))))
    (if mine
        (plist-get mine :session)
      (let* ((here (cl-remove-if-not (lambda (r) (file-equal-p (plist-get r :project) dir))
                                     records))
             (name (tandem-read-choice
                    "Parallel session"
                    (mapcar (lambda (r) (cons (plist-get r :name) (plist-get r :worktree)))
                            here)
                    :require-match t :what "parallel session")))
        (plist-get (cl-find name here :key (lambda (r) (plist-get r :name)) :test #'equal)
                   :session)))))

;;;; The landing buffer

(defvar tandem-land-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "a" #'tandem-land-hunk)
    (define-key map "A" #'tandem-land-file)
    (define-key map (kbd "RET") #'tandem-land-all)
    (define-key map "g" #'tandem-land-reload)
    map)
  "Keys of `tandem-land-mode'.")

(defvar-local tandem-land--keys nil
  "Buffer-local `emulation-mode-map-alists' element of a landing buffer.
It outranks `diff-mode''s own keys (RET visits the source there).")

(add-to-list 'emulation-mode-map-alists 'tandem-land--keys)

(define-minor-mode tandem-land-mode
  "Land a parallel session's change into the main tree.
\\<tandem-land-mode-map>\\[tandem-land-hunk] takes the hunk at point, \\[tandem-land-file]
the file at point, \\[tandem-land-all] everything shown, \\[tandem-land-reload] reloads."
  :lighter " Land"
  (setq tandem-land--keys
        (and tandem-land-mode (list (cons 'tandem-land-mode tandem-land-mode-map)))))

;; Landing buffers turn it on: M-x does not offer it.
(function-put 'tandem-land-mode 'completion-predicate #'ignore)

(defun tandem-land--insert (reply)
  "Insert the landing review of REPLY (a `parallel/patch' reply) at point."
  (let* ((patch (plist-get reply :patch))
         (diff (or (plist-get patch :diff) "")))
    (insert (format "# Parallel session %s (%s) against its base, to land in %s\n"
                    (plist-get reply :name) (tandem-parallel--where reply)
                    (plist-get reply :project))
            (if (plist-get reply :host)
                (format "# (on %s; the files here are its mirror, read-only: %s)\n"
                        (plist-get reply :host) (plist-get reply :root))
              "")
            "# a takes the hunk at point, A the file, RET everything shown (one turn each)\n")
    (dolist (f (plist-get patch :files))
      (when (plist-get f :binary)
        (insert (format "# binary: %s (take it whole with A)\n" (plist-get f :path)))))
    (tandem-review-insert-gaps patch)
    (insert (if (string-empty-p diff) "# Nothing changed: nothing to land.\n" diff))))

;;;###autoload
(defun tandem-land (session &optional no-select)
  "Review parallel SESSION's change against its base, to land it hunk by hunk.
Interactively, this buffer's parallel session, else one of this
project's, read.  The buffer is selected unless NO-SELECT.  Return it."
  (interactive (list (tandem-parallel--session)))
  (let* ((reply (tandem-request "parallel/patch" (list :session session) 120))
         (buffer (get-buffer-create (format "*tandem-land: %s*" (plist-get reply :name)))))
    (tandem-review-show-patch
     buffer (plist-get reply :root) (buffer-local-value 'tandem-land--session buffer)
     (lambda () (tandem-land--insert reply))
     (lambda ()
       (setq tandem-land--session session
             tandem-land--project (plist-get reply :project)
             tandem-land--host (plist-get reply :host)
             tandem-land--name (plist-get reply :name)
             tandem-land--paths (mapcar (lambda (f) (plist-get f :path))
                                        (plist-get (plist-get reply :patch) :files)))
       (tandem-review-mark-parts (plist-get reply :landed) "✓ landed" "✓ landed (whole file)")
       (tandem-land-mode 1))
     no-select)))

(defun tandem-land-reload ()
  "Fetch the parallel session's change again; point stays on its line."
  (interactive nil tandem-land-mode)
  (tandem-land tandem-land--session t))

(defun tandem-land--check-buffers (project paths)
  "Signal a user error when a buffer visiting PATHS under PROJECT is modified."
  (let ((unsaved (cl-loop for path in paths
                          for buffer = (get-file-buffer (expand-file-name path project))
                          when (and buffer (buffer-modified-p buffer))
                          collect (buffer-name buffer))))
    (when unsaved
      (user-error "Save or revert %s first: a landing never writes over unsaved edits"
                  (string-join unsaved ", ")))))

(defun tandem-land--conflicts (project conflicts)
  "Open each of CONFLICTS (under PROJECT) in `smerge-mode'; return the buffers."
  (require 'smerge-mode)
  (mapcar (lambda (path)
            (with-current-buffer (find-file-noselect (expand-file-name path project))
              (smerge-mode 1)
              (current-buffer)))
          conflicts))

(defun tandem-land--take (params paths what)
  "Land PARAMS (touching PATHS); report WHAT; return the `parallel/land' reply."
  (let ((project tandem-land--project) (session tandem-land--session)
        (host tandem-land--host) (land-buffer (current-buffer)))
    ;; A host's main tree is visited by no buffer here: nothing to check nor revert.
    (unless host (tandem-land--check-buffers project paths))
    (let ((reply (tandem-request "parallel/land" (append (list :session session) params) 300)))
      (unless (equal (plist-get reply :outcome) "succeeded")
        (user-error "Landing %s failed: %s" what (plist-get reply :error)))
      (unless host (tandem-revert-stale-buffers project))
      (when (buffer-live-p land-buffer)
        (with-current-buffer land-buffer (tandem-land-reload)))
      (let* ((conflicts (plist-get reply :conflicts))
             (buffers (unless host (tandem-land--conflicts project conflicts))))
        (message "tandem: landed %s as turn %s of the project's session%s%s" what
                 (plist-get reply :turn)
                 (if conflicts (format (if host "; conflicts in %s (markers written on %s)"
                                         "; conflicts in %s (smerge-mode)")
                                       (string-join conflicts ", ") host)
                   "")
                 (if (plist-get reply :kept)
                     (format "; kept the main tree's %s" (string-join (plist-get reply :kept) ", "))
                   ""))
        (when buffers (pop-to-buffer (car buffers))))
      reply)))

(defun tandem-land-hunk ()
  "Take the hunk at point into the main tree (one turn of the project's session)."
  (interactive nil tandem-land-mode)
  (cl-destructuring-bind (path index header _start _end) (tandem-review--hunk-at-point)
    (tandem-land--take (list :path path :hunk index :hunk-header header) (list path)
                       (format "hunk %d of %s" (1+ index) path))))

(defun tandem-land-file ()
  "Take the whole file at point into the main tree."
  (interactive nil tandem-land-mode)
  (let ((path (car (tandem-review--file-at-point))))
    (tandem-land--take (list :path path) (list path) path)))

(defun tandem-land-all ()
  "Take everything shown into the main tree; then offer to remove the worktree."
  (interactive nil tandem-land-mode)
  (unless tandem-land--paths (user-error "Nothing to land"))
  (let* ((session tandem-land--session)
         (reply (tandem-land--take (list :paths tandem-land--paths) tandem-land--paths
                                   "everything")))
    (when (and (null (plist-get reply :conflicts)) (null (plist-get reply :kept)))
      (tandem-parallel-remove session))
    reply))

;;;###autoload
(defun tandem-parallel-remove (session &optional force)
  "Offer to remove parallel SESSION's worktree and tandem/ branch (or its copy).
The session's journal is kept.  Changes never landed are asked about
again, unless FORCE.  Return the record, or nil when nothing was removed."
  (interactive (list (tandem-parallel--session)))
  (let* ((record (tandem-request "parallel/record" (list :session session)))
         (what (if (plist-get record :branch)
                   (format "worktree %s and branch %s" (tandem-parallel--where record)
                           (plist-get record :branch))
                 (format "copy %s" (tandem-parallel--where record)))))
    (when (or force (funcall tandem-parallel-confirm-function
                             (format "Remove %s (the session's journal is kept)? " what)))
      (let ((done (condition-case err
                      (tandem-request "parallel/remove" (list :session session :force force))
                    (tandem-conflict
                     (when (funcall tandem-parallel-confirm-function
                                    (concat (tandem-error-message err) " "))
                       (tandem-request "parallel/remove" (list :session session :force t)))))))
        (when (and done (not (plist-get record :host)))
          (tandem-parallel--leave-tree (plist-get record :worktree)
                                       (plist-get record :project))
          (message "tandem: removed %s" what))
        done))))

(defun tandem-parallel--leave-tree (tree project)
  "Point every buffer whose directory is in the removed TREE at PROJECT.
A buffer left in a folder that no longer exists makes each process it
starts (a sentinel's, a timer's) fail with \"Setting current directory\"."
  (when (and (stringp tree) (stringp project))
    (let ((tree (file-name-as-directory (expand-file-name tree)))
          (project (file-name-as-directory (expand-file-name project))))
      (dolist (buffer (buffer-list))
        (with-current-buffer buffer
          (when (and (stringp default-directory)
                     (string-prefix-p tree (file-name-as-directory
                                            (expand-file-name default-directory))))
            (setq default-directory project)))))))

;;;; Best-of-N and the compare view

(defcustom tandem-test-commands nil
  "Test commands by project: an alist of (PROJECT-DIRECTORY . SHELL-COMMAND).
After each turn of a best-of-N (`tandem-best-of') the command of its
project runs in each result's own tree (through `shell-file-name'), with
tandem's environment without secrets and `tandem-test-timeout'.  It lives
in your own settings: a project's files never choose a program to run."
  :type '(alist :key-type directory :value-type string)
  :group 'tandem-parallel)

(defcustom tandem-test-command nil
  "The test command of this project when `tandem-test-commands' names none.
A shell command, run in each best-of-N result's tree after its turn.
This variable is risky as a file or directory local: Emacs asks you before
a project's .dir-locals.el may set it, as for any variable that can run a
program."
  :type '(choice (const :tag "None" nil) string)
  :risky t
  :group 'tandem-parallel)
;;;###autoload(put 'tandem-test-command 'risky-local-variable t)

(defcustom tandem-test-timeout 600
  "Seconds a best-of-N result's test command may run before it is killed."
  :type 'number
  :group 'tandem-parallel)

(defcustom tandem-best-of-default-count 3
  "How many results `tandem-best-of' offers to make."
  :type 'natnum
  :group 'tandem-parallel)

(defvar tandem-compare-refresh-seconds 2
  "How often a compare view refreshes while a result's turn or test runs.")

(defun tandem-parallel-test-command (project)
  "Return the shell command to test PROJECT with, or nil.
An entry of `tandem-test-commands' for PROJECT wins; else the value of
`tandem-test-command' (yours, or a directory local you accepted)."
  (or (cdr (cl-find-if (lambda (entry)
                         (and (file-directory-p (car entry))
                              (file-equal-p (car entry) project)))
                       tandem-test-commands))
      tandem-test-command))

(defconst tandem-best-of--modes '("auto-edit" "ask" "read-only")
  "The permission modes a best-of-N result may name.")

(defun tandem-best-of--parse (answer)
  "Parse ANSWER, \"PROVIDER [MODE]\", into a `parallel/best-of' run plist.
PROVIDER \"default\" leaves the choice to the backend's settings; MODE
defaults to auto-edit (the result works in its own tree)."
  (let* ((words (split-string (string-trim answer)))
         (provider (car words))
         (mode (or (cadr words) "auto-edit")))
    (unless (member mode tandem-best-of--modes)
      (user-error "Not a permission mode: %s (one of %s)" mode
                  (string-join tandem-best-of--modes ", ")))
    (list :provider (and provider (not (equal provider "default")) provider)
          :permission-mode mode)))

(defun tandem-best-of--current ()
  "Return the provider of this project's session now, or \"default\"."
  (or (car (tandem-setup--provider-choices)) "default"))

(defun tandem-best-of--read-runs (n)
  "Read N results' \"PROVIDER [MODE]\", each offering the configured providers."
  (let* ((current (tandem-best-of--current))
         (choices (delete-dups (append (list current) (tandem-setup--provider-choices)
                                       (list "default")))))
    (cl-loop for i from 1 to n
             collect (tandem-best-of--parse
                      (tandem-read-choice
                       (format "Result %d of %d: provider [mode]" i n)
                       (mapcar (lambda (c) (cons c (if (equal c current) "current" "")))
                               choices)
                       :default (concat current " auto-edit") :what "provider")))))

;;;###autoload
(defun tandem-best-of (n text &optional runs)
  "Send TEXT to N new parallel sessions at once and show the compare view.
RUNS is a list of N plists (:provider P :permission-mode M); interactively
each is read as \"PROVIDER [MODE]\" (the current provider, auto-edit, by
default); with a prefix argument the current provider serves all N.
When the project has a test command (`tandem-test-commands',
`tandem-test-command'), it runs in each tree after its turn.  Return the
compare buffer."
  (interactive
   (let* ((n (read-number "How many results: " tandem-best-of-default-count))
          (runs (if current-prefix-arg
                    (make-list n (tandem-best-of--parse (tandem-best-of--current)))
                  (tandem-best-of--read-runs n))))
     (list n (tandem-read-text "Request for every result" :what "request") runs)))
  (unless (and (integerp n) (<= 1 n 8)) (user-error "Between 1 and 8 results"))
  (let* ((project (tandem-sessions--launch-dir))
         (runs (or runs (make-list n (tandem-best-of--parse (tandem-best-of--current)))))
         (command (tandem-parallel-test-command project))
         (group (tandem-request
                 "parallel/best-of"
                 (append (list :project project :text text :runs (vconcat runs)
                               :parent-session (tandem-project-session project)
                               :directory (tandem-parallel--folder project))
                         (and command
                              (list :test-command (vector shell-file-name
                                                          shell-command-switch command)
                                    :test-timeout tandem-test-timeout)))
                 (* 120 n))))
    (message "tandem: %d results started%s" (length (plist-get group :runs))
             (if command (format "; then %s in each tree" command) ""))
    (tandem-compare (plist-get group :group))))

(defvar tandem-compare-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'tandem-compare-show)
    (define-key map "l" #'tandem-compare-land)
    (define-key map "t" #'tandem-compare-test-output)
    (define-key map "T" #'tandem-compare-run-test)
    (define-key map "g" #'tandem-compare-refresh)
    map)
  "Keys of `tandem-compare-mode'.")

(defvar-local tandem-compare--group nil "The best-of-N group this compare view shows.")
(defvar-local tandem-compare--reply nil "The latest `parallel/compare' reply shown.")
(defvar-local tandem-compare--timer nil "The refresh timer while results run.")

(define-derived-mode tandem-compare-mode tabulated-list-mode "tandem-compare"
  "The results of one best-of-N request, side by side.
\\<tandem-compare-mode-map>\\[tandem-compare-show] shows a result's answer, test and patch, \
\\[tandem-compare-land] lands it,
\\[tandem-compare-test-output] shows its test's output, \\[tandem-compare-run-test] runs the \
test again, \\[tandem-compare-refresh] refreshes."
  (setq tabulated-list-format
        ;; 76 columns before the answer: a row reads in an 80-column terminal.
        [("Result" 10 t) ("Provider" 16 t) ("Mode" 9 t) ("State" 9 t)
         ("Files" 5 t :right-align t) ("+/−" 9 nil :right-align t) ("Test" 10 t)
         ("Answer" 0 nil)]
        tabulated-list-padding 1)
  (add-hook 'kill-buffer-hook #'tandem-compare--stop nil t)
  (tabulated-list-init-header))

;; `tandem-best-of' and `tandem-compare' make compare buffers: M-x does not offer it.
(function-put 'tandem-compare-mode 'completion-predicate #'ignore)

(defun tandem-compare--test-cell (test)
  "The Test column for TEST (a `parallel/test' result plist, or nil)."
  (cond ((null test) "—")
        ((equal (plist-get test :state) "running") "running…")
        ((eq (plist-get test :timed-out) t) "timed out")
        ((eql (plist-get test :exit-status) 0) "passed")
        (t (format "failed (%s)" (plist-get test :exit-status)))))

(defun tandem-compare--first-line (text)
  "The first non-empty line of TEXT, or \"\"."
  (or (cl-find-if (lambda (l) (not (string-blank-p l))) (split-string (or text "") "\n"))
      ""))

(defun tandem-compare--entry (run)
  "The `tabulated-list-entries' row of RUN (one result of `parallel/compare')."
  (let ((state (plist-get run :state)))
    (list (plist-get run :session)
          (vector (plist-get run :name)
                  (let ((p (plist-get run :provider))) (if (member p '(nil "")) "default" p))
                  (or (plist-get run :permission-mode) "")
                  (if (equal state "ended") (or (plist-get run :outcome) "ended") state)
                  (number-to-string (or (plist-get run :files) 0))
                  (format "+%d −%d" (or (plist-get run :additions) 0)
                          (or (plist-get run :deletions) 0))
                  (tandem-compare--test-cell (plist-get run :test))
                  (tandem-compare--first-line (plist-get run :answer))))))

(defun tandem-compare--running-p (reply)
  "Return non-nil when a result of REPLY is still in its turn or its test."
  (cl-some (lambda (run) (member (plist-get run :state) '("running" "testing")))
           (plist-get reply :runs)))

(defun tandem-compare--stop ()
  "Cancel this compare view's refresh timer."
  (when (timerp tandem-compare--timer) (cancel-timer tandem-compare--timer))
  (setq tandem-compare--timer nil))

(defun tandem-compare--render (reply)
  "Show REPLY (a `parallel/compare' reply) in this buffer; point stays on its row."
  (setq tandem-compare--reply reply
        tabulated-list-entries (mapcar #'tandem-compare--entry (plist-get reply :runs)))
  (tabulated-list-print t)
  (tandem-compare--stop)
  (when (tandem-compare--running-p reply)
    (let ((buffer (current-buffer)))
      (setq tandem-compare--timer
            (run-with-timer tandem-compare-refresh-seconds nil
                            (lambda ()
                              (when (buffer-live-p buffer)
                                (with-current-buffer buffer
                                  (setq tandem-compare--timer nil)
                                  (ignore-errors (tandem-compare-refresh))))))))))

;;;###autoload
(defun tandem-compare (group)
  "Show best-of-N GROUP's results side by side; return the buffer."
  (let* ((reply (tandem-request "parallel/compare" (list :group group) 60))
         (buffer (get-buffer-create (format "*tandem-compare: %s*" group))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'tandem-compare-mode) (tandem-compare-mode))
      (setq tandem-compare--group group)
      (tandem-compare--render reply))
    (pop-to-buffer buffer)
    (message "tandem: %s — RET shows a result, l lands it, t its test output, g refreshes"
             (truncate-string-to-width (replace-regexp-in-string "\n" " " (plist-get reply :text))
                                       50 nil nil "…"))
    buffer))

(defun tandem-compare-refresh ()
  "Fetch the results again."
  (interactive nil tandem-compare-mode)
  (tandem-compare--render (tandem-request "parallel/compare"
                                          (list :group tandem-compare--group) 60)))

(defun tandem-compare--run ()
  "The result at point (a plist of the latest reply), or a user error."
  (let ((session (tabulated-list-get-id)))
    (or (cl-find session (plist-get tandem-compare--reply :runs)
                 :key (lambda (r) (plist-get r :session)) :test #'equal)
        (user-error "No result on this line"))))

(defun tandem-compare-show ()
  "Show the result at point: its answer's first lines, its test, its patch.
The patch is in `diff-mode'."
  (interactive nil tandem-compare-mode)
  (let* ((run (tandem-compare--run))
         (reply (tandem-request "parallel/patch" (list :session (plist-get run :session)) 120))
         (buffer (get-buffer-create (format "*tandem-result: %s*" (plist-get run :name))))
         (answer (seq-take (split-string (or (plist-get run :answer) "") "\n") 8))
         (test (plist-get run :test)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "# %s: %s (%s), %s\n" (plist-get run :name)
                        (aref (cadr (tandem-compare--entry run)) 1)
                        (plist-get run :permission-mode)
                        (aref (cadr (tandem-compare--entry run)) 3)))
        (dolist (line answer) (insert "# > " line "\n"))
        (insert (format "# test: %s%s\n" (tandem-compare--test-cell test)
                        (if test (format " in %ss, output in %s" (plist-get test :seconds)
                                         (plist-get test :log))
                          "")))
        (insert (or (plist-get (plist-get reply :patch) :diff) "")))
      (diff-mode)
      (setq default-directory (file-name-as-directory (plist-get reply :root)))
      (setq buffer-read-only t)
      (goto-char (point-min)))
    (display-buffer buffer)
    buffer))

(defun tandem-compare-land ()
  "Land the result at point: its parallel session's landing review.
That is `tandem-land' of its session."
  (interactive nil tandem-compare-mode)
  (tandem-land (plist-get (tandem-compare--run) :session)))

(defun tandem-compare-test-output ()
  "Show the whole output of the test of the result at point."
  (interactive nil tandem-compare-mode)
  (let ((log (plist-get (plist-get (tandem-compare--run) :test) :log)))
    (unless (and log (not (string-empty-p log)) (file-readable-p log))
      (user-error "No test output for this result"))
    (view-file-other-window log)))

(defun tandem-compare-run-test ()
  "Run the project's test command again in the tree of the result at point."
  (interactive nil tandem-compare-mode)
  (let* ((run (tandem-compare--run))
         (command (or (tandem-parallel-test-command (plist-get tandem-compare--reply :project))
                      (user-error "No test command for this project (see `tandem-test-commands')")))
         (result (tandem-request "parallel/test"
                                 (list :session (plist-get run :session)
                                       :command (vector shell-file-name shell-command-switch
                                                        command)
                                       :timeout tandem-test-timeout)
                                 (+ 30 tandem-test-timeout))))
    (message "tandem: %s: %s" (plist-get run :name) (tandem-compare--test-cell result))
    result))

(provide 'tandem-parallel)
;;; tandem-parallel.el ends here
