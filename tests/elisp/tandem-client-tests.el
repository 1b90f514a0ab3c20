;;; tandem-client-tests.el --- The client against a real backend  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs drives a real `tandem serve' process: authentication,
;; calls, errors, events, concurrency, paging and recovery after kill -9.

;;; Code:

(require 'tandem-test-helpers)

(defun tandem-test--raw-call (port message)
  "Open a fresh socket to PORT, send MESSAGE, return (REPLY . CLOSED-P).
REPLY is the first frame read back; CLOSED-P says the backend hung up."
  (let* ((bytes "") (closed nil)
         (proc (make-network-process
                :name "tandem-raw" :host "127.0.0.1" :service port :coding 'binary
                :filter (lambda (_p s) (setq bytes (concat bytes s)))
                :sentinel (lambda (_p _e) (setq closed t)))))
    (unwind-protect
        (progn
          (process-send-string proc (tandem--frame message))
          (tandem-test-wait-until
           (lambda () (and (>= (length bytes) 6)
                           (>= (length bytes) (+ 6 (string-to-number (substring bytes 0 6) 16))))))
          (tandem-test-wait-until (lambda () closed) 5)
          (cons (car (read-from-string (decode-coding-string (substring bytes 6) 'utf-8)))
                closed))
      (delete-process proc))))

(ert-deftest tandem-client-hello-right-token ()
  "The right token authenticates; `hello' describes the backend."
  (tandem-test-with-backend
    (let ((info (oref tandem--connection info)))
      (should (equal (plist-get info :home) (expand-file-name tandem-home)))
      (should (integerp (plist-get info :pid)))
      (should (member "ping" (plist-get info :methods))))
    (should (equal (tandem-request "ping") "pong"))))

(ert-deftest tandem-client-hello-wrong-token ()
  "A wrong token gets an auth error and the connection is closed."
  (tandem-test-with-backend
    (let ((reply (tandem-test--raw-call (oref tandem--connection port)
                                        '(call 1 hello ((:token "wrong"))))))
      (should (eq (car (car reply)) 'return-error))
      (should (equal (plist-get (nth 2 (car reply)) :code) "auth"))
      (should (cdr reply)))
    (should (equal (tandem-request "ping") "pong"))))

(ert-deftest tandem-client-missing-token ()
  "A hello without a token, or any call first, is refused and closed."
  (tandem-test-with-backend
    (let ((port (oref tandem--connection port)))
      (dolist (message '((call 1 hello nil) (call 1 ping nil)))
        (let ((reply (tandem-test--raw-call port message)))
          (should (eq (car (car reply)) 'return-error))
          (should (equal (plist-get (nth 2 (car reply)) :code) "auth"))
          (should (string-match-p "Not authenticated" (plist-get (nth 2 (car reply)) :message)))
          (should (cdr reply)))))))

(ert-deftest tandem-client-call-roundtrip ()
  "Values survive the round trip: strings with quotes, newlines, non-ASCII."
  (tandem-test-with-backend
    (let ((value (list 1 -2 1.5 "é\"\\\n\tx" t nil '(:nested-key "v") '("a" "b"))))
      (should (equal (tandem-request "debug/echo" (list :value value)) value)))
    (should (equal (tandem-request "debug/echo" (list :value [1 2 3])) '(1 2 3)))))

(ert-deftest tandem-client-structured-error ()
  "Errors arrive as `tandem-error' with a readable message and a code."
  (tandem-test-with-backend
    (let ((err (should-error (tandem-request "no/such-method") :type 'tandem-error)))
      (should (equal (tandem-error-code err) "no-such-method"))
      (should (equal (error-message-string err) "tandem: \"No such method: no/such-method\"")))
    (let ((err (should-error (tandem-request "debug/big" '(:size "many")) :type 'tandem-error)))
      (should (equal (tandem-error-code err) "invalid"))
      (should (string-match-p "debug/big: size: Input should be a valid integer"
                              (tandem-error-message err))))
    (let ((err (should-error (tandem-request "debug/big" '(:unknown 1)) :type 'tandem-error)))
      (should (string-match-p "unknown: Extra inputs are not permitted" (tandem-error-message err))))
    (let ((err (should-error (tandem-request "debug/sleep" '(:seconds 3) 0.3) :type 'tandem-error)))
      (should (equal (tandem-error-code err) "timeout")))
    ;; The backend survived every one of them.
    (should (equal (tandem-request "ping") "pong"))))

(ert-deftest tandem-client-event-push ()
  "Events arrive batched, numbered without gaps, deltas merged."
  (tandem-test-with-backend
    (let ((events nil) (gaps nil) (batches 0))
      (add-hook 'tandem-event-functions (lambda (e) (push e events)))
      (add-hook 'tandem-event-gap-functions (lambda (&rest g) (push g gaps)))
      (advice-add 'tandem--on-events :before (lambda (&rest _) (cl-incf batches))
                  '((name . tandem-test-count)))
      (unwind-protect
          (progn
            (should (= (tandem-request "debug/emit" '(:session "s1" :count 500 :kind "entry")) 500))
            (tandem-test-wait-until (lambda () (= (length events) 500)))
            (should (equal (mapcar (lambda (e) (plist-get e :seq)) (reverse events))
                           (number-sequence 1 500)))
            (should (< batches 50))
            (should-not gaps)
            ;; Deltas of one turn and stream merge into few events.
            (setq events nil)
            (tandem-request "debug/emit" '(:session "s2" :count 1000 :text "ab"))
            (tandem-test-wait-until
             (lambda () (= 2000 (apply #'+ (mapcar (lambda (e) (length (plist-get e :text))) events)))))
            (should (< (length events) 100)))
        (advice-remove 'tandem--on-events 'tandem-test-count)))))

(ert-deftest tandem-client-callback-into-emacs ()
  "A handler may call back into Emacs while Emacs waits for it (no deadlock)."
  (tandem-test-with-backend
    (should (equal (tandem-request "debug/call-emacs" '(:method "echo" :args (1 "two")))
                   '(1 "two")))))

(ert-deftest tandem-client-concurrent-large-replies ()
  "Sixteen concurrent 2 MB replies arrive intact, none interleaved."
  (tandem-test-with-backend
    (let ((results (make-hash-table)) (size (* 2 1024 1024)))
      (dotimes (i 16)
        (tandem-request-async "debug/big" (list :size (+ size i))
                              (lambda (v) (puthash i v results))
                              (lambda (e) (puthash i e results))))
      (tandem-test-wait-until (lambda () (= (hash-table-count results) 16)) 60)
      (let ((expected (tandem-request "debug/big" (list :size (+ size 15)))))
        (dotimes (i 16)
          (let ((v (gethash i results)))
            (should (stringp v))
            (should (= (length v) (+ size i)))
            (should (string= v (substring expected 0 (+ size i))))))))))

(ert-deftest tandem-client-roundtrip-garbage ()
  "A 100 KB round trip makes no more strings than the reply and its value.
Each further 100 KB of garbage brings the next full collection closer:
at three or four per call one comes every other call or so, and the
median round trip triples.  Larger and non-ASCII frames still arrive
intact (a string copy above `tandem--read-copy-min', an encoding pass)."
  (tandem-test-with-backend
    (let ((s (make-string 100000 ?x)))
      (tandem-request "debug/echo" (list :value s))
      (let ((before (nth 4 (memory-use-counts))))
        (dotimes (_ 10) (should (equal (tandem-request "debug/echo" (list :value s)) s)))
        ;; The text read from the socket and the value read from it: 2 x 100 KB.
        (should (< (/ (- (nth 4 (memory-use-counts)) before) 10) 250000))))
    (dolist (s (list (make-string (* 3 tandem--read-copy-min) ?y)
                     (concat (make-string 100000 ?z) "é\"\\ü")
                     (concat (make-string (* 2 tandem--read-copy-min) ?w) "é")))
      (should (equal (tandem-request "debug/echo" (list :value s)) s)))))

(ert-deftest tandem-client-paged-result ()
  "A 20 MiB result is delivered by paging; no frame nears the EPC limit."
  (tandem-test-with-backend
    (let* ((size (* 20 1024 1024))
           (frames nil)
           (orig (symbol-function 'tandem--dispatch)))
      (cl-letf (((symbol-function 'tandem--dispatch)
                 (lambda (conn message)
                   (when (and (eq (car message) 'return) (stringp (nth 2 message)))
                     (push (length (nth 2 message)) frames))
                   (funcall orig conn message))))
        (let ((value (tandem-request "debug/big" (list :size size) 120)))
          (should (= (length value) size))
          (should (string-prefix-p "0123456789abcdef" value))
          (should (> (length frames) 8))
          (should (<= (apply #'max frames) (* 4 1024 1024))))))))

(ert-deftest tandem-client-recovers-after-kill ()
  "After kill -9 pending calls fail at once and the next call restarts."
  (tandem-test-with-backend
    (let ((pid (tandem-backend-pid)) (failed nil))
      (tandem-request-async "debug/sleep" '(:seconds 30) #'ignore
                            (lambda (e) (setq failed e)))
      (signal-process pid 9)
      (let ((t0 (float-time)))
        (tandem-test-wait-until (lambda () failed) 5)
        (should (< (- (float-time) t0) 5)))
      (should (equal (car failed) "backend-died"))
      (should (string-match-p "backend died" (nth 1 failed)))
      (should (equal (tandem-request "ping") "pong"))
      (should-not (equal (tandem-backend-pid) pid)))))

(ert-deftest tandem-client-sync-call-fails-fast-on-death ()
  "A synchronous call in flight fails at once when the backend dies."
  (tandem-test-with-backend
    (let ((pid (tandem-backend-pid)))
      (run-at-time 0.3 nil (lambda () (signal-process pid 9)))
      (let* ((t0 (float-time))
             (err (should-error (tandem-request "debug/sleep" '(:seconds 20) 30)
                                :type 'tandem-error)))
        (should (equal (tandem-error-code err) "backend-died"))
        (should (< (- (float-time) t0) 5))))))

(ert-deftest tandem-client-doctor ()
  "`tandem-doctor' shows the backend's report."
  (tandem-test-with-backend
    (let ((report (tandem-doctor)))
      (should (string-match-p "python package pydantic" (plist-get report :text)))
      (should (get-buffer "*tandem-doctor*")))))

(ert-deftest tandem-client-log-hides-secrets ()
  "The events buffer never shows a token or a key."
  (let ((tandem-log-events t))
    (when (get-buffer "*tandem-events*") (kill-buffer "*tandem-events*"))
    (tandem-test-with-backend
      (tandem-request "debug/echo" '(:value (:api-key "sk-very-secret" :other 1)))
      ;; The log is printed when it is read.
      (with-current-buffer (tandem-events-buffer)
        (should (string-match-p ":api-key \"\\*\\*\\*\"" (buffer-string)))
        (should-not (string-match-p "sk-very-secret" (buffer-string)))
        (should-not (string-match-p (oref tandem--connection token) (buffer-string)))))))

(provide 'tandem-client-tests)
;;; tandem-client-tests.el ends here
