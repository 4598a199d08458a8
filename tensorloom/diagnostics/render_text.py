"""Render diagnostics rustc-style, with the source line and carets.

    error[TL0201]: `fc2` expects 128 input features, got 256
      --> examples/broken.tl:11:28
       |
    11 |         return x |> self.fc1 |> relu |> self.fc2
       |                                          ^^^^^^^^ input is [B, 256]
       |
       = help: change `fc2` to `Linear(256, 10)`
"""

from __future__ import annotations

from tensorloom.diagnostics.core import Diagnostic, Label
from tensorloom.source import SourceMap


def render(diagnostic: Diagnostic, sources: SourceMap) -> str:
    """One diagnostic as text, ending in a newline."""
    span = diagnostic.primary.span
    lines = [f"{diagnostic.severity.value}[{diagnostic.code}]: {diagnostic.message}"]
    labels = [diagnostic.primary, *diagnostic.secondary]
    gutter = max(len(str(label.span.line)) for label in labels)
    pad = " " * gutter
    lines.append(f"{pad}--> {span.file}:{span.line}:{span.col}")
    lines.append(f"{pad} |")
    for index, label in enumerate(labels):
        lines.extend(_snippet(label, sources, gutter, primary=index == 0))
    if diagnostic.notes or diagnostic.help:
        lines.append(f"{pad} |")
    lines.extend(f"{pad} = note: {note}" for note in diagnostic.notes)
    if diagnostic.help:
        lines.append(f"{pad} = help: {diagnostic.help}")
    return "\n".join(lines) + "\n"


def _snippet(label: Label, sources: SourceMap, gutter: int, *, primary: bool) -> list[str]:
    span = label.span
    source = sources.get(span.file)
    pad = " " * gutter
    if source is None:
        return [f"{pad} = {'' if primary else 'note: '}{span}: {label.message}".rstrip()]
    text = source.line(span.line).replace("\t", " ")
    end_col = span.end_col if span.end_line == span.line else len(text) + 1
    width = max(1, end_col - span.col)
    marker = ("^" if primary else "-") * width
    header = [] if primary else [f"{pad}::: {span.file}:{span.line}:{span.col}"]
    underline = f"{pad} | {' ' * (span.col - 1)}{marker} {label.message}".rstrip()
    return [*header, f"{str(span.line).rjust(gutter)} | {text}", underline]


def render_all(diagnostics: list[Diagnostic], sources: SourceMap) -> str:
    """Every diagnostic, then a one-line summary of the error and warning counts."""
    parts = [render(d, sources) for d in diagnostics]
    errors = sum(d.is_error for d in diagnostics)
    warnings = len(diagnostics) - errors
    summary = _summary(errors, warnings)
    return "\n".join(parts) + (summary + "\n" if summary else "")


def _summary(errors: int, warnings: int) -> str:
    parts: list[str] = []
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    if not parts:
        return ""
    verb = "aborting" if errors else "emitted"
    return f"{verb}: {' and '.join(parts)}" if errors else f"{' and '.join(parts)} {verb}"
