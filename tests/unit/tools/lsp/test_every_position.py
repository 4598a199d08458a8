"""Every editor feature at every name of every example (and of a 1,000-deep expression):
hover, definition, completion, prepareRename and rename, and per file the inlay hints,
semantic tokens and quick fixes. Nothing may raise: a failing request is an editor that
stops answering."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.frontend.lexer import tokenize
from tensorloom.frontend.tokens import TokenKind
from tensorloom.tools.lsp import complete, fixes, hints, hover, navigate, rename, semantic
from tensorloom.tools.lsp.document import analyze

ROOT = Path(__file__).resolve().parents[4]
PROGRAMS = [
    *sorted((ROOT / "examples").rglob("*.tl")),
    *sorted((ROOT / "examples").rglob("*.nml")),
    ROOT / "tests" / "lit" / "check" / "kernel_long_product.tl",
    ROOT / "tests" / "lit" / "frontend" / "assignments.nml",  # x[...] = v, x[...] += v
]


def _read(path: str) -> str | None:
    return Path(path).read_text() if Path(path).is_file() else None


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_every_feature_answers_at_every_name(path: Path) -> None:
    text = path.read_text()
    analysis = analyze(str(path), text)
    hints.inlay_hints(analysis, 1, 10**6)
    semantic.encode(semantic.classify(analysis))
    fixes.fixes(analysis, 1, 10**6)
    for token in tokenize(text, str(path), DiagnosticSink()):
        if token.kind is not TokenKind.NAME:
            continue
        line, col = token.span.line, token.span.col
        hover.hover(analysis, line, col)
        navigate.definition(analysis, line, col)
        complete.completions(analysis, line, col)
        if rename.prepare(analysis, line, col) is None:
            continue
        try:
            edits = rename.rename(analysis, line, col, "renamed", [str(path)], _read)
        except rename.RenameError as error:  # an alias that must keep naming its model
            assert "holds several models" in str(error)
            continue
        assert edits, (line, col, token.text)  # a renameable name has a place to rename
