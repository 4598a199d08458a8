"""The benchmark scripts run on the CPU at tiny sizes and compute what they claim.

The hand-written baselines are what TensorLoom's emitted code is measured
against, so their models are checked too (causal masking, parameter counts,
the loss falls), and the report's ratios are checked on a sample JSONL.
"""

from __future__ import annotations

import importlib.util
import json
import runpy
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
HANDWRITTEN = BENCH / "handwritten"
TINY_LM = [
    "--device",
    "cpu",
    "--batch-size",
    "2",
    "--seq-len",
    "8",
    "--d-model",
    "16",
    "--heads",
    "2",
    "--layers",
    "2",
    "--vocab",
    "32",
    "--warmup",
    "1",
    "--steps",
    "2",
]


def load(path: Path, name: str) -> ModuleType:
    """Import a bench script under a unique name, without touching sys.path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def run_json(script: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def lm() -> ModuleType:
    return load(HANDWRITTEN / "transformer_lm.py", "bench_transformer_lm")


@pytest.fixture(scope="module")
def report() -> ModuleType:
    return load(BENCH / "report.py", "bench_report")


@pytest.fixture(scope="module")
def idx() -> ModuleType:
    return load(HANDWRITTEN / "mnist_idx.py", "bench_mnist_idx")


def test_transformer_lm_prints_its_throughput() -> None:
    result = run_json(HANDWRITTEN / "transformer_lm.py", *TINY_LM, "--precision", "bf16")
    assert result["mode"] == "bf16 eager"
    assert isinstance(result["tokens_per_s"], float) and result["tokens_per_s"] > 0
    step_ms = result["ms_per_step"]
    assert isinstance(step_ms, float)
    assert result["tokens_per_s"] == pytest.approx(2 * 8 / (step_ms / 1000), rel=1e-6)
    assert result["data"] == "synthetic"


def test_transformer_lm_profiles_its_steps() -> None:
    result = run_json(HANDWRITTEN / "transformer_lm.py", *TINY_LM, "--profile-steps", "2",
                      "--compile-loss")  # fmt: skip
    profile = result["profile"]
    assert isinstance(profile, dict) and profile["steps"] == 2 and result["compile_loss"]
    assert profile["host_ms_per_step"] > 0 and profile["kernel_launches_per_step"] == 0  # CPU
    ops = [op["op"] for op in profile["top_host_ops"]]
    assert len(ops) == 10 and any(op.startswith("aten::") for op in ops)


@pytest.mark.parametrize("attention", ["fused", "mha"])
def test_lm_parameter_count(lm: ModuleType, attention: str) -> None:
    cfg = lm.LMConfig(vocab=32, d_model=16, n_heads=2, n_layers=2, seq_len=8, attention=attention)
    d, v = 16, 32
    block = 2 * (2 * d) + (3 * d * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    expected = v * d + 8 * d + 2 * block + 2 * d + (d * v + v)
    assert sum(p.numel() for p in lm.TransformerLM(cfg).parameters()) == expected


@pytest.mark.parametrize("attention", ["fused", "mha"])
def test_lm_attention_is_causal(lm: ModuleType, attention: str) -> None:
    torch.manual_seed(0)
    cfg = lm.LMConfig(vocab=32, d_model=16, n_heads=2, n_layers=2, seq_len=8, dropout=0.0,
                      attention=attention)  # fmt: skip
    model = lm.TransformerLM(cfg).eval()
    tokens = torch.randint(0, 32, (1, 8))
    changed = tokens.clone()
    changed[0, -1] = (tokens[0, -1] + 1) % 32
    with torch.no_grad():
        before, after = model(tokens)[0], model(changed)[0]
    assert (before[:-1] - after[:-1]).abs().max().item() < 1e-6  # earlier positions: unchanged
    assert (before[-1] - after[-1]).abs().max().item() > 1e-4


def test_mlp_dataloader_reads_idx_files_and_learns(tmp_path: Path, idx: ModuleType) -> None:
    idx.write_synthetic(tmp_path / "mnist", train=1024, test=64)
    result = run_json(HANDWRITTEN / "mlp_dataloader.py", "--device", "cpu", "--epochs", "4",
                      "--samples", "1024", "--data-root", str(tmp_path))  # fmt: skip
    assert result["data"] == "mnist-idx" and result["samples"] == 1024
    losses = result["train_losses"]
    assert isinstance(losses, list) and losses[-1] < losses[0]
    times = result["epoch_times_s"]
    assert isinstance(times, list) and result["epoch_s"] == pytest.approx(np.median(times[1:]))


def test_idx_files_read_back_by_the_emitted_runtime(tmp_path: Path, idx: ModuleType) -> None:
    from tensorloom.backends.runtime.data import read_idx

    idx.write_synthetic(tmp_path, train=50, test=10)
    images, labels = idx.synthetic(50, seed=0)
    runtime_images = read_idx(tmp_path / idx.TRAIN_IMAGES)
    assert runtime_images.shape == (50, 28, 28)
    assert np.array_equal(runtime_images.numpy(), images)
    assert np.array_equal(read_idx(tmp_path / idx.TRAIN_LABELS).numpy(), labels)
    assert set(np.unique(labels)) <= set(range(10)) and len(np.unique(labels)) > 1


@pytest.mark.parametrize("script", ["lightning_lm.py", "lightning_mlp.py"])
def test_lightning_scripts_skip_without_lightning(script: str) -> None:
    if importlib.util.find_spec("lightning") or importlib.util.find_spec("pytorch_lightning"):
        pytest.skip("Lightning is installed here")
    result = run_json(HANDWRITTEN / script)
    assert result["skipped"] == "lightning is not installed"


def test_prepare_gpu_appends_settings_to_the_train_block() -> None:
    prepare = load(BENCH / "prepare_gpu.py", "bench_prepare_gpu")
    source = "train net on data:\n    epochs = 4\n\n"
    out = prepare.with_settings(source, ("precision = bf16", 'compile = "default"'))
    assert (
        out == 'train net on data:\n    epochs = 4\n    precision = bf16\n    compile = "default"\n'
    )
    names = [v.name for v in prepare.variants()]
    assert len(names) == len(set(names))


SAMPLE = [
    {"kind": "env", "date": "2026-11-29", "device": "NVIDIA H200", "torch": "2.11.0"},
    {"bench": "lm", "impl": "handwritten", "setting": "fp32 eager", "tokens_per_s": 100000.0,
     "ms_per_step": 81.92, "peak_mem_bytes": 2 * 2**30},
    {"bench": "lm", "impl": "tensorloom", "setting": "fp32 eager", "tokens_per_s": 99000.0,
     "ms_per_step": 82.75, "peak_mem_bytes": 3 * 2**30},
    {"bench": "lm", "impl": "tensorloom", "setting": "TensorLoom defaults",
     "tokens_per_s": 315000.0, "ms_per_step": 26.0},
    {"bench": "lm", "impl": "lightning", "setting": "fp32 eager", "error": "exit code 1: boom"},
    {"bench": "mlp", "impl": "handwritten", "setting": "DataLoader loop, fp32", "epoch_s": 1.6},
    {"bench": "mlp", "impl": "tensorloom", "setting": "TensorLoom defaults", "epoch_s": 0.08},
]  # fmt: skip


def table_rows(markdown: str, first_cell: str) -> list[list[str]]:
    rows = [line.strip("|").split("|") for line in markdown.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row] for row in rows if row[0].strip() == first_cell]


def test_report_ratios(tmp_path: Path, report: ModuleType) -> None:
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SAMPLE))
    text = report.render(report.read_jsonl([path]))
    fp32 = table_rows(text, "fp32 eager")[0]
    assert fp32[1:6] == ["100,000", "99,000", "0.99x", "-", "-"]
    assert fp32[7] == "2.0 / 3.0"
    defaults = table_rows(text, "TensorLoom")
    assert defaults[1][1:] == ["TensorLoom defaults", "315,000", "26.00", "3.15x"]
    assert table_rows(text, "TensorLoom")[2][1:] == ["TensorLoom defaults", "0.080", "20.00x"]
    assert "- lm / lightning / fp32 eager: failed: exit code 1: boom" in text.splitlines()
    assert text.startswith("Environment: date 2026-11-29; device NVIDIA H200; torch 2.11.0")


@pytest.fixture(scope="module")
def speed() -> ModuleType:
    return load(BENCH / "compile_speed.py", "bench_compile_speed")


@pytest.mark.parametrize("layers", [1, 12])
def test_scaling_models_check_clean(tmp_path: Path, speed: ModuleType, layers: int) -> None:
    path = tmp_path / "deep.tl"
    path.write_text(speed.deep_model(layers))
    seconds, ok = speed.in_process_check(path)
    assert ok and seconds > 0


def test_scaling_files_have_the_asked_length(tmp_path: Path, speed: ModuleType) -> None:
    text = speed.many_models(100)
    assert 90 <= text.count("\n") <= 100
    path = tmp_path / "many.tl"
    path.write_text(text)
    assert speed.in_process_check(path)[1]


@pytest.mark.parametrize("attention", ["fused", "mha"])
def test_emitted_lm_is_the_handwritten_baseline(
    tmp_path: Path, lm: ModuleType, attention: str
) -> None:
    """The GPU suite compares two scripts that train the same function of the same weights;
    the default hand-written attention has the emitted one's parameters, names included."""
    script = tmp_path / "emitted_lm.py"
    tlc = Path(sys.executable).with_name("tlc")
    subprocess.run([str(tlc), "compile", str(BENCH / "programs" / "transformer_lm.tl"), "-o",
                    str(script), "--single-file"], check=True, capture_output=True)  # fmt: skip
    emitted = load(script, "bench_emitted_lm").TransformerLM().eval()
    cfg = lm.LMConfig(dropout=0.0, attention=attention)
    hand = lm.TransformerLM(cfg).eval()
    renamed = {}
    # nn.MultiheadAttention's packed q/k/v projection is the emitted SelfAttention's c_attn
    attention = {
        "in_proj_weight": "c_attn.weight",
        "in_proj_bias": "c_attn.bias",
        "out_proj.weight": "c_proj.weight",
        "out_proj.bias": "c_proj.bias",
    }
    for name, value in hand.state_dict().items():
        name = name.replace("token_emb.", "embed.").replace("pos_emb.", "pos.")
        for old, new in attention.items():
            name = name.replace(f"attention.{old}", f"attention.{new}")
        if name.startswith("blocks."):
            _, index, rest = name.split(".", 2)
            name = f"block{int(index) + 1}.{rest}"
        renamed[name] = value
    emitted.load_state_dict(renamed, strict=True)
    tokens = torch.randint(0, cfg.vocab, (2, cfg.seq_len))
    with torch.no_grad():
        assert torch.allclose(emitted(tokens), hand(tokens), atol=1e-5)
    # the same AdamW groups: what decays on one side decays on the other
    groups = load(script, "bench_emitted_lm_groups").decay_param_groups(emitted)
    hand_groups = lm.param_groups(hand)
    assert [len(g["params"]) for g in groups] == [len(g["params"]) for g in hand_groups]
    assert [g.get("weight_decay") for g in groups] == [g.get("weight_decay") for g in hand_groups]
    assert [p.shape for p in groups[1]["params"]] == [p.shape for p in hand_groups[1]["params"]]


def test_suite_reads_emitted_throughput_after_the_first_epoch(tmp_path: Path) -> None:
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite")
    metrics = tmp_path / "m.jsonl"
    rates = [10.0, 400.0, 500.0, 600.0]  # the first epoch pays for compilation
    metrics.write_text("".join(json.dumps({"epoch": i + 1, "samples_per_s": r}) + "\n"
                               for i, r in enumerate(rates)))  # fmt: skip
    lm_job = suite.Job("lm", "tensorloom", "bf16 eager", [], 1, metrics)
    result = suite.emitted_result(lm_job, {"peak_mem_bytes": 7, "wall_s": 3.0})
    assert result["tokens_per_s"] == 500.0 * 256
    assert result["ms_per_step"] == pytest.approx(1000.0 * 32 / 500.0)
    assert result["peak_mem_bytes"] == 7 and result["epochs_timed"] == 3
    mlp_job = suite.Job("mlp", "tensorloom", "TensorLoom defaults", [], 1, metrics)
    assert suite.emitted_result(mlp_job, {})["epoch_s"] == pytest.approx(60_000 / 500.0)


def test_suite_times_the_chosen_epochs_of_a_profiled_run(tmp_path: Path) -> None:
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite")
    metrics = tmp_path / "m.jsonl"
    rates = [10.0, 400.0, 500.0, 600.0, 50.0]  # the fifth epoch is profiled
    metrics.write_text("".join(json.dumps({"epoch": i + 1, "samples_per_s": r}) + "\n"
                               for i, r in enumerate(rates)))  # fmt: skip
    job = suite.Job("lm", "tensorloom", "bf16+compile(default)", [], 1, metrics,
                    {"timed_epochs": [2, 3, 4]})  # fmt: skip
    result = suite.emitted_result(job, {"profile": {"steps": 20}})
    assert result["epochs_timed"] == 3 and result["tokens_per_s"] == 500.0 * 256
    assert result["profile"] == {"steps": 20}


def test_run_emitted_compiles_the_model_alone_on_request() -> None:
    sys.path.insert(0, str(BENCH))
    run_emitted = load(BENCH / "run_emitted.py", "bench_run_emitted")

    class BatchLoss(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

    compiled: list[torch.nn.Module] = []

    def maybe_compile(model: torch.nn.Module, args: object, ctx: object) -> torch.nn.Module:
        compiled.append(model)
        return model

    script_globals = {"maybe_compile": maybe_compile, "BatchLoss": BatchLoss}
    run_emitted.with_model_only_compile(script_globals)
    net = torch.nn.Linear(2, 2)
    wrapped = script_globals["maybe_compile"](BatchLoss(net), None, None)
    assert isinstance(wrapped, BatchLoss) and wrapped.model is net and compiled == [net]
    assert script_globals["maybe_compile"](net, None, None) is net and compiled == [net, net]
    # the runtime's `ModelLoss(model, loss_fn)` keeps its loss around the compiled model
    from tensorloom.backends.runtime.trainer import ModelLoss as model_loss
    loss_globals = {"maybe_compile": maybe_compile, "ModelLoss": model_loss}
    run_emitted.with_model_only_compile(loss_globals)
    loss = torch.nn.functional.mse_loss
    rewrapped = loss_globals["maybe_compile"](model_loss(net, loss), None, None)
    assert isinstance(rewrapped, model_loss) and rewrapped.loss_fn is loss
    assert rewrapped.model is net


def test_run_emitted_reports_exit_code_and_peak(tmp_path: Path) -> None:
    script = tmp_path / "fake_emitted.py"
    script.write_text("import sys\nif __name__ == '__main__':\n    print(sys.argv[1:])\n"
                      "    sys.exit(3)\n")  # fmt: skip
    proc = subprocess.run([sys.executable, str(BENCH / "run_emitted.py"), str(script), "--x"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 3 and lines[0] == "['--x']"
    final = json.loads(lines[-1])
    assert final["exit_code"] == 3 and final["wall_s"] >= 0


def test_lsp_recheck_edits_and_times_an_example() -> None:
    recheck = load(BENCH / "lsp_recheck.py", "lsp_recheck")
    train = "train net on d:\n    epochs = {}\n"
    assert recheck.edited(train.format(10), 0) == train.format(5)
    assert recheck.edited("@model M:\n", 1) == "@model M:  // edit 1\n"
    walls, cpus, found = recheck.measure(ROOT / "examples" / "mnist.tl", 2)
    assert len(walls) == len(cpus) == 2 and all(w > 0 for w in walls)
    assert found == 1  # TL0411: `precision = fp16` on a CPU-only run


@pytest.fixture(scope="module")
def gpt2_train() -> ModuleType:
    sys.path.insert(0, str(HANDWRITTEN))  # gpt2_train imports gpt2 beside it
    return load(HANDWRITTEN / "gpt2_train.py", "bench_gpt2_train")


def test_gpt2_loop_draws_the_windows_of_the_emitted_loader(tmp_path: Path, gpt2_train) -> None:
    from tensorloom.backends.runtime.tokens import TokenStream, WindowLoader

    gpt2_train.write_stdlib_tokens(tmp_path, val_tokens=1000, max_bytes=50_000)
    stream = TokenStream(path=tmp_path / "train.bin")
    loader = WindowLoader(stream, block_size=16, batch_size=4, device=torch.device("cpu"),
                          windows_per_epoch=10, seed=3)  # fmt: skip
    for epoch in (0, 1):
        loader.set_epoch(epoch)
        starts = gpt2_train.window_starts(len(stream), 16, 4, 10, 3, epoch)
        assert torch.equal(loader.starts(), starts)
        x, y = gpt2_train.get_batch(tmp_path / "train.bin", starts[:4], 16, torch.device("cpu"))
        ex, ey = next(iter(loader))
        assert torch.equal(x, ex) and torch.equal(y, ey)


TINY_GPT2 = """
import gpt2.nml as GPT
let model = GPT(vocab_size=300, block_size=16, n_layer=2, n_head=2, n_embd=32)
let data = load_dataset("tokens", path="train.bin", block_size=16, vocab=300, windows_per_epoch=8)
train model on data:
    epochs = 2
    batch_size = 4
    optimizer = AdamW(lr=0.0006, betas=(0.9, 0.95), weight_decay=0.1)
    loss = CrossEntropy
    grad_clip = 1.0
    val_every = 2
"""


def test_the_benchmark_gpt2_is_the_example_gpt() -> None:
    """bench/programs/gpt2.nml is examples/gpt.nml (nanoGPT's initialisation written with
    the language's init keywords, tests/e2e/test_layer_init.py) but for its first line."""
    bench = (BENCH / "programs" / "gpt2.nml").read_text().splitlines()
    example = (ROOT / "examples" / "gpt.nml").read_text().splitlines()
    assert bench[1:] == example[1:] and 'init="normal"' in "\n".join(bench)


def test_emitted_gpt2_trains_as_the_handwritten_loop(tmp_path: Path, gpt2_train) -> None:
    """Same weights (the hand-written model's first weights, given to the emitted script
    with --init-from), same windows, fp32 on the CPU: the same losses, to rounding. The
    emitted AdamW's decay groups (`decay_groups`, on by default: no decay for biases and
    norm weights) are nanoGPT's (decay for 2-D tensors only)."""
    (tmp_path / "gpt2.nml").write_text((BENCH / "programs" / "gpt2.nml").read_text())
    (tmp_path / "tiny.tl").write_text(TINY_GPT2)
    script = tmp_path / "tiny.py"
    tlc = Path(sys.executable).with_name("tlc")
    subprocess.run([str(tlc), "compile", str(tmp_path / "tiny.tl"), "-o", str(script),
                    "--single-file"], check=True, capture_output=True)  # fmt: skip
    gpt2_train.write_stdlib_tokens(tmp_path, val_tokens=16 * 4 + 1, max_bytes=40_000)
    metrics = tmp_path / "m.jsonl"
    torch.manual_seed(0)  # as gpt2_train.py seeds before it builds its model
    first = gpt2_train.gpt2.GPT(vocab_size=300, block_size=16, n_layer=2, n_head=2, n_embd=32)
    torch.save({"model": first.state_dict()}, tmp_path / "first.pt")
    subprocess.run([sys.executable, str(script), "--device", "cpu", "--precision", "fp32",
                    "--seed", "0", "--data-root", str(tmp_path), "--metrics", str(metrics),
                    "--init-from", str(tmp_path / "first.pt"), "--checkpoint-dir",
                    str(tmp_path / "ckpt")],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    emitted = [json.loads(line)["train_loss"] for line in metrics.read_text().splitlines()]
    hand = run_json(HANDWRITTEN / "gpt2_train.py", "--data-dir", str(tmp_path), "--device",
                    "cpu", "--tiny", "--vocab", "300", "--compile", "none", "--precision",
                    "fp32", "--steps", "4", "--timed-from", "2", "--batch-size", "4",
                    "--block-size", "16", "--windows-per-epoch", "8")  # fmt: skip
    losses = hand["losses"]
    assert isinstance(losses, list)
    means = [sum(losses[0:2]) / 2, sum(losses[2:4]) / 2]
    assert emitted == pytest.approx(means, abs=1e-5)
    assert means[1] < means[0]
    # the decayed parameters are nanoGPT's: the 2-D ones
    script_globals = runpy.run_path(str(script), run_name="tiny_gpt2")
    model = script_globals["GPT"]()
    groups = script_globals["decay_param_groups"](model, True)
    hand_groups = gpt2_train.gpt2.configure_optimizer(model).param_groups
    assert [{id(p) for p in g["params"]} for g in groups] == [
        {id(p) for p in g["params"]} for g in hand_groups
    ]


def test_report_gpt2_rows(tmp_path: Path, report: ModuleType) -> None:
    hand = {
        "bench": "gpt2",
        "impl": "handwritten",
        "setting": "bf16+compile(default)",
        "tokens_per_s": 400_000.0,
        "ms_per_step": 40.96,
        "losses": [3.0] * 200,
    }
    tl = {
        "bench": "gpt2",
        "impl": "tensorloom",
        "setting": "TensorLoom defaults",
        "tokens_per_s": 440_000.0,
        "ms_per_step": 37.2,
        "train_losses": [3.01] * 8,
    }
    env = {"kind": "env", "matmul_tflops": 800.0}
    text = report.render([env, hand, tl])
    row = table_rows(text, "TensorLoom defaults")[0]
    flops = report.GPT2_FLOPS_PER_TOKEN
    assert row[5] == f"{100 * flops * 440_000 / 989e12:.1f}%"
    assert row[6] == f"{100 * flops * 440_000 / 800e12:.1f}%"
    assert row[7:] == ["1.10x", "0.0100"]


def test_suite_lm_rows_compare_equal_settings_and_repeat_the_compiled_pairs(
    tmp_path: Path,
) -> None:
    """Both sides compile the model with its loss (the emitted `BatchLoss`); `--repeat 2`
    interleaves the host-bound compile(default) pairs, each run reading its own metrics."""
    sys.path.insert(0, str(BENCH))
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite_repeat")
    generated = tmp_path / "generated"
    generated.mkdir()
    variants = [{"bench": "lm", "name": f"lm_{i}", "setting": s, "script": f"lm_{i}.py"}
                for i, s in enumerate(["bf16 eager", "bf16+compile(default)"])]  # fmt: skip
    (generated / "manifest.json").write_text(json.dumps({"compiler": "x", "variants": variants}))
    plan = suite.Plan(generated, tmp_path, tmp_path, smoke=False, repeat=2)
    everything = suite.all_jobs(plan)
    jobs = [j for j in everything if j.bench == "lm" and j.impl != "lightning"]
    labels = [f"{j.bench}/{j.impl}/{j.setting}/{j.extra.get('repeat')}" for j in everything]
    compiled = "bf16+compile(default)"
    assert labels[:9] == [
        "lm/handwritten/bf16 eager/0", "lm/tensorloom/bf16 eager/0",
        f"lm/handwritten/{compiled}/0", f"lm/tensorloom/{compiled}/0",
        "lm/tensorloom/TensorLoom defaults/None",  # not compiled here: skipped
        "mlp/handwritten/DataLoader loop, fp32/None", "mlp/tensorloom/TensorLoom defaults/None",
        f"lm/handwritten/{compiled}/1", f"lm/tensorloom/{compiled}/1",
    ]  # fmt: skip
    by_label = {f"{j.impl}/{j.setting}": j for j in jobs}
    assert "--compile-loss" in by_label[f"handwritten/{compiled}"].argv
    assert "--compile-loss" not in by_label["handwritten/bf16 eager"].argv
    model_only = by_label[f"handwritten/{suite.LM_MODEL_ONLY}"].argv
    assert "--compile-loss" not in model_only and "default" in model_only
    assert "--model-only-compile" in by_label[f"tensorloom/{suite.LM_MODEL_ONLY}"].argv
    mha = by_label[f"handwritten/{suite.LM_MHA}"].argv
    assert mha[mha.index("--attention") + 1] == "mha" and "--attention" not in model_only
    metrics = [j.metrics for j in jobs if j.metrics is not None]
    assert len(metrics) == len(set(metrics))
