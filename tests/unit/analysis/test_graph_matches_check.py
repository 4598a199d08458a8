"""`tlc graph` and `tlc check` agree: every edge of every example's graph carries the shape
`tlc check` prints for the value it carries.

The check prints each instantiation's flow (its inputs, then one line per layer, nested
model or builtin with the shape it outputs); the graph is drawn from the specialised IR.
The drawing's top-level units (a node, or a nested model's cluster) are lined up with the
flow's lines in program order: a layer list's loop (`h: Block`, 4 times) stands for the
lines `h.0` ... `h.3`, a `for` cluster of N iterations for its body's lines N times. Each
edge that leaves a unit must carry that line's shape, each edge from an input the flow's
input shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorloom.analysis.graph import REPEAT
from tensorloom.tools import tlc
from tensorloom.tools.check import check_file

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))
NODE = re.compile(r'^\s*(n\d+) \[label=(?:"((?:[^"\\]|\\.)*)"|(\S+))(.*)\]$')
EDGE = re.compile(r'^\s*(n\d+) -> (n\d+) \[label="([^"]*)"(.*)\]$')
CLUSTER = re.compile(r"^\s*subgraph (cluster_\S+) \{$")
CLUSTER_LABEL = re.compile(r'label="([^"]*)"')
TIMES = re.compile(rf"^(?:(\w+)(?:\.(\d+)-\d+)?: (\w+)|for) {REPEAT} (\d+)$")
UNPRINTED = frozenset({"kernel_call", "getattr", "tuple_get"})
"""Ops the graph draws and the flow has no line for (a kernel's launch, `x.T`, `a, b = t`)."""


@dataclass
class Dot:
    """Graphviz source read back: nodes, their clusters, cluster labels, edges."""

    labels: dict[str, str] = field(default_factory=dict[str, str])
    shapes: dict[str, str] = field(default_factory=dict[str, str])  # node -> Graphviz shape
    where: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    clusters: dict[tuple[str, ...], str] = field(default_factory=dict[tuple[str, ...], str])
    edges: list[tuple[str, str, str, str]] = field(default_factory=list[tuple[str, str, str, str]])


def parse(source: str) -> Dot:
    dot, stack = Dot(), list[str]()
    for line in source.splitlines():
        if match := CLUSTER.match(line):
            stack.append(match.group(1))
            continue
        if stack and tuple(stack) not in dot.clusters and (label := CLUSTER_LABEL.search(line)):
            dot.clusters[tuple(stack)] = label.group(1)
            continue
        if line.strip() == "}" and stack:
            stack.pop()
        elif match := EDGE.match(line):
            dot.edges.append(match.groups())  # type: ignore[arg-type]
        elif match := NODE.match(line):
            node = match.group(1)
            dot.labels[node] = (match.group(2) or match.group(3)).replace('\\"', '"')
            dot.shapes[node] = re.search(r"shape=(\w+)", match.group(4)).group(1)  # type: ignore[union-attr]
            dot.where[node] = tuple(stack)
    return dot


@dataclass
class Unit:
    """A top-level node or cluster of the graph, as one line of the flow would name it."""

    label: str
    nodes: set[str]


def units(dot: Dot, cluster: tuple[str, ...]) -> list[Unit]:
    """The units directly in `cluster`, in program order; loops expanded to their lines."""
    found: list[tuple[int, list[Unit]]] = []
    for node, where in dot.where.items():
        shown = dot.shapes[node] in ("box", "ellipse") and dot.labels[node] not in UNPRINTED
        if where == cluster and shown:
            found.append((int(node[1:]), [Unit(dot.labels[node], {node})]))
    for inner, label in dot.clusters.items():
        if inner[:-1] != cluster:
            continue
        inside = {n for n, w in dot.where.items() if w[: len(inner)] == inner}
        first = min(int(n[1:]) for n in inside)
        loop = TIMES.match(label)
        if loop is None:
            found.append((first, [Unit(label, inside)]))
        elif loop.group(1):  # `h: Block`, 4 times: the lines h.0 ... h.3 (`stages.1-3`: 1 ... 3)
            name, kind, count = loop.group(1), loop.group(3), int(loop.group(4))
            start = int(loop.group(2) or 0)
            lines = [Unit(f"{name}.{k}: {kind}", inside) for k in range(start, start + count)]
            found.append((first, lines))
        else:  # `for`, 256 times: its body's lines, 256 times
            found.append((first, units(dot, inner) * int(loop.group(4))))
    return [u for _, group in sorted(found, key=lambda f: f[0]) for u in group]


def flow_label(name: str, op: str) -> str:
    return op.removeprefix("nml.") if name in ("", "-") else f"{name}: {op}"


def graph_of(path: Path, model: str) -> str:
    result = CliRunner().invoke(tlc.cli, ["graph", str(path), "--model", model, "--format", "dot"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


GRAPHED = [*EXAMPLES, ROOT / "examples" / "resnet50.nml"]
"""Every example program, and ResNet-50's per-position stages."""


@pytest.mark.parametrize("path", GRAPHED, ids=[p.name for p in GRAPHED])
def test_every_edge_label_is_the_shape_tlc_check_prints(path: Path) -> None:
    result, flows = check_file(path)
    assert result.ok
    for flow in flows:
        dot = parse(graph_of(path, flow.name))
        inputs = [n for n, shape in dot.shapes.items() if shape == "invhouse"]
        assert len(inputs) == len(flow.inputs)
        for node, shape in zip(inputs, flow.inputs, strict=True):
            out = [label for a, _, label, _ in dot.edges if a == node]
            assert out, f"{path.name}: input `{dot.labels[node]}` has no edges"
            assert set(out) == {shape}, f"{path.name}: input `{dot.labels[node]}`"
        drawn = units(dot, ())
        lines = [(flow_label(s.name, s.op), s.shape) for s in flow.steps]
        assert [u.label for u in drawn] == [label for label, _ in lines], path.name
        checked = 0
        for unit, (label, shape) in zip(drawn, lines, strict=True):
            for a, b, edge, style in dot.edges:
                if a in unit.nodes and b not in unit.nodes and "dotted" not in style:
                    assert edge == shape, f"{path.name}: `{label}` -> {dot.labels[b]}"
                    checked += 1
        assert checked >= len({id(u.nodes) for u in drawn}) - 1


def test_unet_graph_shows_the_input_and_its_skip() -> None:
    dot = parse(graph_of(ROOT / "examples" / "train_unet.tl", "net"))
    x = next(n for n, label in dot.labels.items() if label == "x")
    targets = sorted(dot.labels[b] for a, b, _, _ in dot.edges if a == x)
    assert targets == ["add", "if", "randn_like"]  # the training noise, and the eval branch
    skips = [(dot.labels[a], dot.labels[b]) for a, b, _, style in dot.edges if "dashed" in style]
    # the noise `x + noise * randn_like(x)` adds around x; down1's output around pool, down2, up
    assert skips == [("x", "add"), ("silu", "cat")]


def test_vae_graph_is_connected_and_its_fork_is_not_a_skip() -> None:
    import networkx as nx

    from tensorloom.analysis.graph import model_graph
    from tensorloom.analysis.profile import compile_for_info

    result = compile_for_info(ROOT / "examples" / "train_vae.tl", {})
    assert result.module is not None
    graph = model_graph(result.module, "net")
    assert nx.is_weakly_connected(graph)
    labels = nx.get_node_attributes(graph, "label")
    enc = next(n for n, label in labels.items() if label.startswith("enc:"))
    hidden = next(iter(graph.successors(enc)))  # relu(enc(x)), which mu and logvar both read
    assert sorted(labels[n] for n in graph.successors(hidden)) == [
        "logvar: Linear(256, 16)",
        "mu: Linear(256, 16)",
    ]
    assert not any(skip for *_, skip in graph.edges(data="skip"))


def test_resnet_blocks_carry_their_own_shapes() -> None:
    dot = parse(graph_of(ROOT / "examples" / "train_resnet.tl", "net"))
    block2 = next(c for c, label in dot.clusters.items() if label == "block2: ResBlock")
    inside = [n for n, w in dot.where.items() if w == block2]
    labels = {edge for a, b, edge, _ in dot.edges if a in inside and b in inside}
    assert labels == {"[B, 32, 4, 4]"}


def test_layer_lists_parameters_and_tied_weights_are_drawn() -> None:
    gpt = parse(graph_of(ROOT / "examples" / "train_gpt.tl", "model"))
    assert f"h: Block {REPEAT} 4" in gpt.clusters.values()
    tied = [(gpt.labels[a], gpt.labels[b], label) for a, b, label, s in gpt.edges if "dotted" in s]
    assert tied == [('wte: Embedding(256, 96, init="normal", std=0.02)', "t",
                     "wte.weight [256, 96]")]  # fmt: skip
    vit = parse(graph_of(ROOT / "examples" / "train_vit.tl", "net"))
    assert f"layers: EncoderBlock {REPEAT} 2" in vit.clusters.values()
    params = {vit.labels[n]: n for n, shape in vit.shapes.items() if shape == "cylinder"}
    assert sorted(params) == [
        "class_token: Parameter(1, 1, 64)",
        'pos_embedding: Parameter(1, 17, 64, init="normal", std=0.02)',
    ]
    out = {(vit.labels[b], label) for a, b, label, _ in vit.edges if a in params.values()}
    assert out == {("expand", "[1, 1, 64]"), ("add", "[1, 17, 64]")}


def test_a_per_position_list_draws_each_distinct_element() -> None:
    """ResNet-50's stages: the first block of each (its stride, its projection) has a cluster
    of its own, the blocks after it, all alike, one cluster with their positions and count;
    each cluster's edges carry its own blocks' shapes."""
    dot = parse(graph_of(ROOT / "examples" / "resnet50.nml", "ResNet50"))
    stages = [label for c, label in dot.clusters.items() if len(c) == 1]
    assert stages == [
        "layer1.0: Bottleneck", f"layer1.1-2: Bottleneck {REPEAT} 2",
        "layer2.0: Bottleneck", f"layer2.1-3: Bottleneck {REPEAT} 3",
        "layer3.0: Bottleneck", f"layer3.1-5: Bottleneck {REPEAT} 5",
        "layer4.0: Bottleneck", f"layer4.1-2: Bottleneck {REPEAT} 2",
    ]  # fmt: skip

    def inner_labels(label: str) -> set[str]:
        cluster = next(c for c, text in dot.clusters.items() if text == label)
        inside = {n for n, w in dot.where.items() if w[: len(cluster)] == cluster}
        return {dot.labels[n] for n in inside}

    first, rest = inner_labels("layer2.0: Bottleneck"), inner_labels(
        f"layer2.1-3: Bottleneck {REPEAT} 3")  # fmt: skip
    assert "conv2: Conv2d(128, 128, 3, stride=2, padding=1, bias=false)" in first
    assert "conv1: Conv2d(256, 128, 1, bias=false)" in first
    assert "conv2: Conv2d(128, 128, 3, stride=1, padding=1, bias=false)" in rest
    assert "conv1: Conv2d(512, 128, 1, bias=false)" in rest
    assert not any(label.startswith("downsample") for label in rest)


PER_POSITION = """@model Block:
    @config:
        d = 8
        stride = 1

    @layers:
        conv = Conv2d(d, d, 3, stride=stride, padding=1)

    @forward(x):
        return relu(conv(x))

@model Net:
    @config:
        n = 3

    @layers:
        blocks = [Block(8, stride=2 if i == 0 else 1) for i in range(n)]

    @forward(x: Tensor[B, 8, 16, 16]):
        for block in blocks:
            x = block(x)
        return x
"""


def test_a_per_position_list_in_a_program(tmp_path: Path) -> None:
    """`[Block(8, stride=2 if i == 0 else 1) for i in range(n)]`: `blocks.0` halves the
    image, `blocks.1-2` keep it; every edge agrees with `tlc check`."""
    path = tmp_path / "stages.nml"
    path.write_text(PER_POSITION)
    test_every_edge_label_is_the_shape_tlc_check_prints(path)
    dot = parse(graph_of(path, "Net"))
    assert sorted(dot.clusters.values()) == ["blocks.0: Block", f"blocks.1-2: Block {REPEAT} 2"]
    shapes = {label for _, _, label, _ in dot.edges}
    assert shapes == {"[B, 8, 16, 16]", "[B, 8, 8, 8]"}
