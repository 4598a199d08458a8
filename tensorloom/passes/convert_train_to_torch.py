"""`convert-train-to-torch`: a train block and its markers become the training script.

    nml.instance @net = @Classifier {}
    train.dataset @data = "digits" {flatten = true}
    train.loop @net on @data {
      train.config {epochs = 10 : i64, optimizer = "Adam", optimizer_args = {lr = 1.0e-03 : f64},
                    loss = "CrossEntropy", checkpoint_every = 5 : i64, ...}   (train-config)
      train.autocast "float16"                                             (insert-amp)
    }

becomes, in the module's `torch.script` around the model classes,

    py.from_import "__future__" ["annotations"]      (and the script's other imports)
    py.comment "Trains `Classifier` on `digits` ..."   the header, and the settings
    py.assign %epochs = %10; ...                        (train_settings.py)
    torch.module_class @Classifier ...                   (from convert-nml-to-torch)
    py.def @loss_fn                                      the loss
    py.comment "---- command line ----"; py.def @parse_args   (train_cli.py)
    py.def @build_loaders                                the loaders (train_data.py)
    py.class @Trainer, py.def @build_trainer ...         the trainer and its set-up
                                                         (train_build.py)
    py.def @resume, @_forward_backward, @evaluate ...    the step and evaluation
                                                         (train_step.py)
    py.def @validation_record, @epoch_record             the records (train_records.py)
    py.def @checkpoint_state, @save_last, @save_if_due   the saves, the run and serving
    py.def @train, @_run, @serve_requests, @main         (train_loop.py)
    torch.runtime []                                     the runtime helpers they reach
    torch.main { sys.exit(main()) }                      the guard

Steps:
1. `plan_of` reads the block into a `ScriptPlan` (train_lowering/plan.py): its `train.config`
   op itself (every default already filled in from the catalogue; the sections read its
   fields by name, `plan.setting("seed", int)`), the markers the train passes added
   (precision, DDP, compile mode, checkpointed layers), the instance's overrides, and the
   dataset; for `load_dataset()` the synthetic samples' shape and classes are inferred from
   the model (its first layer's input, then shape inference for the output).
2. `train_settings.py`, `train_cli.py`, `train_build.py`, `train_step.py`,
   `train_records.py` and `train_loop.py` build the header and settings, the command
   line, the trainer and its set-up, the step, the evaluation, the records and the
   saves as `py` ops from the plan (autocast and the GradScaler only with insert-amp's
   marker, the all-reduce and `no_sync` only with insert-ddp's); `sections.py`
   orders the sections; this pass puts them all into the script and erases the loop.
Only the first train block of a script becomes the script's `main`.
3. The script's other top-level statements become a function the `__main__`
   guard calls, before training when there is a train block (script_statements.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from xdsl.context import Context
from xdsl.dialects.builtin import (
    LocationAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.catalogue.datasets import LM_SOURCES, DatasetError, is_file_source, lookup_dataset
from tensorloom.catalogue.optimizers import OPTIMIZERS
from tensorloom.catalogue.train_rules import schedule_of
from tensorloom.diagnostics.ir import span_of
from tensorloom.dialects import nml, py, train
from tensorloom.dialects import torch as t
from tensorloom.passes.support.model_env import evaluate_kwargs, lookup_symbol
from tensorloom.passes.support.objectives import PER_OPTIMIZER, Step, initial_paths, step_of
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.py_builder import Value
from tensorloom.passes.support.torch_script import script_of
from tensorloom.passes.support.train_values import loops_of
from tensorloom.passes.train_lowering.plan import ScriptPlan
from tensorloom.passes.train_lowering.script_statements import lower_statements
from tensorloom.passes.train_lowering.sections import loop_sources
from tensorloom.passes.train_lowering.train_loop import guard_ops
from tensorloom.passes.train_lowering.train_settings import header_ops, settings_ops
from tensorloom.passes.train_lowering.train_step import loss_ops
from tensorloom.passes.train_lowering.train_steps import (
    ModelPlan,
    OptimizerPlan,
    StepPlan,
    StepsPlan,
    steps_sources,
)
from tensorloom.source import SOURCE_SUFFIXES

# --- step 1: the plan ------------------------------------------------------------------------


def _find(module: ModuleOp, kind: type[Operation], name: str) -> Operation | None:
    return lookup_symbol(module, name, kind)


def _marker(loop: train.LoopOp, kind: type[Operation]) -> Operation | None:
    return next((op for op in loop.body.block.ops if isinstance(op, kind)), None)


def _location(attr: Attribute | None) -> LocationAttr | None:
    """A location that names a source line, else None."""
    return attr if isinstance(attr, LocationAttr) and span_of(attr) is not None else None


def _precision(loop: train.LoopOp) -> str:
    autocast = _marker(loop, train.AutocastOp)
    if not isinstance(autocast, train.AutocastOp):
        return "none"  # insert-amp left out: no mixed-precision code at all
    names = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
    return names.get(autocast.dtype.data, "auto")


@dataclass(frozen=True, slots=True)
class DataPlan:
    name: str | None
    options: dict[str, Value]
    per_token_length: int | None = None


def _data_plan(module: ModuleOp, loop: train.LoopOp) -> DataPlan:
    op = _find(module, train.DatasetOp, loop.data.root_reference.data)
    assert isinstance(op, train.DatasetOp), "check-scopes resolves the dataset"
    source = op.source.data if op.source is not None else None
    options = evaluate_kwargs(op.options.data, {})
    options = options if isinstance(options, dict) else {}
    info = lookup_dataset(source, options)  # type: ignore[arg-type]
    kwargs = options if isinstance(info, DatasetError) else info.runtime_kwargs()
    per_token = op.per_token_length  # set by infer-synthetic-data
    length = per_token.value.data if per_token is not None else None
    fields = loop.field_names()
    if fields:  # the reader loads these arrays, in this order
        kwargs = {**kwargs, "fields": tuple(fields)}
    return DataPlan(source, dict(kwargs), length)  # type: ignore[arg-type]


def _model_classes(module: ModuleOp, loop: train.LoopOp) -> int | None:
    """A data file's labels are unknown until run time: the class count of the model's output
    (`model_output`, from shape-inference), which the script checks them against at load."""
    data = _find(module, train.DatasetOp, loop.data.root_reference.data)
    if not isinstance(data, train.DatasetOp) or data.source is None:
        return None
    output = loop.model_output
    if not is_file_source(data.source.data) or not isinstance(output, nml.TensorType):
        return None
    classes = output.suffix[-1] if output.suffix else None  # [B, C], [B, T, C] or [..., C]
    return classes if isinstance(classes, int) and not isinstance(classes, bool) else None


def plan_of(module: ModuleOp, loop: train.LoopOp, source: str) -> ScriptPlan:
    """The script's plan: the loop's `train.config` (train-config) and the markers the train
    passes added (precision, DDP, compile mode, checkpointed layers); nothing else of the block."""
    instance = _find(module, nml.InstanceOp, loop.model.root_reference.data)
    assert isinstance(instance, nml.InstanceOp), "check-scopes resolves the model"
    config = train.config_of(loop)
    data = _data_plan(module, loop)
    functions = _functions(module)
    compiled = _marker(loop, train.CompileOp)
    blocks = _marker(loop, train.ActivationCheckpointOp)
    shard = _marker(loop, train.FsdpShardOp)
    return ScriptPlan(
        config=config,
        source=source,
        model_class=instance.model.root_reference.data,
        dataset=data.name,
        dataset_options=data.options,
        per_token_length=data.per_token_length,
        precision=_precision(loop),
        distributed=_marker(loop, train.DdpWrapOp) is not None or shard is not None,
        compile_mode=compiled.mode.data if isinstance(compiled, train.CompileOp) else None,
        checkpointed_layers=_checkpointed_layers(blocks),
        language_model_data=data.name in LM_SOURCES,
        forward_inputs=_forward_inputs(module, instance),
        carries=tuple(op.var.data for op in loop.carries()),
        carry_starts=tuple(_carry_start(op) for op in loop.carries()),
        takes_inputs=frozenset(n for n, count in functions.items() if count == 3),
        loop_location=_location(loop.location),
        loss_location=_location(config.loc("objective") or config.loc("loss")) or loop.location,
        data_location=_location(_data_location(module, loop)),
        model_location=_location(instance.location),
        optimizer_location=_location(config.loc("optimizer")),
        groups=tuple((name, op.value) for name, op in loop.groups().items()),
        instance=loop.model.root_reference.data,
        label_classes=_model_classes(module, loop) if loop.loss_target is None else None,
        fsdp_blocks=tuple(b.data for b in shard.blocks)
        if isinstance(shard, train.FsdpShardOp) else None,
        model_overrides=tuple(instance.overrides.data.items()),
        pretrained=_pretrained(module, instance),
        batch_fields=tuple(loop.field_names()),
        function_params=tuple(_function_params(module).items()),
        loss_field=loop.loss_target.data if loop.loss_target is not None else None,
        model_fields=_forward_params(module, instance) if loop.loss_target is not None else (),
    )  # fmt: skip


def _forward_params(module: ModuleOp, instance: nml.InstanceOp) -> tuple[str, ...]:
    """The parameters of the model's forward, `self` left out: over named fields, the
    fields it takes."""
    method = _forward_def(module, instance)
    return tuple(n.data for n in method.arg_names.data[1:]) if method is not None else ()


def _carry_start(op: train.CarryOp) -> str | tuple[str, ...] | None:
    """The `train.carry` op's `init`: None for `none`, its parameter path (`net.h0`), or the
    paths of a tuple of them (`(net.h0, net.c0)`)."""
    paths = initial_paths(op.init)
    if paths is None:
        return None
    return paths[0] if isinstance(op.init, StringAttr) else tuple(paths)


def _forward_inputs(module: ModuleOp, instance: nml.InstanceOp) -> int:
    """The inputs of the model's forward: its class's `forward` (convert-nml-to-torch made
    it), `self` left out."""
    method = _forward_def(module, instance)
    return len(method.arg_names) - 1 if method is not None else 1


def _forward_def(module: ModuleOp, instance: nml.InstanceOp) -> py.DefOp | None:
    """The `forward` of the model's class in the script."""
    name = instance.model.root_reference.data
    for op in script_of(module).body.block.ops:
        if isinstance(op, t.ModuleClassOp) and op.sym_name.data == name:
            for method in op.regions[0].block.ops:
                if isinstance(method, py.DefOp) and method.sym_name.data == "forward":
                    return method
    return None


def _pretrained(
    module: ModuleOp, instance: nml.InstanceOp
) -> tuple[str, tuple[tuple[Value, ...], ...]] | None:
    """The `weights` block for the trained instance: its source and rules, each as the
    script's WEIGHT_RULES writes it: (file, model or None, transposed), with `along` after
    them where the rule joins or splits."""
    for op in module.body.block.ops:
        if isinstance(op, train.WeightsOp) and op.instance.data == instance.sym_name.data:
            rules: tuple[tuple[Value, ...], ...] = tuple(
                (source, target, transposed, along or 0)
                if isinstance(source, tuple) or isinstance(target, tuple)
                else (source, target, transposed)
                for source, target, transposed, along in op.rules()
            )
            return op.source.data, rules
    return None


def _data_location(module: ModuleOp, loop: train.LoopOp) -> Attribute | None:
    data = _find(module, train.DatasetOp, loop.data.root_reference.data)
    return data.location if data is not None else None


# --- step 2: the ops -------------------------------------------------------------------------


def import_ops(plan: ScriptPlan) -> list[Operation]:
    """What the sections name, beyond what the runtime modules import themselves."""
    ops: list[Operation] = [
        py.FromImportOp("__future__", ["annotations"]),
        py.ImportOp("argparse"),
        py.ImportOp("json"),
        py.ImportOp("random"),
        py.ImportOp("sys"),
        py.ImportOp("time"),
        py.FromImportOp("dataclasses", ["dataclass", *(["field"] if plan.carries else [])]),
        *([py.FromImportOp("functools", ["partial"])] if plan.amp or plan.has("samples") else []),
        py.FromImportOp("typing", ["Any"]),
        py.ImportOp("torch"),
        py.ImportOp("torch.nn.functional", "F"),
        py.FromImportOp("torch", ["nn"]),
    ]
    if plan.distributed and not plan.sharded:
        ops.append(py.FromImportOp("torch.nn.parallel", ["DistributedDataParallel"]))
    return ops


def _train_source(loop: train.LoopOp, script: t.ScriptOp) -> str:
    """The file that holds the train block (`train_gpt.tl`, not the `gpt.nml` it imports):
    the header and `--help` name it, and the checkpoint folder is named after it."""
    span = span_of(loop)
    if span is not None and span.file.endswith(SOURCE_SUFFIXES):  # not the .mlir tl-opt read
        return PurePath(span.file).name
    return script.source.data if script.source else "the program"


def lower_loop(module: ModuleOp, loop: train.LoopOp) -> None:
    script = script_of(module)
    plan = plan_of(module, loop, _train_source(loop, script))
    block = script.body.block
    imports = import_ops(plan)
    for op in imports:
        op.location = loop.location
    before = [*imports, *header_ops(plan), *settings_ops(plan)]
    first = block.first_op
    for op in before:
        if first is None:
            block.add_op(op)
        else:
            Rewriter.insert_op(op, InsertPoint.before(first))
    for old in [op for op in block.ops if isinstance(op, t.RuntimeOp)]:
        old.detach()  # one per script: the layers' helpers join the loop's, below
        old.erase()
    after: list[Operation] = list(loss_ops(plan))
    for section in loop_sources(plan):
        after += section
    after += [t.RuntimeOp(), *guard_ops(plan.distributed)]
    for op in after:
        op.location = loop.location
        block.add_op(op)
    loop.detach()
    loop.erase()


def steps_plan_of(module: ModuleOp, loop: train.LoopOp, source: str) -> StepsPlan:
    """The plan of a block of `step` lines: the one-model plan of its data and settings, its
    models (frozen where no step names one), its parameter groups and its steps, `lr`
    defaulted from the catalogue."""
    groups = {name: op.value for name, op in loop.groups().items()}
    steps = [s for s in (step_of(op, groups) for op in loop.steps()) if s is not None]
    stepped = {name for s in steps for name in s.models}
    shards = {op.model.root_reference.data: tuple(b.data for b in op.blocks)
              for op in loop.body.block.ops if isinstance(op, train.FsdpShardOp)}  # fmt: skip
    models: list[ModelPlan] = []
    for name in loop.model_names():
        instance = _find(module, nml.InstanceOp, name)
        assert isinstance(instance, nml.InstanceOp), "check-scopes resolves the models"
        overrides = tuple(instance.overrides.data.items())
        models.append(ModelPlan(name, instance.model.root_reference.data, overrides,
                                name not in stepped, _location(instance.location),
                                shards.get(name, ()), _pretrained(module, instance)))  # fmt: skip
    base = plan_of(module, loop, source)
    planned = tuple(_step_plan(s, base) for s in steps)
    return StepsPlan(base, tuple(models), planned, tuple(groups.items()))


def _step_plan(step: Step, base: ScriptPlan) -> StepPlan:
    """A step's optimizers, each keyed by its objective (`d_loss`), or with several by the
    objective and its class (`ce.Muon`, `ce.AdamW`); each one's `lr_schedule` and
    `grad_clip`, its own or else the block's."""
    several = len(step.optimizers) > 1
    keys: list[str] = []
    optimizers: list[OptimizerPlan] = []
    for o in step.optimizers:
        key = f"{step.objective}.{o.name}" if several else step.objective
        key = key if key not in keys else f"{key}_{keys.count(key) + 1}"
        keys.append(key)
        own = dict(o.kwargs)
        torch_kwargs = tuple((k, v) for k, v in o.kwargs if k not in PER_OPTIMIZER)
        kwargs = _step_kwargs(o.name, torch_kwargs)
        plan = OptimizerPlan(key, o.name, o.args, kwargs, _location(o.loc),
                             _own_schedule(own, base), _own_clip(own, base))  # fmt: skip
        optimizers.append(plan)
    return StepPlan(
        step.objective,
        tuple(optimizers),
        step.models,
        _location(step.op.location),
        step.op.epochs(),
    )


def _own_schedule(own: dict[str, object], base: ScriptPlan) -> dict[str, Value] | None:
    """`{"name": "cosine", "warmup_steps": 100, ...}`: the optimizer's `lr_schedule`, else
    the block's; None for neither (or `none`)."""
    if "lr_schedule" in own:
        found = schedule_of(own["lr_schedule"])  # type: ignore[arg-type]
        if found is None or found[0] == "none":
            return None
        return {"name": found[0], **found[1]}  # type: ignore[dict-item]
    if base.schedule is None:
        return None
    return {"name": base.schedule, **base.schedule_kwargs}


def _own_clip(own: dict[str, object], base: ScriptPlan) -> float | None:
    clip = own.get("grad_clip", base.setting_or_none("grad_clip", float))
    return float(clip) if isinstance(clip, int | float) and not isinstance(clip, bool) else None


def _step_kwargs(optimizer: str, kwargs: tuple[tuple[str, object], ...]) -> tuple:
    named = dict(kwargs)
    spec = OPTIMIZERS.get(optimizer)
    lr = named.pop("lr", spec.default_lr if spec is not None else 0.001)
    pairs = [("lr", lr), *named.items()]
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in pairs)


def _steps_import_ops(plan: StepsPlan) -> list[Operation]:
    ddp = [py.FromImportOp("torch.nn.parallel", ["DistributedDataParallel"])]
    return [
        py.FromImportOp("__future__", ["annotations"]),
        py.ImportOp("argparse"),
        py.ImportOp("json"),
        py.ImportOp("random"),
        py.ImportOp("sys"),
        py.ImportOp("time"),
        py.FromImportOp("dataclasses", ["dataclass", *(["field"] if plan.base.carries else [])]),
        py.FromImportOp("functools", ["partial"]),
        py.FromImportOp("typing", ["Any"]),
        py.ImportOp("torch"),
        py.ImportOp("torch.nn.functional", "F"),
        py.FromImportOp("torch", ["nn"]),
        *(ddp if plan.ddp else []),
    ]


def _steps_header(plan: StepsPlan) -> list[Operation]:
    """The one-model header, naming every model the block trains and how."""
    models = " and ".join(f"`{m.name}` (`{m.model_class}`)" for m in plan.models)
    ops = header_ops(plan.base)
    for op in ops:
        if isinstance(op, py.CommentOp):
            text = op.text.data.replace(f"Trains `{plan.base.model_class}`", f"Trains {models}", 1)
            op.text = StringAttr(text)
    return ops


def lower_steps_loop(module: ModuleOp, loop: train.LoopOp) -> None:
    """A block of `step` lines: train_steps.py's sections around the models and objectives."""
    script = script_of(module)
    plan = steps_plan_of(module, loop, script.source.data if script.source else "the program")
    block = script.body.block
    before = [*_steps_import_ops(plan), *_steps_header(plan)]
    first = block.first_op
    for op in before:
        op.location = loop.location
        if first is None:
            block.add_op(op)
        else:
            Rewriter.insert_op(op, InsertPoint.before(first))
    for old in [op for op in block.ops if isinstance(op, t.RuntimeOp)]:
        old.detach()
        old.erase()
    for op in [*steps_sources(plan), t.RuntimeOp(), *guard_ops(plan.distributed)]:
        if span_of(op.location) is None:  # a section's own line stays: `# gan.tl:29`
            op.location = loop.location
        block.add_op(op)
    loop.detach()
    loop.erase()


@dataclass(frozen=True)
class ConvertTrainToTorchPass(TLPass):
    """Lowers a module's first `train.loop` to the training script; see the module docstring."""

    name = "convert-train-to-torch"
    requires = ("train-config", "infer-synthetic-data", "convert-nml-to-torch")

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A train loop or a script's statements are not lowered yet."""
        return any(isinstance(op, train.LoopOp | train.MainOp) for op in module.body.block.ops)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = loops_of(op)
        if loops and loops[0].steps():
            lower_steps_loop(op, loops[0])
        elif loops:
            lower_loop(op, loops[0])
        lower_statements(op, has_training=bool(loops))


__all__ = ["ConvertTrainToTorchPass", "plan_of"]


def _functions(module: ModuleOp) -> dict[str, int]:
    """The `.tl` file's functions (losses, metrics) and their parameter counts: by now the
    `py.def`s that convert-nml-to-torch made of them."""
    script = script_of(module)
    return {op.sym_name.data: len(op.arg_names) for op in script.body.block.ops
            if isinstance(op, py.DefOp)}  # fmt: skip


def _function_params(module: ModuleOp) -> dict[str, tuple[str, ...]]:
    """The parameters of each top-level `fn` (objectives, metrics), by name."""
    script = script_of(module)
    return {op.sym_name.data: tuple(a.data for a in op.arg_names) for op in script.body.block.ops
            if isinstance(op, py.DefOp)}  # fmt: skip


def _checkpointed_layers(blocks: Operation | None) -> list[str]:
    """The layers `activation-checkpointing` marked, or none."""
    if not isinstance(blocks, train.ActivationCheckpointOp):
        return []
    return [s.data for s in blocks.layers]
