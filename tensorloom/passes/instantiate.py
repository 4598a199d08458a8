"""`instantiate`: each instance's configuration, folded to literals, on the instance.

    nml.model @Block {
      nml.config @d_model = 512 : i64
      nml.config @d_ff = #nml.expr<"*", [4 : i64, #nml.cfg<"d_model">]>
    }
    nml.instance @net = @Block {d_model = 256 : i64}

becomes

    nml.instance @net = @Block {d_model = 256 : i64}
        {config = {d_model = 256 : i64, d_ff = 1024 : i64}}

the model's defaults, in order (a default may use an earlier config), then the
instance's overrides, every expression evaluated. `shape-inference`,
`check-train` and `tlc info` take an instance's configuration from `config`
(`model_env.instance_env`) instead of evaluating the model's defaults again.

Then each instance and each nested-model layer gets its own copy of its model
(`specialize`), as MLIR's Toy inlines before it infers: shape inference types every
copy for its one use, so each value has one type, the one `tlc check`, `tlc info`,
`tlc graph` and the language server show. `merge-specializations` drops the copies
before the script is emitted (one class per model).

`config` is a declared property of `nml.instance` (docs/ir.md). A config that has no
value (`resolve-nml` reported why) is left out, as it is
from `model_env`. When a value cannot be an attribute (an integer past 64 bits:
the checks report it), the instance gets no `config` and its readers evaluate
the model's defaults as before. The model's own ops keep their config
references: the emitted model still takes its configs as constructor arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute

from tensorloom.catalogue.layers import lookup
from tensorloom.dialects.module_facts import SPECIALIZED_MODULE
from tensorloom.dialects.nml import CallOp, FuncOp, InstanceOp, LayerOp, ModelOp
from tensorloom.passes.support.model_env import (
    Env,
    config_attr,
    element_envs,
    evaluate_kwargs,
    instance_env,
    layers_of,
    lookup_symbol,
    methods_of,
    model_env,
    models_of,
    nested_overrides,
)
from tensorloom.passes.support.prerequisites import TLPass


def instantiate(module: ModuleOp) -> None:
    for op in list(module.body.block.ops):
        if not isinstance(op, InstanceOp):
            continue
        model = lookup_symbol(module, op.model, ModelOp)
        if model is None:
            continue  # check-scopes reports it
        overrides = evaluate_kwargs(op.overrides.data, {})
        env = model_env(model, overrides if isinstance(overrides, dict) else {})
        attr = config_attr(env)
        if attr is not None:
            op.config = attr


@dataclass(frozen=True)
class InstantiatePass(TLPass):
    """Each instance's `config`; each instance and nested-model layer its own model."""

    name = "instantiate"
    requires = ("resolve-nml",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """An instance of a known model has no `config` yet."""
        instances = (op for op in module.body.block.ops if isinstance(op, InstanceOp))
        return any(
            op.config is None and lookup_symbol(module, op.model, ModelOp) is not None
            for op in instances
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        instantiate(op)
        specialize(op)


# --- per-instance specialisation ----------------------------------------------------------

MAX_COPIES = 2_000
"""Past this many copies, further nested layers share their model (its first call's types)."""
MAX_SPECIALIZED_DEPTH = 32  # as shape inference's MAX_DEPTH: deeper nesting is TL0310


def specialize(module: ModuleOp) -> None:
    """Give each instance, and each nested-model layer under it, its own model.

        nml.model @ResNet { nml.layer @block1 = "ResBlock" ...  nml.layer @block2 = "ResBlock" ... }

    becomes, next to `@ResBlock`,

        nml.model @"ResNet.block1" {specializes = "ResBlock", config = {...}} { ... }
        nml.model @"ResNet.block2" {specializes = "ResBlock", config = {...}} { ... }

    with `specialized = @"ResNet.block1"` on the layer (its `kind` stays `ResBlock`,
    for diagnostics and display). A second instance of a model gets a copy of the model
    too (`@"Net#b"`). Shape inference then types every copy for its one call site, so
    each value has the types of exactly one use; a nested model applied at two shapes
    (a residual block before and after a pool) has both in the IR.
    """
    models = models_of(module)
    names = set(symbols_in(module))
    state = _Specializer(module, models, names)
    roots: list[tuple[ModelOp, Env]] = []
    first_instance: set[str] = set()
    for op in list(module.body.block.ops):
        if not isinstance(op, InstanceOp):
            continue
        model = lookup_symbol(module, op.model, ModelOp)
        if model is None or model.specializes is not None:
            continue
        env = instance_env(op, model)
        kind = model.sym_name.data
        if kind in first_instance:  # a second instance: its own copy of the model
            model = state.copy(model, f"{kind}#{op.sym_name.data}", kind, env)
            op.properties["model"] = SymbolRefAttr(model.sym_name.data)
        first_instance.add(kind)
        roots.append((model, env))
    roots += [
        (m, model_env(m))
        for m in list(models.values())
        if m.sym_name.data not in first_instance and m.specializes is None
    ]
    for model, env in roots:
        state.nested(model, env, (model.specializes or model.sym_name,))
    for model in list(models_of(module).values()):
        specialize_methods(model)
    module.attributes[SPECIALIZED_MODULE] = UnitAttr()


def specialize_methods(model: ModelOp) -> None:
    """Give each call site of a method of `model` its own copy of the method, past the first.

        fn forward(self, x: Tensor[B, 16], y: Tensor[B, 32]):
            return self.helper(x) + self.helper(y) |> ...

    keeps `helper` for the first call and adds `nml.func @"helper.2" {specializes =
    "helper"}`, a copy, with `specialized = @"helper.2"` on the second call; a method the
    copy calls gets its own copies the same way. Shape inference then types each copy for its
    one call site, so `tlc check`, `tlc info` and `tlc graph` show each call's own shapes
    and an error inside the second call is reported with its shapes. `merge-specializations`
    erases the copies before the script is emitted. The methods no method of the model calls
    (the forward, a method an objective calls) are where the calls are followed from.
    """
    methods = methods_of(model)
    called = {c.callee.data.removeprefix("self.") for c in _method_calls(model)}
    copies = _MethodCopies(model, set(methods))
    for name, func in methods.items():
        if name not in called:
            copies.claimed.add(func)
            copies.calls_in(func, (name,))


def _method_calls(op: ModelOp | FuncOp) -> list[CallOp]:
    """The calls of the model's methods (`self.helper(x)`) under `op`, in order."""
    return [c for c in op.walk() if isinstance(c, CallOp) and c.method is None]


@dataclass
class _MethodCopies:
    model: ModelOp
    names: set[str]
    claimed: set[FuncOp] = field(default_factory=set[FuncOp])
    copies: int = 0

    def calls_in(self, func: FuncOp, chain: tuple[str, ...]) -> None:
        """Each method `func` calls: the method itself at its first call site, a copy at
        every other (none along `chain`: a method that calls itself keeps one body)."""
        if len(chain) > MAX_SPECIALIZED_DEPTH:
            return
        for call in _method_calls(func):
            name = call.callee.data.removeprefix("self.")
            target = lookup_symbol(self.model, name, FuncOp)
            if target is None or name in chain:
                continue
            if target in self.claimed:
                if self.copies >= MAX_COPIES:
                    continue  # past it, further call sites share the method
                target = self.copy(target)
                call.specialized = SymbolRefAttr(target.sym_name.data)
            self.claimed.add(target)
            self.calls_in(target, (*chain, name))

    def copy(self, method: FuncOp) -> FuncOp:
        self.copies += 1
        kind, n = method.sym_name.data, 2
        while f"{kind}.{n}" in self.names:
            n += 1
        copy = method.clone()
        copy.properties["sym_name"] = StringAttr(f"{kind}.{n}")
        copy.specializes = StringAttr(kind)
        self.names.add(f"{kind}.{n}")
        self.model.body.block.add_op(copy)
        return copy


@dataclass
class _Specializer:
    module: ModuleOp
    models: dict[str, ModelOp]
    names: set[str]
    copies: int = 0
    last: dict[ModelOp, ModelOp] = field(default_factory=dict[ModelOp, ModelOp])
    """Each model's latest copy: the next goes after it, so copies are in the order made
    (the first is the model's first use, which the language server shows)."""

    def nested(self, model: ModelOp, env: Env, chain: tuple[Attribute, ...]) -> None:
        """Give each layer of `model` whose kind is a model its own copy, recursively."""
        if len(chain) > MAX_SPECIALIZED_DEPTH:
            return
        for layer in layers_of(model).values():
            kind = layer.kind.data
            nested = self.models.get(kind)
            if nested is None or lookup(kind) is not None or StringAttr(kind) in chain:
                continue  # a catalogue layer, or a cycle (resolve-nml reports it)
            if self.copies >= MAX_COPIES:
                return
            name = f"{model.sym_name.data}.{layer.sym_name.data}"
            if layer.var is not None:  # a per-position list: a copy for each position
                self.positions(layer, nested, env, name, (*chain, StringAttr(kind)))
                continue
            overrides = nested_overrides(layer, nested, env)
            inner = model_env(nested, overrides if isinstance(overrides, dict) else {})
            copy = self.copy(nested, name, kind, inner)
            layer.specialized = SymbolRefAttr(copy.sym_name.data)
            self.nested(copy, inner, (*chain, StringAttr(kind)))

    def positions(
        self, layer: LayerOp, nested: ModelOp, env: Env, name: str, chain: tuple[Attribute, ...]
    ) -> None:
        """`[Block(8 if i == 0 else 16) for i in range(n)]`: each position's copy, under its
        own arguments, in `positions` (the first also in `specialized`)."""
        copies: list[SymbolRefAttr] = []
        for position, position_env in enumerate(element_envs(layer, env)):
            if self.copies >= MAX_COPIES:
                return
            overrides = nested_overrides(layer, nested, position_env)
            inner = model_env(nested, overrides if isinstance(overrides, dict) else {})
            copy = self.copy(nested, f"{name}.{position}", layer.kind.data, inner)
            copies.append(SymbolRefAttr(copy.sym_name.data))
            self.nested(copy, inner, chain)
        if copies:
            layer.specialized = copies[0]
            layer.positions = ArrayAttr(copies)

    def copy(self, model: ModelOp, name: str, kind: str, env: Env) -> ModelOp:
        self.copies += 1
        fresh, n = name, 1
        while fresh in self.names:
            n += 1
            fresh = f"{name}.{n}"
        self.names.add(fresh)
        copy = model.clone()
        copy.properties["sym_name"] = StringAttr(fresh)
        copy.specializes = StringAttr(kind)
        attr = config_attr(env)
        if attr is not None:
            copy.config = attr
        self.module.body.block.insert_op_after(copy, self.last.get(model, model))
        self.last[model] = copy
        self.models[fresh] = copy
        return copy


def symbols_in(module: ModuleOp) -> list[str]:
    """The names of the module's top-level symbols (models, instances, kernels, ...)."""
    names = [op.properties.get("sym_name") for op in module.body.block.ops]
    return [n.data for n in names if isinstance(n, StringAttr)]
