"""The profile's activation accounting and the memory budget, by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tensorloom.analysis.memory import Training, parse_size, training_budget
from tensorloom.analysis.profile import ProfileOptions, profile_file

MLP = """
model MLP:
    layer fc1 = Linear(8, 16)
    layer fc2 = Linear(16, 4)
    fn forward(self, x: Tensor[B, 8]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2
"""


def profile(tmp_path: Path, batch: int | None, precision: str = "fp32"):
    path = tmp_path / "mlp.tl"
    path.write_text(MLP)
    result, models = profile_file(path, ProfileOptions(batch, precision))
    assert result.ok
    return models[0]


def test_relu_output_and_fc2_input_count_once(tmp_path: Path) -> None:
    p = profile(tmp_path, 2)
    fc1, relu, fc2 = p.layers
    assert (fc1.activation_bytes, relu.activation_bytes, fc2.activation_bytes) == (64, 128, 0)
    assert p.activation_bytes == 64 + 128  # the input batch is fc1's saved input
    assert p.flops == (2 * 2 * 16 * 8 + 32) + 32 + (2 * 2 * 4 * 16 + 8)
    assert p.params == 8 * 16 + 16 + 16 * 4 + 4


def test_amp_saves_half_precision_copies(tmp_path: Path) -> None:
    p = profile(tmp_path, 2, "bf16")
    fc1, relu, fc2 = p.layers
    assert (fc1.activation_bytes, relu.activation_bytes, fc2.activation_bytes) == (32, 64, 0)
    assert p.low_precision_params == p.params


def test_unbound_batch_is_reported(tmp_path: Path) -> None:
    p = profile(tmp_path, None)
    assert p.unknown == ["B"] and p.flops is None and p.params == 212
    assert training_budget(p, Training()) is None


def test_budget_terms(tmp_path: Path) -> None:
    b = training_budget(profile(tmp_path, 2), Training(optimizer="Adam"))
    assert b is not None
    assert (b.weights, b.gradients, b.optimizer_state) == (848, 848, 1696)
    assert b.peak == max(b.backward_peak, b.step_peak) + b.workspace


HEAD = """
model Head:
    layer fc = Linear(64, 16)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return self.fc(x)
"""


def test_backward_holds_a_gradient_pair_and_none_for_the_batch(tmp_path: Path) -> None:
    """The backward's working set is one op's output gradient and its input's: a first layer
    computes none for the batch (no weight reaches it), so here only fc's output's."""
    path = tmp_path / "head.tl"
    path.write_text(HEAD)
    result, models = profile_file(path, ProfileOptions(2, "fp32"))
    assert result.ok
    assert models[0].backward_pair_bytes == 2 * 16 * 4
    relu = tmp_path / "relu.tl"  # relu after fc: its output's gradient and fc's output's
    relu.write_text(HEAD.replace("self.fc(x)", "x |> self.fc |> relu"))
    result, models = profile_file(relu, ProfileOptions(2, "fp32"))
    assert result.ok and models[0].backward_pair_bytes == 2 * (2 * 16 * 4)
    square = tmp_path / "square.tl"  # `x ** 2`'s backward: `2 * x.pow(1)` beside the pair
    square.write_text(HEAD.replace("self.fc(x)", "self.fc(x) ** 2"))
    result, models = profile_file(square, ProfileOptions(2, "fp32"))
    assert result.ok and models[0].backward_pair_bytes == 4 * (2 * 16 * 4)
    gate = tmp_path / "gate.tl"  # a product's backward makes both operands' gradients anew
    two = "layer fc = Linear(64, 16)\n    layer up = Linear(64, 16)"
    text = HEAD.replace("layer fc = Linear(64, 16)", two)
    gate.write_text(text.replace("self.fc(x)", "self.fc(x) * self.up(x)"))
    result, models = profile_file(gate, ProfileOptions(2, "fp32"))
    assert result.ok and models[0].backward_pair_bytes == 3 * (2 * 16 * 4)


def test_backward_moments_free_the_later_steps_activations(tmp_path: Path) -> None:
    """Backward runs the steps in reverse: at a step, the activations of it and the earlier
    steps are still saved, and the gradients of its and the later steps' weights exist."""
    p = profile(tmp_path, 2)
    moments = [(m.saved, m.pair, m.params) for m in p.moments]
    # fc1 saves the batch [2, 8] and holds its output's gradient (none for the batch); relu
    # saves its output [2, 16] (fc2's input too) and holds two [2, 16] gradients; fc2 its
    # output's [2, 4] and its input's
    assert moments == [(64, 128, 0), (192, 256, 144), (192, 160, 144)]
    b = training_budget(p, Training(optimizer="Adam"))
    assert b is not None
    weights = 212 * 4  # fc1's 144 parameters and fc2's 68
    relu = 192 + 256 + (weights - weights * 144 // 212)  # fc2's gradients made
    assert b.backward_sweep == max(64 + 128 + weights, relu, 192 + 160 + weights - 576)
    assert b.backward_sweep == 64 + 128 + weights  # fc1's: every gradient made by then
    start = b.activations + 2 * 4 * 4  # every activation and the output's gradient
    live = max(start, b.backward_sweep) + b.output_in_backward
    assert b.backward_peak == b.weights + b.optimizer_state + live


def test_parse_size() -> None:
    assert parse_size("80GB") == parse_size("80GiB") == 80 << 30
    assert parse_size("512M") == 512 << 20
    assert parse_size("lots") is None


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_model_with_convolutions_says_their_workspace_is_not_counted() -> None:
    from tensorloom.analysis.report import InfoRequest, info_json

    models = {
        m["name"]: m for m in info_json(EXAMPLES / "train_resnet.tl", InfoRequest())["models"]
    }
    assert "convolution workspace is not in the budget" in models["net"]["notes"][0]
    lstm = info_json(EXAMPLES / "train_lstm.tl", InfoRequest())["models"]
    assert [m["notes"] for m in lstm] == [[]]


def test_amp_frees_the_output_before_backward(tmp_path: Path) -> None:
    """Under AMP the loss runs on autocast's fp32 copy: the bf16 output is not alive then."""
    p = profile(tmp_path, 2, "bf16")
    with_loss = training_budget(p, Training(precision="bf16", loss="CrossEntropy"))
    fp32 = training_budget(profile(tmp_path, 2), Training(loss="CrossEntropy"))
    assert with_loss is not None and fp32 is not None
    assert with_loss.output_in_backward == 0 and with_loss.output == 2 * 4 * 2
    assert fp32.output_in_backward == fp32.output == 2 * 4 * 4


# Measured on one H200 (bench/RESULTS.md, GPT-2 124M, 2026-12-01, torch 2.11): the peak
# `torch.cuda.max_memory_allocated()` of bench/programs/gpt2.tl's step, B=16, bf16.
GPT2_EAGER_PEAK = 15_574_349_824  # the emitted script, bf16 eager
GPT2_COMPILED_PEAK = 10_662_006_784  # the emitted script, bf16 + compile(default)


def test_gpt2_budget_is_within_15_percent_of_the_h200() -> None:
    from tensorloom.analysis.report import InfoRequest, info_json

    root = Path(__file__).resolve().parents[3]
    info = info_json(root / "bench" / "programs" / "gpt2.tl", InfoRequest())
    memory = next(m for m in info["models"] if m["model"] == "GPT")["memory"]
    assert abs(memory["peak"] / GPT2_EAGER_PEAK - 1) < 0.15
    assert abs(memory["compiled_peak"] / GPT2_COMPILED_PEAK - 1) < 0.15
    assert memory["compiled_peak"] < memory["peak"]  # no fp32 copy of the logits


def test_weight_casts_count_every_element_of_a_layer_list(tmp_path: Path) -> None:
    """Autocast's bf16 copies of the matmul weights: GPT-2's `for block in h` runs 12
    blocks with 12 sets of weights, so each adds its four linears' copies (2 bytes a
    parameter), not only the first."""
    from tensorloom.analysis.report import InfoRequest, info_json

    root = Path(__file__).resolve().parents[3]
    nml = (root / "bench" / "programs" / "gpt2.nml").read_text()
    tl = (root / "bench" / "programs" / "gpt2.tl").read_text()
    casts: dict[int, int] = {}
    for n in (1, 2):
        (tmp_path / f"g{n}.nml").write_text(nml.replace("n_layer = 12", f"n_layer = {n}"))
        program = tmp_path / f"g{n}.tl"
        program.write_text(tl.replace("gpt2.nml", f"g{n}.nml"))
        models = info_json(program, InfoRequest())["models"]
        casts[n] = next(m for m in models if m["model"] == "GPT")["memory"]["weight_casts"]
    block_linears = 768 * 2304 + 2304 + 768 * 768 + 768 + 768 * 3072 + 3072 + 3072 * 768 + 768
    assert casts[2] - casts[1] == 2 * block_linears


def test_a_list_of_catalogue_layers_is_profiled_per_element(tmp_path: Path) -> None:
    """`h = [Linear(d, d) for _ in range(2)]` applied as `h[0]`, `h[1]` or `for block in h`:
    each element reached is a row (`h.0`, PyTorch's name) with its FLOPs, and autocast
    copies its weights once; `h[0](x)` twice applies one element, whose weights are
    copied once."""
    from tensorloom.analysis.report import InfoRequest, info_json

    def stack(body: str) -> dict[str, Any]:
        (tmp_path / "m.nml").write_text(
            "@model Stack:\n"
            "    @config:\n"
            "        d = 64\n"
            "    @layers:\n"
            "        flat = Flatten()\n"
            "        h = [Linear(d, d) for _ in range(2)]\n"
            "        head = Linear(d, 10)\n"
            "    @forward(x):\n"
            "        x = flat(x)\n"
            f"        {body}\n"
            "        return head(x)\n"
        )
        (tmp_path / "m.tl").write_text(
            "import m.nml as Stack\n"
            "let net = Stack()\n"
            'let data = load_dataset("digits")\n'
            "train net on data:\n"
            "    loss = CrossEntropy\n"
            "    optimizer = AdamW(lr=0.001)\n"
            "    precision = bf16\n"
        )
        found = info_json(tmp_path / "m.tl", InfoRequest(batch_size=8))
        assert found["ok"], found["diagnostics"]
        return next(m for m in found["models"] if m["model"] == "Stack")

    linear, head = 64 * 64 + 64, 64 * 10 + 10
    once = stack("x = h[0](x)")
    rows = {row["name"]: row for row in once["layers"]}
    assert rows["h.0"]["params"] == linear and rows["h.0"]["flops"] > 0
    assert once["memory"]["weight_casts"] == 2 * (linear + head)
    twice = stack("x = h[0](x)\n        x = h[0](x)")
    assert twice["memory"]["weight_casts"] == 2 * (linear + head)
    both = stack("x = h[0](x)\n        x = h[1](x)")
    assert [row["name"] for row in both["layers"]] == ["flat", "h.0", "h.1", "head"]
    assert both["memory"]["weight_casts"] == 2 * (2 * linear + head)
    looped = stack("for block in h:\n            x = block(x)")  # one row, its first iteration
    assert [row["name"] for row in looped["layers"]] == ["flat", "h", "head"]
    h = looped["layers"][1]
    assert (h["repeat"], h["params"], [row["name"] for row in h["layers"]]) == (2, 2 * linear,
                                                                               ["h.0"])  # fmt: skip
    assert h["flops"] == 2 * h["layers"][0]["flops"]
    assert looped["memory"]["weight_casts"] == 2 * (2 * linear + head)


LOOP = """
model M:
    layer h = [Linear(64, 64) for _ in range(4)]
    layer out = Linear(64, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        for layer in self.h:
            x = relu(layer(x))
        return self.out(x)
"""


def test_each_iteration_of_a_loop_saves_tensors_of_its_own(tmp_path: Path) -> None:
    """`for layer in self.h`: every iteration's relu output is a tensor of its own (saved
    once, as the next Linear's input too), and the loop's result is the last iteration's,
    which `out` saves. Walking every iteration with the same tensors counted one."""
    path = tmp_path / "loop.tl"
    path.write_text(LOOP)
    result, models = profile_file(path, ProfileOptions(32, "fp32"))
    assert result.ok
    rows = [(layer.name, layer.kind, layer.activation_bytes) for layer in models[0].layers]
    one = 32 * 64 * 4  # a [32, 64] fp32 tensor
    # the first iteration saves the input batch and its relu's output; every later one only
    # its relu's output (its Linear's input is the tensor the iteration before saved)
    assert rows == [("h", "Linear", 5 * one), ("out", "Linear", 0)]
    loop = models[0].layers[0]
    first = [(layer.name, layer.kind, layer.activation_bytes) for layer in loop.layers]
    assert first == [("h.0", "Linear", one), ("", "relu", one)]
    assert models[0].activation_bytes == 5 * one
