"""`tlc info FILE`: each model's profile and training-memory budget, as a table or JSON.

    $ tlc info train_lm.tl --batch-size 32 --precision bf16 --gpu-memory 24GB
    $ tlc info block.nml -D B=8 -D T=512 --json

Settings come from the command line, else from the train block that trains
the instance (`batch_size`, `precision`, `optimizer`, `loss`), else the
defaults (fp32, Adam, no loss, the batch left symbolic). `--nproc N
--distributed ddp|fsdp` gives the budget of one rank of N (the strategy defaults
to the train block's `distributed`, else DDP), at the per-rank batch.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute

from tensorloom.analysis.memory import (
    OPTIMIZERS,
    MemoryBudget,
    OptimizerShare,
    Parallelism,
    Training,
    optimizer_key,
    training_budget,
)
from tensorloom.analysis.profile import (
    LayerProfile,
    ModelProfile,
    ProfileOptions,
    compile_for_info,
    info_instantiations,
    profile_instantiation,
)
from tensorloom.analysis.program import ProgramBudget, program_budgets, share_of
from tensorloom.analysis.trace import StepBudget
from tensorloom.catalogue.losses import TRAIN_LOSSES
from tensorloom.catalogue.shapes import Shape, concrete, format_shape
from tensorloom.diagnostics import render_json, render_text
from tensorloom.diagnostics.ir import reporting
from tensorloom.dialects import train
from tensorloom.passes.shape_inference import Instantiation
from tensorloom.passes.support.model_env import (
    CallValue,
    evaluate,
    layer_count,
    layer_params,
    layers_of,
    models_of,
)
from tensorloom.passes.support.objectives import (
    StepOptimizer,
    optimizer_of,
    optimizer_set,
    step_of,
)
from tensorloom.passes.support.param_groups import Resolver
from tensorloom.passes.support.state_dict import UnknownState, model_tree
from tensorloom.passes.support.step_groups import model_trees
from tensorloom.pipeline import Compilation


@dataclass(frozen=True, slots=True)
class InfoRequest:
    """What the command line asked for; None means "from the train block, else default"."""

    batch_size: int | None = None
    precision: str | None = None
    optimizer: str | None = None
    bindings: Mapping[str, int] = field(default_factory=dict[str, int])
    gpu_memory: int | None = None
    checkpointing: bool = False
    nproc: int | None = None  # the budget is one rank's of `nproc`
    distributed: str | None = None  # "ddp", "fsdp"; None: the train block's


@dataclass(slots=True)
class ModelInfo:
    profile: ModelProfile
    training: Training
    batch_size: int | None
    budget: MemoryBudget | None


# --- settings ---------------------------------------------------------------------------------


def train_settings(module: ModuleOp, instance: str) -> dict[str, Any]:
    """The train block's `batch_size`, `precision`, `optimizer` and `loss` for an instance."""
    loop = _loop_of(module, instance)
    if loop is None:
        return {}
    return {key: evaluate(s.value, {}) for key, s in loop.settings().items()}


def _loop_of(module: ModuleOp, instance: str) -> train.LoopOp | None:
    """The train block that trains `instance`: `train net on ...` or `train (G, D) on ...`."""
    loops = [op for op in module.walk() if isinstance(op, train.LoopOp)]
    return next((op for op in loops if instance in op.model_names()), None)


def step_optimizers(module: ModuleOp, instance: str) -> tuple[OptimizerShare, ...] | None:
    """A block of `step` lines, or of `optimizer = (Muon(hidden), AdamW(rest))`: each
    optimizer that updates `instance` and how many of its parameters (groups resolved as
    check-train resolves them); () for a frozen model; None for a block of one optimizer
    over the model, or groups that do not resolve."""
    loop = _loop_of(module, instance)
    if loop is None:
        return None
    groups = {name: op.value for name, op in loop.groups().items()}
    optimizers = _optimizers_of(loop, groups)
    trees = model_trees(module, loop.model_names())
    if optimizers is None or trees.get(instance) is None:
        return None
    resolver = Resolver(loop.model_names(), trees, groups)
    shares: list[OptimizerShare] = []
    for optimizer in optimizers:
        params = share_of(resolver, optimizer.args, instance)
        if params is None:
            return None
        if params:
            call = CallValue(optimizer.name, (), optimizer.kwargs)  # type: ignore[arg-type]
            shares.append(OptimizerShare(_optimizer(call) or optimizer.name, params))
    return tuple(shares)


def _optimizers_of(loop: train.LoopOp, groups: dict[str, Attribute]) -> list[StepOptimizer] | None:
    """Every optimizer of the block's `step` lines, or of its `optimizer = (A(...), B(...))`."""
    if loop.steps():
        steps = [step_of(op, groups) for op in loop.steps()]
        return [o for step in steps if step is not None for o in step.optimizers]
    setting = loop.settings().get("optimizer")
    calls = optimizer_set(setting.value) if setting is not None else None
    if calls is None:
        return None
    found = [optimizer_of(call, None, groups) for call in calls]
    return [o for o in found if o is not None]


def _optimizer(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if not isinstance(value, CallValue):
        return None
    momentum = dict(value.kwargs).get("momentum")
    return optimizer_key(value.name, momentum if isinstance(momentum, int | float) else None)


def _name(value: object) -> str | None:
    return value.name if isinstance(value, CallValue) else value if isinstance(value, str) else None


def _default_batch(settings: dict[str, Any]) -> int | None:
    """A train block without `batch_size` trains with the emitted script's default."""
    return train.DEFAULT_BATCH_SIZE if settings else None


def _precision(settings: dict[str, Any]) -> str:
    """`auto` (a train block's default) is bf16 on the bf16-capable GPUs this budget is for."""
    name = _name(settings.get("precision"))
    if settings and name in (None, "auto"):
        return "bf16"
    return name or "fp32"


def _trainable(inst: Instantiation, module: ModuleOp, settings: dict[str, Any]) -> int | None:
    """The parameters that train under the block's `freeze` and `lora` (None: every one)."""
    freeze, lora = settings.get("freeze"), settings.get("lora")
    if freeze is None and lora is None:
        return None
    try:
        tree = model_tree(inst.model, inst.env, models_of(module))
    except UnknownState:
        return None
    paths = [str(p) for p in freeze] if isinstance(freeze, list | tuple) else []
    adapters = dict(lora.kwargs) if isinstance(lora, CallValue) else None
    return tree.trainable(paths, adapters)


def model_info(
    inst: Instantiation, module: ModuleOp, request: InfoRequest, budget: StepBudget | None = None
) -> ModelInfo | None:
    settings = train_settings(module, inst.name)
    batch = request.batch_size or _int(settings.get("batch_size")) or _default_batch(settings)
    precision = request.precision or _precision(settings)
    optimizer = request.optimizer or _optimizer(settings.get("optimizer")) or "Adam"
    parallel = _parallelism(inst, module, request, settings.get("distributed"))
    loss = _name(settings.get("loss"))
    trainable = _trainable(inst, module, settings)
    shares = () if request.optimizer else step_optimizers(module, inst.name) or ()
    if shares or step_optimizers(module, inst.name) == ():
        optimizer = " + ".join(dict.fromkeys(s.name for s in shares)) or "frozen"
        trainable = sum(s.params for s in shares)
    adapters = (trainable or 0) if settings.get("lora") is not None else 0  # `lora` adds them
    training = Training(precision, optimizer, loss, request.checkpointing, parallel, trainable,
                        shares, adapters)  # fmt: skip
    options = ProfileOptions(batch, precision, request.bindings)
    profile = profile_instantiation(inst, models_of(module), options, budget)
    if profile is None:
        return None
    batch = batch or _bound_batch(profile)
    return ModelInfo(profile, training, batch, training_budget(profile, training))


def _parallelism(
    inst: Instantiation, module: ModuleOp, request: InfoRequest, setting: object
) -> Parallelism:
    """`--nproc`/`--distributed`, else the train block's `distributed` at one process."""
    strategy = request.distributed
    if strategy is None and setting in (True, "ddp", "fsdp"):
        strategy = "ddp" if setting is True else str(setting)
    if strategy is None:
        strategy = "ddp" if request.nproc is not None else "none"
    world = request.nproc or 1
    if strategy != "fsdp":
        return Parallelism(strategy, world)
    root, block = fsdp_units(inst, models_of(module))
    return Parallelism(strategy, world, root, block)


def fsdp_units(inst: Instantiation, models: dict[str, Any]) -> tuple[int, int]:
    """(the root unit's parameters, the largest block's): the blocks are the layers
    that are models (each copy of a layer list its own), as `insert-ddp` shards them."""
    root, block = 0, 0
    for layer in layers_of(inst.model).values():
        params = layer_params(layer, inst.env, models)
        if layer.kind.data not in models:
            root += params
            continue
        copies = layer_count(layer, inst.env)
        block = max(block, params // max(copies, 1) if copies is not None else params)
    return root, block


def _bound_batch(profile: ModelProfile) -> int | None:
    """The batch `-D B=4` (or an annotation) fixed: the first dim of the first input."""
    first = profile.input_shapes[0] if profile.input_shapes else None
    return _int(first[0]) if first else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def info_models(module: ModuleOp, request: InfoRequest) -> list[ModelInfo]:
    models = models_of(module)
    budget = StepBudget()
    found = [model_info(i, module, request, budget) for i in info_instantiations(module, models)]
    return [f for f in found if f is not None]


# --- the command -------------------------------------------------------------------------------


def info_file(path: Path, request: InfoRequest) -> tuple[Compilation, list[ModelInfo]]:
    """Check `path` to the `nml` stage and profile every model, if it is clean."""
    result = compile_for_info(path, request.bindings)
    if result.module is None or not result.ok:
        return result, []
    with reporting(result.sink):  # a model too large to profile is a warning
        return result, info_models(result.module, request)


def info_programs(
    result: Compilation, infos: list[ModelInfo], request: InfoRequest
) -> list[ProgramBudget]:
    """The budget of each block of `step` lines, over every model it trains or holds; one
    rank's under `--nproc N` (FSDP: a 1/N share of every model; DDP: the whole models)."""
    if result.module is None or not result.ok:
        return []
    budgets = {i.profile.name: i.budget for i in infos}
    return program_budgets(
        result.module, budgets, {i.profile.name: i.profile.params for i in infos}
    )


def info_json(path: Path, request: InfoRequest) -> dict[str, Any]:
    """What `tlc info --json` prints."""
    result, infos = info_file(path, request)
    return to_json(result, infos, request)


def run_info(path: Path, request: InfoRequest, as_json: bool = False) -> int:
    """Print the profile of every model in `path`; the exit status (1 on errors)."""
    result, infos = info_file(path, request)
    if as_json:
        print(json.dumps(to_json(result, infos, request), indent=2))
        return 0 if result.ok else 1
    diagnostics = result.sink.sorted()
    if diagnostics:
        sys.stderr.write(render_text.render_all(diagnostics, result.sources))
    if result.ok:
        console = Console(highlight=False, width=120)
        render(infos, request, console)
        for program in info_programs(result, infos, request):
            for line in program_lines(program, request):
                console.print(line)
    return 0 if result.ok else 1


# --- JSON -----------------------------------------------------------------------------------------


def to_json(result: Compilation, infos: list[ModelInfo], request: InfoRequest) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "diagnostics": [render_json.to_dict(d) for d in result.sink.sorted()],
        "models": [model_json(i, request) for i in infos],
        "programs": [program_json(p, request) for p in info_programs(result, infos, request)],
    }


def program_json(program: ProgramBudget, request: InfoRequest) -> dict[str, Any]:
    return {
        "models": list(program.models),
        "frozen": list(program.frozen),
        "weights": sum(program.weights.values()),
        "weights_by_model": dict(program.weights),
        "gradients": program.gradients,
        "optimizer_state": program.optimizer_state,
        "optimizers": [
            {
                "step": o.step,
                "name": o.optimizer,
                "models": list(o.models),
                "params": o.params,
                "state_bytes": o.state_bytes,
            }
            for o in program.optimizers
        ],
        "steps": [
            {"step": s.step, "calls": list(s.calls), "activations": s.activations}
            for s in program.steps
        ],
        "largest_step": program.largest.step if program.steps else None,
        "activations": program.activations,
        "workspace": program.terms()["workspace"],
        "cuda_context": program.cuda_context,
        "backward_peak": program.backward_peak + program.workspace,
        "step_peak": program.step_peak + program.workspace,
        "peak": program.peak,
        "total": program.total,
        "fits": None if request.gpu_memory is None else program.total <= request.gpu_memory,
        "strategy": program.strategy,
        "world_size": program.world_size,
        "gathered_weights": program.gathered,
        "comm_buffers": program.comm_buffers,
        "phases": [
            {
                "epochs": [phase.first, phase.last],
                "steps": list(phase.steps),
                "gradients": phase.gradients,
                "optimizer_state": program.phase_state(phase),
                "peak": program.phase_peak(phase),
            }
            for phase in program.phases
        ],
        "peak_phase": list(program.peak_phase.steps),
    }


def model_json(info: ModelInfo, request: InfoRequest) -> dict[str, Any]:
    p = info.profile
    return {
        "name": p.name,
        "model": p.model,
        "params": p.params,
        "flops": p.flops,
        "activation_bytes": p.activation_bytes,
        "input_shapes": [shape_json(s) for s in p.input_shapes],
        "input_dtype": "int64" if p.input_integer else "float32",
        "output_shape": shape_json(p.output_shape),
        "unknown_dims": p.unknown,
        "errors": p.errors,
        "config": {k: v for k, v in p.config.items() if isinstance(v, int | float | str)},
        "settings": {
            "batch_size": info.batch_size,
            "precision": info.training.precision,
            "optimizer": info.training.optimizer,
            "loss": info.training.loss,
            "loss_flops": loss_flops(info.training.loss, p.output_shape),
            "optimizers": [
                {"name": o.name, "params": o.params, "state_bytes": o.state_bytes}
                for o in info.training.optimizers
            ],
            "bindings": dict(request.bindings),
            "trainable": info.training.trainable,  # `freeze`/`lora`: None when all train
        },
        "memory": budget_json(info.budget, request),
        "parallel": {
            "strategy": info.training.parallel.strategy,
            "world_size": info.training.parallel.world_size,
            "root_params": info.training.parallel.root_params,
            "block_params": info.training.parallel.block_params,
        },
        "notes": p.unmodelled if info.budget is not None else [],
        "layers": [layer_json(layer) for layer in p.layers],
    }


def shape_json(shape: Shape) -> list[int | str | None] | None:
    return None if shape is None else list(shape)


def layer_json(layer: LayerProfile) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": layer.name,
        "kind": layer.kind,
        "output_shape": shape_json(layer.output_shape),
        "params": layer.params,
        "flops": layer.flops,
        "activation_bytes": layer.activation_bytes,
    }
    if layer.unused:
        found["unused"] = True
    if layer.read:
        found["read"] = True
    if layer.repeat:
        found["repeat"] = layer.repeat  # a loop: `layers` is its first iteration
    if layer.layers:
        found["layers"] = [layer_json(child) for child in layer.layers]
    return found


def budget_json(budget: MemoryBudget | None, request: InfoRequest) -> dict[str, Any] | None:
    if budget is None:
        return None
    return {
        "weights": budget.weights,
        "gradients": budget.gradients,
        "optimizer_state": budget.optimizer_state,
        "activations": budget.activations,
        "activations_checkpointed": budget.activations_checkpointed,
        "weight_casts": budget.weight_casts,
        "loss": budget.loss,
        "backward_working": budget.backward_working,
        "backward_sweep": budget.backward_sweep,
        "scratch": budget.scratch,
        "step_temporaries": budget.step_temporaries,
        "output": budget.output,
        "output_in_backward": budget.output_in_backward,
        "workspace": budget.workspace,
        "cuda_context": budget.cuda_context,
        "gathered": budget.gathered,
        "comm_buffers": budget.comm_buffers,
        "backward_peak": budget.backward_peak + budget.workspace,
        "step_peak": budget.step_peak + budget.workspace,
        "peak": budget.peak,
        "compiled_peak": budget.compiled_peak,
        "total": budget.total,
        "dominant": budget.dominant(),
        "fits": None if request.gpu_memory is None else budget.total <= request.gpu_memory,
    }


# --- text ----------------------------------------------------------------------------------------


def render(infos: list[ModelInfo], request: InfoRequest, console: Console) -> None:
    for info in infos:
        console.print(layer_table(info))
        for line in summary_lines(info, request):
            console.print(line)
        console.print()


def layer_table(info: ModelInfo) -> Table:
    p = info.profile
    title = p.model if p.name == p.model else f"{p.name}: {p.model}"
    table = Table(title=f"{title}  input {', '.join(format_shape(s) for s in p.input_shapes)}",
                  title_justify="left")  # fmt: skip
    for column in ("layer", "kind", "output", "params", "FLOPs", "activations"):
        table.add_column(
            column, justify="left" if column in ("layer", "kind", "output") else "right"
        )
    for row in _rows(p.layers, ""):
        table.add_row(*row)
    table.add_row("total", "", format_shape(p.output_shape), f"{p.params:,}",
                  _count(p.flops), _bytes(p.activation_bytes), style="bold")  # fmt: skip
    return table


REPEAT = "\N{MULTIPLICATION SIGN}"  # a loop's row: `h  Block` REPEAT 4, one iteration below


def _rows(layers: list[LayerProfile], indent: str) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for layer in layers:
        shape = (
            "unused" if layer.unused else "read" if layer.read else format_shape(layer.output_shape)
        )
        kind = f"{layer.kind} {REPEAT} {layer.repeat}" if layer.repeat else layer.kind
        rows.append((indent + (layer.name or "-"), kind, shape, f"{layer.params:,}",
                     _count(layer.flops), _bytes(layer.activation_bytes)))  # fmt: skip
        rows += _rows(layer.layers, indent + "  ")
    return rows


def loss_flops(loss: str | None, output: Shape) -> int | None:
    """The train block's loss's FLOPs on one batch's output (its record's `cost`); None
    without a loss, or while the output's size is unknown."""
    record = TRAIN_LOSSES.get(loss or "")
    dims = concrete(output)
    if record is None or dims is None:
        return None
    return record.cost([dims], ()).flops


def summary_lines(info: ModelInfo, request: InfoRequest) -> list[str]:
    p, t = info.profile, info.training
    flops = loss_flops(t.loss, p.output_shape)
    counted = f" ({_count(flops)} FLOPs)" if flops is not None else ""
    lines = [
        f"batch {info.batch_size or '?'}, {t.precision}, {t.optimizer}, "
        f"loss {t.loss or 'none'}{counted}"
    ]
    lines += [f"error: {e}" for e in p.errors]
    for share in t.optimizers:
        lines.append(f"optimizer {share.name}: {share.params:,} parameters, state "
                     f"{_bytes(share.state_bytes)}")  # fmt: skip
    if t.trainable is not None and not t.optimizers:
        lines.append(
            f"trainable parameters: {t.trainable:,} of {p.params:,} (frozen: "
            f"{p.params - t.trainable:,}): no gradients or optimizer state for the rest"
        )
    if p.unknown:
        dims = ", ".join(f"`{d}`" for d in p.unknown)
        lines.append(
            f"unknown dims {dims}: FLOPs and activations need them; "
            "bind them with `-D NAME=SIZE` (the batch with `--batch-size`)"
        )
        if "?" in p.unknown:
            lines.append("`?`: a size nothing fixes; annotate the input (`x: Tensor[B, 784]`)")
    if info.budget is not None:
        lines += budget_lines(info.budget, request)
        lines += [f"note: {n}" for n in p.unmodelled]
    return lines


def budget_lines(budget: MemoryBudget, request: InfoRequest) -> list[str]:
    where = "one step"
    if budget.strategy != "none":
        where = f"one step, per rank of {budget.world_size} ({budget.strategy.upper()})"
    lines = [f"training memory, {where}:"]
    lines += [f"  {k:<16}{_bytes(v):>12}" for k, v in budget.terms().items()]
    lines += [
        f"  with activation checkpointing: activations {_bytes(budget.activations_checkpointed)}",
        f"  predicted peak (allocator) {_bytes(budget.peak)}, with the CUDA context "
        f"{_bytes(budget.total)}",
        f"  under torch.compile (the loss fused): peak {_bytes(budget.compiled_peak)}",
    ]
    if request.gpu_memory is not None and budget.total > request.gpu_memory:
        lines.append(
            f"warning: the budget {_bytes(budget.total)} exceeds the GPU's "
            f"{_bytes(request.gpu_memory)}; the largest term is {budget.dominant()}"
        )
    return lines


def program_lines(program: ProgramBudget, request: InfoRequest) -> list[str]:
    """`train (G, D)`: each step's optimizers and the budget of one batch of every step."""
    count = f"{len(program.steps)} step{'s' if len(program.steps) != 1 else ''}"
    lines = [f"train ({', '.join(program.models)}): {count}, in order within each batch"]
    for o in program.optimizers:
        lines.append(f"  step {o.step}: {o.optimizer} over {', '.join(o.models)}, "
                     f"{o.params:,} parameters, state {_bytes(o.state_bytes)}")  # fmt: skip
    if program.frozen:
        lines.append(f"  frozen: {', '.join(program.frozen)} (no gradients, no optimizer state; "
                     "run under no_grad, no activations kept)")  # fmt: skip
    if program.steps:
        each = ", ".join(f"{s.step} {_bytes(s.activations)} ({', '.join(s.calls) or 'none'})"
                         for s in program.steps)  # fmt: skip
        lines.append(f"  activations kept per step: {each}")
    ranks = ""
    if program.strategy != "none":
        ranks = f", per rank of {program.world_size} ({program.strategy.upper()})"
    if len(program.phases) > 1:
        each = "; ".join(f"epochs {p.epochs} {', '.join(p.steps)} {_bytes(program.phase_peak(p))}"
                         for p in program.phases)  # fmt: skip
        lines.append(f"  phases (peak of each): {each}")
        phase = program.peak_phase
        lines.append(f"training memory, one batch of the largest phase (epochs {phase.epochs}: "
                     f"{', '.join(phase.steps)}){ranks}:")  # fmt: skip
    else:
        lines.append(f"training memory, one batch of every step{ranks}:")
    weights = " + ".join(f"{m} {_bytes(w)}" for m, w in program.weights.items())
    for key, value in program.terms().items():
        note = f"  ({weights})" if key == "weights" else ""
        if key == "activations" and program.steps:
            note = f"  (the largest step, {program.largest.step})"
        lines.append(f"  {key:<16}{_bytes(value):>12}{note}")
    lines.append(f"  predicted peak (allocator) {_bytes(program.peak)}, with the CUDA context "
                 f"{_bytes(program.total)}")  # fmt: skip
    if request.gpu_memory is not None and program.total > request.gpu_memory:
        lines.append(f"warning: the budget {_bytes(program.total)} exceeds the GPU's "
                     f"{_bytes(request.gpu_memory)}")  # fmt: skip
    return lines


def _count(value: int | None) -> str:
    if value is None:
        return "?"
    for unit, size in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if value >= size:
            return f"{value / size:.2f}{unit}"
    return str(value)


def _bytes(value: int | None) -> str:
    if value is None:
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value} B"


KNOWN_OPTIMIZERS = tuple(OPTIMIZERS)
