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

from xdsl.dialects.builtin import IntegerAttr, StringAttr

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
    printer.line("@triton.jit")
    printer.line(f"def {op.sym_name.data}({', '.join(params)}):")
    scope = NameScope(printer.scope)
    for name in _variables(op):
        scope.reserve(name)
    block = op.body.block
    with printer.indented(), printer._body_scope(block, scope):
        printer.emit_body(block)


def _variables(op: triton.JitFuncOp) -> set[str]:
    """Every name the kernel's own code reads or binds, so temporaries never take one."""
    names = set(n for n, _ in op.params())
    for inner in op.walk():
        if isinstance(inner, py.NameOp):
            names.add(inner.id.data.split(".")[0])
    return names


# --------------------------------------------------------------- launchers


class _LauncherText:
    """The lines of one launcher, from its bindings."""

    def __init__(self, op: triton.LauncherOp, kernel: triton.JitFuncOp, scope: NameScope) -> None:
        self.op, self.name, self.kernel = op, op.sym_name.data, kernel.sym_name.data
        self.params = [p for p, _ in kernel.params()]
        self.bindings = dict(zip(self.params, op.binding_list(), strict=True))
        self.scope = NameScope(scope)
        for binding in self.bindings.values():
            self.scope.reserve(binding[1])
        for param in self.params:
            self.scope.reserve(param)

    def of(self, *kinds: str) -> list[str]:
        """The launcher names bound as `kinds`, in kernel parameter order."""
        return [b[1] for b in self.bindings.values() if b[0] in kinds]

    def signature(self) -> str:
        positional = self.of("input", "inout", "scalar")
        keywords = [f"{o}=None" for o in self.of("output")]
        keywords += [self._constexpr(c) for c in self.of("constexpr")]
        parts = positional + (["*", *keywords] if keywords else [])
        return f"def {self.name}({', '.join(parts)}):"

    def _constexpr(self, name: str) -> str:
        default = self.op.defaults.data.get(name)
        if isinstance(default, IntegerAttr):
            return f"{name}={default.value.data}"
        return f"{name}=None" if isinstance(default, StringAttr) else name

    def returned(self) -> list[str]:
        return self.of("inout", "output")

    def body(self) -> list[str]:
        first = next(iter(self.of("input", "inout")), None)
        lines = [self._docstring()]
        lines += self._allocations(first)
        lines += self._checks(first)
        lines += self._sizes()
        lines += self._blocks()
        lines += self._launch()
        returned = self.returned()
        if returned:
            lines.append(f"return {', '.join(returned)}")
        return lines

    def _docstring(self) -> str:
        returned = ", ".join(f"`{r}`" for r in self.returned()) or "nothing"
        return f'"""Launches the Triton kernel `{self.kernel}`; returns {returned}."""'

    def _allocations(self, first: str | None) -> list[str]:
        lines: list[str] = []
        for output in self.of("output"):
            lines += [f"if {output} is None:", f"    {output} = torch.empty_like({first})"]
        return lines

    def _checks(self, first: str | None) -> list[str]:
        tensors = self.of("input", "inout", "output")
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

    def _sizes(self) -> list[str]:
        lines: list[str] = []
        for param, binding in self.bindings.items():
            if binding[0] == "numel":
                lines.append(f"{param} = {binding[1]}.numel()")
            if binding[0] == "dim" and binding[2] == "0":
                tensor = binding[1]
                lines += [
                    f"if {tensor}.dim() != 2:",
                    f'    raise ValueError(f"{self.name}: `{tensor}` must be 2-D, '
                    f'got shape {{tuple({tensor}.shape)}}")',
                ]
            if binding[0] == "dim":
                lines.append(f"{param} = {binding[1]}.shape[{binding[2]}]")
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
        axes = [
            f"triton.cdiv({a[0]}, {a[1]})" if len(a) == 2 else a[0] for a in self.op.grid_list()
        ]
        args = [
            b[1] if b[0] in ("input", "inout", "output") else p
            for p, b in self.bindings.items()
            if b[0] != "constexpr"
        ]
        args += [f"{c}={c}" for c in self.of("constexpr")]
        shape = f"({axes[0]},)" if len(axes) == 1 else f"({', '.join(axes)})"
        return [f"{grid} = {shape}", f"{self.kernel}[{grid}]({', '.join(args)})"]


def _pairs(names: list[str]) -> str:
    items = [f'("{n}", {n})' for n in names]
    return ", ".join(items) + ("," if len(items) == 1 else "")


@PythonPrinter.register_statement(triton.LauncherOp)
def _launcher(printer: PythonPrinter, op: triton.LauncherOp) -> None:
    block = op.parent_block()
    siblings = list(block.ops) if block is not None else []
    name = op.kernel.string_value()
    kernel = next(
        (s for s in siblings if isinstance(s, triton.JitFuncOp) and s.sym_name.data == name), None
    )
    if kernel is None:
        raise NotImplementedError(f"compiler bug: `{op.kernel}` is not a printed kernel")
    printer.require_import("torch")
    printer.require_import("triton")
    text = _LauncherText(op, kernel, printer.scope)
    printer.line(text.signature())
    with printer.indented():
        for line in text.body():
            printer.line(line)
