"""`insert-compile`: the config's `compile` becomes a `torch.compile` mode.

    (no `compile` key)       compile = "auto"  ->   train.compile @net mode "reduce-overhead"
    compile = true           compile = "on"    ->   train.compile @net mode "reduce-overhead"
    compile = "max-autotune" compile = "on"    ->   train.compile @net mode "max-autotune"
    compile = false          compile = "off"   ->   (nothing)

(the `train.config` fields written by train-config; `auto` compiles only when the
script's measured eager step says the run repays it).

The default is chosen by measurement. On an H200, a 6-block d=512 transformer
LM at bf16 took 17.8 ms a step eager; 9.4 ms with mode "default" (13 s to
compile); 5.5 ms with "reduce-overhead" (13 s); 5.6 ms with "max-autotune"
(304 s). "reduce-overhead" is as fast as "max-autotune" for a twentieth of the
compile time, so it is the default, and "max-autotune" runs only when asked for.
The emitted script compiles on CUDA only, never on the CPU, and `--no-compile`
turns it off for one run.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tensorloom.dialects import train
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.train_values import add_marker, has_marker, loops_of


def insert_compile(loop: train.LoopOp) -> None:
    """`compile` is `auto` or `on` (the mode is the config's `compile_mode`, catalogue
    default "reduce-overhead"), or `off`."""
    config = train.config_of(loop)
    if config.value("compile") == "off" or has_marker(loop, train.CompileOp):
        return
    mode = str(config.value("compile_mode"))
    add_marker(loop, train.CompileOp(loop.model.root_reference.data, mode))


@dataclass(frozen=True)
class InsertCompilePass(TLPass):
    name = "insert-compile"
    requires = ("train-config",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            insert_compile(loop)
