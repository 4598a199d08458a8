"""Shape rules of the functional builtins, on plain Python dims.

Each rule takes dims (`int`, `str` for a symbolic dim, `None` for unknown) and
returns the result dims or a `ShapeError`. Symbolic dims are compared through a
`Unifier` that the shape-inference pass supplies; `unify_dims` is the default:

    unify_dims(4, 4) == 4      unify_dims(None, "B") == "B"
    unify_dims("B", 32) == 32  unify_dims("B", "T") is a ShapeError
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tensorloom.dialects.nml.types import Dim, Dims, format_dims


@dataclass(frozen=True, slots=True)
class ShapeError:
    """Why a shape rule failed; `operand` is the index of the operand at fault, if one is."""

    message: str
    operand: int | None = None


Unifier = Callable[[Dim, Dim], Dim | ShapeError]


def unify_dims(a: Dim, b: Dim) -> Dim | ShapeError:
    """The default unifier: unknown meets anything; a name meets a size as that size."""
    if a == b or b is None:
        return a
    if a is None:
        return b
    if isinstance(a, str) and isinstance(b, int):
        return b
    if isinstance(a, int) and isinstance(b, str):
        return a
    return ShapeError(f"dimension {a} does not match {b}")


def normalize_axis(axis: int, rank: int) -> int | ShapeError:
    """`-1` is the last axis; an axis outside `[-rank, rank)` is an error."""
    if -rank <= axis < rank:
        return axis % rank
    return ShapeError(f"dimension {axis} is out of range for a tensor of rank {rank}")


def broadcast(a: Dims, b: Dims, unify: Unifier = unify_dims) -> Dims | ShapeError:
    """NumPy broadcasting, right-aligned; a size-1 dim stretches."""
    rank = max(len(a), len(b))
    padded_a = (1,) * (rank - len(a)) + a
    padded_b = (1,) * (rank - len(b)) + b
    out: list[Dim] = []
    for x, y in zip(padded_a, padded_b, strict=True):
        dim = _broadcast_dim(x, y, unify)
        if isinstance(dim, ShapeError):
            return ShapeError(f"cannot broadcast {format_dims(a)} with {format_dims(b)}")
        out.append(dim)
    return tuple(out)


def _broadcast_dim(x: Dim, y: Dim, unify: Unifier) -> Dim | ShapeError:
    if x == 1:
        return y
    if y == 1:
        return x
    return unify(x, y)


def matmul(a: Dims, b: Dims, unify: Unifier = unify_dims) -> Dims | ShapeError:
    """`a @ b` as torch.matmul: 1-d operands are promoted, batch dims broadcast."""
    if not a or not b:
        return ShapeError("matmul needs tensors of rank 1 or more")
    lhs = (1, *a) if len(a) == 1 else a
    rhs = (*b, 1) if len(b) == 1 else b
    inner = unify(lhs[-1], rhs[-2])
    if isinstance(inner, ShapeError):
        return ShapeError(
            f"matmul of {format_dims(a)} and {format_dims(b)}: inner dims "
            f"{lhs[-1]} and {rhs[-2]} differ",
            operand=1,
        )
    batch = broadcast(lhs[:-2], rhs[:-2], unify)
    if isinstance(batch, ShapeError):
        return batch
    out = (*batch, lhs[-2], rhs[-1])
    out = out[:-2] + out[-1:] if len(a) == 1 else out
    return out[:-1] if len(b) == 1 else out


def flatten(dims: Dims, start: int, end: int) -> Dims | ShapeError:
    if not dims:
        return (1,)
    lo, hi = normalize_axis(start, len(dims)), normalize_axis(end, len(dims))
    if isinstance(lo, ShapeError):
        return lo
    if isinstance(hi, ShapeError):
        return hi
    if lo > hi:
        return ShapeError(f"flatten start dim {start} comes after end dim {end}")
    return (*dims[:lo], product(dims[lo : hi + 1]), *dims[hi + 1 :])


def product(dims: Sequence[Dim]) -> Dim:
    """The size of the flattened dims: an int if all are known, else unknown."""
    size = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        size *= d
    return size


def transpose(dims: Dims, dim0: int, dim1: int) -> Dims | ShapeError:
    a, b = normalize_axis(dim0, len(dims)), normalize_axis(dim1, len(dims))
    if isinstance(a, ShapeError):
        return a
    if isinstance(b, ShapeError):
        return b
    out = list(dims)
    out[a], out[b] = out[b], out[a]
    return tuple(out)


def permute(dims: Dims, order: Sequence[int]) -> Dims | ShapeError:
    if len(order) != len(dims):
        return ShapeError(f"permute got {len(order)} dims for a tensor of rank {len(dims)}")
    axes = [normalize_axis(o, len(dims)) for o in order]
    bad = next((a for a in axes if isinstance(a, ShapeError)), None)
    if bad is not None:
        return bad
    return tuple(dims[a] for a in axes if isinstance(a, int))


def reduce(dims: Dims, axes: Sequence[int] | None, keepdim: bool) -> Dims | ShapeError:
    """`mean`/`sum` over `axes` (all of them when None)."""
    chosen = set(range(len(dims))) if axes is None else set[int]()
    for axis in axes or ():
        normal = normalize_axis(axis, len(dims))
        if isinstance(normal, ShapeError):
            return normal
        chosen.add(normal)
    if keepdim:
        return tuple(1 if i in chosen else d for i, d in enumerate(dims))
    return tuple(d for i, d in enumerate(dims) if i not in chosen)


def cat(inputs: Sequence[Dims], axis: int, unify: Unifier = unify_dims) -> Dims | ShapeError:
    first = inputs[0]
    normal = normalize_axis(axis, len(first))
    if isinstance(normal, ShapeError):
        return normal
    out = list(first)
    for index, dims in enumerate(inputs[1:], start=1):
        if len(dims) != len(first):
            return ShapeError(f"cat of tensors of rank {len(first)} and {len(dims)}", index)
        for i, d in enumerate(dims):
            merged = _cat_dim(out[i], d, i == normal, unify)
            if isinstance(merged, ShapeError):
                return ShapeError(f"cat: dimension {i} is {out[i]} and {d}", index)
            out[i] = merged
    return tuple(out)


def _cat_dim(a: Dim, b: Dim, along: bool, unify: Unifier) -> Dim | ShapeError:
    if not along:
        return unify(a, b)
    return a + b if isinstance(a, int) and isinstance(b, int) else None


def reshape(dims: Dims, target: Sequence[Dim]) -> Dims | ShapeError:
    """`target` may hold one -1, inferred when every other size is known."""
    if target.count(-1) > 1:
        return ShapeError("reshape can infer at most one dimension (-1)")
    if -1 not in target:
        return _check_sizes(dims, tuple(target))
    known = product([d for d in target if d != -1])
    total = product(dims)
    if not isinstance(known, int) or not isinstance(total, int) or known == 0:
        return tuple(None if d == -1 else d for d in target)
    if total % known:
        return ShapeError(f"cannot reshape {format_dims(dims)} into {format_dims(tuple(target))}")
    return tuple(total // known if d == -1 else d for d in target)


def _check_sizes(dims: Dims, target: Dims) -> Dims | ShapeError:
    total, wanted = product(dims), product(target)
    if isinstance(total, int) and isinstance(wanted, int) and total != wanted:
        return ShapeError(
            f"cannot reshape {format_dims(dims)} ({total} elements) into "
            f"{format_dims(target)} ({wanted} elements)"
        )
    return target


IndexEntry = int | slice | None | str
"""An index item: an int selects, a slice keeps, `None` adds an axis, `"..."` is the
ellipsis and `"?"` a select by a runtime value."""


def index(dims: Dims, entries: Sequence[IndexEntry]) -> Dims | ShapeError:
    consuming = [e for e in entries if e is not None and e != "..."]
    if entries.count("...") > 1:
        return ShapeError("an index can hold at most one `...`")
    if len(consuming) > len(dims):
        return ShapeError(f"too many indices ({len(consuming)}) for a tensor of rank {len(dims)}")
    fill = len(dims) - len(consuming)
    expanded: list[IndexEntry] = []
    for e in entries:
        expanded.extend([slice(None)] * fill if e == "..." else [e])
    if "..." not in entries:
        expanded.extend([slice(None)] * fill)
    return _apply_index(dims, expanded)


def _apply_index(dims: Dims, entries: Sequence[IndexEntry]) -> Dims | ShapeError:
    out: list[Dim] = []
    position = 0
    for e in entries:
        if e is None:
            out.append(1)
            continue
        dim = dims[position]
        position += 1
        if isinstance(e, int) and isinstance(dim, int) and not -dim <= e < dim:
            return ShapeError(f"index {e} is out of range for a dimension of size {dim}")
        if isinstance(e, slice):
            out.append(_slice_length(dim, e))
    return tuple(out)


def _slice_length(dim: Dim, s: slice) -> Dim:
    if s == slice(None):
        return dim
    if not isinstance(dim, int):
        return None
    return len(range(dim)[s])
