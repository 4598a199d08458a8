"""Exit statuses, and running a command so that a crash reads as a compiler bug.

    status = run_guarded(lambda: run_check(path, "text"))   # 0, 1, or 3 after a crash

Exit statuses: 0 success (warnings allowed), 1 errors in the user's program,
2 usage errors (click's own), 3 internal compiler error. This module does not
import click, so that tools/launcher.py can run a plain `tlc check` without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tensorloom import REPORT_URL
from tensorloom.recursion import recursion_room

if TYPE_CHECKING:
    from tensorloom.diagnostics import DiagnosticSink

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL_ERROR = 3
DEBUG_HINT = "run `tlc --debug ...` to see the traceback"


def sink_status(sink: DiagnosticSink) -> int:
    """The exit status for a run's diagnostics: 3 after an internal error, 1 after a user error."""
    if sink.has_internal_error:
        return EXIT_INTERNAL_ERROR
    return EXIT_USER_ERROR if sink.has_errors else EXIT_OK


def run_guarded(command: Callable[[], int], *, debug: bool = False,
                passthrough: tuple[type[BaseException], ...] = (),
                debug_hint: str = DEBUG_HINT) -> int:  # fmt: skip
    """The command's exit status; an unexpected exception becomes exit status 3.

    Exceptions in `passthrough` (click's own exits) propagate; `debug` adds the
    traceback to the internal error message.
    """
    try:
        with recursion_room():
            status = command()
    except passthrough:
        raise
    except BrokenPipeError:  # `tlc info --json | head`: the reader left, not a bug
        _silence_stdout()
        status = EXIT_OK
    except Exception as exc:  # everything else is a bug in TensorLoom
        report_internal_error(exc, debug=debug, debug_hint=debug_hint)
        status = EXIT_INTERNAL_ERROR
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    return status


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def report_internal_error(exc: BaseException, *, debug: bool,
                          debug_hint: str = DEBUG_HINT) -> None:  # fmt: skip
    stream = sys.stderr
    stream.write(f"error: internal compiler error: {type(exc).__name__}: {exc}\n")
    stream.write(
        "note: this is a bug in TensorLoom, not in your program; please report it "
        f"at {REPORT_URL} with the input file\n"
    )
    if debug:
        import traceback  # only for `--debug`: not at start-up

        stream.write("".join(traceback.format_exception(exc)))
    else:
        stream.write(f"note: {debug_hint}\n")
