"""The abstract syntax tree of .tl and .nml files, every node with its span.

One tree shape serves both languages: an `.nml` `@model` and a `.tl` `model`
both become a `ModelDecl` (the `.nml` forward is a `FnDecl` named `forward`
with no `self`). For example

    model Classifier:
        layer fc1 = Linear(784, 10)
        fn forward(self, x: Tensor[B, 784]) -> Tensor:
            return x |> self.fc1 |> relu

is `ModelDecl(name="Classifier", layers=[LayerDecl("fc1", Call(Name("Linear"),
...))], methods=[FnDecl("forward", params=[self, x], body=[ReturnStmt(
Pipe(Pipe(Name("x"), Attribute(Name("self"), "fc1")), Name("relu")))])])`.

This module is the contract between the parser and IR generation: nodes are
plain dataclasses, and `children()` walks them generically.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Literal

from tensorloom.source import Span


@dataclass(slots=True)
class Node:
    span: Span

    def children(self) -> Iterator[Node]:
        """Direct child nodes, in source order."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, list):
                yield from _nodes_in(value)


def _nodes_in(values: list[object]) -> Iterator[Node]:
    for item in values:
        if isinstance(item, Node):
            yield item
        elif isinstance(item, tuple | list):
            yield from (x for x in item if isinstance(x, Node))


# ---------------------------------------------------------------- expressions


@dataclass(slots=True)
class Expr(Node):
    pass


@dataclass(slots=True)
class Name(Expr):
    id: str


@dataclass(slots=True)
class IntLit(Expr):
    value: int


@dataclass(slots=True)
class FloatLit(Expr):
    value: float


@dataclass(slots=True)
class StrLit(Expr):
    value: str


@dataclass(slots=True)
class BoolLit(Expr):
    value: bool


@dataclass(slots=True)
class NoneLit(Expr):
    pass


@dataclass(slots=True)
class EllipsisLit(Expr):
    """`...` inside an index, as in `x[..., -1]`."""


UnaryOp = Literal["-", "+", "not"]
BinaryOp = Literal[
    "+", "-", "*", "/", "%", "**", "@", "==", "!=", "<", "<=", ">", ">=", "and", "or"
]
AUGMENTED_OPERATORS: dict[str, BinaryOp] = {"+=": "+", "-=": "-", "*=": "*", "/=": "/"}
"""`x += v` is `x = x + v` for a name; `x[i] += v` updates the region in place."""


@dataclass(slots=True)
class Unary(Expr):
    op: UnaryOp
    operand: Expr


@dataclass(slots=True)
class Binary(Expr):
    op: BinaryOp
    left: Expr
    right: Expr
    op_span: Span


@dataclass(slots=True)
class Pipe(Expr):
    """`value |> stage`; left-associative, so `x |> f |> g` is Pipe(Pipe(x, f), g).

    A stage is a Name (`relu`), a Call (`dropout(0.2)`), an Attribute
    (`self.fc1`) or a Call of an Attribute (`self.block(mask)`).
    """

    value: Expr
    stage: Expr


@dataclass(slots=True)
class Keyword(Node):
    name: str
    value: Expr


@dataclass(slots=True)
class Call(Expr):
    func: Expr
    args: list[Expr] = field(default_factory=list)
    kwargs: list[Keyword] = field(default_factory=list)


@dataclass(slots=True)
class Attribute(Expr):
    value: Expr
    attr: str
    attr_span: Span


@dataclass(slots=True)
class Slice(Expr):
    """`lower:upper:step` inside an index; each part may be absent."""

    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(slots=True)
class Index(Expr):
    value: Expr
    indices: list[Expr]  # Expr, Slice or EllipsisLit, one per comma-separated item


@dataclass(slots=True)
class ListExpr(Expr):
    elts: list[Expr]


@dataclass(slots=True)
class TupleExpr(Expr):
    elts: list[Expr]


@dataclass(slots=True)
class IfExp(Expr):
    """`2 if i == 0 else 1`: a value chosen by a condition known when the model is built
    (a layer argument or a config)."""

    test: Expr
    body: Expr
    orelse: Expr


@dataclass(slots=True)
class ListComp(Expr):
    """`[Block(d, stride=2 if i == 0 else 1) for i in range(n)]`, `[Stage(w) for w in
    widths]`: a list built by a loop."""

    elt: Expr
    var: str
    var_span: Span
    iter: Expr


# ---------------------------------------------------------------------- types


@dataclass(slots=True)
class Dim(Node):
    """One dimension of a shape annotation: an int or a symbolic name (`B`)."""

    value: int | str


@dataclass(slots=True)
class TypeExpr(Node):
    """`Tensor`, `Tensor[B, 784]`, `int`, `tl.constexpr`, ...

    `name` is dotted as written; `dims` is None when no `[...]` was given.
    """

    name: str
    dims: list[Dim] | None = None
    elements: list[TypeExpr] | None = None  # `(Tensor, Tensor)`: a tuple type, name ""


# ----------------------------------------------------------------- statements


@dataclass(slots=True)
class Stmt(Node):
    pass


@dataclass(slots=True)
class LetStmt(Stmt):
    name: str
    name_span: Span
    value: Expr


@dataclass(slots=True)
class LetTupleStmt(Stmt):
    """`let (recon, mu, logvar) = out`: one name per element of a tuple."""

    names: list[str]
    name_spans: list[Span]
    value: Expr
    paths: list[tuple[int, ...]] | None = None
    """Where each name sits in a nested pattern: `let (out, (h, c)) = lstm(x, state)` has
    `names` out, h, c at (0,), (1, 0), (1, 1); None for a flat one (name i at (i,))."""

    def path_of(self, index: int) -> tuple[int, ...]:
        return self.paths[index] if self.paths is not None else (index,)


@dataclass(slots=True)
class AssignStmt(Stmt):
    """`x = v`, `x[:, 0] = v`, `results[idx] += v`: `operator` is `=` or an augmented one
    (`+=`, `-=`, `*=`, `/=`)."""

    target: Expr  # Name, Attribute or Index
    value: Expr
    operator: str = "="

    def combined_value(self) -> Expr:
        """What a name is bound to: `v` for `x = v`, `x + v` for `x += v`."""
        if self.operator == "=":
            return self.value
        return Binary(
            self.span, AUGMENTED_OPERATORS[self.operator], self.target, self.value, self.span
        )


@dataclass(slots=True)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(slots=True)
class ReturnStmt(Stmt):
    value: Expr | None


@dataclass(slots=True)
class IfStmt(Stmt):
    """`if c1: b1 elif c2: b2 else: b3` is branches [(c1, b1), (c2, b2)], orelse b3."""

    branches: list[tuple[Expr, list[Stmt]]]
    orelse: list[Stmt] | None


@dataclass(slots=True)
class ForStmt(Stmt):
    var: str
    var_span: Span
    iter: Expr
    body: list[Stmt]


@dataclass(slots=True)
class Param(Node):
    name: str
    type: TypeExpr | None = None
    default: Expr | None = None


# ----------------------------------------------------------- declarations


@dataclass(slots=True)
class ConfigEntry(Node):
    """`d_model = 512` in an `.nml` `@config:` section."""

    name: str
    name_span: Span
    value: Expr


@dataclass(slots=True)
class LayerDecl(Node):
    """`layer fc1 = Linear(784, 256)` (.tl) or `fc1 = Linear(784, 256)` (.nml @layers)."""

    name: str
    name_span: Span
    ctor: Expr  # normally a Call; a bare Name (`ReLU`) is allowed
    condition: Expr | None = None  # `if downsample:` in `@layers`: built only when true


@dataclass(slots=True)
class FnDecl(Stmt):
    """A model's method (`fn forward(self, x)`), or a `.tl` file's top-level function
    (`fn my_loss(out, y) -> Tensor:`, a loss or metric a train block names)."""

    name: str
    name_span: Span
    params: list[Param]
    return_type: TypeExpr | None
    body: list[Stmt]


@dataclass(slots=True)
class ModelDecl(Stmt):
    """A model from either language.

    `.tl`:  `model Name:` with `layer` lines and `fn` methods (first param `self`).
    `.nml`: `@model Name:` with `@config`, `@layers` and `@forward(params)`
            sections; the forward becomes `methods=[FnDecl("forward", ...)]`
            whose params do not include `self`.
    """

    name: str
    name_span: Span
    syntax: Literal["tl", "nml"]
    config: list[ConfigEntry] = field(default_factory=list)
    layers: list[LayerDecl] = field(default_factory=list)
    methods: list[FnDecl] = field(default_factory=list)


@dataclass(slots=True)
class ImportDecl(Stmt):
    """`import blocks.resnet.nml as ResBlock` or `import "../x.nml" as X`.

    `path` is the file path relative to the importing file, already turned
    from dotted into slashed form (`blocks/resnet.nml`).
    """

    path: str
    path_span: Span
    alias: str | None
    alias_span: Span | None


@dataclass(slots=True)
class TrainSetting(Node):
    """`epochs = 10` inside a train block."""

    key: str
    key_span: Span
    value: Expr


@dataclass(slots=True)
class CheckpointClause(Node):
    """`checkpoint every 5 epochs` (unit `epochs` or `steps`)."""

    every: int
    every_span: Span
    unit: str


@dataclass(slots=True)
class TrainStep(Node):
    """`step d_loss with Adam(D, lr=2e-4)` inside a train block: one optimizer step of each
    batch, minimising the objective `d_loss` over the parameters of the models named."""

    objective: str
    objective_span: Span
    optimizers: list[Expr]  # `step f with Muon(hidden), AdamW(rest)`: one backward, both step
    # `from epoch 11` / `until epoch 10`: the epochs (from 1, both ends included) it runs in
    first_epoch: int | None = None
    last_epoch: int | None = None
    window_span: Span | None = None

    @property
    def optimizer(self) -> Expr:
        return self.optimizers[0]


@dataclass(slots=True)
class TrainGroup(Node):
    """`group hidden = params(net.blocks, ndim=2)` inside a train block: a named selection of
    a model's parameters, for the optimizers of its `step` lines."""

    name: str
    name_span: Span
    value: Expr


@dataclass(slots=True)
class TrainCarry(Node):
    """`carry state = none` inside a train block: a value the objective takes after the batch
    and returns after its loss, kept from one batch to the next (detached between them) and
    set back to `init` at each epoch's start and for validation. `init` is None when the line
    gives no value (check-train reports it)."""

    name: str
    name_span: Span
    init: Expr | None


@dataclass(slots=True)
class TrainDecl(Stmt):
    """`train net on data:` (or `train (G, D) on data:`) followed by settings and steps."""

    model: Expr
    data: Expr
    settings: list[TrainSetting]
    checkpoint: CheckpointClause | None
    steps: list[TrainStep] = field(default_factory=list["TrainStep"])
    groups: list[TrainGroup] = field(default_factory=list["TrainGroup"])
    carries: list[TrainCarry] = field(default_factory=list["TrainCarry"])


@dataclass(slots=True)
class WeightRule(Node):
    """`"transformer.h.{i}.ln_1.weight" -> "h.{i}.ln_1.weight" [transposed]`, or
    `ignore "..."` (`targets` empty): one name rule of a `weights` block. Several sources
    are joined into one tensor and several targets split from one, along `along`:
    `"c_attn.weight" -> ["q.weight", "k.weight", "v.weight"] along 0 transposed`."""

    sources: list[str]
    source_span: Span
    targets: list[str]
    target_span: Span | None
    transposed: bool
    along: int | None = None


@dataclass(slots=True)
class ConfigRule(Node):
    """`config "num_attention_heads" -> n_head`: config.json's entry that must equal one of
    the instance's config values."""

    key: str
    key_span: Span
    name: str
    name_span: Span


@dataclass(slots=True)
class WeightsDecl(Stmt):
    """`weights net from "gpt2":` followed by the rules naming the file's tensors; with
    `using hf` (`using` set) or with no rules, the rules of a `@weights` map of the
    instance's model follow the block's own."""

    instance: str
    instance_span: Span
    path: str
    path_span: Span
    rules: list[WeightRule]
    configs: list[ConfigRule] = field(default_factory=list["ConfigRule"])
    using: str | None = None
    using_span: Span | None = None


@dataclass(slots=True)
class WeightsMapDecl(Stmt):
    """`@weights hf for GPT:` in an .nml file: a named map from a published checkpoint's
    names to the model's, the rules of a `weights` block, which a .tl's block applies."""

    name: str
    name_span: Span
    model: str
    model_span: Span
    rules: list[WeightRule]
    configs: list[ConfigRule] = field(default_factory=list["ConfigRule"])


@dataclass(slots=True)
class KernelDecl(Stmt):
    """`@kernel def name(params):` with a Triton-style body; `options` is the decorator's
    call, `@kernel(backward=k_bwd, num_warps=[4, 8])`, when it has one."""

    name: str
    name_span: Span
    params: list[Param]
    body: list[Stmt]
    options: Call | None = None


@dataclass(slots=True)
class Module(Node):
    """One source file. `items` holds declarations and top-level statements in order."""

    path: str
    language: Literal["tl", "nml"]
    items: list[Stmt]

    def models(self) -> list[ModelDecl]:
        return [item for item in self.items if isinstance(item, ModelDecl)]

    def weights_maps(self) -> list[WeightsMapDecl]:
        return [item for item in self.items if isinstance(item, WeightsMapDecl)]

    def imports(self) -> list[ImportDecl]:
        return [item for item in self.items if isinstance(item, ImportDecl)]
