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
(require 'diff-mode)
(require 'tandem-client)
(require 'tandem-core)
(require 'tandem-turns)
(require 'tandem-read)
(require 'tandem-review)
(require 'tandem-sessions)
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
    (message "tandem: parallel session %s in %s%s" name (plist-get record :worktree)
             (if (plist-get reply :carried)
                 (format " (carried over %d files)" (length (plist-get reply :carried)))
               ""))
    (run-hook-with-args 'tandem-parallel-created-functions reply)
    (tandem-view-show (tandem-request "sessions/open-file"
                                      (list :path (plist-get reply :path)
                                            :cwd (plist-get record :worktree))))
    reply))

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
                    (plist-get reply :name) (plist-get reply :root) (plist-get reply :project))
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
        (land-buffer (current-buffer)))
    (tandem-land--check-buffers project paths)
    (let ((reply (tandem-request "parallel/land" (append (list :session session) params) 300)))
      (unless (equal (plist-get reply :outcome) "succeeded")
        (user-error "Landing %s failed: %s" what (plist-get reply :error)))
      (tandem-revert-stale-buffers project)
      (when (buffer-live-p land-buffer)
        (with-current-buffer land-buffer (tandem-land-reload)))
      (let* ((conflicts (plist-get reply :conflicts))
             (buffers (tandem-land--conflicts project conflicts)))
        (message "tandem: landed %s as turn %s of the project's session%s%s" what
                 (plist-get reply :turn)
                 (if conflicts (format "; conflicts in %s (smerge-mode)"
                                       (string-join conflicts ", "))
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
                   (format "worktree %s and branch %s" (plist-get record :worktree)
                           (plist-get record :branch))
                 (format "copy %s" (plist-get record :worktree)))))
    (when (or force (funcall tandem-parallel-confirm-function
                             (format "Remove %s (the session's journal is kept)? " what)))
      (let ((done (condition-case err
                      (tandem-request "parallel/remove" (list :session session :force force))
                    (tandem-conflict
                     (when (funcall tandem-parallel-confirm-function
                                    (concat (tandem-error-message err) " "))
                       (tandem-request "parallel/remove" (list :session session :force t)))))))
        (when done (message "tandem: removed %s" what))
        done))))

(provide 'tandem-parallel)
;;; tandem-parallel.el ends here
