"""resolve-nml's builders: a builtin call becomes its nml op.

    %y = nml.call "softmax"(%x, %c) {arg_names = ["", "dim"]}   # %c = nml.constant -1
    %y = nml.softmax %x dim -1

Each function's record (signature, summary, PyTorch spelling) is in
tensorloom/catalogue/functions.py; its `builder` names one of `BUILDERS` here,
run by `resolve-nml` on a call, as a function (`exp(x)`) or as a tensor method
(`x.exp()`). The shape rule is the built op's own `infer_shape`
(tensorloom/dialects/nml/builtins.py). Constant operands fold into the op's
properties. A builder returns the new op, or a `CallProblem` saying what is wrong
with the call (`softmax` without `dim`, a `dim` that is not a constant).
Semantics follow PyTorch except for one convenience: a *function* `flatten(x)`
keeps the batch dimension (`start_dim=1`, like `nn.Flatten`), while the *method*
`x.flatten()` flattens everything, as `torch.flatten` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.catalogue.args import Arg
from tensorloom.catalogue.functions import FUNCTIONS, Literal, Parameter
from tensorloom.dialects.nml import (
    COMPARE_OPS,
    DTYPES,
    DYNAMIC,
    PLAIN_OPS,
    UNARY_OPS,
    AmaxOp,
    AminOp,
    AnyType,
    ArangeOp,
    ArgmaxOp,
    ArgminOp,
    AttentionOp,
    CallOp,
    CastOp,
    CatOp,
    ChunkOp,
    ClampOp,
    ConstantOp,
    DimOp,
    DropoutOp,
    EinsumOp,
    ExpandOp,
    FlattenOp,
    GatherOp,
    GeluOp,
    GetAttrOp,
    IndexAddOp,
    ListOp,
    LogSoftmaxOp,
    MaskedFillOp,
    MatmulOp,
    MaxOp,
    MeanOp,
    MinOp,
    NarrowOp,
    NegOp,
    NonzeroOp,
    NormOp,
    OneHotOp,
    PadOp,
    PermuteOp,
    PowOp,
    RefOp,
    RepeatOp,
    ReshapeOp,
    ScatterAddOp,
    ScatterOp,
    SoftmaxOp,
    SplitOp,
    SqueezeOp,
    StackOp,
    StdOp,
    SumOp,
    TopkOp,
    VarOp,
    ViewOp,
    WhereOp,
)
from tensorloom.dialects.nml.builtins import LinspaceOp, MultinomialOp, SampleOp
from tensorloom.dialects.nml.losses import LOSSES, LossOp
from tensorloom.dialects.nml.types import CfgAttr, TensorType
from tensorloom.passes.support.model_env import (
    CallValue,
    configs_of,
    enclosing_model,
    evaluate,
    model_env,
)

Const = int | float | bool | str | None | list["Const"]
NAMESPACES = ("torch.nn.functional.", "nn.functional.", "F.", "torch.")


@dataclass(frozen=True, slots=True)
class CallProblem:
    """Why a builtin call cannot become its op; reported as TL0308 at the call."""

    message: str
    help: str | None = None


class _Missing:
    pass


MISSING = _Missing()


def constant_of(value: SSAValue) -> Const | _Missing:
    """The literal a value always holds: a constant, a negated one, a list of them."""
    op = value.owner
    if isinstance(op, ConstantOp):
        folded = evaluate(op.value, {})
        return MISSING if isinstance(folded, CallValue) or not _is_const(folded) else folded  # type: ignore[return-value]
    if isinstance(op, NegOp):
        inner = constant_of(op.input)
        return -inner if isinstance(inner, int | float) and not isinstance(inner, bool) else MISSING
    if isinstance(op, ListOp):
        items = [constant_of(v) for v in op.elements]
        return MISSING if any(isinstance(i, _Missing) for i in items) else items  # type: ignore[return-value]
    return MISSING


def _is_const(value: object) -> bool:
    return not hasattr(value, "message")


@dataclass(slots=True)
class CallArgs:
    """A call's operands split into the receiver/first value, positionals and keywords."""

    name: str
    method: bool
    positional: list[SSAValue]
    keywords: dict[str, SSAValue]

    @staticmethod
    def of(call: CallOp) -> CallArgs:
        positional: list[SSAValue] = []
        keywords: dict[str, SSAValue] = {}
        for value, name in zip(call.args, call.arg_names.data, strict=True):
            if name.data:
                keywords[name.data] = value
            else:
                positional.append(value)
        return CallArgs(
            builtin_name(call.callee.data), call.method is not None, positional, keywords
        )

    def value(self, index: int, keyword: str) -> SSAValue | None:
        """The argument at `index` or by `keyword` (`index` -1: keyword only)."""
        if 0 <= index < len(self.positional):
            return self.positional[index]
        return self.keywords.get(keyword)

    def const(
        self, index: int, keyword: str, default: Const | _Missing = MISSING
    ) -> Const | _Missing:
        value = self.value(index, keyword)
        return default if value is None else constant_of(value)

    def int_arg(self, index: int, keyword: str, default: int | None = None) -> int | CallProblem:
        value = self.const(index, keyword, MISSING if default is None else default)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if self.value(index, keyword) is None:
            return CallProblem(
                f"`{self.name}` needs the argument `{keyword}`",
                f"write `{self.name}({keyword}=-1)` to use the last dimension"
                if keyword == "dim"
                else None,
            )
        return CallProblem(f"`{keyword}` of `{self.name}` must be a constant integer")

    def unknown_keywords(self, allowed: Sequence[str]) -> CallProblem | None:
        extra = [k for k in self.keywords if k not in allowed]
        if not extra:
            return None
        accepted = ", ".join(f"`{a}`" for a in allowed) or "none"
        return CallProblem(
            f"`{self.name}` has no argument `{extra[0]}`", f"its keyword arguments are {accepted}"
        )


def builtin_name(callee: str) -> str:
    for prefix in NAMESPACES:
        if callee.startswith(prefix):
            return callee.removeprefix(prefix)
    return callee


Builder = Callable[[CallArgs], Operation | CallProblem]
UNKNOWN = AnyType()


def _tensor() -> Attribute:
    return TensorType.unranked()


def _first(args: CallArgs) -> SSAValue | CallProblem:
    if not args.positional:
        return CallProblem(f"`{args.name}` needs a tensor argument")
    return args.positional[0]


def _unary(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    problem = args.unknown_keywords(("inplace",) if args.name in ("relu", "silu") else ())
    return problem or _too_many(args, 1) or UNARY_OPS[args.name](x, _tensor())


def _too_many(args: CallArgs, limit: int) -> CallProblem | None:
    if len(args.positional) <= limit:
        return None
    spec = FUNCTIONS[args.name]
    return CallProblem(
        f"`{args.name}` takes {limit} positional argument{'s' if limit != 1 else ''}, "
        f"got {len(args.positional)}",
        f"the signature is `{spec.signature}`",
    )


def _gelu(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    approximate = args.const(1, "approximate", "none")
    if approximate not in ("none", "tanh"):
        return CallProblem(
            f'`approximate` of `gelu` must be "none" or "tanh", got `{approximate}`',
            'write `gelu(x, approximate="tanh")` for the tanh approximation',
        )
    problem = args.unknown_keywords(("approximate",)) or _too_many(args, 2)
    return problem or GeluOp(x, _tensor(), str(approximate))


def _number(args: CallArgs, index: int, keyword: str) -> float | CallProblem | None:
    value = args.const(index, keyword, None)
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return None if value is None else float(value)
    return CallProblem(f"`{keyword}` of `{args.name}` must be a constant number")


def _clamp(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    low, high = _number(args, 1, "min"), _number(args, 2, "max")
    for bound in (low, high):
        if isinstance(bound, CallProblem):
            return bound
    if low is None and high is None:
        return CallProblem("`clamp` needs `min`, `max` or both", "write `clamp(x, min=0.0)`")
    problem = args.unknown_keywords(("min", "max")) or _too_many(args, 3)
    return problem or ClampOp(x, low, high, _tensor())  # type: ignore[arg-type]


def _softmax(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.int_arg(1, "dim")
    if isinstance(dim, CallProblem):
        return dim
    problem = args.unknown_keywords(("dim", "dtype"))
    op = SoftmaxOp if args.name == "softmax" else LogSoftmaxOp
    return problem or op(x, dim, _tensor())


def config_rate(value: SSAValue | None) -> CfgAttr | CallProblem | None:
    """A dropout rate that is a config of the model (`dropout(x, p)`): `#nml.cfg<"p">`,
    its default checked in [0, 1) here and each override by resolve-nml; None when
    `value` is not a config."""
    op = value.owner if value is not None else None
    if not isinstance(op, RefOp):
        return None
    model = enclosing_model(op)
    name = op.symbol.root_reference.data
    if model is None or name not in configs_of(model):
        return None
    rate = model_env(model).get(name)
    if not isinstance(rate, int | float) or isinstance(rate, bool):
        return CallProblem(f"a dropout rate must be a number, got `{name}` = `{rate!r}`")
    if not 0.0 <= rate < 1.0:
        return CallProblem(f"a dropout rate must be in [0, 1), got `{name}` = {rate}")
    return CfgAttr.get(name)


def _dropout(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    rate = config_rate(args.value(1, "p"))
    if isinstance(rate, CallProblem):
        return rate
    p = args.const(1, "p", 0.5) if rate is None else 0.0
    if not isinstance(p, int | float) or isinstance(p, bool):
        return CallProblem("`p` of `dropout` must be a constant number or a config")
    if not 0.0 <= p < 1.0:
        return CallProblem(f"`dropout` probability must be in [0, 1), got {p}")
    problem = args.unknown_keywords(("p", "training", "inplace"))
    return problem or DropoutOp(x, rate or float(p), _tensor())


def _flatten(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    start = args.int_arg(1, "start_dim", 0 if args.method else 1)
    end = args.int_arg(2, "end_dim", -1)
    if isinstance(start, CallProblem):
        return start
    if isinstance(end, CallProblem):
        return end
    return args.unknown_keywords(("start_dim", "end_dim")) or FlattenOp(x, start, end, _tensor())


def _sizes(
    name: str, values: Sequence[SSAValue]
) -> tuple[list[Attribute], list[SSAValue]] | CallProblem:
    """Reshape sizes: constants fold, anything else is a `?` taken at run time."""
    if len(values) == 1 and isinstance(values[0].owner, ListOp):
        values = list(values[0].owner.elements)
    shape: list[Attribute] = []
    dynamic: list[SSAValue] = []
    for value in values:
        size = constant_of(value)
        if isinstance(size, int) and not isinstance(size, bool):
            shape.append(IntegerAttr(size, i64))
        elif not isinstance(size, _Missing):
            return CallProblem(f"`{name}` sizes must be integers, got `{size!r}`")
        else:
            shape.append(StringAttr(DYNAMIC))
            dynamic.append(value)
    return shape, dynamic


def _check_sizes(name: str, shape: list[Attribute]) -> CallProblem | None:
    sizes = [a.value.data for a in shape if isinstance(a, IntegerAttr)]
    if sizes.count(-1) > 1:
        return CallProblem(f"at most one size of `{name}` may be -1 (inferred)")
    negative = next((n for n in sizes if n < -1), None)
    if negative is not None:
        return CallProblem(f"`{name}` sizes must be -1 (inferred) or more, got {negative}")
    return None


def _reshape(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    sizes = args.positional[1:] or ([args.keywords["shape"]] if "shape" in args.keywords else [])
    if not sizes:
        return CallProblem(f"`{args.name}` needs the target shape")
    sizes = _sizes(args.name, sizes)
    if isinstance(sizes, CallProblem):
        return sizes
    shape, dynamic = sizes
    problem = _check_sizes(args.name, shape)
    if problem is not None:
        return problem
    op = ViewOp if args.name == "view" else ReshapeOp
    return op(x, shape, dynamic, _tensor())


def _permute(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dims = [constant_of(v) for v in args.positional[1:]]
    if len(dims) == 1 and isinstance(dims[0], list):
        dims = list(dims[0])
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        return CallProblem("`permute` needs the new order of dims as constant integers")
    order = [d for d in dims if isinstance(d, int)]
    normal = sorted(d % len(order) if -len(order) <= d < len(order) else d for d in order)
    if normal != list(range(len(order))):
        shown = ", ".join(str(d) for d in order)
        return CallProblem(f"`permute` dims ({shown}) are not a permutation of 0..{len(order) - 1}")
    return PermuteOp(x, order, _tensor())


def _reduce(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.const(1, "dim", None)
    keepdim = (
        args.const(2, "keepdim", False)
        if args.name not in ("var", "std")
        else args.const(-1, "keepdim", False)
    )
    if isinstance(dim, int) and not isinstance(dim, bool):
        dim = [dim]
    if not (dim is None or (isinstance(dim, list) and all(isinstance(d, int) for d in dim))):
        return CallProblem(f"`dim` of `{args.name}` must be a constant integer or list of them")
    if not isinstance(keepdim, bool):
        return CallProblem(f"`keepdim` of `{args.name}` must be `true` or `false`")
    dims = None if dim is None else [d for d in dim if isinstance(d, int)]
    if args.name in ("var", "std"):
        return _moment(args, x, dims, keepdim)
    op = {"mean": MeanOp, "sum": SumOp, "amax": AmaxOp, "amin": AminOp}[args.name]
    return args.unknown_keywords(("dim", "keepdim")) or op(x, dims, keepdim, _tensor())


def _moment(
    args: CallArgs, x: SSAValue, dims: list[int] | None, keepdim: bool
) -> Operation | CallProblem:
    correction = args.const(-1, "correction", None)
    unbiased = args.const(2, "unbiased", None)
    if isinstance(unbiased, bool):
        correction = int(unbiased)
    if correction is not None and not (isinstance(correction, int) and correction >= 0):
        return CallProblem(f"`correction` of `{args.name}` must be a constant integer >= 0")
    problem = args.unknown_keywords(("dim", "keepdim", "correction", "unbiased"))
    op = VarOp if args.name == "var" else StdOp
    return problem or op(x, dims, keepdim, _tensor(), correction)  # type: ignore[arg-type]


def _cat(args: CallArgs) -> Operation | CallProblem:
    tensors = _first(args)
    if isinstance(tensors, CallProblem):
        return tensors
    if not isinstance(tensors.owner, ListOp) or not tensors.owner.elements:
        return CallProblem(f"`{args.name}` needs a list of tensors, as in `cat([a, b], dim=1)`")
    dim = args.int_arg(1, "dim", 0)
    if isinstance(dim, CallProblem):
        return dim
    op = StackOp if args.name == "stack" else CatOp
    return args.unknown_keywords(("dim",)) or op(list(tensors.owner.elements), dim, _tensor())


def _matmul(args: CallArgs) -> Operation | CallProblem:
    if len(args.positional) != 2:
        return CallProblem(f"`matmul` takes 2 tensors, got {len(args.positional)}")
    return MatmulOp(args.positional[0], args.positional[1], _tensor())


def _pow(args: CallArgs) -> Operation | CallProblem:
    if len(args.positional) != 2:
        return CallProblem(
            f"`pow` takes a tensor and an exponent, got {len(args.positional)} positional "
            "argument" + ("s" if len(args.positional) != 1 else ""),
            "write `pow(x, 2)` or `x ** 2`",
        )
    return args.unknown_keywords(()) or PowOp(args.positional[0], args.positional[1], _tensor())


def _size(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.int_arg(1, "dim")
    return dim if isinstance(dim, CallProblem) else DimOp(x, dim)


def _squeeze(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.const(1, "dim", None)
    if isinstance(dim, int) and not isinstance(dim, bool):
        dim = [dim]
    if not (dim is None or (isinstance(dim, list) and all(isinstance(d, int) for d in dim))):
        return CallProblem("`dim` of `squeeze` must be a constant integer or list of them")
    dims = None if dim is None else [d for d in dim if isinstance(d, int)]
    return args.unknown_keywords(("dim",)) or SqueezeOp(x, dims, _tensor())


def _sized(args: CallArgs) -> Operation | CallProblem:
    """`x.expand(B, -1, -1)` and `x.repeat(1, 4)`: sizes as separate arguments or one list."""
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    sizes = args.positional[1:] or ([args.keywords["size"]] if "size" in args.keywords else [])
    if not sizes:
        return CallProblem(f"`{args.name}` needs the sizes, as in `x.{args.name}(B, -1)`")
    found = _sizes(args.name, sizes)
    if isinstance(found, CallProblem):
        return found
    shape, dynamic = found
    op = ExpandOp if args.name == "expand" else RepeatOp
    return op(x, shape, dynamic, _tensor())


def _split(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    what = "chunks" if args.name == "chunk" else "split_size_or_sections"
    size = args.const(1, what)
    dim = args.int_arg(2, "dim", 0)
    if isinstance(dim, CallProblem):
        return dim
    problem = args.unknown_keywords((what, "dim"))
    if problem is not None:
        return problem
    if args.name == "chunk":
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            return CallProblem("`chunks` of `chunk` must be a positive constant integer")
        return ChunkOp(x, size, dim, _tensor())
    value = args.value(1, what)
    if value is None or (isinstance(size, int | float) and (size <= 0 or isinstance(size, float))):
        return _split_problem()
    equal = not isinstance(value.owner, ListOp)
    found = _sizes(args.name, [value])
    if isinstance(found, CallProblem):
        return found
    shape, dynamic = found
    if isinstance(size, list) and not all(isinstance(v, int) and v >= 0 for v in size):
        return _split_problem()
    return SplitOp(x, shape, dynamic, equal, dim, _tensor())


def _split_problem() -> CallProblem:
    return CallProblem(
        "`split` needs a positive size or a list of sizes",
        "write `x.split(64, dim=-1)` or `x.split([64, 128], dim=-1)`",
    )


def _loss(args: CallArgs) -> Operation | CallProblem:
    """`cross_entropy(out, y, reduction="sum", label_smoothing=0.1)` (dialects/nml/losses.py)."""
    spec = LOSSES[args.name]
    if len(args.positional) != 2:
        return CallProblem(
            f"`{spec.function}` takes the output and the target, got {len(args.positional)} "
            "positional arguments",
            f"write `{spec.function}(out, y)`",
        )
    problem = args.unknown_keywords(("reduction", *spec.function_keywords))
    if problem is not None:
        return problem
    reduction = args.const(2, "reduction", "mean")
    if reduction not in spec.reductions:
        choices = ", ".join(f'`"{r}"`' for r in spec.reductions)
        return CallProblem(f"`reduction` of `{spec.function}` must be one of {choices}")
    options: dict[str, Attribute] = {}
    for arg in spec.function_args:
        attr = _loss_option(args, arg)
        if isinstance(attr, CallProblem):
            return attr
        if attr is not None:
            options[arg.name] = attr
    input, target = args.positional
    return LossOp(args.name, input, target, str(reduction), options, _tensor())


def _loss_option(args: CallArgs, arg: Arg) -> Attribute | CallProblem | None:
    """A functional loss's keyword, checked against its catalogue record."""
    if arg.name not in args.keywords:
        return None
    value = args.const(99, arg.name)
    problem = arg.problem(value)
    if problem is not None:
        return CallProblem(f"{problem} (in `{args.name}`)")
    if isinstance(value, bool):
        return IntegerAttr(int(value), 1)
    if arg.type == "int":
        assert isinstance(value, int)
        return IntegerAttr(value, i64)
    assert isinstance(value, int | float)
    return FloatAttr(float(value), 64)


def _plain(args: CallArgs) -> Operation | CallProblem:
    """A plain builtin, `normalize(x, p=1.0, dim=-1)`: each argument its catalogue record's
    signature names after the tensor is a constant of its default's type (a required one an
    integer), and becomes the property of that name on its op (`nml.PlainOp`)."""
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    parameters = FUNCTIONS[args.name].parameters[1:]
    constants: dict[str, Literal] = {}
    for index, parameter in enumerate(parameters, start=1):
        value = _plain_argument(args, index, parameter)
        if isinstance(value, CallProblem):
            return value
        constants[parameter.name] = value
    names = [p.name for p in parameters]
    problem = args.unknown_keywords(names) or _too_many(args, len(parameters) + 1)
    return problem or PLAIN_OPS[args.name](x, constants, _tensor())


def _plain_argument(args: CallArgs, index: int, parameter: Parameter) -> Literal | CallProblem:
    name, default = parameter.name, parameter.default
    if parameter.required:
        return args.int_arg(index, name)
    if isinstance(default, bool):
        return _flag(args, index, name, default)
    if isinstance(default, int):
        return args.int_arg(index, name, default)
    if isinstance(default, float):
        number = _number(args, index, name)
        return default if number is None else number
    value = args.const(index, name, default)
    if isinstance(value, str) or value is None:
        return value
    return CallProblem(f"`{name}` of `{args.name}` must be a constant string")


def _einsum(args: CallArgs) -> Operation | CallProblem:
    equation = args.const(0, "equation")
    if not isinstance(equation, str):
        return CallProblem(
            "`einsum` needs the equation as a string first", 'write `einsum("bij,bjk->bik", a, b)`'
        )
    operands = args.positional[1:]
    if len(operands) == 1 and isinstance(operands[0].owner, ListOp):
        operands = list(operands[0].owner.elements)
    if not operands:
        return CallProblem("`einsum` needs at least one tensor after the equation")
    return args.unknown_keywords(()) or EinsumOp(equation, operands, _tensor())


def _arange(args: CallArgs) -> Operation | CallProblem:
    given = args.positional or [v for k in ("start", "end") if (v := args.keywords.get(k))]
    if not 1 <= len(given) <= 3:
        return CallProblem(
            f"`arange` takes 1 to 3 arguments, got {len(given)}",
            "the forms are `arange(end)`, `arange(start, end)` and `arange(start, end, step)`",
        )
    if "step" in args.keywords:
        given = [*given, args.keywords["step"]]
    bounds, dynamic = _bounds(given)
    if len(given) == 1:
        bounds = [IntegerAttr(0, i64), bounds[0], IntegerAttr(1, i64)]
    elif len(given) == 2:
        bounds = [*bounds, IntegerAttr(1, i64)]
    problem = args.unknown_keywords(("start", "end", "step", "device", "dtype"))
    return problem or _arange_bounds_problem(bounds) or ArangeOp(bounds, dynamic, _tensor())


def _arange_bounds_problem(bounds: Sequence[Attribute]) -> CallProblem | None:
    """Constant bounds PyTorch rejects (pytorch_false_negatives/gen-6976: `arange(-0.5)`)."""
    values = [b.value.data for b in bounds if isinstance(b, IntegerAttr | FloatAttr)]
    if len(values) != 3:
        return None
    start, end, step = values
    if step == 0:
        return CallProblem("the step of `arange` must not be 0")
    if (end - start) * step < 0:
        return CallProblem(f"`arange` from {start} to {end} in steps of {step} never gets there")
    return None


def _bounds(values: Sequence[SSAValue]) -> tuple[list[Attribute], list[SSAValue]]:
    """arange's bounds: constant ints and floats fold, anything else is a `?`."""
    bounds: list[Attribute] = []
    dynamic: list[SSAValue] = []
    for value in values:
        const = constant_of(value)
        if isinstance(const, bool) or not isinstance(const, int | float):
            bounds.append(StringAttr(DYNAMIC))
            dynamic.append(value)
        elif isinstance(const, int):
            bounds.append(IntegerAttr(const, i64))
        else:
            bounds.append(FloatAttr(const, f64))
    return bounds, dynamic


_DISTRIBUTIONS = {"randn": "normal", "rand": "uniform", "randint": "integers"}


def _sample(args: CallArgs) -> Operation | CallProblem:
    """`randn(B, 16)` or `randn([B, 16])`, `rand(...)`, `randint(low, high, [B])`: a new
    tensor of samples, its sizes constants or run-time integers (`x.size(0)`)."""
    bounds: tuple[int, int] | None = None
    sizes = args.positional
    if args.name == "randint":
        found = _randint_bounds(args)
        if isinstance(found, CallProblem):
            return found
        bounds, sizes = found, args.positional[2:]
    sizes = sizes or ([args.keywords["size"]] if "size" in args.keywords else [])
    if not sizes:
        usage = "randint(0, 10, [B])" if args.name == "randint" else f"{args.name}([B, 16])"
        return CallProblem(f"`{args.name}` needs the sizes of its result", f"write `{usage}`")
    found_sizes = _sizes(args.name, sizes)
    if isinstance(found_sizes, CallProblem):
        return found_sizes
    shape, dynamic = found_sizes
    allowed = ("size", "low", "high", "device", "dtype")
    problem = args.unknown_keywords(allowed)
    return problem or SampleOp(_DISTRIBUTIONS[args.name], shape, dynamic, _tensor(), bounds)


def _randint_bounds(args: CallArgs) -> tuple[int, int] | CallProblem:
    low, high = args.const(0, "low"), args.const(1, "high")
    if isinstance(high, _Missing) and "high" not in args.keywords:
        return CallProblem(
            "`randint` takes low, high and the sizes", "write `randint(0, 1000, [x.size(0)])`"
        )
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)):
        return CallProblem("the bounds of `randint` must be constant integers")
    if low >= high:  # type: ignore[operator]
        return CallProblem(f"`randint` draws from [low, high): {low} is not below {high}")
    return low, high  # type: ignore[return-value]


def _linspace(args: CallArgs) -> Operation | CallProblem:
    start, end = _number(args, 0, "start"), _number(args, 1, "end")
    steps = args.int_arg(2, "steps")
    for value in (start, end, steps):
        if isinstance(value, CallProblem):
            return value
    if start is None or end is None:
        return CallProblem(
            "`linspace` takes start, end and steps", "write `linspace(1e-4, 0.02, 1000)`"
        )
    if steps < 0:  # type: ignore[operator]
        return CallProblem(f"`steps` of `linspace` must not be negative, got {steps}")
    problem = args.unknown_keywords(("start", "end", "steps", "device", "dtype"))
    return problem or _too_many(args, 3) or LinspaceOp(start, end, steps, _tensor())  # type: ignore[arg-type]


def _multinomial(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    count = args.int_arg(1, "num_samples")
    if isinstance(count, CallProblem):
        return count
    if count < 1:
        return CallProblem(f"`num_samples` of `multinomial` must be at least 1, got {count}")
    replacement = args.const(2, "replacement", False)
    if not isinstance(replacement, bool):
        return CallProblem("`replacement` of `multinomial` must be `true` or `false`")
    problem = args.unknown_keywords(("num_samples", "replacement")) or _too_many(args, 3)
    return problem or MultinomialOp(x, count, replacement, _tensor())


def _where(args: CallArgs) -> Operation | CallProblem:
    if len(args.positional) == 1:  # `where(chosen == i)`: the indices where it holds
        return args.unknown_keywords(()) or NonzeroOp(args.positional[0], _tensor())
    if len(args.positional) != 3:
        return CallProblem(
            f"`where` takes a condition and two values, got {len(args.positional)} arguments",
            "write `where(mask, a, b)`, or `where(mask)` for the indices where it holds",
        )
    cond, a, b = args.positional
    return args.unknown_keywords(()) or WhereOp(cond, a, b, _tensor())


def _nonzero(args: CallArgs) -> Operation | CallProblem:
    """`x.nonzero(as_tuple=true)`: `where(x)`; the `[n, ndim]` form is not typed."""
    x = args.value(0, "input")
    if x is None:
        return CallProblem("`nonzero` needs a tensor", "write `mask.nonzero(as_tuple=true)`")
    if args.const(1, "as_tuple", False) is not True:
        return CallProblem(
            "`nonzero` is typed in its tuple form only",
            "write `nonzero(mask, as_tuple=true)`, or `where(mask)`",
        )
    problem = args.unknown_keywords(("as_tuple",)) or _too_many(args, 2)
    return problem or NonzeroOp(x, _tensor())


def _masked_fill(args: CallArgs) -> Operation | CallProblem:
    x, mask, value = (args.value(i, k) for i, k in enumerate(("input", "mask", "value")))
    if x is None or mask is None or value is None:
        return CallProblem(
            "`masked_fill` needs a tensor, a mask and a value", "write `x.masked_fill(mask, 0.0)`"
        )
    return args.unknown_keywords(("mask", "value")) or MaskedFillOp(x, mask, value, _tensor())


def _attention(args: CallArgs) -> Operation | CallProblem:
    qkv = args.positional[:3]
    if len(qkv) != 3:
        return CallProblem(
            f"`{args.name}` takes q, k and v, got {len(qkv)} tensors",
            "write `scaled_dot_product_attention(q, k, v, causal=true)`",
        )
    mask = args.value(3, "attn_mask")
    causal = args.const(5, "causal", args.const(5, "is_causal", False))
    keyword = "dropout" if "dropout_p" not in args.keywords else "dropout_p"
    rate = config_rate(args.value(4, keyword))
    dropout = _number(args, 4, keyword) if rate is None else None
    scale = _number(args, 6, "scale")
    if not isinstance(causal, bool):
        return CallProblem(f"`causal` of `{args.name}` must be `true` or `false`")
    for number in (rate, dropout, scale):
        if isinstance(number, CallProblem):
            return number
    if isinstance(dropout, float) and not 0.0 <= dropout < 1.0:
        return CallProblem(f"`dropout` of `{args.name}` must be in [0, 1), got {dropout}")
    if causal and mask is not None:
        return CallProblem(
            f"`{args.name}` takes `attn_mask` or `causal=true`, not both",
            "fold the causal mask into `attn_mask`, or drop `attn_mask`",
        )
    allowed = ("attn_mask", "dropout", "dropout_p", "causal", "is_causal", "scale")
    problem = args.unknown_keywords(allowed) or _too_many(args, 4)
    rate = rate or dropout or 0.0
    return problem or AttentionOp(qkv, mask, causal, rate, scale, _tensor())  # type: ignore[arg-type]


# --- norm, pad, narrow, cumsum, casts, max/min, argmax, topk, one_hot, gather, scatter ---------


def _dims_arg(args: CallArgs, index: int) -> list[int] | CallProblem | None:
    """A `dim` that is none, a constant integer or a list of them."""
    dim = args.const(index, "dim", None)
    if isinstance(dim, int) and not isinstance(dim, bool):
        return [dim]
    if dim is None or (isinstance(dim, list) and all(_is_int(d) for d in dim)):
        return dim  # type: ignore[return-value]
    return CallProblem(f"`dim` of `{args.name}` must be a constant integer or list of them")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _flag(args: CallArgs, index: int, keyword: str, default: bool) -> bool | CallProblem:
    value = args.const(index, keyword, default)
    if isinstance(value, bool):
        return value
    return CallProblem(f"`{keyword}` of `{args.name}` must be `true` or `false`")


def _norm(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    order = _number(args, 1, "ord" if "ord" in args.keywords else "p")
    dims, keepdim = _dims_arg(args, 2), _flag(args, 3, "keepdim", False)
    for found in (order, dims, keepdim):
        if isinstance(found, CallProblem):
            return found
    problem = args.unknown_keywords(("p", "ord", "dim", "keepdim")) or _too_many(args, 4)
    p = 2.0 if order is None else order
    return problem or NormOp(x, p, dims, keepdim, _tensor())  # type: ignore[arg-type]


def _pad(args: CallArgs) -> Operation | CallProblem:
    x, pads = _first(args), args.value(1, "pad")
    if isinstance(x, CallProblem):
        return x
    if pads is None or not isinstance(pads.owner, ListOp) or not pads.owner.elements:
        return CallProblem(
            "`pad` needs the pads as a list of (left, right) pairs, the last dim's first",
            "write `pad(x, [1, 1, 2, 2])` to pad the last dim by 1 and the one before by 2",
        )
    found = _sizes("pad", [pads])
    if isinstance(found, CallProblem):
        return found
    shape, dynamic = found
    if len(shape) % 2:
        return CallProblem(
            f"`pad` takes (left, right) pairs, got {len(shape)} pads",
            "give two pads per padded dim, the last dim's first",
        )
    mode, value = args.const(2, "mode", "constant"), _number(args, 3, "value")
    if mode not in PadOp.MODES:
        choices = ", ".join(f'`"{m}"`' for m in PadOp.MODES)
        return CallProblem(f"`mode` of `pad` must be one of {choices}")
    if isinstance(value, CallProblem):
        return value
    problem = args.unknown_keywords(("pad", "mode", "value")) or _too_many(args, 4)
    return problem or PadOp(x, shape, dynamic, str(mode), value, _tensor())


def _narrow(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim, start, length = args.int_arg(1, "dim"), args.value(2, "start"), args.int_arg(3, "length")
    if isinstance(dim, CallProblem):
        return dim
    if isinstance(length, CallProblem) or start is None:
        return CallProblem(
            "`narrow` needs a dim, a start (it may be computed) and a constant length",
            "write `x.narrow(1, i, 4)`",
        )
    if length < 0:
        return CallProblem(f"the length of `narrow` must not be negative, got {length}")
    known = constant_of(start)
    first: int | SSAValue = known if _is_int(known) else start  # type: ignore[assignment]
    problem = args.unknown_keywords(("dim", "start", "length")) or _too_many(args, 4)
    return problem or NarrowOp(x, dim, first, length, _tensor())


def _cast(args: CallArgs) -> Operation | CallProblem:
    """`x.long()`, `x.float()`, `x.to(torch.int64)`: the element type is the op's."""
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    if not args.method:
        example = "x.to(torch.float32)" if args.name == "to" else f"x.{args.name}()"
        return CallProblem(f"`{args.name}` is a tensor method", f"write `{example}`")
    if args.name != "to":
        return _too_many(args, 1) or CastOp(x, DTYPES[args.name], _tensor())
    dtype = _dtype_named(args.value(1, "dtype"))
    if dtype is None:
        return CallProblem(
            "`to` takes a dtype: one of "
            + ", ".join(f"`torch.{d}`" for d in DTYPES if d not in ("float", "half", "long")),
            "write `x.to(torch.float32)`",
        )
    return args.unknown_keywords(("dtype",)) or _too_many(args, 2) or CastOp(x, dtype, _tensor())


def _dtype_named(value: SSAValue | None) -> str | None:
    """`torch.int64` as the element type it names (`i64`), else None."""
    if value is None or not isinstance(value.owner, GetAttrOp):
        return None
    base = value.owner.input.owner
    if not isinstance(base, RefOp) or base.symbol.root_reference.data != "torch":
        return None
    return DTYPES.get(value.owner.attr_name.data)


def is_dtype_name(op: Operation) -> bool:
    """`torch.float32` (a getattr of the name `torch`), which a cast folded away."""
    if isinstance(op, RefOp):
        return op.symbol.root_reference.data == "torch" and all(
            isinstance(use.operation, GetAttrOp) for use in op.result.uses
        )
    return isinstance(op, GetAttrOp) and _dtype_named(op.result) is not None


def _extremum(args: CallArgs) -> Operation | CallProblem:
    """`x.max()` is the largest element; `x.max(dim=1)` the pair (values, indices)."""
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim, keepdim = args.const(1, "dim", None), _flag(args, 2, "keepdim", False)
    if isinstance(keepdim, CallProblem):
        return keepdim
    problem = args.unknown_keywords(("dim", "keepdim")) or _too_many(args, 3)
    if problem is not None:
        return problem
    if dim is None:
        op = AmaxOp if args.name == "max" else AminOp
        return op(x, None, False, _tensor())
    if not _is_int(dim):
        other = "maximum" if args.name == "max" else "minimum"
        return CallProblem(
            f"`dim` of `{args.name}` must be a constant integer",
            f"for the elementwise {other} of two tensors write `where(a > b, a, b)`"
            if args.name == "max"
            else f"for the elementwise {other} of two tensors write `where(a < b, a, b)`",
        )
    op = MaxOp if args.name == "max" else MinOp
    return op(x, dim, keepdim, _tensor())  # type: ignore[arg-type]


def _arg_reduce(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim, keepdim = args.const(1, "dim", None), _flag(args, 2, "keepdim", False)
    if dim is not None and not _is_int(dim):
        return CallProblem(f"`dim` of `{args.name}` must be a constant integer")
    if isinstance(keepdim, CallProblem):
        return keepdim
    op = ArgmaxOp if args.name == "argmax" else ArgminOp
    problem = args.unknown_keywords(("dim", "keepdim")) or _too_many(args, 3)
    return problem or op(x, dim, keepdim, _tensor())  # type: ignore[arg-type]


def _topk(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    given, dim = args.value(1, "k"), args.int_arg(2, "dim", -1)
    if given is None:
        return CallProblem("`topk` needs the argument `k`", "write `x.topk(2, dim=-1)`")
    known = constant_of(given)  # else computed: a config, `x.size(1) // 2`
    k: int | SSAValue | CallProblem = known if _is_int(known) else given  # type: ignore[assignment]
    if not isinstance(known, _Missing) and not _is_int(known):
        k = CallProblem("`k` of `topk` must be an integer")
    largest, ordered = _flag(args, 3, "largest", True), _flag(args, 4, "sorted", True)
    for found in (k, dim, largest, ordered):
        if isinstance(found, CallProblem):
            return found
    if isinstance(k, int) and k < 0:
        return CallProblem(f"`k` of `topk` must not be negative, got {k}")
    if ordered is False:
        return CallProblem(
            "`topk` gives its values sorted", "leave out `sorted=false`: the order is then defined"
        )
    problem = args.unknown_keywords(("k", "dim", "largest", "sorted")) or _too_many(args, 5)
    return problem or TopkOp(x, k, dim, not largest, _tensor())  # type: ignore[arg-type]


def _one_hot(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    classes = args.int_arg(1, "num_classes")
    if isinstance(classes, CallProblem) or classes <= 0:
        return CallProblem(
            "`one_hot` needs `num_classes`, a positive constant: the number of classes is the "
            "size of the new dim",
            "write `one_hot(ids, num_classes=10)`",
        )
    problem = args.unknown_keywords(("num_classes",)) or _too_many(args, 2)
    return problem or OneHotOp(x, classes, _tensor())


def _gather(args: CallArgs) -> Operation | CallProblem:
    x, dim, index = _first(args), args.int_arg(1, "dim"), args.value(2, "index")
    if isinstance(x, CallProblem):
        return x
    if isinstance(dim, CallProblem):
        return dim
    if index is None:
        return CallProblem("`gather` needs the index", "write `x.gather(1, index)`")
    problem = args.unknown_keywords(("dim", "index")) or _too_many(args, 3)
    return problem or GatherOp(x, index, dim, _tensor())


def _scatter(args: CallArgs) -> Operation | CallProblem:
    x, dim, index = _first(args), args.int_arg(1, "dim"), args.value(2, "index")
    source_name = "source" if args.name == "index_add" else "src"
    source = args.value(3, source_name)
    if args.name == "scatter" and source is None:
        source = args.keywords.get("value")
    if isinstance(x, CallProblem):
        return x
    if isinstance(dim, CallProblem):
        return dim
    if index is None or source is None:
        return CallProblem(
            f"`{args.name}` needs a dim, an index and a `{source_name}`",
            f"write `x.{args.name}(1, index, {source_name})`",
        )
    allowed = ("dim", "index", source_name, *(("value",) if args.name == "scatter" else ()))
    problem = args.unknown_keywords(allowed) or _too_many(args, 4)
    op = {"scatter": ScatterOp, "scatter_add": ScatterAddOp, "index_add": IndexAddOp}[args.name]
    return problem or op(x, index, source, dim, _tensor())


BUILDERS: dict[str, Builder] = {
    "unary": _unary,
    "gelu": _gelu,
    "clamp": _clamp,
    "softmax": _softmax,
    "dropout": _dropout,
    "flatten": _flatten,
    "reshape": _reshape,
    "permute": _permute,
    "reduce": _reduce,
    "cat": _cat,
    "split": _split,
    "sized": _sized,
    "squeeze": _squeeze,
    "plain": _plain,
    "einsum": _einsum,
    "arange": _arange,
    "sample": _sample,
    "linspace": _linspace,
    "multinomial": _multinomial,
    "where": _where,
    "nonzero": _nonzero,
    "masked_fill": _masked_fill,
    "matmul": _matmul,
    "size": _size,
    "attention": _attention,
    "loss": _loss,
    "pow": _pow,
    "norm": _norm,
    "pad": _pad,
    "narrow": _narrow,
    "cast": _cast,
    "extremum": _extremum,
    "arg_reduce": _arg_reduce,
    "topk": _topk,
    "one_hot": _one_hot,
    "gather": _gather,
    "scatter": _scatter,
}
"""resolve-nml's builders, by the name a catalogue record's `builder` gives."""


BUILTINS = FUNCTIONS


def build_builtin(call: CallOp) -> Operation | CallProblem | None:
    """The op for a builtin call; None when `call` names no builtin."""
    args = CallArgs.of(call)
    if args.name in COMPARE_OPS and len(args.positional) == 2 and not args.method:
        return COMPARE_OPS[args.name](args.positional[0], args.positional[1], _tensor())
    if args.method and args.name == "size" and len(args.positional) == 1:
        return None
    spec = FUNCTIONS.get(args.name)
    if spec is None or (args.method and not spec.method):
        return None
    return BUILDERS[spec.builder](args)
