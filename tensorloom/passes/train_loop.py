"""The loop's driver as `py` ops: the checkpoint saves (and, in time, `train` and `main`).

    def save_if_due(trainer: Trainer, epoch: int, start_step: int, args: Namespace) -> None:
        \"\"\"`checkpoint every N epochs`, and after the last epoch.\"\"\"
        done = epoch + 1
        due = CHECKPOINT_EVERY is not None and done % CHECKPOINT_EVERY == 0
        if args.checkpoint_dir is None or not (due or done == args.epochs):
            return
        state = checkpoint_state(trainer)
        save_epoch_checkpoint(args.checkpoint_dir, keep=KEEP_CHECKPOINTS, epoch=done, **state)
        trainer.saved_step = trainer.step

What the plan decides: rank 0 writes (and every rank waits at a `barrier()`) only
under insert-ddp's marker; an FSDP script's saves are folders that every rank writes
its shards of (runtime/sharded.py); the scaler is saved only with insert-amp's
marker; `after_validation` (best.pt) is there only with `keep_best`; the due test
counts epochs or optimizer steps (`checkpoint every N steps`).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.passes.py_builder import PyBuilder
from tensorloom.passes.train_script import ScriptPlan

DEFINES = ("after_validation", "checkpoint_state", "save_last", "save_if_due")
"""The top-level names these functions take in the script (mangle-names keeps them free)."""

Params = list[tuple[str, SSAValue]]


def _def(
    top: PyBuilder,
    name: str,
    params: Params,
    body: PyBuilder,
    returns: SSAValue,
    defaults: dict[str, SSAValue] | None = None,
) -> None:
    """`def name(p: T, ...) -> R:` with `body`; the annotations are values of `top`."""
    top.stmt(py.DefOp(name, [p for p, _ in params], body.ops, annotations=dict(params),
                      returns=returns, defaults=defaults))  # fmt: skip


def _trainer_params(top: PyBuilder, *rest: tuple[str, str]) -> Params:
    """`trainer: Trainer` and the named parameters after it."""
    return [("trainer", top.name("Trainer")), *((p, top.name(kind)) for p, kind in rest)]


def _record_type(b: PyBuilder) -> SSAValue:
    """`dict[str, Any]`."""
    return b.subscript(b.name("dict"), b.name("str"), b.name("Any"))


def _carry_type(b: PyBuilder) -> SSAValue:
    """`tuple[torch.Tensor, int] | None`: a cut epoch's loss sum and batches."""
    pair = b.subscript(b.name("tuple"), b.name("torch.Tensor"), b.name("int"))
    return b.binop("|", pair, b.const(None))


def _checkpoint_state(b: PyBuilder, *carry: SSAValue) -> SSAValue:
    return b.call("checkpoint_state", b.name("trainer"), *carry)


def _save_path(b: PyBuilder, template: str) -> SSAValue:
    """`path = f"{trainer.checkpoint_dir}/last.pt"`: named, so the save fits one line."""
    path = b.fstring(template, b.path("trainer", "checkpoint_dir"))
    path.name_hint = "path"
    return path


def _saved(b: PyBuilder) -> None:
    """`trainer.saved_step = trainer.step`: the step the newest save holds."""
    b.assign(b.path("trainer", "saved_step"), b.path("trainer", "step"))


def _on_rank_zero(
    b: PyBuilder, plan: ScriptPlan, condition: SSAValue | None, then: PyBuilder
) -> None:
    """`if trainer.ctx.is_main and condition:` under DDP, else `if condition:` (or the
    statements themselves): under FSDP every rank writes its shards."""
    if plan.distributed and not plan.sharded:
        is_main = b.path("trainer", "ctx", "is_main")
        condition = is_main if condition is None else b.binop("and", is_main, condition)
    if condition is None:
        b.ops += then.ops
    else:
        b.if_(condition, then)


def after_validation_ops(plan: ScriptPlan) -> list[Operation]:
    """`after_validation`: the recipe counts the record (early stopping, the best); a new
    best of `keep_best`'s metric saves best.pt (best/, sharded, under FSDP)."""
    top, body = PyBuilder(), PyBuilder()
    where = "best/ (sharded)" if plan.sharded else "best.pt"
    body.expr(body.const(f"Early stopping counts the record; `keep_best` saves {where} at a "
                         "new best."))  # fmt: skip
    counted = body.method(body.path("trainer", "recipe"), "after_validation", body.name("record"))
    stop = PyBuilder()
    stop.ret()
    body.if_(body.not_(counted), stop)
    save = PyBuilder()
    path = _save_path(save, "{}/best" if plan.sharded else "{}/best.pt")
    epoch = save.subscript(save.name("record"), save.const("epoch"))
    writer = "save_sharded_state" if plan.sharded else "save_checkpoint"
    state = _checkpoint_state(save)
    save.expr(save.call_with(writer, [("", path), ("epoch", epoch), ("**", state)]))
    if plan.sharded:
        body.comment("every rank: the record is the same on each")
    named = body.compare(body.path("trainer", "checkpoint_dir"), "is not", body.const(None))
    _on_rank_zero(body, plan, named, save)
    if plan.distributed and not plan.sharded:
        body.expr(body.call("barrier"))
    params = [*_trainer_params(top), ("record", _record_type(top))]
    _def(top, "after_validation", params, body, top.const(None))
    return top.ops


def checkpoint_state_ops(plan: ScriptPlan) -> list[Operation]:
    """`checkpoint_state(trainer, carry=None)`: what a save holds besides its epoch."""
    top, body = PyBuilder(), PyBuilder()
    if plan.sharded:
        body.expr(body.const("What a sharded save holds besides its epoch: `carry` is a cut "
                             "epoch's loss and\nbatches; an `ema` average is saved sharded, "
                             "beside the model."))  # fmt: skip
    else:
        body.expr(body.const("What a checkpoint holds besides its epoch: `carry` is a cut "
                             "epoch's loss and batches."))  # fmt: skip
    recipe = body.method(body.path("trainer", "recipe"), "state_dict")
    body.stmt(py.AssignOp(body.name("extra"), body.add(py.DictOp([(body.const("recipe"), recipe)])),
                          annotation=_record_type(body)))  # fmt: skip
    carried = PyBuilder()
    loss_sum = carried.method(carried.subscript(carried.name("carry"), carried.const(0)), "detach")
    batches = carried.subscript(carried.name("carry"), carried.const(1))
    entries = [(carried.const("loss_sum"), loss_sum), (carried.const("batches"), batches)]
    carried.assign(carried.subscript(carried.name("extra"), carried.const("carry")),
                   carried.add(py.DictOp(entries)))  # fmt: skip
    body.if_(body.compare(body.name("carry"), "is not", body.const(None)), carried)
    if plan.sharded:  # the average's module, sharded as the model is
        body.assign("ema", body.path("trainer", "recipe", "ema"))
        unset = body.compare(body.name("ema"), "is not", body.const(None))
        module = body.add(py.IfExpOp(unset, body.attr(body.name("ema"), "module"),
                                     body.const(None)))  # fmt: skip
        body.assign("ema_module", module)
    fields = ["model", "optimizer", *(["scaler"] if plan.amp else []), "scheduler", "step"]
    state = [(f, body.path("trainer", f)) for f in fields]
    state += [("loader", body.path("trainer", "train_loader")), ("extra", body.name("extra"))]
    if plan.sharded:
        state.append(("ema", body.name("ema_module")))
    body.ret(body.call("dict", **dict(state)))
    params = [*_trainer_params(top), ("carry", _carry_type(top))]
    _def(top, "checkpoint_state", params, body, _record_type(top),
         defaults={"carry": top.const(None)})  # fmt: skip
    return top.ops


def save_last_ops(plan: ScriptPlan) -> list[Operation]:
    """`save_last`: at the end of the run and when it is interrupted, unless the newest
    save already holds this step."""
    top, body = PyBuilder(), PyBuilder()
    where = "last/" if plan.sharded else "last.pt"
    body.expr(body.const(f"At the end of the run, and when it is interrupted: {where} holds "
                         "where it stopped."))  # fmt: skip
    unnamed = body.compare(body.path("trainer", "checkpoint_dir"), "is", body.const(None))
    saved = body.compare(body.path("trainer", "saved_step"), "==", body.path("trainer", "step"))
    stop = PyBuilder()
    stop.ret()
    body.if_(body.binop("or", unnamed, saved), stop)
    save = PyBuilder()
    path = _save_path(save, "{}/last" if plan.sharded else "{}/last.pt")
    state = _checkpoint_state(save, save.path("trainer", "carry"))
    writer = "save_sharded_state" if plan.sharded else "save_checkpoint"
    save.expr(save.call_with(writer, [("", path), ("epoch", save.name("epochs_done")),
                                      ("**", state)]))  # fmt: skip
    _on_rank_zero(body, plan, None, save)
    _saved(body)
    if plan.distributed and not plan.sharded:
        body.expr(body.call("barrier"))
    params = _trainer_params(top, ("epochs_done", "int"))
    _def(top, "save_last", params, body, top.const(None))
    return top.ops


def save_if_due_ops(plan: ScriptPlan) -> list[Operation]:
    """`save_if_due`: after a complete epoch, the numbered checkpoint when one is due
    (every `checkpoint_every` epochs, or when the epoch passed a multiple of its steps),
    and after the last epoch."""
    top, body = PyBuilder(), PyBuilder()
    writer = "every rank writes its shards" if plan.sharded else "rank 0 writes"
    ending = f"; {writer}." if plan.distributed else "."
    body.expr(body.const(f"`checkpoint every N {plan.checkpoint_unit}`, and after the last "
                         f"epoch{ending}"))  # fmt: skip
    body.assign("done", body.binop("+", body.name("epoch"), body.const(1)))
    if plan.checkpoint_unit == "steps":  # (CHECKPOINT_EVERY is N: the block sets it)
        body.comment("`checkpoint every N steps`: saved at the end of an epoch that passes a "
                     "multiple")  # fmt: skip
        now = body.binop("//", body.path("trainer", "step"), body.name("CHECKPOINT_EVERY"))
        before = body.binop("//", body.name("start_step"), body.name("CHECKPOINT_EVERY"))
        body.assign("due", body.compare(now, ">", before))
    else:
        every = body.compare(body.name("CHECKPOINT_EVERY"), "is not", body.const(None))
        multiple = body.binop("%", body.name("done"), body.name("CHECKPOINT_EVERY"))
        due = body.compare(multiple, "==", body.const(0))
        body.assign("due", body.binop("and", every, due))
    unnamed = body.compare(body.path("args", "checkpoint_dir"), "is", body.const(None))
    last = body.compare(body.name("done"), "==", body.path("args", "epochs"))
    skip = body.binop("or", unnamed, body.not_(body.binop("or", body.name("due"), last)))
    stop = PyBuilder()
    stop.ret()
    body.if_(skip, stop)
    save = PyBuilder()
    if plan.sharded:
        save.comment("every rank writes its shards; COMPLETE is written last")
    writer = "save_sharded_checkpoint" if plan.sharded else "save_epoch_checkpoint"
    state = _checkpoint_state(save)
    state.name_hint = "state"  # too wide for one line with the save
    arguments = [("", save.path("args", "checkpoint_dir")), ("keep", save.name("KEEP_CHECKPOINTS")),
                 ("epoch", save.name("done")), ("**", state)]  # fmt: skip
    save.expr(save.call_with(writer, arguments))
    _on_rank_zero(body, plan, None, save)
    _saved(body)
    if plan.distributed and not plan.sharded:
        body.expr(body.call("barrier"))
    params = _trainer_params(top, ("epoch", "int"), ("start_step", "int"),
                             ("args", "argparse.Namespace"))  # fmt: skip
    _def(top, "save_if_due", params, body, top.const(None))
    return top.ops


def saves_ops(plan: ScriptPlan) -> list[Operation]:
    """The saves, in the script's order: `after_validation` (with `keep_best`),
    `checkpoint_state`, `save_last`, `save_if_due`."""
    ops = after_validation_ops(plan) if plan.recipe.keep_best is not None else []
    return [*ops, *checkpoint_state_ops(plan), *save_last_ops(plan), *save_if_due_ops(plan)]
