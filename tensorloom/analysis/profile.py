"""The static profile of a model: per layer output shape, parameters, FLOPs, activations.

    profile = profile_file(Path("train_lm.tl"), ProfileOptions(batch_size=32))
    net = profile.models[0]
    net.params                    # 27,312,128: every declared layer, counted once
    net.layers[1].kind            # "LMBlock", with its own `layers`
    net.flops, net.activation_bytes

Parameters come from the declarations (a layer never applied still has
weights; one applied twice has them once). FLOPs and activation bytes follow
the layer catalogue's conventions (see tensorloom/catalogue/layers) and
each builtin op's `COST` (tensorloom/catalogue/costs.py); they need concrete
shapes, so every symbolic dim must be bound (the batch, by `--batch-size`; others
by `-D T=512`), and the dims left unbound are listed in `unknown`. A tensor that
two layers save (one its output, the next its input) is counted once, at the first
layer that saves it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tensorloom.analysis.trace import (
    Step,
    StepBudget,
    TensorKey,
    Trace,
    builtin_cost,
    trace_instantiation,
)
from tensorloom.catalogue.costs import RESULT
from tensorloom.catalogue.layers import BoundLayer
from tensorloom.catalogue.shapes import Shape, concrete
from tensorloom.diagnostics.ir import reporting
from tensorloom.dialects.nml import ApplyAtOp, DropoutOp, ModelOp, RefOp
from tensorloom.passes.shape_inference import Instantiation, instantiations, set_dim_bindings
from tensorloom.passes.support.model_env import (
    MAX_NESTING,
    Env,
    copy_env,
    declared_params,
    enclosing_model,
    folded_env,
    forward_of,
    layer_built,
    layer_params,
    layers_of,
    model_kind,
    models_of,
    nested_model,
)
from tensorloom.pipeline import (
    CHECK_PASSES,
    Compilation,
    compile_file,
    make_context,
    run_passes,
)

PRECISION_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@dataclass(frozen=True, slots=True)
class ProfileOptions:
    batch_size: int | None = None
    precision: str = "fp32"
    bindings: Mapping[str, int] = field(default_factory=dict[str, int])


@dataclass(slots=True)
class LayerProfile:
    """One layer application (or builtin op, with `name` ""), or an unused layer."""

    name: str
    kind: str
    output_shape: Shape
    params: int
    flops: int | None
    activation_bytes: int | None
    layers: list[LayerProfile] = field(default_factory=list["LayerProfile"])
    unused: bool = False
    read: bool = False  # a Parameter the forward reads as a value (`fc(x) * scale`)
    repeat: int = 0  # a loop: its iterations (`layers` are the first one's, the totals all's)


@dataclass(frozen=True, slots=True)
class BackwardMoment:
    """One layer's or op's backward: the activations still saved then (its own and every
    earlier step's, the input batch too), the gradient pair it holds (its output's and its
    input's), and the parameters of the steps before it, whose gradients do not exist yet.

    A ResNet's largest gradients are its stem's, whose backward runs last, when the later
    blocks' activations are freed; an LM head's are the logits', at backward's start."""

    saved: int
    pair: int
    params: int


@dataclass(slots=True)
class ModelProfile:
    """One instantiation: the totals and the layers, in the order the forward runs them."""

    name: str
    model: str
    params: int
    input_shapes: list[Shape]
    output_shape: Shape
    layers: list[LayerProfile]
    flops: int | None
    activation_bytes: int | None  # saved for backward, each tensor once; the input batch too
    output_bytes: int | None
    largest_tensor_bytes: int | None
    checkpointed_activation_bytes: int | None
    low_precision_params: int  # weights autocast copies to fp16/bf16 for the forward
    unknown: list[str]  # symbolic dims left unbound; "?" for a dim nothing determines
    input_integer: bool = False
    errors: list[str] = field(default_factory=list[str])
    scratch_bytes: int = 0  # the largest scratch one layer's backward allocates and frees
    # the largest gradient pair one layer's or op's backward holds: its output's and its
    # input's (an LM head's [B, T, vocab] logits and [B, T, d] input, not twice the logits)
    backward_pair_bytes: int = 0
    # backward, step by step in reverse: each step's moment, what it sees alive
    moments: list[BackwardMoment] = field(default_factory=list["BackwardMoment"])
    walked_params: int = 0  # the parameters of the steps walked, for `BackwardMoment.params`
    unmodelled: list[str] = field(default_factory=list[str])  # scratch left out, in words
    config: Env = field(default_factory=Env)  # the configuration profiled


@dataclass
class Costing:
    """Costs the steps of one trace in order, remembering each saved tensor once."""

    trace: Trace
    precision: str
    models: Mapping[str, ModelOp]
    dtypes: dict[TensorKey, int] = field(default_factory=dict[TensorKey, int])
    saved: set[tuple[TensorKey, int]] = field(default_factory=set[tuple[TensorKey, int]])
    unknown: set[str] = field(default_factory=set[str])
    seen_layers: set[tuple[int, ...]] = field(default_factory=set[tuple[int, ...]])
    low_params: int = 0
    largest: int = 0
    working: int = 0  # the largest gradient of an output and of its input, together
    # the tensors backward computes a gradient for: those a weight reaches (not the batch)
    grads: set[TensorKey] = field(default_factory=set[TensorKey])
    # each tensor's bytes as made: saving a view of it (a split's half, a time step's slice)
    # keeps all of it alive
    sizes: dict[TensorKey, int] = field(default_factory=dict[TensorKey, int])
    running: int = 0  # the activations counted so far, in forward order
    params_seen: int = 0  # the parameters of the steps costed so far
    moments: list[BackwardMoment] = field(default_factory=list[BackwardMoment])
    scratch: int = 0
    unmodelled: dict[str, None] = field(default_factory=dict[str, None])  # ordered, once each

    @property
    def amp(self) -> bool:
        return self.precision != "fp32"

    def concrete(self, shape: Shape) -> tuple[int, ...] | None:
        resolved = self.trace.shape(shape)
        dims = concrete(resolved)
        if dims is None:
            self.unknown.update(_unknown_dims(resolved))
        return dims

    def once(self, key: TensorKey, size: int) -> int:
        if size == 0 or (key, size) in self.saved:
            return 0
        self.saved.add((key, size))
        return size

    def dtype(self, key: TensorKey, integer: bool = False) -> int:
        return self.dtypes.get(key, 8 if integer else 4)

    # --- steps ----------------------------------------------------------------------------

    def steps(self, steps: Sequence[Step], path: tuple[int, ...]) -> list[LayerProfile]:
        return [self.step(s, path) for s in steps]

    def step(self, step: Step, path: tuple[int, ...]) -> LayerProfile:
        here = (*path, *step.scope, id(step.layer)) if step.layer is not None else path
        params = 0 if here in self.seen_layers else step.params
        self.seen_layers.add(here)
        if step.repeat:
            return self.loop(step, path)
        if step.model is not None:
            return self.nested(step, here, params)
        if step.bound is not None:
            return self.layer(step, step.bound, params)
        return self.op(step)

    def nested(self, step: Step, here: tuple[int, ...], params: int) -> LayerProfile:
        children = self.steps(step.children, here)
        if step.model is not None and step.env is not None:
            children += unused_layers(step.model, step.env, step.children, self.models)
        flops = _sum([c.flops for c in children])
        act = _sum([c.activation_bytes for c in children])
        shape = self.trace.shape(step.output)
        params = sum(c.params for c in children) if params else 0  # a shared weight once
        return LayerProfile(step.name, step.kind, shape, params, flops, act, children)

    def loop(self, step: Step, path: tuple[int, ...]) -> LayerProfile:
        """The first iteration, then the second, costed in order (the second's input is the
        first's output, saved once); every later iteration costs what the second did."""
        first = self.steps(step.children, path)
        low = self.low_params
        running, params, moments = self.running, self.params_seen, len(self.moments)
        again = self.steps(step.again, path)
        if step.element is not None:  # each element's Parameters, read and not applied
            model, env = step.element
            first += unused_layers(model, env, step.children, self.models)
            if step.again:
                again += unused_layers(model, env, step.again, self.models)
        later = max(step.repeat - 2, 0)
        self.low_params += later * (self.low_params - low)
        self.repeat_moments(moments, later, self.running - running, self.params_seen - params)
        params = sum(c.params for c in first) + (1 + later) * sum(c.params for c in again)
        flops = _times(_sum([c.flops for c in first]), _sum([c.flops for c in again]), later)
        act = _times(
            _sum([c.activation_bytes for c in first]),
            _sum([c.activation_bytes for c in again]),
            later,
        )
        shape = self.trace.shape(step.output)
        return LayerProfile(step.name, step.kind, shape, params, flops, act, first,
                            repeat=step.repeat)  # fmt: skip

    def repeat_moments(self, start: int, later: int, saved: int, params: int) -> None:
        """`later` more iterations like the one whose moments begin at `start`, each saving
        `saved` bytes and holding `params` parameters: the last one's moments (the most
        saved before them; the first's have the most gradients after them)."""
        if not later:
            return
        self.running += later * saved
        self.params_seen += later * params
        self.moments += [
            BackwardMoment(m.saved + later * saved, m.pair, m.params + later * params)
            for m in self.moments[start:]
        ]

    def moment(self, act: int, pair: int, params: int) -> None:
        """A step costed: its saved bytes counted, its backward's moment recorded."""
        before = self.params_seen
        self.running += act
        self.params_seen += params
        if pair:
            self.moments.append(BackwardMoment(self.running, pair, before))

    def layer(self, step: Step, bound: BoundLayer, params: int) -> LayerProfile:
        if bound.spec.unmodelled_scratch is not None:
            self.unmodelled[bound.spec.unmodelled_scratch] = None
        shape = self.trace.shape(step.output)
        ins, out = self.concrete(step.inputs[0] if step.inputs else None), self.concrete(shape)
        if ins is None or out is None:
            return LayerProfile(step.name, step.kind, shape, params, None, None)
        in_dtype = self.dtype(step.input_keys[0], step.integer_input)
        compute = self.compute_bytes(bound, in_dtype)
        saved = bound.spec.saved_tensors(bound, ins, out, compute)
        kept = saved.input_bytes
        if kept == math.prod(ins) * in_dtype:  # the input itself, not a copy of it
            kept = self.whole(step.input_keys[0], kept, in_dtype)
        act = saved.extra_bytes + self.once(step.input_keys[0], kept)
        act += self.once(step.output_key, saved.output_bytes)
        self.produced(step.output_key, out, compute)
        pair = 0
        if bound.spec.param_count(bound) or step.input_keys[0] in self.grads:
            self.grads.add(step.output_key)
            grad_in = math.prod(ins) * in_dtype if step.input_keys[0] in self.grads else 0
            pair = math.prod(out) * compute + grad_in
        self.working = max(self.working, pair)
        self.moment(act, pair, params)
        if bound.spec.autocast == "low" and params:
            self.low_params += params
        self.scratch = max(self.scratch, bound.spec.scratch_bytes(bound, ins, out, compute))
        flops = bound.spec.flops(bound, ins, out)
        return LayerProfile(step.name, step.kind, shape, params, flops, act)

    def compute_bytes(self, bound: BoundLayer, in_dtype: int) -> int:
        """The element size a layer computes in: its input's, or autocast's choice."""
        if in_dtype == 8:
            return 4  # integer indices (Embedding): the fp32 weights decide
        if not self.amp or bound.spec.autocast == "input":
            return in_dtype
        return 4 if bound.spec.autocast == "fp32" else PRECISION_BYTES[self.precision]

    def produced(self, key: TensorKey, shape: tuple[int, ...], dtype: int) -> None:
        self.dtypes[key] = dtype
        self.sizes[key] = math.prod(shape) * dtype
        self.largest = max(self.largest, self.sizes[key])

    def whole(self, key: TensorKey, size: int, dtype: int) -> int:
        """What saving `size` bytes of the tensor `key` names keeps: all of it, when the
        saved tensor is a view of it in its own dtype (`u, z = x.split(d)`, `dt[:, t]`);
        an autocast copy is a tensor of its own."""
        if dtype != self.dtype(key):
            return size
        return max(size, self.sizes.get(key, 0))

    def op(self, step: Step) -> LayerProfile:
        shape = self.trace.shape(step.output)
        out = self.concrete(shape)
        ins = [None if s is None else self.concrete(s) for s in step.inputs]
        if out is None or any(s is None for s, i in zip(ins, step.inputs, strict=True) if i):
            return LayerProfile("", step.kind, shape, 0, None, None)
        p = dropout_rate(step.op) if isinstance(step.op, DropoutOp) else 0.0
        cost = builtin_cost(step)(ins, out, p)
        dtype = self.op_dtype(step)
        act = cost.extra_bytes
        for index in cost.saved:
            act += self.saved_operand(step, index, ins, out, dtype)
        self.produced(step.output_key, out, dtype)
        pair = self.backward_pair(step, ins, math.prod(out) * dtype, cost.saved)
        if pair:
            pair += builtin_cost(step).backward_temporaries * math.prod(out) * dtype
        self.working = max(self.working, pair)
        self.moment(act, pair, 0)
        return LayerProfile("", step.kind, shape, 0, cost.flops, act)

    def backward_pair(
        self, step: Step, ins: list[tuple[int, ...] | None], out: int, saved: tuple[int, ...]
    ) -> int:
        """An op's backward holds its output's gradient and computes its operands': only
        where a weight reaches the op, and not for the weight itself (the parameters'
        gradients are the `gradients` term). An op that reads its operands back (matmul, a
        product, attention) makes each operand's gradient anew, all alive at once; one that
        does not (add, cat) passes slices of its own on: the largest is counted."""
        keys = step.input_keys
        if builtin_cost(step).view:  # a view's gradient is a view too: nothing new
            return 0
        if not step.weights and not any(k in self.grads for k in keys):
            return 0
        self.grads.add(step.output_key)
        grads = [
            math.prod(shape) * self.dtype(key)
            for shape, key in zip(ins, keys, strict=True)
            if shape is not None and key in self.grads
        ]
        fresh = any(index != RESULT for index in saved)
        return out + (sum(grads) if fresh else max(grads, default=0))

    def op_dtype(self, step: Step) -> int:
        autocast = builtin_cost(step).autocast
        if self.amp and autocast == "fp32":
            return 4
        if self.amp and autocast == "low":
            return PRECISION_BYTES[self.precision]
        floats = [
            self.dtype(k)
            for k, s in zip(step.input_keys, step.inputs, strict=True)
            if s is not None and self.dtype(k) != 8
        ]
        return max(floats, default=4)

    def saved_operand(
        self,
        step: Step,
        index: int,
        ins: list[tuple[int, ...] | None],
        out: tuple[int, ...],
        dtype: int,
    ) -> int:
        if index == RESULT:
            return self.once(step.output_key, math.prod(out) * dtype)
        shape = ins[index]
        key = step.input_keys[index]
        low = self.amp and builtin_cost(step).autocast == "low"
        if index in step.weights and not low:
            return 0  # autograd keeps the weight itself; only autocast's copy is new memory
        own = dtype if builtin_cost(step).autocast == "low" else self.dtype(key)
        return self.once(key, self.whole(key, math.prod(shape or ()) * own, own))


def _unknown_dims(shape: Shape) -> list[str]:
    if shape is None:
        return ["?"]
    return [d if isinstance(d, str) else "?" for d in shape if not isinstance(d, int)]


def _times(first: int | None, again: int | None, later: int) -> int | None:
    """A loop's total: its first iteration, its second, and `later` more like the second."""
    if first is None or again is None:
        return None
    return first + (1 + later) * again


def _sum(values: Sequence[int | None]) -> int | None:
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


# --- the driver -----------------------------------------------------------------------------


def compile_for_info(path: Path, bindings: Mapping[str, int]) -> Compilation:
    """The check passes on `path` (`tlc info` reports what `tlc check` reports), with the
    `-D` bindings in the IR (`tl.dims`): shape inference fixes those symbols, and a binding
    the program contradicts is a diagnostic at the line that contradicts it."""
    result = compile_file(path, until="irgen")
    if result.module is None or not result.ok:
        return result
    if bindings:
        set_dim_bindings(result.module, bindings)
    with reporting(result.sink):
        run_passes(make_context(), result.module, CHECK_PASSES, result.path)
    return result


def profile_file(path: Path, options: ProfileOptions) -> tuple[Compilation, list[ModelProfile]]:
    """Check `path` (the `nml` stage) and profile every instantiation, if it is clean."""
    result = compile_for_info(path, options.bindings)
    if result.module is None or not result.ok:
        return result, []
    with reporting(result.sink):
        return result, profile_module(result.module, options)


def info_instantiations(module: ModuleOp, models: Mapping[str, ModelOp]) -> list[Instantiation]:
    """Every instantiation `tlc info` profiles; a model used only as a layer of another
    is profiled as its first use's specialised copy (the shapes that reach it there)."""
    found = instantiations(module, models)
    first: dict[str, ModelOp] = {}
    for inst in found:
        _first_copies(inst.model, models, first, 0)
    for inst in found:
        copy = first.get(inst.model.sym_name.data)
        if inst.name == inst.model.sym_name.data and copy is not None and forward_of(copy):
            inst.model, inst.env = copy, copy_env(copy)  # its shapes and its weights: one config
    return found


def _first_copies(
    model: ModelOp, models: Mapping[str, ModelOp], first: dict[str, ModelOp], depth: int
) -> None:
    """The first specialised copy of each model, in the order the instantiations reach them."""
    if depth > MAX_NESTING:
        return
    for layer in layers_of(model).values():
        copy = nested_model(layer, models)
        if copy is None or copy is model or copy.sym_name.data == layer.kind.data:
            continue
        if layer.kind.data in first:
            continue  # its copies were followed the first time
        first[layer.kind.data] = copy
        _first_copies(copy, models, first, depth + 1)


def profile_module(module: ModuleOp, options: ProfileOptions) -> list[ModelProfile]:
    models = models_of(module)
    budget = StepBudget()
    found = [
        profile_instantiation(inst, models, options, budget)
        for inst in info_instantiations(module, models)
    ]
    return [p for p in found if p is not None]


def profile_instantiation(
    inst: Instantiation,
    models: dict[str, ModelOp],
    options: ProfileOptions,
    budget: StepBudget | None = None,
) -> ModelProfile | None:
    params = declared_params(inst.model, inst.env, models)
    trace = trace_instantiation(inst, models, options.bindings, options.batch_size, budget)
    name, kind = inst.name, model_kind(inst.model)
    if trace is None:
        return ModelProfile(name, kind, params, [], None, [], None, None, None, None, None, 0, [],
                            config=dict(inst.env))  # fmt: skip
    return _summarize(trace, Costing(trace, options.precision, models), inst, params)


def _summarize(trace: Trace, costing: Costing, inst: Instantiation, params: int) -> ModelProfile:
    layers = costing.steps(trace.steps, ())
    layers += unused_layers(inst.model, inst.env, trace.steps, costing.models)
    inputs = [trace.shape(s) for s in trace.inputs]
    act = _sum([c.activation_bytes for c in layers])
    data = _input_bytes(costing, trace, inputs)
    act = None if act is None or data is None else act + data
    output = trace.shape(trace.output)
    out = costing.concrete(output)
    out_bytes = None
    if out is not None and trace.output_key is not None:
        out_bytes = math.prod(out) * costing.dtype(trace.output_key)
    flops = _sum([c.flops for c in layers])
    return ModelProfile(
        trace.name, trace.model, params, inputs, output, layers, flops, act, out_bytes,
        costing.largest if act is not None else None,
        _checkpointed(costing, trace, layers, act) if act is not None else None,
        costing.low_params, sorted(costing.unknown), trace.input_integer,
        scratch_bytes=costing.scratch, backward_pair_bytes=costing.working,
        moments=[BackwardMoment(m.saved + (data or 0), m.pair, m.params) for m in costing.moments],
        walked_params=costing.params_seen, unmodelled=list(costing.unmodelled),
        config=dict(inst.env),
    )  # fmt: skip


def _input_bytes(costing: Costing, trace: Trace, inputs: list[Shape]) -> int | None:
    """The input batch on the device (an Embedding that saves it counts it already)."""
    total = 0
    for index, shape in enumerate(inputs):
        dims = costing.concrete(shape)
        if dims is None:
            return None
        size = 8 if trace.input_integer and index == 0 else 4
        total += costing.once(trace.input_key(index), math.prod(dims) * size)
    return total


def _checkpointed(costing: Costing, trace: Trace, layers: list[LayerProfile], total: int) -> int:
    """Activations when each top-level nested model is checkpointed: the others'
    saved tensors, each block's input, and one block's recomputed activations."""
    blocks = [(s, p) for s, p in zip(trace.steps, layers, strict=False) if s.model is not None]
    kept = sum(p.activation_bytes or 0 for s, p in zip(trace.steps, layers, strict=False)
               if s.model is None)  # fmt: skip
    if not blocks:
        return total
    inputs = 0
    for step, _ in blocks:
        dims = concrete(trace.shape(step.inputs[0] if step.inputs else None)) or ()
        inputs += math.prod(dims) * costing.dtype(step.input_keys[0])
    return kept + inputs + max(p.activation_bytes or 0 for _, p in blocks)


# --- declarations ---------------------------------------------------------------------------


def _in_loops(steps: Sequence[Step]) -> list[Step]:
    """The steps of this forward, those inside its loops too (not a nested model's)."""
    found: list[Step] = []
    for step in steps:
        found.append(step)
        if step.repeat:
            found += _in_loops([*step.children, *step.again])
    return found


def unused_layers(
    model: ModelOp, env: Env, steps: Sequence[Step], models: Mapping[str, ModelOp]
) -> list[LayerProfile]:
    """Layers the forward never applies: their parameters exist all the same (a
    conditional layer this configuration does not build is not one). One it reads as a
    value (a Parameter: `fc(x) * scale`) is `read`, not unused."""
    used = {s.name.split(".")[0].split("[")[0] for s in _in_loops(steps) if s.name}  # `h.0`: `h`
    # `experts[i](x)` in a loop over a range: the element's steps are the caller's
    used |= {op.layer.root_reference.data for op in model.walk() if isinstance(op, ApplyAtOp)}
    read = {op.symbol.root_reference.data for op in model.walk() if isinstance(op, RefOp)}
    return [
        LayerProfile(
            name,
            layer.kind.data,
            None,
            layer_params(layer, env, models),
            0,
            0,
            unused=name not in read,
            read=name in read,
        )
        for name, layer in layers_of(model).items()
        if name not in used and layer_built(layer, env)
    ]


def dropout_rate(op: DropoutOp) -> float:
    """A dropout's probability: its number, or its config's value in the (specialised)
    model it belongs to (`dropout(x, p)`)."""
    if op.p is not None:
        return op.p.value.data
    model = enclosing_model(op)
    rate = folded_env(model).get(op.rate.param.data) if model is not None else None  # type: ignore[union-attr]
    return float(rate) if isinstance(rate, int | float) else 0.5
