"""How much scratch memory cuDNN's LSTM/GRU and convolutions take beyond what they save.

`tlc info` predicts training memory from what each layer saves; cuDNN also
allocates a workspace in forward and backward that PyTorch frees right after.
This measures it for a grid of configurations, on the GPU:

    python bench/cudnn_workspace.py rnn > bench/cudnn_workspace_rnn_h200.jsonl
    python bench/cudnn_workspace.py conv > bench/cudnn_workspace_conv_h200.jsonl

Each line: the configuration, and per pass (`forward`, `backward`) its scratch:
the most bytes alive at once in blocks the pass allocates and frees before it
returns (PyTorch's memory history), so neither what it saves nor the gradients
it leaves count.
The LSTM/GRU scratch rule of tensorloom/catalogue/layers/sequence.py is fitted
on the `rnn` grid. The `conv` grid shows why convolutions have no such rule:
cuDNN's choice of algorithm makes their scratch anything from 0 to 22 times the
input (docs/info.md).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

RNN_GRID = {
    "mode": ["LSTM", "GRU"],
    "hidden": [64, 128, 512],
    "layers": [1, 2],
    "bidirectional": [False, True],
    "batch": [8, 64, 256],
    "steps": [12, 64],
    "precision": ["fp32", "bf16"],
}


def scratch(fn: Callable[[], object]) -> tuple[int, object]:
    """The most bytes alive at once in blocks that `fn` allocates and frees before it returns."""
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=100_000, stacks="python")
    result = fn()
    torch.cuda.synchronize()
    events = torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]
    torch.cuda.memory._record_memory_history(enabled=None)
    opened: dict[int, int] = {}  # address -> index of the alloc event still holding it
    freed: set[int] = set()  # indices of the alloc events whose block was freed
    for i, e in enumerate(events):
        if e["action"] == "alloc":
            opened[e["addr"]] = i
        elif e["action"] == "free_requested" and e["addr"] in opened:
            freed.add(opened.pop(e["addr"]))
    holder: dict[int, int] = {}
    live = most = 0
    for i, e in enumerate(events):
        if e["action"] == "alloc":
            holder[e["addr"]] = i
            if i in freed:
                live += e["size"]
                most = max(most, live)
        elif e["action"] == "free_requested" and holder.pop(e["addr"], None) in freed:
            live -= e["size"]
    return most, result


CONV_GRID = {
    "channels": [16, 64, 256],
    "kernel": [1, 3],
    "stride": [1, 2],
    "size": [8, 32, 64],
    "batch": [8, 64, 256],
    "precision": ["fp32", "bf16"],
}

Built = tuple[torch.nn.Module, torch.Tensor, Callable[[], torch.Tensor]]
"""The layer, its input batch (which takes a gradient), and its forward on that batch."""
Build = Callable[..., Built]


def build_rnn(mode: str, hidden: int, layers: int, bidirectional: bool, batch: int,
              steps: int) -> Built:  # fmt: skip
    """A batch-first `hidden` -> `hidden` LSTM or GRU and its forward on a random batch."""
    rnn = getattr(torch.nn, mode)(hidden, hidden, layers, batch_first=True,
                                  bidirectional=bidirectional).cuda()  # fmt: skip
    x = torch.randn(batch, steps, hidden, device="cuda", requires_grad=True)
    return rnn, x, lambda: rnn(x)[0]


def build_conv(channels: int, kernel: int, stride: int, size: int,
               batch: int) -> Built:  # fmt: skip
    """A `channels` -> `channels` Conv2d, padding `kernel // 2`, on a square batch."""
    conv = torch.nn.Conv2d(channels, channels, kernel, stride, padding=kernel // 2).cuda()
    x = torch.randn(batch, channels, size, size, device="cuda", requires_grad=True)
    return conv, x, lambda: conv(x)


GRIDS: dict[str, tuple[dict[str, list[Any]], Build]] = {
    "rnn": (RNN_GRID, build_rnn),
    "conv": (CONV_GRID, build_conv),
}


def measure(build: Build, config: dict[str, Any]) -> dict[str, object]:
    """The configuration and the scratch of its forward and of its backward."""
    precision = config["precision"]
    layer, x, forward_call = build(**{k: v for k, v in config.items() if k != "precision"})
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    forward = backward = 0
    for _ in range(3):  # the first calls may pick algorithms; keep the last
        with torch.autocast("cuda", dtype=dtype, enabled=precision != "fp32"):
            forward, out = scratch(forward_call)
        grad = torch.ones_like(out)  # type: ignore[arg-type]
        backward, _ = scratch(partial(out.backward, grad))  # type: ignore[union-attr]
        layer.zero_grad(set_to_none=True)
        x.grad = None
    return {**config, "forward": forward, "backward": backward}


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "rnn"
    if kind not in GRIDS:
        sys.exit(f"usage: python bench/cudnn_workspace.py [{' | '.join(GRIDS)}]")
    grid, build = GRIDS[kind]
    print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "device": torch.cuda.get_device_name(), "layers": kind}))  # fmt: skip
    for values in itertools.product(*grid.values()):
        print(json.dumps(measure(build, dict(zip(grid, values, strict=True)))), flush=True)


if __name__ == "__main__":
    main()
