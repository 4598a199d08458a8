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
        """Record `diagnostic`, once: the same one again (a model's or method's copies, each
        checked for its own use, find a mistake in their shared source at each use) is
        dropped."""
        if diagnostic not in self.diagnostics:
            self.diagnostics.append(diagnostic)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    def extend_new(self, diagnostics: Iterable[Diagnostic]) -> None:
        """Those of `diagnostics` not already here: a model's error that an objective's
        inference, following the call into the model, finds again is said once."""
        for diagnostic in diagnostics:
            if diagnostic not in self.diagnostics:
                self.diagnostics.append(diagnostic)

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
    """The closest candidate to a misspelt name, if one is close enough: TensorLoom's one
    did-you-mean engine (names, settings, layers, passes, datasets, sections).

    First the candidates fewest edits away, letter case ignored (a swap of neighbours
    counts as one edit: `Adma` is `Adam`), within a third of the name's length (at least
    one edit, and fewer than the name's letters: `x` is not `k`), difflib's ranking
    breaking a tie (`fc3` is `fc2` before `fc1`); failing that, difflib's closest match at
    a 0.6 similarity ratio (`conv_layer` is 4 edits from `conv_layers_2d` but shares its
    letters).
    """
    import difflib  # only a program with an error needs it: not at start-up

    pool = list(candidates)
    budget = min(max(1, len(name) // 3), len(name) - 1)
    distances = {c: _edits(name.lower(), c.lower()) for c in pool}
    fewest = min((d for d in distances.values() if d <= budget), default=None)
    if fewest is not None:
        tied = [c for c, d in distances.items() if d == fewest]
        return tied[0] if len(tied) == 1 else difflib.get_close_matches(name, tied, 1, 0.0)[0]
    matches = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return matches[0] if matches else None


def _edits(a: str, b: str) -> int:
    """The optimal string alignment distance: insertions, deletions, substitutions and swaps
    of neighbours, one edit each."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]
