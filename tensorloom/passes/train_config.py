"""`train-config`: a checked train block becomes one `train.config` op, every default filled in.

    train.loop @net on @data {                 train.loop @net on @data {
      train.set "epochs" = 5 : i64       ->      train.config {epochs = 5 : i64,
      train.set "optimizer" = #nml.call<           batch_size = 64 : i64, optimizer = "Adam",
          "Adam", [], {}>                          optimizer_args = {lr = 1.000000e-03 : f64},
      train.checkpoint every 5 "epochs"            ..., checkpoint_every = 5 : i64, ...}
    }                                          }

It runs right after check-train, which reported every bad value (a value that
does not evaluate here is treated as unset). The fields, their types and defaults
are catalogue/train_keys.py's records; a key's value reaches its fields as its record
says (`TrainKey.reach`, catalogue/train_rules.py): as itself (when of the field's type
and in range), or by its rule: `Adam(lr=0.1)` becomes `optimizer` and `optimizer_args`,
an optimizer's `lr` defaulted to its record's `default_lr`, a schedule's arguments to
its record's `defaults`. This pass reads the block off the IR for the rules
(`TrainBlock`: the values, the file's `fn` names, an optimizer set's parameter groups)
and keeps no table of keys. The passes
after it (insert-amp, insert-ddp, insert-compile, activation-checkpointing) and
convert-train-to-torch read only the config op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.catalogue.train_keys import CONFIG_FIELDS, OLDER_NAMES, TRAIN_KEYS
from tensorloom.catalogue.train_rules import TrainBlock
from tensorloom.diagnostics.ir import span_of
from tensorloom.dialects import train
from tensorloom.passes.support.loss_functions import functions_of
from tensorloom.passes.support.model_env import EvalError, Evaluated, evaluate
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


def _lists(loop: train.LoopOp) -> dict[str, list[Evaluated]]:
    """The block's list values element by element, which may hold calls (`metrics =
    [accuracy, top_k(5)]`); an element that does not evaluate is None."""
    lists: dict[str, list[Evaluated]] = {}
    for key, op in loop.settings().items():
        if isinstance(op.value, ArrayAttr):
            items = [evaluate(item, {}) for item in op.value.data]
            elements = [None if isinstance(v, EvalError) else v for v in items]
            lists.setdefault(OLDER_NAMES.get(key, key), elements)
    return lists


def _parameter_groups(loop: train.LoopOp) -> Callable[[str], list[dict[str, object]] | None]:
    """A key's calls that select parameters (`optimizer = (Muon(hidden, lr=0.02), AdamW(rest,
    lr=3e-3))`): each one's name, its selections as plain data, and its keywords."""

    def entries(key: str) -> list[dict[str, object]] | None:
        op = loop.settings().get(key)
        calls = optimizer_set(op.value) if op is not None else None
        if not calls:
            return None
        groups = {name: g.value for name, g in loop.groups().items()}
        found = [optimizer_of(call, None, groups) for call in calls]
        return [
            {"name": optimizer.name,
             "args": [{"select": encode(a.selection), "options": dict(a.options)}
                      for a in optimizer.args],
             "kwargs": {k: tuple(v) if isinstance(v, list) else v for k, v in optimizer.kwargs}}  # type: ignore[misc]
            for optimizer in found
            if optimizer is not None
        ]  # fmt: skip

    return entries


def config_fields(module: ModuleOp, loop: train.LoopOp) -> dict[str, object]:
    """Every config field of `loop`, as Python values: each key's record's default, then the
    block's value as the record says it reaches the field (`TrainKey.reach`)."""
    functions = frozenset(functions_of(module))
    block = TrainBlock(_values(loop), _lists(loop), functions, _parameter_groups(loop))
    fields: dict[str, object] = {f.name: f.default for f in CONFIG_FIELDS}
    fields.pop("optimizer_set")  # left out unless the block has one: train.config's only such
    for key in TRAIN_KEYS:
        if key.older_name_of is None:
            key.reach(key, block, fields)
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
