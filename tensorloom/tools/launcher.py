"""The `tlc` console script: replay a cached `tlc check` or `tlc compile` before loading anything.

    $ tlc check model.tl                 # unchanged since the last check: replayed
    $ tlc check model.tl --format json   # likewise, per format
    $ tlc compile model.tl --emit nml    # likewise, per stage (to stdout)
    $ tlc check model.tl --no-cache      # checked afresh, still without click
    $ tlc compile model.tl -o out.py     # and every other command line: the click CLI

Loading click and the front end alone takes longer than a whole cached check,
so this entry point recognises the plain `check FILE [--format F]` and
`compile FILE [--emit STAGE]` command lines itself and asks
tools/check_cache.py. A plain check that misses (or says `--no-cache`) runs
here too, without click (about 20 ms of a 300 ms cold check). Any other
command line (`-o`, `--debug`, a compile that misses, ...) goes to
`tensorloom.tools.tlc:main`, which runs the command and stores the result.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import NamedTuple

# command -> (its one output-shaping option, that option's default)
CACHED_COMMANDS = {"check": ("--format", "text"), "compile": ("--emit", "python")}


class CommandLine(NamedTuple):
    """A plain `check` or `compile` command line, as this module reads it."""

    command: str
    file: str
    value: str  # of the command's output-shaping option
    no_cache: bool


def main() -> None:
    arguments = sys.argv[1:]
    cached = _cached_command(arguments)
    if cached is not None:
        from tensorloom.tools import check_cache

        file, command = cached
        replay = check_cache.lookup(check_cache.display_path(file), command)
        if replay is not None:
            sys.exit(replay.write())
    # Nearly all a compile allocates lives to the end (xDSL's definitions, the IR):
    # the default threshold ran 80 fruitless collections, 12 ms of a cold check.
    # (`tlc run` trains in a subprocess, with the default.)
    gc.set_threshold(100_000, 50, 100)
    _keep_dataclass_code()
    check = _plain_check(arguments)
    if check is not None:
        file, fmt, use_cache = check
        # With the cache on, the lookup above has just missed: do not look again.
        sys.exit(_run_check(file, fmt, use_cache))
    from tensorloom.tools.tlc import main as tlc_main

    tlc_main()


def _keep_dataclass_code() -> None:
    """Dataclasses' generated methods from a cache, not compiled anew (tools/dataclass_code.py)."""
    from tensorloom.tools import check_cache, dataclass_code

    dataclass_code.install(check_cache.cache_dir())


def _run_check(file: str, fmt: str, use_cache: bool) -> int:
    """`tlc check`, as tools/tlc.py runs it, without click."""
    from pathlib import Path

    from tensorloom.tools.check import run_check
    from tensorloom.tools.guard import run_guarded

    try:
        return run_guarded(
            lambda: run_check(Path(file), fmt, use_cache=use_cache, looked_up=use_cache)
        )
    except KeyboardInterrupt:
        sys.stderr.write("Aborted!\n")  # what click says
        return 1


def _cached_command(arguments: list[str]) -> tuple[str, str] | None:
    """(file, `check --format F` or `compile --emit S`) for a cacheable command line."""
    line = _command_line(arguments)
    if line is None or line.no_cache:
        return None
    return line.file, f"{line.command} {CACHED_COMMANDS[line.command][0]} {line.value}"


def _plain_check(arguments: list[str]) -> tuple[str, str, bool] | None:
    """(file, format, use the cache) for a `check` that click would only pass on."""
    line = _command_line(arguments)
    if line is None or line.command != "check":
        return None
    if line.value not in ("text", "json", "github", "sarif") or not os.path.isfile(line.file):
        return None  # click's to report: an unknown format or a folder is a usage error
    return line.file, line.value, not line.no_cache


def _command_line(arguments: list[str]) -> CommandLine | None:
    """The plain check or compile these arguments ask for; None for anything else."""
    if not arguments or arguments[0] not in CACHED_COMMANDS:
        return None
    option, value = CACHED_COMMANDS[arguments[0]]
    files: list[str] = []
    no_cache = False
    rest = iter(arguments[1:])
    for argument in rest:
        if argument == option:
            value = next(rest, "")
        elif argument.startswith(option + "="):
            value = argument.partition("=")[2]
        elif argument == "--no-cache":
            no_cache = True
        elif argument == "--json" and option == "--format":  # the alias of `--format json`
            value = "json"
        elif argument.startswith("-"):
            return None  # --help, -o, or an option this parser does not know
        else:
            files.append(argument)
    if len(files) != 1 or not value or value.startswith("-"):
        return None
    return CommandLine(arguments[0], files[0], value, no_cache)


if __name__ == "__main__":
    main()
