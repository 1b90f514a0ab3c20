;;; tandem-notify-tests.el --- Hearing when a session needs you  -*- lexical-binding: t; -*-

;;; Commentary:
;; The live tests drive a real `tandem serve' and the fake OpenAI server:
;; the model calls write_file in permission mode ask, so the turn really
;; waits on a permission question.  A test `tandem-notify-function'
;; records what would have been said.
;;
;; Focus in batch: the only frame is on the initial terminal, where
;; `frame-focus-state' says nil although no focus is ever reported.
;; tandem-notify.el treats that terminal (and a focus state of
;; `unknown') as "cannot tell": a buffer shown in a window there counts
;; as seen.  So "visible" in these tests means shown in the batch
;; frame's window, "hidden" means shown in no window.

;;; Code:

(require 'tandem-view-test-helpers)
(require 'tandem-notify)

(defconst tandem-notify-test--script
  '(:steps [(:reply (:text "Writing." :tool_calls [(:name "write_file"
                                                    :input (:path "a.txt" :content "x"))]))
            (:reply (:text "Refused, fine."))])
  "A turn whose write asks for permission, then ends.")

(defun tandem-notify-test--hide (buffer)
  "Show BUFFER in no window."
  (dolist (w (get-buffer-window-list buffer nil t))
    (set-window-buffer w (get-buffer-create "*tandem-notify-test-other*")))
  (should-not (get-buffer-window buffer t)))

(defun tandem-notify-test--wait-question ()
  "Wait until the current session buffer's turn waits; return the row."
  (tandem-test-wait-until
   (lambda () (and (plist-get (tandem-view-state-running tandem-view--state) :waiting)
                   (not (tandem-view-state-dirty tandem-view--state))
                   (next-single-property-change (point-min) 'tandem-interaction)))
   20))

(defmacro tandem-notify-test--recording (&rest body)
  "Run BODY with notifications recorded in `notes' (newest first)."
  (declare (indent 0) (debug t))
  `(let* ((notes nil)
          (tandem-notify-function (lambda (e) (push e notes))))
     ,@body))

;;;; Against the real backend

(ert-deftest tandem-notify-hidden-session-waiting ()
  "A hidden session that starts waiting tells the user once, with its buffer."
  (tandem-notify-test--recording
    (tandem-view-test-with-session tandem-notify-test--script
      (let ((buffer (current-buffer)) (tandem-notify-events '(waiting)))
        (tandem-notify-test--hide buffer)
        (let* ((turn (tandem-view-test-send "write a.txt"))
               (row (tandem-notify-test--wait-question)))
          (tandem-test-wait-until (lambda () notes) 5)
          (should (= (length notes) 1))
          (let ((note (car notes)))
            (should (eq (plist-get note :kind) 'waiting))
            (should (eq (plist-get note :buffer) buffer))
            (should (equal (plist-get note :session) (tandem-view-session-here)))
            (should (equal (plist-get note :title) "view test"))
            (should (equal (plist-get note :turn) turn))
            (should (equal (plist-get note :message) "Waits for you: Write a.txt"))
            (should (stringp (plist-get note :interaction-id)))
            ;; The same wait again (an event replayed) is not news.
            (tandem-notify-view-event
             (list :kind "interaction" :turn turn :title "Write a.txt"
                   :interaction-id (plist-get note :interaction-id)))
            (accept-process-output nil 0.2)
            (should (= (length notes) 1))
            ;; The command takes the user to the question.
            (with-current-buffer (get-buffer-create "*tandem-notify-test-other*")
              (should (eq (tandem-notify-visit) buffer)))
            (should (eq (window-buffer (selected-window)) buffer))
            (should (get-text-property (point) 'tandem-interaction)))
          (let ((tandem-view-reject-reason nil)) (tandem-view-answer-at row "reject"))
          (tandem-view-test-wait-turn turn)
          ;; Finished turns are off by default: the end said nothing.
          (accept-process-output nil 0.2)
          (should (= (length notes) 1)))))))

(ert-deftest tandem-notify-visible-session-is-quiet ()
  "A session shown in a window (focus unknown in batch) does not notify."
  (tandem-notify-test--recording
    (tandem-view-test-with-session tandem-notify-test--script
      (let ((buffer (current-buffer)) (tandem-notify-events '(waiting finished failed)))
        (set-window-buffer (selected-window) buffer)
        (should (tandem-notify-seen-p buffer))
        (let* ((turn (tandem-view-test-send "write a.txt"))
               (row (tandem-notify-test--wait-question)))
          (accept-process-output nil 0.3)
          (should-not notes)
          (let ((tandem-view-reject-reason nil)) (tandem-view-answer-at row "reject"))
          (tandem-view-test-wait-turn turn)
          (accept-process-output nil 0.3)
          (should-not notes))))))

(ert-deftest tandem-notify-hidden-session-finished ()
  "With `finished' on, a hidden session's turn end is told as well."
  (tandem-notify-test--recording
    (tandem-view-test-with-session tandem-notify-test--script
      (let ((buffer (current-buffer)) (tandem-notify-events '(waiting finished)))
        (tandem-notify-test--hide buffer)
        (let* ((turn (tandem-view-test-send "write a.txt"))
               (row (tandem-notify-test--wait-question)))
          (let ((tandem-view-reject-reason nil)) (tandem-view-answer-at row "reject"))
          (tandem-view-test-wait-turn turn)
          (tandem-test-wait-until (lambda () (= (length notes) 2)) 5)
          (should (equal (mapcar (lambda (n) (plist-get n :kind)) notes) '(finished waiting)))
          (let ((note (car notes)))
            (should (equal (plist-get note :turn) turn))
            (should (eq (plist-get note :buffer) buffer))
            (should (equal (plist-get note :message) (format "Turn %s finished" turn)))))))))

;;;; The decision, the default function, the command

(defmacro tandem-notify-test--in-session-buffer (&rest body)
  "Run BODY in a hidden buffer with a session state (no backend)."
  (declare (indent 0) (debug t))
  `(let ((buffer (generate-new-buffer "*tandem-notify-unit*")))
     (unwind-protect
         (with-current-buffer buffer
           (setq tandem-view--state
                 (tandem-view-state-create :session "s-1"
                                           :info (list :cwd "/tmp/proj/" :title nil)))
           ,@body)
       (kill-buffer buffer))))

(ert-deftest tandem-notify-failed-turn-and-rewound-turn ()
  "A failed turn says why; a turn number reused after a rewind is news again."
  (tandem-notify-test--recording
    (tandem-notify-test--in-session-buffer
      (let ((tandem-notify-events '(failed)))
        (tandem-notify-view-event '(:kind "turn-ended" :turn 3 :outcome "failed" :error "boom"))
        (tandem-notify-view-event '(:kind "turn-ended" :turn 3 :outcome "failed" :error "boom"))
        (tandem-notify-view-event '(:kind "turn-started" :turn 3))
        (tandem-notify-view-event '(:kind "turn-ended" :turn 3 :outcome "aborted" :error nil))
        ;; A success is `finished', not enabled here.
        (tandem-notify-view-event '(:kind "turn-ended" :turn 4 :outcome "succeeded"))
        (tandem-test-wait-until (lambda () (= (length notes) 2)) 2)
        (accept-process-output nil 0.1)
        (should (equal (mapcar (lambda (n) (plist-get n :message)) (reverse notes))
                       '("Turn 3 failed: boom" "Turn 3 was aborted")))
        (should (equal (plist-get (car notes) :title) "proj"))
        (should (equal (plist-get (car notes) :session) "s-1"))))))

(ert-deftest tandem-notify-bad-events-setting ()
  "A bad `tandem-notify-events' or `tandem-notify-function' is a clear error."
  (tandem-notify-test--in-session-buffer
    (let ((tandem-notify-events '(waiting done)))
      (should (equal (cadr (should-error (tandem-notify-view-event
                                          '(:kind "interaction" :turn 1 :interaction-id "i"))
                                         :type 'user-error))
                     "Option tandem-notify-events must be a list of waiting, finished, failed, not (waiting done)"))))
  (tandem-notify-test--in-session-buffer
    (let ((tandem-notify-function 'tandem-notify-test--no-such-function))
      (should (equal (cadr (should-error (tandem-notify-view-event
                                          '(:kind "interaction" :turn 1 :interaction-id "i"))
                                         :type 'user-error))
                     "Option tandem-notify-function is not a function: tandem-notify-test--no-such-function")))))

(ert-deftest tandem-notify-default-falls-back-to-echo-area ()
  "Neither D-Bus nor alert: the echo area says it, and names the visit key."
  (tandem-notify-test--in-session-buffer
    (let ((tandem-notify-dbus-check #'ignore)
          (tandem-notify-alert-check #'ignore)
          (event (list :kind 'waiting :title "proj" :message "Waits for you: Write a.txt"
                       :buffer (current-buffer))))
      (should (eq (tandem-notify-default event) 'echo))
      (with-current-buffer "*Messages*"
        (goto-char (point-max))
        (forward-line -1)
        (should (string-match-p
                 "\\`tandem: proj — Waits for you: Write a.txt (M-x tandem-notify-visit shows it)"
                 (buffer-substring (point) (point-max))))))))

(ert-deftest tandem-notify-default-real-checks-without-dbus-or-alert ()
  "The real checks: no dbusbind feature and no alert on the path give the echo area."
  (tandem-notify-test--in-session-buffer
    (let ((features (cl-set-difference features '(dbusbind alert)))
          (load-path (cl-remove-if (lambda (d) (or (file-exists-p (expand-file-name "alert.el" d))
                                                   (file-exists-p (expand-file-name "alert.elc" d))))
                                   load-path)))
      ;; The helpers quiet the checks for every test: put the real ones back.
      (let ((tandem-notify-dbus-check #'tandem-notify--dbus-p)
            (tandem-notify-alert-check #'tandem-notify--alert-p))
        (should-not (funcall tandem-notify-dbus-check))
        (should-not (funcall tandem-notify-alert-check))
        (should (eq (tandem-notify-default (list :kind 'finished :title "proj"
                                                 :message "Turn 1 finished"
                                                 :buffer (current-buffer)))
                    'echo))))))

(ert-deftest tandem-notify-default-failing-dbus-passes-on ()
  "D-Bus said there but no notification goes out: the next way is used."
  (if (and (featurep 'dbusbind) (tandem-notify--dbus-p))
      (ert-skip "A D-Bus session bus answers here: this test would show a real notification")
    (tandem-notify-test--in-session-buffer
      (let ((tandem-notify-dbus-check #'always)
            (tandem-notify-alert-check #'ignore)
            ;; dbus.el reports the missing bus through a (debug dbus-error)
            ;; handler and returns nil: under ERT's debug-on-error that
            ;; handler would call ERT's debugger, which fails the test.
            (debug-on-error nil))
        (should (eq (tandem-notify-default (list :kind 'waiting :title "proj" :message "m"
                                                 :buffer (current-buffer)))
                    'echo))))))

(ert-deftest tandem-notify-visit-errors ()
  "Visiting with no notification, or one whose buffer is gone, says so."
  (let ((tandem-notify--last nil))
    (should (equal (cadr (should-error (tandem-notify-visit) :type 'user-error))
                   "No tandem notification to visit")))
  (let* ((gone (generate-new-buffer "gone"))
         (tandem-notify--last (list :kind 'waiting :buffer gone)))
    (kill-buffer gone)
    (should (equal (cadr (should-error (tandem-notify-visit) :type 'user-error))
                   "The session buffer of that notification is gone"))))

(ert-deftest tandem-notify-seen-needs-a-window ()
  "A buffer in no window is not seen; shown in the batch frame's window it is."
  (let ((b (generate-new-buffer "seen")))
    (unwind-protect
        (progn
          (should-not (tandem-notify-seen-p b))
          (save-window-excursion
            (set-window-buffer (selected-window) b)
            ;; Batch: the initial terminal reports no focus: shown counts as seen.
            (should (tandem-notify--frame-focused-p (selected-frame)))
            (should (tandem-notify-seen-p b))))
      (kill-buffer b))))

(provide 'tandem-notify-tests)
;;; tandem-notify-tests.el ends here
