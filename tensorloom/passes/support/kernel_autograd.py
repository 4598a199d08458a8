"""A forward kernel paired with its backward (`@kernel(backward=k_bwd)`), for synthesize-launchers.

The backward's launcher is derived like any other; the pairing matches it to the
forward's by name, the way autograd's functions are written:

    @kernel(backward=bias_gelu_bwd)
    def bias_gelu(x_ptr: Tensor[M, N], b_ptr: Tensor[N], out_ptr: Tensor[M, N], M, N, ...)
    def bias_gelu_bwd(dout_ptr: Tensor[M, N], x_ptr: Tensor[M, N], b_ptr: Tensor[N],
                      dx_ptr: Tensor[M, N], db_ptr: float32[N], M, N, ...)

- each tensor the backward loads is a tensor of the forward (`x`, `b`: saved by the
  forward for the backward) or `d<output>`, the upstream gradient of one of its
  outputs (`dout`); each scalar is a scalar of the forward, passed on;
- each tensor the backward stores is `d<input>`, the gradient of one of the forward's
  tensor inputs, and every tensor input has one (`dx`, `db`);
- where both are annotated, a gradient has the shape of its tensor.

The forward's launcher records the result (`backward`, `backward_args`,
`backward_results`); a mismatch is TL0510 at the backward's parameter.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.core import did_you_mean
from tensorloom.diagnostics.ir import report, span_of
from tensorloom.dialects import kernel
from tensorloom.dialects.builders import string_array
from tensorloom.source import Span

Kernels = dict[str, tuple[kernel.FuncOp, kernel.LauncherOp]]


def _error(message: str, span: Span | None, help: str | None = None) -> None:
    if span is not None:
        report(Diagnostic.error("TL0510", message, span, help=help))


def _listed(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


class _Side:
    """One kernel of the pair: its parameters by launcher name, and their bindings."""

    def __init__(self, func: kernel.FuncOp, launcher: kernel.LauncherOp) -> None:
        self.func, self.launcher = func, launcher
        self.name = func.sym_name.data
        bindings = launcher.binding_list()
        self.bound = dict(zip(func.params(), bindings, strict=True))
        self.param_of = {
            b[1]: p for p, b in self.bound.items() if b[0] not in ("numel", "dim", "constexpr")
        }

    def named(self, *kinds: str) -> list[str]:
        return [b[1] for b in self.bound.values() if b[0] in kinds]

    def span(self, name: str) -> Span | None:
        params = self.func.params()
        locations = dict(zip(params, self.func.param_locs.data, strict=True))
        return span_of(locations[self.param_of[name]]) if name in self.param_of else None

    def shape(self, name: str) -> list[str] | None:
        """`name`'s annotated dims; an unannotated output is allocated like the first input."""
        param = self.param_of.get(name)
        dims = self.func.shape_of(param) if param is not None else None
        inputs = self.named("input", "inout")
        if dims is None and name in self.named("output") and inputs:
            return self.shape(inputs[0]) if inputs[0] != name else None
        return dims


def pair(func: kernel.FuncOp, kernels: Kernels) -> None:
    """Checks `func`'s backward against it and records the pairing on `func`'s launcher."""
    if func.backward is None:
        return
    name = func.backward.root_reference.data
    span = span_of(func.backward_loc) if func.backward_loc is not None else None
    if name not in kernels or name == func.sym_name.data:
        guess = did_you_mean(name, [k for k in kernels if k != func.sym_name.data])
        _error(
            f"`backward=` names `{name}`, which is not another kernel",
            span,
            f"did you mean `{guess}`?" if guess else f"define `@kernel def {name}(...)`",
        )
        return
    forward, backward = _Side(*kernels[func.sym_name.data]), _Side(*kernels[name])
    written = forward.named("inout")
    if written:
        _error(
            f"`{forward.name}` has a backward, so it cannot write its input `{written[0]}`",
            forward.span(written[0]),
            help="store the result to an output pointer the kernel only stores to",
        )
        return
    args = _arguments(forward, backward)
    results = _results(forward, backward)
    if args is None or results is None:
        return
    launcher = forward.launcher
    launcher.backward = SymbolRefAttr(name)
    launcher.backward_args = ArrayAttr([string_array(a) for a in args])
    launcher.backward_results = ArrayAttr([string_array(r) for r in results])


def _arguments(forward: _Side, backward: _Side) -> list[list[str]] | None:
    """What the backward's launcher is called with, in its positional order."""
    tensors = forward.named("input", "output", "accumulator")
    outputs = forward.named("output", "accumulator")
    args: list[list[str]] = []
    ok = True
    for binding in backward.bound.values():
        kind, name = binding[0], binding[1] if len(binding) > 1 else ""
        if kind == "inout":
            _error(
                f"`{backward.name}` writes its input `{name}`",
                backward.span(name),
                "a backward reads saved tensors and gradients and stores new gradients",
            )
            ok = False
        elif kind == "input" and name in tensors:
            ok &= _same_shape(backward, name, forward, name, "")
            args.append(["saved", name])
        elif kind == "input" and name.startswith("d") and name[1:] in outputs:
            ok &= _same_shape(backward, name, forward, name[1:], "the gradient of ")
            args.append(["grad", name[1:]])
        elif kind == "input":
            _error(
                f"`{name}`, an input of `{backward.name}`, is neither a tensor of "
                f"`{forward.name}` ({_listed(tensors)}) nor the gradient of one of its "
                f"outputs ({_listed(['d' + o for o in outputs])})",
                backward.span(name),
                help="name a tensor the backward reads as the forward names it, and an "
                "upstream gradient `d<output>`",
            )
            ok = False
        elif kind == "scalar" and name in forward.named("scalar"):
            args.append(["scalar", name])
        elif kind == "scalar":
            _error(
                f"`{name}`, a scalar of `{backward.name}`, is no scalar of `{forward.name}` "
                f"({_listed(forward.named('scalar'))})",
                backward.span(name),
            )
            ok = False
    if ok and not any(a[0] == "grad" for a in args):
        _error(
            f"`{backward.name}` takes no upstream gradient of `{forward.name}`'s outputs",
            span_of(backward.func.location),
            help=f"load the gradient of an output as `d<output>`: "
            f"{_listed(['d' + o + '_ptr' for o in outputs])}",
        )
        ok = False
    return args if ok else None


def _results(forward: _Side, backward: _Side) -> list[list[str]] | None:
    """Each output of the backward with the forward input it is the gradient of."""
    inputs = forward.named("input")
    results: list[list[str]] = []
    ok = True
    for name in backward.named("output", "accumulator"):
        if name.startswith("d") and name[1:] in inputs:
            ok &= _same_shape(backward, name, forward, name[1:], "the gradient of ")
            results.append([name, name[1:]])
            continue
        _error(
            f"`{name}`, an output of `{backward.name}`, is not the gradient of an input of "
            f"`{forward.name}` ({_listed(['d' + i for i in inputs])})",
            backward.span(name),
            help="a backward stores one gradient `d<input>` per tensor input of the forward",
        )
        ok = False
    missing = [i for i in inputs if i not in [r[1] for r in results]]
    if ok and missing:
        _error(
            f"`{backward.name}` returns {len(results)} gradient"
            f"{'' if len(results) == 1 else 's'}, `{forward.name}` takes {len(inputs)} "
            f"tensor{'' if len(inputs) == 1 else 's'}: `{missing[0]}` has none",
            span_of(backward.func.location),
            help=f"store `d{missing[0]}` in `{backward.name}`: add a parameter `d{missing[0]}_ptr`",
        )
        ok = False
    return results if ok else None


def _same_shape(backward: _Side, name: str, forward: _Side, of: str, what: str) -> bool:
    ours, theirs = backward.shape(name), forward.shape(of)
    if ours is None or theirs is None or ours == theirs:
        return True
    gradient = f", {what}`{of}`," if what else ""
    _error(
        f"`{name}`{gradient} has shape [{', '.join(ours)}] in `{backward.name}`, but `{of}` "
        f"has shape [{', '.join(theirs)}] in `{forward.name}`",
        backward.span(name),
        help=f"annotate it as `{forward.name}` does: `Tensor[{', '.join(theirs)}]`",
    )
    return False


def entries(kernels: Kernels, called: set[str]) -> None:
    """Sets `entry` on the launchers a script calls through a custom op: those a model
    calls, each forward with a backward, and each backward. A forward whose backward
    takes some of its outputs' gradients returns only those (`<kernel>_apply`)."""
    backwards = {
        f.backward.root_reference.data for f, _ in kernels.values() if f.backward is not None
    }
    for name, (_, launcher) in kernels.items():
        if name not in called and name not in backwards and launcher.backward is None:
            continue
        if any(b[0] == "inout" for b in launcher.binding_list()):
            continue  # a custom op cannot return an input it wrote
        entry = f"{name}_op"
        outputs = [b[1] for b in launcher.binding_list() if b[0] in ("output", "accumulator")]
        grads = [a[1] for a in _args(launcher) if a[0] == "grad"]
        if launcher.backward is not None and len(grads) < len(outputs):
            entry = f"{name}_apply"
        launcher.entry = StringAttr(entry)


def _args(launcher: kernel.LauncherOp) -> list[list[str]]:
    value: Attribute | None = launcher.backward_args
    if not isinstance(value, ArrayAttr):
        return []
    return [
        [s.data for s in a.data if isinstance(s, StringAttr)]
        for a in value.data
        if isinstance(a, ArrayAttr)
    ]
