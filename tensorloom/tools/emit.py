"""`tlc compile FILE --emit STAGE`: run the pipeline up to a stage and print it.

    $ tlc compile mnist.tl --emit nml        # IR after the nml stage's passes
    $ tlc compile mnist.tl -o run_mnist.py   # the Python script (the default)

The stages are those of `tensorloom.pipeline.STAGES`. Diagnostics go to
stderr; exit status 1 when the program has errors, 2 when the stage asked for
cannot be produced by this build.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.pipeline import STAGE_NAMES, Compilation, compile_file
from tensorloom.source import SourceMap
from tensorloom.tools.common import EXIT_USAGE, emit_diagnostics, exit_status

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

EMIT_CHOICES = tuple(s for s in STAGE_NAMES if s != "tokens")
PythonPrinter = Callable[["ModuleOp", "str | None"], str]


def run_compile(file: Path, emit: str, output: Path | None) -> int:
    """Compile `file` up to `emit`, write the result; the exit status."""
    if emit == "ast":
        return _emit_ast(file, output)
    if emit == "python":
        return _emit_python(file, output)
    result = compile_file(file, until=emit)
    return _finish(result, _ir_text(result.module), output)


def _emit_ast(file: Path, output: Path | None) -> int:
    from tensorloom.frontend import ast_dump
    from tensorloom.tools.common import load_and_parse

    module, sources, sink = load_and_parse(file)
    text = ast_dump.dump(module) if module is not None else None
    return _write(text, output, sink, sources)


def _emit_python(file: Path, output: Path | None) -> int:
    printer = _python_printer()
    if printer is None:
        sys.stderr.write("error: `--emit python` is not available in this build yet\n")
        return EXIT_USAGE
    from tensorloom.diagnostics.ir import reporting

    result = compile_file(file, until="torch")
    text = None
    if result.module is not None and result.ok:
        with reporting(result.sink):
            text = printer(result.module, str(file))
    return _finish(result, text, output)


def _python_printer() -> PythonPrinter | None:
    try:
        import tensorloom.backends.print_triton  # noqa: F401  (registers the kernels' handlers)
        from tensorloom.backends.python_printer import print_python
    except ImportError:
        return None
    return print_python


def _ir_text(module: ModuleOp | None) -> str | None:
    if module is None:
        return None
    from io import StringIO

    from xdsl.printer import Printer

    stream = StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def _finish(result: Compilation, text: str | None, output: Path | None) -> int:
    return _write(text if result.ok else None, output, result.sink, result.sources)


def _write(text: str | None, output: Path | None, sink: DiagnosticSink, sources: SourceMap) -> int:
    emit_diagnostics(sink, sources)
    if text is None or sink.has_errors:
        return exit_status(sink)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    return exit_status(sink)
