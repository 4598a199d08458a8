"""Render diagnostics as JSON for editors and tools (`--format json`)."""

from __future__ import annotations

import json
from typing import Any

from tensorloom.diagnostics.core import Diagnostic, Label


def to_dict(diagnostic: Diagnostic) -> dict[str, Any]:
    return {
        "code": diagnostic.code,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "primary": _label(diagnostic.primary),
        "secondary": [_label(label) for label in diagnostic.secondary],
        "notes": list(diagnostic.notes),
        "help": diagnostic.help,
    }


def _label(label: Label) -> dict[str, Any]:
    s = label.span
    return {
        "file": s.file,
        "line": s.line,
        "column": s.col,
        "end_line": s.end_line,
        "end_column": s.end_col,
        "label": label.message,
    }


def render_all(diagnostics: list[Diagnostic]) -> str:
    return json.dumps({"diagnostics": [to_dict(d) for d in diagnostics]}, indent=2)
