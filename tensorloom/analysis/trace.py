"""One instantiation's forward, traced: every layer and op applied, in order, as a tree.

    trace = trace_instantiation(inst, models, bindings={"B": 32, "T": 512})
    trace.steps[1].name, trace.steps[1].kind    # "block1", "LMBlock"
    trace.steps[1].children[0].kind             # "LayerNorm"
    trace.shape(trace.steps[1].output)          # (32, 512, 512)

The shape-inference pass's `Inference` does the walking; a `Recorder`, its
`InferenceHooks`, only records what it sees. A step keeps its shapes as they
were when it ran (the same nested model may run twice with other shapes) and
names its tensors by `TensorKey`s: a value in one particular call of a
forward, where a nested model's argument is the caller's tensor and a view is
the tensor it views. That identity lets the profile count a tensor saved by
two layers once.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.analysis.op_costs import VIEWS
from tensorloom.catalogue.layers import BoundLayer, lookup
from tensorloom.catalogue.shapes import Shape, ShapeMismatch
from tensorloom.dialects.nml import (
    ApplyOp,
    CallOp,
    DimOp,
    FuncOp,
    FunctionalOp,
    LayerOp,
    ListOp,
    ModelOp,
    ReturnOp,
    TensorType,
)
from tensorloom.passes.model_env import (
    Env,
    bind_layer,
    forward_of,
    layers_of,
    model_env,
    nested_overrides,
)
from tensorloom.passes.shape_inference import (
    Inference,
    InferenceHooks,
    Instantiation,
    ModelFlow,
    input_types,
)

TensorKey = tuple[int, int]  # (call frame, id of the SSA value in that call)
INDEX_LAYERS = frozenset({"Embedding"})  # their input holds int64 indices, however annotated


@dataclass(slots=True)
class Step:
    """One layer or builtin op as it ran: its shapes, tensors, and nested steps."""

    name: str  # the layer's name; "" for a builtin op
    kind: str  # "Linear", a nested model's name, or the op's name ("relu")
    inputs: list[Shape]  # None for a non-tensor operand's shape
    output: Shape
    input_keys: list[TensorKey]
    output_key: TensorKey
    params: int = 0
    bound: BoundLayer | None = None
    op: Operation | None = None
    integer_input: bool = False
    layer: LayerOp | None = None
    model: ModelOp | None = None  # for a nested model: the model and its config
    env: Env | None = None
    children: list[Step] = field(default_factory=list["Step"])

    @property
    def is_model(self) -> bool:
        return self.bound is None and self.name != ""


@dataclass(slots=True)
class Trace:
    """A traced forward: the steps, the input and output shapes, the unifier's view."""

    name: str
    model: str
    inputs: list[Shape]
    output: Shape
    steps: list[Step]
    inference: Inference
    output_key: TensorKey | None
    input_integer: bool = False

    def input_key(self, index: int) -> TensorKey:
        return input_key(index)

    def shape(self, shape: Shape) -> Shape:
        return self.inference.unifier.resolve_shape(shape)


class Recorder(InferenceHooks):
    """Hooks that record each applied layer and op into a tree of `Step`s."""

    def __init__(self, models: dict[str, ModelOp]) -> None:
        self.models = models
        self.inference = Inference(models, hooks=self)
        self.frames = itertools.count()
        self.frame = next(self.frames)
        self.callers: list[int] = []
        self.aliases: dict[TensorKey, TensorKey] = {}
        self.returned: TensorKey | None = None  # the callee's result, until the call's on_op
        self.children: list[Step] = []  # a nested model's steps, until its apply's on_op
        self.stack: list[list[Step]] = [[]]
        self.indices: set[TensorKey] = set()  # tensors an index layer reads

    # --- tensor identity ----------------------------------------------------------------

    def key(self, value: SSAValue) -> TensorKey:
        raw = (self.frame, id(value))
        return self.aliases.get(raw, raw)

    def enter(self, func: FuncOp, keys: Sequence[TensorKey]) -> None:
        """A fresh frame for one call of `func`, its arguments the caller's tensors."""
        self.callers.append(self.frame)
        self.frame = next(self.frames)
        for arg, key in zip(func.body.block.args, keys, strict=False):
            self.aliases[(self.frame, id(arg))] = key

    def leave(self, func: FuncOp) -> None:
        last = func.body.block.last_op
        values = last.values if isinstance(last, ReturnOp) else ()
        self.returned = self.key(values[0]) if values else None
        self.frame = self.callers.pop()

    # --- hooks ----------------------------------------------------------------------------

    def on_call(self, op: Operation, func: FuncOp) -> None:
        self.enter(func, [self.key(v) for v in op.operands])
        if isinstance(op, ApplyOp):
            self.stack.append([])

    def on_return(self, op: Operation, func: FuncOp) -> None:
        self.leave(func)
        if isinstance(op, ApplyOp):
            self.children = self.stack.pop()

    def on_op(self, op: Operation, model: ModelOp, env: Env) -> None:
        returned, self.returned = self.returned, None
        children, self.children = self.children, []
        if isinstance(op, ApplyOp | CallOp) and returned is not None:
            self.aliases[(self.frame, id(op.results[0]))] = returned
        if isinstance(op, ApplyOp):
            self._record_apply(op, model, env, children)
        elif isinstance(op, FunctionalOp) and not isinstance(op, DimOp | ListOp):
            self._record_op(op)

    # --- recording ------------------------------------------------------------------------

    def _record_op(self, op: FunctionalOp) -> None:
        kind = op.name.removeprefix("nml.")
        step = self._step("", kind, op)
        step.op = op
        self.stack[-1].append(step)
        if kind in VIEWS and op.operands:
            self.aliases[(self.frame, id(op.results[0]))] = self.key(op.operands[0])

    def _record_apply(self, op: ApplyOp, model: ModelOp, env: Env, children: list[Step]) -> None:
        layer = layers_of(model).get(op.layer.root_reference.data)
        if layer is None:
            return
        nested = self.models.get(layer.kind.data)
        if nested is not None and nested is not model and lookup(layer.kind.data) is None:
            self._record_nested(op, layer, nested, env, children)
            return
        bound = bind_layer(layer, env)
        step = self._step(layer.sym_name.data, layer.kind.data, op)
        step.bound, step.layer = bound, layer
        step.params = bound.spec.param_count(bound) if bound is not None else 0
        if layer.kind.data in INDEX_LAYERS and step.input_keys:
            step.integer_input = True
            self.indices.add(step.input_keys[0])
        self.stack[-1].append(step)

    def _record_nested(
        self, op: ApplyOp, layer: LayerOp, nested: ModelOp, env: Env, children: list[Step]
    ) -> None:
        step = self._step(layer.sym_name.data, layer.kind.data, op)
        step.params = sum(c.params for c in children)
        step.children = children
        step.layer, step.model = layer, nested
        overrides = nested_overrides(layer, nested, env)
        step.env = model_env(nested, overrides if isinstance(overrides, dict) else {})
        self.stack[-1].append(step)

    def _step(self, name: str, kind: str, op: Operation) -> Step:
        operands = list(op.operands)
        return Step(
            name,
            kind,
            [self._shape(v) if self._is_tensor(v) else None for v in operands],
            self._shape(op.results[0]),
            [self.key(v) for v in operands],
            self.key(op.results[0]),
            integer_input=bool(operands) and self._is_integer(operands[0]),
        )

    def _shape(self, value: SSAValue) -> Shape:
        attr = self.inference.type_of(value)
        return attr.dims if isinstance(attr, TensorType) else None

    def _is_tensor(self, value: SSAValue) -> bool:
        return isinstance(self.inference.type_of(value), TensorType)

    def _is_integer(self, value: SSAValue) -> bool:
        attr = self.inference.type_of(value)
        return isinstance(attr, TensorType) and isinstance(attr.element_type, IntegerType)


def trace_instantiation(
    inst: Instantiation, models: dict[str, ModelOp], bindings: Mapping[str, int], batch: int | None
) -> Trace | list[ShapeMismatch] | None:
    """Trace one instantiation with `-D` bindings and the batch size bound first.

    None when the model has no forward; a list of mismatches when a binding
    contradicts the program (`-D T=3` where a layer needs 512).
    """
    forward = forward_of(inst.model)
    if forward is None:
        return None
    recorder = Recorder(models)
    inference = recorder.inference
    args = input_types(inst, forward, inference)
    errors = _bind(inference, args, bindings, batch)
    if errors:
        return errors
    flow = ModelFlow(inst.name, inst.model.sym_name.data, [], "")
    recorder.enter(forward, [input_key(i) for i in range(len(args))])
    result = inference.run(inst.model, forward, inst.env, args, flow)
    recorder.leave(forward)
    inputs = [a.dims if isinstance(a, TensorType) else None for a in args]
    output = result.dims if isinstance(result, TensorType) else None
    integer = bool(args) and isinstance(args[0], TensorType) and _int_elements(args[0])
    integer = integer or input_key(0) in recorder.indices
    name, model = inst.name, inst.model.sym_name.data
    steps, returned = recorder.stack[0], recorder.returned
    return Trace(name, model, inputs, output, steps, inference, returned, integer)


def input_key(index: int) -> TensorKey:
    """The key of the traced forward's `index`-th argument."""
    return (-1, index)


def _int_elements(attr: TensorType) -> bool:
    return isinstance(attr.element_type, IntegerType)


def _bind(
    inference: Inference, args: Sequence[Attribute], bindings: Mapping[str, int], batch: int | None
) -> list[ShapeMismatch]:
    errors: list[ShapeMismatch] = []
    for name, value in bindings.items():
        bound = inference.unifier.bind(name, value)
        if isinstance(bound, ShapeMismatch):
            errors.append(ShapeMismatch(f"`-D {name}={value}` conflicts: {bound.message}"))
    first = args[0] if args else None
    dims = first.dims if isinstance(first, TensorType) else None
    if batch is not None and dims and isinstance(dims[0], str) and dims[0] not in bindings:
        inference.unifier.bind(dims[0], batch)
    return errors
