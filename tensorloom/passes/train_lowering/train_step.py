"""The training step as `py` ops: one micro-batch's forward and backward, and the update.

    def _forward_backward(trainer: Trainer, xb: torch.Tensor, yb: torch.Tensor, sync: bool):
        \"\"\"Accumulate one micro-batch's gradients.\"\"\"
        with autocast(trainer.plan, trainer.ctx.device):      # insert-amp's marker
            loss = trainer.train_model(xb, yb)                 # BatchLoss: forward and loss
        scaled = loss / GRAD_ACCUM                            # `grad_accum` > 1
        if trainer.scaler is not None:                        # insert-amp's marker
            scaled = trainer.scaler.scale(scaled)
        scaled.backward()
        return loss.detach()

    def _optimizer_step(trainer: Trainer) -> None:
        ...  clip (`grad_clip`), step (through the GradScaler with insert-amp's marker),
        ...  zero_grad, the schedule's step (`lr_schedule`), trainer.step += 1

Each part is there only when the plan asks for it: the autocast and GradScaler code
when insert-amp ran, DDP's `no_sync` when insert-ddp did, the CUDA-graph step mark
for compile mode "reduce-overhead", clipping, accumulation and the scheduler for the
train block's `grad_clip`, `grad_accum` and `lr_schedule` (its `train.config`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue

from tensorloom.catalogue.schedules import PER_EPOCH
from tensorloom.dialects import py
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan, batch_loop

DEFINES = (
    "_forward_backward", "_optimizer_step", "evaluate", "_evaluate_whole", "train_one_epoch",
    "loss_fn", "_as_float_target", "_resume_extra", "BatchLoss", "resume",
)  # fmt: skip
"""The top-level names these functions take in the script (mangle-names keeps them free)."""


def _backward(b: PyBuilder, plan: ScriptPlan) -> None:
    """`scaled.backward()`: the loss, divided over the micro-batches, through the scaler."""
    loss = b.name("loss")
    accumulates = plan.setting("grad_accum", int) != 1
    divided = b.binop("/", loss, b.name("GRAD_ACCUM")) if accumulates else loss
    if not plan.amp:
        b.expr(b.method(divided, "backward"))
        return
    b.assign("scaled", divided)
    then = PyBuilder()
    then.assign("scaled", then.method(then.path("trainer", "scaler"), "scale", then.name("scaled")))
    b.stmt(py.IfOp(b.is_set(b.path("trainer", "scaler")), then.ops))
    b.expr(b.method(b.name("scaled"), "backward"))


def _loss(b: PyBuilder, plan: ScriptPlan, model: tuple[str, ...]) -> None:
    """`loss = ...` (`model` is the path of the module to call), under autocast when
    insert-amp ran."""
    inner = PyBuilder()
    module = inner.name(model[0])
    for part in model[1:]:
        module = inner.attr(module, part)
    batch = [inner.name(n) for n in plan.batch_names]  # xb, yb; or the batch's fields
    carried = [inner.name(c) for c in plan.carries]
    if plan.distributed and plan.carries:  # each rank carries its own streams' values
        results = inner.tuple_of(inner.name("loss"), *(inner.name(c) for c in plan.carries))
        inner.assign(results, inner.call("loss_fn", module, *batch, *carried))
    elif plan.distributed and plan.has("objective"):  # the objective calls the DDP model
        inner.assign("loss", inner.call("loss_fn", module, *batch))
    elif plan.distributed:  # DDP wraps the model: the loss is computed beside it
        output = inner.call(module, *(inner.name(n) for n in plan.model_inputs))
        targets = [inner.name(n) for n in plan.loss_targets]
        inner.assign("loss", inner.call("loss_fn", output, *targets))
    elif plan.carries:  # BatchLoss returns the loss and the values carried to the next batch
        results = inner.tuple_of(inner.name("loss"), *(inner.name(c) for c in plan.carries))
        inner.assign(results, inner.call(module, *batch, *carried))
    else:  # BatchLoss: the forward and the loss, compiled together
        inner.assign("loss", inner.call(module, *batch))
    if not plan.amp:
        b.ops += inner.ops
        return
    precision = b.path("trainer", "plan")
    device = b.path("trainer", "ctx", "device")
    b.stmt(py.WithOp(b.call("autocast", precision, device), inner.ops))


def under_autocast(b: PyBuilder, inner: PyBuilder, plan: ScriptPlan) -> None:
    """`inner`'s statements into `b`, in a `with autocast(trainer.plan, device):` where
    insert-amp planned mixed precision; an evaluation's loss runs in fp32 inside it."""
    if not plan.amp:
        b.ops += inner.ops
        return
    b.comment("the loss runs in fp32 under autocast")
    manager = b.call("autocast", b.path("trainer", "plan"), b.name("device"))
    b.stmt(py.WithOp(manager, inner.ops))


def forward_backward_ops(plan: ScriptPlan) -> list[Operation]:
    """`_forward_backward`: one micro-batch's loss and gradients (DDP all-reduces them
    only on the last micro-batch of a step)."""
    top = PyBuilder()
    body = PyBuilder()
    if plan.distributed:
        body.expr(body.const("Accumulate one micro-batch's gradients; DDP all-reduces only on "
                             "the last one."))  # fmt: skip
        body.assign("model", body.path("trainer", "train_model"))
    else:
        body.expr(body.const("Accumulate one micro-batch's gradients."))
    if plan.cuda_graphs:
        body.expr(body.call("mark_step_begin", body.name("trainer")))
    if plan.distributed:
        _take_carried(body, plan)
        scope = PyBuilder()
        _loss(scope, plan, ("model",))
        _keep_carried(scope, plan)
        _backward(scope, plan)
        manager = body.call("gradient_sync", body.name("model"), body.name("sync"))
        body.stmt(py.WithOp(manager, scope.ops))
    else:
        _take_carried(body, plan)
        _loss(body, plan, ("trainer", "train_model"))
        _keep_carried(body, plan)
        _backward(body, plan)
    body.ret(body.method(body.name("loss"), "detach"))
    tensors = [(n, "torch.Tensor") for n in plan.batch_names]
    params = [("trainer", "Trainer"), *tensors]
    if plan.distributed:  # whether DDP all-reduces this micro-batch's gradients
        params.append(("sync", "bool"))
    top.def_("_forward_backward", params, body, "torch.Tensor")
    return top.ops


def _carried_entry(b: PyBuilder, name: str) -> SSAValue:
    """`trainer.carried["state"]`."""
    return b.subscript(b.path("trainer", "carried"), b.const(name))


def _take_carried(b: PyBuilder, plan: ScriptPlan) -> None:
    """`state = trainer.carried["state"]`: what the previous batch left (`carry state`)."""
    for name in plan.carries:
        b.assign(name, _carried_entry(b, name))


def _keep_carried(b: PyBuilder, plan: ScriptPlan) -> None:
    """`trainer.carried["state"] = detached(state)`: kept for the next batch without this
    batch's graph, so its backward stops at its first token (main.py's `repackage_hidden`)."""
    if not plan.carries:
        return
    b.comment("the next batch starts from these, detached: backpropagation stops here")
    for name in plan.carries:
        b.assign(_carried_entry(b, name), b.call("detached", b.name(name)))


def reset_carried(
    b: PyBuilder, plan: ScriptPlan, target: SSAValue, model: Callable[[], SSAValue] | None = None
) -> None:
    """`target = {"state": None}`: each carried value's initial value: `none`, or a learned
    one, the parameters of `model()` (`trainer.model` unless given) it names, as they are
    (the epoch's first batch backpropagates into them)."""
    entries = [(b.const(name), carry_start(b, plan, name, model)) for name in plan.carries]
    b.assign(target, b.add(py.DictOp(entries)))


def carry_start(
    b: PyBuilder, plan: ScriptPlan, name: str, model: Callable[[], SSAValue] | None = None,
    owner: Callable[[str], SSAValue] | None = None,
) -> SSAValue:  # fmt: skip
    """`None`, or `trainer.model.h0`, or `(trainer.model.h0, trainer.model.c0)`: what the
    carried value `name` starts from. `owner(instance)` gives a block model of `step` lines."""
    start = plan.carry_start(name)
    if start is None:
        return b.const(None)

    def parameter(path: str) -> SSAValue:
        instance, _, attr = path.partition(".")
        if owner is not None:
            return b.attr(owner(instance), attr)
        return b.attr(model() if model is not None else b.path("trainer", "model"), attr)

    if isinstance(start, str):
        return parameter(start)
    return b.add(py.TupleOp([parameter(p) for p in start]))


def optimizer_step_ops(plan: ScriptPlan) -> list[Operation]:
    """`_optimizer_step`: clip, step (through the GradScaler), zero the gradients."""
    top, body = PyBuilder(), PyBuilder()
    clip = plan.has("grad_clip")
    if plan.amp:
        pair = body.add(py.TupleOp([body.name("optimizer"), body.name("scaler")]))
        values = body.add(
            py.TupleOp([body.path("trainer", "optimizer"), body.path("trainer", "scaler")])
        )
        body.assign(pair, values)
    else:
        body.assign("optimizer", body.path("trainer", "optimizer"))
    if plan.amp and clip:  # clip the true gradients, not the scaled ones
        then = PyBuilder()
        then.expr(then.method(then.name("scaler"), "unscale_", then.name("optimizer")))
        body.stmt(py.IfOp(body.is_set(body.name("scaler")), then.ops))
    if clip:
        parameters = body.method(body.path("trainer", "model"), "parameters")
        body.expr(body.call("torch.nn.utils.clip_grad_norm_", parameters, body.name("GRAD_CLIP")))
    if plan.amp:
        then, orelse = PyBuilder(), PyBuilder()
        then.expr(then.method(then.name("scaler"), "step", then.name("optimizer")))
        then.expr(then.method(then.name("scaler"), "update"))
        orelse.expr(orelse.method(orelse.name("optimizer"), "step"))
        body.stmt(py.IfOp(body.is_set(body.name("scaler")), then.ops, orelse.ops))
    else:
        body.expr(body.method(body.name("optimizer"), "step"))
    body.expr(body.method(body.name("optimizer"), "zero_grad", set_to_none=body.const(True)))
    if plan.schedule is not None and plan.schedule not in PER_EPOCH:
        body.expr(body.method(body.path("trainer", "scheduler"), "step"))
    body.stmt(py.AugAssignOp("+=", body.path("trainer", "step"), body.const(1)))
    top.def_("_optimizer_step", [("trainer", "Trainer")], body, None)
    return top.ops


def _loop_vars(loop: py.ForOp, *names: str) -> list[SSAValue]:
    for arg, name in zip(loop.body.block.args, names, strict=True):
        arg.name_hint = name
    return list(loop.body.block.args)


def evaluate_ops(plan: ScriptPlan, name: str = "evaluate") -> list[Operation]:
    """`evaluate(trainer)` (and `model=None` with `ema` or FSDP): the validation loss (and
    accuracy, for a classification loss) over the whole split, summed across ranks with
    insert-ddp's marker, under autocast with insert-amp's. Under FSDP it is
    `_evaluate_whole`, which the script's `evaluate` calls with the weights gathered."""
    classify = plan.classification
    top, body = PyBuilder(), PyBuilder()
    if classify:
        body.expr(body.const("Validation loss and accuracy over the whole split, summed across "
                             "ranks."))  # fmt: skip
    else:
        body.expr(body.const("Validation loss over the whole split, summed exactly across "
                             "ranks; no accuracy."))  # fmt: skip
    takes_model = plan.has("ema") or plan.sharded  # the EMA's, the gathered one
    if takes_model:
        unset = PyBuilder()
        unset.assign("model", unset.path("trainer", "eval_model"))
        body.stmt(py.IfOp(body.add(py.CompareOp("is", [body.name("model"), body.const(None)])),
                          unset.ops))  # fmt: skip
    else:
        body.assign("model", body.path("trainer", "eval_model"))
    body.assign("device", body.path("trainer", "ctx", "device"))
    body.expr(body.method(body.name("model"), "eval"))
    sums = ["loss_sum", "correct", "count"] if classify else ["loss_sum", "count"]
    body.comment(", ".join(["loss sum", "correct predictions", "targets"] if classify
                           else ["loss sum", "output elements"]))  # fmt: skip
    zeros = body.call("torch.zeros", body.const(len(sums)), device=body.name("device"))
    body.assign("totals", zeros)
    loop = batch_loop(body.path("trainer", "val_loader"), plan)
    batch = dict(zip(plan.batch_names, _loop_vars(loop, *plan.batch_names), strict=True))
    yb = batch[plan.target_name]
    each = PyBuilder()
    if plan.cuda_graphs:
        each.expr(each.call("mark_step_begin", each.name("trainer")))
    inner = PyBuilder()
    output = "logits" if classify else "output"
    inner.assign(output, inner.call(inner.name("model"), *(batch[n] for n in plan.model_inputs)))
    loss = inner.call("loss_fn", inner.name(output), yb, reduction=inner.const("sum"))
    inner.stmt(py.AugAssignOp("+=", inner.subscript(inner.name("totals"), inner.const(0)), loss))
    under_autocast(each, inner, plan)
    if classify:
        each.assign("flat_y", each.method(yb, "flatten"))
        flat = each.method(each.name("logits"), "flatten", each.const(0), each.const(-2))
        predicted = each.method(flat, "argmax", dim=each.const(-1))
        hits = each.add(py.CompareOp("==", [predicted, each.name("flat_y")]))
        correct = each.method(hits, "sum")
        each.stmt(py.AugAssignOp("+=", each.subscript(each.name("totals"), each.const(1)),
                                 correct))  # fmt: skip
        counted = each.method(each.name("flat_y"), "numel")
        each.stmt(py.AugAssignOp("+=", each.subscript(each.name("totals"), each.const(2)),
                                 counted))  # fmt: skip
    else:
        counted = each.method(each.name("output"), "numel")
        each.stmt(py.AugAssignOp("+=", each.subscript(each.name("totals"), each.const(1)),
                                 counted))  # fmt: skip
    loop.body.block.add_ops(each.ops)
    body.stmt(loop)
    totals = body.name("totals")
    if plan.distributed:
        totals = body.call("all_reduce_sum", totals)
    targets = body.add(py.TupleOp([body.name(n) for n in sums]))
    body.assign(targets, body.method(totals, "tolist"))

    def mean(b: PyBuilder, total: str) -> SSAValue:
        return b.binop("/", b.name(total), b.call("max", b.name("count"), b.const(1)))

    loss_mean = mean(body, "loss_sum")
    second = mean(body, "correct") if classify else body.const(None)
    record = plan.evaluate_records  # the record itself: no `validation_record` in the program
    if record:
        entries = [(body.const("val_loss"), loss_mean), (body.const("val_accuracy"), second)]
        body.ret(body.add(py.DictOp(entries)))
    else:
        body.stmt(py.ReturnOp([loss_mean, second]))

    def returns(b: PyBuilder) -> SSAValue:
        return b.generic("dict" if record else "tuple", "str" if record else "float",
                         b.optional("float"))  # fmt: skip

    evaluate_def(top, name, body, returns, takes_model=takes_model)
    return top.ops


def evaluate_def(
    top: PyBuilder,
    name: str,
    body: PyBuilder,
    returns: Callable[[PyBuilder], SSAValue],
    *,
    takes_model: bool = True,
    no_grad: bool = True,
) -> None:
    """`@torch.no_grad() def name(trainer: Trainer, model: nn.Module | None = None) -> R:`,
    an evaluation of the trainer's model or of one given (the EMA's, the gathered one).
    `returns` builds R after the decorator and the parameters, as Python evaluates them."""
    decorators = [top.call("torch.no_grad")] if no_grad else []
    params: list[tuple[str, str | SSAValue]] = [("trainer", "Trainer")]
    defaults: dict[str, SSAValue] = {}
    if takes_model:  # Python's order: the default, then the annotations
        defaults["model"] = top.const(None)
        params.append(("model", top.optional("nn.Module")))
    top.def_(name, params, body, returns(top), defaults=defaults or None, decorators=decorators)


def train_one_epoch_ops(plan: ScriptPlan) -> list[Operation]:
    """`train_one_epoch`: the loop over runtime/trainer.py's `epoch_batches` (a resumed epoch
    skips the batches it had trained; --max-steps, early stopping or a signal end it at a
    step's end), an optimizer step after each GRAD_ACCUM micro-batches; `end_epoch` keeps a
    cut epoch's loss sum and batch count."""
    top, body = PyBuilder(), PyBuilder()
    top.comment("---- the epoch ----")
    body.expr(body.const("The epoch's mean loss (on the device, not yet synced) and its "
                         "number of batches."))  # fmt: skip
    if plan.whole_step_graph:
        _graphed_epoch(body, plan)
    body.expr(body.method(body.path("trainer", "train_model"), "train"))
    pair = body.add(py.TupleOp([body.name("loss_sum"), body.name("batches")]))
    body.assign(pair, body.call("carried", body.name("trainer")),
                comment="a resumed epoch's, else nothing yet")  # fmt: skip
    if plan.carries:
        fresh = PyBuilder()
        reset_carried(fresh, plan, fresh.path("trainer", "carried"))
        body.comment("a new epoch starts the carried values over; a resumed one keeps its own")
        body.if_(body.not_(body.name("batches")), fresh)
    accum = {"grad_accum": body.name("GRAD_ACCUM")} if plan.setting("grad_accum", int) != 1 else {}
    batches = body.call("epoch_batches", body.name("trainer"), body.name("epoch"),
                        body.name("max_steps"), skip=body.name("batches"), **accum)  # fmt: skip
    loop = batch_loop(batches, plan)
    batch = _loop_vars(loop, *plan.batch_names)
    each = PyBuilder()
    if plan.setting("grad_accum", int) != 1:
        following = each.binop("+", each.name("batches"), each.const(1))
        remainder = each.binop("%", following, each.name("GRAD_ACCUM"))
        last = each.add(py.CompareOp("==", [remainder, each.const(0)]))
        each.assign("last_micro_batch", last)
        sync = each.name("last_micro_batch")
    else:
        sync = each.const(True)
    synced = {"sync": sync} if plan.distributed else {}
    step_loss = each.call("_forward_backward", each.name("trainer"), *batch, **synced)
    each.stmt(py.AugAssignOp("+=", each.name("loss_sum"), step_loss))
    each.stmt(py.AugAssignOp("+=", each.name("batches"), each.const(1)))
    after = PyBuilder()
    after.expr(after.call("_optimizer_step", after.name("trainer")))
    _after_step(after, plan)
    if plan.setting("grad_accum", int) != 1:
        each.stmt(py.IfOp(each.name("last_micro_batch"), after.ops))
    else:
        each.ops += after.ops
    loop.body.block.add_ops(each.ops)
    body.stmt(loop)
    ended = body.call("end_epoch", body.name("trainer"), body.name("loss_sum"),
                      body.name("batches"), **accum)  # fmt: skip
    body.ret(ended)
    params = [("trainer", "Trainer"), ("epoch", "int"), ("max_steps", top.optional("int"))]
    top.def_("train_one_epoch", params, body, top.generic("tuple", "torch.Tensor", "int"))
    return top.ops


def _after_step(after: PyBuilder, plan: ScriptPlan) -> None:
    """After an optimizer step: `log_every`'s line, the EMA's update and `eval_every`'s
    validation, when the block sets them."""
    if plan.has("log_every"):
        due = after.binop("%", after.path("trainer", "step"), after.name("LOG_EVERY"))
        due = after.add(py.CompareOp("==", [due, after.const(0)]))
        due = after.binop("and", due, after.path("trainer", "ctx", "is_main"))
        line = PyBuilder()
        mean = line.binop("/", line.method(line.name("loss_sum"), "item"), line.name("batches"))
        text = line.add(py.FStringOp("step {}  mean loss so far {:.4f}",
                                     [line.path("trainer", "step"), mean]))  # fmt: skip
        line.expr(line.call("print", text))
        after.stmt(py.IfOp(due, line.ops))
    if not plan.has("ema") and not plan.has("eval_every"):
        return
    after_step = after.attr(after.path("trainer", "recipe"), "after_step")
    validate = after.call(after_step, after.path("trainer", "model"), after.path("trainer", "step"))
    if plan.has("eval_every"):  # the EMA's update, then whether to validate
        then = PyBuilder()
        then.expr(then.call("step_validation", then.name("trainer"), then.name("epoch")))
        after.stmt(py.IfOp(validate, then.ops))
    else:  # the EMA's update
        after.expr(validate)


def _graphed_epoch(b: PyBuilder, plan: ScriptPlan) -> None:
    """`return train_epoch_graphed(...)` (runtime/trainer.py) when the step is captured whole
    and the epoch is not a resumed cut one; the capture's forward under the precision plan's
    autocast (without its cache) with insert-amp's marker."""
    b.comment("a resumed cut epoch runs uncaptured")
    uncut = b.add(py.CompareOp("is", [b.path("trainer", "carry"), b.const(None)]))
    captured = b.binop("and", b.path("trainer", "whole_step"), uncut)
    then = PyBuilder()
    arguments = [then.name("trainer"), then.name("epoch"), then.name("max_steps")]
    if plan.amp:
        device = then.path("trainer", "ctx", "device")
        region = then.call("partial", then.name("autocast"), then.path("trainer", "plan"), device,
                           cache=then.const(False))  # fmt: skip
        arguments.append(region)
    then.ret(then.call("train_epoch_graphed", *arguments))
    b.stmt(py.IfOp(captured, then.ops))


def gathered_evaluate_ops() -> list[Operation]:
    """`evaluate` under FSDP: `_evaluate_whole` (evaluate_ops') with every rank holding the
    whole weights."""
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const(
        "Validation with every rank holding the whole weights (the model's, or the EMA's):\n"
        "ranks may see different numbers of batches, and a sharded forward would wait on\n"
        "the others' all-gathers."
    ))  # fmt: skip
    unset = body.add(py.CompareOp("is", [body.name("model"), body.const(None)]))
    which = body.add(py.IfExpOp(unset, body.path("trainer", "model"), body.name("model")))
    inner = PyBuilder()
    inner.ret(inner.call("_evaluate_whole", inner.name("trainer"), inner.name("model")))
    body.stmt(py.WithOp(body.call("gathered_parameters", which), inner.ops))
    evaluate_def(top, "evaluate", body, lambda b: b.name("Any"), no_grad=False)
    return top.ops


# --- the loss ---------------------------------------------------------------------------------

LOSS_FUNCTIONS = {
    "CrossEntropy": "F.cross_entropy",
    "NLL": "F.nll_loss",
    "MSE": "F.mse_loss",
    "L1": "F.l1_loss",
    "SmoothL1": "F.smooth_l1_loss",
    "Huber": "F.huber_loss",
    "BCE": "F.binary_cross_entropy",
    "BCEWithLogits": "F.binary_cross_entropy_with_logits",
}
TENSOR_KWARGS = ("weight", "pos_weight")
"""A catalogue loss's arguments that torch takes as tensors on the output's device."""


def loss_ops(plan: ScriptPlan) -> list[Operation]:
    """`loss_fn(output, target, reduction)`: the block's `loss` (a catalogue loss, its
    arguments, and the `.tl` line in the source map), or the `fn` of the file it names;
    regression losses get `_as_float_target` (class labels as one-hot targets)."""
    top, body = PyBuilder(), PyBuilder()
    if plan.has("objective"):
        return _objective_ops(plan)
    if plan.custom_loss is not None:
        return _custom_loss_ops(plan)
    written = f"`loss = {plan.setting('loss', str)}`"
    args = dict(plan.loss_kwargs)
    if plan.classification:
        body.expr(body.const(f"{written}; per-token outputs [B, T, C] are flattened to [B*T, C]."))
        flat = body.add(py.TupleOp([
            body.method(body.name("output"), "flatten", body.const(0), body.const(-2)),
            body.method(body.name("target"), "flatten"),
        ]))  # fmt: skip
        body.assign(body.add(py.TupleOp([body.name("output"), body.name("target")])), flat)
    else:
        body.expr(body.const(f"{written}; class labels become one-hot targets of the output's "
                             "shape."))  # fmt: skip
        float_target = body.call("_as_float_target", body.name("output"), body.name("target"))
        body.assign("target", float_target)
    keywords: dict[str, SSAValue] = {}
    for key, value in plan.loss_kwargs:
        if key == "reduction":
            continue
        given = _literal(body, value)
        if key in TENSOR_KWARGS:
            device = body.attr(body.name("output"), "device")
            given = body.call("torch.tensor", given, device=device)
            given.name_hint = key
        keywords[key] = given
    keywords["reduction"] = body.name("reduction")
    function = LOSS_FUNCTIONS[plan.setting("loss", str)]
    result = body.call(function, body.name("output"), body.name("target"), **keywords)
    if any(key in TENSOR_KWARGS for key in keywords):
        result.name_hint = "loss"  # a long call: `loss = F.cross_entropy(...)`, then returned
    returned = py.ReturnOp([result])
    if plan.loss_location is not None:
        returned.location = plan.loss_location  # the `# mnist.tl:38` of the source map
    body.stmt(returned)
    tensor = "torch.Tensor"
    annotations = {"output": top.name(tensor), "target": top.name(tensor),
                   "reduction": top.name("str")}  # fmt: skip
    default = top.const(str(args.get("reduction", "mean")))
    top.stmt(py.DefOp("loss_fn", ["output", "target", "reduction"], body.ops,
                      defaults={"reduction": default}, annotations=annotations,
                      returns=top.name(tensor)))  # fmt: skip
    if not plan.classification:
        top.ops += _as_float_target_ops()
    return top.ops


def _as_float_target_ops() -> list[Operation]:
    top, body = PyBuilder(), PyBuilder()
    target = body.name("target")
    floating = body.add(py.UnaryOp("not", body.method(target, "is_floating_point")))
    one_less = body.binop("-", body.method(body.name("output"), "dim"), body.const(1))
    labels = body.add(py.CompareOp("==", [body.method(body.name("target"), "dim"), one_less]))
    then = PyBuilder()
    classes = then.subscript(then.attr(then.name("output"), "shape"), then.const(-1))
    then.assign("target", then.call("F.one_hot", then.name("target"), classes))
    body.stmt(py.IfOp(body.binop("and", floating, labels), then.ops))
    dtype = body.attr(body.name("output"), "dtype")
    body.ret(body.method(body.name("target"), "to", dtype))
    top.def_("_as_float_target", [("output", "torch.Tensor"), ("target", "torch.Tensor")],
         body, "torch.Tensor")  # fmt: skip
    return top.ops


def _custom_loss_ops(plan: ScriptPlan) -> list[Operation]:
    name = plan.custom_loss
    assert name is not None
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const(f"`loss = {name}`: the function `{name}` of {plan.source}, above."))
    params = ["output", "inputs", "target"] if name in plan.takes_inputs else ["output", "target"]
    returned = py.ReturnOp([body.call(name, *(body.name(p) for p in params))])
    if plan.loss_location is not None:
        returned.location = plan.loss_location
    body.stmt(returned)
    top.def_("loss_fn", [(p, "torch.Tensor") for p in params], body, "torch.Tensor")
    return top.ops


def _objective_ops(plan: ScriptPlan) -> list[Operation]:
    """`loss_fn(model, inputs, target)`: the objective, which calls the model itself; over
    named fields, `loss_fn(model, image, text)`, each batch's fields (`objective` takes its
    own, by name)."""
    name = plan.setting("objective", str)
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const(f"`objective = {name}`: the function `{name}` of {plan.source}, above."))
    batch = list(plan.batch_names) if plan.batch_fields else ["inputs", "target"]
    taken = plan.batch_arguments(name) if plan.batch_fields else batch
    carried = [body.name(c) for c in plan.carries]
    returned = py.ReturnOp([body.call(name, body.name("model"), *(body.name(p) for p in taken),
                                      *carried)])  # fmt: skip
    if plan.loss_location is not None:
        returned.location = plan.loss_location
    body.stmt(returned)
    types = [("model", "nn.Module"), *((p, "torch.Tensor") for p in batch),
             *((c, "Any") for c in plan.carries)]  # fmt: skip
    result = top.generic("tuple", "torch.Tensor", "Any") if plan.carries else "torch.Tensor"
    top.def_("loss_fn", types, body, result)
    return top.ops


def _literal(b: PyBuilder, value: object) -> SSAValue:
    """A train-block value (a number, string, bool or a list of them) as py ops."""
    if isinstance(value, list | tuple):  # `weight = [1.0, 2.0]` is a tuple, as torch takes it
        return b.add(py.TupleOp([_literal(b, v) for v in value]))
    assert value is None or isinstance(value, int | float | str), value
    return b.const(value)


# --- small helpers of the loop --------------------------------------------------------------


_RESUME_DOCS = {
    "plain": "Continue where a checkpoint left off: weights, optimizer, scaler, schedule, RNG,\n"
             "the recipe's state (EMA, early stopping, best) and, mid-epoch, the epoch's batches.",
    "sharded": "Continue from a sharded save (or the newest complete one in a folder), on any "
               "world size:\nweights, optimizer, scaler, schedule, RNG, the recipe's state (the "
               "EMA's shards too)\nand, mid-epoch, the epoch's batches.",
    "graph": "Continue where a checkpoint left off: weights, optimizer, scaler, schedule, RNG.",
}  # fmt: skip


def resume_ops(plan: ScriptPlan) -> list[Operation]:
    """`resume(trainer, path)`: a checkpoint's state into the trainer (a sharded save's under
    FSDP, on any world size); a whole-step graph's optimizer keeps this run's modes."""
    top, body = PyBuilder(), PyBuilder()
    kind = "sharded" if plan.sharded else "graph" if plan.whole_step_graph else "plain"
    doc = _RESUME_DOCS[kind]
    body.expr(body.const(doc if plan.amp else doc.replace(" scaler,", "")))
    if plan.whole_step_graph:
        modes = body.call("optimizer_modes", body.path("trainer", "optimizer"))
        body.assign("modes", modes, comment="capturable or fused: this run decides")
    body.assign("state", _load_checkpoint(body, plan))
    if plan.whole_step_graph:
        body.expr(body.call("restore_optimizer_modes", body.path("trainer", "optimizer"),
                            body.name("modes")))  # fmt: skip
    body.expr(body.call("_resume_extra", body.name("trainer"), body.name("state")))
    top.def_("resume", [("trainer", "Trainer"), ("path", "str")], body, None)
    return top.ops


def _load_checkpoint(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """`load_checkpoint(path, model=..., ...)`: the scaler only with insert-amp's marker; under
    FSDP `load_sharded_checkpoint`, which restores the EMA's shards too."""
    path = b.name("path")
    if plan.sharded:
        ema_module(b)
    fields = ["model", "optimizer", *(["scaler"] if plan.amp else []), "scheduler"]
    state = [(f, b.path("trainer", f)) for f in fields]
    state.append(("loader", b.path("trainer", "train_loader")))
    if plan.sharded:
        state.append(("ema", b.name("ema_module")))
        return b.call("load_sharded_checkpoint", path, **dict(state))
    state.append(("map_location", b.path("trainer", "ctx", "device")))
    return b.call("load_checkpoint", path, **dict(state))


def ema_module(b: PyBuilder) -> None:
    """`ema_module = ema.module if ema is not None else None` of `ema = trainer.recipe.ema`:
    the EMA's model, which a sharded save or load takes beside the model's."""
    b.assign("ema", b.path("trainer", "recipe", "ema"))
    module = b.add(py.IfExpOp(b.is_set(b.name("ema")), b.attr(b.name("ema"), "module"),
                              b.const(None)))  # fmt: skip
    b.assign("ema_module", module)


def resume_extra_ops(plan: ScriptPlan) -> list[Operation]:
    """`_resume_extra(trainer, state)`: the position, the recipe's state and a cut epoch's
    carry, which every `resume` reads from its checkpoint."""
    top, body = PyBuilder(), PyBuilder()
    state = body.name("state")
    positions = body.add(
        py.TupleOp([body.path("trainer", "start_epoch"), body.path("trainer", "step")])
    )
    epoch = body.subscript(state, body.const("epoch"))
    step = body.subscript(body.name("state"), body.const("step"))
    saved = body.add(py.TupleOp([epoch, step]))
    body.assign(positions, saved)
    body.assign(body.path("trainer", "saved_step"), body.path("trainer", "step"))
    body.assign("extra", body.subscript(body.name("state"), body.const("extra")))
    recipe_state = body.method(body.name("extra"), "get", body.const("recipe"),
                           body.add(py.DictOp()))  # fmt: skip
    body.expr(body.method(body.path("trainer", "recipe"), "load_state_dict", recipe_state))
    body.assign("carry", body.method(body.name("extra"), "get", body.const("carry")))
    then = PyBuilder()
    loss_sum = then.subscript(then.name("carry"), then.const("loss_sum"))
    moved = then.method(loss_sum, "to", then.path("trainer", "ctx", "device"))
    batches = then.call("int", then.subscript(then.name("carry"), then.const("batches")))
    then.assign(then.path("trainer", "carry"), then.add(py.TupleOp([moved, batches])))
    unset = body.is_set(body.name("carry"))
    body.stmt(py.IfOp(unset, then.ops))
    if plan.carries:
        body.comment("the carried values (`carry`) where the interrupted epoch left them, "
                     "this rank's own")  # fmt: skip
        ctx = body.path("trainer", "ctx")
        cut = body.is_set(body.path("trainer", "carry"))
        own = body.call("own_carried", body.name("extra"), body.attr(ctx, "rank"),
                        body.attr(ctx, "world_size"), mid_epoch=cut,
                        device=body.attr(ctx, "device"))  # fmt: skip
        body.assign(body.path("trainer", "carried"), own)
    state_type = top.generic("dict", "str", "Any")
    annotations = {"trainer": top.name("Trainer"), "state": state_type}
    top.stmt(py.DefOp("_resume_extra", ["trainer", "state"], body.ops, annotations=annotations,
                      returns=top.const(None)))  # fmt: skip
    return top.ops


def batch_loss_ops(plan: ScriptPlan) -> list[Operation]:
    """`BatchLoss`: a batch's training loss as one module, which the one-process step calls
    and compiles, and `should_compile` times (under DDP the step calls the wrapped model,
    and the loss beside it); none where runtime/trainer.py's `ModelLoss` is the loss."""
    if plan.model_loss:
        return []
    top, init, forward = PyBuilder(), PyBuilder(), PyBuilder()
    init.expr(init.method(init.call("super"), "__init__"))
    init.assign(init.attr(init.name("self"), "model"), init.name("model"))
    module = forward.attr(forward.name("self"), "model")
    batch = plan.batch_names
    if plan.has("objective"):
        carried = [forward.name(c) for c in plan.carries]
        forward.ret(forward.call("loss_fn", module, *(forward.name(n) for n in batch), *carried))
    else:
        output = forward.call(module, *(forward.name(n) for n in plan.model_inputs))
        targets = [forward.name(n) for n in plan.loss_targets]
        forward.ret(forward.call("loss_fn", output, *targets))
    body = PyBuilder()
    use = ("`should_compile` times it; the step calls the DDP-wrapped model, then the loss"
           if plan.distributed else
           "`torch.compile` of this module sees the forward and the loss together")  # fmt: skip
    loss = f"loss_fn(model({', '.join(plan.model_inputs)}), {', '.join(plan.loss_targets)})"
    if plan.has("objective"):
        loss = f"loss_fn(model, {', '.join([*batch, *plan.carries])})"  # it calls the model
    body.expr(body.const(f"The training loss of a batch, `{loss}`, as one module.\n\n{use}.\n"))
    tensor = "torch.Tensor"
    body.def_("__init__", [("self", ""), ("model", "nn.Module")], init, None)
    carried = [(c, "Any") for c in plan.carries]
    returns = body.generic("tuple", tensor, "Any") if plan.carries else tensor
    body.def_("forward", [("self", ""), *((n, tensor) for n in batch), *carried], forward,
              returns)  # fmt: skip
    top.stmt(py.ClassOp("BatchLoss", [top.name("nn.Module")], body.ops))
    return top.ops
