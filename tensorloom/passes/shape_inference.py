"""`shape-inference`: symbolic shapes through every forward, mismatches reported.

    nml.func @forward(%x : !nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32> {
      %0 = nml.apply @fc1(%x) : (...) -> !nml.tensor<*, f32>
    }

becomes `%0 = nml.apply @fc1(%x) : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<[B, 256], f32>`
and a forward's return type is set. The pass knows no op by name: each op's
shape trait (tensorloom/dialects/nml/shape_trait.py) says how its result types
follow from its operands': `FromOperands` for the builtins (the op's own rule),
`FromInstantiation(rule)` for the ops whose types depend on what they name in
the instantiation (a layer's catalogue rule, a nested model's forward, a loop's
iterations), applied by the rule of that name here.

Specialise, then infer, as MLIR's Toy inlines and then infers: `instantiate` gave
each instance and each nested-model layer its own copy of its model, so each op has
one use and its result types are refined in place, on the IR (`set_type`, MLIR's
`Value::setType`); nothing is kept beside the IR for a later pass.

Algorithm:

1. Pick the instantiations to check: every `nml.instance` (its `config`), and the
   defaults of each model that has no instance. A model used as a layer is checked
   inside its parent, in its own copy, with the arguments the parent gives it and
   the shapes that reach it.
2. Take the forward's input shapes from its annotations (`x: Tensor[B, 1, 28, 28]`);
   else from the dataset a train loop binds to the instance (the batch dim `B`,
   then the dataset's sample shape); else leave them unknown. An annotation and
   a dataset that disagree are an error.
3. Give each instantiation a fresh `Unifier`, so `B` or `T` means one size
   within it and nothing across instantiations.
4. Walk the forward's ops in order and set each result's type by the op's shape
   trait; `nml.apply` of a model, or a call of another method, by steps 4-5 on
   that forward; an op without a trait keeps its type. A loop's body is walked
   once per iteration (a value in it gets the join of its iterations' types; past
   256 iterations whose types repeat, the rest are not walked); on each `nml.for`
   and `nml.if` the iterations and branches followed are written (`iterations`,
   `branches`), for the readers to follow the same.
5. Report a failed rule at the op (the pipe stage or call), with a label at the
   layer's declaration and the shape that came in; the result becomes unknown
   so that one mistake is reported once.
6. Settle: in every method the instantiation walked, each type's symbols as its
   unifier has them at the end, and each method's signature from its arguments and
   return; on each `train.loop` its model's output type (`model_output`, and for
   `load_dataset()` data `synthetic_sample` and `synthetic_output`).

check-train, infer-synthetic-data, `tlc check`'s flows (analysis/flows.py), `tlc info`
(analysis/trace.py), `tlc graph` (analysis/graph.py) and the language server read
these types; none infers again. An inference run only for what it reports (a second
loop's data, synthetic samples, a model an objective calls) leaves the IR as it was
(`types_kept`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tensorloom.catalogue import dim_expr
from tensorloom.catalogue.args import INT64_MAX
from tensorloom.catalogue.data_files import DataCheck
from tensorloom.catalogue.datasets import DatasetInfo
from tensorloom.catalogue.layers import BoundLayer, lookup
from tensorloom.catalogue.layers.parameter import PARAMETER
from tensorloom.catalogue.shapes import (
    Shape,
    ShapeMismatch,
    Unifier,
    broadcast,
    format_shape,
)
from tensorloom.diagnostics.core import Diagnostic, DiagnosticSink, Label
from tensorloom.diagnostics.ir import current_sink, report, reporting, span_at, span_of
from tensorloom.dialects import train
from tensorloom.dialects.module_facts import DIM_BINDINGS
from tensorloom.dialects.nml import (
    AnyType,
    ApplyAtOp,
    ApplyOp,
    BinaryOp,
    CallOp,
    ConstantOp,
    DimOp,
    ForOp,
    FuncOp,
    GetAttrOp,
    IfOp,
    IndexOp,
    InstanceOp,
    KernelCallOp,
    LayerOp,
    ModelCallOp,
    ModelOp,
    NoneType,
    RefOp,
    ReturnOp,
    TensorType,
    TupleGetOp,
    TupleType,
    YieldOp,
)
from tensorloom.dialects.nml.arithmetic import COMPARE_OPS
from tensorloom.dialects.nml.indexing import tuple_item
from tensorloom.dialects.nml.shape_trait import (
    FromInstantiation,
    FromOperands,
    ShapeInferenceTrait,
)
from tensorloom.dialects.nml.types import CfgAttr, Dim
from tensorloom.passes.support.dataset_files import dataset_check
from tensorloom.passes.support.model_env import (
    MODULE_ATTRIBUTES,
    ArgFailure,
    CallValue,
    Env,
    bind_layer,
    called_method,
    configs_of,
    element_env,
    enclosing_model,
    env_key,
    forward_of,
    instance_env,
    is_specialized_copy,
    layer_built,
    layer_count,
    layer_label,
    layers_of,
    lookup_symbol,
    model_env,
    models_of,
    nested_model,
    nested_overrides,
    specialized_module,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.source import Span

BATCH = "B"
MAX_DEPTH = 32  # models nested deeper than this are TL0310 (a cycle is TL0307, in resolve-nml)


@dataclass(slots=True)
class Instantiation:
    """A model with a config environment and, maybe, input types from a dataset."""

    name: str
    model: ModelOp
    env: Env
    inputs: list[Attribute] | None = None
    data_span: Span | None = None
    loop: train.LoopOp | None = None  # the train loop whose data gave `inputs`
    fields: tuple[str, ...] = ()  # a `loss` block over named fields: the field of each input


# --- one instantiation ----------------------------------------------------------------------


@dataclass
class Inference:
    """Steps 4-5 for one instantiation: each op's result types refined in place, on the IR.

    What it keeps besides is its own and goes with it: the unifier (what each size symbol
    is), the integers the forward computes (`x.size(0)`), the methods it walked (whose
    symbols step 6 resolves), and memos."""

    models: dict[str, ModelOp]
    unifier: Unifier = field(default_factory=Unifier)
    scalars: dict[SSAValue, Dim] = field(default_factory=dict[SSAValue, Dim])
    ran: dict[FuncOp, None] = field(default_factory=dict[FuncOp, None])
    """The methods and forwards walked, in order (a set): step 6 resolves their types."""
    depth: int = 0
    depth_reported: bool = False
    layers: dict[ModelOp, dict[str, LayerOp]] = field(
        default_factory=dict[ModelOp, dict[str, LayerOp]]
    )
    shape_tuples: dict[SSAValue, tuple[Dim, ...]] = field(
        default_factory=dict[SSAValue, tuple[Dim, ...]]
    )
    unranked_shapes: set[SSAValue] = field(default_factory=set[SSAValue])
    """`x.shape` or `x.size()` of an unranked `x`: its items are integers not yet known."""
    # An objective's model parameters (`fn d_loss(G, D, x, y)`): the instance each is bound to,
    # its model and its configuration, for `nml.model_call`.
    bound_models: dict[SSAValue, tuple[str, ModelOp, Env]] = field(
        default_factory=dict[SSAValue, tuple[str, ModelOp, Env]]
    )
    _refused_lists: set[LayerOp] = field(default_factory=set[LayerOp])
    _annotation_uses: int = 0  # calls of nested forwards with annotations, for fresh names
    instance: InstanceOp | None = None  # the `.tl` instance checked, whose overrides errors cite
    # A nested model or method already followed for this config and these argument types:
    # its result (a block of two blocks of two blocks... is followed once per level, not
    # 2^depth times).
    _followed: dict[tuple[object, ...], Attribute] = field(
        default_factory=dict[tuple[object, ...], Attribute]
    )

    def layers_in(self, model: ModelOp) -> dict[str, LayerOp]:
        if model not in self.layers:
            self.layers[model] = layers_of(model)
        return self.layers[model]

    def __post_init__(self) -> None:
        self.unifier.rigid.add(BATCH)  # the batch dim is the data loader's, never a constant

    def run(self, model: ModelOp, func: FuncOp, env: Env, args: Sequence[Attribute]) -> Attribute:
        """Infer `func` for these argument types; return the type it returns."""
        for arg, arg_type in zip(func.body.block.args, args, strict=False):
            set_type(arg, arg_type)
        for layer in self.layers_in(model).values():
            count = layer_count(layer, env)
            if count is not None and count > MAX_LIST_COPIES:
                self._too_many_copies(layer, count)
        result: Attribute = TensorType.unranked()
        for op in func.body.block.ops:
            if isinstance(op, ReturnOp):
                result = op.values[0].type if op.values else result
                continue
            self.visit(model, op, env)
        self.ran[func] = None
        return result

    def run_block(self, model: ModelOp, block: Block, env: Env) -> list[Attribute]:
        """Visit a region's ops; the types its `nml.yield` gives."""
        yielded: list[Attribute] = []
        for op in block.ops:
            if isinstance(op, YieldOp):
                yielded = [v.type for v in op.values]
                continue
            self.visit(model, op, env)
        return yielded

    def visit(self, model: ModelOp, op: Operation, env: Env) -> None:
        """Type `op`'s results by its shape trait (tensorloom/dialects/nml/shape_trait.py);
        an op without one keeps its types."""
        trait = op.get_trait(ShapeInferenceTrait)
        if isinstance(trait, FromOperands):
            self._from_operands(op, trait)
        elif isinstance(trait, FromInstantiation):
            INSTANTIATION_RULES[trait.rule](self, model, op, env)
        self._track_scalars(op, env)

    # --- builtins -------------------------------------------------------------------

    def _from_operands(self, op: Operation, trait: FromOperands) -> None:
        operands = [v.type for v in op.operands]
        self._finish(op, trait.infer(op, operands, self.scalars.get, self.unifier))

    def _call(self, model: ModelOp, op: CallOp, env: Env) -> None:
        """A comparison (`x > 0`), else a call of another method of the model."""
        if op.callee.data in COMPARISONS:
            self._comparison(op)
        elif op.callee.data == "//" and len(op.args) == 2:
            self._floor_division(op)
        elif op.callee.data == "size" and op.method is not None and len(op.args) == 1:
            self._shape_tuple(op, op.args[0].type)  # `x.size()[2]`, as `x.shape[2]`
        else:
            self._method_call(model, op, env)

    def _finish(self, op: Operation, result: Attribute | ShapeMismatch) -> None:
        if isinstance(result, ShapeMismatch):
            self._report_builtin(op, result)
            result = TensorType.unranked()
        set_type(op.results[0], result)

    def _report_builtin(self, op: Operation, error: ShapeMismatch) -> None:
        span = span_at(op)
        labels = self._operand_label(op, error.operand, span)
        tensors = [self.format_type(t) for t in self._args(op) if isinstance(t, TensorType)]
        if len(tensors) == 2:
            labels = Label(span, f"inputs are {tensors[0]} and {tensors[1]}")
        name = op.name.removeprefix("nml.")
        message = error.message
        if not message.startswith((name, "`")):  # "`mse` needs ...": named already
            message = f"`{name}`: {message}"
        report(Diagnostic.error("TL0202", message, labels, help=error.help))

    def _operand_label(self, op: Operation, index: int, span: Span) -> Label:
        if index >= len(op.operands):
            return Label(span)
        return Label(span, f"input is {self.format_type(op.operands[index].type)}")

    def format_type(self, attr: Attribute) -> str:
        return format_type(attr, self.unifier)

    def resolved_type(self, attr: Attribute) -> Attribute:
        """`attr` with its symbols as the unifier has them now (`T` bound to 128: 128)."""
        return resolved_type(attr, self.unifier)

    def _track_scalars(self, op: Operation, env: Env) -> None:
        """Integers the forward computes that shapes may use (`x.size(0)`)."""
        if isinstance(op, DimOp):
            source = op.input.type
            dims = source.dims if isinstance(source, TensorType) else None
            index = op.index.value.data
            if dims is not None and -len(dims) <= index < len(dims):
                self.scalars[op.result] = self.unifier.resolve(dims[index])
        elif isinstance(op, ConstantOp) and isinstance(op.value, IntegerAttr):
            self.scalars[op.result] = op.value.value.data
        elif isinstance(op, RefOp):
            self._config_ref(op, env)
        elif isinstance(op, BinaryOp) and op.name in _SCALAR_ARITHMETIC:
            a, b = self.scalars.get(op.lhs), self.scalars.get(op.rhs)
            if isinstance(a, int) and isinstance(b, int):  # `x.size(1) * x.size(2)`
                folded = _SCALAR_ARITHMETIC[op.name](a, b)
                if isinstance(folded, int):
                    self.scalars[op.result] = folded
            elif op.name != "nml.mul" and a is not None and b is not None:
                # `skip.size(2) - x.size(2)` is `H2-H`: a pad that follows computed sizes
                sign = 1 if op.name == "nml.add" else -1
                self.scalars[op.result] = dim_expr.combine(a, b, sign)
        elif isinstance(op, IndexOp) and op.input in self.unranked_shapes:
            set_type(op.result, nml_any())  # an integer, as yet unknown
        elif isinstance(op, IndexOp) and op.input in self.shape_tuples:
            entries = op.entries()  # `x.shape[1]`
            dims = self.shape_tuples[op.input]
            if (
                len(entries) == 1
                and isinstance(entries[0], int)
                and -len(dims) <= entries[0] < len(dims)
            ):
                self.scalars[op.result] = dims[entries[0]]
                set_type(op.result, i64)

    def _config_ref(self, op: RefOp, env: Env) -> None:
        value = env.get(op.symbol.root_reference.data)
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            self.scalars[op.result] = value
            set_type(op.result, i64)
        elif isinstance(value, float):
            set_type(op.result, Float64Type())

    # --- control flow --------------------------------------------------------------

    def _for(self, model: ModelOp, op: ForOp, env: Env) -> None:
        """Follow every iteration's shapes (the carried types may change as they go)."""
        counts = self._iterations(model, op, env)
        self._record_followed(op, len(counts))
        carried = [v.type for v in op.inits]
        seen: dict[SSAValue, Attribute] = {}
        for k, counter in enumerate(counts):
            if k >= MAX_FOLLOWED and self._same_as_before(op, carried, seen):
                break  # the rest repeat the last: their types are the ones it gave
            self.scalars[op.counter] = counter
            set_type(op.counter, i64)
            for arg, arg_type in zip(op.carried, carried, strict=True):
                set_type(arg, arg_type)
            sink = DiagnosticSink()
            with reporting(sink):
                yielded = self.run_block(model, op.body.block, env)
            for diagnostic in sink.diagnostics:
                report(diagnostic)
            carried = yielded or carried
            _join_into(seen, op.body.block)
            if sink.has_errors:
                carried = [
                    TensorType.unranked() if isinstance(t, TensorType) else t for t in carried
                ]
                break
        self.scalars.pop(op.counter, None)
        for value, joined in seen.items():
            set_type(value, joined)
        for result, result_type in zip(op.results, carried, strict=True):
            set_type(result, result_type)

    def _record_followed(self, op: ForOp | IfOp, value: int) -> None:
        """On a specialised module (each value has one use), what the walk followed (the
        loop's `iterations`, the branch's `branches`): `tlc info` follows the same."""
        if not specialized_module(op):
            return
        if isinstance(op, ForOp) and op.iterations is None:
            op.iterations = IntegerAttr(value, i64)
        elif isinstance(op, IfOp) and op.branches is None:
            op.branches = IntegerAttr(value, i64)

    def _same_as_before(self, op: ForOp, carried: Sequence[Attribute], seen: Mapping) -> bool:
        """A fixpoint: the next iteration starts from the types the last one started from."""
        return all(seen.get(arg) == t for arg, t in zip(op.carried, carried, strict=True))

    def _iterations(self, model: ModelOp, op: ForOp, env: Env) -> list[int]:
        """The counter's values: the list's positions, or the range's values if known."""
        if op.layers is not None:
            layer = self.layers_in(model).get(op.layers.root_reference.data)
            count = layer_count(layer, env) if layer is not None else None
            if layer is not None and count is not None and count > MAX_LIST_COPIES:
                self._too_many_copies(layer, count)
                return [0]
            return list(range(count)) if count is not None else [0]
        bounds = [self.scalars.get(v) for v in op.bounds]
        if all(isinstance(b, int) for b in bounds):
            values = range(*bounds)  # type: ignore[arg-type]
            if len(values) <= MAX_ITERATIONS:
                return list(values)
        return [0]  # unknown bounds: the body is checked once

    def _if(self, model: ModelOp, op: IfOp, env: Env) -> None:
        cond = self.static_value(op.cond, env)
        if cond is UNKNOWN and isinstance(op.cond.type, TensorType):
            self._tensor_condition(op)
            cond = True
        if cond is True or cond is False:
            regions = [op.then_region] if cond else [op.else_region]
        else:  # not known when checking: both branches are followed
            regions = [op.then_region, op.else_region]
        self._record_followed(op, 2 if len(regions) == 2 else int(not cond))
        outcomes = [self.run_block(model, r.block, env) for r in regions]
        results = outcomes[0]
        if len(outcomes) == 2:
            results = self._join_branches(op, outcomes[0], outcomes[1])
        for result, result_type in zip(op.results, results, strict=False):
            set_type(result, result_type)

    def _join_branches(
        self, op: IfOp, then: Sequence[Attribute], orelse: Sequence[Attribute]
    ) -> list[Attribute]:
        joined: list[Attribute] = []
        for result, a, b in zip(op.results, then, orelse, strict=False):
            merged = _join(a, b)
            if isinstance(a, TensorType) and isinstance(b, TensorType) and merged != a:
                self._branch_mismatch(op, result, a, b)
            joined.append(merged)
        return joined

    def _branch_mismatch(self, op: IfOp, result: SSAValue, a: Attribute, b: Attribute) -> None:
        span = span_at(op)
        name = result.name_hint or "a value"
        message = (
            f"the branches give `{name}` different shapes: "
            f"{self.format_type(a)} and {self.format_type(b)}"
        )
        help_text = "make both branches give the same shape, or use two names"
        report(Diagnostic.error("TL0205", message, Label(span), help=help_text))

    def _tensor_condition(self, op: IfOp) -> None:
        span = span_at(op)
        message = "a branch cannot depend on a tensor's values"
        help_text = (
            "choose per element with `where(cond, a, b)`, or branch on a config value "
            "or `self.training`"
        )
        report(Diagnostic.error("TL0204", message, Label(span), help=help_text))

    def static_value(self, value: SSAValue, env: Env) -> object:
        """The value a condition always has for this instantiation, or UNKNOWN."""
        op = value.owner
        if isinstance(op, ConstantOp):
            if isinstance(op.value, IntegerAttr):
                raw = op.value.value.data
                return bool(raw) if op.value.type == i1 else raw
            if isinstance(op.value, FloatAttr):
                return op.value.value.data
            return UNKNOWN
        if isinstance(op, RefOp):
            name = op.symbol.root_reference.data
            return env.get(name, UNKNOWN) if name in env else UNKNOWN
        if value in self.scalars and isinstance(self.scalars[value], int):
            return self.scalars[value]
        if isinstance(op, CallOp) and op.method is None:
            return self._static_call(op, env)
        if isinstance(op, BinaryOp) and op.name in _STATIC_BINARY:
            return self._static_binary(op, env)
        return UNKNOWN

    def _static_binary(self, op: BinaryOp, env: Env) -> object:
        """`stride == 1`, `inp == oup`, `stride * 2 < 4` on configs: resolve-nml made the
        comparison a builtin op (a tensor comparison, had the operands been tensors)."""
        a, b = self.static_value(op.lhs, env), self.static_value(op.rhs, env)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        try:
            return _STATIC_BINARY[op.name](a, b)
        except (TypeError, ValueError, ZeroDivisionError):
            return UNKNOWN

    def _static_call(self, op: CallOp, env: Env) -> object:
        args = [self.static_value(a, env) for a in op.args]
        if any(a is UNKNOWN for a in args):
            return UNKNOWN
        operation = _STATIC_OPERATORS.get((op.callee.data, len(args)))
        if operation is None:
            return UNKNOWN
        try:
            return operation(*args)
        except (TypeError, ValueError, ZeroDivisionError):
            return UNKNOWN

    def _floor_division(self, op: CallOp) -> None:
        """`floordiv(diff, 2)` on sizes the forward computes (a U-Net's pad): an integer,
        followed as `(H2-H)//2` where the divisor is a positive integer."""
        types = [v.type for v in op.args]
        if any(isinstance(t, Float64Type) for t in types) and all(
            isinstance(t, Float64Type) or t == i64 for t in types
        ):
            set_type(op.result, Float64Type())  # `4.0 // 2` is 2.0, as in Python
        if any(t != i64 for t in types):
            return
        set_type(op.result, i64)
        a, b = (self.scalars.get(v) for v in op.args)
        if isinstance(b, int) and b > 0 and a is not None:
            self.scalars[op.result] = a // b if isinstance(a, int) else dim_expr.floordiv(a, b)

    def _comparison(self, op: CallOp) -> None:
        """`x > 0` on a tensor is a tensor of booleans, broadcast as arithmetic is."""
        shapes = [v.type for v in op.args]
        tensors = [t for t in shapes if isinstance(t, TensorType)]
        if not tensors:
            if all(t in (i1, i64) or isinstance(t, Float64Type) for t in shapes):
                set_type(op.result, i1)
            return
        dims: Shape = tensors[0].dims
        for other in tensors[1:]:
            merged = broadcast(dims, other.dims, self.unifier)
            dims = None if isinstance(merged, ShapeMismatch) else merged
        set_type(op.result, TensorType.from_dims(dims, i1))

    def _ref(self, model: ModelOp, op: RefOp, env: Env) -> None:
        """A `Parameter` is the tensor it holds; `self.training` a flag known at run time."""
        name = op.symbol.root_reference.data
        layer = self.layers_in(model).get(name)
        if layer is not None and layer.kind.data == PARAMETER:
            bound = bind_layer(layer, env)
            if bound is not None:
                set_type(op.result, TensorType.from_dims(bound.spec.param_shapes(bound)[""]))
        elif (name in MODULE_ATTRIBUTES and name not in env and layer is None) or isinstance(
            env.get(name), bool
        ):
            set_type(op.result, i1)

    def _tuple_get(self, op: TupleGetOp) -> None:
        source = op.input.type
        index = op.index.value.data
        result: Attribute | ShapeMismatch = nml_any()
        if isinstance(source, TupleType):
            result = tuple_item(source, [index])
        elif isinstance(source, TensorType) and source.dims is not None:
            # (an unranked one is unknown, as after an op whose error was reported)
            result = ShapeMismatch("a tensor cannot be unpacked into names")
        if op.input in self.shape_tuples and isinstance(result, Attribute):
            dims = self.shape_tuples[op.input]
            if -len(dims) <= index < len(dims):
                self.scalars[op.result] = dims[index]
        if isinstance(result, ShapeMismatch):
            self._report_builtin(op, result)
            result = nml_any()
        set_type(op.result, result)

    def _shape_tuple(self, op: Operation, source: Attribute) -> None:
        """`x.shape` or `x.size()`: a tuple of integers whose items shapes may use."""
        if isinstance(source, TensorType) and source.dims is not None:
            resolved = tuple(self.unifier.resolve(d) for d in source.dims)
            self.shape_tuples[op.results[0]] = resolved
            set_type(op.results[0], TupleType.of([i64] * len(source.dims)))
        elif isinstance(source, TensorType):
            self.unranked_shapes.add(op.results[0])

    def _getattr(self, model: ModelOp, op: GetAttrOp, env: Env) -> None:
        """`wte.weight` (a layer's tensor), `x.T`, `x.mT`, `x.shape`, `x.ndim`."""
        attr = op.attr_name.data
        base = op.input.owner
        if isinstance(base, RefOp):
            layer = self.layers_in(model).get(base.symbol.root_reference.data)
            if layer is not None:
                set_type(op.result, self._layer_tensor(layer, attr, env, op))
                return
        source = op.input.type
        if not isinstance(source, TensorType):
            return
        dims = source.dims
        if attr == "shape":
            self._shape_tuple(op, source)
        elif attr == "ndim" and dims is not None:
            self.scalars[op.result] = len(dims)
            set_type(op.result, i64)
        elif attr == "T":
            set_type(op.result, source.with_dims(None if dims is None else dims[::-1]))
        elif attr == "mT" and dims is not None and len(dims) >= 2:
            set_type(op.result, source.with_dims((*dims[:-2], dims[-1], dims[-2])))

    def _layer_tensor(self, layer: LayerOp, attr: str, env: Env, op: GetAttrOp) -> Attribute:
        bound = bind_layer(layer, env)
        if bound is None:
            return TensorType.unranked()
        shapes = bound.spec.param_shapes(bound)
        if attr in shapes:
            return TensorType.from_dims(shapes[attr])
        if shapes:
            self._unknown_tensor(layer, attr, list(shapes), op)
        return TensorType.unranked()

    def _unknown_tensor(self, layer: LayerOp, attr: str, known: list[str], op: GetAttrOp) -> None:
        span = span_at(op)
        listed = ", ".join(f"`{k}`" for k in known)
        name = layer.sym_name.data
        message = f"`{name}` ({layer.kind.data}) has no tensor `{attr}`"
        report(Diagnostic.error("TL0206", message, Label(span), help=f"its tensors are {listed}"))

    # --- layers ----------------------------------------------------------------------

    def _apply(self, model: ModelOp, op: ApplyOp, env: Env) -> None:
        name = op.layer.root_reference.data
        layer = self.layers_in(model).get(name)
        result: Attribute = TensorType.unranked()
        if layer is not None and not layer_built(layer, env):
            self._not_built(layer, op)
        elif layer is not None:
            result = self._apply_layer(model, layer, op, env)
        set_type(op.result, result)

    def _not_built(self, layer: LayerOp, op: ApplyOp | ApplyAtOp) -> None:
        """TL0303: a conditional layer applied where its condition is false."""
        span = span_of(op)
        if span is None:
            return
        name = layer.sym_name.data
        message = f"`{name}` is applied, but with this configuration it is not built"
        declared = [Label(s, "built only when this holds") for s in [span_of(layer)] if s]
        help_text = f"apply `{name}` under the same condition (`if ...:` in the forward)"
        report(Diagnostic.error("TL0303", message, Label(span), secondary=declared, help=help_text))

    def _apply_at(self, model: ModelOp, op: ApplyAtOp, env: Env) -> None:
        """`h[i](x)`: every element of a layer list is the same layer, at position `i`."""
        name = op.layer.root_reference.data
        layer = self.layers_in(model).get(name)
        result: Attribute = TensorType.unranked()
        index = self.scalars.get(op.index)
        if layer is not None:
            count = layer_count(layer, env)
            if isinstance(index, int) and count is not None and not -count <= index < count:
                self._index_out_of_range(op, name, index, count)
            position = index % count if isinstance(index, int) and count else index
            at = position if isinstance(position, int) else None
            if at is not None:  # a per-position list: this element's arguments
                env = dict(element_env(layer, env, at))
            result = self._apply_layer(model, layer, op, env, at)
        set_type(op.result, result)

    def _too_many_copies(self, layer: LayerOp, count: int) -> None:
        span = span_at(layer)
        if layer in self._refused_lists:
            return
        self._refused_lists.add(layer)
        name, kind = layer.sym_name.data, layer.kind.data
        message = (
            f"`{name}` would hold {count:,} copies of `{kind}`: "
            f"a layer list holds at most {MAX_LIST_COPIES:,}"
        )
        help_text = "check the count: real models stack tens or hundreds of blocks"
        report(Diagnostic.error("TL0209", message, Label(span), help=help_text))

    def _index_out_of_range(self, op: ApplyAtOp, name: str, index: int, count: int) -> None:
        span = span_at(op)
        message = f"`{name}` has {count} layers; index {index} is out of range"
        report(Diagnostic.error("TL0207", message, Label(span)))

    def _apply_layer(
        self,
        model: ModelOp,
        layer: LayerOp,
        op: ApplyOp | ApplyAtOp,
        env: Env,
        position: int | None = None,
    ) -> Attribute:
        nested = nested_model(layer, self.models, position)
        if nested is not None and nested is not model and lookup(layer.kind.data) is None:
            return self._apply_model(layer, nested, op, env)
        bound = bind_layer(layer, env)
        if bound is None:
            return TensorType.unranked()
        if op.args and isinstance(op.args[0].type, IntegerType | Float64Type):
            number = ShapeMismatch("takes a tensor, got a number", help="apply it to a tensor")
            self._report_layer(layer, op, bound, number)  # `3 |> self.fc` (a fuzz finding)
            return TensorType.unranked()
        inputs = [self._shape(v) for v in op.args]
        if bound.spec.takes_indices and op.args:
            self._check_positions(layer, op, bound)
            if self._float_ids(model, op):
                mismatch = ShapeMismatch(
                    "looks up integer token ids, but its input is the float output of a layer",
                    help=f"an `{bound.spec.name}` takes token ids: the model's input, such as a "
                    "sequence dataset's `[B, T]` samples",
                )
                self._report_layer(layer, op, bound, mismatch)
                return TensorType.unranked()
        suffix = self._suffix_input(op, bound)
        if suffix is not None:
            inputs[0] = (PLACEHOLDER, *suffix)
        shape = bound.spec.infer_shape(bound, inputs, self.unifier)
        if isinstance(shape, ShapeMismatch):
            self._report_layer(layer, op, bound, shape)
            shape = None
        result = self._like(op, shape)
        if suffix is not None or (inputs and inputs[0] is None):
            result = self._from_placeholder(result, shape, bound)
        if bound.spec.stateful and len(op.args) == 2:
            result = self._with_state(layer, op, bound, result)
        return result

    def _with_state(
        self, layer: LayerOp, op: ApplyOp | ApplyAtOp, bound: BoundLayer, output: Attribute
    ) -> Attribute:
        """`lstm(x, state)`: `(output, state)`, the state given (`none`: zeros) checked
        against the layer's (an LSTM's a pair `(h, c)`, a GRU's one tensor)."""
        x = self._shape(op.args[0])
        if x is None or not isinstance(output, TensorType):
            return TupleType.of([output, nml_any()])
        wanted = [output.with_dims(s) for s in bound.spec.state_shapes(bound, x)]
        state = wanted[0] if len(wanted) == 1 else TupleType.of(wanted)
        given = op.args[1].type
        problem = self._state_problem(wanted, given)
        if problem is not None:
            self._report_layer(layer, op, bound, problem)
        return TupleType.of([output, state])

    def _state_problem(self, wanted: list[TensorType], given: Attribute) -> ShapeMismatch | None:
        if isinstance(given, NoneType | AnyType):
            return None
        tensors = list(given.elements.data) if isinstance(given, TupleType) else [given]
        expected = ", ".join(self.format_type(t) for t in wanted)
        what = "a pair (h, c)" if len(wanted) == 2 else "a tensor"
        if len(tensors) != len(wanted) or not all(isinstance(t, TensorType) for t in tensors):
            return ShapeMismatch(
                f"takes its state as {what}: {expected}",
                help="pass `none` for a zero state, or the state a previous call returned",
            )
        for want, got in zip(wanted, tensors, strict=True):
            assert isinstance(got, TensorType)
            if got.dims is None:
                continue
            if len(got.dims) != len(want.dims or ()) or isinstance(
                self.unifier.unify_shapes(want.dims, got.dims), ShapeMismatch
            ):
                return ShapeMismatch(
                    f"takes its state as {what}: {expected}, got {self.format_type(got)}",
                    expected=expected,
                    got=self.format_type(got),
                    help="a state is [num_layers x directions, B, hidden_size]",
                )
        return None

    def _float_ids(self, model: ModelOp, op: ApplyOp | ApplyAtOp) -> bool:
        """Whether the ids of a layer that looks them up (its spec's `takes_indices`) are the
        output of a catalogue layer (always floats)."""
        seen: set[SSAValue] = set()
        todo = [op.args[0]]
        while todo:  # back through the builtins that keep a float a float (`sum`, `relu`, `+`)
            value = todo.pop()
            if value in seen:
                continue
            seen.add(value)
            source = value.owner
            if isinstance(source, ApplyOp):
                declared = layers_of(model).get(source.layer.root_reference.data)
                if declared is not None and lookup(declared.kind.data) is not None:
                    return True
                continue
            kind = value.type
            float_result = isinstance(kind, TensorType) and not isinstance(
                kind.element_type, IntegerType
            )
            if isinstance(source, Operation) and float_result and _keeps_float(source):
                todo.extend(source.operands)
        return False

    def _suffix_input(self, op: ApplyOp | ApplyAtOp, bound: BoundLayer) -> Shape:
        """`[..., 784]` into a layer whose rule holds for any leading dims: its known
        trailing dims, checked as if one placeholder dim stood for the rest."""
        if not op.args or not bound.spec.suffix_polymorphic or len(op.args) != 1:
            return None
        source = op.args[0].type
        return source.suffix if isinstance(source, TensorType) and source.prefixed else None

    def _from_placeholder(self, result: Attribute, shape: Shape, bound: BoundLayer) -> Attribute:
        """The rule's output back in `[..., *suffix]` form; for an input of unknown rank,
        the trailing dims the layer fixes whatever comes in (`Linear(784, 256)`: 256)."""
        if not isinstance(result, TensorType):
            return result
        if shape is not None and shape[:1] == (PLACEHOLDER,) and PLACEHOLDER not in shape[1:]:
            return TensorType.from_suffix(shape[1:], result.element_type)
        if shape is None and result.dims is None:
            known = bound.spec.unknown_rank_suffix(bound)
            if known is not None:
                return TensorType.from_suffix(known, result.element_type)
        return result

    def _check_positions(self, layer: LayerOp, op: ApplyOp | ApplyAtOp, bound: BoundLayer) -> None:
        """`wpe(arange(T))`: the largest position must have a row in the table
        (nanoGPT's "Cannot forward sequence of length 12, block size is only 8")."""
        source = op.args[0].owner
        if not isinstance(source, Operation) or source.name != "nml.arange":
            return
        last = _arange_last(source, self._shape(op.args[0]), self.unifier)
        rows = bound.get_int("num_embeddings")
        if last is None or last < rows:
            return
        span = span_at(op)
        name = layer.sym_name.data
        message = (
            f"cannot look up position {last} in `{name}`: it holds {rows} positions "
            f"(the sequence is longer than the table)"
        )
        secondary = [Label(s, f"`{name}` is declared here") for s in [span_of(layer)] if s]
        help_text = (
            f"feed sequences of at most {rows} tokens, or make the table "
            f"`{bound.spec.name}({last + 1}, ...)`"
        )
        report(
            Diagnostic.error("TL0208", message, Label(span), secondary=secondary, help=help_text)
        )

    def _shape(self, value: SSAValue) -> Shape:
        attr = value.type
        return attr.dims if isinstance(attr, TensorType) else None

    def _like(self, op: ApplyOp | ApplyAtOp, shape: Shape) -> Attribute:
        """The input's element type, but a float for integer indices (a layer that
        `takes_indices` looks up float rows)."""
        first = op.args[0].type if op.args else None
        if not isinstance(first, TensorType) or isinstance(first.element_type, IntegerType):
            return TensorType.unranked().with_dims(shape)
        return first.with_dims(shape)

    def _apply_model(
        self, layer: LayerOp, nested: ModelOp, op: ApplyOp | ApplyAtOp, env: Env
    ) -> Attribute:
        forward = forward_of(nested)
        overrides = nested_overrides(layer, nested, env)
        if self.depth > MAX_DEPTH:
            self._too_deep(layer)
            return TensorType.unranked()
        if forward is None or isinstance(overrides, ArgFailure):
            return TensorType.unranked()
        self.depth += 1
        inner_env = model_env(nested, overrides)
        args = self._annotated_args(layer, op, forward, inner_env)
        result = self._follow(nested, forward, inner_env, args)
        self.depth -= 1
        return result

    def _follow(
        self, model: ModelOp, func: FuncOp, env: Env, args: Sequence[Attribute]
    ) -> Attribute:
        """`run`, once for each config and argument types: a second call gives the first's
        result (the IR holds its types; its diagnostics were reported the first time)."""
        config = env_key(env)  # what a followed call's result depends on, with `args`
        key = None if config is None else (func, config, tuple(args))
        if key is not None and key in self._followed:
            return self._followed[key]
        result = self.run(model, func, env, args)
        if key is not None:
            self._followed[key] = result
        return result

    def _annotated_args(
        self, layer: LayerOp, op: ApplyOp | ApplyAtOp, forward: FuncOp, env: Env
    ) -> list[Attribute]:
        """What reaches a nested model's forward, merged with its annotations (`x:
        Tensor[B, d]`, `d` a config of that model); a mismatch is TL0201 at the call."""
        given = self._tensor_args(op)
        nested = enclosing_model(forward)
        if nested is not None:
            report_config_sizes(nested, forward, env)
        shown = [with_config_dims(t, env) for t in forward.function_type.inputs.data]
        self._annotation_uses += 1
        declared = [own_sizes(t, self._annotation_uses) for t in shown]
        merged: list[Attribute] = []
        for i, got in enumerate(given):
            want = declared[i] if i < len(declared) else None
            if not (isinstance(want, TensorType) and isinstance(got, TensorType)):
                merged.append(got)
                continue
            if want.dims is None or got.dims is None:
                merged.append(got if got.dims is not None else want.with_dims(want.dims))
                continue
            dims = self.unifier.unify_shapes(want.dims, got.dims)
            if isinstance(dims, ShapeMismatch):
                self._report_annotation(layer, op, forward, i, shown[i], got, dims)  # type: ignore[arg-type]
                merged.append(want)  # checked on its own annotation: one mistake, one error
                continue
            for dim in got.dims:
                if isinstance(dim, str) and dim_expr.is_name(dim):
                    self.unifier.represent(dim)
            merged.append(got.with_dims(self.unifier.resolve_shape(got.dims)))
        return merged

    def _report_annotation(
        self,
        layer: LayerOp,
        op: ApplyOp | ApplyAtOp,
        forward: FuncOp,
        index: int,
        want: TensorType,
        got: TensorType,
        mismatch: ShapeMismatch,
    ) -> None:
        span = span_at(op)
        name, kind = layer_label(layer), layer.kind.data
        message = (
            f"`{name}` (`{kind}`) takes {format_shape(want.dims)} (its forward's annotation), "
            f"got {self.unifier.format_shape(got.dims)}: {mismatch.message}"
        )
        primary = self._operand_label(op, index, span)
        secondary = [
            Label(s, f"`{kind}`'s forward is declared here") for s in [span_of(forward)] if s
        ]
        report(
            Diagnostic.error("TL0201", message, primary, secondary=secondary, help=mismatch.help)
        )

    def _model_call(self, model: ModelOp, op: ModelCallOp, env: Env) -> None:
        """`G(z)` in an objective: the forward of the instance `G` is bound to, followed for
        these arguments (each unified with its annotation; a mismatch is TL0201 at the call)."""
        set_type(op.result, TensorType.unranked())
        bound = self.bound_models.get(op.model)
        if bound is None:
            self._not_a_model(op)
            return
        name, nested, nested_env = bound
        forward = forward_of(nested)
        if forward is None:
            return
        declared = [with_config_dims(t, nested_env) for t in forward.function_type.inputs.data]
        given = [a.type for a in op.args]
        if len(given) != len(declared):
            self._model_arity(op, name, forward, len(declared), len(given))
            return
        args = [self._model_arg(op, name, i, want, got)
                for i, (want, got) in enumerate(zip(declared, given, strict=True))]  # fmt: skip
        self.depth += 1
        module = nested.parent_op()
        ran = dict(self.ran)
        with types_kept(module if module is not None else nested):  # the models keep theirs
            result = self._follow(nested, forward, nested_env, args)
        self.ran = ran
        self.depth -= 1
        set_type(op.result, result)

    def _model_arg(
        self, op: ModelCallOp, name: str, index: int, want: Attribute, got: Attribute
    ) -> Attribute:
        if not (isinstance(want, TensorType) and isinstance(got, TensorType)):
            return got
        if want.dims is None or got.dims is None:
            return got if got.dims is not None else want
        dims = self.unifier.unify_shapes(want.dims, got.dims)
        if not isinstance(dims, ShapeMismatch):
            return got.with_dims(dims)
        span = span_of(op)
        if span is not None:
            message = (
                f"`{name}` takes {format_shape(want.dims)} (its forward's annotation), "
                f"got {self.unifier.format_shape(got.dims)}: {dims.message}"
            )
            label = self._operand_label(op, index + 1, span)
            report(Diagnostic.error("TL0201", message, label, help=dims.help))
        return want

    def _model_arity(
        self, op: ModelCallOp, name: str, forward: FuncOp, want: int, got: int
    ) -> None:
        span = span_of(op)
        if span is None:
            return
        inputs = ", ".join(f"`{a.data}`" for a in forward.arg_names.data)
        message = f"`{name}`'s forward takes {want} input{'s' * (want != 1)} ({inputs}), got {got}"
        report(Diagnostic.error("TL0201", message, Label(span)))

    def _not_a_model(self, op: ModelCallOp) -> None:
        span = span_of(op)
        name = op.model.name_hint or "this value"
        if span is None:
            return
        message = f"`{name}` is not a model: only an objective's model parameters can be called"
        help_text = "name the function in a train block's `objective =` or `step` line"
        report(Diagnostic.error("TL0305", message, Label(span), help=help_text))

    def _instance_model(self) -> ModelOp | None:
        """The model the checked instance instantiates (its overrides are its configs)."""
        if self.instance is None:
            return None
        return self.models.get(self.instance.model.root_reference.data)

    def _kernel_call(self, op: KernelCallOp) -> None:
        """A kernel's launcher returns `out=` if given, else an output allocated like its
        first tensor argument (`torch.empty_like(x)`, synthesize-launchers)."""
        if len(op.results) != 1:
            return
        names = [n.data for n in op.arg_names]
        like = op.args[names.index("out")] if "out" in names else None
        if like is None:
            like = next((a for a, n in zip(op.args, names, strict=False) if not n), None)
        kind = like.type if like is not None else None
        if isinstance(kind, TensorType):
            set_type(op.results[0], kind)

    def _tensor_args(self, op: ApplyOp | ApplyAtOp) -> list[Attribute]:
        return [v.type for v in op.args]

    def _args(self, op: Operation) -> list[Attribute]:
        return [v.type for v in op.operands]

    def _too_deep(self, layer: LayerOp) -> None:
        """Said once: shapes past this depth are not checked, so the program is not either."""
        span = span_at(layer)
        if self.depth_reported:
            return
        self.depth_reported = True
        message = f"models nest more than {MAX_DEPTH} levels deep here"
        help_text = "flatten the nesting: shapes past this depth cannot be checked"
        report(Diagnostic.error("TL0310", message, Label(span, ""), help=help_text))

    def _method_call(self, model: ModelOp, op: CallOp, env: Env) -> None:
        method = called_method(model, op)
        if method is None or op.method is not None or self.depth > MAX_DEPTH:
            return
        self.depth += 1
        set_type(op.result, self._follow(model, method, env, self._args(op)))
        self.depth -= 1

    def _report_layer(
        self, layer: LayerOp, op: ApplyOp | ApplyAtOp, bound: BoundLayer, mismatch: ShapeMismatch
    ) -> None:
        span = span_at(op)
        name = layer_label(layer)
        primary = self._operand_label(op, mismatch.operand, span)
        secondary = [Label(s, f"`{name}` is declared here") for s in [span_of(layer)] if s]
        help_text = mismatch.help or _layer_help(name, bound, mismatch)
        config = _features_config(layer, bound, mismatch)
        if config is not None:  # `Conv2d(in_channels, ...)`: the fix is the config, not a literal
            help_text = f"set `{config}` to {mismatch.got}, or add a layer that maps "
            help_text += f"{mismatch.got} to {mismatch.expected}"
            override = _override_span(self.instance, config)
            if override is not None and layer.parent_op() is self._instance_model():
                value = mismatch.expected
                secondary.append(Label(override, f"`{config}` is set to {value} here"))
        diagnostic = Diagnostic.error(
            "TL0201", mismatch.render(name), primary, secondary=secondary, help=help_text
        )
        report(diagnostic)


InstantiationRule = Callable[[Inference, ModelOp, Any, Env], None]
INSTANTIATION_RULES: dict[str, InstantiationRule] = {
    "for": Inference._for,
    "if": Inference._if,
    "apply": Inference._apply,
    "apply_at": Inference._apply_at,
    "model_call": Inference._model_call,
    "call": Inference._call,
    "getattr": lambda self, model, op, env: self._getattr(model, op, env),
    "ref": lambda self, model, op, env: self._ref(model, op, env),
    "tuple_get": lambda self, model, op, env: self._tuple_get(op),
    "kernel_call": lambda self, model, op, env: self._kernel_call(op),
}
"""The rules an op's `FromInstantiation(rule)` trait names, by name."""


def format_type(attr: Attribute, unifier: Unifier | None = None) -> str:
    """A type as `tlc check` shows it: `[B, 256]`, `[..., 10]`, `([B, 4], [B])`."""
    unifier = unifier if unifier is not None else Unifier()
    if isinstance(attr, TupleType):
        return "(" + ", ".join(format_type(t, unifier) for t in attr.types) + ")"
    if not isinstance(attr, TensorType):
        return str(attr)
    if attr.prefixed and attr.suffix is not None:
        inner = unifier.format_shape(tuple(unifier.resolve(d) for d in attr.suffix))
        return "[..., " + inner[1:] if inner != "[]" else "[...]"
    return unifier.format_shape(attr.dims)


def resolved_type(attr: Attribute, unifier: Unifier) -> Attribute:
    """`attr` with every symbol the unifier knows replaced by its value or class name:
    `format_type(resolved_type(t, u))` is `format_type(t, u)`."""
    if isinstance(attr, TupleType):
        return TupleType.of([resolved_type(t, unifier) for t in attr.types])
    if not isinstance(attr, TensorType):
        return attr
    if attr.prefixed and attr.suffix is not None:
        suffix = tuple(unifier.resolve(d) for d in attr.suffix)
        return TensorType.from_suffix(suffix, attr.element_type)
    if attr.dims is None:
        return attr
    return attr.with_dims(unifier.resolve_shape(attr.dims))


def set_type(value: SSAValue, attr: Attribute) -> None:
    """Refine `value`'s type in place, as MLIR's `Value::setType` does in Toy's shape
    inference: the same value, so its uses and what is keyed by it stay as they are.
    (xDSL's `Rewriter.replace_value_with_new_type` makes a new value and moves the uses:
    the values this pass holds in its tables would go stale after every op.)"""
    value._type = attr  # pyright: ignore[reportPrivateUsage]


@contextmanager
def types_kept(root: Operation) -> Generator[None]:
    """Every value under `root` keeps its type, and every method its signature: for an
    inference run only for what it reports (a second loop's data, `load_dataset()`'s
    synthetic samples, a model an objective calls), which must leave the IR as it was."""
    values = [v for op in root.walk() for v in _defined_by(op)]
    kept = [v.type for v in values]
    signatures = [(f, f.function_type) for f in root.walk() if isinstance(f, FuncOp)]
    try:
        yield
    finally:
        for value, attr in zip(values, kept, strict=True):
            set_type(value, attr)
        for func, signature in signatures:
            func.function_type = signature


def _defined_by(op: Operation) -> list[SSAValue]:
    return [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]


def values_defined_in(block: Block) -> list[SSAValue]:
    """The values a block defines: its arguments, its ops' results and the arguments of
    the blocks nested in them (loop bodies)."""
    values: list[SSAValue] = list(block.args)
    for op in block.walk():
        values.extend(op.results)
        for region in op.regions:
            for inner in region.blocks:
                values.extend(inner.args)
    return values


def _arange_last(op: Operation, shape: Shape, unifier: Unifier) -> int | None:
    """The largest value an `nml.arange` of this shape holds, if its start, step and
    length are known integers."""
    bounds = op.properties.get("bounds")
    if not isinstance(bounds, ArrayAttr) or len(bounds.data) != 3 or shape is None:
        return None
    start, _, step = bounds.data
    length = unifier.resolve(shape[0]) if shape else None
    if not (isinstance(start, IntegerAttr) and isinstance(step, IntegerAttr)):
        return None
    if not isinstance(length, int) or length <= 0 or step.value.data <= 0:
        return None
    return start.value.data + (length - 1) * step.value.data


def _join(a: Attribute, b: Attribute) -> Attribute:
    """The least type both are: dims that differ become unknown."""
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
            return a.with_dims(None)
        dims = tuple(x if x == y else None for x, y in zip(a.dims, b.dims, strict=True))
        return a.with_dims(dims)
    return a


def _join_into(seen: dict[SSAValue, Attribute], block: Block) -> None:
    """Each value of a loop's body: the join of its types in the iterations so far."""
    for value in values_defined_in(block):
        now = value.type
        seen[value] = _join(seen[value], now) if value in seen else now


def nml_any() -> Attribute:
    return AnyType()


_SCALAR_ARITHMETIC: dict[str, Callable[[int, int], object]] = {
    "nml.add": operator.add,
    "nml.sub": operator.sub,
    "nml.mul": operator.mul,
}

COMPARISONS = frozenset(["==", "!=", "<", "<=", ">", ">="])

PLACEHOLDER = "…"
"""The one dim that stands for a shape's unknown leading dims while a layer's rule runs."""

UNKNOWN = object()
"""A condition whose value is not known before the forward runs (`self.training`)."""

MAX_FOLLOWED = 256
"""Iterations followed one by one; past them a loop whose types repeat is not walked again."""

MAX_ITERATIONS = 100_000
MAX_LIST_COPIES = 10_000
"""The most copies a layer list may hold (TL0209): the checker follows each one."""


def _and(a: object, b: object) -> object:
    return a and b


def _or(a: object, b: object) -> object:
    return a or b


_STATIC_OPERATORS: dict[tuple[str, int], Callable[..., object]] = {
    ("==", 2): operator.eq,
    ("!=", 2): operator.ne,
    ("<", 2): operator.lt,
    ("<=", 2): operator.le,
    (">", 2): operator.gt,
    (">=", 2): operator.ge,
    ("and", 2): _and,
    ("or", 2): _or,
    ("not", 1): operator.not_,
    ("%", 2): operator.mod,
}

_STATIC_BINARY: dict[str, Callable[[Any, Any], object]] = {
    **_SCALAR_ARITHMETIC,
    **{cls.name: _STATIC_OPERATORS[(symbol, 2)] for symbol, cls in COMPARE_OPS.items()},
}
"""Builtin ops whose value is known when checked when their operands are (configs)."""


def _keeps_float(op: Operation) -> bool:
    """A builtin whose result is a float whenever its tensor input is (not `arange`)."""
    trait = op.get_trait(ShapeInferenceTrait)
    return isinstance(trait, FromOperands) and op.name.removeprefix("nml.") not in _INT_RESULTS


_INT_RESULTS = frozenset({"arange", "dim", "where"})


def describe(bound: BoundLayer) -> str:
    """The constructor as TensorLoom writes it: `Conv2d(1, 16, 3, padding="same")`."""
    args = [_literal(a) for a in bound.args]
    args += [f"{k}={_literal(v)}" for k, v in bound.kwargs]
    return f"{bound.spec.name}({', '.join(args)})"


def _features_config(layer: LayerOp, bound: BoundLayer, mismatch: ShapeMismatch) -> str | None:
    """The config a layer's input size is (`Conv2d(in_channels, ...)`) when that size is
    what the input contradicts, else None."""
    first = layer.args.data[0] if layer.args.data else None
    if not bound.spec.input_size_first or not isinstance(first, CfgAttr):
        return None
    if mismatch.got is None or not mismatch.got.isdigit() or mismatch.expected is None:
        return None
    return first.param.data


def _layer_help(name: str, bound: BoundLayer, mismatch: ShapeMismatch) -> str | None:
    """`change `fc2` to `Linear(256, 10)`, or add a layer that maps 256 to 128`."""
    kind = bound.spec.name
    if not bound.spec.input_size_first or not bound.args or mismatch.got is None:
        return None
    if not mismatch.got.isdigit() or mismatch.expected is None:
        return None
    args = [mismatch.got, *(_literal(a) for a in bound.args[1:])]
    args += [f"{k}={_literal(v)}" for k, v in bound.kwargs]
    fix = f"change `{name}` to `{kind}({', '.join(args)})`"
    return f"{fix}, or add a layer that maps {mismatch.got} to {mismatch.expected}"


def _literal(value: object) -> str:
    if isinstance(value, CallValue):  # a layer inside `Sequential(...)`
        args = [_literal(a) for a in value.args] + [f"{k}={_literal(v)}" for k, v in value.kwargs]
        return f"{value.name}({', '.join(args)})" if args else value.name
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


# --- the module -----------------------------------------------------------------------------


def _dataset_inputs(loop: train.LoopOp, module: ModuleOp) -> DatasetInfo | None:
    op = lookup_symbol(module, loop.data, train.DatasetOp)
    if op is None:
        return None
    checked = dataset_check(op)
    return checked.info if isinstance(checked, DataCheck) else None


def dataset_input(info: DatasetInfo) -> TensorType | None:
    """The batched input a dataset feeds a model: `[B, *sample_shape]`."""
    if info.sample_shape is None:
        return None
    element = i64 if info.dtype == "i64" else TensorType.unranked().element_type
    return TensorType.from_dims((BATCH, *info.sample_shape), element)


def instantiations(module: ModuleOp, models: Mapping[str, ModelOp]) -> list[Instantiation]:
    """Step 1-2: instances (those a train loop uses first), then uninstantiated models."""
    loops = {  # a block of objectives feeds its data to them, not to a forward
        op.model.root_reference.data: op
        for op in module.walk()
        if isinstance(op, train.LoopOp) and not op.runs_objectives()
    }
    found: list[Instantiation] = []
    for op in module.walk():
        if isinstance(op, InstanceOp):
            inst = instance_of(op, models, loops.get(op.sym_name.data), module)
            found += [inst] if inst is not None else []
    found.sort(key=lambda i: i.inputs is None)
    instantiated = {i.model for i in found}
    nested = {layer.kind.data for m in models.values() for layer in layers_of(m).values()}
    rest = [  # a `Sequential`'s hidden model is checked only in the model that holds it
        m
        for m in models.values()
        if m not in instantiated and not is_specialized_copy(m) and m.sequential is None
    ]
    rest.sort(key=lambda m: m.sym_name.data in nested)  # a nested model is typed in its parent
    return found + [Instantiation(m.sym_name.data, m, model_env(m)) for m in rest]


def instance_of(
    op: InstanceOp, models: Mapping[str, ModelOp], loop: train.LoopOp | None, module: ModuleOp
) -> Instantiation | None:
    model = models.get(op.model.root_reference.data)
    if model is None:
        return None
    env = instance_env(op, model)  # the configuration `instantiate` folded
    found = Instantiation(op.sym_name.data, model, env, loop=loop)
    from tensorloom.passes.support.batch_fields import block_loss_fields  # it imports this

    info = _dataset_inputs(loop, module) if loop is not None else None
    by_field = block_loss_fields(module, loop, info) if loop is not None else None
    if by_field is not None and info is not None:  # each parameter its field, by name
        found.inputs = [_field_input(info, name) for name in by_field.inputs]
        found.fields = by_field.inputs
        found.data_span = span_of(loop)
        return found
    data_input = dataset_input(info) if info is not None else None
    if data_input is not None and loop is not None:
        found.inputs = [data_input]
        found.data_span = span_of(loop)
    return found


def _field_input(info: DatasetInfo, name: str) -> Attribute:
    """A field's batch, `[B, *shape]`; unranked where the field or its shape is unknown."""
    found = info.field_named(name)
    if found is None or found.shape is None:
        return TensorType.unranked()
    element = i64 if found.dtype == "i64" else TensorType.unranked().element_type
    return TensorType.from_dims((BATCH, *found.shape), element)


def input_types(inst: Instantiation, func: FuncOp, inference: Inference) -> list[Attribute]:
    """Step 2: the forward's argument types, the dataset's batch merged into the first."""
    module = inst.model.parent_op()
    instance = lookup_symbol(module, inst.name, InstanceOp) if module is not None else None
    report_config_sizes(inst.model, func, inst.env, instance)
    declared = [with_config_dims(t, inst.env) for t in func.function_type.inputs.data]
    for attr in declared:  # `x: Tensor[B, T]`: T is a size of each sample, never the batch
        if isinstance(attr, TensorType) and attr.suffix is not None:
            inference.unifier.distinct.update(d for d in attr.suffix if isinstance(d, str))
    if inst.inputs is None or not declared:
        return declared
    merged_inputs = []
    for index, (given, first) in enumerate(zip(inst.inputs, declared, strict=False)):
        merged = _merged_input(inst, func, inference, index, given, first)
        if merged is None:
            return declared
        merged_inputs.append(merged)
    return [*merged_inputs, *declared[len(merged_inputs) :]]


def _merged_input(
    inst: Instantiation,
    func: FuncOp,
    inference: Inference,
    index: int,
    given: Attribute,
    declared: Attribute,
) -> Attribute | None:
    """The data's batch for input `index` merged into its annotation; None: they disagree
    (reported)."""
    if not isinstance(declared, TensorType) or declared.dims is None:
        return given
    if not isinstance(given, TensorType) or given.dims is None:
        return declared
    merged = inference.unifier.unify_shapes(declared.dims, given.dims)
    if isinstance(merged, ShapeMismatch):
        _report_input(inst, func, declared, given, index)
        return None
    return declared.with_dims(merged)


def with_config_dims(attr: Attribute, env: Env) -> Attribute:
    """`Tensor[B, T, d]` with `d` an integer config of the model: `Tensor[B, T, 16]`."""
    if not isinstance(attr, TensorType) or attr.suffix is None:
        return attr
    dims = attr.suffix
    folded = tuple(_config_dim(d, env) for d in dims)
    if folded == dims:
        return attr
    if attr.prefixed:
        return TensorType.from_suffix(folded, attr.element_type)
    return attr.with_dims(folded)


def own_sizes(attr: Attribute, use: int) -> Attribute:
    """A nested forward's annotation with its size names made its own for one call:
    `Tensor[B, C, H, W]` as `Tensor[B, C_1, H_1, W_1]`. The names are the nested
    model's, not the caller's (its `C` is not the image's `C`), and each call binds
    them anew (a block used before and after a pool); `B` stays the batch."""
    if not isinstance(attr, TensorType) or attr.dims is None:
        return attr
    dims = tuple(
        f"{d}_{use}" if isinstance(d, str) and d != BATCH and dim_expr.is_name(d) else d
        for d in attr.dims
    )
    return attr.with_dims(dims)


def _config_dim(dim: Dim, env: Env) -> Dim:
    if not isinstance(dim, str):
        return dim
    value = env.get(dim)
    return value if isinstance(value, int) and _is_size(value) else dim


def _override_span(instance: InstanceOp | None, key: str) -> Span | None:
    if instance is None or key not in instance.overrides.data:
        return None
    index = list(instance.overrides.data).index(key)
    locs = instance.override_locs
    return span_of(locs.data[index]) if locs is not None and index < len(locs.data) else None


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= INT64_MAX


def report_config_sizes(
    model: ModelOp, func: FuncOp, env: Env, instance: InstanceOp | None = None
) -> None:
    """TL0215 at an annotation whose size is an integer config that is not positive
    (`x: Tensor[B, width]` with `width = -1`), or at the instance's override that made
    it so (`Encoder(width=0)`); the annotation keeps the name."""
    configs = configs_of(model)
    for arg, attr in zip(func.body.block.args, func.function_type.inputs.data, strict=False):
        if not isinstance(attr, TensorType) or attr.suffix is None:
            continue
        literal = next((d for d in attr.suffix if isinstance(d, int) and d <= 0), None)
        span = span_of(arg.location) or span_of(func)
        if literal is not None and span is not None:  # `x: Tensor[B, 0]` (a fuzz finding)
            message = f"a size in an annotation must be positive, got {literal}"
            report(Diagnostic.error("TL0215", message, Label(span)))
        for dim in dict.fromkeys(d for d in attr.suffix if isinstance(d, str)):
            value = env.get(dim)
            if not isinstance(value, int) or isinstance(value, bool) or value > 0:
                continue  # past 64 bits: resolve-nml reported it (TL0421)
            span = span_of(arg.location) or span_of(func)
            config = span_of(configs[dim]) if dim in configs else None
            override = _override_span(instance, dim)
            if span is None:
                continue
            secondary = [Label(config, f"`{dim}` is set here")] if config is not None else []
            if override is not None:
                secondary = [Label(span, "the annotation")]
                span = override
            message = f"`{dim}` is {value}, but a size in an annotation must be positive"
            report(Diagnostic.error("TL0215", message, Label(span), secondary=secondary))


def _report_input(
    inst: Instantiation, func: FuncOp, declared: TensorType, given: TensorType, index: int
) -> None:
    span = inst.data_span or span_at(func)
    model = inst.model.sym_name.data
    source = f"the field `{inst.fields[index]}`" if index < len(inst.fields) else "the data"
    message = (
        f"{source} gives `{model}` inputs of shape {format_shape(given.dims)}, "
        f"but its `forward` expects {format_shape(declared.dims)}"
    )
    secondary = [Label(s, "the input is annotated here") for s in [span_of(func)] if s]
    report(Diagnostic.error("TL0203", message, Label(span), secondary=secondary))


@dataclass(slots=True)
class Inferred:
    """One instantiation's result: its forward's output type, the inference (its unifier)."""

    output: Attribute
    inference: Inference


def set_dim_bindings(module: ModuleOp, bindings: Mapping[str, int]) -> None:
    module.attributes[DIM_BINDINGS] = DictionaryAttr(
        {name: IntegerAttr(size, i64) for name, size in bindings.items()}
    )


def dim_bindings(module: Operation | None) -> dict[str, int]:
    """The `-D` bindings the module carries (none: an empty dict)."""
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    attr = module.attributes.get(DIM_BINDINGS) if module is not None else None
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {k: v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}


def infer_instantiation(
    inst: Instantiation, models: dict[str, ModelOp], *, quiet: bool = False
) -> Inferred | None:
    """Steps 2-5 for one instantiation; with `quiet`, nothing is reported."""
    if quiet:
        with reporting(DiagnosticSink()):
            return infer_instantiation(inst, models)
    forward = forward_of(inst.model)
    if forward is None:
        return None
    inference = Inference(models)
    module = inst.model.parent_op()
    if module is not None:
        inference.instance = lookup_symbol(module, inst.name, InstanceOp)
    for name, size in dim_bindings(inst.model).items():
        inference.unifier.unify(name, size)
    args = input_types(inst, forward, inference)
    result = inference.run(inst.model, forward, inst.env, args)
    settle_types(inference)
    return Inferred(result, inference)


def infer_shapes(module: ModuleOp, *, quiet: bool = False) -> None:
    """Steps 1-6 over a module: every op's result types refined in place, each forward's
    signature, each train loop's model output (`model_output`, and for `load_dataset()`
    data the synthetic samples' `synthetic_sample` and `synthetic_output`). Later passes,
    `tlc check`'s flows (analysis/flows.py), `tlc info` and `tlc graph` read these; none
    infers again."""
    if quiet:
        with reporting(DiagnosticSink()):
            infer_shapes(module)
        return
    models = models_of(module)
    insts = instantiations(module, models)
    found = DiagnosticSink()
    with reporting(found):
        done = [infer_instantiation(inst, models) for inst in insts]
    current_sink().extend_new(found.diagnostics)  # two instances of one model: its error once
    by_loop = {i.loop: d for i, d in zip(insts, done, strict=True) if i.loop is not None}
    for loop in [op for op in module.walk() if isinstance(op, train.LoopOp)]:
        _record_loop(module, loop, models, by_loop)


def _record_loop(
    module: ModuleOp,
    loop: train.LoopOp,
    models: dict[str, ModelOp],
    by_loop: Mapping[train.LoopOp, Inferred | None],
) -> None:
    """What the train passes need of the loop's model, as attributes on the loop."""
    if loop.runs_objectives():
        _record_fields(module, loop)
    else:
        _record_loss_fields(module, loop)
    instance = lookup_symbol(module, loop.model, InstanceOp)
    if instance is None:
        return
    if loop in by_loop:
        done = by_loop[loop]
    else:  # a second loop training the same instance, on other data: its output only
        inst = instance_of(instance, models, loop, module)
        with types_kept(module):
            done = infer_instantiation(inst, models, quiet=True) if inst is not None else None
    if done is not None:
        loop.model_output = done.inference.resolved_type(done.output)  # pyright: ignore[reportAttributeAccessIssue]
    data = lookup_symbol(module, loop.data, train.DatasetOp)
    if data is not None and _synthetic(data):
        _record_synthetic(module, loop, instance, models)


def _record_fields(module: ModuleOp, loop: train.LoopOp) -> None:
    """`batch_fields`: the data's fields its objectives take by name (none for (x, y))."""
    from tensorloom.passes.support.batch_fields import loop_fields

    fields = loop_fields(module, loop, _dataset_inputs(loop, module))
    if fields:
        loop.batch_fields = ArrayAttr([StringAttr(f) for f in fields])


def _record_loss_fields(module: ModuleOp, loop: train.LoopOp) -> None:
    """A `loss` block over named fields: `batch_fields` (the forward's and the target) and
    `loss_target`; nothing where a field is unknown (check-train reports it)."""
    from tensorloom.passes.support.batch_fields import block_loss_fields  # it imports this

    info = _dataset_inputs(loop, module)
    fields = block_loss_fields(module, loop, info)
    if fields is None or info is None or fields.unknown is not None or not fields.target_known:
        return
    loop.batch_fields = ArrayAttr([StringAttr(f) for f in fields.batch(info)])
    loop.loss_target = StringAttr(fields.target)


def _synthetic(data: train.DatasetOp) -> bool:
    """`load_dataset()` with nothing said about its samples: their shape comes from the model."""
    options = data.options.data
    return data.source is None and "sample_shape" not in options and "num_classes" not in options


def _record_synthetic(
    module: ModuleOp, loop: train.LoopOp, instance: InstanceOp, models: dict[str, ModelOp]
) -> None:
    from tensorloom.passes.support.synthetic_sample import synthetic_sample

    inst = instance_of(instance, models, None, module)
    if inst is None:
        return
    derived = synthetic_sample(inst.model, inst.env, models)
    if derived is not None and any(d <= 0 for d in derived):
        return  # `x: Tensor[B, 0]`: TL0215 at the annotation, no sample to make
    sample = derived or RUNTIME_SYNTHETIC_SAMPLE
    inst.inputs = [TensorType.from_dims([BATCH, *sample])]
    captured = DiagnosticSink()
    with reporting(captured), types_kept(module):  # the samples' output only
        done = infer_instantiation(inst, models)
    _report_on_synthetic(captured, sample, derived is not None, module, loop)
    if done is None or derived is None:
        return
    loop.synthetic_sample = ArrayAttr([IntegerAttr(d, i64) for d in sample])
    loop.synthetic_output = done.inference.resolved_type(done.output)  # pyright: ignore[reportAttributeAccessIssue]


RUNTIME_SYNTHETIC_SAMPLE = (784,)
"""The sample shape the runtime's `load_dataset()` makes when nothing says otherwise."""


def _report_on_synthetic(
    captured: DiagnosticSink,
    sample: tuple[int, ...],
    derived: bool,
    module: ModuleOp,
    loop: train.LoopOp,
) -> None:
    """The errors the forward has on the synthetic samples it will be trained on, where
    the check on its declared inputs (`x: Tensor`, any shape) did not already find one."""
    sink = current_sink()
    if sink.has_errors:
        return  # the declared check found something: fix that first
    data = lookup_symbol(module, loop.data, train.DatasetOp)
    where = "taken from the model" if derived else "the runtime's default: nothing says otherwise"
    note = f"`load_dataset()` makes synthetic samples of shape {format_shape(sample)} ({where})"
    data_span = span_of(data) if data is not None else None
    for diagnostic in captured.errors():
        secondary = [*diagnostic.secondary]
        if data_span is not None:
            secondary.append(Label(data_span, "the synthetic samples come from here"))
        help_text = diagnostic.help or (
            None
            if derived
            else "say what the samples are: `load_dataset(sample_shape=[...], "
            "num_classes=...)`, or annotate `forward`'s input"
        )
        report(replace(diagnostic, secondary=secondary, notes=[*diagnostic.notes, note],
                       help=help_text))  # fmt: skip


def settle_types(inference: Inference) -> None:
    """Step 6: in every method the inference walked, each type's symbols as its unifier
    has them at the end (`T` bound to 128 after the op that typed a value: 128), and the
    method's signature its arguments' and returns' types."""
    for func in inference.ran:
        for value in values_defined_in(func.body.block):
            set_type(value, _resolved(value.type, inference.unifier))
        _retype_func(func)


def _resolved(attr: Attribute, unifier: Unifier) -> Attribute:
    if not isinstance(attr, TensorType) or attr.dims is None:
        return attr
    return attr.with_dims(unifier.resolve_shape(attr.dims))


def _retype_func(func: FuncOp) -> None:
    inputs = [arg.type for arg in func.body.block.args]
    outputs = list(func.function_type.outputs.data)
    last = func.body.block.last_op
    if isinstance(last, ReturnOp):
        outputs = [v.type for v in last.values]
    func.function_type = FunctionType.from_lists(inputs, outputs)


@dataclass(frozen=True)
class ShapeInferencePass(TLPass):
    name = "shape-inference"
    requires = ("instantiate",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A train loop over a known instance has no `model_output` yet."""
        loops = (op for op in module.body.block.ops if isinstance(op, train.LoopOp))
        return any(
            loop.model_output is None and lookup_symbol(module, loop.model, InstanceOp) is not None
            for loop in loops
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        infer_shapes(op)
