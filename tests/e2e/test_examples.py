"""The example gallery: every example checks, compiles, trains and learns.

Each `.tl` example is compiled with `tlc compile`, and its script is imported and
run on the CPU for a few hundred optimizer steps (`main([...])` with the script's
own `--epochs`, `--max-steps` and `--batch-size` flags); the test reads the
`--metrics` lines and checks that the loss fell and ended below chance. The
digits CNN trains with its own settings and must reach 95% validation accuracy
within a minute. The broken examples must fail `tlc check` with the documented
code at the documented line and column. The kernel examples run under
TRITON_INTERPRET=1 and are compared with torch.

Scripts run in this process: importing torch once instead of once per example
keeps the file well under the CI budget on two cores.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from tensorloom.tools.tlc import cli

EXAMPLES = Path(__file__).parents[2] / "examples"


@dataclass(frozen=True, slots=True)
class Run:
    """How long a test trains an example: flags of the emitted script."""

    epochs: int
    max_steps: int | None = None
    batch_size: int | None = None
    classes: int | None = 10  # chance-level loss is ln(classes); None: not a classifier
    fall: float = 0.75  # the last epoch's train loss is below this share of the first's
    samples: bool = False  # `samples = ...`: its PNG grid goes to tmp/samples.png

    def argv(self, tmp: Path) -> list[str]:
        argv = ["--device", "cpu", "--seed", "0", "--epochs", str(self.epochs)]
        argv += ["--metrics", str(tmp / "metrics.jsonl"), "--checkpoint-dir", str(tmp / "ckpt")]
        if self.samples:
            argv += ["--samples", str(tmp / "samples.png")]
        if self.max_steps is not None:
            argv += ["--max-steps", str(self.max_steps)]
        if self.batch_size is not None:
            argv += ["--batch-size", str(self.batch_size)]
        return argv


# Digits: 1,617 training images, 25 steps per epoch at 64. Sequence tasks:
# 3,686 training sequences, 57 steps per epoch at 64.
TRAINED: dict[str, Run] = {
    "mnist.tl": Run(epochs=8),
    "train_ddp.tl": Run(epochs=8),
    "train_resnet.tl": Run(epochs=8),
    "train_vit.tl": Run(epochs=8),
    "train_lstm.tl": Run(epochs=4, classes=16),
    "train_transformer.tl": Run(epochs=3, max_steps=240, batch_size=32, classes=16),
    # 96 steps an epoch; nanoGPT's init starts the loss near ln 256 (not 14.5): it falls less
    "train_gpt.tl": Run(epochs=2, batch_size=64, classes=256, fall=0.9),
    "train_vae.tl": Run(epochs=6, classes=None, fall=0.9),
    "train_unet.tl": Run(epochs=6, classes=None, fall=0.5),
    # the DDPM objective: the noise-prediction MSE starts near 1 (the noise's variance)
    "train_diffusion.tl": Run(epochs=4, classes=None, fall=0.6, samples=True),
}
GAN = "train_gan.tl"
DISTILL = "distill.tl"
CNN = "digits_cnn.tl"
KERNELS = ["vector_add.tl", "custom_kernel.tl", "kernels/bias_gelu.tl",
           "kernels/fused_layernorm.tl", "kernels/scaled_add.tl",
           "kernels/softmax_rows.tl"]  # fmt: skip
BLUEPRINTS = ["transformer.nml", "resnet.nml", "lstm_seq2seq.nml", "vision_transformer.nml",
              "gpt.nml", "vae.nml", "unet.nml", "llama.nml", "bert.nml",
              "resnet50.nml"]  # fmt: skip
# start from published weights that a clone does not hold: tests/e2e/test_pretrained.py runs
# them from a folder transformers writes; here they check (TL0801 warns of the absent folder)
PRETRAINED = ["finetune_gpt2.tl"]
# example -> (code, line, column) of the one error `tlc check` must report
BROKEN: dict[str, tuple[str, int, int]] = {
    "broken/broken_model.tl": ("TL0201", 15, 41),
    "broken/vit_layernorm.nml": ("TL0201", 26, 13),
}
# trained and compared with CLIP's loss in PyTorch by tests/e2e/test_paired_data.py
PAIRED = ["train_clip.tl", "clip.nml"]
# GPT-2 small's size: checked and compiled here; tests/e2e/test_speedrun.py trains it tiny
SPEEDRUN = ["gpt_speedrun.tl", "modern_gpt.nml"]
VALID = [*TRAINED, CNN, GAN, DISTILL, *PAIRED, *KERNELS, *BLUEPRINTS, *SPEEDRUN, *PRETRAINED]


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread: on a busy two-core runner, more threads only fight."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tlc(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env={"NO_COLOR": "1"})
    return result.exit_code, result.output


def compile_example(name: str, out: Path) -> Path:
    """`tlc compile` an example (a path relative to examples/, or an absolute one)."""
    status, output = tlc("compile", str(EXAMPLES / name), "-o", str(out))
    assert status == 0, output
    return out


def import_script(path: Path) -> ModuleType:
    """Import an emitted script under a name of its own (its dataclasses look it up); its
    folder goes on the path, as `python script.py` puts it, for the runtime module beside it."""
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    name = f"example_{path.stem}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def png_size(path: Path) -> tuple[int, int]:
    """The width and height of a PNG, its signature and IHDR checked."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def train(name: str, run: Run, tmp: Path) -> list[dict[str, float]]:
    script = import_script(compile_example(name, tmp / "script.py"))
    assert script.main(run.argv(tmp)) == 0
    lines = (tmp / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


# --- the gallery is complete --------------------------------------------------------


def test_every_example_file_is_in_the_gallery() -> None:
    on_disk = {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.tl")}
    on_disk |= {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.nml")}
    assert on_disk == {*VALID, *BROKEN}


# --- check --------------------------------------------------------------------------


@pytest.mark.parametrize("name", VALID)
def test_example_checks(name: str) -> None:
    status, output = tlc("check", str(EXAMPLES / name))
    assert status == 0, output


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_example_fails_check_at_the_documented_place(name: str) -> None:
    status, output = tlc("check", str(EXAMPLES / name), "--format", "json")
    assert status == 1
    report = json.loads(output)
    found = [(d["code"], d["primary"]["line"], d["primary"]["column"])
             for d in report["diagnostics"] if d["severity"] == "error"]  # fmt: skip
    assert found == [BROKEN[name]]


# --- compile and train --------------------------------------------------------------


def tokens() -> torch.Tensor:
    return torch.randint(0, 16, (2, 12))


def digits() -> torch.Tensor:
    return torch.rand(2, 1, 8, 8)


def flat_digits() -> torch.Tensor:
    return torch.rand(2, 64)


def image() -> torch.Tensor:
    return torch.rand(1, 3, 224, 224)


# blueprint -> (its main model, an input, the output shape `tlc check` infers with
# the default configs: [B, T, vocab] per-token logits or [B, classes])
FORWARD: dict[str, tuple[str, Callable[[], torch.Tensor], tuple[int, ...]]] = {
    "transformer.nml": ("Transformer", tokens, (2, 12, 16)),
    "resnet.nml": ("ResNet", digits, (2, 10)),
    "lstm_seq2seq.nml": ("Seq2Seq", tokens, (2, 12, 16)),
    "vision_transformer.nml": ("VisionTransformer", image, (1, 1000)),  # ViT-B/16
    "gpt.nml": ("GPT", tokens, (2, 12, 50257)),  # GPT-2 small
    "vae.nml": ("VAE", flat_digits, (2, 64)),  # the reconstruction of (recon, mu, logvar)
    "unet.nml": ("UNet", digits, (2, 1, 8, 8)),
    "llama.nml": ("Llama", tokens, (2, 12, 32000)),
    "bert.nml": ("Bert", tokens, (2, 12, 768)),  # bert-base: every token's final state
    "resnet50.nml": ("ResNet50", image, (1, 1000)),
}


@pytest.mark.parametrize("name", BLUEPRINTS)
def test_blueprint_compiles_to_a_module_with_the_checked_output_shape(
    name: str, tmp_path: Path
) -> None:
    """An .nml alone compiles to nn.Module classes; the main one runs with its defaults."""
    script = import_script(compile_example(name, tmp_path / "models.py"))
    model_name, make_input, shape = FORWARD[name]
    model = getattr(script, model_name)().eval()
    with torch.no_grad():
        output = model(make_input())
    first = output[0] if isinstance(output, tuple) else output
    assert tuple(first.shape) == shape


SLOW = ("train_lstm.tl", "train_transformer.tl")  # 10-25 s each on a busy 2-core runner


TRAINED_PARAMS = [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in TRAINED]


@pytest.mark.parametrize("name", TRAINED_PARAMS)
def test_example_trains_and_its_loss_falls(name: str, tmp_path: Path) -> None:
    run = TRAINED[name]
    records = train(name, run, tmp_path)
    assert [r["epoch"] for r in records] == list(range(1, run.epochs + 1))
    losses = [r["train_loss"] for r in records]
    assert losses[-1] < run.fall * losses[0], losses
    assert records[-1]["val_loss"] < records[0]["val_loss"]
    if run.classes is not None:
        assert records[-1]["val_loss"] < 0.75 * math.log(run.classes)  # well below chance
    if run.samples:  # 64 digits, 8 across, each enlarged to 32 pixels and padded by 2
        assert png_size(tmp_path / "samples.png") == (274, 274)
    if run.max_steps is not None:
        assert records[-1]["steps"] == run.max_steps


def test_gan_discriminator_learns_and_both_losses_are_reported(tmp_path: Path) -> None:
    """Two optimizers: each epoch's record holds `d_loss` and `g_loss` (training) and their
    validation means. The discriminator learns to tell the digits from the generator's
    samples (its loss below 2 ln 2, a coin's), while the generator keeps it from winning
    outright (its loss stays above a tenth of that)."""
    run = Run(epochs=3, classes=None, samples=True)
    records = train(GAN, run, tmp_path)
    assert png_size(tmp_path / "samples.png") == (274, 274)
    assert [r["epoch"] for r in records] == [1, 2, 3]
    chance = 2 * math.log(2)
    for record in records:
        assert {"d_loss", "g_loss", "val_d_loss", "val_g_loss", "steps"} <= set(record)
        assert 0.1 * chance < record["d_loss"] < chance, record
        assert math.isfinite(record["g_loss"])
    assert records[-1]["steps"] == 3 * 25


def test_digits_cnn_reaches_95_percent(tmp_path: Path) -> None:
    """The example's own settings (15 epochs, seed 0): the gallery's accuracy claim."""
    records = train(CNN, Run(epochs=15), tmp_path)
    assert records[-1]["val_accuracy"] >= 0.95


def test_resnet_writes_its_checkpoints(tmp_path: Path) -> None:
    """`checkpoint every 5 epochs`: epoch 5 and the last epoch, plus last.pt."""
    train("train_resnet.tl", Run(epochs=6, max_steps=None), tmp_path)
    saved = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert saved == ["epoch-0005.pt", "epoch-0006.pt", "last.pt"]


# --- the documented switch to real dataset files ----------------------------------------

# example -> the lines its header says to change, as (line in the file, replacement)
DIGITS_DATA = 'let data = load_dataset("digits")'
CIFAR_DATA = 'let data = load_dataset("cifar10")'
VIT_DIGITS = (
    "let net = VisionTransformer(n_patches=16, in_channels=1, patch=2, hidden=64, n_layers=2, "
    "n_heads=4, mlp_dim=128, classes=10)"
)
VIT_CIFAR = (
    "let net = VisionTransformer(n_patches=64, in_channels=3, patch=4, hidden=128, n_layers=2, "
    "n_heads=4, mlp_dim=256, classes=10)"
)
# example -> the lines its header says to change, as (code in the file, replacement)
OVERRIDES: dict[str, list[tuple[str, str]]] = {
    "mnist.tl": [("Linear(64, 256)", "Linear(784, 256)"),
                 ('load_dataset("digits", flatten=true)', 'load_dataset("mnist", flatten=true)')],
    "digits_cnn.tl": [("layer fc = Linear(32 * 4 * 4, 10)", "layer fc = Linear(32 * 14 * 14, 10)"),
                      (DIGITS_DATA, 'let data = load_dataset("mnist")')],
    "train_resnet.tl": [("let net = ResNet(in_channels=1, width=32)",
                         "let net = ResNet(in_channels=3, width=64)"),
                        (DIGITS_DATA, CIFAR_DATA)],
    "train_vit.tl": [(VIT_DIGITS, VIT_CIFAR), (DIGITS_DATA, CIFAR_DATA)],
}  # fmt: skip


def with_overrides(name: str, folder: Path) -> Path:
    """A copy of the example (and the blueprints it imports) with its header's edits made."""
    lines = (EXAMPLES / name).read_text().splitlines()
    header = "\n".join(line for line in lines if line.startswith("//"))
    code = "\n".join(line for line in lines if not line.startswith("//"))
    for old, new in OVERRIDES[name]:
        assert new in header, f"the header of {name} no longer documents `{new}`"
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    folder.mkdir()
    for blueprint in BLUEPRINTS:
        (folder / blueprint).write_text((EXAMPLES / blueprint).read_text())
    (folder / name).write_text(code + "\n")
    return folder / name


MNIST_TRAIN = 320
CIFAR_BATCH = 32  # images per python batch: five for training, one for validation
CIFAR_TRAIN = 5 * CIFAR_BATCH


def class_patterns(n: int, shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes images whose class is a bright 7x7 square at one of ten places, plus noise."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 10
    images = rng.integers(0, 96, (n, *shape))
    for i, label in enumerate(labels):
        row, col = 7 * (label // 4), 7 * (label % 4)
        images[i, ..., row : row + 7, col : col + 7] = 255
    return images.astype(np.uint8), labels.astype(np.uint8)


def write_idx(path: Path, array: np.ndarray) -> None:
    """An IDX file as MNIST ships it (big-endian dims after a ubyte magic), gzipped."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(header + array.tobytes()))


def write_mnist(root: Path) -> None:
    folder = root / "mnist"
    folder.mkdir(parents=True)
    for prefix, n, seed in (("train", MNIST_TRAIN, 0), ("t10k", 80, 1)):
        images, labels = class_patterns(n, (28, 28), seed)
        write_idx(folder / f"{prefix}-images-idx3-ubyte", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels)


def write_cifar(root: Path) -> None:
    """CIFAR-10's python batches: pickled dicts of uint8 rows [N, 3072] and label lists."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for seed, name in enumerate(names):
        images, labels = class_patterns(CIFAR_BATCH, (3, 32, 32), seed)
        batch = {b"data": images.reshape(CIFAR_BATCH, 3072), b"labels": labels.tolist()}
        with (folder / name).open("wb") as f:
            pickle.dump(batch, f, protocol=2)


@pytest.mark.parametrize("name", sorted(OVERRIDES))
def test_documented_override_trains_on_real_format_files(name: str, tmp_path: Path) -> None:
    source = with_overrides(name, tmp_path / "src")
    status, output = tlc("check", str(source))
    assert status == 0, output
    data_root = tmp_path / "data"
    cifar = "cifar10" in source.read_text()
    write_cifar(data_root) if cifar else write_mnist(data_root)
    script = import_script(compile_example(str(source), tmp_path / "script.py"))
    run = Run(epochs=3, batch_size=32)
    assert script.main([*run.argv(tmp_path), "--data-root", str(data_root)]) == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps_per_epoch = (CIFAR_TRAIN if cifar else MNIST_TRAIN) // 32  # the files were read
    assert [r["steps"] for r in records] == [steps_per_epoch * e for e in (1, 2, 3)]
    assert records[-1]["train_loss"] < records[0]["train_loss"]


@pytest.mark.slow
def test_ddp_example_under_tlc_run_with_two_gloo_processes(tmp_path: Path) -> None:
    """`tlc run --nproc 2`, as the header says: two CPU processes under torchrun."""
    command = [sys.executable, "-m", "tensorloom.tools.tlc", "run", "--nproc", "2",
               str(EXAMPLES / "train_ddp.tl"), "--", *Run(epochs=3).argv(tmp_path)]  # fmt: skip
    proc = run_killable(command)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    # 1,617 training images: 808 per rank, 12 batches of 64 each per epoch.
    assert [r["steps"] for r in records] == [12, 24, 36]
    assert records[-1]["train_loss"] < records[0]["train_loss"]


def run_killable(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run in a new session, so that a timeout ends torchrun's workers too."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, start_new_session=True) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


# --- kernels --------------------------------------------------------------------------


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton kernels on the CPU: TRITON_INTERPRET is read when @triton.jit runs."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.usefixtures("interpreted")
def test_vector_add_example_adds(tmp_path: Path) -> None:
    script = import_script(compile_example("vector_add.tl", tmp_path / "vector_add.py"))
    x, y = torch.randn(3000), torch.randn(3000)
    torch.testing.assert_close(script.vector_add_launcher(x, y), x + y)


@pytest.mark.usefixtures("interpreted")
def test_custom_kernel_example_is_a_gelu_mlp(tmp_path: Path) -> None:
    script = import_script(compile_example("custom_kernel.tl", tmp_path / "custom_kernel.py"))
    torch.manual_seed(0)
    net = script.KernelMLP()
    x = torch.randn(5, 784)
    with torch.no_grad():
        expected = net.fc2(torch.nn.functional.gelu(net.fc1(x)))
        torch.testing.assert_close(net(x), expected)


@pytest.mark.usefixtures("interpreted")
def test_a_kernel_in_a_trained_forward_stops_the_gradient_as_tl0412_says(tmp_path: Path) -> None:
    """The warning's claim, checked on the emitted model: fc1 gets no gradient, fc2 does."""
    source = EXAMPLES.parent / "tests" / "lit" / "check" / "kernel_in_trained_forward.tl"
    script = import_script(compile_example(str(source), tmp_path / "kernel_in_forward.py"))
    net = script.KernelMLP()
    loss = net(torch.randn(4, 64)).sum()
    loss.backward()
    assert net.fc1.weight.grad is None
    assert net.fc2.weight.grad is not None


def test_distilled_student_learns_from_the_teacher_trained_first(tmp_path: Path) -> None:
    """examples/distill.tl with its own settings: the teacher trains for epochs 1-15 and then
    stays as it is (its validation loss no longer moves); the student, distilled from it in
    epochs 16-40, learns (its objective halves) and classifies the held-out digits."""
    script = import_script(compile_example(DISTILL, tmp_path / "script.py"))
    run = Run(epochs=40, classes=None)
    assert script.main(run.argv(tmp_path)) == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    teach = [r for r in records if "teach" in r]
    distil = [r for r in records if "distil" in r]
    assert [r["epoch"] for r in teach] == list(range(1, 16))
    assert [r["epoch"] for r in distil] == list(range(16, 41))
    assert teach[-1]["val_teach"] < 0.25 * teach[0]["val_teach"]
    assert all(r["val_teach"] == teach[-1]["val_teach"] for r in distil)
    assert distil[-1]["val_distil"] < 0.5 * distil[0]["val_distil"]
    args = script.parse_args(run.argv(tmp_path))
    trainer = script.build_trainer(args, script.DistContext(0, 0, 1, torch.device("cpu")))
    script.resume(trainer, str(tmp_path / "ckpt" / "last.pt"))
    trainer.S.eval()
    right = total = 0
    with torch.no_grad():
        for xb, yb in trainer.val_loader:
            right += int((trainer.S(xb).argmax(-1) == yb).sum())
            total += len(yb)
    assert right / total > 0.8
