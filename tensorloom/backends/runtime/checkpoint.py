"""Checkpoints for TensorLoom scripts: atomic, complete, and free of wrapper prefixes.

    save_checkpoint("ckpt/epoch-0005.pt", model=model, optimizer=optimizer,
                    scaler=scaler, scheduler=scheduler, epoch=5, step=1250)
    state = load_checkpoint("ckpt/last.pt", model=model, optimizer=optimizer)
    start_epoch = state["epoch"]    # the number of epochs already done

A checkpoint holds the model, optimizer, GradScaler and lr-scheduler states, the
epoch and global optimizer step, the RNG states (Python `random`, torch CPU, every
CUDA device) and the loader's state, so a resumed run continues with exactly the
numbers an uninterrupted run would have produced. The model's state dict is taken
from the module inside any `DistributedDataParallel` (`module.`) or
`torch.compile` (`_orig_mod.`) wrapper, so its keys load into a plain model.

A write goes to a temporary file in the same directory, is flushed and fsynced,
then renamed over the target: a crash mid-write leaves the previous file intact.

A checkpoint also records the model's class name. Loading one that cannot be
resumed from (missing, empty, truncated, not a torch file, a pickle with code in
it, keys missing, another model, the same model with other sizes, tensors whose
bytes no longer match the sha256 `checksum` saved with them) raises
`CheckpointError`, whose one-line message names the file and what is wrong.
A write killed half-way leaves a hidden temporary file; `clean_stale_temp_files`
removes those at the next start. `load_weights` reads the model's (and an EMA's)
weights alone, for `--init-from` and `--evaluate`.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import random
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

_RESUME_KEYS = ("model", "optimizer", "scaler", "scheduler", "epoch", "step", "rng", "loader")


class CheckpointError(Exception):
    """A checkpoint that cannot be loaded; the message names the file and says why."""


def unwrap_model(model: torch.nn.Module) -> torch.nn.Module:
    """The user's module inside DDP and torch.compile wrappers, in either nesting order."""
    while True:
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = model.module
        elif hasattr(model, "_orig_mod"):
            model = model._orig_mod  # type: ignore[assignment]
        else:
            return model


def strip_prefixes(state_dict: dict[str, Any]) -> dict[str, Any]:
    """Keys without the `_orig_mod.` and `module.` prefixes that wrappers add."""
    return {re.sub(r"^(?:_orig_mod\.|module\.)+", "", k): v for k, v in state_dict.items()}


def rng_states() -> dict[str, Any]:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    return {"python": random.getstate(), "torch": torch.get_rng_state(), "cuda": cuda}


def restore_rng_states(states: dict[str, Any]) -> None:
    # torch.save may turn the inner tuple into a list; RNG states are CPU byte tensors.
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(states["torch"].cpu())
    if states.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([state.cpu() for state in states["cuda"]])


def tensor_checksum(state: Any, path: str = "", digest: Any = None) -> str:
    """sha256 of every tensor in `state` (key path, dtype, shape, bytes) in key order, the
    top-level `checksum` entry left out."""
    digest = digest or hashlib.sha256()
    if isinstance(state, torch.Tensor):
        data = state.detach().cpu().contiguous()
        digest.update(f"{path}:{data.dtype}:{tuple(data.shape)}".encode())
        if data.numel():
            digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(state, dict):
        for key in sorted(state, key=str):
            if path or key != "checksum":
                tensor_checksum(state[key], f"{path}/{key}", digest)
    elif isinstance(state, list | tuple):
        for i, item in enumerate(state):
            tensor_checksum(item, f"{path}/{i}", digest)
    return digest.hexdigest()


def clean_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of writes that were killed half-way; returns them."""
    folder = Path(directory)
    stale = [*folder.glob(".*.pt.*.tmp"), *folder.glob(".*.pt.link")] if folder.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def save_checkpoint(
    path: str | os.PathLike[str], *, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    epoch: int, step: int, loader: Any = None, extra: dict[str, Any] | None = None,
) -> Path:  # fmt: skip
    """Write everything a run needs to continue to `path`, atomically."""
    plain = unwrap_model(model)
    state = {
        "model": strip_prefixes(plain.state_dict()), "model_class": type(plain).__name__,
        "optimizer": optimizer.state_dict(),
        "scaler": scaler.state_dict() if scaler is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "epoch": epoch, "step": step, "rng": rng_states(),
        "loader": loader.state_dict() if loader is not None else None, "extra": extra or {},
    }  # fmt: skip
    state["checksum"] = tensor_checksum(state)
    atomic_torch_save(state, Path(path))
    return Path(path)


def atomic_torch_save(obj: object, target: Path) -> None:
    """torch.save to a temporary file beside `target`, fsync, then rename over it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    if hasattr(os, "O_DIRECTORY"):  # makes the rename itself durable (POSIX)
        directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(directory)
        os.close(directory)


def load_checkpoint(
    path: str | os.PathLike[str], *, model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None, scaler: torch.amp.GradScaler | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None, loader: Any = None,
    map_location: str | torch.device = "cpu", restore_rng: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Restore what `save_checkpoint` wrote; returns the whole state (epoch, step, extra).
    Raises `CheckpointError` for a file it cannot resume from (see the module doc)."""
    state = read_checkpoint(path, map_location=map_location)
    _load_model(path, state, model)
    try:
        for part, key in ((optimizer, "optimizer"), (scaler, "scaler"),
                          (scheduler, "scheduler"), (loader, "loader")):  # fmt: skip
            if part is not None and state[key] is not None:
                part.load_state_dict(state[key])
        if restore_rng:
            restore_rng_states(state["rng"])
    except (KeyError, ValueError, TypeError, RuntimeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CheckpointError(
            f"{path}: its training state does not fit this run ({reason})"
        ) from None
    return state


def read_checkpoint(
    path: str | os.PathLike[str], *, map_location: str | torch.device = "cpu",
    required: tuple[str, ...] = _RESUME_KEYS,
) -> dict[str, Any]:  # fmt: skip
    """A checkpoint file's state, loaded with `weights_only=True`, keys and checksum checked."""
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such checkpoint file")
    if file.stat().st_size == 0:
        raise CheckpointError(f"{file} is empty: the run that wrote it was cut off")
    unreadable = f"{file} is not a readable checkpoint: truncated, or not written by torch.save"
    try:
        state = torch.load(file, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError:
        if not zipfile.is_zipfile(file):  # torch.save writes a zip archive; this is not one
            raise CheckpointError(unreadable) from None
        raise CheckpointError(
            f"{file} holds more than tensors and numbers (a pickle with code in it): "
            "refused, checkpoints load with weights_only=True"
        ) from None
    except (EOFError, RuntimeError, ValueError, OSError, IndexError, KeyError):
        raise CheckpointError(unreadable) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{file} is not a TensorLoom checkpoint: it holds no state dict")
    missing = ", ".join(f"`{key}`" for key in required if key not in state)
    if missing:
        raise CheckpointError(f"{file} is not a complete TensorLoom checkpoint: {missing} missing")
    if state.get("checksum") not in (None, tensor_checksum(state)):  # None: older checkpoints
        raise CheckpointError(
            f"{file}: its tensors do not match the checksum saved with them "
            "(the file was damaged or changed after it was written)"
        )
    return state


def load_weights(
    path: str | os.PathLike[str], *, model: torch.nn.Module, ema: Any = None,
    map_location: str | torch.device = "cpu",
) -> dict[str, Any]:  # fmt: skip
    """The model's weights (and the EMA's, if both have one) from a checkpoint, nothing else:
    `--init-from` fine-tunes from them, `--evaluate` reports their metrics."""
    state = read_checkpoint(path, map_location=map_location, required=("model",))
    _load_model(path, state, model)
    saved_ema = saved_ema_state(state)
    if ema is not None and saved_ema is not None:
        ema.load_state_dict(saved_ema)
    return state


def saved_ema_state(state: dict[str, Any]) -> dict[str, Any] | None:
    """The EMA weights a checkpoint holds (a run with `ema`), or None."""
    return ((state.get("extra") or {}).get("recipe") or {}).get("ema")


def _load_model(
    path: str | os.PathLike[str], state: dict[str, Any], model: torch.nn.Module
) -> None:
    """Load the checkpoint's weights into `model` after checking they are this model's, at
    these sizes."""
    model = unwrap_model(model)
    ours, saved = type(model).__name__, state.get("model_class")
    if saved is not None and saved != ours:
        raise CheckpointError(f"{path} holds a `{saved}` model; this script trains `{ours}`")
    weights, own = strip_prefixes(state["model"]), model.state_dict()
    for key, tensor in own.items():
        if key not in weights:
            raise CheckpointError(f"{path} has no `{key}`: it holds another model than `{ours}`")
        there = getattr(weights[key], "shape", None)
        if there is not None and tuple(there) != tuple(tensor.shape):
            raise CheckpointError(
                f"{path} holds a `{ours}` of other sizes: `{key}` is {list(there)} there, "
                f"{list(tensor.shape)} here"
            )
    extra = [key for key in weights if key not in own]
    if extra:
        raise CheckpointError(f"{path} has `{extra[0]}`, which `{ours}` does not")
    model.load_state_dict(weights)


def save_epoch_checkpoint(
    directory: str | os.PathLike[str], *, keep: int, epoch: int, **state: Any
) -> Path:
    """Save `epoch-NNNN.pt`, and `last.pt` as a hard link to it (a copy where links fail),
    keeping the newest `keep` epoch files."""
    folder = Path(directory)
    path = save_checkpoint(folder / f"epoch-{epoch:04d}.pt", epoch=epoch, **state)
    link = folder / ".last.pt.link"
    link.unlink(missing_ok=True)
    try:
        os.link(path, link)
    except OSError:
        shutil.copyfile(path, link)
    os.replace(link, folder / "last.pt")
    for old in sorted(folder.glob("epoch-*.pt"))[:-keep]:
        old.unlink()
    return path


# What a run leaves in its checkpoint folder: files here, folders under FSDP (runtime/sharded.py).
_RUN_FILES = ("last.pt", "best.pt", "epoch-[0-9]*.pt", "last", "best", "epoch-[0-9]*")


def previous_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """The checkpoints an earlier run left in `directory` (none when it does not exist)."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    found = {path for pattern in _RUN_FILES for path in folder.glob(pattern)}
    return sorted(found)


def check_writable_folder(
    directory: str | os.PathLike[str], flag: str = "--checkpoint-dir"
) -> None:
    """Create `directory` and write a probe file in it, so that a folder the run cannot write
    (read-only, under a file, in /proc) is one `CheckpointError` before the first step,
    not a traceback at the first save."""
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as problem:
        reason = (problem.strerror or type(problem).__name__).lower()
        raise CheckpointError(
            f"cannot write checkpoints to {folder}: {reason}; give a writable {flag}"
        ) from None


def prepare_checkpoint_dir(
    directory: str | os.PathLike[str], *, resume: str | None, overwrite: bool,
    init_from: str | None = None, main: bool = True,
) -> Path:  # fmt: skip
    """The folder this run saves in, checked before the first step: writable, and never one
    that holds another run's checkpoints, whose work would be lost.

    `directory` itself when it holds no checkpoints, or when `overwrite` replaces them (rank 0,
    `main`, removes them now, so the folder never mixes two runs' epoch files; the weights a
    run starts from, `init_from`, are never among them). A run that continues a checkpoint
    (`resume`) saves beside it: in `directory` if the checkpoint is there or `directory`
    holds no other run, else in the checkpoint's own folder. Any other run into a used
    folder saves in a new `run-N` folder inside it (the first that holds no checkpoints), and
    rank 0 says so.
    """
    check_writable_folder(directory)
    folder = Path(directory)
    previous = previous_checkpoints(folder)
    if not previous:
        return folder
    if resume is not None:
        return _resumed_folder(folder, Path(resume), main)
    if overwrite:
        _remove_previous(folder, previous, init_from, main)
        return folder
    number = 2
    while previous_checkpoints(folder / f"run-{number}"):
        number += 1
    own = folder / f"run-{number}"
    check_writable_folder(own)
    if main:
        last = folder / "last.pt"
        again = f"--resume {last} continues it, " if last.is_file() else ""
        print(f"{folder} holds an earlier run's checkpoints ({_listed(previous)}): this run saves "
              f"in {own} ({again}--overwrite replaces it)", file=sys.stderr)  # fmt: skip
    return own


def _resumed_folder(folder: Path, resume: Path, main: bool) -> Path:
    """Where a resumed run saves when `folder` holds checkpoints: `folder` if it resumes one
    of them, else the folder of the checkpoint it resumes (a save's own folder, under FSDP
    `--resume DIR` of a run's folder itself), which rank 0 names."""
    saved = resume.resolve()
    continued = saved if saved.is_dir() and previous_checkpoints(saved) else saved.parent
    if continued == folder.resolve():
        return folder
    if main:
        print(f"{folder} holds another run's checkpoints: this run continues {resume} in "
              f"{continued}", file=sys.stderr)  # fmt: skip
    return continued


def _remove_previous(folder: Path, previous: list[Path], init_from: str | None, main: bool) -> None:
    """--overwrite: remove an earlier run's checkpoints (rank 0), never the weights this run
    starts from."""
    start = Path(init_from).resolve() if init_from is not None else None
    if start is not None and any(start.is_relative_to(p.resolve()) for p in previous):
        raise CheckpointError(
            f"--init-from {init_from} is one of the checkpoints in {folder}, which this "
            "run would replace: give another --checkpoint-dir"
        )
    if main:
        for path in previous:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _listed(paths: list[Path], most: int = 3) -> str:
    """`last.pt, epoch-0005.pt, epoch-0010.pt and 2 more`."""
    names = [path.name for path in paths[:most]]
    more = f" and {len(paths) - most} more" if len(paths) > most else ""
    return ", ".join(names) + more
