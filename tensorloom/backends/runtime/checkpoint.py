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
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

_WRAPPER_PREFIXES = ("_orig_mod.", "module.")
_RESUME_KEYS = ("model", "optimizer", "scaler", "scheduler", "epoch", "step", "rng", "loader")
_WEIGHT_KEYS = ("model",)
_CHECKSUM_KEY = "checksum"
_EPOCH_FILE = "epoch-{:04d}.pt"
LAST_CHECKPOINT = "last.pt"


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
    return {_strip_key(key): value for key, value in state_dict.items()}


def _strip_key(key: str) -> str:
    stripped = True
    while stripped:
        stripped = False
        for prefix in _WRAPPER_PREFIXES:
            if key.startswith(prefix):
                key, stripped = key[len(prefix) :], True
    return key


def rng_states() -> dict[str, Any]:
    states: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states: dict[str, Any]) -> None:
    random.setstate(_as_random_state(states["python"]))
    # RNG states are CPU byte tensors, whatever map_location moved them to.
    torch.set_rng_state(states["torch"].cpu())
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([state.cpu() for state in states["cuda"]])


def _as_random_state(state: Any) -> tuple[Any, ...]:
    # A round trip through torch.save may turn the inner tuple into a list.
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


def tensor_checksum(state: Any) -> str:
    """sha256 of every tensor in `state` (its key path, dtype, shape and bytes), in key order;
    the `checksum` entry itself is left out."""
    digest = hashlib.sha256()
    _hash_into(digest, "", state)
    return digest.hexdigest()


def _hash_into(digest: Any, path: str, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous()
        digest.update(f"{path}:{data.dtype}:{tuple(data.shape)}".encode())
        if data.numel():
            digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            if not (path == "" and key == _CHECKSUM_KEY):
                _hash_into(digest, f"{path}/{key}", value[key])
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _hash_into(digest, f"{path}/{i}", item)


def _verify_checksum(file: Path, state: dict[str, Any]) -> None:
    saved = state.get(_CHECKSUM_KEY)
    if saved is None:
        return  # written before checkpoints carried one
    if saved != tensor_checksum(state):
        raise CheckpointError(
            f"{file}: its tensors do not match the checksum saved with them "
            "(the file was damaged or changed after it was written)"
        )


def clean_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of writes that were killed half-way; returns them."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    stale = [*folder.glob(".*.pt.*.tmp"), *folder.glob(".*.pt.link")]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def save_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    epoch: int,
    step: int,
    loader: Any = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write everything a run needs to continue to `path`, atomically."""
    state = {
        "model": strip_prefixes(unwrap_model(model).state_dict()),
        "model_class": type(unwrap_model(model)).__name__,
        "optimizer": optimizer.state_dict(),
        "scaler": scaler.state_dict() if scaler is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "epoch": epoch,
        "step": step,
        "rng": rng_states(),
        "loader": loader.state_dict() if loader is not None else None,
        "extra": extra or {},
    }
    state[_CHECKSUM_KEY] = tensor_checksum(state)
    target = Path(path)
    atomic_torch_save(state, target)
    return target


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
    _fsync_directory(target.parent)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform lets a directory be opened.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scaler: torch.amp.GradScaler | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    loader: Any = None,
    map_location: str | torch.device = "cpu",
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Restore what `save_checkpoint` wrote; returns the whole state (epoch, step, extra).

    Raises `CheckpointError` for a file it cannot resume from (see the module doc)."""
    state = read_checkpoint(path, map_location=map_location)
    target = unwrap_model(model)
    _check_model(path, state, target)
    target.load_state_dict(strip_prefixes(state["model"]))
    try:
        if optimizer is not None:
            optimizer.load_state_dict(state["optimizer"])
        if scaler is not None and state["scaler"] is not None:
            scaler.load_state_dict(state["scaler"])
        if scheduler is not None and state["scheduler"] is not None:
            scheduler.load_state_dict(state["scheduler"])
        if loader is not None and state["loader"] is not None:
            loader.load_state_dict(state["loader"])
        if restore_rng:
            restore_rng_states(state["rng"])
    except (KeyError, ValueError, TypeError, RuntimeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CheckpointError(
            f"{path}: its training state does not fit this run ({reason})"
        ) from None
    return state


def read_checkpoint(
    path: str | os.PathLike[str],
    *,
    map_location: str | torch.device = "cpu",
    required: tuple[str, ...] = _RESUME_KEYS,
) -> dict[str, Any]:
    """The state dict of a checkpoint file, loaded with `weights_only=True`, keys and
    checksum checked."""
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such checkpoint file")
    if file.stat().st_size == 0:
        raise CheckpointError(f"{file} is empty: the run that wrote it was cut off")
    try:
        state = torch.load(file, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError:
        if not zipfile.is_zipfile(file):  # torch.save writes a zip archive; this is not one
            raise CheckpointError(
                f"{file} is not a readable checkpoint: truncated, or not written by torch.save"
            ) from None
        raise CheckpointError(
            f"{file} holds more than tensors and numbers (a pickle with code in it): "
            "refused, checkpoints load with weights_only=True"
        ) from None
    except (EOFError, RuntimeError, ValueError, OSError, IndexError, KeyError):
        raise CheckpointError(
            f"{file} is not a readable checkpoint: truncated, or not written by torch.save"
        ) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{file} is not a TensorLoom checkpoint: it holds no state dict")
    missing = [key for key in required if key not in state]
    if missing:
        listed = ", ".join(f"`{key}`" for key in missing)
        raise CheckpointError(f"{file} is not a complete TensorLoom checkpoint: {listed} missing")
    _verify_checksum(file, state)
    return state


def load_weights(
    path: str | os.PathLike[str],
    *,
    model: torch.nn.Module,
    ema: Any = None,
    map_location: str | torch.device = "cpu",
) -> dict[str, Any]:
    """Load the model's weights (and the EMA's, if both have one) from a checkpoint, nothing
    else: `--init-from` fine-tunes from them, `--evaluate` reports their metrics."""
    state = read_checkpoint(path, map_location=map_location, required=_WEIGHT_KEYS)
    target = unwrap_model(model)
    _check_model(path, state, target)
    target.load_state_dict(strip_prefixes(state["model"]))
    saved_ema = saved_ema_state(state)
    if ema is not None and saved_ema is not None:
        ema.load_state_dict(saved_ema)
    return state


def saved_ema_state(state: dict[str, Any]) -> dict[str, Any] | None:
    """The EMA weights a checkpoint holds (a run with `ema`), or None."""
    recipe = (state.get("extra") or {}).get("recipe") or {}
    return recipe.get("ema")


def _check_model(
    path: str | os.PathLike[str], state: dict[str, Any], model: torch.nn.Module
) -> None:
    """The checkpoint holds this model, with these sizes."""
    ours, saved = type(model).__name__, state.get("model_class")
    if saved is not None and saved != ours:
        raise CheckpointError(f"{path} holds a `{saved}` model; this script trains `{ours}`")
    weights = strip_prefixes(state["model"])
    own = model.state_dict()
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


def save_epoch_checkpoint(
    directory: str | os.PathLike[str], *, keep: int, epoch: int, **state: Any
) -> Path:
    """Save `epoch-NNNN.pt` and `last.pt` in `directory`, keeping the newest `keep` epoch files."""
    folder = Path(directory)
    path = save_checkpoint(folder / _EPOCH_FILE.format(epoch), epoch=epoch, **state)
    _replace_with_copy(path, folder / LAST_CHECKPOINT)
    for old in sorted(folder.glob("epoch-*.pt"))[:-keep]:
        old.unlink()
    return path


def _replace_with_copy(source: Path, target: Path) -> None:
    """Point `target` at `source`'s bytes atomically: a hard link if we can, a copy if not."""
    tmp = target.with_name(f".{target.name}.link")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
