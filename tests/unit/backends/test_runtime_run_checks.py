"""The runtime's checks that stop a run before its first step (issue 32): the checkpoint
folder (writable; no earlier run's checkpoints unless resumed or overwritten), the batch
size, and a resumed run with nothing left to train."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorloom.backends.runtime.checkpoint import (
    CheckpointError,
    check_writable_folder,
    prepare_checkpoint_dir,
    previous_checkpoints,
)
from tensorloom.backends.runtime.recipe import (
    RunLengthError,
    check_batch_size,
    check_epoch_has_steps,
    check_resume_left,
)


def test_a_new_folder_is_created_and_left_empty(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "a"
    assert prepare_checkpoint_dir(folder, resume=None, overwrite=False) == []
    assert folder.is_dir() and list(folder.iterdir()) == []  # the probe file is gone


@pytest.mark.parametrize("under", ["a-file/ckpt", "/proc/tensorloom-test"])
def test_an_unwritable_folder_is_a_checkpoint_error(tmp_path: Path, under: str) -> None:
    (tmp_path / "a-file").write_text("x")
    folder = tmp_path / under if not under.startswith("/") else Path(under)
    with pytest.raises(CheckpointError, match=r"^cannot write checkpoints to .*--checkpoint-dir$"):
        check_writable_folder(folder)


def test_an_earlier_runs_checkpoints_are_refused_resumed_or_replaced(tmp_path: Path) -> None:
    names = ["epoch-0001.pt", "epoch-0002.pt", "last.pt", "notes.txt", ".last.pt.link"]
    for name in names:
        (tmp_path / name).write_text("x")
    (tmp_path / "epoch-0003").mkdir()  # a sharded save
    found = [p.name for p in previous_checkpoints(tmp_path)]
    assert found == ["epoch-0001.pt", "epoch-0002.pt", "epoch-0003", "last.pt"]
    with pytest.raises(CheckpointError) as refused:
        prepare_checkpoint_dir(tmp_path, resume=None, overwrite=False)
    assert str(refused.value) == (
        f"{tmp_path} holds the checkpoints of an earlier run (epoch-0001.pt, epoch-0002.pt, "
        f"epoch-0003 and 1 more): continue it with --resume {tmp_path}/last.pt, replace them "
        "with --overwrite, or give another --checkpoint-dir"
    )
    assert prepare_checkpoint_dir(tmp_path, resume="last.pt", overwrite=False) == []
    assert prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True, main=False) != []
    assert len(previous_checkpoints(tmp_path)) == 4  # only rank 0 removes
    prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".last.pt.link", "notes.txt"]


@pytest.mark.parametrize("size", [0, -1])
def test_a_batch_size_below_one_is_an_error(size: int) -> None:
    with pytest.raises(RunLengthError, match=f"^--batch-size {size} must be at least 1$"):
        check_batch_size(size)
    check_batch_size(1)


def test_an_epoch_must_make_a_step() -> None:
    check_epoch_has_steps(1, batch_size=64)
    check_epoch_has_steps(4, batch_size=64, grad_accum=4)
    with pytest.raises(RunLengthError, match="an epoch holds 0 whole batches"):
        check_epoch_has_steps(0, batch_size=5000)
    with pytest.raises(RunLengthError, match=r"a step needs 4 whole batches \(grad_accum\)"):
        check_epoch_has_steps(3, batch_size=64, grad_accum=4)


def test_a_resumed_run_must_have_something_left() -> None:
    check_resume_left("last.pt", epochs_done=2, epochs=3, step=50, max_steps=None)
    check_resume_left("last.pt", epochs_done=2, epochs=3, step=50, max_steps=60)
    with pytest.raises(RunLengthError, match=r"--resume last.pt --epochs 4$"):
        check_resume_left("last.pt", epochs_done=2, epochs=2, step=50, max_steps=None)
    with pytest.raises(RunLengthError, match=r"a --max-steps above 50$"):
        check_resume_left("last.pt", epochs_done=2, epochs=9, step=50, max_steps=50)


def test_the_weights_a_run_starts_from_are_never_removed(tmp_path: Path) -> None:
    (tmp_path / "last.pt").write_text("x")
    for overwrite in (False, True):
        with pytest.raises(CheckpointError, match=r"^--init-from .*last.pt is one of the"):
            prepare_checkpoint_dir(tmp_path, resume=None, overwrite=overwrite,
                                   init_from=str(tmp_path / "last.pt"))  # fmt: skip
    assert (tmp_path / "last.pt").is_file()
    elsewhere = tmp_path / "other.pt"
    elsewhere.write_text("x")
    prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True, init_from=str(elsewhere))
    assert elsewhere.is_file() and not (tmp_path / "last.pt").exists()
