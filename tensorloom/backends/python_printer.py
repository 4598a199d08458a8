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
import hashlib
import keyword
import re
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache, singledispatchmethod
from importlib import import_module
from pathlib import PurePath
from typing import IO, TypeVar

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue, Use
from xdsl.traits import Pure

import tensorloom
from tensorloom.backends import runtime
from tensorloom.diagnostics.ir import span_of
from tensorloom.dialects import py
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
            if isinstance(user, LOOP_OPS):
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
MODEL_CLASS = re.compile(r"class \w+\(nn\.Module\):")
"""A model class's first line: a program file keeps a model's helper modules before it."""
SOURCE_SUFFIXES = (".tl", ".nml")
"""Statements from files of these kinds carry a `# file.tl:LINE` comment (the source map)."""
PRINTED_DIALECTS = frozenset(["py", "torch", "triton"])
LOOP_OPS = (py.ForOp, py.WhileOp)
IMPORT_OPS = (py.ImportOp, py.FromImportOp)
SIMPLE_STATEMENTS = (
    py.AssignOp, py.AugAssignOp, py.ExprOp, py.ImportOp, py.FromImportOp, py.PassOp,
    py.RaiseOp, py.ReturnOp, py.BreakOp, py.ContinueOp,
)  # fmt: skip
"""Statements that sit together without blank lines between them (not `def`, `class`, `if`...)."""
# The import a dotted name needs when it starts with one of these (`F.relu`, `nn.Linear`).
WELL_KNOWN_IMPORTS = {
    "F": Import("torch.nn.functional", alias="F"),
    "nn": Import("torch", name="nn"),
    "torch": Import("torch"),
    "math": Import("math"),
}


class PythonPrinter:
    """Prints torch-dialect IR as Python; see the module docstring."""

    def __init__(self, indent: str = "    ", line_length: int = 100, split: bool = False) -> None:
        self.line_length = line_length
        self.split = split  # the runtime goes to a module beside the program, not into it
        self.runtime_module: RuntimeModule | None = None
        self.lines: list[str] = []
        self.imports: set[Import] = set()
        self.scope = NameScope()
        self._indent_unit = indent
        self._depth = 0
        self._blank = 0
        self._liveness: Liveness | None = None
        self._inline: set[Operation] = set()
        self._yield_names: list[list[str]] = []
        self._targets: set[Operation] = set()  # ops an assignment stores into
        self._runtime: tuple[int, t.RuntimeOp] | None = None
        self._source_line: tuple[str, int] | None = None  # for the next line's `# f.tl:N`
        self._last_source: tuple[str, int] | None = None
        for name in WELL_KNOWN_MODULE_NAMES:
            self.scope.reserve(name)

    # -------------------------------------------------------- output helpers

    def line(self, text: str) -> None:
        """One line at the current indentation (after any pending blank lines)."""
        if self.lines:
            self.lines.extend([""] * self._blank)
        self._blank = 0
        indent = self._indent_unit * self._depth
        if text and self._source_line is not None:
            text = self._with_source_comment(indent, text)
        self.lines.append(f"{indent}{text}" if text else "")

    def mark_source(self, op: Operation) -> None:
        """The next line printed is `op`'s statement: it gets a `# file.tl:LINE` comment
        unless the statement before came from the same line."""
        span = span_of(op)
        if span is None or not span.file.endswith(SOURCE_SUFFIXES):
            return
        where = (PurePath(span.file).name, span.line)
        if where != self._last_source:
            self._source_line = where

    def _with_source_comment(self, indent: str, text: str) -> str:
        assert self._source_line is not None
        name, number = self._source_line
        self._last_source, self._source_line = self._source_line, None
        comment = f"# {py_comment(name)}:{number}"
        if len(indent) + len(text) + 2 + len(comment) <= self.line_length:
            return f"{text}  {comment}"
        self.lines.append(f"{indent}{comment}")  # too long to share a line
        return text

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
        self._paste_runtime()
        origin = f" from {py_comment(source)}" if source else ""
        header = [f"# Generated by TensorLoom {tensorloom.__version__}{origin}; edit the source."]
        imports = format_imports(self._imports_read())
        if self.runtime_module is not None:
            imports += ["", *self.runtime_module.import_lines(self.line_length)]
        top = [*header, "", *imports] if imports else header
        return "\n".join([*top, "", "", *self.lines] if self.lines else top) + "\n"

    def _imports_read(self) -> set[Import]:
        """The imports whose names the printed file reads: a section's fixed imports (`json`
        for `--evaluate`'s record) go when the runtime module does that work instead."""
        if not self.lines:
            return self.imports
        try:
            read = {
                n.id for n in ast.walk(ast.parse("\n".join(self.lines))) if isinstance(n, ast.Name)
            }
        except SyntaxError:  # a fragment of a script (a test's): keep them all
            return self.imports
        return {i for i in self.imports if i.module == "__future__" or i.bound_name in read}

    def _reserve_module_names(self, root: Operation) -> None:
        for op in root.walk():
            for name in _module_level_names(op):
                self.scope.reserve(name)
            if isinstance(op, IMPORT_OPS):
                self.emit(op)
            if isinstance(op, t.RuntimeOp):
                for name in runtime.top_level_names():
                    self.scope.reserve(name)

    def _paste_runtime(self) -> None:
        """Fills in `torch.runtime`: the helpers the rest of the printed file reads."""
        if self._runtime is None:
            return
        index, op = self._runtime
        rest = "\n".join(self.lines[:index] + self.lines[index + 1 :])
        roots = runtime.names_read(rest) | {r.data for r in op.roots}
        pasted = runtime.paste(sorted(roots))
        if self.split and pasted.text:
            self._split_runtime(index, pasted, roots)
            return
        for module, alias, name in pasted.imports:
            self.imports.add(Import(module, alias, name))
        self.lines[index : index + 1] = pasted.text.split("\n") if pasted.text else []

    def _split_runtime(self, index: int, pasted: runtime.Pasted, roots: frozenset[str]) -> None:
        """The program file's way with the runtime: the model parts (runtime.MODEL_MODULES) go
        before the first model class, the rest to a `RuntimeModule` the program imports."""
        model = [d for d in pasted.definitions if d.module in runtime.MODEL_MODULES]
        library = [d for d in pasted.definitions if d not in model]
        del self.lines[index : index + 1]
        while index < len(self.lines) and not self.lines[index]:
            del self.lines[index]  # the blank lines that stood before the paste
        if library:
            read = roots | {n for d in model for n in d.reads}
            names = sorted(read & {n for d in library for n in d.binds})
            self.runtime_module = RuntimeModule.of(runtime.paste_definitions(library), names)
        if not model:
            return
        parts = runtime.paste_definitions(model)
        for module, alias, name in parts.imports:
            self.imports.add(Import(module, alias, name))
        first = next((i for i, line in enumerate(self.lines) if MODEL_CLASS.match(line)), 0)
        self.lines[first:first] = [*parts.text.split("\n"), "", ""]

    # ------------------------------------------------------ statement handlers

    @singledispatchmethod
    def emit(self, op: Operation) -> None:
        """Prints `op` as statements; a value op is assigned to a name."""
        if len(op.results) != 1 or (op.regions and not isinstance(op, INLINE_REGION_OPS)):
            raise NotImplementedError(f"the Python printer has no handler for `{op.name}`")
        self._assign(op)

    @emit.register
    def _(self, op: ModuleOp) -> None:
        # Ops of other dialects at the top level are not lowered yet (`nml.instance`
        # and `train.*` before convert-train-to-torch): they have no Python.
        self.emit_top_level(op.body.block, printed_only=True)

    @emit.register
    def _(self, op: t.ScriptOp) -> None:
        self.emit_top_level(op.body.block)

    @emit.register
    def _(self, op: t.RawOp) -> None:
        for text in op.source.data.rstrip("\n").split("\n"):
            self.line(text)

    @emit.register
    def _(self, op: t.RuntimeOp) -> None:
        if self._runtime is not None:
            raise ValueError("a script holds one `torch.runtime`")
        self.line("# torch.runtime")  # replaced by the pasted helpers in `_paste_runtime`
        self._runtime = (len(self.lines) - 1, op)

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
                if isinstance(method, py.DefOp):
                    self.blank_lines(1)
                    self.emit(method)

    def _emit_init(self, op: t.ModuleClassOp) -> None:
        """`def __init__(self, d_model=512):`, `super().__init__()`, then the class body's
        statements that are not methods (defaults, fields, submodules)."""
        defaults = [f"{n}={self.value(d).at_least(Precedence.TERNARY)}" for n, d in op.params]
        self._signature("__init__", ["self", *defaults], "")
        block = op.body.block
        scope = NameScope(self.scope)
        scope.reserve("self")
        for name, _ in op.params:
            scope.reserve(name)
        with self.indented(), self._body_scope(block, scope):
            self.line("super().__init__()")
            self.emit_block(block, skip=lambda member: isinstance(member, py.DefOp))

    @emit.register
    def _(self, op: t.FieldOp) -> None:
        if self._wrapped(f"self.{op.field_name.data} = ", op.value):
            return
        value = self.value(op.value).at_least(Precedence.LAMBDA)
        self.line(f"self.{op.field_name.data} = {value}")

    @emit.register
    def _(self, op: t.ParamDefaultOp) -> None:
        self.line(f"if {op.param.data} is None:")
        with self.indented():
            self.line(f"{op.param.data} = {self.value(op.value).at_least(Precedence.LAMBDA)}")

    @emit.register
    def _(self, op: t.SubmoduleOp) -> None:
        if self._wrapped(f"self.{op.field_name.data} = ", op.value):
            return
        value = self.value(op.value).at_least(Precedence.LAMBDA)
        self.line(f"self.{op.field_name.data} = {value}")

    @emit.register
    def _(self, op: py.ReturnOp) -> None:
        values = [self.value(v).at_least(Precedence.TERNARY) for v in op.values]
        is_last = op.next_op is None and isinstance(op.parent_op(), py.DefOp)
        if not values and is_last:
            return
        if len(values) == 1 and self._wrapped("return ", op.values[0]):
            return
        self.line(f"return {', '.join(values)}" if values else "return")

    # --------------------------------------------------------- control flow
    #
    # A loop's carried values and a branch's results are SSA values in the IR and
    # one Python name each here: the loop reads and rebinds `x`, a branch binds `x`
    # on both sides. `torch.yield` is the rebinding, printed only where the yielded
    # value is not already in that name.

    @emit.register
    def _(self, op: py.ForOp) -> None:
        block = op.body.block
        count = op.target_count
        names: list[str] = []
        for init, result in zip(op.inits, op.res, strict=True):
            names.append(self._carried_name(init, result, op, taken=names))
        iterable = self.value(op.iterable).at_least(Precedence.OR)
        elements = [self.variable(arg, "item") for arg in block.args[:count]]
        for name, arg in zip(names, block.args[count:], strict=True):
            self.scope.bind(name, arg)
        targets = f"({elements[0]},)" if op.unpack is not None else ", ".join(elements)
        self.line(f"for {targets} in {iterable}:")
        self._yield_names.append(names)
        with self.indented():
            self.emit_body(block)
        self._yield_names.pop()
        for name, result in zip(names, op.res, strict=True):
            self.scope.bind(name, result)

    @emit.register
    def _(self, op: py.IfOp) -> None:
        self._emit_if(op, "if")

    def _emit_if(self, op: py.IfOp, keyword: str) -> None:
        names = [self._result_name(result, op) for result in op.res]
        self.line(f"{keyword} {self.value(op.cond).at_least(Precedence.TERNARY)}:")
        self._yield_names.append(names)
        before = dict(self.scope.bound)
        with self.indented():
            self.emit_body(op.then_region.block)
        # The else branch runs instead of the then branch: names hold what they held before.
        self.scope.bound = before | {n: None for n in self.scope.bound if n not in before}
        else_block = op.else_region.blocks.first
        elif_op, before = _only_if(else_block) if not op.res else (None, [])
        if (
            elif_op is not None
            and all(self._can_inline(b) for b in before)
            and (
                self._fits(elif_op, before)  # the condition's ops inline into `elif ...:`
            )
        ):
            self.mark_source(elif_op)
            self._emit_if(elif_op, "elif")
        elif else_block is not None and else_block.ops:
            else_lines = len(self.lines)
            self.line("else:")
            with self.indented():
                self.emit_body(else_block)
            if self.lines[-1].strip() == "pass":
                del self.lines[else_lines:]
        self._yield_names.pop()
        for name, result in zip(names, op.res, strict=True):
            self.scope.bind(name, result)

    def variable(self, arg: SSAValue, default: str) -> str:
        """The Python name a loop variable, `as` target or parameter-like block argument
        binds: its name hint when this scope reserved that name for the code's own
        variables (a `py.name` reads it) or has it free, else a fresh one."""
        hint = sanitize(arg.name_hint or default)
        taken_here = hint in self.scope.bound and self.scope.bound[hint] is None
        if hint == "_" and not arg.uses:
            name = "_"  # a value nobody reads (`for _ in range(n)`)
        elif taken_here and hint not in RESERVED:
            name = hint
        else:
            name = self.scope.fresh(hint)
        self.scope.bind(name, arg)
        return name

    @emit.register
    def _(self, op: py.YieldOp) -> None:
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

    def _result_name(self, result: SSAValue, op: py.IfOp) -> str:
        """A branch result's name: that of a value a branch yields unchanged, if the
        branch is its last use (`if cond: x = f(x)` keeps `x`), else a fresh one."""
        for region in (op.then_region, op.else_region):
            last = region.block.last_op if region.blocks else None
            if not isinstance(last, py.YieldOp):
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

    # ------------------------------------------------------- py statements

    @emit.register
    def _(self, op: py.ModuleOp) -> None:
        self.emit_top_level(op.body.block)

    @emit.register
    def _(self, op: py.ImportOp) -> None:
        self.require_import(op.module.data, alias=op.alias.data if op.alias else "")

    @emit.register
    def _(self, op: py.FromImportOp) -> None:
        for name in op.names:
            self.require_import(op.module.data, name=name.data)

    def _decorators(self, values: Sequence[SSAValue]) -> None:
        for decorator in values:
            self.line(f"@{self.value(decorator).at_least(Precedence.PRIMARY)}")

    @emit.register
    def _(self, op: py.DefOp) -> None:
        self._decorators(op.decorators)
        defaults, annotations = op.default_of(), op.annotation_of()
        params: list[str] = []
        starred = any(kind == "*" for _, kind in op.params)
        for name, kind in op.params:
            if kind == "kw" and not starred:
                params.append("*")
                starred = True
            text = f"{kind if kind in ('*', '**') else ''}{name}"
            if name in annotations:
                text += f": {self.value(annotations[name]).at_least(Precedence.TERNARY)}"
            if name in defaults:
                space = " " if name in annotations else ""
                value = self.value(defaults[name]).at_least(Precedence.TERNARY)
                text += f"{space}={space}{value}"
            params.append(text)
        returns = ""
        if op.returns is not None:
            returns = f" -> {self.value(op.returns).at_least(Precedence.TERNARY)}"
        self._signature(op.sym_name.data, params, returns)
        self._last_source = None
        block = op.body.block
        scope = NameScope(self.scope)
        for inner in op.body.walk():
            if isinstance(inner, py.NameOp):
                scope.reserve(inner.id.data.split(".")[0])
        for arg, (name, _) in zip(block.args, op.params, strict=True):
            scope.bind(name, arg)
        with self.indented(), self._body_scope(block, scope):
            self._statements(block, spacing=1 if _defines(block) else 0)

    def _signature(self, name: str, params: list[str], returns: str) -> None:
        """`def name(params) -> R:`, its parameters on lines of their own when it is too wide
        for one (as black writes it)."""
        one_line = f"def {name}({', '.join(params)}){returns}:"
        indent = len(self._indent_unit) * self._depth
        if indent + len(one_line) <= self.line_length or not params:
            self.line(one_line)
            return
        self.line(f"def {name}(")
        with self.indented():
            joined = ", ".join(params)
            if indent + len(self._indent_unit) + len(joined) <= self.line_length:
                self.line(joined)
            else:
                for param in params:
                    self.line(f"{param},")
        self.line(f"){returns}:")

    def _statements(self, block: Block, spacing: int = 0) -> None:
        """A body's statements, its docstring first; `pass` if it prints nothing."""
        before = len(self.lines)
        self.emit_block(block, spacing=spacing)
        if len(self.lines) == before:
            self.line("pass")

    @emit.register
    def _(self, op: py.ClassOp) -> None:
        self._decorators(op.decorators)
        bases = self.call_arguments(list(op.bases), [""] * len(op.bases))
        self.line(f"class {op.sym_name.data}({', '.join(bases)}):" if bases else
                  f"class {op.sym_name.data}:")  # fmt: skip
        block = op.body.block
        scope = NameScope(self.scope)
        with self.indented(), self._body_scope(block, scope):
            # a record's fields sit together; methods get a blank line around each
            self._statements(block, spacing=1 if _defines(block) else 0)

    @emit.register
    def _(self, op: py.AssignOp) -> None:
        target = self._target(op.target)
        if op.annotation is not None:
            target += f": {self.value(op.annotation).at_least(Precedence.TERNARY)}"
        before = len(self.lines)
        if op.value is None:
            self.line(target)
        elif not self._wrapped(f"{target} = ", op.value):
            self.line(f"{target} = {self._assigned(op.value)}")
        if op.comment is None:
            return
        comment = f"# {py_comment(op.comment.data)}"
        if len(self.lines[-1]) + 2 + len(comment) <= self.line_length:
            self.lines[-1] += f"  {comment}"  # the statement's last line ends in it
            return
        # too wide for its line: the note goes on a line of its own above the statement
        first = next(i for i in range(before, len(self.lines)) if self.lines[i])
        self.lines.insert(first, f"{self._indent_unit * self._depth}{comment}")

    def _assigned(self, value: SSAValue) -> str:
        """An assigned value: a tuple without its parentheses (`a, b = b, a`)."""
        owner = value.owner
        if isinstance(owner, py.TupleOp) and len(owner.elements) > 1 and owner in self._inline:
            return ", ".join(self.call_arguments(owner.elements, [""] * len(owner.elements)))
        return self.value(value).at_least(Precedence.LAMBDA)

    def _target(self, value: SSAValue) -> str:
        owner = value.owner
        if isinstance(owner, py.TupleOp | py.ListOp):
            items = [self._target(e) for e in owner.elements]
            return items[0] + "," if len(items) == 1 else ", ".join(items)
        return self.value(value).text

    @emit.register
    def _(self, op: py.AugAssignOp) -> None:
        value = self.value(op.value).at_least(Precedence.TERNARY)
        self.line(f"{self._target(op.target)} {op.operator.data} {value}")

    @emit.register
    def _(self, op: py.ExprOp) -> None:
        owner = op.value.owner
        is_doc = (
            all(_is_atom(before) for before in _ops_before(op))
            and isinstance(owner, py.ConstantOp)
            and isinstance(owner.value, StringAttr)
            and isinstance(op.parent_op(), py.DefOp | py.ClassOp | py.ModuleOp)
        )
        if is_doc:
            assert isinstance(owner, py.ConstantOp) and isinstance(owner.value, StringAttr)
            for text in _docstring(owner.value.data).split("\n"):
                self.line(text)
            if isinstance(op.parent_op(), py.ClassOp):
                self.blank_lines(1)  # PEP 257: a blank line after a class's docstring
            return
        if not self._wrapped("", op.value):
            self.line(self.value(op.value).at_least(Precedence.TERNARY))

    def _wrapped(self, prefix: str, value: SSAValue) -> bool:
        """`_wrapped_call` or `_wrapped_collection`: False (nothing printed) if neither."""
        return self._wrapped_call(prefix, value) or self._wrapped_collection(prefix, value)

    def _wrapped_collection(self, prefix: str, value: SSAValue) -> bool:
        """Prints `prefix` and a dict or list display too wide for one line with one entry
        per line, as black does. False (nothing printed) for anything else."""
        owner = value.owner
        if not isinstance(owner, py.DictOp | py.ListOp) or owner not in self._inline:
            return False
        indent = len(self._indent_unit) * self._depth
        entries = self._entries(owner)
        if not entries or indent + len(prefix) + len(self.value(value).text) <= self.line_length:
            return False
        self.line(f"{prefix}{'{' if isinstance(owner, py.DictOp) else '['}")
        with self.indented():
            for entry in entries:
                self.line(f"{entry},")
        self.line("}" if isinstance(owner, py.DictOp) else "]")
        return True

    def _entries(self, op: py.DictOp | py.ListOp) -> list[str]:
        """A dict's `key: value` and `**mapping` items, or a list's elements."""
        if isinstance(op, py.ListOp):
            return self.call_arguments(op.elements, [""] * len(op.elements))
        items: list[str] = []
        for key, value in op.entries():
            if key is None:
                items.append(f"**{self.value(value).at_least(Precedence.BIT_OR)}")
            else:
                text = self.value(value).at_least(Precedence.TERNARY)
                items.append(f"{self.value(key).at_least(Precedence.TERNARY)}: {text}")
        return items

    def _wrapped_call(self, prefix: str, value: SSAValue) -> bool:
        """Prints `prefix` and a call too wide for one line over several, as black does:
        the arguments on one indented line if they fit, else one per line. False (nothing
        printed) for anything else."""
        owner = value.owner
        if not _wrappable(owner) or owner not in self._inline:
            return False
        assert isinstance(owner, py.CallOp)
        return self._call_lines(prefix, owner, self.value(value).text)

    def _call_lines(self, prefix: str, owner: py.CallOp, text: str) -> bool:
        """`prefix` and the call `owner` (printed `text` on one line) over several lines when
        one is too narrow for it; False (nothing printed) when it fits on one."""
        indent = len(self._indent_unit) * self._depth
        if indent + len(prefix) + len(text) <= self.line_length:
            return False
        callee = self.value(owner.callee).at_least(Precedence.PRIMARY)
        texts = [self.value(a).at_least(Precedence.TERNARY) for a in owner.args]
        args = [
            f"{name}{text}" if name in ("*", "**") else f"{name}={text}" if name else text
            for text, name in zip(texts, owner.keywords, strict=True)
        ]
        opening = f"{prefix}{callee}("
        aligned = _filled(args, self.line_length - indent - len(opening))
        if aligned is not None:  # continuation lines aligned with the opening bracket
            lines = [opening + aligned[0], *(" " * len(opening) + a for a in aligned[1:])]
            lines[-1] += ")"
            for text in lines:
                self.line(text)
            return True
        self.line(opening)
        width = self.line_length - indent - len(self._indent_unit)
        lines = _filled(args, width) or [f"{a}," for a in args[:-1]] + args[-1:]
        if len(lines) > 1:  # arguments over several lines: a comma after the last one too
            lines[-1] += ","
        with self.indented():
            for text in lines:
                self.line(text)
        self.line(")")
        return True

    @emit.register
    def _(self, op: py.PassOp) -> None:
        self.line("pass")

    @emit.register
    def _(self, op: py.CommentOp) -> None:
        for text in op.text.data.split("\n"):
            self.line(f"# {py_comment(text)}" if text else "#")

    @emit.register
    def _(self, op: py.BreakOp) -> None:
        self.line("break")

    @emit.register
    def _(self, op: py.ContinueOp) -> None:
        self.line("continue")

    @emit.register
    def _(self, op: py.RaiseOp) -> None:
        if op.exception is None:
            self.line("raise")
            return
        text = f"raise {self.value(op.exception).at_least(Precedence.TERNARY)}"
        if op.cause is not None:
            text += f" from {self.value(op.cause).at_least(Precedence.TERNARY)}"
        self.line(text)

    @emit.register
    def _(self, op: py.WhileOp) -> None:
        block = op.before.block
        condition = block.last_op
        assert isinstance(condition, py.ConditionOp)
        with self._inline_region(block):
            test = self.value(condition.value).at_least(Precedence.TERNARY)
        self.line(f"while {test}:")
        with self.indented():
            self._statements(op.body.block)

    @emit.register
    def _(self, op: py.WithOp) -> None:
        manager = self.value(op.manager).at_least(Precedence.TERNARY)
        block = op.body.block
        bound = f" as {self.variable(block.args[0], 'value')}" if block.args else ""
        self.line(f"with {manager}{bound}:")
        with self.indented():
            self._statements(block)

    @emit.register
    def _(self, op: py.TryOp) -> None:
        kinds = [self._except_kind(kind) for kind in op.types]  # before the body reuses _inline
        self.line("try:")
        with self.indented():
            self._statements(op.body.block)
        for kind, handler in zip(kinds, op.handlers, strict=True):
            block = handler.block
            name = self.variable(block.args[0], "error") if block.args else None
            self._except_line(*kind, f" as {name}:" if name else ":")
            with self.indented():
                self._statements(block)
            if name is not None:
                self.scope.bound[name] = None  # Python unbinds it when the handler ends
        for clause, region in (("else", op.orelse), ("finally", op.finalbody)):
            if region.blocks and region.block.ops:
                self.line(f"{clause}:")
                with self.indented():
                    self._statements(region.block)

    def _except_kind(self, kind: SSAValue) -> tuple[str, list[str] | None]:
        """An `except` clause's exception type, and the elements of a tuple written there."""
        owner = kind.owner
        text = self.value(kind).at_least(Precedence.TERNARY)
        if not isinstance(owner, py.TupleOp) or owner not in self._inline:
            return text, None
        return text, self.call_arguments(owner.elements, [""] * len(owner.elements))

    def _except_line(self, text: str, names: list[str] | None, ending: str) -> None:
        """`except (A, B) as error:`; a tuple too wide for one line continues under its
        first element."""
        indent = len(self._indent_unit) * self._depth
        if indent + len(f"except {text}{ending}") <= self.line_length or names is None:
            self.line(f"except {text}{ending}")
            return
        opening = "except ("
        lines = _filled(names, self.line_length - indent - len(opening) - len(ending)) or names
        self.line(opening + lines[0])
        for line in lines[1:]:
            self.line(" " * len(opening) + line)
        self.lines[-1] += ")" + ending

    @contextmanager
    def _inline_region(self, block: Block) -> Generator[None]:
        """Prints the ops of an expression region (a `while` condition, a lambda's or a
        comprehension's body) inside the one expression that uses them."""
        saved = self._inline
        self._inline = self._inline | {op for op in block.ops if op.results}
        try:
            yield
        finally:
            self._inline = saved

    # ------------------------------------------------------ bodies and scopes

    def emit_top_level(self, block: Block, printed_only: bool = False) -> None:
        """Definitions separated by two blank lines, as PEP 8 asks; simple statements
        (assignments, expressions) together. With `printed_only`, ops of dialects that
        have no Python (not lowered yet) are left out."""
        saved = (self._liveness, self._inline)
        self._liveness, self._inline = Liveness(block), set()
        skip = _not_printed if printed_only else None
        try:
            self.emit_block(block, spacing=2, skip=skip)
        finally:
            self._liveness, self._inline = saved

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

    def emit_block(
        self,
        block: Block,
        spacing: int = 0,
        skip: Callable[[Operation], bool] | None = None,
    ) -> None:
        """The ops of a body as statements, inlining single-use values. With `spacing`,
        `spacing` blank lines go around each definition or compound statement."""
        pending: list[Operation] = []
        previous: bool | None = None  # whether the statement before was a simple one
        attached = False  # the statement before was a comment: no blank lines after it
        for op in block.ops:
            if _is_atom(op) or (skip is not None and skip(op)):
                continue
            if self._is_target(op):
                self._targets.add(op)
                continue
            if spacing and not isinstance(op, IMPORT_OPS) and not self._can_inline(op):
                simple = isinstance(op, SIMPLE_STATEMENTS) or bool(op.results)
                if previous is not None and not (simple and previous) and not attached:
                    self.blank_lines(spacing)
                # a one-line comment titles the statement after it; a paragraph stands alone
                attached = isinstance(op, py.CommentOp) and "\n" not in op.text.data
                previous = simple
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
            if (not spacing or isinstance(op, SIMPLE_STATEMENTS)) and not isinstance(
                op, (*UNSPLIT_STATEMENTS, *IMPORT_OPS, py.YieldOp)
            ):  # not on `class`, `def`, imports, `__init__`'s layers, nor a branch's moves
                self.mark_source(op)
            printed = len(self.lines)
            self.emit(op)
            if len(self.lines) == printed:
                self._source_line = None  # it printed nothing (a yield into its own name)

    def _is_target(self, op: Operation) -> bool:
        """Whether `op` is printed in place at its one use, never evaluated into a
        temporary nor ordered with the pending values: what an assignment stores into,
        and a method looked up to be called (`x.view` of `x.view(b, n)`, which Python
        looks up after `x` and before the arguments, wherever the IR computes them)."""
        if len(op.results) != 1 or not isinstance(
            op, py.NameOp | py.AttributeOp | py.SubscriptOp | py.TupleOp | py.ListOp
        ):
            return False
        uses = list(op.results[0].uses)
        if len(uses) != 1 or (op.results[0].name_hint is not None and not _is_store(uses[0])):
            return False
        user, index = uses[0].operation, uses[0].index
        if isinstance(user, py.AssignOp | py.AugAssignOp) and index == 0:
            return True
        if isinstance(op, py.AttributeOp) and isinstance(user, py.CallOp) and index == 0:
            return user.parent_block() is op.parent_block()
        return isinstance(user, py.TupleOp | py.ListOp) and self._is_target(user)

    def _can_inline(self, op: Operation) -> bool:
        if len(op.results) != 1 or (op.regions and not isinstance(op, INLINE_REGION_OPS)):
            return False
        result = op.results[0]
        uses = list(result.uses)
        if result.name_hint is not None or len(uses) != 1:
            return False
        return uses[0].operation.parent_block() is op.parent_block()

    def _settle(self, statement: Operation, pending: list[Operation]) -> None:
        """Assigns pending ops to names until the rest inline into `statement` in order
        and the statement fits on one line."""
        whole = _whole_value(statement)  # `h = f(...)` then `h` would be no shorter
        while pending and not self._fits(statement, pending):
            if pending == [whole]:
                break
            self._assign_longest_prefix(pending, whole)
        self._inline = set(pending)
        pending.clear()

    def _fits(self, statement: Operation, pending: list[Operation]) -> bool:
        """Whether `statement` evaluates exactly `pending`, in order, within the line length."""
        if self._evaluation_order(statement, set(pending)) != pending:
            return False
        self._inline = set(pending)
        if isinstance(statement, (*UNSPLIT_STATEMENTS, py.TryOp, py.DefOp)):  # their lines wrap
            return True
        indent = len(self._indent_unit) * self._depth
        return indent + self._statement_width(statement) <= self.line_length

    def _assign_longest_prefix(self, pending: list[Operation], whole: Operation | None) -> None:
        """Names the latest pending op (not `whole`, the statement's own value) whose one-line
        statement takes up all before it."""
        for k in reversed(range(1, len(pending))):
            if pending[k] is not whole and self._fits(pending[k], pending[:k]):
                self._assign(pending[k])
                del pending[: k + 1]
                return
        self._inline = set()
        self._assign(pending.pop(0))

    def _statement_width(self, op: Operation) -> int:
        """About how wide `op`'s statement prints (`name = ` counted as 8); a call of
        literals and names is as wide as its widest argument, since it wraps."""
        value = None
        if isinstance(op, py.ExprOp | py.AssignOp) and op.value is not None:
            value = op.value.owner
        elif isinstance(op, py.ReturnOp) and len(op.values) == 1:
            value = op.values[0].owner
        if _wrappable(value):
            assert isinstance(value, py.CallOp)
            widest = max((len(self.value(a).text) for a in value.args), default=0)
            return 8 + max(widest, len(self.value(value.callee).text)) + 2
        if isinstance(value, py.DictOp | py.ListOp) and value in self._inline:
            entries = self._entries(value)  # one a line when they do not fit on one
            return 8 + max((len(e) for e in entries), default=0) if entries else 10
        if len(op.results) == 1 and not op.regions:
            return 8 + len(self.expression(op).text)
        if isinstance(op, py.ExprOp):
            return len(self.value(op.value).text)  # no `name = `: as wide as it prints
        if isinstance(op, py.AssignOp) and op.value is not None and op.annotation is None:
            return len(self._target(op.target)) + 3 + len(self.value(op.value).text)
        return 8 + sum(len(self.value(v).text) + 2 for v in op.operands)

    def _evaluation_order(self, op: Operation, pending: set[Operation]) -> list[Operation]:
        """The pending ops inlined into `op`, in the order Python evaluates them."""
        order: list[Operation] = []
        for operand in _inlinable_operands(op):
            owner = operand.owner
            if isinstance(owner, Operation) and owner in self._targets:
                order += self._evaluation_order(owner, pending)  # `x[i + 1] = ...`
            elif isinstance(owner, Operation) and owner in pending:
                order += self._evaluation_order(owner, pending)
                order.append(owner)
        return order

    def _assign(self, op: Operation) -> None:
        self.mark_source(op)
        text = self.expression(op).text
        result = op.results[0]
        if not result.uses:
            self.line(text)
            return
        name = self._name_for(result, op)
        self.scope.bind(name, result)
        if (
            isinstance(op, py.CallOp)
            and _wrappable(op)
            and self._call_lines(f"{name} = ", op, text)
        ):
            return
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
        if not isinstance(user, py.YieldOp) or user.parent_block() is not op.parent_block():
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
        if isinstance(owner, Operation) and (
            _is_atom(owner) or owner in self._inline or owner in self._targets
        ):
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

    # ------------------------------------------------------ py expressions

    @expression.register
    def _(self, op: py.ConstantOp) -> PyExpr:
        return python_literal(op.value)

    @expression.register
    def _(self, op: py.NameOp) -> PyExpr:
        self.require_import_for(op.id.data)
        dotted = "." in op.id.data
        return PyExpr(op.id.data, Precedence.PRIMARY if dotted else Precedence.ATOM)

    @expression.register
    def _(self, op: py.AttributeOp) -> PyExpr:
        value = self.value(op.value)
        text = value.at_least(Precedence.PRIMARY)
        if value.precedence == Precedence.ATOM and text.isdigit():
            text = f"({text})"  # `(1).real`, not `1.real`
        return PyExpr(f"{text}.{op.attr.data}", Precedence.PRIMARY)

    @expression.register
    def _(self, op: py.SubscriptOp) -> PyExpr:
        value = self.value(op.value).at_least(Precedence.PRIMARY)
        indices = [self._py_index(i) for i in op.indices]
        text = indices[0] + "," if len(indices) == 1 and _is_tuple(op.indices[0]) else ""
        return PyExpr(f"{value}[{text or ', '.join(indices)}]", Precedence.PRIMARY)

    def _py_index(self, index: SSAValue) -> str:
        owner = index.owner
        if isinstance(owner, py.SliceOp) and (owner in self._inline or _is_atom(owner)):
            parts = [
                self.value(v).at_least(Precedence.TERNARY) if v is not None else ""
                for v in (owner.lower, owner.upper, owner.step)
            ]
            return ":".join(parts) if parts[2] else f"{parts[0]}:{parts[1]}"
        if isinstance(owner, py.TupleOp) and owner in self._inline and owner.elements:
            return ", ".join(self._py_index(e) for e in owner.elements)
        return self.value(index).at_least(Precedence.TERNARY)

    @expression.register
    def _(self, op: py.SliceOp) -> PyExpr:
        parts = [
            self.value(v).at_least(Precedence.TERNARY) if v is not None else "None"
            for v in (op.lower, op.upper, op.step)
        ]
        return PyExpr.call("slice", parts)

    @expression.register
    def _(self, op: py.CallOp) -> PyExpr:
        callee = self.value(op.callee).at_least(Precedence.PRIMARY)
        texts = [self.value(a).at_least(Precedence.TERNARY) for a in op.args]
        args = [
            f"{name}{text}" if name in ("*", "**") else f"{name}={text}" if name else text
            for text, name in zip(texts, op.keywords, strict=True)
        ]
        if len(args) == 1 and not op.keywords[0] and self._inline_generator(op.args[0]):
            return PyExpr.call(callee, [args[0][1:-1]])  # `sum(x for x in xs)`, as Python allows
        return PyExpr.call(callee, args)

    def _inline_generator(self, value: SSAValue) -> bool:
        owner = value.owner
        return (
            isinstance(owner, py.ComprehensionOp)
            and owner.kind.data == "generator"
            and owner in self._inline
        )

    @expression.register
    def _(self, op: py.BinOp) -> PyExpr:
        operator = op.operator.data
        precedence = BINARY_PRECEDENCE[operator]
        left_min, right_min = _operand_precedences(operator, precedence)
        lhs = self.value(op.lhs).at_least(left_min)
        rhs = self.value(op.rhs).at_least(right_min)
        return PyExpr(f"{lhs} {operator} {rhs}", precedence)

    @expression.register
    def _(self, op: py.UnaryOp) -> PyExpr:
        if op.operator.data == "not":
            return PyExpr(f"not {self.value(op.operand).at_least(Precedence.NOT)}", Precedence.NOT)
        operand = self.value(op.operand).at_least(Precedence.UNARY)
        return PyExpr(f"{op.operator.data}{operand}", Precedence.UNARY)

    @expression.register
    def _(self, op: py.CompareOp) -> PyExpr:
        tighter = Precedence(Precedence.COMPARE + 1)
        parts = [self.value(op.operands_[0]).at_least(tighter)]
        for operator, operand in zip(op.operators, op.operands_[1:], strict=True):
            parts.append(f"{operator.data} {self.value(operand).at_least(tighter)}")
        return PyExpr(" ".join(parts), Precedence.COMPARE)

    @expression.register
    def _(self, op: py.IfExpOp) -> PyExpr:
        if_true = self.value(op.if_true).at_least(Precedence.OR)
        condition = self.value(op.condition).at_least(Precedence.OR)
        if_false = self.value(op.if_false).at_least(Precedence.TERNARY)
        return PyExpr(f"{if_true} if {condition} else {if_false}", Precedence.TERNARY)

    @expression.register
    def _(self, op: py.TupleOp) -> PyExpr:
        items = self.call_arguments(op.elements, [""] * len(op.elements))
        return PyExpr(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})")

    @expression.register
    def _(self, op: py.ListOp) -> PyExpr:
        return PyExpr(f"[{', '.join(self.call_arguments(op.elements, [''] * len(op.elements)))}]")

    @expression.register
    def _(self, op: py.DictOp) -> PyExpr:
        return PyExpr(f"{{{', '.join(self._entries(op))}}}")

    @expression.register
    def _(self, op: py.FStringOp) -> PyExpr:
        fields = op.fields()
        texts = [self.value(v).at_least(Precedence.TERNARY) for v in op.values]
        quote = next((q for q in ('"', "'") if not any(q in t or "\\" in t for t in texts)), None)
        if quote is None:  # Python before 3.12 takes no quotes or backslashes in fields
            template = py_string(op.template.data)
            args = ", ".join(texts)
            return PyExpr.call(f"{template}.format", [args] if args else [])
        body, values_left = "", iter(texts)
        for literal, has_field, conversion, spec in fields:
            body += _fstring_literal(literal, quote)
            if not has_field:
                continue
            text = next(values_left)
            text = f" {text} " if text.startswith("{") else text
            body += "{" + text + (f"!{conversion}" if conversion else "")
            body += (f":{spec}" if spec else "") + "}"
        return PyExpr(f"f{quote}{body}{quote}")

    @expression.register
    def _(self, op: py.LambdaOp) -> PyExpr:
        block = op.body.block
        saved = self.scope
        self.scope = NameScope(saved)
        try:
            names = [
                self.variable(arg, name.data)
                for arg, name in zip(block.args, op.arg_names, strict=True)
            ]
            last = block.last_op
            assert isinstance(last, py.ReturnOp)
            with self._inline_region(block):
                body = self.value(last.values[0]).at_least(Precedence.TERNARY)
        finally:
            self.scope = saved
        params = f" {', '.join(names)}" if names else ""
        return PyExpr(f"lambda{params}: {body}", Precedence.LAMBDA)

    @expression.register
    def _(self, op: py.ComprehensionOp) -> PyExpr:
        block = op.body.block
        iterable = self.value(op.iterable).at_least(Precedence.OR)
        saved = self.scope
        self.scope = NameScope(saved)
        try:
            names = [self.variable(arg, "item") for arg in block.args]
            last = block.last_op
            assert isinstance(last, py.YieldOp)
            count = 2 if op.kind.data == "dict" else 1  # `key: value`, or the element
            with self._inline_region(block):
                parts = [self.value(v).at_least(Precedence.TERNARY) for v in last.values[:count]]
                test = (
                    f" if {self.value(last.values[count]).at_least(Precedence.OR)}"
                    if len(last.values) > count
                    else ""
                )
        finally:
            self.scope = saved
        inner = f"{': '.join(parts)} for {', '.join(names)} in {iterable}{test}"
        brackets = {"list": "[]", "set": "{}", "generator": "()", "dict": "{}"}[op.kind.data]
        return PyExpr(f"{brackets[0]}{inner}{brackets[1]}")


# ----------------------------------------------------------------- helpers


MAX_PENDING = 32
"""The most single-use ops the printer holds back to inline into one statement."""


def print_python(root: Operation, source: str | None = None) -> str:
    """The Python text of `root` (a builtin.module or a torch.script), runtime included."""
    register_handlers()
    return PythonPrinter().print_file(root, source)


@dataclass(frozen=True, slots=True)
class RuntimeModule:
    """The runtime a program reaches, as a module of its own beside the program file.

    Its name holds TensorLoom's version and a hash of its text, so two programs (whose
    pruned runtimes differ) or two versions never write the same file with other contents.
    """

    name: str  # the module name, `tensorloom_rt_0_2_0_1a2b3c4d`
    text: str  # the file's contents
    names: tuple[str, ...]  # what the program imports from it

    @staticmethod
    def of(pasted: runtime.Pasted, names: list[str]) -> RuntimeModule:
        imports = format_imports({Import(*i) for i in pasted.imports})
        doc = '"""The TensorLoom runtime helpers a program calls (`tensorloom/backends/runtime/`).'
        body = [
            f"# Generated by TensorLoom {tensorloom.__version__} for the program beside it.",
            doc, "", "Pruned to what that program reaches; it needs only torch and the standard",
            'library, as the program does.', '"""', "", "from __future__ import annotations", "",
            *imports, "", "", pasted.text,
        ]  # fmt: skip
        text = "\n".join(body).rstrip("\n") + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        version = re.sub(r"\W", "_", tensorloom.__version__)
        return RuntimeModule(f"tensorloom_rt_{version}_{digest}", text, tuple(names))

    @property
    def file_name(self) -> str:
        return f"{self.name}.py"

    def import_lines(self, line_length: int) -> list[str]:
        """`from tensorloom_rt_... import (` and the names, filled to the line length."""
        lines, current = [f"from {self.name} import ("], "   "
        for name in self.names:
            if len(current) + len(name) + 2 > line_length:
                lines.append(current.rstrip())
                current = "   "
            current += f" {name},"
        return [*lines, current, ")"]


@dataclass(frozen=True, slots=True)
class PrintedProgram:
    """`tlc compile`'s two files: the program, and the runtime module it imports (None for a
    program without a train block, which needs no runtime)."""

    program: str
    runtime: RuntimeModule | None


def print_program(root: Operation, source: str | None = None) -> PrintedProgram:
    """The program file of `root` and its runtime module (see `RuntimeModule`)."""
    register_handlers()
    printer = PythonPrinter(split=True)
    text = printer.print_file(root, source)
    return PrintedProgram(text, printer.runtime_module)


def register_handlers() -> None:
    """Registers the handlers other backend modules define: the one place that loads them.

    They import this module for `PythonPrinter`, so they are loaded here, not at the top.
    """
    import_module("tensorloom.backends.print_triton")


def write_python(module: ModuleOp, stream: IO[str]) -> None:
    """`tl-opt -t python`: the Python text of `module`, written to `stream`."""
    stream.write(print_python(module))


def _script_source(root: Operation) -> str | None:
    for op in root.walk():
        if isinstance(op, t.ScriptOp) and op.source is not None:
            return op.source.data
    return None


def _module_level_names(op: Operation) -> list[str]:
    if isinstance(op, t.ModuleClassOp):
        return [op.sym_name.data]
    if isinstance(op, py.ImportOp):
        return [op.alias.data if op.alias else op.module.data.split(".")[0]]
    if isinstance(op, py.FromImportOp):
        return [n.data for n in op.names]
    if isinstance(op, py.DefOp | py.ClassOp) and isinstance(op.parent_op(), MODULE_OPS):
        return [op.sym_name.data]
    if isinstance(op, py.AssignOp | py.AugAssignOp) and isinstance(op.parent_op(), MODULE_OPS):
        return [o.id.data for o in _target_names(op.target)]
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


MODULE_OPS = (ModuleOp, t.ScriptOp, py.ModuleOp)
UNSPLIT_STATEMENTS = (t.SubmoduleOp, t.FieldOp, t.ParamDefaultOp, t.ModuleClassOp)
"""`__init__`'s statements keep their constructor call on one line, however long (a
temporary would make `self.blocks = h` of `h = nn.ModuleList([...])`)."""
INLINE_REGION_OPS = (py.LambdaOp, py.ComprehensionOp)
"""Value ops with a region that print as one expression."""


def _is_atom(op: Operation) -> bool:
    """Printed at each use and never named: constants, names, and attributes of those
    (`self.fc1`, `torch.float16`), read where they are used."""
    if isinstance(op, py.AttributeOp):
        owner = op.value.owner
        return isinstance(owner, Operation) and _is_atom(owner)
    return not op.operands and len(op.results) == 1 and op.has_trait(Pure)


def _filled(args: Sequence[str], width: int) -> list[str] | None:
    """`args` packed greedily into lines of at most `width` (each line but the last ends in
    a comma, the last leaves room for a closing bracket); None if one does not fit."""
    lines: list[str] = []
    for arg in args:
        if lines and len(lines[-1]) + 2 + len(arg) + 1 <= width:
            lines[-1] += f", {arg}"
        else:
            if lines:
                lines[-1] += ","
            lines.append(arg)
        if len(lines[-1]) + 1 > width:
            return None
    return lines


def _simple_argument(op: object) -> bool:
    """A literal, a name, `name.attr.attr`, or a tuple or list of literals and names."""
    if isinstance(op, py.TupleOp | py.ListOp):
        return all(isinstance(e.owner, Operation) and _is_atom(e.owner) for e in op.elements)
    while isinstance(op, py.AttributeOp):
        op = op.value.owner
    return isinstance(op, Operation) and _is_atom(op)


def _call_free(value: SSAValue) -> bool:
    """An expression of names, literals, attributes, subscripts, comparisons and operators:
    evaluating it early or late is the same (so `a and b` may inline `b`)."""
    owner = value.owner
    if not isinstance(owner, Operation) or _is_atom(owner):
        return True
    pure = (py.AttributeOp, py.CompareOp, py.UnaryOp, py.BinOp, py.SubscriptOp, py.TupleOp,
            py.ListOp, py.DictOp)  # fmt: skip
    return isinstance(owner, pure) and all(_call_free(o) for o in owner.operands)


def _wrappable(op: object) -> bool:
    """A call of a name or `name.attr` whose arguments are flat (`_flat_argument`:
    `parser.add_argument("--epochs", type=int, default=EPOCHS)`, `should_compile(mode,
    steps=total_train_steps(args.epochs, n // GRAD_ACCUM, args.max_steps))`): printed over
    several lines when it is too wide for one, rather than through temporaries."""
    if not isinstance(op, py.CallOp) or not op.args:
        return False
    return _simple_argument(op.callee.owner) and all(_flat_argument(a) for a in op.args)


FLAT_OPS = (py.CallOp, py.BinOp, py.CompareOp, py.UnaryOp, py.IfExpOp, py.TupleOp, py.ListOp,
            py.ComprehensionOp)  # fmt: skip
FLAT_DEPTH = 3
"""How deep a wrapped call's argument may nest calls and operators; a forward's longer
chain (`self.fc3(F.relu(self.fc2(F.relu(...))))`) is named a step at a time instead."""


def _flat_argument(value: SSAValue, depth: int = FLAT_DEPTH) -> bool:
    """A literal, a name or an attribute of those, or a call or operator over such values
    at most `depth` deep: an argument a wrapped call prints on a line of its own."""
    owner = value.owner
    while isinstance(owner, py.AttributeOp):
        owner = owner.value.owner
    if not isinstance(owner, Operation) or _is_atom(owner):
        return True
    if depth == 0 or not isinstance(owner, FLAT_OPS):
        return False
    return all(_flat_argument(o, depth - 1) for o in owner.operands)


def _whole_value(statement: Operation) -> Operation | None:
    """The op whose value an expression statement, an assignment or a one-value return
    prints whole."""
    value = None
    if isinstance(statement, py.ExprOp | py.AssignOp):
        value = statement.value
    elif isinstance(statement, py.ReturnOp) and len(statement.values) == 1:
        value = statement.values[0]
    return value.owner if value is not None and isinstance(value.owner, Operation) else None


def _other_branch(user: Operation, op: Operation) -> bool:
    """Whether `user` and `op` sit in the two different branches of one `if`."""
    node: Operation | None = user
    while node is not None:
        region = node.parent_region()
        parent = node.parent_op()
        if isinstance(parent, py.IfOp) and region is not None:
            other = parent.else_region if region is parent.then_region else parent.then_region
            return any(inner is op for inner in other.walk())
        node = parent
    return False


def _ops_before(op: Operation) -> Iterator[Operation]:
    before = op.prev_op
    while before is not None:
        yield before
        before = before.prev_op


def _is_tuple(value: SSAValue) -> bool:
    return isinstance(value.owner, py.TupleOp)


def _defines(block: Block) -> bool:
    """Whether a body defines functions or classes (blank lines go around them)."""
    return any(isinstance(op, py.DefOp | py.ClassOp) for op in block.ops)


def _fstring_literal(text: str, quote: str) -> str:
    """The literal part of an f-string: escaped for `quote`, braces doubled."""
    body = py_string(text)[1:-1]
    if quote == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    return body.replace("{", "{{").replace("}", "}}")


def _is_store(use: Use) -> bool:
    user = use.operation
    if isinstance(user, py.AssignOp | py.AugAssignOp):
        return use.index == 0
    return isinstance(user, py.TupleOp | py.ListOp) and all(_is_store(u) for u in user.result.uses)


def _only_if(block: Block | None) -> tuple[py.IfOp | None, list[Operation]]:
    """The `py.if` that ends an else block with nothing else to print (`elif`), and the
    ops before it that are not atoms (they must inline into its condition)."""
    if block is None or not isinstance(block.last_op, py.IfOp) or block.last_op.res:
        return None, []
    before = [op for op in block.ops if op is not block.last_op and not _is_atom(op)]
    return block.last_op, before


def _target_names(value: SSAValue) -> list[py.NameOp]:
    owner = value.owner
    if isinstance(owner, py.NameOp):
        return [owner]
    if isinstance(owner, py.TupleOp | py.ListOp):
        return [n for e in owner.elements for n in _target_names(e)]
    return []


def _inlinable_operands(op: Operation) -> Sequence[SSAValue]:
    """Operands whose expressions may be inlined into `op` (evaluated once, in order)."""
    if isinstance(op, py.BinOp) and op.operator.data in ("and", "or"):
        if _call_free(op.rhs):
            return [op.lhs, op.rhs]  # running it or not changes nothing
        return [op.lhs]  # the right side may not run at all
    if isinstance(op, py.IfExpOp):  # Python evaluates the condition first, then one side
        sides = [op.if_true, op.if_false]
        return [op.condition, *sides] if all(_call_free(s) for s in sides) else [op.condition]
    if isinstance(op, py.CompareOp) and len(op.operands_) > 2:
        return op.operands_[:2]  # a chain stops at the first false comparison
    if isinstance(op, py.AssignOp):
        annotation = [op.annotation] if op.annotation is not None else []
        value = [op.value] if op.value is not None else []
        return [*value, *annotation, op.target]  # the value first, then the target's parts
    if isinstance(op, py.AugAssignOp):
        return [op.target, op.value]
    if isinstance(op, py.ForOp):
        return [op.iterable]  # carried values get names before the loop
    if isinstance(op, py.LambdaOp | py.ComprehensionOp | py.WhileOp):
        return op.operands  # a body's own values are printed inside it
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


def _not_printed(op: Operation) -> bool:
    return op.dialect_name() not in PRINTED_DIALECTS


def _docstring(text: str) -> str:
    return py_docstring(text)


def python_literal(value: Attribute) -> PyExpr:
    """A constant attribute (int, bool, float, str, None, `...`) as a Python literal."""
    if isinstance(value, py.NoneAttr):
        return PyExpr("None")
    if isinstance(value, py.EllipsisAttr):
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
        return PyExpr.call("float", [py_string(str(number))])  # `float("inf")`
    return PyExpr(repr(number), Precedence.UNARY if number < 0 else Precedence.ATOM)
