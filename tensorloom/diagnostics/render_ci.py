"""Render diagnostics for CI: GitHub Actions workflow commands, and SARIF 2.1.0.

    $ tlc check --format github examples/broken/broken_model.tl
    ::error file=examples/broken/broken_model.tl,line=15,col=41,endLine=15,endColumn=49,\
title=TL0201::`fc2` expects 128 input features, got 256%0Ainput is [B, 256]%0Ahelp: ...

GitHub shows each such line of a workflow's output as an annotation on the pull
request's diff, at the diagnostic's line ("Workflow commands for GitHub Actions":
`::error file=F,line=L,col=C,endLine=..,endColumn=..,title=T::MESSAGE`, where a
value escapes `%`, CR and LF, and a property also `:` and `,`). `--format sarif`
writes one SARIF 2.1.0 log (OASIS), the format GitHub code scanning uploads
(`github/codeql-action/upload-sarif`) and other CI systems read.
"""

from __future__ import annotations

import json
from typing import Any

from tensorloom.diagnostics.core import Diagnostic, Label, Severity

GITHUB_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}
SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/tensorloom/tensorloom/blob/main/docs/diagnostics.md"


def full_message(diagnostic: Diagnostic) -> str:
    """The message, the primary label, the notes and the help, one per line (as an annotation,
    a SARIF result and an LSP diagnostic carry them)."""
    lines = [diagnostic.message]
    if diagnostic.primary.message:
        lines.append(diagnostic.primary.message)
    lines += [f"note: {note}" for note in diagnostic.notes]
    if diagnostic.help:
        lines.append(f"help: {diagnostic.help}")
    return "\n".join(lines)


def render_github(diagnostics: list[Diagnostic]) -> str:
    """One `::error ...::message` line per diagnostic."""
    return "".join(_github_line(d) + "\n" for d in diagnostics)


def _github_line(diagnostic: Diagnostic) -> str:
    span = diagnostic.primary.span
    properties = {
        "file": span.file,
        "line": span.line,
        "col": span.col,
        "endLine": span.end_line,
        "endColumn": span.end_col,
        "title": diagnostic.code,
    }
    listed = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    level = GITHUB_LEVELS[diagnostic.severity]
    return f"::{level} {listed}::{_escape_data(full_message(diagnostic))}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_sarif(diagnostics: list[Diagnostic], version: str) -> str:
    """One SARIF log: a run of `tlc`, a rule per code seen, a result per diagnostic."""
    from tensorloom.diagnostics.codes import lookup

    codes = sorted({d.code for d in diagnostics})
    rules = []
    for code in codes:
        entry = lookup(code)
        rule: dict[str, Any] = {"id": code, "helpUri": INFORMATION_URI}
        if entry is not None:
            rule["shortDescription"] = {"text": entry.title}
            rule["helpUri"] += "#" + _anchor(f"{code}: {entry.title}")
        rules.append(rule)
    driver = {"name": "tlc", "version": version, "informationUri": INFORMATION_URI}
    run = {
        "tool": {"driver": {**driver, "rules": rules}},
        "results": [_sarif_result(d, codes.index(d.code)) for d in diagnostics],
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def _anchor(heading: str) -> str:
    """The id GitHub gives a markdown heading (docs/diagnostics.md's `### TL0201: ...`)."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _sarif_result(diagnostic: Diagnostic, rule_index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS[diagnostic.severity],
        "message": {"text": full_message(diagnostic)},
        "locations": [_sarif_location(diagnostic.primary)],
    }
    related = [
        {"id": index, **_sarif_location(label)} for index, label in enumerate(diagnostic.secondary)
    ]
    if related:
        result["relatedLocations"] = related
    return result


def _sarif_location(label: Label) -> dict[str, Any]:
    span = label.span
    region = {
        "startLine": span.line,
        "startColumn": span.col,
        "endLine": span.end_line,
        "endColumn": span.end_col,
    }
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": span.file}, "region": region}
    }
    if label.message:
        location["message"] = {"text": label.message}
    return location
