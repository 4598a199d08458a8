"""`train-config`: a checked train block becomes one `train.config` op, every default filled in.

    train.loop @net on @data {                 train.loop @net on @data {
      train.set "epochs" = 5 : i64       ->      train.config {epochs = 5 : i64,
      train.set "optimizer" = #nml.call<           batch_size = 64 : i64, optimizer = "Adam",
          "Adam", [], {}>                          optimizer_args = {lr = 1.000000e-03 : f64},
      train.checkpoint every 5 "epochs"            ..., checkpoint_every = 5 : i64, ...}
    }                                          }

It runs right after check-train, which reported every bad value (a value that
does not evaluate here is treated as unset). The fields, their types and defaults
are catalogue/train_keys.py's records; a key's value reaches its field as itself
(when of the field's type and in range) unless its record names one of the rules
below (`_RULES`): `Adam(lr=0.1)` becomes `optimizer` and `optimizer_args`. An
optimizer's `lr` defaults to its record's `default_lr`, a schedule's arguments to
its record's `defaults`. The passes
after it (insert-amp, insert-ddp, insert-compile, activation-checkpointing) and
convert-train-to-torch read only the config op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.catalogue.optimizers import OPTIMIZERS
from tensorloom.catalogue.schedules import LENGTH_TWINS, SCHEDULES
from tensorloom.catalogue.train_keys import (
    CONFIG_FIELDS,
    EARLY_STOPPING_DEFAULTS,
    KEYS,
    LORA_DEFAULTS,
    OLDER_NAMES,
    TRAIN_KEYS,
    TrainKey,
)
from tensorloom.diagnostics.ir import span_of
from tensorloom.dialects import train
from tensorloom.passes.support.loss_functions import MetricProblem, functions_of, metrics_of
from tensorloom.passes.support.model_env import CallValue, EvalError, Evaluated, evaluate
from tensorloom.passes.support.objectives import optimizer_of, optimizer_set
from tensorloom.passes.support.param_groups import encode
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.train_values import loops_of


def _values(loop: train.LoopOp) -> dict[str, Evaluated]:
    """The block's settings as Python values, older key names under their newer ones."""
    values: dict[str, Evaluated] = {}
    for key, op in loop.settings().items():
        value = evaluate(op.value, {})
        if not isinstance(value, EvalError):
            values.setdefault(OLDER_NAMES.get(key, key), value)
    return values


def _call(value: Evaluated | None) -> CallValue | None:
    if isinstance(value, CallValue):
        return value
    return CallValue(value) if isinstance(value, str) else None


def _kwargs(call: CallValue) -> dict[str, object]:
    named = list(call.kwargs) + ([("lr", call.args[0])] if call.args else [])
    return {key: value for key, value in named if not isinstance(value, CallValue)}


def _number(value: Evaluated | None) -> float | None:
    usable = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if usable else None  # type: ignore[arg-type]


def _int(value: Evaluated | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _optimizer(block: Block, fields: dict[str, object]) -> None:
    """`AdamW(lr=3e-4)`: the class and its keywords, `lr` defaulted; or a set of them."""
    call = _call(block.values.get("optimizer")) or CallValue(str(fields["optimizer"]))
    spec = OPTIMIZERS.get(call.name)
    args = _kwargs(call)
    args.setdefault("lr", spec.default_lr if spec is not None else 0.001)
    fields["optimizer"], fields["optimizer_args"] = call.name, args
    _optimizer_set(block.loop, fields)


def _optimizer_set(loop: train.LoopOp, fields: dict[str, object]) -> None:
    """`optimizer = (Muon(hidden, lr=0.02), AdamW(rest, lr=3e-3))`: each optimizer, its
    selections as plain data; `optimizer` names them all (`Muon+AdamW`), and `lr` is the
    first one's (what a schedule's `min_lr` is read against)."""
    op = loop.settings().get("optimizer")
    calls = optimizer_set(op.value) if op is not None else None
    if not calls:
        return
    groups = {name: g.value for name, g in loop.groups().items()}
    entries: list[dict[str, object]] = []
    for call in calls:
        optimizer = optimizer_of(call, None, groups)
        if optimizer is None:
            continue
        spec = OPTIMIZERS.get(optimizer.name)
        kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in optimizer.kwargs}  # type: ignore[misc]
        kwargs.setdefault("lr", spec.default_lr if spec is not None else 0.001)
        args = [{"select": encode(a.selection), "options": dict(a.options)}
                for a in optimizer.args]  # fmt: skip
        entries.append({"name": optimizer.name, "args": args, "kwargs": kwargs})
    fields["optimizer_set"] = entries
    fields["optimizer"] = "+".join(str(e["name"]) for e in entries)
    fields["optimizer_args"] = {"lr": entries[0]["kwargs"]["lr"]}  # type: ignore[index]


def _schedule(value: Evaluated | None, fields: dict[str, object]) -> None:
    schedule = schedule_of(value)
    if schedule is not None:
        fields["lr_schedule"], fields["lr_schedule_args"] = schedule


def schedule_of(value: Evaluated | None) -> tuple[str, dict[str, object]] | None:
    """`cosine(warmup_steps=200)` as its name and arguments, the catalogue's defaults filled in
    (a step's optimizer's own `lr_schedule` too)."""
    call = _call(value)
    if call is None:
        return None
    args = _kwargs(call)
    spec = SCHEDULES.get(call.name)
    twins = {a: b for pair in LENGTH_TWINS for a, b in (pair, pair[::-1])}
    for name, default in spec.defaults if spec is not None else ():
        if name not in args and twins.get(name) not in args:
            args[name] = default
    return call.name, args


def _loss(module: ModuleOp, value: Evaluated | None, fields: dict[str, object]) -> None:
    call = _call(value)
    if call is None:
        return
    fields["loss"] = call.name
    if call.name in functions_of(module) and not call.args and not call.kwargs:
        fields["loss_fn"] = True
    else:
        fields["loss_args"] = _kwargs(call)


def _compile(value: Evaluated | None, fields: dict[str, object]) -> None:
    if value is None:
        return  # `auto`: compiled when the run repays it
    if value is False:
        fields["compile"] = "off"
    elif value is True or isinstance(value, str):
        fields["compile"] = "on"
        if isinstance(value, str) and value in train.COMPILE_MODES:
            fields["compile_mode"] = value


def _early_stopping(value: Evaluated | None) -> dict[str, object] | None:
    if not isinstance(value, CallValue) or not value.args:
        return None
    options = {**EARLY_STOPPING_DEFAULTS, **dict(value.kwargs)}
    delta = _number(options["min_delta"])  # type: ignore[arg-type]
    return {"patience": value.args[0], "metric": str(options["metric"]),
            "min_delta": delta if delta is not None else 0.0}  # fmt: skip


def _lora(value: Evaluated | None) -> dict[str, object] | None:
    if not isinstance(value, CallValue) or value.name != "LoRA":
        return None
    options = {**LORA_DEFAULTS, **dict(value.kwargs)}
    rank = options["rank"]
    alpha = options["alpha"] if options["alpha"] is not None else rank
    return {"rank": rank, "alpha": float(alpha), "dropout": float(options["dropout"]),  # type: ignore[arg-type]
            "targets": [str(t) for t in options["targets"]]}  # type: ignore[union-attr]  # fmt: skip


def _metrics(module: ModuleOp, loop: train.LoopOp) -> list[dict[str, object]]:
    attr = loop.setting("metrics")
    if attr is None:
        return []
    metrics = metrics_of(attr, list(functions_of(module)))
    if isinstance(metrics, MetricProblem):
        return []
    return [{"kind": m.kind, "name": m.name, "k": m.k} for m in metrics]


@dataclass(frozen=True, slots=True)
class Block:
    """A train block as train-config's rules read it: its settings as Python values (older
    key names under their newer ones)."""

    module: ModuleOp
    loop: train.LoopOp
    values: dict[str, Evaluated]


Rule = Callable[[Block, dict[str, object]], None]


def _plain(key: TrainKey, value: Evaluated | None) -> object | None:
    """The value itself, when it is of the field's type and in the record's range; else None
    (the field keeps its default)."""
    kind = key.fields[0].kind
    if kind == "bool":
        return value if isinstance(value, bool) else None
    if kind == "str":
        return value if isinstance(value, str) else None
    number = _int(value) if kind == "int" else _number(value)
    admitted = number is not None and (key.value is None or key.value.admits(number))
    return number if admitted else None


def _write_plain(key: TrainKey, block: Block, fields: dict[str, object]) -> None:
    value = _plain(key, block.values.get(key.name))
    if value is not None:
        fields[key.name] = value


def _epochs(block: Block, fields: dict[str, object]) -> None:
    _write_plain(KEYS["epochs"], block, fields)
    if "epochs" not in block.values and "max_steps" in block.values:
        fields["epochs"] = None  # as many as `max_steps` takes


def _batch_size(block: Block, fields: dict[str, object]) -> None:
    _write_plain(KEYS["batch_size"], block, fields)
    fields["batch_size_set"] = "batch_size" in block.values


def _distributed(block: Block, fields: dict[str, object]) -> None:
    strategy = block.values.get("distributed")
    fields["distributed"] = (
        "ddp" if strategy is True else strategy if strategy in ("ddp", "fsdp") else None
    )


_RULES: dict[str, Rule] = {
    "epochs": _epochs,
    "batch_size": _batch_size,
    "optimizer": _optimizer,
    "loss": lambda block, fields: _loss(block.module, block.values.get("loss"), fields),
    "distributed": _distributed,
    "compile": lambda block, fields: _compile(block.values.get("compile"), fields),
    "lr_schedule": lambda block, fields: _schedule(block.values.get("lr_schedule"), fields),
    "early_stopping": lambda block, fields: fields.update(
        early_stopping=_early_stopping(block.values.get("early_stopping"))
    ),
    "metrics": lambda block, fields: fields.update(metrics=_metrics(block.module, block.loop)),
    "freeze": lambda block, fields: _freeze(block.values.get("freeze"), fields),
    "lora": lambda block, fields: fields.update(lora=_lora(block.values.get("lora"))),
}
"""How the value of a key whose record names a rule (`TrainKey.reaches`) becomes its fields;
a plain key's value is written as it is (`_plain`). Every rule a record names is here
(tests/unit/passes/test_train_config.py)."""


def _freeze(value: Evaluated | None, fields: dict[str, object]) -> None:
    if isinstance(value, list | tuple):
        fields["freeze"] = [str(v) for v in value]


def config_fields(module: ModuleOp, loop: train.LoopOp) -> dict[str, object]:
    """Every config field of `loop`, as Python values: each key's record's default, then the
    block's value as the record says it reaches the field."""
    block = Block(module, loop, _values(loop))
    fields: dict[str, object] = {f.name: f.default for f in CONFIG_FIELDS}
    fields.pop("optimizer_set")  # left out unless the block has one: train.config's only such
    for key in TRAIN_KEYS:
        if key.older_name_of is not None:
            continue
        if key.reaches != "value":
            _RULES[key.reaches](block, fields)
        else:
            _write_plain(key, block, fields)
    policy = next((op for op in loop.body.block.ops if isinstance(op, train.CheckpointOp)), None)
    if policy is not None:
        fields["checkpoint_every"] = policy.every.value.data
        fields["checkpoint_unit"] = policy.unit.data
    return fields


def write_config(module: ModuleOp, loop: train.LoopOp) -> None:
    """Replace the loop's settings and checkpoint policy by its `train.config`."""
    if any(isinstance(op, train.ConfigOp) for op in loop.body.block.ops):
        return
    attrs: dict[str, Attribute] = {
        name: train.config_attr(value) for name, value in config_fields(module, loop).items()
    }
    locs: dict[str, Attribute] = {
        key: op.location for key, op in loop.settings().items() if span_of(op) is not None
    }
    config = train.ConfigOp(attrs, locs)
    config.location = loop.location
    block = loop.body.block
    first = block.first_op
    if first is None:
        block.add_op(config)
    else:
        Rewriter.insert_op(config, InsertPoint.before(first))
    for op in list(block.ops):
        if isinstance(op, train.SetOp | train.CheckpointOp):
            op.detach()
            op.erase()


@dataclass(frozen=True)
class TrainConfigPass(TLPass):
    """Writes each train block's `train.config`; see the module docstring."""

    name = "train-config"
    requires = ("check-train",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A train loop has no `train.config` yet."""
        return any(
            not any(isinstance(op, train.ConfigOp) for op in loop.body.block.ops)
            for loop in loops_of(module)
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            write_config(op, loop)
