"""Hover: a value's shape, a layer's signature and parameter count, a model's flow, and
every other name a user can point at (an instance, a dataset, an import, an optimizer,
a loss, a schedule, a config keyword, a loop variable, a dim).

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
from tensorloom.tools.lsp import navigate, train_lines
from tensorloom.tools.lsp.document import contains

MAX_ALIASES = 16  # `let a = b`, `let b = c`, ...: how far a hover follows plain names

if TYPE_CHECKING:
    from xdsl.ir import Operation

    from tensorloom.catalogue.layers import LayerSpec
    from tensorloom.dialects.nml import FuncOp, ModelOp
    from tensorloom.tools.lsp.document import Analysis


def hover(analysis: Analysis, line: int, col: int) -> tuple[str, Span] | None:
    """The hover text (markdown) for the position, and the span it describes."""
    word = analysis.word_at(line, col)
    loop = _loop_at(analysis, line, col)
    if loop is not None and word is not None and word[0] in ("for", "in"):
        model = navigate.enclosing_model(analysis.root, line, col)
        return _loop_text(analysis, model, loop), word[1]
    value = _value_at(analysis, line, col)
    if word is not None and analysis.line(line)[word[1].col - 2 : word[1].col - 1] in ("'", '"'):
        text = _dataset(word[0])  # `load_dataset("digits")`'s name
        return (text, word[1]) if text is not None else None
    if word is not None:
        name, span, owner = word
        declared = train_lines.hover_text(analysis, name, span) if not owner else None
        if declared is not None:
            return declared, span
        text = _named(analysis, name, owner, line, col)
        applied = value is not None and value[0].start() == span.start() and _is_function(name)
        if text is not None and value is not None and applied:
            text += "\n\n" + _value_text(analysis, *value)  # what the function gives here
        if text is not None:
            return text, span
    if value is None:
        return None
    return _value_text(analysis, *value), value[0]


def _is_function(name: str) -> bool:
    from tensorloom.catalogue.functions import FUNCTIONS

    return name in FUNCTIONS


def _value_text(analysis: Analysis, span: Span, shape: str) -> str:
    return code(f"{source_text(analysis, span)}: Tensor{shape}")


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
        entry = navigate.config_keyword(analysis, root, line, col)
        if entry is not None:
            return _config_entry(analysis, entry)
        text = _in_function(analysis, root, model, name, line, col)
        if text is not None:
            return text
        for item in root.imports():
            if contains(item.span, line, col):
                return _import(analysis, item)
    models = navigate.models_in_scope(analysis)
    if name in models:
        return _model(analysis, models[name])
    declared = navigate.top_level_node(analysis, name)
    if isinstance(declared, ast.LetStmt):
        return _top_level_let(analysis, declared)
    if isinstance(declared, ast.FnDecl):  # a loss, an objective, a helper
        header = source_text(analysis, declared.span).rstrip().removesuffix(":")
        return code(header) + f"\n\ndeclared at {declared.name_span}"
    return _catalogue(name)


def _config_entry(analysis: Analysis, entry: Span) -> str | None:
    """`GPT(n_layer=4)`'s `n_layer`: the config entry it overrides, and its default."""
    for model in navigate.models_in_scope(analysis).values():
        for config in model.config:
            if config.name_span == entry:
                default = source_text(analysis, config.value.span)
                return (
                    code(f"{config.name} = {default}")
                    + f"\n\nconfig of `{model.name}`, default `{default}`"
                )
    return None


def _in_function(analysis: Analysis, root: ast.Module, model: ast.ModelDecl | None, name: str,
                 line: int, col: int) -> str | None:  # fmt: skip
    """A name a function binds: a value's shape, a loop variable, a parameter, or a dim."""
    loop = _loop(root, name, line, col)
    if loop is not None:
        return _loop_text(analysis, model, loop)
    binding = _binding(root, name, line, col)
    if binding is not None:
        return _bound_value(analysis, root, name, binding, model)
    local = navigate.local(root, name, line, col)
    if local is not None:
        return _parameter(analysis, model, name, local)
    return _dim(analysis, root, model, name, line, col)


def _loop_at(analysis: Analysis, line: int, col: int) -> ast.ForStmt | None:
    """The `for` whose header line holds the position (hovering its `for` or `in`)."""
    root = analysis.root
    chain = navigate.enclosing(root, line, col) if root is not None else []
    loops = [n for n in chain if isinstance(n, ast.ForStmt) and n.span.line == line]
    return loops[-1] if loops else None


def _loop(root: ast.Module, name: str, line: int, col: int) -> ast.ForStmt | None:
    """The `for` of the function around the position that binds `name`."""
    function = navigate.enclosing_function(root, line, col)
    loops = [] if function is None else navigate.walk(function)
    return next((n for n in loops if isinstance(n, ast.ForStmt) and n.var == name), None)


def _loop_text(analysis: Analysis, model: ast.ModelDecl | None, loop: ast.ForStmt) -> str:
    """`for block in h`: each of what `h` holds (a layer list's entries, or a range's ints)."""
    header = code(f"for {loop.var} in {source_text(analysis, loop.iter.span)}")
    layer = None
    if model is not None and isinstance(loop.iter, ast.Name):
        layer = next((d for d in model.layers if d.name == loop.iter.id), None)
    if model is None or layer is None:
        return f"{header}\n\nloop variable"
    element = layer.ctor.elt if isinstance(layer.ctor, ast.ListComp) else layer.ctor
    each = source_text(analysis, element.span)
    text = f"{header}\n\nloop variable: each layer of `{layer.name}`, a `{each}`"
    flows = [f for f in analysis.flows() if f.model == model.name]
    steps = [s for f in flows for s in f.steps if s.name == layer.name]
    return text + (f" ({steps[0].params:,} parameters in all)" if steps else "")


def _dim(analysis: Analysis, root: ast.Module, model: ast.ModelDecl | None, name: str,
         line: int, col: int) -> str | None:  # fmt: skip
    """A named dim of the function's shapes, with its size in each instantiation that fixes it."""
    function = navigate.enclosing_function(root, line, col)
    if not isinstance(function, ast.FnDecl):
        return None
    where = [(i, p) for p in function.params if p.type is not None and p.type.dims
             for i, d in enumerate(p.type.dims) if d.value == name]  # fmt: skip
    if not where:
        return None
    index, param = where[0]
    text = code(f"{name}: dim") + f"\n\na dim of `{param.name}`'s shape"
    flows = [f for f in analysis.flows() if model is not None and f.model == model.name]
    for flow in flows:
        sizes = _shape_items(flow.inputs[0]) if flow.inputs else []
        if index < len(sizes) and sizes[index] != name:
            text += f"\n\n`{flow.name}`: `{name}` = {sizes[index]}"
    return text


def _shape_items(shape: str) -> list[str]:
    return [item.strip() for item in shape.strip("[]").split(",")]


def _import(analysis: Analysis, item: ast.ImportDecl) -> str:
    """`import gpt.nml as GPT`: the file's models, and the one the alias names."""
    from tensorloom.frontend.imports import import_path

    program = analysis.program
    units = [] if program is None else program.imported
    target = import_path(analysis.path, item.path)
    unit = next((u for u in units if u.path == target or u.path.endswith(item.path)), None)
    text = code(source_text(analysis, item.span))
    if unit is None:
        return text
    names = [m.name for m in unit.module.models()]
    text += "\n\nmodels: " + ", ".join(f"`{n}`" for n in names)
    aliased = program.root.aliases.get(item.alias or "") if program is not None else None
    return text + (f"; `{item.alias}` is `{aliased}`" if aliased else "")


def _top_level_let(analysis: Analysis, let: ast.LetStmt) -> str:
    """An instance (its model's flow and resolved config) or a dataset (its samples and targets)."""
    from tensorloom.tools.check import data_summary, dataset_rows
    from tensorloom.tools.lsp.hints import instance_configs

    parts = [code(f"let {let.name} = {source_text(analysis, let.value.span)}")]
    config = instance_configs(analysis).get(let.name)
    if config is not None:
        parts.append("config: " + ", ".join(f"`{k}={v}`" for k, v in config.items()))
    for flow in analysis.flows():
        if flow.name == let.name:
            inputs = ", ".join(flow.inputs) or "-"
            parts.append(f"input {inputs}, output {flow.output}, {flow.params:,} parameters")
    for name, samples, targets, origin in dataset_rows(analysis.result):
        if name == let.name:
            parts.append(f"{data_summary(samples, targets)}; from {origin}")
    return "\n\n".join(parts)


def _layer(analysis: Analysis, model: ast.ModelDecl, layer: ast.LayerDecl) -> str:
    from tensorloom.catalogue.layers import lookup

    parts = [code(source_text(analysis, layer.span))]
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
    parts = [code(header)]
    for flow in analysis.flows():
        if flow.model == model.name:
            inputs = ", ".join(flow.inputs) or "-"
            parts.append(
                f"`{flow.name}`: input {inputs}, output {flow.output}, {flow.params:,} parameters"
            )
    return "\n\n".join(parts)


def _catalogue(name: str) -> str | None:
    """A layer type, a builtin function or a train setting, from the checker's catalogues."""
    from tensorloom.catalogue.functions import FUNCTIONS
    from tensorloom.catalogue.layers import lookup
    from tensorloom.passes.check_train import SETTINGS

    spec = lookup(name)
    if spec is not None:
        return signature(spec)
    function = FUNCTIONS.get(name)
    if function is not None:
        return f"{code(f'{function.signature}  ->  {function.torch}')}\n\n{function.summary}"
    setting = SETTINGS.get(name)
    if setting is not None:
        return f"{code(f'{name} = ...')}\n\ntrain setting: {setting.doc}"
    return _train_value(name)


def _dataset(name: str) -> str | None:
    """A dataset `load_dataset` knows by name: the options it accepts."""
    from tensorloom.catalogue.datasets import DATASET_NAMES, accepted_options

    if name not in DATASET_NAMES:
        return None
    options = accepted_options(name).values()
    listed = "\n".join(f"- `{o.name}: {o.kind}` ({o.doc})" for o in options)
    return code(f'load_dataset("{name}", ...)') + "\n\ndataset; options:\n\n" + listed


def _train_value(name: str) -> str | None:
    """An optimizer, a loss or a schedule a train block names: its summary and arguments."""
    from tensorloom.catalogue.losses import TRAIN_LOSSES
    from tensorloom.catalogue.optimizers import OPTIMIZERS
    from tensorloom.catalogue.schedules import SCHEDULES

    optimizer, loss, schedule = OPTIMIZERS.get(name), TRAIN_LOSSES.get(name), SCHEDULES.get(name)
    if optimizer is not None:
        kind, summary, args = "optimizer", optimizer.summary, optimizer.args
    elif loss is not None:
        kind, summary, args = "loss", f"{loss.summary}; targets: {loss.targets}", loss.args
    elif schedule is not None:
        kind, summary, args = "learning-rate schedule", schedule.summary, schedule.args
    else:
        return None
    signature = f"{name}({', '.join(a.name for a in args)})"
    listed = "\n".join(f"- `{a.describe()}`" for a in args)
    return f"{code(signature)}\n\n{kind}: {summary}" + (f"\n\n{listed}" if listed else "")


def signature(spec: LayerSpec) -> str:
    """`Linear(in_features, out_features, bias=True)  ->  nn.Linear`, and its summary."""
    text = code(f"{spec.signature()}  ->  {spec.torch_class}")
    doc = (type(spec).__doc__ or "").strip().splitlines()
    text = f"{text}\n\n{doc[0]}" if doc else text
    inits = [p.name for p in spec.params if p.name in spec.init_keywords()]
    if inits:
        text += "\n\ninitialisation: " + ", ".join(f"`{n}=`" for n in inits)
    return text


def _binding(root: ast.Module, name: str, line: int, col: int) -> ast.Expr | None:
    """The value `name` holds at the position: its last `let` or assignment before it."""
    scopes = [n for n in navigate.enclosing(root, line, col) if isinstance(n, ast.FnDecl)]
    if not scopes:
        return None
    found: list[tuple[tuple[int, int], ast.Expr]] = []
    for node in navigate.walk(scopes[-1]):
        value = _assigned(node, name)
        if value is None or contains(value.span, line, col):
            continue  # in `x = f(x)`, the `x` inside `f(x)` is the one before
        if (node.span.line, node.span.col) <= (line, col):
            found.append(((node.span.line, node.span.col), value))
    return max(found, key=lambda hit: hit[0])[1] if found else None


def _assigned(node: ast.Node, name: str) -> ast.Expr | None:
    """The value `node` binds to `name`, if it is a `let` or an assignment of it."""
    if isinstance(node, ast.LetStmt) and node.name == name:
        return node.value
    if isinstance(node, ast.AssignStmt) and isinstance(node.target, ast.Name):
        return node.value if node.target.id == name else None
    return None


def _bound_value(analysis: Analysis, root: ast.Module, name: str, value: ast.Expr,
                 model: ast.ModelDecl | None) -> str | None:  # fmt: skip
    """The shape of the value a `let` or an assignment bound (`let r = x`: x's)."""
    for _ in range(MAX_ALIASES):
        shape = next((shape for span, shape in typed_spans(analysis) if span == value.span), None)
        if shape is not None:
            return code(f"{name}: Tensor{shape}")
        if not isinstance(value, ast.Name):
            return None
        where = (value.span.line, value.span.col)
        bound = _binding(root, value.id, *where)
        if bound is None:
            local = navigate.local(root, value.id, *where)
            typed = _parameter(analysis, model, value.id, local) if local else None
            return typed.replace(f"{value.id}:", f"{name}:", 1) if typed else None
        value = bound
    return None


def _parameter(analysis: Analysis, model: ast.ModelDecl | None, name: str,
               where: Span) -> str | None:  # fmt: skip
    """A method parameter's shape, as hover text."""
    shape = parameter_shape(analysis, model, name, where)
    return None if shape is None else code(f"{name}: Tensor{shape}")


def parameter_shape(analysis: Analysis, model: ast.ModelDecl | None, name: str,
                    where: Span) -> str | None:  # fmt: skip
    """A method parameter's shape: the type of its block argument in the model's IR."""
    from tensorloom.catalogue.shapes import format_shape
    from tensorloom.dialects.nml import TensorType

    if model is None:
        return None
    method = next((m for m in model.methods if where in [p.span for p in m.params]), None)
    func = _func(analysis, model.name, method.name) if method is not None else None
    names = [a.data for a in func.arg_names.data] if func is not None else []
    if func is None or name not in names:
        return None
    kind = func.body.block.args[names.index(name)].type
    if not isinstance(kind, TensorType) or kind.dims is None:
        return None
    return format_shape(kind.dims)


def _func(analysis: Analysis, model: str, method: str) -> FuncOp | None:
    """The IR of `model`'s method `method`, in the model's first use."""
    from tensorloom.dialects.nml import FuncOp
    from tensorloom.passes.support.model_env import lookup_symbol

    shown = first_uses(analysis).get(model)
    return lookup_symbol(shown, method, FuncOp) if shown is not None else None


def first_uses(analysis: Analysis) -> dict[str, ModelOp]:
    """The model whose types the editor shows for each model of the program: the model
    itself if an instance names it, else its first copy (`instantiate` gives each use of a
    model its own copy, typed for that use, and makes them in the order of the uses), else
    the model itself (typed on its own)."""
    from tensorloom.dialects.nml import InstanceOp, ModelOp

    module = analysis.result.module
    if module is None:
        return {}
    ops = list(module.body.block.ops)
    named = {op.model.root_reference.data for op in ops if isinstance(op, InstanceOp)}
    found: dict[str, ModelOp] = {}
    for op in ops:  # a model comes before its copies
        if not isinstance(op, ModelOp):
            continue
        if op.specializes is None:
            found.setdefault(op.sym_name.data, op)
            continue
        kind = op.specializes.data
        current = found.get(kind)
        if kind not in named and (current is None or current.specializes is None):
            found[kind] = op
    return found


def _value_at(analysis: Analysis, line: int, col: int) -> tuple[Span, str] | None:
    """The smallest expression around the position whose value has a known shape."""
    hits = [(span, shape) for span, shape in typed_spans(analysis) if contains(span, line, col)]
    if not hits:
        return None
    return min(hits, key=lambda hit: (hit[0].end_line - hit[0].line, hit[0].end_col - hit[0].col))


def typed_spans(analysis: Analysis) -> list[tuple[Span, str]]:
    """(span, shape) of every op in the document's file whose result is a ranked tensor."""
    module = analysis.result.module
    if module is None:
        return []
    from tensorloom.dialects.nml import ModelOp

    shown = set(first_uses(analysis).values())
    found: list[tuple[Span, str]] = []
    for top in module.body.block.ops:
        if isinstance(top, ModelOp) and top not in shown:
            continue  # another use of a model: the editor shows the first
        for op in top.walk():
            entry = _typed(op, analysis.path)
            if entry is not None:
                found.append(entry)
    return found


def _typed(op: Operation, path: str) -> tuple[Span, str] | None:
    from tensorloom.catalogue.shapes import format_shape
    from tensorloom.diagnostics.ir import span_of
    from tensorloom.dialects.nml import ForOp, IfOp, TensorType

    if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
        return None
    if isinstance(op, ForOp | IfOp):
        return None  # the value a loop or branch carries out: its span is the whole statement
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


def code(text: str) -> str:
    """The text as a fenced `tl` block."""
    return f"```tl\n{text}\n```"
