"""Semantic tokens: what each name is, so an editor colours layers, dims, configs, models and keys.

    @forward(idx: Tensor[B, T]):        B, T: dim (typeParameter)
        x = drop(wte(idx) + wpe(pos))   drop, wte, wpe: layer (property)
    let model = GPT(n_layer=4)          GPT: model (class); n_layer: config (parameter)
        epochs = 2                      epochs: train key (keyword)
        step f with Adam(net)           step (and group, carry): keyword

The file is lexed again (the names' exact positions) and each name classified from the
AST: a model's layers and config inside its block, the dims of each function's shapes
inside the function, the models the file can name (imports and aliases included), the
keyword arguments of a model's call (its config), and a train block's keys. A name it
cannot tell stays for the editor's grammar to colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.source import Span
from tensorloom.tools.lsp import navigate
from tensorloom.tools.lsp.document import contains

if TYPE_CHECKING:
    from tensorloom.frontend.tokens import Token
    from tensorloom.tools.lsp.document import Analysis

# The legend the server announces: each kind's LSP token type, in this order.
TOKEN_TYPES = {
    "model": "class",
    "layer": "property",
    "config": "parameter",
    "dim": "typeParameter",
    "key": "keyword",
}
LEGEND = list(dict.fromkeys(TOKEN_TYPES.values()))


@dataclass(frozen=True, slots=True)
class Classified:
    line: int
    col: int
    length: int
    kind: str  # a TOKEN_TYPES key


def classify(analysis: Analysis) -> list[Classified]:
    """Every name of the document that is a model, layer, config entry, dim or train key."""
    from tensorloom.diagnostics import DiagnosticSink
    from tensorloom.frontend.lexer import tokenize
    from tensorloom.frontend.tokens import TokenKind

    root = analysis.root
    if root is None:
        return []
    tokens = tokenize(analysis.text, analysis.path, DiagnosticSink())
    fixed = _declared_kinds(analysis, root)
    models = set(navigate.models_in_scope(analysis))
    found: list[Classified] = []
    for index, token in enumerate(tokens):
        if token.kind is not TokenKind.NAME:
            continue
        after_dot = index > 0 and tokens[index - 1].kind is TokenKind.DOT
        kind = fixed.get((token.span.line, token.span.col))
        if kind is None:
            owner = tokens[index - 2] if index > 1 else None
            kind = _scoped_kind(root, token, after_dot, owner, models)
        if kind:
            found.append(Classified(token.span.line, token.span.col, len(token.text), kind))
    return found


def _declared_kinds(analysis: Analysis, root: ast.Module) -> dict[tuple[int, int], str]:
    """Names whose kind the syntax fixes: train keys and the words that start a train block's
    `step`, `group` and `carry` lines, and the config keywords of model calls."""
    models = navigate.models_in_scope(analysis)
    kinds: dict[tuple[int, int], str] = {}
    for node in navigate.walk(root):
        if isinstance(node, ast.TrainSetting):
            kinds[(node.key_span.line, node.key_span.col)] = "key"
        if isinstance(node, ast.TrainStep | ast.TrainGroup | ast.TrainCarry):
            kinds[(node.span.line, node.span.col)] = "key"  # the line's `step`, `group`, `carry`
        if isinstance(node, ast.Call):
            callee = node.func.id if isinstance(node.func, ast.Name) else ""
            for keyword in node.kwargs:  # a layer's or function's own keyword: none
                kinds[(keyword.span.line, keyword.span.col)] = "config" if callee in models else ""
    return kinds


def _scoped_kind(root: ast.Module, token: Token, after_dot: bool, owner: Token | None,
                 models: set[str]) -> str | None:  # fmt: skip
    """A layer or config entry inside its model, a dim inside its function, or a model."""
    line, col, name = token.span.line, token.span.col, token.text
    model = navigate.enclosing_model(root, line, col)
    member = not after_dot or (owner is not None and owner.text == "self")
    if model is not None and member:
        if any(layer.name == name for layer in model.layers):
            return "layer"
        if any(entry.name == name for entry in model.config) and not after_dot:
            return "config"
    if not after_dot and name in _dims_around(root, line, col):
        return "dim"
    return "model" if name in models and not after_dot else None


def _dims_around(root: ast.Module, line: int, col: int) -> set[str]:
    """The named dims of the shapes written in the function around the position."""
    functions = [n for n in navigate.enclosing(root, line, col) if isinstance(n, ast.FnDecl)]
    if not functions:
        return set()
    function = functions[-1]
    types = [p.type for p in function.params if p.type is not None]
    types += [function.return_type] if function.return_type is not None else []
    return {d for t in types for d in _dims_of(t)}


def _dims_of(kind: ast.TypeExpr) -> set[str]:
    names = {d.value for d in kind.dims or [] if isinstance(d.value, str)}
    for element in kind.elements or []:
        names |= _dims_of(element)
    return names


def encode(found: list[Classified]) -> list[int]:
    """LSP's relative encoding: (delta line, delta start, length, type, modifiers) per token."""
    data: list[int] = []
    line, col = 1, 1
    for item in sorted(found, key=lambda c: (c.line, c.col)):
        delta_line = item.line - line
        delta_col = item.col - col if delta_line == 0 else item.col - 1
        kind = LEGEND.index(TOKEN_TYPES[item.kind])
        data += [delta_line, delta_col, item.length, kind, 0]
        line, col = item.line, item.col
    return data


def span_of(item: Classified, path: str) -> Span:
    return Span(path, item.line, item.col, item.line, item.col + item.length)


def kind_at(analysis: Analysis, line: int, col: int) -> str | None:
    """The kind of the name at the position, if it is one of the classified kinds."""
    return next(
        (c.kind for c in classify(analysis) if contains(span_of(c, analysis.path), line, col)),
        None,
    )
