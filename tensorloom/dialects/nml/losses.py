"""nml functional losses: `cross_entropy(out, y)`, `mse`, ... with their shape rules.

    fn smoothed(out, y) -> Tensor:
        return cross_entropy(out, y, label_smoothing=0.1)

    %0 = nml.loss "cross_entropy" %out, %y reduction "mean" {label_smoothing = 0.1 : f64}
        : (!nml.tensor<[B, 10], f32>, !nml.tensor<[B], i64>) -> !nml.tensor<[], f32>

One op, `nml.loss`, whose `kind` names a loss record of the catalogue
(catalogue/losses.py): the PyTorch function it is emitted as (`F.cross_entropy`),
the keywords it takes besides `reduction`, and which targets it takes. The shape
rule follows PyTorch's, strictly: class indices for `cross_entropy` and `nll` are
the input's shape without the class dim (dim 1, as in `F.cross_entropy`: `[N, C]`
against `[N]`, `[N, C, T]` against `[N, T]`), or, for `cross_entropy`, probabilities
of the input's own shape; the other losses take float targets of exactly the input's
shape (where PyTorch would broadcast with only a warning, this is an error).
`reduction="mean"` or `"sum"` gives a scalar `[]`; `"none"` the per-element shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.args import Arg
from tensorloom.catalogue.costs import Cost
from tensorloom.catalogue.losses import (
    FLOATS,
    FUNCTIONAL_LOSSES,
    INDICES,
    INDICES_OR_PROBABILITIES,
    LossRecord,
)
from tensorloom.catalogue.shapes import Dim, Shape, ShapeMismatch, Unifier, format_shape
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import SpelledOp, TorchArgument
from tensorloom.dialects.nml.calls import CallArgs, CallProblem, unknown_type
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import TensorType

LOSSES: dict[str, LossRecord] = FUNCTIONAL_LOSSES
"""Every functional loss a `.tl` function may call, by function name."""


@lazy_op_definition
class LossOp(SpelledOp):
    """`nml.loss "mse" %out, %y reduction "mean" {}`: a functional loss of `LOSSES`,
    `F.mse_loss(out, y)`; its cost in `tlc info` is its record's (`LossRecord.cost`)."""

    name = "nml.loss"
    RECORDS: ClassVar[tuple[str, ...]] = tuple(LOSSES)

    kind = prop_def(StringAttr)
    input = operand_def()
    target = operand_def()
    reduction = prop_def(StringAttr)
    options = prop_def(DictionaryAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$kind $input `,` $target `reduction` $reduction $options attr-dict "
        "`:` functional-type(operands, $result)"
    )

    def __init__(
        self,
        kind: str,
        input: Value,
        target: Value,
        reduction: str,
        options: dict[str, Attribute],
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, target],
            result_types=[result_type],
            properties={
                "kind": StringAttr(kind),
                "reduction": StringAttr(reduction),
                "options": DictionaryAttr(options),
            },
        )

    @property
    def spec(self) -> LossRecord:
        return LOSSES[self.kind.data]

    def cost(self) -> Cost:
        return self.spec.cost

    def spelling(self) -> str:
        function = self.spec.torch_function
        assert function is not None, f"loss `{self.kind.data}` has no PyTorch function"
        return function

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`F.cross_entropy(out, y, label_smoothing=0.1)`: the reduction unless "mean"."""
        reduction = self.reduction.data
        arguments: list[tuple[str, TorchArgument]] = [("", self.target)]
        if reduction != "mean":
            arguments.append(("reduction", reduction))
        return arguments + [(k, _option_value(v)) for k, v in self.options.data.items()]

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """`cross_entropy(out, y, reduction="sum", label_smoothing=0.1)`."""
        spec = LOSSES[args.name]
        if len(args.positional) != 2:
            return CallProblem(
                f"`{spec.function}` takes the output and the target, got "
                f"{len(args.positional)} positional arguments",
                f"write `{spec.function}(out, y)`",
            )
        problem = args.unknown_keywords(("reduction", *spec.function_keywords))
        if problem is not None:
            return problem
        reduction = args.const(2, "reduction", "mean")
        if reduction not in spec.reductions:
            choices = ", ".join(f'`"{r}"`' for r in spec.reductions)
            return CallProblem(f"`reduction` of `{spec.function}` must be one of {choices}")
        options: dict[str, Attribute] = {}
        for arg in spec.function_args:
            attr = _loss_option(args, arg)
            if isinstance(attr, CallProblem):
                return attr
            if attr is not None:
                options[arg.name] = attr
        input, target = args.positional
        return cls(args.name, input, target, str(reduction), options, unknown_type())

    def verify_(self) -> None:
        if self.kind.data not in LOSSES:
            raise VerifyException(f"unknown loss kind `{self.kind.data}`")
        if self.reduction.data not in self.spec.reductions:
            raise VerifyException(f"reduction must be one of {self.spec.reductions}")
        extra = set(self.options.data) - set(self.spec.function_keywords)
        if extra:
            raise VerifyException(f"`{self.kind.data}` takes no option {sorted(extra)}")

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        input, target = operand_types[0], operand_types[1]
        return loss_shape(self.spec, self.reduction.data, input, target, unifier or Unifier())


def _loss_option(args: CallArgs, arg: Arg) -> Attribute | CallProblem | None:
    """A functional loss's keyword, checked against its catalogue record."""
    if arg.name not in args.keywords:
        return None
    value = args.const(99, arg.name)
    problem = arg.problem(value)
    if problem is not None:
        return CallProblem(f"{problem} (in `{args.name}`)")
    if isinstance(value, bool):
        return IntegerAttr(int(value), 1)
    if arg.type == "int":
        assert isinstance(value, int)
        return IntegerAttr(value, i64)
    assert isinstance(value, int | float)
    return FloatAttr(float(value), 64)


def _option_value(attr: Attribute) -> int | float | bool:
    if isinstance(attr, FloatAttr):
        return attr.value.data
    assert isinstance(attr, IntegerAttr), "resolve-nml folds loss options to numbers"
    width = attr.type.width.data if hasattr(attr.type, "width") else 64  # type: ignore[union-attr]
    return bool(attr.value.data) if width == 1 else attr.value.data


def _is_index_type(attr: Attribute) -> bool:
    return isinstance(attr, TensorType) and isinstance(attr.element_type, IntegerType)


def loss_shape(
    spec: LossRecord, reduction: str, input: Attribute, target: Attribute, unifier: Unifier
) -> Attribute | ShapeMismatch:
    """The loss's result type, or why `input` and `target` do not fit it."""
    if not isinstance(input, TensorType) or not isinstance(target, TensorType):
        return ShapeMismatch(f"`{spec.function}` takes two tensors, the output and the target")
    if _is_index_type(input):
        return ShapeMismatch(f"`{spec.function}` needs a float input, got integers")
    per_element = _per_element(spec, input, target, unifier)
    if isinstance(per_element, ShapeMismatch):
        return per_element
    dims = () if reduction != "none" else per_element
    return TensorType.from_dims(dims, input.element_type)


def _per_element(
    spec: LossRecord, input: TensorType, target: TensorType, unifier: Unifier
) -> Shape | ShapeMismatch:
    indices = _is_index_type(target)
    if spec.targets == FLOATS and indices:
        return ShapeMismatch(
            f"`{spec.function}` needs float targets of the output's shape, got class indices "
            f"{unifier.format_shape(target.dims)}"
        )
    if spec.targets == INDICES and not indices:
        return ShapeMismatch(f"`{spec.function}` needs class indices (integers) as targets")
    if input.dims is None or target.dims is None:
        return None
    if indices:
        return _classes_removed(spec, input, target, unifier)
    same = _same(spec, input, target, unifier)
    if spec.targets == INDICES_OR_PROBABILITIES and not isinstance(same, ShapeMismatch):
        return (same[0], *same[2:]) if len(same) >= 2 else ()  # probabilities: summed over C
    return same


def _same(
    spec: LossRecord, input: TensorType, target: TensorType, unifier: Unifier
) -> tuple[Dim, ...] | ShapeMismatch:
    merged = unifier.unify_shapes(input.dims, target.dims)
    if isinstance(merged, ShapeMismatch):
        return ShapeMismatch(
            f"`{spec.function}` needs a target of the output's shape: the output is "
            f"{unifier.format_shape(input.dims)}, the target {unifier.format_shape(target.dims)}"
        )
    return tuple(merged or ())


def _classes_removed(
    spec: LossRecord, input: TensorType, target: TensorType, unifier: Unifier
) -> Shape | ShapeMismatch:
    dims = input.dims or ()
    expected = (dims[0], *dims[2:]) if len(dims) >= 2 else ()
    merged = unifier.unify_shapes(expected, target.dims)
    if isinstance(merged, ShapeMismatch):
        return ShapeMismatch(
            f"`{spec.function}` takes class indices of the output's shape without its class dim "
            f"(dim 1): the output is {unifier.format_shape(input.dims)}, so the target should "
            f"be {format_shape(unifier.resolve_shape(expected))}, got "
            f"{unifier.format_shape(target.dims)}"
        )
    return tuple(merged or ())
