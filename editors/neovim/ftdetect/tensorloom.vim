" For Neovim before 0.8 (no vim.filetype.add): the same as ftdetect/tensorloom.lua. Vim's own
" filetype.vim calls `*.tl` Teal, so this sets the filetype rather than `setfiletype`.
if !has("nvim-0.8")
  autocmd BufRead,BufNewFile *.tl set filetype=tensorloom
  autocmd BufRead,BufNewFile *.nml set filetype=nml
endif
