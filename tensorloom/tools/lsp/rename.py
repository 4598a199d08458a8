"""Rename and references: a layer, config entry, model, dim, import alias or local, in every
file that names it.

    rename(analysis, 25, 9, "fc_in", files)  # {path: [(Span of each `c_fc`, "fc_in"), ...]}

What the name under the cursor is decides where it is renamed:

    a local (parameter, `let`, loop variable) or a dim    the function around it
    a layer, config entry or method                      its model's block (`self.x`, bare `x`),
                                                         and for a config entry, the keyword
                                                         arguments of the model's calls in
                                                         every file that imports it
    a model                                              its file and every file importing it
                                                         (an alias spelled as the model is
                                                         renamed with it; another alias stays)
    an import alias, or a top-level `let`               its file

Occurrences are the file's NAME tokens (lexed again, so positions are exact), never one
after a `.` other than `self.`, and never the keyword of a call that does not set the
model's config (`MultiHeadAttention(dropout=dropout)` keeps its first `dropout`). The
files searched are the workspace's `.tl` and `.nml` files and the open documents (their
editor text).
"""

from __future__ import annotations

import keyword
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.source import Span
from tensorloom.tools.lsp import navigate
from tensorloom.tools.lsp.document import contains

if TYPE_CHECKING:
    from tensorloom.frontend.tokens import Token
    from tensorloom.tools.lsp.document import Analysis

Edits = dict[str, list[tuple[Span, str]]]
ReadText = Callable[[str], "str | None"]  # a path's current text (the editor's, else the disk's)


class RenameError(Exception):
    """Why the name cannot be renamed (shown to the user)."""


@dataclass(frozen=True, slots=True)
class Target:
    """What a rename changes: `name` of `kind`, within `scope` of `path`."""

    name: str
    kind: str  # "local", "dim", "member", "config", "model", "file"
    path: str
    scope: Span  # the function, model or whole file searched in `path`
    model: str = ""  # for "config" and "model": the model's name


def prepare(analysis: Analysis, line: int, col: int) -> Span | None:
    """The span of the renameable name at the position, or None."""
    word = analysis.word_at(line, col)
    if word is None or target(analysis, line, col) is None:
        return None
    return word[1]


def target(analysis: Analysis, line: int, col: int) -> Target | None:
    """What the name at the position is, as a rename sees it; None for a builtin."""
    root = analysis.root
    word = analysis.word_at(line, col)
    if root is None or word is None:
        return None
    name, _, owner = word
    model = navigate.enclosing_model(root, line, col)
    keyword_of = navigate.config_keyword(analysis, root, line, col)
    if keyword_of is not None:
        return _config(analysis, keyword_of, name)
    if owner not in ("", "self"):
        return None
    if owner == "self":
        return _member(analysis, model, name) if model is not None else None
    function = navigate.enclosing_function(root, line, col)
    if function is not None and navigate.local(root, name, line, col) is not None:
        return Target(name, "local", analysis.path, function.span)
    if function is not None and navigate.dim(root, name, line, col) is not None:
        return Target(name, "dim", analysis.path, function.span)
    if model is not None and navigate.member(model, name) is not None:
        return _member(analysis, model, name)
    return _top_level(analysis, root, name)


def _member(analysis: Analysis, model: ast.ModelDecl, name: str) -> Target | None:
    if navigate.member(model, name) is None:
        return None
    if any(entry.name == name for entry in model.config):
        return Target(name, "config", analysis.path, model.span, model.name)
    return Target(name, "member", analysis.path, model.span, model.name)


def _config(analysis: Analysis, entry: Span, name: str) -> Target | None:
    for model in navigate.models_in_scope(analysis).values():
        if any(c.name_span == entry for c in model.config):
            return Target(name, "config", entry.file, model.span, model.name)
    return None


def _top_level(analysis: Analysis, root: ast.Module, name: str) -> Target | None:
    whole = _file_span(analysis.path)
    if name in {i.alias for i in root.imports()}:
        return Target(name, "file", analysis.path, whole)
    models = navigate.models_in_scope(analysis)
    if name in models:
        declared = models[name]
        return Target(name, "model", declared.span.file, _file_span(declared.span.file), name)
    if any(isinstance(i, ast.LetStmt) and i.name == name for i in root.items):
        return Target(name, "file", analysis.path, whole)
    return None


def _file_span(path: str) -> Span:
    return Span(path, 1, 1, 1 << 30, 1)


def rename(analysis: Analysis, line: int, col: int, new_name: str, files: list[str],
           read: ReadText) -> Edits:  # fmt: skip
    """The edits that rename the name at the position to `new_name`, by file."""
    if not new_name.isidentifier() or keyword.iskeyword(new_name) or _is_keyword(new_name):
        raise RenameError(f"`{new_name}` is not a valid name")
    found = target(analysis, line, col)
    if found is None:
        raise RenameError("only a model, layer, config entry, dim, alias or local can be renamed")
    _check_alias(analysis, found.name, new_name)
    spans = references(found, files, read)
    return {path: [(s, new_name) for s in found_spans] for path, found_spans in spans.items()}


def references(found: Target, files: list[str], read: ReadText) -> dict[str, list[Span]]:
    """Every place that names `found` (its declaration included), by file."""
    spans: dict[str, list[Span]] = {}
    own = read(found.path)
    if own is not None:
        here = occurrences(found, own, found.scope)
        if found.kind == "config":  # the model's calls elsewhere in its own file
            here += [s for s in _in_importer(found, found.path, own) if s not in here]
        spans[found.path] = here
    if found.kind in ("model", "config"):
        for path in _importers(found.path, files, read):
            text = read(path)
            if text is not None:
                spans.setdefault(path, []).extend(_in_importer(found, path, text))
    return {path: found_spans for path, found_spans in spans.items() if found_spans}


def _check_alias(analysis: Analysis, alias: str, new_name: str) -> None:
    """An alias of a file with several models names one of them by its spelling: keep it so."""
    program, root = analysis.program, analysis.root
    model = program.root.aliases.get(alias) if program is not None else None
    imports = [i for i in root.imports() if i.alias == alias] if root is not None else []
    if model is None or not imports:
        return
    target_path = os.path.normpath(os.path.join(os.path.dirname(analysis.path), imports[0].path))
    units = [u for u in program.imported if _same_file(u.path, target_path)]  # type: ignore[union-attr]
    names = [m.name for m in units[0].module.models()] if units else []
    stem = os.path.splitext(os.path.basename(target_path))[0]
    if len(names) > 1 and _simple(new_name) not in (_simple(model), _simple(stem)):
        raise RenameError(
            f"`{imports[0].path}` holds several models and its alias picks `{model}` by name: "
            f"`{new_name}` would not say which (rename the model instead)"
        )


def _simple(name: str) -> str:
    """As imports.py compares an alias with a model's name: case and `_` aside."""
    return name.replace("_", "").lower()


def _is_keyword(name: str) -> bool:
    from tensorloom.frontend.tokens import KEYWORDS

    return name in KEYWORDS


def occurrences(found: Target, text: str, scope: Span) -> list[Span]:
    """The NAME tokens of `text` inside `scope` that are `found` (see the module docstring)."""
    tokens, calls = _lex(scope.file, text)
    spans: list[Span] = []
    for index, token in enumerate(tokens):
        if not _is_name(token, found.name) or not contains(scope, token.span.line, token.span.col):
            continue
        in_model = found.kind in ("member", "config")
        if _after_dot(tokens, index) and not (in_model and _after_self(tokens, index)):
            continue
        callee = calls.get((token.span.line, token.span.col))
        if callee is not None and not (found.kind == "config" and callee == found.model):
            continue  # another call's keyword
        spans.append(token.span)
    return spans


def _in_importer(found: Target, path: str, text: str) -> list[Span]:
    """A model's name (and an alias spelled as it), or the config keywords of its calls."""
    whole = _file_span(path)
    if found.kind == "model":
        return occurrences(Target(found.name, "file", path, whole), text, whole)
    tokens, calls = _lex(path, text)
    aliases = _aliases_of(path, text, found)
    return [
        t.span
        for t in tokens
        if _is_name(t, found.name) and calls.get((t.span.line, t.span.col)) in aliases
    ]


def _aliases_of(path: str, text: str, found: Target) -> set[str]:
    """The names `path` calls the model by: its own, and the aliases of imports of its file."""
    from tensorloom.diagnostics import DiagnosticSink
    from tensorloom.frontend.imports import import_path
    from tensorloom.frontend.parser import parse_text

    module = parse_text(text, path, DiagnosticSink())
    names = {found.model}
    for item in module.imports():
        same = _same_file(import_path(path, item.path), found.path)
        if same and item.alias is not None:
            names.add(item.alias)
    return names


def _lex(path: str, text: str) -> tuple[list[Token], dict[tuple[int, int], str]]:
    """The tokens, and where each call's keyword argument is -> the callee's name."""
    from tensorloom.diagnostics import DiagnosticSink
    from tensorloom.frontend.lexer import tokenize
    from tensorloom.frontend.parser import parse_text

    tokens = tokenize(text, path, DiagnosticSink())
    module = parse_text(text, path, DiagnosticSink())
    calls: dict[tuple[int, int], str] = {}
    for node in navigate.walk(module):
        if isinstance(node, ast.Call):
            callee = node.func.id if isinstance(node.func, ast.Name) else ""
            calls.update({(k.span.line, k.span.col): callee for k in node.kwargs})
    return tokens, calls


def _is_name(token: Token, name: str) -> bool:
    from tensorloom.frontend.tokens import TokenKind

    return token.kind is TokenKind.NAME and token.text == name


def _after_dot(tokens: list[Token], index: int) -> bool:
    from tensorloom.frontend.tokens import TokenKind

    return index > 0 and tokens[index - 1].kind is TokenKind.DOT


def _after_self(tokens: list[Token], index: int) -> bool:
    return index > 1 and tokens[index - 2].text == "self"


def _importers(path: str, files: list[str], read: ReadText) -> list[str]:
    """The files among `files` that import `path`."""
    from tensorloom.diagnostics import DiagnosticSink
    from tensorloom.frontend.imports import import_path
    from tensorloom.frontend.parser import parse_text

    found: list[str] = []
    for candidate in files:
        text = read(candidate)
        if _same_file(candidate, path) or text is None or "import" not in text:
            continue
        module = parse_text(text, candidate, DiagnosticSink())
        if any(_same_file(import_path(candidate, i.path), path) for i in module.imports()):
            found.append(candidate)
    return found


def _same_file(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def workspace_files(folders: list[str], limit: int = 2000) -> list[str]:
    """The `.tl` and `.nml` files under the workspace folders (hidden folders skipped)."""
    found: list[str] = []
    for folder in folders:
        for directory, subfolders, names in os.walk(folder):
            subfolders[:] = [s for s in subfolders if not s.startswith(".") and s != "node_modules"]
            found += [os.path.join(directory, n) for n in names if n.endswith((".tl", ".nml"))]
            if len(found) >= limit:
                return found[:limit]
    return found
