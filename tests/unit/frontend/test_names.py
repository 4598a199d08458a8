"""Names: NFKC as Python reads them, non-ASCII names through xDSL, and the emitted model.

fuzz-findings/10, 11 (`ﬁ` as a parameter or a `let` name crashed irgen with
xDSL's name check), security/nfkc_* (two names equal after NFKC became one
Python name), and names a Python identifier cannot be.
"""

from __future__ import annotations

import sys
import unicodedata
from types import ModuleType

import pytest
import torch

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.frontend.lexer import normalize_name, tokenize
from tensorloom.pipeline import compile_text, python_source


def _load(text: str, name: str) -> ModuleType:
    module = ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    try:
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


UNICODE_MODEL = """\
model Mé:
    layer fç = Linear(4, 2)
    fn forward(self, é: Tensor[B, 4], ﬁ: Tensor[B, 2]) -> Tensor:
        let ñ = self.fç(é)
        return ñ + ﬁ
"""


def test_non_ascii_names_compile_and_run() -> None:
    result = compile_text(UNICODE_MODEL, "u.tl")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = _load(python_source(result.module, "u.tl"), "emitted_unicode")
    model = module.Mé()
    x, bias = torch.randn(3, 4), torch.randn(3, 2)
    expected = model.fç(x) + bias
    assert torch.equal(model(x, bias), expected)


@pytest.mark.parametrize(("raw", "normal"), [("ﬁ", "fi"), ("\u210c", "H"), ("x", "x"), ("é", "é")])
def test_normalize_name(raw: str, normal: str) -> None:
    assert normalize_name(raw) == normal


def test_lexer_gives_nfkc_names_with_source_spans() -> None:
    sink = DiagnosticSink()
    tokens = tokenize("let ﬁ𝐱 = 1\n", "t.tl", sink)
    assert not sink.diagnostics
    name = tokens[1]
    assert name.text == "fix"
    assert (name.span.col, name.span.end_col) == (5, 7)  # two characters in the source


def test_nfkc_twins_are_one_model() -> None:
    text = "model H:\n    fn forward(self, x):\n        return x\nmodel \u210c:\n"
    text += "    fn forward(self, x):\n        return x\n"
    result = compile_text(text, "t.tl", until="nml")
    assert [d.code for d in result.sink.errors()] == ["TL0615"]


def _name_like_characters() -> list[str]:
    """Characters Python's `str.isidentifier` and Unicode's categories disagree about:
    digits of other scripts and superscripts (No, Nl, Nd), marks (Mn, Mc), modifier
    letters (Lm), letters NFKC changes, every one below U+3100."""
    categories = {"No", "Nl", "Nd", "Mn", "Mc", "Me", "Lm", "Lo", "Pc", "Sk"}
    return [
        ch
        for ch in map(chr, range(0xA0, 0x3100))
        if unicodedata.category(ch) in categories or normalize_name(ch) != ch
    ]


def test_name_like_characters_are_diagnostics_not_crashes() -> None:
    """fuzz-findings/32: a superscript two at the start of a line raised StopIteration
    from the lexer. Each such character, where a name starts and inside one, is a token
    or a TL0009 at its column."""
    for ch in _name_like_characters():
        for text in (f"{ch} = 1\n", f"a{ch} = 1\n", f"  {ch}a\n"):
            sink = DiagnosticSink()
            tokenize(text, "u.tl", sink)
            codes = {d.code for d in sink.diagnostics}
            assert all(c.startswith(("TL00", "TL01")) for c in codes), (hex(ord(ch)), codes)
            assert all(d.primary.span.line == 1 for d in sink.diagnostics)


def test_superscript_cannot_start_a_name() -> None:
    sink = DiagnosticSink()
    tokenize("let \u00b2x = 1\n", "u.tl", sink)
    [diagnostic] = sink.diagnostics
    assert diagnostic.code == "TL0009"
    assert "`²` (U+00B2) cannot start one" in diagnostic.message
    assert diagnostic.primary.span.col == 5
