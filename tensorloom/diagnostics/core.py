"""The diagnostic value type and the sink that collects them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum

from tensorloom.source import Span

INTERNAL_ERROR = "TL0901"
"""The code of every internal compiler error: a bug in TensorLoom, exit status 3."""


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True, slots=True)
class Label:
    """A span with a short message drawn under its carets."""

    span: Span
    message: str = ""


@dataclass(slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    primary: Label
    secondary: list[Label] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    help: str | None = None

    @staticmethod
    def error(code: str, message: str, primary: Label | Span, **kw: object) -> Diagnostic:
        return Diagnostic._make(Severity.ERROR, code, message, primary, kw)

    @staticmethod
    def warning(code: str, message: str, primary: Label | Span, **kw: object) -> Diagnostic:
        return Diagnostic._make(Severity.WARNING, code, message, primary, kw)

    @staticmethod
    def _make(
        severity: Severity, code: str, message: str, primary: Label | Span, kw: dict[str, object]
    ) -> Diagnostic:
        label = primary if isinstance(primary, Label) else Label(primary)
        return Diagnostic(code, severity, message, label, **kw)  # type: ignore[arg-type]

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


class DiagnosticSink:
    """Collects diagnostics from every stage; a stage never stops at the first."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)

    @property
    def has_internal_error(self) -> bool:
        """A compiler bug was reported (TL0901): the run exits 3, not 1."""
        return any(d.code == INTERNAL_ERROR for d in self.diagnostics)

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def sorted(self) -> list[Diagnostic]:
        """In source order, so output reads top to bottom like the file."""
        return sorted(self.diagnostics, key=lambda d: _order_key(d.primary.span))

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.diagnostics)

    def __len__(self) -> int:
        return len(self.diagnostics)


def _order_key(span: Span) -> tuple[str, int, int]:
    return (span.file, span.line, span.col)


class CompileError(Exception):
    """Raised to stop the pipeline when a stage found errors in the user's program."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(f"{len(diagnostics)} error(s)")
        self.diagnostics = diagnostics


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelt name, if one is close enough."""
    import difflib  # only a program with an error needs it: not at start-up

    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None
