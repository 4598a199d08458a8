"""`tlc lsp`: TensorLoom's language server, over stdio.

    document.py   one open buffer's analysis: `tlc check`'s pipeline on its text
    navigate.py   names at a position, their definitions, document symbols
    hover.py      shapes of values, layer signatures and parameter counts, instances, data,
                  imports, optimizers, losses, loop variables, dims
    complete.py   completion from the catalogues (layers, functions, train keys, configs)
    hints.py      inlay hints: each binding's shape, an instance's defaulted config
    semantic.py   semantic tokens: models, layers, config entries, dims, train keys
    rename.py     rename across .tl/.nml files (prepareRename too)
    fixes.py      quick fixes from a diagnostic's `help:`
    server.py     the pygls server: LSP messages in, the modules above, LSP types out

Formatting is `tlc fmt`'s (frontend/format.py), called from server.py.

Only server.py imports pygls and lsprotocol; the rest speaks the compiler's
own types (1-based lines and columns, `Span`, `Diagnostic`), so it is tested
without a client, and the server itself with one (tests/unit/tools/lsp/).
The analysis runs the public entry points (`tools/check.py`'s `check_text`,
the AST and the checked IR), so a new construct of the language is diagnosed,
outlined and hovered without changes here.
"""
