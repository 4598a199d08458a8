"""`mangle-names`: a model whose name the emitted script already uses gets a new one.

    nml.model @torch { ... }              nml.model @torchModel { ... }
    nml.instance @net = @torch {}   ->    nml.instance @net = @torchModel {}
    nml.layer @block = "torch"(...)       nml.layer @block = "torchModel"(...)

The script defines names of its own at the top level: its imports (`torch`,
`F`, `nn`, `dist`, ...), the runtime's classes and functions (`Trainer`,
`DeviceLoader`, ...: passes/support/runtime_names.py, generated from the runtime
modules), the training sections (`main`, `train`, `EPOCHS`, ...),
and Python's keywords and builtins. A model class of the same name would
replace one of them, and the script would break (fuzz-findings/manual/
model_named_torch_accepted.tl). This pass runs after every check, so
diagnostics keep the program's own names; only the emitted class is renamed,
with `Model` appended (and a number, until the name is free).
"""

from __future__ import annotations

import builtins
import functools
import keyword
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation

from tensorloom.dialects import nml
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.runtime_names import RUNTIME_NAMES
from tensorloom.passes.train_lowering import (
    train_build,
    train_cli,
    train_data,
    train_loop,
    train_records,
    train_settings,
    train_step,
)

# Names the script's fixed parts import or define, besides the runtime modules'.
SCRIPT_NAMES = frozenset(
    ["torch", "F", "nn", "dist", "np", "numpy", "triton", "tl", "math", "os", "sys", "argparse",
     "json", "time", "random", "Path", "Any", "annotations", "DEVICE"]
)  # fmt: skip


@functools.cache
def reserved_names() -> frozenset[str]:
    """Every name the emitted script may define or import at its top level."""
    names = set(SCRIPT_NAMES) | set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
    names |= RUNTIME_NAMES
    names |= {
        *train_cli.DEFINES,
        *train_step.DEFINES,
        *train_loop.DEFINES,
        *train_data.DEFINES,
        *train_build.DEFINES,
        *train_records.DEFINES,
        *train_settings.DEFINES,
    }
    return frozenset(names)


def new_names(models: Sequence[str], kernels: Sequence[str] = ()) -> dict[str, str]:
    """Old name -> new name, for each model name the script already uses.

    A kernel `k` defines `k` and `k_launcher` in the script too.
    """
    used = reserved_names() | {f"{k}{end}" for k in kernels for end in ("", "_launcher")}
    taken = used | set(models)
    renamed: dict[str, str] = {}
    for name in models:
        if name not in used:
            continue
        candidate, number = f"{name}Model", 2
        while candidate in taken:
            candidate, number = f"{name}Model{number}", number + 1
        taken |= {candidate}
        renamed[name] = candidate
    return renamed


def _symbol(op: Operation) -> str:
    """The name of a symbol op (a `kernel.func`), read through its `sym_name` property."""
    name = op.properties.get("sym_name")
    assert isinstance(name, StringAttr), f"{op.name} has no symbol name"
    return name.data


@dataclass(frozen=True)
class MangleNamesPass(TLPass):
    name = "mangle-names"
    requires = ("check-scopes",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A model is named like something the script defines."""
        models = [m.sym_name.data for m in module.walk() if isinstance(m, nml.ModelOp)]
        kernels = [_symbol(k) for k in module.body.block.ops if k.name == "kernel.func"]
        return bool(new_names(models, kernels))

    @classmethod
    def applies_to(cls, module: ModuleOp) -> bool:
        """Only a clash of names needs this pass, and the clash is known from the start."""
        return cls.pending(module)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        models = [m for m in op.walk() if isinstance(m, nml.ModelOp)]
        kernels = [_symbol(k) for k in op.body.block.ops if k.name == "kernel.func"]
        renamed = new_names([m.sym_name.data for m in models], kernels)
        if not renamed:
            return
        for model in models:
            model.sym_name = StringAttr(renamed.get(model.sym_name.data, model.sym_name.data))
        for child in op.walk():
            if isinstance(child, nml.InstanceOp) and child.model.root_reference.data in renamed:
                child.model = SymbolRefAttr(renamed[child.model.root_reference.data])
            if isinstance(child, nml.LayerOp) and child.kind.data in renamed:
                child.kind = StringAttr(renamed[child.kind.data])
