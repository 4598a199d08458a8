"""Language-model data end to end: `"text"` and `"tokens"` programs compiled and trained.

Each test writes a small real file (a text corpus, nanoGPT `.bin` token files
written with numpy), compiles a program that trains a bigram model on it, runs
the script on the CPU and checks what it computed: the validation loss of a
byte-level model falls below that of a uniform guess (ln 256), a resumed run
repeats the windows of an uninterrupted one, `--generate` prints the prompt and
as many bytes as asked (the greedy ones equal to the model's argmax, step by
step), and the checker rejects a head that is not vocabulary-wide.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import torch

from tensorloom.pipeline import compile_file
from tests.e2e.test_train_pipeline import compile_program, records, run

BIGRAM = """
model Bigram:
    layer emb = Embedding({vocab}, 16)
    layer head = Linear(16, {head})
    fn forward(self, x: Tensor[B, T]) -> Tensor:
        return x |> self.emb |> self.head

let net = Bigram()
let data = load_dataset({dataset})

train net on data:
    epochs = 2
    batch_size = 8
    optimizer = Adam(lr=0.02)
    loss = CrossEntropy
    checkpoint every 1 epochs
"""


def _corpus(folder: Path) -> None:
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(400))
    (folder / "corpus.txt").write_text(text, encoding="utf-8")


def test_text_model_learns_bytes_and_resumes_exactly(tmp_path: Path) -> None:
    _corpus(tmp_path)
    dataset = '"text", path="corpus.txt", block_size=32, windows_per_epoch=160'
    script = compile_program(tmp_path, BIGRAM.format(vocab=256, head=256, dataset=dataset))
    run(script, "--metrics", "full.jsonl", "--checkpoint-dir", "full")
    full = records(tmp_path / "full.jsonl")
    assert [r["steps"] for r in full] == [20, 40]  # 160 windows / batch 8 per epoch
    assert float(full[-1]["val_loss"]) < 0.6 * math.log(256)  # far better than a uniform guess
    run(script, "--metrics", "a.jsonl", "--checkpoint-dir", "part", "--epochs", "1")
    run(script, "--metrics", "b.jsonl", "--checkpoint-dir", "part", "--resume", "part/last.pt")
    parts = records(tmp_path / "a.jsonl") + records(tmp_path / "b.jsonl")
    keys = ("train_loss", "val_loss", "val_accuracy")
    assert [[r[k] for k in keys] for r in parts] == [[r[k] for k in keys] for r in full]


def _generated(stdout: str) -> str:
    """What `--evaluate CKPT --generate P` printed after its one line of metrics (and the
    compile decision before it)."""
    if stdout.startswith("compile: "):
        stdout = stdout.split("\n", 1)[1]
    first, rest = stdout.split("\n", 1)
    assert "val_loss" in first, stdout
    assert rest.endswith("\n")
    return rest[:-1]


def test_generate_prints_the_prompt_and_the_bytes_asked_for(tmp_path: Path) -> None:
    _corpus(tmp_path)
    dataset = '"text", path="corpus.txt", block_size=32, windows_per_epoch=160'
    script = compile_program(tmp_path, BIGRAM.format(vocab=256, head=256, dataset=dataset))
    run(script, "--epochs", "1")
    checkpoint = "checkpoints/prog/last.pt"
    prompt, tokens = "def f1", 60
    greedy = _generated(
        run(script, "--evaluate", checkpoint, "--generate", prompt, "--tokens", str(tokens),
            "--temperature", "0").stdout
    )  # fmt: skip
    assert greedy.startswith(prompt)
    assert "\ufffd" not in greedy  # every byte decoded: the model learned ASCII
    assert len(greedy.encode("utf-8")) == len(prompt) + tokens
    # the same argmax, computed here from the checkpoint's weights
    spec = importlib.util.spec_from_file_location("prog_generate", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["prog_generate"] = module
    spec.loader.exec_module(module)
    model = module.Bigram().eval()
    model.load_state_dict(torch.load(tmp_path / checkpoint, weights_only=True)["model"])
    ids = list(prompt.encode())
    with torch.no_grad():
        for _ in range(tokens):
            ids.append(int(model(torch.tensor([ids[-32:]]))[0, -1].argmax()))
    assert greedy == bytes(ids).decode()
    # sampling among the 3 likeliest: the flags reach the sampler, seeded; bytes of the corpus
    argv = ["--evaluate", checkpoint, "--generate", prompt, "--tokens", str(tokens)]
    sampled = _generated(
        run(script, *argv, "--top-k", "3", "--temperature", "0.8", "--seed", "5").stdout
    )
    again = module.generate_text(
        model, prompt, tokens=tokens, block_size=32, temperature=0.8, top_k=3, seed=5
    )
    assert sampled == again and sampled.startswith(prompt) and sampled != greedy
    assert len(sampled.encode("utf-8")) == len(prompt) + tokens
    assert set(sampled[len(prompt) :]) <= set((tmp_path / "corpus.txt").read_text())


def test_token_bins_train_a_vocab_wide_model(tmp_path: Path) -> None:
    # token i is always followed by (i * 7 + 3) % 500: a rule a bigram model learns exactly
    ids = [1]
    for _ in range(20_000):
        ids.append((ids[-1] * 7 + 3) % 500)
    array = np.asarray(ids, dtype=np.uint16)
    array[:18_000].tofile(tmp_path / "train.bin")
    array[18_000:].tofile(tmp_path / "val.bin")
    dataset = '"tokens", path="train.bin", dtype="uint16", block_size=16, vocab=500'
    dataset += ", windows_per_epoch=400"
    script = compile_program(tmp_path, BIGRAM.format(vocab=500, head=500, dataset=dataset))
    run(script, "--metrics", "m.jsonl", "--epochs", "3")
    last = records(tmp_path / "m.jsonl")[-1]
    assert float(last["val_accuracy"]) > 0.9


def test_a_head_narrower_than_the_vocabulary_is_an_error(tmp_path: Path) -> None:
    source = tmp_path / "narrow.tl"
    dataset = '"text", path="corpus.txt", block_size=32'
    source.write_text(BIGRAM.format(vocab=256, head=100, dataset=dataset), encoding="utf-8")
    result = compile_file(source, until="torch")
    messages = [d.message for d in result.sink.errors()]
    assert messages == [
        "`CrossEntropy` needs one output per token of the vocabulary: "
        "the model gives 100, `text` data has 256 tokens"
    ]
