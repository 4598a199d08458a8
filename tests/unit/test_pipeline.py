"""The driver fails closed, and an internal error exits 3 from every command.

A pass that is not registered, or whose module does not import, used to be
skipped without a word (with a typo in the shape-inference factory, a shape
error compiled as `ok`). Now it is TL0901, and TL0901 exits 3, not 1.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.passes import ModulePass

from tensorloom import passes
from tensorloom.diagnostics import INTERNAL_ERROR, Diagnostic, DiagnosticSink
from tensorloom.pipeline import compile_text, missing_passes
from tensorloom.source import SourceFile, Span, split_lines
from tensorloom.tools.check import run_check
from tensorloom.tools.emit import run_compile
from tensorloom.tools.guard import sink_status

SHAPE_ERROR = """\
model Net:
    layer fc = Linear(8, 2)
    fn forward(self, x: Tensor[B, 4]) -> Tensor:
        return x |> self.fc
"""


def _broken_factory() -> type[ModulePass]:
    raise ImportError("cannot import name 'ShapeInferencPass'")


def _patch(monkeypatch: pytest.MonkeyPatch, change: Callable[[dict[str, object]], None]) -> None:
    registry = dict(passes.get_all_passes())
    change(registry)  # type: ignore[arg-type]
    monkeypatch.setattr(passes, "get_all_passes", lambda: registry)


def test_every_staged_pass_is_registered() -> None:
    assert missing_passes() == []


def test_a_pass_that_does_not_import_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, lambda r: r.__setitem__("shape-inference", _broken_factory))
    result = compile_text(SHAPE_ERROR, "net.tl", until="nml")
    codes = [d.code for d in result.sink]
    assert INTERNAL_ERROR in codes
    assert "could not be loaded" in next(d.message for d in result.sink if d.code == INTERNAL_ERROR)
    assert result.completed != "nml"


def test_an_unregistered_pass_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, lambda r: r.pop("check-scopes"))
    result = compile_text(SHAPE_ERROR, "net.tl", until="nml")
    internal = [d for d in result.sink if d.code == INTERNAL_ERROR]
    assert len(internal) == 1 and "`check-scopes`" in internal[0].message


@pytest.mark.parametrize("command", ["check", "compile"])
def test_internal_error_exits_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                command: str) -> None:  # fmt: skip
    _patch(monkeypatch, lambda r: r.__setitem__("shape-inference", _broken_factory))
    source = tmp_path / "net.tl"
    source.write_text(SHAPE_ERROR, encoding="utf-8")
    if command == "check":
        status = run_check(source, out=io.StringIO())
    else:
        status = run_compile(source, "nml", tmp_path / "out.mlir")
    assert status == 3


def test_sink_status() -> None:
    sink = DiagnosticSink()
    assert sink_status(sink) == 0
    sink.emit(Diagnostic.warning("TL0304", "unused", Span.point("a.tl", 1, 1)))
    assert sink_status(sink) == 0
    sink.emit(Diagnostic.error("TL0201", "shape", Span.point("a.tl", 1, 1)))
    assert sink_status(sink) == 1
    sink.emit(Diagnostic.error(INTERNAL_ERROR, "internal compiler error", Span.point("a.tl", 1, 1)))
    assert sink_status(sink) == 3


@pytest.mark.parametrize("brk", ["\x0c", "\x0b", "\u2028", "\u2029", "\x85", "\x1c"])
def test_source_lines_break_where_the_lexer_does(brk: str) -> None:
    text = f"a // x{brk}y\nb\r\nc\rd\n"
    assert split_lines(text) == [f"a // x{brk}y", "b", "c", "d"]
    assert SourceFile("f.tl", text).line(2) == "b"
