" .nml model files share the .tl syntax (syntax/tensorloom.vim).
if exists("b:current_syntax")
  finish
endif
runtime! syntax/tensorloom.vim
unlet! b:current_syntax
let b:current_syntax = "nml"
