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
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.xdsl_opt_main import xDSLOptMain

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.diagnostics.ir import reporting
from tensorloom.source import SourceMap

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
        self.pipeline = PassPipeline.parse_spec(
            self.available_passes, self.args.passes, self._between_passes
        )

    def _between_passes(
        self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
    ) -> None:
        if not self.args.disable_verify:
            module.verify()
        if previous is None:
            return
        if self.args.print_ir_after_all:
            print(f"// -----// IR after {previous.name} //----- //", file=sys.stderr)
            Printer(stream=sys.stderr).print_op(module)
            print(file=sys.stderr)
        if self.sink.has_errors:
            raise _Stop

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
        with contextlib.suppress(_Stop):
            super().run()
        self._render_diagnostics()

    def _render_diagnostics(self) -> None:
        if not len(self.sink):
            return
        from tensorloom.diagnostics.render_text import render_all

        text = render_all(self.sink.sorted(), self.sources)
        stream = sys.stdout if self.args.verify_diagnostics else sys.stderr
        stream.write(text)
        if self.sink.has_errors and not self.args.verify_diagnostics:
            raise SystemExit(1)


def _lazy_target(name: str, module: str, function: str) -> Target:
    def emit(prog: ModuleOp, stream: IO[str]) -> None:
        try:
            printer = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError):
            sys.stderr.write(f"tl-opt: target `{name}` is not available in this build\n")
            raise SystemExit(2) from None
        printer(prog, stream)

    return emit


def main(argv: list[str] | None = None) -> None:
    TLOptMain(argv).run()


if __name__ == "__main__":
    main()
