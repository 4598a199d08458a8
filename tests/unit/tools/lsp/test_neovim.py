"""`tlc lsp` driven by a real client: Neovim, headless, with editors/neovim on its runtimepath.

Neovim opens a program with a shape error, starts `tlc lsp` through its built-in client, and
reports what arrived: the diagnostics, a hover and the inlay hints. Skipped where `nvim` is not
installed (CI installs only pip packages; `apt-get install neovim` gives one).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
NVIM = shutil.which("nvim")

PROGRAM = """\
model Net:
    layer fc1 = Linear(8, 16)
    layer fc2 = Linear(32, 4)

    fn forward(self, x: Tensor[B, 8]) -> Tensor:
        let h = self.fc1(x)
        return self.fc2(h)

let net = Net()
"""

# Neovim 0.7's API (Debian 12's), which later versions keep: start_client, buf_attach_client,
# buf_request_sync, vim.diagnostic.
CLIENT = """\
local out = vim.env.TL_OUT
local function finish(report)
  local file = io.open(out, "w")
  file:write(vim.fn.json_encode(report))
  file:close()
  vim.cmd("qall!")
end
vim.cmd("filetype plugin on")
vim.cmd("syntax on")
vim.cmd("edit " .. vim.fn.fnameescape(vim.env.TL_FILE))
local report = { filetype = vim.bo.filetype, syntax = vim.b.current_syntax or "" }
local config = dofile(vim.env.TL_RUNTIME .. "/lsp/tensorloom.lua")  -- Neovim 0.11's vim.lsp.config
report.config = { cmd = config.cmd, filetypes = config.filetypes }
local id = vim.lsp.start_client({
  name = "tlc",
  cmd = { vim.env.TL_PYTHON, "-m", "tensorloom.tools.tlc", "lsp" },
  root_dir = vim.fn.fnamemodify(vim.env.TL_FILE, ":h"),
  init_options = { inlayHints = { shapes = true, configs = true } },
})
vim.lsp.buf_attach_client(0, id)
vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
report.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(report.diagnostics, { code = d.code, line = d.lnum, col = d.col })
end
local uri = vim.uri_from_bufnr(0)
local hover = vim.lsp.buf_request_sync(0, "textDocument/hover", {
  textDocument = { uri = uri }, position = { line = 5, character = 13 },
}, 20000) or {}
report.hover = ""
for _, response in pairs(hover) do
  if response.result then report.hover = response.result.contents.value end
end
local hints = vim.lsp.buf_request_sync(0, "textDocument/inlayHint", {
  textDocument = { uri = uri },
  range = { start = { line = 0, character = 0 }, ["end"] = { line = 20, character = 0 } },
}, 20000) or {}
report.hints = {}
for _, response in pairs(hints) do
  for _, hint in ipairs(response.result or {}) do
    table.insert(report.hints, { line = hint.position.line, label = hint.label })
  end
end
finish(report)
"""


@pytest.mark.skipif(NVIM is None, reason="Neovim (nvim) is not installed")
def test_neovim_gets_diagnostics_hover_and_inlay_hints(tmp_path: Path) -> None:
    program = tmp_path / "net.tl"
    program.write_text(PROGRAM)
    script = tmp_path / "client.lua"
    script.write_text(CLIENT)
    out = tmp_path / "report.json"
    runtime = ROOT / "editors" / "neovim"
    environment = {
        "TL_FILE": str(program),
        "TL_OUT": str(out),
        "TL_PYTHON": sys.executable,
        "TL_RUNTIME": str(runtime),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    command = [str(NVIM), "--headless", "-u", "NONE", "-i", "NONE", "--cmd",
               f"set runtimepath^={runtime}", "-c", f"luafile {script}"]  # fmt: skip
    subprocess.run(command, env=environment, timeout=180, check=False, capture_output=True)
    report = json.loads(out.read_text())
    assert (report["filetype"], report["syntax"]) == ("tensorloom", "tensorloom")
    assert report["config"] == {"cmd": ["tlc", "lsp"], "filetypes": ["tensorloom", "nml"]}
    assert report["diagnostics"] == [{"code": "TL0201", "line": 6, "col": 15}]
    assert "h: Tensor[B, 16]" in report["hover"]
    assert {"line": 5, "label": ": [B, 16]"} in report["hints"]
