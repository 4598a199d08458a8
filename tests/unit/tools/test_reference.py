"""docs/reference.md is what the catalogues generate (`make reference` rewrites it)."""

from __future__ import annotations

from pathlib import Path

from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.catalogue.layers import LAYERS
from tensorloom.tools.reference import reference

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference.md"


def test_reference_page_matches_the_catalogues() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference(), "run `make reference`"


def test_every_layer_and_function_has_an_entry() -> None:
    text = reference()
    assert all(f"### {name}\n" in text for name in LAYERS)
    assert all(f"| `{spec.signature}` |" in text for spec in FUNCTIONS.values())
