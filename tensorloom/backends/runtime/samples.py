"""Sample grids: the images a program's `samples` function draws, written as one PNG.

    train (G, D) on data:                  images = draw_samples(partial(sample, G, D), seed=0)
        samples = sample                   write_sample_grid(images, "samples/train_gan.png")

`draw_samples` runs the function without gradients on a forked RNG seeded the same way
each epoch (the same noise shows the models' progress, as pytorch/examples' dcgan draws
its `fixed_noise` once, and the training RNG is left as it was, so a resumed run
continues exactly); `write_sample_grid` tiles `[N, C, H, W]` images in [0, 1] into rows,
enlarges small ones, and writes an 8-bit PNG with the standard library's zlib (no
torchvision or PIL needed).
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import torch


def draw_samples(sample: Callable[[], torch.Tensor], *, seed: int) -> torch.Tensor:
    """`sample()` under `torch.no_grad()` on an RNG seeded with `seed`, the global RNG
    state restored afterwards; the images on the CPU as float32."""
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices), torch.no_grad():
        torch.manual_seed(seed)
        images = sample()
    return images.detach().float().cpu()


def image_grid(
    images: torch.Tensor, *, columns: int | None = None, padding: int = 2
) -> torch.Tensor:
    """`[N, C, H, W]` images in [0, 1] (C 1 or 3) as one `[rows, cols, C]` uint8 grid: up to
    `columns` (default about √N) per row, `padding` black pixels between them, each image
    enlarged by a whole factor to at least 32 pixels a side."""
    if images.dim() != 4 or images.size(1) not in (1, 3):
        raise ValueError(f"sample images must be [N, 1 or 3, H, W], got {list(images.shape)}")
    count, channels, height, width = images.shape
    scale = max(1, 32 // max(height, width))
    tiles = images.clamp(0.0, 1.0).repeat_interleave(scale, 2).repeat_interleave(scale, 3)
    height, width = height * scale, width * scale
    across = columns or max(1, math.ceil(math.sqrt(count)))
    down = math.ceil(count / across)
    grid = torch.zeros(channels, padding + down * (height + padding),
                       padding + across * (width + padding))  # fmt: skip
    for index in range(count):
        top = padding + (index // across) * (height + padding)
        left = padding + (index % across) * (width + padding)
        grid[:, top : top + height, left : left + width] = tiles[index]
    return (grid * 255.0).round().to(torch.uint8).permute(1, 2, 0).contiguous()


def write_png(pixels: torch.Tensor, path: str | Path) -> Path:
    """An 8-bit grey (`[H, W, 1]`) or RGB (`[H, W, 3]`) PNG of `pixels`, uint8."""
    height, width, channels = pixels.shape
    colour = {1: 0, 3: 2}[channels]
    rows = pixels.reshape(height, width * channels).numpy().tobytes()
    stride = width * channels
    raw = b"".join(b"\x00" + rows[r * stride : (r + 1) * stride] for r in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
    data += _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def _chunk(kind: bytes, body: bytes) -> bytes:
    """A PNG chunk: length, type, body, and the CRC-32 of type and body."""
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def write_sample_grid(images: torch.Tensor, path: str | Path) -> Path:
    """`images` `[N, C, H, W]` in [0, 1] as a PNG grid at `path` (folders made)."""
    return write_png(image_grid(images), path)
