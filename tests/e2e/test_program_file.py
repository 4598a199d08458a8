"""The two-file program (issue 32): `tlc compile prog.tl -o out/train.py` writes the program
and, beside it, the runtime module it imports; the folder runs without TensorLoom.

    $ tlc compile examples/mnist.tl -o out/train.py
    wrote out/train.py (542 lines)
    wrote out/tensorloom_rt_0_2_0_1a2b3c4d.py (1,277 lines), the runtime it imports
    $ python out/train.py --epochs 1

"Without TensorLoom" is checked as a user without it would run the folder: a fresh
interpreter with no PYTHONPATH (`-E`), no user site (`-s`), the program's folder first on
its path, and `tensorloom` made unimportable (`sys.modules["tensorloom"] = None`), so any
import of the compiler, by the program or its runtime, fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
WITHOUT_TENSORLOOM = """
import runpy, sys
sys.modules["tensorloom"] = None
program = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = program.rsplit("/", 1)[0]  # as `python program.py` puts its folder first
runpy.run_path(program, run_name="__main__")
"""


def _tlc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TLC, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def _without_tensorloom(program: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    command = [sys.executable, "-E", "-s", "-c", WITHOUT_TENSORLOOM, str(program), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mnist.tl and digits_cnn.tl compiled into one folder."""
    out = tmp_path_factory.mktemp("out")
    for example, name in (("mnist.tl", "train.py"), ("digits_cnn.tl", "cnn.py")):
        done = _tlc("compile", str(ROOT / "examples" / example), "-o", str(out / name), cwd=out)
        assert done.returncode == 0, done.stderr
    return out


def test_compile_writes_the_program_and_its_runtime_module_beside_it(folder: Path) -> None:
    files = sorted(p.name for p in folder.iterdir())
    runtimes = [name for name in files if name.startswith("tensorloom_rt_0_2_0_")]
    # two programs whose runtimes differ: two modules, neither clobbering the other
    assert len(runtimes) == 2 and sorted({*files} - {*runtimes}) == ["cnn.py", "train.py"]
    for program in ("train.py", "cnn.py"):
        text = (folder / program).read_text(encoding="utf-8")
        imported = [m for m in runtimes if f"from {m.removesuffix('.py')} import (" in text]
        assert len(imported) == 1
        assert "import tensorloom" not in text and "from tensorloom." not in text


def test_the_folder_runs_without_tensorloom(folder: Path, tmp_path: Path) -> None:
    check = _without_tensorloom(folder / "train.py", "--help", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "--checkpoint-dir" in check.stdout
    proof = subprocess.run(
        [sys.executable, "-E", "-s", "-c", "import sys; sys.modules['tensorloom'] = None; "
         "import tensorloom"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "ModuleNotFoundError" in proof.stderr  # the block is real
    run = _without_tensorloom(folder / "train.py", "--max-steps", "3", "--device", "cpu",
                              cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "done: 0 epochs, 3 steps" in run.stdout
    assert (tmp_path / "checkpoints" / "mnist" / "last.pt").is_file()


def test_two_programs_in_one_folder_both_run(folder: Path, tmp_path: Path) -> None:
    for program, name in (("train.py", "mnist"), ("cnn.py", "digits_cnn")):
        done = subprocess.run(
            [sys.executable, str(folder / program), "--max-steps", "2", "--device", "cpu"],
            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert (tmp_path / "checkpoints" / name / "last.pt").is_file()


def test_single_file_writes_one_file(tmp_path: Path) -> None:
    done = _tlc("compile", str(ROOT / "examples" / "mnist.tl"), "-o", "one.py", "--single-file",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.py"]
    assert "tensorloom_rt" not in (tmp_path / "one.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("single", [False, True], ids=["two-files", "single-file"])
def test_tlc_run_keep_leaves_what_it_ran(tmp_path: Path, single: bool) -> None:
    (tmp_path / "mnist.tl").write_text((ROOT / "examples" / "mnist.tl").read_text())
    flags = ["--single-file"] if single else []
    done = _tlc("run", "--keep", *flags, "mnist.tl", "--", "--max-steps", "2", "--device", "cpu",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    left = sorted(p.name for p in tmp_path.glob("*.py"))
    assert left[0] == "mnist.py" and len(left) == (1 if single else 2)
    # the kept folder runs by itself, as tlc ran it
    again = _without_tensorloom(tmp_path / "mnist.py", "--help", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
