"""A train block that carries the LSTM's state between batches, end to end.

The emitted loop is compared with pytorch/examples' word_language_model/main.py loop
written by hand (`batchify`, `get_batch`, `repackage_hidden` before each batch, a fresh
hidden state each epoch and for evaluation, clip 0.25, plain SGD at lr 20, the lr divided
by 4 when validation does not improve) on the same weights and text: the same loss, to the
bit, at every step of three epochs, and the same validation losses (to float32 rounding).
A run cut in the middle of an epoch and resumed continues from the carried state the
checkpoint holds and ends where an uncut run ends, bit for bit. Under DDP (two gloo ranks)
each rank carries its own streams' state, as the per-rank loop by hand does, and resumes
from its own.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import os
import subprocess
import sys
import sysconfig
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from tests.e2e.test_train_pipeline import compile_program, records, run

VOCAB, BPTT, BATCH = 200, 10, 4
CORPUS = Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py"  # real text, offline

PROGRAM = f"""
model LM:
    layer encoder = Embedding({VOCAB}, 16)
    layer rnn = LSTM(16, 32, num_layers=2)
    layer decoder = Linear(32, {VOCAB})

    fn forward(self, x: Tensor[B, T], state: (Tensor, Tensor)):
        let (out, next) = self.rnn(self.encoder(x), state)
        return (self.decoder(out), next)

fn lm_loss(net, x, y, state):
    let (logits, next) = net(x, state)
    return (cross_entropy(logits.flatten(0, 1), y.flatten()), next)

// The share of next words guessed right, from the state the window starts from.
fn acc(net, x, y, state) -> Tensor:
    let (logits, next) = net(x, state)
    return mean((argmax(logits, -1) == y).float())

let net = LM()
let data = load_dataset("words", path="corpus.txt", block_size={BPTT}, vocab={VOCAB},
                        max_bytes=6000)

train net on data:
    epochs = 3
    batch_size = {BATCH}
    optimizer = SGD(lr=20.0)
    grad_clip = 0.25
    lr_schedule = plateau(factor=0.25, patience=0, threshold=0.0)
    objective = lm_loss
    carry state = none
    metrics = [perplexity, acc]
"""


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def _compile(tmp_path: Path, name: str) -> Path:
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    return compile_program(tmp_path, PROGRAM, name=name)


# --- main.py's loop, by hand ------------------------------------------------------------------


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source: torch.Tensor, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    seq_len = min(BPTT, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def repackage_hidden(h: Any) -> Any:
    if h is None:
        return None
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def windows(source: torch.Tensor) -> list[int]:
    """main.py's `range(0, source.size(0) - 1, bptt)`, less a last window shorter than bptt
    (the emitted loader keeps every batch whole)."""
    return [i for i in range(0, source.size(0) - 1, BPTT) if i + BPTT <= source.size(0) - 1]


def criterion_of(output: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """main.py's criterion on the batch-first model's output: its seq-first targets put in
    the output's (batch, position) order, so that the mean sums in the same order."""
    by_row = targets.reshape(-1, output.size(0)).t().reshape(-1)
    return F.cross_entropy(output.reshape(-1, VOCAB), by_row)


def evaluate(model: torch.nn.Module, source: torch.Tensor, accuracy: list[float] | None = None
             ) -> float:  # fmt: skip
    """main.py's `evaluate`; `accuracy` gets the mean share of next words guessed right."""
    model.eval()
    losses, hits, hidden = [], [], None
    with torch.no_grad():
        for i in windows(source):
            data, targets = get_batch(source, i)
            output, hidden = model(data.t(), hidden)
            hidden = repackage_hidden(hidden)
            losses.append(criterion_of(output, targets).item())
            by_row = targets.reshape(-1, output.size(0)).t()
            hits.append((output.argmax(-1) == by_row).float().mean().item())
    if accuracy is not None:
        accuracy.append(sum(hits) / len(hits))
    return sum(losses) / len(losses)  # main.py's mean: every window is BPTT long here


def main_py(model: torch.nn.Module, train: torch.Tensor, val: torch.Tensor, epochs: int,
            accuracy: list[float] | None = None) -> tuple[list[float], list[float]]:  # fmt: skip
    lr, best, losses, validated = 20.0, None, [], []
    train_data, val_data = batchify(train, BATCH), batchify(val, BATCH)
    for _ in range(epochs):
        model.train()
        hidden = None  # model.init_hidden(args.batch_size): zeros
        for i in windows(train_data):
            data, targets = get_batch(train_data, i)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data.t(), hidden)
            loss = criterion_of(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                assert p.grad is not None
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(model, val_data, accuracy)
        validated.append(val_loss)
        if best is None or val_loss < best:
            best = val_loss
        else:
            lr /= 4.0
    return losses, validated


def test_emitted_loop_equals_main_py_tbptt_loop(tmp_path: Path) -> None:
    m = _load(_compile(tmp_path, "word_lm_equal"))
    losses: list[float] = []
    validated: list[float] = []
    initial: dict[str, torch.Tensor] = {}
    build, step, evaluate_emitted = m.build_trainer, m._forward_backward, m.evaluate

    def built(args: Any, ctx: Any) -> Any:
        trainer = build(args, ctx)
        initial.update(copy.deepcopy(trainer.model.state_dict()))
        return trainer

    def stepped(*args: Any, **kwargs: Any) -> torch.Tensor:
        loss = step(*args, **kwargs)
        losses.append(loss.item())
        return loss

    def evaluated(*args: Any, **kwargs: Any) -> dict[str, float]:
        record = evaluate_emitted(*args, **kwargs)
        validated.append(record["val_loss"])
        return record

    for name, wrapper in (("build_trainer", built), ("_forward_backward", stepped),
                          ("evaluate", evaluated)):  # fmt: skip
        setattr(m, name, wrapper)  # the emitted functions look these up when they run
    argv = ["--device", "cpu", "--precision", "fp32", "--data-root", str(tmp_path),
            "--checkpoint-dir", str(tmp_path / "ck"), "--metrics", str(tmp_path / "m.jsonl")]
    assert m.main(argv) == 0
    train, _, _ = m.load_word_dataset("words", path=str(tmp_path / "corpus.txt"),
                                         block_size=BPTT, vocab=VOCAB, max_bytes=6000)
    model = m.LM()
    model.load_state_dict(initial)
    tokens = train.tokens
    assert tokens is not None
    accuracy: list[float] = []
    expected, expected_val = main_py(model, tokens[: len(train)], tokens[len(train) :], 3,
                                     accuracy)  # fmt: skip
    assert len(losses) == len(expected) > 3 * 20
    assert losses == expected  # the same operations in the same order: equal to the bit
    # validation sums batch losses times rows in float32 on the device: equal to rounding
    assert validated == pytest.approx(expected_val, rel=1e-6)
    rows = records(tmp_path / "m.jsonl")
    for row, val_loss, acc in zip(rows, expected_val, accuracy, strict=True):
        assert row["val_perplexity"] == pytest.approx(math.exp(val_loss), rel=1e-4)
        # `acc` takes the state each window starts from, as the loss does
        assert row["val_acc"] == pytest.approx(acc, rel=1e-6)
    assert rows[-1]["val_loss"] < rows[0]["val_loss"]  # type: ignore[operator]


def test_carried_state_resumes_exactly_mid_epoch(tmp_path: Path) -> None:
    script = _compile(tmp_path, "word_lm_resume")
    common = ["--epochs", "2", "--precision", "fp32", "--data-root", str(tmp_path)]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, *common, "--checkpoint-dir", str(whole), "--metrics", str(tmp_path / "w.jsonl"))
    per_epoch = int(records(tmp_path / "w.jsonl")[0]["steps"])  # type: ignore[arg-type]
    stop = per_epoch + per_epoch // 2  # in the middle of the second epoch
    run(script, *common, "--max-steps", str(stop), "--checkpoint-dir", str(cut))
    saved = torch.load(cut / "last.pt", weights_only=True)
    h, c = saved["extra"]["carried"]["state"]
    assert h.shape == c.shape == (2, BATCH, 32) and not h.requires_grad
    assert saved["extra"]["carry"]["batches"] == per_epoch // 2
    run(script, *common, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"),
        "--metrics", str(tmp_path / "c.jsonl"))  # fmt: skip
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 2 * per_epoch
    for key, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][key]), key
    for x, y in zip(a["extra"]["carried"]["state"], b["extra"]["carried"]["state"], strict=True):
        assert torch.equal(x, y)
    last_whole, last_cut = records(tmp_path / "w.jsonl")[-1], records(tmp_path / "c.jsonl")[-1]
    for key in ("train_loss", "val_loss", "val_perplexity"):
        assert last_whole[key] == last_cut[key], key


# --- DDP: each rank carries its own streams' state ------------------------------------------

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"]


def ddp_by_hand(model: torch.nn.Module, train: torch.Tensor, val: torch.Tensor, epochs: int,
                ranks: int = 2) -> tuple[list[list[float]], list[float]]:  # fmt: skip
    """main.py's loop as DDP runs it on `ranks` processes: the text batchified into
    `ranks * BATCH` streams, each rank its own BATCH of them and its own hidden state,
    the gradients averaged across ranks (the mean of the ranks' losses), then clipped."""
    lr, best, losses, validated = 20.0, None, [[] for _ in range(ranks)], []  # type: ignore[var-annotated]
    train_data, val_data = batchify(train, BATCH * ranks), batchify(val, BATCH * ranks)

    def shards(source: torch.Tensor) -> list[torch.Tensor]:
        return [source[:, r * BATCH : (r + 1) * BATCH].contiguous() for r in range(ranks)]

    for _ in range(epochs):
        model.train()
        hidden: list[Any] = [None] * ranks
        for i in windows(train_data):
            model.zero_grad()
            total = torch.zeros(())
            for r, shard in enumerate(shards(train_data)):
                data, targets = get_batch(shard, i)
                hidden[r] = repackage_hidden(hidden[r])
                output, hidden[r] = model(data.t(), hidden[r])
                loss = criterion_of(output, targets)
                losses[r].append(loss.item())
                total = total + loss / ranks  # DDP's all-reduce averages the gradients
            total.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                assert p.grad is not None
                p.data.add_(p.grad, alpha=-lr)
        val_loss = sum(evaluate(model, shard) for shard in shards(val_data)) / ranks
        validated.append(val_loss)
        if best is None or val_loss < best:
            best = val_loss
        else:
            lr /= 4.0
    return losses, validated


def _torchrun(script: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    command = [*TORCHRUN, str(script), "--device", "cpu", "--precision", "fp32", *args]
    done = subprocess.run(command, cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert (done.returncode == 0) == ok, done.stderr[-3000:]
    return done


@pytest.mark.distributed
def test_two_ddp_ranks_carry_their_own_streams_and_resume_exactly(tmp_path: Path) -> None:
    """`distributed = true` with `carry`: two gloo ranks, each over its own BATCH streams
    of the 2 * BATCH that main.py's `batchify` cuts, each carrying its own LSTM state, train
    as the hand-written per-rank loop does; cut mid-epoch, the run resumes on two ranks from
    each rank's own saved state and ends where the uncut run ends, bit for bit."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    program = PROGRAM.replace("epochs = 3", "epochs = 2") + "    distributed = true\n"
    script = compile_program(tmp_path, program, name="word_lm_ddp")
    common = ["--data-root", str(tmp_path)]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _torchrun(script, *common, "--checkpoint-dir", str(whole), "--metrics", "w.jsonl")

    m = _load(script)
    m.seed_everything(0)  # as build_trainer does before it builds the model
    model = m.LM()
    train, _, _ = m.load_word_dataset("words", path=str(tmp_path / "corpus.txt"),
                                      block_size=BPTT, vocab=VOCAB, max_bytes=6000)  # fmt: skip
    tokens = train.tokens
    assert tokens is not None
    losses, validated = ddp_by_hand(model, tokens[: len(train)], tokens[len(train) :], 2)
    rows = records(tmp_path / "w.jsonl")
    per_epoch = int(rows[0]["steps"])  # type: ignore[arg-type]
    assert per_epoch == len(losses[0]) // 2 > 10
    for epoch, row in enumerate(rows):  # the epoch's mean over both ranks' streams
        span = slice(epoch * per_epoch, (epoch + 1) * per_epoch)
        mean = (sum(losses[0][span]) + sum(losses[1][span])) / (2 * per_epoch)
        assert row["train_loss"] == pytest.approx(mean, rel=1e-5)
    assert [r["val_loss"] for r in rows] == pytest.approx(validated, rel=1e-5)
    saved = torch.load(whole / "last.pt", weights_only=True)
    for key, tensor in model.state_dict().items():
        assert torch.allclose(saved["model"][key], tensor, atol=1e-5), key
    by_rank = saved["extra"]["carried_by_rank"]
    assert len(by_rank) == 2 and not torch.equal(by_rank[0]["state"][0], by_rank[1]["state"][0])

    stop = per_epoch + per_epoch // 2  # in the middle of the second epoch
    _torchrun(script, *common, "--max-steps", str(stop), "--checkpoint-dir", str(cut))
    last = cut / "last.pt"
    refused = run_refused(script, *common, "--resume", str(last), "--checkpoint-dir", str(cut))
    assert "resume it at world size 2, not 1" in refused
    _torchrun(script, *common, "--resume", str(last), "--checkpoint-dir", str(cut),
              "--metrics", "c.jsonl")  # fmt: skip
    a, b = saved, torch.load(last, weights_only=True)
    assert a["step"] == b["step"] == 2 * per_epoch
    for key, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][key]), key
    for mine, theirs in zip(a["extra"]["carried_by_rank"], b["extra"]["carried_by_rank"],
                            strict=True):  # fmt: skip
        for x, y in zip(mine["state"], theirs["state"], strict=True):
            assert torch.equal(x, y)
    assert records(tmp_path / "c.jsonl")[-1]["val_loss"] == rows[-1]["val_loss"]
    # the resumed epoch's train loss is both ranks' (the cut kept their mean partial sum)
    resumed = records(tmp_path / "c.jsonl")[-1]["train_loss"]
    assert resumed == pytest.approx(rows[-1]["train_loss"], rel=1e-6)


@pytest.mark.distributed
def test_two_fsdp_ranks_carry_their_own_streams_and_resume_exactly(tmp_path: Path) -> None:
    """`distributed = fsdp` with `carry`: two gloo ranks over the model's shards, each
    carrying its own streams' state, train as the hand-written per-rank DDP loop does (to
    1e-5); the sharded saves hold each rank's state; cut mid-epoch, the run resumes on two
    ranks from each rank's own and ends bit for bit where the uncut run ends, and refuses to
    resume on one."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    program = PROGRAM.replace("epochs = 3", "epochs = 2") + "    distributed = fsdp\n"
    script = compile_program(tmp_path, program, name="word_lm_fsdp")
    common = ["--data-root", str(tmp_path)]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _torchrun(script, *common, "--checkpoint-dir", str(whole), "--metrics", "w.jsonl")

    m = _load(script)
    m.seed_everything(0)  # as build_trainer does before it builds the model
    model = m.LM()
    train, _, _ = m.load_word_dataset("words", path=str(tmp_path / "corpus.txt"),
                                      block_size=BPTT, vocab=VOCAB, max_bytes=6000)  # fmt: skip
    tokens = train.tokens
    assert tokens is not None
    losses, validated = ddp_by_hand(model, tokens[: len(train)], tokens[len(train) :], 2)
    rows = records(tmp_path / "w.jsonl")
    per_epoch = int(rows[0]["steps"])  # type: ignore[arg-type]
    assert per_epoch == len(losses[0]) // 2 > 10
    for epoch, row in enumerate(rows):  # the epoch's mean over both ranks' streams
        span = slice(epoch * per_epoch, (epoch + 1) * per_epoch)
        mean = (sum(losses[0][span]) + sum(losses[1][span])) / (2 * per_epoch)
        assert row["train_loss"] == pytest.approx(mean, rel=1e-5)
    assert [r["val_loss"] for r in rows] == pytest.approx(validated, rel=1e-5)
    weights = m.consolidate_checkpoint(whole / "epoch-0002", tmp_path / "w.pt", model=m.LM())
    for key, tensor in torch.load(weights, weights_only=True).items():
        assert torch.allclose(model.state_dict()[key], tensor, atol=1e-5), key
    saved = torch.load(whole / "epoch-0002" / "train_state.pt", weights_only=True)
    by_rank = saved["extra"]["carried_by_rank"]
    assert len(by_rank) == 2 and not torch.equal(by_rank[0]["state"][0], by_rank[1]["state"][0])

    stop = per_epoch + per_epoch // 2  # in the middle of the second epoch
    _torchrun(script, *common, "--max-steps", str(stop), "--checkpoint-dir", str(cut))
    refused = run_refused(script, *common, "--resume", str(cut / "last"),
                          "--checkpoint-dir", str(cut))  # fmt: skip
    assert "resume it at world size 2, not 1" in refused
    _torchrun(script, *common, "--resume", str(cut / "last"), "--checkpoint-dir", str(cut),
              "--metrics", "c.jsonl")  # fmt: skip
    resumed = torch.load(cut / "epoch-0002" / "train_state.pt", weights_only=True)
    assert saved["step"] == resumed["step"] == 2 * per_epoch
    for mine, theirs in zip(by_rank, resumed["extra"]["carried_by_rank"], strict=True):
        for x, y in zip(mine["state"], theirs["state"], strict=True):
            assert torch.equal(x, y)
    again = m.consolidate_checkpoint(cut / "epoch-0002", tmp_path / "c.pt", model=m.LM())
    a, b = torch.load(weights, weights_only=True), torch.load(again, weights_only=True)
    for key, tensor in a.items():
        assert torch.equal(tensor, b[key]), key
    assert records(tmp_path / "c.jsonl")[-1]["val_loss"] == rows[-1]["val_loss"]
    resumed = records(tmp_path / "c.jsonl")[-1]["train_loss"]
    assert resumed == pytest.approx(rows[-1]["train_loss"], rel=1e-6)


def run_refused(script: Path, *args: str) -> str:
    """A one-process run that exits 1 with a one-line error; its stderr."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(script), "--device", "cpu", *args],
                          cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=240, check=False)  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stderr


# --- `carry` in a block of `step` lines ------------------------------------------------------

STEPS = f"""
model LM:
    layer encoder = Embedding({VOCAB}, 16)
    layer rnn = LSTM(16, 32, num_layers=2)
    layer decoder = Linear(32, {VOCAB})

    fn forward(self, x: Tensor[B, T], state: (Tensor, Tensor)):
        let (out, next) = self.rnn(self.encoder(x), state)
        return (self.decoder(out), next)

model Probe:
    layer fc = Linear(32, 32)

    fn forward(self, h: Tensor[L, B, 32]) -> Tensor[L, B, 32]:
        return self.fc(h)

fn lm_loss(net, probe, x, y, state):
    let (logits, next) = net(x, state)
    return (cross_entropy(logits.flatten(0, 1), y.flatten()), next)

// A probe of the carried state: the LSTM's cells from its hidden state.
fn probe_loss(net, probe, x, y, state):
    let (h, c) = state
    return (mse(probe(h), c), state)

let net = LM()
let probe = Probe()
let data = load_dataset("words", path="corpus.txt", block_size={BPTT}, vocab={VOCAB},
                        max_bytes=6000)

train (net, probe) on data:
    epochs = 2
    batch_size = {BATCH}
    step lm_loss with SGD(net, lr=20.0, grad_clip=0.25)
    step probe_loss with Adam(probe, lr=0.01)
    carry state = none
"""


def _steps_by_hand(net: torch.nn.Module, probe: torch.nn.Module, batches: list[Any],
                   ) -> tuple[list[float], list[float]]:  # fmt: skip
    """One epoch as main.py would write two optimizers over one carried state: the LM's
    step, then the probe's on the state it left, detached before each."""
    opt_lm = torch.optim.SGD(net.parameters(), lr=20.0)
    opt_probe = torch.optim.Adam(probe.parameters(), lr=0.01)
    lm, probed, hidden = [], [], None
    for xb, yb in batches:
        hidden = repackage_hidden(hidden)
        opt_lm.zero_grad(set_to_none=True)
        output, hidden = net(xb, hidden)
        loss = F.cross_entropy(output.flatten(0, 1), yb.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(net.parameters()), 0.25)
        opt_lm.step()
        hidden = repackage_hidden(hidden)
        opt_probe.zero_grad(set_to_none=True)
        h, c = hidden
        probe_loss = F.mse_loss(probe(h), c)
        probe_loss.backward()
        opt_probe.step()
        lm.append(loss.item())
        probed.append(probe_loss.item())
    return lm, probed


def test_steps_thread_the_carried_state_as_a_loop_by_hand(tmp_path: Path) -> None:
    """`carry` with `step` lines: the LM's step takes the state the last batch left and
    returns its own; the probe's step takes that one. The emitted `train_step` equals the
    loop by hand over an epoch, to the bit, and validation threads the state too."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    m = _load(compile_program(tmp_path, STEPS, name="word_lm_steps"))
    args = m.parse_args(["--device", "cpu", "--precision", "fp32", "--data-root",
                         str(tmp_path)])  # fmt: skip
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    net, probe = m.LM(), m.Probe()
    net.load_state_dict(trainer.net.state_dict())
    probe.load_state_dict(trainer.probe.state_dict())
    batches = list(trainer.train_loader)
    assert len(batches) > 20
    lm, probed = _steps_by_hand(net, probe, batches)
    trainer.carried = {"state": None}  # as each epoch starts
    for i, (xb, yb) in enumerate(batches):
        emitted = m.train_step(trainer, xb, yb)
        assert emitted["lm_loss"].item() == lm[i], i
        assert emitted["probe_loss"].item() == probed[i], i
    h, c = trainer.carried["state"]
    assert h.shape == c.shape == (2, BATCH, 32) and not h.requires_grad
    for mine, theirs in ((trainer.net, net), (trainer.probe, probe)):
        for (key, a), b in zip(mine.state_dict().items(), theirs.state_dict().values(),
                               strict=True):  # fmt: skip
            assert torch.equal(a, b), key

    for model in (trainer.net, trainer.probe, net, probe):
        model.eval()
    validated = m.mean_objectives(partial(m.objective_values, trainer, {"state": None}),
                                  trainer.val_loader)  # fmt: skip
    losses, hidden = [], None
    with torch.no_grad():
        for xb, yb in trainer.val_loader:
            output, hidden = net(xb, hidden)
            losses.append(F.cross_entropy(output.flatten(0, 1), yb.flatten()).item())
    assert validated["val_lm_loss"] == pytest.approx(sum(losses) / len(losses), rel=1e-6)


def test_steps_resume_the_carried_state_exactly_mid_epoch(tmp_path: Path) -> None:
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    script = compile_program(tmp_path, STEPS, name="word_lm_steps_resume")
    common = ["--precision", "fp32", "--data-root", str(tmp_path)]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, *common, "--checkpoint-dir", str(whole), "--metrics", str(tmp_path / "w.jsonl"))
    per_epoch = int(records(tmp_path / "w.jsonl")[0]["steps"])  # type: ignore[arg-type]
    stop = per_epoch + per_epoch // 2
    run(script, *common, "--max-steps", str(stop), "--checkpoint-dir", str(cut))
    saved = torch.load(cut / "last.pt", weights_only=True)
    assert saved["extra"]["carried"]["state"][0].shape == (2, BATCH, 32)
    run(script, *common, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"),
        "--metrics", str(tmp_path / "c.jsonl"))  # fmt: skip
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 2 * per_epoch
    for name in ("net", "probe"):
        for key, tensor in a["models"][name].items():
            assert torch.equal(tensor, b["models"][name][key]), (name, key)
    last_whole, last_cut = records(tmp_path / "w.jsonl")[-1], records(tmp_path / "c.jsonl")[-1]
    for key in ("lm_loss", "probe_loss", "val_lm_loss", "val_probe_loss"):
        assert last_whole[key] == last_cut[key], key


# --- a learned initial state ------------------------------------------------------------------

LEARNED = f"""
model LM:
    layer encoder = Embedding({VOCAB}, 16)
    layer rnn = GRU(16, 32)
    layer decoder = Linear(32, {VOCAB})
    layer h0 = Parameter(1, 1, 32, init="normal", std=0.1)

    fn forward(self, x: Tensor[B, T], h: Tensor):
        let (out, next) = self.rnn(self.encoder(x), h)
        return (self.decoder(out), next)

// The first window of an epoch starts from the learned h0, one row for every stream.
fn lm_loss(net, x, y, h):
    let (logits, next) = net(x, h.expand(1, x.size(0), 32))
    return (cross_entropy(logits.flatten(0, 1), y.flatten()), next)

let net = LM()
let data = load_dataset("words", path="corpus.txt", block_size={BPTT}, vocab={VOCAB},
                        max_bytes=6000)

train net on data:
    epochs = 2
    batch_size = {BATCH}
    optimizer = SGD(lr=1.0)
    grad_clip = 0.25
    objective = lm_loss
    carry h = net.h0
"""


def test_learned_initial_state_trains_as_a_loop_by_hand(tmp_path: Path) -> None:
    """`carry h = net.h0`: each epoch's first window starts from the model's parameter `h0`
    (not detached: the first batch's backward reaches it, and SGD learns it with the rest),
    later windows from the last one's state, detached; validation starts from it too. Two
    epochs of the emitted step equal the loop by hand to the bit."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    m = _load(compile_program(tmp_path, LEARNED, name="word_lm_learned"))
    args = m.parse_args(["--device", "cpu", "--precision", "fp32", "--data-root",
                         str(tmp_path)])  # fmt: skip
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    model = m.LM()
    model.load_state_dict(trainer.model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    start = model.h0.detach().clone()
    emitted, by_hand = [], []
    for _ in range(2):
        trainer.carried = {"h": trainer.model.h0}  # as train_one_epoch starts an epoch
        hidden: Any = model.h0
        for xb, yb in trainer.train_loader:
            emitted.append(m._forward_backward(trainer, xb, yb).item())
            m._optimizer_step(trainer)
            optimizer.zero_grad(set_to_none=True)
            output, hidden = model(xb, hidden.expand(1, xb.size(0), 32))
            loss = F.cross_entropy(output.flatten(0, 1), yb.flatten())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(model.parameters()), 0.25)
            optimizer.step()
            hidden = hidden.detach()
            by_hand.append(loss.item())
    assert len(emitted) > 20 and emitted == by_hand
    assert torch.equal(trainer.model.h0, model.h0) and not torch.equal(model.h0, start)

    model.eval()
    losses, hidden = [], model.h0
    with torch.no_grad():
        for xb, yb in trainer.val_loader:
            output, hidden = model(xb, hidden.expand(1, xb.size(0), 32))
            losses.append(F.cross_entropy(output.flatten(0, 1), yb.flatten()).item())
    record = m.evaluate(trainer)
    assert record["val_loss"] == pytest.approx(sum(losses) / len(losses), rel=1e-6)


@pytest.mark.distributed
def test_steps_under_ddp_carry_each_ranks_state_and_resume_exactly(tmp_path: Path) -> None:
    """`step` lines with `carry` under `distributed = true`: two gloo ranks, each threading
    its own streams' state through both steps, train as one process over the same streams
    (batch 2 x BATCH): the same objectives per epoch (to 1e-5); cut mid-epoch, the run
    resumes on two ranks from each rank's saved state and ends bit for bit where the uncut
    run ends, and refuses to resume on one."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    script = compile_program(tmp_path, STEPS + "    distributed = true\n", name="steps_ddp")
    common = ["--data-root", str(tmp_path)]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _torchrun(script, *common, "--checkpoint-dir", str(whole), "--metrics", "two.jsonl")
    one_process = ["--checkpoint-dir", str(tmp_path / "one"), "--metrics", "one.jsonl"]
    run(script, *common, "--precision", "fp32", "--batch-size", str(2 * BATCH), *one_process)
    two, one = records(tmp_path / "two.jsonl"), records(tmp_path / "one.jsonl")
    assert len(two) == len(one) == 2
    for a, b in zip(two, one, strict=True):
        for key in ("lm_loss", "probe_loss", "val_lm_loss", "val_probe_loss"):
            assert a[key] == pytest.approx(b[key], abs=1e-5), key
    saved = torch.load(whole / "last.pt", weights_only=True)
    assert len(saved["extra"]["carried_by_rank"]) == 2

    per_epoch = int(two[0]["steps"])  # type: ignore[arg-type]
    stop = per_epoch + per_epoch // 2
    _torchrun(script, *common, "--max-steps", str(stop), "--checkpoint-dir", str(cut))
    last = cut / "last.pt"
    refused = run_refused(script, *common, "--resume", str(last), "--checkpoint-dir", str(cut))
    assert "resume it at world size 2, not 1" in refused
    _torchrun(script, *common, "--resume", str(last), "--checkpoint-dir", str(cut))
    b = torch.load(last, weights_only=True)
    assert saved["step"] == b["step"] == 2 * per_epoch
    for name in ("net", "probe"):
        for key, tensor in saved["models"][name].items():
            assert torch.equal(tensor, b["models"][name][key]), (name, key)


@pytest.mark.distributed
def test_steps_under_fsdp_carry_each_ranks_state_and_resume_exactly(tmp_path: Path) -> None:
    """`step` lines with `carry` under `distributed = fsdp`: two gloo ranks, each threading
    its own streams' state through both steps, compute what the DDP run computes (to 1e-5);
    cut mid-epoch, the run resumes on two ranks from each rank's saved state and ends bit
    for bit where the uncut run ends, and refuses to resume on one."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    script = compile_program(tmp_path, STEPS + "    distributed = fsdp\n", name="steps_fsdp")
    ddp = compile_program(tmp_path, STEPS + "    distributed = true\n", name="steps_ddp")
    common = ["--data-root", str(tmp_path)]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _torchrun(script, *common, "--checkpoint-dir", str(whole), "--metrics", "fsdp.jsonl")
    _torchrun(ddp, *common, "--checkpoint-dir", str(tmp_path / "ddp"), "--metrics", "ddp.jsonl")
    sharded, plain = records(tmp_path / "fsdp.jsonl"), records(tmp_path / "ddp.jsonl")
    assert len(sharded) == len(plain) == 2
    for a, b in zip(sharded, plain, strict=True):
        for key in ("lm_loss", "probe_loss", "val_lm_loss", "val_probe_loss"):
            assert a[key] == pytest.approx(b[key], abs=1e-5), key
    saved = torch.load(whole / "last" / "train_state.pt", weights_only=True)
    assert len(saved["extra"]["carried_by_rank"]) == 2

    per_epoch = int(sharded[0]["steps"])  # type: ignore[arg-type]
    stop = per_epoch + per_epoch // 2
    _torchrun(script, *common, "--max-steps", str(stop), "--checkpoint-dir", str(cut))
    last = cut / "last"
    refused = run_refused(script, *common, "--resume", str(last), "--checkpoint-dir", str(cut))
    assert "resume it at world size 2, not 1" in refused
    _torchrun(script, *common, "--resume", str(last), "--checkpoint-dir", str(cut),
              "--metrics", "cut.jsonl")  # fmt: skip
    resumed = torch.load(last / "train_state.pt", weights_only=True)
    assert saved["step"] == resumed["step"] == 2 * per_epoch
    for mine, theirs in zip(saved["extra"]["carried_by_rank"],
                            resumed["extra"]["carried_by_rank"], strict=True):  # fmt: skip
        for x, y in zip(mine["state"], theirs["state"], strict=True):
            assert torch.equal(x, y)
    ended = records(tmp_path / "cut.jsonl")[-1]
    for key in ("val_lm_loss", "val_probe_loss"):
        assert ended[key] == sharded[-1][key], key


@pytest.mark.distributed
def test_learned_initial_state_under_ddp_trains_as_one_process(tmp_path: Path) -> None:
    """`carry h = net.h0` under DDP: h0 has a gradient at each epoch's first batch only
    (DDP is told: `find_unused_parameters=True`); two gloo ranks train as one process over
    the same streams, to 1e-5, and learn the same h0."""
    (tmp_path / "corpus.txt").write_bytes(CORPUS.read_bytes())
    script = compile_program(tmp_path, LEARNED + "    distributed = true\n", name="learned_ddp")
    assert "find_unused_parameters=True" in script.read_text()
    common = ["--data-root", str(tmp_path)]
    _torchrun(script, *common, "--checkpoint-dir", str(tmp_path / "two"), "--metrics", "two.jsonl")
    one_process = ["--checkpoint-dir", str(tmp_path / "one"), "--metrics", "one.jsonl"]
    run(script, *common, "--precision", "fp32", "--batch-size", str(2 * BATCH), *one_process)
    two, one = records(tmp_path / "two.jsonl"), records(tmp_path / "one.jsonl")
    for a, b in zip(two, one, strict=True):
        for key in ("train_loss", "val_loss"):
            assert a[key] == pytest.approx(b[key], abs=1e-5), key
    h0 = [torch.load(tmp_path / d / "last.pt", weights_only=True)["model"]["h0"]
          for d in ("two", "one")]  # fmt: skip
    assert torch.allclose(h0[0], h0[1], atol=1e-5)
