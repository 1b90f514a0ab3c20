;;; tandem-events-tests.el --- Event delivery into real Emacs  -*- lexical-binding: t; -*-

;;; Commentary:
;; Real batch Emacs and a real `tandem serve': a 20 MiB burst of deltas
;; arrives in several bounded batches, in order, `turn-ended' included.

;;; Code:

(require 'tandem-test-helpers)

(ert-deftest tandem-events-20-mib-burst-arrives-in-pieces ()
  "20 MiB of deltas arrive whole, in several calls, followed by `turn-ended'."
  (tandem-test-with-backend
    (let ((chars 0) (ended nil) (gaps nil) (batches 0) (seqs nil)
          (gc-cons-threshold (* 64 1024 1024)))
      (add-hook 'tandem-event-functions
                (lambda (e)
                  (push (plist-get e :seq) seqs)
                  (pcase (plist-get e :kind)
                    ("delta" (cl-incf chars (length (plist-get e :text))))
                    ("turn-ended" (setq ended t)))))
      (add-hook 'tandem-event-gap-functions (lambda (&rest g) (push g gaps)))
      (advice-add 'tandem--on-events :before (lambda (&rest _) (cl-incf batches))
                  '((name . tandem-test-burst)))
      (unwind-protect
          (progn
            (should (= (tandem-request "debug/emit"
                                       (list :session "burst" :count (* 20 1024)
                                             :text (make-string 1024 ?x)))
                       (* 20 1024)))
            (tandem-request "debug/emit" '(:session "burst" :count 1 :kind "turn-ended"))
            (tandem-test-wait-until (lambda () ended) 120)
            (should (= chars (* 20 1024 1024)))
            (should (> batches 4))
            (should (equal (reverse seqs) (number-sequence 1 (length seqs))))
            (should-not gaps))
        (advice-remove 'tandem--on-events 'tandem-test-burst)))))

;; A batch Emacs fails to apply (here: the first one signals) is a lost
;; batch: the next one starts with a `resync' event whose seq jumps, so
;; the gap hook runs and the view refetches the journal.
(ert-deftest tandem-events-failed-batch-runs-the-gap-hook ()
  "A batch whose call fails in Emacs is followed by a resync that shows the gap."
  (tandem-test-with-backend
    (let ((kinds nil) (gaps nil) (failed nil))
      (add-hook 'tandem-event-functions (lambda (e) (push (plist-get e :kind) kinds)))
      (add-hook 'tandem-event-gap-functions (lambda (&rest g) (push g gaps)))
      (advice-add 'tandem--on-events :around
                  (lambda (orig &rest args)
                    (if failed (apply orig args)
                      (setq failed t)
                      (error "Emacs could not apply the batch")))
                  '((name . tandem-test-fail-once)))
      (unwind-protect
          (progn
            (tandem-request "debug/emit" '(:session "g" :count 1 :kind "turn-ended"))
            (tandem-test-wait-until (lambda () gaps) 30)
            (should (equal (car gaps) '("g" 1 2)))
            (should (member "resync" kinds)))
        (advice-remove 'tandem--on-events 'tandem-test-fail-once)))))

(provide 'tandem-events-tests)
;;; tandem-events-tests.el ends here
