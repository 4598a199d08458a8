"""The triton emission dialect: a Triton module's domain ops, around `py` bodies.

    triton.jit_func @vector_add attributes {arg_names = [...], param_kinds = [...]} {
      %pid = py.name "pid"
      %f = py.name "tl.program_id"
      %0 = py.constant 0 : i64
      %1 = py.call %f(axis = %0)
      py.assign %pid = %1                    # pid = tl.program_id(axis=0)
      ...
    }
    triton.launcher @vector_add_launcher for @vector_add {bindings = ..., grid = ...}

`triton.jit_func` is the `@triton.jit` function (constexpr parameters annotated);
its body is Python statements and expressions of the `py` dialect, which the
printer prints as it prints any other body. The launcher op carries the same
description as `kernel.launcher` (see docs/kernels.md); the printer writes its
checks, allocations, grid and launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Region,
)
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_format import LazyFormatOp


@irdl_op_definition
class JitFuncOp(LazyFormatOp):
    """`@triton.jit def name(params):`; constexpr parameters are annotated."""

    name = "triton.jit_func"
    sym_name = prop_def(SymbolNameConstraint())
    arg_names = prop_def(ArrayAttr[StringAttr])
    param_kinds = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, params: Sequence[str], kinds: Sequence[str], body: Region):
        super().__init__(
            regions=[body],
            properties={
                "sym_name": StringAttr(name),
                "arg_names": string_array(params),
                "param_kinds": string_array(kinds),
            },
        )

    def params(self) -> list[tuple[str, str]]:
        return [(a.data, k.data) for a, k in zip(self.arg_names, self.param_kinds, strict=True)]


@irdl_op_definition
class LauncherOp(LazyFormatOp):
    """`def <kernel>_launcher(...)`: checks, allocations, grid and the launch.

    Properties as on `kernel.launcher`.
    """

    name = "triton.launcher"
    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(SymbolRefAttr)
    bindings = prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    grid = prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    defaults = prop_def(DictionaryAttr)
    pow2 = prop_def(ArrayAttr[StringAttr])
    allocations = opt_prop_def(DictionaryAttr)
    dtypes = opt_prop_def(DictionaryAttr)
    tune = opt_prop_def(DictionaryAttr)
    tune_key = opt_prop_def(ArrayAttr[StringAttr])
    entry = opt_prop_def(StringAttr)
    backward = opt_prop_def(SymbolRefAttr)
    backward_args = opt_prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    backward_results = opt_prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name `for` $kernel attr-dict"

    def binding_list(self) -> list[list[str]]:
        return [[s.data for s in b] for b in self.bindings]

    def grid_list(self) -> list[list[str]]:
        return [[s.data for s in g] for g in self.grid]

    def pairs(self, name: str) -> list[list[str]]:
        """An optional array-of-string-arrays property (`backward_args`, ...), or []."""
        value = self.properties.get(name)
        if not isinstance(value, ArrayAttr):
            return []
        return [
            [s.data for s in p.data if isinstance(s, StringAttr)]
            for p in value.data
            if isinstance(p, ArrayAttr)
        ]

    def table(self, name: str) -> dict[str, Attribute]:
        """An optional dictionary property (`allocations`, `dtypes`, `tune`), or {}."""
        value = self.properties.get(name)
        return dict(value.data) if isinstance(value, DictionaryAttr) else {}


Triton = Dialect("triton", [JitFuncOp, LauncherOp], [])
