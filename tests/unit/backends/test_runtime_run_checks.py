"""The runtime's checks that stop a run before its first step (issue 32): the checkpoint
folder (writable; an earlier run's checkpoints kept, resumed or replaced), the batch
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
    assert prepare_checkpoint_dir(folder, resume=None, overwrite=False) == folder
    assert folder.is_dir() and list(folder.iterdir()) == []  # the probe file is gone


@pytest.mark.parametrize("under", ["a-file/ckpt", "/proc/tensorloom-test"])
def test_an_unwritable_folder_is_a_checkpoint_error(tmp_path: Path, under: str) -> None:
    (tmp_path / "a-file").write_text("x")
    folder = tmp_path / under if not under.startswith("/") else Path(under)
    with pytest.raises(CheckpointError, match=r"^cannot write checkpoints to .*--checkpoint-dir$"):
        check_writable_folder(folder)


def test_an_earlier_runs_checkpoints_are_kept_resumed_or_replaced(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    names = ["epoch-0001.pt", "epoch-0002.pt", "last.pt", "notes.txt", ".last.pt.link"]
    for name in names:
        (tmp_path / name).write_text("x")
    (tmp_path / "epoch-0003").mkdir()  # a sharded save
    found = [p.name for p in previous_checkpoints(tmp_path)]
    assert found == ["epoch-0001.pt", "epoch-0002.pt", "epoch-0003", "last.pt"]
    # another run saves in a folder of its own, and says so
    assert prepare_checkpoint_dir(tmp_path, resume=None, overwrite=False) == tmp_path / "run-2"
    assert capsys.readouterr().err == (
        f"{tmp_path} holds an earlier run's checkpoints (epoch-0001.pt, epoch-0002.pt, "
        f"epoch-0003 and 1 more): this run saves in {tmp_path}/run-2 (--resume "
        f"{tmp_path}/last.pt continues it, --overwrite replaces it)\n"
    )
    (tmp_path / "run-2" / "last.pt").write_text("x")
    assert prepare_checkpoint_dir(tmp_path, resume=None, overwrite=False, main=False) == (
        tmp_path / "run-3")  # fmt: skip
    assert capsys.readouterr().err == ""  # rank 0 says it
    # a resumed run saves beside its checkpoint
    assert prepare_checkpoint_dir(tmp_path, resume=str(tmp_path / "last.pt"),
                                  overwrite=False) == tmp_path  # fmt: skip
    resumed = prepare_checkpoint_dir(tmp_path, resume=str(tmp_path / "run-2" / "last.pt"),
                                     overwrite=False)  # fmt: skip
    assert resumed == tmp_path / "run-2"
    assert capsys.readouterr().err == (
        f"{tmp_path} holds another run's checkpoints: this run continues "
        f"{tmp_path}/run-2/last.pt in {tmp_path}/run-2\n"
    )
    # a sharded run resumed from its folder (the newest complete save in it) stays there
    assert prepare_checkpoint_dir(tmp_path, resume=str(tmp_path / "run-2"),
                                  overwrite=False) == tmp_path / "run-2"  # fmt: skip
    assert prepare_checkpoint_dir(tmp_path / "new", resume=str(tmp_path / "last.pt"),
                                  overwrite=False) == tmp_path / "new"  # fmt: skip
    assert prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True, main=False) == tmp_path
    assert len(previous_checkpoints(tmp_path)) == 4  # only rank 0 removes
    prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".last.pt.link", "new", "notes.txt", "run-2", "run-3"]  # fmt: skip


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
    with pytest.raises(CheckpointError, match=r"^--init-from .*last.pt is one of the"):
        prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True,
                               init_from=str(tmp_path / "last.pt"))  # fmt: skip
    kept = prepare_checkpoint_dir(tmp_path, resume=None, overwrite=False,
                                  init_from=str(tmp_path / "last.pt"))  # fmt: skip
    assert kept == tmp_path / "run-2" and (tmp_path / "last.pt").is_file()
    elsewhere = tmp_path / "other.pt"
    elsewhere.write_text("x")
    prepare_checkpoint_dir(tmp_path, resume=None, overwrite=True, init_from=str(elsewhere))
    assert elsewhere.is_file() and not (tmp_path / "last.pt").exists()
