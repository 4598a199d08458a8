"""`tlc compile FILE --emit STAGE`: run the pipeline up to a stage and print it.

    $ tlc compile mnist.tl --emit nml        # IR after the nml stage's passes
    $ tlc compile mnist.tl -o run_mnist.py   # the Python script (the default)

The stages are those of `tensorloom.pipeline.STAGES`. Diagnostics go to
stderr; exit status 1 when the program has errors, 2 when the stage asked for
cannot be produced by this build.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tensorloom.pipeline import STAGE_NAMES, Compilation, compile_file, python_source
from tensorloom.tools import check_cache
from tensorloom.tools.check import store_result
from tensorloom.tools.check_cache import Replay
from tensorloom.tools.common import exit_status

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

EMIT_CHOICES = tuple(s for s in STAGE_NAMES if s != "tokens")


def run_compile(file: Path, emit: str, output: Path | None, *, use_cache: bool = False,
                single_file: bool = False) -> int:  # fmt: skip
    """Compile `file` up to `emit`, write the result; the exit status.

    Python written to a file is the program and, beside it, the runtime module it imports;
    `single_file` (and Python on stdout) is one file holding both. With `use_cache`, an
    unchanged program's output is replayed from tools/check_cache.py, and a fresh result
    is stored there.
    """
    if emit == "python" and output is not None and not single_file:
        return _compile_program(file, output)
    name, command = str(file), f"compile --emit {emit}"
    replay = check_cache.lookup(name, command) if use_cache else None
    if replay is None:
        compiled = _compile(file, emit)
        replay = _render(*compiled)
        if use_cache:
            store_result(name, command, compiled[0], replay)
    return _deliver(replay, output)


def _compile(file: Path, emit: str) -> tuple[Compilation, str | None]:
    """The compilation up to `emit` and its text (None when the program has errors)."""
    if emit == "ast":
        return _emit_ast(file)
    if emit == "python":
        return _emit_python(file)
    result = compile_file(file, until=emit)
    return result, _ir_text(result.module)


def _emit_ast(file: Path) -> tuple[Compilation, str | None]:
    from tensorloom.frontend import ast_dump
    from tensorloom.tools.common import load_and_parse

    module, sources, sink = load_and_parse(file)
    text = ast_dump.dump(module) if module is not None else None
    return Compilation(str(file), sources, sink), text


def _emit_python(file: Path) -> tuple[Compilation, str | None]:
    from tensorloom.diagnostics.ir import reporting

    result = compile_file(file, until="torch")
    text = None
    if result.module is not None and result.ok:
        with reporting(result.sink):
            text = python_source(result.module, str(file))
    return result, text


def _compile_program(file: Path, output: Path) -> int:
    """`tlc compile FILE -o OUT.py`: the program file and its runtime module beside it."""
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.pipeline import python_program

    result = compile_file(file, until="torch")
    printed = None
    if result.module is not None and result.ok:
        with reporting(result.sink):
            printed = python_program(result.module, str(file))
    replay = _render(result, printed.program if printed is not None else None)
    if replay.status != 0 or printed is None or printed.runtime is None:
        return _deliver(replay, output)
    runtime = output.with_name(printed.runtime.file_name)
    problem = _folder_problem(output)
    if problem is not None:
        return problem
    runtime.write_text(printed.runtime.text, encoding="utf-8")
    status = _deliver(replay, output)
    lines = printed.runtime.text.count("\n")
    sys.stderr.write(f"wrote {check_cache.display_path(str(runtime))} ({lines:,} lines), "
                     "the runtime it imports\n")  # fmt: skip
    return status


def _folder_problem(output: Path) -> int | None:
    """Make `-o`'s folder (`out/train.py` with no `out/` yet); a path that cannot be written
    is a one-line error (exit 1), never a traceback."""
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        if output.is_dir():
            raise IsADirectoryError(21, "it is a folder", str(output))
    except OSError as exc:
        blocking = next((p for p in output.parents if p.is_file()), None)
        why = f"`{blocking}` is a file, not a folder" if blocking else (exc.strerror or str(exc))
        sys.stderr.write(f"error: cannot write `{output}`: {why[0].lower() + why[1:]}\n")
        return 1
    return None


def _ir_text(module: ModuleOp | None) -> str | None:
    if module is None:
        return None
    from io import StringIO

    from xdsl.printer import Printer

    stream = StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def _render(result: Compilation, text: str | None) -> Replay:
    """Diagnostics for stderr, the stage's text for stdout (none if there were errors)."""
    from tensorloom.diagnostics import render_text

    diagnostics = result.sink.sorted()
    color = check_cache.use_color("text")
    errors = render_text.render_all(diagnostics, result.sources, color=color) if diagnostics else ""
    status = exit_status(result.sink)
    return Replay(text if text is not None and status == 0 else "", errors, status)


def _deliver(replay: Replay, output: Path | None) -> int:
    sys.stderr.write(replay.stderr)
    if replay.status != 0:
        return replay.status
    if output is None:
        sys.stdout.write(replay.stdout)
    else:
        problem = _folder_problem(output)
        if problem is not None:
            return problem
        output.write_text(replay.stdout, encoding="utf-8")
        lines = replay.stdout.count("\n")
        sys.stderr.write(f"wrote {check_cache.display_path(str(output))} ({lines:,} lines)\n")
    return replay.status
