"""`tlc run FILE [--nproc N] [-- ARGS]`: compile to a cached script and run it.

    $ tlc run examples/mnist.tl -- --epochs 2 --device cpu
    $ tlc run train_ddp.tl --nproc 2          # torchrun --standalone: a free port per run
    $ tlc run train_ddp.tl --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --master-port 29400
    $ tlc run train_ddp.tl --nnodes 2 --nproc 8 --rdzv-endpoint 10.0.0.1:29400  # any node order
    $ tlc run examples/mnist.tl --keep        # runs examples/mnist.py, left beside the source

With `--nproc` alone the processes rendezvous on a TCP store at a free port
(`--standalone`), so two runs side by side never collide. With `--nnodes` every
machine runs the same command, `--node-rank` 0..N-1 with `--master-addr/-port`
(static), or all alike with `--rdzv-endpoint HOST:PORT` (torchrun's c10d
rendezvous; `--rdzv-id` names the job, default `tensorloom`).

torchrun runs inside this process (`torch.distributed.run.run`), so a failed run
ends with TensorLoom's account of it rather than torchrun's summary: which rank
failed first, its exit status or signal, and the end of its own stderr. Local
rank 0 writes straight to this terminal (its progress bar stays); the others' output
is also shown, prefixed `[defaultN]:`, and kept under a temporary log folder,
which a failed run names and a successful one removes.

The script is written to `<cache>/scripts` (`<cache>` as for `tlc check`'s cache:
`$TENSORLOOM_CACHE_DIR`, else `$XDG_CACHE_HOME/tensorloom`, else `~/.cache/tensorloom`)
under a name keyed by the text of every source file it was compiled from and by
the compiler's fingerprint, so an unchanged program is not compiled twice. It runs
with the current Python in the current directory (checkpoints and metrics land
there); imports in the program resolve relative to its own file. Nothing runs
when the program has errors. The program file's runtime module is written beside it
(`--single-file`: one file). With `--keep` both are copied beside the source (`mnist.tl` ->
`mnist.py` and its `tensorloom_rt_*.py`, never over a file TensorLoom did not write) and run
from there. The exit status is the script's own: Ctrl-C reaches the script, which saves,
prints how to resume and exits 130, and `tlc run` waits for it and returns that.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorloom.pipeline import Compilation, compile_file, python_program, python_source
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


def compile_cached(file: Path, single_file: bool = False) -> tuple[Path | None, int]:
    """The compiled program's path (None when the program has errors) and the exit status.

    The program's runtime module is written beside it (`single_file`: one file with both).
    """
    from tensorloom.diagnostics.ir import reporting

    result = compile_file(file, until="torch")
    emit_diagnostics(result.sink, result.sources)
    if not result.ok or result.module is None:
        return None, exit_status(result.sink)
    kind = "single" if single_file else "program"
    target = cache_dir() / f"{file.stem}-{cache_key(result)}-{kind}.py"
    if not target.exists():
        with reporting(result.sink):
            if single_file:
                text = python_source(result.module, str(file))
            else:
                printed = python_program(result.module, str(file))
                text = printed.program
                if printed.runtime is not None:
                    _write_atomic(target.with_name(printed.runtime.file_name), printed.runtime.text)
        _write_atomic(target, text)  # last: its presence means the runtime is there too
    return target, exit_status(result.sink)


def _write_atomic(target: Path, text: str) -> None:
    """A concurrent run never reads half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)


@dataclass(frozen=True, slots=True)
class Launch:
    """How `tlc run` starts the script: plain Python, or torchrun on one or several machines."""

    nproc: int | None = None  # processes on this machine
    nnodes: int | None = None
    node_rank: int | None = None
    master_addr: str | None = None
    master_port: int | None = None
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None

    @property
    def multi_node(self) -> bool:
        return (self.nnodes or 1) > 1 or self.rdzv_endpoint is not None

    @property
    def torchrun(self) -> bool:
        return self.nproc is not None or self.multi_node or self.master_addr is not None

    def problem(self) -> str | None:
        """What is inconsistent in these options (a usage error), or None."""
        static = (self.node_rank, self.master_addr, self.master_port)
        if self.rdzv_endpoint is not None and any(v is not None for v in static):
            return "`--rdzv-endpoint` replaces `--node-rank`, `--master-addr` and `--master-port`"
        if self.rdzv_id is not None and self.rdzv_endpoint is None:
            return "`--rdzv-id` goes with `--rdzv-endpoint`"
        if self.multi_node and self.rdzv_endpoint is None:
            missing = [f"--{n}" for n, v in zip(("node-rank", "master-addr", "master-port"),
                                                static, strict=True) if v is None]  # fmt: skip
            if missing:
                return f"`--nnodes {self.nnodes}` needs {', '.join(f'`{m}`' for m in missing)}"
        if self.node_rank is not None and self.node_rank >= (self.nnodes or 1):
            return f"`--node-rank {self.node_rank}` must be below `--nnodes {self.nnodes or 1}`"
        if not self.multi_node and any(v is not None for v in static):
            return "`--node-rank`, `--master-addr` and `--master-port` need `--nnodes N` (N > 1)"
        return None


def torchrun_arguments(launch: Launch, log_dir: str | None = None) -> list[str]:
    """The options of `torch.distributed.run` for `launch` (the script and its arguments follow)."""
    nproc = launch.nproc or 1
    arguments = [f"--nproc-per-node={nproc}"]
    if launch.rdzv_endpoint is not None:
        arguments += [f"--nnodes={launch.nnodes or 1}", "--rdzv-backend=c10d",
                      f"--rdzv-endpoint={launch.rdzv_endpoint}",
                      f"--rdzv-id={launch.rdzv_id or 'tensorloom'}"]  # fmt: skip
    elif launch.multi_node:
        arguments += [f"--nnodes={launch.nnodes}", f"--node-rank={launch.node_rank}",
                      f"--master-addr={launch.master_addr}",
                      f"--master-port={launch.master_port}"]  # fmt: skip
    else:
        arguments += ["--standalone", "--nnodes=1"]
    if log_dir is not None and nproc > 1:
        # Local rank 0 keeps the terminal; the others are also written to files.
        others = ",".join(f"{rank}:3" for rank in range(1, nproc))
        arguments += [f"--log-dir={log_dir}", f"--redirects={others}", f"--tee={others}"]
    return arguments


def run_command(script: Path, nproc: int | None, args: list[str]) -> list[str]:
    """The command line that runs `script`; torchrun as `python -m torch.distributed.run`."""
    if nproc is None:
        return [sys.executable, str(script), *args]
    launcher = [sys.executable, "-m", "torch.distributed.run", *torchrun_arguments(Launch(nproc))]
    return [*launcher, str(script), *args]


GENERATED = "# Generated by TensorLoom"


def keep_beside(script: Path, file: Path) -> Path | None:
    """Copies the compiled program next to `file` (`mnist.tl` -> `mnist.py`), with the runtime
    module it imports; None, with a message, when a file there was not written by TensorLoom
    (it is never overwritten)."""
    target = file.with_suffix(".py")
    text = script.read_text(encoding="utf-8")
    module = runtime_module_of(text)
    copies = [(target, text)]
    if module is not None:
        runtime = script.with_name(f"{module}.py")
        copies.append((file.with_name(runtime.name), runtime.read_text(encoding="utf-8")))
    for path, _ in copies:
        if path.exists() and not path.read_text(encoding="utf-8").startswith(GENERATED):
            sys.stderr.write(
                f"error: not keeping the script: {path} exists and was not written by "
                "TensorLoom\n  = help: move that file, or write the script elsewhere with "
                f"`tlc compile {file} -o OUT.py`\n"
            )
            return None
    for path, contents in copies:
        path.write_text(contents, encoding="utf-8")
    return target


RUNTIME_IMPORT = re.compile(r"^from (tensorloom_rt_\w+) import", re.M)


def runtime_module_of(program: str) -> str | None:
    """The runtime module a program file imports (None for a single file)."""
    found = RUNTIME_IMPORT.search(program)
    return found.group(1) if found else None


def run_file(
    file: Path,
    nproc: int | None,
    args: list[str],
    launch: Launch | None = None,
    keep: bool = False,
    single_file: bool = False,
) -> int:
    launch = launch or Launch(nproc=nproc)
    if importlib.util.find_spec("torch") is None:
        sys.stderr.write(
            "error: `tlc run` needs torch, which is not installed\n"
            "  = help: pip install 'tensorloom[torch]' (on a GPU machine, your CUDA build of "
            "torch first); `tlc compile` writes the script without it\n"
        )
        return 1
    script, status = compile_cached(file, single_file)
    if script is None:
        return status
    if keep:
        kept = keep_beside(script, file)
        if kept is None:
            return 1
        sys.stderr.write(f"kept the script as {kept}\n")
        script = kept
    if not launch.torchrun:
        return run_script([sys.executable, str(script), *args])
    return run_torchrun(script, launch, args)


def run_script(command: list[str]) -> int:
    """Run the script and return its own exit status (128 + N after signal N).

    Ctrl-C reaches the script too (the terminal signals the whole process group): it
    saves last.pt, says how to resume and exits 130. This process waits for that
    instead of raising KeyboardInterrupt and killing it; a SIGTERM sent to `tlc run`
    alone is passed on to the script, which stops the same way.
    """
    started: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        if signum != signal.SIGINT and started:  # the terminal sent SIGINT to the script too
            started[0].send_signal(signum)

    # Python-level handlers, not SIG_IGN: exec resets a handler, but would keep SIG_IGN.
    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        started.append(subprocess.Popen(command))
        status = started[0].wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - status if status < 0 else status


def run_torchrun(script: Path, launch: Launch, args: list[str]) -> int:
    """torchrun in this process; a failure is reported rank by rank (see the module doc)."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    log_dir = tempfile.mkdtemp(prefix="tlc-run-")
    command = [*torchrun_arguments(launch, log_dir), str(script), *args]
    options = get_args_parser().parse_args(command)
    try:
        run(options)
    except ChildFailedError as error:
        sys.stderr.write(failure_report(error.failures, log_dir))
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("Aborted!\n")
        return 130
    shutil.rmtree(log_dir, ignore_errors=True)
    return 0


def failure_report(failures: dict[int, Any], log_dir: str, tail: int = 15) -> str:
    """The first failed rank, its status and stderr's end; the others, one line each."""
    ordered = sorted(failures.items(), key=lambda item: _failure_order(*item))
    lines: list[str] = []
    for index, (rank, failure) in enumerate(ordered):
        what = "failed first" if index == 0 else "also stopped"
        lines.append(f"error: rank {rank} (local rank {failure.local_rank}) {what}: "
                     f"{describe_exit(failure.exitcode)}")  # fmt: skip
        if index == 0:
            lines += _stderr_tail(Path(log_dir), failure.local_rank, tail)
    lines.append(f"  = note: the other ranks' output is kept in {log_dir}")
    return "\n".join(lines) + "\n"


def _failure_order(rank: int, failure: Any) -> tuple[bool, int, int]:
    """A rank torchrun stopped with SIGTERM comes after the ones that failed by themselves:
    torchrun's timestamps are whole seconds, so a tie would otherwise name rank 0."""
    return failure.exitcode == -signal.SIGTERM, failure.timestamp, rank


def describe_exit(exitcode: int) -> str:
    """`exit status 1`, or `killed by SIGABRT (a C++ abort: its message is on its stderr)`."""
    if exitcode >= 0:
        return f"exit status {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        return f"killed by signal {-exitcode}"
    if name == "SIGTERM":
        return "SIGTERM (torchrun stops the other ranks when one fails)"
    if name == "SIGABRT":
        return "killed by SIGABRT (an abort in native code; its message and stack are above)"
    return f"killed by {name}"


def _stderr_tail(log_dir: Path, local_rank: int, tail: int) -> list[str]:
    logs = sorted(log_dir.glob(f"*/attempt_*/{local_rank}/stderr.log"))
    if not logs:
        return ["  = note: its output is above (local rank 0 writes to this terminal)"]
    text = logs[-1].read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
    if not text:
        return ["  = note: it wrote nothing to stderr"]
    return ["  | " + line for line in text[-tail:]]
