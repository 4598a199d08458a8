"""The order of a train block's script sections, each a list of `py` ops built from its plan.

    loop_sources(plan)        # [[py.def @build_loaders ...], [py.def @build_trainer ...], ...]

The sections are those of docs/emitted-script.md (golden copies in tests/e2e/reference/,
`make golden`); a section a program does not need (the lr schedule, DDP's wrap, activation
checkpointing, CUDA-graph step marks) is left out.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation

from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan
from tensorloom.passes.train_lowering.train_build import (
    build_recipe_ops,
    build_trainer_ops,
    scheduler_ops,
)
from tensorloom.passes.train_lowering.train_cli import parse_args_ops
from tensorloom.passes.train_lowering.train_data import build_loaders_ops
from tensorloom.passes.train_lowering.train_loop import (
    main_ops,
    run_sections,
    saves_ops,
    serve_requests_ops,
)
from tensorloom.passes.train_lowering.train_records import metrics_evaluate_ops, records_ops
from tensorloom.passes.train_lowering.train_step import (
    batch_loss_ops,
    evaluate_ops,
    forward_backward_ops,
    gathered_evaluate_ops,
    optimizer_step_ops,
    resume_extra_ops,
    resume_ops,
    train_one_epoch_ops,
)


def _evaluate_sections(
    plan: ScriptPlan,
    evaluate_ops: Callable[[ScriptPlan, str], list[Operation]],
    metrics_evaluate_ops: Callable[[ScriptPlan, str], list[Operation]],
    gathered_evaluate_ops: Callable[[], list[Operation]],
) -> list[list[Operation]]:
    """`evaluate`; under FSDP it is `_evaluate_whole`, which `evaluate` calls with the whole
    weights gathered."""
    name = "_evaluate_whole" if plan.sharded else "evaluate"
    whole = (metrics_evaluate_ops if plan.reports_metrics else evaluate_ops)(plan, name)
    return [whole, gathered_evaluate_ops()] if plan.sharded else [whole]


def _comment(text: str) -> list[Operation]:
    b = PyBuilder()
    b.comment(text)
    return b.ops


def loop_sources(plan: ScriptPlan) -> list[list[Operation]]:
    """The sections after the models and the loss, in the script's order: the training step,
    the epoch, the evaluation, then the command line, the set-up and the run."""
    sections: list[list[Operation] | None] = [
        batch_loss_ops(plan),
        _comment("---- the training step ----"),
        forward_backward_ops(plan),
        optimizer_step_ops(plan),
        train_one_epoch_ops(plan),
        _comment("---- evaluation ----"),
        *_evaluate_sections(plan, evaluate_ops, metrics_evaluate_ops, gathered_evaluate_ops),
        records_ops(plan),
        parse_args_ops(plan),
        scheduler_ops(plan),
        build_loaders_ops(plan),
        build_trainer_ops(plan),
        build_recipe_ops(plan),
        *((resume_ops(plan), resume_extra_ops(plan)) if plan.sharded else ()),
        saves_ops(plan),
        run_sections(plan),
        serve_requests_ops(plan) if plan.serves else None,
        main_ops(plan),
    ]
    return [s for s in sections if s]
