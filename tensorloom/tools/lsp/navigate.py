"""Names in a document: the outline, what encloses a position, where a name is defined.

    symbols(root)                       # [Symbol("Classifier", "model", ..., children=[fc1, ...])]
    definition(analysis, line=12, col=30)   # Span of `layer fc1 = ...` for `self.fc1`

A declaration is any AST node with a `name` and a `name_span` (models, layers,
config entries, methods, kernels, functions, `let`s), found by walking the tree
generically, so declarations added to the language later are outlined and found
too. Lookup goes from the innermost scope out: the method's parameters and
`let`s, the model's layers, config and methods, then the top level of the file
and of every file it imports (aliases included), and `<kernel>_launcher`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.source import Span
from tensorloom.tools.lsp.document import contains

if TYPE_CHECKING:
    from tensorloom.tools.lsp.document import Analysis

LAUNCHER_SUFFIX = "_launcher"
KINDS: dict[type[ast.Node], str] = {
    ast.ModelDecl: "model",
    ast.LayerDecl: "layer",
    ast.ConfigEntry: "config",
    ast.KernelDecl: "kernel",
    ast.LetStmt: "variable",
    ast.ImportDecl: "import",
    ast.TrainDecl: "train",
    ast.WeightsMapDecl: "weights",
}


@dataclass
class Symbol:
    """One entry of the outline."""

    name: str
    kind: str  # a KINDS value, "method" or "function"
    span: Span
    name_span: Span
    children: list[Symbol] = field(default_factory=list)


def is_declaration(node: ast.Node) -> bool:
    return isinstance(getattr(node, "name", None), str) and hasattr(node, "name_span")


def name_of(node: ast.Node) -> tuple[str, Span]:
    """A declaration's name and its span (nodes of several classes have them)."""
    name, span = getattr(node, "name", None), getattr(node, "name_span", None)
    assert isinstance(name, str) and isinstance(span, Span), node
    return name, span


def symbols(root: ast.Module) -> list[Symbol]:
    """The outline of a file: its declarations, nested as in the source."""
    return [s for item in root.items for s in _symbols_of(item, in_model=False)]


def _symbols_of(node: ast.Node, *, in_model: bool) -> list[Symbol]:
    symbol = _symbol(node, in_model)
    inner = isinstance(node, ast.ModelDecl) or in_model
    children = [s for child in node.children() for s in _symbols_of(child, in_model=inner)]
    if symbol is None:
        return children
    symbol.children = children
    return [symbol]


def _symbol(node: ast.Node, in_model: bool) -> Symbol | None:
    if isinstance(node, ast.ImportDecl):
        name_span = node.alias_span or node.path_span
        return Symbol(node.alias or node.path, "import", node.span, name_span)
    if isinstance(node, ast.TrainDecl):
        return Symbol("train", "train", node.span, node.model.span)
    if not is_declaration(node):
        return None
    kind = KINDS.get(type(node)) or ("method" if in_model else "function")
    name, name_span = name_of(node)
    return Symbol(name, kind, node.span, name_span)


def enclosing(root: ast.Module, line: int, col: int) -> list[ast.Node]:
    """The nodes whose span holds the position, outermost first."""
    chain: list[ast.Node] = []
    nodes: list[ast.Node] = list(root.items)
    while nodes:
        hit = next((n for n in nodes if contains(n.span, line, col)), None)
        if hit is None:
            break
        chain.append(hit)
        nodes = list(hit.children())
    return chain


def enclosing_model(root: ast.Module | None, line: int, col: int) -> ast.ModelDecl | None:
    """The model whose block holds the position (also on its trailing blank lines)."""
    if root is None:
        return None
    models = [m for m in root.models() if (m.span.line, 0) <= (line, col)]
    return models[-1] if models and _in_block(models[-1], root, line) else None


def _in_block(model: ast.ModelDecl, root: ast.Module, line: int) -> bool:
    later = [item.span.line for item in root.items if item.span.line > model.span.line]
    return line <= model.span.end_line or (not later or line < min(later))


def definition(analysis: Analysis, line: int, col: int) -> Span | None:
    """Where the name under the position is declared, or the file an import names."""
    root = analysis.root
    if root is None:
        return None
    target = _import_target(analysis, root, line, col)
    if target is not None:
        return target
    word = analysis.word_at(line, col)
    if word is None:
        return None
    name, _, owner = word
    model = enclosing_model(root, line, col)
    if owner == "self":
        return member(model, name) if model is not None else None
    if owner:
        return None
    return (
        config_keyword(analysis, root, line, col)
        or local(root, name, line, col)
        or (member(model, name) if model else None)
        or dim(root, name, line, col)
        or train_name(root, name, line, col)
        or top_level(analysis, name)
    )


def train_name(root: ast.Module, name: str, line: int, col: int) -> Span | None:
    """A `group` or `carry` of the train block around the position, by its name."""
    blocks = [n for n in enclosing(root, line, col) if isinstance(n, ast.TrainDecl)]
    lines = [*blocks[-1].groups, *blocks[-1].carries] if blocks else []
    return next((n.name_span for n in lines if n.name == name), None)


def config_keyword(analysis: Analysis, root: ast.Module, line: int, col: int) -> Span | None:
    """The config entry a keyword of a model's call sets (`GPT(n_layer=4)`'s `n_layer`)."""
    models = models_in_scope(analysis)
    for node in walk(root):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        for keyword in node.kwargs:
            at = Span(keyword.span.file, keyword.span.line, keyword.span.col,
                      keyword.span.line, keyword.span.col + len(keyword.name))  # fmt: skip
            if contains(at, line, col) and node.func.id in models:
                return member(models[node.func.id], keyword.name)
    return None


def dim(root: ast.Module, name: str, line: int, col: int) -> Span | None:
    """The first place the function around the position writes the dim `name` in a shape."""
    function = enclosing_function(root, line, col)
    if not isinstance(function, ast.FnDecl):
        return None
    types = [p.type for p in function.params if p.type is not None]
    types += [function.return_type] if function.return_type is not None else []
    found = [d.span for t in types for d in t.dims or [] if d.value == name]
    return found[0] if found else None


def _import_target(analysis: Analysis, root: ast.Module, line: int, col: int) -> Span | None:
    from tensorloom.frontend.imports import import_path

    for item in root.imports():
        if contains(item.path_span, line, col):
            path = import_path(analysis.path, item.path)
            return Span(path, 1, 1, 1, 1) if os.path.isfile(path) else None
    return None


def member(model: ast.ModelDecl, name: str) -> Span | None:
    """A layer, config entry or method of `model`."""
    for node in (*model.layers, *model.config, *model.methods):
        if node.name == name:
            return node.name_span
    return None


def local(root: ast.Module, name: str, line: int, col: int) -> Span | None:
    """Where the method or kernel around the position first binds `name`: a parameter, a
    `let` (of a tuple too), a `for` or comprehension variable, or an assignment."""
    scope = enclosing_function(root, line, col)
    if scope is None:
        return None
    for param in scope.params:
        if param.name == name:
            return param.span
    return next((span for node in walk(scope) for span in _binds(node, name)), None)


def enclosing_function(root: ast.Module, line: int, col: int) -> ast.FnDecl | ast.KernelDecl | None:
    scopes = [n for n in enclosing(root, line, col) if isinstance(n, ast.FnDecl | ast.KernelDecl)]
    return scopes[-1] if scopes else None


def _binds(node: ast.Node, name: str) -> list[Span]:
    """The span of `name` where `node` binds it (empty when it does not)."""
    if isinstance(node, ast.LetStmt):
        return [node.name_span] if node.name == name else []
    if isinstance(node, ast.LetTupleStmt):
        return [s for n, s in zip(node.names, node.name_spans, strict=True) if n == name]
    if isinstance(node, ast.ForStmt | ast.ListComp):
        return [node.var_span] if node.var == name else []
    if isinstance(node, ast.AssignStmt) and isinstance(node.target, ast.Name):
        return [node.target.span] if node.target.id == name else []
    return []


def top_level(analysis: Analysis, name: str) -> Span | None:
    """A declaration of the file or of an imported one, by name or import alias."""
    node = top_level_node(analysis, name)
    return name_of(node)[1] if node is not None else None


def top_level_node(analysis: Analysis, name: str) -> ast.Node | None:
    modules, aliases = _scope(analysis)
    wanted = [name, aliases.get(name, name)]
    if name.endswith(LAUNCHER_SUFFIX):
        wanted.append(name.removesuffix(LAUNCHER_SUFFIX))
    for want in wanted:
        for module in modules:
            for item in module.items:
                if is_declaration(item) and name_of(item)[0] == want:
                    return item
    return None


def _scope(analysis: Analysis) -> tuple[list[ast.Module], dict[str, str]]:
    """The modules whose top level is visible (the file first), and its import aliases."""
    program = analysis.program
    root = analysis.root
    if program is None:
        return ([root] if root is not None else []), {}
    units = [program.root, *program.imported]
    return [u.module for u in units], dict(program.root.aliases)


def models_in_scope(analysis: Analysis) -> dict[str, ast.ModelDecl]:
    """Every model the file can name: its own, the imported ones, and aliases of those."""
    modules, aliases = _scope(analysis)
    models = {m.name: m for module in reversed(modules) for m in module.models()}
    models.update({alias: models[name] for alias, name in aliases.items() if name in models})
    return models


def weights_maps(analysis: Analysis) -> list[ast.WeightsMapDecl]:
    """Every `@weights NAME for Model:` map the file can name: its own and the imported ones."""
    modules, _ = _scope(analysis)
    return [n for m in modules for n in m.items if isinstance(n, ast.WeightsMapDecl)]


def walk(node: ast.Node) -> Iterator[ast.Node]:
    """Every node below `node`, parents before children, in source order.

    With a stack rather than recursion: a 1,000-term product nests 1,000 deep."""
    stack = list(reversed(list(node.children())))
    while stack:
        child = stack.pop()
        yield child
        stack.extend(reversed(list(child.children())))
