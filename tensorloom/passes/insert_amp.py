"""`insert-amp`: `precision = fp16 | bf16` becomes autocast (and a GradScaler for fp16).

    train.config {precision = "fp16", ...}   ->   train.autocast "float16"
    train.config {precision = "bf16", ...}   ->   train.autocast "bfloat16"
    train.config {precision = "fp32", ...}   ->   train.autocast "float32"
    train.config {precision = "auto", ...}   ->   train.autocast "auto"   (the default)

The markers say what the block asks for on a GPU. The emitted script decides
at run time what the device allows (runtime/amp.py `resolve_precision`): CPU
autocast is bf16, so `fp16` on a CPU run falls back to fp32 with a printed
warning, and `bf16` stays bf16 autocast without a scaler. `auto`, the default,
is bf16 autocast on a GPU that supports bf16 and fp32 everywhere else. `float32` runs
without autocast unless `--precision` picks another at run time. Without the
marker (the pass left out of the pipeline) the script has no autocast, no
GradScaler and no `--precision` flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tensorloom.dialects import train
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.train_values import add_marker, has_marker, loops_of

AUTOCAST_DTYPE = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "auto": "auto"}


def insert_amp(loop: train.LoopOp) -> None:
    dtype = AUTOCAST_DTYPE.get(str(train.config_of(loop).value("precision")))
    if dtype is None or has_marker(loop, train.AutocastOp):
        return
    # The GradScaler follows at run time: fp16 on CUDA gets one (runtime/amp.py).
    add_marker(loop, train.AutocastOp(dtype))


@dataclass(frozen=True)
class InsertAmpPass(TLPass):
    name = "insert-amp"
    requires = ("train-config",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            insert_amp(loop)
