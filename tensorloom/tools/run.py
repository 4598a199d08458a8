"""`tlc run FILE [--nproc N] [-- ARGS]`: compile to a cached script and run it.

    $ tlc run examples/mnist.tl -- --epochs 2 --device cpu
    $ tlc run train_ddp.tl --nproc 2          # under torch.distributed.run (torchrun)

The script is written to `<cache>/scripts` (`<cache>` as for `tlc check`'s cache:
`$TENSORLOOM_CACHE_DIR`, else `$XDG_CACHE_HOME/tensorloom`, else `~/.cache/tensorloom`)
under a name keyed by the text of every source file it was compiled from and by
the compiler's fingerprint, so an unchanged program is not compiled twice. It runs
with the current Python in the current directory (checkpoints and metrics land
there); imports in the program resolve relative to its own file. Nothing runs
when the program has errors.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from tensorloom.pipeline import Compilation, compile_file, python_source
from tensorloom.tools import check_cache
from tensorloom.tools.common import emit_diagnostics, exit_status


def cache_dir() -> Path:
    return Path(check_cache.cache_dir()) / "scripts"


def cache_key(result: Compilation) -> str:
    """A hash of the compiler's fingerprint and every source file's name and text."""
    digest = hashlib.sha256(check_cache.compiler_fingerprint().encode())
    units = result.program.units() if result.program is not None else []
    for path in sorted(unit.path for unit in units):
        source = result.sources.get(path)
        text = source.text if source is not None else ""
        digest.update(path.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()[:16]


def compile_cached(file: Path) -> tuple[Path | None, int]:
    """The compiled script's path (None when the program has errors) and the exit status."""
    from tensorloom.diagnostics.ir import reporting

    result = compile_file(file, until="torch")
    emit_diagnostics(result.sink, result.sources)
    if not result.ok or result.module is None:
        return None, exit_status(result.sink)
    target = cache_dir() / f"{file.stem}-{cache_key(result)}.py"
    if not target.exists():
        with reporting(result.sink):
            text = python_source(result.module, str(file))
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)  # atomic: a concurrent run never reads half a file
    return target, exit_status(result.sink)


def run_command(script: Path, nproc: int | None, args: list[str]) -> list[str]:
    if nproc is None:
        return [sys.executable, str(script), *args]
    launcher = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}"]
    return [*launcher, str(script), *args]


def run_file(file: Path, nproc: int | None, args: list[str]) -> int:
    script, status = compile_cached(file)
    if script is None:
        return status
    return subprocess.call(run_command(script, nproc, args))
