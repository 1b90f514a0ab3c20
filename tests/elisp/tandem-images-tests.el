;;; tandem-images-tests.el --- Images in a request, from the composer to the model  -*- lexical-binding: t; -*-

;;; Commentary:
;; C-c C-a attaches a PNG (a tiny valid one written by the test); the
;; composer shows it; C-c C-c sends it through the real backend to the
;; fake OpenAI server, whose recorded request carries it as an image_url
;; part with the PNG's base64; the session buffer shows the named
;; placeholder (batch Emacs is terminal-like: no thumbnail).  A file that
;; is not an image is refused at C-c C-a; a request the backend refuses
;; keeps the draft and the attachment.

;;; Code:

(require 'tandem-view-test-helpers)
(require 'url)
(require 'json)

(defconst tandem-images-test--png
  (base64-decode-string
   "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
  "A valid 1x1 PNG.")

(defconst tandem-images-test--script
  '(:steps [(:reply (:text "A single pixel."))])
  "One plain answer.")

(defun tandem-images-test--write-png (dir name)
  "Write the test PNG as NAME in DIR; return its file name."
  (let ((file (expand-file-name name dir))
        (coding-system-for-write 'binary))
    (with-temp-file file
      (set-buffer-multibyte nil)
      (insert tandem-images-test--png))
    file))

(defun tandem-images-test--attach (file)
  "Run the key C-c C-a with FILE as the answer of its file prompt."
  (cl-letf (((symbol-function 'read-file-name) (lambda (&rest _) file)))
    (funcall (key-binding (kbd "C-c C-a")))))

(defun tandem-images-test--requests (base-url)
  "Return the chat requests the fake server at BASE-URL (…/v1) received, as alists."
  (let* ((url (concat (string-remove-suffix "/v1" base-url) "/_fake/requests"))
         (buffer (url-retrieve-synchronously url t t 10)))
    (unwind-protect
        (with-current-buffer buffer
          (goto-char (point-min))
          (re-search-forward "\r?\n\r?\n")
          (let ((json-object-type 'alist) (json-array-type 'list))
            (cl-remove-if-not (lambda (r) (equal (alist-get 'method r) "POST"))
                              (json-read))))
      (kill-buffer buffer))))

(ert-deftest tandem-images-attach-send-and-show ()
  "C-c C-a attaches a PNG; the turn carries it to the fake server; the view names it."
  (tandem-view-test-with-session tandem-images-test--script
    (let* ((file (tandem-images-test--write-png project "dot.png"))
           (label (format "[image: dot.png %s]"
                          (tandem-composer-size-label (length tandem-images-test--png)))))
      (tandem-images-test--attach file)
      (should (equal (mapcar (lambda (a) (plist-get a :type)) tandem-composer-attachments)
                     '("image/png")))
      ;; Shown in the composer before sending.
      (should (string-match-p (regexp-quote (concat "attached: " label))
                              (tandem-view-test-text)))
      (let ((turn (tandem-view-test-send "What is this?")))
        (tandem-view-test-wait-turn turn 30))
      (should-not tandem-composer-attachments)
      (should-not (string-match-p "attached: " (tandem-view-test-text)))
      ;; The request carries the image as an image_url part with the PNG's base64.
      (let* ((body (alist-get 'body (car (tandem-images-test--requests (cdr fake)))))
             (user (car (last (cl-remove-if-not
                               (lambda (m) (equal (alist-get 'role m) "user"))
                               (alist-get 'messages body)))))
             (parts (alist-get 'content user))
             (image (cl-find "image_url" parts :key (lambda (p) (alist-get 'type p))
                             :test #'equal)))
        (should (equal (alist-get 'text (car parts)) "What is this?"))
        (should (equal (alist-get 'url (alist-get 'image_url image))
                       (concat "data:image/png;base64,"
                               (base64-encode-string tandem-images-test--png t)))))
      ;; The session buffer shows the named placeholder under the request.
      (let ((text (tandem-view-test-text)))
        (should (string-match-p (concat "What is this\\?\n[^\n]*" (regexp-quote label)) text))
        (should (string-match-p "A single pixel" text)))
      ;; A graphical frame's thumbnail comes from the backend's image store, by digest.
      (let ((file (tandem-view-render--image-file
                   (secure-hash 'sha256 tandem-images-test--png))))
        (should (file-exists-p file))
        (should (equal (file-modes file) #o600))
        (should (equal (with-temp-buffer
                         (set-buffer-multibyte nil)
                         (insert-file-contents-literally file)
                         (buffer-string))
                       tandem-images-test--png)))
      ;; Re-rendered from the journal (g), the placeholder is still there.
      (goto-char (point-min))
      (funcall (key-binding (kbd "g")))
      (tandem-test-wait-until
       (lambda () (string-match-p (concat "What is this\\?\n[^\n]*" (regexp-quote label))
                                  (tandem-view-test-text)))))))

(ert-deftest tandem-images-refusals-keep-the-draft-and-the-attachment ()
  "A non-image is refused at C-c C-a; a request the backend refuses keeps everything."
  (tandem-view-test-with-session tandem-images-test--script
    (let ((text-file (expand-file-name "notes.png" project)))
      (with-temp-file text-file (insert "not an image\n"))
      (should-error (tandem-images-test--attach text-file) :type 'user-error)
      (should-not tandem-composer-attachments)
      ;; Attached while it was a PNG, then changed on disk: the backend checks again.
      (let ((file (tandem-images-test--write-png project "later.png")))
        (tandem-images-test--attach file)
        (with-temp-file file (insert "now text\n"))
        (goto-char (point-max))
        (insert "Look at this")
        (let ((err (should-error (tandem-view-test-press-send))))
          (should (string-match-p "later.png: it is not a PNG, JPEG, GIF or WebP"
                                  (error-message-string err))))
        (should (equal (tandem-composer-draft) "Look at this"))
        (should (= 1 (length tandem-composer-attachments)))
        (should-not (tandem-images-test--requests (cdr fake)))
        ;; C-u C-c C-a removes it.
        (let ((current-prefix-arg '(4)))
          (call-interactively (key-binding (kbd "C-c C-a"))))
        (should-not tandem-composer-attachments)))))

(ert-deftest tandem-images-clipboard-by-key-and-by-yank ()
  "In a graphical frame the clipboard's image is attached by C-c C-a and by yank."
  (with-temp-buffer
    (tandem-composer-setup)
    (let ((map (make-sparse-keymap)))
      (set-keymap-parent map tandem-composer-mode-map)
      (use-local-map map))
    (cl-letf (((symbol-function 'display-graphic-p) (lambda (&rest _) t))
              ((symbol-function 'gui-get-selection)
               (lambda (_where type) (and (eq type 'image/png) tandem-images-test--png)))
              ((symbol-function 'y-or-n-p) (lambda (&rest _) t)))
      (funcall (key-binding (kbd "C-c C-a")))
      (should (equal (plist-get (car tandem-composer-attachments) :data)
                     (base64-encode-string tandem-images-test--png t)))
      (call-interactively (key-binding (kbd "C-y")))
      (should (= 2 (length tandem-composer-attachments)))
      (should (string-match-p "attached: \\[image: clipboard.png 1 KB\\] \\[image: clipboard.png"
                              (buffer-string))))
    ;; Text on the clipboard: yank yanks.
    (cl-letf (((symbol-function 'display-graphic-p) (lambda (&rest _) t))
              ((symbol-function 'gui-get-selection) (lambda (&rest _) "some text")))
      (kill-new "some text")
      (goto-char (point-max))
      (call-interactively (key-binding (kbd "C-y")))
      (should (equal (tandem-composer-draft) "some text"))
      (should (= 2 (length tandem-composer-attachments))))))

(ert-deftest tandem-images-placeholder-sizes ()
  "The placeholder names the image and its size in KB or MB."
  (should (equal (tandem-composer-image-label "a.png" 122880) "[image: a.png 120 KB]"))
  (should (equal (tandem-composer-image-label "b.jpg" (* 3 1024 1024)) "[image: b.jpg 3.0 MB]"))
  (should (equal (tandem-composer-image-type tandem-images-test--png) "image/png"))
  (should-not (tandem-composer-image-type "hello")))

(provide 'tandem-images-tests)
;;; tandem-images-tests.el ends here
