"""runtime/tokens.py: text and nanoGPT token files as windows with next-token targets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tensorloom.backends.runtime.tokens import (
    TokenDataUnavailable,
    WindowLoader,
    load_token_dataset,
    stdlib_corpus,
    stdlib_files,
)

CPU = torch.device("cpu")


def _write_bins(folder: Path, train: np.ndarray, val: np.ndarray) -> Path:
    train.tofile(folder / "train.bin")
    val.tofile(folder / "val.bin")
    return folder / "train.bin"


def test_text_is_bytes_split_by_position(tmp_path: Path) -> None:
    text = bytes(range(200)) * 5  # 1,000 bytes
    (tmp_path / "corpus.txt").write_bytes(text)
    train, val, info = load_token_dataset("text", path=str(tmp_path / "corpus.txt"), block_size=8)
    assert (len(train), len(val)) == (900, 100)
    assert (info.sample_shape, info.target_shape, info.num_classes) == ((8,), (8,), 256)
    x, y = val.windows(torch.tensor([0, 10]), 8)
    assert x[0].tolist() == list(text[900:908]) and y[0].tolist() == list(text[901:909])
    assert x[1].tolist() == list(text[910:918]) and x.dtype == torch.int64


def test_training_windows_never_reach_the_validation_split(tmp_path: Path) -> None:
    text = bytes([1]) * 900 + bytes([2]) * 100
    (tmp_path / "c.txt").write_bytes(text)
    train, _, _ = load_token_dataset("text", path=str(tmp_path / "c.txt"), block_size=16)
    loader = WindowLoader(train, block_size=16, batch_size=4, device=CPU, seed=3)
    for xb, yb in loader:
        assert set(xb.flatten().tolist()) == {1} and set(yb.flatten().tolist()) == {1}
    assert len(loader) == (900 - 1) // 16 // 4


def test_bin_files_are_nanogpt_tokens(tmp_path: Path) -> None:
    train_ids = np.arange(5000, dtype=np.uint16) * 7
    path = _write_bins(tmp_path, train_ids, np.arange(300, dtype=np.uint16))
    train, val, info = load_token_dataset(
        "tokens", path=str(path), block_size=32, dtype="uint16", vocab=50257
    )
    assert (len(train), len(val), info.num_classes) == (5000, 300, 50257)
    x, y = train.windows(torch.tensor([100, 4000]), 32)
    assert x[0].tolist() == (train_ids[100:132].astype(np.int64)).tolist()
    assert y[1].tolist() == (train_ids[4001:4033].astype(np.int64)).tolist()


def test_uint32_tokens_and_validation_order(tmp_path: Path) -> None:
    path = _write_bins(
        tmp_path, np.arange(1000, dtype=np.uint32) + 70000, np.arange(65, dtype=np.uint32)
    )
    _, val, _ = load_token_dataset("tokens", path=str(path), block_size=16, dtype="uint32")
    loader = WindowLoader(val, block_size=16, batch_size=3, device=CPU, shuffle=False)
    batches = list(loader)
    starts = [int(xb[i, 0]) for xb, _ in batches for i in range(len(xb))]
    assert starts == [0, 16, 32, 48]  # every whole window with its targets, in order


def test_an_epochs_windows_are_seeded_by_seed_and_epoch(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_bytes(bytes(range(256)) * 40)
    train, _, _ = load_token_dataset("text", path=str(tmp_path / "c.txt"), block_size=8)
    a = WindowLoader(train, block_size=8, batch_size=4, device=CPU, seed=1)
    b = WindowLoader(train, block_size=8, batch_size=4, device=CPU, seed=1)
    a.set_epoch(2)
    b.load_state_dict({"seed": 1, "epoch": 2})
    assert torch.equal(a.starts(), b.starts())
    b.set_epoch(3)
    assert not torch.equal(a.starts(), b.starts())
    ranks = [
        WindowLoader(train, block_size=8, batch_size=4, device=CPU, rank=r, world_size=2)
        for r in (0, 1)
    ]
    assert not torch.equal(ranks[0].starts(), ranks[1].starts())


def test_windows_per_epoch_sets_the_epoch_length(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_bytes(bytes(1000))
    train, _, _ = load_token_dataset("text", path=str(tmp_path / "c.txt"), block_size=8)
    loader = WindowLoader(train, block_size=8, batch_size=5, device=CPU, windows_per_epoch=50)
    assert len(loader) == 10 and len(loader.starts()) == 50


def test_bad_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(TokenDataUnavailable, match="does not exist"):
        load_token_dataset("text", path=str(tmp_path / "none.txt"), block_size=8)
    (tmp_path / "train.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(TokenDataUnavailable, match=r"val\.bin does not exist"):
        load_token_dataset("tokens", path=str(tmp_path / "train.bin"), block_size=8)
    (tmp_path / "val.bin").write_bytes(b"\x00" * 101)
    with pytest.raises(TokenDataUnavailable, match="not a whole number of uint16 tokens"):
        load_token_dataset("tokens", path=str(tmp_path / "train.bin"), block_size=8)
    (tmp_path / "val.bin").write_bytes(b"\x00" * 10)
    with pytest.raises(TokenDataUnavailable, match="fewer than one window"):
        load_token_dataset("tokens", path=str(tmp_path / "train.bin"), block_size=8)


def test_stdlib_corpus_is_this_pythons_source_in_a_fixed_order() -> None:
    files = stdlib_files()
    names = [p.name for p in files]
    assert "os.py" in names and "functools.py" in names
    assert not any("site-packages" in p.parts for p in files)
    corpus = stdlib_corpus(200_000)
    assert len(corpus) == 200_000 and corpus == stdlib_corpus(200_000)
    assert corpus.startswith(files[0].read_bytes()[:1000])
    train, val, info = load_token_dataset("text", path="stdlib", block_size=64, max_bytes=100_000)
    assert (len(train), len(val), info.name) == (90_000, 10_000, "the Python standard library")
