"""`convert-train-to-torch`: a train block and its markers become the training script.

    nml.instance @net = @Classifier {}
    train.dataset @data = "digits" {flatten = true}
    train.loop @net on @data {
      train.set "epochs" = 10 : i64
      train.set "optimizer" = #nml.call<"Adam", [], {lr = 1.000000e-03 : f64}>
      train.set "loss" = #nml.call<"CrossEntropy", [], {}>
      train.checkpoint every 5 "epochs"
      train.autocast "float16"
      train.grad_scaler
    }

becomes, in the module's `torch.script` around the model classes,

    torch.from_import "__future__" ["annotations"]   (and the script's other imports)
    torch.raw "# Trains `Classifier` on `digits` ..."   the header
    torch.raw "..."                                      the runtime modules (runtime_ops)
    torch.raw "EPOCHS = 10 ..."                          the settings
    torch.module_class @Classifier ...                   (from convert-nml-to-torch)
    torch.raw "def loss_fn(...)"                         the loss, then the loop's sections
    torch.raw "if __name__ == \"__main__\": ..."

Steps:
1. `plan_of` reads the block into a `ScriptPlan` (train_script.py): the settings'
   values, the markers the train passes added (precision, DDP, compile mode,
   checkpointed layers), the instance's overrides, and the dataset; for
   `load_dataset()` the synthetic samples' shape and classes are inferred from
   the model (its first layer's input, then shape inference for the output).
2. `train_script.py` turns the plan into the sections' text; this pass puts
   them into the script as ops and erases the loop.
Only the first train block of a script becomes the script's `main`.
3. The script's other top-level statements become a function the `__main__`
   guard calls, before training when there is a train block (script_statements.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.catalogue.datasets import LM_SOURCES, DatasetError, lookup_dataset
from tensorloom.catalogue.layers.base import py_literal
from tensorloom.dialects import nml, train
from tensorloom.dialects import torch as t
from tensorloom.escape import py_string
from tensorloom.passes.convert_nml_to_torch import attr_source, script_of
from tensorloom.passes.loss_functions import Metric, MetricProblem, metrics_of
from tensorloom.passes.model_env import CallValue, Evaluated, evaluate_kwargs, lookup_symbol
from tensorloom.passes.script_statements import lower_statements
from tensorloom.passes.train_script import (
    GUARD,
    RecipePlan,
    ScriptPlan,
    header_source,
    loop_sources,
    loss_source,
    settings_source,
)
from tensorloom.passes.train_values import loops_of, setting_value

RUNTIME_MODULES = ("distributed", "amp", "data", "loader", "checkpoint", "metrics", "graphs",
                   "recipe", "serve")  # fmt: skip
# Language-model data reads windows through runtime/tokens.py instead of runtime/data.py.
LM_RUNTIME_MODULES = ("distributed", "amp", "tokens", "loader", "checkpoint", "metrics",
                      "graphs", "recipe", "serve")  # fmt: skip
DEFAULT_LR = {"Adagrad": "0.01", "RMSprop": "0.01", "Adadelta": "1.0", "Adamax": "0.002",
              "NAdam": "0.002"}  # fmt: skip
"""torch.optim's default learning rates where they differ from 0.001."""


# --- step 1: the plan ------------------------------------------------------------------------


def _find(module: ModuleOp, kind: type[Operation], name: str) -> Operation | None:
    return lookup_symbol(module, name, kind)


def _marker(loop: train.LoopOp, kind: type[Operation]) -> Operation | None:
    return next((op for op in loop.body.block.ops if isinstance(op, kind)), None)


def _call(value: Evaluated | None, default: str) -> CallValue:
    if isinstance(value, CallValue):
        return value
    return CallValue(value if isinstance(value, str) else default)


def _kwargs(call: CallValue) -> list[tuple[str, str]]:
    named = list(call.kwargs) + ([("lr", call.args[0])] if call.args else [])
    return [(key, py_literal(value)) for key, value in named if not isinstance(value, CallValue)]


def _precision(loop: train.LoopOp) -> str:
    autocast = _marker(loop, train.AutocastOp)
    if not isinstance(autocast, train.AutocastOp):
        return "fp32"
    return {"float16": "fp16", "bfloat16": "bf16"}.get(autocast.dtype.data, "auto")


def _model_args(instance: nml.InstanceOp) -> str:
    return ", ".join(f"{k}={attr_source(v).text}" for k, v in instance.overrides.data.items())


@dataclass(frozen=True, slots=True)
class DataPlan:
    name: str | None
    options: str
    per_token_length: int | None = None


def _data_plan(module: ModuleOp, loop: train.LoopOp) -> DataPlan:
    op = _find(module, train.DatasetOp, loop.data.root_reference.data)
    assert isinstance(op, train.DatasetOp), "check-scopes resolves the dataset"
    source = op.source.data if op.source is not None else None
    options = evaluate_kwargs(op.options.data, {})
    options = options if isinstance(options, dict) else {}
    info = lookup_dataset(source, options)  # type: ignore[arg-type]
    kwargs = options if isinstance(info, DatasetError) else info.runtime_kwargs()
    per_token = op.attributes.get("per_token_length")  # set by infer-synthetic-data
    length = per_token.value.data if isinstance(per_token, IntegerAttr) else None
    return DataPlan(source, _dict_literal(kwargs), length)  # type: ignore[arg-type]


def _dict_literal(values: dict[str, object]) -> str:
    items = ", ".join(f"{py_string(k)}: {py_literal(v)}" for k, v in values.items())  # type: ignore[arg-type]
    return "{" + items + "}"


def _int(value: Evaluated | None, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _schedule(loop: train.LoopOp) -> tuple[str | None, dict[str, str]]:
    value = setting_value(loop, "lr_schedule")
    if value is None:
        return None, {}
    call = _call(value, "none")
    if call.name == "none":
        return None, {}
    return call.name, dict(_kwargs(call))


def _optimizer(loop: train.LoopOp) -> tuple[str, str, list[tuple[str, str]]]:
    call = _call(setting_value(loop, "optimizer"), "Adam")
    kwargs = _kwargs(call)
    lr = dict(kwargs).get("lr", DEFAULT_LR.get(call.name, "0.001"))
    return call.name, lr, [(k, v) for k, v in kwargs if k != "lr"]


def _clip(value: Evaluated | None) -> str:
    usable = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return py_literal(float(value)) if usable else "None"  # type: ignore[arg-type]


def _every(policy: Operation | None) -> int | None:
    return policy.every.value.data if isinstance(policy, train.CheckpointOp) else None


def plan_of(module: ModuleOp, loop: train.LoopOp, source: str) -> ScriptPlan:
    instance = _find(module, nml.InstanceOp, loop.model.root_reference.data)
    assert isinstance(instance, nml.InstanceOp), "check-scopes resolves the model"
    data = _data_plan(module, loop)
    optimizer, lr, optimizer_kwargs = _optimizer(loop)
    loss = _call(setting_value(loop, "loss"), "CrossEntropy")
    functions = _functions(module)
    named = setting_value(loop, "loss")
    custom = named if isinstance(named, str) and named in functions else None
    schedule, schedule_kwargs = _schedule(loop)
    policy = _marker(loop, train.CheckpointOp)
    compiled = _marker(loop, train.CompileOp)
    blocks = _marker(loop, train.ActivationCheckpointOp)
    shard = _marker(loop, train.FsdpShardOp)
    clip = setting_value(loop, "grad_clip")
    batch = setting_value(loop, "batch_size")
    log_every = setting_value(loop, "log_every")
    return ScriptPlan(
        source=source,
        model_class=instance.model.root_reference.data,
        model_args=_model_args(instance),
        dataset=data.name,
        dataset_options=data.options,
        per_token_length=data.per_token_length,
        epochs=_int(setting_value(loop, "epochs"), 10),
        batch_size=batch if isinstance(batch, int) else None,
        optimizer=optimizer,
        optimizer_kwargs=optimizer_kwargs,
        learning_rate=lr,
        loss=loss.name,
        loss_kwargs=_kwargs(loss),
        precision=_precision(loop),
        distributed=_marker(loop, train.DdpWrapOp) is not None or shard is not None,
        checkpoint_every=_every(policy),
        checkpoint_unit=policy.unit.data if isinstance(policy, train.CheckpointOp) else "epochs",
        schedule=schedule,
        schedule_kwargs=schedule_kwargs,
        grad_clip=_clip(clip),
        grad_accum=_int(setting_value(loop, "grad_accum"),
                        _int(setting_value(loop, "accumulate_steps"), 1)),
        compile_mode=compiled.mode.data if isinstance(compiled, train.CompileOp) else None,
        seed=_int(setting_value(loop, "seed"), 0),
        checkpointed_layers=_checkpointed_layers(blocks),
        val_every=_int(setting_value(loop, "val_every"), 1),
        log_every=log_every if isinstance(log_every, int) else None,
        language_model_data=data.name in LM_SOURCES,
        custom_loss=custom,
        takes_inputs=frozenset(n for n, count in functions.items() if count == 3),
        metrics=tuple(_metrics(loop, functions)),
        fsdp_blocks=tuple(b.data for b in shard.blocks)
        if isinstance(shard, train.FsdpShardOp) else None,
        recipe=_recipe(loop),
    )  # fmt: skip


def _recipe(loop: train.LoopOp) -> RecipePlan:
    """The recipe keys check-train accepted (runtime/recipe.py gives them their meaning)."""
    decay = setting_value(loop, "decay_groups")
    ema = setting_value(loop, "ema")
    stopping = setting_value(loop, "early_stopping")
    early = None
    if isinstance(stopping, CallValue) and stopping.args:
        options = dict(stopping.kwargs)
        metric, delta = options.get("metric", "val_loss"), options.get("min_delta", 0.0)
        early = f"({stopping.args[0]}, {py_string(str(metric))}, {float(delta)!r})"  # type: ignore[arg-type]
    best = setting_value(loop, "keep_best")
    every = setting_value(loop, "eval_every")
    steps = setting_value(loop, "max_steps")
    return RecipePlan(
        decay_groups=decay is not False,
        ema=repr(float(ema))
        if isinstance(ema, int | float) and not isinstance(ema, bool)
        else None,
        early_stopping=early,
        keep_best=best if isinstance(best, str) else None,
        eval_every=_int(every, 0) or None,
        max_steps=_int(steps, 0) or None,
        epochs_set=setting_value(loop, "epochs") is not None or steps is None,
    )


# --- step 2: the ops -------------------------------------------------------------------------


def import_ops(plan: ScriptPlan) -> list[Operation]:
    """What the sections name, beyond what the runtime modules import themselves."""
    ops: list[Operation] = [
        t.FromImportOp("__future__", ["annotations"]),
        t.ImportOp("argparse"),
        t.ImportOp("json"),
        t.ImportOp("random"),
        t.ImportOp("sys"),
        t.ImportOp("time"),
        t.FromImportOp("dataclasses", ["dataclass"]),
        t.FromImportOp("typing", ["Any"]),
        t.ImportOp("torch"),
        t.ImportOp("torch.nn.functional", "F"),
        t.FromImportOp("torch", ["nn"]),
    ]
    if plan.distributed and not plan.sharded:
        ops.append(t.FromImportOp("torch.nn.parallel", ["DistributedDataParallel"]))
    if plan.checkpointed_layers:
        ops.append(t.FromImportOp("collections.abc", ["Callable"]))
        ops.append(t.FromImportOp("torch.utils.checkpoint", ["checkpoint"]))
    return ops


def _runtime_ops(plan: ScriptPlan) -> list[Operation]:
    names = LM_RUNTIME_MODULES if plan.language_model_data else RUNTIME_MODULES
    if plan.sharded:  # FSDP2 and DCP: about a second of imports, so only where used
        names = (*names, "sharded")
    return [op for name in names for op in t.runtime_ops(name)]


def lower_loop(module: ModuleOp, loop: train.LoopOp) -> None:
    script = script_of(module)
    plan = plan_of(module, loop, script.source.data if script.source else "the program")
    block = script.body.block
    before = [*import_ops(plan), t.RawOp(header_source(plan)), *_runtime_ops(plan)]
    before.append(t.RawOp(settings_source(plan)))
    first = block.first_op
    for op in before:
        op.location = loop.location
        if first is None:
            block.add_op(op)
        else:
            Rewriter.insert_op(op, InsertPoint.before(first))
    after = [loss_source(plan), *loop_sources(plan), GUARD]
    for text in after:
        op = t.RawOp(text)
        op.location = loop.location
        block.add_op(op)
    loop.detach()
    loop.erase()


@dataclass(frozen=True)
class ConvertTrainToTorchPass(ModulePass):
    """Lowers a module's first `train.loop` to the training script; see the module docstring."""

    name = "convert-train-to-torch"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = loops_of(op)
        if loops:
            lower_loop(op, loops[0])
        lower_statements(op, has_training=bool(loops))


__all__ = ["ConvertTrainToTorchPass", "plan_of"]


def _functions(module: ModuleOp) -> dict[str, int]:
    """The `.tl` file's functions (losses, metrics) and their parameter counts: by now the
    `torch.def`s that convert-nml-to-torch made of them."""
    script = script_of(module)
    return {op.sym_name.data: len(op.arg_names) for op in script.body.block.ops
            if isinstance(op, t.DefOp)}  # fmt: skip


def _metrics(loop: train.LoopOp, functions: dict[str, int]) -> list[Metric]:
    """`metrics = [...]`, as check-train read it (it reported any problem)."""
    attr = loop.setting("metrics")
    if attr is None:
        return []
    metrics = metrics_of(attr, list(functions))
    return [] if isinstance(metrics, MetricProblem) else metrics


def _checkpointed_layers(blocks: Operation | None) -> list[str]:
    """The layers `activation-checkpointing` marked, or none."""
    if not isinstance(blocks, train.ActivationCheckpointOp):
        return []
    return [s.data for s in blocks.layers]
