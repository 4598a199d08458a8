"""The nml builtin for scaled dot-product attention: `nml.attention`.

    %o = nml.attention %q, %k, %v causal dropout 1.000000e-01
           : (!nml.tensor<[B, H, T, 64], f32>, ...) -> !nml.tensor<[B, H, T, 64], f32>

It lowers to `F.scaled_dot_product_attention`; its shape rule is
`attention_shape` of tensorloom/catalogue/shapes.py, and a mask broadcasts to the
scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float64Type,
    FloatAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import (
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.costs import (
    ATTENTION,
    Cost,
)
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    attention_shape,
    broadcast_into,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.activations import rate_argument, rate_props
from tensorloom.dialects.nml.builtins import (
    InTraining,
    SpelledOp,
    TorchArgument,
    tensor_operands,
)
from tensorloom.dialects.nml.calls import (
    CallArgs,
    CallProblem,
    unknown_type,
)
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    CfgAttr,
)


@lazy_op_definition
class AttentionOp(SpelledOp):
    """`nml.attention %q, %k, %v mask(%m) causal dropout 0.1`: scaled dot-product
    attention (`F.scaled_dot_product_attention(q, k, v, is_causal=True)`: PyTorch picks
    the fused flash or memory-efficient kernel); [..., L, E] x [..., S, E] x [..., S, Ev]
    -> [..., L, Ev]. Dropout applies only in training, as `F.dropout` does."""

    name = "nml.attention"
    FUNCTION: ClassVar[str] = "scaled_dot_product_attention"
    COST: ClassVar[Cost] = ATTENTION

    query = operand_def()
    key = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    causal = opt_prop_def(UnitAttr)
    dropout = opt_prop_def(FloatAttr[Float64Type])
    dropout_rate = opt_prop_def(CfgAttr)
    scale = opt_prop_def(FloatAttr[Float64Type])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$query `,` $key `,` $value (`mask` `(` $mask^ `)`)? (`causal` $causal^)? "
        "(`dropout` $dropout^)? (`dropout_rate` $dropout_rate^)? (`scale` $scale^)? attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        qkv: Sequence[Value],
        mask: Value | None,
        causal: bool,
        dropout: float | CfgAttr,
        scale: float | None,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[*qkv, [mask] if mask is not None else []],
            properties={
                "causal": UnitAttr() if causal else None,
                **(rate_props(dropout, "dropout", "dropout_rate") if dropout else {}),
                "scale": None if scale is None else FloatAttr(scale, Float64Type()),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.causal is not None and self.mask is not None:
            raise VerifyException("attention takes a mask or `causal`, not both")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        qkv = args.positional[:3]
        if len(qkv) != 3:
            return CallProblem(
                f"`{args.name}` takes q, k and v, got {len(qkv)} tensors",
                "write `scaled_dot_product_attention(q, k, v, causal=true)`",
            )
        mask = args.value(3, "attn_mask")
        causal = args.const(5, "causal", args.const(5, "is_causal", False))
        keyword = "dropout" if "dropout_p" not in args.keywords else "dropout_p"
        rate = args.config_rate(args.value(4, keyword))
        dropout = args.number(4, keyword) if rate is None else None
        scale = args.number(6, "scale")
        if not isinstance(causal, bool):
            return CallProblem(f"`causal` of `{args.name}` must be `true` or `false`")
        for number in (rate, dropout, scale):
            if isinstance(number, CallProblem):
                return number
        if isinstance(dropout, float) and not 0.0 <= dropout < 1.0:
            return CallProblem(f"`dropout` of `{args.name}` must be in [0, 1), got {dropout}")
        if causal and mask is not None:
            return CallProblem(
                f"`{args.name}` takes `attn_mask` or `causal=true`, not both",
                "fold the causal mask into `attn_mask`, or drop `attn_mask`",
            )
        allowed = ("attn_mask", "dropout", "dropout_p", "causal", "is_causal", "scale")
        problem = args.rest(allowed, 4)
        p = rate or dropout or 0.0
        return problem or cls(qkv, mask, causal, p, scale, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        arguments: list[tuple[str, TorchArgument]] = [("", self.key), ("", self.value)]
        if self.mask is not None:
            arguments.append(("attn_mask", self.mask))
        rate = self.dropout or self.dropout_rate
        if rate is not None:
            arguments.append(("dropout_p", InTraining(rate_argument(rate))))  # type: ignore[arg-type]
        if self.causal is not None:
            arguments.append(("is_causal", True))
        if self.scale is not None:
            arguments.append(("scale", self.scale.value.data))
        return arguments

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        tensors = tensor_operands(operand_types, "scaled_dot_product_attention")
        if isinstance(tensors, ShapeMismatch):
            return tensors
        u = unifier or Unifier()
        q, k, v = (t.dims for t in tensors[:3])
        result = attention_shape(q, k, v, u)
        if isinstance(result, ShapeMismatch) or result is None or len(tensors) < 4:
            return result if isinstance(result, ShapeMismatch) else tensors[0].with_dims(result)
        scores = (*result[:-1], k[-2]) if k is not None else None  # type: ignore[index]
        mask = broadcast_into(scores, tensors[3].dims, u)
        if isinstance(mask, ShapeMismatch):
            return ShapeMismatch(
                f"attention mask: {mask.message}", mask.expected, mask.got, 3, None, mask.help
            )
        return tensors[0].with_dims(result)
