"""The memory of a train block of `step` lines: every model, every optimizer, one batch.

    train (G, D) on data:
        step d_loss with Adam(D, lr=2e-4)
        step g_loss with Adam(G, lr=2e-4)

Each model's own budget (`memory.training_budget`) is for that model trained alone; the
block's budget is what one batch of its steps needs at once:
- weights of every model of the block, trained or frozen (fp32);
- gradients of the parameters some optimizer updates, and nothing for a frozen model;
- each step's optimizers' state over the parameters each owns (Adam 2x, Muon 1x, ...);
- the activations of the largest step: the steps run one after another within a batch,
  each freeing its graph at its backward. A step keeps each model call's activations
  (the model's `activations` term, once per call) unless the call's result is only
  detached (`detach(G(z))` frees G's graph at once) or the model is frozen (run under
  no_grad);
- the predicted peak: the larger of a step's backward start (weights, every optimizer's
  state, the gradients other steps left, this step's activations and the backward's
  largest gradient pair) and an optimizer step (weights, every gradient and state, the
  largest step's temporaries), plus cuBLAS's workspace; the CUDA context is added in
  `total`.

Steps of `from epoch A until epoch B` run in phases: the epochs where the same steps run
(`examples/distill.tl`: `teach` in epochs 1-15, `distil` from 16). Gradients, optimizer
state and activations are a phase's own steps' (a later step's state is made at its first
step, an ended step's is freed by the script's `release_ended`), and the block's peak is
its largest phase's:

    phases_of([("teach", (None, 15)), ("distil", (16, None))], epochs=40)
    # (Phase(1, 15, ("teach",)), Phase(16, None, ("distil",)))

Under `distributed = "fsdp"` (`tlc info --nproc N`) the budget is one rank's: every model
is sharded, so its weights, gradients and optimizer state are a 1/N share, and the
all-gathered weights (each model's root and the blocks it gathers, all of the block's
models at once: an upper bound) and the reduce-scatter buffers are added, as each model's
own FSDP budget counts them. Under DDP each trained model's gradient buckets are added.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from tensorloom.analysis.memory import (
    CUDA_CONTEXT_BYTES,
    FP32,
    OPTIMIZERS,
    WORKSPACE_BYTES,
    MemoryBudget,
    OptimizerModel,
    optimizer_key,
)
from tensorloom.dialects import train
from tensorloom.dialects.nml.control import ModelCallOp
from tensorloom.passes.support.loss_functions import functions_of
from tensorloom.passes.support.model_env import evaluate
from tensorloom.passes.support.objectives import StepOptimizer, step_of
from tensorloom.passes.support.param_groups import GroupProblem, ParamArg, Resolver
from tensorloom.passes.support.step_groups import model_trees


@dataclass(frozen=True, slots=True)
class StepOptimizerBudget:
    """One optimizer of one step: `step d_loss: Adam over D, 33,633 parameters`."""

    step: str
    optimizer: str  # an OPTIMIZERS key
    models: tuple[str, ...]
    params: int
    shards: int = 1  # FSDP's world size: this rank holds a 1/shards share of the state

    @property
    def held(self) -> int:
        """The bytes of this rank's share of the parameters (fp32)."""
        return math.ceil(self.params / self.shards) * FP32

    @property
    def state_bytes(self) -> int:
        return self._model().state * self.held

    @property
    def temporaries(self) -> int:
        return self._model().temporaries * self.held

    def _model(self) -> OptimizerModel:
        return OPTIMIZERS.get(self.optimizer, OPTIMIZERS["Adam"])


@dataclass(frozen=True, slots=True)
class StepActivations:
    """What one step's forward keeps for its backward."""

    step: str
    calls: tuple[str, ...]  # the model calls whose activations it keeps, one per call
    activations: int
    backward_working: int  # the largest gradient pair of the models it runs, or the loss's
    scratch: int  # cuDNN's LSTM/GRU scratch of the models it runs
    gradients: int  # the bytes of the gradients its optimizers update


@dataclass(frozen=True, slots=True)
class Phase:
    """Epochs in which the same steps run: epochs 16 onwards, `distil` (from 1; `last` None:
    to the end)."""

    first: int
    last: int | None
    steps: tuple[str, ...]  # the objectives of its steps, in the block's order
    gradients: int = 0  # the bytes of the gradients its steps leave

    @property
    def epochs(self) -> str:
        """`1-15`, `16-`, `3`."""
        if self.last == self.first:
            return str(self.first)
        return f"{self.first}-{self.last if self.last is not None else ''}"


Window = tuple[int | None, int | None]


def phases_of(windows: Sequence[tuple[str, Window]], epochs: int | None) -> tuple[Phase, ...]:
    """The block's phases, in order: where a step starts or ends, the set of running steps
    changes; epochs where no step runs, and those after the block's `epochs`, are none."""
    bounds = {1} | {first for _, (first, _) in windows if first is not None}
    bounds |= {last + 1 for _, (_, last) in windows if last is not None}
    starts = sorted(b for b in bounds if epochs is None or b <= epochs)
    phases = []
    for i, first in enumerate(starts):
        last = starts[i + 1] - 1 if i + 1 < len(starts) else epochs
        running = tuple(name for name, (a, b) in windows
                        if (a is None or a <= first) and (b is None or first <= b))  # fmt: skip
        if running:
            phases.append(Phase(first, last, running))
    return _merged(phases)


def _merged(phases: list[Phase]) -> tuple[Phase, ...]:
    """Neighbouring phases of the same steps as one."""
    merged: list[Phase] = []
    for phase in phases:
        if merged and merged[-1].steps == phase.steps and merged[-1].last == phase.first - 1:
            merged[-1] = Phase(merged[-1].first, phase.last, phase.steps)
        else:
            merged.append(phase)
    return tuple(merged)


@dataclass(frozen=True, slots=True)
class ProgramBudget:
    """The budget of one batch of a block of `step` lines, in bytes: every figure but the
    weights is its largest phase's (`phases`; one phase where every step runs throughout)."""

    models: tuple[str, ...]
    frozen: tuple[str, ...]
    weights: dict[str, int]  # by model
    optimizers: tuple[StepOptimizerBudget, ...]
    steps: tuple[StepActivations, ...]
    phases: tuple[Phase, ...]
    workspace: int = WORKSPACE_BYTES
    cuda_context: int = CUDA_CONTEXT_BYTES
    strategy: str = "none"  # "ddp", "fsdp": the budget is one rank's
    world_size: int = 1
    gathered: int = 0  # FSDP: the all-gathered weights of every model
    comm_buffers: int = 0  # FSDP's reduce-scatter buffers, DDP's gradient buckets

    @property
    def peak_phase(self) -> Phase:
        return max(self.phases, key=self._phase_peak)

    @property
    def gradients(self) -> int:
        return self.peak_phase.gradients

    @property
    def optimizer_state(self) -> int:
        return self.phase_state(self.peak_phase)

    def phase_state(self, phase: Phase) -> int:
        return sum(o.state_bytes for o in self.optimizers if o.step in phase.steps)

    def phase_steps(self, phase: Phase) -> list[StepActivations]:
        return [s for s in self.steps if s.step in phase.steps]

    @property
    def largest(self) -> StepActivations:
        return max(self.phase_steps(self.peak_phase), key=lambda s: s.activations)

    @property
    def activations(self) -> int:
        return self.largest.activations if self.steps else 0

    def terms(self) -> dict[str, int]:
        scratch = max((s.scratch for s in self.phase_steps(self.peak_phase)), default=0)
        terms = {
            "weights": sum(self.weights.values()),
            "gradients": self.gradients,
            "optimizer state": self.optimizer_state,
            "activations": self.activations,
            "workspace": self.workspace + scratch,
            "cuda context": self.cuda_context,
        }
        if self.strategy == "fsdp":
            terms["gathered weights"] = self.gathered
        if self.strategy != "none":
            terms["comm buffers"] = self.comm_buffers
        return terms

    def phase_backward_peak(self, phase: Phase) -> int:
        """The largest of the phase's steps' backward starts."""
        held = sum(self.weights.values()) + self.phase_state(phase) + self.gathered
        held += self.comm_buffers
        return max(
            (held + phase.gradients - s.gradients + s.activations + s.backward_working + s.scratch
             for s in self.phase_steps(phase)),
            default=held,
        )  # fmt: skip

    def phase_step_peak(self, phase: Phase) -> int:
        mine = [o for o in self.optimizers if o.step in phase.steps]
        temporaries = max((o.temporaries for o in mine), default=0)
        held = sum(self.weights.values()) + phase.gradients + self.phase_state(phase)
        return held + temporaries + self.comm_buffers

    def _phase_peak(self, phase: Phase) -> int:
        return max(self.phase_backward_peak(phase), self.phase_step_peak(phase))

    def phase_peak(self, phase: Phase) -> int:
        return self._phase_peak(phase) + self.workspace

    @property
    def backward_peak(self) -> int:
        return self.phase_backward_peak(self.peak_phase)

    @property
    def step_peak(self) -> int:
        return self.phase_step_peak(self.peak_phase)

    @property
    def peak(self) -> int:
        return self.phase_peak(self.peak_phase)

    @property
    def total(self) -> int:
        return self.peak + self.cuda_context


def program_budgets(
    module: ModuleOp, budgets: Mapping[str, MemoryBudget | None], params: Mapping[str, int]
) -> list[ProgramBudget]:
    """A budget for each block of `step` lines whose models all have one (`budgets`: each
    instance's own, by name; `params`: each instance's parameters)."""
    found = []
    for loop in (op for op in module.walk() if isinstance(op, train.LoopOp)):
        budget = program_budget(module, loop, budgets, params) if loop.steps() else None
        if budget is not None:
            found.append(budget)
    return found


def program_budget(
    module: ModuleOp,
    loop: train.LoopOp,
    budgets: Mapping[str, MemoryBudget | None],
    params: Mapping[str, int],
) -> ProgramBudget | None:
    models = tuple(loop.model_names())
    own = {name: budgets.get(name) for name in models}
    groups = {name: op.value for name, op in loop.groups().items()}
    steps = [step_of(op, groups) for op in loop.steps()]
    trees = model_trees(module, list(models))
    if any(own[m] is None or m not in params for m in models) or None in steps:
        return None
    if any(trees.get(m) is None for m in models):
        return None
    resolver = Resolver(list(models), trees, groups)
    first = own[models[0]]
    assert first is not None
    strategy, ranks = first.strategy, first.world_size
    shards = ranks if strategy == "fsdp" else 1
    shares: list[StepOptimizerBudget] = []
    for step in steps:
        assert step is not None
        for optimizer in step.optimizers:
            share = _share(resolver, optimizer, step.objective, shards)
            if share is None:
                return None
            shares.append(share)
    trained = {m for o in shares for m in o.models}
    frozen = tuple(m for m in models if m not in trained)
    functions = functions_of(module)
    activations = []
    for step in steps:
        assert step is not None
        func = functions.get(step.objective)
        calls = _kept_calls(func, models, frozen) if func is not None else []
        mine = [o for o in shares if o.step == step.objective]
        activations.append(_step_activations(step.objective, calls, own, mine))  # type: ignore[arg-type]
    weights = {m: math.ceil(params[m] / shards) * FP32 for m in models}
    windows = [(s.objective, s.op.epochs()) for s in steps if s is not None]
    setting = loop.setting("epochs")
    epochs = evaluate(setting, {}) if setting is not None else 10  # train_keys.py's default
    phases = phases_of(windows, epochs if isinstance(epochs, int) else None) or (
        Phase(1, None, ()),
    )
    phases = tuple(replace(p, gradients=_gradients(p, shares, activations)) for p in phases)
    budget = ProgramBudget(models, frozen, weights, tuple(shares), tuple(activations), phases)
    if strategy == "none":
        return budget
    kept = [b for b in own.values() if b is not None]
    gathered = sum(b.gathered for b in kept)
    buffers = [own[m].comm_buffers for m in trained]  # type: ignore[union-attr]
    comm = max(buffers, default=0) if strategy == "fsdp" else sum(buffers)
    return replace(budget, strategy=strategy, world_size=ranks, gathered=gathered,
                   comm_buffers=comm)  # fmt: skip


def _gradients(
    phase: Phase, shares: Sequence[StepOptimizerBudget], steps: Sequence[StepActivations]
) -> int:
    """The gradients a batch of the phase leaves: those its steps' optimizers update, and
    those of a model another step trains that its steps call (the backward reaches it)."""
    mine = [o for o in shares if o.step in phase.steps]
    covered = {m for o in mine for m in o.models}
    reached = {m for s in steps if s.step in phase.steps for m in s.calls} - covered
    others = {id(o): o for o in shares if o not in mine and set(o.models) & reached}
    return sum(o.held for o in [*mine, *others.values()])


def _share(
    resolver: Resolver, optimizer: StepOptimizer, step: str, shards: int = 1
) -> StepOptimizerBudget | None:
    """The optimizer's parameters, over every model it selects from (None: unresolved)."""
    total, models = 0, []
    for model in optimizer.models:
        params = share_of(resolver, optimizer.args, model)
        if params is None:
            return None
        total += params
        models.append(model)
    momentum = dict(optimizer.kwargs).get("momentum")
    name = optimizer_key(optimizer.name, momentum if isinstance(momentum, int | float) else None)
    return StepOptimizerBudget(step, name, tuple(models), total, shards)


def share_of(resolver: Resolver, args: tuple[ParamArg, ...], instance: str) -> int | None:
    """The parameters of `instance` the arguments select (None: unresolved)."""
    shapes = resolver.trees[instance].parameters()
    total = 0
    for arg in args:
        try:
            selected = resolver.select(arg.selection)
        except GroupProblem:
            return None
        if selected is None:
            return None
        total += sum(math.prod(shapes[name]) for model, name in selected if model == instance)
    return total


def _kept_calls(func: Operation, models: Sequence[str], frozen: Sequence[str]) -> list[str]:
    """The models whose call in the objective keeps its graph for the step's backward: not a
    frozen model (no_grad), nor a call whose every use is `detach`."""
    args: list[SSAValue] = list(func.regions[0].block.args)
    kept = []
    for op in func.walk():
        if not isinstance(op, ModelCallOp) or op.model not in args:
            continue
        index = args.index(op.model)
        name = models[index] if index < len(models) else None
        if name is None or name in frozen:
            continue
        uses = [use.operation for result in op.results for use in result.uses]
        if uses and all(use.name == "nml.detach" for use in uses):
            continue
        kept.append(name)
    return kept


def _step_activations(
    step: str,
    calls: list[str],
    budgets: Mapping[str, MemoryBudget],
    optimizers: list[StepOptimizerBudget],
) -> StepActivations:
    activations = sum(budgets[m].terms()["activations"] for m in calls)
    working = max((budgets[m].backward_working for m in calls), default=0)
    scratch = max((budgets[m].scratch for m in calls), default=0)
    gradients = sum(o.held for o in optimizers)
    return StepActivations(step, tuple(calls), activations, working, scratch, gradients)
