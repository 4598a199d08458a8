"""Lightning baseline: the transformer LM of `transformer_lm.py` under the Lightning Trainer.

The same model class, sizes, synthetic tokens, AdamW and precision; the data
comes through a DataLoader, as Lightning users write it. A Callback times the
steps after warm-up. Prints one JSON line like `transformer_lm.py`, or a
`skipped` record where Lightning is not installed.

Run: `python bench/handwritten/lightning_lm.py --precision bf16 [--compile default]`
"""

from __future__ import annotations

import json
import warnings
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from lightning_common import import_lightning, skipped, throughput_callback, trainer_kwargs
from torch.utils.data import DataLoader, TensorDataset
from transformer_lm import LMConfig, TransformerLM, mode_label, model_label, parse_args


def lightning_module(pl: ModuleType, cfg: LMConfig, compile_mode: str, fused: bool) -> Any:
    class LitLM(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = TransformerLM(cfg)
            self.step_model = (
                self.model
                if compile_mode == "none"
                else torch.compile(self.model, mode=compile_mode)
            )

        def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
            inputs, targets = batch
            logits = self.step_model(inputs)
            return F.cross_entropy(logits.reshape(-1, cfg.vocab), targets.reshape(-1))

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.AdamW(self.model.parameters(), lr=3e-4, fused=fused)

    return LitLM()


def token_loader(cfg: LMConfig, batch_size: int, batches: int) -> DataLoader:
    """Synthetic random tokens (fixed seed): inputs and next-token targets."""
    gen = torch.Generator().manual_seed(0)
    seq = torch.randint(0, cfg.vocab, (batch_size * batches, cfg.seq_len + 1), generator=gen)
    data = TensorDataset(seq[:, :-1], seq[:, 1:])
    return DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=True, pin_memory=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    name = "lightning_lm" if args.name == "handwritten_lm" else args.name
    pl = import_lightning()
    if pl is None:
        print(json.dumps(skipped(name)), flush=True)
        return
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    pl.seed_everything(0, verbose=False)
    cfg = LMConfig(
        vocab=args.vocab, d_model=args.d_model, n_heads=args.heads, n_layers=args.layers,
        seq_len=args.seq_len, dropout=args.dropout,
    )  # fmt: skip
    on_cuda = args.device != "cpu" and torch.cuda.is_available()
    module = lightning_module(pl, cfg, args.compile, fused=on_cuda)
    timer = throughput_callback(pl, args.warmup)
    device = "cuda" if on_cuda else "cpu"
    trainer = pl.Trainer(
        max_steps=args.warmup + args.steps,
        callbacks=[timer],
        **trainer_kwargs(device, args.precision),
    )
    trainer.fit(module, token_loader(cfg, args.batch_size, 64))
    result = {
        "name": name,
        "mode": mode_label(args.precision, args.compile),
        "precision": args.precision,
        "compile": args.compile,
        "tokens_per_s": timer.timed_steps * args.batch_size * cfg.seq_len / timer.elapsed,
        "ms_per_step": 1000.0 * timer.elapsed / timer.timed_steps,
        "peak_mem_bytes": torch.cuda.max_memory_allocated() if on_cuda else None,
        "steps": timer.timed_steps,
        "batch_size": args.batch_size,
        "seq_len": cfg.seq_len,
        "model": model_label(cfg),
        "device": torch.cuda.get_device_name() if on_cuda else "cpu",
        "torch": torch.__version__,
        "lightning": pl.__version__,
        "data": "synthetic",
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
