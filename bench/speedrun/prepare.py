"""The speedrun's fixed offline corpus: this Python's standard library as byte tokens in .bin files.

    python bench/speedrun/prepare.py                         # -> bench/speedrun/data/
    python bench/speedrun/prepare.py --out DIR --max-bytes 400000   # a small corpus (smoke tests)

The files are the standard library's `.py` sources (no site-packages), in sorted order of
their paths under the library root (`tensorloom`'s own `stdlib_files()`, which the
`"text"` dataset reads too). A file belongs to the validation split when the SHA-256 of its
relative path, read as a number, is 0 modulo 20 (about 5% of the files, whole files: no
validation text is a neighbour of training text). Each split is the files' bytes
concatenated, a blank line after each file, one token per byte (vocabulary 256), written
as nanoGPT's `train.bin` / `val.bin`: flat uint16 arrays, which TensorLoom's
`load_dataset("tokens", ...)` and bench/speedrun/common.py both read.

`meta.json` beside them records the Python version, the file lists' SHA-256, each split's
files, bytes and SHA-256, so two machines can tell whether they trained on the same corpus
(the library differs between Python versions).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import sysconfig
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
VAL_MODULUS = 20  # one file in 20 (by path hash) is validation


def stdlib_files() -> list[Path]:
    """The standard library's `.py` files, sorted by path (as runtime/tokens.py lists them)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skipped = {"site-packages", "dist-packages", "__pycache__"}
    files = [
        p
        for p in root.rglob("*.py")
        if not skipped & set(p.relative_to(root).parts) and p.is_file()
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def is_validation(relative: str) -> bool:
    """Whether a file (by its path under the library root) is in the validation split."""
    return int(hashlib.sha256(relative.encode()).hexdigest(), 16) % VAL_MODULUS == 0


def split_files(max_bytes: int | None) -> dict[str, list[Path]]:
    """The files of each split, in order, the training split capped at about `max_bytes`
    (and the validation split at a twentieth of it)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    splits: dict[str, list[Path]] = {"train": [], "val": []}
    sizes = {"train": 0, "val": 0}
    for path in stdlib_files():
        split = "val" if is_validation(path.relative_to(root).as_posix()) else "train"
        cap = None if max_bytes is None else max_bytes // (VAL_MODULUS if split == "val" else 1)
        if cap is not None and sizes[split] >= cap:
            continue
        splits[split].append(path)
        sizes[split] += path.stat().st_size + 2
    return splits


def write_split(paths: list[Path], out: Path) -> dict[str, object]:
    """Write the files' bytes as uint16 tokens to `out`; what meta.json says of the split."""
    data = b"".join(p.read_bytes() + b"\n\n" for p in paths)
    np.frombuffer(data, dtype=np.uint8).astype(np.uint16).tofile(out)
    return {
        "files": len(paths),
        "tokens": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def prepare(out: Path, max_bytes: int | None = None) -> dict[str, object]:
    """Write train.bin, val.bin and meta.json to `out`; the meta record."""
    out.mkdir(parents=True, exist_ok=True)
    root = Path(sysconfig.get_paths()["stdlib"])
    splits = split_files(max_bytes)
    listing = "\n".join(p.relative_to(root).as_posix() for p in splits["train"] + splits["val"])
    meta: dict[str, object] = {
        "corpus": "the Python standard library's .py sources, bytes",
        "python": platform.python_version(),
        "vocab_size": 256,
        "max_bytes": max_bytes,
        "file_list_sha256": hashlib.sha256(listing.encode()).hexdigest(),
    }
    for split, paths in splits.items():
        meta[split] = write_split(paths, out / f"{split}.bin")
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def ensure(out: Path, max_bytes: int | None = None) -> dict[str, object]:
    """The corpus in `out`, prepared unless meta.json says it is there with this cap."""
    meta_path = out / "meta.json"
    if meta_path.is_file() and (out / "train.bin").is_file() and (out / "val.bin").is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("max_bytes") == max_bytes:
            return meta  # type: ignore[no-any-return]
    return prepare(out, max_bytes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA, help="folder for train.bin, val.bin")
    parser.add_argument("--max-bytes", type=int, default=None, help="cap the training split")
    args = parser.parse_args(argv)
    meta = prepare(args.out, args.max_bytes)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
