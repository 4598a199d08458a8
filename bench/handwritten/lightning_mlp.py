"""Lightning baseline: the MNIST-sized MLP of `mlp_dataloader.py` under the Lightning Trainer.

Same model, data (real IDX files from `--data-root`, else synthetic-but-fixed),
batch size and Adam; a shuffled DataLoader as Lightning users write it, with
`self.log("train_loss", ...)` in the training step. Prints one JSON line with
the median epoch time over epochs 2..N, or a `skipped` record where Lightning
is not installed.

Run: `python bench/handwritten/lightning_mlp.py --epochs 5 [--data-root DIR]`
"""

from __future__ import annotations

import json
import statistics
import warnings
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from lightning_common import import_lightning, skipped, throughput_callback, trainer_kwargs
from mlp_dataloader import MLP, dataset, parse_args
from torch.utils.data import DataLoader


def lightning_module(pl: ModuleType) -> Any:
    class LitMLP(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = MLP()

        def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
            x, y = batch
            loss = F.cross_entropy(self.model(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.Adam(self.model.parameters(), lr=1e-3)

    return LitMLP()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    name = "lightning_mlp" if args.name == "handwritten_mlp_dataloader" else args.name
    pl = import_lightning()
    if pl is None:
        print(json.dumps(skipped(name)), flush=True)
        return
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    pl.seed_everything(0, verbose=False)
    on_cuda = args.device != "cpu" and torch.cuda.is_available()
    data, source = dataset(args.data_root, args.samples)
    loader = DataLoader(
        data, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
        pin_memory=on_cuda,
    )  # fmt: skip
    timer = throughput_callback(pl, warmup_steps=0)
    trainer = pl.Trainer(
        max_epochs=args.epochs, callbacks=[timer],
        **trainer_kwargs("cuda" if on_cuda else "cpu", "fp32"),
    )  # fmt: skip
    trainer.fit(lightning_module(pl), loader)
    steady = timer.epoch_s[1:] or timer.epoch_s
    result = {
        "name": name,
        "mode": "Lightning Trainer, fp32",
        "epoch_s": statistics.median(steady),
        "epoch_times_s": timer.epoch_s,
        "samples": len(data),
        "batch_size": args.batch_size,
        "device": torch.cuda.get_device_name() if on_cuda else "cpu",
        "torch": torch.__version__,
        "lightning": pl.__version__,
        "data": source,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
