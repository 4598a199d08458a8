"""`shape-inference`: symbolic shapes through every forward, mismatches reported.

    nml.func @forward(%x : !nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32> {
      %0 = nml.apply @fc1(%x) : (...) -> !nml.tensor<*, f32>
    }

becomes `%0 = nml.apply @fc1(%x) : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<[B, 256], f32>`
and a forward's return type is set. The pass knows no op by name: each builtin
op brings its own `infer_shape`, each layer its catalogue rule.

Algorithm:

1. Pick the instantiations to check: every `nml.instance` (the model's config
   defaults plus the instance's overrides), and the defaults of each model that
   has no instance. A model used as a layer is checked inside its parent, with
   the arguments the parent gives it and the shapes that reach it.
2. Take the forward's input shapes from its annotations (`x: Tensor[B, 1, 28, 28]`);
   else from the dataset a train loop binds to the instance (the batch dim `B`,
   then the dataset's sample shape); else leave them unknown. An annotation and
   a dataset that disagree are an error.
3. Give each instantiation a fresh `Unifier`, so `B` or `T` means one size
   within it and nothing across instantiations.
4. Walk the forward's ops in order and compute each result's type: a builtin
   op by its own `infer_shape`; `nml.apply` of a catalogue layer by the
   catalogue's rule for the layer bound under the config; `nml.apply` of a
   model, or a call of another method, by steps 4-5 on that forward; any other
   op keeps its type.
5. Report a failed rule at the op (the pipe stage or call), with a label at the
   layer's declaration and the shape that came in; the result becomes unknown
   so that one mistake is reported once.
6. Write the types of the first instantiation of each model (the one a train
   loop uses first) back into the IR, symbols resolved through its unifier.

`infer_shapes(module)` runs steps 1-6 and returns each instantiation's shape
flow (layer by layer output shapes and parameter counts) for `tlc check`.
A client that needs more than the flow (`tlc info`'s tracer) follows the walk
through `InferenceHooks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import (
    Float64Type,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from tensorloom.diagnostics.core import Diagnostic, DiagnosticSink, Label
from tensorloom.diagnostics.ir import report, reporting, span_of
from tensorloom.dialects import train
from tensorloom.dialects.datasets import DatasetInfo, lookup_dataset
from tensorloom.dialects.layers import BoundLayer, lookup
from tensorloom.dialects.nml import (
    ApplyOp,
    CallOp,
    ConstantOp,
    DimOp,
    FuncOp,
    FunctionalOp,
    InstanceOp,
    LayerOp,
    ListOp,
    ModelOp,
    RefOp,
    ReturnOp,
    SizedOp,
    TensorType,
)
from tensorloom.dialects.nml.types import Dim
from tensorloom.dialects.shapes import Shape, ShapeMismatch, Unifier, format_shape
from tensorloom.passes.model_env import (
    ArgFailure,
    Env,
    bind_layer,
    evaluate_kwargs,
    forward_of,
    layers_of,
    methods_of,
    model_env,
    models_of,
    nested_overrides,
)
from tensorloom.source import Span

BATCH = "B"
MAX_DEPTH = 32  # models nested deeper than this are TL0310 (a cycle is TL0307, in resolve-nml)


@dataclass(slots=True)
class FlowStep:
    """One line of a shape flow: a layer or op, its output shape, its parameters."""

    name: str
    op: str
    shape: str
    params: int


@dataclass(slots=True)
class ModelFlow:
    """The shape flow of one instantiation of a model."""

    name: str
    model: str
    inputs: list[str]
    output: str
    steps: list[FlowStep] = field(default_factory=list[FlowStep])

    @property
    def params(self) -> int:
        return sum(step.params for step in self.steps)


@dataclass(slots=True)
class Instantiation:
    """A model with a config environment and, maybe, input types from a dataset."""

    name: str
    model: ModelOp
    env: Env
    inputs: list[Attribute] | None = None
    data_span: Span | None = None


# --- one instantiation ----------------------------------------------------------------------


class InferenceHooks:
    """Callbacks for a client that follows the walk; here each does nothing.

    For a nested model's `nml.apply` or an `nml.call` of a method the order is
    `on_call`, the callee's ops, `on_return`, then the calling op's `on_op`.
    """

    def on_op(self, op: Operation, model: ModelOp, env: Env) -> None:
        """After `op`, an op of a method of `model` under `env`, has its result typed."""

    def on_call(self, op: Operation, func: FuncOp) -> None:
        """Before the ops of `func`, which `op` calls with its operands as arguments."""

    def on_return(self, op: Operation, func: FuncOp) -> None:
        """After the ops of `func`, which `op` called."""


@dataclass
class Inference:
    """Steps 4-5 for one instantiation: value types live here until written back."""

    models: dict[str, ModelOp]
    unifier: Unifier = field(default_factory=Unifier)
    types: dict[SSAValue, Attribute] = field(default_factory=dict[SSAValue, Attribute])
    scalars: dict[SSAValue, Dim] = field(default_factory=dict[SSAValue, Dim])
    inferred: dict[FuncOp, dict[SSAValue, Attribute]] = field(
        default_factory=dict[FuncOp, dict[SSAValue, Attribute]]
    )
    depth: int = 0
    depth_reported: bool = False
    layers: dict[ModelOp, dict[str, LayerOp]] = field(
        default_factory=dict[ModelOp, dict[str, LayerOp]]
    )

    def layers_in(self, model: ModelOp) -> dict[str, LayerOp]:
        if model not in self.layers:
            self.layers[model] = layers_of(model)
        return self.layers[model]

    hooks: InferenceHooks = field(default_factory=InferenceHooks)

    def type_of(self, value: SSAValue) -> Attribute:
        return self.types.get(value, value.type)

    def run(
        self, model: ModelOp, func: FuncOp, env: Env, args: Sequence[Attribute], flow: ModelFlow
    ) -> Attribute:
        """Infer `func` for these argument types; return the type it returns."""
        for arg, arg_type in zip(func.body.block.args, args, strict=False):
            self.types[arg] = arg_type
        result: Attribute = TensorType.unranked()
        for op in func.body.block.ops:
            if isinstance(op, ReturnOp):
                result = self.type_of(op.values[0]) if op.values else result
                continue
            self.visit(model, op, env, flow)
        if func not in self.inferred:
            self.inferred[func] = {v: self.types[v] for v in _values_of(func) if v in self.types}
        return result

    def visit(self, model: ModelOp, op: Operation, env: Env, flow: ModelFlow) -> None:
        if isinstance(op, ApplyOp):
            self._apply(model, op, env, flow)
        elif isinstance(op, SizedOp):
            self._sized(op, flow)
        elif isinstance(op, FunctionalOp):
            self._functional(op, flow)
        elif isinstance(op, CallOp):
            self._method_call(model, op, env, flow)
        self._track_scalars(op, env)
        self.hooks.on_op(op, model, env)

    # --- builtins -------------------------------------------------------------------

    def _functional(self, op: FunctionalOp, flow: ModelFlow) -> None:
        operands = [self.type_of(v) for v in op.operands]
        result = op.infer_shape(operands, self.unifier)
        self._finish(op, result, flow)

    def _sized(self, op: SizedOp, flow: ModelFlow) -> None:
        """Sizes known only at run time are often known here: `x.size(0)` is a
        symbol of the input, a config reference is the config's value."""
        sizes = [self.scalars.get(v) for v in op.dynamic_sizes]
        operands = [self.type_of(v) for v in op.operands]
        self._finish(op, op.infer_sized(operands, sizes, self.unifier), flow)

    def _finish(self, op: Operation, result: Attribute | ShapeMismatch, flow: ModelFlow) -> None:
        if isinstance(result, ShapeMismatch):
            self._report_builtin(op, result)
            result = TensorType.unranked()
        self.types[op.results[0]] = result
        if not isinstance(op, ListOp | DimOp):
            flow.steps.append(FlowStep("", op.name, self.format_type(result), 0))

    def _report_builtin(self, op: Operation, error: ShapeMismatch) -> None:
        span = span_of(op)
        if span is None:
            return
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
        return Label(span, f"input is {self.format_type(self.type_of(op.operands[index]))}")

    def format_type(self, attr: Attribute) -> str:
        if not isinstance(attr, TensorType):
            return str(attr)
        return self.unifier.format_shape(attr.dims)

    def _track_scalars(self, op: Operation, env: Env) -> None:
        """Integers the forward computes that shapes may use (`x.size(0)`)."""
        if isinstance(op, DimOp):
            source = self.type_of(op.input)
            dims = source.dims if isinstance(source, TensorType) else None
            index = op.index.value.data
            if dims is not None and -len(dims) <= index < len(dims):
                self.scalars[op.result] = self.unifier.resolve(dims[index])
        elif isinstance(op, ConstantOp) and isinstance(op.value, IntegerAttr):
            self.scalars[op.result] = op.value.value.data
        elif isinstance(op, RefOp):
            self._config_ref(op, env)

    def _config_ref(self, op: RefOp, env: Env) -> None:
        value = env.get(op.symbol.root_reference.data)
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            self.scalars[op.result] = value
            self.types[op.result] = i64
        elif isinstance(value, float):
            self.types[op.result] = Float64Type()

    # --- layers ----------------------------------------------------------------------

    def _apply(self, model: ModelOp, op: ApplyOp, env: Env, flow: ModelFlow) -> None:
        name = op.layer.root_reference.data
        layer = self.layers_in(model).get(name)
        result: Attribute = TensorType.unranked()
        if layer is not None:
            result = self._apply_layer(model, layer, op, env, flow)
        self.types[op.result] = result

    def _apply_layer(
        self, model: ModelOp, layer: LayerOp, op: ApplyOp, env: Env, flow: ModelFlow
    ) -> Attribute:
        nested = self.models.get(layer.kind.data)
        if nested is not None and nested is not model and lookup(layer.kind.data) is None:
            return self._apply_model(layer, nested, op, env, flow)
        bound = bind_layer(layer, env)
        if bound is None:
            return TensorType.unranked()
        inputs = [self._shape(v) for v in op.args]
        shape = bound.spec.infer_shape(bound, inputs, self.unifier)
        if isinstance(shape, ShapeMismatch):
            self._report_layer(layer, op, bound, shape)
            shape = None
        result = self._like(op, shape)
        params = bound.spec.param_count(bound)
        flow.steps.append(
            FlowStep(layer.sym_name.data, _describe(bound), self.format_type(result), params)
        )
        return result

    def _shape(self, value: SSAValue) -> Shape:
        attr = self.type_of(value)
        return attr.dims if isinstance(attr, TensorType) else None

    def _like(self, op: ApplyOp, shape: Shape) -> Attribute:
        """The input's element type, but a float for integer indices (`Embedding`)."""
        first = self.type_of(op.args[0]) if op.args else None
        if not isinstance(first, TensorType) or isinstance(first.element_type, IntegerType):
            return TensorType.unranked().with_dims(shape)
        return first.with_dims(shape)

    def _apply_model(
        self, layer: LayerOp, nested: ModelOp, op: ApplyOp, env: Env, flow: ModelFlow
    ) -> Attribute:
        forward = forward_of(nested)
        overrides = nested_overrides(layer, nested, env)
        if self.depth > MAX_DEPTH:
            self._too_deep(layer)
            return TensorType.unranked()
        if forward is None or isinstance(overrides, ArgFailure):
            return TensorType.unranked()
        inner = ModelFlow(layer.sym_name.data, nested.sym_name.data, [], "")
        self.depth += 1
        self.hooks.on_call(op, forward)
        result = self.run(nested, forward, model_env(nested, overrides), self._args(op), inner)
        self.hooks.on_return(op, forward)
        self.depth -= 1
        kind = nested.sym_name.data
        flow.steps.append(
            FlowStep(layer.sym_name.data, kind, self.format_type(result), inner.params)
        )
        return result

    def _args(self, op: Operation) -> list[Attribute]:
        return [self.type_of(v) for v in op.operands]

    def _too_deep(self, layer: LayerOp) -> None:
        """Said once: shapes past this depth are not checked, so the program is not either."""
        span = span_of(layer)
        if self.depth_reported or span is None:
            return
        self.depth_reported = True
        message = f"models nest more than {MAX_DEPTH} levels deep here"
        help_text = "flatten the nesting: shapes past this depth cannot be checked"
        report(Diagnostic.error("TL0310", message, Label(span, ""), help=help_text))

    def _method_call(self, model: ModelOp, op: CallOp, env: Env, flow: ModelFlow) -> None:
        method = methods_of(model).get(op.callee.data.removeprefix("self."))
        if method is None or op.method is not None or self.depth > MAX_DEPTH:
            return
        self.depth += 1
        self.hooks.on_call(op, method)
        self.types[op.result] = self.run(model, method, env, self._args(op), flow)
        self.hooks.on_return(op, method)
        self.depth -= 1

    def _report_layer(
        self, layer: LayerOp, op: ApplyOp, bound: BoundLayer, mismatch: ShapeMismatch
    ) -> None:
        span = span_of(op)
        if span is None:
            return
        name = layer.sym_name.data
        primary = self._operand_label(op, mismatch.operand, span)
        secondary = [Label(s, f"`{name}` is declared here") for s in [span_of(layer)] if s]
        help_text = mismatch.help or _layer_help(name, bound, mismatch)
        diagnostic = Diagnostic.error(
            "TL0201", mismatch.render(name), primary, secondary=secondary, help=help_text
        )
        report(diagnostic)


def _values_of(func: FuncOp) -> list[SSAValue]:
    """The values a method defines: its arguments and its ops' results."""
    values: list[SSAValue] = list(func.body.block.args)
    for op in func.body.block.ops:
        values.extend(op.results)
    return values


def _describe(bound: BoundLayer) -> str:
    """The constructor as TensorLoom writes it: `Conv2d(1, 16, 3, padding="same")`."""
    args = [_literal(a) for a in bound.args]
    args += [f"{k}={_literal(v)}" for k, v in bound.kwargs]
    return f"{bound.spec.name}({', '.join(args)})"


_FIRST_ARG_FEATURES = {"Linear", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
                       "BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm", "LSTM", "GRU",
                       "MultiHeadAttention"}  # fmt: skip


def _layer_help(name: str, bound: BoundLayer, mismatch: ShapeMismatch) -> str | None:
    """`change `fc2` to `Linear(256, 10)`, or add a layer that maps 256 to 128`."""
    kind = bound.spec.name
    if kind not in _FIRST_ARG_FEATURES or not bound.args or mismatch.got is None:
        return None
    if not mismatch.got.isdigit() or mismatch.expected is None:
        return None
    args = [mismatch.got, *(_literal(a) for a in bound.args[1:])]
    args += [f"{k}={_literal(v)}" for k, v in bound.kwargs]
    fix = f"change `{name}` to `{kind}({', '.join(args)})`"
    return f"{fix}, or add a layer that maps {mismatch.got} to {mismatch.expected}"


def _literal(value: object) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


# --- the module -----------------------------------------------------------------------------


def _dataset_inputs(loop: train.LoopOp, module: ModuleOp) -> DatasetInfo | None:
    name = loop.data.root_reference.data
    for op in module.walk():
        if isinstance(op, train.DatasetOp) and op.sym_name.data == name:
            options = evaluate_kwargs(op.options.data, {})
            if not isinstance(options, dict):
                return None
            source = op.source.data if op.source is not None else None
            info = lookup_dataset(source, options)  # type: ignore[arg-type]
            return info if isinstance(info, DatasetInfo) else None
    return None


def dataset_input(info: DatasetInfo) -> TensorType | None:
    """The batched input a dataset feeds a model: `[B, *sample_shape]`."""
    if info.sample_shape is None:
        return None
    element = i64 if info.dtype == "i64" else TensorType.unranked().element_type
    return TensorType.from_dims((BATCH, *info.sample_shape), element)


def instantiations(module: ModuleOp, models: Mapping[str, ModelOp]) -> list[Instantiation]:
    """Step 1-2: instances (those a train loop uses first), then uninstantiated models."""
    loops = {
        op.model.root_reference.data: op for op in module.walk() if isinstance(op, train.LoopOp)
    }
    found: list[Instantiation] = []
    for op in module.walk():
        if isinstance(op, InstanceOp):
            inst = instance_of(op, models, loops.get(op.sym_name.data), module)
            found += [inst] if inst is not None else []
    found.sort(key=lambda i: i.inputs is None)
    instantiated = {i.model for i in found}
    nested = {layer.kind.data for m in models.values() for layer in layers_of(m).values()}
    rest = [m for m in models.values() if m not in instantiated]
    rest.sort(key=lambda m: m.sym_name.data in nested)  # a nested model is typed in its parent
    return found + [Instantiation(m.sym_name.data, m, model_env(m)) for m in rest]


def instance_of(
    op: InstanceOp, models: Mapping[str, ModelOp], loop: train.LoopOp | None, module: ModuleOp
) -> Instantiation | None:
    model = models.get(op.model.root_reference.data)
    if model is None:
        return None
    overrides = evaluate_kwargs(op.overrides.data, {})
    env = model_env(model, overrides if isinstance(overrides, dict) else {})
    found = Instantiation(op.sym_name.data, model, env)
    info = _dataset_inputs(loop, module) if loop is not None else None
    data_input = dataset_input(info) if info is not None else None
    if data_input is not None and loop is not None:
        found.inputs = [data_input]
        found.data_span = span_of(loop)
    return found


def input_types(inst: Instantiation, func: FuncOp, inference: Inference) -> list[Attribute]:
    """Step 2: the forward's argument types, the dataset's batch merged into the first."""
    declared = list(func.function_type.inputs.data)
    if inst.inputs is None or not declared:
        return declared
    given = inst.inputs[0]
    first = declared[0]
    if isinstance(first, TensorType) and first.dims is not None and isinstance(given, TensorType):
        merged = inference.unifier.unify_shapes(first.dims, given.dims)
        if isinstance(merged, ShapeMismatch):
            _report_input(inst, func, first, given, merged)
            return declared
        given = first.with_dims(merged)
    return [given, *declared[1:]]


def _report_input(
    inst: Instantiation, func: FuncOp, declared: TensorType, given: TensorType, m: ShapeMismatch
) -> None:
    span = inst.data_span or span_of(func)
    if span is None:
        return
    model = inst.model.sym_name.data
    message = (
        f"the data gives `{model}` inputs of shape {format_shape(given.dims)}, "
        f"but its `forward` expects {format_shape(declared.dims)}"
    )
    secondary = [Label(s, "the input is annotated here") for s in [span_of(func)] if s]
    report(Diagnostic.error("TL0203", message, Label(span), secondary=secondary))


@dataclass(slots=True)
class Inferred:
    """One instantiation's result: its flow, its forward's output type, the unifier."""

    flow: ModelFlow
    output: Attribute
    inference: Inference


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
    args = input_types(inst, forward, inference)
    inputs = [inference.format_type(a) for a in args]
    flow = ModelFlow(inst.name, inst.model.sym_name.data, inputs, "")
    result = inference.run(inst.model, forward, inst.env, args, flow)
    flow.output = inference.format_type(result)
    return Inferred(flow, result, inference)


def infer_shapes(
    module: ModuleOp, *, write_back: bool = True, quiet: bool = False
) -> list[ModelFlow]:
    """Steps 1-6 over a module; the shape flow of every instantiation (a model
    used only as a layer of another is shown inside it, not on its own)."""
    if quiet:
        with reporting(DiagnosticSink()):
            return infer_shapes(module, write_back=write_back)
    models = models_of(module)
    done = [infer_instantiation(inst, models) for inst in instantiations(module, models)]
    inferred = [d for d in done if d is not None]
    nested = {layer.kind.data for m in models.values() for layer in layers_of(m).values()}
    shown = [r.flow for r in inferred if r.flow.name != r.flow.model or r.flow.model not in nested]
    if write_back:  # only now: every instantiation starts from the declared types
        written: set[FuncOp] = set()
        for result in inferred:
            _write_back(result.inference, written)
    return shown


def write_back_types(inference: Inference) -> None:
    """Step 6 for one inference outside a model (a `.tl` loss function's, for check-train)."""
    _write_back(inference, set())


def _write_back(inference: Inference, written: set[FuncOp]) -> None:
    for func, types in inference.inferred.items():
        if func in written:
            continue
        written.add(func)
        for value, attr in types.items():
            value._type = _resolved(attr, inference.unifier)  # refined in place: uses stay
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
class ShapeInferencePass(ModulePass):
    name = "shape-inference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        infer_shapes(op)
