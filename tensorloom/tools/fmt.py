"""`tlc fmt FILE...`: rewrite `.tl` and `.nml` files in the canonical layout (frontend/format.py).

    $ tlc fmt examples/                 # folders are searched for .tl and .nml
    reformatted examples/gpt.nml
    1 file reformatted, 18 files left unchanged
    $ tlc fmt --check examples tests/lit
    would reformat tests/lit/check/foo.tl
    $ echo $?                           # 1: a file would change (0 when none would)
    $ tlc fmt - < model.nml             # stdin to stdout, for editors' format-on-save

A file that does not lex or parse is left as it is, its diagnostics printed, and the
status is 1 (gofmt refuses one too). Under `--check`, which asks only whether formatting
would change a file, such a file is named as not checked and does not fail the run:
`tlc check` is what reports its errors (tests/lit holds programs that are broken on
purpose). `--diff` prints what would change, as a unified diff.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tensorloom.diagnostics import DiagnosticSink, render_text
from tensorloom.frontend.format import Unchanged, Unformattable, format_text
from tensorloom.frontend.parser import read_source
from tensorloom.source import SOURCE_SUFFIXES, SourceMap
from tensorloom.tools.guard import EXIT_OK, EXIT_USER_ERROR

STDIN = Path("-")


@dataclass
class Tally:
    """What one `tlc fmt` run did, for its last line and its exit status."""

    changed: list[Path] = field(default_factory=list)
    unchanged: int = 0
    failed: int = 0
    unparsed: list[Path] = field(default_factory=list)  # under --check: syntax errors

    def summary(self, check: bool) -> str:
        verb = "would be reformatted" if check else "reformatted"
        parts = [f"{_files(len(self.changed))} {verb}", f"{_files(self.unchanged)} left unchanged"]
        if self.failed:
            parts.append(f"{_files(self.failed)} not formatted (errors above)")
        if self.unparsed:
            parts.append(f"{_files(len(self.unparsed))} not checked (syntax errors)")
        return ", ".join(parts)


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def run_fmt(paths: list[Path], *, check: bool = False, diff: bool = False,
            stdin_name: str = "<stdin>.tl") -> int:  # fmt: skip
    """The `tlc fmt` command: the exit status (1 when a file would change under --check)."""
    if paths == [STDIN]:
        return _format_stdin(stdin_name)
    tally = Tally()
    sources, sink = SourceMap(), DiagnosticSink()
    for path in _sources(paths, sink):
        _format_file(path, sources, sink, tally, check=check, diff=diff)
    if sink.diagnostics:
        sys.stderr.write(render_text.render_all(sink.sorted(), sources, color=False))
    for path in tally.unparsed:
        print(f"{path}: not checked: it does not parse (`tlc check` says why)", file=sys.stderr)
    for path in tally.changed if check else []:
        print(f"would reformat {path}")
    if not diff:
        print(tally.summary(check), file=sys.stderr)
    failed = tally.failed or sink.has_errors or ((check or diff) and tally.changed)
    return EXIT_USER_ERROR if failed else EXIT_OK


def _sources(paths: list[Path], sink: DiagnosticSink) -> Iterator[Path]:
    """The files named and the .tl/.nml files under the folders named, in a stable order;
    under a folder, not what tools write there (lit's `Output/`, hidden and cache folders)."""
    for path in paths:
        if path.is_dir():
            found = (
                p for p in path.rglob("*")
                if p.suffix in SOURCE_SUFFIXES and p.is_file() and not _generated(p, path)
            )  # fmt: skip
            yield from sorted(found)
        else:
            yield path  # read_source reports a missing file or a wrong suffix


_GENERATED = frozenset({"Output", "__pycache__", "node_modules"})


def _generated(path: Path, root: Path) -> bool:
    """Under a folder that tools write (lit's `Output/`) or a hidden one (`.venv`)."""
    parts = path.relative_to(root).parts[:-1]
    return any(part in _GENERATED or part.startswith(".") for part in parts)


def _format_file(path: Path, sources: SourceMap, sink: DiagnosticSink, tally: Tally, *,
                 check: bool, diff: bool) -> None:  # fmt: skip
    text = read_source(path, sources, sink)
    if text is None:
        tally.failed += 1
        return
    errors = DiagnosticSink() if check else sink  # --check: noted, not printed in full
    formatted = _formatted(text, str(path), errors)
    if formatted is None and errors.diagnostics and check:
        tally.unparsed.append(path)
        return
    if formatted is None:
        tally.failed += 1
        return
    if formatted == text:
        tally.unchanged += 1
        return
    tally.changed.append(path)
    if diff:
        sys.stdout.writelines(
            difflib.unified_diff(
                text.splitlines(True), formatted.splitlines(True), str(path), str(path)
            )
        )
    if not (check or diff):
        path.write_text(formatted, encoding="utf-8")
        print(f"reformatted {path}", file=sys.stderr)


def _formatted(text: str, name: str, sink: DiagnosticSink) -> str | None:
    """The text laid out, or None with the reason in the sink."""
    try:
        return format_text(text, name)
    except Unformattable as error:
        sink.extend(error.diagnostics)
    except Unchanged:
        print(f"{name}: left as it is: laying it out would change its tokens", file=sys.stderr)
        print("  = this is a bug in `tlc fmt`; please report it with the file", file=sys.stderr)
    return None


def _format_stdin(name: str) -> int:
    """Read a program on stdin and write it laid out on stdout (unchanged when it has errors).

    `name` is what diagnostics call it; its suffix says whether it is `.tl` or `.nml`."""
    text = sys.stdin.read()
    sources, sink = SourceMap(), DiagnosticSink()
    sources.add(name, text)
    formatted = _formatted(text, name, sink)
    sys.stdout.write(text if formatted is None else formatted)
    if sink.diagnostics:
        sys.stderr.write(render_text.render_all(sink.sorted(), sources, color=False))
    return EXIT_OK if formatted is not None else EXIT_USER_ERROR
