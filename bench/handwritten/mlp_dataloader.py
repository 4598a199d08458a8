"""Hand-written PyTorch baseline: the MNIST-sized MLP trained with a typical DataLoader loop.

784-256-64-10 with ReLU, Adam(lr=1e-3), batch 128, 60,000 samples: the real
MNIST IDX files when `--data-root` holds them, else synthetic-but-fixed ones
(see `mnist_idx.py`). The loop is the one most tutorials teach: a shuffled
`DataLoader` over a `TensorDataset` on the host, `.to(device)` per batch, and
`loss.item()` per step for the running loss. Prints one JSON line with the
median epoch time over epochs 2..N (epoch 1 pays for warm-up).

Run: `python bench/handwritten/mlp_dataloader.py --epochs 5 [--data-root DIR]`
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from mnist_idx import load_train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def dataset(data_root: Path | None, count: int) -> tuple[TensorDataset, str]:
    images, labels, source = load_train(data_root, count)
    x = torch.from_numpy(images.reshape(len(images), 784).astype("float32") / 255.0)
    y = torch.from_numpy(labels.astype("int64"))
    return TensorDataset(x, y), source


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train_epoch(
    model: nn.Module, loader: DataLoader, optimizer: torch.optim.Optimizer, device: torch.device
) -> float:
    """One epoch; returns the mean training loss."""
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    total, batches = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    return total / max(batches, 1)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--samples", type=int, default=60_000)
    p.add_argument("--data-root", type=Path, default=None)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--name", default="handwritten_mlp_dataloader")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.manual_seed(0)
    device = resolve_device(args.device)
    data, source = dataset(args.data_root, args.samples)
    loader = DataLoader(
        data, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
        pin_memory=device.type == "cuda",
    )  # fmt: skip
    model = MLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    epoch_s: list[float] = []
    losses: list[float] = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        losses.append(train_epoch(model, loader, optimizer, device))
        epoch_s.append(time.perf_counter() - start)
    steady = epoch_s[1:] or epoch_s
    result = {
        "name": args.name,
        "mode": "DataLoader loop, fp32",
        "epoch_s": statistics.median(steady),
        "epoch_times_s": epoch_s,
        "train_losses": losses,
        "samples": len(data),
        "batch_size": args.batch_size,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "data": source,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
