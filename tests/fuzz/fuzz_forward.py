"""Build the models of an emitted script and run one forward on the CPU.

    problem = run_forward(script, [("Classifier", ["[B, 64]"])])   # None when it ran

A program `tlc check` accepts must build and run in PyTorch: a failure here is a
checker false negative. Symbolic dims get small sizes (B=2, T=3, others 4), or
the smallest of 4, 8, ..., 256 that keeps every step's size positive where the
flow has expressions of them (`T//4` after two pools: T=4); a model whose input
shape is not fully known (`[*]`, `?`) is built but not run.
Float inputs first; an embedding-style model that wants indices gets integers.
"""

from __future__ import annotations

import re
import sys
from types import ModuleType

SIZES = {"B": 2, "T": 3}
OTHER_SIZE = 4
_DIM = re.compile(r"^-?\d+$|^[A-Za-z_]\w*$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def run_forward(script: str, flows: list[tuple[str, list[str], list[str]]]) -> str | None:
    """None when every model built and ran; else what PyTorch said."""
    import torch

    module = _load(script)
    for model_name, inputs, steps in flows:
        cls = getattr(module, model_name, None)
        if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            continue
        try:
            model = cls().eval()
        except Exception as error:
            return f"building {model_name}: {type(error).__name__}: {str(error)[:200]}"
        sizes = sizes_for(inputs, steps)
        shapes = [_shape(s, sizes) for s in inputs]
        if not shapes or any(s is None for s in shapes):
            continue
        problem = _forward(model, [s for s in shapes if s is not None])
        if problem is not None:
            return f"forward of {model_name}{inputs}: {problem}"
    return None


def _load(script: str) -> ModuleType:
    name = "tl_fuzz_emitted"
    module = ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    try:
        exec(compile(script, "<emitted>", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


def _dims(text: str) -> list[str]:
    return [d.strip() for d in text.strip().removeprefix("[").removesuffix("]").split(",")]


def sizes_for(inputs: list[str], steps: list[str]) -> dict[str, int]:
    """Sizes for the inputs' symbols: the defaults, else the smallest common size
    (of 4, 8, ..., 256) under which no step's size is below 1."""
    from tensorloom.catalogue.dim_expr import evaluate, is_expression

    names = sorted({d for s in inputs for d in _dims(s) if _NAME.match(d)})
    exprs = [d for s in steps for d in _dims(s) if is_expression(d)]
    base = {n: SIZES.get(n, OTHER_SIZE) for n in names}
    for size in (0, 4, 8, 16, 32, 64, 128, 256):
        grown = {n: base[n] if n == "B" else max(size, base[n]) for n in names}
        sizes = grown if size else base
        values = [evaluate(e, sizes) for e in exprs]
        if all(not isinstance(v, int) or v >= 1 for v in values):
            return sizes
    return base


def _shape(text: str, given: dict[str, int] | None = None) -> list[int] | None:
    dims = _dims(text)
    if not dims or not all(_DIM.match(d) for d in dims):
        return None
    table = given or {}
    sizes = [
        int(d) if d.lstrip("-").isdigit() else table.get(d, SIZES.get(d, OTHER_SIZE))
        for d in dims
    ]
    if any(s < 0 or s > 4096 for s in sizes):
        return None
    return sizes


def _forward(model: object, shapes: list[list[int]]) -> str | None:
    import torch

    # Each input is floats or integer ids (an image and a caption's tokens take one of
    # each): all floats first, then all ids, then, up to four inputs, every mix.
    count = len(shapes)
    every = (1 << count) - 1
    masks = [0, every, *(range(1, every) if count <= 4 else ())]
    first: str | None = None
    for mask in dict.fromkeys(masks):
        made = [
            torch.randint(0, 2, s) if mask >> i & 1 else torch.randn(*s)
            for i, s in enumerate(shapes)
        ]
        try:
            with torch.no_grad():
                model(*made)  # type: ignore[operator]
            return None
        except Exception as error:
            first = first or f"{type(error).__name__}: {str(error)[:200]}"
    return first
