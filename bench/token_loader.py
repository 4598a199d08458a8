"""Peak memory of the `.bin` token loader on a 1 GB file (issue 17): it must stay flat.

    python bench/token_loader.py                 # writes a 1 GiB train.bin in a temp dir
    python bench/token_loader.py --gib 1 --batches 4000 --batch-size 32 --block-size 1024

Each measurement runs in a fresh Python process and reports its resident set
(VmRSS) after start-up (torch and numpy imported; importing them peaks higher
than what stays resident), after opening the file with
runtime/tokens.py, and after training-loop-style iteration over random windows
that span the whole file, plus the peak (VmHWM). For contrast, the same windows
are read once more from one persistent `numpy.memmap` (pages stay resident as
they are touched) and once after `numpy.fromfile` (the whole file read). The
file is written in 64 MiB chunks of random token ids, so writing it is flat too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
from tensorloom.backends.runtime.tokens import WindowLoader, load_token_dataset


def rss_mib(field="VmRSS"):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(field)


mode, path, batches, batch_size, block = sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
row = {"mode": mode, "after_imports_mib": rss_mib(), "peak_imports_mib": rss_mib("VmHWM")}
train, _, _ = load_token_dataset("tokens", path=path, block_size=block, dtype="uint16")
row["after_open_mib"] = rss_mib()
loader = WindowLoader(train, block_size=block, batch_size=batch_size, device=torch.device("cpu"),
                      windows_per_epoch=batches * batch_size)
starts = loader.starts()
start = time.perf_counter()
if mode == "tensorloom":
    for xb, yb in loader:
        assert xb.shape == (batch_size, block)
elif mode == "persistent-memmap":
    data = np.memmap(path, dtype=np.uint16, mode="r")
    for i in range(0, len(starts), batch_size):
        batch = starts[i : i + batch_size].tolist()
        torch.from_numpy(np.stack([data[s : s + block + 1].astype(np.int64) for s in batch]))
else:
    data = np.fromfile(path, dtype=np.uint16)
    for i in range(0, len(starts), batch_size):
        batch = starts[i : i + batch_size].tolist()
        torch.from_numpy(np.stack([data[s : s + block + 1].astype(np.int64) for s in batch]))
row["seconds"] = time.perf_counter() - start
row["after_iteration_mib"] = rss_mib()
row["peak_mib"] = rss_mib("VmHWM")
print(json.dumps(row))
"""


def write_tokens(folder: Path, gib: float) -> Path:
    import numpy as np

    chunk = 32 * 1024**2  # tokens per write: 64 MiB
    total = int(gib * 1024**3) // 2
    rng = np.random.default_rng(0)
    with (folder / "train.bin").open("wb") as f:
        for start in range(0, total, chunk):
            rng.integers(0, 50257, min(chunk, total - start), dtype=np.uint16).tofile(f)
    rng.integers(0, 50257, 1 << 20, dtype=np.uint16).tofile(folder / "val.bin")
    return folder / "train.bin"


def measure(mode: str, path: Path, args: argparse.Namespace) -> dict[str, object]:
    command = [sys.executable, "-c", CHILD, str(ROOT), mode, str(path),
               str(args.batches), str(args.batch_size), str(args.block_size)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--batches", type=int, default=4000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--block-size", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl-tokens-") as tmp:
        start = time.perf_counter()
        path = write_tokens(Path(tmp), args.gib)
        size = path.stat().st_size
        print(f"wrote {size:,} bytes ({size // 2:,} uint16 tokens) in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        windows = args.batches * args.batch_size
        read_mib = windows * (args.block_size + 1) * 2 / 1024**2
        print(f"{args.batches} batches of {args.batch_size} x {args.block_size} random windows "
              f"({windows:,} windows, {read_mib:,.0f} MiB read)")  # fmt: skip
        print("| loader | RSS after imports (MiB) | peak during imports | after open | "
              "after iteration | peak | s |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|")
        for mode in ("tensorloom", "persistent-memmap", "fromfile"):
            row = measure(mode, path, args)
            print(f"| {mode} | {row['after_imports_mib']:.0f} | {row['peak_imports_mib']:.0f} | "
                  f"{row['after_open_mib']:.0f} | "
                  f"{row['after_iteration_mib']:.0f} | {row['peak_mib']:.0f} | "
                  f"{row['seconds']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
