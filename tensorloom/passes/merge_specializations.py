"""`merge-specializations`: the per-instance copies of the models dropped, one class per model.

    nml.model @ResBlock { ... }
    nml.model @"ResNet.block1" {specializes = "ResBlock", config = {...}} { ... }
    nml.model @ResNet { nml.layer @block1 = "ResBlock" ... {specialized = @"ResNet.block1"} }
    nml.instance @b = @"ResNet#b" {...}

becomes

    nml.model @ResBlock { ... }
    nml.model @ResNet { nml.layer @block1 = "ResBlock" ... }
    nml.instance @b = @ResNet {...}

and a method's per-call-site copies (`nml.func @"helper.2" {specializes = "helper"}`, named
by `specialized` on the call) erased, each call naming its method again.

`instantiate` gives each instance and nested-model layer a copy of its model, so that
shape inference types every copy for its one use and the checks, `tlc info` and `tlc
graph` read each use's own types. The script defines one class per model, which takes
its configuration as constructor arguments (`ResBlock(32)`): the copies are the same
class under other arguments. This pass, the first of the `torch` stage, points every
instance and layer back at the model it names and erases the copies; the generic models
were typed by shape inference on their own (their defaults and annotations), which is all
the emission reads of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr

from tensorloom.dialects.module_facts import SPECIALIZED_MODULE
from tensorloom.dialects.nml import CallOp, FuncOp, InstanceOp, LayerOp, ModelOp
from tensorloom.passes.support.prerequisites import TLPass


def merge_specializations(module: ModuleOp) -> None:
    copies = [m for m in module.body.block.ops if isinstance(m, ModelOp) and m.specializes]
    generic = {m.sym_name.data: m.specializes for m in copies if m.specializes is not None}
    for op in module.walk():
        if isinstance(op, InstanceOp) and op.model.root_reference.data in generic:
            op.model = SymbolRefAttr(generic[op.model.root_reference.data].data)
        elif isinstance(op, LayerOp):
            op.specialized = None
            op.positions = None
        elif isinstance(op, CallOp):
            op.specialized = None
    methods = [f for m in module.walk() if isinstance(m, ModelOp) for f in _method_copies(m)]
    for copy in [*copies, *methods]:
        copy.detach()
        copy.erase(safe_erase=False)
    module.attributes.pop(SPECIALIZED_MODULE, None)


def _method_copies(model: ModelOp) -> list[FuncOp]:
    return [f for f in model.body.block.ops if isinstance(f, FuncOp) and f.specializes]


@dataclass(frozen=True)
class MergeSpecializationsPass(TLPass):
    name = "merge-specializations"
    requires = ("instantiate",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A specialised copy of a model, or of a method, is left."""
        models = [m for m in module.body.block.ops if isinstance(m, ModelOp)]
        return any(m.specializes or _method_copies(m) for m in models)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_specializations(op)
