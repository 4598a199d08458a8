"""Symbolic shapes: dims, unification, and the shape helpers every rule uses.

A `Dim` is an `int` (concrete), a `str` (a symbolic name such as `"B"` or
`"T"`) or `None` (unknown). A `Shape` is a tuple of dims, or `None` when even
the rank is unknown. A `Unifier` is a union-find over symbolic names: meeting
`[B, 784]` with a layer that wants `[?, 784]` binds nothing, meeting `T` with
`S` makes them one name, and meeting `T` with `128` binds `T` to 128.

    u = Unifier()
    broadcast(("B", 1, "T"), ("B", 4, 128), u)   # ("B", 4, "T"), and T := 128
    u.format_shape(("B", 4, "T"))                # "[B, 4, 128]"

Errors are values: every helper returns a `ShapeMismatch` instead of raising.
A layer rule's `message` is a predicate phrase, so the caller writes the subject:
f"`{name}` {mismatch.message}" reads "`fc2` expects 128 input features, got 256".
The functional builtins' helpers (the nml ops' `infer_shape` calls them) say a
whole clause, "matmul of [B, 32] and [16, 8]: inner dims 32 and 16 differ", which
the shape-inference pass shows after the op's name when it does not start with it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType

from tensorloom.catalogue import dim_expr

Dim = int | str | None
Shape = tuple[Dim, ...] | None


@dataclass(frozen=True, slots=True)
class ShapeMismatch:
    """Why a shape rule failed: the pieces a diagnostic needs.

    `message` follows the subject ("expects 128 input features, got 256").
    `operand` is the index of the offending input, `dim` the offending dim of
    that input (negative counts from the end, as the user would write it).
    """

    message: str
    expected: str | None = None
    got: str | None = None
    operand: int = 0
    dim: int | None = None
    help: str | None = None

    def render(self, subject: str) -> str:
        return f"`{subject}` {self.message}"


def format_dim(dim: Dim) -> str:
    return "?" if dim is None else str(dim)


def format_shape(shape: Shape) -> str:
    """`("B", 256)` -> `"[B, 256]"`; an unknown rank is `"[*]"`."""
    if shape is None:
        return "[*]"
    return "[" + ", ".join(format_dim(d) for d in shape) + "]"


BATCH_NAMES = frozenset({"B"})
_DATA_DEPENDENT = re.compile(r"nnz(_\d+_\d+)?")


def is_data_dependent(dim: Dim) -> bool:
    """`nnz_12_24`: the number of elements `where(mask)` at 12:24 (or a mask assigned
    through there) finds, which only the data decides."""
    return isinstance(dim, str) and _DATA_DEPENDENT.fullmatch(dim) is not None


_MAX_RESOLVE_DEPTH = 64
SOLVE_LIMIT = 4096
"""An equation in one symbol that arithmetic does not solve is tried at sizes up to this."""


class Unifier:
    """Union-find over symbolic dim names, each class optionally bound to an int."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}
        self._value: dict[str, int] = {}
        # Symbols no rule may fix to a size: the batch dim, which the data loader decides
        # (and the last batch of an epoch is smaller). `bind` (`-D B=32`) still may.
        self.rigid: set[str] = set()
        # Symbols the program names as sizes of their own (the checked forward's
        # annotation, `x: Tensor[B, T]`): none of them may turn out to be the batch dim.
        self.distinct: set[str] = set()
        self._binding = False  # `bind` may fix even a data-dependent length

    def _root(self, name: str) -> str:
        parent = self._parent.setdefault(name, name)
        if parent == name:
            return name
        root = self._root(parent)
        self._parent[name] = root
        return root

    def resolve(self, dim: Dim, depth: int = 0) -> Dim:
        """The int a symbol is bound to, else its class's representative name; an
        expression (`H+4`) with its symbols resolved, simplified (`12` once H is 8)."""
        if not isinstance(dim, str):
            return dim
        root = self._root(dim)
        if root in self._value:
            return self._value[root]
        if not dim_expr.is_expression(root) or depth > _MAX_RESOLVE_DEPTH:
            return root
        names = dim_expr.symbols(root)
        sizes = {n: r for n in names if (r := self.resolve(n, depth + 1)) != n and r is not None}
        return dim_expr.substitute(root, sizes) if sizes else root

    def resolve_shape(self, shape: Shape) -> Shape:
        return None if shape is None else tuple(self.resolve(d) for d in shape)

    def format_shape(self, shape: Shape) -> str:
        return format_shape(self.resolve_shape(shape))

    def bind(self, name: str, value: int) -> Dim | ShapeMismatch:
        """Bind a symbol to a concrete size (`-D T=512`, `-D nnz_12_24=16`)."""
        rigid, self.rigid = self.rigid, set()
        self._binding = True
        try:
            return self.unify(name, value)
        finally:
            self.rigid = rigid
            self._binding = False

    def represent(self, name: str) -> None:
        """Make `name` its class's representative, the name shown for the class (the
        caller's `H`, not the `H_1` a nested forward's annotation was unified as)."""
        root = self._root(name)
        if root == name:
            return
        self._parent[root] = name
        self._parent[name] = name
        if root in self._value:
            self._value[name] = self._value.pop(root)

    def unify(self, expected: Dim, got: Dim) -> Dim | ShapeMismatch:
        """Make two dims equal, or say why they cannot be; the unifier is
        unchanged on a mismatch. The expected side's name represents a merged class."""
        a, b = self.resolve(expected), self.resolve(got)
        if a is None or b is None:
            return b if a is None else a
        if isinstance(a, int) and isinstance(b, int):
            return a if a == b else _dim_mismatch(a, b)
        if a != b and not self._binding and (is_data_dependent(a) or is_data_dependent(b)):
            return self._data_dependent(a, b)
        if isinstance(a, str) and isinstance(b, str):
            if a == b:
                return a
            if dim_expr.is_expression(a) or dim_expr.is_expression(b):
                return self._unify_expressions(a, b)
            tied = self._ties_batch(a, b)
            if tied is not None:
                return tied
            self._parent[b] = a
            return a
        name, value = (a, b) if isinstance(a, str) else (b, a)
        assert isinstance(name, str) and isinstance(value, int)
        if dim_expr.is_expression(name):
            return self._solve(name, value, expected=a)
        if any(self._root(r) == name for r in self.rigid):
            what = (
                f"the batch dim {name}"
                if BATCH_NAMES & {name}
                else f"`{name}`, a multiple of the batch dim"
            )
            return ShapeMismatch(
                f"expects {value}, got {what}, which is not a fixed size",
                expected=str(value),
                got=name,
                help="a batch holds `batch_size` samples (fewer in the last batch): "
                "do not tie a size to it",
            )
        self._value[name] = value
        return value

    def _data_dependent(self, a: Dim, b: Dim) -> Dim | ShapeMismatch:
        """`where(mask)`'s length (`nnz_12_24`) is a size of its own: a free name (a nested
        forward's `N`) may stand for it, no number, other such length or named size may."""
        count, other = (a, b) if isinstance(a, str) and is_data_dependent(a) else (b, a)
        assert isinstance(count, str)
        free = (
            isinstance(other, str)
            and not is_data_dependent(other)
            and not dim_expr.is_expression(other)
            and not self._is_rigid(other)
            and not any(self._root(n) == other for n in self.distinct)
        )
        if free:
            assert isinstance(other, str)
            self._parent[other] = count
            return count
        return ShapeMismatch(
            f"`{count}` is a number of elements that depends on the data, and {other} is not it",
            expected=str(a),
            got=str(b),
            help="sizes of the same `where(mask)` (or of the same assignment's mask) agree; "
            "any other size needs the data to match it",
        )

    def _unify_expressions(self, a: str, b: str) -> Dim | ShapeMismatch:
        """`H+4` against `H` (never equal), `W` (W is H+4), `W+4` (W is H)."""
        x, y = dim_expr.parse(a), dim_expr.parse(b)
        if x is None or y is None:
            return a  # not an expression we know: nothing is decided
        difference = x.plus(y, -1)
        if difference.constant == 0:
            return a
        if difference.constant is not None:
            names = " and ".join(f"`{n}`" for n in dim_expr.symbols(f"{a} {b}"))
            return ShapeMismatch(
                f"expects {a}, got {b}: they differ by {abs(difference.const)} whatever "
                f"size {names} has",
                expected=a,
                got=b,
            )
        plain = [n for n in (b, a) if dim_expr.is_name(n)]  # bind the bare name first
        order = sorted(difference.terms.items(), key=lambda t: (t[0] not in plain, t[0]))
        for name, coeff in order:
            if abs(coeff) != 1 or not dim_expr.is_name(name) or self._is_rigid(name):
                continue
            # difference = coeff*name + rest = 0, so name = -rest/coeff
            rest = difference.plus(dim_expr.Affine(0, {name: coeff}), -1).times(-coeff)
            solved = dim_expr.dim_of(rest)
            if isinstance(solved, int):
                self._value[self._root(name)] = solved
                return a
            if solved is not None and name not in dim_expr.symbols(solved):
                self._parent[self._root(name)] = solved
                return a
        return self._by_sizes(a, b)

    def _by_sizes(self, a: str, b: str) -> Dim | ShapeMismatch:
        """An equation in one symbol with divisions (`H` against `(H+1)//2`): the sizes
        0..SOLVE_LIMIT that satisfy it. None of size 2 or more: a mismatch (a stride-2
        conv's output added to its input: equal only for a 1x1 image); one: the
        symbol is that size; more: not decided. Two symbols or more are not decided."""
        names = dim_expr.symbols(f"{a} {b}")
        if len(names) != 1 or self._is_rigid(names[0]):
            return a
        [name] = names
        x, y = dim_expr.parse(a), dim_expr.parse(b)
        if x is None or y is None:
            return a
        difference = x.plus(y, -1)
        fits = [n for n in range(SOLVE_LIMIT + 1) if dim_expr.value_at(difference, {name: n}) == 0]
        if len(fits) == SOLVE_LIMIT + 1:
            return a
        positive = [n for n in fits if n >= 1]
        if positive in ([], [1]):  # a size-1 image is no image: the skip lost a stride
            only = (
                f"only when `{name}` is 1"
                if positive
                else (f"for no size of `{name}` up to {SOLVE_LIMIT:,}")
            )
            return ShapeMismatch(f"expects {a}, got {b}: they are equal {only}",
                                 expected=a, got=b)  # fmt: skip
        if len(positive) == 1:  # the only size that works
            self._value[self._root(name)] = positive[0]
        return a  # several sizes fit (`2*(H//2)` is H for even H): nothing is bound

    def _solve(self, expression: str, value: int, expected: Dim) -> Dim | ShapeMismatch:
        """`H+4` against 12: H is 8. `2*H` against 7 has no solution; `H//2` against 4
        takes the smallest H that fits (8)."""
        form = dim_expr.parse(expression)
        if form is None or len(form.terms) != 1:
            return value  # several symbols: not decided here
        [(atom, coeff)] = form.terms.items()
        want, name = value - form.const, atom
        solution: int | None = None
        if want % coeff == 0 and want // coeff >= 0:
            if dim_expr.is_name(atom):
                solution = want // coeff
            else:  # (c*name + d)//k: the smallest name with that quotient
                division = dim_expr.division_of(atom)
                if division is None or len(division[0].terms) != 1:
                    return value
                inner, k = division
                [(name, c)] = inner.terms.items()
                if not dim_expr.is_name(name) or c <= 0:
                    return value
                start = (want // coeff) * k - inner.const  # c*name must be in [start, start+k)
                solution = -(-max(start, 0) // c)
                if c * solution >= start + k:
                    solution = None
        if solution is None:
            shown = (expression, value) if expected == expression else (value, expression)
            names = " or ".join(f"`{n}`" for n in dim_expr.symbols(expression))
            return ShapeMismatch(
                f"expects {shown[0]}, got {shown[1]}: no size of {names} makes "
                f"{expression} equal {value}",
                expected=str(shown[0]),
                got=str(shown[1]),
            )
        if not self._is_rigid(name):
            self._value[self._root(name)] = solution
        return value

    def _is_rigid(self, name: str) -> bool:
        return any(self._root(r) == self._root(name) for r in self.rigid)

    def _ties_batch(self, a: str, b: str) -> ShapeMismatch | None:
        """The mismatch when merging classes `a` and `b` would make a named size the batch dim."""

        def has(root: str, names: set[str]) -> str | None:
            return next((n for n in sorted(names) if self._root(n) == root), None)

        for batch_root, other in ((a, b), (b, a)):
            batch = has(batch_root, self.rigid)
            named = has(other, self.distinct - self.rigid)
            if batch is not None and named is not None:
                return ShapeMismatch(
                    f"would make `{named}` the batch dim `{batch}`: they are different sizes",
                    expected=a,
                    got=b,
                    help=f"`{batch}` is whatever the data loader batches; "
                    f"`{named}` is a size of each sample",
                )
        return None

    def unify_shapes(self, expected: Shape, got: Shape) -> Shape | ShapeMismatch:
        """Dim-wise unification of two shapes of equal rank."""
        if expected is None or got is None:
            return got if expected is None else expected
        if len(expected) != len(got):
            return ShapeMismatch(
                f"expects a {len(expected)}-D tensor, got {len(got)}-D",
                expected=format_shape(expected),
                got=format_shape(got),
            )
        dims: list[Dim] = []
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            dim = self.unify(e, g)
            if isinstance(dim, ShapeMismatch):
                return _with_dim(dim, i - len(got))
            dims.append(dim)
        return tuple(dims)


def _dim_mismatch(expected: int, got: int) -> ShapeMismatch:
    return ShapeMismatch(f"expects {expected}, got {got}", expected=str(expected), got=str(got))


def _with_dim(m: ShapeMismatch, dim: int, operand: int | None = None) -> ShapeMismatch:
    op = m.operand if operand is None else operand
    return ShapeMismatch(m.message, m.expected, m.got, op, dim, m.help)


def mismatch(
    message: str,
    expected: object = None,
    got: object = None,
    operand: int = 0,
    dim: int | None = None,
    help: str | None = None,
) -> ShapeMismatch:
    """A `ShapeMismatch` with `expected`/`got` formatted (dims, shapes or text)."""
    return ShapeMismatch(message, _fmt(expected), _fmt(got), operand, dim, help)


def _fmt(x: object) -> str | None:
    if x is None:
        return None
    if isinstance(x, tuple):
        return format_shape(x)  # type: ignore[arg-type]
    return str(x)


# --- dims -------------------------------------------------------------------------------


def normalize_dim(dim: int, rank: int) -> int | ShapeMismatch:
    """A possibly negative dim index as a non-negative one (PyTorch's wrap rule)."""
    if -rank <= dim < rank:
        return dim % rank if rank else 0
    return mismatch(
        f"dimension {dim} is out of range for a tensor of rank {rank}",
        expected=f"a dim in [{-rank}, {rank - 1}]",
        got=dim,
    )


def product(dims: Sequence[Dim]) -> int | None:
    """The number of elements, when every dim is concrete."""
    total = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        total *= d
    return total


def _affine_product(dims: Sequence[Dim]) -> Dim:
    """The product when at most one dim is symbolic (`[4, H]` flattened: `4*H`)."""
    symbolic = [d for d in dims if not isinstance(d, int)]
    if not symbolic:
        return product(dims)
    if len(symbolic) > 1:
        return None
    return dim_expr.scale(symbolic[0], product([d for d in dims if isinstance(d, int)]) or 0)


def concrete(shape: Shape) -> tuple[int, ...] | None:
    """The shape as ints, or None if any dim (or the rank) is unknown."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return tuple(d for d in shape if isinstance(d, int))


# --- broadcasting -------------------------------------------------------------------------


def broadcast(a: Shape, b: Shape, unifier: Unifier) -> Shape | ShapeMismatch:
    """PyTorch broadcasting: align right; a concrete 1 stretches; two symbols are
    assumed equal (unified), since broadcasting a symbolic 1 is almost always a bug;
    an unknown dim takes the other side's (it is 1 or equal, else torch fails)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + a
    pb = (1,) * (rank - len(b)) + b
    dims: list[Dim] = []
    for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
        dim = _broadcast_dim(unifier.resolve(x), unifier.resolve(y), unifier)
        if isinstance(dim, ShapeMismatch):
            return mismatch(
                f"cannot broadcast {unifier.format_shape(a)} with {unifier.format_shape(b)}",
                expected=unifier.format_shape(a),
                got=unifier.format_shape(b),
                operand=1,
                dim=i - rank,
            )
        dims.append(dim)
    return tuple(dims)


def _broadcast_dim(x: Dim, y: Dim, unifier: Unifier) -> Dim | ShapeMismatch:
    if x == 1:
        return y
    if y == 1:
        return x
    return unifier.unify(x, y)


# --- convolution and pooling ------------------------------------------------------------------


def conv_output_size(
    size: Dim, kernel: int, stride: int = 1, padding: int | str = 0, dilation: int = 1
) -> Dim:
    """One spatial dim after a convolution (PyTorch's floor formula).

    A symbolic size stays itself when the convolution preserves it (stride 1 and
    "same" padding, or explicit padding equal to the half effective kernel);
    otherwise a symbolic or unknown size gives None.
    """
    if padding == "same":
        return size
    pad = 0 if padding == "valid" else int(padding)
    if stride == 1 and 2 * pad == dilation * (kernel - 1):
        return size
    if not isinstance(size, int):  # `H+4` for padding 3; `(H+1)//2` for stride 2
        inner = dim_expr.add(size, 2 * pad - dilation * (kernel - 1) - 1)
        return dim_expr.add(dim_expr.floordiv(inner, stride), 1)
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(
    size: Dim,
    kernel: int,
    stride: int = 1,
    padding: int = 0,
    output_padding: int = 0,
    dilation: int = 1,
) -> Dim:
    """One spatial dim after a transposed convolution."""
    if stride == 1 and output_padding == 0 and 2 * padding == dilation * (kernel - 1):
        return size
    if not isinstance(size, int):  # `2*H` for a stride-2 kernel-2 upsampling
        grown = dim_expr.scale(dim_expr.add(size, -1), stride)
        return dim_expr.add(grown, -2 * padding + dilation * (kernel - 1) + output_padding + 1)
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def pool_output_size(
    size: Dim,
    kernel: int,
    stride: int,
    padding: int = 0,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> Dim:
    """One spatial dim after max/avg pooling, `ceil_mode` included."""
    if stride == 1 and 2 * padding == dilation * (kernel - 1):
        return size
    if not isinstance(size, int):  # `H//2` for a 2x2 pool
        if ceil_mode:
            return None
        inner = dim_expr.add(size, 2 * padding - dilation * (kernel - 1) - 1)
        return dim_expr.add(dim_expr.floordiv(inner, stride), 1)
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


# --- functional builtins ----------------------------------------------------------------------


def same_shape(shape: Shape, dim: int | None = None) -> Shape | ShapeMismatch:
    """Elementwise ops and softmax/log_softmax: the shape is kept; `dim` must exist."""
    if shape is None or dim is None:
        return shape
    d = normalize_dim(dim, len(shape))
    return d if isinstance(d, ShapeMismatch) else shape


def flatten_shape(shape: Shape, start_dim: int = 0, end_dim: int = -1) -> Shape | ShapeMismatch:
    """`torch.flatten`: dims start..end (inclusive) become one."""
    if shape is None:
        return None
    if not shape:
        return (1,)
    start, end = normalize_dim(start_dim, len(shape)), normalize_dim(end_dim, len(shape))
    if isinstance(start, ShapeMismatch):
        return start
    if isinstance(end, ShapeMismatch):
        return end
    if start > end:
        return mismatch(f"got `start_dim` {start_dim} after `end_dim` {end_dim}")
    merged = shape[start : end + 1]
    one: Dim = merged[0] if len(merged) == 1 else _affine_product(merged)
    return (*shape[:start], one, *shape[end + 1 :])


def transpose_shape(shape: Shape, dim0: int, dim1: int) -> Shape | ShapeMismatch:
    if shape is None:
        return None
    a, b = normalize_dim(dim0, len(shape)), normalize_dim(dim1, len(shape))
    if isinstance(a, ShapeMismatch):
        return a
    if isinstance(b, ShapeMismatch):
        return b
    dims = list(shape)
    dims[a], dims[b] = dims[b], dims[a]
    return tuple(dims)


def permute_shape(shape: Shape, dims: Sequence[int]) -> Shape | ShapeMismatch:
    if shape is None:
        return None if len(set(dims)) == len(dims) else mismatch("got a repeated dim in `permute`")
    if len(dims) != len(shape):
        return mismatch(
            f"permute got {len(dims)} dims for a tensor of rank {len(shape)}",
            expected=len(shape),
            got=len(dims),
        )
    order: list[int] = []
    for d in dims:
        n = normalize_dim(d, len(shape))
        if isinstance(n, ShapeMismatch):
            return n
        order.append(n)
    if len(set(order)) != len(order):
        return mismatch("got a repeated dim in `permute`", got=list(dims))
    return tuple(shape[i] for i in order)


def matmul_shape(a: Shape, b: Shape, unifier: Unifier) -> Shape | ShapeMismatch:
    """`torch.matmul` / `@`: 1-D operands are promoted then squeezed; batch dims broadcast."""
    if a is None or b is None:
        return None
    if not a or not b:
        return mismatch("matmul needs tensors of rank 1 or more")
    ea = (1, *a) if len(a) == 1 else a
    eb = (*b, 1) if len(b) == 1 else b
    inner = unifier.unify(ea[-1], eb[-2])
    if isinstance(inner, ShapeMismatch):
        return mismatch(
            f"matmul of {unifier.format_shape(a)} and {unifier.format_shape(b)}: "
            f"inner dims {format_dim(unifier.resolve(ea[-1]))} "
            f"and {format_dim(unifier.resolve(eb[-2]))} differ",
            expected=format_dim(unifier.resolve(ea[-1])),
            got=format_dim(unifier.resolve(eb[-2])),
            operand=1,
            dim=-1 if len(b) == 1 else -2,
        )
    batch = broadcast(ea[:-2], eb[:-2], unifier)
    if isinstance(batch, ShapeMismatch) or batch is None:
        return batch
    rows = () if len(a) == 1 else (ea[-2],)
    cols = () if len(b) == 1 else (eb[-1],)
    return (*batch, *rows, *cols)


def cat_shape(shapes: Sequence[Shape], dim: int, unifier: Unifier) -> Shape | ShapeMismatch:
    """`torch.cat`: equal ranks, equal dims except `dim`, which adds up."""
    known = [(i, s) for i, s in enumerate(shapes) if s is not None]
    if not known:
        return None
    first = known[0][1]
    d = normalize_dim(dim, len(first))
    if isinstance(d, ShapeMismatch):
        return d
    dims = list(first)
    for i, s in known[1:]:
        merged = _cat_one(dims, s, d, unifier)
        if isinstance(merged, ShapeMismatch):
            return _with_dim(merged, merged.dim if merged.dim is not None else d, i)
        dims = merged
    if len(known) < len(shapes):
        dims[d] = None
    return tuple(dims)


def _cat_one(dims: list[Dim], s: tuple[Dim, ...], d: int, u: Unifier) -> list[Dim] | ShapeMismatch:
    if len(s) != len(dims):
        return mismatch(
            f"cat of tensors of rank {len(dims)} and {len(s)}",
            expected=len(dims),
            got=len(s),
        )
    out = list(dims)
    for i, (x, y) in enumerate(zip(dims, s, strict=True)):
        if i == d:
            out[i] = dim_expr.combine(u.resolve(x), u.resolve(y))  # `2*T` for two T
            continue
        m = u.unify(x, y)
        if isinstance(m, ShapeMismatch):
            return mismatch(
                f"cat: dimension {i} is {format_dim(u.resolve(x))} and {format_dim(u.resolve(y))}",
                expected=format_dim(u.resolve(x)),
                got=format_dim(u.resolve(y)),
                dim=i,
            )
        out[i] = m
    return out


def reduce_shape(
    shape: Shape, dim: int | Sequence[int] | None = None, keepdim: bool = False
) -> Shape | ShapeMismatch:
    """`mean`/`sum` over `dim` (all dims when None), with `keepdim`."""
    if shape is None:
        return None if dim is not None or keepdim else ()
    dims = range(len(shape)) if dim is None else [dim] if isinstance(dim, int) else dim
    chosen: set[int] = set()
    for d in dims:
        n = normalize_dim(d, len(shape))
        if isinstance(n, ShapeMismatch):
            return n
        chosen.add(n)
    if keepdim:
        return tuple(1 if i in chosen else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in chosen)


def reshape_shape(shape: Shape, target: Sequence[Dim], unifier: Unifier) -> Shape | ShapeMismatch:
    """`reshape`/`view`: one `-1` is inferred; element counts must agree.

    Symbolic dims cancel by name: `[B, T, 512]` viewed as `(B, T, 8, -1)` gives
    `[B, T, 8, 64]`. Anything that cannot be decided stays unknown.
    """
    resolved = [unifier.resolve(d) for d in target]
    holes = [i for i, d in enumerate(resolved) if d == -1]
    if len(holes) > 1:
        return mismatch("got more than one `-1` in the target shape")
    if any(isinstance(d, int) and d < -1 for d in resolved):
        return mismatch("got a negative size in the target shape", got=format_shape(tuple(target)))
    source = unifier.resolve_shape(shape)
    if source is None or None in source:
        return tuple(None if d == -1 else d for d in resolved)
    known = [d for d in resolved if d != -1]
    if holes:
        left = _divide_counts(_count(source), _count(known))
        resolved[holes[0]] = _hole_value(left) if left is None else _batch_hole(left, unifier)
        return tuple(resolved)
    want, have = _count(known), _count(source)
    # Only a difference in the concrete factor is certain; other symbols might agree.
    if want is not None and have is not None and want[1] == have[1] and want[0] != have[0]:
        return mismatch(
            f"cannot view {format_shape(source)} as {format_shape(tuple(resolved))}: "
            "the element counts differ",
            expected=format_shape(source),
            got=format_shape(tuple(resolved)),
        )
    return tuple(resolved)


def _count(dims: Sequence[Dim]) -> tuple[int, Counter[str]] | None:
    if any(d is None for d in dims):
        return None
    ints = [d for d in dims if isinstance(d, int)]
    return math.prod(ints), Counter(d for d in dims if isinstance(d, str))


def _divide_counts(
    num: tuple[int, Counter[str]] | None, den: tuple[int, Counter[str]] | None
) -> tuple[int, Counter[str]] | None:
    if num is None or den is None or den[0] == 0 or num[0] % den[0]:
        return None
    if any(num[1][k] < v for k, v in den[1].items()):
        return None
    return num[0] // den[0], num[1] - den[1]


def _batch_hole(left: tuple[int, Counter[str]], unifier: Unifier) -> Dim:
    """A `-1` that absorbs the batch dim with other sizes (`[B, T, 16]` viewed as
    `(2, -1)`: 8·B·T) is a size of its own, named `B_T_x8`, that no rule may fix:
    it grows with the batch. Otherwise the hole's value, as `_hole_value`."""
    value = _hole_value(left)
    n, syms = left
    batch = [r for r in unifier.rigid if unifier.resolve(r) in syms]
    if value is not None or not batch:
        return value
    if not all(dim_expr.is_name(s) for s in syms):
        return None  # `B·(T//2)`: a product with an expression is no name (and not affine)
    name = "_".join([*sorted(syms.elements()), *([f"x{n}"] if n != 1 else [])])
    unifier.rigid.add(name)
    return name


def _hole_value(left: tuple[int, Counter[str]] | None) -> Dim:
    if left is None:
        return None
    n, syms = left
    if not syms:
        return n
    names = list(syms.elements())
    return names[0] if n == 1 and len(names) == 1 else None


@dataclass(frozen=True, slots=True)
class Slice:
    """`start:stop:step` in an index expression (None where omitted). A bound may be a
    symbolic size (`x[:, :T]`) or UNKNOWN_BOUND (computed, its value not known here)."""

    start: Dim = None
    stop: Dim = None
    step: Dim = None

    def parts(self) -> tuple[Dim, Dim, Dim]:
        return (self.start, self.stop, self.step)


UNKNOWN_BOUND = "?"
"""A slice bound computed at run time whose value the checker does not know."""


@dataclass(frozen=True, slots=True)
class TensorIndex:
    """`x[idx]` with an integer tensor: its dims stand where the indexed dim was."""

    dims: Shape


@dataclass(frozen=True, slots=True)
class MaskIndex:
    """`x[mask] = v` with a boolean tensor: it takes the place of as many dims as it has
    (which must be the tensor's there) and selects a number of elements that depends on
    the data. Only an assignment takes one: a read's size would be the data's."""

    dims: Shape


Index = int | Slice | EllipsisType | TensorIndex | MaskIndex | None


def index_shape(shape: Shape, indices: Sequence[Index]) -> Shape | ShapeMismatch:
    """`x[...]` with ints, slices, `...` and `None` (a new axis of size 1)."""
    if shape is None:
        return None
    consuming = [i for i in indices if i is not None and i is not Ellipsis]
    ellipses = sum(1 for i in indices if i is Ellipsis)
    if ellipses > 1:
        return mismatch("an index can hold at most one `...`")
    if len(consuming) > len(shape):
        return mismatch(
            f"too many indices ({len(consuming)}) for a tensor of rank {len(shape)}",
            expected=len(shape),
            got=len(consuming),
        )
    tensors = [i for i in indices if isinstance(i, TensorIndex)]
    if tensors and len(consuming) > len(tensors) + sum(isinstance(i, Slice) for i in indices):
        return mismatch(
            "a tensor index with an integer index moves the indexed dims: not supported",
            help="index by the integer first (`x[:, 0][idx]`), or use `gather`",
        )
    if len(tensors) > 1:
        problem = _paired_tensors(indices, tensors)
        if problem is not None:
            return problem
    if tensors and any(t.dims is None for t in tensors):
        return None
    expanded = _expand_ellipsis(list(indices), len(shape) - len(consuming))
    return _apply_indices(shape, expanded)


def assigned_region(
    shape: Shape, indices: Sequence[Index], count: str, unifier: Unifier
) -> Shape | ShapeMismatch:
    """`x[indices] = v`: the shape of the region `v` must broadcast to, as `x[indices]`
    reads it; a boolean mask's dims become one of `count` elements (a size of its own)."""
    masks = [i for i in indices if isinstance(i, MaskIndex)]
    if not masks or shape is None:
        return index_shape(shape, indices)
    if len(masks) > 1 or any(isinstance(i, TensorIndex) for i in indices):
        return mismatch(
            "a boolean mask beside another tensor index is not supported",
            help="assign through one mask, or through integer indices (`where(mask)`)",
        )
    mask = masks[0]
    at = next(i for i, index in enumerate(indices) if isinstance(index, MaskIndex))
    width = len(mask.dims) if mask.dims is not None else 0
    spread = [*indices[:at], *[Slice()] * width, *indices[at + 1 :]]
    region = index_shape(shape, spread)
    if mask.dims is None or region is None or isinstance(region, ShapeMismatch):
        return region
    start = _dims_before(shape, spread, at)
    covered = region[start : start + width]
    if any(
        isinstance(unifier.unify(r, m), ShapeMismatch)
        for r, m in zip(covered, mask.dims, strict=False)
    ):
        return mismatch(
            f"the mask {unifier.format_shape(mask.dims)} does not match the dims "
            f"{unifier.format_shape(covered)} it selects from",
            expected=unifier.format_shape(covered),
            got=unifier.format_shape(mask.dims),
            help="a mask has the shape of the dims it indexes: compare the tensor itself, "
            "or index the leading dims",
        )
    return (*region[:start], count, *region[start + width :])


def _dims_before(shape: tuple[Dim, ...], spread: Sequence[Index], at: int) -> int:
    """How many dims of `x[spread]` the items before position `at` give."""
    consuming = sum(1 for i in spread if i is not None and i is not Ellipsis)
    dims = 0
    for index in spread[:at]:
        if index is Ellipsis:
            dims += len(shape) - consuming
        elif not isinstance(index, int):
            dims += 1
    return dims


def value_into_region(
    region: Shape, value: Shape, count: str | None, unifier: Unifier
) -> ShapeMismatch | None:
    """`x[...] = v`: `v` broadcasts to the region, as PyTorch's assignment copies it
    (leading dims of size 1 are dropped first). A mask's `count` takes a 1 or itself."""
    if region is None or value is None:
        return None
    extra = len(value) - len(region)
    if extra > 0 and all(d == 1 for d in value[:extra]):
        value, extra = value[extra:], 0
    fits = extra <= 0
    for r, v in zip(reversed(region), reversed(value), strict=False):
        if not fits:
            break
        if v == 1:
            continue
        if unifier.resolve(r) == count:
            fits = unifier.resolve(v) == count
            continue
        fits = not isinstance(unifier.unify(r, v), ShapeMismatch)
    if fits:
        return None
    return mismatch(
        f"the value {unifier.format_shape(value)} does not broadcast to the assigned region "
        f"{unifier.format_shape(region)}",
        expected=unifier.format_shape(region),
        got=unifier.format_shape(value),
        operand=1,
        help="each dim of the value must be 1 or the region's size there; "
        "a number fills the whole region",
    )


def _paired_tensors(indices: Sequence[Index], tensors: list[TensorIndex]) -> ShapeMismatch | None:
    """`w[rows, nth]` (Mixtral's `weights[batch_idx, nth_expert, None]`): tensor indices
    side by side, of one shape, pick one element per position, their shape in place of
    the dims they index. Apart, or of different shapes, they are refused."""
    at = [i for i, index in enumerate(indices) if isinstance(index, TensorIndex)]
    if at != list(range(at[0], at[0] + len(at))):
        return mismatch(
            "tensor indices with a slice between them move the indexed dims: not supported",
            help="put the tensor indices side by side, or index by one at a time",
        )
    first = tensors[0].dims
    for other in tensors[1:]:
        if first is not None and other.dims is not None and tuple(other.dims) != tuple(first):
            return mismatch(
                f"tensor indices of different shapes, {format_shape(first)} and "
                f"{format_shape(other.dims)}",
                help="index by tensors of one shape: each picks one element per position",
            )
    return None


def _expand_ellipsis(indices: list[Index], fill: int) -> list[Index]:
    if Ellipsis not in indices:
        return indices + [Slice()] * fill
    at = indices.index(Ellipsis)
    return indices[:at] + [Slice()] * fill + indices[at + 1 :]


def _apply_indices(shape: tuple[Dim, ...], indices: list[Index]) -> Shape | ShapeMismatch:
    out: list[Dim] = []
    axis = 0
    out_tensor = False
    for index in indices:
        if index is None:
            out.append(1)
            continue
        size = shape[axis]
        if isinstance(index, TensorIndex):
            paired = out_tensor
            out_tensor = True
            if not paired:  # the later indices of a pair share the first one's dims
                out.extend(index.dims or ())
        elif isinstance(index, int):
            if isinstance(size, int) and not -size <= index < size:
                return mismatch(
                    f"index {index} is out of range for a dimension of size {size}",
                    expected=f"an index in [{-size}, {size - 1}]",
                    got=index,
                    dim=axis,
                )
        elif isinstance(index, Slice):
            step = index.step
            if isinstance(step, int) and step <= 0:
                return mismatch("got a slice step that is not positive", got=step, dim=axis)
            out.append(_slice_length(size, index))
        axis += 1
    return tuple(out)


def _slice_length(size: Dim, s: Slice) -> Dim:
    if s == Slice():
        return size
    whole = s.start in (None, 0) and s.step in (None, 1)
    if whole and isinstance(s.stop, str) and s.stop == size:  # `x[:, :T]` of a [B, T]
        return size
    if not isinstance(size, int) or not all(isinstance(b, int | None) for b in s.parts()):
        return None
    return len(range(*slice(s.start, s.stop, s.step).indices(size)))  # type: ignore[arg-type]


# --- more functional builtins: stacking, splitting, expanding, einsum ---------------------------


def stack_shape(shapes: Sequence[Shape], dim: int, unifier: Unifier) -> Shape | ShapeMismatch:
    """`torch.stack`: equal shapes; a new dim of size len(shapes) at `dim`."""
    known = [(i, s) for i, s in enumerate(shapes) if s is not None]
    if not known:
        return None
    first = known[0][1]
    d = normalize_dim(dim, len(first) + 1)
    if isinstance(d, ShapeMismatch):
        return d
    for i, s in known[1:]:
        same = unifier.unify_shapes(first, s)
        if isinstance(same, ShapeMismatch):
            return mismatch(
                f"stack needs equal shapes, got {unifier.format_shape(first)} "
                f"and {unifier.format_shape(s)}",
                expected=unifier.format_shape(first),
                got=unifier.format_shape(s),
                operand=i,
                help="`cat` joins tensors of different sizes along an existing dim",
            )
    return (*first[:d], len(shapes), *first[d:])


def split_shapes(
    shape: Shape, sizes: int | Sequence[int], dim: int, unifier: Unifier
) -> list[Shape] | ShapeMismatch | None:
    """`torch.split`: pieces of `sizes` along `dim` (an int: equal pieces, the last
    one shorter). None when the number of pieces cannot be known (a symbolic dim)."""
    if shape is None:
        if isinstance(sizes, int):
            return None
        unknown: list[Shape] = [None] * len(sizes)
        return unknown
    d = normalize_dim(dim, len(shape))
    if isinstance(d, ShapeMismatch):
        return d
    total = unifier.resolve(shape[d])
    if isinstance(sizes, int):
        if not isinstance(total, int):
            return None
        pieces = [min(sizes, total - start) for start in range(0, total, sizes)] or [0]
    else:
        pieces = list(sizes)
        if isinstance(total, int) and sum(pieces) != total:
            return mismatch(
                f"split sizes {list(sizes)} add up to {sum(pieces)}, "
                f"but dimension {dim} is {total}",
                expected=total,
                got=sum(pieces),
                dim=dim,
                help=f"the sizes must add up to {total}",
            )
    split: list[Shape] = [replace_at(shape, d, p) for p in pieces]
    return split


def chunk_shapes(
    shape: Shape, chunks: int, dim: int, unifier: Unifier
) -> list[Shape] | ShapeMismatch:
    """`torch.chunk`: pieces of ceil(size / chunks) along `dim`, as torch cuts them
    (possibly fewer than `chunks`); a symbolic size is assumed to divide evenly."""
    if shape is None:
        unknown: list[Shape] = [None] * chunks
        return unknown
    d = normalize_dim(dim, len(shape))
    if isinstance(d, ShapeMismatch):
        return d
    total = unifier.resolve(shape[d])
    if not isinstance(total, int):
        equal: list[Shape] = [replace_at(shape, d, None)] * chunks
        return equal
    step = -(-total // chunks)
    pieces = [min(step, total - start) for start in range(0, total, step)] if total else [0]
    return [replace_at(shape, d, p) for p in pieces]


def replace_at(shape: tuple[Dim, ...], dim: int, value: Dim) -> tuple[Dim, ...]:
    return (*shape[:dim], value, *shape[dim + 1 :])


def expand_shape(shape: Shape, sizes: Sequence[Dim], unifier: Unifier) -> Shape | ShapeMismatch:
    """`x.expand(*sizes)`: align right; -1 keeps a dim; only a size-1 dim grows;
    new leading dims may not be -1."""
    if shape is None:
        return tuple(None if s == -1 else s for s in sizes)
    if len(sizes) < len(shape):
        return mismatch(
            f"expand got {len(sizes)} sizes for a tensor of rank {len(shape)}",
            expected=len(shape),
            got=len(sizes),
        )
    lead = len(sizes) - len(shape)
    out: list[Dim] = list(sizes[:lead])
    if -1 in out:
        return mismatch("expand cannot use -1 for a new leading dimension")
    for i, (have, want) in enumerate(zip(shape, sizes[lead:], strict=True)):
        dim = _expand_dim(unifier.resolve(have), want, unifier)
        if isinstance(dim, ShapeMismatch):
            return mismatch(
                f"cannot expand {unifier.format_shape(shape)} to {format_shape(tuple(sizes))}: "
                f"dimension {i} is {format_dim(unifier.resolve(have))}, not 1",
                expected=f"1 or {format_dim(want)}",
                got=format_dim(unifier.resolve(have)),
                dim=i,
                help="`expand` only stretches dims of size 1 (or -1 keeps one); "
                "`repeat` tiles a tensor",
            )
        out.append(dim)
    return tuple(out)


def _expand_dim(have: Dim, want: Dim, unifier: Unifier) -> Dim | ShapeMismatch:
    if want == -1 or have == want:
        return have
    if have == 1 or want is None:
        return want
    return unifier.unify(have, want)


def repeat_shape(shape: Shape, repeats: Sequence[Dim]) -> Shape | ShapeMismatch:
    """`x.repeat(*repeats)`: the shape, padded with leading 1s, times each count."""
    if shape is None:
        return None
    if len(repeats) < len(shape):
        return mismatch(
            f"repeat got {len(repeats)} counts for a tensor of rank {len(shape)}",
            expected=len(shape),
            got=len(repeats),
        )
    padded = (1,) * (len(repeats) - len(shape)) + shape
    return tuple(_times(d, r) for d, r in zip(padded, repeats, strict=True))


def _times(dim: Dim, count: Dim) -> Dim:
    if count == 1:
        return dim
    if dim == 1:
        return count
    if isinstance(count, int) and isinstance(dim, int | str):
        return dim * count if isinstance(dim, int) else dim_expr.scale(dim, count)
    if isinstance(dim, int) and isinstance(count, str):
        return dim_expr.scale(count, dim)
    return None


def squeeze_shape(
    shape: Shape, dims: Sequence[int] | None, unifier: Unifier
) -> Shape | ShapeMismatch:
    """`x.squeeze(dim)`: removes the chosen dims (all, when None) that are 1; like
    torch, a chosen dim of another size stays."""
    if shape is None:
        return None
    chosen = range(len(shape)) if dims is None else dims
    drop: set[int] = set()
    for d in chosen:
        n = normalize_dim(d, len(shape))
        if isinstance(n, ShapeMismatch):
            return n
        if unifier.resolve(shape[n]) == 1:
            drop.add(n)
    return tuple(s for i, s in enumerate(shape) if i not in drop)


def unsqueeze_shape(shape: Shape, dim: int) -> Shape | ShapeMismatch:
    if shape is None:
        return None
    d = normalize_dim(dim, len(shape) + 1)
    return d if isinstance(d, ShapeMismatch) else (*shape[:d], 1, *shape[d:])


def at_least_2d(shape: Shape, what: str) -> Shape | ShapeMismatch:
    """`tril`/`triu`: a matrix or a batch of them."""
    if shape is None or len(shape) >= 2:
        return shape
    return mismatch(f"{what} needs a tensor of rank 2 or more, got {format_shape(shape)}")


def t_shape(shape: Shape) -> Shape | ShapeMismatch:
    """`x.T`, `x.t()`: a matrix transposed (a vector or scalar unchanged)."""
    if shape is None or len(shape) <= 2:
        return None if shape is None else tuple(reversed(shape))
    return mismatch(
        f"t() and .T transpose a matrix; got a tensor of rank {len(shape)} {format_shape(shape)}",
        help="swap the last two dims with `x.transpose(-2, -1)`",
    )


def broadcast_into(target: Shape, other: Shape, unifier: Unifier) -> Shape | ShapeMismatch:
    """`x.masked_fill(mask, v)`: `other` must broadcast to `target`'s shape, which stays."""
    merged = broadcast(target, other, unifier)
    if merged is None or target is None:
        return merged
    if (
        isinstance(merged, ShapeMismatch)
        or len(merged) != len(target)
        or any(
            unifier.resolve(a) != unifier.resolve(b) for a, b in zip(merged, target, strict=True)
        )
    ):
        return mismatch(
            f"the mask {unifier.format_shape(other)} does not broadcast to the input "
            f"{unifier.format_shape(target)}",
            expected=unifier.format_shape(target),
            got=unifier.format_shape(other),
            operand=1,
            help="each dim of the mask must be 1 or the input's size there",
        )
    return target


def attention_shape(q: Shape, k: Shape, v: Shape, unifier: Unifier) -> Shape | ShapeMismatch:
    """`scaled_dot_product_attention(q, k, v)`: q [..., L, E], k [..., S, E], v [..., S, Ev]
    give [..., L, Ev]."""
    if q is None or k is None or v is None:
        return None
    for i, s in enumerate((q, k, v)):
        if len(s) < 2:
            return mismatch(
                f"attention needs q, k and v of rank 2 or more, got {format_shape(s)}", operand=i
            )
    checks = (
        (q[-1], k[-1], 1, "q has {} features but k has {}"),
        (k[-2], v[-2], 2, "k has {} positions but v has {}"),
    )
    for a, b, operand, what in checks:
        if isinstance(unifier.unify(a, b), ShapeMismatch):
            return mismatch(
                "attention: "
                + what.format(format_dim(unifier.resolve(a)), format_dim(unifier.resolve(b))),
                expected=format_dim(unifier.resolve(a)),
                got=format_dim(unifier.resolve(b)),
                operand=operand,
                help="q and k share the head size (the last dim); k and v the positions "
                "(the next-to-last)",
            )
    batch = broadcast(broadcast_or_none(q[:-2], k[:-2], unifier), v[:-2], unifier)
    if isinstance(batch, ShapeMismatch) or batch is None:
        return batch
    return (*batch, q[-2], v[-1])


def broadcast_or_none(a: Shape, b: Shape, unifier: Unifier) -> Shape:
    merged = broadcast(a, b, unifier)
    return None if isinstance(merged, ShapeMismatch) else merged


def arange_length(start: Dim | float, end: Dim | float, step: Dim | float) -> Dim:
    """The length of `arange(start, end, step)`; `arange(T)` is `T` long."""
    if start == 0 and step == 1:
        return end if isinstance(end, int | str) else _ceil_div(end, 0, 1)
    return _ceil_div(end, start, step)


def _ceil_div(end: object, start: object, step: object) -> Dim:
    numbers = all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in (end, start, step)
    )
    if not numbers or step == 0:
        return None
    return max(0, math.ceil((end - start) / step))  # type: ignore[operator]


def einsum_shape(equation: str, shapes: Sequence[Shape], unifier: Unifier) -> Shape | ShapeMismatch:
    """`torch.einsum`: each letter one size across the operands; the output is the
    letters after `->` (without `->`: the letters used once, in alphabetical order).
    `...` stands for broadcast batch dims."""
    parsed = _parse_einsum(equation, len(shapes))
    if isinstance(parsed, ShapeMismatch):
        return parsed
    inputs, output = parsed
    sizes: dict[str, tuple[Dim, int]] = {}
    ellipsis: Shape = ()
    for i, (spec, shape) in enumerate(zip(inputs, shapes, strict=True)):
        if shape is None:
            return None
        bound = _einsum_operand(spec, shape, i, sizes, unifier)
        if isinstance(bound, ShapeMismatch):
            return bound
        joined = broadcast(ellipsis, bound, unifier)
        if isinstance(joined, ShapeMismatch):
            return mismatch("einsum: the `...` dims of the operands do not broadcast", operand=i)
        ellipsis = joined
    out: list[Dim] = []
    for letter in output:
        if letter == ".":
            out += list(ellipsis or ())
        else:
            out.append(unifier.resolve(sizes[letter][0]))
    return tuple(out)


def _parse_einsum(equation: str, operands: int) -> tuple[list[str], str] | ShapeMismatch:
    eq = equation.replace(" ", "").replace("...", ".")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != operands:
        return mismatch(
            f'einsum equation "{equation}" names {len(inputs)} operands, got {operands}',
            expected=len(inputs),
            got=operands,
        )
    letters = [c for spec in inputs for c in spec]
    if any(not (c.isalpha() or c == ".") for c in letters + list(rhs)):
        return mismatch(f'einsum equation "{equation}" may hold only letters, `,`, `...` and `->`')
    if not arrow:
        once = sorted(c for c in set(letters) if letters.count(c) == 1 and c != ".")
        rhs = ("." if "." in letters else "") + "".join(once)
    unknown = [c for c in rhs if c != "." and c not in letters]
    if unknown:
        return mismatch(f'einsum output `{unknown[0]}` appears in no operand of "{equation}"')
    return inputs, rhs


def _einsum_operand(
    spec: str, shape: tuple[Dim, ...], operand: int, sizes: dict[str, tuple[Dim, int]], u: Unifier
) -> Shape | ShapeMismatch:
    """Binds the letters of one operand; returns the dims its `...` covers."""
    named = len(spec) - spec.count(".")
    if len(shape) < named or ("." not in spec and len(shape) != named):
        return mismatch(
            f'einsum operand {operand} is "{spec.replace(".", "...")}" but has rank {len(shape)}',
            expected=named,
            got=len(shape),
            operand=operand,
        )
    at = spec.find(".")
    covered = len(shape) - named
    dims = list(shape)
    if at >= 0:
        ellipsis = tuple(dims[at : at + covered])
        dims = [*dims[:at], None, *dims[at + covered :]]
    else:
        ellipsis = ()
    for letter, dim in zip(spec, dims, strict=True):
        if letter == ".":
            continue
        if letter not in sizes:
            sizes[letter] = (dim, operand)
            continue
        first, where = sizes[letter]
        if isinstance(u.unify(first, dim), ShapeMismatch):
            return mismatch(
                f"einsum: `{letter}` is {format_dim(u.resolve(first))} in operand {where} "
                f"and {format_dim(u.resolve(dim))} in operand {operand}",
                expected=format_dim(u.resolve(first)),
                got=format_dim(u.resolve(dim)),
                operand=operand,
                help=f"one letter stands for one size; give the {format_dim(u.resolve(dim))}-"
                "sized dim a letter of its own",
            )
    return ellipsis


def resolve_sizes(shape: Shape, sizes: Mapping[str, int]) -> Shape:
    """`shape` with the symbols `sizes` names replaced by their sizes (`tlc info`'s
    `-D T=512` and batch size, on the types the IR holds)."""
    if shape is None:
        return None
    return tuple(_resolved(d, sizes) if isinstance(d, str) and d != "..." else d
                 for d in shape)  # fmt: skip


def _resolved(dim: str, sizes: Mapping[str, int]) -> Dim:
    """One symbolic size under `sizes`; a batch hole (`B_T_x8`, `_batch_hole`) is the
    product of its symbols' sizes and its factor."""
    value = dim_expr.evaluate(dim, sizes)
    if not isinstance(value, str) or dim in sizes or not dim_expr.is_name(dim):
        return value
    parts = dim.split("_")
    factor = int(parts.pop()[1:]) if len(parts) > 1 and re.fullmatch(r"x\d+", parts[-1]) else 1
    if not parts or not all(isinstance(sizes.get(p), int) for p in parts):
        return value
    return factor * math.prod(sizes[p] for p in parts)


# --- pad, narrow, topk, one_hot, gather, scatter ----------------------------------------------


def pad_shape(shape: Shape, pads: Sequence[Dim | str]) -> Shape | ShapeMismatch:
    """`F.pad(x, (left, right, top, bottom))`: pairs from the last dim backwards, each dim
    grown by its pair (a negative pad crops); an unknown pad leaves that dim unknown."""
    if shape is None:
        return None
    if len(pads) // 2 > len(shape):
        return mismatch(
            f"{len(pads)} pads are {len(pads) // 2} (left, right) pairs, for a tensor of rank "
            f"{len(shape)}",
            help="give two pads per padded dim, the last dim's first",
        )
    out = list(shape)
    for pair in range(len(pads) // 2):
        axis = len(shape) - 1 - pair
        left, right = pads[2 * pair], pads[2 * pair + 1]
        if not isinstance(left, int | str) or not isinstance(right, int | str):
            out[axis] = None
            continue
        grown = dim_expr.combine(dim_expr.combine(shape[axis], left), right)
        if isinstance(grown, int) and grown < 0:
            return mismatch(f"padding makes dim {axis} negative ({grown})", dim=axis)
        out[axis] = grown
    return tuple(out)


def narrow_shape(shape: Shape, dim: int, start: Dim, length: int) -> Shape | ShapeMismatch:
    """`x.narrow(dim, start, length)`: `length` elements of `dim` from `start`."""
    if shape is None:
        return None
    axis = normalize_dim(dim, len(shape))
    if isinstance(axis, ShapeMismatch):
        return axis
    size = shape[axis]
    if isinstance(size, int) and length > size:
        return mismatch(f"a length of {length} does not fit in dim {dim} of size {size}", dim=axis)
    if isinstance(size, int) and isinstance(start, int) and not -size <= start <= size - length:
        return mismatch(
            f"start {start} and length {length} run past dim {dim} of size {size}", dim=axis
        )
    return replace_at(shape, axis, length)


def topk_shape(shape: Shape, k: int, dim: int) -> Shape | ShapeMismatch:
    """`x.topk(k, dim)`: `dim` becomes k long (and k must fit in it)."""
    if shape is None:
        return None
    axis = normalize_dim(dim, len(shape)) if shape else 0
    if isinstance(axis, ShapeMismatch):
        return axis
    if not shape:
        return () if k <= 1 else mismatch(f"k={k} is more than the 1 element of a 0-d tensor")
    size = shape[axis]
    if isinstance(size, int) and k > size:
        return mismatch(
            f"k={k} is more than the {size} elements of dim {dim}",
            expected=f"k <= {size}",
            got=k,
            dim=axis,
        )
    return replace_at(shape, axis, k)


def one_hot_shape(shape: Shape, classes: int) -> Shape | ShapeMismatch:
    """`F.one_hot(ids, C)`: a new last dim of C."""
    return None if shape is None else (*shape, classes)


def gather_shape(x: Shape, index: Shape, dim: int, unifier: Unifier) -> Shape | ShapeMismatch:
    """`x.gather(dim, index)`: index has x's rank and is no larger than x in the other dims;
    the result has the index's shape."""
    if x is None or index is None:
        return index
    rank_problem = _same_rank("gather", x, index)
    if rank_problem is not None:
        return rank_problem
    axis = normalize_dim(dim, len(x))
    if isinstance(axis, ShapeMismatch):
        return axis
    return _index_fits("gather", x, index, axis, unifier) or index


def scatter_shape(
    x: Shape,
    index: Shape,
    source: Shape,
    scalar: bool,
    dim: int,
    unifier: Unifier,
    what: str = "scatter",
) -> ShapeMismatch | None:
    """`x.scatter(dim, index, src)`: index has x's rank, fits in x off `dim` and in src."""
    if x is None or index is None:
        return None
    rank_problem = _same_rank(what, x, index)
    if rank_problem is not None:
        return rank_problem
    axis = normalize_dim(dim, len(x))
    if isinstance(axis, ShapeMismatch):
        return axis
    if not scalar and source is not None:
        rank_problem = _same_rank(what, source, index, "src")
        if rank_problem is not None:
            return rank_problem
        beyond = _index_fits(what, source, index, None, unifier, "src")
        if beyond is not None:
            return beyond
    return _index_fits(what, x, index, axis, unifier)


def index_add_shape(
    x: Shape, index: Shape, source: Shape, dim: int, unifier: Unifier
) -> ShapeMismatch | None:
    """`x.index_add(dim, index, source)`: a 1-D index; source is x with `dim` as long as
    the index."""
    if x is None or index is None or source is None:
        return None
    if len(index) != 1:
        return mismatch(
            f"`index_add` takes a 1-D index, got rank {len(index)}", expected=1, got=len(index)
        )
    axis = normalize_dim(dim, len(x))
    if isinstance(axis, ShapeMismatch):
        return axis
    want = replace_at(x, axis, index[0])
    found = unifier.unify_shapes(want, source) if len(want) == len(source) else None
    if found is None or isinstance(found, ShapeMismatch):
        return mismatch(
            f"`index_add`: source {unifier.format_shape(source)} is not the input with dim "
            f"{dim} as long as the index ({unifier.format_shape(want)})",
            expected=want,
            got=source,
            operand=2,
        )
    return None


def _same_rank(
    what: str, x: tuple[Dim, ...], index: tuple[Dim, ...], name: str = "input"
) -> ShapeMismatch | None:
    if len(x) == len(index):
        return None
    return mismatch(
        f"`{what}`: the index has rank {len(index)}, the {name} rank {len(x)}",
        expected=len(x),
        got=len(index),
        operand=1,
        help="the index has one dim for each dim of the tensor it reads from",
    )


def _index_fits(
    what: str,
    x: tuple[Dim, ...],
    index: tuple[Dim, ...],
    axis: int | None,
    unifier: Unifier,
    name: str = "input",
) -> ShapeMismatch | None:
    """Each dim of the index (but `axis`) no larger than the tensor's."""
    for d, (have, want) in enumerate(zip(x, index, strict=True)):
        if d == axis:
            continue
        have, want = unifier.resolve(have), unifier.resolve(want)
        if isinstance(have, int) and isinstance(want, int) and want > have:
            return mismatch(
                f"`{what}`: dim {d} of the index is {want}, more than the {name}'s {have}",
                dim=d,
                operand=1,
            )
    return None
