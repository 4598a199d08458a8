"""The `tlc` console script: replay a cached `tlc check` or `tlc compile` before loading anything.

    $ tlc check model.tl                 # unchanged since the last check: replayed
    $ tlc check model.tl --format json   # likewise, per format
    $ tlc compile model.tl --emit nml    # likewise, per stage (to stdout)
    $ tlc check model.tl --no-cache      # and every other command line: the click CLI

Loading click and the front end alone takes longer than a whole cached check,
so this entry point recognises the plain `check FILE [--format F]` and
`compile FILE [--emit STAGE]` command lines itself and asks
tools/check_cache.py. On a miss, or for any other command line (`-o`,
`--no-cache`, `--debug`, ...), it hands over to `tensorloom.tools.tlc:main`,
which runs the command and stores the result.
"""

from __future__ import annotations

import sys

# command -> (its one output-shaping option, that option's default)
CACHED_COMMANDS = {"check": ("--format", "text"), "compile": ("--emit", "python")}


def main() -> None:
    cached = _cached_command(sys.argv[1:])
    if cached is not None:
        from tensorloom.tools import check_cache

        file, command = cached
        replay = check_cache.lookup(check_cache.display_path(file), command)
        if replay is not None:
            sys.exit(replay.write())
    from tensorloom.tools.tlc import main as tlc_main

    tlc_main()


def _cached_command(arguments: list[str]) -> tuple[str, str] | None:
    """(file, `check --format F` or `compile --emit S`) for a cacheable command line."""
    if not arguments or arguments[0] not in CACHED_COMMANDS:
        return None
    option, value = CACHED_COMMANDS[arguments[0]]
    files: list[str] = []
    rest = iter(arguments[1:])
    for argument in rest:
        if argument == option:
            value = next(rest, "")
        elif argument.startswith(option + "="):
            value = argument.partition("=")[2]
        elif argument.startswith("-"):
            return None  # --no-cache, --help, -o, or an option this parser does not know
        else:
            files.append(argument)
    if len(files) != 1 or not value or value.startswith("-"):
        return None
    return files[0], f"{arguments[0]} {option} {value}"


if __name__ == "__main__":
    main()
