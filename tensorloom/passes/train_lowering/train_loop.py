"""The loop's driver as `py` ops: the saves, the run (`train`, `_run`), `main` and the guard.

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
counts epochs or optimizer steps (`checkpoint every N steps`). The run's epoch loop
carries the train block's location (its `# mnist.tl:35` in the source map); rank 0
logs under DDP (`log`, `_silent` on the other ranks), one process prints.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, Region, SSAValue

from tensorloom.catalogue.schedules import PER_EPOCH
from tensorloom.dialects import py
from tensorloom.dialects import torch as t
from tensorloom.passes.support.model_env import override_value
from tensorloom.passes.support.nml_to_py import attr_ops
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan
from tensorloom.passes.train_lowering.train_records import epoch_record_ops
from tensorloom.passes.train_lowering.train_step import ema_module

DEFINES = (
    "after_validation", "checkpoint_state", "save_last", "save_if_due", "train", "_run",
    "evaluate_checkpoint", "_silent", "main", "serve_requests",
)  # fmt: skip
"""The top-level names these functions take in the script (mangle-names keeps them free)."""

Params = list[tuple[str, SSAValue]]


def _trainer_params(top: PyBuilder, *rest: tuple[str, str]) -> Params:
    """`trainer: Trainer` and the named parameters after it."""
    return [("trainer", top.name("Trainer")), *((p, top.name(kind)) for p, kind in rest)]


def carry_type(b: PyBuilder) -> SSAValue:
    """`tuple[torch.Tensor, int] | None`: a cut epoch's loss sum and batches."""
    return b.optional(b.generic("tuple", "torch.Tensor", "int"))


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


def _samples(b: PyBuilder, plan: ScriptPlan) -> None:
    """`samples = sample`: every rank draws `sample(model)` (a sharded model's forward needs
    them all), the same noise each epoch; rank 0 writes the grid."""
    each = b.call("partial", b.name(plan.setting("samples", str)), b.path("trainer", "model"))
    b.assign("images", b.call("draw_samples", each, seed=b.path("args", "seed")))
    write = PyBuilder()
    write.expr(write.call("write_sample_grid", write.name("images"), write.path("args", "samples")))
    _on_rank_zero(b, plan, None, write)


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
    named = body.is_set(body.path("trainer", "checkpoint_dir"))
    _on_rank_zero(body, plan, named, save)
    if plan.distributed and not plan.sharded:
        body.expr(body.call("barrier"))
    params = [*_trainer_params(top), ("record", top.generic("dict", "str", "Any"))]
    top.def_("after_validation", params, body, top.const(None))
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
                          annotation=body.generic("dict", "str", "Any")))  # fmt: skip
    carried = PyBuilder()
    loss_sum = carried.method(carried.subscript(carried.name("carry"), carried.const(0)), "detach")
    batches = carried.subscript(carried.name("carry"), carried.const(1))
    entries = [(carried.const("loss_sum"), loss_sum), (carried.const("batches"), batches)]
    carried.assign(carried.subscript(carried.name("extra"), carried.const("carry")),
                   carried.add(py.DictOp(entries)))  # fmt: skip
    body.if_(body.is_set(body.name("carry")), carried)
    if plan.carries:  # a run resumed mid-epoch continues from them
        kept = body.subscript(body.name("extra"), body.const("carried"))
        body.assign(kept, body.path("trainer", "carried"), comment="`carry`: the values carried")
        if plan.sharded:  # each rank's own (its own streams'), gathered by every rank
            by_rank = body.subscript(body.name("extra"), body.const("carried_by_rank"))
            body.assign(by_rank, body.call("carried_by_rank", body.name("trainer")))
    if plan.sharded:  # the average's module, sharded as the model is
        ema_module(body)
    fields = ["model", "optimizer", *(["scaler"] if plan.amp else []), "scheduler", "step"]
    state = [(f, body.path("trainer", f)) for f in fields]
    state += [("loader", body.path("trainer", "train_loader")), ("extra", body.name("extra"))]
    if plan.sharded:
        state.append(("ema", body.name("ema_module")))
    body.ret(body.call("dict", **dict(state)))
    params = [*_trainer_params(top), ("carry", carry_type(top))]
    top.def_("checkpoint_state", params, body, top.generic("dict", "str", "Any"),
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
    top.def_("save_last", params, body, top.const(None))
    return top.ops


def save_if_due_ops(plan: ScriptPlan) -> list[Operation]:
    """`save_if_due`: after a complete epoch, the numbered checkpoint when one is due
    (every `checkpoint_every` epochs, or when the epoch passed a multiple of its steps),
    and after the last epoch."""
    top, body = PyBuilder(), PyBuilder()
    writer = "every rank writes its shards" if plan.sharded else "rank 0 writes"
    ending = f"; {writer}." if plan.distributed else "."
    unit = plan.setting("checkpoint_unit", str)
    body.expr(body.const(f"`checkpoint every N {unit}`, and after the last epoch{ending}"))
    body.assign("done", body.binop("+", body.name("epoch"), body.const(1)))
    if unit == "steps":  # (CHECKPOINT_EVERY is N: the block sets it)
        body.comment("`checkpoint every N steps`: saved at the end of an epoch that passes a "
                     "multiple")  # fmt: skip
        now = body.binop("//", body.path("trainer", "step"), body.name("CHECKPOINT_EVERY"))
        before = body.binop("//", body.name("start_step"), body.name("CHECKPOINT_EVERY"))
        body.assign("due", body.compare(now, ">", before))
    else:
        every = body.is_set(body.name("CHECKPOINT_EVERY"))
        multiple = body.binop("%", body.name("done"), body.name("CHECKPOINT_EVERY"))
        due = body.compare(multiple, "==", body.const(0))
        body.assign("due", body.binop("and", every, due))
    unnamed = body.compare(body.path("trainer", "checkpoint_dir"), "is", body.const(None))
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
    folder = save.path("trainer", "checkpoint_dir")
    arguments = [("", folder), ("keep", save.name("KEEP_CHECKPOINTS")),
                 ("epoch", save.name("done")), ("**", state)]  # fmt: skip
    save.expr(save.call_with(writer, arguments))
    _on_rank_zero(body, plan, None, save)
    _saved(body)
    if plan.distributed and not plan.sharded:
        body.expr(body.call("barrier"))
    params = _trainer_params(top, ("epoch", "int"), ("start_step", "int"),
                             ("args", "argparse.Namespace"))  # fmt: skip
    top.def_("save_if_due", params, body, top.const(None))
    return top.ops


def saves_ops(plan: ScriptPlan) -> list[Operation]:
    """The saves, in the script's order: `after_validation` (with `keep_best`), and under
    FSDP (whose saves are folders every rank writes) `checkpoint_state`, `save_last` and
    `save_if_due`; the other programs call runtime/trainer.py's."""
    ops = after_validation_ops(plan) if plan.has("keep_best") else []
    if not plan.sharded:
        return ops
    return [*ops, *checkpoint_state_ops(plan), *save_last_ops(plan), *save_if_due_ops(plan)]


# --- the run: `train`, `_run`, `evaluate_checkpoint` ------------------------------------------


def _log(b: PyBuilder, plan: ScriptPlan, text: SSAValue, *, stderr: bool = False) -> None:
    """`log(text)`: rank 0 prints (`log` is `_silent` elsewhere); one process prints."""
    function = "log" if plan.distributed else "print"
    stream = {"file": b.name("sys.stderr")} if stderr else {}
    b.expr(b.call(function, text, **stream))


def train_ops(plan: ScriptPlan) -> list[Operation]:
    """`train(args, ctx)`: the checks before step 1 and the folder the run saves in
    (runtime/trainer.py's `check_run`), the trainer, the run inside its recipe (the stop
    signals as they were afterwards); with DDP or FSDP no rank leaves while another still
    talks to it."""
    top, body = PyBuilder(), PyBuilder()
    main = {"main": body.path("ctx", "is_main")} if plan.distributed else {}
    checked = body.call("check_run", body.name("args"), **main)
    body.assign("checkpoint_dir", checked, comment="before step 1: what could fail later")
    body.assign("trainer", body.call("build_trainer", body.name("args"), body.name("ctx")))
    body.assign(body.path("trainer", "checkpoint_dir"), body.name("checkpoint_dir"))
    run = PyBuilder()
    code = run.call("_run", run.name("trainer"), run.name("args"), run.name("ctx"))
    body.comment("SIGINT and SIGTERM stop the run at a step's end, then are as they were")
    if not plan.distributed:
        run.ret(code)
        body.stmt(py.WithOp(body.path("trainer", "recipe"), run.ops))
        return _def_train(top, body)
    run.assign("code", code)
    body.stmt(py.WithOp(body.path("trainer", "recipe"), run.ops))
    body.comment("no rank closes its connections while another still uses them")
    body.expr(body.call("barrier"))
    body.ret(body.name("code"))
    return _def_train(top, body)


def _def_train(top: PyBuilder, body: PyBuilder) -> list[Operation]:
    params = [("args", top.name("argparse.Namespace")), ("ctx", top.name("DistContext"))]
    top.def_("train", params, body, top.name("int"))
    return top.ops


def _warnings(b: PyBuilder, plan: ScriptPlan) -> None:
    """`warn(ctx, ...)` (runtime/trainer.py): the precision plan's warning (insert-amp) and
    synthetic data's, on stderr, by rank 0."""
    sources = [b.path("trainer", "plan", "warning")] if plan.amp else []
    if plan.dataset is None:
        sources.append(b.call("synthetic_data_warning", b.path("trainer", "info")))
    if sources:
        b.expr(b.call("warn", b.name("ctx"), *sources))


def _loop_vars(loop: py.ForOp, *names: str) -> list[SSAValue]:
    for arg, name in zip(loop.body.block.args, names, strict=True):
        arg.name_hint = name
    return list(loop.body.block.args)


def _stale_files(b: PyBuilder, plan: ScriptPlan) -> None:
    """The temporary files of a checkpoint write that was cut off, removed (by rank 0)."""
    named = b.is_set(b.path("trainer", "checkpoint_dir"))
    if plan.distributed:
        named = b.binop("and", named, b.path("ctx", "is_main"))
    then = PyBuilder()
    loop = py.ForOp(then.call("clean_stale_temp_files", then.path("trainer", "checkpoint_dir")))
    (stale,) = _loop_vars(loop, "stale")
    each = PyBuilder()
    text = each.fstring("removed {}, left by a checkpoint write that was cut off", stale)
    _log(each, plan, text, stderr=True)
    loop.body.block.add_ops(each.ops)
    then.stmt(loop)
    b.if_(named, then)


def _plain_evaluation(plan: ScriptPlan) -> bool:
    """--evaluate needs no function of the program's: one process, no EMA (runtime/trainer.py's
    `evaluate_saved` loads the weights and reports)."""
    return not plan.distributed and not plan.has("ema")


def _starting_point(b: PyBuilder, plan: ScriptPlan) -> None:
    """--evaluate (and no training), --init-from, --resume."""
    evaluate = PyBuilder()
    if _plain_evaluation(plan):
        evaluated = evaluate.call("evaluate_saved", evaluate.name("trainer"),
                                  evaluate.path("args", "evaluate"),
                                  evaluate.name(plan.validation),
                                  evaluate.path("args", "metrics"))  # fmt: skip
        evaluate.expr(evaluated)
        if plan.serves:
            _serve(evaluate, plan)
        evaluate.ret(evaluate.const(0))
        b.comment("--evaluate: a checkpoint's validation metrics; no training")
    else:
        evaluate.ret(evaluate.call("evaluate_checkpoint", evaluate.name("trainer"),
                                   evaluate.name("args")))  # fmt: skip
    b.if_(b.is_set(b.path("args", "evaluate")), evaluate)
    if plan.pretrained is not None:
        _published_weights(b, plan)
    if not plan.sharded:
        b.comment("stale temporary files of a cut save, then --init-from or --resume")
        b.expr(b.call("start_run", b.name("trainer"), b.name("args")))
        if plan.distributed:
            _own_rng_resumed(b)
        return
    init = PyBuilder()
    weights, model = init.path("args", "init_from"), init.path("trainer", "model")
    if plan.sharded:
        init.comment("every rank")
        init.expr(init.call("load_sharded_weights", weights, model=model))
    else:
        device = init.path("ctx", "device")
        init.expr(init.call("load_weights", weights, model=model, map_location=device))
    started = init.fstring("starting from the weights in {}", init.path("args", "init_from"))
    _log(init, plan, started)
    b.if_(b.is_set(b.path("args", "init_from")), init)
    resume = PyBuilder()
    resume.expr(resume.call("resume", resume.name("trainer"), resume.path("args", "resume")))
    resumed = resume.fstring("resumed from {} after epoch {}", resume.path("args", "resume"),
                             resume.path("trainer", "start_epoch"))  # fmt: skip
    _log(resume, plan, resumed)
    left = {"epochs_done": resume.path("trainer", "start_epoch"),
            "epochs": resume.path("args", "epochs"), "step": resume.path("trainer", "step"),
            "max_steps": resume.path("args", "max_steps")}  # fmt: skip
    resume.expr(resume.call("check_resume_left", resume.path("args", "resume"), **left))
    b.if_(b.is_set(b.path("args", "resume")), resume)


def _own_rng_resumed(b: PyBuilder) -> None:
    """Under DDP, after `--resume` restored the save's RNG (rank 0's): each rank its own,
    `restore_rank_rng(trainer.resumed_rngs)` (on another number of ranks, rank 0's stream
    and then one of each rank's own)."""
    own = PyBuilder()
    own.expr(own.call("restore_rank_rng", own.path("trainer", "resumed_rngs")))
    b.comment("each rank resumes its own RNG stream (the save holds every rank's)")
    b.if_(b.is_set(b.path("args", "resume")), own)


def _published_weights(b: PyBuilder, plan: ScriptPlan) -> None:
    """`weights model from ...`: load them, unless --init-from or --resume brings others."""
    load = PyBuilder()
    model = load.call("unwrap_model", load.path("trainer", "model"))
    rules = load.name("WEIGHT_RULES")
    load.expr(load.call("load_pretrained", model, load.path("args", "weights"), rules))
    _log(load, plan, load.fstring("starting from the published weights in {}",
                                  load.path("args", "weights")))  # fmt: skip
    fresh = b.binop(
        "and",
        b.is_set(b.path("args", "weights")),
        b.binop("and", b.not_(b.is_set(b.path("args", "init_from"))),
                b.not_(b.is_set(b.path("args", "resume")))),
    )  # fmt: skip
    b.if_(fresh, load)


def _max_steps(b: PyBuilder, plan: ScriptPlan) -> None:
    """`max_steps`: the flag's and the block's when it sets `max_steps` (the fewer); else the
    loop reads `args.max_steps`."""
    if not plan.has("max_steps"):
        return
    limits = b.tuple_of(b.path("args", "max_steps"), b.name("MAX_STEPS"))
    given = py.ComprehensionOp("generator", limits)
    (n,) = given.body.block.args
    n.name_hint = "n"
    inner = PyBuilder()
    inner.stmt(py.YieldOp([n, inner.is_set(n)]))
    given.body.block.add_ops(inner.ops)
    b.assign("max_steps", b.call("min", b.add(given), default=b.const(None)))


def _steps_limit(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """`max_steps` where `_max_steps` named it, else `args.max_steps`."""
    if not plan.has("max_steps"):
        return b.path("args", "max_steps")
    return b.name("max_steps")


def _epoch(b: PyBuilder, plan: ScriptPlan, epoch: SSAValue) -> None:
    """One epoch of the loop: train it, time it, record and validate it, save if due."""
    b.if_(b.call("epoch_stops", b.name("trainer"), _steps_limit(b, plan)), _break())
    b.assign(b.tuple_of(b.name("start"), b.name("start_step")),
             b.tuple_of(b.call("time.perf_counter"), b.path("trainer", "step")))  # fmt: skip
    result = b.call("train_one_epoch", b.name("trainer"), epoch, _steps_limit(b, plan))
    b.assign(b.tuple_of(b.name("train_loss"), b.name("batches")), result)
    elapsed = b.call("seconds_since", b.name("start"), b.path("trainer", "ctx", "device"))
    b.assign("elapsed", elapsed, comment="queued GPU steps included")
    batches = b.call("len", b.path("trainer", "train_loader"))
    whole = b.binop("*", b.binop("//", batches, b.name("GRAD_ACCUM")), b.name("GRAD_ACCUM"))
    b.assign("complete", b.compare(b.name("batches"), "==", whole))
    cut = PyBuilder()
    kept = "last/" if plan.sharded else "last.pt"
    cut.comment(f"{kept} keeps the epoch's batches so far; no validation on the way out")
    cut.stmt(py.BreakOp())
    interrupted = b.path("trainer", "recipe", "interrupted")
    b.if_(b.binop("and", b.not_(b.name("complete")), interrupted), cut)
    b.assign("record", epoch_record_ops(b, plan))
    partial = b.add(py.DictOp([(None, b.name("record")), (b.const("partial"), b.const(True))]))
    written = b.add(py.IfExpOp(b.name("complete"), b.name("record"), partial))
    b.expr(b.method(b.name("metrics"), "write", written))
    summary = b.call("format_epoch_summary", b.name("record"), epochs=b.path("args", "epochs"))
    _log(b, plan, summary)
    if plan.has("samples"):
        _samples(b, plan)
    if plan.schedule in PER_EPOCH:
        _plateau_step(b)
    if plan.has("keep_best"):
        b.expr(b.call("after_validation", b.name("trainer"), b.name("record")))
    else:
        b.comment("the best epoch; early stopping")
        b.expr(b.method(b.path("trainer", "recipe"), "after_validation", b.name("record")))
    done = PyBuilder()
    done.assign("epochs_done", done.binop("+", done.name("epoch"), done.const(1)))
    if plan.sharded:
        names = ("trainer", "epoch", "start_step", "args")
        done.expr(done.call("save_if_due", *(done.name(n) for n in names)))
    else:
        _save_if_due(done, plan)
    b.if_(b.name("complete"), done)


def _save_if_due(b: PyBuilder, plan: ScriptPlan) -> None:
    """`save_if_due(trainer, epochs_done, start_step, every=CHECKPOINT_EVERY, ...)`
    (runtime/trainer.py; rank 0 writes, and under DDP the others wait at a `barrier()`)."""
    options = {"every": b.name("CHECKPOINT_EVERY"), "keep": b.name("KEEP_CHECKPOINTS"),
               "last": b.path("args", "epochs")}  # fmt: skip
    if plan.setting("checkpoint_unit", str) == "steps":
        options["unit"] = b.const("steps")
    if plan.distributed:
        _every_ranks_rng(b, options)
    b.expr(b.call("save_if_due", b.name("trainer"), b.name("epochs_done"), b.name("start_step"),
                  **options))  # fmt: skip
    if plan.distributed:
        b.expr(b.call("barrier"))


def _every_ranks_rng(b: PyBuilder, options: dict[str, SSAValue]) -> None:
    """Under DDP: `rngs = gather_rng_states()` (every rank calls it) for rank 0's save, as
    `rngs=rngs`: each rank draws its own noise, and resumes its own stream."""
    b.assign("rngs", b.call("gather_rng_states"), comment="every rank's RNG, gathered by all")
    options["rngs"] = b.name("rngs")


def _plateau_step(b: PyBuilder) -> None:
    """`lr_schedule = plateau`: ReduceLROnPlateau steps on the epoch's validation loss (an
    epoch that did not validate, with `val_every`, leaves it be, and so does an epoch cut
    at `--max-steps`: the run resumed from it steps it when the epoch is whole)."""
    step = PyBuilder()
    method = step.attr(step.path("trainer", "scheduler"), "step")
    step.expr(step.call(method, step.subscript(step.name("record"), step.const("val_loss"))))
    b.comment("`lr_schedule = plateau`: stepped on a whole epoch's validation loss")
    validated = b.is_set(b.subscript(b.name("record"), b.const("val_loss")))
    b.if_(b.binop("and", b.name("complete"), validated), step)


def _break() -> PyBuilder:
    b = PyBuilder()
    b.stmt(py.BreakOp())
    return b


def _run_end(b: PyBuilder, plan: ScriptPlan) -> None:
    """After the loop: last.pt, the run's summary, and an interrupted run's way back."""
    if not plan.sharded:
        _finish_run(b, plan)
        return
    b.assign("stopped", b.path("trainer", "recipe", "stop_reason"))
    b.expr(b.call("save_last", b.name("trainer"), b.name("epochs_done")))
    b.expr(b.method(b.name("metrics"), "close"))
    b.assign("seconds", b.binop("-", b.call("time.perf_counter"), b.name("started")))
    summary = b.call("format_run_summary", epochs_done=b.name("epochs_done"),
                     steps=b.path("trainer", "step"), seconds=b.name("seconds"),
                     best=b.path("trainer", "recipe", "best"),
                     checkpoint_dir=b.path("trainer", "checkpoint_dir"),
                     stopped=b.name("stopped"))  # fmt: skip
    b.assign("summary", summary)
    _log(b, plan, b.name("summary"))
    again = PyBuilder()
    where = "{}" if plan.sharded else "{}/last.pt"
    _log(again, plan, again.fstring(f"continue with --resume {where}",
                                    again.path("trainer", "checkpoint_dir")))  # fmt: skip
    again.ret(again.call("interrupted_exit_code", again.name("stopped")))
    b.if_(b.path("trainer", "recipe", "interrupted"), again)
    if plan.serves:
        _serve(b, plan)
    b.ret(b.const(0))


def _finish_run(b: PyBuilder, plan: ScriptPlan) -> None:
    """`finish_run(...)` (runtime/trainer.py: last.pt, the summary, an interrupted run's exit
    code), then the requests with the trained weights."""
    options = {"epochs_done": b.name("epochs_done"), "started": b.name("started"),
               "metrics": b.name("metrics")}  # fmt: skip
    if plan.distributed:
        _every_ranks_rng(b, options)
    finished = b.call("finish_run", b.name("trainer"), **options)
    b.assign("interrupted", finished)
    stop = PyBuilder()
    stop.ret(stop.name("interrupted"))
    b.if_(b.is_set(b.name("interrupted")), stop)
    if plan.serves:
        _serve(b, plan)
    b.ret(b.const(0))


def run_ops(plan: ScriptPlan) -> list[Operation]:
    """`_run`: the warnings, the starting point, then the epochs (the train block's line)."""
    top, body = PyBuilder(), PyBuilder()
    if plan.distributed:
        chosen = body.add(py.IfExpOp(body.path("ctx", "is_main"), body.name("print"),
                                     body.name("_silent")))  # fmt: skip
        body.assign("log", chosen)
    _warnings(body, plan)
    if plan.sharded:
        _stale_files(body, plan)
    _starting_point(body, plan)
    _max_steps(body, plan)
    options = {"enabled": body.path("ctx", "is_main")} if plan.distributed else {}
    writer = body.call("MetricsWriter", body.path("args", "metrics"), **options,
                       tensorboard=body.path("args", "tensorboard"))  # fmt: skip
    body.assign("metrics", writer)
    if plan.has("eval_every"):  # `step_validation` writes between epochs
        body.assign(body.path("trainer", "metrics"), body.name("metrics"))
    body.assign(body.tuple_of(body.name("started"), body.name("epochs_done")),
                body.tuple_of(body.call("time.perf_counter"),
                              body.path("trainer", "start_epoch")))  # fmt: skip
    epochs = body.call("range", body.path("trainer", "start_epoch"), body.path("args", "epochs"))
    loop = py.ForOp(epochs)
    (epoch,) = _loop_vars(loop, "epoch")
    if plan.loop_location is not None:
        loop.location = plan.loop_location  # the `# mnist.tl:35` of the source map
    each = PyBuilder()
    _epoch(each, plan, epoch)
    loop.body.block.add_ops(each.ops)
    body.stmt(loop)
    _run_end(body, plan)
    params = [("trainer", top.name("Trainer")), ("args", top.name("argparse.Namespace")),
              ("ctx", top.name("DistContext"))]  # fmt: skip
    top.def_("_run", params, body, top.name("int"))
    return top.ops


def evaluate_checkpoint_ops(plan: ScriptPlan) -> list[Operation]:
    """`evaluate_checkpoint`: --evaluate CHECKPOINT's validation metrics (and its EMA's),
    written to --metrics, then any --predict, --export or --generate; no training. None
    where runtime/trainer.py's does it (`_plain_evaluation`)."""
    if _plain_evaluation(plan):
        return []
    top, body = PyBuilder(), PyBuilder()
    ema = " (and of its EMA's)" if plan.has("ema") or plan.sharded else ""
    doc = (f"--evaluate CHECKPOINT: the validation metrics of its weights{ema},\n"
           "then any --predict, --export or --generate with them; no training.")  # fmt: skip
    if not plan.serves:
        doc = f"--evaluate CHECKPOINT: the validation metrics of its weights{ema}; no training."
    body.expr(body.const(doc))
    _load_evaluated(body, plan)
    epoch = body.method(body.name("state"), "get", body.const("epoch"))
    validation = body.call(plan.validation, body.name("trainer"))
    record = body.add(py.DictOp([(body.const("epoch"), epoch), (None, validation)]))
    body.assign("record", record)
    report = PyBuilder()
    report.expr(report.call("report_evaluation", report.path("args", "evaluate"),
                            report.name("record"), report.path("args", "metrics")))  # fmt: skip
    if plan.distributed:
        body.if_(body.path("trainer", "ctx", "is_main"), report)
    else:
        body.ops += report.ops
    if plan.serves:
        _serve(body, plan)
    body.ret(body.const(0))
    params = [("trainer", top.name("Trainer")), ("args", top.name("argparse.Namespace"))]
    top.def_("evaluate_checkpoint", params, body, top.name("int"))
    return top.ops


def _load_evaluated(b: PyBuilder, plan: ScriptPlan) -> None:
    """`state = load_weights(...)`: the checkpoint's weights, its EMA's into the recipe's."""
    path, model = b.path("args", "evaluate"), b.path("trainer", "model")
    if plan.sharded:
        b.comment("every rank: a sharded save, or a plain .pt")
        ema_module(b)
        b.assign("state", b.call("load_sharded_weights", path, model=model,
                                 ema=b.name("ema_module")))  # fmt: skip
    elif plan.has("ema"):
        b.assign("state", b.call("load_weights", path, model=model,
                                 ema=b.path("trainer", "recipe", "ema"),
                                 map_location=b.path("trainer", "ctx", "device")))  # fmt: skip
    else:
        device = b.path("trainer", "ctx", "device")
        b.assign("state", b.call("load_weights", path, model=model, map_location=device))
        return
    none = PyBuilder()
    none.comment("a checkpoint of a run without `ema`")
    none.assign(none.path("trainer", "recipe", "ema"), none.const(None))
    unsaved = b.compare(b.call("saved_ema_state", b.name("state")), "is", b.const(None))
    b.if_(unsaved, none)


def silent_ops() -> list[Operation]:
    """`_silent`: `log` on the ranks other than 0."""
    top, body = PyBuilder(), PyBuilder()
    body.ret(body.const(None))
    params = [("_args", "*"), ("_kwargs", "**")]
    annotations = {"_args": top.name("object"), "_kwargs": top.name("object")}
    top.stmt(py.DefOp("_silent", params, body.ops, annotations=annotations,
                      returns=top.const(None)))  # fmt: skip
    return top.ops


def run_sections(plan: ScriptPlan) -> list[Operation]:
    """`train`, `_run`, `evaluate_checkpoint` (and `_silent`, with DDP or FSDP)."""
    ops = [*train_ops(plan), *run_ops(plan), *evaluate_checkpoint_ops(plan)]
    return [*ops, *silent_ops()] if plan.distributed else ops


# --- after the run: --predict, --export, --generate ---------------------------------------------


def _plain_serving(plan: ScriptPlan) -> bool:
    """Whether --predict and --export are all the program serves, with the trained model
    itself (no EMA, one process, no published weights or --generate)."""
    special = plan.has("ema") or plan.distributed or plan.pretrained is not None
    return not (special or plan.language_model_data)


def _predict_and_export(b: PyBuilder, plan: ScriptPlan, model: SSAValue) -> None:
    """`predict_and_export(model, args, loader=trainer.val_loader, ...)` (runtime/trainer.py)."""
    served = b.call("predict_and_export", model, b.name("args"),
                    loader=b.path("trainer", "val_loader"), info=b.path("trainer", "info"),
                    device=b.path("trainer", "ctx", "device"),
                    classes=b.const(plan.classification))  # fmt: skip
    b.expr(served)


def _serve(b: PyBuilder, plan: ScriptPlan) -> None:
    """The requests with the model: `serve_requests(trainer, args)`, or for plain serving
    runtime/trainer.py's `predict_and_export` itself."""
    if _plain_serving(plan):
        _predict_and_export(b, plan, b.path("trainer", "model"))
    else:
        b.expr(b.call("serve_requests", b.name("trainer"), b.name("args")))


def serve_requests_ops(plan: ScriptPlan) -> list[Operation]:
    """`serve_requests`: --predict, --export (and --generate for language-model data) with
    the trained weights, the EMA's with `ema`; rank 0 serves, under FSDP with the weights
    every rank gathered for it. None for plain serving (`_serve`)."""
    if _plain_serving(plan):
        return []
    top, body = PyBuilder(), PyBuilder()
    generate = ", --generate" if plan.generates else ""
    ema = " (the EMA's with `ema`)" if plan.has("ema") else ""
    body.expr(body.const(f"--predict, --export{generate} with the trained weights{ema}."))
    if plan.sharded:
        _gathered_model(body, plan)
    else:
        if plan.distributed:
            body.if_(body.not_(body.path("trainer", "ctx", "is_main")), _return())
        body.assign("model", _ema_or_model(body) if plan.has("ema")
                    else body.path("trainer", "model"))  # fmt: skip
    _predict_and_export(body, plan, body.name("model"))
    if plan.pretrained is not None:
        published = PyBuilder()
        folder = published.call("export_pretrained", published.name("model"),
                                published.path("args", "export_weights"),
                                published.name("WEIGHT_RULES"),
                                source=published.path("args", "weights"))  # fmt: skip
        published.assign("folder", folder)
        published.expr(
            published.call("print", published.fstring("wrote {}", published.name("folder")))
        )
        body.if_(body.is_set(body.path("args", "export_weights")), published)
    if plan.generates:
        body.if_(body.is_set(body.path("args", "generate")), _generate())
    top.def_("serve_requests", _trainer_params(top, ("args", "argparse.Namespace")), body, None)
    return top.ops


def _return() -> PyBuilder:
    b = PyBuilder()
    b.ret()
    return b


def _ema_or_model(b: PyBuilder) -> SSAValue:
    """`trainer.recipe.ema.module if trainer.recipe.ema is not None else trainer.model`."""
    averaging = b.is_set(b.path("trainer", "recipe", "ema"))
    averaged = b.path("trainer", "recipe", "ema", "module")
    return b.add(py.IfExpOp(averaging, averaged, b.path("trainer", "model")))


def _gathered_model(b: PyBuilder, plan: ScriptPlan) -> None:
    """FSDP: every rank gives its shards to rank 0's unsharded copy, which serves alone."""
    flags = ["predict", "export", *(["generate"] if plan.generates else []),
             *(["export_weights"] if plan.pretrained is not None else [])]  # fmt: skip
    unasked = b.compare(b.path("args", flags[0]), "is", b.const(None))
    for flag in flags[1:]:
        unasked = b.binop("and", unasked, b.compare(b.path("args", flag), "is", b.const(None)))
    b.if_(unasked, _return())
    b.assign("sharded", _ema_or_model(b))
    b.comment("every rank: rank 0's copy gathers the shards")
    b.assign("unsharded", model_ops(b, plan))
    if plan.lora is not None:  # the copy takes the adapters' weights too
        b.expr(b.call_with("add_lora", [("", b.name("unsharded")), ("**", b.name("LORA"))]))
    copy = b.method(b.name("unsharded"), "to", b.path("trainer", "ctx", "device"))
    b.assign("whole", b.call("whole_model", b.name("sharded"), copy))
    b.comment("not rank 0")
    b.if_(b.compare(b.name("whole"), "is", b.const(None)), _return())
    b.assign("model", b.name("whole"))


def _generate() -> PyBuilder:
    """--generate PROMPT: text sampled from the language model."""
    b = PyBuilder()
    b.assign("block_size", b.subscript(b.name("DATASET_OPTIONS"), b.const("block_size")))
    text = b.call("generate_text", b.name("model"), b.path("args", "generate"),
                  tokens=b.path("args", "tokens"), block_size=b.name("block_size"),
                  temperature=b.path("args", "temperature"), top_k=b.path("args", "top_k"),
                  seed=b.path("args", "seed"))  # fmt: skip
    b.assign("text", text)
    b.expr(b.call("print", b.name("text")))
    return b


# --- the entry point: `main` and the `__main__` guard ------------------------------------------


def _user_errors(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """The run-time errors that are the user's to fix (a missing dataset or device, a bad
    checkpoint or input, published weights absent or unlike the model): one line on
    stderr, exit 1."""
    data = plan.data_error
    serving = ["PredictInputError", "ExportError"] if plan.serves else []
    names = [data, "DeviceUnavailable", "CheckpointError", "RunLengthError", *serving,
             *(["ShardedCheckpointError"] if plan.sharded else []),
             *(["StepsCheckpointError"] if plan.sharded and plan.carries else []),
             *(["WeightsError"] if plan.pretrained is not None else [])]  # fmt: skip
    return b.tuple_of(*(b.name(n) for n in names))


def _context(b: PyBuilder, plan: ScriptPlan) -> None:
    """`ctx = ...`: the process group (DDP, FSDP) or one process."""
    device = b.path("args", "device")
    if plan.sharded:
        b.comment("FSDP needs a group")
        b.assign("ctx", b.call("setup_distributed", device, group_of_one=b.const(True)))
    elif plan.distributed:
        b.assign("ctx", b.call("setup_distributed", device))
    else:
        process = [b.const(0), b.const(0), b.const(1), b.call("resolve_device", device)]
        b.assign("ctx", b.call("DistContext", *process), comment="one process")


def _consolidate(b: PyBuilder, plan: ScriptPlan) -> None:
    """--consolidate DIR OUT.pt (FSDP): one process, no group; DCP reads every shard."""
    then = PyBuilder()
    pair = then.tuple_of(then.name("folder"), then.name("output"))
    then.assign(pair, then.path("args", "consolidate"))
    model = model_ops(then, plan)
    written = then.call("consolidate_checkpoint", then.name("folder"), then.name("output"),
                        model=model)  # fmt: skip
    then.assign("written", written)
    text = then.fstring("wrote the weights of {} to {}", then.name("folder"), then.name("written"))
    then.expr(then.call("print", text))
    then.ret(then.const(0))
    b.comment("one process, no group: DCP reads every shard")
    b.if_(b.is_set(b.path("args", "consolidate")), then)


Fill = Callable[[PyBuilder, SSAValue], None]


def _handler(kind: SSAValue, fill: Fill) -> tuple[SSAValue, Region]:
    """`except kind as error:` and its statements, which `fill` writes."""
    region = py.single_block([], 1)
    (error,) = region.block.args
    error.name_hint = "error"
    b = PyBuilder()
    fill(b, error)
    region.block.add_ops(b.ops)
    return kind, region


def _user_error(b: PyBuilder, error: SSAValue) -> None:
    b.expr(b.call("print", b.fstring("error: {}", error), file=b.name("sys.stderr")))
    b.ret(b.const(1))


def _bug(b: PyBuilder, error: SSAValue) -> None:
    b.comment("a bug's traceback, with the .tl/.nml lines it passed")
    b.expr(b.call("add_source_notes", error, b.name("__file__")))
    b.stmt(py.RaiseOp())


def main_ops(plan: ScriptPlan) -> list[Operation]:
    """`main(argv=None)`: parse, set up, train; a user's error is one line and exit 1, a
    bug is a traceback with the .tl/.nml lines it passed (runtime/source_map.py)."""
    top, body = PyBuilder(), PyBuilder()
    body.assign("args", body.call("parse_args", body.name("argv")))
    run = PyBuilder()
    if plan.sharded:
        _consolidate(run, plan)
    _context(run, plan)
    run.ret(run.call("train", run.name("args"), run.name("ctx")))
    user = _handler(_user_errors(body, plan), _user_error)
    bug = _handler(body.name("Exception"), _bug)
    teardown = PyBuilder()
    if plan.distributed:
        teardown.expr(teardown.call("teardown_distributed"))
    body.stmt(py.TryOp(run.ops, [user, bug], finalbody=teardown.ops))
    argv = top.optional(top.generic("list", "str"))
    top.stmt(py.DefOp("main", ["argv"], body.ops, defaults={"argv": top.const(None)},
                      annotations={"argv": argv}, returns=top.name("int")))  # fmt: skip
    return top.ops


def guard_ops(distributed: bool) -> list[Operation]:
    """`if __name__ == "__main__": sys.exit(main())`: importing the script runs nothing. A
    script that joins a process group leaves through `exit_process(main())` instead, which
    skips the interpreter's teardown, where torch's gloo can abort a finished run."""
    b = PyBuilder()
    b.expr(b.call("exit_process" if distributed else "sys.exit", b.call("main")))
    return [t.MainOp(b.ops)]


def model_ops(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """`Classifier(hidden=128)`: the model with the instance's overrides."""
    overrides: dict[str, SSAValue] = {}
    for name, attr in plan.model_overrides:
        value = override_value(attr)
        if value is not None:
            overrides[name] = b.value(value)  # type: ignore[arg-type]
            continue
        ops = attr_ops(attr)
        b.ops += ops
        overrides[name] = ops[-1].results[0]
    return b.call(plan.model_class, **overrides)
