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
The LSTM/GRU scratch rule of tensorloom/dialects/layers/sequence.py is fitted
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


def measure(mode: str, hidden: int, layers: int, bidirectional: bool, batch: int, steps: int,
            precision: str) -> dict[str, object]:  # fmt: skip
    rnn = getattr(torch.nn, mode)(hidden, hidden, layers, batch_first=True,
                                  bidirectional=bidirectional).cuda()  # fmt: skip
    x = torch.randn(batch, steps, hidden, device="cuda", requires_grad=True)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    forward = backward = 0
    for _ in range(3):  # the first calls may pick algorithms; keep the last
        with torch.autocast("cuda", dtype=dtype, enabled=precision != "fp32"):
            forward, out = scratch(lambda: rnn(x)[0])
        grad = torch.ones_like(out)  # type: ignore[arg-type]
        backward, _ = scratch(partial(out.backward, grad))  # type: ignore[union-attr]
        rnn.zero_grad(set_to_none=True)
        x.grad = None
    return {"mode": mode, "hidden": hidden, "layers": layers, "bidirectional": bidirectional,
            "batch": batch, "steps": steps, "precision": precision,
            "forward": forward, "backward": backward}  # fmt: skip


CONV_GRID = {
    "channels": [16, 64, 256],
    "kernel": [1, 3],
    "stride": [1, 2],
    "size": [8, 32, 64],
    "batch": [8, 64, 256],
    "precision": ["fp32", "bf16"],
}


def measure_conv(channels: int, kernel: int, stride: int, size: int, batch: int,
                 precision: str) -> dict[str, object]:  # fmt: skip
    """A `channels` -> `channels` Conv2d, padding `kernel // 2`, on a square batch."""
    conv = torch.nn.Conv2d(channels, channels, kernel, stride, padding=kernel // 2).cuda()
    x = torch.randn(batch, channels, size, size, device="cuda", requires_grad=True)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    forward = backward = 0
    for _ in range(3):  # the first calls may pick algorithms; keep the last
        with torch.autocast("cuda", dtype=dtype, enabled=precision != "fp32"):
            forward, out = scratch(lambda: conv(x))
        grad = torch.ones_like(out)  # type: ignore[arg-type]
        backward, _ = scratch(partial(out.backward, grad))  # type: ignore[union-attr]
        conv.zero_grad(set_to_none=True)
        x.grad = None
    return {"channels": channels, "kernel": kernel, "stride": stride, "size": size, "batch": batch,
            "precision": precision, "forward": forward, "backward": backward}  # fmt: skip


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "rnn"
    grid, measure_one = (RNN_GRID, measure) if kind == "rnn" else (CONV_GRID, measure_conv)
    print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "device": torch.cuda.get_device_name(), "layers": kind}))  # fmt: skip
    for values in itertools.product(*grid.values()):
        print(json.dumps(measure_one(*values)), flush=True)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
