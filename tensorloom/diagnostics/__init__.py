"""Diagnostics as values: what went wrong, where, and how to fix it.

    diag = Diagnostic.error("TL0201", "`fc2` expects 128 input features, got 256",
                            Label(span, "input is [B, 256]"),
                            help="change `fc2` to `Linear(256, 10)`")

Rendering lives in `render_text` (rustc style) and `render_json`; codes are
listed, with an example each, in docs/diagnostics.md.
"""

from tensorloom.diagnostics.core import (
    INTERNAL_ERROR,
    CompileError,
    Diagnostic,
    DiagnosticSink,
    Label,
    Severity,
)

__all__ = ["INTERNAL_ERROR", "CompileError", "Diagnostic", "DiagnosticSink", "Label", "Severity"]
