"""What a script's top-level statements may call without defining it.

    let x = randn(4096)                 torch.randn(4096, device=DEVICE)
    manual_seed(0)                      torch.manual_seed(0)
    print(max(1, len(xs)))              print(max(1, len(xs)))  (Python's own)
    let c = torch.cos(x)                torch.cos(x)            (a listed `torch.*` function)

Only the `torch.` functions in TORCH_CALLABLE may be called: tensor maths and
constructors, nothing that reaches the file system, the network, pickles or
other modules (`torch.os.system`, `torch.hub.load`, `torch.load` are errors),
so a shared program cannot make its script run arbitrary Python.
`check-scopes` reports a call of anything else; `convert-train-to-torch` maps
these names to their Python. Tensor constructors get `device=DEVICE`, where the
emitted script defines `DEVICE = "cuda" if torch.cuda.is_available() else "cpu"`
so that its tensors can be passed to the program's Triton kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

PYTHON_BUILTINS = frozenset(
    [
        "print",
        "len",
        "range",
        "min",
        "max",
        "abs",
        "sum",
        "float",
        "int",
        "str",
        "round",
        "pow",
        "bool",
    ]
)
TENSOR_CONSTRUCTORS = frozenset(["randn", "rand", "zeros", "ones", "arange", "full", "tensor"])
TORCH_FUNCTIONS = frozenset(["manual_seed"])
SCRIPT_BUILTINS = PYTHON_BUILTINS | TENSOR_CONSTRUCTORS | TORCH_FUNCTIONS
TORCH_CALLABLE = frozenset(
    [
        *TENSOR_CONSTRUCTORS, *TORCH_FUNCTIONS,
        "abs", "cos", "sin", "tan", "exp", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid",
        "relu", "erf", "floor", "ceil", "round", "sign", "neg", "pow", "clamp", "where",
        "matmul", "mm", "bmm", "dot", "outer", "einsum", "cat", "stack", "flatten", "reshape",
        "transpose", "permute", "squeeze", "unsqueeze", "max", "min", "sum", "mean", "std",
        "var", "prod", "argmax", "argmin", "softmax", "log_softmax", "cumsum", "sort", "topk",
        "allclose", "isclose", "equal", "eq", "ne", "lt", "le", "gt", "ge", "maximum",
        "minimum", "add", "sub", "mul", "div", "linspace", "eye", "empty", "randint",
        "randperm", "zeros_like", "ones_like", "randn_like", "rand_like", "full_like",
        "empty_like", "numel", "is_tensor", "norm",
    ]
)  # fmt: skip
"""What `torch.<name>(...)` a script statement may call (docs/grammar.md lists them)."""
DEVICE = "DEVICE"


def is_script_callable(callee: str) -> bool:
    """Whether a top-level statement may call `callee` without defining it."""
    if callee in SCRIPT_BUILTINS:
        return True
    return callee.startswith("torch.") and callee.removeprefix("torch.") in TORCH_CALLABLE


SIZED_CONSTRUCTORS = frozenset(["randn", "rand", "zeros", "ones"])


def constructor_problem(callee: str, positional: Sequence[object]) -> str | None:
    """What PyTorch would reject in a tensor constructor's constant arguments, if anything.

    `positional` holds each positional argument's constant value, or MISSING
    (anything not a constant) for an argument the check cannot see.
    """
    name = callee.removeprefix("torch.")
    if name in SIZED_CONSTRUCTORS:
        return _sizes_problem(name, positional)
    return None  # `arange` is checked where resolve-nml builds it (`nml.ArangeOp.from_call`)


def _sizes_problem(name: str, positional: Sequence[object]) -> str | None:
    sizes = list(positional)
    if len(sizes) == 1 and isinstance(sizes[0], list | tuple):
        sizes = list(sizes[0])  # `zeros([2, 3])`
    for size in sizes:
        if isinstance(size, list | tuple | bool | float | str):
            return f"the sizes of `{name}` must be integers, got `{size!r}`"
        if isinstance(size, int) and size < 0:
            return f"the sizes of `{name}` must not be negative, got {size}"
    return None


def python_callee(callee: str) -> str:
    """The Python function a script builtin calls (`randn` -> `torch.randn`)."""
    if callee in TENSOR_CONSTRUCTORS or callee in TORCH_FUNCTIONS:
        return f"torch.{callee}"
    return callee


__all__ = [
    "DEVICE",
    "PYTHON_BUILTINS",
    "SCRIPT_BUILTINS",
    "TENSOR_CONSTRUCTORS",
    "TORCH_CALLABLE",
    "constructor_problem",
    "is_script_callable",
    "python_callee",
]
