"""A model's dataflow as a graph: `tlc graph FILE -o model.svg`.

    graph = model_graph(module, "net")     # a networkx DiGraph, for an instance or a model
    graph.nodes["n3"]    # {"label": "attn: MultiHeadAttention(96, 4)", "kind": "layer", ...}
    graph.edges["n0", "n1"]   # {"label": "[B, 12, 256]", "skip": False, "tied": False}
    source = to_dot(graph)    # Graphviz source; render(source, "svg") needs `dot`

Built from the specialised, checked IR (`instantiate`, as `tlc
info` compiles): each instance and each nested-model layer has its own copy of
its model, typed by shape inference for its one use, so every edge carries the
shape that value has there (`block2`'s edges after a pool are `[B, 32, 4, 4]`):

1. The forward's parameters are `input` nodes, its return an `output` node.
2. Each op of the forward's body is a node: a layer applied (`fc1: Linear(64,
   256)`, the layer as the check's flow prints it), a builtin (`relu`, `add`),
   or any other op by its name (so constructs added later still draw).
   Constants and other non-tensor values are left out. A `Parameter` the
   forward reads is a `param` node (`class_token: Parameter(1, 1, 64)`); a
   layer's own tensor (`wte.weight`, a tied head) is an edge from that layer's
   node, marked `tied`.
3. A layer that is itself a model is drawn as a cluster holding that model's
   own graph (recursively), wired to the values the outer forward passes it.
4. A loop is one cluster holding its body once, labelled with its repeat count
   (`h: Block` and the multiplication sign, 4, for `for block in h`; `for`
   and 256 over a range). A loop over a per-position list (`[Block(d, stride=2 if
   i == 0 else 1) for i in range(n)]`) is a cluster for each run of alike positions
   (the same configuration and types), each drawing its own elements' copy, chained
   in order: `stages.0: Block`, then `stages.1-3: Block` and 3. An `if`
   whose branch is known draws that branch, one decided at run time
   (`self.training`) both, joined in an `if` node. A call of another method
   (`self.encode(x)`) draws that method's ops in place, as the check follows it.
5. An edge joins a value's producer to each op that uses it, labelled with the
   value's shape. An edge `u -> v` is a skip connection (a residual `x + f(x)`,
   a U-Net's skip) when `v` is also reached from `u` through other nodes; it
   has `skip=True` and is drawn dashed and coloured. A fork whose branches
   never meet again (a VAE's `mu` and `logvar`) is not a skip, nor is an edge
   into the output (a value returned beside others) or into an `if` node.

networkx is imported only here (and by the commands that need a graph), so a
plain `tlc check` does not load it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from tensorloom.catalogue.layers import lookup
from tensorloom.catalogue.layers.parameter import PARAMETER
from tensorloom.dialects.nml import (
    ApplyAtOp,
    ApplyOp,
    CallOp,
    ForOp,
    FuncOp,
    GetAttrOp,
    IfOp,
    LayerOp,
    ListOp,
    ModelOp,
    RefOp,
    ReturnOp,
    TensorType,
    TupleGetOp,
    TupleType,
    YieldOp,
)
from tensorloom.passes.shape_inference import describe, format_type
from tensorloom.passes.support.model_env import (
    ArgFailure,
    Env,
    bind_layer,
    called_method,
    element_env,
    forward_of,
    layer_kind,
    layers_of,
    model_env,
    model_kind,
    models_of,
    nested_model,
    nested_overrides,
)

SKIPPED_OPS = ("nml.constant", "nml.ref", "nml.dim")
Cluster = tuple[str, ...]  # the layer names from the drawn model down to a nested one
REPEAT = "\N{MULTIPLICATION SIGN}"  # a loop's cluster: `h: Block` REPEAT 4


class GraphError(Exception):
    """The graph cannot be drawn: no such model, or a model without `forward`."""


@dataclass
class _Builder:
    graph: nx.DiGraph
    models: dict[str, ModelOp]
    order: list[str] = field(default_factory=list[str])  # nodes in program order
    sources: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])  # value -> node
    # A tuple or list (`(recon, mu, logvar)`): its elements, each drawn from its own node.
    bundles: dict[SSAValue, list[SSAValue]] = field(default_factory=dict[SSAValue, list[SSAValue]])
    # Each cluster's layer nodes by layer name (a tied weight is drawn from its layer).
    layer_nodes: dict[tuple[Cluster, str], str] = field(
        default_factory=dict[tuple[Cluster, str], str]
    )
    tied: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])  # `wte.weight`
    loops: dict[Cluster, str] = field(default_factory=dict[Cluster, str])  # cluster -> its list
    # A per-position list's cluster: the first position it draws (its element's own copy).
    positions: dict[Cluster, int] = field(default_factory=dict[Cluster, int])

    def node(self, label: str, kind: str, cluster: Cluster) -> str:
        name = f"n{len(self.order)}"
        self.graph.add_node(name, label=label, kind=kind, cluster=cluster)
        self.order.append(name)
        return name

    def cluster(self, parent: Cluster, name: str, label: str) -> Cluster:
        """A new cluster inside `parent`: a second use of the same layer gets its own."""
        clusters: dict[Cluster, str] = self.graph.graph["clusters"]
        inner, n = (*parent, name), 1
        while inner in clusters:
            n += 1
            inner = (*parent, f"{name}_{n}")
        clusters[inner] = label
        return inner

    def alias(self, value: SSAValue, same: SSAValue) -> None:
        """`value` is drawn from where `same` is (a nested model's result, a loop's)."""
        if same in self.bundles:
            self.bundles[value] = self.bundles[same]
        elif same in self.sources:
            self.sources[value] = self.sources[same]

    def forward(self, model: ModelOp, env: Env, cluster: Cluster,
                args: Sequence[SSAValue] | None) -> list[SSAValue]:  # fmt: skip
        """Add `model`'s forward, fed `args` (or, drawn on its own, input nodes)."""
        func = forward_of(model)
        if func is None:
            raise GraphError(f"model `{model_kind(model)}` has no `forward`")
        return self.inline(model, env, func, cluster, args)

    def inline(self, model: ModelOp, env: Env, func: FuncOp, cluster: Cluster,
               args: Sequence[SSAValue] | None) -> list[SSAValue]:  # fmt: skip
        """Add a method's body (a forward, or `self.encode(x)` called from one) to `cluster`;
        the values it returns."""
        names = [a.data for a in func.arg_names.data]
        for index, arg in enumerate(func.body.block.args):
            if args is None:
                self.sources[arg] = self.node(names[index], "input", cluster)
            elif index < len(args):
                self.alias(arg, args[index])
        self.block(model, env, func.body.block, cluster)
        last = func.body.block.last_op
        values = list(last.values) if isinstance(last, ReturnOp) else []
        if args is None:
            out = self.node("output", "output", cluster)
            for value in values:
                self.edge(value, out)
        return values

    def block(self, model: ModelOp, env: Env, block: Block, cluster: Cluster) -> None:
        for op in block.ops:
            if isinstance(op, ListOp):
                self.bundles[op.results[0]] = list(op.operands)
            elif isinstance(op, ReturnOp | YieldOp) or (
                op.name in SKIPPED_OPS and not _is_param(model, op)
            ):
                continue
            else:
                self.op(model, env, op, cluster)

    def op(self, model: ModelOp, env: Env, op: Operation, cluster: Cluster) -> None:
        if isinstance(op, ForOp):
            self.loop(model, env, op, cluster)
        elif isinstance(op, IfOp):
            self.branch(model, env, op, cluster)
        elif isinstance(op, ApplyOp | ApplyAtOp):
            self.apply(model, env, op, cluster)
        elif isinstance(op, RefOp):  # a `Parameter` (step 2)
            self.sources[op.result] = self.parameter(model, env, op.symbol.root_reference.data,
                                                     cluster)  # fmt: skip
        elif isinstance(op, CallOp) and (method := _method(model, op)) is not None:
            returned = self.inline(model, env, method, cluster, op.args)
            for result, value in zip(op.results, returned, strict=False):
                self.alias(result, value)
        elif isinstance(op, TupleGetOp) and _unpacks(self.bundles, op):
            self.alias(op.result, self.bundles[op.input][op.index.value.data])
        elif not (isinstance(op, GetAttrOp) and self.layer_tensor(model, env, op, cluster)):
            label = op.callee.data if isinstance(op, CallOp) else op.name.removeprefix("nml.")
            self.op_node(label, op, cluster)  # a builtin; a comparison `x > 0` by its operator

    def op_node(self, label: str, op: Operation, cluster: Cluster, kind: str = "op") -> str:
        node = self.node(label, kind, cluster)
        for operand in op.operands:
            self.edge(operand, node)
        for result in op.results:
            self.sources[result] = node
        return node

    def apply(self, model: ModelOp, env: Env, op: ApplyOp | ApplyAtOp, cluster: Cluster) -> None:
        name = op.layer.root_reference.data
        layer = layers_of(model).get(name)
        if layer is None:
            self.op_node(name, op, cluster)
            return
        in_loop = self.loops.get(cluster) == name and isinstance(op, ApplyAtOp)
        position = self.positions.get(cluster) if in_loop else None
        nested = nested_model(layer, self.models, position)
        if nested is None or nested is model or lookup(layer.kind.data) is not None:
            node = self.op_node(f"{name}: {_layer_text(layer, env)}", op, cluster, "layer")
            self.layer_nodes.setdefault((cluster, name), node)
            return
        element = element_env(layer, env, position) if position is not None else env
        overrides = nested_overrides(layer, nested, element)
        inner_env = model_env(nested, overrides) if not isinstance(overrides, ArgFailure) else {}
        inner = cluster  # a loop over the list draws its body in the loop's cluster
        if not in_loop:
            inner = self.cluster(cluster, name, f"{name}: {layer_kind(layer)}")
        returned = self.forward(nested, inner_env, inner, op.args)
        for result, value in zip(op.results, returned, strict=False):
            self.alias(result, value)

    def parameter(self, model: ModelOp, env: Env, name: str, cluster: Cluster) -> str:
        """A `Parameter`'s node, one per cluster however often the forward reads it."""
        if (cluster, name) not in self.layer_nodes:
            layer = layers_of(model)[name]
            self.layer_nodes[(cluster, name)] = self.node(
                f"{name}: {_layer_text(layer, env)}", "param", cluster
            )
        return self.layer_nodes[(cluster, name)]

    def layer_tensor(self, model: ModelOp, env: Env, op: GetAttrOp, cluster: Cluster) -> bool:
        """`wte.weight`: drawn from the layer's node (a tied weight), or a node of its own."""
        base = op.input.owner
        if not isinstance(base, RefOp):
            return False
        name = base.symbol.root_reference.data
        layer = layers_of(model).get(name)
        if layer is None or not isinstance(op.result.type, TensorType):
            return False
        self.tied[op.result] = f"{name}.{op.attr_name.data}"
        node = self.layer_nodes.get((cluster, name))
        if node is None:
            node = self.node(f"{name}: {_layer_text(layer, env)}", "param", cluster)
            self.layer_nodes[(cluster, name)] = node
        self.sources[op.result] = node
        return True

    def loop(self, model: ModelOp, env: Env, op: ForOp, cluster: Cluster) -> None:
        """Step 4: the body once, in a cluster labelled with its repeat count."""
        count = _followed(op.iterations)
        times = f" {REPEAT} {count}" if count is not None else ""
        if op.layers is not None:
            name = op.layers.root_reference.data
            layer = layers_of(model).get(name)
            if layer is not None and layer.positions is not None and count is not None:
                self.position_runs(model, env, op, cluster, layer, count)
                return
            kind = layer_kind(layer) if layer is not None else name
            inner = self.cluster(cluster, name, f"{name}: {kind}{times}")
            self.loops[inner] = name
        else:
            inner = self.cluster(cluster, "for", f"for{times}")
        body = op.body.block
        for arg, init in zip(body.args[1:], op.inits, strict=False):
            self.alias(arg, init)
        self.block(model, env, body, inner)
        last = body.last_op
        values = list(last.values) if isinstance(last, YieldOp) else []
        for result, value in zip(op.results, values, strict=False):
            self.alias(result, value)

    def position_runs(self, model: ModelOp, env: Env, op: ForOp, cluster: Cluster,
                      layer: LayerOp, count: int) -> None:  # fmt: skip
        """Step 4 for a per-position list (`[Block(d, stride=2 if i == 0 else 1) for i in
        range(n)]`): the body once for each run of positions whose elements are the same
        (the same configuration and types), each in a cluster named for its positions
        (`stages.0: Block`, `stages.1-3: Block` and the repeat count), chained in order."""
        name, kind = layer.sym_name.data, layer_kind(layer)
        body = op.body.block
        for arg, init in zip(body.args[1:], op.inits, strict=False):
            self.alias(arg, init)
        for first, last in _runs(layer, self.models, count):
            label = f"{name}.{first}: {kind}"
            if last > first:
                label = f"{name}.{first}-{last}: {kind} {REPEAT} {last - first + 1}"
            inner = self.cluster(cluster, f"{name}_{first}", label)
            self.loops[inner], self.positions[inner] = name, first
            self.block(model, env, body, inner)
            yielded = body.last_op
            values = list(yielded.values) if isinstance(yielded, YieldOp) else []
            # what this run yields feeds the next: its arguments take the yielded values'
            # nodes now, before the next run draws the body's values again
            for arg, value in zip(body.args[1:], values, strict=False):
                self.alias(arg, value)
        for result, arg in zip(op.results, body.args[1:], strict=False):
            self.alias(result, arg)

    def branch(self, model: ModelOp, env: Env, op: IfOp, cluster: Cluster) -> None:
        """Step 4: the branch shape inference followed, or both joined in an `if` node."""
        followed = _followed(op.branches)
        regions = [op.then_region, op.else_region]
        chosen = regions if followed is None or followed == 2 else [regions[followed]]
        yielded: list[list[SSAValue]] = []
        for region in chosen:
            self.block(model, env, region.block, cluster)
            last = region.block.last_op
            yielded.append(list(last.values) if isinstance(last, YieldOp) else [])
        for index, result in enumerate(op.results):
            values = [values[index] for values in yielded if index < len(values)]
            if len({self.sources.get(v) for v in values}) <= 1:
                if values:
                    self.alias(result, values[0])
                continue
            join = self.node("if", "join", cluster)
            for value in values:
                self.edge(value, join)
            self.sources[result] = join

    def edge(self, value: SSAValue, target: str) -> None:
        for element in self.bundles.get(value, ()):
            self.edge(element, target)
        source = self.sources.get(value)
        if source is None:
            return
        tied = self.tied.get(value)
        label = _shape(value) if tied is None else f"{tied} {_shape(value)}"
        self.graph.add_edge(source, target, label=label, skip=False, tied=tied is not None)


def _runs(layer: LayerOp, models: dict[str, ModelOp], count: int) -> list[tuple[int, int]]:
    """The first and last position of each run of positions whose copies are the same
    element: the same configuration, and a forward of the same types."""
    copies = layer.positions.data[:count] if layer.positions is not None else []
    runs: list[tuple[int, int]] = []
    last: object = None
    for position, symbol in enumerate(copies):
        copy = models.get(symbol.root_reference.data)
        forward = forward_of(copy) if copy is not None else None
        same = (copy.config if copy is not None else None,
                forward.function_type if forward is not None else None)  # fmt: skip
        if runs and same == last:
            runs[-1] = (runs[-1][0], position)
        else:
            runs.append((position, position))
        last = same
    return runs


def _unpacks(bundles: dict[SSAValue, list[SSAValue]], op: TupleGetOp) -> bool:
    """`a, b = pair` of a tuple the graph holds element by element."""
    elements = bundles.get(op.input)
    return elements is not None and 0 <= op.index.value.data < len(elements)


def _method(model: ModelOp, op: CallOp) -> FuncOp | None:
    """The method of the model a call runs (`self.encode(x)`), if it is one."""
    if op.method is not None:
        return None
    return called_method(model, op)


def _is_param(model: ModelOp, op: Operation) -> bool:
    if not isinstance(op, RefOp):
        return False
    layer = layers_of(model).get(op.symbol.root_reference.data)
    return layer is not None and layer.kind.data == PARAMETER


def _layer_text(layer: LayerOp, env: Env) -> str:
    bound = bind_layer(layer, env)
    return describe(bound) if bound is not None else layer.kind.data


def _followed(attr: IntegerAttr | None) -> int | None:
    """What shape inference followed (`nml.for`'s `iterations`, `nml.if`'s `branches`)."""
    return attr.value.data if attr is not None else None


def _shape(value: SSAValue) -> str:
    """The value's type as `tlc check` prints it (`[B, 256]`, `[*]`); nothing for a number."""
    kind = value.type
    return format_type(kind) if isinstance(kind, TensorType | TupleType) else ""


def model_graph(module: ModuleOp, name: str) -> nx.DiGraph:
    """The dataflow of an instance's model (`net`), or of a model by name, in a checked,
    specialised module (steps 1-5 above). A model named is drawn as its first instance
    trains it; one used only as a layer of another as that first use configures it."""
    models = models_of(module)
    found = _drawn(module, models, name)
    if found is None:
        raise GraphError(f"no model `{name}` in this program")
    model, env = found
    builder = _Builder(nx.DiGraph(name=model_kind(model)), models)
    builder.graph.graph["clusters"] = {}
    builder.forward(model, env, (), None)
    _mark_skips(builder.graph)
    return builder.graph


def _drawn(module: ModuleOp, models: dict[str, ModelOp], name: str) -> tuple[ModelOp, Env] | None:
    """The model an instance (`net`) or a model's name draws, as `tlc info` profiles it:
    an instance's (specialised) model; a model used only as a layer, its first use's copy."""
    from tensorloom.analysis.profile import info_instantiations

    found = info_instantiations(module, models)
    inst = next((i for i in found if i.name == name), None)
    inst = inst or next((i for i in found if model_kind(i.model) == name), None)
    if inst is not None:
        return inst.model, inst.env
    model = models.get(name)
    return (model, model_env(model)) if model is not None else None


def _mark_skips(graph: nx.DiGraph) -> None:
    """Step 5: `u -> v` skips when another of `u`'s successors also leads to `v`."""
    reach: dict[str, set[str]] = {}
    for source in graph.nodes:
        targets = list(graph.successors(source))
        for target in targets:
            data = graph.edges[source, target]
            # a branch's value into its `if`, a value returned beside others: not bypasses
            ends = graph.nodes[target]["kind"] in ("join", "output")
            data["skip"] = (
                not data["tied"]
                and not ends
                and any(
                    target in _reach(graph, other, reach) for other in targets if other != target
                )
            )


def _reach(graph: nx.DiGraph, node: str, reach: dict[str, set[str]]) -> set[str]:
    if node not in reach:
        reach[node] = {node} | nx.descendants(graph, node)
    return reach[node]


# ----------------------------------------------------------------- rendering

STYLES = {
    "input": {"shape": "invhouse", "style": "filled", "fillcolor": "#e8f0fe"},
    "output": {"shape": "house", "style": "filled", "fillcolor": "#e8f0fe"},
    "layer": {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff4d6"},
    "op": {"shape": "ellipse"},
    "param": {"shape": "cylinder", "style": "filled", "fillcolor": "#e6f4ea"},
    "join": {"shape": "diamond"},
}
SKIP_STYLE = {"style": "dashed", "color": "#d62728", "fontcolor": "#d62728"}
TIED_STYLE = {"style": "dotted", "color": "#1f77b4", "fontcolor": "#1f77b4"}


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
        style = SKIP_STYLE if data["skip"] else TIED_STYLE if data["tied"] else {}
        lines.append(f"\t{source} -> {target} {_attributes({'label': data['label'], **style})}")
    return "\n".join([*lines, "}"]) + "\n"


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _attributes(attributes: dict[str, str]) -> str:
    """`[label="..." shape=box]`: the label first, always quoted; another value quoted only
    where DOT needs it (as the graphviz package writes it)."""
    return (
        "["
        + " ".join(
            f"{key}={value if key != 'label' and _bare(value) else _quoted(value)}"
            for key, value in attributes.items()
        )
        + "]"
    )


def _bare(value: str) -> bool:
    """A DOT ID that needs no quotes: a name (not a keyword), or a number."""
    keywords = {"node", "edge", "graph", "digraph", "subgraph", "strict"}
    return (value.isidentifier() and value.isascii() and value.lower() not in keywords) or (
        value.replace(".", "", 1).isdigit()
    )


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
