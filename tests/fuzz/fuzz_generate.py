"""Programs for the fuzzer: a grammar-aware generator, and a mutator of real programs.

    text = generate(random.Random(7))                  # a .tl program from the grammar
    text = mutate(seed_text, random.Random(7))          # examples/ or tests/lit/, mutated

Both draw every choice from the `random.Random` they are given, so a run is
reproducible from its seed; under hypothesis (`st.randoms()`), the same
functions shrink. The generator writes mostly-plausible programs (models of
catalogue layers, pipes of builtins, a train block, script statements, a
kernel) with deliberate slips: wrong widths, unknown names, odd settings,
boundary numbers. The mutator edits tokens and lines of a seed: numbers to
boundary values, names swapped, lines deleted, duplicated or swapped, hostile
characters inserted, a chunk repeated hundreds of times.
"""

from __future__ import annotations

import itertools
import random
import re
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NUMBERS = ["0", "1", "2", "3", "4", "8", "16", "32", "64", "128", "-1", "-2", "0.0", "0.5",
           "1e-3", "1e", "0x", "1_", "1_000", "00", "2147483648", "9223372036854775807",
           "9223372036854775808", "99999999999999999999999", "1e999", "1e-400", "3.", ".5",
           "-0", "4300" * 3, "true", "false", "none"]  # fmt: skip
WIDTHS = [1, 2, 4, 8, 10, 16, 32, 64, 128, 784]
HOSTILE = ['"', "'", "\\", "\n", "\x0c", "\x0b", "\u2028", "\x00", "\ufb01", "\u210c", "é",
           "½", "\t", "(", ")", "[", "]", ":", "|>", "@", "#", "$", "//", "/*", " ", "    ",
           "\U0001d431"]  # fmt: skip
FUNCTIONS = ["relu", "gelu", "tanh", "sigmoid", "silu", "flatten", "softmax(dim=-1)",
             "log_softmax(dim=1)", "dropout(0.1)", "mean(dim=1)", "sum(dim=-1)",
             "permute(0, 2, 1)", "transpose(1, 2)", "reshape(-1)", "view(2, -1)", "relux",
             "softmax", "unsqueeze(1)", "squeeze", "softplus", "floor", "round", "ceil",
             "cumsum(dim=-1)", "cumprod(1)", "norm(dim=-1)", "norm(p=1.0, dim=1, keepdim=true)",
             "pad([1, 2])", "pad([0, 1, 1, 0], value=1.0)", "pad([1, 1], mode=\"reflect\")",
             "narrow(1, 0, 2)", "narrow(-1, 1, 9)", "argmax(dim=-1)", "argmin",
             "one_hot(num_classes=4)", "topk(2)", "pow(2)", "max(dim=1)", "min", "float",
             "gather(1)", "scatter_add(1)", "binary_cross_entropy"]  # fmt: skip
TENSOR_STATEMENTS = ["h = h[h > 0.0]", "h = h[arange(2)]", "h = h[:, arange(2)]",
                     "h = h.gather(-1, h.argmax(dim=-1, keepdim=true))", "h = h.long().float()",
                     "h = h.index_add(0, arange(2), h[:2])", "h = h.to(torch.float16).float()",
                     "h = h.scatter(-1, h.topk(2)[1], 0.0)", "h = h + cumsum(h, dim=0)",
                     "h = pad(h, [0, h.size(-1)])", "h = h[h.argmax(dim=-1)]",
                     "h = pad(h, [floordiv(h.size()[-1], 2), floordiv(h.shape[0] - 1, 3)])",
                     "h = pad(h, [0, floordiv(h.size(-1) / 2, 2)])",
                     "h = one_hot(h.argmax(dim=-1), num_classes=h.size(-1)).float()",
                     "h = self.l0(h, none)[0]",
                     "h = self.l0(h, self.l0(h, none)[1])[0]",
                     "h = h[where(h > 0.0)[0]]", "h = h[arange(2), arange(2)]",
                     "h = h[arange(2), :, arange(2)]", "h = h.topk(h.size(-1))[0]",
                     "h = h[nonzero(h > 0.0, as_tuple=true)[0]]",
                     "let (h, (hs, cs)) = self.l0(h, none)"]  # fmt: skip
"""Indexing by a tensor, the index-valued functions and a recurrent state, on `h`."""
INDEX_ASSIGNMENTS = ["h[:, 0] = 0.0", "h[0] = h[1]", "h[h > 0.0] = 0.0", "h[h < 0.0] += 1.0",
                     "h[:, :2] *= 2.0", "h[arange(2)] = h[:2]", "h[..., -1] /= 2.0",
                     "h[h.argmax(dim=-1)] = h[0]", "h += h", "h -= 1.0", "h[:, 0] += x[:, 0]",
                     "h[0, 0, 0, 0] = 1.0", "h[:, 0] = h", "h[h > 0.5] = x",
                     "h[arange(2)] = h[:2].long()", "h[where(h > 0.0)] = 1.0",
                     "h[where(h > 0.0)[0]] += h[where(h > 0.0)[0]]", "h[1.5] = 0.0",
                     "let c = h.long()\nc[:, 0] += 0.5\nh = c.float()",
                     "let c = h.long()\nc[c > 0] /= 2\nh = c.float()",
                     "let z = zeros_like(h)\nz[h > 0.0] = h[0, 0]\nh = z",
                     "let z = zeros_like(h)\nfor i in range(2):\n    z[i] += h[i] * i\nh = z + h",
                     "let z = zeros_like(h)\nlet i = h.argmax(dim=0)\nz[i] = h[i]\nh = z",
                     "let keep = h\nh[0] = 0.0\nh = h + keep", "self.l0.weight[0] = 0.0",
                     "h[0][0] = 1.0", "width[0] = 1", "h[0] = none",
                     "h[:, 0] = (h, h)"]  # fmt: skip
"""Assignments into a tensor (careful and sloppy), on `h`: lines split at `\\n`."""
DATASETS = ['"digits"', '"mnist"', '"cifar10"', '"reverse"', '"tokens.npz"', '"t.csv"',
            '"a\\"b.pt"', "", '"digits", flatten=true', '"x.pt", sample_shape=[4], num_classes=2',
            'sample_shape=[8], num_classes=3', '"cls12.npz"', '"reg.npz"', '"noxy.npz"',
            '"cls12.npz", sample_shape=[16]', '"cls12.npz", num_classes=10', '"absent.npz"',
            '"table.csv", target="label"', '"table.csv", target="lable"',
            '"reg.npz", num_classes=2',
            '"tokens", path="train.bin", block_size=8, vocab=256',
            '"tokens", path="odd.bin", block_size=8, vocab=256',
            '"tokens", path="train.bin", block_size=512, vocab=256']  # fmt: skip
# The data files those name (tests/lit/check/data/make_data.py writes them in the workdir).
SETTINGS = {
    "epochs": ["1", "2", "0", "2.5", '"3"'],
    "batch_size": ["8", "64", "0", "-1"],
    "optimizer": ["Adam(lr=0.001)", "SGD(lr=0.1, momentum=0.9)", "AdamW", "Adma", "Adam(lr=-1)"],
    "loss": [
        "CrossEntropy",
        "MSE",
        "NLL",
        "CrossEntropyy",
        "CrossEntropy(label_smoothing=0.1)",
        "L1",
        "SmoothL1(beta=0.5)",
        "BCEWithLogits",
    ],
    "precision": ["fp32", "bf16", "fp16", "fp8", "auto"],
    "lr_schedule": [
        "cosine",
        "step",
        "warmup",
        "cosin",
        "plateau(factor=0.5, patience=1)",
        "plateau(factor=2.0)",
        "wsd(warmup_steps=2)",
        "wsd(decay_fraction=1.5)",
    ],
    "grad_clip": ["1.0", "0", "-1.0"],
    "accumulate_steps": ["1", "2", "0"],
    "seed": ["0", "1", "-1"],
    "compile": ["true", "false", '"max-autotune"'],
}
SEED_GLOBS = ["examples/*.tl", "examples/*.nml", "examples/kernels/*.tl", "tests/lit/**/*.tl",
              "tests/lit/**/*.nml"]  # fmt: skip


def seeds() -> list[tuple[str, str]]:
    """(name, text) of every seed program, in a fixed order."""
    paths = sorted({p for pattern in SEED_GLOBS for p in ROOT.glob(pattern)})
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]


def make_workdir() -> Path:
    """A scratch folder holding the .nml files that seed programs import."""
    work = Path(tempfile.mkdtemp(prefix="tl-fuzz-"))
    for nml in (ROOT / "examples").glob("*.nml"):
        shutil.copy(nml, work / nml.name)
    shutil.copytree(ROOT / "tests" / "lit" / "check" / "Inputs", work / "Inputs")
    # models with `@weights` maps beside them, for `_weights_maps`
    shutil.copytree(ROOT / "tests" / "lit" / "check" / "weights_nml" / "Inputs", work / "maps")
    _write_data_files(work)
    return work


def _write_data_files(work: Path) -> None:
    """The .npz, .csv and token files the generator's datasets and tests/lit/check/data (and
    fields) name."""
    import importlib.util

    path = ROOT / "tests" / "lit" / "check" / "data" / "make_data.py"
    spec = importlib.util.spec_from_file_location("tl_fuzz_make_data", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(work)
    pairs = ROOT / "tests" / "lit" / "check" / "fields" / "make_pairs.py"
    spec = importlib.util.spec_from_file_location("tl_fuzz_make_pairs", pairs)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(work)
    folders = ROOT / "tests" / "lit" / "check" / "fields" / "make_folders.py"
    spec = importlib.util.spec_from_file_location("tl_fuzz_make_folders", folders)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(work)
    weights = ROOT / "tests" / "lit" / "check" / "weights" / "Inputs" / "make_weights.py"
    spec = importlib.util.spec_from_file_location("tl_fuzz_make_weights", weights)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tensors = ["fc0.weight=F32:16,8", "fc0.bias=F32:16", "fc1.weight=F16:4,16", "fc1.bias=F32:4"]
    module.main([str(work / "w.safetensors"), *tensors])
    module.main([str(work / "cut.safetensors"), *tensors, "--truncate"])
    (work / "hf").mkdir(exist_ok=True)  # a Hugging Face folder: its config.json is compared too
    module.main([str(work / "hf" / "model.safetensors"), *tensors, "qkv.weight=F32:48,8"])
    (work / "hf" / "config.json").write_text('{"width": 16, "hidden": 8, "n_layer": 3}\n')
    mapped = ["model.fc1.weight=F32:4,8", "model.fc1.bias=F32:4", "model.fc2.weight=F32:2,4",
              "model.fc2.bias=F32:2"]  # fmt: skip
    module.main([str(work / "maps" / "one.safetensors"), *mapped])  # maps/one.nml's `hf` fits


# ------------------------------------------------------------------ generator


def generate(r: random.Random) -> str:
    """A whole .tl program: half of them careful (meant to pass the check), half sloppy;
    a third of each uses the structured forms (layer lists, loops, branches, tuples,
    `Parameter`, typed layer tensors, dims as values, a loss fn)."""
    train_forms = ((0.15, _objectives), (0.08, _paired), (0.06, _paired_loss),
                   (0.08, _param_groups), (0.08, _carried))  # fmt: skip
    for chance, form in train_forms:
        if r.random() < chance:
            return form(r, careful=r.random() < 0.5)
    model_forms = (
        (0.05, _weights_maps),
        (0.3, _structured),
        (0.1, None),
        (0.1, _per_position),
        (0.1, _sequential_models),
        (0.12, _assignments),
    )
    for chance, form in model_forms:
        if r.random() < chance:
            if form is None:  # config expressions: always careful
                return _config_expressions(r)
            return form(r, careful=r.random() < 0.5)
    if r.random() < 0.5:
        return _careful(r)
    parts: list[str] = []
    kernel = _kernel(r) if r.random() < 0.25 else None
    if kernel is not None:
        parts.append(kernel[1])
    models = [_model(r, f"Mdl{i}", kernel[0] if kernel else None) for i in range(r.randint(1, 2))]
    parts += [text for _, text in models]
    name = r.choice([m for m, _ in models] + ["Missing"] * (r.random() < 0.05))
    parts.append(f"let net = {name}({_overrides(r)})")
    if r.random() < 0.9:
        parts.append(f"let data = load_dataset({r.choice(DATASETS)})")
    parts += [_script_statement(r) for _ in range(r.randint(0, 3))]
    if r.random() < 0.8:
        parts.append(_train(r))
    return "\n".join(parts) + "\n"


CAREFUL_FUNCTIONS = ["relu", "gelu", "tanh", "sigmoid", "silu", "dropout(0.1)",
                     "softmax(dim=-1)"]  # fmt: skip


def _careful(r: random.Random) -> str:
    """A program whose widths line up, with valid settings (the check should accept it)."""
    widths = [r.choice(WIDTHS[1:]) for _ in range(r.randint(2, 5))]
    lines = ["model Net:"]
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        lines.append(f"    layer fc{i} = Linear({a}, {b})")
    if r.random() < 0.3:
        lines.append(f"    layer norm = LayerNorm({widths[-1]})")
    rank = r.choice(["B", "B, T"])
    lines.append(f"    fn forward(self, x: Tensor[{rank}, {widths[0]}]) -> Tensor:")
    stages = ["x"]
    for i in range(len(widths) - 1):
        stages.append(f"self.fc{i}")
        if r.random() < 0.5:
            stages.append(r.choice(CAREFUL_FUNCTIONS))
    if "layer norm" in lines[-2]:
        stages.append("self.norm")
    if r.random() < 0.3:
        lines.append(f"        let h = {' |> '.join(stages)}")
        lines.append(
            r.choice(["        return h + h", "        return h * 2.0", "        return relu(h)"])
        )
    else:
        lines.append(f"        return {' |> '.join(stages)}")
    lines.append("")
    lines.append("let net = Net()")
    lines.append("let data = load_dataset()")
    lines += [r.choice(["print(max(1, 2))", "let s = randn(4, 4)", "manual_seed(0)"])
              for _ in range(r.randint(0, 2))]  # fmt: skip
    if r.random() < 0.15:
        lines.append(_weights(r))
    lines.append("train net on data:")
    for key in r.sample(sorted(SETTINGS), r.randint(1, 4)):
        lines.append(f"    {key} = {SETTINGS[key][0]}")
    return "\n".join(lines) + "\n"


OBJECTIVE_TERMS = ["mean(M(x))", "mse(M(x), x)", "mean(M(x + randn_like(x)))",
                   "mse(M(detach(x)), zeros_like(x))", "mean(M(x) * rand_like(x))",
                   "mean(M(x)[randint(0, 2, [x.size(0)])])", "mean(cumprod(sigmoid(M(x)), 1))",
                   "mean(M(x * bernoulli(rand_like(x))))"]  # fmt: skip
SLOPPY_TERMS = ["M(x)", "mean(M(x, x))", "mean(M(x[:, :3]))", "mean(Q(x))", "mean(M)",
                "mean(x)", "randint(2, 1, [4])"]  # fmt: skip
OPTIMIZERS = ["Adam", "SGD", "AdamW", "Adma"]


def _objectives(r: random.Random, careful: bool) -> str:
    """Objectives of one's own (`fn f(A, B, x, y)`) over one to three models, on the digits,
    named by `objective =` or by `step f with Opt(MODEL, ...)` lines (maybe with a metric
    `fn` of the models and the batch); sloppy ones call a model wrongly, take the wrong
    parameters, put a model in two optimizers, name an unknown objective, optimizer or
    metric, or mix in `loss`."""
    count = r.randint(1, 3)
    names = ["A", "B", "C"][:count]
    forward = "    fn forward(self, x: Tensor[B, 64]) -> Tensor:"
    lines = ["model M:", "    layer fc = Linear(64, 64)", forward, "        return self.fc(x)", ""]
    if r.random() < 0.4:
        lines += ["let ramp = cumprod(1.0 - linspace(0.01, 0.1, 8), 0)", ""]
    objectives = [f"obj{i}" for i in range(r.randint(1, count))]
    owners = r.sample(names, len(objectives)) if careful else r.choices(names, k=len(objectives))
    for objective, owner in zip(objectives, owners, strict=True):
        params = [*names, "x", "y"] if careful or r.random() < 0.7 else [*names, "x"]
        pool = OBJECTIVE_TERMS if careful else OBJECTIVE_TERMS + SLOPPY_TERMS
        callees = [owner] + [r.choice(names) for _ in range(r.randint(0, 1))]
        terms = [r.choice(pool).replace("M(", f"{callee}(") for callee in callees]
        lines += [f"fn {objective}({', '.join(params)}) -> Tensor:",
                  f"    return {' + '.join(terms)}", ""]  # fmt: skip
    lines += [f"let {n} = M()" for n in names]
    lines.append('let data = load_dataset("digits", flatten=true)')
    header = names[0] if count == 1 and r.random() < 0.5 else f"({', '.join(names)})"
    lines.append(f"train {header} on data:")
    lines.append(f"    epochs = {r.choice(['1', '2'] if careful else NUMBERS)}")
    if count == 1 and r.random() < 0.4:
        named = objectives[0] if careful else r.choice([*objectives, "nope"])
        lines.append(f"    objective = {named}")
        lines.append(f"    optimizer = {r.choice(SETTINGS['optimizer'][:3])}")
    else:
        for objective, owner in zip(objectives, owners, strict=True):
            optimizer = r.choice(OPTIMIZERS[:3] if careful else OPTIMIZERS)
            slips = ["", "Z", f"{owner}, {owner}"]
            models = owner if careful or r.random() < 0.8 else r.choice(slips)
            sep = ", " if models else ""
            window = _step_window(r, careful) if r.random() < 0.3 else ""
            lines.append(f"    step {objective} with {optimizer}({models}{sep}lr=0.01){window}")
        if r.random() < 0.25:  # one wrap per model: DDP, or FSDP (sloppy: fp16 beside it)
            strategy = r.choice(["fsdp", '"fsdp"', "ddp"])
            lines.append(f"    distributed = {strategy}")
            if not careful and r.random() < 0.5:
                lines.append("    precision = fp16")
        if r.random() < 0.3:  # a metric `fn` of the models and the batch; sloppy: a built-in
            params = ", ".join([*names, "x", "y"] if careful or r.random() < 0.7 else names)
            at = lines.index(f"let {names[0]} = M()")
            lines[at:at] = [f"fn score({params}) -> Tensor:",
                            f"    return mean((argmax({names[-1]}(x), dim=1) == y).float())",
                            ""]  # fmt: skip
            listed = "score" if careful else r.choice(["score", "accuracy", "perplexity", "scor"])
            lines.append(f"    metrics = [{listed}]")
        idle = [n for n in names if n not in owners]
        if idle and r.random() < 0.5:  # `freeze = [C]`: frozen on purpose; sloppy: a stepped one
            frozen = idle if careful else [r.choice([*names, "Q"])]
            lines.append(f"    freeze = [{', '.join(frozen)}]")
    if r.random() < 0.3:
        lines[lines.index(f"train {header} on data:") : 0] = _sampler(names, careful, r)
        lines.append(f"    samples = {'sample' if careful else r.choice(['sample', 'smaple'])}")
    if not careful and r.random() < 0.3:
        extra = ["loss = MSE", "ema = 0.99", "compile = true", "grad_clip = 1.0"]
        lines.append(f"    {r.choice(extra)}")
    return "\n".join(lines) + "\n"


CARRY_SLIPS = ["carry state", "carry state = 0.0", "carry state = none\n    carry state = none",
               "carry state = state", "carry h = none"]  # fmt: skip
CARRY_RETURNS = ["(loss, next)", "loss", "(loss, state)", "(loss, h)", "(loss, next, next)",
                 "(loss, c)"]  # fmt: skip
CARRY_DATA = ['"words", path="stdlib", block_size=8, vocab=64',
              '"text", path="stdlib", block_size=8', '"digits"',
              '"words", path="stdlib", block_size=8, vocab=32',
              '"words", path="absent.txt", block_size=8, vocab=64']  # fmt: skip


CARRY_STARTS = ["none", "net.h0", "(net.h0, net.c0)"]
SLOPPY_STARTS = ["net.rnn", "teacher.h0", "(net.h0, net.h0, net.c0)", "net.h1", "(net.h0)"]
CARRY_DISTRIBUTED = ["ddp", "true", "fsdp", "false"]


def _carried(r: random.Random, careful: bool) -> str:
    """A recurrent language model whose block carries its state between batches
    (`carry state = none`, the objective `fn f(net, x, y, state)` returning `(loss, state)`),
    an LSTM's pair or a GRU's tensor, from `none` or learned (`net.h0`, `(net.h0, net.c0)`),
    with a metric that takes the state, as one model or in `step` lines beside a probe's
    step that takes it in turn (under DDP too, and from `none` under FSDP); sloppy ones leave
    out the initial value, return the loss alone or half the pair, start from what is no
    parameter, carry over shuffled data, carry twice, carry beside `loss`, or start from a
    learned value under FSDP."""
    lstm = r.random() < 0.5
    layers = r.choice([1, 2])
    kind = f"LSTM(16, 16, num_layers={layers})" if lstm else f"GRU(16, 16, num_layers={layers})"
    state_type = "(Tensor, Tensor)" if lstm else "Tensor"
    learned = r.random() < 0.4
    start = "none"
    if learned:
        start = CARRY_STARTS[2] if lstm else CARRY_STARTS[1]
        if not careful and r.random() < 0.4:
            start = r.choice(SLOPPY_STARTS)
    size = layers if careful else r.choice([layers, 1, 3])
    starts = [f"    layer h0 = Parameter({size}, 1, 16)"] if learned else []
    if learned and lstm:
        starts.append(f"    layer c0 = Parameter({layers}, 1, 16)")
    lines = ["model LM:", "    layer encoder = Embedding(64, 16)", f"    layer rnn = {kind}",
             "    layer decoder = Linear(16, 64)", *starts, "",
             f"    fn forward(self, x: Tensor[B, T], state: {state_type}):",
             "        let (out, next) = self.rnn(self.encoder(x), state)",
             "        return (self.decoder(out), next)", ""]  # fmt: skip
    steps = r.random() < 0.3
    models = "net, probe" if steps else "net"
    if steps:
        lines += ["model Probe:", "    layer fc = Linear(16, 16)", "",
                  "    fn forward(self, h: Tensor[L, B, 16]) -> Tensor[L, B, 16]:",
                  "        return self.fc(h)", ""]  # fmt: skip
    returned = "(loss, next)" if careful else r.choice(CARRY_RETURNS)
    lines += [f"fn lm_loss({models}, x, y, state):"]
    given = "state"
    unpack = ["    let (h, c) = state"] if learned and lstm else []
    if learned and lstm:
        given = f"(h.expand({layers}, x.size(0), 16), c.expand({layers}, x.size(0), 16))"
    elif learned:
        given = f"state.expand({layers}, x.size(0), 16)"
    lines += [*unpack, f"    let (logits, next) = net(x, {given})",
              "    let loss = cross_entropy(logits.flatten(0, 1), y.flatten())"]  # fmt: skip
    if "h" in returned or "c)" in returned:
        lines.append("    let (h, c) = next" if lstm else "    let h = next\n    let c = next")
    lines += [f"    return {returned}", ""]
    if steps:  # a probe of the state: an LSTM's cells from its hidden state, or h from h
        target = "c" if lstm else "state"
        lines += [f"fn probe_loss({models}, x, y, state):"]
        lines += ["    let (h, c) = state"] if lstm else ["    let h = state"]
        kept = "state" if careful else r.choice(["state", "h", "none"])
        lines += [f"    return (mse(probe(h), {target}), {kept})", ""]
    metric = not steps and r.random() < 0.4
    if metric:  # the state a validation batch starts from, or the batch alone
        taken = "x, y, state" if careful or r.random() < 0.7 else "x, y, state, extra"
        lines += [f"fn acc({models}, {taken}) -> Tensor:", *unpack,
                  f"    let (logits, next) = net(x, {given})",
                  "    return mean((argmax(logits, -1) == y).float())", ""]  # fmt: skip
    lines += ["let net = LM()", *(["let probe = Probe()"] if steps else [])]
    return "\n".join(lines + _carrying_block(r, careful, start, steps, metric)) + "\n"


def _carrying_block(
    r: random.Random, careful: bool, start: str, steps: bool, metric: bool
) -> list[str]:
    """`_carried`'s data and train block: one model's objective (maybe under DDP) or two
    `step` lines, the `carry` line, and its metrics."""
    data = CARRY_DATA[0] if careful else r.choice(CARRY_DATA)
    block = "(net, probe)" if steps else "net"
    lines = [f"let data = load_dataset({data})", "", f"train {block} on data:"]
    lines += [f"    epochs = {r.choice(['1', '2'])}", f"    batch_size = {r.choice(['4', '8'])}"]
    if steps:
        lines += ["    step lm_loss with SGD(net, lr=1.0)",
                  "    step probe_loss with Adam(probe, lr=0.01)"]  # fmt: skip
    elif careful or r.random() < 0.7:
        lines.append("    objective = lm_loss")
    else:
        lines.append("    loss = CrossEntropy")
    carry = f"carry state = {start}"
    lines.append(f"    {carry if careful else r.choice([*CARRY_SLIPS, carry])}")
    if careful and r.random() < 0.5 and not steps:
        lines += ["    optimizer = SGD(lr=20.0)", "    grad_clip = 0.25"]
    if r.random() < (0.2 if careful else 0.3):
        how = r.choice(CARRY_DISTRIBUTED)  # a learned start is TL0449 under FSDP
        if careful:
            how = r.choice(["ddp", "fsdp"]) if start == "none" else "ddp"
        lines.append(f"    distributed = {how}")
    if metric:
        lines.append("    metrics = [perplexity, acc]")
    elif r.random() < 0.5 and not steps:
        lines.append("    metrics = [perplexity]")
    return lines


# Data of named fields: the catalogue's pairs, and the .npz files tests/lit/check/fields'
# make_pairs.py writes (pairs.npz: image [1, 8, 8], text [4]; uneven and scalar are broken).
PAIRED_DATA = ['"digits-captions"', '"pairs.npz"']
SLOPPY_PAIRED_DATA = ['"digits-captions", flatten=true', '"uneven.npz"', '"scalar.npz"',
                      '"absent_pairs.npz"', '"digits"', '"cls12.npz"']  # fmt: skip
PAIR_TERMS = ["cross_entropy(L, arange(image.size(0)))",
              "cross_entropy(t(L), arange(text.size(0)))", "mean(amin(L, dim=1))",
              "mean((argmax(L, dim=1) == arange(image.size(0))).float())"]  # fmt: skip


def _paired(r: random.Random, careful: bool) -> str:
    """Objectives (and metric `fn`s) that take named fields, `fn f(net, image, text)`, over
    `digits-captions` or a .npz of named arrays, by `objective =` or by `step` lines over
    two towers; sloppy ones name a field the data lacks, annotate the wrong shape, train a
    `loss` on fields, or load a broken .npz."""
    image = "Tensor[B, 1, 8, 8]" if careful or r.random() < 0.7 else "Tensor[B, 64]"
    lines = ["model Pairs:", "    layer img = Linear(64, 16)",
             "    layer words = Embedding(19, 16)",
             f"    fn forward(self, image: {image}, text: Tensor[B, 4]) -> Tensor:",
             "        let i = normalize(self.img(image.flatten(1)), dim=1)",
             "        return i @ t(normalize(mean(self.words(text), dim=1), dim=1))",
             ""]  # fmt: skip
    fields = ["image", "text"] if careful else r.choice([["image", "text"], ["text", "image"],
                                                          ["image", "txt"], ["image"]])  # fmt: skip
    functions = [f"f{i}" for i in range(r.randint(1, 2))]
    for name in functions:
        terms = r.sample(PAIR_TERMS, r.randint(1, 2))
        call = "net(image, text)" if {"image", "text"} <= set(fields) else "net(image, image)"
        lines += [f"fn {name}(net, {', '.join(r.sample(fields, len(fields)))}) -> Tensor:",
                  f"    let L = {call}", f"    return {' + '.join(terms)}", ""]  # fmt: skip
    data = r.choice(PAIRED_DATA if careful else PAIRED_DATA + SLOPPY_PAIRED_DATA)
    lines += ["let net = Pairs()", f"let pairs = load_dataset({data})", "train net on pairs:",
              "    epochs = 1", "    batch_size = 16"]  # fmt: skip
    if not careful and r.random() < 0.2:
        lines.append(f"    loss = {r.choice(['CrossEntropy', 'MSE'])}")
    elif r.random() < 0.3:
        lines.append(f"    step {functions[0]} with {r.choice(OPTIMIZERS[:3])}(net, lr=0.01)")
    else:
        lines += ["    optimizer = Adam(lr=0.01)", f"    objective = {functions[0]}"]
        if len(functions) > 1 or (not careful and r.random() < 0.3):
            metric = functions[-1] if careful else r.choice([functions[-1], "accuracy"])
            lines.append(f"    metrics = [{metric}]")
    return "\n".join(lines) + "\n"


# ... and the folders of pairs tests/lit/check/fields' make_folders.py writes (pairs/: image
# [1, 8, 8] PNGs, text/ captions, label/ classes; the others broken, elsewhere/ absent).
LOSS_FIELD_DATA = ['"digits-captions"', '"pairs/"', '"pairs/", text="words", length=5']
SLOPPY_LOSS_FIELD_DATA = ['"digits-captions", flatten=true', '"pairs.npz"', '"digits"',
                          '"xyw.npz"', '"partner/"', '"shapes/"', '"pngkind/"', '"mixed/"',
                          '"badcls/"', '"elsewhere/"', '"pairs/", text="chars"',
                          '"pairs/", fields=["image", "caption"]', '"pairs"']  # fmt: skip


def _paired_loss(r: random.Random, careful: bool) -> str:
    """A `loss` block over named fields: the forward takes `image` and `text` by name, the
    loss `label` (`target = label`, or by default); sloppy ones misspell a parameter or the
    target, annotate the wrong shape, pick a float loss for labels, or set `target` where
    there is nothing to pick."""
    image = "Tensor[B, 1, 8, 8]" if careful or r.random() < 0.7 else "Tensor[B, 64]"
    text = "text" if careful or r.random() < 0.8 else r.choice(["txt", "label", "x"])
    lines = ["model Pair:", "    layer img = Linear(64, 16)",
             "    layer words = Embedding(256, 16)", "    layer head = Linear(16, 10)",
             f"    fn forward(self, image: {image}, {text}: Tensor[B, T]) -> Tensor[B, 10]:",
             f"        let h = relu(self.img(image.flatten(1))) + mean(self.words({text}), dim=1)",
             "        return self.head(h)", ""]  # fmt: skip
    data = r.choice(LOSS_FIELD_DATA if careful else LOSS_FIELD_DATA + SLOPPY_LOSS_FIELD_DATA)
    lines += ["let net = Pair()", f"let pairs = load_dataset({data})", "train net on pairs:",
              "    epochs = 1", "    batch_size = 16", "    optimizer = Adam(lr=0.01)"]  # fmt: skip
    loss = "CrossEntropy" if careful or r.random() < 0.7 else r.choice(["MSE", "nope"])
    lines.append(f"    loss = {loss}")
    if r.random() < 0.6:
        target = "label" if careful or r.random() < 0.7 else r.choice(["lable", "image", "y"])
        lines.append(f"    target = {target}")
    if r.random() < 0.4:
        lines.append(f"    metrics = [{r.choice(['accuracy', 'top_k(3)'])}]")
    return "\n".join(lines) + "\n"


def _step_window(r: random.Random, careful: bool) -> str:
    """` from epoch 2`, ` until epoch 1`, both; sloppy: epoch 0 or an empty window."""
    low = 1 if careful else 0
    first, last = r.randint(low, 2), r.randint(2 if careful else 0, 3)
    return r.choice([f" from epoch {first}", f" until epoch {last}",
                     f" from epoch {first} until epoch {last}"])  # fmt: skip


def _sampler(names: list[str], careful: bool, r: random.Random) -> list[str]:
    """`fn sample(A, B) -> Tensor` returning 8 grey 8x8 images; sloppy: flat, 4 channels, or
    a parameter too many."""
    params = names if careful or r.random() < 0.7 else [*names, "x"]
    shapes = [".view(8, 1, 8, 8)"] + ([] if careful else ["", ".view(8, 4, 4, 4)"])
    image = r.choice(shapes)
    return [f"fn sample({', '.join(params)}) -> Tensor:",
            f"    return sigmoid({names[0]}(randn([8, 64]))){image}", ""]  # fmt: skip


GROUP_SELECTIONS = ["params(net.blocks, ndim=2)", "params(net, ndim=1)", "net.head",
                    "params(net.blocks[0:1], ndim=2)", 'params(net, match="*.bias")',
                    'params(net, match=["*.ln.weight", "*.bias"])', "net.embed.weight"]  # fmt: skip
SLOPPY_SELECTIONS = ["params(net.blokcs)", "params(net, dims=2)", "params(net, ndim=5)",
                     "params(nte)", "params()", "params(net, match=3)", "hidden - net",
                     "rest", "net.blocks[0:9]", "params(hidden)", "1 + 2"]  # fmt: skip
SCHEDULE_OPTIONS = [
    "",
    ", lr_schedule=cosine(warmup_steps=3)",
    ", grad_clip=1.0",
    ", lr_schedule=linear(min_lr=1e-4), grad_clip=0.5",
    ", lr_schedule=none",
]
SLOPPY_OPTIONS = [", lr_schedule=plateau", ", grad_clip=-1.0", ", lr_schedule=cosinus",
                  ", ns_steps=0", ", betas=(0.9, 0.95)", ", momentum=2"]  # fmt: skip


def _param_groups(r: random.Random, careful: bool) -> str:
    """Parameter groups (`group hidden = params(net.blocks, ndim=2)`) and a step of several
    optimizers: careful ones give Muon the blocks' matrices and AdamW the complement (with
    per-group options, own schedules and clips); sloppy ones select an unknown layer, nothing,
    a parameter twice, a vector for Muon, a group through itself, or a bad option."""
    depth, width = r.randint(1, 3), r.choice([8, 16])
    lines = ["model Block:", f"    layer ln = LayerNorm({width})",
             f"    layer fc = Linear({width}, {width})",
             f"    fn forward(self, x: Tensor[B, {width}]) -> Tensor[B, {width}]:",
             "        return x + relu(self.fc(self.ln(x)))", "", "model Net:",
             f"    layer embed = Linear(64, {width})",
             f"    layer blocks = [Block() for _ in range({depth})]",
             f"    layer head = Linear({width}, 10)",
             "    fn forward(self, x: Tensor[B, 64]) -> Tensor[B, 10]:",
             "        let h = self.embed(x)", "        for blk in self.blocks:",
             "            h = blk(h)", "        return self.head(h)", "",
             "fn ce(net, x, y) -> Tensor:", "    return cross_entropy(net(x), y)", "",
             "let net = Net()", 'let data = load_dataset("digits", flatten=true)', "",
             "train net on data:", "    epochs = 1"]  # fmt: skip
    if r.random() < 0.3:
        lines.append(f"    {r.choice(['lr_schedule = cosine(warmup_steps=2)', 'grad_clip = 1.0'])}")
    pool = GROUP_SELECTIONS if careful else GROUP_SELECTIONS + SLOPPY_SELECTIONS
    hidden = "params(net.blocks, ndim=2)" if careful else r.choice(pool)
    lines.append(f"    group hidden = {hidden}")
    vectors = r.random() < 0.5
    if vectors:
        lines.append(f"    group gains = {'params(net, ndim=1)' if careful else r.choice(pool)}")
    rest = "params(net) - hidden" + (" - gains" if vectors else "")
    lines.append(f"    group rest = {rest if careful or r.random() < 0.6 else r.choice(pool)}")
    options = SCHEDULE_OPTIONS if careful else SCHEDULE_OPTIONS + SLOPPY_OPTIONS
    muon = f"Muon(hidden, lr=0.02{r.choice(options)})"
    extra = ", gains(weight_decay=0.0)" if vectors else ""
    adamw = f"AdamW(rest{extra}, lr=3e-3{r.choice(options)})"
    if not careful and r.random() < 0.3:
        adamw = r.choice(["AdamW(net, lr=3e-3)", "Muon(rest)", "AdamW()", "SGD(hidden, rest)"])
    if r.random() < 0.3:  # a plain one-model block: its schedule and clip are the block's
        lines.append("    loss = CrossEntropy")
        if careful:
            muon, adamw = "Muon(hidden, lr=0.02)", f"AdamW(rest{extra}, lr=3e-3)"
        lines.append(f"    optimizer = ({muon}, {adamw})")
    elif r.random() < 0.5:
        lines.append(f"    step ce with {muon}, {adamw}")
    else:
        lines += [f"    step ce with ({muon},", f"                  {adamw})"]
    return "\n".join(lines) + "\n"


def _structured(r: random.Random, careful: bool) -> str:
    """A small GPT-like program: a block list looped over, a position table indexed by
    `arange(T)`, a learned Parameter, a tied head, a branch, a tuple, a loss fn. When
    not `careful`, one of them is off: a table shorter than T, a wrong tie, a condition
    on a tensor, a loop over a tensor, a non-scalar loss, an einsum of wrong sizes."""
    d = r.choice([8, 16, 32])
    vocab, block, t = r.choice([16, 32]), r.choice([8, 16]), r.choice([4, 8, 16])
    n = r.choice(["1", "2", "3", "0"] if careful else ["1", "2", "-1", "0", "2147483648"])
    slip = (
        None
        if careful
        else r.choice(
            [
                "table",
                "tie",
                "tensor_if",
                "for_tensor",
                "loss",
                "einsum",
                "param",
                "unbound",
                "rotary",
            ]
        )
    )
    if careful:
        t = min(t, block)
    head_width = d if slip != "tie" else d + 1
    lines = [
        "model Block:",
        f"    layer ln = LayerNorm({d})",
        f"    layer attn = MultiHeadAttention({d}, 2, causal=true)",
        f"    layer mlp = Linear({d}, {d})",
        f"    layer rot = Rotary({d // 2 if slip != 'rotary' else d // 2 + 1})",
        f"    fn forward(self, x: Tensor[B, T, {d}]) -> Tensor:",
        "        x = x + self.attn(self.ln(x))",
        f"        x = x + self.rot(x.view(B, T, 2, {d // 2})).reshape(B, T, {d})",
        "        return x + (self.mlp(x) |> gelu)",
        "model Net:",
        f"    layer wte = Embedding({vocab}, {d})",
        f"    layer wpe = Embedding({block if slip != 'table' else t - 1}, {d})",
        f"    layer h = [Block() for _ in range({n})]",
        f"    layer bias = Parameter(1, 1, {d if slip != 'param' else d + 2})",
        f"    layer ln_f = LayerNorm({head_width})",
        f"    fn forward(self, idx: Tensor[B, {t}]) -> Tensor:",
        "        let T = idx.shape[1]",
        "        x = self.wte(idx) + self.wpe(arange(T)) + self.bias",
    ]
    loop = "        for blk in self.h:" if slip != "for_tensor" else "        for blk in x:"
    lines += [loop, "            x = blk(x)"]
    cond = r.choice(["self.training", "T > 2"]) if slip != "tensor_if" else "x.sum() > 0"
    lines += [f"        if {cond}:", "            y = x * 0.5"]
    if slip != "unbound":
        lines += ["        else:", "            y = x"]
    if slip == "einsum":
        lines.append('        y = einsum("btd,bsd->bts", y, y[:, :1, :2])')
    lines += [
        "        let (a, b) = (y, self.ln_f(y))",
        "        return b @ self.wte.weight.T",
        "fn lm_loss(out, y) -> Tensor:",
        "    let flat = out.reshape(-1, out.shape[-1])",
    ]
    lines.append(
        "    return cross_entropy(flat, y.reshape(-1))"
        if slip != "loss"
        else '    return cross_entropy(flat, y.reshape(-1), reduction="none")'
    )
    lines += [
        "let net = Net()",
        f'let data = load_dataset("text", path="corpus.txt", block_size={t})',
        "train net on data:",
        "    epochs = 1",
        "    loss = lm_loss",
        r.choice(["    optimizer = AdamW(lr=3e-4)", "    optimizer = Adam(lr=0.001)"]),
    ]
    return "\n".join(lines) + "\n"


def _config_expressions(r: random.Random) -> str:
    """Overrides of a model whose `head_dim = dim / n_heads` is computed from them
    (tests/lit/check/Inputs/derived_config.nml): exact or not, zero, negative, given to
    the instance or to a layer of a `.tl` model, the computed entry overridden itself."""
    dim = r.choice(["64", "96", "100", "0", "-8", "2 ** 70", "64.0", "8 * 8"])
    heads = r.choice(["8", "4", "3", "0", "-2", "1"])
    keys = r.sample([f"dim={dim}", f"n_heads={heads}", f"head_dim={r.choice(['8', '0'])}"],
                    r.randint(0, 3))  # fmt: skip
    overrides = ", ".join(keys)
    lines = ["import Inputs.derived_config.nml as Attn"]
    if r.random() < 0.5:
        lines.append(f"let net = Attn({overrides})")
    else:
        width = dim if dim.isdigit() else "64"
        lines += [
            "model Net:",
            f"    layer a = Attn({overrides})",
            f"    fn forward(self, x: Tensor[B, T, {width}]) -> Tensor:",
            "        return self.a(x)",
            "let net = Net()",
        ]
    lines += ["let data = load_dataset()", "train net on data:", "    epochs = 1"]
    return "\n".join(lines) + "\n"


def _per_position(r: random.Random, careful: bool) -> str:
    """Layer lists whose elements differ by position (`8 if i == 0 else 16`) or run over a
    list (`for w in [8, 16]`), looped over or indexed; when not `careful` a width does not
    chain, an index is past the list, or the list runs over a number."""
    widths = [r.choice([4, 8, 16]) for _ in range(r.randint(1, 4))]
    first = widths[0]
    chained = f"{first} if i == 0 else {widths[0]}"
    items = str(widths)
    if not careful:
        slip = r.choice(["chain", "index", "items", "zero"])
        chained = f"{first + 1} if i == 0 else {first}" if slip == "chain" else chained
        items = r.choice(["3", "widths"]) if slip == "items" else items
        widths = [0, *widths] if slip == "zero" else widths
    n = len(widths)
    index = n if not careful and r.random() < 0.3 else r.randint(0, n - 1)
    lines = [
        "model Net:",
        f"    layer same = [Linear({chained}, {first}) for i in range({n})]",
        f"    layer heads = [Linear({first}, w) for w in {items}]",
        f"    fn forward(self, x: Tensor[B, {first}]) -> Tensor:",
        "        for layer in self.same:",
        "            x = layer(x)",
        f"        return self.heads[{index}](x)",
        "let net = Net()",
        "let data = load_dataset()",
        "train net on data:",
        "    epochs = 1",
    ]
    return "\n".join(lines) + "\n"


def _assignments(r: random.Random, careful: bool) -> str:
    """Assignments into tensors (`x[:, 0] = y`, `out[idx] += v`, `h[h > 0] = 0.0`) of random
    regions, values and operators, on a layer's output, an input, a `zeros_like` (in a loop
    too); when not `careful` a value's width, a mask's dims or a dtype is off."""
    d, n = r.choice([4, 8]), r.choice([2, 3])
    region = r.choice(["[:, 0]", "[0]", "[:, 1:3]", "[..., -1]", "[h > 0.0]", "[idx]",
                       "[:, idx]", "[rows]", "[0, 0]", "[-1, :]"])  # fmt: skip
    value = {"[:, 0]": "x[:, 1]", "[0]": "h[1]", "[:, 1:3]": "x[:, :2]", "[..., -1]": "0.5",
             "[h > 0.0]": r.choice(["0.0", "h[0, 0]", "x[0, :1]"]), "[idx]": "h[idx] * 2.0",
             "[:, idx]": "x[:, idx]", "[rows]": "self.fc(x[rows])", "[0, 0]": "1.0",
             "[-1, :]": "x[0]"}[region]  # fmt: skip
    if not careful:
        value = r.choice([f"x[:, :{d - 1}]", "h.long()", "h", "x.sum(dim=1)", "(h, h)",
                          "h[idx].long()", "randn(3, 3)"])  # fmt: skip
        region = r.choice([region, "[h[0] > 0.0]", "[idx, h > 0.0]", "[0, 0, 0]", "[2.5]"])
    operator = r.choice(["=", "=", "+=", "-=", "*=", "/="])
    base = r.choice(["h", "h", "x", "out"])
    lines = [
        "model Net:",
        f"    layer fc = Linear({d}, {d})",
        f"    fn forward(self, x: Tensor[B, {d}]) -> Tensor:",
        "        let h = self.fc(x)",
        "        let out = zeros_like(h)",
        f"        let idx = arange({n})",
        "        let rows = where(x[:, 0] > 0.0)[0]",
    ]
    statement = f"{base}{region} {operator} {value.replace('h', base) if base == 'out' else value}"
    if r.random() < 0.3:
        lines += [f"        for i in range({n}):", f"            {statement}"]
    else:
        lines.append(f"        {statement}")
    lines += [
        f"        return {base} + h",
        "let net = Net()",
        "let data = load_dataset()",
        "train net on data:",
        "    epochs = 1",
    ]
    return "\n".join(lines) + "\n"


def _sequential_models(r: random.Random, careful: bool) -> str:
    """A `Sequential` that holds models of the program beside catalogue layers, as a layer
    or as each element of a per-position list; when not `careful` a width does not chain,
    an element is unknown, a `Parameter`, or the holder itself."""
    w = r.choice([4, 8, 16])
    elements = [r.choice([f"Block{w}()", f"Block{w}", f"Linear({w}, {w})", "GELU"])
                for _ in range(r.randint(1, 4))]  # fmt: skip
    if not careful:
        slip = r.choice([f"Linear({w + 1}, {w})", "Blok()", "Parameter(2)", "Net()",
                         f"Block{w}(3)", f"Sequential(Block{w}())"])  # fmt: skip
        elements.insert(r.randint(0, len(elements)), slip)
    body = f"Sequential({', '.join(elements)})"
    if r.random() < 0.5:
        body = f"[{body} for i in range({r.randint(0, 3)})]"
        use = ["        for s in self.body:", "            x = s(x)", "        return x"]
    else:
        use = ["        return self.body(x)"]
    lines = [
        f"model Block{w}:",
        f"    layer fc = Linear({w}, {w})",
        f"    fn forward(self, x: Tensor[B, {w}]) -> Tensor:",
        "        return x + relu(self.fc(x))",
        "model Net:",
        f"    layer body = {body}",
        f"    fn forward(self, x: Tensor[B, {w}]) -> Tensor:",
        *use,
        "let net = Net()",
        "let data = load_dataset()",
        "train net on data:",
        "    epochs = 1",
    ]
    return "\n".join(lines) + "\n"


def _model(r: random.Random, name: str, kernel: str | None) -> tuple[str, str]:
    width = r.choice(WIDTHS)
    lines = [f"model {name}:"]
    layers: list[str] = []
    current = width
    for i in range(r.randint(1, 4)):
        out = r.choice(WIDTHS) if r.random() < 0.9 else r.choice(NUMBERS)
        ctor = r.choice(
            [f"Linear({current if r.random() < 0.85 else r.choice(WIDTHS)}, {out})",
             f"Dropout({r.choice(['0.1', '0.5', '1.5'])})", f"LayerNorm({current})",
             "ReLU", f"Embedding(16, {current})", f"LSTM({current}, {out}, batch_first=true)",
             f"Conv2d(1, {out}, 3, padding=1)", "MaxPool2d(2)", f"BatchNorm1d({current})",
             # symbolic sizes through arithmetic: H+4, (H+1)//2, 2*H, H//2 (dim_expr)
             f"Conv2d(1, {out}, 3, padding={r.choice([0, 2, 3])})",
             f"Conv2d(1, {out}, 3, stride=2, padding=1)", "AvgPool2d(2)",
             f"ConvTranspose2d(1, {out}, 2, stride=2)",
             f"Linear({current}, {out}, init=\"kaiming_normal\", mode=\"fan_out\", "
             "nonlinearity=\"relu\")",
             f"Linear({current}, {out}, init=\"uniform\", a=-0.1, b={r.choice(['0.1', '-1'])})",
             f"LayerNorm({current}, init=\"zeros\", bias_init=\"ones\")",
             f"BatchNorm1d({current}, init=\"constant\", value=0.5)",
             "Parameter(init=\"constant\", value=2.6592)", "Parameter(values=[1.0, 2.0])"]
        )  # fmt: skip
        layers.append(f"l{i}")
        lines.append(f"    layer l{i} = {ctor}")
        if ctor.startswith("Linear") and str(out).isdigit():
            current = int(out)
    shape = r.choice(
        [
            f"Tensor[B, {width}]",
            "Tensor",
            f"Tensor[B, T, {width}]",
            "Tensor[B, 1, 8, 8]",
            "Tensor[B, 1, H, W]",
        ]
    )
    lines.append(f"    fn forward(self, x: {shape}) -> Tensor:")
    body = _forward_body(r, layers, kernel)
    lines += [f"        {line}" for line in body]
    return name, "\n".join(lines)


def _forward_body(r: random.Random, layers: list[str], kernel: str | None) -> list[str]:
    stages = ["x"]
    for layer in layers:
        stages.append(f"self.{layer}")
        if r.random() < 0.4:
            stages.append(r.choice(FUNCTIONS))
    if kernel is not None and r.random() < 0.5:
        stages.insert(r.randint(1, len(stages)), kernel)
    body: list[str] = []
    if r.random() < 0.5:
        body.append("let h = " + " |> ".join(stages))
        body.append(r.choice(["h = h + h", "h = h * 2.0", "h = relu(h)", "h = self.l0(h)",
                              "h = h + x", *TENSOR_STATEMENTS]))  # fmt: skip
        for _ in range(r.choice([0, 1, 1, 2])):
            body += r.choice(INDEX_ASSIGNMENTS).split("\n")
        body.append("return h")
    else:
        body.append("return " + " |> ".join(stages))
    return body


def _kernel(r: random.Random) -> tuple[str, str]:
    op = r.choice(["x * x", "x + 1.0", "tl.maximum(x, 0.0)", "x * scale", "tl.exp(x)", "x @ x"])
    masked = ", mask=mask" if r.random() < 0.85 else ""
    default = r.choice(["", " = 128", " = 1000", " = [128, 256]", " = [96]"])
    options = r.choice(["", "", "(num_warps=[2, 4])", "(backward=kern_bwd)",
                        "(backward=kern_bwd, num_stages=[2, 3])", "(backward=kern_bak)",
                        "(num_wraps=[4])"])  # fmt: skip
    text = f"""@kernel{options} def kern(x_ptr, out_ptr, n, BLOCK: tl.constexpr{default}):
    let pid = tl.program_id(axis={r.choice(["0", "0", "1", "3"])})
    let offs = pid * BLOCK + tl.arange(0, BLOCK)
    let mask = offs < n
    let x = tl.load(x_ptr + offs{masked})
    tl.store(out_ptr + offs, {op}{masked})
"""
    if "backward" in options:
        text += _backward_kernel(r)
    return "kern", text


def _backward_kernel(r: random.Random) -> str:
    """`kern`'s backward, now and then with a slip: a gradient named for no output, a
    missing or extra gradient, a shape annotation that disagrees."""
    grad = r.choice(["dout_ptr", "dout_ptr", "grad_ptr"])
    extra = r.choice(["", "", ", dy_ptr"])
    shape = r.choice(["", "", ": Tensor[n]", ": Tensor[n, n]"])
    store = "" if r.random() < 0.15 else "    tl.store(dx_ptr + offs, g * x, mask=mask)\n"
    return f"""
@kernel def kern_bwd({grad}, x_ptr, dx_ptr{shape}{extra}, n, BLOCK: tl.constexpr = 128):
    let offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    let mask = offs < n
    let x = tl.load(x_ptr + offs, mask=mask)
    let g = tl.load({grad} + offs, mask=mask)
{store}"""


def _overrides(r: random.Random) -> str:
    if r.random() < 0.8:
        return ""
    return f"{r.choice(['width', 'hidden', 'd_model'])}={r.choice(NUMBERS)}"


def _script_statement(r: random.Random) -> str:
    return r.choice(
        ["print(max(1, 2))", "let s = randn(4, 4)", f"let z = zeros({r.choice(NUMBERS)}, 4)",
         "let a = torch.arange(10)", "print(len([1, 2]))", "manual_seed(0)", "let q = arange(-0.5)",
         "torch.os.system(\"echo hi\")", "let t = tensor([1, 2, 3])", "print(net)",
         f"let u = ones({r.choice(WIDTHS)})", "print(data)",
         "let k = kern_launcher(randn(8), randn(8))"]
    )  # fmt: skip


WEIGHT_RULES = [
    '    "{l}.{p}" -> "{l}.{p}"', '    "{l}.weight" -> "{l}.weight" transposed',
    '    "fc{i}.{p}" -> "fc{i}.{p}"', '    ignore "fc1.{p}"', '    "{a}.{b}" -> "out.{b}"',
    '    "fc0.weight" -> "fc1.weight"', '    ignore "{x}"', '    "{l}.{p}" -> "{l}.{q}"',
    '    ["fc0.weight", "fc1.weight"] -> "fc0.weight" along 0',
    '    "qkv.weight" -> ["fc0.weight", "fc1.weight"] along 1 transposed',
    '    ["fc{i}.weight", "fc{i}.bias"] -> "fc{i}.weight"',
    '    "{l}.{p}" -> ["{l}.{p}", "{l}.{p}"]',
    '    "fc0.bias" -> "fc0.bias" along 2', '    ["{a}.{p}", "{b}.{p}"] -> "{a}.{p}"',
    '    config "width" -> width', '    config "hidden" -> nothing', '    config "n_layer" -> n',
]  # fmt: skip


def _weights(r: random.Random) -> str:
    """A `weights` block over the work folder's small safetensors files (or an absent one)."""
    source = r.choice(["w.safetensors", "cut.safetensors", "absent.safetensors", ".", "hf"])
    instance = r.choice(["net"] * 5 + ["data", "nothing"])
    rules = [r.choice(WEIGHT_RULES) for _ in range(r.randint(1, 4))]
    return "\n".join([f'weights {instance} from "{source}":', *rules])


MAP_FILES = ["maps/one.nml", "maps/maps.nml", "maps/stray.nml", "maps/confnet.nml"]
MAP_NAMES = ["hf", "plain", "fused", "split", "bad", "twice", "renamed", "torchvision", "Hf"]
MAP_SOURCES = ["maps/one.safetensors", "w.safetensors", "cut.safetensors", "hf",
               "absent.safetensors"]  # fmt: skip


def _weights_maps(r: random.Random, careful: bool) -> str:
    """A model whose .nml file declares `@weights` maps (tests/lit/check/weights_nml/Inputs),
    filled by a `weights` line that applies its only map, names one with `using`, or adds
    rules of its own before it; sloppy ones name a map the model lacks, a model with
    several maps or none, another file's tensors, a map of a misdeclared file."""
    nml = "maps/one.nml" if careful else r.choice(MAP_FILES)
    source = "maps/one.safetensors" if careful else r.choice(MAP_SOURCES)
    head = f'weights net from "{source}"'
    if careful:
        head += r.choice(["", " using hf"])
    elif r.random() < 0.7:
        head += f" using {r.choice(MAP_NAMES)}"
    own = [] if careful else [r.choice(WEIGHT_RULES) for _ in range(r.randint(0, 2))]
    if careful and r.random() < 0.3:  # rules of its own apply a map only with `using`
        head, own = f'weights net from "{source}" using hf', ['    ignore "model.mask"']
    block = [head + ":", *own] if own else [head]
    return "\n".join([f'import "{nml}" as Net', "", "let net = Net()", "", *block]) + "\n"


def _train(r: random.Random) -> str:
    model, data = r.choice([("net", "data")] * 8 + [("net", "nodata"), ("Mdl0", "data")])
    lines = [f"train {model} on {data}:"]
    for key in r.sample(sorted(SETTINGS), r.randint(1, 5)):
        lines.append(f"    {key} = {r.choice(SETTINGS[key])}")
    if r.random() < 0.3:
        every, unit = r.choice(["1", "5", "0", "00"]), r.choice(["epochs", "steps"])
        lines.append(f"    checkpoint every {every} {unit}")
    return "\n".join(lines)


# ------------------------------------------------------------------ mutator

_TOKEN = re.compile(r"[^\W\d]\w*|\d[\w.]*|\S")


def mutate(text: str, r: random.Random) -> str:
    """`text` with one to four random edits."""
    for _ in range(r.randint(1, 4)):
        text = r.choice(_MUTATIONS)(text, r)
    return text


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _replace_token(text: str, r: random.Random) -> str:
    tokens = _tokens(text)
    if not tokens:
        return text
    token = r.choice(tokens)
    names = [t.group() for t in tokens if t.group()[:1].isalpha()] or ["x"]
    new = r.choice(NUMBERS) if token.group()[:1].isdigit() or r.random() < 0.3 else r.choice(names)
    return text[: token.start()] + new + text[token.end() :]


def _insert_char(text: str, r: random.Random) -> str:
    at = r.randint(0, len(text))
    return text[:at] + r.choice(HOSTILE) + text[at:]


def _delete_token(text: str, r: random.Random) -> str:
    tokens = _tokens(text)
    if not tokens:
        return text
    token = r.choice(tokens)
    return text[: token.start()] + text[token.end() :]


def _line_edit(text: str, r: random.Random) -> str:
    lines = text.split("\n")
    i, j = r.randrange(len(lines)), r.randrange(len(lines))
    action = r.choice(["delete", "duplicate", "swap", "dedent", "indent"])
    if action == "delete":
        del lines[i]
    elif action == "duplicate":
        lines.insert(j, lines[i])
    elif action == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif action == "dedent":
        lines[i] = lines[i].lstrip()
    else:
        lines[i] = "    " + lines[i]
    return "\n".join(lines)


def _repeat(text: str, r: random.Random) -> str:
    """A chunk repeated many times: a long pipe, a long sum, deep brackets."""
    count = r.choice([50, 200, 500, 1000])
    chunk = r.choice([" |> relu", " + x", "(", "[", " * 2", ".abs()"])
    tokens = _tokens(text)
    if not tokens:
        return text
    at = r.choice(tokens).end()
    closing = {"(": ")", "[": "]"}.get(chunk, "")
    return text[:at] + chunk * count + closing * count + text[at:]


def _truncate(text: str, r: random.Random) -> str:
    return text[: r.randint(0, len(text))]


def _splice(text: str, r: random.Random) -> str:
    """A line from a generated program put into the seed."""
    extra = generate(r).split("\n")
    lines = text.split("\n")
    lines.insert(r.randint(0, len(lines)), r.choice(extra))
    return "\n".join(lines)


_MUTATIONS = [_replace_token, _replace_token, _insert_char, _delete_token, _line_edit,
              _line_edit, _repeat, _truncate, _splice]  # fmt: skip
