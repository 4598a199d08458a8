"""Completion: what may be written at a position, from the catalogues the checker reads.

    self.|                  the model's layers, config entries and methods; `net.|` those
                            of the instance `net` (`carry h = net.h0`, `params(net.h)`)
    train net on data:
        |                   train settings (`epochs`, `optimizer`, ...) and the lines
                            `step`, `group`, `carry`, `checkpoint every`; in a block of
                            `step` lines only the settings such a block takes
        optimizer = |       optimizers; `loss = |` losses; `lr_schedule = |` schedules;
                            `objective = |` the file's functions; `target = |` the data's fields
        step |              the file's functions (objectives); `step f with |` optimizers
    weights net from "w" using |   the `@weights` maps of the file's imports
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
from tensorloom.tools.lsp import navigate, train_lines

if TYPE_CHECKING:
    from tensorloom.catalogue.datasets import DataField
    from tensorloom.tools.lsp.document import Analysis

TRAIN_HEADER = re.compile(r"train\s+.*\bon\s+(\w+)\s*:")
MEMBER = re.compile(r"\bself\.(\w*)$")
INSTANCE_MEMBER = re.compile(r"(?<![\w.])(\w+)\.\w*$")
SETTING_KEY = re.compile(r"\s+(\w*)$")
SETTING_VALUE = re.compile(r"\s+(\w+)\s*=\s*(\w*)$")
STEP_OBJECTIVE = re.compile(r"\s+step\s+(\w*)$")
STEP_LINE = re.compile(r"\s+step\s+\w+\s+with\b")
OBJECTIVE_LINE = re.compile(r"\s+objective\s*=")
GROUP_LINE = re.compile(r"\s+group\s+(\w+)\s*=")
USING = re.compile(r"\s*weights\s+\w+\s+from\s+\"[^\"]*\"\s+using\s+(\w*)$")
CALL_OPEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\($")
# Words the parser reads as keywords only where a declaration or a line starts (parser.py's
# `check_word`), so they are not in the lexer's KEYWORDS.
CONTEXTUAL_KEYWORDS = (
    "model", "layer", "train", "on", "checkpoint", "every", "step", "group", "carry",
    "weights", "using", "epoch", "until",
)  # fmt: skip
# The lines a train block holds besides `key = value`, as completed at a line's start.
TRAIN_LINES = (
    ("step", "step OBJECTIVE with OPTIMIZER(...): one optimizer step of each batch", "step "),
    ("group", "group NAME = params(...): parameters for a step's optimizer", "group "),
    ("carry", "carry NAME = VALUE: a value kept from one batch to the next", "carry "),
    ("checkpoint", "checkpoint every N epochs|steps", "checkpoint every "),
)
# What a block of `step` lines does with a key (train_keys.py's `steps`): these it reads.
STEP_KEYS = ("taken", "per_optimizer")


@dataclass(frozen=True, slots=True)
class Item:
    """One completion: the text, what it is, and a one-line detail."""

    label: str
    kind: str  # layer, function, setting, optimizer, loss, schedule, config, argument,
    # model, kernel, member, keyword, field, weights
    detail: str = ""
    insert: str | None = None  # the text inserted, when it is not the label


def completions(analysis: Analysis, line: int, col: int) -> list[Item]:
    before = analysis.line(line)[: col - 1]
    member = MEMBER.search(before)
    if member is not None:
        model = navigate.enclosing_model(analysis.root, line, col)
        return _members(analysis, model) if model is not None else []
    owner = INSTANCE_MEMBER.search(before)
    model = _instances(analysis).get(owner.group(1)) if owner is not None else None
    if model is not None:  # `carry h = net.|`, `params(net.|`: the instance's layers
        return _members(analysis, model)
    if _block_header(analysis, line).startswith("train "):
        items = _train(analysis, line, before)
        if items is not None:
            return items
    using = USING.fullmatch(before)
    if using is not None:
        return _weights_maps(analysis)
    return _arguments(analysis, before) + _everything(analysis)


def _members(analysis: Analysis, model: ast.ModelDecl) -> list[Item]:
    layers = [Item(d.name, "member", _text(analysis, d.ctor)) for d in model.layers]
    config = [
        Item(e.name, "config", f"config, default {_text(analysis, e.value)}") for e in model.config
    ]
    methods = [Item(m.name, "member", "method") for m in model.methods]
    return layers + config + methods


def _train(analysis: Analysis, line: int, before: str) -> list[Item] | None:
    """Setting keys and line starters at the start of a train-block line, a `step` line's
    objective, optimizers and their arguments, or the values of one key."""
    if SETTING_KEY.fullmatch(before):
        return _line_starts(analysis, line)
    if STEP_LINE.match(before) or STEP_OBJECTIVE.fullmatch(before):
        return _step(analysis, line, before)
    value = SETTING_VALUE.fullmatch(before)
    return _setting_values(analysis, line, value.group(1)) if value is not None else None


def _line_starts(analysis: Analysis, line: int) -> list[Item]:
    """Every key (in a block of `step` lines, those such a block takes; with steps or an
    `objective`, no `target`), and the lines `step`, `group`, `carry` and `checkpoint every`."""
    from tensorloom.catalogue.train_keys import KEYS

    steps = _block_has(analysis, line, STEP_LINE)
    keys = [k for k in KEYS.values() if not steps or k.steps in STEP_KEYS]
    if steps or _block_has(analysis, line, OBJECTIVE_LINE):
        keys = [k for k in keys if k.name != "target"]  # no loss to pick a field for: TL0471
    items = [Item(k.name, "setting", k.summary, f"{k.name} = ") for k in keys]
    return items + [Item(word, "keyword", doc, insert) for word, doc, insert in TRAIN_LINES]


def _step(analysis: Analysis, line: int, before: str) -> list[Item]:
    """`step |`: the file's functions; `step f with |`: optimizers; inside `AdamW(|`: the
    block's groups and models, the optimizer's arguments and the keys a step's optimizer
    takes (`grad_clip=`)."""
    from tensorloom.catalogue.train_keys import KEYS
    from tensorloom.catalogue.train_rules import OPTIMIZERS

    if STEP_OBJECTIVE.fullmatch(before):
        return _functions(analysis)
    callee = _open_callee(before)
    if callee is None:
        return _catalogue_items("optimizer", OPTIMIZERS)
    if callee not in OPTIMIZERS:
        return []
    groups = [
        Item(n, "variable", "a parameter group of this block") for n in _groups(analysis, line)
    ]
    models = [Item(n, "variable", "a model instance") for n in _instances(analysis)]
    args = [Item(f"{a}=", "argument", f"of `{callee}`") for a in OPTIMIZERS[callee]]
    per_step = [k for k in KEYS.values() if k.steps == "per_optimizer"]
    return groups + models + args + [Item(f"{k.name}=", "setting", k.summary) for k in per_step]


def _setting_values(analysis: Analysis, line: int, key: str) -> list[Item]:
    """The values of `key = |`: a catalogue's (a loss may be a function of the file too), the
    file's functions for `objective`, the data's fields for `target`."""
    from tensorloom.catalogue.train_rules import LOSSES, OPTIMIZERS, SCHEDULES

    if key == "objective":
        return _functions(analysis)
    if key == "target":
        fields = _data_fields(analysis, line)
        return [Item(f.name, "field", train_lines.field_detail(f)) for f in fields]
    names: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
        "optimizer": ("optimizer", OPTIMIZERS),
        "loss": ("loss", LOSSES),
        "lr_schedule": ("schedule", SCHEDULES),
    }
    if key not in names:
        return []
    kind, catalogue = names[key]
    items = _catalogue_items(kind, catalogue)
    return items + _functions(analysis) if kind == "loss" else items


def _groups(analysis: Analysis, line: int) -> list[str]:
    """The `group NAME = ...` lines of the train block around `line`."""
    start, end = _block_lines(analysis, line)
    found = (GROUP_LINE.match(analysis.line(n)) for n in range(start, end))
    return [m.group(1) for m in found if m is not None]


def _instances(analysis: Analysis) -> dict[str, ast.ModelDecl]:
    """The file's `let NAME = Model(...)` instances, and their models."""
    root = analysis.root
    models = navigate.models_in_scope(analysis)
    lets = [n for n in root.items if isinstance(n, ast.LetStmt)] if root is not None else []
    called = {let.name: _callee_name(let.value) for let in lets}
    return {name: models[model] for name, model in called.items() if model in models}


def _callee_name(value: ast.Expr) -> str | None:
    func = value.func if isinstance(value, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else None


def _catalogue_items(kind: str, catalogue: dict[str, tuple[str, ...]]) -> list[Item]:
    return [Item(n, kind, f"({', '.join(args)})" if args else "") for n, args in catalogue.items()]


def _block_has(analysis: Analysis, line: int, pattern: re.Pattern[str]) -> bool:
    """Whether another line of the train block around `line` matches `pattern`."""
    start, end = _block_lines(analysis, line)
    return any(pattern.match(analysis.line(n)) for n in range(start, end) if n != line)


def _block_lines(analysis: Analysis, line: int) -> tuple[int, int]:
    """The lines of the block around `line`: from its header's next line to its last."""
    header = line
    while header > 1 and not _is_header(analysis.line(header)):
        header -= 1
    end = line + 1
    while end <= analysis.line_count() and not _is_header(analysis.line(end)):
        end += 1
    return header + 1, end


def _is_header(text: str) -> bool:
    return bool(text.strip()) and not text[0].isspace()


def _data_fields(analysis: Analysis, line: int) -> list[DataField]:
    """The named fields of the data the train block around `line` trains on."""
    header = TRAIN_HEADER.match(analysis.line(_block_lines(analysis, line)[0] - 1))
    return train_lines.data_fields(analysis, header.group(1)) if header is not None else []


def _weights_maps(analysis: Analysis) -> list[Item]:
    return [
        Item(m.name, "weights", f"`@weights {m.name} for {m.model}`")
        for m in navigate.weights_maps(analysis)
    ]


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
