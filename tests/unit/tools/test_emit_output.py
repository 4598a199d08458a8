"""`tlc compile -o`: a folder that does not exist yet is made; one that cannot be is an error."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tensorloom.tools import tlc

ROOT = Path(__file__).resolve().parents[3]


def test_output_folder_is_made(tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "train.py"
    result = CliRunner().invoke(
        tlc.cli, ["compile", str(ROOT / "examples" / "mnist.tl"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    assert out.is_file() and list(out.parent.glob("tensorloom_rt_*.py"))


def test_output_under_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "a_file" / "train.py"
    result = CliRunner().invoke(
        tlc.cli, ["compile", str(ROOT / "examples" / "mnist.tl"), "-o", str(out)]
    )
    assert result.exit_code == 1
    assert (
        f"error: cannot write `{out}`: `{tmp_path / 'a_file'}` is a file, not a folder"
        in result.stderr
    )
    assert "internal compiler error" not in result.stderr
