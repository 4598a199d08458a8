"""The import contracts of pyproject.toml hold: each layer imports only those below it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    tool = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(tool).exists():
        pytest.fail("lint-imports is missing: install the dev extra (`make install`)")
    result = subprocess.run([tool], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_catalogue_imports_nothing_above_it() -> None:
    above = ("tensorloom.dialects", "tensorloom.passes", "tensorloom.frontend", "tensorloom.tools")
    for path in (ROOT / "tensorloom" / "catalogue").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not any(f"from {name}" in text or f"import {name}" in text for name in above), path
