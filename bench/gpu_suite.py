"""The GPU benchmark suite: emitted TensorLoom scripts against hand-written PyTorch and Lightning.

One command on the GPU machine, after `python bench/prepare_gpu.py` compiled the
emitted scripts here (the GPU machine has no xDSL):

    python bench/gpu_suite.py --out $OUT/bench.jsonl

It runs, one process each and within `--budget-s` seconds in all (default 530),
the causal transformer LM with learned positions (6 blocks, d=512, 8 heads, T=256,
B=32) as hand-written PyTorch, as TensorLoom's emitted script and under Lightning,
at fp32 eager, bf16 eager, bf16 + torch.compile (default) and bf16 + compile
(reduce-overhead), plus the emitted script at TensorLoom's default settings; then
the MNIST-sized MLP as a hand-written DataLoader loop, as the emitted script and
under Lightning; then GPT-2 124M (B=16, T=1024) as nanoGPT's loop
(bench/handwritten/gpt2_train.py) and as the emitted script of
bench/programs/gpt2.tl, at bf16 eager, bf16 + compile and TensorLoom's defaults,
with the candidate speed-ups measured on the hand-written model. Every
result is one JSON line in the output file (a run that failed or did not fit in
the budget is a line with `error` or `skipped`); the markdown tables of
`bench/report.py` are printed at the end.

Both sides of an LM compile row compile the model with its loss (the emitted `BatchLoss`,
`transformer_lm.py --compile-loss`); those steps are bound by the host, whose speed varies
between processes, so `--repeat N` runs the compile(default) pairs N times, interleaved (the
rounds after the first come after the MLP rows), and the report gives the ratio of medians.

Throughput of an emitted script: the median `samples_per_s` of its epoch
records after the first (which pays for compilation). Hand-written and
Lightning scripts time steps after a warm-up themselves. The first line of the
output records the versions and a dense bf16 matmul's TFLOP/s measured in the
same run (the GPT-2 rows' MFU is against it and against 989 TFLOP/s).

GPT-2's data is nanoGPT's format (train.bin / val.bin), written here from the
Python standard library's source, one token per byte (bench/handwritten/gpt2_train.py):
both sides read the same files and draw the same windows, from the same weights.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
HANDWRITTEN = BENCH / "handwritten"
sys.path.insert(0, str(BENCH))

import report  # noqa: E402
from handwritten.mnist_idx import write_synthetic  # noqa: E402

LM_BATCH = 32
LM_SEQ_LEN = 256
SHAPES = {"lm": (LM_BATCH, LM_SEQ_LEN), "gpt2": (16, 1024)}  # (batch, tokens per sample)
GPT2_EPOCHS = 8  # 25 steps each (400 windows): the 200 steps of the loss check
MLP_SAMPLES = 60_000
LM_SETTINGS = {  # report label -> (precision, torch.compile mode)
    "fp32 eager": ("fp32", "none"),
    "bf16 eager": ("bf16", "none"),
    "bf16+compile(default)": ("bf16", "default"),
    "bf16+compile(reduce-overhead)": ("bf16", "reduce-overhead"),
}
# GPT-2 on the hand-written model: the reference settings, then candidate speed-ups
# (report label -> gpt2_train.py flags), in priority order: if the budget runs out, the
# last are skipped. Each is measured; only measurements decide. The candidates that need
# no loss check run 125 steps (100 timed), the others nanoGPT's 200.
SHORT = ["--steps", "125"]
GPT2_PROFILE = ["--profile-steps", "10"]  # after the timed steps: GPU time by kernel kind
GPT2_SETTINGS = {
    "bf16 eager": ["--compile", "none"],
    "bf16+compile(default)": ["--compile", "default", *GPT2_PROFILE],
    "bf16+compile(reduce-overhead)": ["--compile", "reduce-overhead"],
    "candidate: compile(max-autotune-no-cudagraphs)": [
        "--compile", "max-autotune-no-cudagraphs", *SHORT, *GPT2_PROFILE],
    "candidate: compile(default), Cut Cross-Entropy (exact, no gradient filtering)": [
        "--compile", "default", "--model", "cce"],
    "candidate: compile(default), compiled clip + optimizer step": [
        "--compile", "default", "--compile-optimizer", *SHORT],
    "batch: compile(default), B=32": ["--compile", "default", "--batch-size", "32", *SHORT],
    "batch: compile(default), B=8": ["--compile", "default", "--batch-size", "8", *SHORT],
    "bf16+compile(default), again (run-to-run spread)": ["--compile", "default", *SHORT],
    # FP8 (torchao's float8 training; run 11): the bf16 reference of the same call first
    "FP8 reference: bf16+compile(default), unprofiled": ["--compile", "default"],
    "candidate: compile(default), FP8 head only (torchao, tensorwise; padded vocab)": [
        "--compile", "default", "--fp8", "tensorwise", "--model", "linear-head",
        "--fp8-modules", "head"],
    "candidate: compile(default), FP8 linears (torchao, tensorwise)": [
        "--compile", "default", "--fp8", "tensorwise"],
    "candidate: compile(default), FP8 linears (torchao, rowwise)": [
        "--compile", "default", "--fp8", "rowwise"],
    "candidate: compile(default), FP8 MLP linears only (torchao, tensorwise)": [
        "--compile", "default", "--fp8", "tensorwise", "--fp8-modules", "mlp"],
    "candidate: compile(default), FP8 linears and head (torchao, rowwise; padded vocab)": [
        "--compile", "default", "--fp8", "rowwise", "--model", "linear-head"],
    "candidate: compile(default), FP8 linears and head (torchao, tensorwise; padded vocab)": [
        "--compile", "default", "--fp8", "tensorwise", "--model", "linear-head"],
    "candidate: compile(default), cuDNN attention": ["--compile", "default", "--sdpa", "cudnn",
                                                      *SHORT],
    "candidate: compile(default), whole step in one CUDA graph": [
        "--compile", "default", "--whole-step-graph", *SHORT],
    "candidate: eager, chunked linear+CE": ["--compile", "none", "--model", "chunked", *SHORT],
    "candidate: compile(default), padded vocab 50304": ["--compile", "default", "--model",
                                                        "padded", *SHORT],
    "candidate: compile(default), chunked linear+CE": ["--compile", "default", "--model",
                                                       "chunked", *SHORT],
}  # fmt: skip
# max-autotune benchmarks every matmul's candidate kernels while it compiles: minutes
GPT2_TIMEOUT_S = {"candidate: compile(max-autotune-no-cudagraphs)": 300}
# the emitted script of a setting, measured right after the hand-written row named here
# (max-autotune: so that it can reuse the autotuning results the hand-written row cached)
GPT2_EMITTED_AFTER = {
    "candidate: compile(max-autotune-no-cudagraphs)": "bf16+compile(max-autotune)",
}
# the emitted compile(default) script with its linears in FP8 (`run_emitted.py --fp8`),
# after every hand-written row
GPT2_EMITTED_FP8 = "bf16+compile(default), FP8 linears (torchao, tensorwise; run_emitted.py --fp8)"
# The LM's diagnosis of torch.compile's default mode (host-bound steps): the
# compile(default) rows are profiled (bench/handwritten/step_profile.py). Both sides compile
# the model and the loss together (the emitted `BatchLoss`; transformer_lm.py --compile-loss);
# a row per side moves the loss out of the compiled graph.
LM_PROFILE_STEPS = 20
LM_MODEL_ONLY = "bf16+compile(default), the model compiled alone (the loss outside)"
# runs 1-10's hand-written baseline: nn.MultiheadAttention (the hand-written side only)
LM_MHA = "bf16 eager, nn.MultiheadAttention"
# compile(default)'s steps are bound by the host, whose speed varies between processes by
# more than the target band: `--repeat N` runs these pairs N times, interleaved
REPEATED = ("bf16+compile(default)",)
# benchmarks whose "TensorLoom defaults" row passes `--compile on` (see emitted_job)
COMPILED_DEFAULTS = ("lm", "gpt2")


_JOB_IDS = itertools.count()


@dataclass
class Job:
    bench: str  # "lm", "mlp" or "gpt2"
    impl: str  # "handwritten", "tensorloom" or "lightning"
    setting: str
    argv: list[str]
    timeout_s: float
    metrics: Path | None = None  # set for emitted scripts: their --metrics file
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class Plan:
    """What the jobs need: sizes, where the emitted scripts and the MNIST files are."""

    generated: Path
    data_root: Path
    work: Path
    smoke: bool
    profile: bool = True  # the LM's compile(default) rows profiled (not in the smoke run)
    matmul_probe: bool = True  # the dense bf16 matmul measured first (the GPT-2 MFU's)
    repeat: int = 1  # runs of each REPEATED pair, interleaved


def python(script: Path, *args: str) -> list[str]:
    return [sys.executable, str(script), *args]


def lm_size_args(plan: Plan) -> list[str]:
    if plan.smoke:
        tiny = "--batch-size 2 --seq-len 16 --d-model 32 --heads 4 --layers 2 --vocab 64"
        return ["--device", "cpu", *tiny.split(), "--warmup", "1", "--steps", "2"]
    return ["--device", "cuda", "--warmup", "30", "--steps", "200"]


def mlp_size_args(plan: Plan) -> list[str]:
    device = "cpu" if plan.smoke else "cuda"
    samples = "512" if plan.smoke else str(MLP_SAMPLES)
    epochs = "2" if plan.smoke else "5"
    return ["--device", device, "--samples", samples, "--epochs", epochs,
            "--data-root", str(plan.data_root)]  # fmt: skip


def handwritten_lm_jobs(plan: Plan, impl: str, settings: list[str]) -> list[Job]:
    script = HANDWRITTEN / ("transformer_lm.py" if impl == "handwritten" else "lightning_lm.py")
    jobs: list[Job] = []
    for setting in settings:
        flags: list[str] = []
        setting_of = {LM_MODEL_ONLY: "bf16+compile(default)", LM_MHA: "bf16 eager"}.get(
            setting, setting)  # fmt: skip
        precision, mode = LM_SETTINGS[setting_of]
        if impl == "handwritten" and mode != "none" and setting != LM_MODEL_ONLY:
            flags += ["--compile-loss"]  # what the emitted BatchLoss compiles: equal settings
        if setting == LM_MHA:
            flags += ["--attention", "mha"]
        if impl == "handwritten" and setting_of == "bf16+compile(default)" and plan.profile:
            flags += ["--profile-steps", str(LM_PROFILE_STEPS)]
        argv = python(script, "--precision", precision, "--compile", mode, *flags,
                      *lm_size_args(plan))  # fmt: skip
        jobs.append(Job("lm", impl, setting, argv, timeout_s=150))
    return jobs


def gpt2_jobs(plan: Plan, settings: list[str]) -> list[Job]:
    script = HANDWRITTEN / "gpt2_train.py"
    data = ["--data-dir", str(plan.data_root / "gpt2_tokens")]
    return [Job("gpt2", "handwritten", s, python(script, *GPT2_SETTINGS[s], *data),
                GPT2_TIMEOUT_S.get(s, 240)) for s in settings]  # fmt: skip


def emitted_job(
    plan: Plan, variant: dict[str, Any], epochs: int, setting: str | None = None
) -> Job:
    # one file per job: the script appends, and a repeated row must read its own epochs
    metrics = plan.work / f"{variant['name']}_{next(_JOB_IDS)}.metrics.jsonl"
    init: list[str] = []  # run_emitted.py's options
    extra: dict[str, Any] = {"script": variant["script"]}
    if setting == LM_MODEL_ONLY:
        init += ["--model-only-compile"]
    elif setting == GPT2_EMITTED_FP8:
        init += ["--fp8", "tensorwise"]
    elif (
        variant["setting"] == "bf16+compile(default)" and variant["bench"] == "lm" and plan.profile
    ):
        # the fifth epoch is profiled; epochs 2-4 are timed
        init += ["--profile-steps", str(LM_PROFILE_STEPS)]
        epochs, extra["timed_epochs"] = 5, [2, 3, 4]
    # GPT-2's 1.5 GB checkpoint is not what these rows measure: saved only by the others
    folder = [] if init else ["--checkpoint-dir", str(plan.work / f"ckpt_{variant['name']}")]
    argv = python(BENCH / "run_emitted.py", *init, str(plan.generated / variant["script"]),
                  "--epochs", str(epochs), "--metrics", str(metrics), "--seed", "0", *folder,
                  "--data-root", str(plan.data_root),
                  "--device", "cpu" if plan.smoke else "cuda")  # fmt: skip
    if plan.smoke:
        argv += ["--max-steps", "4", "--batch-size", "2" if variant["bench"] == "lm" else "128"]
    if variant["setting"] == "TensorLoom defaults" and variant["bench"] in COMPILED_DEFAULTS:
        # `compile = auto` compiles a run whose steps repay the compile: a real LM run, not
        # these few hundred steps (for them it picks eager, as it should). These rows measure
        # the steps of a run long enough: the defaults with compilation on.
        argv += ["--compile", "on"]
        extra["compile"] = "on (--compile on: auto chooses it for runs long enough to repay it)"
    timeout = 300 if variant["bench"] == "gpt2" else 180
    return Job(variant["bench"], "tensorloom", setting or variant["setting"], argv, timeout,
               metrics, extra)  # fmt: skip


def manifest(plan: Plan) -> dict[str, Any]:
    path = plan.generated / "manifest.json"
    if not path.is_file():
        return {"compiler": None, "variants": []}
    return json.loads(path.read_text())


def emitted_jobs(plan: Plan, bench: str, settings: list[str]) -> list[Job]:
    found = {v["setting"]: v for v in manifest(plan)["variants"] if v["bench"] == bench}
    epochs = {"lm": 4, "mlp": 5, "gpt2": GPT2_EPOCHS}[bench]
    jobs: list[Job] = []
    for setting in settings:
        if setting in (LM_MODEL_ONLY, GPT2_EMITTED_FP8):  # the compile(default) script
            variant = found.get("bf16+compile(default)")
            if variant is not None and "error" not in variant:
                jobs.append(emitted_job(plan, variant, epochs, setting))
                continue
        else:
            variant = found.get(setting)
        if variant is None or "error" in variant:
            reason = "not compiled" if variant is None else str(variant["error"]).splitlines()[0]
            jobs.append(Job(bench, "tensorloom", setting, [], 0, extra={"skipped": reason}))
            continue
        jobs.append(emitted_job(plan, variant, epochs))
    return jobs


def lm_pair(plan: Plan, setting: str, repeat: int) -> list[Job]:
    """The hand-written LM and the emitted script at one setting, marked with their round."""
    pair = handwritten_lm_jobs(plan, "handwritten", [setting]) + emitted_jobs(plan, "lm", [setting])
    for job in pair:
        job.extra["repeat"] = repeat
    return pair


def all_jobs(plan: Plan) -> list[Job]:
    """In priority order: if the budget runs out, the last ones are skipped."""
    # torch.compile on the CPU takes minutes: the smoke run keeps to eager settings.
    first = ["fp32 eager", "bf16 eager"] if plan.smoke else ["bf16 eager", "bf16+compile(default)"]
    later = [] if plan.smoke else ["bf16+compile(reduce-overhead)", "fp32 eager"]
    jobs: list[Job] = []
    for setting in first:
        jobs += lm_pair(plan, setting, 0)
    jobs += emitted_jobs(plan, "lm", ["TensorLoom defaults"])
    mlp = mlp_size_args(plan)
    jobs.append(Job("mlp", "handwritten", "DataLoader loop, fp32",
                    python(HANDWRITTEN / "mlp_dataloader.py", *mlp), 120))  # fmt: skip
    jobs += emitted_jobs(plan, "mlp", ["TensorLoom defaults"])
    for repeat in range(1, plan.repeat):  # after the MLP rows: the budget skips them first
        for setting in (s for s in first if s in REPEATED):
            jobs += lm_pair(plan, setting, repeat)
    for setting in later:
        jobs += handwritten_lm_jobs(plan, "handwritten", [setting])
        jobs += emitted_jobs(plan, "lm", [setting])
    jobs += emitted_jobs(plan, "lm", ["TensorLoom defaults, precision = bf16"])
    jobs += handwritten_lm_jobs(plan, "lightning", ["bf16 eager", "fp32 eager"])
    jobs.append(Job("mlp", "lightning", "Lightning Trainer, fp32",
                    python(HANDWRITTEN / "lightning_mlp.py", *mlp), 150))  # fmt: skip
    jobs += handwritten_lm_jobs(plan, "handwritten", [LM_MHA])
    if not plan.smoke:
        jobs += handwritten_lm_jobs(plan, "lightning", ["bf16+compile(default)"])
        jobs += handwritten_lm_jobs(plan, "handwritten", [LM_MODEL_ONLY])
        jobs += emitted_jobs(plan, "lm", [LM_MODEL_ONLY])
        # GPT-2 124M needs the GPU: not in the smoke run
        for setting in ("bf16 eager", "bf16+compile(default)"):
            jobs += gpt2_jobs(plan, [setting])
            jobs += emitted_jobs(plan, "gpt2", [setting])
        jobs += emitted_jobs(plan, "gpt2", ["TensorLoom defaults"])
        for setting in GPT2_SETTINGS:  # their order is their priority: the budget may skip the last
            if setting not in ("bf16 eager", "bf16+compile(default)"):
                jobs += gpt2_jobs(plan, [setting])
                if setting in GPT2_EMITTED_AFTER:
                    jobs += emitted_jobs(plan, "gpt2", [GPT2_EMITTED_AFTER[setting]])
        jobs += emitted_jobs(plan, "gpt2", [GPT2_EMITTED_FP8])
    return jobs


# ---- running one job -------------------------------------------------------------------


def last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def emitted_result(job: Job, runner: dict[str, Any]) -> dict[str, Any]:
    """Throughput from the epoch records after the first (compilation is in the first)."""
    assert job.metrics is not None
    records = read_metrics(job.metrics)
    timed = job.extra.get("timed_epochs")
    chosen = [r for r in records if r["epoch"] in timed] if timed else records[1:]
    steady = [r["samples_per_s"] for r in chosen] or [r["samples_per_s"] for r in records]
    if not steady:
        return {"error": "the script wrote no epoch records"}
    sps = statistics.median(steady)
    result: dict[str, Any] = {
        "samples_per_s": sps, "epochs_timed": len(steady),
        "epoch_records": records, "peak_mem_bytes": runner.get("peak_mem_bytes"),
        "wall_s": runner.get("wall_s"), "profile": runner.get("profile"),
    }  # fmt: skip
    if job.bench in SHAPES:
        batch, tokens = SHAPES[job.bench]
        result["tokens_per_s"] = sps * tokens
        result["ms_per_step"] = 1000.0 * batch / sps
        result["train_losses"] = [r.get("train_loss") for r in records]
    else:
        result["epoch_s"] = MLP_SAMPLES / sps
    return result


def run_job(job: Job, timeout_s: float, env: dict[str, str]) -> dict[str, Any]:
    head: dict[str, Any] = {"bench": job.bench, "impl": job.impl, "setting": job.setting}
    head.update({k: v for k, v in job.extra.items() if k != "skipped"})
    if "skipped" in job.extra:
        return {**head, "skipped": job.extra["skipped"]}
    start = time.perf_counter()
    try:
        proc = subprocess.run(job.argv, capture_output=True, text=True, timeout=timeout_s,
                              env=env, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {**head, "error": f"timed out after {timeout_s:.0f} s"}
    head["process_s"] = time.perf_counter() - start
    found = last_json(proc.stdout)
    if proc.returncode != 0 or found is None:
        tail = (proc.stderr or proc.stdout)[-1500:]
        return {**head, "error": f"exit code {proc.returncode}: {tail}"}
    if job.metrics is None:
        return {**head, **found}
    return {**head, **emitted_result(job, found)}


MATMUL_PROBE = """
import json, statistics, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(5):
    a @ b
times = []
for _ in range(20):
    torch.cuda.synchronize(); start = time.perf_counter(); a @ b; torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
print(json.dumps({"matmul_tflops": 2 * 8192**3 / statistics.median(times) / 1e12}))
"""


def matmul_tflops() -> dict[str, Any]:
    """A dense 8192^3 bf16 matmul's TFLOP/s on this GPU (the median of 20), this run."""
    proc = subprocess.run([sys.executable, "-c", MATMUL_PROBE], capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip
    return last_json(proc.stdout) or {"matmul_error": proc.stderr[-300:]}


def versions(compiler: str | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "kind": "env", "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "host": platform.node(), "compiler": compiler,
    }  # fmt: skip
    probe = (
        "import json, torch\n"
        "out = {'torch': torch.__version__, 'cuda': torch.version.cuda,\n"
        "       'device': torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}\n"
        "for m in ('triton', 'lightning', 'pytorch_lightning'):\n"
        "    try: out[m] = __import__(m).__version__\n"
        "    except Exception: pass\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    info.update(last_json(proc.stdout) or {"probe_error": proc.stderr[-500:]})
    return info


def selected(job: Job, only: list[str], skip: list[str] | None = None) -> bool:
    """`--only` keeps jobs whose "bench/implementation/setting" contains one of the words;
    `--skip` then drops those that contain one of its words."""
    label = f"{job.bench}/{job.impl}/{job.setting}"
    if any(word in label for word in skip or []):
        return False
    return not only or any(word in label for word in only)


def needs_tokens(plan: Plan, only: list[str], skip: list[str]) -> bool:
    """Whether a selected job is a GPT-2 one (the token files take seconds to write)."""
    return any(j.bench == "gpt2" and selected(j, only, skip) for j in all_jobs(plan))


def run_all(
    plan: Plan, out: Path, budget_s: float, only: list[str] | None = None,
    skip: list[str] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    deadline = time.monotonic() + budget_s
    env = {**os.environ, "TENSORLOOM_NO_DOWNLOAD": "1", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HANDWRITTEN), env.get("PYTHONPATH")]))
    records = [versions(manifest(plan)["compiler"])]
    if not plan.smoke and plan.matmul_probe:
        records[0].update(matmul_tflops())
    out.write_text(json.dumps(records[0]) + "\n")
    for job in (job for job in all_jobs(plan) if selected(job, only or [], skip)):
        left = deadline - time.monotonic()
        if left < 30 and "skipped" not in job.extra:
            job.extra["skipped"] = "time budget spent"
        record = run_job(job, min(job.timeout_s, left), env)
        records.append(record)
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(report.one_line(record), flush=True)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench.jsonl"))
    parser.add_argument("--budget-s", type=float, default=530.0)
    parser.add_argument("--generated", type=Path, default=BENCH / "generated")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU (tests)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="run only jobs whose bench/implementation/setting contains this",
    )
    parser.add_argument(
        "--no-profile", action="store_true", help="leave the LM's compile(default) rows unprofiled"
    )
    parser.add_argument(
        "--no-matmul-probe",
        action="store_true",
        help="skip the dense bf16 matmul measurement (GPT-2's MFU needs it)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="then leave out jobs whose bench/implementation/setting has this",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the LM's compile(default) pairs this many times, interleaved",
    )
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tl-bench-") as tmp:
        work = Path(tmp)
        train, test = (512, 128) if args.smoke else (MLP_SAMPLES, 10_000)
        write_synthetic(work / "data" / "mnist", train=train, test=test)
        plan = Plan(
            args.generated,
            work / "data",
            work,
            args.smoke,
            profile=not (args.smoke or args.no_profile),
            matmul_probe=not args.no_matmul_probe,
            repeat=args.repeat,
        )
        if needs_tokens(plan, args.only, args.skip):
            from handwritten.gpt2_train import write_stdlib_tokens

            write_stdlib_tokens(work / "data" / "gpt2_tokens")
        records = run_all(plan, args.out, args.budget_s, args.only, args.skip)
    print()
    print(report.render(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
