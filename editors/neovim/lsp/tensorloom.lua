-- `tlc lsp` for Neovim 0.11+ (`vim.lsp.config`): put editors/neovim on 'runtimepath', then
--   vim.lsp.enable("tensorloom")
--   vim.lsp.inlay_hint.enable(true)     -- shapes after each binding
return {
  cmd = { "tlc", "lsp" },
  filetypes = { "tensorloom", "nml" },
  root_markers = { ".git", "pyproject.toml" },
  init_options = { inlayHints = { shapes = true, configs = true } },
}
