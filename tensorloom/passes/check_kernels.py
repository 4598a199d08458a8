"""`check-kernels`: the static checks on `@kernel def` bodies, each a diagnostic.

1. TL0501: a name read before any `let`, parameter or loop binds it, or a
   call of a function that is neither a `tl.` function nor a builtin Triton
   accepts (`min`, `max`, `abs`, `float`, `int`, `range`, ...).
2. TL0502: a `tl.` member the installed `triton.language` does not have.
3. TL0503: a `tl.` call with too many or too few arguments, or an unknown keyword.
4. TL0504: a constexpr default that is not a power of two where Triton needs one
   (a `tl.arange` bound).
5. TL0505 (warning): a `tl.load` with neither `mask=` nor `boundary_check=`.

    @kernel def k(x_ptr, n, BLOCK: tl.constexpr = 1000):
                            ^^^^^^^^^^^^^^^^^^^^^^^^^^ error[TL0504]
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.core import did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects import kernel
from tensorloom.passes.support.prerequisites import TLPass, has_kernels
from tensorloom.passes.support.tl_catalog import Catalog, Signature, installed

KERNEL_BUILTINS = (
    "min",
    "max",
    "abs",
    "float",
    "int",
    "bool",
    "range",
    "len",
    "print",
    "isinstance",
    "getattr",
    "tuple",
)


class _NameCheck:
    """Step 1, in program order: what is bound when each read runs."""

    def __init__(self, func: kernel.FuncOp) -> None:
        self.func = func
        self.bound = set(func.params())
        self.reported: set[str] = set()

    def run(self) -> None:
        for op in self.func.walk():
            if isinstance(op, kernel.ReadOp):
                self._read(op)
            elif isinstance(op, kernel.LetOp | kernel.ForOp):
                self.bound.add(op.var.data)
            elif isinstance(op, kernel.CallOp):
                self._call(op)

    def _read(self, op: kernel.ReadOp) -> None:
        name = op.var.data
        if name in self.bound or name in self.reported:
            return
        self.reported.add(name)
        guess = did_you_mean(name, self.bound)
        report(
            Diagnostic.error(
                "TL0501",
                f"undefined name `{name}` in kernel `{self.func.sym_name.data}`",
                span_at(op),
                help=f"did you mean `{guess}`?" if guess else "bind it with `let` before this line",
            )
        )

    def _call(self, op: kernel.CallOp) -> None:
        name = op.callee.data
        if name in KERNEL_BUILTINS:
            return
        report(
            Diagnostic.error(
                "TL0501",
                f"undefined function `{name}` in a kernel",
                span_at(op),
                help="kernels can call `tl.` functions and "
                f"{', '.join(f'`{b}`' for b in KERNEL_BUILTINS[:5])}",
            )
        )


def _check_member(op: Operation, member: str, catalog: Catalog) -> Signature | None:
    """Step 2: the signature of `tl.<member>`, or a diagnostic."""
    if isinstance(op, kernel.TlAttrOp) and catalog.knows(member):
        return None
    signature = catalog.functions.get(member)
    if signature is not None:
        return signature
    guess = did_you_mean(
        member,
        catalog.functions
        if isinstance(op, kernel.TlCallOp)
        else [*catalog.functions, *catalog.names],
    )
    what = "function" if member not in catalog.names else "callable function"
    report(
        Diagnostic.error(
            "TL0502",
            f"`tl.{member}` is not a {what} of triton.language",
            span_at(op),
            help=f"did you mean `tl.{guess}`?" if guess else None,
        )
    )
    return None


def _check_arity(
    op: kernel.TlCallOp | kernel.LoadOp | kernel.StoreOp, member: str, signature: Signature
) -> None:
    """Step 3: positional count, required parameters, keyword names."""
    names = op.names()
    positional = names.count("")
    limit = signature.max_positional()
    problem: str | None = None
    if limit is not None and positional > limit:
        problem = (
            f"takes at most {limit} positional argument{'s' if limit != 1 else ''} "
            f"but {positional} were given"
        )
    unknown = [n for n in names if n and n not in signature.keywords]
    if unknown:
        problem = f"has no parameter `{unknown[0]}`"
    given = set(signature.positional[:positional]) | {n for n in names if n}
    missing = [p for p in signature.positional[: signature.required] if p not in given]
    if problem is None and missing:
        problem = f"is missing the argument `{missing[0]}`"
    if problem is not None:
        shown = ", ".join(signature.positional) + (", *args" if signature.varargs else "")
        report(
            Diagnostic.error(
                "TL0503", f"`tl.{member}` {problem}", span_at(op), help=f"`tl.{member}({shown})`"
            )
        )


def _check_calls(func: kernel.FuncOp, catalog: Catalog) -> None:
    for op in func.walk():
        if isinstance(op, kernel.TlAttrOp):
            _check_member(op, op.attr.data, catalog)
            continue
        if not isinstance(op, kernel.TlCallOp | kernel.LoadOp | kernel.StoreOp):
            continue
        member = (
            op.callee.data
            if isinstance(op, kernel.TlCallOp)
            else ("load" if isinstance(op, kernel.LoadOp) else "store")
        )
        signature = _check_member(op, member, catalog)
        if signature is not None:
            _check_arity(op, member, signature)
        if isinstance(op, kernel.LoadOp):
            _check_mask(op)


def _check_mask(op: kernel.LoadOp) -> None:
    """Step 5."""
    if op.mask() is not None or "boundary_check" in op.names():
        return
    report(
        Diagnostic.warning(
            "TL0505",
            "`tl.load` without a mask reads past the end of the tensor in the last block",
            span_at(op),
            help="pass `mask=offsets < n` (and `other=` for masked lanes)",
        )
    )


def _check_powers_of_two(func: kernel.FuncOp) -> None:
    """Step 4."""
    locations = dict(zip(func.params(), func.param_locs.data, strict=True))
    for name in sorted(func.arange_constexprs()):
        default = func.defaults.data.get(name)
        if not isinstance(default, IntegerAttr):
            continue
        value = default.value.data
        if value > 0 and value & (value - 1) == 0:
            continue
        span = span_of(locations[name]) or span_at(func)
        lower = 1 << max(value.bit_length() - 1, 0)
        report(
            Diagnostic.error(
                "TL0504",
                f"`{name}` is a `tl.arange` bound, so it must be a power of two, not {value}",
                span,
                help=f"use {lower} or {lower * 2}",
            )
        )


def check_kernel(func: kernel.FuncOp, catalog: Catalog | None = None) -> None:
    _NameCheck(func).run()
    _check_calls(func, catalog or installed())
    _check_powers_of_two(func)


@dataclass(frozen=True)
class CheckKernelsPass(TLPass):
    name = "check-kernels"
    requires = ("resolve-nml",)

    @classmethod
    def applies_to(cls, module: ModuleOp) -> bool:
        return has_kernels(module)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.walk():
            if isinstance(func, kernel.FuncOp):
                check_kernel(func)
