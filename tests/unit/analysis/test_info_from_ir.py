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


def test_a_layer_list_is_followed_for_each_copy(tmp_path: Path) -> None:
    path = write(tmp_path, "stack.nml", STACK)
    result, profiles = profile_file(path, ProfileOptions(batch_size=2, bindings={"T": 5}))
    assert result.ok
    stack = next(p for p in profiles if p.name == "Stack")
    kinds = [layer.kind for layer in stack.layers if not layer.unused]
    assert kinds == ["Linear", "relu"] * 3  # `iterations`: the three copies
    assert stack.layers[0].output_shape == (2, 5, 8)
    assert stack.flops is not None


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
