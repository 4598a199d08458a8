"""`@kernel(...)` options, tuned defaults and parameter annotations through the parser and irgen."""

from __future__ import annotations

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.dialects import kernel
from tensorloom.frontend import ast
from tensorloom.frontend.parser import parse_text
from tensorloom.pipeline import compile_text

SOURCE = """\
@kernel(backward=k_bwd, num_warps=[4, 8])
def k(x_ptr: Tensor[M, N], mean_ptr: float32[M], M, N, eps: float, BLOCK: tl.constexpr = [32, 64]):
    let row = tl.program_id(axis=0)
    tl.store(mean_ptr + row, tl.load(x_ptr + row, mask=row < M), mask=row < M)
"""


def funcs(text: str) -> dict[str, kernel.FuncOp]:
    result = compile_text(text, "k.tl", until="irgen")
    assert result.module is not None, [d.message for d in result.sink]
    return {op.sym_name.data: op for op in result.module.walk() if isinstance(op, kernel.FuncOp)}


def test_the_decorator_s_arguments_are_kept_as_a_call() -> None:
    sink = DiagnosticSink()
    module = parse_text(SOURCE, "k.tl", sink)
    assert not sink.diagnostics
    (decl,) = [item for item in module.items if isinstance(item, ast.KernelDecl)]
    assert decl.options is not None
    assert [k.name for k in decl.options.kwargs] == ["backward", "num_warps"]


def test_options_annotations_and_candidates_become_attributes_of_the_func() -> None:
    func = funcs(SOURCE)["k"]
    assert func.backward is not None and func.backward.string_value() == "k_bwd"
    assert func.tuned() == {"BLOCK": [32, 64], "num_warps": [4, 8]}
    assert func.shape_of("x_ptr") == ["M", "N"] and func.shape_of("mean_ptr") == ["M"]
    assert func.type_of("mean_ptr") == "float32" and func.type_of("eps") == "float"
    assert func.type_of("x_ptr") is None
    assert "BLOCK" not in func.defaults.data  # candidates, not a default


def test_a_bare_kernel_decorator_may_stand_on_its_own_line() -> None:
    text = SOURCE.replace("@kernel(backward=k_bwd, num_warps=[4, 8])", "@kernel")
    func = funcs(text)["k"]
    assert func.backward is None and func.tuned() == {"BLOCK": [32, 64]}
