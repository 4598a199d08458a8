"""IR generation: the ASTs of a program become one nml/train/kernel module.

    model Classifier:                     nml.model @Classifier from "mnist.tl" {
        layer fc1 = Linear(784, 10)         nml.layer @fc1 = "Linear" [784 : i64, 10 : i64] {}
        fn forward(self, x: Tensor[B, 784]) nml.func @forward(%x: !nml.tensor<[B, 784], f32>) ...
    let net = Classifier()                nml.instance @net = @Classifier {}
    let data = load_dataset("digits")     train.dataset @data = "digits" {}
    train net on data: ...                train.loop @net on @data { train.set ... }

Ops are built directly from the AST (no printing and re-parsing) and each one
carries the location of the source it came from. Models of imported files come
first, with `origin` set to their file. A script's other top-level statements go,
in order, into one `train.main` op together with its train loops (docs/ir.md).
Errors are reported through `tensorloom.diagnostics.ir.report`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.traits import SymbolOpInterface

from tensorloom.diagnostics import Diagnostic, Label
from tensorloom.diagnostics.core import did_you_mean
from tensorloom.diagnostics.ir import loc_of, report, span_of
from tensorloom.dialects import nml, train
from tensorloom.dialects.nml import CallAttr
from tensorloom.frontend import ast
from tensorloom.frontend.imports import Program, SourceUnit
from tensorloom.frontend.irgen_attrs import AttrBuilder, dotted_name
from tensorloom.frontend.irgen_body import BodyBuilder, valid_hint
from tensorloom.frontend.lexer import CONSTANT_NAMES
from tensorloom.frontend.sequential import hoist_sequentials
from tensorloom.source import Span

SCALAR_TYPES: dict[str, Attribute] = {
    "int": i64,
    "float": f64,
    "bool": i1,
    "str": nml.StrType(),
    "list": nml.ListType(),
    "tuple": nml.ListType(),
}
DATASET_LOADER = "load_dataset"


def generate(program: Program) -> ModuleOp:
    """The module for `program`: imported models, then the root file's items."""
    return _ModuleBuilder(program).build()


def _at(op: Operation, span: Span) -> Operation:
    op.location = loc_of(span)
    return op


def _error(code: str, message: str, primary: Label | Span, help: str | None = None) -> None:
    report(Diagnostic.error(code, message, primary, help=help))


def _kernel_builder() -> Callable[[ast.KernelDecl], Operation]:
    """The kernel dialect's irgen (imported only by a program with a kernel)."""
    from tensorloom.frontend.irgen_kernel import build_kernel

    return build_kernel


@dataclass
class _Main:
    parent: Operation
    builder: BodyBuilder


class _ModuleBuilder:
    def __init__(self, program: Program):
        self.program = program
        self.ops: list[Operation] = []
        self.models: dict[str, ast.ModelDecl] = {}
        self.kernels = frozenset(
            item.name for item in program.root.module.items if isinstance(item, ast.KernelDecl)
        )
        self.maps: dict[str, dict[str, ast.WeightsMapDecl]] = {}  # model -> name -> map

    def build(self) -> ModuleOp:
        for unit in self.program.imported:
            for decl in unit.module.models():
                self._model(decl, unit)
            self._weights_maps(unit)
        self._weights_maps(self.program.root)  # an .nml file compiled or checked alone
        self._root(self.program.root)
        module = ModuleOp(self.ops)
        _report_duplicate_symbols(module.body.block)
        for op in self.ops:
            if isinstance(op, nml.ModelOp):
                _report_duplicate_symbols(op.body.block)
        module.location = loc_of(Span.point(self.program.root.path, 1, 1))
        return module

    # ---------------------------------------------------------------- models

    def _model(self, decl: ast.ModelDecl, unit: SourceUnit, holder: str | None = None) -> None:
        first = self.models.get(decl.name)
        if first is not None:
            _duplicate_model(decl, first)
            return
        self.models[decl.name] = decl
        decl, hidden = hoist_sequentials(decl, unit.aliases)
        for inner in hidden:  # `Sequential(Block(d), ...)`: a model of its own
            self._model(inner, unit, holder=decl.name)
        _check_declared(decl.name, decl.name_span)
        for named in [*decl.config, *decl.layers]:
            _check_declared(named.name, named.name_span)
        op = nml.ModelOp(decl.name, origin=unit.path)
        if holder is not None:
            op.properties["sequential"] = StringAttr(holder)
        body = op.body.block
        configs = AttrBuilder("config", unit.aliases)
        _check_config_order(decl.config)
        for entry in decl.config:
            body.add_op(_at(nml.ConfigOp(entry.name, configs.build(entry.value)), entry.span))
        for layer in decl.layers:
            body.add_op(self._layer(layer, configs))
        layer_lists = frozenset(
            layer.name for layer in decl.layers if isinstance(layer.ctor, ast.ListComp)
        )
        members = {entry.name for entry in decl.config} | {layer.name for layer in decl.layers}
        for method in decl.methods:
            body.add_op(self._method(method, decl.syntax, layer_lists, members))
        self.ops.append(_at(op, decl.name_span))

    def _layer(self, decl: ast.LayerDecl, attrs: AttrBuilder) -> Operation:
        ctor = decl.ctor
        count: Attribute | None = None
        var: str | None = None
        items: Attribute | None = None
        if isinstance(ctor, ast.ListComp):
            count, items = self._layer_count(ctor, attrs)
            if ctor.var != "_" and (items is not None or _mentions(ctor.elt, ctor.var)):
                var = ctor.var
            ctor = ctor.elt
        call = ctor if isinstance(ctor, ast.Call) else None
        kind = dotted_name(call.func if call is not None else ctor)
        if kind is None:
            _error(
                "TL0139",
                "a layer must be a constructor call",
                ctor.span,
                help="write `name = Linear(784, 256)` or `name = ReLU`",
            )
            kind = "?"
        kind = attrs.aliases.get(kind, kind)
        args = call.args if call is not None else []
        kwargs = call.kwargs if call is not None else []
        build = attrs.build
        if kind == "Sequential":  # `Sequential(Linear(d, d), GELU)`: a bare name is a layer
            build = attrs.build_layer
        op = nml.LayerOp(
            decl.name,
            kind,
            [build(a) for a in args],
            {k.name: attrs.build(k.value) for k in kwargs},
            arg_locs=[loc_of(a.span) for a in args],
            kwarg_locs=[loc_of(k.span) for k in kwargs],
            count=count,
            var=var,
            items=items,
            when=attrs.build(decl.condition) if decl.condition is not None else None,
        )
        return _at(op, decl.span)

    @staticmethod
    def _layer_count(comp: ast.ListComp, attrs: AttrBuilder) -> tuple[Attribute, Attribute | None]:
        """`[Block(d) for i in range(n)]`: the count `n`; `[Stage(w) for w in widths]`:
        `len(widths)` and the items `widths` (a list config or a list of values)."""
        it = comp.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            if len(it.args) != 1 or it.kwargs:
                _error(
                    "TL0144",
                    "a layer list counts its positions with `range(n)`",
                    it.span,
                    help="write `h = [Block(d_model) for i in range(n_layer)]`",
                )
                return IntegerAttr(1, i64), None
            return attrs.build(it.args[0]), None
        if not isinstance(it, ast.Name | ast.ListExpr | ast.TupleExpr):
            _error(
                "TL0144",
                "a layer list runs over `range(n)` or a list of values",
                it.span,
                help="write `[Block(d) for i in range(n)]` or `[Stage(w) for w in widths]`",
            )
            return IntegerAttr(1, i64), None
        items = attrs.build(it)
        return CallAttr.get("len", [items]), items

    def _constants_read(self, decl: ast.FnDecl) -> list[ast.LetStmt]:
        """The script's top-level `let`s of values (`let abar = cumprod(...)`) that the
        function reads, and those they read, in file order: each is computed at the
        function's entry (a schedule an objective indexes, on its inputs' device)."""
        lets = {
            item.name: item
            for item in self.program.root.module.items
            if isinstance(item, ast.LetStmt) and self._let_kind(item) is None
        }
        params = {p.name for p in decl.params}
        wanted: set[str] = set()
        pending = [n for n in lets if n not in params and any(_mentions(s, n) for s in decl.body)]
        while pending:
            name = pending.pop()
            if name in wanted:
                continue
            wanted.add(name)
            pending += [n for n in lets if n not in wanted and _mentions(lets[name].value, n)]
        chosen = [let for name, let in lets.items() if name in wanted]
        for let in chosen:
            _check_constant(let)
        return chosen

    def _method(
        self,
        decl: ast.FnDecl,
        syntax: str,
        layer_lists: frozenset[str] = frozenset(),
        members: set[str] | None = None,
        constants: Sequence[ast.LetStmt] = (),
    ) -> Operation:
        """A model's method, or (`syntax` "fn") a top-level function of a `.tl` file, with
        the top-level `constants` it reads computed first."""
        params = self._params(decl, syntax)
        input_types = [_param_type(p.type) for p in params]
        block = Block(arg_types=input_types)
        scope: dict[str, SSAValue] = {}
        for param, arg in zip(params, block.args, strict=True):
            arg.name_hint = param.name if valid_hint(param.name) else None
            scope[param.name] = arg
        body = BodyBuilder(block, scope, self.kernels, layer_lists)
        body.dims = _dims_of(params, block, scope, members or set())
        body.members = members or set()
        if syntax == "fn":
            body.callable_params = frozenset(p.name for p in params)
        body.statements(list(constants))
        body.statements(decl.body)
        if body.returned is None:
            body.add(nml.ReturnOp([]), decl.name_span)
        outputs = self._outputs(decl, body.returned or [])
        function_type = FunctionType.from_lists(input_types, outputs)
        op = nml.FuncOp(decl.name, function_type, [p.name for p in params], Region(block))
        return _at(op, decl.name_span)

    @staticmethod
    def _outputs(decl: ast.FnDecl, returned: Sequence[SSAValue]) -> list[Attribute]:
        if not returned:
            return []
        if decl.return_type is not None:
            return [_param_type(decl.return_type)]
        return [returned[0].type]

    @staticmethod
    def _params(decl: ast.FnDecl, syntax: str) -> list[ast.Param]:
        params = list(decl.params)
        if syntax == "tl":
            if not params or params[0].name != "self":
                _error(
                    "TL0330",
                    f"method `{decl.name}` must take `self` first",
                    decl.name_span,
                    help=f"write `fn {decl.name}(self, ...)`",
                )
            else:
                params = params[1:]
        for param in params:
            _check_declared(param.name, param.span)
            if param.default is not None:
                _error(
                    "TL0133",
                    "method parameters cannot have default values",
                    param.default.span,
                    help="make it a config parameter of the model",
                )
        return params

    # ---------------------------------------------------------------- script

    def _root(self, unit: SourceUnit) -> None:
        items = unit.module.items
        main = self._main_block(items)
        placed = False  # `in self.ops` on every statement was quadratic in the file's length
        for item in items:
            if main is not None and not placed and self._is_statement(item):
                self.ops.append(main.parent)
                placed = True
            self._item(item, unit, main.builder if main is not None else None)

    def _main_block(self, items: Sequence[ast.Stmt]) -> _Main | None:
        """The `train.main` op, if the script has plain statements; placed at the first."""
        first = next((item for item in items if self._is_statement(item)), None)
        if first is None:
            return None
        op = _at(train.MainOp(), first.span)
        return _Main(op, BodyBuilder(op.regions[0].block, {}, self.kernels))

    def _is_statement(self, item: ast.Stmt) -> bool:
        declarations = (
            ast.ImportDecl, ast.ModelDecl, ast.KernelDecl, ast.TrainDecl, ast.FnDecl,
            ast.WeightsDecl, ast.WeightsMapDecl,
        )  # fmt: skip
        return not isinstance(item, declarations) and self._let_kind(item) is None

    def _item(self, item: ast.Stmt, unit: SourceUnit, main: BodyBuilder | None) -> None:
        kind = self._let_kind(item)
        if isinstance(item, ast.ModelDecl):
            self._model(item, unit)
        elif isinstance(item, ast.KernelDecl):
            self._kernel(item)
        elif isinstance(item, ast.FnDecl):
            self.ops.append(self._method(item, "fn", constants=self._constants_read(item)))
        elif isinstance(item, ast.TrainDecl):
            self._train(item, main)
        elif isinstance(item, ast.WeightsDecl):
            self.ops.append(_weights(item, self._map_of(item)))
        elif isinstance(item, ast.LetStmt) and kind is not None:
            self._declaration(item, kind, unit)
        elif isinstance(item, ast.ReturnStmt):
            _error("TL0130", "`return` outside a function", item.span, help="remove it")
        elif main is not None and not isinstance(item, ast.ImportDecl):
            main.statement(item)

    def _let_kind(self, item: ast.Stmt) -> str | None:
        """ "instance" for `let net = Model(...)`, "dataset" for `let d = load_dataset(...)`."""
        if not isinstance(item, ast.LetStmt) or not isinstance(item.value, ast.Call):
            return None
        func = item.value.func
        if not isinstance(func, ast.Name):
            return None
        if func.id == DATASET_LOADER:
            return "dataset"
        aliases = self.program.root.aliases
        known = func.id in aliases or func.id in self._model_names
        return "instance" if known or func.id[:1].isupper() else None

    @functools.cached_property
    def _model_names(self) -> set[str]:
        return {m.name for unit in self.program.units() for m in unit.module.models()}

    def _declaration(self, item: ast.LetStmt, kind: str, unit: SourceUnit) -> None:
        call = item.value
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        op = (
            self._instance(item.name, call, unit)
            if kind == "instance"
            else _dataset(item.name, call)
        )
        self.ops.append(_at(op, call.span))

    def _instance(self, name: str, call: ast.Call, unit: SourceUnit) -> Operation:
        assert isinstance(call.func, ast.Name)
        for arg in call.args:
            _error(
                "TL0140",
                "config overrides must be given by keyword",
                arg.span,
                help=f"write `{call.func.id}(name=value)`",
            )
        values = AttrBuilder("setting", unit.aliases)
        overrides = {k.name: values.build(k.value) for k in call.kwargs}
        model = unit.aliases.get(call.func.id, call.func.id)
        return nml.InstanceOp(name, model, overrides, [loc_of(k.span) for k in call.kwargs])

    # ---------------------------------------------------------------- weights maps

    def _weights_maps(self, unit: SourceUnit) -> None:
        """The `@weights NAME for Model:` maps of an .nml file, each of a model of its own
        file (TL0818) and named once per model (TL0819)."""
        models = [m.name for m in unit.module.models()]
        for decl in unit.module.weights_maps():
            if decl.model not in models:
                guess = did_you_mean(decl.model, models)
                _error(
                    "TL0818",
                    f"`{decl.model}` is not a model of this file",
                    Label(decl.model_span, "a map is declared beside its model"),
                    help=f"did you mean `{guess}`?"
                    if guess
                    else "its models: " + ", ".join(f"`{m}`" for m in models)
                    if models
                    else "declare the map in the .nml file of its model",
                )
                continue
            named = self.maps.setdefault(decl.model, {})
            first = named.get(decl.name)
            if first is not None:
                report(
                    Diagnostic.error(
                        "TL0819",
                        f"`{decl.model}` has two weights maps named `{decl.name}`",
                        Label(decl.name_span, "second map"),
                        secondary=[Label(first.name_span, "first map")],
                        help="rename one",
                    )
                )
                continue
            named[decl.name] = decl

    @functools.cached_property
    def _instance_models(self) -> dict[str, str]:
        """The root's instances and their models: `let net = GPT()` is net -> GPT."""
        found: dict[str, str] = {}
        for item in self.program.root.module.items:
            if self._let_kind(item) == "instance":
                assert isinstance(item, ast.LetStmt) and isinstance(item.value, ast.Call)
                func = item.value.func
                assert isinstance(func, ast.Name)
                found[item.name] = self.program.root.aliases.get(func.id, func.id)
        return found

    def _map_of(self, decl: ast.WeightsDecl) -> ast.WeightsMapDecl | None:
        """The `@weights` map a block applies: the one `using` names, or with no rules of
        its own the model's only map (TL0820, TL0821 otherwise)."""
        model = self._instance_models.get(decl.instance)
        if model is None or (decl.using is None and (decl.rules or decl.configs)):
            return None  # an unknown instance is check-weights' TL0803
        maps = self.maps.get(model, {})
        listed = ", ".join(f"`{m}`" for m in maps)
        if decl.using is not None:
            found = maps.get(decl.using)
            if found is None:
                guess = did_you_mean(decl.using, list(maps))
                span = decl.using_span or decl.span
                _error(
                    "TL0820",
                    f"`{model}` has no weights map `{decl.using}`",
                    Label(span, f"`{decl.instance}` is a `{model}`"),
                    help=f"did you mean `{guess}`?"
                    if guess
                    else f"its maps: {listed}"
                    if maps
                    else f"declare one beside the model: `@weights {decl.using} for {model}:`",
                )
            return found
        if len(maps) == 1:
            return next(iter(maps.values()))
        if maps:
            message = f"`{model}` has {len(maps)} weights maps ({listed}): the block must say which"
            help_text = f"write `using {next(iter(maps))}` after the source"
        else:
            message = f"the block has no rules, and `{model}` has no weights map"
            declared = self.models.get(model)
            help_text = (
                f"write the rules here, or `@weights hf for {model}:` beside the model"
                if declared is None or declared.syntax == "nml"
                else 'write the rules here, after a `:`: `"{l}.{p}" -> "{l}.{p}"`'
            )
        _error("TL0821", message, Label(decl.path_span, "which names map to which?"), help_text)
        return None

    def _kernel(self, decl: ast.KernelDecl) -> None:
        self.ops.append(_kernel_builder()(decl))

    def _train(self, decl: ast.TrainDecl, main: BodyBuilder | None) -> None:
        model_exprs = decl.model.elts if isinstance(decl.model, ast.TupleExpr) else [decl.model]
        models = [_symbol(e, "model") or "?" for e in model_exprs] or ["?"]
        data = _symbol(decl.data, "dataset")
        op = train.LoopOp(models[0], data or "?")
        op.properties["model_loc"] = loc_of(model_exprs[0].span if model_exprs else decl.model.span)
        op.properties["data_loc"] = loc_of(decl.data.span)
        if isinstance(decl.model, ast.TupleExpr):
            op.properties["models"] = ArrayAttr([SymbolRefAttr(m) for m in models])
            op.properties["model_locs"] = ArrayAttr([loc_of(e.span) for e in model_exprs])
        settings = AttrBuilder("setting", self.program.root.aliases)
        for s in decl.settings:
            value = train.SetOp(s.key, settings.build(s.value), loc_of(s.value.span))
            if s.key == "optimizer" and isinstance(s.value, ast.TupleExpr | ast.ListExpr):
                value.properties["element_locs"] = ArrayAttr([loc_of(e.span) for e in s.value.elts])
            op.body.block.add_op(_at(value, s.key_span))
        for group in decl.groups:
            value = train.named(settings.build(group.value))
            group_op = train.GroupOp(group.name, value, loc_of(group.value.span))
            op.body.block.add_op(_at(group_op, group.name_span))
        for step in decl.steps:
            step_op = _step_op(step, settings)
            if _window_fits(step):
                _set_window(step_op, step)
            op.body.block.add_op(step_op)
        for carry in decl.carries:
            init = settings.build(carry.init) if carry.init is not None else None
            carry_op = train.CarryOp(carry.name, init, loc_of(carry.init.span) if carry.init
                                     else None)  # fmt: skip
            op.body.block.add_op(_at(carry_op, carry.name_span))
        if decl.checkpoint is not None:
            clause = decl.checkpoint
            if clause.every < 1:
                message = f"`checkpoint every` must be at least 1, got {clause.every}"
                _error(
                    "TL0403", message, Label(clause.every_span, ""), help="write `every 1` or more"
                )
            else:
                checkpoint = train.CheckpointOp(clause.every, clause.unit)
                op.body.block.add_op(_at(checkpoint, clause.span))
        _at(op, decl.span.to(decl.data.span))
        if main is not None:
            main.block.add_op(op)
        else:
            self.ops.append(op)


def _step_op(step: ast.TrainStep, settings: AttrBuilder) -> train.StepOp:
    """`train.step @f with CALL`, or with an array of calls for several optimizers."""
    calls = [settings.build(o) for o in step.optimizers]
    locs = [loc_of(o.span) for o in step.optimizers]
    several = len(calls) > 1
    step_op = train.StepOp(step.objective, ArrayAttr(calls) if several else calls[0])
    step_op.properties["objective_loc"] = loc_of(step.objective_span)
    step_op.properties["optimizer_loc"] = ArrayAttr(locs) if several else locs[0]
    step_op.location = loc_of(step.span)
    return step_op


def _symbol(expr: ast.Expr, what: str) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    _error(
        "TL0137",
        f"the {what} of a train block must be a name",
        expr.span,
        help="bind it first: `let name = ...`, then `train name on ...`",
    )
    return None


def _weights(decl: ast.WeightsDecl, used: ast.WeightsMapDecl | None) -> Operation:
    """`train.weights`: the block's rules, then those of the map it uses (each rule's and
    config line's location where it is written, in the .nml file for the map's)."""
    written = [*decl.rules, *(used.rules if used else ())]
    lines = [*decl.configs, *(used.configs if used else ())]
    rules = [
        (_one_or_all(r.sources), _one_or_all(r.targets) or None, r.transposed, r.along)
        for r in written
    ]
    configs = [(c.key, c.name) for c in lines]
    op = train.WeightsOp(
        decl.instance, decl.path, rules, [loc_of(r.span) for r in written],
        configs, [loc_of(c.span) for c in lines],
    )  # fmt: skip
    op.properties["instance_loc"] = loc_of(decl.instance_span)
    op.properties["source_loc"] = loc_of(decl.path_span)
    if used is not None:
        op.properties["weights_map"] = StringAttr(used.name)
        op.properties["weights_map_loc"] = loc_of(used.name_span)
    return _at(op, decl.span)


def _one_or_all(names: list[str]) -> str | tuple[str, ...]:
    """A rule's one name as itself, several as a tuple (`[]`, an `ignore`'s targets: "")."""
    return names[0] if len(names) == 1 else tuple(names) if names else ""


def _dataset(name: str, call: ast.Call) -> Operation:
    source: str | None = None
    for index, arg in enumerate(call.args):
        if index == 0 and isinstance(arg, ast.StrLit):
            source = arg.value
            continue
        _error(
            "TL0141",
            "`load_dataset` takes the dataset name as its only positional argument",
            arg.span,
            help='write `load_dataset("name", option=value)`',
        )
    options = AttrBuilder("setting")
    values = {k.name: options.build(k.value) for k in call.kwargs}
    return train.DatasetOp(name, source, values, [loc_of(k.span) for k in call.kwargs])


def _param_type(type_expr: ast.TypeExpr | None) -> Attribute:
    if type_expr is None:
        return nml.TensorType.unranked()
    if type_expr.elements is not None:
        return nml.TupleType.of([_param_type(e) for e in type_expr.elements])
    if type_expr.name == "Tensor":
        dims = None if type_expr.dims is None else [d.value for d in type_expr.dims]
        return nml.TensorType.from_dims(dims)
    scalar = SCALAR_TYPES.get(type_expr.name)
    if scalar is not None:
        return scalar
    known = ", ".join(f"`{n}`" for n in ("Tensor", *SCALAR_TYPES))
    _error("TL0139", f"unknown type `{type_expr.name}`", type_expr.span, help=f"use one of {known}")
    return nml.AnyType()


def _check_declared(name: str, span: Span) -> None:
    """`None`, `True`, `False` are values (in kernels), never names a program declares."""
    if name in CONSTANT_NAMES:
        help_text = f"`{name.lower()}` is the value; choose another name"
        _error(
            "TL0009", f"`{name}` is a Python keyword, so it cannot be a name", span, help=help_text
        )


def _report_duplicate_symbols(block: Block) -> None:
    """TL0309 for a second definition of a name in one symbol table (the IR would not verify)."""
    seen: dict[str, Operation] = {}
    for op in block.ops:
        trait = op.get_trait(SymbolOpInterface)
        symbol = trait.get_sym_attr_name(op) if trait is not None else None
        if symbol is None:
            continue
        first = seen.setdefault(symbol.data, op)
        span, first_span = span_of(op), span_of(first)
        if first is op or span is None:
            continue
        secondary = [Label(first_span, "first defined here")] if first_span is not None else []
        report(
            Diagnostic.error(
                "TL0309",
                f"`{symbol.data}` is defined twice",
                Label(span, "defined again here"),
                secondary=secondary,
                help="rename one of them",
            )
        )


def _duplicate_model(decl: ast.ModelDecl, first: ast.ModelDecl) -> None:
    report(
        Diagnostic.error(
            "TL0615",
            f"model `{decl.name}` is defined twice",
            Label(decl.name_span, "second definition"),
            secondary=[Label(first.name_span, "first defined here")],
            help="rename one of them, or import the file with `as` and a new name",
        )
    )


def _dims_of(
    params: Sequence[ast.Param], block: Block, scope: dict[str, SSAValue], members: set[str]
) -> dict[str, tuple[SSAValue, int, Span]]:
    """Dims as values: in `forward(idx: Tensor[B, T])`, `B` and `T` are integers, each
    the size of the first argument that names it (unless a parameter or member has the
    name)."""
    dims: dict[str, tuple[SSAValue, int, Span]] = {}
    for param, arg in zip(params, block.args, strict=True):
        annotated = (
            param.type.dims if param.type is not None and param.type.name == "Tensor" else None
        )
        for index, dim in enumerate(annotated or []):
            name = dim.value
            if isinstance(name, str) and name not in scope and name not in members:
                dims.setdefault(name, (arg, index, dim.span))
    return dims


RANDOM_FUNCTIONS = frozenset({"randn", "rand", "randint", "randn_like", "rand_like",
                              "bernoulli", "multinomial", "dropout"})  # fmt: skip


def _check_constant(let: ast.LetStmt) -> None:
    """A top-level `let` a function reads is computed again at each call: a random one would
    differ every time, so it is an error rather than a surprise."""
    for name in sorted(RANDOM_FUNCTIONS):
        if _calls(let.value, name):
            _error(
                "TL0436",
                f"`{let.name}` is random (`{name}`), but a function reads it: a top-level "
                "`let` a function reads is computed in it at each call",
                let.value.span,
                help=f"draw it inside the function, or compute `{let.name}` without `{name}`",
            )
            return


def _calls(expr: ast.Node, name: str) -> bool:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == name:
        return True
    for value in vars_of(expr):
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, ast.Node) and _calls(item, name) for item in items):
            return True
    return False


def _check_config_order(entries: Sequence[ast.ConfigEntry]) -> None:
    """TL0423 for a config entry that uses itself or a later entry (`head_dim = dim /
    n_heads` above `n_heads = 8`): entries are evaluated in order, as the emitted
    `__init__` computes them, so a cycle cannot be written."""
    position = {entry.name: i for i, entry in enumerate(entries)}
    for i, entry in enumerate(entries):
        for name in _config_names(entry.value):
            where = position.get(name.id)
            if where is None or where < i:
                continue
            if where == i:
                message = f"config `{entry.name}` uses itself"
                report(Diagnostic.error("TL0423", message, Label(name.span, "itself")))
                continue
            later = entries[where]
            message = f"config `{entry.name}` uses `{name.id}`, which is declared after it"
            secondary = [Label(later.name_span, f"`{name.id}` is declared here")]
            report(
                Diagnostic.error(
                    "TL0423",
                    message,
                    Label(name.span, "a later entry"),
                    secondary=secondary,
                    help=f"move `{name.id} = ...` above `{entry.name}`",
                )
            )


def _config_names(expr: ast.Node) -> list[ast.Name]:
    """The names a config expression reads (not the functions it calls)."""
    if isinstance(expr, ast.Name):
        return [expr]
    if isinstance(expr, ast.Call):
        return [n for a in expr.args for n in _config_names(a)]
    return [n for child in expr.children() for n in _config_names(child)]


def _mentions(expr: ast.Node, name: str) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id == name
    for value in vars_of(expr):
        if isinstance(value, ast.Node) and _mentions(value, name):
            return True
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.Node) and _mentions(item, name):
                    return True
    return False


def vars_of(node: ast.Node) -> list[object]:
    return [getattr(node, f.name) for f in fields(node)]


__all__ = ["generate"]


def _window_fits(step: ast.TrainStep) -> bool:
    """`from epoch A until epoch B` counts epochs from 1 and needs A <= B; TL0459 otherwise."""
    first, last = step.first_epoch, step.last_epoch
    if step.window_span is None:
        return False
    if (first is not None and first < 1) or (last is not None and last < 1):
        message = "epochs are counted from 1 in a step's `from epoch`/`until epoch`"
        _error("TL0459", message, Label(step.window_span, ""), help="write `from epoch 1` or later")
        return False
    if first is not None and last is not None and first > last:
        message = f"step `{step.objective}` runs from epoch {first} until epoch {last}: no epoch"
        help_text = f"write `until epoch {first}` or later"
        _error("TL0459", message, Label(step.window_span, ""), help=help_text)
        return False
    return True


def _set_window(op: train.StepOp, step: ast.TrainStep) -> None:
    if step.first_epoch is not None:
        op.properties["first_epoch"] = IntegerAttr(step.first_epoch, i64)
    if step.last_epoch is not None:
        op.properties["last_epoch"] = IntegerAttr(step.last_epoch, i64)
    assert step.window_span is not None
    op.properties["window_loc"] = loc_of(step.window_span)
