"""Inlay hints: each binding's shape and each instance's resolved config, where the eye is.

    @forward(idx: Tensor[B, T]):
        let pos: [T] = arange(T)
        x: [B, T, 768] = drop(wte(idx) + wpe(pos))
    let model = GPT(n_layer=4)  block_size=1024, n_head=12, ...

A shape hint follows the name a `let`, an assignment or a parameter without a written
shape binds, anywhere in the file (forwards, loss functions, helpers, objectives); its
shape is the type shape inference gave the bound value in the model's first use (each
use has its own copy of the model; hover shows the same). A config hint follows an
instance's call: the config entries the call leaves at their defaults, as `instantiate`
resolved them onto the `nml.instance` op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.source import Span
from tensorloom.tools.lsp import navigate

if TYPE_CHECKING:
    from xdsl.ir import Attribute

    from tensorloom.tools.lsp.document import Analysis

MAX_CONFIG_HINT = 120  # characters; a longer list ends in `...`


@dataclass(frozen=True, slots=True)
class Hint:
    """A label shown at (line, col), 1-based: "shape" after a name, "config" after a call."""

    line: int
    col: int
    label: str
    kind: str  # "shape" or "config"


def inlay_hints(analysis: Analysis, first: int, last: int, *, shapes: bool = True,
                configs: bool = True) -> list[Hint]:  # fmt: skip
    """The hints on lines `first` to `last`, in source order."""
    root = analysis.root
    if root is None:
        return []
    found: list[Hint] = []
    if shapes:
        found += shape_hints(analysis, root)
    if configs:
        found += config_hints(analysis, root)
    return sorted((h for h in found if first <= h.line <= last), key=lambda h: (h.line, h.col))


def shape_hints(analysis: Analysis, root: ast.Module) -> list[Hint]:
    from tensorloom.tools.lsp.hover import typed_spans

    shapes = dict(typed_spans(analysis))
    found: list[Hint] = []
    for function in _functions(root):
        found += _parameter_hints(analysis, function)
    for node in navigate.walk(root):  # every block a binding can be in, forms added later too
        bound = _binding(node)
        if bound is not None and bound[1] in shapes:
            name_span, value = bound
            found.append(Hint(name_span.end_line, name_span.end_col, f": {shapes[value]}", "shape"))
    return found


def _functions(root: ast.Module) -> list[ast.FnDecl]:
    """Every function of the file: methods of its models and its top-level `fn`s."""
    methods = [m for model in root.models() for m in model.methods]
    return methods + [item for item in root.items if isinstance(item, ast.FnDecl)]


def _binding(node: ast.Node) -> tuple[Span, Span] | None:
    """(the bound name's span, the value's span) of a `let` or an assignment to a name."""
    if isinstance(node, ast.LetStmt):
        return node.name_span, node.value.span
    if isinstance(node, ast.AssignStmt) and isinstance(node.target, ast.Name):
        return node.target.span, node.value.span
    return None


def _parameter_hints(analysis: Analysis, function: ast.FnDecl) -> list[Hint]:
    """A parameter with no written shape (`@forward(x)`): the shape its model gave it."""
    from tensorloom.tools.lsp.hover import parameter_shape

    model = navigate.enclosing_model(analysis.root, function.span.line, function.span.col)
    found: list[Hint] = []
    for param in function.params:
        if param.name == "self" or (param.type is not None and param.type.dims is not None):
            continue
        shape = parameter_shape(analysis, model, param.name, param.span)
        if shape is not None:
            end = param.span.col + len(param.name)
            found.append(Hint(param.span.line, end, f": {shape}", "shape"))
    return found


def config_hints(analysis: Analysis, root: ast.Module) -> list[Hint]:
    """After each instance's call, the config entries it leaves at their defaults."""
    configs = instance_configs(analysis)
    found: list[Hint] = []
    for item in root.items:
        if not isinstance(item, ast.LetStmt) or item.name not in configs:
            continue
        given = {k.name for k in item.value.kwargs} if isinstance(item.value, ast.Call) else set()
        positional = len(item.value.args) if isinstance(item.value, ast.Call) else 0
        rest = [
            f"{k}={v}" for k, v in list(configs[item.name].items())[positional:] if k not in given
        ]
        if rest:
            label = ", ".join(rest)
            label = label if len(label) <= MAX_CONFIG_HINT else label[: MAX_CONFIG_HINT - 3] + "..."
            span = item.value.span
            found.append(Hint(span.end_line, span.end_col, label, "config"))
    return found


def instance_configs(analysis: Analysis) -> dict[str, dict[str, str]]:
    """Each instance's resolved config (`instantiate`'s `config`), its values as source."""
    from xdsl.dialects.builtin import DictionaryAttr

    from tensorloom.dialects.nml import InstanceOp

    module = analysis.result.module
    found: dict[str, dict[str, str]] = {}
    for op in module.walk() if module is not None else ():
        config = op.config if isinstance(op, InstanceOp) else None
        if isinstance(op, InstanceOp) and isinstance(config, DictionaryAttr):
            found[op.sym_name.data] = {k: source_literal(v) for k, v in config.data.items()}
    return found


def source_literal(value: Attribute) -> str:
    """A config value as TensorLoom writes it: `12`, `0.0`, `true`, `"gelu"`."""
    from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr

    if isinstance(value, IntegerAttr):
        number = value.value.data
        is_bool = value.type.width.data == 1 if hasattr(value.type, "width") else False
        return ("true" if number else "false") if is_bool else str(number)
    if isinstance(value, FloatAttr):
        return repr(value.value.data)
    if isinstance(value, StringAttr):
        return f'"{value.data}"'
    return str(value)
