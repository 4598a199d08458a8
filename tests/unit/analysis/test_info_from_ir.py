"""`tlc info` reads its shapes from the specialised, typed IR (no second inference)."""

from __future__ import annotations

from pathlib import Path

from tensorloom.analysis.profile import ProfileOptions, compile_for_info, profile_file
from tensorloom.dialects.nml import TensorType
from tensorloom.passes.support.model_env import forward_of, models_of

BLOCKS = """
@model Block:
    @config:
        c = 4
    @layers:
        conv = Conv2d(c, c, 3, padding=1)
    @forward(x):
        return relu(conv(x))

@model Net:
    @config:
        width = 4
    @layers:
        first = Block(width)
        down  = MaxPool2d(2)
        again = Block(width)
    @forward(x: Tensor[B, width, 8, 8]):
        return again(down(first(x)))
"""

TWO = """import "blocks.nml" as Net

let net = Net()
let wide = Net(width=8)
"""

STACK = """
@model Layer:
    @config:
        d = 8
    @layers:
        fc = Linear(d, d)
    @forward(x):
        return relu(fc(x))

@model Stack:
    @config:
        n = 3
    @layers:
        h = [Layer(8) for _ in range(n)]
    @forward(x: Tensor[B, T, 8]):
        for layer in h:
            x = layer(x)
        return x
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_block_applied_before_and_after_a_pool_has_both_shapes(tmp_path: Path) -> None:
    path = write(tmp_path, "blocks.nml", BLOCKS)
    result, profiles = profile_file(path, ProfileOptions(batch_size=2))
    assert result.ok
    net = next(p for p in profiles if p.name == "Net")
    first, down, again = net.layers
    assert (first.kind, again.kind) == ("Block", "Block")
    assert first.output_shape == (2, 4, 8, 8)
    assert down.output_shape == again.output_shape == (2, 4, 4, 4)
    assert again.layers[0].output_shape == (2, 4, 4, 4)
    assert first.flops is not None and again.flops is not None
    assert first.flops == 4 * again.flops  # a quarter of the pixels after the pool


def test_the_model_alone_is_profiled_as_its_first_use(tmp_path: Path) -> None:
    path = write(tmp_path, "blocks.nml", BLOCKS)
    _, profiles = profile_file(path, ProfileOptions(batch_size=2))
    block = next(p for p in profiles if p.name == "Block")
    assert block.model == "Block"
    assert block.input_shapes == [(2, 4, 8, 8)]


def test_two_instances_each_have_their_own_types(tmp_path: Path) -> None:
    write(tmp_path, "blocks.nml", BLOCKS)
    path = write(tmp_path, "two.tl", TWO)
    result, profiles = profile_file(path, ProfileOptions(batch_size=2))
    assert result.ok
    by_name = {p.name: p for p in profiles}
    assert by_name["net"].model == by_name["wide"].model == "Net"
    assert by_name["net"].layers[2].output_shape == (2, 4, 4, 4)
    assert by_name["wide"].layers[2].output_shape == (2, 8, 4, 4)
    assert by_name["wide"].params == 2 * (8 * 8 * 9 + 8)


def test_the_types_come_from_the_ir(tmp_path: Path) -> None:
    """The specialised module holds each use's types: what the profile shows."""
    path = write(tmp_path, "blocks.nml", BLOCKS)
    result = compile_for_info(path, {})
    assert result.module is not None and result.ok
    models = models_of(result.module)
    assert set(models) == {"Block", "Net", "Net.first", "Net.again"}
    again = models["Net.again"]
    forward = forward_of(again)
    assert forward is not None
    [x] = forward.body.block.args
    assert isinstance(x.type, TensorType) and x.type.dims == ("B", 4, 4, 4)


def test_a_layer_list_is_one_row_of_its_iterations(tmp_path: Path) -> None:
    path = write(tmp_path, "stack.nml", STACK)
    result, profiles = profile_file(path, ProfileOptions(batch_size=2, bindings={"T": 5}))
    assert result.ok
    stack = next(p for p in profiles if p.name == "Stack")
    [h] = stack.layers  # the list the forward loops over is used, not listed as unused
    assert (h.name, h.kind, h.repeat, h.unused) == ("h", "Layer", 3, False)
    assert [layer.kind for layer in h.layers] == ["Linear", "relu"]  # one iteration
    assert h.output_shape == (2, 5, 8) and h.layers[0].output_shape == (2, 5, 8)
    assert h.params == stack.params == 3 * (8 * 8 + 8)  # `iterations`: the three copies
    linear = 2 * 2 * 5 * 8 * 8 + 2 * 5 * 8  # the catalogue's Linear FLOPs: matmul and bias
    assert h.layers[0].flops == linear
    assert h.flops == stack.flops == 3 * (linear + 2 * 5 * 8)  # three Linears, three relus


def test_a_binding_the_program_contradicts_is_a_diagnostic_at_its_line(tmp_path: Path) -> None:
    """`-D T=16` where `Linear(8, 8)` needs T to be 8: shape inference has the binding,
    and reports it at the layer (before, a message in the profile without a line)."""
    text = STACK.replace("Tensor[B, T, 8]", "Tensor[B, 2, T]")
    path = write(tmp_path, "stack.nml", text)
    result, profiles = profile_file(path, ProfileOptions(bindings={"T": 16}))
    assert not result.ok and not profiles
    [error] = result.sink.errors()
    assert error.code == "TL0201"
    lines = text.splitlines()
    line = lines.index("        return relu(fc(x))")
    span = error.primary.span
    assert (span.line, span.col) == (line + 1, lines[line].index("fc") + 1)


SCAN = """
@model Cell:
    @config:
        d = 16
    @layers:
        a = Linear(d, d)
        b = Linear(d, d)
        c = Linear(d, d)
    @forward(h, x):
        let g = sigmoid(c(x))
        return g * tanh(a(h) + b(x)) + (1.0 - g) * h

@model Mixer:
    @config:
        d = 16
        steps = 256
    @layers:
        norm = LayerNorm(d)
        cell = Cell(d)
    @forward(x):
        let u = norm(x)
        let h = u[:, 0]
        for t in range(steps):
            h = cell(h, u[:, t])
        return x + h.unsqueeze(1)

@model Mamba:
    @config:
        d = 16
        n_layer = 16
    @layers:
        layers = [Mixer(d) for _ in range(n_layer)]
        head = Linear(d, 4)
    @forward(x: Tensor[B, 256, 16]):
        for layer in layers:
            x = layer(x)
        return head(x[:, -1])
"""


def test_a_long_scan_is_profiled_once_and_multiplied(tmp_path: Path) -> None:
    """16 layers of a 256-step scan over a cell of 11 applications: 45,000 applications
    unrolled, past TL0311's 20,000. A loop's iterations have one set of types in the IR,
    so the trace walks two and the profile multiplies the second."""
    path = write(tmp_path, "mamba.nml", SCAN)
    result, profiles = profile_file(path, ProfileOptions(batch_size=8))
    assert result.ok and not [d for d in result.sink if d.code == "TL0311"]
    mamba = next(p for p in profiles if p.name == "Mamba")
    [layers, _, head] = mamba.layers
    assert (layers.name, layers.kind, layers.repeat) == ("layers", "Mixer", 16)
    scan = next(row for row in layers.layers if row.repeat)
    assert (scan.name, scan.repeat) == ("for", 256)
    cell = next(row for row in scan.layers if row.kind == "Cell")
    assert scan.params == cell.params == 3 * (16 * 16 + 16)  # one cell, applied 256 times
    assert mamba.params == 16 * (32 + cell.params) + head.params
    assert cell.flops is not None and scan.flops is not None
    assert scan.flops == 256 * cell.flops  # the index ops cost nothing
    assert mamba.activation_bytes is not None and mamba.flops is not None


def test_a_loop_costs_what_the_same_steps_written_out_cost(tmp_path: Path) -> None:
    """The multiplied totals equal those of the iterations written out one by one."""
    looped = SCAN.replace("n_layer = 16", "n_layer = 1").replace("steps = 256", "steps = 5")
    steps = "".join(f"        h = cell(h, u[:, {t}])\n" for t in range(5))
    unrolled = looped.replace(
        "        for t in range(steps):\n            h = cell(h, u[:, t])\n", steps
    )
    totals = []
    for name, text in (("looped.nml", looped), ("unrolled.nml", unrolled)):
        result, profiles = profile_file(write(tmp_path, name, text), ProfileOptions(8))
        assert result.ok
        mamba = next(p for p in profiles if p.name == "Mamba")
        totals.append(
            (mamba.params, mamba.flops, mamba.activation_bytes, mamba.largest_tensor_bytes)
        )
    assert totals[0] == totals[1]
    assert totals[0][2] is not None


BERT = """
@model Layer:
    @config:
        d = 32
        heads = 4
        hd = 8
    @layers:
        qkv = Linear(d, 3 * d)
        out = Linear(d, d)
        norm = LayerNorm(d)
    @forward(x, mask):
        let (q, k, v) = qkv(x).split(d, dim=-1)
        let b = x.size(0)
        let t = x.size(1)
        q = q.view(b, t, heads, hd).transpose(1, 2)
        k = k.view(b, t, heads, hd).transpose(1, 2)
        v = v.view(b, t, heads, hd).transpose(1, 2)
        let scores = (q @ k.transpose(-2, -1)) / sqrt(8.0) + mask
        let y = (softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return norm(x + out(y))

@model Bert:
    @config:
        vocab = 100
        d = 32
        n_layer = 2
    @layers:
        emb = Embedding(vocab, d)
        layers = [Layer(d) for _ in range(n_layer)]
        head = Linear(d, 2)
    @forward(ids: Tensor[B, T], attention_mask: Tensor[B, T]):
        let mask = (1.0 - attention_mask.unsqueeze(1).unsqueeze(2)) * -10000.0
        let x = emb(ids)
        for layer in layers:
            x = layer(x, mask)
        return head(x[:, 0])
"""


def test_a_bert_attention_mask_leaves_no_unknown_size(tmp_path: Path) -> None:
    """`qkv(x).split(d)` (a tuple of views) and `sqrt(8.0)` (a number) are builtins whose
    result is not a tensor: they were steps of unknown shape, so every total was `?`."""
    from tensorloom.analysis.report import InfoRequest, info_json

    path = write(tmp_path, "bert.nml", BERT)
    found = info_json(path, InfoRequest(batch_size=8, bindings={"T": 16}))
    assert found["ok"], found["diagnostics"]
    bert = next(m for m in found["models"] if m["name"] == "Bert")
    assert bert["unknown_dims"] == []
    assert bert["memory"] is not None and bert["memory"]["activations"] > 0
    layers = next(row for row in bert["layers"] if row["name"] == "layers")
    kinds = [row["kind"] for row in layers["layers"]]  # one Layer's steps
    assert "split" not in kinds and "sqrt" not in kinds


def test_gpt_info_counts_the_weights_of_the_shapes_it_shows() -> None:
    """examples/train_gpt.tl: the MLP alone is profiled as GPT(n_embd=96) uses it, its
    parameters too (not the default 768's 4,722,432); `h`, looped over, is not unused."""
    from tensorloom.analysis.report import InfoRequest, info_json

    root = Path(__file__).resolve().parents[3]
    found = info_json(root / "examples" / "train_gpt.tl", InfoRequest())
    by_name = {m["name"]: m for m in found["models"]}
    mlp = by_name["MLP"]
    assert mlp["params"] == 74_208 and mlp["config"]["n_embd"] == 96
    assert mlp["layers"][0]["output_shape"] == ["B", 64, 384]
    rows = {row["name"]: row for row in by_name["model"]["layers"]}
    assert "unused" not in rows["h"] and rows["h"]["repeat"] == 4
    assert rows["h"]["params"] == 4 * by_name["Block"]["params"] == 447_360


STAGES = """\
@model Block:
    @config:
        cin = 8
        cout = 8
        stride = 1
    @layers:
        conv = Conv2d(cin, cout, 3, stride=stride, padding=1)
    @forward(x):
        return relu(conv(x))

@model Net:
    @config:
        widths = [8, 16, 32]
    @layers:
        stages = [Block(widths[k - 1] if k > 0 else 3, widths[k], min(k + 1, 2)) for k in range(3)]
        body = Sequential(Block(32, 32), Block(32, 8))
    @forward(x: Tensor[B, 3, 12, 12]):
        for s in stages:
            x = s(x)
        return body(x)
"""


def test_each_position_of_a_list_is_profiled_with_its_own_arguments(tmp_path: Path) -> None:
    """A per-position list's elements differ (issue 31): each is a row of its own, with
    its own copy's shapes, parameters and FLOPs (they were element 0's, or the second's
    for every later one); a `Sequential` of models is a nested row with its elements."""
    from tensorloom.analysis.report import InfoRequest, info_json

    found = info_json(write(tmp_path, "stages.nml", STAGES), InfoRequest(batch_size=2))
    assert found["ok"], found["diagnostics"]
    net = next(m for m in found["models"] if m["name"] == "Net")
    rows = {row["name"]: row for row in net["layers"]}
    stages = rows["stages"]
    elements = {row["name"]: row for row in stages["layers"]}
    convs = [(c * 9 + 1) * o for c, o in ((3, 8), (8, 16), (16, 32))]
    assert [elements[f"stages.{k}"]["params"] for k in range(3)] == convs
    assert [elements[f"stages.{k}"]["output_shape"] for k in range(3)] == [
        [2, 8, 12, 12], [2, 16, 6, 6], [2, 32, 3, 3],
    ]  # fmt: skip
    flops = [elements[f"stages.{k}"]["flops"] for k in range(3)]
    assert len(set(flops)) == 3 and stages["flops"] == sum(flops)
    assert stages["params"] == sum(convs)
    body = [row["name"] for row in rows["body"]["layers"]]
    assert body == ["0", "1"] and rows["body"]["params"] == (32 * 9 + 1) * 32 + (32 * 9 + 1) * 8
    assert net["params"] == stages["params"] + rows["body"]["params"]


ROOT = Path(__file__).resolve().parents[3]


def test_mamba_130m_gets_a_budget_its_scan_profiled_once_and_multiplied() -> None:
    """24 blocks of a 256-step scan: past 20,000 applications unrolled (TL0311 once); the
    loop's body has one set of types, so it is profiled once and multiplied. The blocks'
    row counts each block's Parameters (`A_log`, `D`) as `tlc check` does."""
    from tensorloom.analysis.report import InfoRequest, info_json
    from tensorloom.tools.check import check_file

    path = ROOT / "tests" / "e2e" / "info_programs" / "mamba130m.nml"
    found = info_json(path, InfoRequest(batch_size=8))
    assert found["ok"] and not found["diagnostics"], found["diagnostics"]
    mamba = next(m for m in found["models"] if m["name"] == "Mamba")
    _, flows = check_file(path)
    block = next(s for f in flows if f.model == "Mamba" for s in f.steps if s.name == "layers.0")
    assert mamba["params"] == next(f.params for f in flows if f.model == "Mamba") == 129_135_360
    layers = next(row for row in mamba["layers"] if row["name"] == "layers")
    assert layers["repeat"] == 24 and layers["params"] == 24 * block.params
    scan = next(row for row in layers["layers"] if row.get("repeat") == 256)
    assert scan["flops"] is not None and scan["flops"] > 0
    assert mamba["memory"] is not None and mamba["memory"]["activations"] > 0


def test_bert_base_from_the_examples_gets_a_budget() -> None:
    """examples/bert.nml at its bert-base defaults: every size known, a memory budget."""
    from tensorloom.analysis.report import InfoRequest, info_json

    found = info_json(
        ROOT / "examples" / "bert.nml", InfoRequest(batch_size=8, bindings={"T": 128})
    )
    assert found["ok"], found["diagnostics"]
    bert = next(m for m in found["models"] if m["name"] == "Bert")
    assert bert["unknown_dims"] == []
    assert bert["memory"] is not None and bert["memory"]["activations"] > 0
