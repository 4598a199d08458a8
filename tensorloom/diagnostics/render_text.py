"""Render diagnostics rustc-style, with the source line and carets.

    error[TL0201]: `fc2` expects 128 input features, got 256
      --> examples/broken.tl:11:28
       |
    11 |         return x |> self.fc1 |> relu |> self.fc2
       |                                          ^^^^^^^^ input is [B, 256]
       |
       = help: change `fc2` to `Linear(256, 10)`
"""  # fmt: skip

from __future__ import annotations

from tensorloom.diagnostics.core import Diagnostic, Label, Severity
from tensorloom.source import UNLOCATED, SourceMap, Span

# ANSI styles, used only when the caller asks for colour (a terminal, NO_COLOR unset).
_STYLES = {
    "error": "1;31",
    "warning": "1;33",
    "note": "1;36",
    "gutter": "1;34",
    "secondary": "1;34",
    "bold": "1",
}


class _Paint:
    """Wraps text in ANSI codes when enabled; the identity otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def render(diagnostic: Diagnostic, sources: SourceMap, *, color: bool = False) -> str:
    """One diagnostic as text, ending in a newline."""
    paint = _Paint(color)
    span = diagnostic.primary.span
    severity = diagnostic.severity.value
    header = paint(f"{severity}[{diagnostic.code}]", severity)
    lines = [header + paint(f": {_one_line(diagnostic.message)}", "bold")]
    labels = [diagnostic.primary, *diagnostic.secondary]
    gutter = max(len(str(label.span.line)) for label in labels)
    pad = " " * gutter
    where = _where(span)
    lines.append(f"{pad}{paint('-->', 'gutter')} {where}")
    snippets: list[str] = []
    for index, label in enumerate(labels):
        snippets.extend(_snippet(label, sources, gutter, paint, primary=index == 0))
    if snippets:
        lines.append(paint(f"{pad} |", "gutter"))
        lines.extend(snippets)
    if snippets and (diagnostic.notes or diagnostic.help):
        lines.append(paint(f"{pad} |", "gutter"))
    lines.extend(f"{pad} {paint('=', 'gutter')} note: {note}" for note in diagnostic.notes)
    if diagnostic.help:
        lines.append(f"{pad} {paint('=', 'gutter')} help: {diagnostic.help}")
    return "\n".join(lines) + "\n"


def _where(span: Span) -> str:
    if span.file == UNLOCATED:
        return "an op without a source location, as tl-opt prints it"
    return f"{span.file}:{span.line}:{span.col}"


def _snippet(
    label: Label, sources: SourceMap, gutter: int, paint: _Paint, *, primary: bool
) -> list[str]:
    """The quoted source line and its underline; a bare location if there is no line."""
    span = label.span
    source = sources.get(span.file)
    pad = " " * gutter
    if source is None or span.line > max(len(source.lines), 1) or not source.text:
        where = "" if primary else f"{span}: "
        text = f"{where}{label.message}"
        return [f"{pad} {paint('=', 'gutter')} note: {text}"] if text else []
    text = source.line(span.line).replace("\t", " ")
    end_col = span.end_col if span.end_line == span.line else len(text) + 1
    width = max(1, end_col - span.col)
    style = "error" if primary else "secondary"
    marker = paint(("^" if primary else "-") * width, style)
    where = f"{pad}{paint(':::', 'gutter')} {span}"
    header = [] if primary else [where]
    message = paint(_one_line(label.message), style)
    underline = f"{paint(pad + ' |', 'gutter')} {' ' * (span.col - 1)}{marker} {message}".rstrip()
    number = paint(f"{str(span.line).rjust(gutter)} |", "gutter")
    return [*header, f"{number} {text}".rstrip(), underline]


def _one_line(text: str) -> str:
    """A message quoting the user's text (a file name holding a newline) kept on its line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def render_all(diagnostics: list[Diagnostic], sources: SourceMap, *, color: bool = False) -> str:
    """Every diagnostic, then a one-line summary of the error and warning counts."""
    parts = [render(d, sources, color=color) for d in diagnostics]
    errors = sum(d.is_error for d in diagnostics)
    warnings = sum(d.severity is Severity.WARNING for d in diagnostics)
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
