"""The compiler's stages, as data, and the driver that runs them.

    tokens -> ast -> nml -> train -> kernel -> torch -> python

Each stage is a name (what `tlc compile --emit=<stage>` prints) and the passes
it runs, by registered name (tensorloom/passes/__init__.py). The pipeline fails
closed: a pass that is not registered, or whose module does not import, is an
internal error (TL0901, exit status 3), never a silent skip. The driver stops
after the first stage that reported an error, so later passes only ever see IR
that checked clean.

    result = compile_file(Path("mnist.tl"), until="nml")
    result.module        # the IR after the nml stage (None if it stopped earlier)
    result.sink          # every diagnostic, from every stage
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tensorloom import REPORT_URL
from tensorloom.diagnostics import INTERNAL_ERROR, Diagnostic, DiagnosticSink
from tensorloom.recursion import deep
from tensorloom.source import SourceMap, Span

# xDSL loads only when a stage needs it, so that `tlc tokens` and `tlc ast`
# start fast.
if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from tensorloom.backends.python_printer import PrintedProgram
    from tensorloom.frontend import ast
    from tensorloom.frontend.imports import Program
    from tensorloom.passes import PassFactory


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    passes: tuple[str, ...]
    prints: str


STAGES: tuple[Stage, ...] = (
    Stage("tokens", (), "the token stream"),
    Stage("ast", (), "the AST"),
    Stage(
        "nml",
        ("desugar-pipes", "resolve-nml", "instantiate", "shape-inference", "check-scopes"),
        "nml/train/kernel IR with shapes",
    ),
    Stage(
        "train",
        (
            "check-train", "check-weights", "train-config", "insert-amp", "insert-ddp",
            "insert-compile",
            "activation-checkpointing", "infer-synthetic-data",
        ),
        "IR with the train loop's AMP/DDP/compile ops",
    ),
    Stage("kernel", ("check-kernels", "synthesize-launchers"), "IR with launcher ops"),
    Stage(
        "torch",
        (
            "merge-specializations", "mangle-names", "convert-nml-to-torch",
            "convert-train-to-torch",
            "convert-kernel-to-triton",
        ),
        "the emission dialects",
    ),
    Stage("python", (), "the script"),
)  # fmt: skip
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
IR_STAGES: tuple[str, ...] = ("nml", "train", "kernel", "torch")
CHECK_PASSES: tuple[str, ...] = (
    "desugar-pipes", "resolve-nml", "instantiate", "shape-inference", "check-scopes",
    "check-train", "check-weights", "check-kernels", "synthesize-launchers",
)  # fmt: skip
"""The passes `tlc check` runs: every pass that reports diagnostics, so that
`tlc check` finds whatever `tlc compile` would (the kernel checks TL0501-TL0507
included). Each reports what it finds and leaves valid IR, so the next one still
runs after an error: a file's errors are reported together."""


REPORT_TOGETHER = frozenset(CHECK_PASSES) - {"synthesize-launchers"}
"""Check passes that still run after an earlier error (their errors are reported together).
`synthesize-launchers` does not: on a kernel with errors it would only add follow-on ones."""
KERNEL_PASSES = frozenset({"check-kernels", "synthesize-launchers"})
"""Passes that only read and rewrite `kernel` ops: a module without any has nothing for them."""


def stage(name: str) -> Stage:
    return next(s for s in STAGES if s.name == name)


def stages_until(name: str) -> list[Stage]:
    """The IR stages to run so that the IR is that of stage `name`."""
    last = STAGE_NAMES.index(name)
    return [s for s in STAGES[: last + 1] if s.name in IR_STAGES]


@deep
def python_source(module: ModuleOp, source: str | None = None) -> str:
    """The `python` stage: the module's torch IR (after the `torch` stage) as a Python file.

    `source` is the file the header names as the script's origin.
    """
    from tensorloom.backends.python_printer import print_python

    return print_python(module, source)


def python_program(module: ModuleOp, source: str | None = None) -> PrintedProgram:
    """The `python` stage as two files: the program, and the runtime module it imports."""
    from tensorloom.backends.python_printer import print_program

    return print_program(module, source)


def missing_passes() -> list[str]:
    """Passes the stages list that no module has registered (an internal error if run)."""
    from tensorloom.passes import get_all_passes

    registered = get_all_passes()
    return [p for s in STAGES for p in s.passes if p not in registered]


def make_context() -> Context:
    """A context knowing builtin and TensorLoom's dialects, each loaded on first use."""
    from xdsl.context import Context

    from tensorloom.dialects import get_all_dialects

    ctx = Context(allow_unregistered=False)
    for name, load in get_all_dialects().items():
        ctx.register_dialect(name, load)
    return ctx


@dataclass
class Compilation:
    """Everything one run of the driver produced, up to where it stopped."""

    path: str
    sources: SourceMap = field(default_factory=SourceMap)
    sink: DiagnosticSink = field(default_factory=DiagnosticSink)
    root: ast.Module | None = None  # the file's AST, even when it has syntax errors
    program: Program | None = None
    module: ModuleOp | None = None
    completed: str | None = None  # the last stage that ran without errors

    @property
    def ok(self) -> bool:
        return not self.sink.has_errors


ParseFile = Callable[[Path, SourceMap, DiagnosticSink], "ast.Module | None"]


@deep
def compile_file(path: Path, until: str = "torch") -> Compilation:
    """Parse `path` (and its imports) and run every stage up to `until`.

    `until="irgen"` stops right after IR generation, before any pass.
    """
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.frontend.parser import parse_file

    result = Compilation(str(path))
    with reporting(result.sink):
        root = parse_file(path, result.sources, result.sink)
        if root is not None:
            _continue(result, root, until)
    return result


@deep
def compile_text(text: str, path: str, until: str = "torch") -> Compilation:
    """As `compile_file`, for source held in memory (imports are still read from disk)."""
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.frontend.parser import parse_text

    result = Compilation(path)
    result.sources.add(path, text)
    with reporting(result.sink):
        _continue(result, parse_text(text, path, result.sink), until)
    return result


def _continue(result: Compilation, root: ast.Module, until: str) -> None:
    from tensorloom.frontend.imports import load_program
    from tensorloom.frontend.parser import parse_file

    result.root = root
    if result.sink.has_errors:
        return
    result.program = load_program(root, lambda p: parse_file(p, result.sources, result.sink))
    if result.sink.has_errors:
        return
    result.completed = "ast"
    if until in ("tokens", "ast"):
        return
    _lower(result, until)


def _lower(result: Compilation, until: str) -> None:
    from tensorloom.frontend.irgen import generate

    assert result.program is not None
    module = generate(result.program)
    if result.sink.has_errors or not _verified(module, "irgen", result.path):
        return
    result.module = module
    if until == "irgen":
        return
    ctx = make_context()
    ran: list[str] = []
    for s in stages_until(until):
        if not run_passes(ctx, module, s.passes, result.path, ran=ran):
            return
        ran += s.passes
        result.completed = s.name


@deep
def run_passes(ctx: Context, module: ModuleOp, names: Sequence[str], path: str, *,
               verify_each: bool = True, ran: Sequence[str] = ()) -> bool:  # fmt: skip
    """Run the passes `names`, in order; False once one reported an error.

    The IR is verified after every pass, or with `verify_each=False` only after
    the last one (`tlc check`, which prints no IR: verifying after each of its
    passes cost about 7 ms, two thirds of the passes' own time). `ran`: the
    passes that already ran on `module`. A pass whose declared requirements
    (passes/support/prerequisites.py) are neither in `ran`, nor earlier in `names`,
    nor done as the IR shows, is an internal error: the stages are in the wrong
    order. Must run inside `reporting(sink)`; the sink is where passes report.
    """
    from tensorloom.diagnostics.ir import current_sink
    from tensorloom.passes import get_all_passes

    registered = get_all_passes()
    sink = current_sink()
    errors_before = len(sink.errors())
    last: str | None = None
    earlier = set(ran)
    has_kernels = any(op.dialect_name() == "kernel" for op in module.body.block.ops)
    for spec in names:
        name = spec.partition("{")[0]  # `name{option=value}`: a pass with options
        if name in KERNEL_PASSES and not has_kernels:
            earlier.add(name)
            continue  # nothing to do, and importing them costs a cold `tlc check` ~10 ms
        pass_class = _load_pass(registered, name, path)
        if pass_class is None or not _requirements_met(pass_class, earlier, module, path):
            return False
        earlier.add(name)
        if len(sink.errors()) > errors_before and name not in REPORT_TOGETHER:
            return False
        if not _apply(pass_class, ctx, module, path, spec):
            return False
        last = name
        if verify_each and not _verified(module, name, path):
            return False
    if not verify_each and last is not None and not _verified(module, last, path):
        return False
    return len(sink.errors()) == errors_before


def _load_pass(registered: dict[str, PassFactory], name: str, path: str) -> type[ModulePass] | None:
    """The pass class; None, after reporting an internal error, when it cannot be had."""
    if name not in registered:
        _internal_error(f"the pipeline names the pass `{name}`, which is not registered", path)
        return None
    try:
        return registered[name]()
    except Exception as error:
        if os.environ.get("TENSORLOOM_DEBUG"):
            raise
        _internal_error(f"the pass `{name}` could not be loaded: {error!r}", path)
        return None


def _requirements_met(
    pass_class: type[ModulePass], earlier: set[str], module: ModuleOp, path: str
) -> bool:
    """Whether the passes `pass_class` needs have run; an internal error (a stage list out
    of order) when not."""
    from tensorloom.passes import get_all_passes
    from tensorloom.passes.support.prerequisites import requirements, unmet

    lacking = unmet(requirements(pass_class), earlier, module, get_all_passes())
    name = pass_class.name
    if lacking:
        needed = ", ".join(f"`{p}`" for p in lacking)
        _internal_error(f"the pipeline runs `{name}` before {needed}, which it needs", path)
    return not lacking


def _apply(
    pass_class: type[ModulePass], ctx: Context, module: ModuleOp, path: str, spec: str = ""
) -> bool:
    try:
        if "{" in spec:
            from xdsl.utils.arg_spec import parse_pipeline

            pass_class.from_pass_spec(next(iter(parse_pipeline(spec)))).apply(ctx, module)
        else:
            pass_class().apply(ctx, module)
    except Exception as error:
        if os.environ.get("TENSORLOOM_DEBUG"):
            raise
        _internal_error(f"pass `{pass_class.name}` crashed: {error!r}", path)
        return False
    return True


def _verified(module: ModuleOp, after: str, path: str) -> bool:
    from xdsl.utils.exceptions import VerifyException

    from tensorloom.dialects.module_facts import verify_module_facts

    try:
        module.verify()
        verify_module_facts(module)
    except VerifyException as error:
        if os.environ.get("TENSORLOOM_DEBUG"):
            raise
        _internal_error(f"the IR after `{after}` does not verify: {error}", path)
        return False
    return True


def _internal_error(message: str, path: str) -> None:
    from tensorloom.diagnostics.ir import report

    report(
        Diagnostic.error(
            INTERNAL_ERROR,
            f"internal compiler error: {message}",
            Span.point(path, 1, 1),
            notes=["this is a bug in TensorLoom, not in your program"],
            help=f"please report it at {REPORT_URL} with this file; set TENSORLOOM_DEBUG=1 for "
            "a traceback",
        )
    )
