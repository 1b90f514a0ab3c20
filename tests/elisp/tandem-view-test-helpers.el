;;; tandem-view-test-helpers.el --- Fixtures for the session buffer tests  -*- lexical-binding: t; -*-

;;; Commentary:
;; A real backend, a real fake OpenAI-compatible server (tests/fakes) run
;; as a process with a scripted conversation, a temporary project, and a
;; session buffer on it.  Also used by bench/bench_view.el.

;;; Code:

(require 'cl-lib)
(require 'tandem-test-helpers)
(require 'tandem-view)
(require 'json)

(defconst tandem-view-test--root
  (file-name-directory (directory-file-name (file-name-directory
                                             (directory-file-name
                                              (file-name-directory
                                               (or load-file-name buffer-file-name))))))
  "The tandem checkout.")

(defun tandem-view-test-start-fake (script)
  "Start the fake OpenAI server with SCRIPT (a JSON string or a Lisp value).
A Lisp SCRIPT is encoded with `json-encode': use (:steps [(:reply ...) ...]).
Return (PROCESS . BASE-URL)."
  (let* ((file (make-temp-file "tandem-script-" nil ".json"
                               (if (stringp script) script (json-encode script))))
         (port nil) (out "")
         (proc (make-process
                :name "tandem-fake-openai" :noquery t :connection-type 'pipe
                :command (list (tandem--python)
                               (expand-file-name "tests/fakes/openai_server.py"
                                                 tandem-view-test--root)
                               "--port" "0" "--script" file)
                :stderr (get-buffer-create " *tandem-fake-stderr*")
                :filter (lambda (_p s)
                          (setq out (concat out s))
                          (when (and (not port) (string-match "\\`\\([0-9]+\\)\n" out))
                            (setq port (match-string 1 out)))))))
    (tandem-test-wait-until (lambda () (or port (not (process-live-p proc)))) 20)
    (unless port
      (ert-fail (format "fake server did not start: %s"
                        (with-current-buffer " *tandem-fake-stderr*" (buffer-string)))))
    (cons proc (format "http://127.0.0.1:%s/v1" port))))

(defvar tandem-view-test-title "view test"
  "Title of the sessions `tandem-view-test-with-session' makes (nil: untitled).")

(defmacro tandem-view-test-with-session (script &rest body)
  "Run BODY in a fresh session buffer against the fake server playing SCRIPT.
The backend reaches the fake through OPENAI_BASE_URL and uses the
provider \"openai:fake-model\" in permission mode ask.  Binds `project'
\(the project directory) and `fake' (the server process); the session
buffer is current during BODY."
  (declare (indent 1) (debug t))
  `(let* ((fake (tandem-view-test-start-fake ,script))
          (project (make-temp-file "tandem-view-project-" t))
          (process-environment (cons (concat "OPENAI_BASE_URL=" (cdr fake))
                                     process-environment))
          (tandem-provider "openai:fake-model")
          (tandem-permission-mode 'ask)
          (tandem-provider-hosts nil))
     (unwind-protect
         (tandem-test-with-backend
           (let ((info (tandem-request "sessions/new"
                                       (append (list :cwd project)
                                               (and tandem-view-test-title
                                                    (list :title tandem-view-test-title))))))
             (with-current-buffer (tandem-view-show info) ,@body)))
       (delete-process (car fake))
       (dolist (b (buffer-list))
         (when (string-prefix-p "*tandem: " (buffer-name b)) (kill-buffer b)))
       (delete-directory project t))))

(defun tandem-view-test-wait-turn (turn &optional timeout)
  "Wait at most TIMEOUT seconds until TURN ended and is on screen."
  (let ((buffer (current-buffer)))
    (tandem-test-wait-until
     (lambda ()
       (with-current-buffer buffer
         (let ((b (gethash turn (tandem-view-state-by-turn tandem-view--state))))
           (and b (tandem-view-block-end-entry b) (not (tandem-view-state-running tandem-view--state))
                (not (tandem-view-state-dirty tandem-view--state))))))
     (or timeout 20))))

(defun tandem-view-test-send (text)
  "Type TEXT in the composer and send it with the send key; return the turn.
The send key returns at once; this waits for the backend's reply, draws
the turn, and signals the send's failure as the send key would have had
it waited (the draft is back in the composer by then)."
  (goto-char (point-max))
  (insert text)
  (tandem-view-test-press-send))

(defun tandem-view-test-press-send ()
  "Press the send key, wait for the send, return the turn or signal its failure.
A send key that queues (a turn runs) returns what it returned."
  (let ((sending (tandem-view-sending-p))
        (result (funcall (key-binding (kbd "C-c C-c")))))
    (if (or sending (not (tandem-view-sending-p)))
        (tandem-view-test--send-outcome result)
      (tandem-test-wait-until (lambda () (not (tandem-view-sending-p))) 60)
      (tandem-view-flush)
      (tandem-view-test--send-outcome result))))

(defun tandem-view-test--send-outcome (result)
  "The turn of the last send, or signal its failure; else RESULT."
  (pcase tandem-view-last-send
    (`(turn . ,turn) (setq tandem-view-last-send nil) turn)
    (`(error . ,err) (setq tandem-view-last-send nil) (signal (car err) (cdr err)))
    (_ result)))

(defun tandem-view-test-text ()
  "Return the buffer's text without properties."
  (buffer-substring-no-properties (point-min) (point-max)))

;;;; Journals written ahead of time

(defun tandem-view-test--json-entry (seq entry)
  "Return ENTRY (a plist with snake_case keys) as a journal line with SEQ."
  (concat (json-encode (append (list :seq seq :ts (format-time-string "%FT%T.%3NZ" nil t))
                               entry))
          "\n"))

(defun tandem-view-test-chat-turn (turn &optional text)
  "Return the entries of a settled chat TURN, answering TEXT."
  (list (list :type "turn_start" :turn turn :origin "chat" :provider "openai:fake-model"
              :model "fake-model")
        (list :type "user" :turn turn :text (format "Question number %d?" turn))
        (list :type "assistant" :turn turn
              :text (or text (format "Answer **%d**, with `code`:\n\n```python\ndef f():\n    return %d\n```\n"
                                     turn turn)))
        (list :type "turn_end" :turn turn :outcome "succeeded")))

(defun tandem-view-test-session-with (cwd entries &optional title)
  "Create a session TITLE in CWD with ENTRIES in its journal; return its info.
The session is created by the backend, closed, extended on disk with
ENTRIES (plists with snake_case keys, seq and ts added here) and opened
again through `sessions/open-file', so the backend reads what we wrote."
  (let* ((info (tandem-request "sessions/new" (list :cwd cwd :title (or title "written"))))
         (path (plist-get info :path))
         (seq 0))
    (tandem-request "sessions/close" (list :session (plist-get info :id)))
    (with-temp-buffer
      (dolist (e entries)
        (insert (tandem-view-test--json-entry (cl-incf seq) e)))
      (let ((coding-system-for-write 'utf-8-unix))
        (write-region (point-min) (point-max) path t 'silent)))
    (tandem-request "sessions/open-file" (list :path path :cwd cwd))))

;;;; A long Markdown answer

(defun tandem-view-test-markdown-answer (size)
  "Return a Markdown answer of about SIZE characters, with code blocks.
Sections of prose (bold, italic, inline code, lists) alternate with
fenced Python blocks; one block in three is longer than a segment
\(`tandem-view-segments-max'), and some fences use tildes."
  (let ((parts (list "Intro **bold** start, then sections.\n\n")) (n 0) (total 0))
    (while (< total size)
      (cl-incf n)
      (let ((part
             (concat
              (format "## Section %d\n\n" n)
              (mapconcat (lambda (i) (format "Line %d of section %d has **bold %d**, *italic*, and `code_%d` in it." i n i i))
                         (number-sequence 1 6) " ")
              "\n\n- first item\n- second **item**\n\n"
              (if (= 0 (% n 4)) "~~~python\n" "```python\n")
              (mapconcat (lambda (i) (format "def f_%d_%d(x):\n    return x + %d  # note\n" n i i))
                         (number-sequence 1 (if (= 0 (% n 3)) 120 6)) "")
              (if (= 0 (% n 4)) "~~~\n\n" "```\n\n")
              (format "After the code of section %d, **more** prose.\n\n" n))))
        (push part parts)
        (cl-incf total (length part))))
    (push "The end, `done`." parts)
    (apply #'concat (nreverse parts))))

(provide 'tandem-view-test-helpers)
;;; tandem-view-test-helpers.el ends here
