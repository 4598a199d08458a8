"""The Python printer: torch-dialect IR to the text of a standalone Python file.

    text = print_python(module)        # a builtin.module holding a torch.script

One handler per op, dispatched with `functools.singledispatchmethod` as in
xDSL's WGSL printer. There are two kinds of handler:

- `emit(op)` prints statements (`class`, `def`, `return`, verbatim source);
- `expression(op) -> PyExpr` renders a value op as an expression with its
  precedence. A value op has no `emit` handler of its own: the printer either
  assigns it to a name (`x = self.norm1(x)`) or inlines it into the one
  expression that uses it (`return self.fc2(F.relu(self.fc1(x)))`).

Inlining keeps Python's evaluation order equal to the IR's order: a value is
inlined only when it has one use, in the same block, carries no `name_hint`
from the source, and the ops inlined into a statement are exactly the pending
ones in the order the statement evaluates them; anything else is assigned to a
name first. Ops with no operands and the `Pure` trait (constants, `self.`
attributes, globals) are inlined at every use.

Names come from SSA `name_hint`s (set by irgen from `let` names and
parameters). A name already bound to a value that has no later use is reused,
which gives `x = self.norm1(x)`; otherwise `NameScope.fresh` hands out `x_1`,
`x_2`, and never a Python keyword, a builtin, a module-level name, or a name
live in the same scope.

Extending the printer from another module (the Triton backend, the
training-script lowering):

    from tensorloom.backends.python_printer import PyExpr, PythonPrinter

    @PythonPrinter.register_statement(triton.JitFuncOp)
    def _print_jit(printer: PythonPrinter, op: triton.JitFuncOp) -> None:
        printer.require_import("triton")
        printer.line("@triton.jit")
        ...

    @PythonPrinter.register_expression(triton.ProgramIdOp)
    def _print_program_id(printer: PythonPrinter, op: triton.ProgramIdOp) -> PyExpr:
        return PyExpr.call("tl.program_id", [f"axis={op.axis.value.data}"])

A statement handler uses `line`, `indented`, `blank_lines`, `emit_function`
(a `def` with its own name scope) and `emit_block` (a body of statements with
inlining); an expression handler uses `value(operand)` for each operand it
prints, and `call_arguments`.

Imports: `torch.import` / `torch.from_import` ops, plus what handlers ask for
with `require_import`; a dotted name starting with a well-known module
(`F.relu`, `nn.Linear`, `torch.cat`, `math.pi`) brings its import along
(`require_import_for`). The printer sorts and merges them as isort would.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache, singledispatchmethod
from typing import IO, TypeVar

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue, Use
from xdsl.traits import Pure

import tensorloom
from tensorloom.dialects import torch as t
from tensorloom.escape import py_comment, py_docstring, py_string

# ------------------------------------------------------------- expressions


class Precedence(IntEnum):
    """Python's operator precedence, loosest first."""

    LAMBDA = 0
    TERNARY = 1
    OR = 2
    AND = 3
    NOT = 4
    COMPARE = 5
    BIT_OR = 6
    BIT_XOR = 7
    BIT_AND = 8
    SHIFT = 9
    SUM = 10
    PRODUCT = 11
    UNARY = 12
    POWER = 13
    PRIMARY = 14
    ATOM = 15


BINARY_PRECEDENCE = {
    "or": Precedence.OR,
    "and": Precedence.AND,
    **dict.fromkeys(["==", "!=", "<", "<=", ">", ">=", "is", "in"], Precedence.COMPARE),
    "|": Precedence.BIT_OR,
    "^": Precedence.BIT_XOR,
    "&": Precedence.BIT_AND,
    "<<": Precedence.SHIFT,
    ">>": Precedence.SHIFT,
    "+": Precedence.SUM,
    "-": Precedence.SUM,
    **dict.fromkeys(["*", "/", "//", "%", "@"], Precedence.PRODUCT),
    "**": Precedence.POWER,
}


@dataclass(frozen=True, slots=True)
class PyExpr:
    """An expression's text and the precedence of its outermost operator."""

    text: str
    precedence: Precedence = Precedence.ATOM

    def at_least(self, precedence: Precedence) -> str:
        """The text, parenthesised if it binds looser than `precedence`."""
        return self.text if self.precedence >= precedence else f"({self.text})"

    @staticmethod
    def call(callee: str, arguments: Sequence[str]) -> PyExpr:
        return PyExpr(f"{callee}({', '.join(arguments)})", Precedence.PRIMARY)


# ------------------------------------------------------------------- names

RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
# Module names that emitted code may import at any point; locals never take them.
WELL_KNOWN_MODULE_NAMES = frozenset(["torch", "nn", "F", "triton", "tl", "math", "np"])


def sanitize(hint: str) -> str:
    """A Python identifier close to `hint` (`"x.1"` -> `x_1`, `"0"` -> `v0`)."""
    name = re.sub(r"\W", "_", hint)
    if not name:
        return "h"
    return f"v{name}" if name[0].isdigit() else name


class NameScope:
    """The names bound in one Python scope, with the enclosing scope's."""

    def __init__(self, parent: NameScope | None = None) -> None:
        self.parent = parent
        self.bound: dict[str, SSAValue | None] = {}

    def is_taken(self, name: str) -> bool:
        if name in self.bound:
            return True
        return self.parent is not None and self.parent.is_taken(name)

    def reserve(self, name: str) -> None:
        self.bound[name] = None

    def fresh(self, hint: str) -> str:
        """A name never handed out in this scope, a keyword or a builtin."""
        base = sanitize(hint)
        if base in RESERVED:
            base = f"{base}_"
        name, counter = base, 0
        while self.is_taken(name) or name in RESERVED:
            counter += 1
            name = f"{base}_{counter}"
        self.bound[name] = None
        return name

    def bind(self, name: str, value: SSAValue) -> None:
        self.bound[name] = value


class Liveness:
    """Where each op of a body sits, to tell when a value has no later use."""

    def __init__(self, block: Block) -> None:
        self.position: dict[Operation, int] = {}
        self.end: dict[Operation, int] = {}
        self._number(block)

    def _number(self, block: Block) -> None:
        for op in block.ops:
            self.position[op] = len(self.position)
            for region in op.regions:
                for inner in region.blocks:
                    self._number(inner)
            self.end[op] = len(self.position) - 1

    def last_use(self, value: SSAValue) -> int:
        """The position of the last statement that reads `value` (-1 if none)."""
        return max((self.last_use_of(use) for use in value.uses), default=-1)

    def last_use_of(self, use: Use) -> int:
        value = use.operation.operands[use.index]
        block = value.block if isinstance(value, BlockArgument) else value.owner.parent_block()
        return self._use_position(use.operation, block)

    def _use_position(self, user: Operation, block: Block | None) -> int:
        """Where a use reads the value: at the user, or at the end of the outermost
        loop around it that the value comes from outside of (it reads it each time)."""
        position = self.end.get(user, len(self.position))
        while user.parent_block() is not block and (parent := user.parent_op()) is not None:
            user = parent
            if isinstance(user, t.ForOp):
                position = self.end.get(user, len(self.position))
        return position


# ------------------------------------------------------------------ imports


@dataclass(frozen=True, slots=True, order=True)
class Import:
    """`import module [as alias]`, or `from module import name` when `name` is set."""

    module: str
    alias: str = ""
    name: str = ""

    @property
    def bound_name(self) -> str:
        return self.name or self.alias or self.module.split(".")[0]


def _section(module: str) -> int:
    root = module.split(".")[0]
    if root == "__future__":
        return 0
    return 1 if root in sys.stdlib_module_names else 2


def format_imports(imports: set[Import]) -> list[str]:
    """The import block sorted like isort/ruff: sections, `import` before `from`."""
    sections: list[list[str]] = []
    for section in sorted({_section(i.module) for i in imports}):
        chosen = [i for i in imports if _section(i.module) == section]
        plain = sorted(i for i in chosen if not i.name)
        lines = [f"import {i.module}" + (f" as {i.alias}" if i.alias else "") for i in plain]
        for module in sorted({i.module for i in chosen if i.name}):
            names = sorted(i.name for i in chosen if i.name and i.module == module)
            lines.append(f"from {module} import {', '.join(names)}")
        sections.append(lines)
    return [line for lines in _joined(sections, [""]) for line in lines]


def _joined(parts: list[list[str]], separator: list[str]) -> list[list[str]]:
    """`parts` with `separator` between each two."""
    out: list[list[str]] = []
    for part in parts:
        out += [separator, part] if out else [part]
    return out


# ----------------------------------------------------------------- printer

OpT = TypeVar("OpT", bound=Operation)
PRINTED_DIALECTS = frozenset(["torch", "triton"])
# The import a dotted name needs when it starts with one of these (`F.relu`, `nn.Linear`).
WELL_KNOWN_IMPORTS = {
    "F": Import("torch.nn.functional", alias="F"),
    "nn": Import("torch", name="nn"),
    "torch": Import("torch"),
    "math": Import("math"),
}


class PythonPrinter:
    """Prints torch-dialect IR as Python; see the module docstring."""

    def __init__(self, indent: str = "    ", line_length: int = 100) -> None:
        self.line_length = line_length
        self.lines: list[str] = []
        self.imports: set[Import] = set()
        self.scope = NameScope()
        self._indent_unit = indent
        self._depth = 0
        self._blank = 0
        self._liveness: Liveness | None = None
        self._inline: set[Operation] = set()
        self._yield_names: list[list[str]] = []
        for name in WELL_KNOWN_MODULE_NAMES:
            self.scope.reserve(name)

    # -------------------------------------------------------- output helpers

    def line(self, text: str) -> None:
        """One line at the current indentation (after any pending blank lines)."""
        if self.lines:
            self.lines.extend([""] * self._blank)
        self._blank = 0
        self.lines.append(f"{self._indent_unit * self._depth}{text}" if text else "")

    def blank_lines(self, count: int) -> None:
        """Asks for `count` blank lines before the next line (never at a file's start)."""
        self._blank = max(self._blank, count)

    @contextmanager
    def indented(self) -> Generator[None]:
        self._depth += 1
        self._blank = 0
        try:
            yield
        finally:
            self._depth -= 1

    def require_import(self, module: str, alias: str = "", name: str = "") -> None:
        """Adds `import module [as alias]` or `from module import name`."""
        self.imports.add(Import(module, alias, name))
        self.scope.reserve(Import(module, alias, name).bound_name)

    def require_import_for(self, dotted: str) -> None:
        """The import of a well-known module that `dotted` starts with (`F.relu` -> F)."""
        known = WELL_KNOWN_IMPORTS.get(dotted.split(".")[0])
        if known is not None and "." in dotted:
            self.imports.add(known)

    # ------------------------------------------------------------- extension

    @classmethod
    def register_statement(
        cls, op_type: type[OpT]
    ) -> Callable[[Callable[[PythonPrinter, OpT], None]], Callable[[PythonPrinter, OpT], None]]:
        """Decorator: `handler(printer, op)` prints the statements of `op_type`."""

        def register(handler: Callable[[PythonPrinter, OpT], None]) -> Callable[..., None]:
            vars(PythonPrinter)["emit"].register(op_type, handler)
            return handler

        return register

    @classmethod
    def register_expression(
        cls, op_type: type[OpT]
    ) -> Callable[[Callable[[PythonPrinter, OpT], PyExpr]], Callable[[PythonPrinter, OpT], PyExpr]]:
        """Decorator: `handler(printer, op) -> PyExpr` renders a value op."""

        def register(handler: Callable[[PythonPrinter, OpT], PyExpr]) -> Callable[..., PyExpr]:
            vars(PythonPrinter)["expression"].register(op_type, handler)
            return handler

        return register

    # ------------------------------------------------------------ the file

    def print_file(self, root: Operation, source: str | None = None) -> str:
        """The whole file: header, sorted imports, then the definitions."""
        source = source or _script_source(root)
        self._reserve_module_names(root)
        self.emit(root)
        origin = f" from {py_comment(source)}" if source else ""
        header = [f"# Generated by TensorLoom {tensorloom.__version__}{origin}; edit the source."]
        imports = format_imports(self.imports)
        top = [*header, "", *imports] if imports else header
        return "\n".join([*top, "", "", *self.lines] if self.lines else top) + "\n"

    def _reserve_module_names(self, root: Operation) -> None:
        for op in root.walk():
            for name in _module_level_names(op):
                self.scope.reserve(name)
            if isinstance(op, t.ImportOp | t.FromImportOp):
                self.emit(op)

    # ------------------------------------------------------ statement handlers

    @singledispatchmethod
    def emit(self, op: Operation) -> None:
        """Prints `op` as statements; a value op is assigned to a name."""
        if len(op.results) != 1 or op.regions:
            raise NotImplementedError(f"the Python printer has no handler for `{op.name}`")
        self._assign(op)

    @emit.register
    def _(self, op: ModuleOp) -> None:
        # Ops of other dialects at the top level are not lowered yet (`nml.instance`
        # and `train.*` before convert-train-to-torch): they have no Python.
        for child in op.body.block.ops:
            if child.dialect_name() in PRINTED_DIALECTS:
                self.blank_lines(2)
                self.emit(child)

    @emit.register
    def _(self, op: t.ScriptOp) -> None:
        self.emit_top_level(op.body.block)

    @emit.register
    def _(self, op: t.ImportOp) -> None:
        self.require_import(op.module.data, alias=op.alias.data if op.alias else "")

    @emit.register
    def _(self, op: t.FromImportOp) -> None:
        for name in op.names:
            self.require_import(op.module.data, name=name.data)

    @emit.register
    def _(self, op: t.RawOp) -> None:
        for text in op.source.data.rstrip("\n").split("\n"):
            self.line(text)

    @emit.register
    def _(self, op: t.MainOp) -> None:
        self.line('if __name__ == "__main__":')
        with self.indented(), self._body_scope(op.body.block, self.scope):
            self.emit_body(op.body.block)

    @emit.register
    def _(self, op: t.ModuleClassOp) -> None:
        self.require_import_for(op.base.data)
        self.line(f"class {op.sym_name.data}({op.base.data}):")
        with self.indented():
            if op.doc is not None:
                self.line(_docstring(op.doc.data))
                self.blank_lines(1)
            self._emit_init(op)
            for method in op.body.block.ops:
                if isinstance(method, t.MethodOp):
                    self.blank_lines(1)
                    self.emit(method)

    def _emit_init(self, op: t.ModuleClassOp) -> None:
        params = ["self", *(_param(name, default) for name, default in op.params)]
        self.line(f"def __init__({', '.join(params)}):")
        with self.indented():
            self.line("super().__init__()")
            for member in op.body.block.ops:
                if not isinstance(member, t.MethodOp):
                    self.emit(member)

    @emit.register
    def _(self, op: t.FieldOp) -> None:
        self.line(f"self.{op.field_name.data} = {op.value.data}")

    @emit.register
    def _(self, op: t.ParamDefaultOp) -> None:
        self.line(f"if {op.param.data} is None:")
        with self.indented():
            self.line(f"{op.param.data} = {op.value.data}")

    @emit.register
    def _(self, op: t.SubmoduleOp) -> None:
        args = [a.data for a in op.args]
        names = [n.data for n in op.arg_names]
        self.require_import_for(op.cls.data)
        for arg in args:  # `nn.Parameter(torch.zeros(1, 1, d))`, `nn.Sequential(nn.Linear(...))`
            for dotted in re.findall(r"\b(?:torch|nn|F|math)\.[\w.]+", arg):
                self.require_import_for(dotted)
        call = PyExpr.call(op.cls.data, _with_keywords(args, names))
        self.line(f"self.{op.field_name.data} = {call.text}")

    @emit.register
    def _(self, op: t.InitTensorOp) -> None:
        self.require_import_for("nn.init")
        for _, source in op.kwargs:
            for dotted in re.findall(r"\b(?:torch|nn|F|math)\.[\w.]+", source):
                self.require_import_for(dotted)
        if op.each is None:
            self.line(_init_call(op, f"self.{op.field_name.data}"))
            return
        module = op.parent_op()
        taken = {name for name, _ in module.params} if isinstance(module, t.ModuleClassOp) else ()
        element = "layer" if "layer" not in taken else "layer_"
        prev = op.prev_op
        continues = (
            isinstance(prev, t.InitTensorOp)
            and prev.each is not None
            and prev.field_name == op.field_name
        )
        if not continues:
            self.line(f"for {element} in self.{op.field_name.data}:")
        with self.indented():
            self.line(_init_call(op, element))

    @emit.register
    def _(self, op: t.MethodOp) -> None:
        self.emit_function(op, ["self"])

    @emit.register
    def _(self, op: t.DefOp) -> None:
        self.emit_function(op, [])

    @emit.register
    def _(self, op: t.ReturnOp) -> None:
        values = [self.value(v).at_least(Precedence.TERNARY) for v in op.values]
        is_last = op.next_op is None and isinstance(op.parent_op(), t.MethodOp | t.DefOp)
        if not values and is_last:
            return
        self.line(f"return {', '.join(values)}" if values else "return")

    # --------------------------------------------------------- control flow
    #
    # A loop's carried values and a branch's results are SSA values in the IR and
    # one Python name each here: the loop reads and rebinds `x`, a branch binds `x`
    # on both sides. `torch.yield` is the rebinding, printed only where the yielded
    # value is not already in that name.

    @emit.register
    def _(self, op: t.ForOp) -> None:
        block = op.body.block
        names: list[str] = []
        for init, result in zip(op.inits, op.res, strict=True):
            names.append(self._carried_name(init, result, op, taken=names))
        iterable = self.value(op.iterable).at_least(Precedence.OR)
        element = self.scope.fresh(block.args[0].name_hint or "item")
        self.scope.bind(element, block.args[0])
        for name, arg in zip(names, block.args[1:], strict=True):
            self.scope.bind(name, arg)
        self.line(f"for {element} in {iterable}:")
        self._yield_names.append(names)
        with self.indented():
            self.emit_body(block)
        self._yield_names.pop()
        for name, result in zip(names, op.res, strict=True):
            self.scope.bind(name, result)

    @emit.register
    def _(self, op: t.IfOp) -> None:
        names = [self._result_name(result, op) for result in op.res]
        self.line(f"if {self.value(op.cond).at_least(Precedence.TERNARY)}:")
        self._yield_names.append(names)
        before = dict(self.scope.bound)
        with self.indented():
            self.emit_body(op.then_region.block)
        # The else branch runs instead of the then branch: names hold what they held before.
        self.scope.bound = before | {n: None for n in self.scope.bound if n not in before}
        else_lines = len(self.lines)
        self.line("else:")
        with self.indented():
            self.emit_body(op.else_region.block)
        if self.lines[-1].strip() == "pass":
            del self.lines[else_lines:]
        self._yield_names.pop()
        for name, result in zip(names, op.res, strict=True):
            self.scope.bind(name, result)

    @emit.register
    def _(self, op: t.YieldOp) -> None:
        names = self._yield_names[-1]
        moves = [
            (name, self.value(value).at_least(Precedence.TERNARY))
            for name, value in zip(names, op.values, strict=True)
        ]
        moves = [(name, text) for name, text in moves if name != text]
        if moves:
            targets = ", ".join(name for name, _ in moves)
            self.line(f"{targets} = {', '.join(text for _, text in moves)}")

    def _carried_name(
        self, init: SSAValue, result: SSAValue, op: Operation, taken: Sequence[str]
    ) -> str:
        """A loop's name for a carried value: the initial value's own name when the
        loop is its last use (and no other carried value has it), else a fresh one
        it is first copied into."""
        text = self.value(init).text
        bound = next((v for n, v in self.scope_chain_items() if n == text), None)
        if bound is init and self._is_dead_after(init, op) and text not in taken:
            return text
        name = self.scope.fresh(result.name_hint or "h")
        self.line(f"{name} = {self.value(init).at_least(Precedence.TERNARY)}")
        return name

    def _result_name(self, result: SSAValue, op: t.IfOp) -> str:
        """A branch result's name: that of a value a branch yields unchanged, if the
        branch is its last use (`if cond: x = f(x)` keeps `x`), else a fresh one."""
        for region in (op.then_region, op.else_region):
            last = region.block.last_op
            if not isinstance(last, t.YieldOp):
                continue
            results: list[SSAValue] = list(op.res)
            value = last.values[results.index(result)]
            owner = value.owner
            if isinstance(owner, Operation) and op.is_ancestor(owner):
                continue
            for name, bound in self.scope_chain_items():
                if bound is value and self._is_dead_after(value, op):
                    return name
        hint = sanitize(result.name_hint or "h")
        holder = self.scope.bound.get(hint)
        if holder is not None and self._is_dead_after(holder, op):
            return hint  # `x = f(x)` on both sides: the result takes over `x`
        return self.scope.fresh(hint)

    def _is_dead_after(self, value: SSAValue, op: Operation) -> bool:
        assert self._liveness is not None
        end = self._liveness.end.get(op)
        return end is not None and all(
            op.is_ancestor(use.operation) or self._liveness.last_use_of(use) <= end
            for use in value.uses
        )

    # ------------------------------------------------------ bodies and scopes

    def emit_top_level(self, block: Block) -> None:
        """Definitions separated by two blank lines, as PEP 8 asks."""
        for op in block.ops:
            if isinstance(op, t.ImportOp | t.FromImportOp):
                continue
            self.blank_lines(2)
            self.emit(op)

    def emit_function(self, op: t.MethodOp | t.DefOp, leading: Sequence[str]) -> None:
        """`def name(params):` and its body, in a fresh name scope."""
        for decorator in op.decorators:
            self.require_import_for(decorator.data)
            self.line(f"@{decorator.data}")
        params = [*leading, *(_param(name, default) for name, default in op.params)]
        self.line(f"def {op.sym_name.data}({', '.join(params)}):")
        block = op.body.block
        scope = NameScope(self.scope)
        for name in leading:
            scope.reserve(name)
        for arg, (name, _) in zip(block.args, op.params, strict=True):
            scope.bind(name, arg)
        with self.indented(), self._body_scope(block, scope):
            self.emit_body(block)

    def emit_body(self, block: Block) -> None:
        """`emit_block`, or `pass` if that prints nothing."""
        before = len(self.lines)
        self.emit_block(block)
        if len(self.lines) == before:
            self.line("pass")

    @contextmanager
    def _body_scope(self, block: Block, scope: NameScope) -> Generator[None]:
        saved = (self.scope, self._liveness, self._inline)
        self.scope, self._liveness, self._inline = scope, Liveness(block), set()
        try:
            yield
        finally:
            self.scope, self._liveness, self._inline = saved

    def emit_block(self, block: Block) -> None:
        """The ops of a body as statements, inlining single-use values."""
        pending: list[Operation] = []
        for op in block.ops:
            if _is_atom(op):
                continue
            if self._can_inline(op):
                pending.append(op)
                if len(pending) > MAX_PENDING:
                    # A long chain (`x |> relu |> relu ...`) cannot fit one line anyway:
                    # name its oldest op, so that no expression nests deeper than this
                    # (Python refuses 200 nested brackets) and the width checks stay cheap.
                    self._inline = set()
                    self._assign(pending.pop(0))
                continue
            self._settle(op, pending)
            self.emit(op)

    def _can_inline(self, op: Operation) -> bool:
        if len(op.results) != 1 or op.regions:
            return False
        result = op.results[0]
        uses = list(result.uses)
        if result.name_hint is not None or len(uses) != 1:
            return False
        return uses[0].operation.parent_block() is op.parent_block()

    def _settle(self, statement: Operation, pending: list[Operation]) -> None:
        """Assigns pending ops to names until the rest inline into `statement` in order
        and the statement fits on one line."""
        while pending and not self._fits(statement, pending):
            self._assign_longest_prefix(pending)
        self._inline = set(pending)
        pending.clear()

    def _fits(self, statement: Operation, pending: list[Operation]) -> bool:
        """Whether `statement` evaluates exactly `pending`, in order, within the line length."""
        if self._evaluation_order(statement, set(pending)) != pending:
            return False
        self._inline = set(pending)
        indent = len(self._indent_unit) * self._depth
        return indent + self._statement_width(statement) <= self.line_length

    def _assign_longest_prefix(self, pending: list[Operation]) -> None:
        """Names the latest pending op whose one-line statement takes up all before it."""
        for k in reversed(range(1, len(pending))):
            if self._fits(pending[k], pending[:k]):
                self._assign(pending[k])
                del pending[: k + 1]
                return
        self._inline = set()
        self._assign(pending.pop(0))

    def _statement_width(self, op: Operation) -> int:
        """About how wide `op`'s statement prints (`name = ` counted as 8)."""
        if len(op.results) == 1 and not op.regions:
            return 8 + len(self.expression(op).text)
        return 8 + sum(len(self.value(v).text) + 2 for v in op.operands)

    def _evaluation_order(self, op: Operation, pending: set[Operation]) -> list[Operation]:
        """The pending ops inlined into `op`, in the order Python evaluates them."""
        order: list[Operation] = []
        for operand in _inlinable_operands(op):
            owner = operand.owner
            if isinstance(owner, Operation) and owner in pending:
                order += self._evaluation_order(owner, pending)
                order.append(owner)
        return order

    def _assign(self, op: Operation) -> None:
        text = self.expression(op).text
        result = op.results[0]
        if not result.uses:
            self.line(text)
            return
        name = self._name_for(result, op)
        self.scope.bind(name, result)
        self.line(f"{name} = {text}")

    def _name_for(self, value: SSAValue, op: Operation) -> str:
        """The name a branch or loop body yields it into, when that yield is its one use
        (`if c: y = f(x)`, not `y_1 = f(x)` then `y = y_1`); else the value's name hint
        again if its last holder is dead, else a fresh name."""
        target = self._yield_target(value, op)
        if target is not None:
            return target
        hint = sanitize(value.name_hint or "h")
        holder = self.scope.bound.get(hint)
        if holder is not None and self._is_dead_at(holder, op):
            return hint
        return self.scope.fresh(hint)

    def _yield_target(self, value: SSAValue, op: Operation) -> str | None:
        uses = list(value.uses)
        if len(uses) != 1 or not self._yield_names:
            return None
        user = uses[0].operation
        if not isinstance(user, t.YieldOp) or user.parent_block() is not op.parent_block():
            return None
        names = self._yield_names[-1]
        index = uses[0].index
        if index >= len(names) or names.count(names[index]) > 1:
            return None
        name = names[index]
        holder = self.scope.bound.get(name)
        if holder is not None and not self._is_dead_at(holder, op):
            return None
        return name

    def _is_dead_at(self, value: SSAValue, op: Operation) -> bool:
        """No later statement reads `value` (one in the other branch of an `if` around
        `op` never runs after it)."""
        assert self._liveness is not None
        here = self._liveness.position.get(op)
        if here is None:
            return False
        return all(
            self._liveness.last_use_of(use) <= here or _other_branch(use.operation, op)
            for use in value.uses
        )

    # ------------------------------------------------------------- operands

    def value(self, value: SSAValue) -> PyExpr:
        """How an operand reads here: its name, or its expression inlined."""
        for name, bound in self.scope_chain_items():
            if bound is value:
                return PyExpr(name)
        owner = value.owner
        if isinstance(owner, Operation) and (_is_atom(owner) or owner in self._inline):
            return self.expression(owner)
        raise AssertionError(f"compiler bug: `{value}` printed before it was defined")

    def scope_chain_items(self) -> Iterator[tuple[str, SSAValue | None]]:
        scope: NameScope | None = self.scope
        while scope is not None:
            yield from reversed(scope.bound.items())
            scope = scope.parent

    def call_arguments(self, args: Sequence[SSAValue], names: Sequence[str]) -> list[str]:
        """`["x", "dim=-1"]` for operands and their keyword names."""
        texts = [self.value(a).at_least(Precedence.TERNARY) for a in args]
        return _with_keywords(texts, names)

    # ---------------------------------------------------- expression handlers

    @singledispatchmethod
    def expression(self, op: Operation) -> PyExpr:
        raise NotImplementedError(f"the Python printer cannot print `{op.name}` as a value")

    @expression.register
    def _(self, op: t.ConstantOp) -> PyExpr:
        return python_literal(op.value)

    @expression.register
    def _(self, op: t.SelfAttrOp) -> PyExpr:
        return PyExpr(f"self.{op.attr_name.data}", Precedence.PRIMARY)

    @expression.register
    def _(self, op: t.GlobalOp) -> PyExpr:
        self.require_import_for(op.path.data)
        return PyExpr(op.path.data, Precedence.PRIMARY)

    @expression.register
    def _(self, op: t.CallFunctionOp) -> PyExpr:
        self.require_import_for(op.callee.data)
        return PyExpr.call(op.callee.data, self.call_arguments(op.args, op.keywords))

    @expression.register
    def _(self, op: t.KernelLaunchOp) -> PyExpr:
        return PyExpr.call(op.callee.data, self.call_arguments(op.args, op.keywords))

    @expression.register
    def _(self, op: t.CallModuleOp) -> PyExpr:
        callee = f"self.{op.callee.data}"
        if op.kind.data == "first_of_tuple_self_attention":
            x = self.value(op.args[0]).text
            return PyExpr(f"{callee}({x}, {x}, {x}, need_weights=False)[0]", Precedence.PRIMARY)
        call = PyExpr.call(callee, self.call_arguments(op.args, op.keywords))
        if op.kind.data == "first_of_tuple":
            return PyExpr(f"{call.text}[0]", Precedence.PRIMARY)
        return call

    @expression.register
    def _(self, op: t.CallValueOp) -> PyExpr:
        callee = self.value(op.callee).at_least(Precedence.PRIMARY)
        return PyExpr.call(callee, self.call_arguments(list(op.args), [""] * len(op.args)))

    @expression.register
    def _(self, op: t.CallMethodOp) -> PyExpr:
        receiver = self.value(op.receiver).at_least(Precedence.PRIMARY)
        args = self.call_arguments(op.args, op.keywords)
        return PyExpr.call(f"{receiver}.{op.method.data}", args)

    @expression.register
    def _(self, op: t.BinaryOp) -> PyExpr:
        operator = op.operator.data
        precedence = BINARY_PRECEDENCE[operator]
        left_min, right_min = _operand_precedences(operator, precedence)
        lhs = self.value(op.lhs).at_least(left_min)
        rhs = self.value(op.rhs).at_least(right_min)
        return PyExpr(f"{lhs} {operator} {rhs}", precedence)

    @expression.register
    def _(self, op: t.UnaryOp) -> PyExpr:
        if op.operator.data == "not":
            return PyExpr(f"not {self.value(op.operand).at_least(Precedence.NOT)}", Precedence.NOT)
        operand = self.value(op.operand).at_least(Precedence.UNARY)
        return PyExpr(f"{op.operator.data}{operand}", Precedence.UNARY)

    @expression.register
    def _(self, op: t.TernaryOp) -> PyExpr:
        if_true = self.value(op.if_true).at_least(Precedence.OR)
        condition = self.value(op.condition).at_least(Precedence.OR)
        if_false = self.value(op.if_false).at_least(Precedence.TERNARY)
        return PyExpr(f"{if_true} if {condition} else {if_false}", Precedence.TERNARY)

    @expression.register
    def _(self, op: t.GetItemOp) -> PyExpr:
        value = self.value(op.value).at_least(Precedence.PRIMARY)
        indices = ", ".join(self._index(i) for i in op.indices)
        return PyExpr(f"{value}[{indices}]", Precedence.PRIMARY)

    def _index(self, index: SSAValue) -> str:
        owner = index.owner
        if isinstance(owner, t.SliceOp) and owner in self._inline:
            return self._slice_text(owner)
        return self.value(index).at_least(Precedence.TERNARY)

    def _slice_text(self, op: t.SliceOp) -> str:
        parts = [
            "" if _is_none(v) else self.value(v).at_least(Precedence.TERNARY) for v in op.operands
        ]
        text = f"{parts[0]}:{parts[1]}"
        return f"{text}:{parts[2]}" if parts[2] else text

    @expression.register
    def _(self, op: t.SliceOp) -> PyExpr:
        return PyExpr.call(
            "slice", [self.value(v).at_least(Precedence.TERNARY) for v in op.operands]
        )

    @expression.register
    def _(self, op: t.GetAttrOp) -> PyExpr:
        value = self.value(op.value).at_least(Precedence.PRIMARY)
        return PyExpr(f"{value}.{op.attr_name.data}", Precedence.PRIMARY)

    @expression.register
    def _(self, op: t.ListOp) -> PyExpr:
        return PyExpr(f"[{', '.join(self.call_arguments(op.elements, [''] * len(op.elements)))}]")

    @expression.register
    def _(self, op: t.TupleOp) -> PyExpr:
        items = self.call_arguments(op.elements, [""] * len(op.elements))
        return PyExpr(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})")

    @expression.register
    def _(self, op: t.DropoutOp) -> PyExpr:
        self.require_import_for("F.dropout")
        x = self.value(op.input).at_least(Precedence.TERNARY)
        p = self.value(op.p).at_least(Precedence.TERNARY)
        return PyExpr.call("F.dropout", [x, f"p={p}", "training=self.training"])


# ----------------------------------------------------------------- helpers


MAX_PENDING = 32
"""The most single-use ops the printer holds back to inline into one statement."""


def print_python(root: Operation, source: str | None = None) -> str:
    """The Python text of `root` (a builtin.module or a torch.script)."""
    return PythonPrinter().print_file(root, source)


def write_python(module: ModuleOp, stream: IO[str]) -> None:
    """`tl-opt -t python`: the Python text of `module`, written to `stream`."""
    stream.write(print_python(module))


def _script_source(root: Operation) -> str | None:
    for op in root.walk():
        if isinstance(op, t.ScriptOp) and op.source is not None:
            return op.source.data
    return None


def _module_level_names(op: Operation) -> list[str]:
    if isinstance(op, t.ModuleClassOp | t.DefOp):
        return [op.sym_name.data]
    if isinstance(op, t.ImportOp):
        return [op.alias.data if op.alias else op.module.data.split(".")[0]]
    if isinstance(op, t.FromImportOp):
        return [n.data for n in op.names]
    if isinstance(op, t.RawOp):
        return list(_names_defined_by(op.source.data))
    return []


@lru_cache(maxsize=256)  # the same runtime helpers are in most scripts
def _names_defined_by(source: str) -> tuple[str, ...]:
    names: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [
                n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)
            ]
    return tuple(names)


def _is_atom(op: Operation) -> bool:
    return not op.operands and len(op.results) == 1 and op.has_trait(Pure)


def _other_branch(user: Operation, op: Operation) -> bool:
    """Whether `user` and `op` sit in the two different branches of one `if`."""
    node: Operation | None = user
    while node is not None:
        region = node.parent_region()
        parent = node.parent_op()
        if isinstance(parent, t.IfOp) and region is not None:
            other = parent.else_region if region is parent.then_region else parent.then_region
            return any(inner is op for inner in other.walk())
        node = parent
    return False


def _is_none(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, t.ConstantOp) and isinstance(owner.value, t.NoneAttr)


def _inlinable_operands(op: Operation) -> Sequence[SSAValue]:
    """Operands whose expressions may be inlined into `op` (evaluated once, in order)."""
    if isinstance(op, t.BinaryOp) and op.operator.data in ("and", "or"):
        return [op.lhs]  # the right side may not run at all
    if isinstance(op, t.TernaryOp):
        return [op.condition]  # Python evaluates the condition first, then one side
    if isinstance(op, t.CallModuleOp) and op.kind.data == "first_of_tuple_self_attention":
        return []  # the input is printed three times
    if isinstance(op, t.ForOp):
        return [op.iterable]  # carried values get names before the loop
    return op.operands


def _operand_precedences(operator: str, precedence: Precedence) -> tuple[Precedence, Precedence]:
    """The least precedence each side needs to go without parentheses."""
    tighter = Precedence(precedence + 1)
    if operator == "**":
        return tighter, Precedence.UNARY
    if precedence == Precedence.COMPARE:
        return tighter, tighter  # `a < b < c` would chain
    return precedence, tighter


def _with_keywords(args: Sequence[str], names: Sequence[str]) -> list[str]:
    return [f"{name}={arg}" if name else arg for arg, name in zip(args, names, strict=True)]


def _param(name: str, default: str) -> str:
    return f"{name}={default}" if default else name


def _init_call(op: t.InitTensorOp, module: str) -> str:
    """`nn.init.normal_(self.wte.weight, std=0.02)`; `0.weight` is `[0].weight`."""
    target = module
    for part in op.tensor.data.split("."):
        target += f"[{part}]" if part.isdigit() else f".{part}"
    keywords = [f"{k}={v}" for k, v in op.kwargs]
    return PyExpr.call(f"nn.init.{op.function.data}", [target, *keywords]).text


def _docstring(text: str) -> str:
    return py_docstring(text)


def python_literal(value: Attribute) -> PyExpr:
    """A constant attribute (int, bool, float, str, None, `...`) as a Python literal."""
    if isinstance(value, t.NoneAttr):
        return PyExpr("None")
    if isinstance(value, t.EllipsisAttr):
        return PyExpr("...")
    if isinstance(value, StringAttr):
        return PyExpr(py_string(value.data))
    if isinstance(value, IntegerAttr):
        return _integer(value.value.data, is_bool=str(value.type) == "i1")
    if isinstance(value, FloatAttr):
        return _float(float(value.value.data))
    raise NotImplementedError(f"no Python literal for {value}")


def _integer(number: int, *, is_bool: bool) -> PyExpr:
    if is_bool:
        return PyExpr("True" if number else "False")
    return PyExpr(str(number), Precedence.UNARY if number < 0 else Precedence.ATOM)


def _float(number: float) -> PyExpr:
    if number != number or number in (float("inf"), float("-inf")):
        return PyExpr.call("float", [repr(str(number))])
    return PyExpr(repr(number), Precedence.UNARY if number < 0 else Precedence.ATOM)
