"""The shape traits: how an nml op's result types follow from its operands' types.

The `shape-inference` pass knows no op by name: it asks each op for its
`ShapeInferenceTrait` (as MLIR's Toy asks each op for its `ShapeInference`
interface, and xDSL's `shape-inference` for `HasShapeInferencePatternsTrait`)
and applies it. An op without one keeps its type. Two kinds:

- `FromOperands`: the result type is a function of the operand types alone,
  and of the integers the forward computed for the op's runtime sizes. The
  functional builtins (`nml.relu`, `nml.matmul`, `nml.reshape`, the losses) have
  it through `FunctionalOp`, and the rule is the op's own `result_type`:

      FromOperands().infer(op, [TensorType(B, 784)], sizes, unifier)  # -> the type or a mismatch

- `FromInstantiation(rule)`: the result type also depends on what the op names
  in the instantiation being checked: the layer `nml.apply @fc1` is bound to
  under the config, the number of iterations of an `nml.for` over a layer list,
  the branch an `nml.if` on a config takes, a `Parameter`'s shape, a method's
  body. The op names its rule; the pass holds one per name, because applying it
  needs the pass's state (the config environment, the layer catalogue, nested
  models), which the dialect does not import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import OpTrait

if TYPE_CHECKING:
    from tensorloom.catalogue.shapes import Dim, ShapeMismatch, Unifier


class ShapeInferenceTrait(OpTrait):
    """The base of the shape traits: `op.get_trait(ShapeInferenceTrait)` finds either kind."""


@dataclass(frozen=True)
class FromOperands(ShapeInferenceTrait):
    """The result type follows from the operand types (and known runtime sizes)."""

    def infer(
        self,
        op: Operation,
        operand_types: Sequence[Attribute],
        size_of: Callable[[SSAValue], Dim],
        unifier: Unifier,
    ) -> Attribute | ShapeMismatch:
        result_type = getattr(op, "result_type", None)
        assert result_type is not None, f"{op.name} has FromOperands but no `result_type`"
        return result_type(operand_types, size_of, unifier)


@dataclass(frozen=True)
class FromInstantiation(ShapeInferenceTrait):
    """The result types depend on the instantiation: the pass's rule `rule` gives them."""

    rule: str
