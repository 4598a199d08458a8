"""The shipped maps of docs/pretrained.md against the libraries that publish the weights.

Each test builds a small random model with transformers (or writes a torchvision-named state
dict), saves it as the library does, and takes the map's text from docs/pretrained.md
verbatim, with only the instance's sizes and the source's path changed: `tlc check` finds
no mismatch, the model loaded through the map gives the library's outputs within 1e-4 on
the same input, and `export_pretrained`'s folder loads back into the library with equal
outputs. No network: the checkpoints are made here.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PAGE = ROOT / "docs" / "pretrained.md"
FENCE = re.compile(r"^```tl\n(.*?)^```", re.M | re.S)


def shipped_map(source: str) -> str:
    """The docs/pretrained.md program whose `weights` block reads `source`."""
    blocks = FENCE.findall(PAGE.read_text(encoding="utf-8"))
    return next(b for b in blocks if f'weights model from "{source}":' in b)


def program(tmp: Path, source: str, instance: str, folder: Path, tail: str = "") -> Path:
    """The shipped map's program with the instance built at `instance` and the source at
    `folder`; every example model is copied beside it, as the docs' programs import them."""
    for model in EXAMPLES.glob("*.nml"):
        shutil.copy(model, tmp / model.name)
    text = shipped_map(source)
    text = re.sub(r"^let model = .*$", f"let model = {instance}", text, count=1, flags=re.M)
    text = text.replace(f'weights model from "{source}":', f'weights model from "{folder}":')
    path = tmp / "program.tl"
    path.write_text(text + tail, encoding="utf-8")
    return path


def tlc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorloom.tools.tlc", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def checked(path: Path) -> None:
    done = tlc("check", path.name, "--no-cache", cwd=path.parent)
    assert done.returncode == 0, done.stderr
    assert "TL08" not in done.stderr, done.stderr


def rules(path: Path) -> list[tuple[Any, ...]]:
    """The program's weights rules as the compiler reads them."""
    from tensorloom.dialects.train import WeightsOp
    from tensorloom.pipeline import compile_file

    compiled = compile_file(path, until="irgen")
    assert compiled.module is not None
    op = next(o for o in compiled.module.walk() if isinstance(o, WeightsOp))
    return list(op.rules())


def load_module(script: Path, name: str) -> ModuleType:
    if str(script.parent) not in sys.path:
        sys.path.append(str(script.parent))
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def models(nml: str, tmp: Path) -> ModuleType:
    """An example .nml compiled to its PyTorch classes."""
    out = tmp / "models" / f"{Path(nml).stem}_classes.py"
    out.parent.mkdir(exist_ok=True)
    done = tlc("compile", str(EXAMPLES / nml), "-o", str(out), cwd=tmp)
    assert done.returncode == 0, done.stderr
    return load_module(out, f"tl_{out.stem}_{tmp.name}")


def runtime() -> ModuleType:
    from tensorloom.backends.runtime import pretrained

    return pretrained


def close(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    assert ours.shape == theirs.shape
    return (ours - theirs).abs().max().item()


# --- BERT --------------------------------------------------------------------------------------

BERT = {"vocab_size": 120, "max_positions": 40, "hidden": 48, "n_layers": 2, "n_heads": 4,
        "mlp_dim": 96, "dropout": 0.0}  # fmt: skip


def _hf_bert(folder: Path) -> Any:
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=120, max_position_embeddings=40, hidden_size=48, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=96, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    model = transformers.BertModel(config).eval()  # the pooler too: the map ignores it
    model.save_pretrained(folder)
    return model


def test_bert_loads_through_the_shipped_map_and_exports_back(tmp_path: Path) -> None:
    reference = _hf_bert(tmp_path / "bert")
    sizes = ", ".join(f"{k}={v}" for k, v in BERT.items())
    path = program(tmp_path, "bert-base-uncased", f"Bert({sizes})", tmp_path / "bert")
    checked(path)
    model = models("bert.nml", tmp_path).Bert(**BERT).eval()
    table = rules(path)
    runtime().load_pretrained(model, tmp_path / "bert", table)
    ids = torch.randint(0, 120, (2, 17))
    with torch.no_grad():
        assert close(model(ids), reference(ids).last_hidden_state) < 1e-4
    torch.manual_seed(3)
    other = models("bert.nml", tmp_path).Bert(**BERT).eval()  # its own weights: not trivial
    runtime().export_pretrained(other, tmp_path / "out", table, source=tmp_path / "bert")
    back = transformers.BertModel.from_pretrained(tmp_path / "out", add_pooling_layer=False)
    with torch.no_grad():
        assert close(other(ids), back.eval()(ids).last_hidden_state) < 1e-4
