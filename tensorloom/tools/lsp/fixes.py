"""Quick fixes: a diagnostic's `help:` applied, where the fix is mechanical.

    TL0201  help: change `fc2` to `Linear(256, 10)`, ...   the layer's constructor replaced
    TL0303  help: did you mean `fc`?                        the misspelt name replaced
    TL0302  unknown model (or layer type) `GPT`             `import gpt.nml` added, when a
                                                            `.nml` beside the file declares it

Each fix is a title and the edits, by file (a layer declared in an imported file is
fixed there). Nothing is guessed: a help that does not name its replacement gets no fix.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.source import Span

if TYPE_CHECKING:
    from tensorloom.diagnostics import Diagnostic
    from tensorloom.tools.lsp.document import Analysis

CHANGE_LAYER = re.compile(r"change `(\w+)` to `([^`]+)`")
DID_YOU_MEAN = re.compile(r"""did you mean [`"]([^`"]+)[`"]\?""")
UNKNOWN_MODEL = re.compile(r"unknown (?:model|layer type) `(\w+)`")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Fix:
    title: str
    diagnostic: Diagnostic
    edits: dict[str, list[tuple[Span, str]]]


def fixes(analysis: Analysis, first: int, last: int) -> list[Fix]:
    """The fixes of the diagnostics whose primary span touches lines `first` to `last`."""
    found: list[Fix] = []
    for diagnostic in analysis.diagnostics:
        span = diagnostic.primary.span
        if span.file != analysis.path or span.end_line < first or span.line > last:
            continue
        fix = fix_for(analysis, diagnostic)
        if fix is not None:
            found.append(fix)
    return found


def fix_for(analysis: Analysis, diagnostic: Diagnostic) -> Fix | None:
    help_text = diagnostic.help or ""
    change = CHANGE_LAYER.search(help_text)
    if change is not None:
        return _change_layer(analysis, diagnostic, change.group(1), change.group(2))
    guess = DID_YOU_MEAN.search(help_text)
    if guess is not None:
        return _respell(analysis, diagnostic, guess.group(1))
    unknown = UNKNOWN_MODEL.search(diagnostic.message)
    if unknown is not None:
        return _import_model(analysis, diagnostic, unknown.group(1))
    return None


def _change_layer(analysis: Analysis, diagnostic: Diagnostic, name: str, ctor: str) -> Fix | None:
    """Replace the constructor of the layer the diagnostic points at as declared."""
    declared = [label.span for label in diagnostic.secondary]
    for module in _modules(analysis):
        for model in module.models():
            for layer in model.layers:
                if layer.name == name and (not declared or layer.span in declared):
                    edits = {layer.ctor.span.file: [(layer.ctor.span, ctor)]}
                    return Fix(f"change `{name}` to `{ctor}`", diagnostic, edits)
    return None


def _modules(analysis: Analysis) -> list[ast.Module]:
    program = analysis.program
    if program is None:
        return [analysis.root] if analysis.root is not None else []
    return [u.module for u in program.units()]


def _respell(analysis: Analysis, diagnostic: Diagnostic, guess: str) -> Fix | None:
    """Replace the word of the primary span nearest to the guess's name with that name."""
    words = WORD.findall(guess)
    span = diagnostic.primary.span
    if not words or span.line != span.end_line or span.file != analysis.path:
        return None
    wanted = words[-1]
    text = analysis.line(span.line)[span.col - 1 : span.end_col - 1]
    found = [
        (m, difflib.SequenceMatcher(None, m.group(), wanted).ratio()) for m in WORD.finditer(text)
    ]
    found = [(m, ratio) for m, ratio in found if m.group() != wanted]
    if not found:
        return None
    match = max(found, key=lambda hit: hit[1])[0]
    start = span.col + match.start()
    where = Span(span.file, span.line, start, span.line, start + len(match.group()))
    return Fix(
        f"change `{match.group()}` to `{wanted}`", diagnostic, {span.file: [(where, wanted)]}
    )


def _import_model(analysis: Analysis, diagnostic: Diagnostic, name: str) -> Fix | None:
    """`import X.nml` for an `.nml` beside the file that declares the model (a .tl only:
    an .nml file imports nothing)."""
    if analysis.path.endswith(".nml"):
        return None
    folder = os.path.dirname(os.path.abspath(analysis.path))
    declares = re.compile(rf"^@model\s+{re.escape(name)}\s*:", re.MULTILINE)
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if not entry.endswith(".nml") or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            if declares.search(handle.read()) is None:
                continue
        line = _import_line(analysis)
        at = Span(analysis.path, line, 1, line, 1)
        edit = (at, f"import {entry}\n")
        return Fix(f"import `{name}` from `{entry}`", diagnostic, {analysis.path: [edit]})
    return None


def _import_line(analysis: Analysis) -> int:
    """Where a new import goes: after the last import, else after the header comment."""
    root = analysis.root
    imports = list(root.imports()) if root is not None else []
    if imports:
        return imports[-1].span.end_line + 1
    number = 1
    while analysis.line(number).startswith("//"):
        number += 1
    return number
