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

from xdsl.ir import Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.passes.py_builder import PyBuilder
from tensorloom.passes.train_script import ScriptPlan

DEFINES = (
    "_forward_backward", "_begin_step", "_optimizer_step", "evaluate", "_evaluate_whole",
    "train_one_epoch",
)  # fmt: skip
"""The top-level names these functions take in the script (mangle-names keeps them free)."""


def _def(
    top: PyBuilder,
    name: str,
    params: list[tuple[str, str]],
    body: PyBuilder,
    returns: str | None,
) -> None:
    """`def name(p: T, ...) -> R:` with `body`, its annotations built in `top`."""
    annotations = {param: top.name(kind) for param, kind in params}
    result = top.name(returns) if returns is not None else top.const(None)
    top.stmt(py.DefOp(name, [p for p, _ in params], body.ops, annotations=annotations,
                      returns=result))  # fmt: skip


def _trainer(b: PyBuilder, *path: str) -> SSAValue:
    """`trainer.a.b`."""
    value = b.name("trainer")
    for part in path:
        value = b.attr(value, part)
    return value


def _method(
    b: PyBuilder, value: SSAValue, name: str, *args: SSAValue, **kwargs: SSAValue
) -> SSAValue:
    return b.call(b.attr(value, name), *args, **kwargs)


def _scaler_is_set(b: PyBuilder, scaler: SSAValue) -> SSAValue:
    return b.add(py.CompareOp("is not", [scaler, b.const(None)]))


def _backward(b: PyBuilder, plan: ScriptPlan) -> None:
    """`scaled.backward()`: the loss, divided over the micro-batches, through the scaler."""
    loss = b.name("loss")
    divided = b.binop("/", loss, b.name("GRAD_ACCUM")) if plan.grad_accum != 1 else loss
    if not plan.amp:
        b.expr(_method(b, divided, "backward"))
        return
    b.assign("scaled", divided)
    then = PyBuilder()
    then.assign("scaled", _method(then, _trainer(then, "scaler"), "scale", then.name("scaled")))
    b.stmt(py.IfOp(_scaler_is_set(b, _trainer(b, "scaler")), then.ops))
    b.expr(_method(b, b.name("scaled"), "backward"))


def _loss(b: PyBuilder, plan: ScriptPlan, model: tuple[str, ...]) -> None:
    """`loss = ...` (`model` is the path of the module to call), under autocast when
    insert-amp ran."""
    inner = PyBuilder()
    module = inner.name(model[0])
    for part in model[1:]:
        module = inner.attr(module, part)
    xb, yb = inner.name("xb"), inner.name("yb")
    if plan.distributed:  # DDP wraps the model: the loss is computed beside it
        output = inner.call(module, xb)
        targets = [inner.name(n.strip()) for n in plan.loss_target.split(",")]
        inner.assign("loss", inner.call("loss_fn", output, *targets))
    else:  # BatchLoss: the forward and the loss, compiled together
        inner.assign("loss", inner.call(module, xb, yb))
    if not plan.amp:
        b.ops += inner.ops
        return
    precision = _trainer(b, "plan")
    device = _trainer(b, "ctx", "device")
    b.stmt(py.WithOp(b.call("autocast", precision, device), inner.ops))


def forward_backward_ops(plan: ScriptPlan) -> list[Operation]:
    """`_forward_backward`: one micro-batch's loss and gradients (DDP all-reduces them
    only on the last micro-batch of a step)."""
    top = PyBuilder()
    body = PyBuilder()
    if plan.distributed:
        body.expr(body.const("Accumulate one micro-batch's gradients; DDP all-reduces only on "
                             "the last one."))  # fmt: skip
        body.assign("model", _trainer(body, "train_model"))
    else:
        body.expr(body.const("Accumulate one micro-batch's gradients."))
    if plan.cuda_graphs:
        body.expr(body.call("_begin_step", body.name("trainer")))
    if plan.distributed:
        scope = PyBuilder()
        _loss(scope, plan, ("model",))
        _backward(scope, plan)
        manager = body.call("gradient_sync", body.name("model"), body.name("sync"))
        body.stmt(py.WithOp(manager, scope.ops))
    else:
        _loss(body, plan, ("trainer", "train_model"))
        _backward(body, plan)
    body.ret(_method(body, body.name("loss"), "detach"))
    params = [("trainer", "Trainer"), ("xb", "torch.Tensor"), ("yb", "torch.Tensor"),
              ("sync", "bool")]  # fmt: skip
    _def(top, "_forward_backward", params, body, "torch.Tensor")
    return top.ops


def begin_step_ops() -> list[Operation]:
    """`_begin_step`: compile mode "reduce-overhead" replays CUDA graphs; mark each step."""
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const(
        'CUDA graphs (compile mode "reduce-overhead") reuse output memory: mark each step.\n\n'
        "Only a compiled model's: the call imports the compiler's machinery (seconds at "
        "start-up).\n"
    ))  # fmt: skip
    # (the script has this function only for COMPILE_MODE "reduce-overhead")
    eval_model = _trainer(body, "eval_model")
    compiled = body.add(py.CompareOp("is not", [eval_model, _trainer(body, "model")]))
    then = PyBuilder()
    then.expr(then.call("torch.compiler.cudagraph_mark_step_begin"))
    body.stmt(py.IfOp(compiled, then.ops))
    _def(top, "_begin_step", [("trainer", "Trainer")], body, None)
    return top.ops


def optimizer_step_ops(plan: ScriptPlan) -> list[Operation]:
    """`_optimizer_step`: clip, step (through the GradScaler), zero the gradients."""
    top, body = PyBuilder(), PyBuilder()
    clip = plan.grad_clip != "None"
    if plan.amp:
        pair = body.add(py.TupleOp([body.name("optimizer"), body.name("scaler")]))
        values = body.add(py.TupleOp([_trainer(body, "optimizer"), _trainer(body, "scaler")]))
        body.assign(pair, values)
    else:
        body.assign("optimizer", _trainer(body, "optimizer"))
    if plan.amp and clip:  # clip the true gradients, not the scaled ones
        then = PyBuilder()
        then.expr(_method(then, then.name("scaler"), "unscale_", then.name("optimizer")))
        body.stmt(py.IfOp(_scaler_is_set(body, body.name("scaler")), then.ops))
    if clip:
        parameters = _method(body, _trainer(body, "model"), "parameters")
        body.expr(body.call("torch.nn.utils.clip_grad_norm_", parameters, body.name("GRAD_CLIP")))
    if plan.amp:
        then, orelse = PyBuilder(), PyBuilder()
        then.expr(_method(then, then.name("scaler"), "step", then.name("optimizer")))
        then.expr(_method(then, then.name("scaler"), "update"))
        orelse.expr(_method(orelse, orelse.name("optimizer"), "step"))
        body.stmt(py.IfOp(_scaler_is_set(body, body.name("scaler")), then.ops, orelse.ops))
    else:
        body.expr(_method(body, body.name("optimizer"), "step"))
    body.expr(_method(body, body.name("optimizer"), "zero_grad", set_to_none=body.const(True)))
    if plan.schedule is not None:
        body.expr(_method(body, _trainer(body, "scheduler"), "step"))
    body.stmt(py.AugAssignOp("+=", _trainer(body, "step"), body.const(1)))
    _def(top, "_optimizer_step", [("trainer", "Trainer")], body, None)
    return top.ops


def _loop_vars(loop: py.ForOp, *names: str) -> list[SSAValue]:
    for arg, name in zip(loop.body.block.args, names, strict=True):
        arg.name_hint = name
    return list(loop.body.block.args)


def evaluate_ops(plan: ScriptPlan, name: str = "evaluate") -> list[Operation]:
    """`evaluate(trainer, model=None)`: the validation loss (and accuracy, for a
    classification loss) over the whole split, summed across ranks with insert-ddp's marker,
    under autocast with insert-amp's. Under FSDP it is `_evaluate_whole`, which the
    script's `evaluate` calls with the weights gathered."""
    classify = plan.classification
    top, body = PyBuilder(), PyBuilder()
    if classify:
        body.expr(body.const("Validation loss and accuracy over the whole split, summed across "
                             "ranks."))  # fmt: skip
    else:
        body.expr(body.const("Validation loss over the whole split, summed exactly across "
                             "ranks; no accuracy."))  # fmt: skip
    unset = PyBuilder()
    unset.assign("model", _trainer(unset, "eval_model"))
    body.stmt(py.IfOp(body.add(py.CompareOp("is", [body.name("model"), body.const(None)])),
                      unset.ops))  # fmt: skip
    body.assign("device", _trainer(body, "ctx", "device"))
    body.expr(_method(body, body.name("model"), "eval"))
    sums = ["loss_sum", "correct", "count"] if classify else ["loss_sum", "count"]
    body.comment(", ".join(["loss sum", "correct predictions", "targets"] if classify
                           else ["loss sum", "output elements"]))  # fmt: skip
    zeros = body.call("torch.zeros", body.const(len(sums)), device=body.name("device"))
    body.assign("totals", zeros)
    loop = py.ForOp(_trainer(body, "val_loader"), targets=2)
    xb, yb = _loop_vars(loop, "xb", "yb")
    each = PyBuilder()
    if plan.cuda_graphs:
        each.expr(each.call("_begin_step", each.name("trainer")))
    inner = PyBuilder()
    output = "logits" if classify else "output"
    inner.assign(output, inner.call(inner.name("model"), xb))
    loss = inner.call("loss_fn", inner.name(output), yb, reduction=inner.const("sum"))
    inner.stmt(py.AugAssignOp("+=", inner.subscript(inner.name("totals"), inner.const(0)), loss))
    if plan.amp:
        each.comment("the loss runs in fp32 under autocast")
        manager = each.call("autocast", _trainer(each, "plan"), each.name("device"))
        each.stmt(py.WithOp(manager, inner.ops))
    else:
        each.ops += inner.ops
    if classify:
        each.assign("flat_y", _method(each, yb, "flatten"))
        flat = _method(each, each.name("logits"), "flatten", each.const(0), each.const(-2))
        predicted = _method(each, flat, "argmax", dim=each.const(-1))
        hits = each.add(py.CompareOp("==", [predicted, each.name("flat_y")]))
        correct = _method(each, hits, "sum")
        each.stmt(py.AugAssignOp("+=", each.subscript(each.name("totals"), each.const(1)),
                                 correct))  # fmt: skip
        counted = _method(each, each.name("flat_y"), "numel")
        each.stmt(py.AugAssignOp("+=", each.subscript(each.name("totals"), each.const(2)),
                                 counted))  # fmt: skip
    else:
        counted = _method(each, each.name("output"), "numel")
        each.stmt(py.AugAssignOp("+=", each.subscript(each.name("totals"), each.const(1)),
                                 counted))  # fmt: skip
    loop.body.block.add_ops(each.ops)
    body.stmt(loop)
    totals = body.name("totals")
    if plan.distributed:
        totals = body.call("all_reduce_sum", totals)
    targets = body.add(py.TupleOp([body.name(n) for n in sums]))
    body.assign(targets, _method(body, totals, "tolist"))

    def mean(b: PyBuilder, total: str) -> SSAValue:
        return b.binop("/", b.name(total), b.call("max", b.name("count"), b.const(1)))

    loss_mean = mean(body, "loss_sum")
    second = mean(body, "correct") if classify else body.const(None)
    body.stmt(py.ReturnOp([loss_mean, second]))
    no_grad = top.call("torch.no_grad")
    model_type = top.binop("|", top.name("nn.Module"), top.const(None))
    returns = top.subscript(top.name("tuple"), top.name("float"),
                            top.binop("|", top.name("float"), top.const(None)))  # fmt: skip
    default = top.const(None)
    annotations = {"trainer": top.name("Trainer"), "model": model_type}
    top.stmt(py.DefOp(name, ["trainer", "model"], body.ops, defaults={"model": default},
                      annotations=annotations, returns=returns, decorators=[no_grad]))  # fmt: skip
    return top.ops


def train_one_epoch_ops(plan: ScriptPlan) -> list[Operation]:
    """`train_one_epoch`: the epoch's micro-batches, an optimizer step after each
    GRAD_ACCUM of them; a resumed epoch skips the batches it had trained, and a cut one
    (max steps, early stopping, a signal) keeps its loss sum and batch count."""
    top, body = PyBuilder(), PyBuilder()
    top.comment("---- one epoch of training, one of validation ----")
    body.expr(body.const("The epoch's mean loss (on the device, not yet synced) and its "
                         "number of batches."))  # fmt: skip
    if plan.whole_step_graph:
        body.comment("a resumed cut epoch runs uncaptured")
        whole_step = _trainer(body, "whole_step")
        uncut = body.add(py.CompareOp("is", [_trainer(body, "carry"), body.const(None)]))
        captured = body.binop("and", whole_step, uncut)
        then = PyBuilder()
        graphed = then.call("_train_one_epoch_graphed", then.name("trainer"), then.name("epoch"),
                            then.name("max_steps"))  # fmt: skip
        then.ret(graphed)
        body.stmt(py.IfOp(captured, then.ops))
    body.assign("model", _trainer(body, "train_model"))
    body.expr(_method(body, body.name("model"), "train"))
    body.expr(_method(body, _trainer(body, "train_loader"), "set_epoch", body.name("epoch")))
    pair = body.add(py.TupleOp([body.name("loss_sum"), body.name("batches")]))
    body.assign(pair, body.call("_carried", body.name("trainer")))
    body.comment("resumed mid-epoch: these were trained before the interruption")
    body.assign("skip", body.name("batches"))
    size = body.call("len", _trainer(body, "train_loader"))
    if plan.grad_accum != 1:
        accum = body.name("GRAD_ACCUM")
        size = body.binop("*", body.binop("//", size, accum), body.name("GRAD_ACCUM"))
    body.assign("batches_used", size)
    epoch_1 = body.binop("+", body.name("epoch"), body.const(1))
    body.assign("description", body.add(py.FStringOp("epoch {}", [epoch_1])))
    loader = _trainer(body, "train_loader")
    total, description = body.name("batches_used"), body.name("description")
    main = _trainer(body, "ctx", "is_main")
    bar = body.call("progress", loader, total=total, description=description, enabled=main)
    body.assign("bar", bar)
    loop = py.ForOp(body.name("bar"), targets=2)
    xb, yb = _loop_vars(loop, "xb", "yb")
    each = PyBuilder()
    skipping = PyBuilder()
    skipping.stmt(py.AugAssignOp("-=", skipping.name("skip"), skipping.const(1)))
    skipping.stmt(py.ContinueOp())
    each.stmt(py.IfOp(each.name("skip"), skipping.ops))
    full = each.add(py.CompareOp("==", [each.name("batches"), each.name("batches_used")]))
    each.stmt(py.IfOp(full, [py.BreakOp()]))
    reached = each.call("_reached", _trainer(each, "step"), each.name("max_steps"))
    each.stmt(py.IfOp(reached, [py.BreakOp()]))
    if plan.grad_accum != 1:
        following = each.binop("+", each.name("batches"), each.const(1))
        remainder = each.binop("%", following, each.name("GRAD_ACCUM"))
        last = each.add(py.CompareOp("==", [remainder, each.const(0)]))
        each.assign("last_micro_batch", last)
        sync = each.name("last_micro_batch")
    else:
        sync = each.const(True)
    step_loss = each.call("_forward_backward", each.name("trainer"), xb, yb, sync=sync)
    each.stmt(py.AugAssignOp("+=", each.name("loss_sum"), step_loss))
    each.stmt(py.AugAssignOp("+=", each.name("batches"), each.const(1)))
    after = PyBuilder()
    after.expr(after.call("_optimizer_step", after.name("trainer")))
    if plan.log_every is not None:
        due = after.binop("%", _trainer(after, "step"), after.name("LOG_EVERY"))
        due = after.add(py.CompareOp("==", [due, after.const(0)]))
        due = after.binop("and", due, _trainer(after, "ctx", "is_main"))
        line = PyBuilder()
        mean = line.binop("/", _method(line, line.name("loss_sum"), "item"), line.name("batches"))
        text = line.add(py.FStringOp("step {}  mean loss so far {:.4f}",
                                     [_trainer(line, "step"), mean]))  # fmt: skip
        line.expr(line.call("print", text))
        after.stmt(py.IfOp(due, line.ops))
    after_step = after.attr(_trainer(after, "recipe"), "after_step")
    validate = after.call(after_step, _trainer(after, "model"), _trainer(after, "step"))
    then = PyBuilder()
    then.expr(then.call("step_validation", then.name("trainer"), then.name("epoch")))
    after.stmt(py.IfOp(validate, then.ops))
    stopped = after.add(py.CompareOp("is not", [_trainer(after, "recipe", "stop_reason"),
                                                after.const(None)]))  # fmt: skip
    after.stmt(py.IfOp(stopped, [py.BreakOp()]))
    if plan.grad_accum != 1:
        each.stmt(py.IfOp(each.name("last_micro_batch"), after.ops))
    else:
        each.ops += after.ops
    loop.body.block.add_ops(each.ops)
    body.stmt(loop)
    body.comment("cut short: last.pt keeps what this epoch did so far")
    cut = body.add(py.CompareOp("<", [body.name("batches"), body.name("batches_used")]))
    keep = PyBuilder()
    kept = keep.add(py.TupleOp([keep.name("loss_sum"), keep.name("batches")]))
    keep.assign(_trainer(keep, "carry"), kept)
    body.stmt(py.IfOp(cut, keep.ops))
    mean = body.binop("/", body.name("loss_sum"), body.call("max", body.name("batches"),
                                                            body.const(1)))  # fmt: skip
    body.stmt(py.ReturnOp([mean, body.name("batches")]))
    params = [("trainer", "Trainer"), ("epoch", "int")]
    annotations = {p: top.name(kind) for p, kind in params}
    annotations["max_steps"] = top.binop("|", top.name("int"), top.const(None))
    returns = top.subscript(top.name("tuple"), top.name("torch.Tensor"), top.name("int"))
    top.stmt(py.DefOp("train_one_epoch", ["trainer", "epoch", "max_steps"], body.ops,
                      annotations=annotations, returns=returns))  # fmt: skip
    return top.ops
