"""Every builtin function or tensor method a forward or a loss fn may call, one record each.

    FUNCTIONS["softmax"]
    # FunctionSpec(name="softmax", params="x, dim", summary="softmax along `dim`",
    #              torch="torch.softmax", method=True)

A record holds the signature and a one-line summary (docs/reference.md is
generated from them), the PyTorch it lowers to (`torch.exp`, `F.gelu`, or,
starting with `x.`, a method of the first argument), and whether `x.name(...)` is
accepted as well as `name(x, ...)`. The rest is on the nml op class that names the
record (its `FUNCTION`, or one of its `RECORDS`; tensorloom/dialects/nml/): how a call
is checked and built (`from_call`), the shape rule, the cost in `tlc info`, and the
arguments of the PyTorch call. A plain builtin (one tensor, then constant arguments,
an `nml.PlainOp`) takes each argument the signature names as the property of that
name. So a builtin is this record and its op, nothing else. The functional losses
come from tensorloom/catalogue/losses.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tensorloom.catalogue.costs import FREE, INPUT, OUTPUT, VIEW, Cost, per_element
from tensorloom.catalogue.losses import FUNCTIONAL_LOSSES


class Elementwise(NamedTuple):
    """One function of the elementwise family: what it computes, and what it costs."""

    summary: str
    cost: Cost


ELEMENTWISE: dict[str, Elementwise] = {
    "relu": Elementwise("max(x, 0)", per_element(saves=OUTPUT)),
    "silu": Elementwise("x * sigmoid(x)", per_element(saves=INPUT)),
    "tanh": Elementwise("the hyperbolic tangent", per_element(saves=OUTPUT)),
    "sigmoid": Elementwise("1 / (1 + exp(-x))", per_element(saves=OUTPUT)),
    "neg": Elementwise("-x", per_element()),
    "exp": Elementwise("e to the x", per_element(saves=OUTPUT)),
    "log": Elementwise("the natural logarithm", per_element(saves=INPUT)),
    "sqrt": Elementwise("the square root", per_element(saves=INPUT)),
    "rsqrt": Elementwise("1 / sqrt(x)", per_element(saves=INPUT)),
    "abs": Elementwise("the absolute value", per_element(saves=INPUT)),
    "sin": Elementwise("the sine", per_element(saves=INPUT)),
    "cos": Elementwise("the cosine", per_element(saves=INPUT)),
    "softplus": Elementwise("log(1 + exp(x)), a smooth relu", per_element(saves=INPUT)),
    "floor": Elementwise("rounded down to an integer (still a float)", per_element()),
    "ceil": Elementwise("rounded up to an integer (still a float)", per_element()),
    "round": Elementwise("rounded to the nearest integer, half to even", per_element()),
    "detach": Elementwise("x, cut from the autograd graph", VIEW),
    "zeros_like": Elementwise("zeros of x's shape and dtype", FREE),
    "ones_like": Elementwise("ones of x's shape and dtype", FREE),
    "randn_like": Elementwise("standard normal samples of x's shape and dtype", FREE),
    "rand_like": Elementwise("uniform samples in [0, 1) of x's shape and dtype", FREE),
    "bernoulli": Elementwise("1 with probability x, else 0, per element (x in [0, 1])", FREE),
}
"""The elementwise family (one nml op each, generated from this table): name -> what it
computes and its cost in `tlc info` (tensorloom/catalogue/costs.py)."""

SCALAR_MATH = frozenset({"exp", "log", "sqrt", "sin", "cos", "tanh"})
"""Elementwise functions that also take a number (a float config, a literal): `log(theta)`
is `math.log(self.theta)` in the script; the others take tensors only."""


Literal = int | float | bool | str | None


class Parameter(NamedTuple):
    """One parameter of a plain signature (`dim=1`): its name, and its default unless required."""

    name: str
    default: Literal
    required: bool


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One builtin function: how it is called, what it computes, what PyTorch it becomes."""

    name: str
    params: str
    summary: str
    torch: str
    method: bool = True

    @property
    def signature(self) -> str:
        return f"{self.name}({self.params})"

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        """A plain signature's parameters (`x, p=2.0, dim=1`), with their defaults: the
        arguments `nml.PlainOp.from_call` reads (tensorloom/dialects/nml/tensor_ops.py)."""
        return tuple(_parameter(part) for part in self.params.split(", "))


def _parameter(text: str) -> Parameter:
    name, _, default = text.partition("=")
    return Parameter(name, _literal(default), False) if default else Parameter(name, None, True)


def _literal(text: str) -> Literal:
    """A default as the signature writes it: `2.0`, `-1`, `true`, `none`, `"tanh"`."""
    words: dict[str, Literal] = {"true": True, "false": False, "none": None}
    if text in words:
        return words[text]
    if text.startswith('"'):
        return text.strip('"')
    try:
        return int(text)
    except ValueError:
        return float(text)


_UNARY_TORCH = {
    "relu": "F.relu", "silu": "F.silu", "softplus": "F.softplus", "detach": "x.detach",
    "zeros_like": "torch.zeros_like", "ones_like": "torch.ones_like",
    "randn_like": "torch.randn_like",
    "rand_like": "torch.rand_like", "bernoulli": "torch.bernoulli",
}  # fmt: skip

_TABLE: tuple[FunctionSpec, ...] = (
    *(
        FunctionSpec(name, "x", e.summary, _UNARY_TORCH.get(name, f"torch.{name}"))
        for name, e in ELEMENTWISE.items()
        if name != "neg"
    ),
    FunctionSpec("gelu", 'x, approximate="none"', 'GELU, exact or `"tanh"`', "F.gelu"),
    FunctionSpec("clamp", "x, min=none, max=none", "x limited to [min, max]", "x.clamp"),
    FunctionSpec("softmax", "x, dim", "softmax along `dim`", "torch.softmax"),
    FunctionSpec(
        "log_softmax", "x, dim", "log of softmax along `dim`", "torch.log_softmax"
    ),
    FunctionSpec(
        "dropout", "x, p=0.5", "zeroes elements with probability p in training", "F.dropout",
    ),
    FunctionSpec(
        "flatten", "x, start_dim=1, end_dim=-1",
        "dims start..end as one (the method's start_dim is 0)", "x.flatten",
    ),
    FunctionSpec(
        "reshape", "x, *shape", "the same elements in a new shape", "x.reshape"
    ),
    FunctionSpec("view", "x, *shape", "a view in a new shape", "x.view"),
    FunctionSpec("permute", "x, *dims", "the dims in a new order", "x.permute"),
    FunctionSpec("transpose", "x, dim0, dim1", "two dims swapped", "x.transpose"),
    FunctionSpec("t", "x", "a matrix transposed (also `x.T`)", "x.t"),
    *(
        FunctionSpec(name, "x, dim=none, keepdim=false", doc, f"x.{name}")
        for name, doc in (
            ("mean", "the mean over `dim` (every dim if none)"),
            ("sum", "the sum over `dim` (every dim if none)"),
            ("amax", "the maximum over `dim` (every dim if none)"),
            ("amin", "the minimum over `dim` (every dim if none)"),
        )
    ),
    *(
        FunctionSpec(name, "x, dim=none, keepdim=false, correction=1", doc, f"x.{name}")
        for name, doc in (
            ("var", "the variance over `dim`"),
            ("std", "the standard deviation over `dim`"),
        )
    ),
    FunctionSpec(
        "cat", "[a, b, ...], dim=0", "tensors joined along `dim`", "torch.cat", method=False
    ),
    FunctionSpec(
        "concat", "[a, b, ...], dim=0", "the same as `cat`", "torch.cat", method=False
    ),
    FunctionSpec(
        "stack", "[a, b, ...], dim=0", "equal tensors stacked along a new `dim`", "torch.stack",
        method=False,
    ),
    FunctionSpec(
        "split", "x, size_or_sizes, dim=0", "a tuple of pieces along `dim`", "x.split"
    ),
    FunctionSpec(
        "chunk", "x, chunks, dim=0", "a tuple of `chunks` pieces along `dim`", "x.chunk"
    ),
    FunctionSpec(
        "expand", "x, *sizes", "size-1 dims broadcast to `sizes` (-1 keeps one)", "x.expand",
    ),
    FunctionSpec("repeat", "x, *counts", "x tiled `counts` times per dim", "x.repeat"),
    FunctionSpec("unsqueeze", "x, dim", "a new dim of size 1 at `dim`", "x.unsqueeze"),
    FunctionSpec(
        "squeeze", "x, dim=none", "dims of size 1 removed (only `dim` if given)", "x.squeeze",
    ),
    FunctionSpec(
        "normalize", "x, p=2.0, dim=1", "x divided by its p-norm along `dim`", "F.normalize",
    ),
    FunctionSpec("tril", "x, diagonal=0", "the lower triangle, 0 above", "torch.tril"),
    FunctionSpec("triu", "x, diagonal=0", "the upper triangle, 0 below", "torch.triu"),
    FunctionSpec(
        "einsum", '"equation", *tensors', "a sum of products named by the equation",
        "torch.einsum", method=False,
    ),
    FunctionSpec(
        "arange", "[start,] end[, step]", "the 1-D range start, start + step, ... < end",
        "torch.arange", method=False,
    ),
    FunctionSpec(
        "randn", "*sizes", "standard normal samples of this shape (`randn([B, 16])`)",
        "torch.randn", method=False,
    ),
    FunctionSpec(
        "rand", "*sizes", "uniform samples in [0, 1) of this shape", "torch.rand",
        method=False,
    ),
    FunctionSpec(
        "randint", "low, high, size", "integers drawn uniformly from [low, high), int64",
        "torch.randint", method=False,
    ),
    FunctionSpec(
        "linspace", "start, end, steps", "`steps` evenly spaced values from start to end",
        "torch.linspace", method=False,
    ),
    FunctionSpec(
        "multinomial", "p, num_samples, replacement=false",
        "category indices drawn in proportion to the weights p ([C] or [N, C]), int64",
        "torch.multinomial",
    ),
    FunctionSpec(
        "pow", "x, exponent", "x to the power `exponent` (also `x ** exponent`)", "torch.pow"
    ),
    FunctionSpec(
        "norm", "x, p=2.0, dim=none, keepdim=false",
        "the vector p-norm over `dim` (every dim if none)", "torch.linalg.vector_norm",
    ),
    FunctionSpec(
        "linalg.vector_norm", "x, ord=2.0, dim=none, keepdim=false", "the same as `norm`",
        "torch.linalg.vector_norm", method=False,
    ),
    FunctionSpec(
        "pad", 'x, pads, mode="constant", value=0.0',
        "the last dims grown by (left, right) pairs, the last dim's first; pads may be computed",
        "F.pad", method=False,
    ),
    FunctionSpec(
        "narrow", "x, dim, start, length", "`length` elements of `dim` from `start` (computed)",
        "x.narrow",
    ),
    FunctionSpec("cumsum", "x, dim", "running sums along `dim`", "torch.cumsum"),
    FunctionSpec("cumprod", "x, dim", "running products along `dim`", "torch.cumprod"),
    *(
        FunctionSpec(name, "x", f"x as {dtype} (a method only: `x.{name}()`)", "x.to")
        for name, dtype in (
            ("float", "float32"), ("half", "float16"), ("bfloat16", "bfloat16"),
            ("long", "int64 (`i64`)"), ("bool", "bool (`i1`)"),
        )
    ),
    FunctionSpec(
        "to", "x, dtype", "x as `dtype`: `torch.float32`, `torch.int64`, ... (a method only)",
        "x.to",
    ),
    *(
        FunctionSpec(name, "x, dim=none, keepdim=false", doc, f"x.{name}")
        for name, doc in (
            ("max", "the largest element; with `dim`, (values, indices) along it"),
            ("min", "the smallest element; with `dim`, (values, indices) along it"),
        )
    ),
    *(
        FunctionSpec(name, "x, dim=none, keepdim=false", doc, f"torch.{name}")
        for name, doc in (
            ("argmax", "the index of the largest element along `dim` (of all if none)"),
            ("argmin", "the index of the smallest element along `dim` (of all if none)"),
        )
    ),
    FunctionSpec(
        "topk", "x, k, dim=-1, largest=true",
        "(values, indices) of the k largest (smallest) along `dim`, sorted", "x.topk",
    ),
    FunctionSpec(
        "one_hot", "ids, num_classes", "class indices as rows of 0 and 1 (a new last dim)",
        "F.one_hot", method=False,
    ),
    FunctionSpec(
        "gather", "x, dim, index", "x's elements at `index` along `dim` (index's shape)",
        "torch.gather",
    ),
    *(
        FunctionSpec(name, f"x, dim, index, {src}", doc, f"x.{name}")
        for name, src, doc in (
            ("scatter", "src", "x with `src` (a tensor or number) written at `index` along `dim`"),
            ("scatter_add", "src", "x with `src` added at `index` along `dim`"),
            ("index_add", "source", "x with `source`'s slices added at the 1-D `index` on `dim`"),
        )
    ),
    FunctionSpec(
        "where", "condition[, a, b]",
        "a where condition holds, else b; with the condition alone, the indices where it "
        "holds, one i64 tensor per dim, of a length that depends on the data",
        "torch.where", method=False,
    ),
    FunctionSpec(
        "nonzero", "x, as_tuple=true",
        "the indices where x holds, one i64 tensor per dim (as `where(x)`)",
        "torch.nonzero",
    ),
    FunctionSpec(
        "masked_fill", "x, mask, value", "x with `value` where mask holds", "x.masked_fill",
    ),
    FunctionSpec("matmul", "a, b", "the matrix product (also `a @ b`)", "torch.matmul"),
    FunctionSpec("size", "x, dim", "the size of one dim, an integer", "x.size"),
    FunctionSpec(
        "scaled_dot_product_attention",
        "q, k, v, attn_mask=none, dropout=0.0, causal=false, scale=none",
        "softmax(q k^T / sqrt(E) + mask) v, fused (flash attention on a GPU)",
        "F.scaled_dot_product_attention", method=False,
    ),
)  # fmt: skip

_LOSS_TABLE = tuple(
    FunctionSpec(
        name,
        "out, y, reduction=\"mean\"" + "".join(f", {k}=" for k in loss.function_keywords),
        f"{loss.summary}; targets: {loss.targets}", loss.torch_function or "", method=False,
    )
    for name, loss in FUNCTIONAL_LOSSES.items()
)  # fmt: skip
"""The functional losses of catalogue/losses.py: `cross_entropy(out, y)`, `mse`, ..."""

FUNCTIONS: dict[str, FunctionSpec] = {spec.name: spec for spec in (*_TABLE, *_LOSS_TABLE)}
"""Every builtin function or tensor method a forward may call, by name."""
