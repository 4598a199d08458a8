"""Compile the GPU benchmark's TensorLoom programs here, before the GPU run.

The GPU machine has torch but not xDSL, so the emitted scripts are made on the
development machine and travel with the working tree. For each variant this
writes a copy of the program whose train block gains the variant's settings
(`precision = bf16`, `compile = "reduce-overhead"`, ...), compiles it with
`tlc compile`, and records what it made in `bench/generated/manifest.json`:

    bench/generated/src/transformer_lm_bf16_eager.tl   (+ lm_block.nml)
    bench/generated/transformer_lm_bf16_eager.py
    ...

Run: `python bench/prepare_gpu.py`, then on the GPU machine `python bench/gpu_suite.py`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PROGRAMS = BENCH / "programs"
GENERATED = BENCH / "generated"
# The emitted script's flags the GPU suite uses (see bench/gpu_suite.py).
SUITE_FLAGS = ("--epochs", "--metrics", "--device", "--data-root", "--checkpoint-dir", "--seed")


@dataclass(frozen=True)
class Variant:
    """One emitted script: a program plus extra train-block lines."""

    bench: str  # "lm", "mlp" or "gpt2"
    name: str  # file stem under bench/generated
    setting: str  # the row label in the report
    program: str  # the .tl under bench/programs
    settings: tuple[str, ...]  # lines appended to the train block


LM_SETTINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "fp32_eager": ("fp32 eager", ("precision = fp32", "compile = false")),
    "bf16_eager": ("bf16 eager", ("precision = bf16", "compile = false")),
    "bf16_compile_default": ("bf16+compile(default)", ("precision = bf16", 'compile = "default"')),
    "bf16_compile_reduce_overhead": (
        "bf16+compile(reduce-overhead)",
        ("precision = bf16", 'compile = "reduce-overhead"'),
    ),
    "tl_default": ("TensorLoom defaults", ()),
    "tl_bf16": ("TensorLoom defaults, precision = bf16", ("precision = bf16",)),
}


GPT2_SETTINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bf16_eager": ("bf16 eager", ("precision = bf16", "compile = false")),
    "bf16_compile_default": ("bf16+compile(default)", ("precision = bf16", 'compile = "default"')),
    "tl_default": ("TensorLoom defaults", ()),
    # measured after the hand-written max-autotune row (bench/gpu_suite.py)
    "bf16_compile_max_autotune": (
        "bf16+compile(max-autotune)",
        ("precision = bf16", 'compile = "max-autotune"'),
    ),
}


def variants() -> list[Variant]:
    lm = [
        Variant("lm", f"transformer_lm_{key}", setting, "transformer_lm.tl", lines)
        for key, (setting, lines) in LM_SETTINGS.items()
    ]
    gpt2 = [
        Variant("gpt2", f"gpt2_{key}", setting, "gpt2.tl", lines)
        for key, (setting, lines) in GPT2_SETTINGS.items()
    ]
    return [*lm, Variant("mlp", "mlp_tl_default", "TensorLoom defaults", "mlp.tl", ()), *gpt2]


def with_settings(source: str, lines: tuple[str, ...]) -> str:
    """The program with `lines` appended to its train block, which ends the file."""
    if not lines:
        return source
    body = "".join(f"    {line}\n" for line in lines)
    return source.rstrip("\n") + "\n" + body


def tlc_command() -> list[str]:
    """`tlc` beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("tlc")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("tlc")
    if found is None:
        raise SystemExit("error: `tlc` was not found; install TensorLoom (`make install`)")
    return [found]


def write_source(variant: Variant, src_dir: Path) -> Path:
    """The variant's .tl in `src_dir`, with copies of the .nml files it imports."""
    for nml in PROGRAMS.glob("*.nml"):
        shutil.copyfile(nml, src_dir / nml.name)
    source = (PROGRAMS / variant.program).read_text(encoding="utf-8")
    path = src_dir / f"{variant.name}.tl"
    path.write_text(with_settings(source, variant.settings), encoding="utf-8")
    return path


def compile_variant(variant: Variant, src_dir: Path, out_dir: Path) -> dict[str, object]:
    """Compile one variant; its manifest entry, with `error` set when tlc failed."""
    source = write_source(variant, src_dir)
    script = out_dir / f"{variant.name}.py"
    cmd = [*tlc_command(), "compile", str(source), "-o", str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    entry: dict[str, object] = {**asdict(variant), "script": script.name}
    if proc.returncode != 0 or not script.is_file():
        entry["error"] = (proc.stderr or proc.stdout).strip()[-2000:]
    else:
        entry.update(cli_problem(script))
    return entry


def cli_problem(script: Path) -> dict[str, str]:
    """`{"error": ...}` when the script lacks the command line the suite drives, else `{}`."""
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    missing = [flag for flag in SUITE_FLAGS if flag not in proc.stdout]
    if proc.returncode == 0 and not missing:
        return {}
    why = f"missing {', '.join(missing)}" if missing else proc.stderr.strip()[-500:]
    return {"error": f"`{script.name} --help`: {why or 'no output'}"}


def compiler_version() -> str:
    from importlib.metadata import version

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=BENCH, capture_output=True, text=True,
        check=False,
    ).stdout.strip()  # fmt: skip
    return f"tensorloom {version('tensorloom')} ({commit or 'no git'})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=GENERATED)
    args = parser.parse_args(argv)
    out_dir: Path = args.out
    src_dir = out_dir / "src"
    src_dir.mkdir(parents=True, exist_ok=True)
    entries = [compile_variant(v, src_dir, out_dir) for v in variants()]
    manifest = {"compiler": compiler_version(), "variants": entries}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    failed = [e for e in entries if "error" in e]
    for entry in entries:
        status = f"FAILED\n{entry['error']}" if "error" in entry else "ok"
        print(f"{entry['name']}: {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
