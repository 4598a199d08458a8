"""What every `tlc` command shares: loading a file, printing diagnostics, exit codes.

    @cli.command()
    @click.argument("file", type=click.Path(path_type=Path))
    @compiler_command
    def check(file: Path) -> int:
        module, sources, sink = load_and_parse(file)
        emit_diagnostics(sink, sources, "text")
        return exit_status(sink)

A command returns its exit status; `compiler_command` turns an unexpected
exception into exit status 3 and a plain "this is a compiler bug" message.

Exit statuses: 0 success (warnings allowed), 1 errors in the user's program,
2 usage errors (click's own), 3 internal compiler error.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Literal, ParamSpec, TextIO

import click

from tensorloom.diagnostics import DiagnosticSink, render_json, render_text
from tensorloom.frontend import ast
from tensorloom.frontend.parser import parse_file
from tensorloom.source import SourceMap

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL_ERROR = 3
REPORT_URL = "https://github.com/tensorloom/tensorloom/issues"
DEBUG_KEY = "tensorloom.debug"

Format = Literal["text", "json"]
FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="how to print diagnostics",
)
P = ParamSpec("P")


def load_and_parse(path: Path) -> tuple[ast.Module | None, SourceMap, DiagnosticSink]:
    """Read and parse one file; the module is None when the file could not be read."""
    sources = SourceMap()
    sink = DiagnosticSink()
    module = parse_file(path, sources, sink)
    return module, sources, sink


def emit_diagnostics(sink: DiagnosticSink, sources: SourceMap, fmt: Format = "text") -> None:
    """Text goes to stderr (coloured on a terminal); JSON goes to stdout for tools."""
    diagnostics = sink.sorted()
    if fmt == "json":
        sys.stdout.write(render_json.render_all(diagnostics) + "\n")
        return
    if diagnostics:
        text = render_text.render_all(diagnostics, sources, color=use_color(sys.stderr))
        sys.stderr.write(text)


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    return stream.isatty() and "NO_COLOR" not in os.environ


def exit_status(sink: DiagnosticSink) -> int:
    return EXIT_USER_ERROR if sink.has_errors else EXIT_OK


def compiler_command(command: Callable[P, int]) -> Callable[P, None]:
    """Run a command that returns its exit status; a crash becomes exit status 3."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            status = command(*args, **kwargs)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # `tlc info --json | head`: the reader left, not a bug
            _silence_stdout()
            status = EXIT_OK
        except Exception as exc:  # everything else is a bug in TensorLoom
            report_internal_error(exc, debug=debug_enabled())
            status = EXIT_INTERNAL_ERROR
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
        click.get_current_context().exit(status)

    return run


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def report_internal_error(exc: BaseException, *, debug: bool) -> None:
    stream = sys.stderr
    stream.write(f"error: internal compiler error: {type(exc).__name__}: {exc}\n")
    stream.write(
        "note: this is a bug in TensorLoom, not in your program; please report it "
        f"at {REPORT_URL} with the input file\n"
    )
    if debug:
        stream.write("".join(traceback.format_exception(exc)))
    else:
        stream.write("note: run `tlc --debug ...` to see the traceback\n")


def debug_enabled() -> bool:
    context = click.get_current_context(silent=True)
    if context is None:
        return False
    return bool(context.find_root().meta.get(DEBUG_KEY, False))
