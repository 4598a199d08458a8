"""The script's command line as py ops (passes/train_lowering/train_cli.py):
printed, executed, and parsed
with; a call too wide for one line wraps as a careful engineer writes it; `py.comment`."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tensorloom.backends import runtime
from tensorloom.backends.python_printer import print_python
from tensorloom.dialects import py
from tensorloom.dialects import train as train_dialect
from tensorloom.passes.convert_train_to_torch import plan_of
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.train_cli import argument_options, parse_args_ops
from tensorloom.pipeline import compile_file

ROOT = Path(__file__).resolve().parents[3]


def _plan(example: str):  # type: ignore[no-untyped-def]
    result = compile_file(ROOT / "examples" / example, until="kernel")
    assert result.module is not None
    loop = next(o for o in result.module.walk() if isinstance(o, train_dialect.LoopOp))
    return plan_of(result.module, loop, example)


def _parse_args(plan, argv: list[str]) -> argparse.Namespace:  # type: ignore[no-untyped-def]
    text = print_python(ModuleOp([py.ModuleOp(parse_args_ops(plan))]))
    scope = {"EPOCHS": 10, "BATCH_SIZE": 64, "SEED": 0, "COMPILE": "auto", "PRECISION": "fp16"}
    pasted = runtime.paste(["training_arguments"]).text
    exec(compile("import argparse\n" + pasted + "\n" + text, "<cli>", "exec"), scope)
    return scope["parse_args"](argv)  # type: ignore[operator,no-any-return]


def test_the_printed_command_line_parses_the_flags() -> None:
    plan = _plan("mnist.tl")
    args = _parse_args(plan, ["--epochs", "3", "--device", "cpu", "--precision", "bf16"])
    assert (args.epochs, args.device, args.precision, args.batch_size) == (3, "cpu", "bf16", 64)
    assert args.checkpoint_dir == "checkpoints/mnist" and args.no_cuda_graph is False


def test_which_flags_follow_from_the_plan() -> None:
    plan = _plan("mnist.tl")
    options = argument_options(plan)
    assert "precision" in options and "generate" not in options and "download" not in options
    no_amp = dataclasses.replace(plan, precision="none")  # insert-amp left out
    assert "precision" not in argument_options(no_amp)
    assert argument_options(_plan("train_gpt.tl"))["generate"] is True
    lm = vars(_parse_args(_plan("train_gpt.tl"), ["--generate", "hi", "--top-k", "5"]))
    assert (lm["generate"], lm["tokens"], lm["temperature"], lm["top_k"]) == ("hi", 200, 0.8, 5)


def test_a_wide_call_of_literals_wraps_aligned_and_a_comment_sits_on_its_statement() -> None:
    b = PyBuilder()
    b.comment("---- a section ----")
    inner = PyBuilder()
    add = inner.attr(inner.name("parser"), "add_argument")
    flag, choices = inner.const("--precision"), inner.value(("auto", "fp32", "fp16", "bf16"))
    help_text = inner.const("auto: bf16 on a bf16 GPU, else fp32 (a long help text, as it is)")
    inner.expr(inner.call(add, flag, choices=choices, help=help_text))
    b.stmt(py.DefOp("f", ["parser"], inner.ops))
    text = print_python(ModuleOp([py.ModuleOp(b.ops)]))
    assert text.endswith(
        "# ---- a section ----\n"
        "def f(parser):\n"
        '    parser.add_argument("--precision", choices=("auto", "fp32", "fp16", "bf16"),\n'
        + " " * 24
        + 'help="auto: bf16 on a bf16 GPU, else fp32 (a long help text, as it is)")\n'
    )
    assert all(len(line) <= 100 for line in text.splitlines())


def test_a_compile_mode_that_replays_cuda_graphs_marks_each_step(tmp_path: Path) -> None:
    """ "max-autotune" replays CUDA graphs as "reduce-overhead" does, so its script calls
    `torch.compiler.cudagraph_mark_step_begin()` before each step; "default" does not."""
    from tensorloom.tools.emit import _emit_python  # pyright: ignore[reportPrivateUsage]

    source = (ROOT / "examples" / "mnist.tl").read_text()
    marks: dict[str, bool] = {}
    for mode in ("max-autotune", "reduce-overhead", "default"):
        program = tmp_path / "mnist.tl"
        program.write_text(
            source.replace("    epochs = 10", f'    compile = "{mode}"\n    epochs = 10')
        )
        result, script = _emit_python(program)
        assert result.ok and script is not None, [d.message for d in result.sink.diagnostics]
        assert f'COMPILE_MODE: str | None = "{mode}"' in script
        marks[mode] = "torch.compiler.cudagraph_mark_step_begin()" in script
    assert marks == {"max-autotune": True, "reduce-overhead": True, "default": False}
