"""Lower nml models to the torch dialect: each model becomes a `torch.module_class`.

    nml.model @Block from "block.nml" {
      nml.config @d_model = 512 : i64
      nml.layer @norm = "LayerNorm" [#nml.cfg<"d_model">] {}
      nml.func @forward(%x: !nml.tensor<[B, T, 512], f32>) -> ... {
        %0 = nml.apply @norm(%x) : ...
        %1 = nml.relu %0 : ...
        nml.return %1 : ...
      }
    }

becomes, inside the module's `torch.script` (created if absent), `py` ops around
the torch domain ops (no Python source in strings):

    %c512 = py.constant 512 : i64
    torch.module_class @Block(d_model = %c512) : "nn.Module" doc "..." {
      %0 = py.name "nn.LayerNorm"
      %1 = py.name "d_model"
      %2 = py.call %0(%1)
      torch.submodule "norm" = %2
      py.def @forward(self, x) {
      ^bb0(%self: !py.object, %x: !py.object):
        %3 = py.name "self"
        %4 = py.attribute %3, "norm"
        %5 = py.call %4(%x)
        %6 = py.name "F.relu"
        %7 = py.call %6(%5)
        py.return %7
      }
    }

Steps:
1. Body ops, one pattern each (`BODY_PATTERNS`): layer applications become
   submodule calls (`self.norm(x)`) with the catalogue's call kind; functional
   builtins become the PyTorch call a person would write (`F.relu(x)`,
   `torch.softmax(x, dim=-1)`, `x.flatten(1)`, `x @ y`, `torch.cat([a, b], dim=1)`);
   config references become `self.<name>`. Results keep their `name_hint`s and
   every new op the location of the op it replaces.
2. `ModelToClass`: configs become `__init__` parameters with their defaults (`py`
   ops before the class; a default computed from other configs is `None` plus a
   `torch.param_default`); layers become submodules, their constructor calls `py`
   ops in which a config is the `__init__` parameter read by name
   (`nn.Linear(d_model, 4 * d_model)`); a layer whose kind is another model is an
   instance of that class; a config read in a method is stored as `self.<name>`
   in `__init__`; each function becomes a `py.def` whose first parameter is `self`.
3. A `.tl` file's top-level functions (losses and metrics, `fn my_loss(out, y)`)
   become `py.def`s after the classes, their bodies lowered by the same patterns.
Ops outside models (the training script's) are left to `convert-train-to-torch`,
which moves a script's top-level statements into a `py.def` and lowers them
with `BODY_PATTERNS` (they also match nml ops directly inside a `py.def`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.catalogue.layers import BoundLayer, LayerSpec, lookup
from tensorloom.catalogue.layers.parameter import PARAMETER
from tensorloom.dialects import nml, py
from tensorloom.dialects import torch as t
from tensorloom.dialects.nml.types import CallAttr, NoneValueAttr
from tensorloom.passes.support.in_place import mark_in_place
from tensorloom.passes.support.model_env import (
    bind_layer,
    configs_of,
    layers_of,
    mentions_config,
    model_env,
)
from tensorloom.passes.support.nml_to_py import (
    BODY_PATTERNS,
    _call_ops,
    attr_ops,
    call,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.torch_script import script_of

# ----------------------------------------------------------- model to class


@dataclass
class ModelToClass(RewritePattern):
    """`nml.model` becomes a `torch.module_class` at the end of `script`."""

    script: t.ScriptOp
    models: frozenset[str]
    sequentials: Mapping[str, nml.ModelOp]
    """The models `Sequential(Block(d), ...)` became (frontend/sequential.py), by name:
    no class each, but `nn.Sequential(...)` of their layers where a layer holds one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ModelOp, rewriter: PatternRewriter) -> None:
        if op.sequential is not None:
            return  # read by the layers that hold it; erased after every class is built
        defaults_ops, params, param_defaults = _init_params(op)
        methods = [_method(func, rewriter) for func in _funcs(op)]
        fields = _fields(op, methods)
        layers = layers_of(op).values()
        submodules = [o for layer in layers for o in self._submodule(op, layer)]
        submodules += _grouped_inits([i for layer in layers for i in self._inits(op, layer)])
        origin = f" from {PurePath(op.origin.data).name}" if op.origin is not None else ""
        cls = t.ModuleClassOp(
            op.sym_name.data,
            params,
            [*param_defaults, *fields, *submodules, *methods],
            doc=f"The `{op.sym_name.data}` model{origin}.",
        )
        cls.location = op.location
        for default in defaults_ops:
            default.location = op.location
        rewriter.insert([*defaults_ops, cls], InsertPoint.at_end(self.script.body.block))
        rewriter.erase(op, safe_erase=False)

    def _submodule(self, model: nml.ModelOp, layer: nml.LayerOp) -> list[Operation]:
        """The ops computing the layer's module, then `torch.submodule` storing it."""
        value = self._module_ops(model, layer)
        if layer.kind.data != PARAMETER and layer.count is not None:
            value = _module_list(value, layer)
        if layer.when is not None:  # `if downsample:` in `@layers`: the module, or None
            condition, none = attr_ops(layer.when), py.ConstantOp(py.NoneAttr())
            built = [*value, py.YieldOp([value[-1].results[0]])]
            choice = py.IfOp(condition[-1].results[0], built, [none, py.YieldOp([none.result])], 1)
            choice.results[0].name_hint = layer.sym_name.data
            value = [*condition, choice]
        return [
            _at(o, layer)
            for o in [*value, t.SubmoduleOp(layer.sym_name.data, value[-1].results[0])]
        ]

    def _module_ops(self, model: nml.ModelOp, layer: nml.LayerOp) -> list[Operation]:
        """The ops computing one module of the layer (one element of a layer list)."""
        kind = layer.kind.data
        args = list(layer.args.data)
        kwargs = _items(layer.kwargs)
        if kind == PARAMETER:
            return _parameter_ops(args, layer.kwargs)
        if kind == "Sequential":
            return _joined_call("nn.Sequential", [_layer_ops(a) for a in args])
        hidden = self.sequentials.get(kind)
        if hidden is not None:  # `Sequential(Block(d), LayerNorm(d))`: its layers, in order
            parts = [self._module_ops(hidden, e) for e in layers_of(hidden).values()]
            return _joined_call("nn.Sequential", parts)
        spec = lookup(kind)
        cls_name = kind
        if kind not in self.models and spec is not None:
            bound = bind_layer(layer, model_env(model))
            cls_name = spec.torch_class_of(bound) if bound is not None else spec.torch_class
            kwargs = [(k, v) for k, v in kwargs if k not in spec.init_keywords()]
            kwargs += _forced_kwargs(kind, len(args), kwargs)
        return _call_ops(cls_name, args, kwargs)

    def _inits(
        self,
        model: nml.ModelOp,
        layer: nml.LayerOp,
        holder: tuple[str, str, bool] | None = None,
    ) -> list[_Init]:
        """The layer's `nn.init` calls (`init="normal", std=0.02`), after every submodule;
        for an element of a `Sequential` that holds models, `holder` is the field that
        holds it, the element's prefix (`1.`) and whether the field is a layer list."""
        kind = layer.kind.data
        name, prefix, each = holder or (layer.sym_name.data, "", layer.count is not None)
        hidden = self.sequentials.get(kind)
        if hidden is not None:
            return [
                init
                for position, element in enumerate(layers_of(hidden).values())
                for init in self._inits(hidden, element, (name, f"{prefix}{position}.", each))
            ]
        spec = lookup(kind)
        if kind in self.models or spec is None or kind == PARAMETER:
            return []
        bound = bind_layer(layer, model_env(model))
        if bound is None:
            return []
        if prefix and kind != "Sequential":
            return _init_steps(name, prefix, spec, bound, layer.kwargs.data, each, layer)
        if kind != "Sequential":
            return _init_steps(name, "", spec, bound, layer.kwargs.data, each, layer)
        elements = bound["layers"]
        assert isinstance(elements, list)
        inits: list[_Init] = []
        for i, (attr, element) in enumerate(zip(layer.args.data, elements, strict=True)):
            if isinstance(attr, CallAttr) and isinstance(element, BoundLayer):
                kwargs = attr.kwargs.data
                at = f"{prefix}{i}."
                inits += _init_steps(name, at, element.spec, element, kwargs, each, layer)
        return inits


@dataclass(frozen=True)
class _Init:
    """One `nn.init.<function>(self.<field>.<tensor>, key=value)` of `__init__`; `each`:
    for every element of the layer list `self.<field>`."""

    field: str
    tensor: str  # as `named_parameters()` spells it: `0.weight` is `[0].weight`
    function: str
    kwargs: list[tuple[str, Attribute]]
    each: bool
    layer: nml.LayerOp


def _init_steps(
    field: str,
    prefix: str,
    spec: LayerSpec,
    bound: BoundLayer,
    kwargs: Mapping[str, Attribute],
    each: bool,
    layer: nml.LayerOp,
) -> list[_Init]:
    """`spec.init_plan(bound)`, with the arguments the layer was given."""
    inits: list[_Init] = []
    for step in spec.init_plan(bound):
        given = [("mean", step.mean), ("std", step.std), *step.options]
        chosen = [(k, kwargs[kw]) for k, kw in given if kw is not None]
        inits.append(_Init(field, prefix + step.tensor, step.function, chosen, each, layer))
    return inits


def _grouped_inits(inits: Sequence[_Init]) -> list[Operation]:
    """The `nn.init` statements: `nn.init.normal_(self.wte.weight, std=0.02)`, and one
    `for layer in self.h:` around consecutive ones of the same layer list."""
    ops: list[Operation] = []
    i = 0
    while i < len(inits):
        first = inits[i]
        if not first.each:
            ops += [_at(o, first.layer) for o in _init_call(first, _self_attr(first.field))]
            i += 1
            continue
        group = [first]
        while i + len(group) < len(inits):
            following = inits[i + len(group)]
            if not (following.each and following.field == first.field):
                break
            group.append(following)
        i += len(group)
        layers = _self_attr(first.field)
        loop = py.ForOp(layers[-1].results[0])
        element = loop.body.block.args[0]
        element.name_hint = "layer"
        for init in group:
            loop.body.block.add_ops(_init_call(init, [], element))
        ops += [_at(o, first.layer) for o in [*layers, loop]]
    return ops


def _self_attr(field: str) -> list[Operation]:
    owner = py.NameOp("self")
    return [owner, py.AttributeOp(owner.result, field)]


def _init_call(
    init: _Init, module: list[Operation], value: SSAValue | None = None
) -> list[Operation]:
    """`nn.init.normal_(<module>.weight, std=0.02)`."""
    ops = list(module)
    target = value if value is not None else ops[-1].results[0]
    for part in init.tensor.split("."):
        if part.isdigit():
            index = py.ConstantOp(IntegerAttr(int(part), 64))
            ops += [index, py.SubscriptOp(target, [index.result])]
        else:
            ops.append(py.AttributeOp(target, part))
        target = ops[-1].results[0]
    arguments: list[SSAValue] = [target]
    for _, attr in init.kwargs:
        part_ops = attr_ops(attr)
        ops += part_ops
        arguments.append(part_ops[-1].results[0])
    function = py.NameOp(f"nn.init.{init.function}")
    names = [""] + [k for k, _ in init.kwargs]
    call_op = py.CallOp(function.result, arguments, names)
    return [*ops, function, call_op, py.ExprOp(call_op.results[0])]


def _joined_call(callee: str, parts: Sequence[list[Operation]]) -> list[Operation]:
    function = py.NameOp(callee)
    values = [p[-1].results[0] for p in parts]
    return [function, *(o for p in parts for o in p), py.CallOp(function.result, values)]


def _module_list(element: list[Operation], layer: nml.LayerOp) -> list[Operation]:
    """`nn.ModuleList([Block(...) for _ in range(n)])`; a per-position list names its loop
    variable, which its arguments read: `[Block(d, stride=2 if i == 0 else 1) for i in
    range(n)]`, `[Stage(w) for w in widths]`."""
    assert layer.count is not None
    if layer.items is not None:
        iterable = attr_ops(layer.items)
    else:
        counted = attr_ops(layer.count)
        iterable = [*counted, *call("range", [counted[-1].results[0]])]
    copies = py.ComprehensionOp("list", iterable[-1].results[0])
    var = copies.body.block.args[0]
    var.name_hint = layer.var.data if layer.var is not None else "_"
    copies.body.block.add_ops([*element, py.YieldOp([element[-1].results[0]])])
    for op in element:  # the loop variable, read as a config by name, is the block's argument
        if layer.var is not None and isinstance(op, py.NameOp) and op.id.data == layer.var.data:
            op.result.replace_all_uses_with(var)
            op.detach()
            op.erase()
    return _joined_call("nn.ModuleList", [[*iterable, copies]])


def _parameter_ops(shape: Sequence[Attribute], kwargs: DictionaryAttr) -> list[Operation]:
    """`nn.Parameter(torch.zeros(1, 1, d))`, `torch.ones(...)`, `torch.randn(...) * std + mean`,
    `torch.empty(...).uniform_(a, b)`, `torch.full((...), value)`, `torch.tensor(values)`;
    without sizes a 0-d tensor (`torch.zeros(())`)."""
    init_attr = kwargs.data.get("init")
    init = init_attr.data if isinstance(init_attr, StringAttr) else "zeros"
    values = kwargs.data.get("values")
    if values is not None and not isinstance(values, NoneValueAttr):
        dtype = py.NameOp("torch.float32")
        created = _call_ops("torch.tensor", [values], [])
        call = created[-1]
        assert isinstance(call, py.CallOp)
        value = [
            *created[:-1],
            dtype,
            py.CallOp(call.operands[0], [*call.operands[1:], dtype.result], ["", "dtype"]),
        ]
        return _joined_call("nn.Parameter", [value])
    sizes: Sequence[Attribute] = shape if shape else [ArrayAttr([])]
    if init == "constant":
        value = _call_ops(
            "torch.full",
            [ArrayAttr(list(shape)), kwargs.data.get("value") or FloatAttr(0.0, 64)],
            [],
        )
        return _joined_call("nn.Parameter", [value])
    creator = {"ones": "torch.ones", "normal": "torch.randn", "uniform": "torch.empty"}.get(
        init, "torch.zeros"
    )
    value = _call_ops(creator, sizes, [])
    if init == "uniform":
        bounds = [kwargs.data.get(k) or FloatAttr(d, 64) for k, d in (("a", 0.0), ("b", 1.0))]
        method = py.AttributeOp(value[-1].results[0], "uniform_")
        parts = [attr_ops(b) for b in bounds]
        value = [
            *value,
            method,
            *parts[0],
            *parts[1],
            py.CallOp(method.result, [parts[0][-1].results[0], parts[1][-1].results[0]], ["", ""]),
        ]
    if init == "normal":
        for key, operator, neutral in (("std", "*", 1.0), ("mean", "+", 0.0)):
            given = kwargs.data.get(key)
            if given is None or (isinstance(given, IntegerAttr | FloatAttr)
                                 and float(given.value.data) == neutral):  # fmt: skip
                continue
            amount = attr_ops(given)
            value = [
                *value,
                *amount,
                py.BinOp(operator, value[-1].results[0], amount[-1].results[0]),
            ]
    return _joined_call("nn.Parameter", [value])


def _layer_ops(attr: Attribute) -> list[Operation]:
    """An element of `Sequential(...)`: `Linear(d, 4 * d)` is `nn.Linear(d, 4 * d)`."""
    if not isinstance(attr, CallAttr):
        return attr_ops(attr)
    spec = lookup(attr.callee.data)
    args = list(attr.args.data)
    kwargs = _items(attr.kwargs)
    if spec is None:
        return _call_ops(attr.callee.data, args, kwargs)
    kwargs = [(k, v) for k, v in kwargs if k not in spec.init_keywords()]
    kwargs += _forced_kwargs(spec.name, len(args), kwargs)
    return _call_ops(spec.torch_class, args, kwargs)


_OpT = TypeVar("_OpT", bound=Operation)


def _at(op: _OpT, like: Operation) -> _OpT:
    op.location = like.location
    return op


def _items(attr: DictionaryAttr) -> list[tuple[str, Attribute]]:
    return list(attr.data.items())


def _forced_kwargs(
    kind: str, positional: int, kwargs: list[tuple[str, Attribute]]
) -> list[tuple[str, Attribute]]:
    """TensorLoom's conventions (`batch_first=True`) unless the user set the argument."""
    spec = lookup(kind)
    assert spec is not None
    by_position = [p.name for p in spec.params if not p.kw_only][:positional]
    given = {k for k, _ in kwargs} | set(by_position)
    return [(k, _forced_value(v)) for k, v in spec.forced_kwargs if k not in given]


def _forced_value(source: str) -> Attribute:
    """A catalogue convention's value (`"True"`, `"1e-06"`, `'"same"'`) as an attribute."""
    value = ast.literal_eval(source)
    if isinstance(value, bool):
        return IntegerAttr(int(value), 1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, 64)
    if value is None:
        return NoneValueAttr()
    assert isinstance(value, str), f"compiler bug: forced keyword {source!r}"
    return StringAttr(value)


def _init_params(
    model: nml.ModelOp,
) -> tuple[list[Operation], list[tuple[str, SSAValue]], list[Operation]]:
    """The ops of `__init__`'s defaults (before the class), its parameters, and
    `torch.param_default`s (in the class) for defaults that use other configs."""
    before: list[Operation] = []
    params: list[tuple[str, SSAValue]] = []
    inside: list[Operation] = []
    for name, config in configs_of(model).items():
        if not mentions_config(config.value):
            value = attr_ops(config.value)
            before += value
            params.append((name, value[-1].results[0]))
            continue
        none = py.ConstantOp(py.NoneAttr())
        before.append(none)
        params.append((name, none.result))
        value = attr_ops(config.value)
        default = t.ParamDefaultOp(name, value[-1].results[0])
        inside += [*(_at(o, config) for o in value), _at(default, config)]
    return before, params, inside


def _funcs(model: nml.ModelOp) -> list[nml.FuncOp]:
    return [op for op in model.body.block.ops if isinstance(op, nml.FuncOp)]


def _method(func: nml.FuncOp, rewriter: PatternRewriter) -> py.DefOp:
    """`def forward(self, x):`; the body reads `self` by name."""
    names = [n.data for n in func.arg_names]
    method = py.DefOp(func.sym_name.data, ["self", *names])
    method.location = func.location
    old = func.body.block
    new = method.body.block
    for old_arg, new_arg in zip(old.args, new.args[1:], strict=True):
        new_arg.location = old_arg.location
    rewriter.inline_block(old, InsertPoint.at_start(new), new.args[1:])
    return method


def _fields(model: nml.ModelOp, methods: Sequence[py.DefOp]) -> list[Operation]:
    """`self.<config> = <config>` for each config a method reads."""
    configs = configs_of(model)
    read: list[str] = []
    for method in methods:
        for op in method.walk():
            if _is_self_attr(op) and op.attr.data in configs:  # type: ignore[attr-defined]
                read.append(op.attr.data)  # type: ignore[attr-defined]
    ops: list[Operation] = []
    for name in dict.fromkeys(read):
        value = py.NameOp(name)
        ops += [value, t.FieldOp(name, value.result)]
    return ops


def _is_self_attr(op: Operation) -> bool:
    if not isinstance(op, py.AttributeOp):
        return False
    owner = op.value.owner
    return isinstance(owner, py.NameOp) and owner.id.data == "self"


# ------------------------------------------------------------------- pass


def _runtime_modules(models: Sequence[nml.ModelOp]) -> list[str]:
    """The runtime modules the models' layers are built from (`attention` for a causal
    `MultiHeadAttention`), each once, in order of first use."""
    names: list[str] = []
    for model in models:
        env = model_env(model)
        for layer in layers_of(model).values():
            bound = bind_layer(layer, env)
            module = bound.spec.runtime_module(bound) if bound is not None else None
            if module is not None and module not in names:
                names.append(module)
    return names


class ConvertNmlToTorchPass(TLPass):
    """Lowers every `nml.model` to a `torch.module_class`; see the module docstring."""

    name = "convert-nml-to-torch"
    requires = ("shape-inference", "check-scopes", "mangle-names")

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A model or a function of the `.tl` file is not lowered yet."""
        return any(isinstance(op, nml.ModelOp | nml.FuncOp) for op in module.body.block.ops)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        models = [m for m in op.walk() if isinstance(m, nml.ModelOp)]
        functions = [f for f in op.body.block.ops if isinstance(f, nml.FuncOp)]
        if not models and not functions:
            return
        script = script_of(op)
        uses_runtime = bool(_runtime_modules(models))
        defs = [_function(func) for func in functions]  # step 3, lowered with the bodies
        mark_in_place(op)  # before the patterns: it reads the nml ops' uses
        # Users before producers, so that a pattern still sees its operands' nml types.
        body = GreedyRewritePatternApplier(list(BODY_PATTERNS))
        PatternRewriteWalker(body, walk_reverse=True).rewrite_module(op)
        sequentials = {m.sym_name.data: m for m in models if m.sequential is not None}
        to_class = ModelToClass(script, frozenset(m.sym_name.data for m in models), sequentials)
        PatternRewriteWalker(to_class, apply_recursively=False).rewrite_module(op)
        for hidden in sequentials.values():
            hidden.detach()
            hidden.erase(safe_erase=False)
        for function in defs:
            function.detach()
            script.body.block.add_op(function)
        if uses_runtime and not any(isinstance(o, t.RuntimeOp) for o in script.body.block.ops):
            script.body.block.add_op(t.RuntimeOp())  # the layers' helpers, after the classes


def _function(func: nml.FuncOp) -> py.DefOp:
    """A top-level `nml.func` as a `py.def` in its place (moved after the classes later)."""
    names = [n.data for n in func.arg_names]
    function = py.DefOp(func.sym_name.data, names)
    function.location = func.location
    old, new = func.body.block, function.body.block
    for old_arg, new_arg in zip(old.args, new.args, strict=True):
        new_arg.location = old_arg.location
    Rewriter.inline_block(old, InsertPoint.at_start(new), new.args)
    Rewriter.replace_op(func, function)
    return function


__all__ = ["ConvertNmlToTorchPass"]
