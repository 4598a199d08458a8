"""The formatter (frontend/format.py): its layout, idempotence and that it never changes a program.

Over every program in examples/ and tests/: fmt(fmt(x)) == fmt(x), and `tlc check --format
json` reports the same diagnostics (codes, severities, messages, help), shape flows and data
for x and fmt(x), positions aside.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.frontend.format import (
    WORDS,
    Unformattable,
    fingerprint,
    format_text,
    scan_comments,
)
from tensorloom.frontend.lexer import tokenize
from tensorloom.frontend.tokens import LAYOUT

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = sorted(
    p
    for folder in ("examples", "tests")
    for p in (ROOT / folder).rglob("*")
    if p.suffix in (".tl", ".nml") and p.is_file()
)

MESSY = """\


// header
@model  MLP :
  @config:
      n_embd=768   // width
      dropout = -0.0
  // a comment for layers
  @layers:
      c_fc=Linear(n_embd,4*n_embd)
      c_proj = Linear( 4*n_embd , n_embd,
          bias = false )   // out
      mlp = Sequential(
              Linear(n_embd, n_embd),
         // inner comment
              GELU,
          )
  @forward(x:Tensor[B,T,768]):
      x = x[:, 1:] + x[..., :2] /* inline */
      let (a,b) = x.split(384,dim=-1)
            // about what follows



      if self.training :
          x = -x ** 2
      return drop(c_proj(gelu(c_fc(x)))) |>  relu
/* a block
   comment */
"""
TIDY = """\
// header
@model MLP:
    @config:
        n_embd = 768  // width
        dropout = -0.0
    // a comment for layers
    @layers:
        c_fc   = Linear(n_embd, 4 * n_embd)
        c_proj = Linear(4 * n_embd, n_embd,
                        bias=false)  // out
        mlp    = Sequential(
            Linear(n_embd, n_embd),
            // inner comment
            GELU,
        )
    @forward(x: Tensor[B, T, 768]):
        x = x[:, 1:] + x[..., :2] /* inline */
        let (a, b) = x.split(384, dim=-1)
        // about what follows

        if self.training:
            x = -x ** 2
        return drop(c_proj(gelu(c_fc(x)))) |> relu
/* a block
   comment */
"""


def test_the_canonical_layout() -> None:
    assert format_text(MESSY, "m.nml") == TIDY
    assert format_text(TIDY, "m.nml") == TIDY


def test_tl_spacing_rules() -> None:
    source = (
        "@kernel def k(x_ptr,N, BLOCK:tl.constexpr=4):\n"
        "    let m = (rm[:,None]<N) and (rn[None,:]<N)\n"
        "    tl.store(x_ptr+rm, -1.0*m, mask = m)\n"
        "let net=Net(d = -2)\n"
        "train net on data:\n"
        "    optimizer=AdamW(lr=1e-3,betas=(0.9,0.99))\n"
        "    checkpoint   every 5 epochs\n"
    )
    assert format_text(source, "k.tl") == (
        "@kernel def k(x_ptr, N, BLOCK: tl.constexpr = 4):\n"
        "    let m = (rm[:, None] < N) and (rn[None, :] < N)\n"
        "    tl.store(x_ptr + rm, -1.0 * m, mask=m)\n"
        "let net = Net(d=-2)\n"
        "train net on data:\n"
        "    optimizer = AdamW(lr=1e-3, betas=(0.9, 0.99))\n"
        "    checkpoint every 5 epochs\n"
    )


def test_trailing_comments_align_in_runs() -> None:
    source = "let a = 1 // one\nlet bbbb = 2    // two\n\nlet c = 3      // three\n"
    assert format_text(source, "c.tl") == (
        "let a = 1     // one\nlet bbbb = 2  // two\n\nlet c = 3  // three\n"
    )


def test_a_file_with_errors_is_not_formatted(tmp_path: Path) -> None:
    with pytest.raises(Unformattable) as error:
        format_text("let x = (\n", "bad.tl")
    assert [d.code for d in error.value.diagnostics] == ["TL0102"]
    bad = tmp_path / "bad.tl"
    bad.write_text("let  x = (\n")
    tlc = [sys.executable, "-m", "tensorloom.tools.tlc", "fmt"]
    rewrite = subprocess.run([*tlc, str(bad)], capture_output=True, text=True, check=False)
    assert rewrite.returncode == 1 and "error[TL0102]" in rewrite.stderr
    assert bad.read_text() == "let  x = (\n"
    check = subprocess.run([*tlc, "--check", str(bad)], capture_output=True, text=True, check=False)
    assert check.returncode == 0 and "not checked: it does not parse" in check.stderr


def test_check_lists_the_files_that_would_change(tmp_path: Path) -> None:
    (tmp_path / "a.tl").write_text("let  x = 1\n")
    (tmp_path / "b.nml").write_text("@model M:\n    @forward(x):\n        return x\n")
    tlc = [sys.executable, "-m", "tensorloom.tools.tlc", "fmt"]
    check = subprocess.run(
        [*tlc, "--check", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 1
    assert check.stdout == f"would reformat {tmp_path / 'a.tl'}\n"
    fixed = subprocess.run([*tlc, str(tmp_path)], capture_output=True, text=True, check=False)
    assert fixed.returncode == 0 and (tmp_path / "a.tl").read_text() == "let x = 1\n"
    piped = subprocess.run(
        [*tlc, "-"], input="let  y=2\n", capture_output=True, text=True, check=False
    )
    assert (piped.returncode, piped.stdout) == (0, "let y = 2\n")


def test_comments_are_found_outside_strings() -> None:
    comments = scan_comments('let s = "a // b" // real\n/* x\n y */ let t = 1\n')
    assert [(c.line, c.col, c.end_line, c.text) for c in comments] == [
        (1, 18, 1, "// real"),
        (2, 1, 3, "/* x\n y */"),
    ]


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_formatting_is_idempotent(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        once = format_text(text, str(path))
    except Unformattable:
        return  # a test of a syntax error: left as it is
    assert format_text(once, str(path)) == once


def test_examples_and_test_programs_are_formatted() -> None:
    """`tlc fmt --check examples tests` is clean (the programs broken on purpose are named
    as not checked, and do not fail it)."""
    folders = [str(ROOT / "examples"), str(ROOT / "tests")]
    result = subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", "fmt", "--check", *folders],
        capture_output=True,
        text=True,
        check=False,
    )
    fix = "lay them out with `tlc fmt examples tests`, then re-run their lit tests"
    assert result.returncode == 0, f"{result.stdout}{fix}"


def _positionless(report: dict[str, Any]) -> dict[str, Any]:
    for diagnostic in report["diagnostics"]:
        for label in [diagnostic["primary"], *diagnostic["secondary"]]:
            for key in ("line", "column", "end_line", "end_column"):
                label.pop(key)
    return report


def _messy(text: str, path: str, seed: int) -> str | None:
    """`text` with the blanks between tokens on a line changed at random (1 to 3 spaces, or
    none between two punctuation tokens); None when that would lex differently."""
    rng = random.Random(seed)
    sink = DiagnosticSink()
    tokens = [t for t in tokenize(text, path, sink) if t.kind not in LAYOUT]
    lines = text.split("\n")
    for a, b in reversed(list(itertools.pairwise(tokens))):
        if a.span.line != b.span.line or rng.random() < 0.3:
            continue
        line = lines[a.span.line - 1]
        between = line[a.span.end_col - 1 : b.span.col - 1]
        if between.strip():
            continue  # a comment
        words = a.kind in WORDS or b.kind in WORDS
        gap = " " * rng.choice([1, 2, 3] if words else [0, 1, 3])
        lines[a.span.line - 1] = line[: a.span.end_col - 1] + gap + line[b.span.col - 1 :]
    messy = "\n".join(lines)
    same = fingerprint(messy, path) == fingerprint(text, path)
    return messy if same and not sink.has_errors else None


def test_formatting_is_canonical_and_never_changes_what_check_reports() -> None:
    """Every program with its blanks scrambled formats to what the program formats to, and
    `tlc check --format json` reports the same for it as for the program, positions aside."""
    from tensorloom.tools.check import _json, check_text, shape_flows

    compared = 0
    for seed, path in enumerate(PROGRAMS):
        text = path.read_text(encoding="utf-8")
        messy = _messy(text, str(path), seed)
        try:
            formatted = format_text(text, str(path))
        except Unformattable:
            continue
        assert messy is not None, path
        assert format_text(messy, str(path)) == formatted, path
        before = check_text(text, str(path))
        after = check_text(formatted, str(path))
        expected = _positionless(_json(before, shape_flows(before)))
        assert _positionless(_json(after, shape_flows(after))) == expected, path
        compared += 1
    assert compared > 200


def test_generated_and_mutated_programs_format_safely() -> None:
    """The fuzzer's programs (tests/fuzz/fuzz_generate.py): 400 generated from the grammar and
    400 mutations of the seed programs. Each formats (or is refused for its errors), never
    changes its tokens (`Unchanged` would be raised), and formats once and for all."""
    sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
    from fuzz_generate import generate, mutate, seeds

    corpus = seeds()
    formatted = 0
    for index in range(800):
        r = random.Random(36_000 + index)
        text = generate(r) if index % 2 == 0 else mutate(r.choice(corpus)[1], r)
        try:
            once = format_text(text, "fuzz.tl")
        except Unformattable:
            continue
        assert format_text(once, "fuzz.tl") == once, text
        formatted += 1
    assert formatted > 400


def test_a_block_comment_moves_with_its_first_line() -> None:
    source = (
        "model M:\n  /* a\n     b */\n  layer fc = Linear(4,4) /* c\n   d */\n"
        "  layer g = Linear(4,4)\n"
    )
    assert format_text(source, "m.tl") == (
        "model M:\n    /* a\n       b */\n    layer fc = Linear(4, 4) /* c\n      d */\n"
        "    layer g = Linear(4, 4)\n"
    )
