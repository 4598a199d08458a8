"""examples/mnist.tl written by hand: the digits MLP, Adam, 10 epochs, batch 64, fp16 on CUDA."""

import argparse
import time

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def load(device):
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).flatten(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    val, train = order[: len(x) // 10], order[len(x) // 10 :]
    return (x[train].to(device), y[train].to(device)), (x[val].to(device), y[val].to(device))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    (x, y), (vx, vy) = load(device)
    model = Classifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(enabled=device.type == "cuda")
    for epoch in range(args.epochs):
        start = time.perf_counter()
        model.train()
        perm = torch.randperm(len(x), device=device)
        total = torch.zeros((), device=device)
        steps = len(x) // args.batch_size
        for i in range(steps):
            idx = perm[i * args.batch_size : (i + 1) * args.batch_size]
            with torch.autocast(device.type, torch.float16, enabled=device.type == "cuda"):
                loss = F.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach()
        model.eval()
        with torch.no_grad():
            accuracy = (model(vx).argmax(1) == vy).float().mean().item()
        train_loss = (total / steps).item()
        elapsed = time.perf_counter() - start
        print(f"epoch {epoch + 1}  loss {train_loss:.4f}  acc {accuracy:.2%}  {elapsed:.2f}s")


if __name__ == "__main__":
    main()
