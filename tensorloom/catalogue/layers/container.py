"""`Sequential(a, b, c)`: catalogue layers applied one after another, as `nn.Sequential`.

    @layers:
        mlp = Sequential(Linear(d, 4 * d), GELU, Linear(4 * d, d))

Each argument is a catalogue layer's constructor (a bare name such as `GELU` is one
called with no arguments). The shape rule follows every element in order; the
parameters are theirs, named `0.weight`, `2.bias`, ... as in `nn.Sequential`.
A `Sequential` that holds a model of the program never reaches this record: the
front end makes it a hidden nested model (frontend/sequential.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from tensorloom.catalogue.layers.base import (
    ArgError,
    BoundLayer,
    LayerSpec,
    SavedTensors,
    Value,
    py_literal,
)
from tensorloom.catalogue.shapes import Shape, ShapeMismatch, Unifier, concrete

SEQUENTIAL = "Sequential"


_ELEMENT_HELP = {
    "Parameter": "a `Parameter` is a tensor, not a layer: use it in the forward",
    SEQUENTIAL: "write one `Sequential` of all the layers",
    "": "each element is a layer (`Linear(d, d)`, `GELU`) or a model of the program",
}


class CallLike(Protocol):
    """A constructor call as the config evaluator gives it (`passes.model_env.CallValue`)."""

    name: str
    args: tuple[object, ...]
    kwargs: tuple[tuple[str, object], ...]


class SequentialSpec(LayerSpec):
    """`Sequential(*layers)`: the output of each is the input of the next."""

    name = SEQUENTIAL
    torch_class = "nn.Sequential"

    def __init__(self, catalogue: dict[str, LayerSpec]) -> None:
        self.catalogue = catalogue

    def signature(self) -> str:
        return "Sequential(*layers)"

    def bind(self, args: Sequence[Value], kwargs: dict[str, Value]) -> BoundLayer | list[ArgError]:
        errors: list[ArgError] = []
        if kwargs:
            key = next(iter(kwargs))
            errors.append(ArgError(f"`Sequential` has no parameter `{key}`", keyword=key))
        if not args:
            errors.append(ArgError("`Sequential` needs at least one layer"))
        elements: list[BoundLayer] = []
        for position, arg in enumerate(args):
            element = self._element(arg, position)
            if isinstance(element, ArgError):
                errors.append(element)
            else:
                elements.append(element)
        if errors:
            return errors
        return BoundLayer(self, {"layers": elements}, tuple(args), ())  # type: ignore[dict-item]

    def _element(self, arg: object, position: int) -> BoundLayer | ArgError:
        call = _as_call(arg)
        spec = self.catalogue.get(call.name) if call is not None else None
        if call is None or spec is None or spec.name in (SEQUENTIAL, "Parameter"):
            what = call.name if call is not None else py_literal(arg)  # type: ignore[arg-type]
            return ArgError(
                f"`Sequential` holds layers, got `{what}`",
                position=position,
                help=_ELEMENT_HELP.get(what, _ELEMENT_HELP[""]),
            )
        bound = spec.bind(list(call.args), dict(call.kwargs))  # type: ignore[arg-type]
        if isinstance(bound, list):
            first = bound[0]
            return ArgError(
                f"element {position}: {first.message}", position=position, help=first.help
            )
        problems = spec.validate(bound)
        if problems:
            return ArgError(f"element {position}: {problems[0].message}", position=position)
        return bound

    @staticmethod
    def elements(bound: BoundLayer) -> list[BoundLayer]:
        layers = bound["layers"]
        assert isinstance(layers, list)
        return layers  # type: ignore[return-value]

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        for index, element in enumerate(self.elements(bound)):
            result = element.spec.infer_shape(element, [shape], unifier)
            if isinstance(result, ShapeMismatch):
                message = f"element {index} ({element.spec.name}) {result.message}"
                return replace(result, message=message)
            shape = result
        return shape

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        shapes: dict[str, tuple[int, ...]] = {}
        for index, element in enumerate(self.elements(bound)):
            for name, shape in element.spec.param_shapes(element).items():
                shapes[f"{index}.{name}"] = shape
        return shapes

    def buffer_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        """Its elements' buffers under their positions (`1.running_mean`)."""
        shapes: dict[str, tuple[int, ...]] = {}
        for index, element in enumerate(self.elements(bound)):
            for name, shape in element.spec.buffer_shapes(element).items():
                shapes[f"{index}.{name}"] = shape
        return shapes

    def integer_buffers(self, bound: BoundLayer) -> frozenset[str]:
        return frozenset(
            f"{index}.{name}"
            for index, element in enumerate(self.elements(bound))
            for name in element.spec.integer_buffers(element)
        )

    def _shapes(self, bound: BoundLayer, in_shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The concrete shape before each element, and after the last."""
        shapes = [in_shape]
        for element in self.elements(bound):
            out = element.spec.infer_shape(element, [shapes[-1]], Unifier())
            dims = None if isinstance(out, ShapeMismatch) else concrete(out)
            if dims is None:
                break
            shapes.append(dims)
        return shapes

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        shapes = self._shapes(bound, in_shape)
        return sum(
            e.spec.flops(e, a, b)
            for e, a, b in zip(self.elements(bound), shapes, shapes[1:], strict=False)
        )

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        shapes = self._shapes(bound, in_shape)
        total = 0
        for element, a, b in zip(self.elements(bound), shapes, shapes[1:], strict=False):
            total += element.spec.saved_tensors(element, a, b, dtype_bytes).total
        return SavedTensors(extra_bytes=total)


def _as_call(value: object) -> CallLike | None:
    if hasattr(value, "name") and hasattr(value, "args") and hasattr(value, "kwargs"):
        return value  # type: ignore[return-value]
    return None
