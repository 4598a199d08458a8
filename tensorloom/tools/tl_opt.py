"""`tl-opt`: run TensorLoom passes on IR, as `mlir-opt` does for MLIR.

    tl-opt model.mlir -p desugar-pipes,resolve-nml
    tl-opt examples/mnist.tl -p shape-inference --print-ir-after-all
    tl-opt examples/mnist.tl -t python

Input is .mlir text, or a .tl/.nml file read through the frontend and irgen.
Diagnostics that passes report are rendered to stderr (exit 1 on an error);
with `--verify-diagnostics` they go to stdout, for FileCheck, and the exit code
is 0. Dialects, passes and targets are registered lazily, so start-up imports
only what a run uses.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.xdsl_opt_main import xDSLOptMain

from tensorloom.diagnostics import Diagnostic, DiagnosticSink
from tensorloom.diagnostics.ir import reporting
from tensorloom.source import SourceMap, Span
from tensorloom.tools.guard import EXIT_OK, EXIT_USAGE, EXIT_USER_ERROR, run_guarded

Target = Callable[[ModuleOp, IO[str]], None]

# Extra `-t` targets: name -> (module, function taking (module, stream)).
# The Python printer registers itself here.
TARGETS: dict[str, tuple[str, str]] = {
    "python": ("tensorloom.backends.python_printer", "write_python"),
}


class _Stop(Exception):
    """A pass reported an error: later passes must not see the module."""


class TLOptMain(xDSLOptMain):
    def __init__(self, args: list[str] | None = None):
        self.sink = DiagnosticSink()
        self.sources = SourceMap()
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

    # ------------------------------------------------------------- frontends

    def _parse_mlir(self, stream: IO[bytes]) -> ModuleOp:
        from xdsl.parser import Parser

        text = stream.read().decode()
        return Parser(self.ctx, text, self.get_input_name()).parse_module(
            not self.args.no_implicit_module
        )

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
        if not self.args.disable_verify:
            self._verify(module, previous)
        if previous is None:
            return
        if self.args.print_ir_after_all:
            print(f"// -----// IR after {previous.name} //----- //", file=sys.stderr)
            Printer(stream=sys.stderr).print_op(module)
            print(file=sys.stderr)
        if self.sink.has_errors:
            raise _Stop

    def _verify(self, module: ModuleOp, previous: ModulePass | None) -> None:
        """Verify the IR: before any pass a failure is the input's; after one, a compiler bug."""
        from xdsl.utils.exceptions import VerifyException

        try:
            module.verify()
        except VerifyException as error:
            if previous is not None or self.args.verify_diagnostics:
                raise
            sys.stderr.write(f"error: the input IR does not verify\n{error}\n")
            raise SystemExit(EXIT_USER_ERROR) from None

    def apply_passes(self, prog: ModuleOp) -> None:
        if self.sink.has_errors:
            raise _Stop
        with reporting(self.sink):
            self.pipeline.apply(self.ctx, prog)
        # the pipeline calls back only between passes, so check after the last one too
        self._between_passes(self.pipeline.passes[-1] if self.pipeline.passes else None, prog, None)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.sink.has_errors:
            raise _Stop
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


def _pass_names(spec: str) -> list[str]:
    """The pass names of a pipeline spec such as `a,b{opt=1},c`."""
    names: list[str] = []
    depth = 0
    current = ""
    for char in spec:
        depth += (char == "{") - (char == "}")
        if char == "," and depth == 0:
            names.append(current)
            current = ""
        elif depth == 0 and char != "}":
            current += char
    names.append(current)
    return [n.strip() for n in names if n.strip()]


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
