"""Hover: a value's shape, a layer's signature and parameter count, a model's flow.

    fc1 = Linear(64, 256)
    Linear(in_features, out_features, bias=True)  ->  nn.Linear
    net: output [B, 256], 16,640 parameters

Shapes come from the checked IR (shape inference writes them onto the values)
and parameter counts from the shape flows `tlc check` prints, so hover shows
exactly what the checker computed. Hover text is markdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.source import Span
from tensorloom.tools.lsp import navigate
from tensorloom.tools.lsp.document import contains

if TYPE_CHECKING:
    from xdsl.ir import Operation

    from tensorloom.dialects.layers import LayerSpec
    from tensorloom.tools.lsp.document import Analysis


def hover(analysis: Analysis, line: int, col: int) -> tuple[str, Span] | None:
    """The hover text (markdown) for the position, and the span it describes."""
    word = analysis.word_at(line, col)
    if word is not None:
        name, span, owner = word
        text = _named(analysis, name, owner, line, col)
        if text is not None:
            return text, span
    value = _value_at(analysis, line, col)
    if value is None:
        return None
    span, shape = value
    return _code(f"{source_text(analysis, span)}: Tensor{shape}"), span


def _named(analysis: Analysis, name: str, owner: str, line: int, col: int) -> str | None:
    root = analysis.root
    model = navigate.enclosing_model(root, line, col)
    if model is not None and owner in ("self", ""):
        layer = next((d for d in model.layers if d.name == name), None)
        if layer is not None:
            return _layer(analysis, model, layer)
    if owner:
        return None
    if root is not None:
        local = navigate.local(root, name, line, col)
        if local is not None:
            return _local_value(analysis, root, name, local, model)
    models = navigate.models_in_scope(analysis)
    if name in models:
        return _model(analysis, models[name])
    return _catalogue(name)


def _layer(analysis: Analysis, model: ast.ModelDecl, layer: ast.LayerDecl) -> str:
    from tensorloom.dialects.layers import lookup

    parts = [_code(source_text(analysis, layer.span))]
    kind = _callee(layer.ctor)
    spec = lookup(kind) if kind is not None else None
    if spec is not None:
        parts.append(signature(spec))
    for flow in analysis.flows():
        for step in flow.steps:
            if flow.model == model.name and step.name == layer.name:
                parts.append(f"`{flow.name}`: output {step.shape}, {step.params:,} parameters")
    return "\n\n".join(parts)


def _model(analysis: Analysis, model: ast.ModelDecl) -> str:
    header = f"model {model.name}"
    if model.config:
        header += "(" + ", ".join(e.name for e in model.config) + ")"
    parts = [_code(header)]
    for flow in analysis.flows():
        if flow.model == model.name:
            inputs = ", ".join(flow.inputs) or "-"
            parts.append(
                f"`{flow.name}`: input {inputs}, output {flow.output}, {flow.params:,} parameters"
            )
    return "\n\n".join(parts)


def _catalogue(name: str) -> str | None:
    """A layer type or a train setting, from the catalogues the checker reads."""
    from tensorloom.dialects.layers import lookup
    from tensorloom.passes.check_train import SETTINGS

    spec = lookup(name)
    if spec is not None:
        return signature(spec)
    setting = SETTINGS.get(name)
    if setting is not None:
        return f"{_code(f'{name} = ...')}\n\ntrain setting: {setting.doc}"
    return None


def signature(spec: LayerSpec) -> str:
    """`Linear(in_features, out_features, bias=True)  ->  nn.Linear`, and its summary."""
    from tensorloom.dialects.layers import py_literal

    params = [p.name if p.required else f"{p.name}={py_literal(p.default)}" for p in spec.params]
    text = _code(f"{spec.name}({', '.join(params)})  ->  {spec.torch_class}")
    doc = (type(spec).__doc__ or "").strip().splitlines()
    return f"{text}\n\n{doc[0]}" if doc else text


def _local_value(analysis: Analysis, root: ast.Module, name: str, where: Span,
                 model: ast.ModelDecl | None) -> str | None:  # fmt: skip
    """The shape a parameter or `let` holds."""
    let = next(
        (n for n in navigate.walk(root) if isinstance(n, ast.LetStmt) and n.name_span == where),
        None,
    )
    if let is None:
        return _parameter(analysis, model, name, where)
    for span, shape in _typed_spans(analysis):
        if span == let.value.span:
            return _code(f"let {name}: Tensor{shape}")
    return None


def _parameter(analysis: Analysis, model: ast.ModelDecl | None, name: str,
               where: Span) -> str | None:  # fmt: skip
    """A method parameter's shape: the type of its block argument in the model's IR."""
    from tensorloom.dialects.nml import FuncOp, ModelOp, TensorType
    from tensorloom.dialects.shapes import format_shape

    method = (
        next((m for m in model.methods if where in [p.span for p in m.params]), None)
        if (model is not None)
        else None
    )
    module = analysis.result.module
    if method is None or module is None or model is None:
        return None
    for op in module.walk():
        if isinstance(op, FuncOp) and op.sym_name.data == method.name:
            parent = op.parent_op()
            names = [a.data for a in op.arg_names.data]
            if isinstance(parent, ModelOp) and parent.sym_name.data == model.name and name in names:
                kind = op.body.block.args[names.index(name)].type
                if isinstance(kind, TensorType) and kind.dims is not None:
                    return _code(f"{name}: Tensor{format_shape(kind.dims)}")
    return None


def _value_at(analysis: Analysis, line: int, col: int) -> tuple[Span, str] | None:
    """The smallest expression around the position whose value has a known shape."""
    hits = [(span, shape) for span, shape in _typed_spans(analysis) if contains(span, line, col)]
    if not hits:
        return None
    return min(hits, key=lambda hit: (hit[0].end_line - hit[0].line, hit[0].end_col - hit[0].col))


def _typed_spans(analysis: Analysis) -> list[tuple[Span, str]]:
    """(span, shape) of every op in the document's file whose result is a ranked tensor."""
    module = analysis.result.module
    if module is None:
        return []
    found: list[tuple[Span, str]] = []
    for op in module.walk():
        entry = _typed(op, analysis.path)
        if entry is not None:
            found.append(entry)
    return found


def _typed(op: Operation, path: str) -> tuple[Span, str] | None:
    from tensorloom.diagnostics.ir import span_of
    from tensorloom.dialects.nml import TensorType
    from tensorloom.dialects.shapes import format_shape

    if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
        return None
    span = span_of(op)
    dims = op.results[0].type.dims
    if span is None or span.file != path or dims is None:
        return None
    return span, format_shape(dims)


def _callee(ctor: ast.Expr) -> str | None:
    target = ctor.func if isinstance(ctor, ast.Call) else ctor
    return target.id if isinstance(target, ast.Name) else None


def source_text(analysis: Analysis, span: Span) -> str:
    """The text a span covers (its first line), from the document or the file it is in."""
    from tensorloom.source import SourceMap

    if span.file == analysis.path:
        text = analysis.line(span.line)
    else:
        source = analysis.result.sources.get(span.file) or SourceMap().get(span.file)
        text = source.line(span.line) if source is not None else ""
    end = span.end_col - 1 if span.end_line == span.line else len(text)
    return text[span.col - 1 : end]


def _code(text: str) -> str:
    return f"```tl\n{text}\n```"
