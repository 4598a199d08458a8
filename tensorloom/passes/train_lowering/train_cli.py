"""The training script's command line, as `py` ops: `parse_args` and its flags.

    # ---- command line ----
    def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
        parser = training_arguments("Train Classifier on digits (from mnist.tl).", epochs=EPOCHS,
                                    batch_size=BATCH_SIZE, seed=SEED, ...)
        return parser.parse_args(argv)

The flags themselves are runtime/trainer.py's `training_arguments`: the ones every program
has, and the groups its keywords ask for, which follow from the plan (`argument_options`):
`generate` for language-model data, `download` for an image dataset, `precision` when
insert-amp ran (the plan's `amp`), `cuda_graph` when the whole step may be captured,
`consolidate` under FSDP, `weights` with a published-weights block. The defaults that come
from the train block are the settings' names (`EPOCHS`, `BATCH_SIZE`, ...), so the flags
and the settings section say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.passes.support.py_builder import Literal, PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan, data_description, image_dataset
from tensorloom.passes.train_lowering.plan import program_name as script_program_name

DEFINES = ("parse_args",)
"""The top-level names the command line defines in the script (mangle-names keeps them free)."""


@dataclass(frozen=True, slots=True)
class Name:
    """A Python name as an option's value (`epochs=EPOCHS`)."""

    id: str


Option = Literal | Name


def argument_options(plan: ScriptPlan) -> dict[str, Option]:
    """`training_arguments`' keywords for this plan, in its signature's order: the block's
    defaults, then the flag groups the plan asks for (runtime/trainer.py)."""
    options: dict[str, Option] = {
        "epochs": Name("EPOCHS"), "batch_size": Name("BATCH_SIZE"), "seed": Name("SEED"),
        "checkpoint_dir": f"checkpoints/{script_program_name(plan)}", "compile": Name("COMPILE"),
    }  # fmt: skip
    if plan.amp:
        options["precision"] = Name("PRECISION")
    asked = {
        "serve": plan.serves, "generate": plan.generates,
        "download": image_dataset(plan), "cuda_graph": plan.whole_step_graph,
    }  # fmt: skip
    options.update({key: True for key, wanted in asked.items() if wanted})
    if plan.has("samples"):  # `samples = fn`: its PNG grid after each epoch
        options["samples"] = f"samples/{script_program_name(plan)}.png"
    if plan.pretrained is not None:
        options["weights"] = plan.pretrained[0]
    if plan.sharded:
        options["consolidate"] = True
    return options


def _option(b: PyBuilder, value: Option) -> SSAValue:
    if isinstance(value, Name):
        return b.name(value.id)
    return b.value(value)


def parse_args_ops(plan: ScriptPlan) -> list[Operation]:
    """`# ---- command line ----` and `def parse_args(argv=None)`, as `py` ops."""
    top = PyBuilder()
    top.comment("---- the command line, the set-up and the run ----")
    # list[str] | None = None -> argparse.Namespace
    argv_type = top.optional(top.generic("list", "str"))
    default, returns = top.const(None), top.name("argparse.Namespace")
    body = PyBuilder()
    description = f"Train {plan.model_class} on {data_description(plan)} (from {plan.source})."
    options = {key: _option(body, value) for key, value in argument_options(plan).items()}
    parser = body.call("training_arguments", body.const(description), **options)
    body.assign("parser", parser)
    parse = body.attr(body.name("parser"), "parse_args")
    body.ret(body.call(parse, body.name("argv")))
    function = py.DefOp(
        "parse_args", ["argv"], body.ops, defaults={"argv": default},
        annotations={"argv": argv_type}, returns=returns,
    )  # fmt: skip
    top.stmt(function)
    return top.ops
