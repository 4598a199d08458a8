"""Diagnostics as text and JSON, and the issue's bad-input list end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tensorloom.diagnostics import Diagnostic, DiagnosticSink, Label, render_json, render_text
from tensorloom.frontend.parser import parse_file
from tensorloom.source import SourceMap, Span


def sources_with(text: str, path: str = "a.tl") -> SourceMap:
    sources = SourceMap()
    sources.add(path, text)
    return sources


def test_rustc_style_layout() -> None:
    sources = sources_with("let x = f(1,\n  2)\nlet y = x |> 3\n")
    diag = Diagnostic.error(
        "TL0109",
        "a pipe stage must be a name, a call or a member",
        Label(Span("a.tl", 3, 14, 3, 15), "not a pipe stage"),
        help="write a function",
    )
    assert render_text.render(diag, sources) == (
        "error[TL0109]: a pipe stage must be a name, a call or a member\n"
        " --> a.tl:3:14\n"
        "  |\n"
        "3 | let y = x |> 3\n"
        "  |              ^ not a pipe stage\n"
        "  |\n"
        "  = help: write a function\n"
    )


def test_a_quoted_newline_stays_on_the_message_line() -> None:
    # A data file named "a\nimport os" used to split the header line in two.
    sources = sources_with('let d = load_dataset("a\\nimport os")\n')
    diag = Diagnostic.warning(
        "TL0708",
        "`a\nimport os` is not there at check time",
        Label(Span("a.tl", 1, 9, 1, 38), "named\there"),
    )
    lines = render_text.render(diag, sources).splitlines()
    assert lines[0] == "warning[TL0708]: `a\\nimport os` is not there at check time"
    assert lines[4].endswith("^ named\\there")


def test_secondary_label_and_wide_gutter() -> None:
    text = "\n" * 9 + "let a = f(1 2)\n"
    diag = Diagnostic.error(
        "TL0101",
        "expected `,` or `)`, found `2`",
        Label(Span("a.tl", 10, 13, 10, 14), "expected `,` or `)`"),
        secondary=[Label(Span("a.tl", 10, 10, 10, 11), "to close this")],
    )
    assert render_text.render(diag, sources_with(text)).splitlines() == [
        "error[TL0101]: expected `,` or `)`, found `2`",
        "  --> a.tl:10:13",
        "   |",
        "10 | let a = f(1 2)",
        "   |             ^ expected `,` or `)`",
        "  ::: a.tl:10:10",
        "10 | let a = f(1 2)",
        "   |          - to close this",
    ]


def test_file_level_diagnostic_has_no_snippet() -> None:
    sources = sources_with("", "blob.tl")
    diag = Diagnostic.error(
        "TL0602", "`blob.tl` is a binary file, not TensorLoom source", Span.point("blob.tl", 1, 1)
    )
    assert render_text.render(diag, sources) == (
        "error[TL0602]: `blob.tl` is a binary file, not TensorLoom source\n --> blob.tl:1:1\n"
    )


def test_colour_only_when_asked() -> None:
    sources = sources_with("let x = $\n")
    diag = Diagnostic.error("TL0005", "unknown character `$`", Span.point("a.tl", 1, 9))
    assert "\x1b[" not in render_text.render(diag, sources)
    coloured = render_text.render(diag, sources, color=True)
    assert coloured.startswith("\x1b[1;31merror[TL0005]\x1b[0m")


def test_summary_line_counts_errors_and_warnings() -> None:
    sources = sources_with("x\n")
    span = Span.point("a.tl", 1, 1)
    both = [Diagnostic.error("TL0101", "e", span), Diagnostic.warning("TL0401", "w", span)]
    assert render_text.render_all(both, sources).endswith("aborting: 1 error and 1 warning\n")
    warned = render_text.render_all(both[1:], sources)
    assert warned.endswith("1 warning emitted\n")


def test_json_carries_every_field() -> None:
    diag = Diagnostic.error(
        "TL0102", "unclosed `(`", Label(Span("a.tl", 2, 9, 2, 10), "here"), help="add `)`"
    )
    data = json.loads(render_json.render_all([diag]))
    (entry,) = data["diagnostics"]
    assert entry["code"] == "TL0102"
    assert entry["primary"] == {
        "file": "a.tl",
        "line": 2,
        "column": 9,
        "end_line": 2,
        "end_column": 10,
        "label": "here",
    }
    assert entry["help"] == "add `)`"


# ------------------------------------------------------------ the bad inputs


def diagnose(tmp_path: Path, name: str, data: bytes) -> list[tuple[str, int, int]]:
    path = tmp_path / name
    path.write_bytes(data)
    sink = DiagnosticSink()
    parse_file(path, SourceMap(), sink)
    return [(d.code, d.primary.span.line, d.primary.span.col) for d in sink.sorted()]


BAD_INPUTS: list[tuple[str, bytes, list[tuple[str, int, int]]]] = [
    ("empty.tl", b"", []),
    ("comments.tl", b"// just a comment\n/* and\n   a block */\n", []),
    ("comments.nml", b"// an empty model file\n", []),
    ("binary.tl", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", [("TL0602", 1, 1)]),
    ("latin1.tl", b"let x = 1\n// caf\xe9\n", [("TL0603", 2, 7)]),
    ("tabs.tl", b"model M:\n    layer a = A()\n\tlayer b = B()\n", [("TL0003", 3, 1)]),
    ("mixed.tl", b"model M:\n  \tlayer a = A()\n", [("TL0003", 2, 3)]),
    (
        "dedent.tl",
        b"model M:\n    fn f(self):\n        return 1\n  layer a = A()\n",
        [("TL0004", 4, 3)],
    ),
    ("string.tl", b'let s = "no end\nlet t = 1\n', [("TL0001", 1, 9)]),
    ("comment.tl", b"let x = 1 /* never closed\nlet y = 2\n", [("TL0002", 1, 11)]),
    ("unknown.tl", b"let x = 1 $ 2\n", [("TL0005", 1, 11)]),
    ("deep.tl", b"let x = " + b"(" * 1000 + b"1" + b")" * 1000 + b"\n", [("TL0106", 1, 209)]),
    ("unclosed.tl", b"let x = Linear(784,\n    256\nlet y = 2\n", [("TL0102", 1, 15)]),
    ("colon.tl", b"model Net\n    layer a = A()\n", [("TL0103", 1, 10)]),
]


@pytest.mark.parametrize(
    ("name", "data", "expected"), BAD_INPUTS, ids=[name for name, _, _ in BAD_INPUTS]
)
def test_bad_input(
    tmp_path: Path, name: str, data: bytes, expected: list[tuple[str, int, int]]
) -> None:
    assert diagnose(tmp_path, name, data) == expected
