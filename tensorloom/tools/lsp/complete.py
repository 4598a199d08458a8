"""Completion: what may be written at a position, from the catalogues the checker reads.

    self.|                  the model's layers, config entries and methods
    train net on data:
        |                   train settings (`epochs`, `optimizer`, ...)
        optimizer = |       optimizers; `loss = |` losses; `lr_schedule = |` schedules
    Block(|                 the model's config entries, as overrides (`d_model=`)
    Linear(|                the layer's constructor parameters (`bias=`)
    anywhere else           layer types, functions, models, kernels and keywords

The context is read from the text before the cursor (the file may not parse
while it is being typed) and the names from the document's last AST.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.tools.lsp import navigate

if TYPE_CHECKING:
    from tensorloom.tools.lsp.document import Analysis

MEMBER = re.compile(r"\bself\.(\w*)$")
SETTING_KEY = re.compile(r"\s+(\w*)$")
SETTING_VALUE = re.compile(r"\s+(\w+)\s*=\s*(\w*)$")
CALL_OPEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\($")
# Words the parser reads as keywords only where a declaration starts (parser.py's
# `check_word`), so they are not in the lexer's KEYWORDS.
CONTEXTUAL_KEYWORDS = ("model", "layer", "train", "on", "checkpoint", "every", "step", "group")


@dataclass(frozen=True, slots=True)
class Item:
    """One completion: the text, what it is, and a one-line detail."""

    label: str
    kind: str  # layer, function, setting, optimizer, loss, schedule, config, argument,
    # model, kernel, member, keyword
    detail: str = ""
    insert: str | None = None  # the text inserted, when it is not the label


def completions(analysis: Analysis, line: int, col: int) -> list[Item]:
    before = analysis.line(line)[: col - 1]
    member = MEMBER.search(before)
    if member is not None:
        model = navigate.enclosing_model(analysis.root, line, col)
        return _members(analysis, model) if model is not None else []
    if _block_header(analysis, line).startswith("train "):
        items = _train(analysis, before)
        if items is not None:
            return items
    return _arguments(analysis, before) + _everything(analysis)


def _members(analysis: Analysis, model: ast.ModelDecl) -> list[Item]:
    layers = [Item(d.name, "member", _text(analysis, d.ctor)) for d in model.layers]
    config = [
        Item(e.name, "config", f"config, default {_text(analysis, e.value)}") for e in model.config
    ]
    methods = [Item(m.name, "member", "method") for m in model.methods]
    return layers + config + methods


def _train(analysis: Analysis, before: str) -> list[Item] | None:
    """Setting keys at the start of a train-block line, or the values of one key.

    A loss is one of the catalogue's, or a function the file declares (a loss fn).
    """
    from tensorloom.catalogue.train_rules import LOSSES, OPTIMIZERS, SCHEDULES
    from tensorloom.passes.check_train import SETTINGS

    if SETTING_KEY.fullmatch(before):
        return [Item(k, "setting", s.doc, f"{k} = ") for k, s in SETTINGS.items()]
    value = SETTING_VALUE.fullmatch(before)
    if value is None:
        return None
    names: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
        "optimizer": ("optimizer", OPTIMIZERS),
        "loss": ("loss", LOSSES),
        "lr_schedule": ("schedule", SCHEDULES),
    }
    if value.group(1) not in names:
        return []
    kind, catalogue = names[value.group(1)]
    items = [Item(n, kind, f"({', '.join(args)})" if args else "") for n, args in catalogue.items()]
    if kind == "loss":
        items += _functions(analysis)
    return items


def _arguments(analysis: Analysis, before: str) -> list[Item]:
    """Keyword arguments of the call being written: config overrides, or a layer's parameters."""
    from tensorloom.catalogue.layers import lookup, py_literal

    callee = _open_callee(before)
    if callee is None:
        return []
    model = navigate.models_in_scope(analysis).get(callee)
    if model is not None:
        return [
            Item(f"{e.name}=", "config", f"default {_text(analysis, e.value)}")
            for e in model.config
        ]
    spec = lookup(callee)
    if spec is None:
        return []
    return [
        Item(f"{p.name}=", "argument", "required" if p.required else py_literal(p.default))
        for p in spec.params
    ]


def _open_callee(before: str) -> str | None:
    """The name of the innermost call whose `(` is still open before the cursor."""
    depth = 0
    for index in range(len(before) - 1, -1, -1):
        char = before[index]
        if char == ")":
            depth += 1
        elif char == "(" and depth:
            depth -= 1
        elif char == "(":
            match = CALL_OPEN.search(before[: index + 1])
            return match.group(1) if match else None
    return None


def _everything(analysis: Analysis) -> list[Item]:
    from tensorloom.catalogue.functions import FUNCTIONS
    from tensorloom.catalogue.layers import LAYERS
    from tensorloom.frontend.tokens import KEYWORDS
    from tensorloom.tools.lsp.hover import signature

    items = [Item(n, "layer", signature(s).splitlines()[1]) for n, s in LAYERS.items()]
    items += [Item(n, "function", f.signature) for n, f in FUNCTIONS.items()]
    items += [Item(n, "model", "model") for n in navigate.models_in_scope(analysis)]
    items += _top_level(analysis)
    words = [*(k for k in KEYWORDS if k.isidentifier()), *CONTEXTUAL_KEYWORDS]
    items += [Item(k, "keyword") for k in words]
    return items


def _top_level(analysis: Analysis) -> list[Item]:
    """The file's kernels (and their launchers), functions and `let`s."""
    root = analysis.root
    if root is None:
        return []
    items: list[Item] = []
    for node in root.items:
        if isinstance(node, ast.KernelDecl):
            launcher = node.name + navigate.LAUNCHER_SUFFIX
            items += [Item(node.name, "kernel", "Triton kernel")]
            items += [Item(launcher, "function", f"launches `{node.name}`")]
        elif isinstance(node, ast.LetStmt):
            items.append(Item(node.name, "variable", _text(analysis, node.value)))
        elif navigate.is_declaration(node) and not isinstance(node, ast.ModelDecl | ast.FnDecl):
            items.append(Item(navigate.name_of(node)[0], "function", type(node).__name__))
    return items + _functions(analysis)


def _functions(analysis: Analysis) -> list[Item]:
    """The functions the file declares at its top level (loss functions, helpers)."""
    root = analysis.root
    nodes = root.items if root is not None else []
    return [
        Item(n.name, "function", "declared in this file")
        for n in nodes
        if isinstance(n, ast.FnDecl)
    ]


def _block_header(analysis: Analysis, line: int) -> str:
    """The header line (`train net on data:`) of the block the line is indented in."""
    text = analysis.line(line)
    indent = len(text) - len(text.lstrip()) if text.strip() else len(text)
    if indent == 0:
        return ""
    for number in range(line - 1, 0, -1):
        above = analysis.line(number)
        if above.strip() and len(above) - len(above.lstrip()) < indent:
            return above.strip()
    return ""


def _text(analysis: Analysis, node: ast.Node) -> str:
    """The source of an expression (its first line), for a completion's detail."""
    from tensorloom.tools.lsp.hover import source_text

    return source_text(analysis, node.span)
