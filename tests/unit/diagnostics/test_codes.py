"""The code registry: docs/diagnostics.md is generated from it, and it lists every code reported."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from tensorloom.diagnostics import codes
from tensorloom.tools import tlc

ROOT = Path(__file__).resolve().parents[3]


def test_docs_page_is_generated_from_the_registry() -> None:
    page = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    assert page == codes.markdown(), (
        "docs/diagnostics.md is out of step with tensorloom/diagnostics/codes_data.py: "
        "edit the registry, then `python -m tensorloom.diagnostics.codes > docs/diagnostics.md`"
    )


def test_every_reported_code_is_registered() -> None:
    reported: set[str] = set()
    for path in (ROOT / "tensorloom").rglob("*.py"):
        if path.name != "codes_data.py":
            reported.update(re.findall(r"[\"'](TL\d{4})[\"']", path.read_text(encoding="utf-8")))
    registered = [c.code for c in codes.all_codes()]
    assert sorted(reported - set(registered)) == []
    assert len(registered) == len(set(registered)), "a code is registered twice"


def test_each_example_shows_its_own_code() -> None:
    for entry in codes.all_codes():
        assert f"[{entry.code}]" in entry.example.splitlines()[0], entry.code


def test_explain_prints_the_explanation_and_example() -> None:
    result = CliRunner().invoke(tlc.cli, ["explain", "tl0201"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "TL0201: a layer's input does not fit the layer"
    assert "Example:" in lines
    assert "    error[TL0201]: `fc2` expects 256 input features, got 128" in lines


def test_explain_shows_a_second_case_without_markdown_fences() -> None:
    result = CliRunner().invoke(tlc.cli, ["explain", "TL0301"])
    assert result.exit_code == 0
    assert "```" not in result.stdout
    assert "    error[TL0301]: undefined name `x`" in result.stdout.splitlines()


def test_explain_unknown_code_exits_1() -> None:
    result = CliRunner().invoke(tlc.cli, ["explain", "TL9999"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert "unknown diagnostic code `TL9999`" in result.stderr


def test_every_file_an_explanation_names_is_in_a_clone() -> None:
    """A `.tl`/`.nml` file an explanation points the reader at exists where it says (from the
    repository root, as a newcomer runs `tlc explain`), not only under tests/."""
    named = re.compile(r"`(?:tlc check )?([\w./-]+\.(?:tl|nml))`")
    for entry in codes.all_codes():
        for path in named.findall(entry.explanation + entry.more):
            assert (ROOT / path).is_file(), f"{entry.code} names `{path}`"
            assert not path.startswith("tests/"), f"{entry.code} names `{path}`"
