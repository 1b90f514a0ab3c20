;;; bench_transport.el --- Transport figures beside the epc.el anchor  -*- lexical-binding: t; -*-

;;; Commentary:
;; Run by bench/run.py in batch Emacs.  Prints one JSON line per figure:
;; tandem's own client and server, and beside each the stock epc.el
;; `epc:call-sync' against a stock python-epc server, in the same run.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'tandem-client)

(defvar bench-root (expand-file-name ".." (file-name-directory load-file-name))
  "The tandem checkout.")

(defun bench-emit (name value unit anchor anchor-value target &optional note)
  "Print one figure NAME as a JSON line."
  (princ (concat (json-encode `((bench . ,name) (value . ,value) (unit . ,unit)
                                (anchor . ,anchor) (anchor_value . ,anchor-value)
                                (target . ,target) ,@(and note `((note . ,note)))))
                 "\n")))

(defun bench-time (fn)
  "Return the milliseconds FN takes."
  (let ((t0 (float-time))) (funcall fn) (* 1000 (- (float-time) t0))))

(defun bench-percentile (samples p)
  "Return the P-th percentile of SAMPLES."
  (let ((sorted (sort (copy-sequence samples) #'<)))
    (nth (min (1- (length sorted)) (floor (* p (length sorted)))) sorted)))

(defun bench-median (fn runs)
  "Median milliseconds of RUNS calls of FN."
  (bench-percentile (cl-loop repeat runs collect (bench-time fn)) 0.5))

(defun bench-round (x) "Round X to 3 decimals." (/ (fround (* x 1000)) 1000.0))

;;;; The anchor: stock epc.el and python-epc

(defvar bench-epc nil "The epc.el manager of the anchor server.")
(defvar bench-epc-events 0 "Events the anchor pushed and Emacs applied.")

(defun bench-start-anchor ()
  "Start the python-epc anchor server under stock epc.el."
  (require 'epc)
  (setq bench-epc (epc:start-epc (expand-file-name ".venv/bin/python" bench-root)
                                 (list (expand-file-name "bench/epc_anchor_server.py" bench-root))))
  (epc:define-method bench-epc 'bench-event
                     (lambda (&rest _) (setq bench-epc-events (1+ bench-epc-events)) nil)))

(defun bench-anchor-call (method args)
  "Call METHOD with ARGS on the anchor with `epc:call-sync'."
  (epc:call-sync bench-epc method args))

;;;; Figures

(defun bench-small-call ()
  "Small call latency: p50 and p99."
  (let* ((ours (cl-loop repeat 500 collect (bench-time (lambda () (tandem-request "ping")))))
         (anchor (cl-loop repeat 15 collect (bench-time (lambda () (bench-anchor-call 'echo '(1))))))
         (tuned (let ((epc:accept-process-timeout 1))
                  (cl-loop repeat 100 collect (bench-time (lambda () (bench-anchor-call 'echo '(1))))))))
    (bench-emit "small_call_p50" (bench-round (bench-percentile ours 0.5)) "ms"
                "epc.el call-sync, defaults" (bench-round (bench-percentile anchor 0.5)) 1)
    (bench-emit "small_call_p99" (bench-round (bench-percentile ours 0.99)) "ms"
                "epc.el call-sync, defaults" (bench-round (bench-percentile anchor 0.99)) nil)
    (bench-emit "small_call_p50_vs_tuned" (bench-round (bench-percentile ours 0.5)) "ms"
                "epc.el call-sync, 1 ms accept timeout" (bench-round (bench-percentile tuned 0.5)) 1)))

(defun bench-string-roundtrip ()
  "A 100 KB string sent and returned."
  (let ((s (make-string 100000 ?x)))
    (bench-emit "string_100kb_roundtrip"
                (bench-round (bench-median (lambda () (tandem-request "debug/echo" (list :value s))) 30))
                "ms" "epc.el call-sync, 1 ms accept timeout"
                (let ((epc:accept-process-timeout 1))
                  (bench-round (bench-median (lambda () (bench-anchor-call 'echo (list s))) 10)))
                5)))

(defun bench-list-reply ()
  "A reply of 10k elements: file names (strings) and small plists."
  (let ((epc:accept-process-timeout 1))
    (bench-emit "list_10k_plists_reply"
                (bench-round (bench-median (lambda () (tandem-request "debug/big" '(:items 10000))) 15))
                "ms" "epc.el call-sync (python-epc, sexpdata), 1 ms accept timeout"
                (bench-round (bench-median (lambda () (bench-anchor-call 'items '(10000))) 5))
                20 "10k plists (:i N :name \"item-N\" :ok t)")
    ;; The same with a raised `gc-cons-threshold', as many users configure:
    ;; most of the difference is one collection set off by reading the reply.
    (let ((gc-cons-threshold (* 100 1024 1024)))
      (bench-emit "list_10k_plists_reply_gc_100mb"
                  (bench-round (bench-median (lambda () (tandem-request "debug/big" '(:items 10000)))
                                             15))
                  "ms" "epc.el call-sync (python-epc, sexpdata), 1 ms accept timeout"
                  (bench-round (bench-median (lambda () (bench-anchor-call 'items '(10000))) 5))
                  20 "gc-cons-threshold 100 MB for both"))))

(defun bench-events ()
  "10k streamed events delivered and applied in Emacs."
  (let* ((applied 0)
         (tandem-event-functions (list (lambda (e) (when (plist-get e :seq) (cl-incf applied)))))
         (ours (bench-time
                (lambda ()
                  (tandem-request "debug/emit" '(:session "bench" :count 10000 :kind "entry"))
                  (while (< applied 10000) (accept-process-output nil 0.01)))))
         (anchor (let ((epc:accept-process-timeout 1))
                   (setq bench-epc-events 0)
                   (bench-time
                    (lambda ()
                      (bench-anchor-call 'emit '(10000))
                      (let ((deadline (+ (float-time) 120)))
                        (while (and (< bench-epc-events 10000) (< (float-time) deadline))
                          (accept-process-output nil 0.01))))))))
    (bench-emit "events_10k_applied" (bench-round ours) "ms"
                "python-epc one call per event into epc.el" (bench-round anchor) 1000
                (format "anchor applied %d of 10000" bench-epc-events))))

(defun bench-transport-main ()
  "Run every transport figure."
  (let ((tandem-log-events nil)
        (tandem-home (make-temp-file "tandem-bench-" t)))
    (tandem-start)
    ;; The backend answers `hello' before it builds its services (in a thread):
    ;; a call that needs them waits until they are built, so the figures below
    ;; are of a backend at rest, not of one still importing beside them.
    (tandem-request "sessions/list" (list :cwd tandem-home))
    (bench-start-anchor)
    (unwind-protect
        (progn (bench-small-call)
               (bench-string-roundtrip)
               (bench-list-reply)
               (bench-events))
      (epc:stop-epc bench-epc)
      (tandem-stop)
      (delete-directory tandem-home t))))

(provide 'bench_transport)
;;; bench_transport.el ends here
