"""Lower nml models to the torch dialect: each model becomes a `torch.module_class`.

    nml.model @Block from "block.nml" {
      nml.config @d_model = 512 : i64
      nml.layer @norm = "LayerNorm" [#nml.cfg<"d_model">] {}
      nml.func @forward(%x: !nml.tensor<[B, T, 512], f32>) -> ... {
        %0 = nml.apply @norm(%x) : ...
        %1 = nml.relu %0 : ...
        nml.return %1 : ...
      }
    }

becomes, inside the module's `torch.script` (created if absent), `py` ops around
the torch domain ops (no Python source in strings):

    %c512 = py.constant 512 : i64
    torch.module_class @Block(d_model = %c512) : "nn.Module" doc "..." {
      %0 = py.name "nn.LayerNorm"
      %1 = py.name "d_model"
      %2 = py.call %0(%1)
      torch.submodule "norm" = %2
      py.def @forward(self, x) {
      ^bb0(%self: !py.object, %x: !py.object):
        %3 = py.name "self"
        %4 = py.attribute %3, "norm"
        %5 = py.call %4(%x)
        %6 = py.name "F.relu"
        %7 = py.call %6(%5)
        py.return %7
      }
    }

Steps:
1. Body ops, one pattern each (`BODY_PATTERNS`): layer applications become
   submodule calls (`self.norm(x)`) with the catalogue's call kind; functional
   builtins become the PyTorch call a person would write (`F.relu(x)`,
   `torch.softmax(x, dim=-1)`, `x.flatten(1)`, `x @ y`, `torch.cat([a, b], dim=1)`);
   config references become `self.<name>`. Results keep their `name_hint`s and
   every new op the location of the op it replaces.
2. `ModelToClass`: configs become `__init__` parameters with their defaults (`py`
   ops before the class; a default computed from other configs is `None` plus a
   `torch.param_default`); layers become submodules, their constructor calls `py`
   ops in which a config is the `__init__` parameter read by name
   (`nn.Linear(d_model, 4 * d_model)`); a layer whose kind is another model is an
   instance of that class; a config read in a method is stored as `self.<name>`
   in `__init__`; each function becomes a `py.def` whose first parameter is `self`.
3. A `.tl` file's top-level functions (losses and metrics, `fn my_loss(out, y)`)
   become `py.def`s after the classes, their bodies lowered by the same patterns.
Ops outside models (the training script's) are left to `convert-train-to-torch`,
which moves a script's top-level statements into a `py.def` and lowers them
with `BODY_PATTERNS` (they also match nml ops directly inside a `py.def`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.catalogue.functions import FUNCTIONS, SCALAR_MATH
from tensorloom.catalogue.layers import BoundLayer, LayerSpec, lookup
from tensorloom.catalogue.layers.parameter import PARAMETER
from tensorloom.dialects import kernel, nml, py
from tensorloom.dialects import torch as t
from tensorloom.dialects.nml.types import CallAttr, CfgAttr, ExprAttr, NoneValueAttr, SliceAttr
from tensorloom.passes.check_scopes import MODULE_ATTRIBUTES
from tensorloom.passes.support.model_env import (
    CONFIG_FUNCTIONS,
    bind_layer,
    configs_of,
    enclosing_model,
    layers_of,
    lookup_symbol,
    mentions_config,
    model_env,
)

# ------------------------------------------------------------------ helpers


def _replace(rewriter: PatternRewriter, op: Operation, new_ops: Sequence[Operation]) -> None:
    """Replaces `op` by `new_ops` (the last one gives the result), keeping location and name."""
    for new in new_ops:
        new.location = op.location
    last = new_ops[-1]
    if op.results and last.results:
        last.results[0].name_hint = op.results[0].name_hint
    rewriter.replace(op, list(new_ops), list(last.results) if op.results else [])
    for new in new_ops[:-1]:  # the rewriter gave them the old name; they are parts of it
        for result in new.results:
            result.name_hint = None


def _const(value: int | float | bool | str | None) -> py.ConstantOp:
    if value is None:
        return py.ConstantOp(py.NoneAttr())
    if isinstance(value, bool):
        return py.ConstantOp(IntegerAttr(int(value), 1))
    if isinstance(value, int):
        return py.ConstantOp(IntegerAttr(value, i64))
    if isinstance(value, float):
        return py.ConstantOp(FloatAttr(value, 64))
    return py.ConstantOp(StringAttr(value))


def self_attr(name: str) -> list[Operation]:
    """`self.<name>` (the last op gives it)."""
    self_name = py.NameOp("self")
    return [self_name, py.AttributeOp(self_name.result, name)]


def binary(operator: str, lhs: SSAValue, rhs: SSAValue) -> Operation:
    """`lhs <operator> rhs`: a comparison is a `py.compare`, anything else a `py.binop`."""
    if operator in py.COMPARISON_OPERATORS:
        return py.CompareOp(operator, [lhs, rhs])
    return py.BinOp(operator, lhs, rhs)


def call(
    callee: str, args: Sequence[SSAValue] = (), names: Sequence[str] | None = None
) -> list[Operation]:
    """`callee(args)` for a (dotted) name."""
    function = py.NameOp(callee)
    return [function, py.CallOp(function.result, args, names)]


def _in_body(op: Operation) -> bool:
    """In a model's method, or in the `py.def` that convert-train-to-torch moved a
    script's top-level statements into (loops and branches in between)."""
    if enclosing_model(op) is not None:
        return True
    parent = op.parent_op()
    while isinstance(parent, CONTROL_FLOW):
        parent = parent.parent_op()
    return isinstance(parent, py.DefOp)


CONTROL_FLOW = (nml.ForOp, nml.IfOp, py.ForOp, py.IfOp)


class _Keywords:
    """Builds a call's operands: constants for literal arguments, names alongside."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []
        self.args: list[SSAValue] = []
        self.names: list[str] = []

    def value(self, value: SSAValue, name: str = "") -> _Keywords:
        self.args.append(value)
        self.names.append(name)
        return self

    def literal(self, value: int | float | bool | str | None, name: str = "") -> _Keywords:
        constant = _const(value)
        self.ops.append(constant)
        return self.value(constant.result, name)

    def function(self, callee: str) -> list[Operation]:
        function = py.NameOp(callee)
        return [function, *self.ops, py.CallOp(function.result, self.args, self.names)]

    def method(self, receiver: SSAValue, method: str) -> list[Operation]:
        # The attribute first: Python evaluates `x.flatten` before the arguments.
        bound = py.AttributeOp(receiver, method)
        return [bound, *self.ops, py.CallOp(bound.result, self.args, self.names)]


# --------------------------------------------------------- body patterns


class ConstantToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ConstantOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        value = py.NoneAttr() if isinstance(op.value, NoneValueAttr) else op.value
        _replace(rewriter, op, [py.ConstantOp(value)])


class RefToTorch(RewritePattern):
    """`nml.ref @d_model` (a config or layer of the model) is `self.d_model`, read where
    each use is (as the source reads it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.RefOp, rewriter: PatternRewriter) -> None:
        model = enclosing_model(op)
        name = op.symbol.root_reference.data
        known = name in configs_of(model) or name in layers_of(model) if model else False
        if model is None or not (known or name in MODULE_ATTRIBUTES):
            return
        for use in list(op.result.uses)[1:]:
            read = self_attr(name)
            for new in read:
                new.location = op.location
            user = use.operation
            rewriter.insert(read, InsertPoint.before(user))
            operands = list(user.operands)
            operands[use.index] = read[-1].results[0]
            user.operands = operands
        _replace(rewriter, op, self_attr(name))


class ApplyToTorch(RewritePattern):
    """`nml.apply @attn(%x)` is a submodule call with the catalogue's call kind."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ApplyOp, rewriter: PatternRewriter) -> None:
        model = enclosing_model(op)
        if model is None:
            return
        name = op.layer.root_reference.data
        layer = layers_of(model).get(name)
        bound = bind_layer(layer, model_env(model)) if layer is not None else None
        kind = bound.spec.call_kind_of(bound) if bound is not None else "plain"
        if bound is not None and bound.spec.stateful and len(op.args) == 2:
            kind = "plain"  # `lstm(x, state)`: the pair (output, state), as PyTorch gives it
        names = [n.data for n in op.arg_names] if op.arg_names else [""] * len(op.args)
        _replace(rewriter, op, submodule_call(name, list(op.args), names, kind))


def submodule_call(
    name: str, args: list[SSAValue], names: list[str], kind: str = "plain"
) -> list[Operation]:
    """`self.fc1(x)`, `self.lstm(x)[0]` (`first_of_tuple`: LSTM/GRU's output sequence) or
    `self.attn(x, x, x, need_weights=False)[0]` (`first_of_tuple_self_attention`:
    nn.MultiheadAttention built with batch_first=True, used as self-attention): the
    layer catalogue's `call_kind`."""
    ops = self_attr(name)
    if kind == "first_of_tuple_self_attention":
        flag = _const(False)
        ops += [flag, py.CallOp(ops[-1].results[0], [args[0]] * 3 + [flag.result],
                                ["", "", "", "need_weights"])]  # fmt: skip
    else:
        ops.append(py.CallOp(ops[-1].results[0], args, names))
    if kind != "plain":
        first = _const(0)
        ops += [first, py.SubscriptOp(ops[-1].results[0], [first.result])]
    return ops


def _call(callee: str, first: SSAValue, call: _Keywords) -> list[Operation]:
    """`torch.exp(x, ...)`, or `x.detach(...)` for a catalogue spelling `x.detach`."""
    if callee.startswith("x."):
        return call.method(first, callee.removeprefix("x."))
    call.args.insert(0, first)
    call.names.insert(0, "")
    return call.function(callee)


class UnaryToTorch(RewritePattern):
    """The elementwise family, spelled as the function catalogue says (`torch.exp(x)`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.UnaryOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        if isinstance(op, nml.NegOp):
            _replace(rewriter, op, [py.UnaryOp("-", op.input)])
            return
        name = op.name.removeprefix("nml.")
        if not isinstance(op.input.type, nml.TensorType | nml.AnyType) and name in SCALAR_MATH:
            _replace(rewriter, op, _Keywords().value(op.input).function(f"math.{name}"))
            return
        _replace(rewriter, op, _call(FUNCTIONS[name].torch, op.input, _Keywords()))


class GeluToTorch(RewritePattern):
    """`F.gelu(x)` or `F.gelu(x, approximate="tanh")`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.GeluOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        if op.approximate is not None:
            call.literal(op.approximate.data, "approximate")
        _replace(rewriter, op, _call("F.gelu", op.input, call))


class ClampToTorch(RewritePattern):
    """`x.clamp(min=0.0, max=6.0)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ClampOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        for name, bound in (("min", op.min), ("max", op.max)):
            if bound is not None:
                call.literal(bound.value.data, name)
        _replace(rewriter, op, call.method(op.input, "clamp"))


class SoftmaxToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.SoftmaxLikeOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        callee = "torch.softmax" if isinstance(op, nml.SoftmaxOp) else "torch.log_softmax"
        call = _Keywords().value(op.input).literal(op.dim.value.data, "dim")
        _replace(rewriter, op, call.function(callee))


class DropoutToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.DropoutOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        p = _rate(op.p or op.rate)
        training = self_attr("training")
        call = _Keywords().value(op.input)
        call.ops += [*p, *training]
        call.value(p[-1].results[0], "p").value(training[-1].results[0], "training")
        _replace(rewriter, op, call.function("F.dropout"))


def _rate(attr: Attribute | None) -> list[Operation]:
    """A dropout probability: the number, or `self.<config>` (the config it names)."""
    if isinstance(attr, CfgAttr):
        return self_attr(attr.param.data)
    assert isinstance(attr, FloatAttr), f"compiler bug: dropout rate {attr}"
    return [_const(attr.value.data)]


class FlattenToTorch(RewritePattern):
    """`x.flatten(1)`: trailing default arguments are left out."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.FlattenOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        start, end = op.start_dim.value.data, op.end_dim.value.data
        call = _Keywords()
        if (start, end) != (0, -1):
            call.literal(start)
        if end != -1:
            call.literal(end)
        _replace(rewriter, op, call.method(op.input, "flatten"))


class ReshapeToTorch(RewritePattern):
    """`x.reshape(x.shape[0], -1, 64)`; a symbolic size reads the input's own size."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ReshapeLikeOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        dynamic = iter(op.dynamic_sizes)
        input_dims = _dims_of(op.input)
        for entry in op.shape.data:
            _reshape_size(call, op.input, entry, dynamic, input_dims)
        method = "view" if isinstance(op, nml.ViewOp) else "reshape"
        _replace(rewriter, op, call.method(op.input, method))


def _dims_of(value: SSAValue) -> tuple[object, ...] | None:
    value_type = value.type
    return value_type.dims if isinstance(value_type, nml.TensorType) else None


def _reshape_size(
    call: _Keywords,
    source: SSAValue,
    entry: Attribute,
    dynamic: object,
    input_dims: tuple[object, ...] | None,
) -> None:
    if isinstance(entry, IntegerAttr):
        call.literal(entry.value.data)
        return
    assert isinstance(entry, StringAttr)
    if entry.data == nml.DYNAMIC:
        call.value(next(dynamic))  # type: ignore[call-overload]
        return
    axis = input_dims.index(entry.data) if input_dims and entry.data in input_dims else None
    if axis is None:
        call.literal(-1)  # a size the checker could not place: the rest of the elements
        return
    size = _Keywords().literal(axis).method(source, "size")
    call.ops += size
    call.value(size[-1].results[0])


class PermuteToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.PermuteOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        for dim in op.dims.data:
            call.literal(dim.value.data)
        _replace(rewriter, op, call.method(op.input, "permute"))


class TransposeToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.TransposeOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords().literal(op.dim0.value.data).literal(op.dim1.value.data)
        _replace(rewriter, op, call.method(op.input, "transpose"))


class ReductionToTorch(RewritePattern):
    """`x.mean(dim=-1, keepdim=True)`; several dims are a tuple."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ReductionOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        dims = [d.value.data for d in op.dims.data] if op.dims is not None else None
        if dims is not None and len(dims) == 1:
            call.literal(dims[0], "dim")
        elif dims is not None:
            items = [_const(d) for d in dims]
            dims_tuple = py.TupleOp([c.result for c in items])
            call.ops += [*items, dims_tuple]
            call.value(dims_tuple.result, "dim")
        if isinstance(op, nml.MomentOp) and op.correction is not None:
            call.literal(op.correction.value.data, "correction")
        if op.keepdim is not None:
            call.literal(True, "keepdim")
        _replace(rewriter, op, call.method(op.input, op.name.removeprefix("nml.")))


class LossToTorch(RewritePattern):
    """`F.cross_entropy(out, y, label_smoothing=0.1)`: `nml.loss` as its PyTorch function."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.LossOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords().value(op.input).value(op.target)
        if op.reduction.data != "mean":
            call.literal(op.reduction.data, "reduction")
        for key, value in op.options.data.items():
            call.literal(_option_value(value), key)
        _replace(rewriter, op, call.function(_loss_function(op)))


def _loss_function(op: nml.LossOp) -> str:
    """`F.cross_entropy`: every functional loss of the catalogue has its PyTorch function."""
    function = op.spec.torch_function
    assert function is not None, f"loss `{op.kind.data}` has no PyTorch function"
    return function


def _option_value(attr: Attribute) -> int | float | bool:
    if isinstance(attr, FloatAttr):
        return attr.value.data
    assert isinstance(attr, IntegerAttr), "resolve-nml folds loss options to numbers"
    width = attr.type.width.data if hasattr(attr.type, "width") else 64  # type: ignore[union-attr]
    return bool(attr.value.data) if width == 1 else attr.value.data


class CatToTorch(RewritePattern):
    """`torch.cat([a, b], dim=1)`, `torch.stack([a, b], dim=0)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.CatOp | nml.StackOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        tensors = py.ListOp(op.inputs)
        call = _Keywords().value(tensors.result).literal(op.dim.value.data, "dim")
        callee = "torch.stack" if isinstance(op, nml.StackOp) else "torch.cat"
        _replace(rewriter, op, [tensors, *call.function(callee)])


class SplitToTorch(RewritePattern):
    """`x.split(64, dim=2)`, `x.split([64, 128], dim=-1)`, `x.chunk(3, dim=-1)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.SplitOp | nml.ChunkOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        if isinstance(op, nml.ChunkOp):
            call.literal(op.chunks.value.data)
        else:
            sizes = _Keywords()
            dynamic = iter(op.dynamic_sizes)
            for entry in op.sizes.data:
                if isinstance(entry, IntegerAttr):
                    sizes.literal(entry.value.data)
                else:
                    sizes.value(next(dynamic))
            if op.equal is not None:
                call.ops += sizes.ops
                call.value(sizes.args[0])
            else:
                listed = py.ListOp(sizes.args)
                call.ops += [*sizes.ops, listed]
                call.value(listed.result)
        if op.dim.value.data != 0:
            call.literal(op.dim.value.data, "dim")
        _replace(rewriter, op, call.method(op.input, op.name.removeprefix("nml.")))


class SizesToTorch(RewritePattern):
    """`x.expand(B, -1, -1)`, `x.repeat(1, 4)`: sizes known at run time are operands."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ExpandOp | nml.RepeatOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        dynamic = iter(op.dynamic_sizes)
        for entry in op.shape.data:
            if isinstance(entry, IntegerAttr):
                call.literal(entry.value.data)
            else:
                call.value(next(dynamic))
        _replace(rewriter, op, call.method(op.input, op.name.removeprefix("nml.")))


class ArangeToTorch(RewritePattern):
    """`torch.arange(T, device=x.device)`: on the device of the method's first input;
    the defaults (start 0, step 1) are left out."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ArangeOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        dynamic = iter(op.dynamic_sizes)
        start, end, step = op.bounds.data
        values = [b for b in (start, end, step)]
        if _is_number(step, 1):
            values.pop()
            if _is_number(start, 0):
                values.pop(0)
        for entry in values:
            if isinstance(entry, IntegerAttr | FloatAttr):
                call.literal(entry.value.data)
            else:
                call.value(next(dynamic))
        block = op.parent_block()
        if block is not None and block.args and enclosing_model(op) is not None:
            device = py.AttributeOp(block.args[0], "device")
            call.ops.append(device)
            call.value(device.result, "device")
        _replace(rewriter, op, call.function("torch.arange"))


def _is_number(attr: Attribute, value: int) -> bool:
    return isinstance(attr, IntegerAttr) and attr.value.data == value


class ShapeOpToTorch(RewritePattern):
    """`x.unsqueeze(1)`, `x.squeeze(-1)`, `x.t()`, `torch.tril(x)`, `F.normalize(x, dim=-1)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: nml.UnsqueezeOp | nml.SqueezeOp | nml.TOp | nml.TriangleOp | nml.NormalizeOp,
        rewriter: PatternRewriter,
    ) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        if isinstance(op, nml.UnsqueezeOp):
            call.literal(op.dim.value.data)
        elif isinstance(op, nml.SqueezeOp) and op.dims is not None:
            dims = [d.value.data for d in op.dims.data]
            call.literal(dims[0]) if len(dims) == 1 else _tuple_arg(call, dims)
        elif isinstance(op, nml.TriangleOp) and op.diagonal.value.data:
            call.literal(op.diagonal.value.data, "diagonal")
        elif isinstance(op, nml.NormalizeOp):
            if op.p.value.data != 2.0:
                call.literal(op.p.value.data, "p")
            call.literal(op.dim.value.data, "dim")
        callee = FUNCTIONS[op.name.removeprefix("nml.")].torch
        _replace(rewriter, op, _call(callee, op.input, call))


def _tuple_arg(call: _Keywords, values: Sequence[int], name: str = "") -> None:
    items = [_const(v) for v in values]
    packed = py.TupleOp([c.result for c in items])
    call.ops += [*items, packed]
    call.value(packed.result, name)


class EinsumToTorch(RewritePattern):
    """`torch.einsum("bij,bjk->bik", a, b)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.EinsumOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords().literal(op.equation.data)
        for value in op.inputs:
            call.value(value)
        _replace(rewriter, op, call.function("torch.einsum"))


class SelectToTorch(RewritePattern):
    """`torch.where(c, a, b)`, `x.masked_fill(mask, value)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: nml.WhereOp | nml.MaskedFillOp, rewriter: PatternRewriter
    ) -> None:
        if not _in_body(op):
            return
        if isinstance(op, nml.WhereOp):
            call = _Keywords().value(op.condition).value(op.lhs).value(op.rhs)
            _replace(rewriter, op, call.function("torch.where"))
            return
        call = _Keywords().value(op.mask).value(op.value)
        _replace(rewriter, op, call.method(op.input, "masked_fill"))


class AttentionToTorch(RewritePattern):
    """`F.scaled_dot_product_attention(q, k, v, is_causal=True)`: PyTorch picks the fused
    flash or memory-efficient kernel. Dropout applies only in training, as `F.dropout` does."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.AttentionOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords().value(op.query).value(op.key).value(op.value)
        if op.mask is not None:
            call.value(op.mask, "attn_mask")
        if op.dropout is not None or op.dropout_rate is not None:
            p, zero, flag = _rate(op.dropout or op.dropout_rate), _const(0.0), self_attr("training")
            choice = py.IfExpOp(flag[-1].results[0], p[-1].results[0], zero.result)
            call.ops += [*p, zero, *flag, choice]
            call.value(choice.result, "dropout_p")
        if op.causal is not None:
            call.literal(True, "is_causal")
        if op.scale is not None:
            call.literal(op.scale.value.data, "scale")
        _replace(rewriter, op, call.function("F.scaled_dot_product_attention"))


class SpelledToTorch(RewritePattern):
    """`torch.cumsum(x, dim=1)`, `x.topk(2, dim=-1)`, `F.pad(x, (1, 1))`: the builtins that
    list their own arguments (`nml.SpelledOp`), spelled as their catalogue record says."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.SpelledOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        for name, argument in op.torch_arguments():
            _argument(call, argument, name)
        _replace(rewriter, op, _call(FUNCTIONS[op.FUNCTION].torch, op.tensor, call))


def _argument(call: _Keywords, argument: nml.TorchArgument, name: str) -> None:
    if isinstance(argument, SSAValue):
        call.value(argument, name)
    elif isinstance(argument, tuple):
        items = [v if isinstance(v, SSAValue) else _const(v) for v in argument]
        packed = py.TupleOp([v if isinstance(v, SSAValue) else v.result for v in items])
        call.ops += [*(v for v in items if not isinstance(v, SSAValue)), packed]
        call.value(packed.result, name)
    else:
        call.literal(argument, name)


class CastToTorch(RewritePattern):
    """`x.to(torch.int64)`: `.long()`, `.float()` and `.to(dtype)` alike."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.CastOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        dtype = py.NameOp(nml.TORCH_DTYPES[op.dtype.data])
        call = _Keywords()
        call.ops.append(dtype)
        call.value(dtype.result)
        _replace(rewriter, op, call.method(op.input, "to"))


BINARY_OPERATORS: dict[type[Operation], str] = {
    nml.AddOp: "+",
    nml.SubOp: "-",
    nml.MulOp: "*",
    nml.DivOp: "/",
    nml.PowOp: "**",
    nml.MatmulOp: "@",
    **{op: operator for operator, op in nml.COMPARE_OPS.items()},
}


class BinaryToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.BinaryOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        _replace(rewriter, op, [binary(BINARY_OPERATORS[type(op)], op.lhs, op.rhs)])


class IndexToTorch(RewritePattern):
    """`x[:, -1]`, `x[..., 1:]`, `x[None]`, `x[i]`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.IndexOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        new_ops: list[Operation] = []
        indices: list[SSAValue] = []
        dynamic = iter(op.dynamic_indices)
        for item in op.indices.data:
            if isinstance(item, StringAttr) and item.data == nml.DYNAMIC:
                indices.append(next(dynamic))
                continue
            item_ops = _index_item(item, dynamic)
            new_ops += item_ops
            indices.append(item_ops[-1].results[0])
        _replace(rewriter, op, [*new_ops, py.SubscriptOp(op.input, indices)])


def _index_item(item: Attribute, dynamic: Iterator[SSAValue]) -> list[Operation]:
    if isinstance(item, SliceAttr | StringAttr) and not _is_ellipsis(item):
        parts = item.parameters if isinstance(item, SliceAttr) else (None, None, None)
        constants = [_const(n) if (n := _int_or_none(p)) is not None else None for p in parts]
        given = [c for c in constants if c is not None]
        bounds = [
            next(dynamic) if _is_dynamic(p) else c.result if c is not None else None
            for p, c in zip(parts, constants, strict=True)
        ]
        return [*given, py.SliceOp(*bounds)]
    if _is_ellipsis(item):
        return [py.ConstantOp(py.EllipsisAttr())]
    if isinstance(item, NoneValueAttr):
        return [py.ConstantOp(py.NoneAttr())]
    assert isinstance(item, IntegerAttr)
    return [_const(item.value.data)]


def _is_dynamic(part: Attribute | None) -> bool:
    """A computed slice bound (`x[:, :L]`): its value is the next dynamic operand."""
    return isinstance(part, StringAttr) and part.data == nml.DYNAMIC


def _is_ellipsis(item: Attribute) -> bool:
    return isinstance(item, StringAttr) and item.data == "..."


def _int_or_none(part: Attribute | None) -> int | None:
    return part.value.data if isinstance(part, IntegerAttr) else None


class DimToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.DimOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords().literal(op.index.value.data)
        _replace(rewriter, op, call.method(op.input, "size"))


class ListToTorch(RewritePattern):
    """`[a, b]` is a list; `(a, b)` (marked `tuple` by irgen) a tuple."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ListOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        if "tuple" in op.attributes:
            _replace(rewriter, op, [py.TupleOp(op.elements)])
            return
        _replace(rewriter, op, [py.ListOp(op.elements)])


class TupleGetToTorch(RewritePattern):
    """`nml.tuple_get %t 1` is `t[1]`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.TupleGetOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        index = _const(op.index.value.data)
        _replace(rewriter, op, [index, py.SubscriptOp(op.input, [index.result])])


class ForToTorch(RewritePattern):
    """`nml.for @h` is `for block in self.h:`; `nml.for range(n)` is `for i in range(n):`.

    The body moves as it is; its first argument becomes the element (a layer of
    the list, or the range's value), the others stay the carried values."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ForOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        if op.layers is not None:
            iterable = self_attr(op.layers.root_reference.data)
        else:
            iterable = call("range", list(op.bounds))
        for made in iterable:
            made.location = op.location
        old = op.body.block
        new = Block(arg_types=[py.OBJECT] * len(old.args))
        for old_arg, new_arg in zip(old.args, new.args, strict=True):
            new_arg.name_hint = old_arg.name_hint
        if op.layers is not None:
            new.args[0].name_hint = _element_name(op)
        rewriter.inline_block(old, InsertPoint.at_start(new), new.args)
        loop = py.ForOp(iterable[-1].results[0], Region(new), list(op.inits))
        loop.location = op.location
        for old_result, new_result in zip(op.results, loop.results, strict=True):
            new_result.name_hint = old_result.name_hint
        rewriter.insert(iterable, InsertPoint.before(op))
        rewriter.replace(op, [loop], list(loop.results))


def _element_name(op: nml.ForOp) -> str:
    """The source's loop variable (`block`), kept by irgen on the counter's uses."""
    var = op.attributes.get("var")
    return var.data if isinstance(var, StringAttr) else "layer"


class IfToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.IfOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        regions: list[Region] = []
        for region in (op.then_region, op.else_region):
            block = Block()
            rewriter.inline_block(region.block, InsertPoint.at_start(block), [])
            regions.append(Region(block))
        branch = py.IfOp(op.cond, regions[0], regions[1], len(op.results))
        branch.location = op.location
        for old_result, new_result in zip(op.results, branch.results, strict=True):
            new_result.name_hint = old_result.name_hint
        rewriter.replace(op, [branch], list(branch.results))


class YieldToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.YieldOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, [py.YieldOp(list(op.values))])


class ApplyAtToTorch(RewritePattern):
    """`nml.apply_at @h[%i](%x)`: `block(x)` inside `for block in self.h:`, else `self.h[i](x)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ApplyAtOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        name = op.layer.root_reference.data
        if _is_element_of(op.index, name):
            _replace(rewriter, op, [py.CallOp(op.index, list(op.args))])
            return
        layers = self_attr(name)
        element = py.SubscriptOp(layers[-1].results[0], [op.index])
        _replace(rewriter, op, [*layers, element, py.CallOp(element.result, list(op.args))])


def _is_element_of(index: SSAValue, layers: str) -> bool:
    """Whether `index` is the counter of a loop over the layer list `layers`."""
    if not isinstance(index, BlockArgument) or index.index != 0:
        return False
    loop = index.block.parent_op()
    if isinstance(loop, nml.ForOp):
        return loop.layers is not None and loop.layers.root_reference.data == layers
    if isinstance(loop, py.ForOp):
        owner = loop.iterable.owner
        return isinstance(owner, py.AttributeOp) and owner.attr.data == layers
    return False


class GetAttrToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.GetAttrOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        _replace(rewriter, op, [py.AttributeOp(op.input, op.attr_name.data)])


def _kernel_entry(op: nml.KernelCallOp) -> str:
    """What a model's forward calls for a kernel: its launcher's `entry` (the custom op,
    or the function that keeps the outputs its backward saves); a script's own call,
    and a kernel without one, call the launcher, as written."""
    name = op.kernel.root_reference.data
    module = op.get_toplevel_object()
    if enclosing_model(op) is None or not isinstance(module, Operation):
        return f"{name}_launcher"
    launcher = lookup_symbol(module, f"{name}_launcher", kernel.LauncherOp)
    if launcher is not None and launcher.entry is not None:
        return launcher.entry.data
    return f"{name}_launcher"


class KernelCallToTorch(RewritePattern):
    """`nml.kernel_call @vector_add(...)` calls the kernel's launcher, `vector_add_launcher`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.KernelCallOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        launcher = _kernel_entry(op)
        names = [n.data for n in op.arg_names]
        function, launch = call(launcher, list(op.args), names)
        assert isinstance(launch, py.CallOp)
        for made in (function, launch):
            made.location = op.location
        rewriter.insert([function, launch], InsertPoint.before(op))
        results: list[SSAValue] = []
        for index, result in enumerate(op.res):
            if len(op.res) == 1:
                results.append(launch.result)
                continue
            item = _const(index)
            element = py.SubscriptOp(launch.result, [item.result])
            element.result.name_hint = result.name_hint
            rewriter.insert([item, element], InsertPoint.before(op))
            results.append(element.result)
        if len(op.res) == 1:
            launch.result.name_hint = op.res[0].name_hint
        rewriter.replace(op, [], results)


PYTHON_UNARY = {"not": "not", "+": "+", "-": "-", "~": "~"}
PYTHON_BINARY = py.BINARY_OPERATORS | py.COMPARISON_OPERATORS


class CallToTorch(RewritePattern):
    """A call `resolve-nml` left as is: an operator, a function or a method."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.CallOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        callee, args = op.callee.data, list(op.args)
        names = [n.data for n in op.arg_names]
        if callee in PYTHON_BINARY and len(args) == 2:
            _replace(rewriter, op, [binary(callee, args[0], args[1])])
        elif callee in PYTHON_UNARY and len(args) == 1:
            _replace(rewriter, op, [py.UnaryOp(PYTHON_UNARY[callee], args[0])])
        elif op.method is not None:
            method = callee.rsplit(".", 1)[-1]
            bound = py.AttributeOp(args[0], method)
            _replace(rewriter, op, [bound, py.CallOp(bound.result, args[1:], names[1:])])
        else:
            _replace(rewriter, op, call(callee, args, names))


class ReturnToTorch(RewritePattern):
    """`return (recon, mu, logvar)` is `return recon, mu, logvar`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ReturnOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        values = list(op.values)
        owner = values[0].owner if len(values) == 1 else None
        unpacked = (
            isinstance(owner, nml.ListOp)
            and "tuple" in owner.attributes
            and len(list(owner.result.uses)) == 1
            and len(owner.elements) > 0
        )
        if unpacked:
            assert isinstance(owner, nml.ListOp)
            values = list(owner.elements)
        _replace(rewriter, op, [py.ReturnOp(values)])
        if unpacked:
            assert isinstance(owner, nml.ListOp)
            rewriter.erase(owner)


BODY_PATTERNS: tuple[RewritePattern, ...] = (
    ConstantToTorch(),
    RefToTorch(),
    ApplyToTorch(),
    UnaryToTorch(),
    GeluToTorch(),
    ClampToTorch(),
    SoftmaxToTorch(),
    DropoutToTorch(),
    FlattenToTorch(),
    ReshapeToTorch(),
    PermuteToTorch(),
    TransposeToTorch(),
    ReductionToTorch(),
    LossToTorch(),
    CatToTorch(),
    SplitToTorch(),
    SizesToTorch(),
    ArangeToTorch(),
    ShapeOpToTorch(),
    EinsumToTorch(),
    SelectToTorch(),
    AttentionToTorch(),
    SpelledToTorch(),
    CastToTorch(),
    BinaryToTorch(),
    IndexToTorch(),
    DimToTorch(),
    ListToTorch(),
    TupleGetToTorch(),
    ForToTorch(),
    IfToTorch(),
    YieldToTorch(),
    ApplyAtToTorch(),
    GetAttrToTorch(),
    KernelCallToTorch(),
    CallToTorch(),
    ReturnToTorch(),
)


# ------------------------------------------------- attribute expressions


def attr_ops(attr: Attribute) -> list[Operation]:
    """An attribute expression as `py` ops (the last gives its value); a config reference
    is the `__init__` parameter of that name."""
    if isinstance(attr, CfgAttr):
        return [py.NameOp(attr.param.data)]
    if isinstance(attr, ExprAttr):
        parts = [attr_ops(a) for a in attr.operands.data]
        values = [p[-1].results[0] for p in parts]
        ops = [op for part in parts for op in part]
        if attr.op.data == "neg":
            return [*ops, py.UnaryOp("-", values[0])]
        if attr.op.data == "not":
            return [*ops, py.UnaryOp("not", values[0])]
        if attr.op.data == "if":  # `a if cond else b`: operands cond, a, b
            return [*ops, py.IfExpOp(values[0], values[1], values[2])]
        if attr.op.data == "[]":
            return [*ops, py.SubscriptOp(values[0], [values[1]])]
        return [*ops, binary(attr.op.data, values[0], values[1])]
    if isinstance(attr, ArrayAttr):
        parts = [attr_ops(a) for a in attr.data]
        items = [p[-1].results[0] for p in parts]
        return [*(op for part in parts for op in part), py.TupleOp(items)]
    if isinstance(attr, CallAttr):
        return _call_ops(attr.callee.data, list(attr.args.data), _items(attr.kwargs))
    if isinstance(attr, NoneValueAttr):
        return [py.ConstantOp(py.NoneAttr())]
    return [py.ConstantOp(attr)]


def _call_ops(
    callee: str, args: Sequence[Attribute], kwargs: Sequence[tuple[str, Attribute]]
) -> list[Operation]:
    """`callee(args, key=value)` of attribute expressions."""
    function = py.NameOp(f"math.{callee}" if callee in CONFIG_FUNCTIONS else callee)
    ops: list[Operation] = [function]
    values: list[SSAValue] = []
    for arg in [*args, *(v for _, v in kwargs)]:
        part = attr_ops(arg)
        ops += part
        values.append(part[-1].results[0])
    names = [""] * len(args) + [k for k, _ in kwargs]
    return [*ops, py.CallOp(function.result, values, names)]


# ----------------------------------------------------------- model to class


@dataclass
class ModelToClass(RewritePattern):
    """`nml.model` becomes a `torch.module_class` at the end of `script`."""

    script: t.ScriptOp
    models: frozenset[str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ModelOp, rewriter: PatternRewriter) -> None:
        defaults_ops, params, param_defaults = _init_params(op)
        methods = [_method(func, rewriter) for func in _funcs(op)]
        fields = _fields(op, methods)
        layers = layers_of(op).values()
        submodules = [o for layer in layers for o in self._submodule(op, layer)]
        submodules += _grouped_inits([i for layer in layers for i in self._inits(op, layer)])
        origin = f" from {PurePath(op.origin.data).name}" if op.origin is not None else ""
        cls = t.ModuleClassOp(
            op.sym_name.data,
            params,
            [*param_defaults, *fields, *submodules, *methods],
            doc=f"The `{op.sym_name.data}` model{origin}.",
        )
        cls.location = op.location
        for default in defaults_ops:
            default.location = op.location
        rewriter.insert([*defaults_ops, cls], InsertPoint.at_end(self.script.body.block))
        rewriter.erase(op, safe_erase=False)

    def _submodule(self, model: nml.ModelOp, layer: nml.LayerOp) -> list[Operation]:
        """The ops computing the layer's module, then `torch.submodule` storing it."""
        kind = layer.kind.data
        args = list(layer.args.data)
        kwargs = _items(layer.kwargs)
        if kind == PARAMETER:
            value = _parameter_ops(args, layer.kwargs)
        elif kind == "Sequential":
            parts = [_layer_ops(a) for a in args]
            value = _joined_call("nn.Sequential", parts)
        else:
            spec = lookup(kind)
            cls_name = kind
            if kind not in self.models and spec is not None:
                bound = bind_layer(layer, model_env(model))
                cls_name = spec.torch_class_of(bound) if bound is not None else spec.torch_class
                kwargs = [(k, v) for k, v in kwargs if k not in spec.init_keywords()]
                kwargs += _forced_kwargs(kind, len(args), kwargs)
            element = _call_ops(cls_name, args, kwargs)
            value = element if layer.count is None else _module_list(element, layer)
        if layer.when is not None:  # `if downsample:` in `@layers`: the module, or None
            condition, none = attr_ops(layer.when), py.ConstantOp(py.NoneAttr())
            built = [*value, py.YieldOp([value[-1].results[0]])]
            choice = py.IfOp(condition[-1].results[0], built, [none, py.YieldOp([none.result])], 1)
            choice.results[0].name_hint = layer.sym_name.data
            value = [*condition, choice]
        return [
            _at(o, layer)
            for o in [*value, t.SubmoduleOp(layer.sym_name.data, value[-1].results[0])]
        ]

    def _inits(self, model: nml.ModelOp, layer: nml.LayerOp) -> list[_Init]:
        """The layer's `nn.init` calls (`init="normal", std=0.02`), after every submodule."""
        kind = layer.kind.data
        spec = lookup(kind)
        if kind in self.models or spec is None or kind == PARAMETER:
            return []
        bound = bind_layer(layer, model_env(model))
        if bound is None:
            return []
        name, each = layer.sym_name.data, layer.count is not None
        if kind != "Sequential":
            return _init_steps(name, "", spec, bound, layer.kwargs.data, each, layer)
        elements = bound["layers"]
        assert isinstance(elements, list)
        inits: list[_Init] = []
        for i, (attr, element) in enumerate(zip(layer.args.data, elements, strict=True)):
            if isinstance(attr, CallAttr) and isinstance(element, BoundLayer):
                kwargs = attr.kwargs.data
                inits += _init_steps(name, f"{i}.", element.spec, element, kwargs, each, layer)
        return inits


@dataclass(frozen=True)
class _Init:
    """One `nn.init.<function>(self.<field>.<tensor>, key=value)` of `__init__`; `each`:
    for every element of the layer list `self.<field>`."""

    field: str
    tensor: str  # as `named_parameters()` spells it: `0.weight` is `[0].weight`
    function: str
    kwargs: list[tuple[str, Attribute]]
    each: bool
    layer: nml.LayerOp


def _init_steps(
    field: str,
    prefix: str,
    spec: LayerSpec,
    bound: BoundLayer,
    kwargs: Mapping[str, Attribute],
    each: bool,
    layer: nml.LayerOp,
) -> list[_Init]:
    """`spec.init_plan(bound)`, with the arguments the layer was given."""
    inits: list[_Init] = []
    for step in spec.init_plan(bound):
        given = [("mean", step.mean), ("std", step.std), *step.options]
        chosen = [(k, kwargs[kw]) for k, kw in given if kw is not None]
        inits.append(_Init(field, prefix + step.tensor, step.function, chosen, each, layer))
    return inits


def _grouped_inits(inits: Sequence[_Init]) -> list[Operation]:
    """The `nn.init` statements: `nn.init.normal_(self.wte.weight, std=0.02)`, and one
    `for layer in self.h:` around consecutive ones of the same layer list."""
    ops: list[Operation] = []
    i = 0
    while i < len(inits):
        first = inits[i]
        if not first.each:
            ops += [_at(o, first.layer) for o in _init_call(first, _self_attr(first.field))]
            i += 1
            continue
        group = [first]
        while i + len(group) < len(inits):
            following = inits[i + len(group)]
            if not (following.each and following.field == first.field):
                break
            group.append(following)
        i += len(group)
        layers = _self_attr(first.field)
        loop = py.ForOp(layers[-1].results[0])
        element = loop.body.block.args[0]
        element.name_hint = "layer"
        for init in group:
            loop.body.block.add_ops(_init_call(init, [], element))
        ops += [_at(o, first.layer) for o in [*layers, loop]]
    return ops


def _self_attr(field: str) -> list[Operation]:
    owner = py.NameOp("self")
    return [owner, py.AttributeOp(owner.result, field)]


def _init_call(
    init: _Init, module: list[Operation], value: SSAValue | None = None
) -> list[Operation]:
    """`nn.init.normal_(<module>.weight, std=0.02)`."""
    ops = list(module)
    target = value if value is not None else ops[-1].results[0]
    for part in init.tensor.split("."):
        if part.isdigit():
            index = py.ConstantOp(IntegerAttr(int(part), 64))
            ops += [index, py.SubscriptOp(target, [index.result])]
        else:
            ops.append(py.AttributeOp(target, part))
        target = ops[-1].results[0]
    arguments: list[SSAValue] = [target]
    for _, attr in init.kwargs:
        part_ops = attr_ops(attr)
        ops += part_ops
        arguments.append(part_ops[-1].results[0])
    function = py.NameOp(f"nn.init.{init.function}")
    names = [""] + [k for k, _ in init.kwargs]
    call_op = py.CallOp(function.result, arguments, names)
    return [*ops, function, call_op, py.ExprOp(call_op.results[0])]


def _joined_call(callee: str, parts: Sequence[list[Operation]]) -> list[Operation]:
    function = py.NameOp(callee)
    values = [p[-1].results[0] for p in parts]
    return [function, *(o for p in parts for o in p), py.CallOp(function.result, values)]


def _module_list(element: list[Operation], layer: nml.LayerOp) -> list[Operation]:
    """`nn.ModuleList([Block(...) for _ in range(n)])`; a per-position list names its loop
    variable, which its arguments read: `[Block(d, stride=2 if i == 0 else 1) for i in
    range(n)]`, `[Stage(w) for w in widths]`."""
    assert layer.count is not None
    if layer.items is not None:
        iterable = attr_ops(layer.items)
    else:
        counted = attr_ops(layer.count)
        iterable = [*counted, *call("range", [counted[-1].results[0]])]
    copies = py.ComprehensionOp("list", iterable[-1].results[0])
    var = copies.body.block.args[0]
    var.name_hint = layer.var.data if layer.var is not None else "_"
    copies.body.block.add_ops([*element, py.YieldOp([element[-1].results[0]])])
    for op in element:  # the loop variable, read as a config by name, is the block's argument
        if layer.var is not None and isinstance(op, py.NameOp) and op.id.data == layer.var.data:
            op.result.replace_all_uses_with(var)
            op.detach()
            op.erase()
    return _joined_call("nn.ModuleList", [[*iterable, copies]])


def _parameter_ops(shape: Sequence[Attribute], kwargs: DictionaryAttr) -> list[Operation]:
    """`nn.Parameter(torch.zeros(1, 1, d))`, `torch.ones(...)`, `torch.randn(...) * std + mean`,
    `torch.empty(...).uniform_(a, b)`, `torch.full((...), value)`, `torch.tensor(values)`;
    without sizes a 0-d tensor (`torch.zeros(())`)."""
    init_attr = kwargs.data.get("init")
    init = init_attr.data if isinstance(init_attr, StringAttr) else "zeros"
    values = kwargs.data.get("values")
    if values is not None and not isinstance(values, NoneValueAttr):
        dtype = py.NameOp("torch.float32")
        created = _call_ops("torch.tensor", [values], [])
        call = created[-1]
        assert isinstance(call, py.CallOp)
        value = [
            *created[:-1],
            dtype,
            py.CallOp(call.operands[0], [*call.operands[1:], dtype.result], ["", "dtype"]),
        ]
        return _joined_call("nn.Parameter", [value])
    sizes: Sequence[Attribute] = shape if shape else [ArrayAttr([])]
    if init == "constant":
        value = _call_ops(
            "torch.full",
            [ArrayAttr(list(shape)), kwargs.data.get("value") or FloatAttr(0.0, 64)],
            [],
        )
        return _joined_call("nn.Parameter", [value])
    creator = {"ones": "torch.ones", "normal": "torch.randn", "uniform": "torch.empty"}.get(
        init, "torch.zeros"
    )
    value = _call_ops(creator, sizes, [])
    if init == "uniform":
        bounds = [kwargs.data.get(k) or FloatAttr(d, 64) for k, d in (("a", 0.0), ("b", 1.0))]
        method = py.AttributeOp(value[-1].results[0], "uniform_")
        parts = [attr_ops(b) for b in bounds]
        value = [
            *value,
            method,
            *parts[0],
            *parts[1],
            py.CallOp(method.result, [parts[0][-1].results[0], parts[1][-1].results[0]], ["", ""]),
        ]
    if init == "normal":
        for key, operator, neutral in (("std", "*", 1.0), ("mean", "+", 0.0)):
            given = kwargs.data.get(key)
            if given is None or (isinstance(given, IntegerAttr | FloatAttr)
                                 and float(given.value.data) == neutral):  # fmt: skip
                continue
            amount = attr_ops(given)
            value = [
                *value,
                *amount,
                py.BinOp(operator, value[-1].results[0], amount[-1].results[0]),
            ]
    return _joined_call("nn.Parameter", [value])


def _layer_ops(attr: Attribute) -> list[Operation]:
    """An element of `Sequential(...)`: `Linear(d, 4 * d)` is `nn.Linear(d, 4 * d)`."""
    if not isinstance(attr, CallAttr):
        return attr_ops(attr)
    spec = lookup(attr.callee.data)
    args = list(attr.args.data)
    kwargs = _items(attr.kwargs)
    if spec is None:
        return _call_ops(attr.callee.data, args, kwargs)
    kwargs = [(k, v) for k, v in kwargs if k not in spec.init_keywords()]
    kwargs += _forced_kwargs(spec.name, len(args), kwargs)
    return _call_ops(spec.torch_class, args, kwargs)


_OpT = TypeVar("_OpT", bound=Operation)


def _at(op: _OpT, like: Operation) -> _OpT:
    op.location = like.location
    return op


def _items(attr: DictionaryAttr) -> list[tuple[str, Attribute]]:
    return list(attr.data.items())


def _forced_kwargs(
    kind: str, positional: int, kwargs: list[tuple[str, Attribute]]
) -> list[tuple[str, Attribute]]:
    """TensorLoom's conventions (`batch_first=True`) unless the user set the argument."""
    spec = lookup(kind)
    assert spec is not None
    by_position = [p.name for p in spec.params if not p.kw_only][:positional]
    given = {k for k, _ in kwargs} | set(by_position)
    return [(k, _forced_value(v)) for k, v in spec.forced_kwargs if k not in given]


def _forced_value(source: str) -> Attribute:
    """A catalogue convention's value (`"True"`, `"1e-06"`, `'"same"'`) as an attribute."""
    value = ast.literal_eval(source)
    if isinstance(value, bool):
        return IntegerAttr(int(value), 1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, 64)
    if value is None:
        return NoneValueAttr()
    assert isinstance(value, str), f"compiler bug: forced keyword {source!r}"
    return StringAttr(value)


def _init_params(
    model: nml.ModelOp,
) -> tuple[list[Operation], list[tuple[str, SSAValue]], list[Operation]]:
    """The ops of `__init__`'s defaults (before the class), its parameters, and
    `torch.param_default`s (in the class) for defaults that use other configs."""
    before: list[Operation] = []
    params: list[tuple[str, SSAValue]] = []
    inside: list[Operation] = []
    for name, config in configs_of(model).items():
        if not mentions_config(config.value):
            value = attr_ops(config.value)
            before += value
            params.append((name, value[-1].results[0]))
            continue
        none = py.ConstantOp(py.NoneAttr())
        before.append(none)
        params.append((name, none.result))
        value = attr_ops(config.value)
        default = t.ParamDefaultOp(name, value[-1].results[0])
        inside += [*(_at(o, config) for o in value), _at(default, config)]
    return before, params, inside


def _funcs(model: nml.ModelOp) -> list[nml.FuncOp]:
    return [op for op in model.body.block.ops if isinstance(op, nml.FuncOp)]


def _method(func: nml.FuncOp, rewriter: PatternRewriter) -> py.DefOp:
    """`def forward(self, x):`; the body reads `self` by name."""
    names = [n.data for n in func.arg_names]
    method = py.DefOp(func.sym_name.data, ["self", *names])
    method.location = func.location
    old = func.body.block
    new = method.body.block
    for old_arg, new_arg in zip(old.args, new.args[1:], strict=True):
        new_arg.location = old_arg.location
    rewriter.inline_block(old, InsertPoint.at_start(new), new.args[1:])
    return method


def _fields(model: nml.ModelOp, methods: Sequence[py.DefOp]) -> list[Operation]:
    """`self.<config> = <config>` for each config a method reads."""
    configs = configs_of(model)
    read: list[str] = []
    for method in methods:
        for op in method.walk():
            if _is_self_attr(op) and op.attr.data in configs:  # type: ignore[attr-defined]
                read.append(op.attr.data)  # type: ignore[attr-defined]
    ops: list[Operation] = []
    for name in dict.fromkeys(read):
        value = py.NameOp(name)
        ops += [value, t.FieldOp(name, value.result)]
    return ops


def _is_self_attr(op: Operation) -> bool:
    if not isinstance(op, py.AttributeOp):
        return False
    owner = op.value.owner
    return isinstance(owner, py.NameOp) and owner.id.data == "self"


# ------------------------------------------------------------------- pass


def _runtime_modules(models: Sequence[nml.ModelOp]) -> list[str]:
    """The runtime modules the models' layers are built from (`attention` for a causal
    `MultiHeadAttention`), each once, in order of first use."""
    names: list[str] = []
    for model in models:
        env = model_env(model)
        for layer in layers_of(model).values():
            bound = bind_layer(layer, env)
            module = bound.spec.runtime_module(bound) if bound is not None else None
            if module is not None and module not in names:
                names.append(module)
    return names


def script_of(module: ModuleOp) -> t.ScriptOp:
    """The module's `torch.script`, created if absent (the printer adds the imports it needs)."""
    for op in module.body.block.ops:
        if isinstance(op, t.ScriptOp):
            return op
    script = t.ScriptOp([], _source(module))
    Rewriter.insert_op(script, InsertPoint.at_start(module.body.block))
    return script


def _source(module: ModuleOp) -> str | None:
    """The file being compiled: the origin of the last model (imported ones come first)."""
    origins = [op.origin.data for op in module.walk() if isinstance(op, nml.ModelOp) and op.origin]
    return PurePath(origins[-1]).name if origins else None


@dataclass(frozen=True)
class ConvertNmlToTorchPass(ModulePass):
    """Lowers every `nml.model` to a `torch.module_class`; see the module docstring."""

    name = "convert-nml-to-torch"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        models = [m for m in op.walk() if isinstance(m, nml.ModelOp)]
        functions = [f for f in op.body.block.ops if isinstance(f, nml.FuncOp)]
        if not models and not functions:
            return
        script = script_of(op)
        uses_runtime = bool(_runtime_modules(models))
        defs = [_function(func) for func in functions]  # step 3, lowered with the bodies
        # Users before producers, so that a pattern still sees its operands' nml types.
        body = GreedyRewritePatternApplier(list(BODY_PATTERNS))
        PatternRewriteWalker(body, walk_reverse=True).rewrite_module(op)
        to_class = ModelToClass(script, frozenset(m.sym_name.data for m in models))
        PatternRewriteWalker(to_class, apply_recursively=False).rewrite_module(op)
        for function in defs:
            function.detach()
            script.body.block.add_op(function)
        if uses_runtime and not any(isinstance(o, t.RuntimeOp) for o in script.body.block.ops):
            script.body.block.add_op(t.RuntimeOp())  # the layers' helpers, after the classes


def _function(func: nml.FuncOp) -> py.DefOp:
    """A top-level `nml.func` as a `py.def` in its place (moved after the classes later)."""
    names = [n.data for n in func.arg_names]
    function = py.DefOp(func.sym_name.data, names)
    function.location = func.location
    old, new = func.body.block, function.body.block
    for old_arg, new_arg in zip(old.args, new.args, strict=True):
        new_arg.location = old_arg.location
    Rewriter.inline_block(old, InsertPoint.at_start(new), new.args)
    Rewriter.replace_op(func, function)
    return function


__all__ = ["BODY_PATTERNS", "ConvertNmlToTorchPass", "attr_ops", "script_of"]
