"""The script's set-up as `py` ops: `build_scheduler` and `build_recipe`.

    def build_recipe(model: nn.Module, ctx: DistContext) -> RunRecipe:
        ...
        return RunRecipe(best=BestTracker("val_loss"), signals=StopSignals().install())

What the plan decides: the schedule with `lr_schedule`; the recipe's parts the block uses;
signal handlers only in one process; under FSDP, the `ema` copy sharded as the model is.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.passes.py_builder import PyBuilder
from tensorloom.passes.train_loop import model_ops
from tensorloom.passes.train_script import ScriptPlan

DEFINES = ("build_scheduler", "build_recipe")
"""The top-level names these take in the script (mangle-names keeps them free)."""


# --- `build_scheduler` -----------------------------------------------------------------------


def scheduler_ops(plan: ScriptPlan) -> list[Operation]:
    """`build_scheduler` (with `lr_schedule`): runtime/recipe.py's schedule as a torch one."""
    if plan.schedule is None:
        return []
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const("`lr_schedule`: runtime/recipe.py's LrSchedule, stepped once per "
                         "optimizer step."))  # fmt: skip
    schedule = body.call("lr_schedule_from", body.name("LR_SCHEDULE"),
                         steps_per_epoch=body.name("steps_per_epoch"),
                         total_steps=body.name("total_steps"),
                         base_lr=body.name("LEARNING_RATE"))  # fmt: skip
    body.assign("schedule", schedule)
    body.ret(body.call("make_lr_scheduler", body.name("optimizer"), body.name("schedule")))
    params = [("optimizer", "torch.optim.Optimizer"), ("steps_per_epoch", "int"),
              ("total_steps", "int")]  # fmt: skip
    top.def_("build_scheduler", params, body, "torch.optim.lr_scheduler.LRScheduler")
    return top.ops


# --- shared by the set-up functions -------------------------------------------------------


def _on_device(b: PyBuilder, value: SSAValue) -> SSAValue:
    """`value.to(ctx.device)`."""
    return b.method(value, "to", b.path("ctx", "device"))


def _shard(b: PyBuilder, plan: ScriptPlan, model: str) -> None:
    """`shard_model(model, FSDP_BLOCKS, ...)`: gathered in the training precision."""
    arguments = [("", b.name(model)), ("", b.name("FSDP_BLOCKS"))]
    if plan.amp:  # else the weights are gathered as they are stored, in fp32
        arguments.append(("param_dtype", b.path("plan", "autocast_dtype")))
    b.expr(b.call_with("shard_model", arguments))


# --- `build_recipe` --------------------------------------------------------------------------


def _sharded_ema(b: PyBuilder, plan: ScriptPlan) -> None:
    """Under FSDP the `ema` average is a second model sharded as the model is: each rank
    averages its own shards, with no communication."""
    b.comment("its weights take no numbers from the run")
    forked = b.call("torch.random.fork_rng", devices=b.add(py.ListOp([])))
    copy = PyBuilder()
    copy.assign("ema_copy", _on_device(copy, model_ops(copy, plan)))
    b.stmt(py.WithOp(forked, copy.ops))
    _shard(b, plan, "ema_copy")


def _recipe_parts(b: PyBuilder, plan: ScriptPlan) -> list[tuple[str, SSAValue]]:
    """`RunRecipe`'s keywords: only the parts the block uses."""
    recipe = plan.recipe
    parts: list[tuple[str, SSAValue]] = []
    if recipe.ema is not None:
        copy = [b.name("ema_copy")] if plan.sharded else []
        parts.append(("ema", b.call("ModelEMA", b.name("model"), b.name("EMA_DECAY"), *copy)))
    if recipe.early_stopping is not None:
        patience = b.call_with("EarlyStopping", [("*", b.name("EARLY_STOPPING"))])
        parts.append(("stopper", patience))
    metric = b.name("KEEP_BEST") if recipe.keep_best is not None else b.const("val_loss")
    parts.append(("best", b.call("BestTracker", metric)))
    if recipe.eval_every is not None:
        parts.append(("eval_every", b.name("EVAL_EVERY")))
    return parts


def _signals(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """SIGINT and SIGTERM stop the run at a step; several processes must stop at one step,
    so a process group installs no handlers."""
    if not plan.distributed:
        return b.method(b.call("StopSignals"), "install")
    b.comment("several processes must stop at one step: no handlers")
    b.assign("signals", b.const(None))
    install = PyBuilder()
    install.assign("signals", install.method(install.call("StopSignals"), "install"))
    b.if_(b.not_(b.path("ctx", "is_distributed")), install)
    return b.name("signals")


def build_recipe_ops(plan: ScriptPlan) -> list[Operation]:
    """`build_recipe`: a `RunRecipe` of only the parts the block uses (runtime/recipe.py):
    the best epoch (by `keep_best`'s metric, else val_loss) for the run's summary, the
    EMA, early stopping, `eval_every`, and SIGINT/SIGTERM handling in one process."""
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const("The block's recipe keys as runtime/recipe.py objects."))
    if plan.sharded and plan.recipe.ema is not None:
        _sharded_ema(body, plan)
    if plan.distributed:  # the handlers' statements first: the parts are one call
        signals = _signals(body, plan)
        parts = _recipe_parts(body, plan)
    else:
        parts = _recipe_parts(body, plan)
        signals = _signals(body, plan)
    body.ret(body.call_with("RunRecipe", [*parts, ("signals", signals)]))
    params: list[tuple[str, str | SSAValue]] = [("model", "nn.Module"), ("ctx", "DistContext")]
    if plan.sharded and plan.amp:
        params.append(("plan", "PrecisionPlan"))
    top.def_("build_recipe", params, body, "RunRecipe")
    return top.ops
