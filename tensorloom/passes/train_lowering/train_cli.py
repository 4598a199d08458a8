"""The training script's command line, as `py` ops: `parse_args` and its flags.

    # ---- command line ----
    def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
        parser = argparse.ArgumentParser(description="Train Classifier on digits (from mnist.tl).")
        parser.add_argument("--epochs", type=int, default=EPOCHS)
        ...
        return parser.parse_args(argv)

Each flag is a `Flag` record; which flags a script has follows from its plan:
`--generate` and its sampling flags for language-model data, `--download` for an
image dataset, `--precision` when insert-amp ran (the plan's `amp`), `--no-cuda-graph`
when the whole step may be captured, `--consolidate` under FSDP. The defaults that
come from the train block are the settings' names (`EPOCHS`, `BATCH_SIZE`, ...), so
the flags and the settings section say the same thing.
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
    """A Python name as an option's value (`type=int`, `default=EPOCHS`)."""

    id: str


Option = Literal | tuple[str, ...] | Name


@dataclass(frozen=True, slots=True)
class Flag:
    flag: str
    options: tuple[tuple[str, Option], ...]


def _flag(flag: str, **options: Option) -> Flag:
    return Flag(flag, tuple(options.items()))


INT, FLOAT = Name("int"), Name("float")
STORE_TRUE = "store_true"


def flags_of(plan: ScriptPlan) -> list[Flag]:
    """The script's flags, in `--help`'s order."""
    flags = [
        _flag("--epochs", type=INT, default=Name("EPOCHS")),
        _flag("--batch-size", type=INT, default=Name("BATCH_SIZE"), help="per process"),
        _flag("--max-steps", type=INT, default=None,
              help="stop after this many steps (the schedule is unchanged)"),
        _flag("--device", choices=("auto", "cpu", "cuda"), default="auto"),
        _flag("--seed", type=INT, default=Name("SEED")),
        _flag("--metrics", default=None, help="a JSON line per epoch goes here"),
        _flag("--tensorboard", default=None, help="TensorBoard logs go here"),
        _flag("--checkpoint-dir", default=f"checkpoints/{script_program_name(plan)}"),
        _flag("--resume", default=None, help="a checkpoint to continue from"),
        _flag("--overwrite", action=STORE_TRUE,
              help="replace the checkpoints an earlier run left in --checkpoint-dir"),
        _flag("--init-from", default=None, help="start from these weights"),
        *_pretrained_flags(plan),
        _flag("--evaluate", default=None, metavar="CHECKPOINT",
              help="report the validation metrics of a checkpoint; no training"),
    ]  # fmt: skip
    if plan.serves:  # a forward of several inputs (called by an objective) has no --predict
        flags += [
            _flag("--predict", default=None, metavar="INPUT",
                  help="outputs for a .npz, .pt, .csv or image file"),
            _flag("--out", default=None, help="--predict writes here, not stdout"),
            _flag("--export", default=None, metavar="FILE",
                  help="torch.export the model (.pt2; .onnx with onnx)"),
        ]  # fmt: skip
    if plan.generates:
        flags += [
            _flag("--generate", default=None, metavar="PROMPT",
                  help="print text the model writes after PROMPT"),
            _flag("--tokens", type=INT, default=200, help="bytes --generate samples"),
            _flag("--temperature", type=FLOAT, default=0.8, help="0: always the likeliest"),
            _flag("--top-k", type=INT, default=40, help="sample among the k likeliest"),
        ]  # fmt: skip
    flags.append(_flag("--data-root", default=None, help="where datasets live"))
    if plan.samples is not None:
        where = f"samples/{script_program_name(plan)}.png"
        drawn = f"the PNG grid `{plan.samples}` draws after each epoch"
        flags.append(_flag("--samples", default=where, help=drawn))
    if image_dataset(plan):
        flags.append(_flag("--download", action=STORE_TRUE,
                           help="fetch a missing dataset (HTTPS, sha256-checked)"))  # fmt: skip
    flags += [
        _flag("--compile", choices=("auto", "on", "off"), default=Name("COMPILE"),
              help="torch.compile on CUDA; auto: when the run repays it"),
        _flag("--no-compile", action=STORE_TRUE, help="as --compile off"),
    ]  # fmt: skip
    if plan.amp:
        precision = ("auto", "fp32", "fp16", "bf16")
        help_text = "auto: bf16 on a bf16 GPU, else fp32"
        flags.append(_flag("--precision", choices=precision, default=Name("PRECISION"),
                           help=help_text))  # fmt: skip
    if plan.whole_step_graph:
        help_text = "no whole-step CUDA graph for small resident datasets"
        flags.append(_flag("--no-cuda-graph", action=STORE_TRUE, help=help_text))
    if plan.sharded:
        help_text = "write a sharded save's weights as one state dict, then exit"
        flags.append(_flag("--consolidate", nargs=2, metavar=("DIR", "OUT.pt"), default=None,
                           help=help_text))  # fmt: skip
    return flags


def _pretrained_flags(plan: ScriptPlan) -> list[Flag]:
    """--weights and --export-weights, for a model with a `weights` block."""
    if plan.pretrained is None:
        return []
    return [
        _flag("--weights", default=plan.pretrained[0],
              help="the published weights the model starts from (a file or a folder)"),
        _flag("--export-weights", default=None, metavar="DIR",
              help="write the trained model in the published weights' names and format"),
    ]  # fmt: skip


def _option(b: PyBuilder, value: Option) -> SSAValue:
    if isinstance(value, Name):
        return b.name(value.id)
    return b.value(value)


def parse_args_ops(plan: ScriptPlan) -> list[Operation]:
    """`# ---- command line ----` and `def parse_args(argv=None)`, as `py` ops."""
    top = PyBuilder()
    top.comment("---- command line ----")
    # list[str] | None = None -> argparse.Namespace
    argv_type = top.optional(top.generic("list", "str"))
    default, returns = top.const(None), top.name("argparse.Namespace")
    body = PyBuilder()
    description = f"Train {plan.model_class} on {data_description(plan)} (from {plan.source})."
    body.assign("parser", body.call("argparse.ArgumentParser", description=body.const(description)))
    for flag in flags_of(plan):
        add = body.attr(body.name("parser"), "add_argument")
        name = body.const(flag.flag)
        options = {key: _option(body, value) for key, value in flag.options}
        body.expr(body.call(add, name, **options))
    parse = body.attr(body.name("parser"), "parse_args")
    body.ret(body.call(parse, body.name("argv")))
    function = py.DefOp(
        "parse_args", ["argv"], body.ops, defaults={"argv": default},
        annotations={"argv": argv_type}, returns=returns,
    )  # fmt: skip
    top.stmt(function)
    return top.ops
