;;; monorepo_review.el --- Opening the review of a 10k-line patch  -*- lexical-binding: t; -*-

;;; Commentary:
;; Run by bench/bench_monorepo.py in batch Emacs (`bench-monorepo-review-main'),
;; not by bench/run.py (no bench_ prefix): it needs that script's store.  The
;; environment names it: BENCH_REVIEW_HOME (the TANDEM_HOME holding the
;; session), BENCH_REVIEW_SESSION, BENCH_REVIEW_TURN (a turn whose patch is
;; 10,000 lines) and BENCH_REVIEW_SCRATCH (a folder for the anchor's file).
;;
;;   monorepo_review_open_10k_lines  `tandem-review-turn' against a real
;;                                   backend: request, reply read, insert,
;;                                   `diff-mode' (anchor: `find-file' of the
;;                                   same patch text as a .diff file)
;;   monorepo_turn_patch_request     the `sessions/turn-patch' request alone
;;
;; Batch Emacs has no redisplay: fontification (jit-lock) is not counted,
;; in either figure.  The package is byte-compiled first, as installed.

;;; Code:

(require 'cl-lib)
(require 'json)
(defvar bench-mr-root (expand-file-name ".." (file-name-directory load-file-name))
  "The tandem checkout.")

(defvar bench-mr-elc
  (let ((dir (make-temp-file "bench-review-elc-" t))
        (names (cl-loop for f in (directory-files (expand-file-name "elisp" bench-mr-root) t
                                                  "\\`tandem.*\\.el\\'")
                        unless (equal (file-name-nondirectory f) "tandem-client.el")
                        collect (file-name-base f))))
    (dolist (name names)
      (copy-file (expand-file-name (concat "elisp/" name ".el") bench-mr-root)
                 (expand-file-name (concat name ".el") dir)))
    ;; In a child Emacs, as bench_view.el does: `require' must load the .elc.
    (unless (zerop (apply #'call-process "emacs" nil nil nil "-Q" "--batch" "-L" dir
                          "-L" (expand-file-name "elisp" bench-mr-root)
                          "-f" "batch-byte-compile"
                          (mapcar (lambda (n) (expand-file-name (concat n ".el") dir)) names)))
      (error "Could not byte-compile the package for the benchmark"))
    (push dir load-path)
    dir)
  "Scratch directory holding the compiled package.")

(require 'tandem-client)
(require 'tandem-review)

(defun bench-mr-emit (name value anchor anchor-value target &rest extra)
  "Print figure NAME (VALUE ms) beside ANCHOR (ANCHOR-VALUE) and TARGET; EXTRA pairs."
  (princ (concat (json-encode `((bench . ,name) (value . ,(/ (fround (* value 10)) 10.0))
                                (unit . "ms") (anchor . ,anchor)
                                (anchor_value . ,(/ (fround (* anchor-value 10)) 10.0))
                                (target . ,target) ,@extra))
                 "\n")))

(defun bench-mr-median (samples)
  "Return the median of SAMPLES."
  (nth (/ (length samples) 2) (sort (copy-sequence samples) #'<)))

(defun bench-mr-ms (fn)
  "Return the milliseconds FN takes (after a garbage collection)."
  (garbage-collect)
  (let ((t0 (float-time))) (funcall fn) (* 1000 (- (float-time) t0))))

(defun bench-monorepo-review-main ()
  "Time the review of the turn the environment names, beside `find-file'."
  (let* ((tandem-home (getenv "BENCH_REVIEW_HOME"))
         (session (getenv "BENCH_REVIEW_SESSION"))
         (turn (string-to-number (getenv "BENCH_REVIEW_TURN")))
         (file (expand-file-name "review-anchor.diff" (getenv "BENCH_REVIEW_SCRATCH")))
         (tandem-log-events nil)
         ours anchor request lines gcs)
    (unwind-protect
        (progn
          (tandem-start)
          (dotimes (_ 7)
            (let (buffer (g0 gc-elapsed))
              (push (bench-mr-ms (lambda ()
                                   (setq g0 gc-elapsed)
                                   (setq buffer (tandem-review-turn session turn t))))
                    ours)
              (push (* 1000 (- gc-elapsed g0)) gcs)
              (with-current-buffer buffer
                (setq lines (count-lines (point-min) (point-max)))
                (write-region (point-min) (point-max) file nil 'silent))
              (kill-buffer buffer)))
          (dotimes (_ 7)
            (push (bench-mr-ms (lambda () (tandem-request "sessions/turn-patch"
                                                          (list :session session :turn turn)
                                                          120)))
                  request))
          (dotimes (_ 7)
            (let (buffer)
              (push (bench-mr-ms (lambda () (setq buffer (find-file-noselect file)))) anchor)
              (cl-assert (eq (buffer-local-value 'major-mode buffer) 'diff-mode))
              (kill-buffer buffer)))
          (bench-mr-emit "monorepo_review_open_10k_lines" (bench-mr-median ours)
                         "find-file of the same patch (.diff, diff-mode)"
                         (bench-mr-median anchor) 200
                         `(lines . ,lines) `(gc_ms . ,(bench-mr-median gcs)))
          (bench-mr-emit "monorepo_turn_patch_request" (bench-mr-median request)
                         "monorepo_review_open_10k_lines" (bench-mr-median ours) nil))
      (tandem-stop)
      (delete-directory bench-mr-elc t))))

(provide 'monorepo_review)
;;; monorepo_review.el ends here
