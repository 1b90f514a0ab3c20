;;; tandem-require-graph-tests.el --- The elisp require graph is one-way  -*- lexical-binding: t; -*-

;;; Commentary:
;; Reads every `(require 'FEATURE)' form in elisp/*.el -- at top level or
;; inside a function -- keeps those naming another file of elisp/, and
;; fails on any cycle, e.g. a file that requires a file that requires it
;; back.  A test of the test writes such a pair to a scratch directory.

;;; Code:

(require 'ert)
(require 'cl-lib)

(defconst tandem-require-graph-test--elisp
  (expand-file-name "../../elisp" (file-name-directory (or load-file-name buffer-file-name)))
  "The elisp directory of this checkout.")

(defun tandem-require-graph-test--required (form)
  "Return the features FORM requires, at any depth: (require \\='X ...)."
  (let ((out nil))
    (cl-labels ((walk (f)
                  (when (consp f)
                    (when (and (eq (car f) 'require) (consp (cdr f))
                               (eq (car-safe (cadr f)) 'quote) (symbolp (cadr (cadr f))))
                      (push (cadr (cadr f)) out))
                    ;; Dotted lists and vectors hold no requires worth finding.
                    (while (consp f)
                      (walk (car f))
                      (setq f (cdr f))))))
      (walk form))
    out))

(defun tandem-require-graph-test--file-requires (file)
  "Return the features FILE requires anywhere in its forms."
  (with-temp-buffer
    (insert-file-contents file)
    (goto-char (point-min))
    (let ((out nil))
      (condition-case nil
          (while t (setq out (append (tandem-require-graph-test--required (read (current-buffer)))
                                     out)))
        (end-of-file nil))
      (delete-dups out))))

(defun tandem-require-graph-test-graph (dir)
  "Return the require graph of DIR: alist (FEATURE . FEATURES IT REQUIRES).
A file FOO.el is the feature FOO; only features of DIR's files count."
  (let* ((files (directory-files dir t "\\`[^.].*\\.el\\'"))
         (features (mapcar (lambda (f) (intern (file-name-base f))) files)))
    (cl-mapcar (lambda (file feature)
                 (cons feature (cl-remove-if-not (lambda (r) (and (memq r features)
                                                                  (not (eq r feature))))
                                                 (tandem-require-graph-test--file-requires file))))
               files features)))

(defun tandem-require-graph-test-cycles (graph)
  "Return the cycles of GRAPH, each a list (A B ... A), or nil."
  (let ((state (make-hash-table)) (cycles nil))
    (cl-labels ((visit (node path)
                  (pcase (gethash node state)
                    ('done nil)
                    ('active (push (reverse (cons node (cl-subseq path 0 (1+ (cl-position node path)))))
                                   cycles))
                    (_ (puthash node 'active state)
                       (dolist (next (cdr (assq node graph)))
                         (visit next (cons node path)))
                       (puthash node 'done state)))))
      (dolist (entry graph) (visit (car entry) nil)))
    cycles))

(ert-deftest tandem-require-graph-has-no-cycle ()
  "No elisp file requires, directly or through others, a file that requires it."
  (let ((graph (tandem-require-graph-test-graph tandem-require-graph-test--elisp)))
    ;; The reader found the graph: tandem.el at the top requires the parts.
    (should (memq 'tandem-view (cdr (assq 'tandem graph))))
    (should (memq 'tandem-core (cdr (assq 'tandem-client graph))))
    (should-not (tandem-require-graph-test-cycles graph))
    ;; Nothing requires the top.
    (should-not (cl-find-if (lambda (entry) (memq 'tandem (cdr entry))) graph))))

(ert-deftest tandem-require-graph-test-finds-cycles ()
  "The check reports a pair requiring each other, and a longer loop, from real files."
  (let ((dir (make-temp-file "tandem-require-graph-" t)))
    (unwind-protect
        (cl-flet ((write (name &rest requires)
                    (with-temp-file (expand-file-name (concat name ".el") dir)
                      (insert ";;; " name ".el --- scratch  -*- lexical-binding: t; -*-\n")
                      (dolist (r requires)
                        (insert (format "(defun %s-f () (require '%s))\n" name r)))
                      (insert (format "(provide '%s)\n" name)))))
          (write "a" "b" "cl-lib")
          (write "b")
          (should-not (tandem-require-graph-test-cycles (tandem-require-graph-test-graph dir)))
          ;; b requires a back, inside a function: a cycle all the same.
          (write "b" "a")
          (should (equal (tandem-require-graph-test-cycles (tandem-require-graph-test-graph dir))
                         '((a b a))))
          (write "b" "c")
          (write "c" "a")
          (should (equal (tandem-require-graph-test-cycles (tandem-require-graph-test-graph dir))
                         '((a b c a)))))
      (delete-directory dir t))))

(provide 'tandem-require-graph-tests)
;;; tandem-require-graph-tests.el ends here
