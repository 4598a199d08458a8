"""The language's structure, run as emitted PyTorch: layer lists, loops, branches,
tuples, dims as values, `Parameter`, typed layer tensors and tied weights.

Each case compiles TensorLoom source through the whole pipeline, executes the
emitted file, and compares the emitted model's forward with a hand-written
PyTorch computation over the emitted model's own weights; parameter counts are
compared with `tlc check`'s and `tlc info`'s totals.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

from tensorloom.analysis.flows import flows
from tensorloom.analysis.profile import ProfileOptions, profile_file
from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file


def emit(tmp_path: Path, name: str, source: str) -> tuple[str, ModuleType]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    result = compile_file(path, until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    text = print_python(result.module)
    module = ModuleType(f"emitted_{path.stem}")
    exec(compile(text, f"<emitted {name}>", "exec"), module.__dict__)
    return text, module


def checked_params(tmp_path: Path, name: str) -> int:
    result = compile_file(tmp_path / name, until="nml")
    assert result.module is not None and result.ok, [d.message for d in result.sink]
    return flows(result.module)[-1].params


def numel(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


LOOPS = """
@model Block:
    @config:
        d = 16
    @layers:
        fc = Linear(d, d)
    @forward(x):
        return x + fc(x)

@model Net:
    @config:
        d = 16
        n_layer = 3
        use_norm = true
    @layers:
        h = [Block(d) for _ in range(n_layer)]
        norm = LayerNorm(d)
        head = Linear(d, 4)
    @forward(x: Tensor[B, T, 16]):
        for block in h:
            x = block(x)
        for i in range(n_layer):
            x = h[i](x)
        if use_norm:
            x = norm(x)
        if self.training:
            x = x * 2.0
        let y = (x, x)
        let (a, b) = y
        return head(a + b)
"""


def test_layer_list_loops_and_branches_compute_what_python_does(tmp_path: Path) -> None:
    text, module = emit(tmp_path, "loops.nml", LOOPS)
    assert "for block in self.h:" in text and "for i in range(self.n_layer):" in text
    torch.manual_seed(0)
    net = module.Net()
    assert isinstance(net.h, torch.nn.ModuleList) and len(net.h) == 3
    x = torch.randn(2, 5, 16)

    def reference(x: torch.Tensor, training: bool) -> torch.Tensor:
        for block in net.h:
            x = x + block.fc(x)
        for block in net.h:
            x = x + block.fc(x)
        x = F.layer_norm(x, (16,), net.norm.weight, net.norm.bias)
        if training:
            x = x * 2.0
        return net.head(x + x)

    with torch.no_grad():
        net.eval()
        torch.testing.assert_close(net(x), reference(x, False))
        net.train()
        torch.testing.assert_close(net(x), reference(x, True))
    without = module.Net(use_norm=False).eval()
    assert without(x).shape == (2, 5, 4)
    assert numel(net) == 3 * (16 * 16 + 16) + 32 + 68 == checked_params(tmp_path, "loops.nml")
    assert numel(module.Net(n_layer=5)) == 5 * 272 + 32 + 68


TOKENS = """
@model ClassToken:
    @config:
        d = 8
        n = 4
    @layers:
        embed = Linear(3, d)
        cls_token = Parameter(1, 1, d)
        pos = Parameter(1, n + 1, d, init="normal", std=0.02)
        scale = Parameter(d, init="ones")
        head = Linear(d, 2)
    @forward(x: Tensor[B, 4, 3]) -> (Tensor, Tensor):
        x = embed(x)
        x = cat([cls_token.expand(B, -1, -1), x], dim=1) + pos
        let logits = head(x[:, 0] * scale)
        return (logits, x)
"""


def test_parameters_tuples_and_dims_as_values(tmp_path: Path) -> None:
    text, module = emit(tmp_path, "tokens.nml", TOKENS)
    assert "self.cls_token = nn.Parameter(torch.zeros(1, 1, d))" in text
    assert "self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)" in text
    torch.manual_seed(0)
    net = module.ClassToken()
    assert net.pos.std().item() < 0.05 and torch.equal(net.scale, torch.ones(8))
    with torch.no_grad():
        net.cls_token.normal_()
        x = torch.randn(3, 4, 3)
        logits, tokens = net(x)
        expected = torch.cat([net.cls_token.expand(3, -1, -1), net.embed(x)], dim=1) + net.pos
        torch.testing.assert_close(tokens, expected)
        torch.testing.assert_close(logits, net.head(expected[:, 0] * net.scale))
    assert numel(net) == (3 * 8 + 8) + 8 + 5 * 8 + 8 + (8 * 2 + 2)
    assert numel(net) == checked_params(tmp_path, "tokens.nml")


TIED = """
@model Tied:
    @config:
        vocab = 11
        d = 6
    @layers:
        wte = Embedding(vocab, d)
        ln = LayerNorm(d)
    @forward(idx: Tensor[B, T]):
        return ln(wte(idx)) @ wte.weight.T
"""


def test_a_tied_weight_is_one_parameter(tmp_path: Path) -> None:
    _, module = emit(tmp_path, "tied.nml", TIED)
    torch.manual_seed(0)
    net = module.Tied().eval()
    idx = torch.randint(0, 11, (2, 7))
    with torch.no_grad():
        expected = net.ln(net.wte(idx)) @ net.wte.weight.T
        torch.testing.assert_close(net(idx), expected)
    assert net(idx).shape == (2, 7, 11)
    assert numel(net) == 11 * 6 + 12 == checked_params(tmp_path, "tied.nml")
    _, (profile,) = profile_file(tmp_path / "tied.nml", ProfileOptions())
    assert profile.params == 78


NESTED = """
@model Net:
    @config:
        n = 2
        deep = true
    @layers:
        h = [Linear(8, 8) for _ in range(n)]
        g = [LayerNorm(8) for _ in range(n)]
    @forward(x: Tensor[B, 8]):
        let y = x
        for i in range(n):
            for block in h:
                if deep:
                    x = block(x) + y
                else:
                    x = block(x)
            x = g[i](x)
            if self.training and deep:
                y = y * 0.5
        return x + y
"""


def test_nested_loops_and_branches_keep_one_name_per_value(tmp_path: Path) -> None:
    text, module = emit(tmp_path, "nested.nml", NESTED)
    assert "x_1" not in text  # each carried value is one Python name
    torch.manual_seed(0)
    net = module.Net()
    x = torch.randn(3, 8)

    def reference(x: torch.Tensor, training: bool, deep: bool = True) -> torch.Tensor:
        y = x
        for i in range(2):
            for block in net.h:
                x = block(x) + y if deep else block(x)
            x = net.g[i](x)
            if training and deep:
                y = y * 0.5
        return x + y

    with torch.no_grad():
        torch.testing.assert_close(net.train()(x), reference(x, True))
        torch.testing.assert_close(net.eval()(x), reference(x, False))
        net.deep = False
        torch.testing.assert_close(net.train()(x), reference(x, True, deep=False))


BOUND_ON_EVERY_PATH = """
model Net:
    layer fc = Linear(8, 8)
    layer norm = LayerNorm(8)
    layer h = [Linear(8, 8) for _ in range(3)]
    fn forward(self, x: Tensor[B, 8]) -> Tensor:
        for blk in self.h:
            x = blk(x) |> relu
        if self.training:
            y = self.norm(x)
        elif x.shape[1] > 4:
            let (a, b) = (self.fc(x), x)
            y = a + b
        else:
            y = x
        return y
let net = Net()
"""


def test_a_name_bound_on_every_path_exists_after_the_if(tmp_path: Path) -> None:
    """As in Python: `y` bound in each branch of an `if`/`elif`/`else` is defined after it,
    and the `.tl` spelling (`layer`, `fn`, `self.`) works like the `.nml` one."""
    text, module = emit(tmp_path, "paths.tl", BOUND_ON_EVERY_PATH)
    plain = re.sub(r"  # paths\.tl:\d+", "", text)  # without the source notes
    assert "        if self.training:\n            y = self.norm(x)\n" in plain  # no `y_1 = ...`
    torch.manual_seed(0)
    net = module.Net()
    x = torch.randn(2, 8)

    def reference(x: torch.Tensor, training: bool) -> torch.Tensor:
        for linear in net.h:
            x = F.relu(linear(x))
        if training:
            return net.norm(x)
        return net.fc(x) + x

    with torch.no_grad():
        torch.testing.assert_close(net.train()(x), reference(x, True))
        torch.testing.assert_close(net.eval()(x), reference(x, False))
