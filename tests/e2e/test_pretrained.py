"""Published weights in and out: a Hugging Face GPT-2 folder that transformers writes itself
(random init, `save_pretrained`), loaded into examples/gpt.nml's GPT through a `weights` block,
gives transformers' logits; `--export-weights` writes a folder transformers loads back.

No network: the checkpoints are made here. transformers is a test-only dependency (the dev
extra); the emitted script needs only torch and safetensors.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SIZES = {"vocab_size": 256, "block_size": 64, "n_layer": 2, "n_head": 4, "n_embd": 96}

# GPT-2's names in a Hugging Face folder -> examples/gpt.nml's. Conv1D keeps [in, out].
GPT2_RULES = """\
weights model from "gpt2-tiny":
    ignore "transformer.h.{i}.attn.bias"
    ignore "transformer.h.{i}.attn.masked_bias"
    ignore "lm_head.weight"
    "transformer.h.{i}.{m}.{l}.weight" -> "h.{i}.{m}.{l}.weight" transposed
    "transformer.h.{i}.{m}.{l}.bias" -> "h.{i}.{m}.{l}.bias"
    "transformer.h.{i}.{l}.{p}" -> "h.{i}.{l}.{p}"
    "transformer.{l}.{p}" -> "{l}.{p}"
"""


def _program(tmp: Path, rules: str = GPT2_RULES) -> Path:
    shutil.copy(EXAMPLES / "gpt.nml", tmp / "gpt.nml")
    overrides = ", ".join(f"{k}={v}" for k, v in SIZES.items())
    program = tmp / "finetune.tl"
    program.write_text(
        f"""import gpt.nml as GPT

let model = GPT({overrides})
let data = load_dataset("text", path="stdlib", block_size=64, max_bytes=100000,
                        windows_per_epoch=64)

{rules}
train model on data:
    epochs = 1
    batch_size = 8
    optimizer = AdamW(lr=0.0003)
    loss = CrossEntropy
""",
        encoding="utf-8",
    )
    return program


def _hf_gpt2(folder: Path) -> torch.nn.Module:
    """A random GPT-2 at SIZES, exact GELU as gpt.nml's, saved as transformers saves it."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=SIZES["vocab_size"], n_positions=SIZES["block_size"], n_embd=SIZES["n_embd"],
        n_layer=SIZES["n_layer"], n_head=SIZES["n_head"], activation_function="gelu",
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder)
    return model


def _tlc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", *args, "--no-cache"]
        if args[0] == "check"
        else [sys.executable, "-m", "tensorloom.tools.tlc", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _script(tmp: Path) -> tuple[Path, ModuleType]:
    out = tmp / "out" / "finetune.py"
    out.parent.mkdir()
    result = _tlc("compile", "finetune.tl", "-o", str(out), cwd=tmp)
    assert result.returncode == 0, result.stderr
    if str(out.parent) not in sys.path:  # the runtime module beside it, as `python` finds it
        sys.path.append(str(out.parent))
    spec = importlib.util.spec_from_file_location("finetune_script", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the script's dataclasses look their module up
    spec.loader.exec_module(module)
    return out, module


def test_gpt2_folder_checks_loads_and_gives_transformers_logits(tmp_path: Path) -> None:
    reference = _hf_gpt2(tmp_path / "gpt2-tiny")
    _program(tmp_path)
    checked = _tlc("check", "finetune.tl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "TL08" not in checked.stderr
    _, script = _script(tmp_path)
    model = script.GPT(**SIZES).eval()
    script.load_pretrained(model, tmp_path / "gpt2-tiny", script.WEIGHT_RULES)
    idx = torch.randint(0, SIZES["vocab_size"], (2, 40))
    with torch.no_grad():
        ours, theirs = model(idx), reference(idx).logits
    assert ours.shape == theirs.shape == (2, 40, SIZES["vocab_size"])
    assert (ours - theirs).abs().max().item() < 1e-4


def test_exported_folder_loads_back_into_transformers(tmp_path: Path) -> None:
    _hf_gpt2(tmp_path / "gpt2-tiny")
    _program(tmp_path)
    _, script = _script(tmp_path)
    torch.manual_seed(1)
    model = script.GPT(**SIZES).eval()  # weights of its own, so the round trip is not trivial
    script.export_pretrained(model, tmp_path / "exported", script.WEIGHT_RULES,
                             source=tmp_path / "gpt2-tiny")  # fmt: skip
    back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "exported").eval()
    idx = torch.randint(0, SIZES["vocab_size"], (2, 33))
    with torch.no_grad():
        assert (model(idx) - back(idx).logits).abs().max().item() < 1e-4


def test_the_script_fine_tunes_from_the_folder_and_exports_it(tmp_path: Path) -> None:
    reference = _hf_gpt2(tmp_path / "gpt2-tiny")
    _program(tmp_path)
    out, _ = _script(tmp_path)
    run = subprocess.run(
        [sys.executable, str(out), "--device", "cpu", "--max-steps", "2", "--checkpoint-dir",
         str(tmp_path / "ck"), "--export-weights", str(tmp_path / "tuned")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "starting from the published weights in gpt2-tiny" in run.stdout
    tuned = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "tuned").eval()
    first = reference.transformer.h[0].attn.c_attn.weight
    moved = (tuned.transformer.h[0].attn.c_attn.weight - first).abs().max().item()
    assert 0 < moved < 0.05  # two small AdamW steps from the published weights, not a new init


def test_a_changed_file_is_a_one_line_error_at_load(tmp_path: Path) -> None:
    _hf_gpt2(tmp_path / "gpt2-tiny")
    _program(tmp_path)
    out, _ = _script(tmp_path)
    other = tmp_path / "other"
    torch.manual_seed(0)
    wider = transformers.GPT2Config(vocab_size=256, n_positions=64, n_embd=128, n_layer=2,
                                    n_head=4, activation_function="gelu")  # fmt: skip
    transformers.GPT2LMHeadModel(wider).save_pretrained(other)
    run = subprocess.run(
        [sys.executable, str(out), "--device", "cpu", "--max-steps", "1", "--weights", str(other),
         "--checkpoint-dir", str(tmp_path / "ck")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode != 0
    assert "Traceback" not in run.stderr  # the user's to fix: one line, exit 1
    assert run.stderr.startswith("error: ") and "the model's `" in run.stderr


def test_a_torch_state_dict_checks_by_its_header(tmp_path: Path) -> None:
    """A .pt state dict (as torchvision publishes them) is read without loading its data."""
    reference = _hf_gpt2(tmp_path / "gpt2-tiny")
    torch.save(reference.state_dict(), tmp_path / "gpt2.pt")
    _program(tmp_path, GPT2_RULES.replace('"gpt2-tiny"', '"gpt2.pt"'))
    checked = _tlc("check", "finetune.tl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    _, script = _script(tmp_path)
    model = script.GPT(**SIZES).eval()
    script.load_pretrained(model, tmp_path / "gpt2.pt", script.WEIGHT_RULES)
    idx = torch.randint(0, SIZES["vocab_size"], (1, 20))
    with torch.no_grad():
        assert (model(idx) - reference(idx).logits).abs().max().item() < 1e-4


def test_the_compiler_and_the_script_apply_rules_alike() -> None:
    from tensorloom.backends.runtime import pretrained
    from tensorloom.passes.support import weight_rules

    rules = [
        ("a.{i}.skip", None, False), ("a.{i}.{p}", "b.{i}.{p}", True), ("{x}", "{x}", False),
        (("q.{i}.w", "k.{i}.w"), "qk.{i}", False, 0),
        ("qkv.{i}", ("q{i}", "k{i}", "v{i}"), True, 1),
    ]  # fmt: skip
    names = ["a.0.w", "a.1.skip", "a.2.b", "c", "d.e", "a.0.w.x", "q.0.w", "k.0.w", "q.1.w",
             "qkv.3"]  # fmt: skip
    matched = weight_rules.match_names(names, [weight_rules.Rule.of(r) for r in rules])
    mapped, unmatched, partial = pretrained.match_names(names, rules)
    assert [(m.sources, m.targets, m.rule) for m in matched.mappings] == mapped
    assert matched.unmatched == unmatched == ["d.e", "a.0.w.x"]
    assert [absent for _, _, absent in matched.partial] == partial == [["k.1.w"]]
    assert (("q.0.w", "k.0.w"), ("qk.0",), 3) in mapped
    assert (("qkv.3",), ("q3", "k3", "v3"), 4) in mapped


LORA_RULES = GPT2_RULES + "\n"  # the same folder, fine-tuned through adapters


def _lora_program(tmp: Path, lora: str, freeze: str = "") -> Path:
    program = _program(tmp)
    text = program.read_text(encoding="utf-8").replace(
        "    epochs = 1\n",
        f"    epochs = 1\n    lora = {lora}\n" + (f"    freeze = {freeze}\n" if freeze else ""),
    )
    program.write_text(text, encoding="utf-8")
    return program


def test_lora_trains_what_peft_trains(tmp_path: Path) -> None:
    """The same targets and rank: as many trainable parameters as peft's LoRA, and a model
    that starts as the published one (B is zero)."""
    peft = pytest.importorskip("peft")
    reference = _hf_gpt2(tmp_path / "gpt2-tiny")
    _lora_program(tmp_path, "LoRA(rank=4, alpha=8, targets=[c_attn, c_fc])")
    checked = _tlc("check", "finetune.tl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    _, script = _script(tmp_path)
    model = script.GPT(**SIZES).eval()
    script.add_lora(model, **script.LORA)
    script.load_pretrained(model, tmp_path / "gpt2-tiny", script.WEIGHT_RULES)
    ours = sum(p.numel() for p in model.parameters() if p.requires_grad)
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_fc"])
    theirs = peft.get_peft_model(reference, config)
    expected = sum(p.numel() for p in theirs.parameters() if p.requires_grad)
    assert ours == expected == 2 * 4 * ((96 + 288) + (96 + 384))
    info = subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", "info", "finetune.tl"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert info.returncode == 0, info.stderr
    assert f"trainable parameters: {expected:,} of 254,592" in info.stdout
    assert f"gradients          {expected * 4 / 1024:.2f} KiB" in info.stdout  # fp32, trained only
    idx = torch.randint(0, SIZES["vocab_size"], (2, 30))
    with torch.no_grad():
        assert (model(idx) - theirs(idx).logits).abs().max().item() < 1e-4


def test_lora_run_exports_merged_weights_transformers_loads(tmp_path: Path) -> None:
    _hf_gpt2(tmp_path / "gpt2-tiny")
    _lora_program(tmp_path, "LoRA(rank=4, alpha=8, targets=[c_attn])", freeze="[wte]")
    out, script = _script(tmp_path)
    run = subprocess.run(
        [sys.executable, str(out), "--device", "cpu", "--max-steps", "3", "--checkpoint-dir",
         str(tmp_path / "ck"), "--export-weights", str(tmp_path / "tuned")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    state = torch.load(tmp_path / "ck" / "last.pt", map_location="cpu", weights_only=True)["model"]
    model = script.GPT(**SIZES).eval()
    script.add_lora(model, **script.LORA)
    model.load_state_dict(state)
    assert model.h[0].attn.c_attn.lora_B.abs().max().item() > 0  # the adapters trained
    original = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "gpt2-tiny")
    assert torch.equal(state["wte.weight"], original.transformer.wte.weight)  # frozen
    assert torch.equal(state["h.0.mlp.c_fc.weight"], original.transformer.h[0].mlp.c_fc.weight.t())
    tuned = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "tuned").eval()
    idx = torch.randint(0, SIZES["vocab_size"], (2, 30))
    with torch.no_grad():
        assert (model(idx) - tuned(idx).logits).abs().max().item() < 1e-4  # merged: the same model


def _finetune_example(tmp: Path) -> Path:
    """examples/finetune_gpt2.tl as written, at SIZES: the instance's sizes and the data's
    block size (the `config` line compares it with the folder's n_positions) changed."""
    shutil.copy(EXAMPLES / "gpt.nml", tmp / "gpt.nml")
    text = (EXAMPLES / "finetune_gpt2.tl").read_text(encoding="utf-8")
    overrides = ", ".join(f"{k}={v}" for k, v in SIZES.items())
    assert "let model = GPT()\n" in text and "block_size=128" in text
    text = text.replace("let model = GPT()\n", f"let model = GPT({overrides})\n")
    program = tmp / "finetune_gpt2.tl"
    program.write_text(text.replace("block_size=128", "block_size=64"), encoding="utf-8")
    return program


def test_the_finetune_example_tunes_gpt2_and_transformers_generates(tmp_path: Path) -> None:
    """examples/finetune_gpt2.tl: checked against the folder, LoRA-tuned for three steps on
    the stdlib text, exported; transformers loads the folder, gives the tuned model's
    logits and generates from it; tlc info's trainable count is peft's."""
    reference = _hf_gpt2(tmp_path / "gpt2")
    _finetune_example(tmp_path)
    checked = _tlc("check", "finetune_gpt2.tl", cwd=tmp_path)
    assert checked.returncode == 0 and "TL08" not in checked.stderr, checked.stderr
    out = tmp_path / "out" / "finetune_gpt2.py"
    assert _tlc("compile", "finetune_gpt2.tl", "-o", str(out), cwd=tmp_path).returncode == 0
    run = subprocess.run(
        [sys.executable, str(out), "--device", "cpu", "--max-steps", "3", "--checkpoint-dir",
         str(tmp_path / "ck"), "--export-weights", str(tmp_path / "tuned")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    tuned = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "tuned").eval()
    idx = torch.randint(0, SIZES["vocab_size"], (1, 12))
    with torch.no_grad():
        before, after = reference(idx).logits, tuned(idx).logits
        generated = tuned.generate(idx, max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert 0 < (after - before).abs().max().item() < 1.0  # tuned from the published weights
    assert generated.shape == (1, 20) and torch.equal(generated[:, :12], idx)
    peft = pytest.importorskip("peft")
    config = peft.LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_fc"])
    trainable = peft.get_peft_model(reference, config).get_nb_trainable_parameters()[0]
    info = _tlc("info", "finetune_gpt2.tl", cwd=tmp_path)
    assert f"trainable parameters: {trainable:,} of 254,592" in info.stdout, info.stdout


def test_the_finetune_example_without_its_folder(tmp_path: Path) -> None:
    """A clean clone has no weights: `tlc check` warns and checks the rest; the script stops
    before training with one line saying where it looked and how to fetch them."""
    _finetune_example(tmp_path)
    checked = _tlc("check", "finetune_gpt2.tl", cwd=tmp_path)
    assert checked.returncode == 0 and "warning[TL0801]" in checked.stderr, checked.stderr
    out = tmp_path / "out" / "finetune_gpt2.py"
    assert _tlc("compile", "finetune_gpt2.tl", "-o", str(out), cwd=tmp_path).returncode == 0
    run = subprocess.run(
        [sys.executable, str(out), "--device", "cpu", "--max-steps", "1", "--checkpoint-dir",
         str(tmp_path / "ck")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("error: the published weights `gpt2` are not here")
    assert "huggingface-cli download NAME --local-dir gpt2" in run.stderr


def _rules_of(program: Path) -> list[tuple[object, ...]]:
    """The program's weights rules as the compiler reads them (its `train.weights` op)."""
    from tensorloom.dialects.train import WeightsOp
    from tensorloom.pipeline import compile_file

    compiled = compile_file(program, until="irgen")
    assert compiled.module is not None
    return list(next(o for o in compiled.module.walk() if isinstance(o, WeightsOp)).rules())


def test_gpt_nml_map_is_the_tl_block_and_a_block_adds_rules_before_it(tmp_path: Path) -> None:
    """examples/gpt.nml's `@weights hf` holds the rules of the .tl block above; a block that
    writes rules and says `using hf` applies its own first, then the map's, and loads
    transformers' GPT-2 with its logits."""
    reference = _hf_gpt2(tmp_path / "gpt2-tiny")
    tl_rules = _rules_of(_program(tmp_path))
    own = '"transformer.wte.weight" -> "wte.weight"'
    program = _program(tmp_path, f'weights model from "gpt2-tiny" using hf:\n    {own}\n')
    checked = _tlc("check", "finetune.tl", cwd=tmp_path)
    assert checked.returncode == 0 and "TL08" not in checked.stderr, checked.stderr
    table = _rules_of(program)
    assert table[0] == ("transformer.wte.weight", "wte.weight", False, None)
    assert table[1:] == tl_rules
    _, script = _script(tmp_path)
    assert script.WEIGHT_RULES[0] == ("transformer.wte.weight", "wte.weight", False)
    model = script.GPT(**SIZES).eval()
    script.load_pretrained(model, tmp_path / "gpt2-tiny", script.WEIGHT_RULES)
    idx = torch.randint(0, SIZES["vocab_size"], (2, 24))
    with torch.no_grad():
        assert (model(idx) - reference(idx).logits).abs().max().item() < 1e-4


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_safetensors_file_is_a_one_line_error(tmp_path: Path, damage: str) -> None:
    """A download cut short, or a file that is no safetensors: `tlc check` says so at the
    source (TL0802), and the script stops before training with one line naming the file."""
    _hf_gpt2(tmp_path / "gpt2")
    _finetune_example(tmp_path)
    out = tmp_path / "out" / "finetune_gpt2.py"
    assert _tlc("compile", "finetune_gpt2.tl", "-o", str(out), cwd=tmp_path).returncode == 0
    weights = tmp_path / "gpt2" / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) - 100] if damage == "truncated" else b"\x07" + data[1:])
    checked = _tlc("check", "finetune_gpt2.tl", cwd=tmp_path)
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    assert "error[TL0802]: cannot read the weights: " in checked.stderr, checked.stderr
    run = subprocess.run(
        [sys.executable, str(out), "--device", "cpu", "--max-steps", "1", "--checkpoint-dir",
         str(tmp_path / "ck")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("error: ") and "model.safetensors" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr


SPLIT_ATTENTION = """@model SplitAttention:
    @config:
        n_embd = 768
        n_head = 12
        head = n_embd / n_head

    @layers:
        q      = Linear(n_embd, n_embd)
        k      = Linear(n_embd, n_embd)
        v      = Linear(n_embd, n_embd)
        c_proj = Linear(n_embd, n_embd)

    @forward(x: Tensor[B, T, n_embd]):
        let qh = q(x).view(B, T, n_head, head).transpose(1, 2)
        let kh = k(x).view(B, T, n_head, head).transpose(1, 2)
        let vh = v(x).view(B, T, n_head, head).transpose(1, 2)
        let y = scaled_dot_product_attention(qh, kh, vh, causal=true)
        return c_proj(y.transpose(1, 2).reshape(B, T, n_embd))

"""
SPLIT_RULES = """\
weights model from "gpt2-tiny":
    ignore "transformer.h.{i}.attn.bias"
    ignore "transformer.h.{i}.attn.masked_bias"
    ignore "lm_head.weight"
    "transformer.h.{i}.attn.c_attn.weight" -> ["h.{i}.attn.q.weight", "h.{i}.attn.k.weight",
                                               "h.{i}.attn.v.weight"] along 0 transposed
    "transformer.h.{i}.attn.c_attn.bias" -> ["h.{i}.attn.q.bias", "h.{i}.attn.k.bias",
                                             "h.{i}.attn.v.bias"]
    "transformer.h.{i}.{m}.{l}.weight" -> "h.{i}.{m}.{l}.weight" transposed
    "transformer.h.{i}.{m}.{l}.bias" -> "h.{i}.{m}.{l}.bias"
    "transformer.h.{i}.{l}.{p}" -> "h.{i}.{l}.{p}"
    "transformer.{l}.{p}" -> "{l}.{p}"
"""


def test_gpt2s_fused_qkv_splits_into_separate_projections(tmp_path: Path) -> None:
    """gpt.nml with attention written as three Linears: GPT-2's fused `c_attn` ([in, 3 out],
    Conv1D) is transposed and cut into q, k and v; the logits are transformers', and the
    export joins them back into a `c_attn` transformers loads."""
    reference = _hf_gpt2(tmp_path / "gpt2-tiny")
    _program(tmp_path, SPLIT_RULES)
    text = (EXAMPLES / "gpt.nml").read_text(encoding="utf-8")
    fused = re.search(r"attn = MultiHeadAttention\(.*?\)\n", text, re.S)
    assert fused is not None
    text = text.replace(fused.group(0), "attn = SplitAttention(n_embd, n_head)\n")
    (tmp_path / "gpt.nml").write_text(SPLIT_ATTENTION + text, encoding="utf-8")
    checked = _tlc("check", "finetune.tl", cwd=tmp_path)
    assert checked.returncode == 0 and "TL08" not in checked.stderr, checked.stderr
    _, script = _script(tmp_path)
    model = script.GPT(**SIZES).eval()
    script.load_pretrained(model, tmp_path / "gpt2-tiny", script.WEIGHT_RULES)
    fused_weight = reference.transformer.h[1].attn.c_attn.weight  # [96, 288]
    assert torch.equal(model.h[1].attn.k.weight, fused_weight[:, 96:192].t())
    idx = torch.randint(0, SIZES["vocab_size"], (2, 30))
    with torch.no_grad():
        assert (model(idx) - reference(idx).logits).abs().max().item() < 1e-4
    script.export_pretrained(model, tmp_path / "out", script.WEIGHT_RULES,
                             source=tmp_path / "gpt2-tiny")  # fmt: skip
    back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "out").eval()
    assert torch.equal(back.transformer.h[1].attn.c_attn.weight, fused_weight)
