"""What every catalogue layer is: parameters, binding, and the hooks each layer fills in.

A `LayerSpec` describes one constructor (`Linear(in_features, out_features,
bias=True)`): its parameters with PyTorch's names, order and defaults, and the
rules a checker needs. `bind` matches constant-folded arguments to parameters
and checks their types; `validate` checks what PyTorch checks at construction;
`infer_shape`, `param_shapes` (each parameter tensor's shape, under PyTorch's
attribute name), `param_count` (their sizes summed), `flops` and
`saved_tensors` are the layer's static model; `torch_ctor` says how to build it
in emitted PyTorch.

    spec = lookup("Linear")
    bound = spec.bind([784, 256], {})            # a BoundLayer, or [ArgError]
    spec.validate(bound)                         # []
    spec.infer_shape(bound, [("B", 784)], Unifier())   # ("B", 256)
    spec.param_shapes(bound)                     # {"weight": (256, 784), "bias": (256,)}
    spec.torch_ctor(bound).source()              # "nn.Linear(784, 256)"

A layer's initialisation is part of its record: `init_groups` names the keywords
(`init="normal", std=0.02`, `bias_init="zeros"`) and the tensors each sets, `bind`
checks them, and `init_plan` says which `nn.init` call the emitted `__init__`
makes on which tensor (`Linear(d, d, init="normal", std=0.02)` is
`nn.init.normal_(self.fc.weight, std=0.02)` after the layer is built).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeGuard

from tensorloom.catalogue.shapes import (
    Dim,
    Shape,
    ShapeMismatch,
    Unifier,
    format_dim,
    format_shape,
    mismatch,
)
from tensorloom.diagnostics.core import did_you_mean
from tensorloom.escape import py_string

Value = int | float | bool | str | None | list["Value"] | tuple["Value", ...]


@dataclass(frozen=True, slots=True)
class CallValue:
    """`Adam(lr=0.001)` or a bare name such as `CrossEntropy` as a setting's value."""

    name: str
    args: tuple[Value | CallValue, ...] = ()
    kwargs: tuple[tuple[str, Value | CallValue], ...] = ()


Evaluated = Value | CallValue
"""An evaluated expression: a value, or a call written as a value (`Adam(lr=0.1)`)."""

CallKind = Literal["plain", "first_of_tuple", "first_of_tuple_self_attention"]


@dataclass(frozen=True, slots=True)
class ArgError:
    """A constructor argument the layer rejects.

    `position` (0-based) or `keyword` says which argument; both None means the
    call as a whole (a missing argument, or a default that conflicts).
    """

    message: str
    position: int | None = None
    keyword: str | None = None
    help: str | None = None


@dataclass(frozen=True, slots=True)
class Kind:
    """An accepted argument type: a test and how to name it in a message."""

    describe: str
    accepts: Callable[[Value], bool]


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Value) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _ints(v: Value, n: int) -> bool:
    return isinstance(v, list | tuple) and len(v) == n and all(_is_int(x) for x in v)


INT = Kind("an integer", _is_int)
FLOAT = Kind("a number", _is_number)
BOOL = Kind("`true` or `false`", lambda v: isinstance(v, bool))


def optional(kind: Kind) -> Kind:
    return Kind(f"{kind.describe} or `none`", lambda v: v is None or kind.accepts(v))


def int_or_ints(n: int) -> Kind:
    """An int, or a list/tuple of `n` ints (PyTorch's `_pair`/`_single`)."""
    if n == 1:
        return Kind("an integer", lambda v: _is_int(v) or _ints(v, 1))
    return Kind(f"an integer or {n} integers", lambda v: _is_int(v) or _ints(v, n))


def padding_kind(n: int) -> Kind:
    inner = int_or_ints(n)
    return Kind(
        f'{inner.describe}, "same" or "valid"', lambda v: v in ("same", "valid") or inner.accepts(v)
    )


def choice(*options: str) -> Kind:
    listed = ", ".join(f'"{o}"' for o in options)
    return Kind(f"one of {listed}", lambda v: isinstance(v, str) and v in options)


INT_OR_INT_LIST = Kind(
    "an integer or a list of integers",
    lambda v: (
        _is_int(v) or (isinstance(v, list | tuple) and len(v) > 0 and all(_is_int(x) for x in v))
    ),
)


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: Kind
    default: Value = None
    required: bool = False
    kw_only: bool = False


def req(name: str, kind: Kind) -> Param:
    return Param(name, kind, required=True)


INIT_FUNCTIONS: dict[str, str] = {
    "normal": "normal_",
    "trunc_normal": "trunc_normal_",
    "zeros": "zeros_",
    "ones": "ones_",
    "xavier_uniform": "xavier_uniform_",
    "xavier_normal": "xavier_normal_",
    "kaiming_uniform": "kaiming_uniform_",
    "kaiming_normal": "kaiming_normal_",
    "orthogonal": "orthogonal_",
    "uniform": "uniform_",
    "constant": "constant_",
}
"""The names `init=` accepts, each a function of `torch.nn.init`; `"default"` (the
default) keeps the layer's own PyTorch initialisation."""
SAMPLE_LENGTH = 16
"""The length of a synthetic sequence sample (`sample_shape`), and of a sample's free
named dim (`T`)."""

DEFAULT_INIT = "default"
WEIGHT_INITS = (DEFAULT_INIT, *INIT_FUNCTIONS)
BIAS_INITS = (DEFAULT_INIT, "zeros", "ones")

_KAIMING = (("a", "a"), ("mode", "mode"), ("nonlinearity", "nonlinearity"))
INIT_OPTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "uniform": (("a", "a"), ("b", "b")),
    "constant": (("val", "value"),),
    "kaiming_uniform": _KAIMING,
    "kaiming_normal": _KAIMING,
    "xavier_uniform": (("gain", "gain"),),
    "xavier_normal": (("gain", "gain"),),
    "orthogonal": (("gain", "gain"),),
}
"""Besides `std`/`mean`, the keywords each weight init reads: `nn.init`'s keyword, the
layer's (`init="kaiming_normal", mode="fan_out", nonlinearity="relu"`,
`init="uniform", a=-0.1, b=0.1`, `init="constant", value=1.0`)."""
NONLINEARITIES = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d", "sigmoid", "tanh", "relu",
                  "leaky_relu", "selu")  # fmt: skip
"""What `nn.init.calculate_gain` (and so `kaiming_*`'s `nonlinearity`) accepts."""
NORMAL_INITS = ("normal", "trunc_normal")
"""The inits that take `std` and `mean`."""


def _init_kind(choices: Sequence[str]) -> Kind:
    """A string; `init_errors` checks it is one of `choices` (with a did-you-mean)."""
    listed = ", ".join(f'"{c}"' for c in choices)
    return Kind(f"one of {listed}", lambda v: isinstance(v, str))


WEIGHT_INIT_NAME = _init_kind(WEIGHT_INITS)
BIAS_INIT_NAME = _init_kind(BIAS_INITS)


@dataclass(frozen=True, slots=True)
class InitGroup:
    """Tensors of a layer that one init keyword sets.

    `keyword` is the keyword naming the init (`init`, `bias_init`) and `choices` the
    names it accepts; `std` the keywords of the normal's spread, the first one given
    winning (MultiHeadAttention's output projection reads `out_std`, then `std`);
    `mean` the keyword of its centre; `tensors` the parameter names (as in
    `param_shapes`) it sets, those the layer has for its arguments; `needs` the
    boolean parameter that gives the layer those tensors (`bias`).
    """

    keyword: str
    tensors: tuple[str, ...]
    choices: tuple[str, ...] = WEIGHT_INITS
    std: tuple[str, ...] = ()
    mean: str | None = None
    needs: str | None = None  # a boolean parameter without which the tensors are absent


@dataclass(frozen=True, slots=True)
class InitStep:
    """One `nn.init` call in the emitted `__init__`: `function` (`"normal_"`) on the
    layer's `tensor` (`"weight"`, `"c_proj.weight"`), with the keywords of the
    layer's arguments that give its `std` and `mean` (None: PyTorch's default)."""

    tensor: str
    function: str
    std: str | None = None
    mean: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # (nn.init keyword, the layer's keyword)


INIT_OPTION_PARAMS = (
    Param("a", optional(FLOAT), None, kw_only=True),
    Param("b", optional(FLOAT), None, kw_only=True),
    Param("value", optional(FLOAT), None, kw_only=True),
    Param("gain", optional(FLOAT), None, kw_only=True),
    Param("mode", choice("fan_in", "fan_out"), "fan_in", kw_only=True),
    Param("nonlinearity", choice(*NONLINEARITIES), "leaky_relu", kw_only=True),
)
"""The keywords of `INIT_OPTIONS`, each a parameter of a layer with `init=`."""


def _option_errors(bound: BoundLayer, init: str, given: set[str]) -> list[ArgError]:
    """An init keyword the chosen init does not read (`mode` without a kaiming init), and
    `uniform`'s `a` not below `b`."""
    read = {kw for _, kw in INIT_OPTIONS.get(init, ())}
    errors: list[ArgError] = []
    for param in INIT_OPTION_PARAMS:
        if param.name not in given or param.name in read:
            continue
        takers = [
            f'`init="{i}"`' for i, kws in INIT_OPTIONS.items() if param.name in dict(kws).values()
        ]
        errors.append(
            bound.error(
                param.name,
                f"`{param.name}` applies to {' or '.join(takers)}",
                help=f"add {takers[0]}",
            )
        )
    a, b = bound.values.get("a"), bound.values.get("b")
    if init == "uniform" and isinstance(a, int | float) and isinstance(b, int | float) and a >= b:
        errors.append(bound.error("b", f"`uniform` needs `a` < `b`, got a={a} and b={b}"))
    return errors


def weight_init_params(*extra_std: str) -> tuple[Param, ...]:
    """`init="default", std=1.0, mean=0.0` (keyword-only), plus optional spreads such
    as `out_std` (default: `std`), and the other inits' keywords (`INIT_OPTIONS`)."""
    return (
        Param("init", WEIGHT_INIT_NAME, DEFAULT_INIT, kw_only=True),
        Param("std", FLOAT, 1.0, kw_only=True),
        Param("mean", FLOAT, 0.0, kw_only=True),
        *(Param(name, optional(FLOAT), None, kw_only=True) for name in extra_std),
        *INIT_OPTION_PARAMS,
    )


BIAS_INIT_PARAM = Param("bias_init", BIAS_INIT_NAME, DEFAULT_INIT, kw_only=True)
WEIGHT_INIT = InitGroup("init", ("weight",), std=("std",), mean="mean")
BIAS_INIT = InitGroup("bias_init", ("bias",), BIAS_INITS, needs="bias")
WEIGHT_AND_BIAS_INIT = (WEIGHT_INIT, BIAS_INIT)
"""`init=`/`std=`/`mean=` for the weight, `bias_init=` for the bias (Linear, convolutions)."""


@dataclass(frozen=True, slots=True)
class SavedTensors:
    """Bytes a layer keeps alive for backward, split so that a whole-model estimate
    can count a tensor once when one layer saves its output and the next its input.

    `input_bytes`/`output_bytes` are the layer's own input/output when autograd
    saves them (0 otherwise); `extra_bytes` are tensors allocated only for backward
    (dropout masks, normalisation statistics, pooling indices, fused-kernel state).
    """

    input_bytes: int = 0
    output_bytes: int = 0
    extra_bytes: int = 0

    @property
    def total(self) -> int:
        return self.input_bytes + self.output_bytes + self.extra_bytes


@dataclass(frozen=True, slots=True)
class TorchCtor:
    """How emitted PyTorch constructs a layer: `nn.Linear(784, 256, bias=False)`."""

    cls: str
    args: list[str]
    kwargs: list[tuple[str, str]]

    def source(self) -> str:
        parts = [*self.args, *(f"{k}={v}" for k, v in self.kwargs)]
        return f"{self.cls}({', '.join(parts)})"


def py_literal(value: Value) -> str:
    """Python source that evaluates to `value`."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(py_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, str):
        return py_string(value)
    return repr(value)


@dataclass(frozen=True)
class BoundLayer:
    """A layer's arguments matched to its parameters (defaults filled in)."""

    spec: LayerSpec
    values: dict[str, Value]
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...]

    def __getitem__(self, name: str) -> Value:
        return self.values[name]

    def get_int(self, name: str) -> int:
        v = self.values[name]
        assert isinstance(v, int)
        return v

    def get_float(self, name: str) -> float:
        v = self.values[name]
        assert isinstance(v, int | float)
        return float(v)

    def get_bool(self, name: str) -> bool:
        return bool(self.values[name])

    def get_ints(self, name: str, n: int) -> tuple[int, ...]:
        """An int-or-tuple argument expanded to `n` ints."""
        v = self.values[name]
        if isinstance(v, int):
            return (v,) * n
        assert isinstance(v, list | tuple)
        return tuple(x for x in v if isinstance(x, int))

    def error(self, name: str, message: str, help: str | None = None) -> ArgError:
        """An error located at the argument that supplied parameter `name`."""
        position = self.spec.position_of(name)
        if position is not None and position < len(self.args):
            return ArgError(message, position=position, help=help)
        if any(k == name for k, _ in self.kwargs):
            return ArgError(message, keyword=name, help=help)
        return ArgError(message, help=help)


class LayerSpec:
    """One catalogue layer. Subclasses set the class variables and override the hooks."""

    name: ClassVar[str]
    torch_class: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    call_kind: ClassVar[CallKind] = "plain"
    # Keywords emitted even when the user left them out (TensorLoom's conventions).
    forced_kwargs: ClassVar[tuple[tuple[str, str], ...]] = ()
    # The dtype the layer computes in under CUDA autocast: "low" (fp16/bf16: matmuls,
    # convolutions, recurrent layers), "fp32" (norms, softmax), or "input" (unchanged).
    autocast: ClassVar[Literal["low", "fp32", "input"]] = "input"
    # Scratch memory the layer's kernels take that `scratch_bytes` cannot predict, said
    # as a note under `tlc info`'s memory budget (convolutions: cuDNN's workspace).
    unmodelled_scratch: ClassVar[str | None] = None
    # Whether the shape rule holds for any number of leading dims (`[..., in] ->
    # [..., out]`): then a tensor whose leading dims are unknown (`[..., 784]`) is
    # still checked on its known trailing dims.
    suffix_polymorphic: ClassVar[bool] = False
    # The layer's init keywords and the tensors each sets (see `InitGroup`); their
    # parameters are in `params` too (`weight_init_params()`, `BIAS_INIT_PARAM`).
    init_groups: ClassVar[tuple[InitGroup, ...]] = ()
    # Arguments that pick the emitted class or how it is called (MultiHeadAttention's
    # `causal`): the class is emitted once per model, so a config cannot give them.
    literal_params: ClassVar[tuple[str, ...]] = ()
    # Whether `layer(x, state)` is accepted: it returns `(output, state)` (LSTM, GRU), and
    # `state_shapes` gives the state's tensors.
    stateful: ClassVar[bool] = False
    # Whether it normalises (BatchNorm, LayerNorm, ...): weight decay leaves its weights
    # alone (the runtime's `_NORM_LAYERS`, which `make reference` writes from this).
    is_norm: ClassVar[bool] = False
    # Whether its first argument is the input's feature size (`Linear(in_features, ...)`,
    # `Conv2d(in_channels, ...)`): a shape error then suggests changing that argument.
    input_size_first: ClassVar[bool] = False
    # Whether its input holds int64 indices, however it is annotated (Embedding).
    takes_indices: ClassVar[bool] = False

    # --- binding -------------------------------------------------------------------------

    def position_of(self, name: str) -> int | None:
        positional = [p.name for p in self.params if not p.kw_only]
        return positional.index(name) if name in positional else None

    def signature(self) -> str:
        """`Linear(in_features, out_features, bias=True)` for help lines (the init
        keywords, `init=`, `std=`, ..., are left out: docs/reference.md lists them)."""
        inits = self.init_keywords()
        parts = [
            p.name if p.required else f"{p.name}={py_literal(p.default)}"
            for p in self.params
            if p.name not in inits
        ]
        return f"{self.name}({', '.join(parts)})"

    def bind(self, args: Sequence[Value], kwargs: dict[str, Value]) -> BoundLayer | list[ArgError]:
        """Match arguments to parameters; check counts, names and types."""
        errors = self._check_positional_count(args) + self._check_keywords(args, kwargs)
        if errors:
            return errors
        positional = [p for p in self.params if not p.kw_only]
        given = {p.name: v for p, v in zip(positional, args, strict=False)} | kwargs
        errors = self._missing(given) + self._type_errors(args, kwargs)
        if errors:
            return errors
        values = {p.name: given.get(p.name, p.default) for p in self.params}
        bound = BoundLayer(self, values, tuple(args), tuple(kwargs.items()))
        return _absurd_sizes(bound) or self.init_errors(bound) or bound

    def _check_positional_count(self, args: Sequence[Value]) -> list[ArgError]:
        limit = sum(1 for p in self.params if not p.kw_only)
        if len(args) <= limit:
            return []
        plural = "argument" if limit == 1 else "arguments"
        return [
            ArgError(
                f"`{self.name}` takes at most {limit} positional {plural}, got {len(args)}",
                position=limit,
                help=f"the signature is `{self.signature()}`",
            )
        ]

    def _check_keywords(self, args: Sequence[Value], kwargs: dict[str, Value]) -> list[ArgError]:
        names = [p.name for p in self.params]
        errors: list[ArgError] = []
        for key in kwargs:
            if key not in names:
                guess = did_you_mean(key, names)
                hint = (
                    f"did you mean `{guess}`?"
                    if guess
                    else f"the signature is `{self.signature()}`"
                )
                errors.append(
                    ArgError(f"`{self.name}` has no parameter `{key}`", keyword=key, help=hint)
                )
            elif (pos := self.position_of(key)) is not None and pos < len(args):
                errors.append(
                    ArgError(f"`{key}` is given both by position and by keyword", keyword=key)
                )
        return errors

    def _missing(self, given: dict[str, Value]) -> list[ArgError]:
        missing = [p.name for p in self.params if p.required and p.name not in given]
        if not missing:
            return []
        listed = ", ".join(f"`{m}`" for m in missing)
        plural = "argument" if len(missing) == 1 else "arguments"
        return [
            ArgError(
                f"`{self.name}` is missing the required {plural} {listed}",
                help=f"the signature is `{self.signature()}`",
            )
        ]

    def _type_errors(self, args: Sequence[Value], kwargs: dict[str, Value]) -> list[ArgError]:
        positional = [p for p in self.params if not p.kw_only]
        by_name = {p.name: p for p in self.params}
        errors = [
            self._type_error(p, v, ArgError("", position=i))
            for i, (p, v) in enumerate(zip(positional, args, strict=False))
        ]
        errors += [
            self._type_error(by_name[k], v, ArgError("", keyword=k)) for k, v in kwargs.items()
        ]
        return [e for e in errors if e is not None]

    def _type_error(self, p: Param, value: Value, where: ArgError) -> ArgError | None:
        if p.kind.accepts(value):
            return None
        message = f"`{p.name}` must be {p.kind.describe}, got `{py_literal(value)}`"
        return ArgError(message, where.position, where.keyword)

    # --- initialisation ------------------------------------------------------------------

    def init_keywords(self) -> frozenset[str]:
        """The parameters that set initialisation, not passed to the constructor."""
        names = {g.keyword for g in self.init_groups}
        names |= {k for g in self.init_groups for k in g.std}
        names |= {g.mean for g in self.init_groups if g.mean is not None}
        if any(g.choices == WEIGHT_INITS for g in self.init_groups):
            names |= {p.name for p in INIT_OPTION_PARAMS}
        return frozenset(names)

    def init_errors(self, bound: BoundLayer) -> list[ArgError]:
        """Unknown init names (with a did-you-mean), a negative `std`, `std`/`mean`
        without a normal init, and an init for tensors the layer does not have."""
        errors: list[ArgError] = []
        given = {k for k, _ in bound.kwargs}
        spreads: dict[str, bool] = {}  # std/mean keyword -> read by a normal init
        for keyword in dict.fromkeys(g.keyword for g in self.init_groups):
            groups = [g for g in self.init_groups if g.keyword == keyword]
            value = bound[keyword]
            if value not in groups[0].choices:
                errors.append(_unknown_init(bound, keyword, value, groups[0].choices))
                continue
            normal = value in NORMAL_INITS
            for group in groups:
                for name in (*group.std, *([group.mean] if group.mean else [])):
                    spreads[name] = spreads.get(name, False) or normal
            if groups[0].choices == WEIGHT_INITS:
                errors += _option_errors(bound, str(value), given)
            absent = [g.needs for g in groups if g.needs and bound.values.get(g.needs) is False]
            if keyword in given and value != DEFAULT_INIT and absent:
                message = f"`{keyword}` is given but the layer has no {absent[0]}"
                errors.append(
                    bound.error(
                        keyword, f"{message} (`{absent[0]}=false`)", help=f"remove `{keyword}`"
                    )
                )
        for name, read in spreads.items():
            v = bound[name]
            if isinstance(v, int | float) and v < 0 and name != "mean":
                errors.append(bound.error(name, f"`{name}` must not be negative, got {v}"))
            elif name in given and not read:
                errors.append(
                    bound.error(
                        name,
                        f'`{name}` applies to `init="normal"` or `init="trunc_normal"`',
                        help='add `init="normal"`',
                    )
                )
        return errors

    def init_plan(self, bound: BoundLayer) -> list[InitStep]:
        """The `nn.init` calls that follow the layer's construction, in order."""
        given = {k for k, _ in bound.kwargs}
        present = self.param_shapes(bound)
        steps: list[InitStep] = []
        for group in self.init_groups:
            value = bound[group.keyword]
            if value == DEFAULT_INIT or not isinstance(value, str):
                continue
            normal = value in NORMAL_INITS
            std = next((k for k in group.std if k in given), None) if normal else None
            mean = group.mean if normal and group.mean in given else None
            options = tuple(
                (torch_kw, kw) for torch_kw, kw in INIT_OPTIONS.get(value, ()) if kw in given
            )
            steps += [
                InitStep(t, INIT_FUNCTIONS[value], std, mean, options)
                for t in group.tensors
                if t in present
            ]
        return steps

    # --- hooks -----------------------------------------------------------------------------

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        """What PyTorch rejects at construction (and forward-time errors that the
        arguments alone already decide). Types were checked by `bind`."""
        return []

    def infer_shape(
        self, bound: BoundLayer, inputs: Sequence[Shape], unifier: Unifier
    ) -> Shape | ShapeMismatch:
        """The output shape for these input shapes; one input unless overridden."""
        if len(inputs) != 1:
            return mismatch(f"takes 1 input, got {len(inputs)}", expected=1, got=len(inputs))
        return self.shape_rule(bound, inputs[0], unifier)

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        return shape

    def state_shapes(self, bound: BoundLayer, shape: tuple[Dim, ...]) -> tuple[Shape, ...]:
        """A `stateful` layer's state for input `shape`: its tensors' shapes, in order."""
        return ()

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        """Each learnable tensor's shape, by its name in `named_parameters()`
        (`"weight"`, `"out_proj.bias"`), in PyTorch's registration order."""
        return {}

    def buffer_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        """Each persistent buffer's shape, by its name in `state_dict()` (BatchNorm's
        running statistics): what a published state dict holds besides the parameters."""
        return {}

    def integer_buffers(self, bound: BoundLayer) -> frozenset[str]:
        """The buffers of `buffer_shapes` that hold int64, not float32 (BatchNorm's
        `num_batches_tracked`): a file holding them as I64 is not cast."""
        return frozenset()

    def param_count(self, bound: BoundLayer) -> int:
        return sum(numel(shape) for shape in self.param_shapes(bound).values())

    def unknown_rank_suffix(self, bound: BoundLayer) -> tuple[Dim, ...] | None:
        """The trailing dims of the output when nothing of the input's shape is known
        (`Linear(784, 256)` gives `[..., 256]` whatever comes in), or None."""
        return None

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        """Forward FLOPs: 2 per multiply-add, 1 per other arithmetic op (see layers/__init__)."""
        return 0

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        """What autograd keeps for backward in training mode (see layers/__init__)."""
        return SavedTensors()

    def scratch_bytes(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> int:
        """Memory a library kernel allocates and frees inside the layer's backward
        (cuDNN's RNN workspace): not saved, but part of the step's peak."""
        return 0

    def activation_bytes(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> int:
        return self.saved_tensors(bound, in_shape, out_shape, dtype_bytes).total

    def sample_shape(self, bound: BoundLayer) -> tuple[int, ...] | None:
        """One synthetic sample this layer takes as a model's first layer, when its arguments
        say it (`Linear(784, ...)`: (784,)); `load_dataset()` without a file makes such
        samples. None: the layer does not say."""
        return None

    def torch_class_of(self, bound: BoundLayer) -> str:
        """The class emitted code builds for these arguments (`torch_class` unless the
        arguments call for another: a causal `MultiHeadAttention` is `SelfAttention`)."""
        return self.torch_class

    def call_kind_of(self, bound: BoundLayer) -> CallKind:
        """How emitted code applies the layer built for these arguments."""
        return self.call_kind

    def runtime_module(self, bound: BoundLayer) -> str | None:
        """The runtime module (tensorloom/backends/runtime) that defines `torch_class_of`,
        when it is not PyTorch's own."""
        return None

    def torch_ctor(self, bound: BoundLayer) -> TorchCtor:
        """The constructor call exactly as written (less the init keywords, which
        `init_plan` emits), plus TensorLoom's forced keywords."""
        args = [py_literal(v) for v in bound.args]
        inits = self.init_keywords()
        kwargs = [(k, py_literal(v)) for k, v in bound.kwargs if k not in inits]
        given = {k for k, _ in bound.kwargs} | {
            p.name
            for p, _ in zip([p for p in self.params if not p.kw_only], bound.args, strict=False)
        }
        kwargs += [(k, v) for k, v in self.forced_kwargs if k not in given]
        return TorchCtor(self.torch_class_of(bound), args, kwargs)


# --- small helpers shared by the layer files ------------------------------------------------------


def _unknown_init(
    bound: BoundLayer, keyword: str, value: Value, choices: Sequence[str]
) -> ArgError:
    listed = ", ".join(f'"{c}"' for c in choices)
    guess = did_you_mean(value, choices) if isinstance(value, str) else None
    hint = f'did you mean "{guess}"?' if guess else f"`{keyword}` is one of {listed}"
    return bound.error(keyword, f"unknown init {py_literal(value)} for `{keyword}`", help=hint)


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


MAX_ARGUMENT = 2**31 - 1
"""The largest integer a layer argument may be: past it, a size is a typo, not a model
(and counting or allocating in proportion to it would take the checker down)."""
MAX_LAYER_PARAMS = 10**11
"""The most parameters one layer may have (100 billion: 400 GB in fp32)."""


def _absurd_sizes(bound: BoundLayer) -> list[ArgError]:
    errors: list[ArgError] = []
    for name, value in bound.values.items():
        items = value if isinstance(value, tuple | list) else (value,)
        big = next((v for v in items if _is_int(v) and abs(v) > MAX_ARGUMENT), None)
        if big is not None:
            limit = f"a layer argument can be at most {MAX_ARGUMENT:,}"
            errors.append(bound.error(name, f"`{name}` is {big:,}: {limit}"))
    return errors


def too_many_params(spec: LayerSpec, bound: BoundLayer) -> ArgError | None:
    """An error when the layer would have more than MAX_LAYER_PARAMS parameters."""
    count = spec.param_count(bound)
    if count <= MAX_LAYER_PARAMS:
        return None
    message = f"this layer would have {count:,} parameters (the most is {MAX_LAYER_PARAMS:,})"
    return ArgError(message, help="check its sizes")


def positive(bound: BoundLayer, *names: str) -> list[ArgError]:
    return [
        bound.error(n, f"`{n}` must be positive, got {bound[n]}")
        for n in names
        if isinstance(bound[n], int) and bound.get_int(n) <= 0
    ]


def positive_ints(bound: BoundLayer, name: str, n: int) -> list[ArgError]:
    if all(x > 0 for x in bound.get_ints(name, n)):
        return []
    return [bound.error(name, f"`{name}` must be positive, got {py_literal(bound[name])}")]


def non_negative_ints(bound: BoundLayer, name: str, n: int) -> list[ArgError]:
    if all(x >= 0 for x in bound.get_ints(name, n)):
        return []
    return [bound.error(name, f"`{name}` must not be negative, got {py_literal(bound[name])}")]


def probability(bound: BoundLayer, name: str) -> list[ArgError]:
    p = bound.get_float(name)
    if 0.0 <= p <= 1.0:
        return []
    return [bound.error(name, f"`{name}` must be between 0 and 1, got {py_literal(bound[name])}")]


def rank_error(expected: str, shape: tuple[Dim, ...]) -> ShapeMismatch:
    """`expects a 4-D [N, C, H, W] input, got [B, 784]`."""
    return mismatch(
        f"expects {expected} input, got {format_shape(shape)}", expected=expected, got=shape
    )


def feature_error(what: str, dim: int, expected: Dim, got: Dim) -> ShapeMismatch:
    """`expects 128 input features, got 256`, with `dim` naming the offending axis."""
    return mismatch(
        f"expects {format_dim(expected)} {what}, got {format_dim(got)}",
        expected=format_dim(expected),
        got=format_dim(got),
        dim=dim,
    )


def unify_feature(
    shape: tuple[Dim, ...], dim: int, expected: int, what: str, unifier: Unifier
) -> Dim | ShapeMismatch:
    """Unify `shape[dim]` with the size the layer was built for."""
    got = unifier.resolve(shape[dim])
    result = unifier.unify(expected, shape[dim])
    if isinstance(result, ShapeMismatch):
        return feature_error(what, dim - len(shape) if dim >= 0 else dim, expected, got)
    return result


def replace_dim(shape: tuple[Dim, ...], dim: int, value: Dim) -> tuple[Dim, ...]:
    dims = list(shape)
    dims[dim] = value
    return tuple(dims)
