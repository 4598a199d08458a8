-- `tlc lsp` through nvim-lspconfig (any Neovim 0.8+): source this from init.lua, or copy it.
-- editors/neovim on 'runtimepath' gives the filetypes (ftdetect/) and the syntax file.
local configs = require("lspconfig.configs")
local util = require("lspconfig.util")

if not configs.tensorloom then
  configs.tensorloom = {
    default_config = {
      cmd = { "tlc", "lsp" },
      filetypes = { "tensorloom", "nml" },
      root_dir = util.root_pattern(".git", "pyproject.toml"),
      single_file_support = true,
      init_options = { inlayHints = { shapes = true, configs = true } },
    },
  }
end

require("lspconfig").tensorloom.setup({
  on_attach = function(client, bufnr)
    if vim.lsp.inlay_hint then -- Neovim 0.10+
      vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
    end
  end,
})
