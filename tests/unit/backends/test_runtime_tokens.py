"""runtime/tokens.py: text and nanoGPT token files as windows with next-token targets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tensorloom.backends.runtime.tokens import (
    StreamLoader,
    TokenDataUnavailable,
    TokenStream,
    WindowLoader,
    detached,
    load_token_dataset,
    load_word_dataset,
    stdlib_corpus,
    stdlib_files,
    word_vocabulary,
    words_of,
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


# --- words, read in order ----------------------------------------------------------------------


def test_words_are_identifiers_numbers_and_single_characters_then_eos() -> None:
    assert words_of("print(x_1, 42)\n\nif a>=b: pass") == [
        "print", "(", "x_1", ",", "42", ")", "<eos>", "<eos>",
        "if", "a", ">", "=", "b", ":", "pass", "<eos>",
    ]  # fmt: skip


def test_the_vocabulary_is_unk_then_the_most_frequent_ties_sorted() -> None:
    words = ["b", "a", "c", "a", "b", "d", "a"]
    assert word_vocabulary(words, 3) == ["<unk>", "a", "b"]
    assert word_vocabulary(words, 4) == ["<unk>", "a", "b", "c"]  # c and d tie: c first
    assert word_vocabulary(words, 99) == ["<unk>", "a", "b", "c", "d"]


def test_words_dataset_ids_follow_the_training_vocabulary(tmp_path: Path) -> None:
    text = "a b a\n" * 45 + "c d\n" * 5  # the held-out tenth has words training never saw
    (tmp_path / "corpus.txt").write_text(text)
    train, val, info = load_word_dataset(
        "words", path=str(tmp_path / "corpus.txt"), block_size=4, vocab=4
    )
    assert (info.num_classes, info.sample_shape) == (4, (4,))
    assert train.tokens is not None and train.tokens.dtype == torch.int64
    # the first 175 of 195 words: <unk>, then a (88), b (44), <eos> (43)
    assert train.tokens[:8].tolist() == [1, 2, 1, 3, 1, 2, 1, 3]
    assert train.tokens[-15:].tolist() == [0, 0, 3] * 5  # c d <eos>: c and d unknown
    assert len(train) + len(val) == 45 * 4 + 5 * 3


def test_stream_loader_batchifies_as_main_py_and_rows_continue() -> None:
    tokens = torch.arange(103)
    loader = StreamLoader(TokenStream(tokens=tokens), block_size=5, batch_size=4, device=CPU)
    streams = tokens[:100].view(4, -1)  # main.py's batchify, batch-first
    assert len(loader) == (25 - 1) // 5
    batches = list(loader)
    for k, (x, y) in enumerate(batches):
        assert torch.equal(x, streams[:, 5 * k : 5 * k + 5])
        assert torch.equal(y, streams[:, 5 * k + 1 : 5 * k + 6])
    assert torch.equal(batches[1][0][:, 0], batches[0][0][:, -1] + 1)  # each row continues


def test_stream_loader_gives_each_rank_its_own_rows() -> None:
    tokens = torch.arange(48)
    ranks = [StreamLoader(TokenStream(tokens=tokens), block_size=2, batch_size=2, device=CPU,
                          rank=r, world_size=2) for r in (0, 1)]  # fmt: skip
    first = [next(iter(loader))[0] for loader in ranks]
    assert first[0][:, 0].tolist() == [0, 12] and first[1][:, 0].tolist() == [24, 36]


def test_detached_cuts_every_tensor_of_a_state() -> None:
    h = torch.ones(2, requires_grad=True) * 2
    state = (h, [h, None])
    cut = detached(state)
    assert isinstance(cut, tuple) and isinstance(cut[1], list) and cut[1][1] is None
    assert not cut[0].requires_grad and torch.equal(cut[0], h.detach())
    assert cut[0].data_ptr() != h.data_ptr()  # a copy: a replayed CUDA graph may overwrite h
