"""IR locations and diagnostics from passes: spans in, spans out.

    op.location = loc_of(node.span)        # irgen: every op gets its token's place
    with reporting(sink):                   # the driver installs a sink
        pass_.apply(ctx, module)            # passes call report(...)
    report(Diagnostic.error("TL0201", "...", span_at(op)))

`span_at(op)` is where a diagnostic about `op` goes: its source span, or, for an
op without a location (built by a pass, or `loc(unknown)` in .mlir input), its
printed form, so that the diagnostic is still reported and quotes the op.
A one-character span is a `FileLineColLoc`; a longer one is a `FusedLoc` of the
start and the (exclusive) end position, so `span_of(loc_of(s)) == s`.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects.builtin import (
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    LocationAttr,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation

from tensorloom.diagnostics.core import Diagnostic, DiagnosticSink
from tensorloom.source import Span, unlocated_span


def _point(file: str, line: int, col: int) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))


def loc_of(span: Span | None) -> LocationAttr:
    """The location an op built from `span` carries."""
    if span is None:
        return UnknownLoc()
    start = _point(span.file, span.line, span.col)
    if span.end_line == span.line and span.end_col == span.col + 1:
        return start
    return FusedLoc((start, _point(span.file, span.end_line, span.end_col)), NoneAttr())


def span_of(target: Operation | Attribute | None) -> Span | None:
    """The source span of an op or a location; None for an unknown location."""
    loc = target.location if isinstance(target, Operation) else target
    if isinstance(loc, FileLineColLoc):
        line, col = loc.line.data, loc.column.data
        return Span(loc.filename.data, line, col, line, col + 1)
    if isinstance(loc, FusedLoc):
        return _fused_span(loc)
    if isinstance(loc, NameLoc):
        return span_of(loc.location)
    return None


def span_at(op: Operation) -> Span:
    """Where to report a diagnostic about `op`: its source span, else its printed form."""
    span = span_of(op)
    return span if span is not None else unlocated_span(printed_form(op))


def printed_form(op: Operation) -> str:
    """`op` as tl-opt prints it, on one line: regions elided, as `{...}`."""
    from io import StringIO

    from xdsl.printer import Printer

    stream = StringIO()
    Printer(stream=stream).print_op(op)
    lines = stream.getvalue().strip().splitlines()
    return lines[0].rstrip() + (" ...}" if len(lines) > 1 else "")


def _fused_span(loc: FusedLoc) -> Span | None:
    points = [p for p in loc.locations if isinstance(p, FileLineColLoc)]  # type: ignore[union-attr]
    if not points:
        return None
    first, last = points[0], points[-1]
    if len(points) == 1:
        return span_of(first)
    return Span(
        first.filename.data, first.line.data, first.column.data, last.line.data, last.column.data
    )


_current_sink: ContextVar[DiagnosticSink | None] = ContextVar("tensorloom_sink", default=None)
_default_sink = DiagnosticSink()


def current_sink() -> DiagnosticSink:
    """The sink `report` adds to: the installed one, else a process-wide default."""
    sink = _current_sink.get()
    return sink if sink is not None else _default_sink


def default_sink() -> DiagnosticSink:
    """Where diagnostics go when no driver installed a sink (tl-opt renders it)."""
    return _default_sink


@contextmanager
def reporting(sink: DiagnosticSink) -> Generator[DiagnosticSink]:
    """Send every `report(...)` inside the block to `sink`."""
    token = _current_sink.set(sink)
    try:
        yield sink
    finally:
        _current_sink.reset(token)


def report(diagnostic: Diagnostic) -> None:
    """Record a user-facing diagnostic; passes never raise for user errors."""
    current_sink().emit(diagnostic)
