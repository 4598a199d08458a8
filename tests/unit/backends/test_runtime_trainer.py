"""runtime/trainer.py: the flags, the saves, resume, the run's start and end, --evaluate's report,
--predict; each on a real model, optimizer and checkpoint folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from tensorloom.backends import runtime
from tensorloom.backends.runtime.checkpoint import read_checkpoint
from tensorloom.backends.runtime.distributed import DistContext
from tensorloom.backends.runtime.metrics import MetricsWriter
from tensorloom.backends.runtime.recipe import BestTracker, RunLengthError, RunRecipe
from tensorloom.backends.runtime.trainer import (
    Trainer,
    carried,
    finish_run,
    predict_and_export,
    reached,
    report_evaluation,
    save_if_due,
    save_last,
    start_run,
    training_arguments,
)

CPU = DistContext(0, 0, 1, torch.device("cpu"))


class Batches(list[tuple[torch.Tensor, torch.Tensor]]):
    """A loader of fixed batches, with the place a checkpoint keeps."""

    def state_dict(self) -> dict[str, int]:
        return {"batches": len(self)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        assert state == {"batches": len(self)}


def _trainer(folder: Path | None, seed: int = 0) -> Trainer:
    torch.manual_seed(seed)
    model = nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    loader = Batches([(torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))])
    recipe = RunRecipe(best=BestTracker("val_loss"))
    trainer = Trainer(CPU, model, model, model, optimizer, None, loader, loader, None, recipe)
    trainer.checkpoint_dir = None if folder is None else str(folder)
    return trainer


def _step(trainer: Trainer) -> None:
    xb, yb = trainer.train_loader[0]
    nn.functional.cross_entropy(trainer.model(xb), yb).backward()
    trainer.optimizer.step()
    trainer.optimizer.zero_grad()
    trainer.step += 1


def _args(**given: object) -> argparse.Namespace:
    defaults = {"init_from": None, "resume": None, "epochs": 4, "max_steps": None,
                "predict": None, "export": None, "out": None, "batch_size": 2}  # fmt: skip
    return argparse.Namespace(**{**defaults, **given})


def test_the_flags_every_program_has_and_the_groups_it_asks_for() -> None:
    parser = training_arguments("Train Net.", epochs=3, batch_size=8, seed=1,
                                checkpoint_dir="checkpoints/net")  # fmt: skip
    args = parser.parse_args([])
    assert (args.epochs, args.batch_size, args.seed, args.compile) == (3, 8, 1, "auto")
    assert args.checkpoint_dir == "checkpoints/net" and args.overwrite is False
    for absent in ("precision", "predict", "generate", "download", "no_cuda_graph", "weights"):
        assert not hasattr(args, absent)
    full = training_arguments("Train Net.", epochs=3, batch_size=8, seed=1, checkpoint_dir="c",
                              precision="bf16", serve=True, generate=True, download=True,
                              cuda_graph=True, weights="gpt2", consolidate=True)  # fmt: skip
    args = full.parse_args(["--top-k", "5", "--consolidate", "d", "o.pt"])
    assert (args.precision, args.predict, args.top_k, args.weights) == ("bf16", None, 5, "gpt2")
    assert args.consolidate == ["d", "o.pt"] and args.download is False


def test_save_if_due_every_n_epochs_and_after_the_last(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path)
    saved = []
    for done in range(1, 6):
        _step(trainer)
        save_if_due(trainer, done, trainer.step - 1, every=2, keep=10, last=5)
        saved.append(trainer.saved_step == trainer.step)
    assert saved == [False, True, False, True, True]
    assert sorted(p.name for p in tmp_path.glob("epoch-*.pt")) == [
        "epoch-0002.pt", "epoch-0004.pt", "epoch-0005.pt"]  # fmt: skip
    assert read_checkpoint(tmp_path / "last.pt")["step"] == 5


def test_save_if_due_by_steps_saves_an_epoch_that_passes_a_multiple(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path)
    for _ in range(3):
        _step(trainer)
    save_if_due(trainer, 1, 0, every=5, keep=3, last=9, unit="steps")
    assert not (tmp_path / "epoch-0001.pt").exists()
    for _ in range(3):
        _step(trainer)
    save_if_due(trainer, 2, 3, every=5, keep=3, last=9, unit="steps")
    assert (tmp_path / "epoch-0002.pt").exists()


def test_a_resumed_run_continues_the_state_save_last_kept(tmp_path: Path) -> None:
    first = _trainer(tmp_path)
    for _ in range(3):
        _step(first)
    first.carry = torch.tensor(1.5), 2
    first.recipe.after_validation({"val_loss": 0.25, "epoch": 1})
    save_last(first, epochs_done=1)
    assert first.saved_step == 3
    second = _trainer(tmp_path, seed=1)
    start_run(second, _args(resume=str(tmp_path / "last.pt")))
    assert (second.start_epoch, second.step, second.saved_step) == (1, 3, 3)
    assert torch.equal(second.model.weight, first.model.weight)
    loss_sum, batches = carried(second)
    assert (float(loss_sum), batches, second.carry) == (1.5, 2, None)
    assert second.recipe.best is not None and second.recipe.best.best == 0.25
    assert float(carried(second)[0]) == 0.0


def test_a_resume_with_nothing_left_is_an_error(tmp_path: Path) -> None:
    first = _trainer(tmp_path)
    _step(first)
    save_last(first, epochs_done=4)
    with pytest.raises(RunLengthError, match=r"--resume .* --epochs 8"):
        start_run(_trainer(tmp_path), _args(resume=str(tmp_path / "last.pt"), epochs=4))


def test_start_run_removes_a_cut_write_and_loads_init_from(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    source = _trainer(tmp_path / "a")
    _step(source)
    save_last(source, epochs_done=1)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".last.pt.1234.tmp").write_bytes(b"cut")
    trainer = _trainer(tmp_path / "b", seed=3)
    start_run(trainer, _args(init_from=str(tmp_path / "a" / "last.pt")))
    assert torch.equal(trainer.model.weight, source.model.weight) and trainer.step == 0
    out = capsys.readouterr()
    assert "starting from the weights in" in out.out
    assert list((tmp_path / "b").iterdir()) == [] and "removed" in out.err


def test_finish_run_saves_last_and_gives_an_interrupted_run_its_exit_code(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    trainer = _trainer(tmp_path)
    _step(trainer)
    assert finish_run(trainer, epochs_done=1, started=0.0, metrics=MetricsWriter(None)) is None
    assert read_checkpoint(tmp_path / "last.pt")["step"] == 1
    assert "done: 1 epoch" in capsys.readouterr().out

    class Signals:
        requested = "SIGINT"

        def restore(self) -> None: ...

    trainer.recipe.signals = Signals()  # type: ignore[assignment]
    code = finish_run(trainer, epochs_done=1, started=0.0, metrics=MetricsWriter(None))
    assert code == 130
    assert f"continue with --resume {tmp_path}/last.pt" in capsys.readouterr().out


def test_report_evaluation_prints_and_appends_a_json_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    metrics = tmp_path / "m.jsonl"
    record = {"epoch": 3, "val_loss": 0.5, "val_accuracy": 0.75}
    report_evaluation("ck/last.pt", record, str(metrics))
    report_evaluation("ck/last.pt", record, None)
    assert capsys.readouterr().out.startswith("ck/last.pt (epoch 3):  ")
    assert json.loads(metrics.read_text()) == {"evaluated": "ck/last.pt", **record}


def test_predict_writes_the_models_classes(tmp_path: Path) -> None:
    trainer = _trainer(None)
    x = torch.randn(5, 3)
    torch.save(x, tmp_path / "in.pt")
    out = tmp_path / "out.pt"
    args = _args(predict=str(tmp_path / "in.pt"), out=str(out))
    predict_and_export(trainer.model, args, loader=trainer.val_loader, info=None,
                       device=CPU.device, classes=True)  # fmt: skip
    outputs = torch.load(out)["outputs"]
    assert torch.allclose(outputs, trainer.model(x).detach())


def test_reached_and_the_paste_of_a_one_process_program() -> None:
    assert reached(5, 5) and not reached(4, 5) and not reached(10**6, None)
    # the whole-step graph's and AMP's types are strings: a plain program gets neither
    names = {n for d in runtime.paste(["Trainer", "save_last"]).definitions for n in d.binds}
    assert "Trainer" in names and "save_checkpoint" in names
    assert not names & {"GraphedStep", "PrecisionPlan", "barrier", "optimizer_modes"} - {""}
