"""Write the .npz files the tests in this folder check against (standard library only).

    python make_pairs.py DIR

pairs.npz: image [40, 1, 8, 8] float32, text [40, 4] int64; uneven.npz: image [40, 64],
text [30, 4]; scalar.npz: image [40, 64], scale a 0-d float32; xyw.npz: x [40, 3] float32,
y [40] int64 labels 0..1, w [40, 1] float32.
"""

from __future__ import annotations

import struct
import sys
import zipfile
from pathlib import Path


def npy(descr: str, shape: tuple[int, ...], data: bytes) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def floats(count: int) -> bytes:
    return struct.pack(f"<{count}f", *([0.5] * count))


def ints(count: int) -> bytes:
    return struct.pack(f"<{count}q", *(i % 19 for i in range(count)))


def npz(path: Path, arrays: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in arrays.items():
            archive.writestr(f"{name}.npy", data)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    image = npy("<f4", (40, 1, 8, 8), floats(40 * 64))
    npz(folder / "pairs.npz", {"image": image, "text": npy("<i8", (40, 4), ints(160))})
    flat = npy("<f4", (40, 64), floats(40 * 64))
    npz(folder / "uneven.npz", {"image": flat, "text": npy("<i8", (30, 4), ints(120))})
    npz(folder / "scalar.npz", {"image": flat, "scale": npy("<f4", (), floats(1))})
    labels = struct.pack("<40q", *(i % 2 for i in range(40)))
    npz(folder / "xyw.npz", {"x": npy("<f4", (40, 3), floats(120)), "y": npy("<i8", (40,), labels),
                             "w": npy("<f4", (40, 1), floats(40))})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
