"""A command whose optional package is not installed says which extra installs it (exit 1),
never "internal compiler error" or a traceback. The package's absence is simulated in a
subprocess: `sys.modules[name] = None` makes every import of it fail as a missing one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MNIST = ROOT / "examples" / "mnist.tl"


def _tlc_without(blocked: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "from tensorloom.tools.tlc import cli\n"
        f"cli.main({list(args)!r}, prog_name='tlc')\n"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=240)  # fmt: skip


@pytest.mark.parametrize(
    ("blocked", "args", "package"),
    [
        (["networkx"], ["graph", str(MNIST), "--format", "dot"], "networkx"),
        (["matplotlib"], ["plot", "metrics.jsonl", "-o", "curves.png"], "matplotlib"),
    ],
)
def test_pictures_without_their_package_name_the_extra(
    tmp_path: Path, blocked: list[str], args: list[str], package: str
) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"epoch": 1, "train_loss": 1.0}\n')
    done = _tlc_without(blocked, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    command = "tlc " + args[0]
    assert done.stderr.splitlines()[-2:] == [
        f"error: `{command}` needs `{package}`, which is not installed",
        "  = help: pip install 'tensorloom[pictures]'",
    ]


def test_run_without_torch_names_the_extra(tmp_path: Path) -> None:
    done = _tlc_without(["torch"], "run", str(MNIST), "--", "--epochs", "1", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "error: `tlc run` needs torch, which is not installed"
    assert lines[1].startswith("  = help: pip install 'tensorloom[torch]'")
    assert not (tmp_path / "checkpoints").exists()


def test_graphviz_source_needs_no_graphviz_package(tmp_path: Path) -> None:
    done = _tlc_without(["graphviz"], "graph", str(MNIST), "-o", "model.dot", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    source = (tmp_path / "model.dot").read_text()
    assert source.startswith('digraph "Classifier" {')
    assert '\tn1 [label="fc1: Linear(64, 256)" shape=box' in source
