"""A model's dataflow as a graph: `tlc graph FILE -o model.svg`.

    graph = model_graph(module, "Transformer")     # a networkx DiGraph
    graph.nodes["n3"]    # {"label": "block1: TransformerBlock", "kind": "model", "cluster": ()}
    graph.edges["n0", "n1"]   # {"label": "[B, 12, 256]", "skip": False}
    source = to_dot(graph)    # Graphviz source; render(source, "svg") needs `dot`

Built from the checked IR (shape inference has written each value's shape
onto it), so every edge carries the shape `tlc check` inferred:

1. The forward's parameters are `input` nodes, its return an `output` node.
2. Each op of the forward's body is a node: a layer applied (`fc1: Linear(64,
   256)`, the layer as the check's flow prints it), a builtin (`relu`, `add`),
   or any other op by its name (so constructs added later still draw).
   Constants and other non-tensor values are left out.
3. A layer that is itself a model is drawn as a cluster holding that model's
   own graph (recursively), wired to the values the outer forward passes it.
4. An edge joins a value's producer to each op that uses it, labelled with the
   value's shape. An edge that skips over other nodes (a residual `x + f(x)`,
   a skip connection) has `skip=True` and is drawn dashed and coloured.

networkx is imported only here (and by the commands that need a graph), so a
plain `tlc check` does not load it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import networkx as nx
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from tensorloom.catalogue.shapes import format_shape
from tensorloom.dialects.nml import ApplyOp, FuncOp, ModelOp, ReturnOp, TensorType
from tensorloom.passes.support.model_env import forward_of, layers_of, models_of

SKIPPED_OPS = ("nml.constant", "nml.ref", "nml.list", "nml.dim")
Cluster = tuple[str, ...]  # the layer names from the drawn model down to a nested one


class GraphError(Exception):
    """The graph cannot be drawn: no such model, or a model without `forward`."""


@dataclass
class _Builder:
    graph: nx.DiGraph
    models: dict[str, ModelOp]
    labels: dict[str, str]  # the drawn model's layer name -> its flow text
    order: list[str] = field(default_factory=list)  # nodes in program order

    def node(self, label: str, kind: str, cluster: Cluster) -> str:
        name = f"n{len(self.order)}"
        self.graph.add_node(name, label=label, kind=kind, cluster=cluster)
        self.order.append(name)
        return name

    def forward(self, model: ModelOp, cluster: Cluster, feeds: list[str] | None) -> list[str]:
        """Add `model`'s forward; its inputs fed from `feeds`; the nodes of its results."""
        func = forward_of(model)
        if func is None:
            raise GraphError(f"model `{model.sym_name.data}` has no `forward`")
        sources: dict[SSAValue, str] = {}
        names = [a.data for a in func.arg_names.data]
        for index, arg in enumerate(func.body.block.args):
            if feeds is not None and index < len(feeds):
                sources[arg] = feeds[index]
            else:
                sources[arg] = self.node(names[index], "input", cluster)
        return self._body(model, func, cluster, sources, nested=feeds is not None)

    def _body(self, model: ModelOp, func: FuncOp, cluster: Cluster,
              sources: dict[SSAValue, str], *, nested: bool) -> list[str]:  # fmt: skip
        for op in func.body.block.ops:
            if isinstance(op, ReturnOp):
                return self._return(op, cluster, sources, nested=nested)
            if op.name in SKIPPED_OPS:
                continue
            nodes = self._op(model, op, cluster, sources)
            for result, node in zip(op.results, nodes, strict=False):
                sources[result] = node
        return []

    def _return(self, op: ReturnOp, cluster: Cluster, sources: dict[SSAValue, str], *,
                nested: bool) -> list[str]:  # fmt: skip
        if nested:  # the nested model's results flow straight to the outer consumers
            return [sources[v] for v in op.values if v in sources]
        out = self.node("output", "output", cluster)
        for value in op.values:
            self.edge(sources, value, out)
        return [out]

    def _op(self, model: ModelOp, op: Operation, cluster: Cluster,
            sources: dict[SSAValue, str]) -> list[str]:  # fmt: skip
        if isinstance(op, ApplyOp):
            layer = op.layer.root_reference.data
            kind = layers_of(model)[layer].kind.data if layer in layers_of(model) else layer
            if kind in self.models:
                feeds = [self._feed(sources, v) for v in op.args]
                return self._nested(layer, kind, cluster, [f for f in feeds if f is not None])
            text = self.labels.get(layer, kind) if not cluster else kind
            node = self.node(f"{layer}: {text}", "layer", cluster)
        else:
            node = self.node(op.name.removeprefix("nml."), "op", cluster)
        for operand in op.operands:
            self.edge(sources, operand, node)
        return [node]

    def _nested(self, layer: str, kind: str, cluster: Cluster, feeds: list[str]) -> list[str]:
        inner = (*cluster, layer)
        self.graph.graph.setdefault("clusters", {})[inner] = f"{layer}: {kind}"
        return self.forward(self.models[kind], inner, feeds)

    def _feed(self, sources: dict[SSAValue, str], value: SSAValue) -> str | None:
        return sources.get(value)

    def edge(self, sources: dict[SSAValue, str], value: SSAValue, target: str) -> None:
        source = sources.get(value)
        if source is None:
            return
        self.graph.add_edge(source, target, label=_shape(value), skip=False)


def _shape(value: SSAValue) -> str:
    kind = value.type
    if isinstance(kind, TensorType) and kind.dims is not None:
        return format_shape(kind.dims)
    return ""


def model_graph(module: ModuleOp, model: str, labels: dict[str, str] | None = None) -> nx.DiGraph:
    """The dataflow of `model`'s forward in a checked module (steps 1-4 above).

    `labels`: each layer's text as the check's flow shows it (`Linear(64, 256)`),
    by layer name; a layer not in it is labelled by its type.
    """
    models = models_of(module)
    if model not in models:
        raise GraphError(f"no model `{model}` in this program")
    builder = _Builder(nx.DiGraph(name=model), models, labels or {})
    builder.graph.graph["clusters"] = {}
    builder.forward(models[model], (), None)
    _mark_skips(builder.graph, builder.order)
    return builder.graph


def _mark_skips(graph: nx.DiGraph, order: list[str]) -> None:
    """Step 4: an edge that jumps over nodes between its ends is a skip connection."""
    position = {node: index for index, node in enumerate(order)}
    for source, target, data in graph.edges(data=True):
        data["skip"] = position[target] - position[source] > 1 and (graph.out_degree(source) > 1)


# ----------------------------------------------------------------- rendering

STYLES = {
    "input": {"shape": "invhouse", "style": "filled", "fillcolor": "#e8f0fe"},
    "output": {"shape": "house", "style": "filled", "fillcolor": "#e8f0fe"},
    "layer": {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff4d6"},
    "op": {"shape": "ellipse"},
}
SKIP_STYLE = {"style": "dashed", "color": "#d62728", "fontcolor": "#d62728"}


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz source: nodes by kind, edges labelled by shape, clusters for nested models.

    Written here, not through the graphviz package, so `--format dot` needs no Graphviz."""
    name = str(graph.graph.get("name", "model"))
    lines = [f"digraph {_quoted(name)} {{",
             f"\tgraph [fontname=Helvetica label={_quoted(name)} labelloc=t rankdir=TB]",
             "\tnode [fontname=Helvetica]", "\tedge [fontname=Helvetica fontsize=10]"]  # fmt: skip
    clusters: dict[Cluster, str] = graph.graph.get("clusters", {})
    lines += _cluster_lines(graph, clusters, (), "\t")
    for source, target, data in graph.edges(data=True):
        style = SKIP_STYLE if data["skip"] else {}
        lines.append(f"\t{source} -> {target} {_attributes({'label': data['label'], **style})}")
    return "\n".join([*lines, "}"]) + "\n"


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _attributes(attributes: dict[str, str]) -> str:
    """`[label="..." shape=box]`: the label first, every value quoted."""
    return "[" + " ".join(f"{key}={_quoted(value)}" for key, value in attributes.items()) + "]"


def _cluster_lines(graph: nx.DiGraph, clusters: dict[Cluster, str], cluster: Cluster,
                   indent: str) -> list[str]:  # fmt: skip
    """The nodes of one cluster, then each cluster directly inside it, as a subgraph."""
    lines = [
        f"{indent}{node} {_attributes({'label': data['label'], **STYLES[data['kind']]})}"
        for node, data in graph.nodes(data=True)
        if data["cluster"] == cluster
    ]
    for inner, label in clusters.items():
        if inner[:-1] == cluster:
            lines.append(f"{indent}subgraph {'cluster_' + '_'.join(inner)} {{")
            style = {"label": label, "style": "rounded,dashed", "color": "#7f7f7f"}
            lines.append(f"{indent}\tgraph {_attributes(style)}")
            lines += _cluster_lines(graph, clusters, inner, indent + "\t")
            lines.append(f"{indent}}}")
    return lines


def dot_available() -> bool:
    return shutil.which("dot") is not None


def render(source: str, fmt: str) -> bytes:
    """The picture (`svg`, `png`, `pdf`) that Graphviz's `dot` program draws from the source."""
    import subprocess

    done = subprocess.run(["dot", f"-T{fmt}"], input=source.encode(), capture_output=True,
                          check=False)  # fmt: skip
    if done.returncode != 0:
        raise GraphError(f"Graphviz's `dot` failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout
