"""The emitted GPT-2's first weights against nanoGPT's, at full size, on the CPU.

    python bench/prepare_gpu.py && python bench/gpt2_init_check.py

bench/programs/gpt2.nml initialises itself with the language's layer init (`init="normal"`,
`std=`, `out_std=`, `bias_init=`); nanoGPT (bench/handwritten/gpt2.py) with its
`_init_weights`. The two draw in different orders, so the weights differ, but their
distributions must not: this prints, per tensor, the standard deviation and mean of both
(after `torch.manual_seed(0)` each), the largest relative difference of the standard
deviations over the 148 tensors, and both models' first loss on the same random tokens
(an untrained GPT-2's is about ln(50,257) = 10.82). One JSON line last.
"""

from __future__ import annotations

import argparse
import json
import math
import runpy
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "handwritten"))

import gpt2  # noqa: E402


def stats(t: torch.Tensor) -> tuple[float, float]:
    t = t.detach().float()
    return (t.std().item() if t.numel() > 1 else 0.0), t.mean().item()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--script", type=Path, default=BENCH / "generated" / "gpt2_tl_default.py")
    p.add_argument("--tokens", type=int, default=256, help="sequence length of the loss check")
    args = p.parse_args(argv)
    emitted_class = runpy.run_path(str(args.script), run_name="gpt2_init_check")["GPT"]
    torch.manual_seed(0)
    emitted = emitted_class()
    torch.manual_seed(0)
    hand = gpt2.GPT()
    ours, theirs = dict(emitted.named_parameters()), dict(hand.named_parameters())
    assert set(ours) == set(theirs), "the state-dict keys differ"
    worst, rows = 0.0, []
    for name in sorted(theirs):
        (std_e, mean_e), (std_h, mean_h) = stats(ours[name]), stats(theirs[name])
        if std_h > 0:
            worst = max(worst, abs(std_e / std_h - 1))
        rows.append({"tensor": name, "std": [std_e, std_h], "mean": [mean_e, mean_h]})
        if not name.startswith("h.") or name.startswith("h.0."):
            print(f"{name:26s} std {std_e:.5f} / {std_h:.5f}   mean {mean_e:+.5f} / {mean_h:+.5f}")
    torch.manual_seed(1)
    x = torch.randint(0, 256, (2, args.tokens))
    y = torch.randint(0, 256, (2, args.tokens))
    with torch.no_grad():
        first_emitted = F.cross_entropy(emitted(x).flatten(0, 1), y.flatten()).item()
        first_hand = hand(x, y).item()
    result = {
        "tensors": len(rows), "max_relative_std_difference": worst,
        "first_loss": {"emitted": first_emitted, "nanogpt": first_hand,
                       "ln_vocab": math.log(50257)},
        "torch": torch.__version__,
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
