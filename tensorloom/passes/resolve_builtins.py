"""The functional builtins `resolve-nml` knows: a call by name becomes its op.

    %y = nml.call "softmax"(%x, %c) {arg_names = ["", "dim"]}   # %c = nml.constant -1
    %y = nml.softmax %x dim -1

Constant operands fold into the op's properties. Each builder takes the call's
arguments and returns the new op, or a `CallProblem` saying what is wrong with
the call (`softmax` without `dim`, a `dim` that is not a constant). Semantics
follow PyTorch except for one convenience: a *function* `flatten(x)` keeps the
batch dimension (`start_dim=1`, like `nn.Flatten`), while the *method*
`x.flatten()` flattens everything, as `torch.flatten` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.dialects.nml import (
    DYNAMIC,
    UNARY_OPS,
    AnyType,
    CallOp,
    CatOp,
    ConstantOp,
    DimOp,
    DropoutOp,
    FlattenOp,
    IndexOp,
    ListOp,
    LogSoftmaxOp,
    MatmulOp,
    MeanOp,
    NegOp,
    NoneValueAttr,
    PermuteOp,
    ReshapeOp,
    SoftmaxOp,
    SumOp,
    TransposeOp,
    ViewOp,
)
from tensorloom.dialects.nml.types import TensorType
from tensorloom.passes.model_env import CallValue, evaluate

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
        if index < len(self.positional):
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
    problem = args.unknown_keywords(("inplace", "approximate"))
    return problem or UNARY_OPS[args.name](x, _tensor())


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


def _dropout(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    p = args.const(1, "p", 0.5)
    if not isinstance(p, int | float) or isinstance(p, bool):
        return CallProblem("`p` of `dropout` must be a constant number")
    if not 0.0 <= p < 1.0:
        return CallProblem(f"`dropout` probability must be in [0, 1), got {p}")
    problem = args.unknown_keywords(("p", "training", "inplace"))
    return problem or DropoutOp(x, float(p), _tensor())


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
    return _check_sizes(name, shape) or (shape, dynamic)


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


def _transpose(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim0, dim1 = args.int_arg(1, "dim0"), args.int_arg(2, "dim1")
    if isinstance(dim0, CallProblem):
        return dim0
    if isinstance(dim1, CallProblem):
        return dim1
    return TransposeOp(x, dim0, dim1, _tensor())


def _reduce(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.const(1, "dim", None)
    keepdim = args.const(2, "keepdim", False)
    if isinstance(dim, int) and not isinstance(dim, bool):
        dim = [dim]
    if not (dim is None or (isinstance(dim, list) and all(isinstance(d, int) for d in dim))):
        return CallProblem(f"`dim` of `{args.name}` must be a constant integer or list of them")
    if not isinstance(keepdim, bool):
        return CallProblem(f"`keepdim` of `{args.name}` must be `true` or `false`")
    dims = None if dim is None else [d for d in dim if isinstance(d, int)]
    op = MeanOp if args.name == "mean" else SumOp
    return args.unknown_keywords(("dim", "keepdim")) or op(x, dims, keepdim, _tensor())


def _cat(args: CallArgs) -> Operation | CallProblem:
    tensors = _first(args)
    if isinstance(tensors, CallProblem):
        return tensors
    if not isinstance(tensors.owner, ListOp) or not tensors.owner.elements:
        return CallProblem(f"`{args.name}` needs a list of tensors, as in `cat([a, b], dim=1)`")
    dim = args.int_arg(1, "dim", 0)
    if isinstance(dim, CallProblem):
        return dim
    return CatOp(list(tensors.owner.elements), dim, _tensor())


def _matmul(args: CallArgs) -> Operation | CallProblem:
    if len(args.positional) != 2:
        return CallProblem(f"`matmul` takes 2 tensors, got {len(args.positional)}")
    return MatmulOp(args.positional[0], args.positional[1], _tensor())


def _size(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.int_arg(1, "dim")
    return dim if isinstance(dim, CallProblem) else DimOp(x, dim)


def _unsqueeze(args: CallArgs) -> Operation | CallProblem:
    x = _first(args)
    if isinstance(x, CallProblem):
        return x
    dim = args.int_arg(1, "dim")
    if isinstance(dim, CallProblem):
        return dim
    if dim < 0:
        return CallProblem("`unsqueeze` needs a non-negative `dim` here", "count dims from 0")
    return IndexOp(x, [StringAttr(":")] * dim + [NoneValueAttr()], [], _tensor())


BUILTINS: dict[str, Builder] = {
    **{name: _unary for name in UNARY_OPS if name != "neg"},
    "softmax": _softmax,
    "log_softmax": _softmax,
    "dropout": _dropout,
    "flatten": _flatten,
    "reshape": _reshape,
    "view": _reshape,
    "permute": _permute,
    "transpose": _transpose,
    "mean": _reduce,
    "sum": _reduce,
    "cat": _cat,
    "concat": _cat,
    "matmul": _matmul,
    "size": _size,
    "unsqueeze": _unsqueeze,
}
"""Every builtin function or tensor method a forward may call, by name."""


def build_builtin(call: CallOp) -> Operation | CallProblem | None:
    """The op for a builtin call; None when `call` names no builtin."""
    args = CallArgs.of(call)
    if args.method and args.name == "size" and len(args.positional) == 1:
        return None
    builder = BUILTINS.get(args.name)
    if builder is None:
        return None
    return builder(args)
