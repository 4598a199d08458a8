"""The script's set-up as py ops (passes/train_lowering/train_build.py),
printed for each kind of plan: `build_trainer` makes runtime/trainer.py's `Trainer` record as
it is declared, `build_recipe` (DDP, FSDP) agrees with its call, and a plan without
insert-amp's marker (or without a process group) names none of that code."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from tensorloom.backends import runtime
from tensorloom.backends.python_printer import print_python
from tensorloom.dialects import py
from tensorloom.dialects import train as train_dialect
from tensorloom.passes.convert_train_to_torch import plan_of
from tensorloom.passes.train_lowering.plan import ScriptPlan
from tensorloom.passes.train_lowering.train_build import (
    build_recipe_ops,
    build_trainer_ops,
    scheduler_ops,
)
from tensorloom.pipeline import compile_file

ROOT = Path(__file__).resolve().parents[3]
AMP_NAMES = {"plan", "scaler", "resolve_precision", "make_grad_scaler", "autocast", "partial"}


def _plan(example: str) -> ScriptPlan:
    result = compile_file(ROOT / "examples" / example, until="kernel")
    assert result.module is not None
    loop = next(o for o in result.module.walk() if isinstance(o, train_dialect.LoopOp))
    return plan_of(result.module, loop, example)


def _variants() -> dict[str, ScriptPlan]:
    """A plan of each kind: graphed step (mnist), DDP, a schedule, FSDP with an EMA; each
    with insert-amp's marker and without it."""
    mnist, ddp, schedule = _plan("mnist.tl"), _plan("train_ddp.tl"), _plan("digits_cnn.tl")
    fsdp = dataclasses.replace(_configured(ddp, ema=0.99), fsdp_blocks=())
    plans = {"graphed": mnist, "ddp": ddp, "schedule": schedule, "fsdp": fsdp}
    assert mnist.whole_step_graph and not ddp.whole_step_graph and schedule.schedule
    no_amp = {f"{k}-fp32": dataclasses.replace(p, precision="none") for k, p in plans.items()}
    return plans | no_amp


def _configured(plan: ScriptPlan, **fields: object) -> ScriptPlan:
    """The plan of a block that also sets `fields` (its `train.config` changed)."""
    changed = {name: train_dialect.config_attr(value) for name, value in fields.items()}
    config = train_dialect.ConfigOp({**plan.config.fields.data, **changed})
    return dataclasses.replace(plan, config=config)


VARIANTS = _variants()


def _setup(plan: ScriptPlan) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    ops = [*scheduler_ops(plan), *build_trainer_ops(plan)]
    text = print_python(ModuleOp([py.ModuleOp([*ops, *build_recipe_ops(plan)])]))
    tree = ast.parse(text)
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def _record() -> ast.ClassDef:
    """runtime/trainer.py's `Trainer`."""
    (text,) = [d.text for d in runtime.definitions() if "Trainer" in d.binds]
    (record,) = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)]
    return record


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    return [
        c
        for c in ast.walk(node)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
    ]


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


@pytest.mark.parametrize("kind", sorted(VARIANTS))
def test_build_trainer_makes_the_trainer_its_record_declares(kind: str) -> None:
    plan = VARIANTS[kind]
    setup = _setup(plan)
    fields = [f for f in _record().body if isinstance(f, ast.AnnAssign)]
    required = [f.target.id for f in fields if f.value is None]  # type: ignore[union-attr]
    (made,) = _calls(setup["build_trainer"], "Trainer")
    assert len(made.args) == len(required)
    assert {k.arg for k in made.keywords} <= {f.target.id for f in fields}  # type: ignore[union-attr]
    if plan.distributed:
        (recipe,) = _calls(setup["build_trainer"], "build_recipe")
        assert len(recipe.args) == len(setup["build_recipe"].args.args)  # type: ignore[union-attr]
    else:  # one process builds it in place
        assert "build_recipe" not in setup and _calls(setup["build_trainer"], "RunRecipe")
    assert bool(_calls(setup["build_trainer"], "captures_whole_step")) == plan.whole_step_graph
    assert ("build_scheduler" in setup) == (plan.schedule is not None)


@pytest.mark.parametrize("kind", sorted(k for k in VARIANTS if k.endswith("-fp32")))
def test_without_insert_amp_the_setup_names_no_precision_plan(kind: str) -> None:
    for name, node in _setup(VARIANTS[kind]).items():
        assert not _names(node) & AMP_NAMES, name
        for made in _calls(node, "Trainer"):
            assert not {k.arg for k in made.keywords} & {"scaler", "plan"}


def test_a_process_group_installs_no_signal_handlers_and_fsdp_shards_the_ema() -> None:
    one = _setup(VARIANTS["graphed"])["build_trainer"]
    assert "signals" not in _names(one) and _calls(one, "StopSignals")
    several = _setup(VARIANTS["ddp"])["build_recipe"]
    assert "signals" in _names(several)
    fsdp = _setup(VARIANTS["fsdp"])
    recipe = fsdp["build_recipe"]
    assert [a.arg for a in recipe.args.args] == ["model", "ctx", "plan"]  # type: ignore[union-attr]
    (shard,) = _calls(recipe, "shard_model")
    assert [k.arg for k in shard.keywords] == ["param_dtype"]
    (ddp,) = _calls(_setup(VARIANTS["ddp"])["build_trainer"], "DistributedDataParallel")
    assert not _calls(fsdp["build_trainer"], "DistributedDataParallel") and ddp.args


def test_the_plan_reads_train_config_with_each_fields_declared_type() -> None:
    """The plan copies no key: it reads the loop's `train.config` by name, asserting the type
    the key's record declares (catalogue/train_keys.py), and the record holds the default."""
    plan = VARIANTS["graphed"]
    assert plan.setting("epochs", int) == plan.config.value("epochs")
    assert plan.setting("grad_accum", int) == 1 == plan.default("grad_accum", int)
    assert plan.setting_or_none("grad_clip", float) is None and not plan.has("grad_clip")
    with pytest.raises(AssertionError, match="`epochs` is int, not float"):
        plan.setting("epochs", float)
    with pytest.raises(AssertionError, match="is none"):
        plan.setting("grad_clip", float)
    fsdp = VARIANTS["fsdp"]
    assert fsdp.has("ema") and fsdp.setting("ema", float) == 0.99
