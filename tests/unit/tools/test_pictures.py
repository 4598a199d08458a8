"""`tlc graph` and `tlc plot`: what each picture holds, read back from its source or its data."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorloom.tools import pictures, tlc

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
HAS_DOT = shutil.which("dot") is not None
NODE = re.compile(r'^\s*(n\d+) \[label=(?:"([^"]*)"|(\S+))', re.M)
EDGE = re.compile(r'^\s*(n\d+) -> (n\d+) \[label="([^"]*)"([^\]]*)\]', re.M)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(tlc.cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def parse_dot(source: str) -> tuple[dict[str, str], list[tuple[str, str, str, bool]]]:
    """The nodes (id -> label) and edges (from, to, label, dashed) of Graphviz source."""
    nodes = {m.group(1): m.group(2) or m.group(3) for m in NODE.finditer(source)}
    edges = [(a, b, label, "dashed" in rest) for a, b, label, rest in EDGE.findall(source)]
    return nodes, edges


def test_mnist_graph_is_the_layer_chain_with_shapes() -> None:
    code, out, _ = run("graph", str(EXAMPLES / "mnist.tl"), "--format", "dot")
    assert code == 0
    nodes, edges = parse_dot(out)
    chain = [nodes[f"n{i}"] for i in range(len(nodes))]
    assert chain == [
        "x",
        "fc1: Linear(64, 256)",
        "relu",
        "fc2: Linear(256, 64)",
        "relu",
        "fc3: Linear(64, 10)",
        "output",
    ]
    assert [(a, b, label) for a, b, label, _ in edges] == [
        ("n0", "n1", "[B, 64]"),
        ("n1", "n2", "[B, 256]"),
        ("n2", "n3", "[B, 256]"),
        ("n3", "n4", "[B, 64]"),
        ("n4", "n5", "[B, 64]"),
        ("n5", "n6", "[B, 10]"),
    ]
    assert not any(dashed for *_, dashed in edges)


def test_transformer_graph_shows_residuals_and_nested_blocks() -> None:
    code, out, _ = run("graph", str(EXAMPLES / "train_transformer.tl"), "--format", "dot")
    assert code == 0
    nodes, edges = parse_dot(out)
    assert (len(nodes), len(edges)) == (25, 29)
    assert "subgraph cluster_block1 {" in out and "subgraph cluster_block2 {" in out
    assert 'label="block1: TransformerBlock"' in out
    block1 = out[out.index("subgraph cluster_block1") : out.index("subgraph cluster_block2")]
    assert [quoted or plain for _, quoted, plain in NODE.findall(block1)] == [
        "norm1: LayerNorm(256)",
        "attention: MultiHeadAttention(256, 4)",
        "dropout: Dropout(0.0)",
        "add",
        "norm2: LayerNorm(256)",
        "ff: Linear(256, 256)",
        "dropout: Dropout(0.0)",
        "add",
    ]
    skips = [(nodes[a], nodes[b], label) for a, b, label, dashed in edges if dashed]
    # the embedding's positional residual, then two residuals in each block
    assert (
        skips
        == [("embed: Embedding(16, 256)", "add", "[B, 12, 256]")]
        + [("add", "add", "[B, 12, 256]")] * 4
    )
    assert nodes["n0"] == "tokens" and edges[0][2] == "[B, 12]"


def test_model_option_and_nml_file() -> None:
    path = str(EXAMPLES / "transformer.nml")
    code, out, _ = run("graph", path, "--model", "TransformerBlock", "--format", "dot")
    assert code == 0
    nodes, edges = parse_dot(out)
    assert nodes["n0"] == "x" and list(nodes.values())[-1] == "output"
    assert sum(dashed for *_, dashed in edges) == 2
    code, _, err = run("graph", path, "--model", "Nope", "--format", "dot")
    assert code == 1 and "no model `Nope` in this program" in err


def test_a_program_with_errors_is_not_drawn(tmp_path: Path) -> None:
    code, out, err = run("graph", str(EXAMPLES / "broken" / "broken_model.tl"), "-o",
                         str(tmp_path / "m.svg"))  # fmt: skip
    assert (code, out) == (1, "")
    assert err.startswith("error[TL0201]")
    assert not (tmp_path / "m.svg").exists()


def test_without_dot_the_message_offers_format_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, _, err = run("graph", str(EXAMPLES / "mnist.tl"), "-o", str(tmp_path / "m.png"))
    assert code == 1
    assert err.splitlines()[-2:] == [
        "error: drawing a .png needs Graphviz's `dot` program, which is not installed",
        "  = help: install Graphviz (`apt-get install graphviz`, `brew install graphviz`), "
        "or write the Graphviz source with `--format dot`",
    ]
    code, _, _ = run("graph", str(EXAMPLES / "mnist.tl"), "-o", str(tmp_path / "m.dot"))
    assert code == 0
    assert len(parse_dot((tmp_path / "m.dot").read_text())[0]) == 7


def test_unknown_output_suffix(tmp_path: Path) -> None:
    code, _, err = run("graph", str(EXAMPLES / "mnist.tl"), "-o", str(tmp_path / "m.jpeg"))
    assert code == 1 and "cannot tell the picture format from" in err


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's `dot` is not installed")
def test_rendered_svg_and_png(tmp_path: Path) -> None:
    svg, png = tmp_path / "model.svg", tmp_path / "model.png"
    assert run("graph", str(EXAMPLES / "mnist.tl"), "-o", str(svg))[0] == 0
    text = svg.read_text()
    assert "<svg" in text
    assert text.count('class="node"') == 7 and text.count('class="edge"') == 6
    assert "fc1: Linear(64, 256)" in text and "[B, 256]" in text
    assert run("graph", str(EXAMPLES / "mnist.tl"), "-o", str(png))[0] == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ tlc plot

RECORDS = [
    {"epoch": 1, "train_loss": 1.5, "val_loss": 1.2, "val_accuracy": 0.61, "lr": 0.001},
    {"epoch": 2, "train_loss": 0.9, "val_loss": 0.8, "val_accuracy": 0.78, "lr": 0.001},
    {"epoch": 3, "train_loss": 0.5, "val_loss": None, "val_accuracy": 0.86, "lr": 0.001},
]


def _metrics(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_plot_series_are_the_metrics(tmp_path: Path) -> None:
    curves = pictures.read_metrics(_metrics(tmp_path, RECORDS))
    assert not isinstance(curves, str)
    figure = pictures.plot_curves(curves)
    loss, accuracy = figure.axes
    series = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
              for ax in figure.axes for line in ax.get_lines()}  # fmt: skip
    assert series["train loss"] == ([1, 2, 3], [1.5, 0.9, 0.5])
    assert series["val loss"][0] == [1, 2, 3] and series["val loss"][1][:2] == [1.2, 0.8]
    assert series["val accuracy"] == ([1, 2, 3], [0.61, 0.78, 0.86])
    assert (loss.get_ylabel(), accuracy.get_ylabel(), accuracy.get_xlabel()) == (
        "loss",
        "accuracy",
        "epoch",
    )


def test_plot_command_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "curves.png"
    code, _, err = run("plot", str(_metrics(tmp_path, RECORDS)), "-o", str(out))
    assert code == 0 and err == f"wrote {out}: 3 epochs\n"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_regression_metrics_has_only_the_loss_panel(tmp_path: Path) -> None:
    records = [{"epoch": e, "train_loss": 1.0 / e, "val_loss": 1.1 / e} for e in (1, 2)]
    curves = pictures.read_metrics(_metrics(tmp_path, records))
    assert not isinstance(curves, str)
    assert len(pictures.plot_curves(curves).axes) == 1


def test_plot_of_two_runs_against_wall_clock(tmp_path: Path) -> None:
    """bench/speedrun's curves: a header line, records with `wall_s`, one run's first record
    without a train loss; both runs in one picture, each series labelled with its file."""
    for name, offset in (("baseline", 0.0), ("tensorloom", 5.0)):
        lines = [{"run": {"recipe": name}}, {"step": 0, "wall_s": 1.0 + offset, "val_loss": 5.5}]
        lines += [{"step": 10, "wall_s": 9.0 + offset, "val_loss": 3.0, "train_loss": 3.2}]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    names = ("baseline", "tensorloom")
    runs = [pictures.read_metrics(tmp_path / f"{n}.jsonl", "wall_s") for n in names]
    assert all(not isinstance(r, str) for r in runs)
    figure = pictures.plot_curves([r for r in runs if not isinstance(r, str)], "wall_s")
    series = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
              for line in figure.axes[0].get_lines()}  # fmt: skip
    assert series["baseline: val loss"] == ([1.0, 9.0], [5.5, 3.0])
    assert series["baseline: train loss"] == ([9.0], [3.2])
    assert series["tensorloom: val loss"] == ([6.0, 14.0], [5.5, 3.0])
    assert figure.axes[0].get_xlabel() == "wall-clock seconds"
    out = tmp_path / "curves.png"
    code, _, err = run("plot", str(tmp_path / "baseline.jsonl"), str(tmp_path / "tensorloom.jsonl"),
                       "--x", "wall_s", "-o", str(out))  # fmt: skip
    assert code == 0 and err == f"wrote {out}: baseline (2 points), tensorloom (2 points)\n"
    code, _, err = run("plot", str(tmp_path / "baseline.jsonl"), "--x", "time", "-o", str(out))
    assert code == 1 and "holds no `time` values" in err


def test_plot_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"epoch": 1, "train_loss": 1.0}\nnot json\n')
    code, _, err = run("plot", str(bad), "-o", str(tmp_path / "c.png"))
    assert code == 1
    expected = f"error: {bad}:2: not a metrics record (a JSON object with an `epoch`)"
    assert err.splitlines()[0] == expected
    code, _, err = run("plot", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "c.png"))
    assert code == 1 and "cannot read" in err and "no such file or directory" in err


def test_a_plain_check_imports_none_of_the_picture_or_editor_libraries() -> None:
    import subprocess
    import sys

    probe = (
        "import io, sys\n"
        "from pathlib import Path\n"
        "from tensorloom.tools.check import run_check\n"
        f"run_check(Path({str(EXAMPLES / 'mnist.tl')!r}), out=io.StringIO())\n"
        "heavy = ('networkx', 'graphviz', 'matplotlib', 'pygls', 'lsprotocol', 'pygments')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    command = [sys.executable, "-c", probe]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
