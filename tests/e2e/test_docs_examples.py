"""The docs are true to the code (issue 32): every fenced `tl`/`nml` program in README.md
and docs/*.md passes `tlc check`, and their `tlc` and `python` commands run as written.

- A block marked `<!-- fragment -->` on the line above it is part of a file (a form shown
  out of its model), and is not checked alone.
- A `train NAME on DATA:` block that uses a model and data it does not declare (the train-block
  reference's examples) is checked after a small digits classifier bound to those names.
- A shell block's command runs in a copy of `examples/` and `bench/programs/` when every file
  it names exists there (`tlc run train.tl` of docs/distributed.md names the reader's own file
  and is left out); a training run gets `--max-steps 2 --device cpu` to stay short. A command
  followed by its output (`$ tlc check ...` then the diagnostic) must print exactly that.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
FRAGMENT = "<!-- fragment -->"
TRAIN = re.compile(r"^train (\w+) on (\w+):", re.M)
PRELUDE = """model DocNet:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let {model} = DocNet()
let {data} = load_dataset("digits", flatten=true)

"""
TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "NO_COLOR": "1"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    fragment: bool

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            fragment = above.strip() == FRAGMENT
            found.append(Block(page, line, match.group(1), match.group(2), fragment))
    return found


BLOCKS = _blocks()
PROGRAMS = [b for b in BLOCKS if b.lang in ("tl", "nml") and not b.fragment]
SHELL = [b for b in BLOCKS if b.lang in ("", "sh") and re.search(r"^(\$ )?tlc ", b.text, re.M)]


def _program(block: Block) -> str:
    """The block as a file: a train block alone gets the model and data it names."""
    train = TRAIN.search(block.text)
    if train is None or re.search(rf"^let {train.group(1)}\b", block.text, re.M):
        return block.text
    return PRELUDE.format(model=train.group(1), data=train.group(2)) + block.text


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder with the examples and bench programs, as a clone's root has them."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "bench" / "programs", tmp_path / "bench" / "programs")
    return tmp_path


@pytest.mark.parametrize("block", PROGRAMS, ids=lambda b: b.name)
def test_every_program_in_the_docs_checks(block: Block, tmp_path: Path) -> None:
    for model in (ROOT / "examples").glob("*.nml"):  # what a doc program imports
        shutil.copy(model, tmp_path / model.name)
    source = tmp_path / f"doc_block.{block.lang}"
    source.write_text(_program(block), encoding="utf-8")
    done = subprocess.run([*TLC, "check", str(source)], capture_output=True, text=True,
                          env=ENV, cwd=tmp_path, timeout=240)  # fmt: skip
    assert done.returncode == 0, f"{block.name}:\n{done.stderr}"


def test_the_fragments_are_few_and_marked() -> None:
    fragments = [(b.page.name, b.lang) for b in BLOCKS if b.fragment]
    assert fragments == [
        ("README.md", "nml"), ("grammar.md", "nml"), ("kernels.md", "tl"), ("kernels.md", "tl"),
        *[("pretrained.md", "nml")] * 6,  # the shipped maps, quoted from examples/*.nml
        ("train-block.md", "tl"), ("train-block.md", "tl"),
    ]  # fmt: skip


def _commands(block: Block) -> list[tuple[list[str], list[str]]]:
    """Each command of a shell block (continuation lines joined) and the output shown after
    it, for the commands whose files are all in the repository."""
    found: list[tuple[list[str], list[str]]] = []
    lines = block.text.replace("\\\n", " ").splitlines()
    for index, line in enumerate(lines):
        text = line.strip().removeprefix("$ ")
        if not re.match(r"(tlc |python \S+\.py\b)", text):
            continue
        words = shlex.split(text, comments=True)
        files = [w for w in words if re.search(r"\.(tl|nml)$", w)]
        if not all((ROOT / f).is_file() for f in files):
            continue
        shown = line.startswith("$ ")
        output = []
        for after in lines[index + 1 :] if shown else []:
            if after.startswith("$ "):
                break
            output.append(after)
        found.append((words, output))
    return found


def _quick(words: list[str]) -> list[str]:
    """A training command, cut to two steps on the CPU."""
    if words[:2] == ["tlc", "run"]:
        extra = [] if "--" in words else ["--"]
        return [*TLC, *words[1:], *extra, "--max-steps", "2", "--device", "cpu"]
    if words[0] == "tlc":
        return [*TLC, *words[1:]]
    return [sys.executable, *words[1:], "--max-steps", "2", "--device", "cpu"]


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.name)
def test_the_commands_in_the_docs_work(block: Block, workdir: Path) -> None:
    commands = _commands(block)
    for words, output in commands:
        done = subprocess.run(_quick(words), capture_output=True, text=True, env=ENV,
                              cwd=workdir, timeout=400)  # fmt: skip
        if output:  # the page shows what it prints: exactly that
            printed = (done.stdout + done.stderr).rstrip("\n").splitlines()
            assert printed == output, f"{block.name}: {shlex.join(words)}"
            continue
        assert done.returncode == 0, f"{block.name}: {shlex.join(words)}\n{done.stderr[-3000:]}"


def test_the_commands_checked_cover_each_page() -> None:
    """The pages whose commands this file runs (a guard against a regex that finds none)."""
    pages = {b.page.name for b in SHELL if _commands(b)}
    assert {"README.md", "examples.md", "info.md"} <= pages
