"""Python printer handlers for the triton emission dialect.

Importing this module registers one handler per triton op with
`PythonPrinter`. A `triton.jit_func` prints as the `@triton.jit` function, its
statements one line each; a `triton.launcher` prints as

    def vector_add_launcher(x, y, *, z=None, BLOCK=1024):
        \"\"\"Launches `vector_add`; returns `z`.\"\"\"
        if z is None:
            z = torch.empty_like(x)
        ... device, contiguity and power-of-two checks (ValueError) ...
        n = x.numel()
        grid = (triton.cdiv(n, BLOCK),)
        vector_add[grid](x, y, z, n, BLOCK=BLOCK)
        return z

following the bindings `synthesize-launchers` worked out (docs/kernels.md).
"""

from __future__ import annotations

from typing import TypeVar

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr
from xdsl.ir import Operation

from tensorloom.backends.python_printer import NameScope, PythonPrinter
from tensorloom.dialects import py, triton

# ---------------------------------------------------------------- kernels


@PythonPrinter.register_statement(triton.JitFuncOp)
def _jit_func(printer: PythonPrinter, op: triton.JitFuncOp) -> None:
    """`@triton.jit def name(params):` and its `py` body."""
    printer.require_import("triton")
    printer.require_import("triton.language", alias="tl")
    params = [
        f"{name}: tl.constexpr" if kind == "constexpr" else name for name, kind in op.params()
    ]
    launcher = _sibling(op, triton.LauncherOp, f"{op.sym_name.data}_launcher")
    if launcher is not None and launcher.table("tune"):
        _autotune(printer, launcher, op)
    printer.line("@triton.jit")
    printer.line(f"def {op.sym_name.data}({', '.join(params)}):")
    scope = NameScope(printer.scope)
    for name in _variables(op):
        scope.reserve(name)
    block = op.body.block
    with printer.indented(), printer._body_scope(block, scope):
        printer.emit_body(block)


OpT = TypeVar("OpT", bound=Operation)


def _sibling(op: Operation, kind: type[OpT], name: str) -> OpT | None:
    """The op of `kind` named `name` in `op`'s block."""
    block = op.parent_block()
    for other in block.ops if block is not None else ():
        sym = other.properties.get("sym_name")
        if isinstance(other, kind) and isinstance(sym, StringAttr) and sym.data == name:
            return other
    return None


def _candidates(launcher: triton.LauncherOp) -> dict[str, list[int]]:
    return {
        name: [v.value.data for v in values.data if isinstance(v, IntegerAttr)]
        for name, values in launcher.table("tune").items()
        if isinstance(values, ArrayAttr)
    }


def _configs(launcher: triton.LauncherOp) -> list[str]:
    """`triton.Config(...)` for each combination of the candidates, the first ones first."""
    tuned = _candidates(launcher)
    combos: list[dict[str, int]] = [{}]
    for name, values in tuned.items():
        combos = [c | {name: v} for c in combos for v in values]
    configs: list[str] = []
    for combo in combos:
        blocks = ", ".join(f'"{k}": {v}' for k, v in combo.items() if k not in _OPTIONS)
        options = "".join(f", {k}={v}" for k, v in combo.items() if k in _OPTIONS)
        configs.append(f"triton.Config({{{blocks}}}{options}),")
    return configs


_OPTIONS = ("num_warps", "num_stages")


def _autotune(printer: PythonPrinter, launcher: triton.LauncherOp, op: triton.JitFuncOp) -> None:
    """`@triton.autotune(...)` over the candidates, keyed on the sizes, results cached on
    disk; one configuration in Triton's interpreter, which has no GPU timer."""
    printer.require_import("os")
    key = [k.data for k in launcher.tune_key.data] if launcher.tune_key is not None else []
    params = dict(zip([p for p, _ in op.params()], launcher.binding_list(), strict=True))
    zeroed = [p for p, b in params.items() if b[0] == "accumulator"]
    printer.line("@triton.autotune(")
    with printer.indented():
        printer.line("configs=[")
        with printer.indented():
            for config in _configs(launcher):
                printer.line(config)
        printer.line('][: 1 if os.environ.get("TRITON_INTERPRET") == "1" else None],')
        printer.line(f"key={key!r},".replace("'", '"'))
        if zeroed:
            printer.line(f"reset_to_zero={zeroed!r},".replace("'", '"'))
        printer.line("cache_results=True,")
    printer.line(")")


def _variables(op: triton.JitFuncOp) -> set[str]:
    """Every name the kernel's own code reads or binds, so temporaries never take one."""
    names = set(n for n, _ in op.params())
    for inner in op.walk():
        if isinstance(inner, py.NameOp):
            names.add(inner.id.data.split(".")[0])
    return names


# --------------------------------------------------------------- launchers


TORCH_DTYPES = {
    "float32": "torch.float32",
    "float16": "torch.float16",
    "bfloat16": "torch.bfloat16",
    "int32": "torch.int32",
    "int64": "torch.int64",
}


class _LauncherText:
    """The lines of one launcher, from its bindings."""

    def __init__(self, op: triton.LauncherOp, kernel: triton.JitFuncOp, scope: NameScope) -> None:
        self.op, self.name, self.kernel = op, op.sym_name.data, kernel.sym_name.data
        self.params = [p for p, _ in kernel.params()]
        self.bindings = dict(zip(self.params, op.binding_list(), strict=True))
        self.tuned = _candidates(op)
        self.shapes = {
            k: [d.data for d in v.data if isinstance(d, StringAttr)]
            for k, v in op.table("allocations").items()
            if isinstance(v, ArrayAttr)
        }
        self.dtypes = {
            k: v.data for k, v in op.table("dtypes").items() if isinstance(v, StringAttr)
        }
        self.scope = NameScope(scope)
        for binding in self.bindings.values():
            self.scope.reserve(binding[1])
        for param in self.params:
            self.scope.reserve(param)

    def of(self, *kinds: str) -> list[str]:
        """The launcher names bound as `kinds`, in kernel parameter order."""
        return [b[1] for b in self.bindings.values() if b[0] in kinds]

    def positional(self) -> list[str]:
        return self.of("input", "inout", "scalar")

    def signature(self) -> str:
        keywords = [f"{o}=None" for o in self.of("output", "accumulator")]
        keywords += [self._constexpr(c) for c in self.of("constexpr") if c not in self.tuned]
        parts = self.positional() + (["*", *keywords] if keywords else [])
        return f"def {self.name}({', '.join(parts)}):"

    def _constexpr(self, name: str) -> str:
        default = self.op.defaults.data.get(name)
        if isinstance(default, IntegerAttr):
            return f"{name}={default.value.data}"
        return f"{name}=None" if isinstance(default, StringAttr) else name

    def returned(self) -> list[str]:
        return self.of("inout", "output", "accumulator")

    def first(self) -> str | None:
        return next(iter(self.of("input", "inout")), None)

    def body(self) -> list[str]:
        first = self.first()
        lines = self._docstring()
        lines += self._ranks()
        lines += self._sizes()
        lines += self._dims()
        lines += self._allocations(first)
        lines += self._checks(first)
        lines += self._blocks()
        lines += self._launch()
        returned = self.returned()
        if returned:
            lines.append(f"return {', '.join(returned)}")
        return lines

    def fake(self) -> list[str]:
        """What the custom op's fake returns: the outputs' shapes and dtypes, no launch."""
        shaped = any(o in self.shapes for o in self.returned())
        lines = self._sizes(check=False) + self._dims(check=False) if shaped else []
        for output in self.returned():
            lines.append(f"{output} = {self._allocation(output, self.first())}")
        return [*lines, f"return {', '.join(self.returned()) or 'None'}"]

    def _docstring(self) -> list[str]:
        returned = ", ".join(f"`{r}`" for r in self.returned()) or "nothing"
        summary = f"Launches the Triton kernel `{self.kernel}`; returns {returned}."
        if not self.tuned:
            return [f'"""{summary}"""']
        key = [k.data for k in self.op.tune_key.data] if self.op.tune_key is not None else []
        tuned = "; ".join(
            f"`{name}` in {', '.join(str(v) for v in values)}"
            for name, values in self.tuned.items()
        )
        return [
            f'"""{summary}',
            "",
            f"Autotuned (triton.autotune, keyed on {', '.join(f'`{k}`' for k in key)}; the",
            "choice cached on disk, in Triton's cache): " + tuned + ".",
            '"""',
        ]

    def _allocation(self, output: str, first: str | None) -> str:
        zeroed = output in self.of("accumulator")
        dims = self.shapes.get(output)
        dtype = TORCH_DTYPES.get(self.dtypes.get(output, ""))
        if dims is None:
            like = "torch.zeros_like" if zeroed else "torch.empty_like"
            return f"{like}({first})" if dtype is None else f"{like}({first}, dtype={dtype})"
        shape = f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"
        make = "torch.zeros" if zeroed else "torch.empty"
        return f"{make}({shape}, device={first}.device, dtype={dtype or f'{first}.dtype'})"

    def _allocations(self, first: str | None) -> list[str]:
        lines: list[str] = []
        for output in self.of("output", "accumulator"):
            lines += [f"if {output} is None:", f"    {output} = {self._allocation(output, first)}"]
        return lines

    def _checks(self, first: str | None) -> list[str]:
        tensors = self.of("input", "inout", "output", "accumulator")
        if first is None:
            return []
        name, tensor = self.scope.fresh("name"), self.scope.fresh("tensor")
        others = [t for t in tensors if t != first]
        lines: list[str] = []
        if others:
            lines += [
                f"for {name}, {tensor} in ({_pairs(others)}):",
                f"    if {tensor}.device != {first}.device:",
                f'        raise ValueError(f"{self.name}: `{{{name}}}` is on {{{tensor}.device}} '
                f'but `{first}` is on {{{first}.device}}; move them to one device")',
            ]
        return [
            *lines,
            f"for {name}, {tensor} in ({_pairs(tensors)}):",
            f"    if not {tensor}.is_contiguous():",
            f'        raise ValueError(f"{self.name}: `{{{name}}}` is not contiguous; '
            f'pass `{{{name}}}.contiguous()`")',
        ]

    def _ranks(self) -> list[str]:
        """Each annotated input has as many dims as its annotation."""
        lines: list[str] = []
        for tensor in self.of("input", "inout"):
            dims = self.shapes.get(tensor)
            if dims is None:
                continue
            shown = ", ".join(dims)
            lines += [
                f"if {tensor}.dim() != {len(dims)}:",
                f'    raise ValueError(f"{self.name}: `{tensor}` must be [{shown}], '
                f'got shape {{tuple({tensor}.shape)}}")',
            ]
        return lines

    def _sizes(self, check: bool = True) -> list[str]:
        lines: list[str] = []
        for param, binding in self.bindings.items():
            if binding[0] == "numel":
                lines.append(f"{param} = {binding[1]}.numel()")
            checked = check and binding[1] not in self.shapes
            if binding[0] == "dim" and binding[2] == "0" and checked:
                tensor = binding[1]
                lines += [
                    f"if {tensor}.dim() != 2:",
                    f'    raise ValueError(f"{self.name}: `{tensor}` must be 2-D, '
                    f'got shape {{tuple({tensor}.shape)}}")',
                ]
            if binding[0] == "dim":
                lines.append(f"{param} = {binding[1]}.shape[{binding[2]}]")
        return lines

    def _dims(self, check: bool = True) -> list[str]:
        """The annotated inputs' other dims: bound on first sight, then checked."""
        bound = {p for p, b in self.bindings.items() if b[0] in ("numel", "dim", "scalar")}
        sources = {(b[1], b[2]) for b in self.bindings.values() if b[0] == "dim"}
        lines: list[str] = []
        for tensor in self.of("input", "inout"):
            for index, dim in enumerate(self.shapes.get(tensor, [])):
                if (tensor, str(index)) in sources:
                    continue
                if dim not in bound and not dim.isdigit():
                    lines.append(f"{dim} = {tensor}.shape[{index}]")
                    bound.add(dim)
                    continue
                if not check:
                    continue
                shown = ", ".join(self.shapes[tensor])
                lines += [
                    f"if {tensor}.shape[{index}] != {dim}:",
                    f'    raise ValueError(f"{self.name}: `{tensor}` must be [{shown}] '
                    f'with {dim}={{{dim}}}, got shape {{tuple({tensor}.shape)}}")',
                ]
        return lines

    def _blocks(self) -> list[str]:
        lines: list[str] = []
        for name, default in self.op.defaults.data.items():
            if isinstance(default, StringAttr):
                size = default.data
                lines += [
                    f"if {name} is None:",
                    f"    {name} = triton.next_power_of_2({size})",
                    f"if {name} < {size}:",
                    f'    raise ValueError(f"{self.name}: {name}={{{name}}} must be at '
                    f'least {size}={{{size}}}")',
                ]
        for name in (p.data for p in self.op.pow2):
            lines += [
                f"if {name} <= 0 or {name} & ({name} - 1) != 0:",
                f'    raise ValueError(f"{self.name}: {name} must be a power of two, '
                f'got {{{name}}}")',
            ]
        return lines

    def _launch(self) -> list[str]:
        grid = self.scope.fresh("grid")
        axes = [self._axis(a) for a in self.op.grid_list()]
        args = [
            b[1] if b[0] in ("input", "inout", "output", "accumulator") else p
            for p, b in self.bindings.items()
            if b[0] != "constexpr"
        ]
        args += [f"{c}={c}" for c in self.of("constexpr") if c not in self.tuned]
        shape = f"({axes[0]},)" if len(axes) == 1 else f"({', '.join(axes)})"
        if any("meta[" in a for a in axes):
            shape = f"lambda meta: {shape}"
        return [f"{grid} = {shape}", f"{self.kernel}[{grid}]({', '.join(args)})"]

    def _axis(self, axis: list[str]) -> str:
        if len(axis) == 1:
            return axis[0]
        block = f'meta["{axis[1]}"]' if axis[1] in self.tuned else axis[1]
        return f"triton.cdiv({axis[0]}, {block})"


def _pairs(names: list[str]) -> str:
    items = [f'("{n}", {n})' for n in names]
    return ", ".join(items) + ("," if len(items) == 1 else "")


@PythonPrinter.register_statement(triton.LauncherOp)
def _launcher(printer: PythonPrinter, op: triton.LauncherOp) -> None:
    name = op.kernel.string_value()
    kernel = _sibling(op, triton.JitFuncOp, name)
    if kernel is None:
        raise NotImplementedError(f"compiler bug: `{op.kernel}` is not a printed kernel")
    printer.require_import("torch")
    printer.require_import("triton")
    text = _LauncherText(op, kernel, printer.scope)
    printer.line(text.signature())
    with printer.indented():
        for line in text.body():
            printer.line(line)
    if op.entry is not None:
        _CustomOp(printer, op, text).print()


# ------------------------------------------------------------- custom ops


class _CustomOp:
    """The launcher as a `torch.library` custom op, `<kernel>_op`: torch.compile calls it
    as one opaque op (no graph break), with a fake for its output shapes, and autograd
    runs the backward kernel's op through `register_autograd`."""

    def __init__(self, printer: PythonPrinter, op: triton.LauncherOp, text: _LauncherText) -> None:
        self.printer, self.op, self.text = printer, op, text
        self.kernel = text.kernel
        self.name = f"{self.kernel}_op"

    def block(self, header: list[str], body: list[str]) -> None:
        self.printer.blank_lines(2)
        for line in header:
            self.printer.line(line)
        with self.printer.indented():
            for line in body:
                self.printer.line(line)

    def print(self) -> None:
        text = self.text
        positional = text.positional()
        typed = ", ".join(f"{p}: {self._type(p)}" for p in positional)
        returned = text.returned()
        result = (
            "None"
            if not returned
            else "torch.Tensor"
            if len(returned) == 1
            else f"tuple[{', '.join(['torch.Tensor'] * len(returned))}]"
        )
        args = ", ".join(positional)
        self.block(
            [
                f'@torch.library.custom_op("tensorloom::{self.kernel}", mutates_args=())',
                f"def {self.name}({typed}) -> {result}:",
            ],
            [
                f'"""`{text.name}` as one op that torch.compile does not break the graph at."""',
                f"{'return ' if returned else ''}{text.name}({args})",
            ],
        )
        self.block(
            [f"def {self.kernel}_fake({args}):"],
            ['"""The outputs\' shapes and dtypes, for tracing."""', *text.fake()],
        )
        self.printer.blank_lines(2)
        self.printer.line(f"{self.name}.register_fake({self.kernel}_fake)")
        if self.op.backward is not None:
            self._autograd()
        elif returned and not self._is_backward():
            self._no_gradient()
        if self.op.entry is not None and self.op.entry.data != self.name:
            self._apply()

    def _is_backward(self) -> bool:
        """Whether another kernel names this one as its backward."""
        block = self.op.parent_block()
        return any(
            isinstance(o, triton.LauncherOp)
            and o.backward is not None
            and o.backward.string_value() == self.kernel
            for o in (block.ops if block is not None else ())
        )

    def _type(self, name: str) -> str:
        if name in self.text.of("input", "inout"):
            return "torch.Tensor"
        return "int" if self.text.dtypes.get(name) == "int" else "float"

    def _autograd(self) -> None:
        text, op = self.text, self.op
        backward = op.backward.string_value() if op.backward is not None else ""
        args, results = op.pairs("backward_args"), op.pairs("backward_results")
        saved = [a[1] for a in args if a[0] == "saved"]
        scalars = [a[1] for a in args if a[0] == "scalar"]
        grads = [a[1] for a in args if a[0] == "grad"]
        returned, positional = text.returned(), text.positional()
        kept = [r for r in returned if r not in grads]
        setup = [f"{_unpack(positional)} = inputs"]
        if kept or any(s in returned for s in saved):
            setup.append(f"{_target(returned)} = output")
        setup += [
            f"ctx.save_for_backward({', '.join(saved)})",
            *[f"ctx.{s} = {s}" for s in scalars],
        ]
        if kept:
            setup.append(f"ctx.mark_non_differentiable({', '.join(kept)})")
        self.block([f"def {self.kernel}_setup_context(ctx, inputs, output):"], setup)
        call = [
            f"d{a[1]}.contiguous()"
            if a[0] == "grad"
            else f"ctx.{a[1]}"
            if a[0] == "scalar"
            else a[1]
            for a in args
        ]
        gradient_of = {r[1]: r[0] for r in results}
        needed = [
            f"{gradient_of[p]} if ctx.needs_input_grad[{i}] else None"
            if p in gradient_of
            else "None"
            for i, p in enumerate(positional)
        ]
        of = ", ".join(f"`{r[1]}`" for r in results)
        body = [f'"""Launches `{backward}`: the gradients of {of}."""']
        if saved:
            body.append(f"{_unpack(saved)} = ctx.saved_tensors")
        body += [
            f"{_target([r[0] for r in results])} = {backward}_op({', '.join(call)})",
            f"return {f'({needed[0]},)' if len(needed) == 1 else ', '.join(needed)}",
        ]
        upstream = ", ".join(f"d{r}" for r in returned)
        self.block([f"def {self.kernel}_backward(ctx, {upstream}):"], body)
        self.printer.blank_lines(2)
        self.printer.line(
            f"{self.name}.register_autograd({self.kernel}_backward, "
            f"setup_context={self.kernel}_setup_context)"
        )

    def _no_gradient(self) -> None:
        """A kernel without a backward stops the gradient, as TL0412 warns."""
        inputs = self.text.positional()
        nones = "(None,)" if len(inputs) == 1 else ", ".join(["None"] * len(inputs))
        self.block(
            [f"def {self.kernel}_backward(ctx, *grads):"],
            [
                f'"""`{self.kernel}` has no backward kernel: no gradient flows to its inputs."""',
                f"return {nones}",
            ],
        )
        self.printer.blank_lines(2)
        self.printer.line(f"{self.name}.register_autograd({self.kernel}_backward)")

    def _apply(self) -> None:
        text = self.text
        grads = [a[1] for a in self.op.pairs("backward_args") if a[0] == "grad"]
        returned = text.returned()
        kept = [r for r in returned if r not in grads]
        args = ", ".join(text.positional())
        public = [r for r in returned if r in grads]
        self.block(
            [f"def {self.kernel}_apply({args}):"],
            [
                f'"""`{self.kernel}` for a forward: returns {", ".join(f"`{g}`" for g in public)}; '
                f'{", ".join(f"`{k}`" for k in kept)} only feed its backward."""',
                f"{_unpack(returned)} = {self.name}({args})",
                f"return {', '.join(public)}",
            ],
        )


def _target(names: list[str]) -> str:
    """The target of a call's result: one tensor, or a tuple unpacked."""
    return names[0] if len(names) == 1 else ", ".join(names)


def _unpack(names: list[str]) -> str:
    return names[0] + "," if len(names) == 1 else ", ".join(names)
