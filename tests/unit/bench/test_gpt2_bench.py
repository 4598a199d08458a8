"""Issue 18's GPU measurements, checked on the CPU at tiny sizes: the kernel-time breakdown
of a profiled step, the matmul/attention floor of a step, and the GPU suite's GPT-2 rows
(every row's flags are flags of nanoGPT's loop, bench/handwritten/gpt2_train.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
HANDWRITTEN = BENCH / "handwritten"


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def step_profile() -> ModuleType:
    return load(HANDWRITTEN / "step_profile.py", "bench_step_profile_gpt2")


@pytest.fixture(scope="module")
def gpt2_train() -> ModuleType:
    sys.path.insert(0, str(HANDWRITTEN))  # gpt2_train imports gpt2 and step_profile beside it
    return load(HANDWRITTEN / "gpt2_train.py", "bench_gpt2_train_s4")


@pytest.mark.parametrize(
    ("kernel", "category"),
    [
        ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT", "matmul"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "matmul"),
        ("triton_tem_fused_addmm_gelu_3", "matmul"),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3", "attention"),
        ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "attention"),
        ("void at::native::(anonymous)::multi_tensor_apply_kernel<FusedAdamMathFunctor>",
         "optimizer"),
        ("triton_per_fused__log_softmax_nll_loss_forward_12", "triton (inductor's fused "
         "elementwise and reductions)"),
        ("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add>", "aten "
         "elementwise/reduction"),
        ("Memcpy HtoD (Pinned -> Device)", "memcpy/memset"),
        ("some_library_kernel", "other"),
    ],
)  # fmt: skip
def test_kernels_are_sorted_by_what_their_names_say(
    step_profile: ModuleType, kernel: str, category: str
) -> None:
    assert step_profile.kernel_category(kernel) == category


def test_kernel_breakdown_sums_per_step(step_profile: ModuleType) -> None:
    kernels = [("nvjet_a", 20, 30_000.0), ("triton_poi_fused_add_0", 40, 8_000.0),
               ("cudnn_generated_fort_native_sdpa_fprop", 10, 2_000.0)]  # fmt: skip
    out = step_profile.kernel_breakdown(kernels, steps=10, top=2)
    assert out["gpu_kernel_ms_per_step"] == pytest.approx(4.0)
    by = out["ms_per_step_by_category"]
    assert next(iter(by)) == "matmul" and by["matmul"] == pytest.approx(3.0)
    assert by["attention"] == pytest.approx(0.2)
    assert [k["kernel"] for k in out["top_kernels"]] == ["nvjet_a", "triton_poi_fused_add_0"]
    assert out["top_kernels"][0]["calls_per_step"] == 2


def test_gpt2_loop_profiles_the_steps_after_its_timing(
    tmp_path: Path, gpt2_train: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    gpt2_train.write_stdlib_tokens(tmp_path, val_tokens=100, max_bytes=20_000)
    args = ["--data-dir", str(tmp_path), "--device", "cpu", "--tiny", "--vocab", "300",
            "--compile", "none", "--precision", "fp32", "--steps", "3", "--timed-from", "1",
            "--batch-size", "2", "--block-size", "8", "--windows-per-epoch", "4",
            "--profile-steps", "2"]  # fmt: skip
    assert gpt2_train.main(args) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(result["losses"]) == 3  # the profiled steps are not the timed run's
    profile = result["profile"]
    assert profile["steps"] == 2 and profile["wall_ms_per_step"] > 0
    assert "ms_per_step_by_category" in profile


def test_every_gpt2_row_is_a_flag_set_of_the_loop(gpt2_train: ModuleType) -> None:
    sys.path.insert(0, str(BENCH))
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite_gpt2")
    for setting, flags in suite.GPT2_SETTINGS.items():
        args = gpt2_train.parse_args([*flags, "--data-dir", "d"])
        assert args.model in gpt2_train.MODELS, setting
    assert set(suite.GPT2_TIMEOUT_S) <= set(suite.GPT2_SETTINGS)
    batch32 = gpt2_train.parse_args([*suite.GPT2_SETTINGS["batch: compile(default), B=32"],
                                     "--data-dir", "d"])  # fmt: skip
    assert batch32.batch_size == 32 and batch32.compile == "default"


def test_ceiling_counts_every_matmul_of_a_step(tmp_path: Path) -> None:
    ceiling = load(BENCH / "gpt2_ceiling.py", "bench_gpt2_ceiling")
    assert [(k, n, c) for _, k, n, c in ceiling.linears(12, 768, 50257)] == [
        (768, 2304, 12), (768, 768, 12), (768, 3072, 12), (3072, 768, 12), (768, 50257, 1)]
    out = tmp_path / "ceiling.json"
    args = ["--device", "cpu", "--batch-size", "2", "--block-size", "8", "--n-layer", "2",
            "--n-head", "2", "--n-embd", "16", "--vocab", "40", "--repeats", "1",
            "--warmup", "0", "--out", str(out)]  # fmt: skip
    assert ceiling.main(args) == 0
    result = json.loads(out.read_text())
    rows = result["matmuls"]
    assert len(rows) == 15 and {r["m_n_k"][0] for r in rows} == {16}
    assert [r["count"] for r in rows] == [2] * 12 + [1] * 3
    assert result["matmul_ms_per_step"] == pytest.approx(sum(r["ms_per_step"] for r in rows))
    assert result["floor_ms_per_step"] == pytest.approx(
        result["matmul_ms_per_step"] + 2 * result["attention_ms_per_layer"])


def test_the_emitted_max_autotune_row_follows_the_handwritten_one() -> None:
    sys.path.insert(0, str(BENCH))
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite_order")
    prepare = load(BENCH / "prepare_gpu.py", "bench_prepare_gpu_order")
    assert "bf16+compile(max-autotune)" in {v.setting for v in prepare.variants()}
    generated = Path("/nonexistent-generated")  # no manifest: the emitted rows are "skipped"
    plan = suite.Plan(generated, generated, generated, smoke=False)
    labels = [f"{j.impl}/{j.setting}" for j in suite.all_jobs(plan) if j.bench == "gpt2"]
    hand = labels.index("handwritten/candidate: compile(max-autotune-no-cudagraphs)")
    assert labels[hand + 1] == "tensorloom/bf16+compile(max-autotune)"
    assert labels[:5] == ["handwritten/bf16 eager", "tensorloom/bf16 eager",
                          "handwritten/bf16+compile(default)", "tensorloom/bf16+compile(default)",
                          "tensorloom/TensorLoom defaults"]  # fmt: skip


def test_cut_cross_entropy_row_calls_the_library_as_nanogpt_computes_its_loss(
    gpt2_train: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's kernels need a GPU; a stand-in with its signature (flat [N, D] inputs,
    [V, D] classifier, [N] targets, `filter_eps`) checks what the candidate hands it: the
    same loss and gradients as nanoGPT's head + cross-entropy, exact (no filtering)."""
    import types

    import torch
    import torch.nn.functional as F

    calls: list[dict[str, object]] = []

    def linear_cross_entropy(e: torch.Tensor, c: torch.Tensor, targets: torch.Tensor,
                             filter_eps: object = "auto") -> torch.Tensor:  # fmt: skip
        calls.append({"e": tuple(e.shape), "c": tuple(c.shape), "t": tuple(targets.shape),
                      "filter_eps": filter_eps, "dtypes": {e.dtype, c.dtype}})  # fmt: skip
        return F.cross_entropy(e @ c.t(), targets)

    fake = types.ModuleType("cut_cross_entropy")
    fake.linear_cross_entropy = linear_cross_entropy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cut_cross_entropy", fake)
    gpt2 = gpt2_train.gpt2
    size = {"vocab_size": 50, "block_size": 8, "n_layer": 2, "n_head": 2, "n_embd": 16}
    torch.manual_seed(0)
    cce = gpt2.CutCrossEntropyGPT(**size)
    ref = gpt2.GPT(**size)
    ref.load_state_dict(cce.state_dict())
    x, y = torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 8))
    ours, theirs = cce(x, y), ref(x, y)
    ours.backward()
    theirs.backward()
    assert calls == [{"e": (16, 16), "c": (50, 16), "t": (16,), "filter_eps": None,
                      "dtypes": {torch.float32}}]  # fmt: skip
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-6)
    for a, b in zip(cce.parameters(), ref.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        assert torch.allclose(a.grad, b.grad, atol=1e-6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        calls.clear()
        cce(x, y)
    assert calls[0]["dtypes"] == {torch.bfloat16}  # the autocast dtype, both operands


def test_gpu_annotations_are_not_counted_as_kernels(step_profile: ModuleType) -> None:
    """Run 9's profile counted `Optimizer.step#AdamW.step` (1.13 ms a step), a host range
    shown on the GPU's timeline over the optimizer's kernels, as a kernel of its own."""
    import types

    import torch

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU

    def event(key: str, device: object, us: float) -> object:
        return types.SimpleNamespace(key=key, device_type=device, count=10,
                                     self_device_time_total=us)  # fmt: skip

    events = [event("Optimizer.step#AdamW.step", cpu, 0.0),
              event("Optimizer.step#AdamW.step", cuda, 11_300.0),
              event("multi_tensor_apply_kernel<FusedAdamMathFunctor>", cuda, 10_100.0),
              event("aten::mm", cpu, 0.0), event("nvjet_sm90_tst_256x128", cuda, 52_000.0)]
    kernels = step_profile.gpu_kernels(events)
    assert [k[0] for k in kernels] == ["multi_tensor_apply_kernel<FusedAdamMathFunctor>",
                                       "nvjet_sm90_tst_256x128"]  # fmt: skip


def test_the_token_files_are_written_for_any_selected_gpt2_row() -> None:
    """Run 9's second call selected GPT-2 rows by words without "gpt2" ("Cut Cross",
    "B=32") and got no token files: the choice now looks at the selected jobs."""
    sys.path.insert(0, str(BENCH))
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite_tokens")
    nowhere = Path("/nonexistent-generated")
    plan = suite.Plan(nowhere, nowhere, nowhere, smoke=False)
    assert suite.needs_tokens(plan, ["Cut Cross", "B=32"], [])
    assert suite.needs_tokens(plan, [], [])
    assert not suite.needs_tokens(plan, ["lm/"], [])
    assert not suite.needs_tokens(plan, [], ["gpt2"])


def test_fp8_modules_pick_the_linears_torchao_converts(gpt2_train: ModuleType) -> None:
    """`--fp8-modules`: which linears of the model `--fp8` hands to torchao (by name, and
    only those whose sizes divide by 16, as FP8 matmuls need)."""
    import torch

    args = gpt2_train.parse_args(["--data-dir", "d", "--tiny", "--model", "linear-head"])
    model = gpt2_train.MODELS[args.model](vocab_size=args.vocab, block_size=8, n_layer=2,
                                          n_head=2, n_embd=32)  # fmt: skip
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]

    def picked(modules: str) -> list[str]:
        keep = gpt2_train.fp8_filter(modules)
        return [name for name, module in linears if keep(module, name)]

    blocks = [f"h.{i}.{layer}" for i in range(2)
              for layer in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")]  # fmt: skip
    assert picked("all") == [*blocks, "lm_head"]  # 50,304 rows: divisible by 16
    assert picked("blocks") == blocks
    assert picked("mlp") == [b for b in blocks if ".mlp." in b]
    assert picked("head") == ["lm_head"]
    odd = torch.nn.Linear(32, 50257, bias=False)  # the unpadded vocabulary: left in bf16
    assert not gpt2_train.fp8_filter("all")(odd, "lm_head")


def test_every_fp8_row_follows_its_bf16_reference() -> None:
    sys.path.insert(0, str(BENCH))
    suite = load(BENCH / "gpu_suite.py", "bench_gpu_suite_fp8")
    plan = suite.Plan(Path("/nonexistent"), Path("/nonexistent"), Path("/nonexistent"), False)
    fp8 = [j for j in suite.all_jobs(plan) if suite.selected(j, ["FP8"])]
    assert fp8[0].setting.startswith("FP8 reference") and "--fp8" not in fp8[0].argv
    assert all("--fp8" in j.argv for j in fp8[1:] if j.impl == "handwritten")
    assert fp8[-1].impl == "tensorloom" and fp8[-1].setting == suite.GPT2_EMITTED_FP8
