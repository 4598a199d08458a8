"""How resolve-nml turns a builtin call into its nml op: it asks the op class.

    %y = nml.call "softmax"(%x, %c) {arg_names = ["", "dim"]}   # %c = nml.constant -1
    %y = nml.softmax %x dim -1

Each function's record (signature, summary, PyTorch spelling) is in
tensorloom/catalogue/functions.py; the op class that names the record (its `FUNCTION`
or `RECORDS`, tensorloom/dialects/nml/builtins.py's `OP_OF_RECORD`) builds the op from
the call with its `from_call`, as a function (`exp(x)`) or as a tensor method
(`x.exp()`), or says what is wrong with the call (a `CallProblem`: `softmax` without
`dim`, a `dim` that is not a constant). What this module adds is what the pass knows
of a value: the constant it always holds (`constant_of`) and the model config it names
(`config_rate`). Nothing here is keyed by a builtin's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.dialects.nml import COMPARE_OPS, ConstantOp, GetAttrOp, ListOp, NegOp, RefOp
from tensorloom.dialects.nml.builtins import OP_OF_RECORD
from tensorloom.dialects.nml.calls import (
    MISSING,
    CallArgs,
    CallProblem,
    Const,
    Missing,
    builtin_name,
    unknown_type,
)
from tensorloom.dialects.nml.ops import CallOp
from tensorloom.dialects.nml.tensor_ops import dtype_named
from tensorloom.dialects.nml.types import CfgAttr
from tensorloom.passes.support.model_env import (
    CallValue,
    configs_of,
    enclosing_model,
    evaluate,
    model_env,
)

__all__ = ["BUILTINS", "MISSING", "CallProblem", "build_builtin", "builtin_name", "constant_of"]


def constant_of(value: SSAValue) -> Const | Missing:
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
        return MISSING if any(isinstance(i, Missing) for i in items) else items  # type: ignore[return-value]
    return MISSING


def _is_const(value: object) -> bool:
    return not hasattr(value, "message")


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


@dataclass(frozen=True, slots=True)
class _Folding:
    """What this pass knows of a call's values, as the op classes ask it (`Folding`)."""

    def constant_of(self, value: SSAValue) -> Const | Missing:
        return constant_of(value)

    def config_rate(self, value: SSAValue | None) -> CfgAttr | CallProblem | None:
        return config_rate(value)


def call_args(call: CallOp) -> CallArgs:
    """A call's operands split into positionals and keywords, for its op's `from_call`."""
    positional: list[SSAValue] = []
    keywords: dict[str, SSAValue] = {}
    for value, name in zip(call.args, call.arg_names.data, strict=True):
        if name.data:
            keywords[name.data] = value
        else:
            positional.append(value)
    name = builtin_name(call.callee.data)
    return CallArgs(name, call.method is not None, positional, keywords, _Folding())


BUILTINS = FUNCTIONS


def build_builtin(call: CallOp) -> Operation | CallProblem | None:
    """The op for a builtin call; None when `call` names no builtin."""
    args = call_args(call)
    if args.name in COMPARE_OPS and len(args.positional) == 2 and not args.method:
        return COMPARE_OPS[args.name](args.positional[0], args.positional[1], unknown_type())
    if args.method and args.name == "size" and len(args.positional) == 1:
        return None
    spec = FUNCTIONS.get(args.name)
    if spec is None or (args.method and not spec.method):
        return None
    return OP_OF_RECORD[spec.name].from_call(args)


def is_dtype_name(op: Operation) -> bool:
    """`torch.float32` (a getattr of the name `torch`), which a cast folded away."""
    if isinstance(op, RefOp):
        return op.symbol.root_reference.data == "torch" and all(
            isinstance(use.operation, GetAttrOp) for use in op.result.uses
        )
    return isinstance(op, GetAttrOp) and dtype_named(op.result) is not None
