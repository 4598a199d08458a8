"""The `tlc` console script: replay a cached `tlc check` before loading anything else.

    $ tlc check model.tl                 # unchanged since the last check: replayed
    $ tlc check model.tl --format json   # likewise, per format
    $ tlc check model.tl --no-cache      # and every other command: the click CLI

Loading click and the front end alone takes longer than a whole cached check,
so this entry point recognises the plain `check FILE [--format text|json]`
command line itself and asks tools/check_cache.py. On a miss, or for any other
command line, it hands over to `tensorloom.tools.tlc:main`, which checks the
file and stores the result.
"""

from __future__ import annotations

import sys


def main() -> None:
    arguments = sys.argv[1:]
    cached = _check_arguments(arguments)
    if cached is not None:
        from tensorloom.tools import check_cache

        replay = check_cache.lookup(check_cache.display_path(cached[0]), cached[1])
        if replay is not None:
            sys.exit(replay.write())
    from tensorloom.tools.tlc import main as tlc_main

    tlc_main()


def _check_arguments(arguments: list[str]) -> tuple[str, str] | None:
    """(file, format) for `check FILE [--format F]` in any order, else None."""
    if not arguments or arguments[0] != "check":
        return None
    files: list[str] = []
    fmt = "text"
    rest = iter(arguments[1:])
    for argument in rest:
        if argument in ("--format", "--format=text", "--format=json"):
            value = next(rest, None) if argument == "--format" else argument.partition("=")[2]
            fmt = value if value in ("text", "json") else ""
        elif argument.startswith("-"):
            return None  # --no-cache, --help, or an option this parser does not know
        else:
            files.append(argument)
    return (files[0], fmt) if len(files) == 1 and fmt else None


if __name__ == "__main__":
    main()
