"""runtime/samples.py: the PNG it writes decodes (with zlib alone) to the grid's pixels,
the grid's size follows the images', and drawing samples leaves the training RNG alone."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
import torch

from tensorloom.backends.runtime.samples import (
    draw_samples,
    image_grid,
    write_png,
    write_sample_grid,
)


def decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, channels, rows without their filter bytes) of an 8-bit PNG whose rows
    use filter 0, each chunk's CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and b"IEND" in chunks
    channels = {0: 1, 2: 3}[colour]
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = width * channels + 1
    assert len(raw) == height * stride
    assert all(raw[r * stride] == 0 for r in range(height))
    return width, height, channels, b"".join(raw[r * stride + 1:(r + 1) * stride]
                                             for r in range(height))  # fmt: skip


def test_png_decodes_to_its_pixels(tmp_path: Path) -> None:
    pixels = torch.randint(0, 256, (5, 7, 3), dtype=torch.uint8)
    path = write_png(pixels, tmp_path / "deep" / "rgb.png")
    width, height, channels, rows = decode_png(path.read_bytes())
    assert (width, height, channels) == (7, 5, 3)
    assert rows == pixels.numpy().tobytes()


def test_grid_of_64_digits_is_8_by_8_enlarged_4_times(tmp_path: Path) -> None:
    images = torch.rand(64, 1, 8, 8)
    path = write_sample_grid(images, tmp_path / "grid.png")
    width, height, channels, rows = decode_png(path.read_bytes())
    side = 2 + 8 * (8 * 4 + 2)
    assert (width, height, channels) == (side, side, 1)
    grid = torch.frombuffer(bytearray(rows), dtype=torch.uint8).view(side, side)
    first = grid[2:34, 2:34].float() / 255.0  # the first image, enlarged 4 times
    expected = images[0, 0].repeat_interleave(4, 0).repeat_interleave(4, 1)
    assert torch.allclose(first, expected, atol=1 / 255)
    assert grid[:2].sum() == 0 and grid[:, 34:36].sum() == 0  # the padding is black


def test_grid_clamps_and_fills_a_partial_row() -> None:
    grid = image_grid(torch.full((5, 3, 40, 40), 2.0))
    assert grid.shape == (2 + 2 * 42, 2 + 3 * 42, 3)  # 3 across (ceil √5), 2 rows
    assert grid.max() == 255 and grid[44:, 86:].max() == 0  # the sixth place stays empty


def test_grid_refuses_what_is_not_images() -> None:
    with pytest.raises(ValueError, match="must be"):
        image_grid(torch.rand(4, 4, 8, 8))


def test_drawing_samples_repeats_its_noise_and_leaves_the_rng_alone() -> None:
    torch.manual_seed(3)
    before = torch.get_rng_state()
    first = draw_samples(lambda: torch.randn(2, 1, 4, 4, requires_grad=True) * 2, seed=7)
    second = draw_samples(lambda: torch.randn(2, 1, 4, 4) * 2, seed=7)
    assert torch.equal(first, second) and not first.requires_grad
    assert torch.equal(torch.get_rng_state(), before)
