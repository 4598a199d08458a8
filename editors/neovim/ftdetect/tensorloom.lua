-- .tl scripts are `tensorloom` (not Teal, Neovim's default for .tl), .nml models `nml`.
vim.filetype.add({ extension = { tl = "tensorloom", nml = "nml" } })
