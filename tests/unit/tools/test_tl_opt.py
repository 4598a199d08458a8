"""tl-opt's exit statuses: 2 for a pipeline that lacks a pass the IR needs, 1 for a
diagnostic on an op without a source location, 3 for a crash, reported at README's repository."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tensorloom import REPORT_URL
from tensorloom.tools import tl_opt

ROOT = Path(__file__).resolve().parents[3]
MNIST = ROOT / "examples" / "mnist.tl"
SHAPES = ROOT / "tests" / "lit" / "passes" / "shape-inference.mlir"


def _tl_opt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        tl_opt.main(list(args))
    code = exit_info.value.code
    captured = capsys.readouterr()
    return code if isinstance(code, int) else 1, captured.out, captured.err


@pytest.mark.parametrize(
    ("passes", "needs"),
    [
        ("insert-amp", "`train-config`"),
        ("shape-inference", "`desugar-pipes`, `resolve-nml` and `instantiate`"),
        ("check-scopes", "`desugar-pipes` and `resolve-nml`"),
    ],
)
def test_a_missing_pass_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], passes: str, needs: str
) -> None:
    code, out, err = _tl_opt(capsys, str(MNIST), "-p", passes)
    assert (code, out) == (2, "")
    assert err.startswith(f"tl-opt: error: `{passes}` needs {needs} first")
    assert "warning" not in err and "internal" not in err


def test_an_error_on_an_op_without_a_location_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(SHAPES.read_text().replace('"Linear" [128 : i64', '"Linear" [100 : i64'))
    code, out, err = _tl_opt(capsys, str(path), "-p", "shape-inference")
    assert (code, out) == (1, "")
    assert err.splitlines()[:2] == [
        "error[TL0201]: `fc` expects 100 input features, got 128",
        f"  --> {path}:15:7",
    ]


def test_python_without_emission_ops_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.mlir"
    path.write_text("builtin.module {}\n")
    code, out, err = _tl_opt(capsys, str(path), "-t", "python")
    assert (code, out) == (2, "")
    assert "the IR has no emission ops" in err


def test_the_report_url_is_the_readmes_repository() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["urls"]["Issues"] == REPORT_URL
    repository = project["urls"]["Repository"]
    assert REPORT_URL.startswith(repository + "/")
    assert repository in re.findall(
        r"<(https://github\.com/[^>]+)>", (ROOT / "README.md").read_text()
    )
