"""The facts passes leave on the `builtin.module` itself, where no TensorLoom op can hold them.

    builtin.module attributes {tl.dims = {T = 2048 : i64}, tl.specialized,
                               tl.flows = [{name = "net", model = "Classifier", ...}]} {...}

- `tl.dims` (`DIM_BINDINGS`): the `-D NAME=SIZE` bindings of `tlc check`/`tlc info`, each a
  positive i64; shape inference binds those dims.
- `tl.specialized` (`SPECIALIZED_MODULE`): a unit attribute, written by
  `instantiate`: every instance and nested-model layer has its own copy of
  its model.
- `tl.flows` (`FLOWS`): each instantiation's layer-by-layer shape flow, as `tlc check` shows
  it, written by shape-inference: one dictionary per flow, `name`, `model`, `inputs` (types),
  `output` (a type), `steps` (`[layer, op, type, parameters]` each) and, when known,
  `params`.

They are MLIR's discardable attributes of a dialect (the `tl.` prefix), and, as MLIR's
`verifyOperationAttribute` does, `verify_module_facts` checks them; the driver and tl-opt
call it wherever they verify the module.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, TypeAttribute
from xdsl.utils.exceptions import VerifyException

DIM_BINDINGS = "tl.dims"
SPECIALIZED_MODULE = "tl.specialized"
FLOWS = "tl.flows"
_FLOW_KEYS = {"name", "model", "inputs", "output", "steps", "params"}


def verify_module_facts(module: ModuleOp) -> None:
    """Raise VerifyException when a `tl.` attribute of the module is not as documented."""
    attrs = module.attributes
    dims = attrs.get(DIM_BINDINGS)
    if dims is not None and not _is_dims(dims):
        raise VerifyException(f"`{DIM_BINDINGS}` maps names to positive integers")
    marker = attrs.get(SPECIALIZED_MODULE)
    if marker is not None and not isinstance(marker, UnitAttr):
        raise VerifyException(f"`{SPECIALIZED_MODULE}` is a unit attribute")
    flows = attrs.get(FLOWS)
    if flows is not None and not (
        isinstance(flows, ArrayAttr) and all(_is_flow(f) for f in flows.data)
    ):
        raise VerifyException(f"`{FLOWS}` is a list of flows: {sorted(_FLOW_KEYS)}")


def _is_dims(attr: Attribute) -> bool:
    return isinstance(attr, DictionaryAttr) and all(
        isinstance(v, IntegerAttr) and v.value.data > 0 for v in attr.data.values()
    )


def _is_flow(attr: Attribute) -> bool:
    if not isinstance(attr, DictionaryAttr) or not attr.data.keys() <= _FLOW_KEYS:
        return False
    data = attr.data
    texts = all(isinstance(data.get(k), StringAttr) for k in ("name", "model"))
    inputs = data.get("inputs")
    steps = data.get("steps")
    return (
        texts
        and isinstance(inputs, ArrayAttr)
        and all(isinstance(t, TypeAttribute) for t in inputs.data)
        and isinstance(data.get("output"), TypeAttribute)
        and isinstance(steps, ArrayAttr)
        and all(_is_step(step) for step in steps.data)
    )


def _is_step(attr: Attribute) -> bool:
    if not isinstance(attr, ArrayAttr) or len(attr.data) != 4:
        return False
    name, op, kind, _params = attr.data
    return (
        isinstance(name, StringAttr)
        and isinstance(op, StringAttr)
        and (isinstance(kind, TypeAttribute))
    )
