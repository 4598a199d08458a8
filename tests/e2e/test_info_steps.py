"""`tlc info` on a train block of `step` lines: the budget of one batch over every model.

The GAN's budget (examples/train_gan.tl) counts both models' weights, the gradients a
batch leaves (D's step and G's step both reach D's parameters, G's step G's) and each
step's Adam state over the model it owns: equal to the bytes the emitted script's
optimizers hold after one batch, on the CPU. A frozen teacher (no step names it) has
weights but no gradients, state or activations.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch

from tensorloom.analysis.report import InfoRequest, info_json
from tests.e2e.test_train_pipeline import compile_program

ROOT = Path(__file__).resolve().parents[2]
GAN = ROOT / "examples" / "train_gan.tl"

FROZEN = """
model Teacher:
    layer fc1 = Linear(64, 128)
    layer fc2 = Linear(128, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

model Student:
    layer fc1 = Linear(64, 16)
    layer fc2 = Linear(16, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

fn distil(T, S, x, y) -> Tensor:
    let soft = softmax(T(x), dim=-1)
    return kl_div(log_softmax(S(x), dim=-1), soft, reduction="batchmean")

let T = Teacher()
let S = Student()
let data = load_dataset("digits", flatten=true)

train (T, S) on data:
    epochs = 1
    batch_size = 32
    freeze = [T]
    step distil with SGD(S, lr=0.1, momentum=0.9)
"""


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def _held(optimizer: torch.optim.Optimizer) -> int:
    return sum(t.numel() * t.element_size() for s in optimizer.state.values()
               for t in s.values() if isinstance(t, torch.Tensor) and t.dim() > 0)  # fmt: skip


def _bytes(model: torch.nn.Module, grads: bool = False) -> int:
    tensors = [p.grad if grads else p for p in model.parameters()]
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def _kept(memory: dict[str, int]) -> int:
    """A model's `activations` term: what one call keeps for its backward."""
    keys = ("activations", "weight_casts", "loss", "output_in_backward")
    return sum(memory[k] for k in keys)


def _one_batch(tmp_path: Path, source: str, name: str) -> ModuleType:
    script = compile_program(tmp_path, source, name=name)
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    xb, yb = next(iter(trainer.train_loader))
    m.train_step(trainer, xb, yb)
    return trainer


def test_gan_budget_holds_both_models_and_both_adams_state(tmp_path: Path) -> None:
    found = info_json(GAN, InfoRequest())
    (program,) = found["programs"]
    trainer = _one_batch(tmp_path, GAN.read_text(encoding="utf-8"), "gan_info")
    shares = {o["step"]: o for o in program["optimizers"]}
    for step, model in (("d_loss", trainer.D), ("g_loss", trainer.G)):
        optimizer = trainer.optimizers[step]
        assert shares[step]["params"] == sum(p.numel() for p in model.parameters())
        assert shares[step]["state_bytes"] == _held(optimizer), step
    assert program["optimizer_state"] == sum(_held(o) for o in trainer.optimizers.values())
    assert program["weights_by_model"] == {"G": _bytes(trainer.G), "D": _bytes(trainer.D)}
    assert program["weights"] == _bytes(trainer.G) + _bytes(trainer.D)
    assert program["gradients"] == _bytes(trainer.G, True) + _bytes(trainer.D, True)
    assert program["frozen"] == []
    # d_loss keeps D's graph twice (real, fakes) and not G's (detached); g_loss G's and D's
    steps = {s["step"]: s["calls"] for s in program["steps"]}
    assert steps == {"d_loss": ["D", "D"], "g_loss": ["G", "D"]}
    kept = {m["name"]: _kept(m["memory"]) for m in found["models"]}
    assert program["activations"] == max(2 * kept["D"], kept["G"] + kept["D"])
    assert program["peak"] >= program["weights"] + program["optimizer_state"]


def test_frozen_teacher_has_weights_but_no_gradients_state_or_activations(
    tmp_path: Path,
) -> None:
    source = tmp_path / "frozen_info.tl"
    source.write_text(FROZEN, encoding="utf-8")
    (program,) = info_json(source, InfoRequest())["programs"]
    trainer = _one_batch(tmp_path, FROZEN, "frozen_info_run")
    assert program["frozen"] == ["T"]
    assert program["weights"] == _bytes(trainer.T) + _bytes(trainer.S)
    assert _bytes(trainer.T, True) == 0
    assert program["gradients"] == _bytes(trainer.S, True)
    (share,) = program["optimizers"]
    assert (share["name"], share["models"]) == ("SGD+momentum", ["S"])
    assert program["optimizer_state"] == _held(trainer.optimizers["distil"])
    assert program["steps"] == [
        {"step": "distil", "calls": ["S"], "activations": program["activations"]}
    ]


PHASED = """
model Teacher:
    layer fc1 = Linear(64, 128)
    layer fc2 = Linear(128, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

model Student:
    layer fc1 = Linear(64, 16)
    layer fc2 = Linear(16, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

fn teach(T, S, x, y) -> Tensor:
    return cross_entropy(T(x), y)

fn distil(T, S, x, y) -> Tensor:
    let soft = softmax(detach(T(x)), dim=-1)
    return kl_div(log_softmax(S(x), dim=-1), soft, reduction="batchmean")

let T = Teacher()
let S = Student()
let data = load_dataset("digits", flatten=true)

train (T, S) on data:
    epochs = 2
    batch_size = 32
    step teach with Adam(T, lr=1e-3) until epoch 1
    step distil with Adam(S, lr=1e-3) from epoch 2
"""


def test_distill_budget_is_its_largest_phase_not_both_steps_at_once() -> None:
    (program,) = info_json(ROOT / "examples" / "distill.tl", InfoRequest())["programs"]
    phases = [(p["epochs"], p["steps"]) for p in program["phases"]]
    assert phases == [([1, 15], ["teach"]), ([16, 40], ["distil"])]
    teach, distil = program["phases"]
    # the teacher's phase holds only the teacher's gradients and Adam state, the student's
    # only the student's: never both, as a budget of every step at once would count
    assert program["gradients"] == teach["gradients"] == 301_066 * 4
    assert program["optimizer_state"] == teach["optimizer_state"] == 2 * 301_066 * 4
    assert distil["gradients"] == 610 * 4
    assert distil["optimizer_state"] == 2 * 610 * 4
    assert program["peak"] == max(teach["peak"], distil["peak"]) == teach["peak"]
    assert program["peak_phase"] == ["teach"]


def test_each_phase_budget_is_what_the_script_holds_in_its_epochs(tmp_path: Path) -> None:
    source = tmp_path / "phased_info.tl"
    source.write_text(PHASED, encoding="utf-8")
    (program,) = info_json(source, InfoRequest())["programs"]
    first, second = program["phases"]
    assert (first["epochs"], second["epochs"]) == ([1, 1], [2, 2])
    trainer = _one_batch(tmp_path, PHASED, "phased_info_run")  # epoch 0: `teach`
    m = sys.modules["phased_info_run"]
    teach, distil = trainer.optimizers["teach"], trainer.optimizers["distil"]
    assert first["optimizer_state"] == _held(teach) and _held(distil) == 0
    assert first["gradients"] == _bytes(trainer.T, True) + _bytes(trainer.S, True)
    assert _bytes(trainer.S, True) == 0
    # epoch 1: the loop frees the ended step's gradients and state, then `distil` runs
    trainer.epoch = 1
    m.release_ended(trainer.optimizers, m.EPOCHS_OF, 1)
    xb, yb = next(iter(trainer.train_loader))
    m.train_step(trainer, xb, yb)
    assert _held(teach) == 0 and _bytes(trainer.T, True) == 0
    assert second["optimizer_state"] == _held(distil)
    assert second["gradients"] == _bytes(trainer.S, True)
    assert program["peak"] == max(first["peak"], second["peak"])
