"""One instantiation's forward, read from the IR: every layer and op applied, in order, as a tree.

    trace = trace_instantiation(inst, models, bindings={"T": 512}, batch=32)
    trace.steps[1].name, trace.steps[1].kind    # "block1", "LMBlock"
    trace.steps[1].children[0].kind             # "LayerNorm"
    trace.shape(trace.steps[1].output)          # (32, 512, 512)

`tlc info` compiles with `instantiate`: each instance and each
nested-model layer has its own copy of its model, so after shape inference every
value's type is the one it has in that one use (a residual block applied before
and after a pool has both shapes in the IR). The `Walker` follows the forward
over those ops, through nested models, methods, the iterations and branches
shape inference followed, and reads each step's shapes from its operand and
result types; nothing is inferred again. It names tensors by `TensorKey`s: a
value in one particular call of a forward, where a nested model's argument is
the caller's tensor and a view is the tensor it views. That identity lets the
profile count a tensor saved by two layers once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from tensorloom.analysis.walk import ForwardWalk, per_position
from tensorloom.catalogue.costs import Cost
from tensorloom.catalogue.layers import BoundLayer, lookup
from tensorloom.catalogue.shapes import Shape, resolve_sizes
from tensorloom.diagnostics.core import Diagnostic, Label
from tensorloom.diagnostics.ir import report, span_of
from tensorloom.dialects.nml import (
    ApplyAtOp,
    ApplyOp,
    AttentionOp,
    CallOp,
    ConstantOp,
    DimOp,
    FlattenOp,
    ForOp,
    FuncOp,
    FunctionalOp,
    GetAttrOp,
    LayerOp,
    ListOp,
    ModelOp,
    NonzeroOp,
    PermuteOp,
    RefOp,
    ReshapeOp,
    ReturnOp,
    TensorType,
    TOp,
    TopkOp,
    TupleGetOp,
    TupleType,
    YieldOp,
)
from tensorloom.dialects.nml.tensor_ops import TransposeOp
from tensorloom.passes.shape_inference import (
    MAX_DEPTH,
    Instantiation,
    values_defined_in,
)
from tensorloom.passes.support.model_env import (
    ArgFailure,
    Env,
    bind_layer,
    element_env,
    forward_of,
    layer_kind,
    layers_of,
    model_env,
    model_kind,
    nested_model,
    nested_overrides,
)

TensorKey = tuple[int, int]  # (call frame, id of the SSA value in that call)


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
    # the operands that are the model's own weights (`wte.weight.T`, a Parameter), by index:
    # autograd saves them without a copy, so saving one costs no activation memory
    weights: frozenset[int] = frozenset()
    layer: LayerOp | None = None
    model: ModelOp | None = None  # for a nested model: the model and its config
    env: Env | None = None
    children: list[Step] = field(default_factory=list["Step"])
    # the list elements it ran in: (id of the list layer, element reached) pairs, so that
    # the profile tells `for block in h`'s blocks apart (each has its own weights)
    scope: tuple[int, ...] = ()
    # A loop (`kind` "for"): it runs `repeat` iterations; `children` is the first one's
    # steps and `again` the second's (the one every later iteration repeats).
    repeat: int = 0
    again: list[Step] = field(default_factory=list["Step"])
    # A loop over a list of copies of one nested model: that model and its configuration
    # (each iteration reads its element's Parameters, which are no steps).
    element: tuple[ModelOp, Env] | None = None

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
    sizes: dict[str, int]  # the symbols' sizes: `-D` bindings and the batch
    output_key: TensorKey | None
    input_integer: bool = False

    def input_key(self, index: int) -> TensorKey:
        return input_key(index)

    def shape(self, shape: Shape) -> Shape:
        return resolve_sizes(shape, self.sizes)


MAX_TRACED_STEPS = 20_000
"""The most steps `tlc info` records for one file (TL0311 past it): a model of two blocks
of two blocks of ... is 2^depth steps once its nested models are expanded."""


@dataclass(slots=True)
class StepBudget:
    """The steps left to the walks of one file's models."""

    left: int = MAX_TRACED_STEPS
    reported: bool = False


class TraceTooLarge(Exception):
    """The walk used up its StepBudget."""


class Walker(ForwardWalk):
    """Follows a typed, specialised forward over the IR and records its steps.

    Shape inference ran on a module that `instantiate` gave one copy
    of a model per instance and per nested layer, so each value's type is the one it
    has in this instantiation; on each `nml.for` and `nml.if` it left what it followed
    (the properties `iterations` on `nml.for`, `branches` on `nml.if`). Nothing is
    inferred here: each step's shapes are its operands' and result's types. A loop's first
    two iterations are walked (analysis/walk.py), every later one repeating the second."""

    walked_iterations = 2

    def __init__(self, models: dict[str, ModelOp], budget: StepBudget) -> None:
        self.models = models
        self.budget = budget
        self.frames = itertools.count()
        self.frame = next(self.frames)
        self.callers: list[int] = []
        self.aliases: dict[TensorKey, TensorKey] = {}
        self.stack: list[list[Step]] = [[]]
        self.indices: set[TensorKey] = set()  # tensors an index layer reads
        self.depth = 0
        self.scope: tuple[int, ...] = ()
        self.elements: dict[tuple[int, int], int] = {}  # (frame, list layer) -> reached
        # The `nml.for` bodies being walked: the ids of the values each defines, and the
        # frame of this iteration (each iteration's tensors are tensors of their own).
        self.iterations: list[tuple[frozenset[int], int]] = []

    # --- tensor identity ----------------------------------------------------------------

    def key(self, value: SSAValue) -> TensorKey:
        raw = self._raw(value)
        return self.aliases.get(raw, raw)

    def _raw(self, value: SSAValue) -> TensorKey:
        """`value` in this call frame, or in the iteration of the loop that defines it."""
        for defined, frame in reversed(self.iterations):
            if id(value) in defined:
                return (frame, id(value))
        return (self.frame, id(value))

    def call(
        self, model: ModelOp, func: FuncOp, env: Env, keys: Sequence[TensorKey]
    ) -> TensorKey | None:
        """Walk one call of `func` in a fresh frame, its arguments the caller's tensors;
        the key of what it returns."""
        self.callers.append(self.frame)
        self.frame = next(self.frames)
        for arg, key in zip(func.body.block.args, keys, strict=False):
            self.aliases[(self.frame, id(arg))] = key
        self.depth += 1
        self.block(model, func.body.block, env)
        self.depth -= 1
        last = func.body.block.last_op
        values = last.values if isinstance(last, ReturnOp) else ()
        returned = self.key(values[0]) if values else None
        self.frame = self.callers.pop()
        return returned

    # --- the walk: the ops as analysis/walk.py dispatches them ----------------------------

    def makes_a_step(self, op: Operation) -> bool:
        return isinstance(op, FunctionalOp) and _makes_a_tensor(op)

    def loop(self, model: ModelOp, op: ForOp, env: Env) -> None:
        """One step for the loop: the first two of the iterations shape inference followed,
        each in a frame of its own (its `iter_args` the last iteration's yielded tensors).

        In the specialised IR a value has one type in every iteration, so the second
        iteration is what each later one repeats: the profile multiplies it rather than
        walking 256 steps of a scan."""
        count, walks = self.loop_iterations(model, op)
        body = op.body.block
        defined = frozenset(id(v) for v in values_defined_in(body))
        carried = [self.key(v) for v in op.inits]
        walked: list[list[Step]] = []
        for _ in range(walks):
            frame = next(self.frames)
            for arg, key in zip(body.args[1:], carried, strict=False):
                self.aliases[(frame, id(arg))] = key
            self.iterations.append((defined, frame))
            self.stack.append([])
            self.block(model, body, env)
            walked.append(self.stack.pop())
            last = body.last_op
            if isinstance(last, YieldOp):
                carried = [self.key(v) for v in last.values]
            self.iterations.pop()
        for result, key in zip(op.results, carried, strict=False):
            self.aliases[self._raw(result)] = key
        if per_position(model, op):  # no iteration repeats another: all, none multiplied
            walked = [[step for steps in walked for step in steps]]
        self.stack[-1].append(self._loop_step(model, op, env, count, walked))

    def _loop_step(
        self, model: ModelOp, op: ForOp, env: Env, count: int, walked: list[list[Step]]
    ) -> Step:
        """`h` (a layer list's loop, named for its list and kind) or `for`."""
        name, kind = "for", "loop"
        layer = layers_of(model).get(op.layers.root_reference.data) if op.layers else None
        if layer is not None:
            name, kind = layer.sym_name.data, layer_kind(layer)
        self.budget.left -= 1
        result = op.results[0] if op.results else None
        output = _shape(result) if result is not None else None
        key = self.key(result) if result is not None else (self.frame, id(op))
        step = Step(name, kind, [], output, [], key, scope=self.scope, repeat=count)
        step.children = walked[0] if walked else []
        step.again = walked[1] if len(walked) > 1 else []
        if layer is not None and layer.var is None:  # a list of copies of one nested model
            step.element = self._element_model(layer, env)
        return step

    def _element_model(self, layer: LayerOp, env: Env) -> tuple[ModelOp, Env] | None:
        """The model each element of a list of copies is, and its configuration."""
        nested = nested_model(layer, self.models)
        if nested is None or lookup(layer.kind.data) is not None:
            return None
        overrides = nested_overrides(layer, nested, env)
        if isinstance(overrides, ArgFailure):
            return None
        return nested, model_env(nested, overrides)

    def builtin(self, op: Operation) -> None:
        assert isinstance(op, FunctionalOp)
        kind = op.name.removeprefix("nml.")
        step = self._step("", kind, op)
        step.op = op
        self.stack[-1].append(step)
        if builtin_cost(step).view and op.operands and not copies_strided(op):
            self.aliases[self._raw(op.results[0])] = self.key(op.operands[0])

    def method(self, model: ModelOp, op: CallOp, method: FuncOp, env: Env) -> None:
        """A call of another method of the model: its steps are the caller's."""
        returned = self.call(model, method, env, [self.key(v) for v in op.operands])
        self._alias_result(op, returned)

    def apply(self, model: ModelOp, op: ApplyOp | ApplyAtOp, env: Env) -> None:
        layer = layers_of(model).get(op.layer.root_reference.data)
        if layer is None:
            return
        element = self._element(op, layer) if isinstance(op, ApplyAtOp) else 0
        nested = nested_model(layer, self.models, element if layer.var is not None else None)
        if nested is not None and nested is not model and lookup(layer.kind.data) is None:
            self._nested(op, layer, nested, env, element)
            return
        name = layer.sym_name.data
        if isinstance(op, ApplyAtOp):  # an element of a list of catalogue layers: `h.0`
            bound = bind_layer(layer, element_env(layer, env, element))  # its own arguments
            step = self._step(f"{name}.{element}", layer.kind.data, op, op.args)
            step.scope = (*self.scope, id(layer), element)
        else:
            bound = bind_layer(layer, env)
            step = self._step(name, layer.kind.data, op)
        step.bound, step.layer = bound, layer
        step.params = bound.spec.param_count(bound) if bound is not None else 0
        if bound is not None and bound.spec.takes_indices and step.input_keys:
            step.integer_input = True
            self.indices.add(step.input_keys[0])
        self.stack[-1].append(step)

    def _nested(
        self, op: ApplyOp | ApplyAtOp, layer: LayerOp, nested: ModelOp, env: Env, element: int
    ) -> None:
        """A nested model's forward, in its own frame: for `nml.apply`, and an element of a
        per-position list (`stages.1`, its own copy and arguments), a step with the
        forward's steps as children; an element of a list of copies (`nml.apply_at`) adds
        its steps to the caller's."""
        forward = forward_of(nested)
        overrides = nested_overrides(layer, nested, element_env(layer, env, element))
        if forward is None or isinstance(overrides, ArgFailure) or self.depth > MAX_DEPTH:
            return
        inner = model_env(nested, overrides)
        keys = [self.key(v) for v in op.operands if not _is_index(op, v)]
        outer = self.scope
        if isinstance(op, ApplyAtOp):
            self.scope = (*outer, id(layer), element)
        if isinstance(op, ApplyAtOp) and layer.var is None:
            self._alias_result(op, self.call(nested, forward, inner, keys))
            self.scope = outer
            return
        self.stack.append([])
        returned = self.call(nested, forward, inner, keys)
        children = self.stack.pop()
        self._alias_result(op, returned)
        name = layer.sym_name.data
        if isinstance(op, ApplyAtOp):
            name = f"{name}.{element}"
        step = self._step(name, layer_kind(layer), op, list(op.args))
        self.scope = outer  # the step keeps the scope it was made in (`_step`)
        typed = forward.function_type.outputs.data  # the element's own copy's output
        if isinstance(op, ApplyAtOp) and typed and isinstance(typed[0], TensorType):
            step.output = typed[0].dims
        step.params = sum(c.params for c in children)
        step.children = children
        step.layer, step.model, step.env = layer, nested, inner
        self.stack[-1].append(step)

    def _element(self, op: ApplyAtOp, layer: LayerOp) -> int:
        """Which element of the list `layer` this application reaches: a constant index
        (`h[0](x)`, twice, is one element); otherwise the k-th application in this call
        of the forward (`for block in h` reaches each once); a second call of the forward
        (a shared model) reaches the same elements again."""
        index = op.index.owner
        if isinstance(index, ConstantOp) and isinstance(index.value, IntegerAttr):
            return index.value.value.data
        key = (self.frame, id(layer))
        reached = self.elements.get(key, 0)
        self.elements[key] = reached + 1
        return reached

    def _alias_result(self, op: Operation, returned: TensorKey | None) -> None:
        if returned is not None and op.results:
            self.aliases[self._raw(op.results[0])] = returned

    def _step(
        self, name: str, kind: str, op: Operation, operands: Sequence[SSAValue] | None = None
    ) -> Step:
        operands = list(op.operands) if operands is None else operands
        self.budget.left -= 1
        if self.budget.left < 0:
            raise TraceTooLarge
        return Step(
            name,
            kind,
            [_shape(v) if isinstance(v.type, TensorType) else None for v in operands],
            _shape(op.results[0]),
            [self.key(v) for v in operands],
            self.key(op.results[0]),
            integer_input=bool(operands) and _is_integer(operands[0]),
            weights=frozenset(i for i, v in enumerate(operands) if is_weight(v)),
            scope=self.scope,
        )


def builtin_cost(step: Step) -> Cost:
    """The cost rule a builtin step's op declares (`COST`); one without is a compiler bug,
    never 0 FLOPs."""
    op = step.op
    assert isinstance(op, FunctionalOp), f"compiler bug: `{step.kind}` is not a builtin"
    return op.cost()


def is_weight(value: SSAValue) -> bool:
    """A weight of the model, or a view of one: a Parameter read (`nml.ref @A_log`) or a
    layer's tensor (`wte.weight`, `nml.getattr` of a `nml.ref`), through views (`.T`)."""
    owner = value.owner
    while isinstance(owner, FunctionalOp) and owner.operands and _is_view(owner):
        owner = owner.operands[0].owner
    if isinstance(owner, GetAttrOp):
        owner = owner.input.owner
        return isinstance(owner, RefOp)
    return isinstance(owner, RefOp) and isinstance(owner.result.type, TensorType)


def copies_strided(op: Operation) -> bool:
    """A reshape of a transposed tensor (`(att @ v).transpose(1, 2).reshape(B, T, C)`, the
    heads merged): PyTorch's `reshape` is a view only where the strides allow, so this one
    copies, and the copy is what the next layer saves. Not of `scaled_dot_product_attention`'s
    result, which the fused kernels lay out as [B, T, heads, d] already."""
    if not isinstance(op, ReshapeOp | FlattenOp) or not op.operands:
        return False
    reorder = op.operands[0].owner
    if not isinstance(reorder, TransposeOp | PermuteOp | TOp) or not reorder.operands:
        return False
    return not isinstance(reorder.operands[0].owner, AttentionOp)


def _is_view(op: FunctionalOp) -> bool:
    cost = getattr(type(op), "COST", None)
    return isinstance(cost, Cost) and cost.view


def _makes_a_tensor(op: FunctionalOp) -> bool:
    """A builtin that computes a tensor: not `x.size(0)`, a list, a tuple of views
    (`qkv.split(d)`: its parts are views, each costed where it is used) or a number
    (`sqrt(8.0)`, the attention scale), which cost nothing on the device."""
    if isinstance(op, DimOp | ListOp):
        return False
    return bool(op.results) and isinstance(op.results[0].type, TensorType)


def _is_index(op: ApplyOp | ApplyAtOp, value: SSAValue) -> bool:
    return isinstance(op, ApplyAtOp) and value is op.index


def _shape(value: SSAValue) -> Shape:
    """A tensor's dims; of a pair (output, state), as `lstm(x, state)` gives, the output's."""
    attr = value.type
    if isinstance(attr, TupleType) and attr.elements.data:
        attr = attr.elements.data[0]
    return attr.dims if isinstance(attr, TensorType) else None


def _is_integer(value: SSAValue) -> bool:
    attr = value.type
    return isinstance(attr, TensorType) and isinstance(attr.element_type, IntegerType)


def trace_instantiation(
    inst: Instantiation,
    models: dict[str, ModelOp],
    bindings: Mapping[str, int],
    batch: int | None,
    budget: StepBudget | None = None,
) -> Trace | None:
    """The steps of one instantiation, read from the types shape inference left in the
    specialised IR; `bindings` (`-D`, which shape inference already had) and the batch
    size give the symbols left in those types their sizes. None without a forward."""
    forward = forward_of(inst.model)
    if forward is None:
        return None
    args = [arg.type for arg in forward.body.block.args]
    sizes = dict(bindings)
    first = args[0] if args else None
    dims = first.dims if isinstance(first, TensorType) else None
    if batch is not None and dims and isinstance(dims[0], str) and dims[0] not in sizes:
        sizes[dims[0]] = batch
    sizes |= routed_counts(models.values(), sizes)
    budget = StepBudget() if budget is None else budget
    walker = Walker(models, budget)
    try:
        returned = walker.call(
            inst.model, forward, inst.env, [input_key(i) for i in range(len(args))]
        )
    except TraceTooLarge:
        if not budget.reported:
            budget.reported = True
            _too_large(inst)
        return None
    inputs = [a.dims if isinstance(a, TensorType) else None for a in args]
    result = forward.function_type.outputs.data
    output = result[0].dims if result and isinstance(result[0], TensorType) else None
    integer = bool(args) and isinstance(args[0], TensorType) and _int_elements(args[0])
    integer = integer or input_key(0) in walker.indices
    name, model = inst.name, model_kind(inst.model)
    return Trace(name, model, inputs, output, walker.stack[0], sizes, returned, integer)


def routed_counts(models: Iterable[ModelOp], sizes: Mapping[str, int]) -> dict[str, int]:
    """The length `tlc info` counts for each `where(chosen == i)` over the indices of a
    `topk(k)` among E choices (a sparse MoE's router): N·k/E, each expert given an equal
    share of the routed tokens, as a load-balancing loss aims at. Other data-dependent
    lengths stay unknown (bind them with `-D nnz_<line>_<column>=N`)."""
    found: dict[str, int] = {}
    for model in models:
        for op in model.walk():
            if not isinstance(op, NonzeroOp) or op.count_name() in sizes:
                continue
            share = _routed_share(op, sizes)
            if share is not None:
                found[op.count_name()] = share
    return found


def _routed_share(op: NonzeroOp, sizes: Mapping[str, int]) -> int | None:
    compare = op.input.owner
    if not isinstance(compare, Operation) or compare.name != "nml.eq":
        return None
    for operand in compare.operands:
        picked = operand.owner
        topk = picked.input.owner if isinstance(picked, TupleGetOp) else None
        if not isinstance(topk, TopkOp) or picked.index.value.data != 1:  # type: ignore[union-attr]
            continue
        chosen, scores = (_dims(v, sizes) for v in (operand, topk.input))
        if chosen is None or scores is None or not scores:
            return None
        choices = scores[topk.dim.value.data % len(scores)]
        if not isinstance(choices, int) or choices < 1:
            return None
        return math.prod(chosen) // choices  # type: ignore[arg-type]
    return None


def _dims(value: SSAValue, sizes: Mapping[str, int]) -> tuple[int, ...] | None:
    kind = value.type
    dims = resolve_sizes(kind.dims, sizes) if isinstance(kind, TensorType) else None
    if dims is None or not all(isinstance(d, int) for d in dims):
        return None
    return dims  # type: ignore[return-value]


def _too_large(inst: Instantiation) -> None:
    span = span_of(inst.model)
    if span is None:
        return
    message = (
        f"`tlc info` follows at most {MAX_TRACED_STEPS:,} layer and function applications in a "
        f"file; `{inst.name}`, with its nested models expanded, passes that: it is not profiled, "
        "nor the models after it"
    )
    help_text = "its shapes and parameter count are checked; profile a smaller configuration"
    report(Diagnostic.warning("TL0311", message, Label(span, ""), help=help_text))


def input_key(index: int) -> TensorKey:
    """The key of the traced forward's `index`-th argument."""
    return (-1, index)


def _int_elements(attr: TensorType) -> bool:
    return isinstance(attr.element_type, IntegerType)
