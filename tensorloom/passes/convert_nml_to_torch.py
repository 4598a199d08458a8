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

becomes, inside the module's `torch.script` (created if absent),

    torch.module_class @Block(d_model = "512") : "nn.Module" doc "..." {
      torch.submodule "norm" = "nn.LayerNorm"("d_model")
      torch.method @forward(x) {
      ^bb0(%x: !torch.value):
        %0 = torch.call_module "norm"(%x)
        %1 = torch.call_function "F.relu"(%0)
        torch.return %1
      }
    }

Steps:
1. Body ops, one pattern each (`BODY_PATTERNS`): layer applications become
   submodule calls with the catalogue's call kind; functional builtins become
   the PyTorch call a person would write (`F.relu(x)`, `torch.softmax(x, dim=-1)`,
   `x.flatten(1)`, `x @ y`, `torch.cat([a, b], dim=1)`); config references become
   `self.<name>`. Results keep their `name_hint`s and every new op the location
   of the op it replaces.
2. `ModelToClass`: configs become `__init__` parameters with their defaults (a
   default computed from other configs is `None` plus a `torch.param_default`);
   layers become submodules, their arguments Python source in which a config
   is the `__init__` parameter (`nn.Linear(d_model, 4 * d_model)`); a layer whose
   kind is another model is an instance of that class; a config read in a
   method is stored as `self.<name>` in `__init__`.
3. A `.tl` file's top-level functions (losses and metrics, `fn my_loss(out, y)`)
   become `torch.def`s after the classes, their bodies lowered by the same patterns.
Ops outside models (the training script's) are left to `convert-train-to-torch`,
which moves a script's top-level statements into a `torch.def` and lowers them
with `BODY_PATTERNS` (they also match nml ops directly inside a `torch.def`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

from tensorloom.backends.python_printer import BINARY_PRECEDENCE, Precedence, PyExpr, python_literal
from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.catalogue.layers import BoundLayer, LayerSpec, lookup
from tensorloom.catalogue.layers.parameter import PARAMETER, parameter_source
from tensorloom.dialects import nml
from tensorloom.dialects import torch as t
from tensorloom.dialects.nml.types import CallAttr, CfgAttr, ExprAttr, NoneValueAttr, SliceAttr
from tensorloom.passes.check_scopes import MODULE_ATTRIBUTES
from tensorloom.passes.model_env import (
    CONFIG_FUNCTIONS,
    bind_layer,
    configs_of,
    enclosing_model,
    layers_of,
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


def _const(value: int | float | bool | str | None) -> t.ConstantOp:
    if value is None:
        return t.ConstantOp(t.NoneAttr())
    if isinstance(value, bool):
        return t.ConstantOp(IntegerAttr(int(value), 1))
    if isinstance(value, int):
        return t.ConstantOp(IntegerAttr(value, i64))
    if isinstance(value, float):
        return t.ConstantOp(FloatAttr(value, 64))
    return t.ConstantOp(StringAttr(value))


def _in_body(op: Operation) -> bool:
    """In a model's method, or in the `torch.def` that convert-train-to-torch moved a
    script's top-level statements into (loops and branches in between)."""
    if enclosing_model(op) is not None:
        return True
    parent = op.parent_op()
    while isinstance(parent, CONTROL_FLOW):
        parent = parent.parent_op()
    return isinstance(parent, t.DefOp)


CONTROL_FLOW = (nml.ForOp, nml.IfOp, t.ForOp, t.IfOp)


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
        return [*self.ops, t.CallFunctionOp(callee, self.args, self.names)]

    def method(self, receiver: SSAValue, method: str) -> list[Operation]:
        return [*self.ops, t.CallMethodOp(receiver, method, self.args, self.names)]


# --------------------------------------------------------- body patterns


class ConstantToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ConstantOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        value = t.NoneAttr() if isinstance(op.value, NoneValueAttr) else op.value
        _replace(rewriter, op, [t.ConstantOp(value)])


class RefToTorch(RewritePattern):
    """`nml.ref @d_model` (a config or layer of the model) is `self.d_model`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.RefOp, rewriter: PatternRewriter) -> None:
        model = enclosing_model(op)
        name = op.symbol.root_reference.data
        known = name in configs_of(model) or name in layers_of(model) if model else False
        if model is None or not (known or name in MODULE_ATTRIBUTES):
            return
        _replace(rewriter, op, [t.SelfAttrOp(name)])


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
        names = [n.data for n in op.arg_names] if op.arg_names else None
        _replace(rewriter, op, [t.CallModuleOp(name, op.args, names, kind)])


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
            _replace(rewriter, op, [t.UnaryOp("-", op.input)])
            return
        spec = FUNCTIONS[op.name.removeprefix("nml.")]
        _replace(rewriter, op, _call(spec.torch, op.input, _Keywords()))


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
        p = _const(op.p.value.data)
        _replace(rewriter, op, [p, t.DropoutOp(op.input, p.result)])


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
    size = _Keywords().literal(axis)
    call.ops += [*size.ops, size_op := t.CallMethodOp(source, "size", size.args)]
    call.value(size_op.result)


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
            dims_tuple = t.TupleOp([c.result for c in items])
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
        tensors = t.ListOp(op.inputs)
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
                listed = t.ListOp(sizes.args)
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
            device = t.GetAttrOp(block.args[0], "device")
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
    packed = t.TupleOp([c.result for c in items])
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
        if op.dropout is not None:
            p, zero, flag = _const(op.dropout.value.data), _const(0.0), t.SelfAttrOp("training")
            choice = t.TernaryOp(flag.result, p.result, zero.result)
            call.ops += [p, zero, flag, choice]
            call.value(choice.result, "dropout_p")
        if op.causal is not None:
            call.literal(True, "is_causal")
        if op.scale is not None:
            call.literal(op.scale.value.data, "scale")
        _replace(rewriter, op, call.function("F.scaled_dot_product_attention"))


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
        _replace(rewriter, op, [t.BinaryOp(BINARY_OPERATORS[type(op)], op.lhs, op.rhs)])


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
            item_ops = _index_item(item)
            new_ops += item_ops
            indices.append(item_ops[-1].results[0])
        _replace(rewriter, op, [*new_ops, t.GetItemOp(op.input, indices)])


def _index_item(item: Attribute) -> list[Operation]:
    if isinstance(item, SliceAttr | StringAttr) and not _is_ellipsis(item):
        parts = item.parameters if isinstance(item, SliceAttr) else (None, None, None)
        constants = [_const(_int_or_none(p)) for p in parts]
        return [*constants, t.SliceOp(*(c.result for c in constants))]
    if _is_ellipsis(item):
        return [t.ConstantOp(t.EllipsisAttr())]
    if isinstance(item, NoneValueAttr):
        return [t.ConstantOp(t.NoneAttr())]
    assert isinstance(item, IntegerAttr)
    return [_const(item.value.data)]


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
            _replace(rewriter, op, [t.TupleOp(op.elements)])
            return
        _replace(rewriter, op, [t.ListOp(op.elements)])


class TupleGetToTorch(RewritePattern):
    """`nml.tuple_get %t 1` is `t[1]`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.TupleGetOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        index = _const(op.index.value.data)
        _replace(rewriter, op, [index, t.GetItemOp(op.input, [index.result])])


class ForToTorch(RewritePattern):
    """`nml.for @h` is `for block in self.h:`; `nml.for range(n)` is `for i in range(n):`.

    The body moves as it is; its first argument becomes the element (a layer of
    the list, or the range's value), the others stay the carried values."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ForOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        if op.layers is not None:
            iterable: Operation = t.SelfAttrOp(op.layers.root_reference.data)
        else:
            iterable = t.CallFunctionOp("range", list(op.bounds))
        iterable.location = op.location
        old = op.body.block
        new = Block(arg_types=[t.VALUE] * len(old.args))
        for old_arg, new_arg in zip(old.args, new.args, strict=True):
            new_arg.name_hint = old_arg.name_hint
        if op.layers is not None:
            new.args[0].name_hint = _element_name(op)
        rewriter.inline_block(old, InsertPoint.at_start(new), new.args)
        loop = t.ForOp(iterable.results[0], list(op.inits), Region(new))
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
        branch = t.IfOp(op.cond, len(op.results), regions[0], regions[1])
        branch.location = op.location
        for old_result, new_result in zip(op.results, branch.results, strict=True):
            new_result.name_hint = old_result.name_hint
        rewriter.replace(op, [branch], list(branch.results))


class YieldToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.YieldOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, [t.YieldOp(list(op.values))])


class ApplyAtToTorch(RewritePattern):
    """`nml.apply_at @h[%i](%x)`: `block(x)` inside `for block in self.h:`, else `self.h[i](x)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ApplyAtOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        name = op.layer.root_reference.data
        if _is_element_of(op.index, name):
            _replace(rewriter, op, [t.CallValueOp(op.index, list(op.args))])
            return
        layers = t.SelfAttrOp(name)
        element = t.GetItemOp(layers.result, [op.index])
        _replace(rewriter, op, [layers, element, t.CallValueOp(element.result, list(op.args))])


def _is_element_of(index: SSAValue, layers: str) -> bool:
    """Whether `index` is the counter of a loop over the layer list `layers`."""
    if not isinstance(index, BlockArgument) or index.index != 0:
        return False
    loop = index.block.parent_op()
    if isinstance(loop, nml.ForOp):
        return loop.layers is not None and loop.layers.root_reference.data == layers
    if isinstance(loop, t.ForOp):
        owner = loop.iterable.owner
        return isinstance(owner, t.SelfAttrOp) and owner.attr_name.data == layers
    return False


class GetAttrToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.GetAttrOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        _replace(rewriter, op, [t.GetAttrOp(op.input, op.attr_name.data)])


class KernelCallToTorch(RewritePattern):
    """`nml.kernel_call @vector_add(...)` calls the kernel's launcher, `vector_add_launcher`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.KernelCallOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        launcher = f"{op.kernel.root_reference.data}_launcher"
        names = [n.data for n in op.arg_names]
        launch = t.KernelLaunchOp(launcher, op.args, names)
        launch.location = op.location
        rewriter.insert(launch, InsertPoint.before(op))
        results: list[SSAValue] = []
        for index, result in enumerate(op.res):
            if len(op.res) == 1:
                results.append(launch.result)
                continue
            item = _const(index)
            element = t.GetItemOp(launch.result, [item.result])
            element.result.name_hint = result.name_hint
            rewriter.insert([item, element], InsertPoint.before(op))
            results.append(element.result)
        if len(op.res) == 1:
            launch.result.name_hint = op.res[0].name_hint
        rewriter.replace(op, [], results)


PYTHON_UNARY = {"not": "not", "+": "+", "-": "-", "~": "~"}


class CallToTorch(RewritePattern):
    """A call `resolve-nml` left as is: an operator, a function or a method."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.CallOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        callee, args = op.callee.data, list(op.args)
        names = [n.data for n in op.arg_names]
        if callee in t.BINARY_OPERATORS and len(args) == 2:
            _replace(rewriter, op, [t.BinaryOp(callee, args[0], args[1])])
        elif callee in PYTHON_UNARY and len(args) == 1:
            _replace(rewriter, op, [t.UnaryOp(PYTHON_UNARY[callee], args[0])])
        elif op.method is not None:
            method = callee.rsplit(".", 1)[-1]
            _replace(rewriter, op, [t.CallMethodOp(args[0], method, args[1:], names[1:])])
        else:
            _replace(rewriter, op, [t.CallFunctionOp(callee, args, names)])


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
        _replace(rewriter, op, [t.ReturnOp(values)])
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


def attr_source(attr: Attribute) -> PyExpr:
    """An attribute expression as Python source; a config reference is its name."""
    if isinstance(attr, CfgAttr):
        return PyExpr(attr.param.data)
    if isinstance(attr, ExprAttr):
        return _expr_source(attr)
    if isinstance(attr, ArrayAttr):
        items = [attr_source(a).at_least(Precedence.TERNARY) for a in attr.data]
        return PyExpr(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})")
    if isinstance(attr, CallAttr):
        return _call_source(attr)
    if isinstance(attr, NoneValueAttr):
        return PyExpr("None")
    return python_literal(attr)


def _expr_source(attr: ExprAttr) -> PyExpr:
    operator = attr.op.data
    operands = [attr_source(a) for a in attr.operands.data]
    if operator == "neg":
        return PyExpr(f"-{operands[0].at_least(Precedence.UNARY)}", Precedence.UNARY)
    precedence = BINARY_PRECEDENCE[operator]
    if operator == "**":
        left, right = Precedence.PRIMARY, Precedence.UNARY
    else:
        left, right = precedence, Precedence(precedence + 1)
    text = f"{operands[0].at_least(left)} {operator} {operands[1].at_least(right)}"
    return PyExpr(text, precedence)


def _call_source(attr: CallAttr) -> PyExpr:
    args = [attr_source(a).at_least(Precedence.TERNARY) for a in attr.args.data]
    kwargs = [
        f"{k}={attr_source(v).at_least(Precedence.TERNARY)}" for k, v in attr.kwargs.data.items()
    ]
    callee = attr.callee.data
    return PyExpr.call(f"math.{callee}" if callee in CONFIG_FUNCTIONS else callee, [*args, *kwargs])


def _mentions_config(attr: Attribute) -> bool:
    if isinstance(attr, CfgAttr):
        return True
    children: Sequence[Attribute] = ()
    if isinstance(attr, ExprAttr):
        children = attr.operands.data
    elif isinstance(attr, ArrayAttr):
        children = attr.data
    elif isinstance(attr, CallAttr):
        children = [*attr.args.data, *attr.kwargs.data.values()]
    return any(_mentions_config(c) for c in children)


# ----------------------------------------------------------- model to class


@dataclass
class ModelToClass(RewritePattern):
    """`nml.model` becomes a `torch.module_class` at the end of `script`."""

    script: t.ScriptOp
    models: frozenset[str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ModelOp, rewriter: PatternRewriter) -> None:
        params, defaults = _init_params(op)
        methods = [_method(func, rewriter) for func in _funcs(op)]
        fields = _fields(op, methods)
        layers = layers_of(op).values()
        submodules = [self._submodule(op, layer) for layer in layers]
        submodules += [init for layer in layers for init in self._inits(op, layer)]
        origin = f" from {PurePath(op.origin.data).name}" if op.origin is not None else ""
        cls = t.ModuleClassOp(
            op.sym_name.data,
            params,
            [*defaults, *fields, *submodules, *methods],
            doc=f"The `{op.sym_name.data}` model{origin}.",
        )
        cls.location = op.location
        rewriter.insert(cls, InsertPoint.at_end(self.script.body.block))
        rewriter.erase(op, safe_erase=False)

    def _submodule(self, model: nml.ModelOp, layer: nml.LayerOp) -> t.SubmoduleOp:
        kind = layer.kind.data
        args = [attr_source(a).text for a in layer.args.data]
        kwargs = [(k, attr_source(v).text) for k, v in _items(layer.kwargs)]
        if kind == PARAMETER:
            options = dict(kwargs)
            init_attr = layer.kwargs.data.get("init")
            init_value = init_attr.data if isinstance(init_attr, StringAttr) else "zeros"
            std, mean = options.get("std", "1.0"), options.get("mean", "0.0")
            init = parameter_source(args, init_value, std, mean)
            return _at(t.SubmoduleOp(layer.sym_name.data, "nn.Parameter", [init]), layer)
        spec = lookup(kind)
        if kind == "Sequential":
            elements = [_layer_source(a) for a in layer.args.data]
            return _at(t.SubmoduleOp(layer.sym_name.data, "nn.Sequential", elements), layer)
        cls_name = kind
        if kind not in self.models and spec is not None:
            bound = bind_layer(layer, model_env(model))
            cls_name = spec.torch_class_of(bound) if bound is not None else spec.torch_class
            kwargs = [(k, v) for k, v in kwargs if k not in spec.init_keywords()]
            kwargs += _forced_kwargs(kind, len(args), kwargs)
        if layer.count is not None:
            element = PyExpr.call(cls_name, [*args, *(f"{k}={v}" for k, v in kwargs)])
            count = attr_source(layer.count).text
            copies = f"[{element.text} for _ in range({count})]"
            return _at(t.SubmoduleOp(layer.sym_name.data, "nn.ModuleList", [copies]), layer)
        op = t.SubmoduleOp(
            layer.sym_name.data,
            cls_name,
            [*args, *(v for _, v in kwargs)],
            [""] * len(args) + [k for k, _ in kwargs],
        )
        return _at(op, layer)

    def _inits(self, model: nml.ModelOp, layer: nml.LayerOp) -> list[t.InitTensorOp]:
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
            return _init_ops(name, "", spec, bound, layer.kwargs.data, each, layer)
        elements = bound["layers"]
        assert isinstance(elements, list)
        ops: list[t.InitTensorOp] = []
        for i, (attr, element) in enumerate(zip(layer.args.data, elements, strict=True)):
            if isinstance(attr, CallAttr) and isinstance(element, BoundLayer):
                kwargs = attr.kwargs.data
                ops += _init_ops(name, f"{i}.", element.spec, element, kwargs, each, layer)
        return ops


def _init_ops(
    field: str,
    prefix: str,
    spec: LayerSpec,
    bound: BoundLayer,
    kwargs: Mapping[str, Attribute],
    each: bool,
    layer: nml.LayerOp,
) -> list[t.InitTensorOp]:
    """`torch.init_tensor` ops for `spec.init_plan(bound)`, with the arguments' source."""
    ops: list[t.InitTensorOp] = []
    for step in spec.init_plan(bound):
        given = [("mean", step.mean), ("std", step.std)]
        sources = [(k, attr_source(kwargs[kw]).text) for k, kw in given if kw is not None]
        op = t.InitTensorOp(field, prefix + step.tensor, step.function, sources, each)
        op.location = layer.location
        ops.append(op)
    return ops


def _layer_source(attr: Attribute) -> str:
    """An element of `Sequential(...)`: `Linear(d, 4 * d)` is `nn.Linear(d, 4 * d)`."""
    if not isinstance(attr, CallAttr):
        return attr_source(attr).text
    spec = lookup(attr.callee.data)
    args = [attr_source(a).at_least(Precedence.TERNARY) for a in attr.args.data]
    kwargs = [(k, attr_source(v).text) for k, v in attr.kwargs.data.items()]
    if spec is None:
        return _call_source(attr).text
    kwargs = [(k, v) for k, v in kwargs if k not in spec.init_keywords()]
    kwargs += _forced_kwargs(spec.name, len(args), kwargs)
    return PyExpr.call(spec.torch_class, [*args, *(f"{k}={v}" for k, v in kwargs)]).text


_OpT = TypeVar("_OpT", bound=Operation)


def _at(op: _OpT, like: Operation) -> _OpT:
    op.location = like.location
    return op


def _items(attr: DictionaryAttr) -> list[tuple[str, Attribute]]:
    return list(attr.data.items())


def _forced_kwargs(
    kind: str, positional: int, kwargs: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """TensorLoom's conventions (`batch_first=True`) unless the user set the argument."""
    spec = lookup(kind)
    assert spec is not None
    by_position = [p.name for p in spec.params if not p.kw_only][:positional]
    given = {k for k, _ in kwargs} | set(by_position)
    return [(k, v) for k, v in spec.forced_kwargs if k not in given]


def _init_params(model: nml.ModelOp) -> tuple[list[tuple[str, str]], list[Operation]]:
    """`__init__` parameters, and `torch.param_default`s for defaults that use other configs."""
    params: list[tuple[str, str]] = []
    defaults: list[Operation] = []
    for name, config in configs_of(model).items():
        if not _mentions_config(config.value):
            params.append((name, attr_source(config.value).text))
            continue
        params.append((name, "None"))
        default = t.ParamDefaultOp(name, attr_source(config.value).text)
        default.location = config.location
        defaults.append(default)
    return params, defaults


def _funcs(model: nml.ModelOp) -> list[nml.FuncOp]:
    return [op for op in model.body.block.ops if isinstance(op, nml.FuncOp)]


def _method(func: nml.FuncOp, rewriter: PatternRewriter) -> t.MethodOp:
    names = [n.data for n in func.arg_names]
    method = t.MethodOp(func.sym_name.data, names)
    method.location = func.location
    old = func.body.block
    new = method.body.block
    for old_arg, new_arg in zip(old.args, new.args, strict=True):
        new_arg.location = old_arg.location
    rewriter.inline_block(old, InsertPoint.at_start(new), new.args)
    return method


def _fields(model: nml.ModelOp, methods: Sequence[t.MethodOp]) -> list[Operation]:
    """`self.<config> = <config>` for each config a method reads."""
    configs = configs_of(model)
    read: list[str] = []
    for method in methods:
        for op in method.walk():
            if isinstance(op, t.SelfAttrOp) and op.attr_name.data in configs:
                read.append(op.attr_name.data)
    return [t.FieldOp(name, name) for name in dict.fromkeys(read)]


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
        for name in _runtime_modules(models):
            for runtime in t.runtime_ops(name):
                script.body.block.add_op(runtime)
        defs = [_function(func) for func in functions]  # step 3, lowered with the bodies
        # Users before producers, so that a pattern still sees its operands' nml types.
        body = GreedyRewritePatternApplier(list(BODY_PATTERNS))
        PatternRewriteWalker(body, walk_reverse=True).rewrite_module(op)
        to_class = ModelToClass(script, frozenset(m.sym_name.data for m in models))
        PatternRewriteWalker(to_class, apply_recursively=False).rewrite_module(op)
        for function in defs:
            function.detach()
            script.body.block.add_op(function)


def _function(func: nml.FuncOp) -> t.DefOp:
    """A top-level `nml.func` as a `torch.def` in its place (moved after the classes later)."""
    names = [n.data for n in func.arg_names]
    function = t.DefOp(func.sym_name.data, names)
    function.location = func.location
    old, new = func.body.block, function.body.block
    for old_arg, new_arg in zip(old.args, new.args, strict=True):
        new_arg.location = old_arg.location
    Rewriter.inline_block(old, InsertPoint.at_start(new), new.args)
    Rewriter.replace_op(func, function)
    return function


__all__ = ["BODY_PATTERNS", "ConvertNmlToTorchPass", "attr_source", "script_of"]
