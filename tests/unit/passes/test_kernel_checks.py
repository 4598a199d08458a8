"""check-kernels and synthesize-launchers diagnostics, at their line and column."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tensorloom.diagnostics import Diagnostic
from tensorloom.pipeline import compile_text

HEADER = "@kernel def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
BODY = (
    "    let offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)\n    let mask = offs < n\n"
)
COPY = "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)\n"


def diagnostics(text: str) -> list[tuple[str, int, int, int]]:
    result = compile_text(text, "k.tl", until="kernel")
    return [
        (d.code, d.primary.span.line, d.primary.span.col, d.primary.span.end_col)
        for d in sorted(result.sink, key=lambda d: (d.primary.span.line, d.primary.span.col))
    ]


def only(text: str) -> Diagnostic:
    result = compile_text(text, "k.tl", until="kernel")
    assert len(result.sink) == 1, [d.message for d in result.sink]
    return next(iter(result.sink))


def test_a_clean_kernel_has_no_diagnostics() -> None:
    assert diagnostics(HEADER + BODY + COPY) == []


def test_undefined_name_points_at_the_name() -> None:
    text = HEADER + BODY + "    tl.store(out_ptr + offs, xx, mask=mask)\n"
    diag = only(text)
    assert (diag.code, diag.primary.span.line, diag.primary.span.col) == ("TL0501", 4, 30)
    assert diag.message == "undefined name `xx` in kernel `k`"


def test_unknown_tl_function_suggests_the_close_one() -> None:
    diag = only(HEADER + BODY + COPY.replace("tl.load", "tl.lod"))
    assert (diag.code, diag.primary.span.line, diag.primary.span.col) == ("TL0502", 4, 30)
    assert diag.primary.span.end_col == 36
    assert diag.help == "did you mean `tl.load`?"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("tl.arange(0)", "`tl.arange` is missing the argument `end`"),
        ("tl.arange(0, 1, 2)", "`tl.arange` takes at most 2 positional arguments but 3 were given"),
        ("tl.load(x_ptr, mask=mask, masks=mask)", "`tl.load` has no parameter `masks`"),
    ],
)
def test_wrong_arity_of_tl_functions(call: str, message: str) -> None:
    text = HEADER + BODY + f"    let v = {call}\n" + "    tl.store(out_ptr + offs, v, mask=mask)\n"
    codes = [
        (d.code, d.message, d.primary.span.line, d.primary.span.col)
        for d in compile_text(text, "k.tl", until="kernel").sink
    ]
    assert ("TL0503", message, 4, 13) in codes


def test_non_power_of_two_block_default_points_at_the_default() -> None:
    text = (
        HEADER.replace("BLOCK: tl.constexpr", "BLOCK: tl.constexpr = 1000")
        + BODY
        + "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)\n"
    )
    diag = only(text)
    assert (diag.code, diag.primary.span.line, diag.primary.span.col) == ("TL0504", 1, 56)
    assert diag.help == "use 512 or 1024"


def test_load_without_mask_is_a_warning() -> None:
    text = HEADER + BODY + "    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=mask)\n"
    diag = only(text)
    assert (diag.code, diag.is_error, diag.primary.span.line, diag.primary.span.col) == (
        "TL0505",
        False,
        4,
        30,
    )


def test_grid_axis_without_a_size_comparison_is_reported_at_program_id() -> None:
    text = (
        "@kernel def k(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
        "    let offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs >= 0), mask=offs >= 0)\n"
    )
    assert ("TL0507", 2, 16, 29) in diagnostics(text)


def test_static_catalog_matches_the_installed_triton_language() -> None:
    pytest.importorskip("triton.language")
    # A fresh process: running kernels under TRITON_INTERPRET=1 patches triton.language.
    code = (
        "import importlib.metadata as m, triton.language as tl; "
        "from tensorloom.passes.support import tl_catalog as c, tl_catalog_data as d; "
        "print(c.static() == c.introspect(tl), d.VERSION == m.version('triton'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "True True", (
        "regenerate: python -m tensorloom.passes.support.tl_catalog"
        " > tensorloom/passes/support/tl_catalog_data.py"
    )


def test_checking_kernels_imports_neither_torch_nor_triton() -> None:
    # Importing triton costs a cold check ~70 ms: the generated catalog stands in for it.
    code = (
        "import sys; from tensorloom.pipeline import compile_text; "
        "compile_text(open('examples/vector_add.tl').read(), 'v.tl', until='torch'); "
        "print('torch' in sys.modules, 'triton' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=__file__.rsplit("/tests/", 1)[0],
    )
    assert out.stdout.strip() == "False False"
