;;; tandem-sessions-tests.el --- Seed 001 rows through the Emacs commands  -*- lexical-binding: t; -*-

;;; Commentary:
;; Each test starts a real backend on a fresh TANDEM_HOME and a fresh
;; XDG_CONFIG_HOME (user settings {"model": "user-model"}), makes real project
;; directories with their own .tandem/settings.json, and drives the commands.
;; Answers to the relocation question are injected at the prompt seam
;; `tandem-sessions-prompt-function'.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'tandem-test-helpers)
(require 'tandem-sessions)
(require 'tandem-turns)

(defvar tandem-sessions-test--dirs nil
  "Directories made by the tests, removed at exit.")

(add-hook 'kill-emacs-hook
          (lambda () (dolist (d tandem-sessions-test--dirs) (ignore-errors (delete-directory d t)))))

(defun tandem-sessions-test--dir (&optional model)
  "A fresh project directory (truename, no slash); with MODEL, its settings."
  (let ((dir (directory-file-name (file-truename (make-temp-file "tandem-proj-" t)))))
    (push dir tandem-sessions-test--dirs)
    (when model
      (make-directory (expand-file-name ".tandem" dir))
      (with-temp-file (expand-file-name ".tandem/settings.json" dir)
        (insert (json-encode `((model . ,model))))))
    dir))

(defmacro tandem-sessions-test--with-backend (&rest body)
  "Run BODY against a fresh backend with its own user settings."
  (declare (indent 0) (debug t))
  `(let* ((config (make-temp-file "tandem-config-" t))
          (process-environment (cons (concat "XDG_CONFIG_HOME=" config) process-environment))
          (tandem-sessions-current nil)
          (tandem-sessions-prompt-function
           (lambda (p) (ert-fail (format "unexpected question: %s" p)))))
     (push config tandem-sessions-test--dirs)
     (make-directory (expand-file-name "tandem" config))
     (with-temp-file (expand-file-name "tandem/settings.json" config)
       (insert "{\"model\": \"user-model\", \"theme\": \"dark\"}"))
     (tandem-test-with-backend ,@body)))

(defun tandem-sessions-test--session (dir &optional title)
  "Create a session in DIR titled TITLE, with an artifact file; close it.
Return the backend's reply."
  (let* ((info (tandem-request "sessions/new" (list :cwd dir :title (or title "work"))))
         (art (file-name-sans-extension (plist-get info :path))))
    (make-directory art t)
    (with-temp-file (expand-file-name "blob.txt" art) (insert "artifact"))
    (tandem-request "sessions/close" (list :session (plist-get info :id)))
    info))

(defun tandem-sessions-test--bytes (file)
  "FILE's contents as a unibyte string."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert-file-contents-literally file)
    (buffer-string)))

(defun tandem-sessions-test--header (file)
  "The header object of journal FILE (an alist)."
  (with-temp-buffer
    (insert-file-contents file)
    (goto-char (point-min))
    (json-parse-string (buffer-substring (point) (line-end-position)) :object-type 'alist)))

(defun tandem-sessions-test--gone (&optional model-b)
  "A session in a project that is then deleted, and a launch project.
Return (INFO OLD-DIR NEW-DIR BYTES); NEW-DIR has settings MODEL-B."
  (let* ((a (tandem-sessions-test--dir "a-model"))
         (b (tandem-sessions-test--dir (or model-b "b-model")))
         (info (tandem-sessions-test--session a))
         (bytes (tandem-sessions-test--bytes (plist-get info :path))))
    (delete-directory a t)
    (list info a b bytes)))

(defun tandem-sessions-test--assert-relocated (reply info old new)
  "REPLY moved session INFO from OLD into NEW, same identity."
  (let ((path (plist-get reply :path)))
    (should (equal (plist-get reply :id) (plist-get info :id)))
    (should (eq (plist-get reply :relocated) t))
    (should (equal (plist-get reply :cwd) new))
    (should (equal (plist-get reply :active-cwd) new))
    (should (equal (plist-get reply :previous-files) (list (plist-get info :path))))
    (should-not (equal path (plist-get info :path)))
    (should (equal (file-name-nondirectory path) (file-name-nondirectory (plist-get info :path))))
    (should (file-exists-p path))
    (should-not (file-exists-p (plist-get info :path)))
    (should (equal (alist-get 'cwd (tandem-sessions-test--header path)) new))
    (should (file-exists-p (expand-file-name "blob.txt" (file-name-sans-extension path))))
    (should (equal (plist-get (plist-get reply :settings) :model) "b-model"))
    (ignore old)))

(ert-deftest tandem-sessions-resume-id-cwd-exists ()
  "Row 1: resume by id prefix adopts the recorded project and its settings."
  (tandem-sessions-test--with-backend
    (let* ((a (tandem-sessions-test--dir "a-model"))
           (b (tandem-sessions-test--dir "b-model"))
           (info (tandem-sessions-test--session a))
           (default-directory (file-name-as-directory b))
           (reply (tandem-resume (substring (plist-get info :id) 0 10))))
      (should (equal (plist-get reply :id) (plist-get info :id)))
      (should (equal (plist-get reply :path) (plist-get info :path)))
      (should (equal (plist-get reply :active-cwd) a))
      (should-not (plist-get reply :relocated))
      (should (equal (plist-get (plist-get reply :settings) :model) "a-model"))
      (should (equal (plist-get (plist-get reply :settings) :theme) "dark"))
      (should (eq tandem-sessions-current reply)))))

(ert-deftest tandem-sessions-resume-id-cwd-gone-yes ()
  "Row 2: a typed yes re-roots the same session into the launch directory."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info a b _bytes) (tandem-sessions-test--gone)
      (let* ((asked nil)
             (tandem-sessions-prompt-function (lambda (p) (push p asked) "y"))
             (default-directory (file-name-as-directory b))
             (reply (tandem-resume (plist-get info :id))))
        (should (equal asked
                       (list (format "Session's directory no longer exists (%s). Move (re-root) it into the current directory? [Y/n] " a))))
        (tandem-sessions-test--assert-relocated reply info a b)))))

(ert-deftest tandem-sessions-resume-id-cwd-gone-empty-answer ()
  "Row 2: an empty answer is the default, yes."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info a b _bytes) (tandem-sessions-test--gone)
      (let* ((tandem-sessions-prompt-function (lambda (_p) ""))
             (default-directory (file-name-as-directory b))
             (reply (tandem-resume (substring (plist-get info :id) 0 12))))
        (tandem-sessions-test--assert-relocated reply info a b)))))

(ert-deftest tandem-sessions-resume-id-cwd-gone-no ()
  "Row 3: No cancels with the exact message; nothing opens or moves."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info _a b bytes) (tandem-sessions-test--gone)
      (let* ((tandem-sessions-prompt-function (lambda (_p) "n"))
             (default-directory (file-name-as-directory b))
             (messages nil))
        (cl-letf* ((orig (symbol-function 'message))
                   ((symbol-function 'message)
                    (lambda (fmt &rest args)
                      (when fmt (push (apply #'format fmt args) messages))
                      (apply orig fmt args))))
          (should-not (tandem-resume (plist-get info :id))))
        (should (member "Resume cancelled: session was not moved." messages))
        (should-not tandem-sessions-current)
        (should-not (tandem-request "sessions/current"))
        (should (equal (tandem-sessions-test--bytes (plist-get info :path)) bytes))
        (should (file-exists-p (expand-file-name
                                "blob.txt" (file-name-sans-extension (plist-get info :path)))))))))

(ert-deftest tandem-sessions-resume-id-cwd-gone-batch-refuses ()
  "Row 4: in batch Emacs with no one to ask, fail with the interactive instruction."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info _a b bytes) (tandem-sessions-test--gone)
      (let ((tandem-sessions-prompt-function #'read-string)
            (default-directory (file-name-as-directory b)))
        (let ((err (should-error (tandem-resume (plist-get info :id)) :type 'user-error)))
          (should (string-match-p "interactively" (cadr err))))
        (should-not tandem-sessions-current)
        (should (equal (tandem-sessions-test--bytes (plist-get info :path)) bytes))
        ;; The backend refuses too when called without an answer.
        (let ((err (should-error (tandem-request "sessions/resume"
                                                 (list :query (plist-get info :id) :cwd b))
                                 :type 'tandem-error)))
          (should (equal (tandem-error-code err) "needs-terminal")))))))

(ert-deftest tandem-sessions-open-file-cwd-gone ()
  "Row 5: direct path opening never asks or moves; active cwd is the launch dir."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info a b bytes) (tandem-sessions-test--gone)
      (let* ((default-directory (file-name-as-directory b))
             (reply (tandem-open-session-file (plist-get info :path))))
        (should (equal (plist-get reply :id) (plist-get info :id)))
        (should (equal (plist-get reply :path) (plist-get info :path)))
        (should (equal (plist-get reply :cwd) a))
        (should (equal (plist-get reply :active-cwd) b))
        (should-not (plist-get reply :relocated))
        (should (equal (plist-get (plist-get reply :settings) :model) "b-model"))
        (should (equal (tandem-sessions-test--bytes (plist-get info :path)) bytes))))))

(ert-deftest tandem-sessions-switch-cwd-gone ()
  "Row 6: a runtime switch keeps the current active project."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info _a _b bytes) (tandem-sessions-test--gone)
      (let* ((x (tandem-sessions-test--dir "x-model"))
             (default-directory (file-name-as-directory x)))
        (should-error (tandem-switch-session (plist-get info :path)) :type 'user-error)
        ;; A new session in x is the running one (continue would re-root the lost one).
        (tandem-sessions--activated (tandem-request "sessions/new" (list :cwd x)))
        (let ((reply (tandem-switch-session (plist-get info :path))))
          (should (equal (plist-get reply :id) (plist-get info :id)))
          (should (equal (plist-get reply :path) (plist-get info :path)))
          (should (equal (plist-get reply :active-cwd) x))
          (should (equal (plist-get (plist-get reply :settings) :model) "x-model"))
          (should (equal (tandem-sessions-test--bytes (plist-get info :path)) bytes)))))))

(ert-deftest tandem-sessions-picker-cwd-gone ()
  "Row 7: choosing from the completion list is a direct open, not a move."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info a b bytes) (tandem-sessions-test--gone)
      (let* ((default-directory (file-name-as-directory b))
             (candidate nil)
             (reply
              (cl-letf (((symbol-function 'completing-read)
                         (lambda (_prompt table &rest _)
                           (setq candidate
                                 (cl-find-if (lambda (c) (string-match-p "directory gone" c))
                                             (all-completions "" table)))
                           candidate)))
                (call-interactively #'tandem-resume))))
        (should (string-prefix-p (substring (plist-get info :id) 0 13) candidate))
        (should (equal (plist-get reply :id) (plist-get info :id)))
        (should (equal (plist-get reply :path) (plist-get info :path)))
        (should (equal (plist-get reply :cwd) a))
        (should (equal (plist-get reply :active-cwd) b))
        (should-not (plist-get reply :relocated))
        (should (equal (tandem-sessions-test--bytes (plist-get info :path)) bytes))))))

(ert-deftest tandem-sessions-continue-source-gone ()
  "Row 8: continue re-roots the breadcrumb's session when this project has none."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info a b _bytes) (tandem-sessions-test--gone)
      (let* ((default-directory (file-name-as-directory b))
             (reply (tandem-continue)))
        (tandem-sessions-test--assert-relocated reply info a b)))))

(ert-deftest tandem-sessions-continue-prefers-destination ()
  "Row 9: this project's own history wins over the vanished project's session."
  (tandem-sessions-test--with-backend
    (let* ((b (tandem-sessions-test--dir "b-model"))
           (own (tandem-sessions-test--session b "own"))
           (a (tandem-sessions-test--dir "a-model"))
           (lost (tandem-sessions-test--session a "lost"))
           (bytes (tandem-sessions-test--bytes (plist-get lost :path))))
      (delete-directory a t)
      (let* ((default-directory (file-name-as-directory b))
             (reply (tandem-continue)))
        (should (equal (plist-get reply :id) (plist-get own :id)))
        (should-not (plist-get reply :relocated))
        (should (equal (tandem-sessions-test--bytes (plist-get lost :path)) bytes))))))

(ert-deftest tandem-sessions-list-buffer ()
  "The list shows sessions with a gone marker; RET opens the one at point."
  (tandem-sessions-test--with-backend
    (cl-destructuring-bind (info _a b _bytes) (tandem-sessions-test--gone)
      (let ((default-directory (file-name-as-directory b)))
        (with-current-buffer (tandem-sessions-list)
          (should (derived-mode-p 'tabulated-list-mode))
          (goto-char (point-min))
          (should (search-forward (substring (plist-get info :id) 0 13) nil t))
          (should (search-forward "(directory gone)" nil t))
          (beginning-of-line)
          (let ((reply (tandem-sessions-list-open)))
            (should (equal (plist-get reply :id) (plist-get info :id)))
            (should (equal (plist-get reply :active-cwd) b)))
          (kill-buffer))))))

(ert-deftest tandem-sessions-damaged-header-is-listed-not-hidden ()
  "A journal with a garbled header shows as damaged in the list and the picker.
The project's session for sending is never the damaged one."
  (tandem-sessions-test--with-backend
    (let* ((dir (tandem-sessions-test--dir))
           (info (tandem-sessions-test--session dir "soon damaged"))
           (path (plist-get info :path))
           (default-directory (file-name-as-directory dir)))
      (with-temp-buffer
        (insert-file-contents path)
        (goto-char (point-min))
        (delete-region (point) (line-end-position))
        (insert "{\"type\":\"header\",\"id\":")
        (write-region (point-min) (point-max) path nil 'silent))
      (let ((row (cl-find (plist-get info :id) (tandem-sessions--list)
                          :key (lambda (r) (plist-get r :id)) :test #'equal)))
        (should row)
        (should (string-match-p "damaged" (plist-get row :damaged)))
        (should (string-match-p "(damaged: " (tandem-sessions--candidate row))))
      (with-current-buffer (tandem-sessions-list)
        (goto-char (point-min))
        (should (search-forward (substring (plist-get info :id) 0 13) nil t))
        (should (search-forward "(damaged: " nil t))
        (kill-buffer))
      (should-not (equal (tandem-project-session dir) (plist-get info :id))))))

(ert-deftest tandem-sessions-unknown-id ()
  "An unknown id is a readable tandem-error."
  (tandem-sessions-test--with-backend
    (let ((default-directory (file-name-as-directory (tandem-sessions-test--dir))))
      (let ((err (should-error (tandem-resume "ffffffff") :type 'tandem-error)))
        (should (equal (tandem-error-code err) "not-found"))))))

(provide 'tandem-sessions-tests)
;;; tandem-sessions-tests.el ends here
