;;; bench_reply.el --- Where the 10k-element reply's time goes  -*- lexical-binding: t; -*-

;;; Commentary:
;; Run by bench/run.py in batch Emacs (`bench-reply-main').  Splits the
;; 10k-element reply into its parts, each timed in the
;; same run, every line against the 20 ms target:
;;
;;   reply_10k_roundtrip        `tandem-request' "debug/big" end to end
;;   reply_10k_build_encode     the backend building and encoding it (Python,
;;                              `bench/reply_payload.py', the server's encoder)
;;   reply_10k_read_no_gc       Emacs `read' of the payload, GC held off
;;   reply_10k_read             the same at the default `gc-cons-threshold'
;;   reply_10k_gc               GC time (`gc-elapsed' delta) per round trip
;;   reply_10k_client_rest      round trip minus encode and read: framing,
;;                              the socket, waiting, the client's dispatch
;;   (anchors of the read lines: `json-parse-string' of the same data as
;;   JSON, the wire change one might try)
;;   reply_10k_gc_one           one explicit collection of this heap (what a
;;                              GC costs whatever the reply: it marks the heap)
;;   reply_1k_page_roundtrip    one page of 1,000 elements (a paged reply)

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'tandem-client)

(defvar bench-reply-root (expand-file-name ".." (file-name-directory load-file-name))
  "The tandem checkout.")

(defconst bench-reply-items 10000 "Elements in the reply.")

(defun bench-reply-emit (name value anchor anchor-value &optional note)
  "Print figure NAME (VALUE ms) beside ANCHOR (ANCHOR-VALUE) and NOTE."
  (princ (concat (json-encode `((bench . ,name) (value . ,(/ (fround (* value 1000)) 1000.0))
                                (unit . "ms") (anchor . ,anchor)
                                (anchor_value . ,(if (floatp anchor-value)
                                                     (/ (fround (* anchor-value 1000)) 1000.0)
                                                   anchor-value))
                                (target . 20)
                                ,@(and note `((note . ,note)))))
                 "\n")))

(defun bench-reply-median (xs)
  "Return the median of XS."
  (nth (/ (length xs) 2) (sort (copy-sequence xs) #'<)))

(defun bench-reply-measure (fn count)
  "Time FN, called COUNT times; return the medians (MS GC-MS COLLECTIONS)."
  (let (ms gc n)
    (dotimes (_ count)
      (let ((t0 (float-time)) (g0 gc-elapsed) (c0 gcs-done))
        (funcall fn)
        (push (* 1000 (- (float-time) t0)) ms)
        (push (* 1000 (- gc-elapsed g0)) gc)
        (push (- gcs-done c0) n)))
    (list (bench-reply-median ms) (bench-reply-median gc) (bench-reply-median n))))

(defun bench-reply-encode (sexp-file json-file)
  "Write both payloads to SEXP-FILE and JSON-FILE; return the Python timings."
  (with-temp-buffer
    (let ((process-environment
           (cons (concat "PYTHONPATH=" (expand-file-name "python" bench-reply-root))
                 process-environment)))
      (unless (zerop (call-process (expand-file-name ".venv/bin/python" bench-reply-root) nil t nil
                                   (expand-file-name "bench/reply_payload.py" bench-reply-root)
                                   (number-to-string bench-reply-items) sexp-file json-file))
        (error "Script reply_payload.py failed: %s" (buffer-string))))
    (goto-char (point-min))
    (json-parse-buffer :object-type 'plist)))

(defun bench-reply-file (file)
  "Return FILE's text as a multibyte string, as the client decodes it."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8)) (insert-file-contents file))
    (buffer-string)))

(defun bench-reply-main ()
  "Time each part of the 10k-element reply against a fresh backend."
  (let* ((tandem-log-events nil)
         (tandem-home (make-temp-file "tandem-bench-reply-" t))
         (sexp-file (expand-file-name "reply.sexp" tandem-home))
         (json-file (expand-file-name "reply.json" tandem-home))
         (py (bench-reply-encode sexp-file json-file))
         (encode (+ (plist-get py :build_ms) (plist-get py :encode_ms)))
         (sexp (bench-reply-file sexp-file))
         (json (bench-reply-file json-file)))
    (tandem-start)
    (unwind-protect
        (let* ((args (list :items bench-reply-items))
               (_warm (tandem-request "debug/big" args))
               (rtt (bench-reply-measure (lambda () (tandem-request "debug/big" args)) 15))
               (read-gc (bench-reply-measure (lambda () (read sexp)) 15))
               (read-no-gc (let ((gc-cons-threshold most-positive-fixnum))
                             (prog1 (bench-reply-measure (lambda () (read sexp)) 15)
                               (garbage-collect))))
               (jp (lambda () (json-parse-string json :object-type 'plist
                                                 :false-object nil)))
               (json-gc (bench-reply-measure jp 15))
               (json-no-gc (let ((gc-cons-threshold most-positive-fixnum))
                             (prog1 (bench-reply-measure jp 15) (garbage-collect))))
               (gc-one (bench-reply-measure #'garbage-collect 9))
               (consed (let ((before (apply #'+ (memory-use-counts))))
                         (read sexp)
                         (- (apply #'+ (memory-use-counts)) before)))
               (page (bench-reply-measure
                      (lambda () (tandem-request "debug/big" (list :items 1000))) 31))
               (note (format "%d bytes sexp, %d bytes JSON; gc-cons-threshold %d"
                             (string-bytes sexp) (string-bytes json) gc-cons-threshold)))
          (cl-assert (equal (read sexp) (tandem-request "debug/big" args)))
          (bench-reply-emit "reply_10k_roundtrip" (nth 0 rtt) "target" 20 note)
          (bench-reply-emit "reply_10k_build_encode" encode "json.dumps of the same list"
                            (plist-get py :json_encode_ms)
                            (format "build %.1f ms + sexp encode %.1f ms (Python, in process)"
                                    (plist-get py :build_ms) (plist-get py :encode_ms)))
          (bench-reply-emit "reply_10k_read_no_gc" (nth 0 read-no-gc)
                            "json-parse-string, GC held off" (nth 0 json-no-gc))
          (bench-reply-emit "reply_10k_read" (nth 0 read-gc)
                            "json-parse-string" (nth 0 json-gc)
                            (format "GC in it %.1f ms, %d collections (json: %.1f ms, %d)"
                                    (nth 1 read-gc) (nth 2 read-gc) (nth 1 json-gc) (nth 2 json-gc)))
          (bench-reply-emit "reply_10k_gc" (nth 1 rtt) "collections per round trip" (nth 2 rtt))
          (bench-reply-emit "reply_10k_gc_one" (nth 0 gc-one) "memory-use-counts allocated by one read (conses, strings, chars)"
                            consed)
          (bench-reply-emit "reply_1k_page_roundtrip" (nth 0 page) "10k in one reply" (nth 0 rtt)
                            (format "GC %.1f ms median, 10 pages = the 10k" (nth 1 page)))
          (bench-reply-emit "reply_10k_client_rest" (max 0 (- (nth 0 rtt) encode (nth 0 read-gc)))
                            "round trip" (nth 0 rtt)
                            "round trip - (build+encode) - read with GC"))
      (tandem-stop)
      (delete-directory tandem-home t))))

(provide 'bench_reply)
;;; bench_reply.el ends here
