"""What a script's top-level statements may call without defining it.

    let x = randn(4096)                 torch.randn(4096, device=DEVICE)
    manual_seed(0)                      torch.manual_seed(0)
    print(max(1, len(xs)))              print(max(1, len(xs)))  (Python's own)
    let c = torch.cos(x)                torch.cos(x)            (any `torch.*` function)

`check-scopes` reports a call of anything else; `convert-train-to-torch` maps
these names to their Python. Tensor constructors get `device=DEVICE`, where the
emitted script defines `DEVICE = "cuda" if torch.cuda.is_available() else "cpu"`
so that its tensors can be passed to the program's Triton kernels.
"""

from __future__ import annotations

PYTHON_BUILTINS = frozenset(
    ["print", "len", "range", "min", "max", "abs", "sum", "float", "int", "str"]
)
TENSOR_CONSTRUCTORS = frozenset(["randn", "rand", "zeros", "ones", "arange", "full", "tensor"])
TORCH_FUNCTIONS = frozenset(["manual_seed"])
SCRIPT_BUILTINS = PYTHON_BUILTINS | TENSOR_CONSTRUCTORS | TORCH_FUNCTIONS
DEVICE = "DEVICE"
DEVICE_SOURCE = f'{DEVICE} = "cuda" if torch.cuda.is_available() else "cpu"'


def is_script_callable(callee: str) -> bool:
    """Whether a top-level statement may call `callee` without defining it."""
    return callee in SCRIPT_BUILTINS or callee.startswith("torch.")


def python_callee(callee: str) -> str:
    """The Python function a script builtin calls (`randn` -> `torch.randn`)."""
    if callee in TENSOR_CONSTRUCTORS or callee in TORCH_FUNCTIONS:
        return f"torch.{callee}"
    return callee


__all__ = [
    "DEVICE",
    "DEVICE_SOURCE",
    "PYTHON_BUILTINS",
    "SCRIPT_BUILTINS",
    "TENSOR_CONSTRUCTORS",
    "is_script_callable",
    "python_callee",
]
