"""Write the folders of pairs the tests in this folder check against (standard library only).

    python make_folders.py DIR

pairs/: image/NNNN.png (8x8 grey), text/NNNN.txt (a caption), label/NNNN.cls, 12 samples;
partner/: text/0007.txt missing; shapes/: image/0003.png 16x16 RGB; pngkind/: image/0002.png
a 16-bit PNG; mixed/: text/0005.md beside the .txt files; badcls/: label/0004.cls "two".
"""

from __future__ import annotations

import shutil
import struct
import sys
import zlib
from pathlib import Path

WORDS = ["seven", "bold", "left", "high", "two", "thin", "right", "low"]


def png(width: int, height: int, channels: int, depth: int = 8) -> bytes:
    colour = {1: 0, 3: 2}[channels]
    row = bytes([0]) + bytes((i * 37) % 256 for i in range(width * channels * depth // 8))
    body = zlib.compress(row * height)

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(
        b"IEND", b"")  # fmt: skip


def pairs(folder: Path, count: int = 12) -> None:
    for name in ("image", "text", "label"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        stem = f"{i:04d}"
        (folder / "image" / f"{stem}.png").write_bytes(png(8, 8, 1))
        caption = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(1 + i % 4))
        (folder / "text" / f"{stem}.txt").write_text(caption + "\n", encoding="utf-8")
        (folder / "label" / f"{stem}.cls").write_text(f"{i % 10}\n")


def main(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in ("pairs", "partner", "shapes", "pngkind", "mixed", "badcls"):
        shutil.rmtree(root / name, ignore_errors=True)
        pairs(root / name)
    (root / "partner" / "text" / "0007.txt").unlink()
    (root / "shapes" / "image" / "0003.png").write_bytes(png(16, 16, 3))
    (root / "pngkind" / "image" / "0002.png").write_bytes(png(8, 8, 1, depth=16))
    (root / "mixed" / "text" / "0005.md").write_text("a note\n")
    (root / "badcls" / "label" / "0004.cls").write_text("two\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
