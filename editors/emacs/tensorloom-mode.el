;;; tensorloom-mode.el --- TensorLoom (.tl, .nml) with eglot and `tlc lsp' -*- lexical-binding: t; -*-

;; A major mode for TensorLoom scripts (.tl) and model files (.nml): highlighting,
;; `//' and `/* */' comments, four-space indents, and `tlc lsp' registered with eglot
;; (Emacs 29 ships eglot): diagnostics through Flymake, hover in ElDoc, go to definition,
;; completion, inlay hints (`eglot-inlay-hints-mode'), rename (`eglot-rename'), quick fixes
;; (`eglot-code-actions') and formatting (`eglot-format-buffer', `tlc fmt''s layout).
;;
;; Install: put this file on `load-path', then in init.el
;;   (require 'tensorloom-mode)
;;   (add-hook 'tensorloom-mode-hook #'eglot-ensure)

;;; Code:

(require 'prog-mode)

(defvar eglot-server-programs)  ; eglot's, set once eglot loads

(defgroup tensorloom nil "TensorLoom scripts and models." :group 'languages)

(defcustom tensorloom-server-command '("tlc" "lsp")
  "The command that starts `tlc lsp' (give the full path if not on PATH)."
  :type '(repeat string))

(defvar tensorloom-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?/ ". 124b" table)
    (modify-syntax-entry ?* ". 23" table)
    (modify-syntax-entry ?\n "> b" table)
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?@ "'" table)
    (modify-syntax-entry ?' "\"" table)
    table)
  "Syntax table: `//' line comments, `/* */' block comments, both quote kinds.")

(defconst tensorloom-font-lock-keywords
  `((,(regexp-opt '("let" "fn" "def" "return" "if" "elif" "else" "for" "in" "and" "or" "not"
                    "import" "as" "from" "with")
                  'symbols)
     . font-lock-keyword-face)
    (,(regexp-opt '("true" "false" "none") 'symbols) . font-lock-constant-face)
    ("\\_<self\\_>" . font-lock-builtin-face)
    ("^\\s-*\\(model\\|layer\\)\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)"
     (1 font-lock-keyword-face) (2 font-lock-type-face))
    ("^\\s-*\\(train\\)\\s-+\\(?:\\(?:\\sw\\|\\s_\\)+\\|([^)\n]*)\\)\\s-+\\(on\\)\\_>"
     (1 font-lock-keyword-face) (2 font-lock-keyword-face))
    ("\\_<checkpoint\\s-+every\\_>" . font-lock-keyword-face)
    ("^\\s-*\\(step\\)\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)"
     (1 font-lock-keyword-face) (2 font-lock-function-name-face))
    ("^\\s-*\\(group\\|carry\\|weights\\)\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)"
     (1 font-lock-keyword-face) (2 font-lock-variable-name-face))
    ("\\_<\\(from\\|until\\)\\s-+\\(epoch\\)\\_>"
     (1 font-lock-keyword-face) (2 font-lock-keyword-face))
    ("\\_<\\(using\\)\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)"
     (1 font-lock-keyword-face) (2 font-lock-type-face))
    ("@weights\\s-+\\(?:\\sw\\|\\s_\\)+\\s-+\\(for\\)\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)"
     (1 font-lock-keyword-face) (2 font-lock-type-face))
    ("@model\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)" 1 font-lock-type-face)
    ("@\\(?:\\sw\\|\\s_\\)+" . font-lock-preprocessor-face)
    ("\\_<\\(?:fn\\|def\\)\\s-+\\(\\(?:\\sw\\|\\s_\\)+\\)" 1 font-lock-function-name-face)
    ("\\_<\\([A-Z]\\(?:\\sw\\|\\s_\\)*\\)(" 1 font-lock-type-face))
  "Highlighting: keywords, declarations, `@' sections and layer constructors.")

(defun tensorloom-indent-line ()
  "Indent like the line above, one level more after a line ending in `:'."
  (interactive)
  (let* ((previous (save-excursion
                     (forward-line -1)
                     (while (and (not (bobp)) (looking-at-p "^\\s-*$")) (forward-line -1))
                     (cons (current-indentation)
                           (looking-at-p ".*:\\s-*\\(//.*\\)?$"))))
         (column (+ (car previous) (if (cdr previous) 4 0))))
    (if (<= (current-column) (current-indentation))
        (indent-line-to column)
      (save-excursion (indent-line-to column)))))

;;;###autoload
(define-derived-mode tensorloom-mode prog-mode "TensorLoom"
  "Major mode for TensorLoom .tl scripts and .nml model files."
  (setq-local comment-start "// ")
  (setq-local comment-start-skip "//+\\s-*")
  (setq-local comment-end "")
  (setq-local indent-tabs-mode nil)
  (setq-local tab-width 4)
  (setq-local indent-line-function #'tensorloom-indent-line)
  (setq-local font-lock-defaults '(tensorloom-font-lock-keywords)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.\\(tl\\|nml\\)\\'" . tensorloom-mode))

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               `(tensorloom-mode . (,@tensorloom-server-command
                                    :initializationOptions
                                    (:inlayHints (:shapes t :configs t))))))

(provide 'tensorloom-mode)
;;; tensorloom-mode.el ends here
