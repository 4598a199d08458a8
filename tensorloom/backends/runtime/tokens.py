"""Language-model data for TensorLoom scripts: a stream of token ids cut into random windows.

    train, val, info = load_token_dataset("text", path="corpus.txt", block_size=256)
    loader = WindowLoader(train, batch_size=32, device=device, shuffle=True, seed=0)
    for xb, yb in loader:   # xb, yb: [32, 256] int64; yb is xb shifted by one token
        ...

Two sources, both giving a training and a validation `TokenStream`:

- `"text"`: a text file as bytes, one token per byte (vocab 256). The last
  `val_fraction` (default 10%) of the file is the validation split, by position,
  so no validation window overlaps a training one. `path="stdlib"` is a real
  corpus that needs no download: the `.py` files of this Python's standard
  library, concatenated in sorted order of their paths (no `site-packages`),
  capped at `max_bytes` (default 16,000,000). It is Python source, so a model
  trained on it writes Python-looking text; it differs between Python versions.
- `"words"`: a text file (or `"stdlib"`, as above) as words, as pytorch/examples'
  word_language_model reads a corpus: each line's words, then `<eos>`. A word is an
  identifier, a number, or one other non-space character (the text is Python source, where
  `print(x)` is four words). The vocabulary is the `vocab - 1` most frequent words of the
  training split (ties in sorted order) and `<unk>` (id 0) for every other word, so it is
  the same on every run. `StreamLoader` takes its windows in order (`batchify`).
- `"tokens"`: nanoGPT's format: `train.bin` and `val.bin` beside it, flat
  arrays of `uint16` (or `uint32`) token ids. They are read through a
  `numpy.memmap` opened for each batch and dropped after it (as nanoGPT does),
  so a file of any size is never read whole and resident memory stays flat.

Each training epoch draws `windows_per_epoch` random window starts (default: the
number of whole windows in the split) from a generator seeded with
`seed + epoch`, and with the rank under DDP, so resuming at epoch k replays
exactly the windows an uninterrupted run would have seen. A window of T tokens
is the input; the T tokens one position later are the targets. Validation takes
the split's non-overlapping windows in order, sharded across ranks.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

STDLIB_CORPUS = "stdlib"
STDLIB_MAX_BYTES = 16_000_000
TOKEN_DTYPES = {"uint16": 2, "uint32": 4}


class TokenDataUnavailable(Exception):
    """A token or text file is missing or malformed; the message says which and why."""


@dataclass(frozen=True)
class TokenInfo:
    """What one window of a language-model dataset looks like."""

    name: str
    sample_shape: tuple[int, ...]  # (T,)
    target_shape: tuple[int, ...]  # (T,): the next token at every position
    num_classes: int  # the vocabulary
    task: str = "sequence"
    synthetic: bool = False


class TokenStream:
    """A flat run of token ids: bytes held in memory, or a `.bin` file read per batch."""

    def __init__(
        self,
        *,
        tokens: torch.Tensor | None = None,
        path: Path | None = None,
        dtype: str = "uint16",
        start: int = 0,
        length: int | None = None,
    ) -> None:
        if (tokens is None) == (path is None):
            raise ValueError("a TokenStream holds tokens or reads a file, not both")
        self.tokens, self.path, self.dtype, self.start = tokens, path, dtype, start
        total = len(tokens) if tokens is not None else _file_tokens(path, dtype)  # type: ignore[arg-type]
        self.length = total - start if length is None else length

    def __len__(self) -> int:
        return self.length

    def windows(self, starts: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs [N, T] and next-token targets [N, T] (int64) for windows at `starts`."""
        offsets = torch.arange(block_size + 1)
        if self.tokens is not None:
            rows = self.tokens[self.start + starts[:, None] + offsets].long()
        else:
            rows = self._read_rows(starts.tolist(), block_size + 1)
        return rows[:, :-1], rows[:, 1:]

    def _read_rows(self, starts: list[int], width: int) -> torch.Tensor:
        import numpy as np  # only `.bin` token files need numpy

        # A fresh memmap per batch, dropped after it: pages it touched leave the
        # process's resident set with it (nanoGPT's remedy for a growing RSS).
        data = np.memmap(self.path, dtype=np.dtype(self.dtype), mode="r")  # type: ignore[arg-type]
        base = self.start
        rows = np.stack([data[base + s : base + s + width].astype(np.int64) for s in starts])
        del data
        return torch.from_numpy(rows)


def _file_tokens(path: Path, dtype: str) -> int:
    itemsize = TOKEN_DTYPES[dtype]
    size = path.stat().st_size
    if size % itemsize:
        raise TokenDataUnavailable(
            f"{path} has {size} bytes, not a whole number of {dtype} tokens ({itemsize} bytes each)"
        )
    return size // itemsize


def load_token_dataset(
    source: str,
    *,
    path: str,
    block_size: int,
    dtype: str = "uint16",
    vocab: int | None = None,
    val_fraction: float = 0.1,
    max_bytes: int | None = None,
    data_root: str | os.PathLike[str] | None = None,
) -> tuple[TokenStream, TokenStream, TokenInfo]:
    """The training and validation streams of `"text"` or `"tokens"` data (see the module doc)."""
    if source == "text":
        train, val = _text_streams(path, val_fraction, max_bytes, data_root)
        vocab = 256
    elif source == "tokens":
        train, val = _token_streams(_resolve(path, data_root), dtype)
    else:
        raise TokenDataUnavailable(f"unknown language-model source `{source}`")
    for split, stream in (("training", train), ("validation", val)):
        if len(stream) <= block_size:
            raise TokenDataUnavailable(
                f"the {split} split of `{path}` has {len(stream)} tokens, "
                f"fewer than one window of block_size + 1 = {block_size + 1}"
            )
    name = Path(path).name if path != STDLIB_CORPUS else "the Python standard library"
    info = TokenInfo(name, (block_size,), (block_size,), vocab or 0)
    return train, val, info


def _resolve(path: str, data_root: str | os.PathLike[str] | None) -> Path:
    candidate = Path(path)
    if not candidate.is_absolute() and data_root is not None and not candidate.is_file():
        candidate = Path(data_root) / candidate
    if not candidate.is_file():
        raise TokenDataUnavailable(f"data file {path} does not exist")
    return candidate


WORDS_VOCAB = 10000
UNKNOWN_WORD = "<unk>"
END_OF_LINE = "<eos>"
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+|\S")


def words_of(text: str) -> list[str]:
    """Each line's words, then `<eos>` (identifiers, numbers, single other characters)."""
    words: list[str] = []
    for line in text.splitlines():
        words += _WORD.findall(line)
        words.append(END_OF_LINE)
    return words


def word_vocabulary(words: list[str], size: int) -> list[str]:
    """`<unk>`, then the `size - 1` most frequent of `words` (ties in sorted order)."""
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    counts.pop(UNKNOWN_WORD, None)
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    return [UNKNOWN_WORD, *ranked[: size - 1]]


def load_word_dataset(
    source: str,
    *,
    path: str,
    block_size: int,
    vocab: int = WORDS_VOCAB,
    val_fraction: float = 0.1,
    max_bytes: int | None = None,
    data_root: str | os.PathLike[str] | None = None,
) -> tuple[TokenStream, TokenStream, TokenInfo]:
    """The training and validation streams of `"words"` data (see the module doc)."""
    if source != "words":
        raise TokenDataUnavailable(f"unknown word source `{source}`")
    train, val = _word_streams(path, vocab, val_fraction, max_bytes, data_root)
    for split, stream in (("training", train), ("validation", val)):
        if len(stream) <= block_size:
            raise TokenDataUnavailable(
                f"the {split} split of `{path}` has {len(stream)} words, "
                f"fewer than one window of block_size + 1 = {block_size + 1}"
            )
    name = Path(path).name if path != STDLIB_CORPUS else "the Python standard library"
    return train, val, TokenInfo(f"{name}, as words", (block_size,), (block_size,), vocab)


def _word_streams(
    path: str,
    vocab: int,
    val_fraction: float,
    max_bytes: int | None,
    data_root: str | os.PathLike[str] | None,
) -> tuple[TokenStream, TokenStream]:
    """The words of the text as ids: the first `1 - val_fraction` for training, the rest for
    validation; the vocabulary is the training part's."""
    if path == STDLIB_CORPUS:
        data = stdlib_corpus(max_bytes if max_bytes is not None else STDLIB_MAX_BYTES)
    else:
        with _resolve(path, data_root).open("rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes)
    words = words_of(data.decode("utf-8", errors="replace"))
    n_train = len(words) - round(len(words) * val_fraction)
    ids = {word: i for i, word in enumerate(word_vocabulary(words[:n_train], vocab))}
    tokens = torch.tensor([ids.get(word, 0) for word in words], dtype=torch.int64)
    return (
        TokenStream(tokens=tokens, length=n_train),
        TokenStream(tokens=tokens, start=n_train),
    )


def _text_streams(
    path: str, val_fraction: float, max_bytes: int | None, data_root: str | os.PathLike[str] | None
) -> tuple[TokenStream, TokenStream]:
    if path == STDLIB_CORPUS:
        data = stdlib_corpus(max_bytes if max_bytes is not None else STDLIB_MAX_BYTES)
    else:
        with _resolve(path, data_root).open("rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes)
    tokens = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0)
    n_val = round(len(tokens) * val_fraction)
    n_train = len(tokens) - n_val
    return (
        TokenStream(tokens=tokens, length=n_train),
        TokenStream(tokens=tokens, start=n_train),
    )


def _token_streams(train_path: Path, dtype: str) -> tuple[TokenStream, TokenStream]:
    if dtype not in TOKEN_DTYPES:
        raise TokenDataUnavailable(f"token dtype must be one of {', '.join(TOKEN_DTYPES)}")
    val_path = train_path.with_name("val.bin")
    if not val_path.is_file():
        raise TokenDataUnavailable(f"no validation tokens: {val_path} does not exist")
    return TokenStream(path=train_path, dtype=dtype), TokenStream(path=val_path, dtype=dtype)


def stdlib_files() -> list[Path]:
    """This Python's standard-library `.py` files, in sorted order of their relative paths."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skipped = {"site-packages", "dist-packages", "__pycache__"}
    files = [
        p
        for p in root.rglob("*.py")
        if not skipped & set(p.relative_to(root).parts) and p.is_file()
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def stdlib_corpus(max_bytes: int = STDLIB_MAX_BYTES) -> bytes:
    """The standard library's source concatenated (a blank line between files), capped."""
    chunks: list[bytes] = []
    size = 0
    for path in stdlib_files():
        if size >= max_bytes:
            break
        text = path.read_bytes() + b"\n\n"
        chunks.append(text)
        size += len(text)
    if not chunks:
        print(f"warning: no standard-library sources under {sys.prefix}", file=sys.stderr)
    return b"".join(chunks)[:max_bytes]


class WindowLoader:
    """Batches of random (train) or consecutive (validation) windows of a `TokenStream`."""

    def __init__(
        self,
        stream: TokenStream,
        *,
        block_size: int,
        batch_size: int,
        device: torch.device,
        shuffle: bool = True,
        windows_per_epoch: int | None = None,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.stream, self.block_size, self.batch_size = stream, block_size, batch_size
        self.device, self.shuffle, self.seed = device, shuffle, seed
        self.rank, self.world_size = rank, world_size
        whole = (len(stream) - 1) // block_size
        self.windows_per_epoch = windows_per_epoch if windows_per_epoch is not None else whole
        self.epoch = 0
        self._generator = torch.Generator()

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        if self.shuffle:
            return self.windows_per_epoch // self.world_size // self.batch_size
        mine = len(range(self.rank, self.windows_per_epoch, self.world_size))
        return -(-mine // self.batch_size)

    def starts(self) -> torch.Tensor:
        """This rank's window starts for the current epoch."""
        if not self.shuffle:
            every = torch.arange(self.windows_per_epoch) * self.block_size
            return every[self.rank :: self.world_size]
        # The last start leaves room for the window and its one-token-later targets.
        high = len(self.stream) - self.block_size
        self._generator.manual_seed((self.seed + self.epoch) * self.world_size + self.rank)
        count = len(self) * self.batch_size
        return torch.randint(0, high, (count,), generator=self._generator)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        starts = self.starts()
        pin = self.device.type == "cuda"
        for i in range(0, len(starts), self.batch_size):
            xb, yb = self.stream.windows(starts[i : i + self.batch_size], self.block_size)
            if pin:
                xb, yb = xb.pin_memory(), yb.pin_memory()
            yield xb.to(self.device, non_blocking=True), yb.to(self.device, non_blocking=True)

    def state_dict(self) -> dict[str, int]:
        # An epoch's windows are a function of (seed, epoch, rank): nothing else to save.
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.seed = state["seed"]
        self.epoch = state["epoch"]


class StreamLoader:
    """Batches of `batch_size` parallel streams, windows in order: pytorch/examples'
    word_language_model's `batchify` and `get_batch`, batch-first.

    The split's tokens are cut into `batch_size` contiguous streams of n tokens (the rest
    dropped, as `batchify` drops it): row i holds tokens [i n, (i + 1) n). Under DDP there
    are `batch_size` streams per rank, and each rank takes its own rows. Batch k is the
    window [k T, (k + 1) T) of every row and its targets one token later, so each row of
    batch k + 1 continues that row of batch k, which a carried state needs. Every batch is
    whole: a last window shorter than T is dropped (main.py trains on it).
    """

    def __init__(
        self,
        stream: TokenStream,
        *,
        block_size: int,
        batch_size: int,
        device: torch.device,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if stream.tokens is None:
            raise TokenDataUnavailable("streams in order are read from text, not token files")
        self.block_size, self.batch_size, self.device = block_size, batch_size, device
        tokens = stream.tokens[stream.start : stream.start + len(stream)].long()
        rows = batch_size * world_size
        n = len(tokens) // rows
        mine = tokens[: n * rows].view(rows, n)[rank * batch_size : (rank + 1) * batch_size]
        self.data = mine.to(device)
        self.windows = max(n - 1, 0) // block_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.windows

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        size = self.block_size
        for k in range(self.windows):
            i = k * size
            yield self.data[:, i : i + size], self.data[:, i + 1 : i + 1 + size]

    def state_dict(self) -> dict[str, int]:
        # The batches are the same every epoch: nothing else to save.
        return {"epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch = state["epoch"]


def detached(value: object) -> object:
    """A carried value cut from the graph of the batch that made it (main.py's
    `repackage_hidden`): tensors detached, tuples and lists of them element by element.

    Each is a copy, too: a step replayed as a CUDA graph writes its outputs over the last's."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, tuple | list):
        return type(value)(detached(v) for v in value)
    return value
