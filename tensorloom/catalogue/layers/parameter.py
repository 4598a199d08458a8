"""`Parameter(1, 1, d)`: a learnable tensor of a model (a class token, a position table).

    @layers:
        cls_token = Parameter(1, 1, embed_dim)                  # zeros
        pos_embed = Parameter(1, 197, embed_dim, init="normal", std=0.02)

        logit_scale = Parameter(init="constant", value=2.6592)  # 0-d, as CLIP's
        mix = Parameter(values=[0.5, 0.25, 0.25])               # [3], from given values

In a forward the name is a tensor of that shape (`cls_token.expand(B, -1, -1)`).
Emitted as `nn.Parameter(torch.zeros(1, 1, embed_dim))`; `init="ones"` uses
`torch.ones`, `init="normal"` `torch.randn(...) * std + mean`, `init="uniform"`
`torch.empty(...).uniform_(a, b)`, `init="constant"` `torch.full(..., value)`, and
`values=` `torch.tensor(values)`. Without sizes (and values) it is a 0-d scalar.
"""

from __future__ import annotations

from collections.abc import Sequence

from tensorloom.catalogue.layers.base import (
    FLOAT,
    ArgError,
    BoundLayer,
    Kind,
    LayerSpec,
    Param,
    Value,
    choice,
    numel,
    optional,
    py_literal,
)
from tensorloom.catalogue.shapes import Shape, ShapeMismatch, Unifier, mismatch

PARAMETER = "Parameter"
INITS = ("zeros", "ones", "normal", "uniform", "constant")
VALUES = Kind(
    "a rectangular list of numbers (nested for more dims)", lambda v: _values_shape(v) is not None
)
MAX_ELEMENTS = 2**40
"""More elements than any accelerator holds: a size this large is a mistake."""


class ParameterSpec(LayerSpec):
    """`Parameter(*shape, init="zeros", std=1.0, mean=0.0)`: no input; the tensor itself."""

    name = PARAMETER
    torch_class = "nn.Parameter"
    params = (
        Param("init", choice(*INITS), "zeros", kw_only=True),
        Param("std", FLOAT, 1.0, kw_only=True),
        Param("mean", FLOAT, 0.0, kw_only=True),
        Param("a", FLOAT, 0.0, kw_only=True),
        Param("b", FLOAT, 1.0, kw_only=True),
        Param("value", FLOAT, 0.0, kw_only=True),
        Param("values", optional(VALUES), None, kw_only=True),
    )

    def signature(self) -> str:
        return (
            'Parameter(*shape, init="zeros", std=1.0, mean=0.0, a=0.0, b=1.0, value=0.0, '
            "values=none)"
        )

    def bind(self, args: Sequence[Value], kwargs: dict[str, Value]) -> BoundLayer | list[ArgError]:
        errors = [
            ArgError(f"a `Parameter`'s sizes are integers, got `{py_literal(v)}`", position=i)
            for i, v in enumerate(args)
            if not isinstance(v, int) or isinstance(v, bool)
        ]
        bound = super().bind([], kwargs)
        if isinstance(bound, list):
            return errors + bound
        if errors:
            return errors
        shape: list[Value] = list(args)
        given = _values_shape(bound.values.get("values"))
        if given is not None:
            if args and tuple(shape) != given:
                return [
                    ArgError(
                        f"`values` are {list(given)}, not the sizes given {shape}",
                        keyword="values",
                        help="leave out the sizes: `values` give the shape",
                    )
                ]
            shape = [*given]
        values: dict[str, Value] = {**bound.values, "shape": shape}
        return BoundLayer(self, values, tuple(args), bound.kwargs)

    def shape_of(self, bound: BoundLayer) -> tuple[int, ...]:
        shape = bound["shape"]
        assert isinstance(shape, list)
        return tuple(int(d) for d in shape if isinstance(d, int))

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        shape = self.shape_of(bound)
        errors = [
            ArgError(f"a `Parameter`'s sizes must be positive, got {d}", position=i)
            for i, d in enumerate(shape)
            if d <= 0
        ]
        if not errors and numel(shape) > MAX_ELEMENTS:
            errors.append(ArgError(f"`Parameter` of {numel(shape):,} elements is too large"))
        if bound.get_float("std") < 0:
            errors.append(bound.error("std", "`std` must not be negative"))
        if bound["init"] == "uniform" and bound.get_float("a") >= bound.get_float("b"):
            errors.append(bound.error("b", "`uniform` needs `a` < `b`"))
        return errors

    def infer_shape(
        self, bound: BoundLayer, inputs: Sequence[Shape], unifier: Unifier
    ) -> Shape | ShapeMismatch:
        return mismatch(
            "is a tensor, not a layer: it takes no input",
            help="use it as a value, as in `x + pos_embed`",
        )

    def param_count(self, bound: BoundLayer) -> int:
        return numel(self.shape_of(bound))

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return {"": self.shape_of(bound)}


SPECS = (ParameterSpec(),)


def _values_shape(value: object) -> tuple[int, ...] | None:
    """The shape of a nested list of numbers (`[[1, 2], [3, 4]]`: (2, 2)); None when it is
    ragged, empty, or holds anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return ()
    if not isinstance(value, list | tuple) or not value:
        return None
    shapes = {_values_shape(v) for v in value}
    if len(shapes) != 1 or None in shapes:
        return None
    inner = shapes.pop()
    return None if inner is None else (len(value), *inner)
