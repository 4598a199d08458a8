"""Source files and spans: where in the user's text a thing came from.

A `Span` is 1-based and half-open on columns: `line:col` is the first
character, `end_line:end_col` is one past the last. Every AST node, token and
diagnostic carries one; IR ops carry the same information as a location.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Span:
    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def point(file: str, line: int, col: int, width: int = 1) -> Span:
        return Span(file, line, col, line, col + width)

    def to(self, other: Span) -> Span:
        """The span from the start of `self` to the end of `other`."""
        return Span(self.file, self.line, self.col, other.end_line, other.end_col)

    def start(self) -> Span:
        return Span(self.file, self.line, self.col, self.line, self.col + 1)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


SOURCE_SUFFIXES = (".tl", ".nml")

UNLOCATED = "<no location>"
"""The file of a diagnostic about an IR op that has no source location: its lines are the
printed forms of such ops (`unlocated_span`), so the diagnostic quotes the op."""
_unlocated_lines: list[str] = []


def unlocated_span(printed: str) -> Span:
    """A span over `printed`, an op's printed form, as a line of the file `UNLOCATED`."""
    _unlocated_lines.append(printed)
    line = len(_unlocated_lines)
    return Span(UNLOCATED, line, 1, line, len(printed) + 1)


def split_lines(text: str) -> list[str]:
    """The lines of `text` as the lexer counts them: only `\n`, `\r\n` and `\r` end a line.

    Not `str.splitlines()`, which also breaks at a form feed, `\x0b`, U+2028 and
    others: a diagnostic would then quote a line other than the one it is on.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass(slots=True)
class SourceFile:
    """One file's text, split into lines once for rendering diagnostics."""

    path: str
    text: str
    lines: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text)

    def line(self, number: int) -> str:
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1]
        return ""


class SourceMap:
    """Every file the compiler has read, by the path diagnostics show."""

    def __init__(self) -> None:
        self._files: dict[str, SourceFile] = {}

    def add(self, path: str, text: str) -> SourceFile:
        source = SourceFile(path, text)
        self._files[path] = source
        return source

    def get(self, path: str) -> SourceFile | None:
        if path == UNLOCATED:
            return SourceFile(UNLOCATED, "\n".join(_unlocated_lines))
        source = self._files.get(path)
        # Only TensorLoom source is read back for a diagnostic: a span must never
        # make the compiler quote some other file (a link's target, say).
        if source is None and Path(path).suffix in SOURCE_SUFFIXES and Path(path).is_file():
            try:
                source = self.add(path, Path(path).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return None
        return source

    def __contains__(self, path: str) -> bool:
        return path in self._files
