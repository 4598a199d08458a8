"""The loop's records as `py` ops: validation, the epoch's record, and the metrics' evaluation.

        # the epoch's one host sync: `train_loss.item()`
        record = epoch_record(trainer, epoch + 1, train_loss.item(), evaluate(trainer),
                              batches=batches, batch_size=args.batch_size, elapsed=elapsed)

What the plan decides: validation only every VAL_EVERY epochs (and after the last)
with `val_every`; the EMA's metrics (`ema_` keys) with `ema`; `step_validation`
between epochs with `eval_every`, its best.pt through `after_validation` with
`keep_best`; the mean train loss all-reduced and rank 0 printing only under
insert-ddp's marker. A loss written in the file or `metrics = [...]` evaluates through
`batch_metrics` (a record of METRICS), else `evaluate` returns the loss and accuracy
(train_step.evaluate_ops), as the record itself where no `validation_record` is needed.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.passes.support.loss_functions import Metric
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan, batch_loop
from tensorloom.passes.train_lowering.train_step import evaluate_def, reset_carried, under_autocast

DEFINES = (
    "validation_record", "_as_record", "step_validation", "batch_metrics",
)  # fmt: skip
"""The top-level names these functions take in the script (mangle-names keeps them free)."""


def _epoch_1(b: PyBuilder) -> SSAValue:
    """`epoch + 1`: the epochs done, as the records count them."""
    return b.binop("+", b.name("epoch"), b.const(1))


# --- validation -----------------------------------------------------------------------------


def validation_record_ops(plan: ScriptPlan) -> list[Operation]:
    """`validation_record(trainer)`: the validation metrics, the EMA's too (`ema_` keys)
    with `ema` (then through `_as_record`, whatever `evaluate` returns); none where
    `evaluate` returns the record itself (`plan.evaluate_records`)."""
    if plan.evaluate_records:
        return []
    top, body, inner = PyBuilder(), PyBuilder(), PyBuilder()
    if not plan.has("ema"):
        body.expr(body.const("The validation metrics."))
        _plain_record(inner, plan)
    else:
        body.expr(body.const("The validation metrics, and the EMA weights' (`ema_` keys) when "
                             "`ema` is set."))  # fmt: skip
        _ema_record(inner)
    if plan.has("objective"):  # its draws leave the training's stream as it was
        body.comment("the objective's draws on a fork of the RNG: training continues as if")
        body.comment("validation had not run (a run cut mid-epoch resumes exactly)")
        body.stmt(py.WithOp(body.call("validation_rng"), inner.ops))
    else:
        body.ops += inner.ops
    top.def_("validation_record", [("trainer", "Trainer")], body, top.generic("dict", "str", "Any"))
    if plan.has("ema"):
        top.ops += _as_record_ops()
    return top.ops


def _plain_record(b: PyBuilder, plan: ScriptPlan) -> None:
    """`evaluate`'s record (with metrics), or its loss and accuracy as one."""
    if plan.reports_metrics:
        b.ret(b.call("evaluate", b.name("trainer")))
        return
    pair = b.tuple_of(b.name("loss"), b.name("accuracy"))
    b.assign(pair, b.call("evaluate", b.name("trainer")))
    b.ret(b.add(py.DictOp([(b.const("val_loss"), b.name("loss")),
                           (b.const("val_accuracy"), b.name("accuracy"))])))  # fmt: skip


def _ema_record(b: PyBuilder) -> None:
    """The model's record, then the EMA's under `ema_` keys (those it has a value for)."""
    b.assign("record", b.call("_as_record", b.call("evaluate", b.name("trainer"))))
    averaged = PyBuilder()
    module = averaged.path("trainer", "recipe", "ema", "module")
    evaluated = averaged.call("evaluate", averaged.name("trainer"), module)
    averaged.assign("ema", averaged.call("_as_record", evaluated))
    items = averaged.method(averaged.name("ema"), "items")
    renamed = py.ComprehensionOp("dict", items, targets=2)
    key, value = renamed.body.block.args
    key.name_hint, value.name_hint = "key", "value"
    inner = PyBuilder()
    prefixed = inner.fstring("ema_{}", key)
    inner.stmt(py.YieldOp([prefixed, value, inner.is_set(value)]))
    renamed.body.block.add_ops(inner.ops)
    averaged.expr(averaged.method(averaged.name("record"), "update", averaged.add(renamed)))
    b.if_(b.is_set(b.path("trainer", "recipe", "ema")), averaged)
    b.ret(b.name("record"))


def _as_record_ops() -> list[Operation]:
    """`_as_record(result)`: `evaluate`'s result as a record, whichever form it has."""
    top, body = PyBuilder(), PyBuilder()
    whole = PyBuilder()
    whole.ret(whole.call("dict", whole.name("result")))
    body.if_(body.call("isinstance", body.name("result"), body.name("dict")), whole)
    result = body.name("result")
    loss, accuracy = (body.subscript(result, body.const(i)) for i in (0, 1))
    body.ret(body.add(py.DictOp([(body.const("val_loss"), loss),
                                 (body.const("val_accuracy"), accuracy)])))  # fmt: skip
    pair = top.subscript(top.name("tuple"), top.name("float"),
                         top.optional("float"))  # fmt: skip
    metrics = top.generic("dict", "str", "float")
    top.def_(
        "_as_record",
        [("result", top.binop("|", pair, metrics))],
        body,
        top.generic("dict", "str", "Any"),
    )
    return top.ops


# --- the epoch's record -----------------------------------------------------------------------


def epoch_record_ops(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """`epoch_record(trainer, epoch + 1, train_loss.item(), ...)` (runtime/trainer.py): what
    the run writes after an epoch; the mean train loss (all-reduced under DDP) is the epoch's
    one host sync; validation every VAL_EVERY epochs (and after the last) with `val_every`."""
    synced_buffers(b, plan)
    if plan.setting("val_every", int) != 1:
        _due_validation(b, plan)
    b.comment("the epoch's one host sync: `train_loss.item()`")
    done = _epoch_1(b)
    loss = b.name("train_loss")
    if plan.distributed:
        loss = b.call("all_reduce_mean", loss)
    mean = b.method(loss, "item")
    if plan.setting("val_every", int) != 1:
        validation = b.name("validation")
    else:  # every epoch validates
        validation = b.call(plan.validation, b.name("trainer"))
    return b.call("epoch_record", b.name("trainer"), done, mean, validation,
                  batches=b.name("batches"), batch_size=b.path("args", "batch_size"),
                  elapsed=b.name("elapsed"))  # fmt: skip


def synced_buffers(b: PyBuilder, plan: ScriptPlan) -> None:
    """Under DDP or FSDP, before validating: `sync_buffers(trainer.model)` (and the `ema`
    average's), rank 0's buffers on every rank. Each rank's BatchNorm statistics come from
    its own batches and its own noise; the ranks validate with rank 0's, which it saves."""
    if not plan.distributed:
        return
    emas = {}
    if plan.has("ema"):
        ema = b.path("trainer", "recipe", "ema")
        emas["emas"] = b.add(py.DictOp([(b.const("ema"), ema)]))
    b.comment("every rank validates with rank 0's buffers (BatchNorm's statistics), as "
              "rank 0 saves them")  # fmt: skip
    b.expr(b.call("sync_buffers", b.path("trainer", "model"), **emas))


def _due_validation(b: PyBuilder, plan: ScriptPlan) -> None:
    """`val_every`: `validation` is the record every VAL_EVERY epochs and after the last."""
    every = b.binop("%", _epoch_1(b), b.name("VAL_EVERY"))
    multiple = b.compare(every, "==", b.const(0))
    last = b.compare(_epoch_1(b), "==", b.path("args", "epochs"))
    b.assign("due", b.binop("or", multiple, last))
    validate, skip = PyBuilder(), PyBuilder()
    validate.assign("validation", validate.call(plan.validation, validate.name("trainer")))
    skip.assign("validation", skip.add(py.DictOp([(skip.const("val_loss"), skip.const(None))])))
    b.if_(b.name("due"), validate, skip)


def step_validation_ops(plan: ScriptPlan) -> list[Operation]:
    """`step_validation` (`eval_every = N`): validation after every N optimizer steps,
    written and printed with its step, then counted by the recipe (best.pt with
    `keep_best`)."""
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const("`eval_every = N`: validation after every N optimizer steps, recorded "
                         "with its step."))  # fmt: skip
    synced_buffers(body, plan)
    record = [(body.const("epoch"), _epoch_1(body)), (body.const("steps"),
              body.path("trainer", "step")),
              (None, body.call(plan.validation, body.name("trainer")))]  # fmt: skip
    body.assign("record", body.add(py.DictOp(record)))
    body.expr(body.method(body.path("trainer", "train_model"), "train"))
    written = PyBuilder()
    written.expr(written.method(written.path("trainer", "metrics"), "write",
                                written.name("record")))  # fmt: skip
    body.if_(body.is_set(body.path("trainer", "metrics")), written)
    shown = PyBuilder()
    shown.expr(shown.call("print", shown.call("format_validation", shown.name("record"))))
    if plan.distributed:
        body.if_(body.path("trainer", "ctx", "is_main"), shown)
    else:
        body.ops += shown.ops
    if plan.has("keep_best"):
        body.expr(body.call("after_validation", body.name("trainer"), body.name("record")))
    else:  # no best.pt: the recipe counts the record itself
        body.expr(body.method(body.path("trainer", "recipe"), "after_validation",
                              body.name("record")))  # fmt: skip
    top.def_("step_validation", [("trainer", "Trainer"), ("epoch", "int")], body, None)
    return top.ops


def records_ops(plan: ScriptPlan) -> list[Operation]:
    """`validation_record` (and `_as_record`), and `step_validation` with `eval_every`, in
    the script's order."""
    ops = validation_record_ops(plan)
    return [*ops, *step_validation_ops(plan)] if plan.has("eval_every") else ops


# --- evaluation through `batch_metrics` ---------------------------------------------------------


def metrics_evaluate_ops(plan: ScriptPlan, name: str) -> list[Operation]:
    """`evaluate(trainer, model=None)` of a loss written in the file or `metrics`: the mean
    loss and METRICS over the whole split (summed across ranks under DDP), as a record;
    `_evaluate_whole` under FSDP. Then `batch_metrics`."""
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const("Validation loss and METRICS over the whole split, summed across "
                         "ranks.\n\nEach batch adds its mean times its size, so the result is "
                         "the mean over samples.\n"))  # fmt: skip
    unset = body.compare(body.name("model"), "is", body.const(None))
    chosen = body.add(py.IfExpOp(unset, body.path("trainer", "eval_model"), body.name("model")))
    body.assign("model", chosen)
    body.assign("device", body.path("trainer", "ctx", "device"))
    body.expr(body.method(body.name("model"), "eval"))
    body.comment("loss, samples, then METRICS")
    size = body.binop("+", body.const(2), body.call("len", body.name("METRICS")))
    body.assign("totals", body.call("torch.zeros", size, device=body.name("device")))
    _validation_loop(body, plan)
    _metrics_means(body, plan)
    evaluate_def(top, name, body, lambda b: b.generic("dict", "str", "float"))
    if plan.has("objective"):  # the objective calls the model: metrics do too
        return [*top.ops, *objective_metrics_ops(plan)] if plan.batch_metrics else top.ops
    return [*top.ops, *batch_metrics_ops(plan)]


def objective_metrics_ops(plan: ScriptPlan) -> list[Operation]:
    """`batch_metrics(model, inputs, target)` beside an objective: each metric `fn`, which
    calls the model as the objective does, on one batch (its fields, by name)."""
    top, body = PyBuilder(), PyBuilder()
    names = ", ".join(m.name for m in plan.batch_metrics)
    body.expr(body.const(f"`metrics = [{names}]`: each one's mean over the batch."))
    batch = list(plan.batch_names) if plan.batch_fields else ["inputs", "target"]
    values = []
    for metric in plan.batch_metrics:
        taken = plan.batch_arguments(metric.name) if plan.batch_fields else batch
        if plan.takes_carried(metric.name):  # the values the batch starts from
            taken = [*taken, *plan.carries]
        call = body.call(metric.name, body.name("model"), *(body.name(p) for p in taken))
        values.append(body.method(call, "float"))
    body.assign("means", body.add(py.ListOp(values)))
    body.ret(body.call("torch.stack", body.name("means")))
    params = [("model", "nn.Module"), *((p, "torch.Tensor") for p in batch)]
    params += [(c, "Any") for c in plan.carries]
    top.def_("batch_metrics", params, body, "torch.Tensor")
    return top.ops


def _validation_loop(b: PyBuilder, plan: ScriptPlan) -> None:
    """`for xb, yb in trainer.val_loader:` each batch's loss and metrics, times its size
    (over named fields, `for image, text in ...`)."""
    loop = batch_loop(b.path("trainer", "val_loader"), plan)
    for arg, name in zip(loop.body.block.args, plan.batch_names, strict=True):
        arg.name_hint = name
    batch = list(loop.body.block.args)
    xb = batch[0]  # its length is the batch's
    each, inner = PyBuilder(), PyBuilder()
    if plan.cuda_graphs:
        each.expr(each.call("mark_step_begin", each.name("trainer")))
    if plan.carries:  # each batch continues the last: validation starts from `none` too
        b.comment("`carry`: validation starts from the initial values, and carries them on")
        reset_carried(b, plan, b.name("carried"), lambda: b.name("model"))
    if plan.has("objective") and plan.carries:
        given = [inner.subscript(inner.name("carried"), inner.const(c)) for c in plan.carries]
        results = inner.tuple_of(inner.name("loss"), *(inner.name(c) for c in plan.carries))
        inner.assign(results, inner.call("loss_fn", inner.name("model"), *batch, *given))
        loss = inner.method(inner.name("loss"), "float")
        _add_to(inner, inner.const(0), inner.binop("*", loss, inner.call("len", xb)))
        if plan.batch_metrics:  # from the values the batch started from, as the loss
            rest = inner.add(py.SliceOp(lower=inner.const(2)))
            given = [inner.subscript(inner.name("carried"), inner.const(c)) for c in plan.carries]
            metrics = inner.call("batch_metrics", inner.name("model"), *batch, *given)
            _add_to(inner, rest, inner.binop("*", metrics, inner.call("len", xb)))
        for c in plan.carries:
            kept = inner.call("detached", inner.name(c))
            inner.assign(inner.subscript(inner.name("carried"), inner.const(c)), kept)
        under_autocast(each, inner, plan)
        _add_to(each, each.const(1), each.call("len", xb))
        loop.body.block.add_ops(each.ops)
        b.stmt(loop)
        return
    if plan.has("objective"):  # the objective calls the model, as its metrics do
        loss = inner.method(inner.call("loss_fn", inner.name("model"), *batch), "float")
        _add_to(inner, inner.const(0), inner.binop("*", loss, inner.call("len", xb)))
        if plan.batch_metrics:
            rest = inner.add(py.SliceOp(lower=inner.const(2)))
            metrics = inner.call("batch_metrics", inner.name("model"), *batch)
            _add_to(inner, rest, inner.binop("*", metrics, inner.call("len", xb)))
        under_autocast(each, inner, plan)
        _add_to(each, each.const(1), each.call("len", xb))
        loop.body.block.add_ops(each.ops)
        b.stmt(loop)
        return
    named = dict(zip(plan.batch_names, batch, strict=True))
    inputs = [named[n] for n in plan.model_inputs]
    yb = named[plan.target_name]
    inner.assign("output", inner.call(inner.name("model"), *inputs))
    targets = [named[n] for n in plan.loss_targets]
    loss = inner.method(inner.call("loss_fn", inner.name("output"), *targets), "float")
    _add_to(inner, inner.const(0), inner.binop("*", loss, inner.call("len", xb)))
    rest = inner.add(py.SliceOp(lower=inner.const(2)))  # the target's parts come first
    metrics = inner.call("batch_metrics", inner.name("output"), inputs[0], yb)
    _add_to(inner, rest, inner.binop("*", metrics, inner.call("len", xb)))
    under_autocast(each, inner, plan)
    _add_to(each, each.const(1), each.call("len", xb))
    loop.body.block.add_ops(each.ops)
    b.stmt(loop)


def _add_to(b: PyBuilder, index: SSAValue, value: SSAValue) -> None:
    """`totals[index] += value`."""
    b.stmt(py.AugAssignOp("+=", b.subscript(b.name("totals"), index), value))


def _metrics_means(b: PyBuilder, plan: ScriptPlan) -> None:
    """The sums (across ranks under DDP) divided by the samples: the record."""
    totals = b.name("totals")
    if plan.distributed:
        totals = b.call("all_reduce_sum", totals)
    b.assign("sums", b.method(totals, "tolist"))
    b.assign("count", b.call("max", b.subscript(b.name("sums"), b.const(1)), b.const(1)))
    rest = b.subscript(b.name("sums"), b.add(py.SliceOp(lower=b.const(2))))
    pairs = b.call("zip", b.name("METRICS"), rest, strict=b.const(True))
    means = py.ComprehensionOp("dict", pairs, targets=2)
    key, total = means.body.block.args
    key.name_hint, total.name_hint = "key", "total"
    inner = PyBuilder()
    inner.stmt(py.YieldOp([key, inner.binop("/", total, inner.name("count"))]))
    means.body.block.add_ops(inner.ops)
    b.assign("values", b.add(means))
    loss = b.binop("/", b.subscript(b.name("sums"), b.const(0)), b.name("count"))
    if not plan.perplexity:
        b.ret(b.add(py.DictOp([(b.const("val_loss"), loss), (None, b.name("values"))])))
        return
    b.assign("loss", loss)
    entries = [(b.const("val_loss"), b.name("loss")),
               (b.const("val_perplexity"), b.call("perplexity", b.name("loss"))),
               (None, b.name("values"))]  # fmt: skip
    b.ret(b.add(py.DictOp(entries)))


def batch_metrics_ops(plan: ScriptPlan) -> list[Operation]:
    """`batch_metrics(output, inputs, target)`: each metric's batch mean, in METRICS' order."""
    top, body = PyBuilder(), PyBuilder()
    names = ", ".join(m.name if m.kind != "top_k" else f"top_k({m.k})" for m in plan.metrics)
    body.expr(body.const(f"`metrics = [{names}]`: each one's mean over the batch."))
    if plan.batch_metrics:
        values = [_metric_call(body, plan, m) for m in plan.batch_metrics]
        body.assign("means", body.add(py.ListOp(values)))
        body.ret(body.call("torch.stack", body.name("means")))
    else:  # the output may be a tuple: the target gives the device
        zeros = body.method(body.name("target"), "new_zeros", body.const(0),
                            dtype=body.name("torch.float32"))  # fmt: skip
        body.ret(zeros)
    tensor = "torch.Tensor"
    params = [("output", tensor), ("inputs", tensor), ("target", tensor)]
    top.def_("batch_metrics", params, body, tensor)
    return top.ops


def _metric_call(b: PyBuilder, plan: ScriptPlan, metric: Metric) -> SSAValue:
    """One metric's batch mean: runtime/metrics.py's, or the `fn` of the file it names."""
    output, target = b.name("output"), b.name("target")
    if metric.kind == "accuracy":
        return b.call("batch_accuracy", output, target)
    if metric.kind == "top_k":
        return b.call("batch_top_k_accuracy", output, target, b.const(metric.k))
    inputs = [b.name("inputs")] if metric.name in plan.takes_inputs else []
    return b.method(b.call(metric.name, output, *inputs, target), "float")
