"""What every `tlc` command shares: loading a file, printing diagnostics, exit codes.

    @cli.command()
    @click.argument("file", type=click.Path(path_type=Path))
    @compiler_command
    def check(file: Path) -> int:
        module, sources, sink = load_and_parse(file)
        emit_diagnostics(sink, sources, "text")
        return exit_status(sink)

A command returns its exit status; `compiler_command` turns an unexpected
exception into exit status 3 and a plain "this is a compiler bug" message
(tools/guard.py, which also lists the exit statuses).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal, ParamSpec, TextIO, TypeVar

import click

from tensorloom.diagnostics import DiagnosticSink, render_json, render_text
from tensorloom.frontend import ast
from tensorloom.frontend.parser import parse_file
from tensorloom.source import SourceMap
from tensorloom.tools.guard import run_guarded, sink_status

DEBUG_KEY = "tensorloom.debug"

Format = Literal["text", "json"]
P = ParamSpec("P")
R = TypeVar("R")


def format_option(
    what: str, extra: tuple[str, ...] = ()
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """`--format text|json` (how to print `what`), with `--json` kept as its alias.

    Every command with JSON output takes both, so `tlc check --json` and
    `tlc info --format json` work alike; `extra` adds formats of one command's own.
    """

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        alias = click.option("--json", "fmt", flag_value="json", help="the same as --format json")
        choice = click.option(
            "--format",
            "fmt",
            type=click.Choice(["text", "json", *extra]),
            default="text",
            show_default=True,
            help=f"how to print {what}",
        )
        return choice(alias(command))

    return decorate


# `tlc check`'s: also GitHub Actions annotations and SARIF, for CI (tools/check.py)
FORMAT_OPTION = format_option("diagnostics", ("github", "sarif"))
# click's own ways out of a command: usage errors, --help, Ctrl-C
CLICK_EXITS = (click.exceptions.ClickException, click.exceptions.Exit, click.Abort)


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
    return sink_status(sink)


def compiler_command(command: Callable[P, int]) -> Callable[P, None]:
    """Run a command that returns its exit status; a crash becomes exit status 3."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        status = run_guarded(
            lambda: command(*args, **kwargs), debug=debug_enabled(), passthrough=CLICK_EXITS
        )
        click.get_current_context().exit(status)

    return run


def debug_enabled() -> bool:
    context = click.get_current_context(silent=True)
    if context is None:
        return False
    return bool(context.find_root().meta.get(DEBUG_KEY, False))
