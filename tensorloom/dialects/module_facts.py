"""The facts passes leave on the `builtin.module` itself, where no TensorLoom op can hold them.

    builtin.module attributes {tl.dims = {T = 2048 : i64}, tl.specialized} {...}

- `tl.dims` (`DIM_BINDINGS`): the `-D NAME=SIZE` bindings of `tlc check`/`tlc info`, each a
  positive i64; shape inference binds those dims.
- `tl.specialized` (`SPECIALIZED_MODULE`): a unit attribute, written by
  `instantiate` (and dropped by `merge-specializations`): every instance and nested-model
  layer has its own copy of its model.

Each instantiation's shape flow, as `tlc check` shows it, is no attribute: it is read from
the typed IR when asked for (tensorloom/analysis/flows.py).

They are MLIR's discardable attributes of a dialect (the `tl.` prefix), and, as MLIR's
`verifyOperationAttribute` does, `verify_module_facts` checks them; the driver and tl-opt
call it wherever they verify the module.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    UnitAttr,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

DIM_BINDINGS = "tl.dims"
SPECIALIZED_MODULE = "tl.specialized"


def verify_module_facts(module: ModuleOp) -> None:
    """Raise VerifyException when a `tl.` attribute of the module is not as documented."""
    attrs = module.attributes
    dims = attrs.get(DIM_BINDINGS)
    if dims is not None and not _is_dims(dims):
        raise VerifyException(f"`{DIM_BINDINGS}` maps names to positive integers")
    marker = attrs.get(SPECIALIZED_MODULE)
    if marker is not None and not isinstance(marker, UnitAttr):
        raise VerifyException(f"`{SPECIALIZED_MODULE}` is a unit attribute")


def _is_dims(attr: Attribute) -> bool:
    return isinstance(attr, DictionaryAttr) and all(
        isinstance(v, IntegerAttr) and v.value.data > 0 for v in attr.data.values()
    )
