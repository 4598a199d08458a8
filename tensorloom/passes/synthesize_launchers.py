"""`synthesize-launchers`: derive each kernel's `<name>_launcher` from its dataflow.

For the README's vector_add this adds

    kernel.launcher @vector_add_launcher for @vector_add {
      bindings = [["input", "x"], ["input", "y"], ["output", "z"], ["numel", "x"],
                  ["constexpr", "BLOCK"]],
      grid = [["n", "BLOCK"]], defaults = {BLOCK = 1024 : i64}, pow2 = ["BLOCK"]}

which the printer turns into `vector_add_launcher(x, y, *, z=None, BLOCK=1024)`.
The rules (docs/kernels.md has them with examples), computed on a
flow-insensitive view where a read of a variable stands for every value let
to it:

1. Pointers. The parameters reached from a load's or store's address through
   `+`, `-`, indexing and `tl.multiple_of`-like hints, other than constexprs
   and size parameters, are its base pointer; exactly one is expected.
   Loaded only: an input; stored only: an output; both: an in-out input.
2. Sizes. A scalar parameter compared (`<`, `<=`, `>`, `>=`) with a value
   computed from `tl.program_id` or `tl.arange` is a size. One size is the
   first input's `numel()`; two are its `shape[0]` and `shape[1]`, in
   parameter order; more stay ordinary arguments.
3. Grid. For each `tl.program_id(axis)`, the size it is compared with gives
   the axis: `triton.cdiv(size, B)` when the index is `pid * B + ...` with a
   constexpr `B`, else `size`.
4. Constexprs become keyword arguments. A block size of a grid axis defaults
   to 1024 (1-D grid) or 32 (2-D); a block that spans a whole size without a
   program_id defaults to the next power of two of that size; a source
   default wins. Constexprs used as `tl.arange` bounds must be powers of two.
5. Other scalars stay positional arguments, in parameter order.
"""

from __future__ import annotations

import keyword
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.ir import report, span_of
from tensorloom.dialects import kernel, nml
from tensorloom.dialects.builders import string_array
from tensorloom.passes.support import kernel_autograd
from tensorloom.passes.support.model_env import enclosing_model
from tensorloom.source import Span

COMPARISONS = ("<", "<=", ">", ">=")
POINTER_HINTS = (
    "multiple_of",
    "max_contiguous",
    "max_constancy",
    "broadcast_to",
    "reshape",
    "view",
    "expand_dims",
)
ATOMICS = (
    "atomic_add",
    "atomic_and",
    "atomic_cas",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_xchg",
    "atomic_xor",
)
LAUNCHER_NAMES = ("torch", "triton", "tl", "grid", "meta")
TENSOR_BINDINGS = ("input", "inout", "output", "accumulator")

Follow = Callable[[Operation], Sequence[SSAValue]]


class Dataflow:
    """Which parameters a value is computed from, along chosen edges."""

    def __init__(self, func: kernel.FuncOp) -> None:
        self.func = func
        self.kinds = func.kinds()
        self.lets: dict[str, list[SSAValue]] = defaultdict(list)
        for op in func.walk():
            if isinstance(op, kernel.LetOp):
                self.lets[op.var.data].append(op.value)

    def reached(self, value: SSAValue, follow: Follow) -> Iterator[Operation]:
        """Every op `value` is computed from along `follow` edges (reads go to lets)."""
        seen: set[Operation] = set()
        stack = [value]
        while stack:
            op = stack.pop().owner
            if not isinstance(op, Operation) or op in seen:
                continue
            seen.add(op)
            yield op
            stack.extend(self.lets[op.var.data] if isinstance(op, kernel.ReadOp) else follow(op))

    def computed_from(self, source: Operation) -> set[Operation]:
        """Every op whose value is computed from `source`'s (along every edge): the
        inverse of `reached(..., _everything)`, for all ops at once (a fixpoint over the
        kernel's ops, so that a `let` assigned later in a loop counts too)."""
        tainted = {source}
        changed = True
        while changed:
            changed = False
            for op in self.func.walk():
                if op in tainted:
                    continue
                inputs = self.lets[op.var.data] if isinstance(op, kernel.ReadOp) else op.operands
                if any(v.owner in tainted for v in inputs):
                    tainted.add(op)
                    changed = True
        return tainted

    def params(self, value: SSAValue, follow: Follow, kinds: Sequence[str]) -> list[str]:
        names = {op.var.data for op in self.reached(value, follow) if isinstance(op, kernel.ReadOp)}
        return [p for p, k in self.kinds.items() if p in names and k in kinds]

    def direct(self, value: SSAValue, kinds: Sequence[str]) -> list[str]:
        """The parameters `value` is, possibly through `let` copies."""
        return self.params(value, lambda _: (), kinds)


def _additive(op: Operation) -> Sequence[SSAValue]:
    if isinstance(op, kernel.BinOp) and op.op.data in ("+", "-"):
        return op.operands
    if isinstance(op, kernel.IndexOp):
        return [op.value]
    if isinstance(op, kernel.TlCallOp) and op.callee.data in POINTER_HINTS and op.args:
        return [op.args[0]]
    return ()


def _everything(op: Operation) -> Sequence[SSAValue]:
    return op.operands


def _tl_calls(ops: Iterator[Operation], callee: str) -> list[kernel.TlCallOp]:
    return [op for op in ops if isinstance(op, kernel.TlCallOp) and op.callee.data == callee]


def program_id_axis(op: kernel.TlCallOp) -> int | None:
    axis = op.argument("axis", 0)
    owner = axis.owner if axis is not None else None
    if isinstance(owner, kernel.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


@dataclass(slots=True)
class Extent:
    """A size parameter compared with an index: the grid axis it spans and its block."""

    size: str
    axis: int | None
    block: str | None


@dataclass(slots=True)
class Facts:
    loaded: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    accumulated: list[str] = field(default_factory=list)  # only ever `tl.atomic_add`ed
    extents: list[Extent] = field(default_factory=list)
    whole_blocks: dict[str, str] = field(default_factory=dict)  # block -> size it spans
    axes: dict[int, kernel.TlCallOp] = field(default_factory=dict)


class _Analysis:
    """Steps 1-3 of the module docstring over one kernel."""

    def __init__(self, func: kernel.FuncOp) -> None:
        self.func = func
        self.flow = Dataflow(func)
        self.facts = Facts()

    def run(self) -> Facts:
        for op in self.func.walk():
            self._visit(op)
        return self.facts

    def _visit(self, op: Operation) -> None:
        if isinstance(op, kernel.TlCallOp) and op.callee.data == "program_id":
            self._program_id(op)
        if isinstance(op, kernel.BinOp) and op.op.data in COMPARISONS:
            self._comparison(op)

    def _program_id(self, op: kernel.TlCallOp) -> None:
        axis = program_id_axis(op)
        if axis is None or axis not in (0, 1, 2):
            report(
                Diagnostic.error(
                    "TL0507", "`tl.program_id` needs a constant axis 0, 1 or 2", where(op)
                )
            )
            return
        self.facts.axes.setdefault(axis, op)

    def _comparison(self, op: kernel.BinOp) -> None:
        for index, bound in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            sizes = self.flow.direct(bound, ["scalar"])
            if len(sizes) == 1 and not self.flow.direct(index, ["scalar", "constexpr"]):
                self._extent(index, sizes[0])

    def _extent(self, index: SSAValue, size: str) -> None:
        ops = list(self.flow.reached(index, _everything))
        pids = _tl_calls(iter(ops), "program_id")
        aranges = _tl_calls(iter(ops), "arange")
        if pids:
            axis = program_id_axis(pids[0])
            self.facts.extents.append(Extent(size, axis, self._block(ops, pids[0])))
        elif aranges:
            self.facts.extents.append(Extent(size, None, None))
            end = aranges[0].argument("end", 1)
            for block in self.flow.direct(end, ["constexpr"]) if end is not None else []:
                self.facts.whole_blocks.setdefault(block, size)

    def _block(self, ops: list[Operation], pid: kernel.TlCallOp) -> str | None:
        """`B` where the index is built from `pid * B` (or `B * pid`)."""
        from_pid = self.flow.computed_from(pid)  # fuzz input 75341: a 1,000-term product
        for op in ops:
            if not (isinstance(op, kernel.BinOp) and op.op.data == "*"):
                continue
            for side, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                if side.owner in from_pid:
                    blocks = self.flow.direct(other, ["constexpr"])
                    if blocks:
                        return blocks[0]
        return None

    def pointers(self) -> None:
        sizes = {e.size for e in self.facts.extents}
        for op in self.func.walk():
            address, effects = _memory_access(op)
            if address is None:
                continue
            roots = [p for p in self.flow.params(address, _additive, ["scalar"]) if p not in sizes]
            if len(roots) != 1:
                self._ambiguous(op, roots)
                continue
            for effect in effects:
                target = {
                    "load": self.facts.loaded,
                    "store": self.facts.stored,
                    "accumulate": self.facts.accumulated,
                }[effect]
                if roots[0] not in target:
                    target.append(roots[0])

    def _ambiguous(self, op: Operation, roots: list[str]) -> None:
        named = ", ".join(f"`{r}`" for r in roots) or "no parameter"
        report(
            Diagnostic.error(
                "TL0507",
                f"cannot tell which parameter this address is based on (found {named})",
                where(op),
                help="write the address as `<pointer parameter> + <offsets>`",
            )
        )


def _memory_access(op: Operation) -> tuple[SSAValue | None, tuple[str, ...]]:
    if isinstance(op, kernel.LoadOp):
        return op.pointer(), ("load",)
    if isinstance(op, kernel.StoreOp):
        return op.pointer(), ("store",)
    if isinstance(op, kernel.TlCallOp) and op.callee.data == "atomic_add":
        return op.argument("pointer", 0), ("accumulate",)
    if isinstance(op, kernel.TlCallOp) and op.callee.data in ATOMICS:
        return op.argument("pointer", 0), ("load", "store")
    return None, ()


def where(op: Operation) -> Span:
    """The op's span; IR written by hand may carry no location."""
    return span_of(op) or Span("<unknown>", 1, 1, 1, 2)


# ------------------------------------------------------------------ bindings


def tensor_name(param: str, params: Sequence[str]) -> str:
    """`x` for `x_ptr`, unless that would clash; the launcher's argument name."""
    short = param.removesuffix("_ptr")
    clashes = short in params or keyword.iskeyword(short) or short in LAUNCHER_NAMES
    return param if not short.isidentifier() or clashes else short


class _Launcher:
    """Steps 1-5: the bindings, grid and defaults of one launcher."""

    def __init__(self, func: kernel.FuncOp, facts: Facts) -> None:
        self.func, self.facts = func, facts
        self.params = func.params()
        self.kinds = func.kinds()

    def sizes(self) -> list[str]:
        names = {e.size for e in self.facts.extents}
        return [p for p in self.params if p in names]

    def first_input(self) -> str | None:
        inputs = [p for p in self.params if p in self.facts.loaded]
        return tensor_name(inputs[0], self.params) if inputs else None

    def bindings(self) -> list[list[str]]:
        sizes, first = self.sizes(), self.first_input()
        size_bindings = self._annotated_sizes(sizes)
        if size_bindings or first is None:
            pass
        elif len(sizes) == 1:
            size_bindings = {sizes[0]: ["numel", first]}
        elif len(sizes) == 2:
            size_bindings = {s: ["dim", first, str(i)] for i, s in enumerate(sizes)}
        return [size_bindings.get(p) or self._binding(p) for p in self.params]

    def _annotated_sizes(self, sizes: list[str]) -> dict[str, list[str]]:
        """A size named as a dim of a loaded tensor's annotation (`x_ptr: Tensor[M, N]`)
        is that tensor's `shape[i]`, for the first such tensor."""
        bound: dict[str, list[str]] = {}
        for param in (p for p in self.params if p in self.facts.loaded):
            for index, dim in enumerate(self.func.shape_of(param) or []):
                if dim in sizes and dim not in bound:
                    bound[dim] = ["dim", tensor_name(param, self.params), str(index)]
        return bound

    def _binding(self, param: str) -> list[str]:
        if self.kinds[param] == "constexpr":
            return ["constexpr", param]
        loaded, stored = param in self.facts.loaded, param in self.facts.stored
        if param in self.facts.accumulated and not loaded and not stored:
            return ["accumulator", tensor_name(param, self.params)]
        loaded |= param in self.facts.accumulated
        stored |= param in self.facts.accumulated
        kind = {(True, True): "inout", (True, False): "input", (False, True): "output"}.get(
            (loaded, stored)
        )
        return [kind, tensor_name(param, self.params)] if kind else ["scalar", param]

    def grid(self) -> list[list[str]]:
        if not self.facts.axes:
            return [["1"]]
        return [self._axis(a) for a in range(max(self.facts.axes) + 1)]

    def _axis(self, axis: int) -> list[str]:
        extent = next((e for e in self.facts.extents if e.axis == axis), None)
        if extent is None and axis in self.facts.axes:
            report(
                Diagnostic.error(
                    "TL0507",
                    f"cannot work out the grid for axis {axis}",
                    where(self.facts.axes[axis]),
                    help=f"compare the offsets built from `tl.program_id({axis})` with a size "
                    "parameter in a mask, as in `offsets < n`",
                )
            )
        if extent is None:
            return ["1"]
        return [extent.size, extent.block] if extent.block else [extent.size]

    def defaults(self, grid: list[list[str]]) -> dict[str, Attribute]:
        tiled = {axis[1] for axis in grid if len(axis) == 2}
        tile_default = 2 ** (10 // max(len(tiled), 1))
        defaults: dict[str, Attribute] = {}
        for name in self.params:
            if name in tiled:
                defaults[name] = IntegerAttr(tile_default, i64)
            if name in self.facts.whole_blocks:
                defaults[name] = StringAttr(self.facts.whole_blocks[name])
        source = {k: v for k, v in self.func.defaults.data.items()}
        tuned = self.func.tuned()
        return {k: v for k, v in (defaults | source).items() if k not in tuned}


def synthesize(func: kernel.FuncOp) -> kernel.LauncherOp:
    """The launcher op for `func`; marks its pointer parameters `ptr` on the way."""
    analysis = _Analysis(func)
    facts = analysis.run()
    analysis.pointers()
    pointers = set(facts.loaded) | set(facts.stored) | set(facts.accumulated)
    func.param_kinds = string_array(
        ["ptr" if p in pointers else k for p, k in func.kinds().items()]
    )
    launcher = _Launcher(func, facts)
    bindings, grid = launcher.bindings(), launcher.grid()
    _check_allocatable(func, bindings)
    tuned = func.tuned()
    op = kernel.LauncherOp.make(
        func.sym_name.data,
        bindings,
        grid,
        launcher.defaults(grid),
        sorted(func.arange_constexprs() - set(tuned)),
    )
    op.location = func.location
    _shapes_and_types(op, func, bindings, {e.size for e in facts.extents})
    if tuned:
        _tuning(op, func, facts, bindings)
    return op


def _shapes_and_types(
    op: kernel.LauncherOp, func: kernel.FuncOp, bindings: list[list[str]], sizes: set[str]
) -> None:
    """The annotated shapes of the launcher's tensors, the dtypes of its outputs and the
    types of its scalars (a size left a scalar is an `int`); an output whose dims no
    input or size gives is an error."""
    params = func.params()
    named = dict(zip(params, bindings, strict=True))
    shapes: dict[str, Attribute] = {}
    dtypes: dict[str, Attribute] = {}
    for param, binding in named.items():
        dims, kind = func.shape_of(param), func.type_of(param)
        if dims is not None and binding[0] in TENSOR_BINDINGS:
            shapes[binding[1]] = string_array(dims)
        if kind is None and binding[0] == "scalar" and param in sizes:
            kind = "int"
        if kind is not None and binding[0] in (*TENSOR_BINDINGS, "scalar"):
            dtypes[binding[1]] = StringAttr(kind)
    known = {
        d for p, b in named.items() if b[0] in ("input", "inout") for d in func.shape_of(p) or []
    }
    known |= {p for p, b in named.items() if b[0] in ("numel", "dim", "scalar")}
    for param, binding in named.items():
        unknown = [d for d in func.shape_of(param) or [] if d not in known and not d.isdigit()]
        if binding[0] in ("output", "accumulator") and unknown:
            report(
                Diagnostic.error(
                    "TL0507",
                    f"cannot allocate `{binding[1]}`: its dim `{unknown[0]}` is no dim of an input",
                    _param_span(func, param),
                    help=f"name `{unknown[0]}` in an input's annotation, "
                    f"as in `x_ptr: Tensor[{unknown[0]}]`",
                )
            )
    if shapes:
        op.allocations = DictionaryAttr(shapes)
    if dtypes:
        op.dtypes = DictionaryAttr(dtypes)


def _tuning(
    op: kernel.LauncherOp, func: kernel.FuncOp, facts: Facts, bindings: list[list[str]]
) -> None:
    """`tune` and `tune_key` on the launcher: the candidates, keyed on the sizes."""
    tuned = func.tuned()
    for name in tuned:
        if name in facts.whole_blocks:
            report(
                Diagnostic.error(
                    "TL0509",
                    f"`{name}` spans `{facts.whole_blocks[name]}`, so its value is fixed by "
                    "the size and cannot be tuned",
                    _param_span(func, name),
                    help="drop its candidates; tune `num_warps` instead",
                )
            )
    arange = func.arange_constexprs()
    for name, values in tuned.items():
        bad = [v for v in values if name in arange and v & (v - 1) != 0]
        if bad:
            lower = 1 << max(bad[0].bit_length() - 1, 0)
            report(
                Diagnostic.error(
                    "TL0504",
                    f"`{name}` is a `tl.arange` bound, so each candidate must be a power "
                    f"of two, not {bad[0]}",
                    _param_span(func, name),
                    help=f"use {lower} or {lower * 2}",
                )
            )
    sizes = [p for p, b in zip(func.params(), bindings, strict=True) if b[0] in ("numel", "dim")]
    op.tune = func.tune
    op.tune_key = string_array(
        sizes or [p for p, b in zip(func.params(), bindings, strict=True) if b[0] == "scalar"]
    )


def _param_span(func: kernel.FuncOp, param: str) -> Span:
    locations = dict(zip(func.params(), func.param_locs.data, strict=True))
    return span_of(locations[param]) or where(func)


def _check_allocatable(func: kernel.FuncOp, bindings: list[list[str]]) -> None:
    has_input = any(b[0] in ("input", "inout") for b in bindings)
    outputs = [b[1] for b in bindings if b[0] == "output"]
    if outputs and not has_input:
        report(
            Diagnostic.error(
                "TL0507",
                f"`{func.sym_name.data}` loads no tensor to allocate `{outputs[0]}` like",
                where(func),
                help="load from an input pointer, so that outputs can be allocated like it",
            )
        )


class AddLauncher(RewritePattern):
    """Puts a `kernel.launcher` right after each `kernel.func` that has none."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.FuncOp, rewriter: PatternRewriter) -> None:
        following = op.next_op
        if (
            isinstance(following, kernel.LauncherOp)
            and following.kernel.string_value() == op.sym_name.data
        ):
            return
        rewriter.insert(synthesize(op), InsertPoint.after(op))


@dataclass(frozen=True)
class SynthesizeLaunchersPass(ModulePass):
    name = "synthesize-launchers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(AddLauncher(), apply_recursively=False).rewrite_module(op)
        launchers = {
            o.kernel.string_value(): o for o in op.walk() if isinstance(o, kernel.LauncherOp)
        }
        funcs = [o for o in op.walk() if isinstance(o, kernel.FuncOp)]
        kernels = {
            f.sym_name.data: (f, launchers[f.sym_name.data])
            for f in funcs
            if f.sym_name.data in launchers
        }
        for func in funcs:
            kernel_autograd.pair(func, kernels)
        called = {
            c.kernel.string_value()
            for c in op.walk()
            if isinstance(c, nml.KernelCallOp) and enclosing_model(c) is not None
        }
        kernel_autograd.entries(kernels, called)
        for call in op.walk():
            if isinstance(call, nml.KernelCallOp):
                launcher = launchers.get(call.kernel.string_value())
                if launcher is not None:
                    _check_call(call, launcher)


def _check_call(call: nml.KernelCallOp, launcher: kernel.LauncherOp) -> None:
    """A model's call of a kernel against its launcher: the positional tensors and scalars
    it takes, and a tensor to return (a kernel that stores nothing returns nothing)."""
    bindings = [[b.data for b in binding.data] for binding in launcher.bindings.data]
    name = call.kernel.string_value()
    span = span_of(call)
    if span is None:
        return
    takes = [b[1] for b in bindings if b[0] in ("input", "inout", "scalar")]
    given = sum(1 for n in call.arg_names.data if not n.data)
    if given != len(takes):
        listed = ", ".join(f"`{t}`" for t in takes) or "nothing"
        message = (
            f"`{name}_launcher` takes {len(takes)} positional argument"
            f"{'' if len(takes) == 1 else 's'} ({listed}), this call gives {given}"
        )
        help_text = None
        scalars = [b[1] for b in bindings if b[0] == "scalar" and b[1].endswith("_ptr")]
        if scalars:
            help_text = (
                f"`{scalars[0]}` is never loaded or stored, so it is not a tensor: "
                "does the kernel miss its `tl.store`?"
            )
        report(Diagnostic.error("TL0508", message, span, help=help_text))
        return
    returns = any(b[0] in ("inout", "output") for b in bindings)
    if not returns and any(r.uses for r in call.res):
        message = f"`{name}` stores to no pointer, so its launcher returns nothing to use"
        help_text = "store the result: `tl.store(out_ptr + offsets, y, mask=mask)`"
        report(Diagnostic.error("TL0508", message, span, help=help_text))
