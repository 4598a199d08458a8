"""Run one program through `tlc check` and `tlc compile`, in process, and classify what happened.

    outcome = classify(Path("work/__fz__.tl"), text)
    outcome.kind     # "ok", "diagnostic", or one of BUGS
    outcome.detail   # the internal error's message, the exception, the bad span ...

The classes (issue 15): `ok` (checked and compiled), `diagnostic` (the program
has errors, reported at a place in the file), and the bugs: `internal` (a
TL0901 or exit status 3), `exception` (something escaped the driver: a
traceback), `hang` (over 5 s), `span` (a diagnostic outside its file),
`disagree` (`tlc check` accepts what `tlc compile` rejects), `py_syntax` (the
emitted Python does not `compile()`), `forward` (the emitted model does not
build or run one forward on the CPU; checked only where asked, it needs torch),
`info` (`tlc info`, which compiles the specialised IR and walks its types, fails
or disagrees on a program `tlc check` accepts; checked where the forward is).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tensorloom.diagnostics import INTERNAL_ERROR, Diagnostic
from tensorloom.pipeline import Compilation, compile_file, python_source
from tensorloom.source import SourceMap
from tensorloom.tools.check import check_file, render_check

HANG_SECONDS = 5.0  # of CPU time
ABORT_SECONDS = 30  # a run this long is stopped (and counted as a hang)
BUGS = ("internal", "exception", "hang", "span", "disagree", "py_syntax", "forward", "info")


@dataclass
class Outcome:
    kind: str
    detail: str = ""
    seconds: float = 0.0
    python: str | None = None  # the emitted script, for a program that compiled
    # (model, input shapes, every step's output shape): the forward check picks sizes
    # for the symbols that keep each step's size positive (`T//4` needs T of 4 or more)
    flows: list[tuple[str, list[str], list[str]]] = field(default_factory=list)

    @property
    def is_bug(self) -> bool:
        return self.kind in BUGS


class _Timeout(BaseException):
    """Not an Exception, so the driver's own `except Exception` cannot report it as a crash."""


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Raise _Timeout after `seconds` of this process's CPU time (main thread only).

    CPU time, not wall time: on a loaded machine (two cores, five users) a run
    waits for the processor, and that is not the compiler hanging.
    """

    def expire(signum: int, frame: object) -> None:
        raise _Timeout

    try:
        previous = signal.signal(signal.SIGVTALRM, expire)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def classify(path: Path, text: str) -> Outcome:
    """Write `text` to `path`, check it, compile it, and say which class the result is in."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    start = time.process_time()
    try:
        with _deadline(ABORT_SECONDS):
            outcome = _run(path)
    except _Timeout:
        outcome = Outcome("hang", f"stopped after {ABORT_SECONDS} s")
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        outcome = Outcome("exception", f"{type(error).__name__}: {str(error)[:300]}")
    outcome.seconds = time.process_time() - start
    if outcome.seconds > HANG_SECONDS and not outcome.is_bug:
        outcome = Outcome("hang", f"{outcome.seconds:.1f} s", outcome.seconds)
    return outcome


def _run(path: Path) -> Outcome:
    checked, flows = check_file(path)
    replay = render_check(checked, flows, "text")
    bug = _bug_in(checked, "check") or (
        Outcome("internal", "exit 3") if replay.status == 3 else None
    )
    if bug is not None:
        return bug
    compiled = compile_file(path, until="torch")
    bug = _bug_in(compiled, "compile")
    if bug is not None:
        return bug
    if not checked.ok:
        return Outcome("diagnostic", _first_error(checked))
    if not compiled.ok or compiled.module is None:
        return Outcome("disagree", f"check ok, compile: {_first_error(compiled)}")
    script = python_source(compiled.module, str(path))
    try:
        compile(script, "<emitted>", "exec")
    except SyntaxError as error:
        return Outcome("py_syntax", f"{error.msg} at line {error.lineno}")
    shapes = [(f.model, list(f.inputs), [step.shape for step in f.steps]) for f in flows]
    return Outcome("ok", python=script, flows=shapes)


def _bug_in(result: Compilation, command: str) -> Outcome | None:
    for diagnostic in result.sink:
        if diagnostic.code == INTERNAL_ERROR:
            return Outcome("internal", f"{command}: {diagnostic.message[:300]}")
        problem = _span_problem(diagnostic, result.sources)
        if problem is not None:
            return Outcome("span", f"{command}: {diagnostic.code} {problem}")
    return None


def _span_problem(diagnostic: Diagnostic, sources: SourceMap) -> str | None:
    labels = [diagnostic.primary, *diagnostic.secondary]
    for label in labels:
        span = label.span
        source = sources.get(span.file) if span.file in sources else None
        if source is None:
            return f"names a file it did not read: {span.file!r}"
        last = len(source.lines) + 1
        if not (1 <= span.line <= last and span.line <= span.end_line <= last):
            return f"line {span.line}-{span.end_line} outside 1..{last}"
        if span.col < 1:
            return f"column {span.col}"
    return None


def _first_error(result: Compilation) -> str:
    errors = result.sink.errors()
    return f"{errors[0].code} {errors[0].message[:200]}" if errors else "no error"


def info_problem(path: Path) -> str | None:
    """What goes wrong when `tlc info` profiles `path`, a program `tlc check` accepted:
    an internal error, a bad span, a diagnostic check did not give; None if nothing."""
    from tensorloom.analysis.report import InfoRequest, info_file

    with _deadline(ABORT_SECONDS):
        result, _ = info_file(path, InfoRequest(batch_size=4))
    bug = _bug_in(result, "info")
    if bug is not None:
        return bug.detail
    return None if result.ok else f"check ok, info: {_first_error(result)}"
