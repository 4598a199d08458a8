"""Whole-step CUDA graphs for TensorLoom scripts: forward, backward and step in one replay.

    step = training_step(BatchLoss(model), optimizer, partial(autocast, plan, device, cache=False))
    graphed = GraphedStep(step, x, y, batch_size=128, model=model, optimizer=optimizer)
    for idx in loader.batch_indices():
        graphed.replay(idx)                 # one copy of the indices, one graph launch

A small model's step is a few hundred tiny kernels; launching them one by one
costs more than running them. When the dataset lives on the device and every
batch has the same shape, the whole step (gather the batch, forward, loss,
backward, optimizer step, add the loss to a running sum) is captured once in a
CUDA graph, as in PyTorch's "whole network capture" recipe, and replayed per
batch. The optimizer must be capture-safe (`capturable=True` for Adam/AdamW).
The compiler emits the capture only for one-process blocks without gradient
accumulation, clipping or an lr schedule; the script captures on CUDA when the data
is resident, no GradScaler steps (fp16's skips steps on the host) and the model has
at most `SMALL_MODEL_PARAMS` parameters.

Capture runs a few real warm-up steps on a side stream; the model's and the
optimizer's tensors are snapshotted before and copied back (in place: the graph
holds their addresses) after, so training continues exactly from where it stood.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

# Models up to this many parameters take the whole-step graph instead of torch.compile:
# a rule of thumb (compile's fusion pays off on larger models, its start-up on none).
SMALL_MODEL_PARAMS = 5_000_000
WARMUP_STEPS = 3


StepFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class GraphedStep:
    """One training step over `x[idx], y[idx]`, captured once and replayed per batch."""

    def __init__(
        self,
        step: StepFn,
        x: torch.Tensor,
        y: torch.Tensor,
        *,
        batch_size: int,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
    ) -> None:
        self.step, self.x, self.y = step, x, y
        self.idx = torch.zeros(batch_size, dtype=torch.long, device=x.device)
        self.loss_sum = torch.zeros((), device=x.device)
        saved = _snapshot(model, optimizer)
        self._warm_up(optimizer)
        self.graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)  # backward allocates grads from the graph's pool
        with torch.cuda.graph(self.graph):
            self._body()
        _restore(saved, model, optimizer)
        self.loss_sum.zero_()

    def _body(self) -> None:
        loss = self.step(self.x[self.idx], self.y[self.idx])
        self.loss_sum += loss.detach()

    def _warm_up(self, optimizer: torch.optim.Optimizer) -> None:
        """Real steps on a side stream, so lazily made state (Adam's moments) exists."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                optimizer.zero_grad(set_to_none=True)
                self._body()
        torch.cuda.current_stream().wait_stream(side)

    def replay(self, idx: torch.Tensor) -> None:
        """One step on the samples `idx` (a batch_size long tensor on the device)."""
        self.idx.copy_(idx)
        self.graph.replay()

    def take_loss_sum(self) -> torch.Tensor:
        """The losses summed since the last call (a new tensor, on the device), and reset."""
        total = self.loss_sum.clone()
        self.loss_sum.zero_()
        return total


def training_step(
    batch_loss: torch.nn.Module, optimizer: torch.optim.Optimizer,
    region: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
) -> StepFn:  # fmt: skip
    """The step a `GraphedStep` captures: forward and loss (`batch_loss(xb, yb)`, in
    `region()`: the precision plan's autocast, without its cache), backward, `optimizer.step()`."""

    def step(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        with region():
            loss = batch_loss(xb, yb)
        loss.backward()
        optimizer.step()
        return loss

    return step


Snapshot = tuple[list[torch.Tensor], dict[int, dict[str, torch.Tensor]]]


def _snapshot(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Snapshot:
    weights = [t.detach().clone() for t in _model_tensors(model)]
    state = {
        id(p): {k: v.clone() for k, v in s.items() if isinstance(v, torch.Tensor)}
        for p, s in optimizer.state.items()
    }
    return weights, state


def _restore(saved: Snapshot, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Undo the warm-up in place; state the warm-up created goes back to zeros, its start."""
    weights, state = saved
    with torch.no_grad():
        for tensor, value in zip(_model_tensors(model), weights, strict=True):
            tensor.copy_(value)
        for p, s in optimizer.state.items():
            before = state.get(id(p), {})
            for key, value in s.items():
                if isinstance(value, torch.Tensor):
                    value.copy_(before[key]) if key in before else value.zero_()


def _model_tensors(model: torch.nn.Module) -> list[torch.Tensor]:
    return [*model.parameters(), *model.buffers()]


OptimizerModes = list[dict[str, object]]
_MODE_KEYS = ("fused", "foreach", "capturable")


def optimizer_modes(optimizer: torch.optim.Optimizer) -> OptimizerModes:
    """The implementation flags this run built its optimizer with."""
    return [{k: g[k] for k in _MODE_KEYS if k in g} for g in optimizer.param_groups]


def restore_optimizer_modes(optimizer: torch.optim.Optimizer, modes: OptimizerModes) -> None:
    """After loading a checkpoint: this run's flags, not the saving run's, and steps to match.

    A capturable or fused Adam keeps its step counts on the parameters' device, others
    on the CPU; a checkpoint from a run that captured (or did not) may hold either.
    """
    for group, mode in zip(optimizer.param_groups, modes, strict=True):
        group.update(mode)
        on_device = bool(group.get("capturable")) or bool(group.get("fused"))
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            step = state.get("step")
            if isinstance(step, torch.Tensor):
                state["step"] = step.to(p.device if on_device else "cpu", torch.float32)
