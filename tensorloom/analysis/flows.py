"""Each instantiation's shape flow, read from the typed, specialised IR: what `tlc check` prints.

    for flow in flows(module):             # after the check passes
        flow.name, flow.inputs              # "net", ["[B, 1, 8, 8]"]
        [(s.name, s.op, s.shape) for s in flow.steps]
        # [("stem", "Conv2d(1, 32, 3, padding=1)", "[B, 32, 8, 8]"), ...]

`instantiate` gives each instance and nested-model layer its own copy of its model, and
shape inference refines every op's result type in place for that one use; so a flow is a
walk over the instance's forward, nothing inferred again: a line per layer applied (its
constructor, its output type, its parameters), per nested model (its kind and declared
parameters), per builtin that makes a tensor; a method's lines in place; a loop's body
once per iteration shape inference followed (`iterations` on `nml.for`: a layer list's
elements `h.0`, `h.1`, ...), an `if`'s branches as it followed them (`branches`). `tlc
check`, `tlc graph`'s default model and the language server's hovers read the flows from
here, `tlc info` and `tlc graph` the same types through analysis/trace.py and graph.py,
so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.analysis.walk import ForwardWalk
from tensorloom.catalogue.layers import lookup
from tensorloom.dialects.nml import (
    ApplyAtOp,
    ApplyOp,
    CallOp,
    ConstantOp,
    DimOp,
    ForOp,
    FuncOp,
    ListOp,
    ModelOp,
    RefOp,
    ReturnOp,
    TensorType,
)
from tensorloom.dialects.nml.shape_trait import FromOperands, ShapeInferenceTrait
from tensorloom.passes.shape_inference import (
    describe,
    format_type,
    instantiations,
)
from tensorloom.passes.support.model_env import (
    ArgFailure,
    Env,
    bind_layer,
    declared_params,
    element_env,
    forward_of,
    layer_built,
    layer_count,
    layers_of,
    model_env,
    model_kind,
    models_of,
    nested_model,
    nested_overrides,
)


@dataclass(slots=True)
class FlowStep:
    """One line of a shape flow: a layer or op, its output shape, its parameters."""

    name: str
    op: str
    shape: str
    params: int
    type: Attribute | None = None  # the shape as a type, its symbols resolved when it was made


@dataclass(slots=True)
class ModelFlow:
    """The shape flow of one instantiation of a model."""

    name: str
    model: str
    inputs: list[str]
    output: str
    steps: list[FlowStep] = field(default_factory=list[FlowStep])
    declared: int | None = None  # every declared layer once; None inside a nested model
    input_types: list[Attribute] = field(default_factory=list[Attribute])
    output_type: Attribute | None = None

    @property
    def params(self) -> int:
        """The model's parameters: each declared layer once (a weight used twice is one
        parameter), else, for a nested model's flow, the sum of its steps."""
        if self.declared is not None:
            return self.declared
        return sum(step.params for step in self.steps)


def flows(module: ModuleOp) -> list[ModelFlow]:
    """The flow of every instantiation `tlc check` shows (a model used only as a layer of
    another is shown inside it), in the order shape inference took them."""
    models = models_of(module)
    nested = {layer.kind.data for m in models.values() for layer in layers_of(m).values()}
    found: list[ModelFlow] = []
    for inst in instantiations(module, models):
        if inst.name == inst.model.sym_name.data and inst.name in nested:
            continue
        flow = model_flow(inst.name, inst.model, inst.env, models)
        if flow is not None:
            found.append(flow)
    return found


def model_flow(
    name: str, model: ModelOp, env: Env, models: Mapping[str, ModelOp]
) -> ModelFlow | None:
    """One instantiation's flow: `model`'s forward under `env`, as the IR types it."""
    forward = forward_of(model)
    if forward is None:
        return None
    args = [arg.type for arg in forward.body.block.args]
    walk = _Walk(models)
    output = walk.call(model, forward, env)
    return ModelFlow(
        name,
        model_kind(model),
        [format_type(a) for a in args],
        format_type(output),
        walk.steps,
        declared=declared_params(model, env, models),
        input_types=args,
        output_type=output,
    )


@dataclass
class _Walk(ForwardWalk):
    """The lines of one flow, in the order the forward runs: every iteration a loop's
    followed, each with its own lines (the flow joins their types line by line)."""

    models: Mapping[str, ModelOp]
    steps: list[FlowStep] = field(default_factory=list[FlowStep])
    counters: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    depth: int = 0

    def call(self, model: ModelOp, func: FuncOp, env: Env) -> Attribute:
        """Walk `func`'s body; the type it returns."""
        self.block(model, func.body.block, env)
        last = func.body.block.last_op
        if isinstance(last, ReturnOp) and last.values:
            return last.values[0].type
        return TensorType.unranked()

    def loop(self, model: ModelOp, op: ForOp, env: Env) -> None:
        """The body once per iteration shape inference followed, the counter at its value."""
        _, walked = self.loop_iterations(model, op)
        for value in _counter_values(model, op, env, walked):
            self.counters[op.counter] = value
            self.block(model, op.body.block, env)
        self.counters.pop(op.counter, None)

    def method(self, model: ModelOp, op: CallOp, method: FuncOp, env: Env) -> None:
        """A call of another method of the model: its lines in place."""
        self.depth += 1
        self.call(model, method, env)
        self.depth -= 1

    def makes_a_step(self, op: Operation) -> bool:
        return _makes_a_line(op)

    def builtin(self, op: Operation) -> None:
        self.line("", op.name, op.results[0].type, 0)

    def apply(self, model: ModelOp, op: ApplyOp | ApplyAtOp, env: Env) -> None:
        layer = layers_of(model).get(op.layer.root_reference.data)
        if layer is None or not layer_built(layer, env):
            return
        name, position = layer.sym_name.data, None
        if isinstance(op, ApplyAtOp):
            index = self._index(op.index)
            count = layer_count(layer, env)
            position = index % count if index is not None and count else index
            name = f"{name}.{position}" if position is not None else f"{name}[i]"
            if position is not None:
                env = dict(element_env(layer, env, position))
        nested = nested_model(layer, self.models, position)
        if nested is not None and nested is not model and lookup(layer.kind.data) is None:
            overrides = nested_overrides(layer, nested, env)
            if isinstance(overrides, ArgFailure) or forward_of(nested) is None:
                return
            params = declared_params(nested, model_env(nested, overrides), self.models)
            self.line(name, model_kind(nested), _element_output(op, nested), params)
            return
        bound = bind_layer(layer, env)
        if bound is not None:
            self.line(name, describe(bound), op.result.type, bound.spec.param_count(bound))

    def line(self, name: str, op: str, result: Attribute, params: int) -> None:
        self.steps.append(FlowStep(name, op, format_type(result), params, result))

    def _index(self, value: SSAValue) -> int | None:
        """`h[i]`'s position: the loop's counter now, or a constant."""
        if value in self.counters:
            return self.counters[value]
        owner = value.owner
        if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None


def _element_output(op: ApplyOp | ApplyAtOp, nested: ModelOp) -> Attribute:
    """What the applied model returns here: for an element of a per-position list, its own
    copy's forward's return type (the loop's result holds the join of every position's)."""
    forward = forward_of(nested)
    outputs = forward.function_type.outputs.data if forward is not None else ()
    if isinstance(op, ApplyAtOp) and len(outputs) == 1:
        return outputs[0]
    return op.result.type


def _makes_a_line(op: Operation) -> bool:
    """A builtin with a tensor result: shape inference's `FromOperands` ops, but not a
    list or `x.size(0)`."""
    if isinstance(op, ListOp | DimOp) or not op.results:
        return False
    trait = op.get_trait(ShapeInferenceTrait)
    return isinstance(trait, FromOperands) and isinstance(op.results[0].type, TensorType)


def _counter_values(model: ModelOp, op: ForOp, env: Env, count: int) -> list[int]:
    """The counter's values in the iterations followed: a layer list's positions, else the
    range's values when its bounds are constants or configs, else 0, 1, ..."""
    if op.layers is None:
        bounds = [_static_int(v, env) for v in op.bounds]
        if bounds and all(b is not None for b in bounds):
            values = range(*bounds)  # type: ignore[arg-type]
            if len(values) == count:
                return list(values)
    return list(range(count))


def _static_int(value: SSAValue, env: Env) -> int | None:
    owner = value.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    if isinstance(owner, RefOp):
        found = env.get(owner.symbol.root_reference.data)
        return found if isinstance(found, int) and not isinstance(found, bool) else None
    return None
