"""Build the models of an emitted script and run one forward on the CPU.

    problem = run_forward(script, [("Classifier", ["[B, 64]"])])   # None when it ran

A program `tlc check` accepts must build and run in PyTorch: a failure here is a
checker false negative. Symbolic dims get small sizes (B=2, T=3, others 4); a
model whose input shape is not fully known (`[*]`, `?`) is built but not run.
Float inputs first; an embedding-style model that wants indices gets integers.
"""

from __future__ import annotations

import re
import sys
from types import ModuleType

SIZES = {"B": 2, "T": 3}
OTHER_SIZE = 4
_DIM = re.compile(r"^-?\d+$|^[A-Za-z_]\w*$")


def run_forward(script: str, flows: list[tuple[str, list[str]]]) -> str | None:
    """None when every model built and ran; else what PyTorch said."""
    import torch

    module = _load(script)
    for model_name, inputs in flows:
        cls = getattr(module, model_name, None)
        if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            continue
        try:
            model = cls().eval()
        except Exception as error:
            return f"building {model_name}: {type(error).__name__}: {str(error)[:200]}"
        shapes = [_shape(s) for s in inputs]
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


def _shape(text: str) -> list[int] | None:
    dims = [d.strip() for d in text.strip().removeprefix("[").removesuffix("]").split(",")]
    if not dims or not all(_DIM.match(d) for d in dims):
        return None
    sizes = [int(d) if d.lstrip("-").isdigit() else SIZES.get(d, OTHER_SIZE) for d in dims]
    if any(s < 0 or s > 4096 for s in sizes):
        return None
    return sizes


def _forward(model: object, shapes: list[list[int]]) -> str | None:
    import torch

    first: str | None = None
    for make in (lambda s: torch.randn(*s), lambda s: torch.randint(0, 2, s)):
        try:
            with torch.no_grad():
                model(*[make(s) for s in shapes])  # type: ignore[operator]
            return None
        except Exception as error:
            first = first or f"{type(error).__name__}: {str(error)[:200]}"
    return first
