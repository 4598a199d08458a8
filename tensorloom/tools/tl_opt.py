"""`tl-opt`: run TensorLoom passes on IR, as `mlir-opt` does for MLIR.

    tl-opt model.mlir -p desugar-pipes,resolve-nml
    tl-opt examples/mnist.tl -p shape-inference --print-ir-after-all
    tl-opt examples/mnist.tl -t python

Input is .mlir text, or a .tl/.nml file read through the frontend and irgen.
An op of .mlir input that carries no `loc(...)` is located where it stands in
the input (as mlir-opt does), so a diagnostic about it quotes that line.
Diagnostics that passes report are rendered to stderr (exit 1 on an error);
with `--verify-diagnostics` they go to stdout, for FileCheck, and the exit code
is 0. Every pass declares the passes it needs (passes/support/prerequisites.py);
a pipeline that lacks one the IR has not been through is a usage error (exit 2)
naming the passes to add, as is `-t python` on IR that has no emission ops.
Dialects, passes and targets are registered lazily, so start-up imports only
what a run uses.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import importlib
import itertools
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_spec
from xdsl.xdsl_opt_main import xDSLOptMain

from tensorloom.diagnostics import Diagnostic, DiagnosticSink
from tensorloom.diagnostics.ir import loc_of, reporting
from tensorloom.source import SourceMap, Span
from tensorloom.tools.guard import EXIT_OK, EXIT_USAGE, EXIT_USER_ERROR, run_guarded

Target = Callable[[ModuleOp, IO[str]], None]

# Extra `-t` targets: name -> (module, function taking (module, stream)).
# The Python printer registers itself here.
TARGETS: dict[str, tuple[str, str]] = {
    "python": ("tensorloom.backends.python_printer", "write_python"),
}
TARGET_REQUIRES: dict[str, tuple[str, ...]] = {
    "python": ("convert-nml-to-torch", "convert-train-to-torch", "convert-kernel-to-triton"),
}
"""The passes a target's printer needs, as a pass's `requires`."""


class _Stop(Exception):
    """A pass reported an error: later passes must not see the module."""


class TLOptMain(xDSLOptMain):
    def __init__(self, args: list[str] | None = None):
        self.sink = DiagnosticSink()
        self.sources = SourceMap()
        self.timings: list[tuple[str, float]] = []
        self._line_offset = 0
        self._started = 0.0
        super().__init__(description="TensorLoom's modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        from tensorloom.dialects import get_all_dialects

        for name, load in get_all_dialects().items():
            self.ctx.register_dialect(name, load)

    def register_all_passes(self) -> None:
        from tensorloom.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        self.available_frontends["mlir"] = self._parse_mlir
        self.available_frontends["tl"] = self._parse_source
        self.available_frontends["nml"] = self._parse_source

    def register_all_targets(self) -> None:
        self.available_targets["mlir"] = self._print_mlir
        for name, (module, function) in TARGETS.items():
            self.available_targets[name] = _lazy_target(name, module, function)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--print-ir-after-all",
            default=False,
            action="store_true",
            help="print the IR to stderr after every pass",
        )
        helps = {
            "--print-between-passes": "print the IR to stdout between two passes (not after "
            "the last: the output follows), as xdsl-opt does",
            "--time-passes": "print each pass's wall time to stderr, as mlir-opt's "
            "`--mlir-timing` does",
        }
        for action in arg_parser._actions:  # pyright: ignore[reportPrivateUsage]
            for flag in set(action.option_strings) & helps.keys():
                action.help = helps[flag]

    # ------------------------------------------------------------- frontends

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self._line_offset = start_offset  # `--split-input-file`: the chunk's first line
        return super().parse_chunk(chunk, file_extension, start_offset)

    def _parse_mlir(self, stream: IO[bytes]) -> ModuleOp:
        text = stream.read().decode()
        name = self.get_input_name()
        offset = self._line_offset
        whole = Path(self.args.input_file) if self.args.input_file else None
        self.sources.add(name, whole.read_text() if offset and whole else text)
        parser = _LocatingParser(self.ctx, text, name, offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def _parse_source(self, stream: IO[bytes]) -> ModuleOp:
        from tensorloom.pipeline import compile_file

        stream.close()
        result = compile_file(Path(self.args.input_file), until="irgen")
        self.sink.extend(result.sink)
        self.sources = result.sources
        if result.module is None:
            raise _Stop
        return result.module

    # -------------------------------------------------------------- targets

    def _print_mlir(self, module: ModuleOp, stream: IO[str]) -> None:
        printer = Printer(
            stream=stream,
            print_generic_format=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
            print_properties_as_attributes=self.args.print_no_properties,
        )
        printer.print_op(module)
        stream.write("\n")

    # ------------------------------------------------------------- pipeline

    def setup_pipeline(self) -> None:
        unknown = [p for p in _pass_names(self.args.passes) if p not in self.available_passes]
        if unknown:
            _usage_error(_unknown_pass(unknown[0], self.available_passes))
        self.pipeline = PassPipeline.parse_spec(
            self.available_passes, self.args.passes, self._between_passes
        )

    def _between_passes(
        self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
    ) -> None:
        """xDSL calls this before the first pass, between two, and after the last."""
        if previous is not None:
            self.timings.append((previous.name, time.perf_counter() - self._started))
        if not self.args.disable_verify:
            self._verify(module, previous)
        if previous is not None:
            self._print_after(previous, module, following)
        if self.sink.has_errors:
            raise _Stop
        self._started = time.perf_counter()

    def _print_after(
        self, previous: ModulePass, module: ModuleOp, following: ModulePass | None
    ) -> None:
        if self.args.print_ir_after_all:
            print(f"// -----// IR after {previous.name} //----- //", file=sys.stderr)
            Printer(stream=sys.stderr).print_op(module)
            print(file=sys.stderr)
        if self.args.print_between_passes and following is not None:
            print(f"// -----// IR after {previous.name} //----- //")
            Printer(stream=sys.stdout).print_op(module)
            print()

    def _verify(self, module: ModuleOp, previous: ModulePass | None) -> None:
        """Verify the IR: before any pass a failure is the input's; after one, a compiler bug."""
        from xdsl.utils.exceptions import VerifyException

        from tensorloom.dialects.module_facts import verify_module_facts

        try:
            module.verify()
            verify_module_facts(module)
        except VerifyException as error:
            if previous is not None or self.args.verify_diagnostics:
                raise
            sys.stderr.write(f"error: the input IR does not verify\n{error}\n")
            raise SystemExit(EXIT_USER_ERROR) from None

    def apply_passes(self, prog: ModuleOp) -> None:
        if self.sink.has_errors:
            raise _Stop
        self._check_requirements(prog)
        try:
            with reporting(self.sink):
                self.pipeline.apply(self.ctx, prog)
        finally:
            if self.args.time_passes:
                _print_timings(self.timings)

    def _check_requirements(self, module: ModuleOp) -> None:
        """A usage error when a pass (or the target) needs passes the IR has not been through."""
        from tensorloom.passes.support.prerequisites import requirements, unmet

        earlier: list[str] = []
        lacking: dict[str, list[str]] = {}
        for pass_ in self.pipeline.passes:
            needs = unmet(requirements(type(pass_)), earlier, module, self.available_passes)
            if needs:
                lacking[pass_.name] = sorted(needs, key=_pipeline_order)
            earlier.append(pass_.name)
        target = parse_spec(self.args.target).name
        needs = unmet(TARGET_REQUIRES.get(target, ()), earlier, module, self.available_passes)
        if needs:
            lacking[f"-t {target}"] = sorted(needs, key=_pipeline_order)
        if lacking:
            _usage_error(_missing_passes(lacking, self.args.passes))

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.sink.has_errors:
            raise _Stop
        target = parse_spec(self.args.target).name
        if target == "python" and not _has_emission_ops(prog):
            _usage_error(
                "the IR has no emission ops (`torch`, `py`, `triton`) to print as Python\n"
                "  = help: print `-t mlir`, or lower it first with `-p ...,convert-nml-to-torch,"
                "convert-train-to-torch`"
            )
        if target == "python" and not _traces_to_source(prog):
            sys.stderr.write(
                "tl-opt: note: the IR holds no location in a .tl or .nml file, so the script "
                "has no `# file.tl:N` comments\n"
                "  = help: print the IR you read back with `--print-debuginfo` to keep them\n"
            )
        return super().output_resulting_program(prog)

    def run(self) -> None:
        problem = self._input_problem()
        if problem is not None:
            self.sink.emit(problem)
        else:
            self._run_passes()
        self._render_diagnostics()

    def _run_passes(self) -> None:
        """xDSL's driver; a malformed .mlir input is the user's error, not a crash."""
        from xdsl.utils.exceptions import ParseError

        try:
            with contextlib.suppress(_Stop):
                super().run()
        except ParseError as error:
            sys.stderr.write(f"error: cannot parse the input\n{error}\n")
            raise SystemExit(EXIT_USER_ERROR) from None

    def _input_problem(self) -> Diagnostic | None:
        """TL0604 or TL0601 for an input tlc would refuse the same way; None when it reads."""
        from tensorloom.frontend.parser import unreadable

        if self.args.input_file is None:
            return None
        path = Path(self.args.input_file)
        if path.is_dir():
            return unreadable(str(path), IsADirectoryError(21, "is a directory"))
        if not self.args.frontend and path.suffix.lstrip(".") not in self.available_frontends:
            return Diagnostic.error(
                "TL0604",
                f"unsupported file type `{path.suffix or path.name}`",
                Span.point(str(path), 1, 1),
                help="tl-opt reads `.mlir` IR, `.tl` scripts and `.nml` model files",
            )
        try:
            path.read_bytes()
        except OSError as exc:
            return unreadable(str(path), exc)
        return None

    def _render_diagnostics(self) -> None:
        if not len(self.sink):
            return
        from tensorloom.diagnostics.render_text import render_all

        text = render_all(self.sink.sorted(), self.sources)
        stream = sys.stdout if self.args.verify_diagnostics else sys.stderr
        stream.write(text)
        if self.sink.has_errors and not self.args.verify_diagnostics:
            raise SystemExit(EXIT_USER_ERROR)


def _lazy_target(name: str, module: str, function: str) -> Target:
    def emit(prog: ModuleOp, stream: IO[str]) -> None:
        try:
            printer = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError):
            sys.stderr.write(f"tl-opt: target `{name}` is not available in this build\n")
            raise SystemExit(2) from None
        printer(prog, stream)

    return emit


class _LocatingParser(Parser):
    """xDSL's parser, locating each op written without a `loc(...)` at its first line in
    the input (its start to the end of the line), as mlir-opt does."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0) -> None:
        super().__init__(ctx, text, name)
        self._text = text
        self._name = name
        self._line_offset = line_offset
        self._lines = text.split("\n")
        self._starts = list(itertools.accumulate((len(ln) + 1 for ln in self._lines), initial=0))

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if not _ends_in_location(self._text[start : self._current_token.span.start]):
            op.location = loc_of(self._span_from(start))
        return op

    def _span_from(self, offset: int) -> Span:
        line = bisect.bisect_right(self._starts, offset)
        col = offset - self._starts[line - 1] + 1
        text = self._lines[line - 1] if line <= len(self._lines) else ""
        end = max(len(text.rstrip()) + 1, col + 1)
        line += self._line_offset
        return Span(self._name, line, col, line, end)


_TRAILING_LOCATION = re.compile(r"\bloc\(.*\)$")


def _ends_in_location(op_text: str) -> bool:
    """Whether an op's text (up to the next token, full-line comments included) ends in
    `loc(...)`, its written location (`loc(unknown)` too)."""
    lines = [ln.strip() for ln in op_text.split("\n")]
    code = [ln for ln in lines if ln and not ln.startswith("//")]
    return bool(code) and _TRAILING_LOCATION.search(code[-1]) is not None


def _has_emission_ops(module: ModuleOp) -> bool:
    """Whether the module holds ops the Python printer prints (after the conversion passes)."""
    emitted = ("torch", "py", "triton")
    return any(op.dialect_name() in emitted for op in module.walk())


def _traces_to_source(module: ModuleOp) -> bool:
    """Whether an op carries a location in TensorLoom source (what the script's comments cite)."""
    from tensorloom.diagnostics.ir import span_of
    from tensorloom.source import SOURCE_SUFFIXES

    spans = (span_of(op) for op in module.walk())
    return any(span is not None and span.file.endswith(SOURCE_SUFFIXES) for span in spans)


def _missing_passes(lacking: dict[str, list[str]], spec: str) -> str:
    """The usage error for passes a pipeline lacks, with the pipeline that has them."""
    lines = [
        f"`{user}` needs {_listing(needs)} first: the IR has not been through "
        f"{'it' if len(needs) == 1 else 'them'}"
        for user, needs in lacking.items()
    ]
    fixed: list[str] = []
    for spec_item in _pass_specs(spec):
        _add_new(fixed, [*lacking.get(spec_item.partition("{")[0], []), spec_item])
    _add_new(fixed, next((n for u, n in lacking.items() if u.startswith("-t ")), []))
    return "\n".join(lines) + f"\n  = help: run `-p {','.join(fixed)}`"


def _pipeline_order(name: str) -> int:
    """Where the driver's stages run `name` (their order meets every requirement)."""
    from tensorloom.pipeline import STAGES

    order = [p for stage in STAGES for p in stage.passes]
    return order.index(name) if name in order else len(order)


def _add_new(names: list[str], more: list[str]) -> None:
    names.extend(dict.fromkeys(n for n in more if n not in names))


def _listing(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _print_timings(timings: list[tuple[str, float]]) -> None:
    """The passes' wall times, as mlir-opt's `--mlir-timing` report lays them out."""
    total = sum(seconds for _, seconds in timings)
    rule = "===" + "-" * 73 + "==="
    lines = [rule, "... Execution time report ...".center(79).rstrip(), rule]
    lines += [
        f"  Total Execution Time: {total:.4f} seconds",
        "",
        "  ----Wall Time----  ----Name----",
    ]
    for name, seconds in [*timings, ("Total", total)]:
        share = 100 * seconds / total if total else 0.0
        lines.append(f"  {seconds:9.4f} ({share:5.1f}%)  {name}")
    sys.stderr.write("\n".join(lines) + "\n")


def _pass_names(spec: str) -> list[str]:
    """The pass names of a pipeline spec such as `a,b{opt=1},c`."""
    return [s.partition("{")[0].strip() for s in _pass_specs(spec)]


def _pass_specs(spec: str) -> list[str]:
    """The passes of a pipeline spec, options included: `a,b{opt=1,x=2},c` -> three."""
    specs: list[str] = []
    depth = 0
    current = ""
    for char in spec:
        depth += (char == "{") - (char == "}")
        if char == "," and depth == 0:
            specs.append(current)
            current = ""
        else:
            current += char
    specs.append(current)
    return [s.strip() for s in specs if s.strip()]


def _unknown_pass(name: str, known: dict[str, Callable[[], type[ModulePass]]]) -> str:
    from tensorloom.diagnostics.core import did_you_mean

    message = f"unknown pass `{name}`"
    guess = did_you_mean(name, known)
    hint = f"did you mean `{guess}`?" if guess else "`tl-opt --help` lists the passes"
    return f"{message}\n  = help: {hint}"


def _usage_error(message: str) -> NoReturn:
    sys.stderr.write(f"tl-opt: error: {message}\n")
    raise SystemExit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> None:
    """tl-opt; an unexpected exception is reported as a compiler bug, exit status 3."""
    debug = bool(os.environ.get("TENSORLOOM_DEBUG"))
    status = run_guarded(
        lambda: _run(argv),
        debug=debug,
        passthrough=(SystemExit,),
        debug_hint="set TENSORLOOM_DEBUG=1 to see the traceback",
    )
    sys.exit(status)


def _run(argv: list[str] | None) -> int:
    TLOptMain(argv).run()
    return EXIT_OK


if __name__ == "__main__":
    main()
