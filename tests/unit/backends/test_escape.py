"""The one string escaper (tensorloom/escape.py), and hostile strings through the whole compiler.

A dataset name, a `target=`, a `data_root=` or a file name holding quotes,
backslashes, newlines or U+2028 must come out of the emitted script as the
same string, and never as code (fuzz-findings/security/ds_*, 08, 09, 29).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tensorloom.escape import py_comment, py_docstring, py_string
from tensorloom.pipeline import compile_text, python_source

HOSTILE = [
    'a"b',
    "a'b",
    "a\\b",
    "a\\",
    "line\nbreak",
    "cr\rlf",
    "sep\u2028arator",
    "para\u2029graph",
    "form\x0cfeed",
    "vt\x0bab",
    "nul\x00byte",
    '"""',
    'x" + str(__import__("os").system("echo pwned")) + "',
    "ünïcödé ☃",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_py_string_round_trips(text: str) -> None:
    literal = py_string(text)
    assert ast.literal_eval(literal) == text
    assert "\n" not in literal and "\u2028" not in literal and "\x00" not in literal


@pytest.mark.parametrize("text", HOSTILE)
def test_py_comment_stays_on_one_line(text: str) -> None:
    source = f"# {py_comment(text)}\nvalue = 1\n"
    tree = ast.parse(source)
    assert len(tree.body) == 1  # nothing after `#` became a statement
    assert len(source.splitlines()) == 2


@pytest.mark.parametrize("text", [*HOSTILE, 'ends with "', 'say "hi"'])
def test_py_docstring_round_trips(text: str) -> None:
    tree = ast.parse(f"def f():\n    {py_docstring(text)}\n")
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    assert ast.get_docstring(func, clean=False) == text


PROGRAM = """\
model Net:
    layer fc = Linear({features}, 2)
    fn forward(self, x: Tensor) -> Tensor:
        return x |> flatten |> self.fc

let net = Net()
let data = load_dataset({name}{options})
train net on data:
    epochs = 1
"""
SHAPE = ", sample_shape=[4], num_classes=2"


def _tl_string(text: str) -> str:
    """`text` as a TensorLoom string literal (its escapes are a subset of Python's)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\x00": "\\0"}
    return '"' + "".join(escapes.get(ch, ch) for ch in text) + '"'


def _emit(text: str, path: str = "hostile.tl") -> str:
    result = compile_text(text, path)
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    return python_source(result.module, path)


def _settings(script: str) -> dict[str, object]:
    """The script's DATASET and DATASET_OPTIONS constants, read without running it."""
    values: dict[str, object] = {}
    for node in ast.parse(script).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in ("DATASET", "DATASET_OPTIONS"):
            assert isinstance(node, ast.AnnAssign) and node.value is not None
            values[target.id] = ast.literal_eval(node.value)
    return values


# What each whole-compiler test feeds in: a quote, a trailing backslash, a newline,
# U+2028 and a payload (each compile takes a fraction of a second).
THROUGH_COMPILER = ['a"b', "a\\", "line\nbreak", "sep\u2028arator", HOSTILE[-2]]


@pytest.mark.parametrize("text", THROUGH_COMPILER)
def test_hostile_dataset_name_is_data(text: str) -> None:
    program = PROGRAM.format(features=4, name=_tl_string(text + ".pt"), options=SHAPE)
    script = _emit(program)
    assert _settings(script)["DATASET"] == text + ".pt"


@pytest.mark.parametrize(("name", "option"), [("t.csv", "target"), ("mnist", "data_root")])
@pytest.mark.parametrize("text", THROUGH_COMPILER)
def test_hostile_dataset_options_are_data(name: str, option: str, text: str) -> None:
    extra = SHAPE if name == "t.csv" else ""
    options = f"{extra}, {option}={_tl_string(text)}"
    program = PROGRAM.format(features=4 if extra else 784, name=f'"{name}"', options=options)
    options = _settings(_emit(program))["DATASET_OPTIONS"]
    assert isinstance(options, dict) and options[option] == text


@pytest.mark.parametrize("path", ['we"ird.tl', "new\nline.tl", "sep\u2028.tl", "back\\slash.tl"])
def test_hostile_file_name_stays_in_comments(path: str) -> None:
    """The script for a hostile file name has the same statements as for `plain.tl`."""
    program = PROGRAM.format(features=64, name='"digits"', options="")
    plain, hostile = (_statements(_emit(program, p)) for p in ("plain.tl", path))
    assert hostile == plain


def _statements(script: str) -> list[str]:
    """Each top-level statement, as its kind and the names it binds."""
    tree = ast.parse(script)
    return [f"{type(n).__name__} {getattr(n, 'name', '')}" for n in tree.body]


def test_hostile_script_runs_nothing_on_help(tmp_path: Path) -> None:
    """The payload of security/ds_name_quote.tl: `--help` must not run it."""
    payload = 'x" + str(__import__("os").system("echo pwned > marker")) + "'
    options = f"{SHAPE}, target={_tl_string(payload)}"
    script = _emit(PROGRAM.format(features=4, name=_tl_string(payload + ".pt"), options=options))
    out = tmp_path / "script.py"
    out.write_text(script, encoding="utf-8")
    subprocess.run([sys.executable, str(out), "--help"], cwd=tmp_path, check=True,
                   capture_output=True)  # fmt: skip
    assert not (tmp_path / "marker").exists()
