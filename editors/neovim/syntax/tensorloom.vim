" Vim/Neovim syntax for TensorLoom (.tl scripts and, through syntax/nml.vim, .nml models).
" The same classes as editors/vscode's TextMate grammar; `tlc lsp`'s semantic tokens then
" colour layers, dims, configs, models and train keys on top of it.
if exists("b:current_syntax")
  finish
endif

syn keyword tensorloomConditional if elif else
syn keyword tensorloomRepeat      for in
syn keyword tensorloomStatement   return let fn def import as from with
syn keyword tensorloomOperator    and or not
syn keyword tensorloomConstant    true false none
syn keyword tensorloomSelf        self
syn match   tensorloomDecl        "^\s*\zs\(model\|layer\)\ze\s\+\h"
syn match   tensorloomDecl        "^\s*\zs\(train\)\ze\s\+[(_A-Za-z]"
syn match   tensorloomDecl        "\<on\>\ze\s\+\h\w*\s*:"
syn match   tensorloomDecl        "\<checkpoint\s\+every\>"
syn match   tensorloomDecl        "^\s*\zs\(step\|group\|carry\|weights\)\ze\s\+\h"
syn match   tensorloomDecl        "\<until\ze\s\+epoch\>"
syn match   tensorloomDecl        "\(\<\(from\|until\)\s\+\)\@<=epoch\>"
syn match   tensorloomDecl        "\<using\ze\s\+\h"
syn match   tensorloomDecl        "^\s*\zs\(ignore\|config\)\ze\s\+\""
syn match   tensorloomDecl        "\<\(along\ze\s\+\d\|transposed\ze\s*\(//.*\)\=$\)"
syn match   tensorloomDecl        "\<\(epochs\|steps\)\>\ze\s*$"
syn match   tensorloomSection     "@\h\w*"
syn match   tensorloomModelName   "\(\<model\s\+\|@model\s\+\|@weights\s\+\h\w*\s\+for\s\+\)\@<=\h\w*"
syn match   tensorloomFunction    "\(\<fn\s\+\|\<def\s\+\|^\s*step\s\+\)\@<=\h\w*"
syn match   tensorloomCall        "\<\h\w*\ze("
syn match   tensorloomNumber      "\<\d[0-9_]*\(\.[0-9_]*\)\=\([eE][+-]\=\d\+\)\=\>"
syn match   tensorloomNumber      "\.\d[0-9_]*\([eE][+-]\=\d\+\)\=\>"
syn match   tensorloomOperator    "|>\|->\|\*\*\|==\|!=\|<=\|>=\|+=\|-=\|\*=\|/=\|[-+*/%@=<>]"
syn region  tensorloomString      start=+"+ skip=+\\\\\|\\"+ end=+"\|$+ contains=tensorloomEscape
syn region  tensorloomString      start=+'+ skip=+\\\\\|\\'+ end=+'\|$+ contains=tensorloomEscape
syn match   tensorloomEscape      contained "\\[ntr0\\'\"]"
syn keyword tensorloomTodo        contained TODO FIXME XXX NOTE
syn match   tensorloomComment     "//.*$" contains=tensorloomTodo,@Spell
syn region  tensorloomComment     start="/\*" end="\*/" contains=tensorloomTodo,@Spell

hi def link tensorloomConditional Conditional
hi def link tensorloomRepeat      Repeat
hi def link tensorloomStatement   Statement
hi def link tensorloomOperator    Operator
hi def link tensorloomConstant    Boolean
hi def link tensorloomSelf        Identifier
hi def link tensorloomDecl        Keyword
hi def link tensorloomSection     PreProc
hi def link tensorloomModelName   Type
hi def link tensorloomFunction    Function
hi def link tensorloomCall        Function
hi def link tensorloomNumber      Number
hi def link tensorloomString      String
hi def link tensorloomEscape      SpecialChar
hi def link tensorloomTodo        Todo
hi def link tensorloomComment     Comment

let b:current_syntax = "tensorloom"
