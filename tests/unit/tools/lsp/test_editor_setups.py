"""editors/: each set-up is well formed, and each names `tlc lsp` for .tl and .nml.

VS Code's manifest carries what `vsce package` asks for otherwise (a repository, a LICENSE
file); Helix's languages.toml parses; Emacs byte-compiles tensorloom-mode.el without a warning
and opens a .tl file in the mode, with its indent after a `:` (skipped without `emacs`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

EDITORS = Path(__file__).resolve().parents[4] / "editors"


def test_vscode_manifest_packages_unattended() -> None:
    manifest = json.loads((EDITORS / "vscode" / "package.json").read_text())
    assert manifest["repository"]["url"].startswith("https://")
    assert (EDITORS / "vscode" / "LICENSE").is_file()
    settings = manifest["contributes"]["configuration"]["properties"]
    assert {"tensorloom.inlayHints.shapes", "tensorloom.inlayHints.configs"} <= set(settings)


def test_helix_languages() -> None:
    config = tomllib.loads((EDITORS / "helix" / "languages.toml").read_text())
    assert config["language-server"]["tlc"] == {
        "command": "tlc",
        "args": ["lsp"],
        "config": {"inlayHints": {"shapes": True, "configs": True}},
    }
    languages = {entry["name"]: entry for entry in config["language"]}
    assert languages["tensorloom"]["file-types"] == ["tl"]
    assert languages["nml"]["file-types"] == ["nml"]
    assert all(entry["language-servers"] == ["tlc"] for entry in languages.values())


@pytest.mark.skipif(shutil.which("emacs") is None, reason="Emacs is not installed")
def test_emacs_mode_compiles_and_indents(tmp_path: Path) -> None:
    shutil.copy(EDITORS / "emacs" / "tensorloom-mode.el", tmp_path)
    compiled = subprocess.run(
        ["emacs", "--batch", "-Q", "-L", str(tmp_path), "--eval",
         "(setq byte-compile-error-on-warn t)", "-f", "batch-byte-compile",
         str(tmp_path / "tensorloom-mode.el")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    program = tmp_path / "net.tl"
    program.write_text("model Net:\n")
    check = (
        f'(progn (require \'tensorloom-mode) (find-file "{program}") (goto-char (point-max))'
        ' (tensorloom-indent-line) (princ (format "%s %s" major-mode (current-indentation))))'
    )
    opened = subprocess.run(
        ["emacs", "--batch", "-Q", "-L", str(tmp_path), "--eval", check],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert opened.stdout == "tensorloom-mode 4", opened.stderr
