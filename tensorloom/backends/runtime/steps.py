"""Several models and optimizers in one loop, for train blocks of `step` lines.

    train (G, D) on data:
        step d_loss with Adam(D, lr=2e-4)
        step g_loss with Adam(G, lr=2e-4)

The script's `train_step` runs the steps of each batch in order, each through
`step_optimizer` (backward, through the step's own GradScaler, then each of its
optimizers' step, each clipped apart); `run_epoch` feeds it the batches and sums each
objective; `mean_objectives` validates; `save_models_checkpoint` and
`load_models_checkpoint` keep every model, optimizer, scaler and lr scheduler, the RNG
and the loader's place for an exact resume. A model no step updates is wrapped in
`Frozen`: no gradients, eval mode. `parameter_group` selects a `group` line's parameters
(`ParamGroup`: `a + b`, `a - b`); `OptimizerSet` is a one-model loop's several optimizers
stepped as one (`optimizer = (Muon(hidden), AdamW(rest))`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from tensorloom.backends.runtime.pretrained import Rules, export_state, merged_state_dict

StepBatch = tuple[torch.Tensor, ...]  # (x, y), or the named fields a loader yields
Losses = dict[str, torch.Tensor]


class StepsCheckpointError(Exception):
    """A checkpoint this run cannot resume from; the message says why."""


class Frozen(nn.Module):
    """A model no optimizer updates (a teacher): called under `torch.no_grad()`, in eval mode,
    its parameters with `requires_grad` off."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model.requires_grad_(False).eval()

    def train(self, mode: bool = True) -> Frozen:
        return self  # stays in eval mode: dropout off, norm statistics fixed

    def forward(self, *inputs: torch.Tensor) -> Any:
        with torch.no_grad():
            return self.model(*inputs)


class ParamGroup(list[nn.Parameter]):
    """Parameters a `group` line selects, in the model's order; `a + b` is their union and
    `a - b` what `a` has that `b` has not (by identity, as tlc check resolved them by name)."""

    def __add__(self, other: Iterable[nn.Parameter]) -> ParamGroup:  # type: ignore[override]
        seen = {id(p) for p in self}
        return ParamGroup([*self, *(p for p in other if id(p) not in seen)])

    def __sub__(self, other: Iterable[nn.Parameter]) -> ParamGroup:
        dropped = {id(p) for p in other}
        return ParamGroup(p for p in self if id(p) not in dropped)


class OptimizerSet(torch.optim.Optimizer):
    """Several optimizers a one-model loop steps as one (`optimizer = (Muon(hidden),
    AdamW(rest))`): `param_groups` are theirs (so an lr scheduler and a GradScaler reach
    every group), `step` and `zero_grad` go to each, and the state dict holds each one's."""

    def __init__(self, optimizers: dict[str, torch.optim.Optimizer]) -> None:
        params = [p for o in optimizers.values() for g in o.param_groups for p in g["params"]]
        super().__init__(params, {})
        self.optimizers = optimizers
        self.param_groups = [g for o in optimizers.values() for g in o.param_groups]

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> None:  # type: ignore[override]
        for optimizer in self.optimizers.values():
            optimizer.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers.values():
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:  # type: ignore[override]
        return {name: o.state_dict() for name, o in self.optimizers.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:  # type: ignore[override]
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state_dict[name])


def parameter_group(
    model: nn.Module, path: str = "", *, match: str | list[str] | tuple[str, ...] | None = None,
    ndim: int | None = None,
) -> ParamGroup:  # fmt: skip
    """`params(net.blocks, match="*.weight", ndim=2)`: the parameters under the layer path
    (`blocks`, `blocks[0:2]`, `head.weight`; all of them for ""), whose name in the model
    matches a glob of `match` and that have `ndim` dimensions."""
    globs = [match] if isinstance(match, str) else list(match or ())
    sliced = re.fullmatch(r"(.+)\[(\d*):(\d*)\]", path)
    if sliced is None:
        prefixes = [path] if path else []
    else:
        count = len(model.get_submodule(sliced.group(1)))  # type: ignore[arg-type]
        low, high = int(sliced.group(2) or 0), int(sliced.group(3) or count)
        prefixes = [f"{sliced.group(1)}.{i}" for i in range(count)[low:high]]
    selected = ParamGroup()
    for name, param in _plain(model).named_parameters():
        if prefixes and not any(name == p or name.startswith(p + ".") for p in prefixes):
            continue
        if globs and not any(fnmatch.fnmatchcase(name, g) for g in globs):
            continue
        if ndim is None or param.ndim == ndim:
            selected.append(param)
    return selected


def step_optimizer(
    loss: torch.Tensor, optimizer: torch.optim.Optimizer | list[torch.optim.Optimizer],
    scaler: torch.amp.GradScaler | None, clip: float | list[float | None] | None = None,
) -> None:  # fmt: skip
    """`loss.backward()` then each optimizer's `step()` (a step of several optimizers, as
    Muon beside AdamW, has one backward), through `scaler` (fp16) when there is one. One
    scaler per step: its inf checks cover the step's optimizers, updated once after them,
    as torch's AMP recipe for several optimizers does. `clip` bounds the gradient norm of
    each optimizer's parameters (one bound each, None for none), unscaled first."""
    optimizers = [optimizer] if isinstance(optimizer, torch.optim.Optimizer) else optimizer
    clips = list(clip) if isinstance(clip, (list, tuple)) else [clip] * len(optimizers)
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
    for each, bound in zip(optimizers, clips, strict=True):
        if bound is not None:
            if scaler is not None:
                scaler.unscale_(each)
            params = [p for group in each.param_groups for p in group["params"]]
            torch.nn.utils.clip_grad_norm_(params, bound)
        if scaler is None:
            each.step()
        else:
            scaler.step(each)
    if scaler is not None:
        scaler.update()


Window = tuple[int | None, int | None]


def runs_in(epoch: int, window: Window) -> bool:
    """Whether a step of `from epoch A until epoch B` (from 1, both ends in; None where
    unbounded) runs in `epoch`, counted from 0 as the loop counts it."""
    first, last = window
    number = epoch + 1
    return (first is None or number >= first) and (last is None or number <= last)


def steps_in(windows: dict[str, Window], epoch: int) -> list[str]:
    """The objectives whose steps run in `epoch` (from 0), in the block's order."""
    return [name for name, window in windows.items() if runs_in(epoch, window)]


def release_ended(
    optimizers: dict[str, torch.optim.Optimizer | list[torch.optim.Optimizer]],
    windows: dict[str, Window], epoch: int,
) -> None:  # fmt: skip
    """Free the gradients and optimizer state of each step whose last epoch (`until epoch B`)
    is before `epoch` (from 0): it never runs again, so the epochs after it do not hold them
    (the teacher's Adam moments once distillation starts). Its checkpointed state is empty
    from then on, in a resumed run as in one that was not cut."""
    for name, (_, last) in windows.items():
        if last is None or epoch + 1 <= last:
            continue
        held = optimizers[name]
        for optimizer in [held] if isinstance(held, torch.optim.Optimizer) else held:
            optimizer.zero_grad(set_to_none=True)
            optimizer.state.clear()


def run_epoch(
    step: Callable[..., Losses], batches: Iterable[StepBatch], *,
    sums: Losses, done: int, total: int, stop: Callable[[], bool],
) -> tuple[Losses, int]:  # fmt: skip
    """Run `step` on each batch after the first `done` (trained before a resume), until
    `total` batches or `stop()`; each objective's sum and the batches trained."""
    skip = done
    for batch in batches:
        if skip:
            skip -= 1
            continue
        if done == total or stop():
            break
        losses = step(*batch)
        for key, value in losses.items():
            sums[key] = sums[key] + value
        done += 1
    return sums, done


@torch.no_grad()
def mean_objectives(
    losses: Callable[..., Losses], batches: Iterable[StepBatch]
) -> dict[str, float]:
    """Each objective's mean over the samples of `batches` (a batch weighs its size)."""
    sums: dict[str, torch.Tensor] = {}
    count = 0
    for batch in batches:
        size = len(batch[0])
        for key, value in losses(*batch).items():
            zero = torch.zeros((), device=value.device)
            sums[key] = sums.get(key, zero) + value.float() * size
        count += size
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        # each rank validated its shard: the sums and the count over all of them
        for total in sums.values():
            torch.distributed.all_reduce(total)
        counted = torch.tensor(float(count), device=next(iter(sums.values())).device if sums
                               else "cpu")  # fmt: skip
        torch.distributed.all_reduce(counted)
        count = int(counted.item())
    return {key: float(total) / max(count, 1) for key, total in sums.items()}


def format_steps_summary(record: dict[str, Any], *, epochs: int) -> str:
    """`epoch  3/25  d_loss 1.2034  g_loss 0.8123  val_d_loss ...  9,120 samples/s  1.20s`:
    each objective's training mean, then its validation mean."""
    width = len(str(epochs))
    parts = [f"epoch {record['epoch']:>{width}}/{epochs}"]
    skipped = ("epoch", "samples_per_s", "time", "steps", "partial")
    for key, value in record.items():
        if key not in skipped and isinstance(value, float):
            parts.append(f"{key} {value:.4f}")
    parts.append(f"{record['samples_per_s']:,.0f} samples/s")
    parts.append(f"{record['time']:.2f}s")
    return "  ".join(parts)


def save_models_checkpoint(
    path: str | os.PathLike[str], *, models: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    scalers: dict[str, torch.amp.GradScaler | None], epoch: int, step: int, loader: Any = None,
    extra: dict[str, Any] | None = None, schedulers: dict[str, Any] | None = None,
    rng_by_rank: list[dict[str, Any]] | None = None,
) -> Path:  # fmt: skip
    """Every model, optimizer, scaler and lr scheduler by name, the RNG states and the
    loader's place, written atomically to `path`. `rng_by_rank`, under DDP: every rank's
    RNG states (`gather_rng_states`), each rank drawing its own noise."""
    rng = _rng_state()
    state = {
        "models": {name: _plain(m).state_dict() for name, m in models.items()},
        "optimizers": {name: o.state_dict() for name, o in optimizers.items()},
        "scalers": {name: s.state_dict() for name, s in scalers.items() if s is not None},
        "schedulers": {name: s.state_dict() for name, s in (schedulers or {}).items()},
        "epoch": epoch, "step": step, "rng": rng,
        "loader": loader.state_dict() if loader is not None else None, "extra": extra or {},
        "rng_by_rank": rng_by_rank,
    }  # fmt: skip
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_models_checkpoint(
    path: str | os.PathLike[str], *, models: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer] | None = None,
    scalers: dict[str, torch.amp.GradScaler | None] | None = None, loader: Any = None,
    map_location: str | torch.device = "cpu", schedulers: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Restore what `save_models_checkpoint` wrote (only the weights without `optimizers`);
    returns the whole state (epoch, step, extra)."""
    file = Path(path)
    if not file.is_file():
        raise StepsCheckpointError(f"{file}: no such checkpoint file")
    try:
        state = torch.load(file, map_location=map_location, weights_only=True)
        for name, model in models.items():
            _plain(model).load_state_dict(state["models"][name])
        if optimizers is None:
            return state
        for name, optimizer in optimizers.items():
            optimizer.load_state_dict(state["optimizers"][name])
        for name, scaler in (scalers or {}).items():
            if scaler is not None and name in state["scalers"]:
                scaler.load_state_dict(state["scalers"][name])
        for name, scheduler in (schedulers or {}).items():
            scheduler.load_state_dict(state["schedulers"][name])
        if loader is not None and state["loader"] is not None:
            loader.load_state_dict(state["loader"])
        _restore_rng(own_rng_state(state.get("rng_by_rank"), state["rng"]))
    except (KeyError, RuntimeError, ValueError, EOFError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise StepsCheckpointError(f"{file} does not fit these models ({reason})") from None
    return state


def _plain(model: nn.Module) -> nn.Module:
    """The model a `Frozen` or `torch.compile` wrapper holds."""
    inner = getattr(model, "_orig_mod", model)
    return inner.model if isinstance(inner, Frozen) else inner


def export_trained(
    folder: str | os.PathLike[str], models: dict[str, nn.Module], *,
    rules: dict[str, Rules] | None = None, sources: dict[str, str] | None = None,
) -> list[Path] | None:  # fmt: skip
    """--export-weights DIR: each trained model (by name; a frozen teacher is not given) as
    `DIR/NAME/model.safetensors`, in its published weights' names and format where a
    `weights NAME from ...` block gave it some (`rules`, `sources`: `export_state`), else
    in its own state dict's names. Every rank calls it (a sharded model's shards are
    gathered); rank 0 writes and gets the folders, the others None."""
    from safetensors.torch import save_file

    main = _rank_and_size()[0] == 0
    written: list[Path] = []
    for name, model in models.items():
        if not (main or _sharded(model)):
            continue
        state = _whole_state(model)
        if not main:
            continue
        out = Path(folder) / name
        if name in (rules or {}):
            written.append(export_state(state, out, (rules or {})[name], (sources or {}).get(name)))
            continue
        out.mkdir(parents=True, exist_ok=True)
        tensors = {key: value.detach().cpu().contiguous().clone() for key, value in state.items()}
        save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
        written.append(out)
    return written if main else None


def _sharded(model: nn.Module) -> bool:
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in _plain(model).parameters())


def _whole_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's whole (merged) state dict: under FSDP gathered onto rank 0 (a collective;
    the other ranks get an empty one)."""
    if not _sharded(model):
        return merged_state_dict(_plain(model))
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(_plain(model), options=options)


def sync_buffers(*models: nn.Module, emas: dict[str, Any] | None = None) -> None:
    """Every rank takes rank 0's buffers (BatchNorm's running statistics) of `models` and
    of each `ema` average (a collective: every rank calls it; nothing in one process).
    Each rank updates them from its own batches and its own noise, so before validating
    and saving the ranks agree on rank 0's, which the checkpoint keeps."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    averages = [average.module for average in (emas or {}).values()]
    for model in [*models, *averages]:
        for buffer in _plain(model).buffers():
            torch.distributed.broadcast(buffer, src=0)


def _rng_state() -> dict[str, Any]:
    rng: dict[str, Any] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    return rng


def _rank_and_size() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def gather_rng_states() -> list[dict[str, Any]] | None:
    """Under DDP every rank's RNG states, in rank order, for rank 0 to save: each rank
    draws its own noise (seeded `seed + rank`), so each resumes its own (a collective:
    every rank calls it). None in one process."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return None
    ranks: list[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(ranks, _rng_state())
    return ranks


def own_rng_state(ranks: list[Any] | None, saved: Any) -> Any:
    """This rank's RNG states in a save: its own when the save holds every rank's at this
    world size; else the one `saved` (rank 0's), which a rank after the first, on another
    world size, leaves for a stream of its own (`reseed`: `_restore_rng` does that)."""
    rank, size = _rank_and_size()
    if ranks and len(ranks) == size:
        return ranks[rank]
    return saved if rank == 0 else {**saved, "reseed": rank}


def _restore_rng(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["cpu"].cpu())
    if "cuda" in states and torch.cuda.is_available():
        with contextlib.suppress(RuntimeError):  # another number of GPUs
            torch.cuda.set_rng_state_all([s.cpu() for s in states["cuda"]])
    if "reseed" in states:  # resumed on another world size: rank 0's stream, then its own
        torch.manual_seed(int(torch.randint(0, 2**62, ())) + states["reseed"])


def _moved(value: Any, device: torch.device) -> Any:
    """A carried value (a tensor, a tuple of them, or none) on `device`."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple | list):
        return type(value)(_moved(v, device) for v in value)
    return value


def gather_carried(carried: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Under DDP each rank carries its own values (`carry`), the state of its own streams:
    every rank's, in rank order, for rank 0 to save (a collective: every rank calls it);
    None in one process."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return None
    ranks: list[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(ranks, carried)
    return ranks


def own_carried(
    extra: dict[str, Any], rank: int, world_size: int, *, mid_epoch: bool,
    device: torch.device | None = None,
) -> dict[str, Any]:  # fmt: skip
    """This rank's carried values in a checkpoint's `extra` (moved to `device`, given one:
    a sharded save's train state loads on the CPU). A run cut mid-epoch continues each
    rank's streams, so it resumes on as many ranks; a whole epoch's on any number (the next
    epoch starts the values over)."""
    ranks = extra.get("carried_by_rank") or [extra.get("carried") or {}]
    if len(ranks) == world_size:
        own = ranks[rank]
        return own if device is None else {k: _moved(v, device) for k, v in own.items()}
    if mid_epoch:
        raise StepsCheckpointError(
            f"the checkpoint was cut in the middle of an epoch at world size {len(ranks)}, "
            f"each rank carrying the state of its own streams; resume it at world size "
            f"{len(ranks)}, not {world_size}"
        )
    return {}
