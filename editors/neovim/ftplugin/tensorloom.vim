" TensorLoom buffers: `//` comments, four-space indents (`tlc fmt`'s layout).
setlocal commentstring=//\ %s comments=://
setlocal expandtab shiftwidth=4 softtabstop=4 tabstop=4
let b:undo_ftplugin = "setlocal commentstring< comments< expandtab< shiftwidth< softtabstop< tabstop<"
