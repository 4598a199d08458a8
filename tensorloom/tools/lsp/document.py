"""One open document's analysis: `tlc check` run on the editor's text.

    analysis = analyze("/work/mnist.tl", text)
    analysis.diagnostics          # what `tlc check` reports, in source order
    analysis.flows()              # each model's shape flow (computed on first use)
    analysis.root                 # the file's AST, also when it has syntax errors

A document's imports are read from disk, as `tlc check` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tensorloom.source import Span

if TYPE_CHECKING:
    from tensorloom.analysis.flows import ModelFlow
    from tensorloom.diagnostics import Diagnostic
    from tensorloom.frontend import ast
    from tensorloom.frontend.imports import Program
    from tensorloom.pipeline import Compilation

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Analysis:
    """The check's result for one version of a document."""

    path: str
    text: str
    result: Compilation
    previous_root: ast.Module | None = None  # the last AST, while this text does not parse
    _flows: list[ModelFlow] | None = field(default=None, repr=False)
    _program: Program | None = field(default=None, repr=False)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.result.sink.sorted()

    @property
    def root(self) -> ast.Module | None:
        return self.result.root if self.result.root is not None else self.previous_root

    @property
    def program(self) -> Program | None:
        """The file and its imports; loaded here when the check stopped before them."""
        if self.result.program is not None:
            return self.result.program
        if self._program is None and self.root is not None:
            self._program = _load_imports(self.root)
        return self._program

    def flows(self) -> list[ModelFlow]:
        from tensorloom.tools.check import shape_flows

        if self._flows is None:
            self._flows = shape_flows(self.result)
        return self._flows

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        return lines[number - 1] if 1 <= number <= len(lines) else ""

    def line_count(self) -> int:
        return len(self.text.splitlines())

    def word_at(self, line: int, col: int) -> tuple[str, Span, str] | None:
        """The identifier under (line, col), its span, and what it is a member of (`self`)."""
        text = self.line(line)
        for match in WORD.finditer(text):
            if match.start() <= col - 1 <= match.end():  # just after the word counts too
                span = Span(self.path, line, match.start() + 1, line, match.end() + 1)
                return match.group(), span, _qualifier(text, match.start())
        return None


def _load_imports(root: ast.Module) -> Program:
    """The root's imports, for names while the root itself has errors (which are not reported)."""
    from pathlib import Path

    from tensorloom.diagnostics import DiagnosticSink
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.frontend.imports import load_program
    from tensorloom.frontend.parser import parse_file
    from tensorloom.source import SourceMap

    sink, sources = DiagnosticSink(), SourceMap()
    with reporting(sink):
        return load_program(root, lambda path: parse_file(Path(path), sources, sink))


def _qualifier(text: str, start: int) -> str:
    """`self` for `self.fc1`, `tl` for `tl.load`; empty for a plain name."""
    before = text[:start]
    if not before.endswith("."):
        return ""
    owner = re.search(r"([A-Za-z_][A-Za-z0-9_.]*)\.$", before)
    return owner.group(1) if owner else ""


def analyze(path: str, text: str, previous: Analysis | None = None) -> Analysis:
    """Check `text` as the contents of `path`."""
    from tensorloom.tools.check import check_text

    result = check_text(text, path)
    root = previous.root if previous is not None else None
    return Analysis(path, text, result, previous_root=root)


def contains(span: Span, line: int, col: int) -> bool:
    """Whether the 1-based position lies within the half-open span."""
    if (line, col) < (span.line, span.col):
        return False
    return (line, col) < (span.end_line, span.end_col)
