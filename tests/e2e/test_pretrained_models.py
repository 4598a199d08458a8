"""The shipped maps against the libraries that publish the weights.

The maps are `@weights` blocks of the example models (examples/*.nml), and
docs/pretrained.md's programs apply them. Each test builds a small random model with
transformers (or torchvision's own `resnet50()` and `vit_b_16()`), saves it as the library
does, and takes the docs' program verbatim, with only the instance's sizes and the source's
path changed: `tlc check` finds no mismatch, the model loaded through the map gives the
library's outputs within 1e-4 on the same input, and `export_pretrained`'s folder loads back
into the library with equal outputs. No network: the checkpoints are made here.
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

from tests.e2e._torchvision import import_torchvision

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PAGE = ROOT / "docs" / "pretrained.md"
FENCE = re.compile(r"^```(tl|nml)\n(.*?)^```", re.M | re.S)


def shipped_map(source: str) -> str:
    """The docs/pretrained.md program whose `weights` line reads `source`."""
    blocks = FENCE.findall(PAGE.read_text(encoding="utf-8"))
    return next(b for lang, b in blocks if lang == "tl" and f'weights model from "{source}"' in b)


def program(tmp: Path, source: str, instance: str, folder: Path, tail: str = "") -> Path:
    """The shipped map's program with the instance built at `instance` and the source at
    `folder`; every example model is copied beside it, as the docs' programs import them."""
    for model in EXAMPLES.glob("*.nml"):
        shutil.copy(model, tmp / model.name)
    text = shipped_map(source)
    text = re.sub(r"^let model = .*$", f"let model = {instance}", text, count=1, flags=re.M)
    text = text.replace(f'weights model from "{source}"', f'weights model from "{folder}"')
    path = tmp / "program.tl"
    path.write_text(text + tail, encoding="utf-8")
    return path


def test_the_docs_quote_the_example_maps() -> None:
    """Each `@weights` map docs/pretrained.md shows is the text of an example model's file."""
    quoted = [b for lang, b in FENCE.findall(PAGE.read_text(encoding="utf-8")) if lang == "nml"]
    examples = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLES.glob("*.nml")}
    assert len(quoted) == 6
    for text in quoted:
        assert text.startswith("@weights "), text
        assert any(text in source for source in examples.values()), text.splitlines()[0]


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


# --- ViT -----------------------------------------------------------------------------------------

VIT = {"n_patches": 16, "in_channels": 1, "patch": 2, "hidden": 32, "n_layers": 2, "n_heads": 4,
       "mlp_dim": 64, "classes": 10, "eps": 1e-12}  # fmt: skip
DIGITS = """
let data = load_dataset("digits")

train model on data:
    epochs = 1
    batch_size = 16
    optimizer = AdamW(lr=0.001)
    loss = CrossEntropy
"""


def _hf_vit(folder: Path) -> Any:
    """A random ViT for 8x8 grey digits (LayerNorm eps at transformers' 1e-12)."""
    torch.manual_seed(0)
    config = transformers.ViTConfig(
        image_size=8, patch_size=2, num_channels=1, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, num_labels=10, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    model = transformers.ViTForImageClassification(config).eval()
    model.save_pretrained(folder)
    return model


def test_vit_fine_tunes_from_transformers_weights_through_the_script(tmp_path: Path) -> None:
    """The emitted script itself: WEIGHT_RULES with its joins, the load at start-up, two
    steps on the digits, and `--export-weights` into a folder transformers loads."""
    reference = _hf_vit(tmp_path / "vit")
    sizes = ", ".join(f"{k}={v}" for k, v in VIT.items())
    path = program(tmp_path, "vit-base-patch16-224", f"ViT({sizes})", tmp_path / "vit", DIGITS)
    checked(path)
    script = tmp_path / "out" / "program.py"
    done = tlc("compile", path.name, "-o", str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    emitted = load_module(script, f"tl_vit_{tmp_path.name}")
    model = emitted.VisionTransformer(**VIT).eval()
    emitted.load_pretrained(model, tmp_path / "vit", emitted.WEIGHT_RULES)
    images = torch.rand(3, 1, 8, 8)
    with torch.no_grad():
        assert close(model(images), reference(pixel_values=images).logits) < 1e-4
    run = subprocess.run(
        [sys.executable, str(script), "--device", "cpu", "--max-steps", "2", "--checkpoint-dir",
         str(tmp_path / "ck"), "--export-weights", str(tmp_path / "tuned")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "starting from the published weights" in run.stdout
    state = torch.load(tmp_path / "ck" / "last.pt", map_location="cpu", weights_only=True)
    trained = emitted.VisionTransformer(**VIT).eval()
    trained.load_state_dict(state["model"])
    moved = close(trained.head.weight, model.head.weight)
    assert 0 < moved < 0.05  # two AdamW steps from the published weights, not a new init
    tuned = transformers.ViTForImageClassification.from_pretrained(tmp_path / "tuned").eval()
    with torch.no_grad():
        assert close(trained(images), tuned(pixel_values=images).logits) < 1e-4


# --- Llama ---------------------------------------------------------------------------------------

LLAMA = {"vocab_size": 96, "dim": 48, "n_layers": 2, "n_heads": 6, "n_kv_heads": 2,
         "hidden": 80, "eps": 1e-6}  # fmt: skip


def _hf_llama(folder: Path) -> Any:
    """A random grouped-query Llama (6 query heads, 2 key/value heads of 8)."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=96, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, intermediate_size=80, rms_norm_eps=1e-6,
        max_position_embeddings=64, tie_word_embeddings=False,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    return model


def test_llama_loads_through_the_shipped_map_and_exports_back(tmp_path: Path) -> None:
    """q_proj [48, 48], k_proj and v_proj [16, 48] joined into one qkv_proj [80, 48]; the
    export splits it back by the source's sizes (equal parts would be wrong)."""
    reference = _hf_llama(tmp_path / "llama")
    sizes = ", ".join(f"{k}={v}" for k, v in LLAMA.items())
    path = program(tmp_path, "TinyLlama_v1.1", f"Llama({sizes})", tmp_path / "llama")
    checked(path)
    classes = models("llama.nml", tmp_path)
    model = classes.Llama(**LLAMA).eval()
    table = rules(path)
    runtime().load_pretrained(model, tmp_path / "llama", table)
    ids = torch.randint(0, 96, (2, 21))
    with torch.no_grad():
        assert close(model(ids), reference(ids).logits) < 1e-4
    torch.manual_seed(5)
    other = classes.Llama(**LLAMA).eval()
    runtime().export_pretrained(other, tmp_path / "out", table, source=tmp_path / "llama")
    back = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "out").eval()
    assert back.model.layers[1].self_attn.k_proj.weight.shape == (16, 48)
    with torch.no_grad():
        assert close(other(ids), back(ids).logits) < 1e-4


# --- torchvision: ResNet-50 and ViT-B/16 ----------------------------------------------------


def _random_statistics(model: torch.nn.Module) -> None:
    """Batch norms with random statistics and affine weights, so that eval mode tests them."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.2, 0.2)


def test_resnet50_loads_torchvisions_state_dict(tmp_path: Path) -> None:
    """torchvision's own `resnet50()` (random weights, random batch-norm statistics): its
    state dict loads through resnet50.nml's map, the logits agree, and the export writes
    the same tensors back under torchvision's names."""
    torchvision = import_torchvision()
    torch.manual_seed(0)
    reference = torchvision.models.resnet50(num_classes=10)
    _random_statistics(reference)
    reference.eval()
    torch.save(reference.state_dict(), tmp_path / "resnet50.pth")
    path = program(tmp_path, "resnet50.pth", "ResNet50(classes=10)", tmp_path / "resnet50.pth")
    checked(path)
    classes = models("resnet50.nml", tmp_path)
    model = classes.ResNet50(classes=10).eval()
    table = rules(path)
    runtime().load_pretrained(model, tmp_path / "resnet50.pth", table)
    images = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert close(model(images), reference(images)) < 1e-4
    runtime().export_pretrained(model, tmp_path / "out", table)
    back = runtime().read_tensors(tmp_path / "out")
    state = reference.state_dict()
    assert back.keys() == state.keys()
    assert all(torch.equal(back[k], v) for k, v in state.items())
    again = torchvision.models.resnet50(num_classes=10).eval()
    again.load_state_dict(back)
    with torch.no_grad():
        assert close(again(images), reference(images)) == 0


def test_vit_b_16_loads_torchvisions_state_dict(tmp_path: Path) -> None:
    """torchvision's own `vit_b_16()` at its full size (random weights): through
    vision_transformer.nml's `torchvision` map, equal logits at 224x224; the export loads
    back into torchvision's model."""
    torchvision = import_torchvision()
    torch.manual_seed(0)
    reference = torchvision.models.vit_b_16().eval()
    torch.save(reference.state_dict(), tmp_path / "vit_b_16.pth")
    path = program(tmp_path, "vit_b_16.pth", "ViT()", tmp_path / "vit_b_16.pth")
    checked(path)
    model = models("vision_transformer.nml", tmp_path).VisionTransformer().eval()
    table = rules(path)
    runtime().load_pretrained(model, tmp_path / "vit_b_16.pth", table)
    images = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        theirs = reference(images)
        assert close(model(images), theirs) < 1e-4
    runtime().export_pretrained(model, tmp_path / "out", table)
    back = torchvision.models.vit_b_16().eval()
    back.load_state_dict(runtime().read_tensors(tmp_path / "out"))
    with torch.no_grad():
        assert close(back(images), theirs) == 0
