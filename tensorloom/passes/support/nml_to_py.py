"""nml body ops as `py` ops: the rewrite patterns convert-nml-to-torch lowers a model's
methods with, and the train lowering a script's statements (`BODY_PATTERNS`).

One pattern per kind of op (see convert_nml_to_torch.py's step 1): layer applications
become submodule calls (`self.norm(x)`), functional builtins the PyTorch call a person
would write (`F.relu(x)`, `x.flatten(1)`, `x @ y`), config references `self.<name>`;
every new op keeps the location of the op it replaces. A builtin op spells itself
(`nml.SpelledOp`: its record's PyTorch and its `torch_arguments`), so one pattern,
`SpelledToTorch`, lowers nearly all of them; the elementwise family (`-x`, `math.exp` of
a number), the constructors placed on the input's device (`arange`, `randn`,
`linspace`) and Python syntax (operators, indexing, lists) keep their own.
`attr_ops` writes an attribute expression (a layer's constructor argument) as `py` ops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    bf16,
    f16,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tensorloom.catalogue.functions import FUNCTIONS, SCALAR_MATH
from tensorloom.dialects import kernel, nml, py
from tensorloom.dialects.nml.types import CallAttr, CfgAttr, ExprAttr, NoneValueAttr, SliceAttr
from tensorloom.passes.support.model_env import (
    CONFIG_FUNCTIONS,
    MODULE_ATTRIBUTES,
    bind_layer,
    configs_of,
    enclosing_model,
    layers_of,
    lookup_symbol,
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


def spelling(op: Operation) -> str:
    """The PyTorch an nml builtin lowers to, as its catalogue record spells it: the record
    its class names (`FUNCTION`), else the record of its own name (`nml.gelu`: `F.gelu`)."""
    return FUNCTIONS[getattr(type(op), "FUNCTION", op.name.removeprefix("nml."))].torch


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
        elif device_ops := _input_device(op):  # a top-level function's: where its batch is
            call.ops += device_ops
            call.value(device_ops[0].results[0], "device")
        _replace(rewriter, op, call.function(spelling(op)))


def _is_number(attr: Attribute, value: int) -> bool:
    return isinstance(attr, IntegerAttr) and attr.value.data == value


class SpelledToTorch(RewritePattern):
    """`torch.cumsum(x, dim=1)`, `x.topk(2, dim=-1)`, `F.pad(x, (1, 1))`,
    `F.dropout(x, p=0.1, training=self.training)`: every builtin that lists its own
    arguments (`nml.SpelledOp`), spelled as its catalogue record says."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.SpelledOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        for name, argument in op.torch_arguments():
            _argument(call, argument, name)
        first = op.tensor
        spelled = (
            call.function(op.spelling()) if first is None else _call(op.spelling(), first, call)
        )
        _replace(rewriter, op, spelled)


def _argument(call: _Keywords, argument: nml.TorchArgument, name: str) -> None:
    if isinstance(argument, SSAValue):
        call.value(argument, name)
    elif isinstance(argument, tuple | list):
        items = [v if isinstance(v, SSAValue) else _const(v) for v in argument]
        values = [v if isinstance(v, SSAValue) else v.result for v in items]
        packed = py.TupleOp(values) if isinstance(argument, tuple) else py.ListOp(values)
        call.ops += [*(v for v in items if not isinstance(v, SSAValue)), packed]
        call.value(packed.result, name)
    elif isinstance(argument, nml.Member | nml.PyName | nml.SizeOf | nml.InTraining):
        ops = _expression(argument)
        call.ops += ops
        call.value(ops[-1].results[0], name)
    else:
        call.literal(argument, name)


def _expression(argument: nml.Member | nml.PyName | nml.SizeOf | nml.InTraining) -> list[Operation]:
    """`self.training`, `torch.int64`, `x.size(1)`, `p if self.training else 0.0` (the last
    op gives the value)."""
    if isinstance(argument, nml.Member):
        return self_attr(argument.name)
    if isinstance(argument, nml.PyName):
        return [py.NameOp(argument.dotted)]
    if isinstance(argument, nml.SizeOf):
        return _Keywords().literal(argument.axis).method(argument.tensor, "size")
    rate = argument.rate
    p = _expression(rate) if isinstance(rate, nml.Member) else [_const(rate)]
    zero, flag = _const(0.0), self_attr("training")
    choice = py.IfExpOp(flag[-1].results[0], p[-1].results[0], zero.result)
    return [*p, zero, *flag, choice]


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
        indices = _index_values(op.indices.data, iter(op.dynamic_indices), new_ops)
        _replace(rewriter, op, [*new_ops, py.SubscriptOp(op.input, indices)])


class IndexPutToTorch(RewritePattern):
    """`x[:, 0] = y`, `results[idx] += v`: PyTorch's assignment into the tensor, or into
    its copy (`x = x.clone()` first) where the op is not `in_place`
    (passes/support/in_place.py); later reads of the new value read that tensor."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.IndexPutOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        new_ops: list[Operation] = []
        target = op.input
        if op.in_place is None:
            new_ops += _Keywords().method(op.input, "clone")
            target = new_ops[-1].results[0]
            target.name_hint = op.result.name_hint
        value = op.value
        if _casts_for_index_put(op):
            dtype = py.AttributeOp(target, "dtype")
            new_ops += [dtype, *_Keywords().value(dtype.result).method(value, "to")]
            value = new_ops[-1].results[0]
        indices = _index_values(op.indices.data, iter(op.dynamic_indices), new_ops)
        region = py.SubscriptOp(target, indices)
        operator = op.operator.data
        store = (
            py.AssignOp(region.result, value)
            if operator == "="
            else py.AugAssignOp(operator, region.result, value)
        )
        new_ops += [region, store]
        for new in new_ops:
            new.location = op.location
        rewriter.insert(new_ops, InsertPoint.before(op))
        rewriter.replace_all_uses_with(op.result, target)
        rewriter.erase(op)


def _casts_for_index_put(op: nml.IndexPutOp) -> bool:
    """`out[idx] = v.to(out.dtype)`: PyTorch's index_put (a tensor index or a mask) does
    not cast, and under autocast a layer's output is f16/bf16 where `out` is f32; the
    checker saw equal dtypes, so the cast is free when there is no autocast."""
    target, value = op.result.type, op.value.type
    if op.operator.data != "=" or not isinstance(value, nml.TensorType):
        return False
    if not isinstance(target, nml.TensorType) or target.element_type not in FLOATS:
        return False
    return any(isinstance(v.type, nml.TensorType) for v in op.dynamic_indices)


FLOATS = (f32, f16, bf16)


def _index_values(
    items: Sequence[Attribute], dynamic: Iterator[SSAValue], new_ops: list[Operation]
) -> list[SSAValue]:
    """The subscript's items, their constant and slice ops appended to `new_ops`."""
    indices: list[SSAValue] = []
    for item in items:
        if isinstance(item, StringAttr) and item.data == nml.DYNAMIC:
            indices.append(next(dynamic))
            continue
        item_ops = _index_item(item, dynamic)
        new_ops += item_ops
        indices.append(item_ops[-1].results[0])
    return indices


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


class ListToTorch(RewritePattern):
    """`[a, b]` is a list; `(a, b)` (marked `tuple` by irgen) a tuple."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ListOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        if op.tuple is not None:
            _replace(rewriter, op, [py.TupleOp(op.elements)])
            return
        _replace(rewriter, op, [py.ListOp(op.elements)])


class TupleGetToTorch(RewritePattern):
    """`nml.tuple_get %t 1` is `t[1]`; an element nothing reads (`next` of
    `let (out, next) = ...` left unused) is dropped rather than left as a bare `t[1]`.
    The walk is in reverse, so a nested tuple's elements go before the tuple itself."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.TupleGetOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        if not op.result.uses:
            rewriter.erase(op)
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
    return op.var.data if op.var is not None else "layer"


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


def _input_device(op: Operation) -> list[Operation]:
    """`x.device` of the enclosing function's input, so that a new tensor is made where the
    data is: a model method's first input; a top-level function's batch inputs `x`, its
    second-to-last parameter (`fn loss(out, x, y)`, `fn objective(net, x, y)`; `out` of
    `fn loss(out, y)`). Nothing in a script's top-level statements, which run on the CPU."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, nml.FuncOp | py.DefOp):
        parent = parent.parent_op()
    if parent is None:
        return []
    args = [a for a in parent.regions[0].block.args if a.name_hint != "self"]
    if not args:
        return []
    top_level = enclosing_model(parent) is None
    models = [a for a in args if _is_model(a)]
    if top_level and models and all(a in models or not a.uses for a in args):
        return _model_device(models[0])  # `fn sample(G, D)`: where the model's weights are
    arg = args[-2] if top_level and len(args) >= 2 else args[0]
    if top_level and not isinstance(arg.type, nml.TensorType):  # `fn f(net, image)`: a model
        arg = next((a for a in args if isinstance(a.type, nml.TensorType)), arg)
    return [py.AttributeOp(arg, "device")]


def _is_model(arg: SSAValue) -> bool:
    """A top-level function's parameter that it calls: a model (`G(z)`)."""
    for use in arg.uses:
        owner = use.operation
        if isinstance(owner, nml.ModelCallOp) and owner.model == arg:
            return True
        if isinstance(owner, py.CallOp) and owner.callee == arg:
            return True
    return False


def _model_device(model: SSAValue) -> list[Operation]:
    """`next(G.parameters()).device`."""
    parameters = py.AttributeOp(model, "parameters")
    listed = py.CallOp(parameters.result, [])
    next_ = py.NameOp("next")
    first = py.CallOp(next_.result, [listed.result])
    return [parameters, listed, next_, first, py.AttributeOp(first.result, "device")]


class SampleToTorch(RewritePattern):
    """`torch.randn(B, 16, device=x.device)`, `torch.rand(...)`, and
    `torch.randint(0, 10, (B,), device=x.device)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.SampleOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords()
        dynamic = iter(op.dynamic_sizes)
        sizes: list[SSAValue] = []
        for entry in op.shape.data:
            if isinstance(entry, IntegerAttr):
                constant = _const(entry.value.data)
                call.ops.append(constant)
                sizes.append(constant.result)
            else:
                sizes.append(next(dynamic))
        kind = op.distribution.data
        if kind == "integers":
            assert op.low is not None and op.high is not None
            call.literal(op.low.value.data).literal(op.high.value.data)
            shape = py.TupleOp(sizes)
            call.ops.append(shape)
            call.value(shape.result)
        else:
            for size in sizes:
                call.value(size)
        device = _input_device(op)
        if device:
            call.ops += device
            call.value(device[-1].results[0], "device")
        _replace(rewriter, op, call.function(FUNCTIONS[SAMPLERS[kind]].torch))


SAMPLERS = {"normal": "randn", "uniform": "rand", "integers": "randint"}
"""The catalogue record of each distribution an `nml.sample` draws from."""


class LinspaceToTorch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.LinspaceOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        call = _Keywords().literal(op.start.value.data).literal(op.end.value.data)
        call.literal(op.steps.value.data)
        device = _input_device(op)
        if device:
            call.ops += device
            call.value(device[-1].results[0], "device")
        _replace(rewriter, op, call.function(spelling(op)))


class ModelCallToTorch(RewritePattern):
    """`nml.model_call %net(%x)`: the objective calls the module it was passed, `net(x)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.ModelCallOp, rewriter: PatternRewriter) -> None:
        if not _in_body(op):
            return
        _replace(rewriter, op, [py.CallOp(op.model, list(op.args), [""] * len(op.args))])


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
            and owner.tuple is not None
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
    ArangeToTorch(),
    SampleToTorch(),
    LinspaceToTorch(),
    SpelledToTorch(),
    BinaryToTorch(),
    IndexToTorch(),
    IndexPutToTorch(),
    ListToTorch(),
    TupleGetToTorch(),
    ForToTorch(),
    IfToTorch(),
    YieldToTorch(),
    ApplyAtToTorch(),
    GetAttrToTorch(),
    KernelCallToTorch(),
    ModelCallToTorch(),
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
        return _call_ops(attr.callee.data, list(attr.args.data), list(attr.kwargs.data.items()))
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
