;;; tandem-setup.el --- placeholder  -*- lexical-binding: t; -*-
;;; Commentary:
;;; Code:
(provide 'tandem-setup)
;;; tandem-setup.el ends here
