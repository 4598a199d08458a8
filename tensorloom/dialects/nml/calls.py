"""A builtin call's arguments, as the op class it names reads them to build itself.

    %y = nml.call "softmax"(%x, %c) {arg_names = ["", "dim"]}   # %c = nml.constant -1
    SoftmaxOp.from_call(CallArgs.of(call, folding))  # -> nml.softmax %x dim -1

resolve-nml finds the op class of a call through the call's catalogue record
(tensorloom/catalogue/functions.py: the record's name is the op's `FUNCTION`, or one
of its `RECORDS`) and hands it the call's arguments, split into positionals and
keywords. The op's `from_call` checks them and returns the new op or a `CallProblem`
(reported as TL0308 at the call), as JAX keeps a primitive's rules with the primitive.
What a value folds to (a constant, a model's config) is the pass's to say: it passes a
`Folding`, so this module sees only ops of the nml dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.dialects.nml.types import CfgAttr, TensorType

Const = int | float | bool | str | None | list["Const"]
DYNAMIC = "?"
NAMESPACES = ("torch.nn.functional.", "nn.functional.", "F.", "torch.")


@dataclass(frozen=True, slots=True)
class CallProblem:
    """Why a builtin call cannot become its op; reported as TL0308 at the call."""

    message: str
    help: str | None = None


class Missing:
    """No constant: the argument is not given, or its value is known only at run time."""


MISSING = Missing()


class Folding(Protocol):
    """What resolve-nml knows of a value: the literal it always holds, and the model
    config (a dropout rate) it names."""

    def constant_of(self, value: SSAValue) -> Const | Missing: ...

    def config_rate(self, value: SSAValue | None) -> CfgAttr | CallProblem | None: ...


def builtin_name(callee: str) -> str:
    """`F.gelu` and `torch.exp` are the builtins `gelu` and `exp`."""
    for prefix in NAMESPACES:
        if callee.startswith(prefix):
            return callee.removeprefix(prefix)
    return callee


def unknown_type() -> Attribute:
    """A built op's result type until shape inference refines it."""
    return TensorType.unranked()


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(slots=True)
class CallArgs:
    """A call's operands split into the receiver/first value, positionals and keywords."""

    name: str
    method: bool
    positional: list[SSAValue]
    keywords: dict[str, SSAValue]
    folding: Folding

    def value(self, index: int, keyword: str) -> SSAValue | None:
        """The argument at `index` or by `keyword` (`index` -1: keyword only)."""
        if 0 <= index < len(self.positional):
            return self.positional[index]
        return self.keywords.get(keyword)

    def constant_of(self, value: SSAValue) -> Const | Missing:
        return self.folding.constant_of(value)

    def config_rate(self, value: SSAValue | None) -> CfgAttr | CallProblem | None:
        return self.folding.config_rate(value)

    def const(
        self, index: int, keyword: str, default: Const | Missing = MISSING
    ) -> Const | Missing:
        value = self.value(index, keyword)
        return default if value is None else self.constant_of(value)

    def first(self) -> SSAValue | CallProblem:
        """The tensor the builtin works on: the receiver of a method, else the first argument."""
        if not self.positional:
            return CallProblem(f"`{self.name}` needs a tensor argument")
        return self.positional[0]

    def int_arg(self, index: int, keyword: str, default: int | None = None) -> int | CallProblem:
        value = self.const(index, keyword, MISSING if default is None else default)
        if is_int(value):
            return value  # type: ignore[return-value]
        if self.value(index, keyword) is None:
            return CallProblem(
                f"`{self.name}` needs the argument `{keyword}`",
                f"write `{self.name}({keyword}=-1)` to use the last dimension"
                if keyword == "dim"
                else None,
            )
        return CallProblem(f"`{keyword}` of `{self.name}` must be a constant integer")

    def number(self, index: int, keyword: str) -> float | CallProblem | None:
        """A constant number (an int widens to float); None when it is not given."""
        value = self.const(index, keyword, None)
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return None if value is None else float(value)
        return CallProblem(f"`{keyword}` of `{self.name}` must be a constant number")

    def flag(self, index: int, keyword: str, default: bool) -> bool | CallProblem:
        value = self.const(index, keyword, default)
        if isinstance(value, bool):
            return value
        return CallProblem(f"`{keyword}` of `{self.name}` must be `true` or `false`")

    def dims(self, index: int) -> list[int] | CallProblem | None:
        """A `dim` that is none, a constant integer or a list of them."""
        dim = self.const(index, "dim", None)
        if is_int(dim):
            return [dim]  # type: ignore[list-item]
        if dim is None or (isinstance(dim, list) and all(is_int(d) for d in dim)):
            return dim  # type: ignore[return-value]
        return CallProblem(f"`dim` of `{self.name}` must be a constant integer or list of them")

    def sizes(
        self, values: Sequence[SSAValue]
    ) -> tuple[list[Attribute], list[SSAValue]] | CallProblem:
        """Sizes (of a reshape, a sample, pads): constants fold, anything else is a `?`
        taken at run time; one list argument is its elements."""
        owner = values[0].owner if len(values) == 1 else None
        if isinstance(owner, Operation) and owner.name == "nml.list":
            values = list(owner.operands)
        shape: list[Attribute] = []
        dynamic: list[SSAValue] = []
        for value in values:
            size = self.constant_of(value)
            if is_int(size):
                shape.append(IntegerAttr(size, i64))  # type: ignore[arg-type]
            elif not isinstance(size, Missing):
                return CallProblem(f"`{self.name}` sizes must be integers, got `{size!r}`")
            else:
                shape.append(StringAttr(DYNAMIC))
                dynamic.append(value)
        return shape, dynamic

    def unknown_keywords(self, allowed: Sequence[str]) -> CallProblem | None:
        extra = [k for k in self.keywords if k not in allowed]
        if not extra:
            return None
        accepted = ", ".join(f"`{a}`" for a in allowed) or "none"
        return CallProblem(
            f"`{self.name}` has no argument `{extra[0]}`", f"its keyword arguments are {accepted}"
        )

    def too_many(self, limit: int) -> CallProblem | None:
        if len(self.positional) <= limit:
            return None
        spec = FUNCTIONS[self.name]
        return CallProblem(
            f"`{self.name}` takes {limit} positional argument{'s' if limit != 1 else ''}, "
            f"got {len(self.positional)}",
            f"the signature is `{spec.signature}`",
        )

    def rest(self, allowed: Sequence[str], limit: int) -> CallProblem | None:
        """The last checks of most builtins: no unknown keyword, at most `limit` positionals."""
        return self.unknown_keywords(allowed) or self.too_many(limit)
