"""`resolve-nml`: names in models resolved, constructor arguments checked.

Calls by name become what they name, in this order of precedence:

    %y = nml.call "norm1"(%x)        ->  nml.apply @norm1(%x)     a layer (`self.norm1` too)
    %y = nml.call "softmax"(%x, %d)  ->  nml.softmax %x dim -1    a builtin, constants folded
    %y = nml.call "vector_add"(...)  ->  nml.kernel_call @vector_add(...)

A layer shadows a builtin of the same name (a layer `dropout` is the layer). A
call this pass cannot resolve stays an `nml.call`; `check-scopes` reports it.

Declarations are checked too, each error at the argument or keyword at fault:
config references in layer arguments (TL0306), layer constructor names against
the catalogue and the module's models (TL0302, with did-you-mean), constructor
arguments bound and validated as PyTorch would (TL0422) under the model's config
defaults and again under each instance's overrides, and `nml.instance`
overrides against the model's config (TL0420, TL0421).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tensorloom.catalogue.args import fits_int64, past_int64
from tensorloom.catalogue.layers import ArgError, LayerSpec, Value, lookup, suggest
from tensorloom.catalogue.layers.base import too_many_params
from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects import train
from tensorloom.dialects.nml import (
    ApplyOp,
    AttentionOp,
    CallOp,
    ConfigOp,
    ConstantOp,
    DimOp,
    DropoutOp,
    GetAttrOp,
    InstanceOp,
    KernelCallOp,
    LayerOp,
    ListOp,
    ModelOp,
    NegOp,
    PipeOp,
    ReshapeOp,
    TOp,
    ViewOp,
)
from tensorloom.dialects.nml.types import CfgAttr, TensorType
from tensorloom.passes.support.model_env import (
    ArgFailure,
    CallValue,
    EvalError,
    configs_of,
    element_env,
    element_envs,
    enclosing_model,
    evaluate_config,
    evaluate_kwargs,
    floor_exact_divisions,
    layer_arguments,
    layer_label,
    layers_of,
    mentions_config,
    model_env,
    models_of,
    name_help,
    nested_overrides,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.resolve_builtins import CallProblem, build_builtin, is_dtype_name
from tensorloom.passes.support.script_builtins import PYTHON_BUILTINS
from tensorloom.source import Span

SCRIPT_SAMPLERS = frozenset({"randn", "rand"})
"""Builtins a script's statements call as its own torch constructors (they take `device=`)."""

# --- resolving calls ------------------------------------------------------------------------


def layer_name(callee: str, layers: Iterable[str]) -> str | None:
    """The layer a callee names: `norm1` and `self.norm1` both name `norm1`."""
    name = callee.removeprefix("self.")
    return name if name in layers else None


@dataclass
class ResolveCall(RewritePattern):
    """One `nml.call` -> `nml.apply`, a builtin op or `nml.kernel_call`."""

    kernels: frozenset[str]
    layers: dict[ModelOp, dict[str, LayerOp]]  # each model's layers, found once

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CallOp, rewriter: PatternRewriter) -> None:
        new = self._resolve(op)
        if new is None:
            return
        if isinstance(new, CallProblem):
            _report_call(op, new)
            return
        new.location = op.location
        rewriter.replace(op, new)

    def _resolve(self, op: CallOp) -> Operation | CallProblem | None:
        model = enclosing_model(op)
        callee = op.callee.data
        if model is not None and op.method is None:
            layer = layer_name(callee, self.layers[model])
            if layer is not None:
                names = [n.data for n in op.arg_names.data]
                keyword = next((n for n in names if n), None)
                declared = self.layers[model][layer]
                spec = lookup(declared.kind.data)
                if keyword is not None and spec is not None:
                    # Reported once here; applied to its tensors, so nothing else follows.
                    _report_call(op, _layer_keyword(layer, spec, keyword))
                    tensors = [v for v, n in zip(op.args, names, strict=True) if not n]
                    return ApplyOp(layer, tensors, TensorType.unranked())
                return ApplyOp(layer, list(op.args), TensorType.unranked(), names)
        if callee in self.kernels and op.method is None:
            names = [n.data for n in op.arg_names.data]
            return KernelCallOp(callee, list(op.args), names, [TensorType.unranked()])
        if callee.startswith("self."):
            return None
        if callee in PYTHON_BUILTINS and isinstance(op.parent_op(), train.MainOp):
            return None  # `sum(...)` in a script's statements is Python's (script_builtins.py)
        if callee in SCRIPT_SAMPLERS and isinstance(op.parent_op(), train.MainOp):
            return None  # `randn(8, device=DEVICE)`: the script's constructor (script_builtins.py)
        return build_builtin(op)


def _layer_keyword(layer: str, spec: LayerSpec, keyword: str) -> CallProblem:
    """`attn(x, is_causal=true)`: a catalogue layer is applied to tensors only; its
    options belong to its constructor."""
    names = [p.name for p in spec.params]
    option = keyword if keyword in names else did_you_mean(keyword, names)
    if option is None:
        fix = f"the options of `{spec.name}` go in its constructor: `{spec.signature()}`"
    else:
        fix = f"set it where `{layer}` is declared: `{spec.name}(..., {option}=...)`"
    return CallProblem(
        f"`{layer}` takes no keyword argument `{keyword}`: a `{spec.name}` is applied to "
        "tensors only",
        fix,
    )


class ContiguousIsIdentity(RewritePattern):
    """`x.contiguous()` is `x` statically; a `view` of it becomes a `reshape`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CallOp, rewriter: PatternRewriter) -> None:
        if op.method is None or op.callee.data != "contiguous" or len(op.args) != 1:
            return
        receiver = op.args[0]
        for use in list(op.result.uses):
            if isinstance(use.operation, ViewOp):
                _view_to_reshape(use.operation, rewriter)
        rewriter.replace(op, [], [receiver])


class TransposeAttr(RewritePattern):
    """`x.T` is `nml.t %x`, a matrix transposed (as `x.t()`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GetAttrOp, rewriter: PatternRewriter) -> None:
        if op.attr_name.data != "T":
            return
        new = TOp(op.input, {}, TensorType.unranked())
        new.location = op.location
        rewriter.replace(op, new)


def _view_to_reshape(view: ViewOp, rewriter: PatternRewriter) -> None:
    reshape = ReshapeOp(view.input, view.shape.data, list(view.dynamic_sizes), view.result.type)
    reshape.location = view.location
    rewriter.replace(view, reshape)


def _report_call(op: CallOp, problem: CallProblem) -> None:
    span = span_at(op)
    report(Diagnostic.error("TL0308", problem.message, span, help=problem.help))


def _erase_dead_constants(module: ModuleOp) -> None:
    """Constants and lists a builtin folded into its properties (`cat([a, b])`'s list,
    `sum(dim=[1, 2])`'s dims, a cast's `torch.int64`), and the dims of an annotation the
    body never reads; users first so that a list's elements die with it."""
    pure = [
        op
        for op in module.walk(reverse=True)
        if isinstance(op, ConstantOp | ListOp | NegOp | DimOp) or is_dtype_name(op)
    ]
    for op in pure:
        if op.results[0].uses:
            continue
        op.detach()
        op.erase()


# --- checking declarations -------------------------------------------------------------------


def _loc_span(locs: ArrayAttr | None, index: int, fallback: Operation) -> Span:
    if locs is not None and index < len(locs.data):
        span = span_of(locs.data[index])
        if span is not None:
            return span
    return span_at(fallback)


def arg_span(layer: LayerOp, position: int | None, keyword: str | None) -> Span:
    """Where a layer's positional argument or keyword was written."""
    if position is not None:
        return _loc_span(layer.arg_locs, position, layer)
    if keyword is not None and keyword in layer.kwargs.data:
        return _loc_span(layer.kwarg_locs, list(layer.kwargs.data).index(keyword), layer)
    return span_at(layer)


def override_span(instance: InstanceOp, key: str) -> Span:
    keys = list(instance.overrides.data)
    if key not in keys:
        return span_at(instance)
    return _loc_span(instance.override_locs, keys.index(key), instance)


@dataclass
class _Context:
    """Where layer errors found under an instance's overrides are reported.

    `via` is the layer of a model that passes arguments to a nested model
    (`block = EncoderBlock(64, 3)`): the nested model's layers are checked again
    with those values, and an error is reported at `via`, where the values are.
    """

    instance: InstanceOp | None = None
    overrides: Mapping[str, Value] = field(default_factory=dict[str, Value])
    via: LayerOp | None = None
    depth: int = 0

    @property
    def nested(self) -> bool:
        """Checking again under another's values: what is wrong with defaults was said."""
        return self.instance is not None or self.via is not None


MAX_CHECK_DEPTH = 32  # nested models checked under their parents' arguments, this deep


@dataclass
class DeclarationChecker:
    """Checks configs, layers and instances, reporting each problem once."""

    models: dict[str, ModelOp]
    seen: set[tuple[Span, str]] = field(default_factory=set[tuple[Span, str]])

    def emit(self, diagnostic: Diagnostic) -> None:
        key = (diagnostic.primary.span, diagnostic.message)
        if key in self.seen:
            return
        self.seen.add(key)
        report(diagnostic)

    def check_model(self, model: ModelOp) -> None:
        self._catalogue_name(model)
        self._check_configs(model)
        env = model_env(model)
        for layer in layers_of(model).values():
            self.check_layer(model, layer, env, _Context())

    def _catalogue_name(self, model: ModelOp) -> None:
        """A model named like a catalogue layer: `up = Upsample(8)` would be checked as the
        catalogue's layer and compiled as the model (real-models/silent_catalogue_shadowing)."""
        name = model.sym_name.data
        spec = lookup(name)
        span = span_of(model)
        if spec is None or span is None:
            return
        message = f"model `{name}` has the name of the catalogue layer `{spec.name}`"
        fix = f"rename the model (`{name}Block`): a layer `{name}(...)` means the catalogue's"
        self.emit(Diagnostic.error("TL0309", message, Label(span), help=fix))

    def _check_configs(self, model: ModelOp) -> None:
        for config, error in config_errors(model, {}):
            self._config_error(model, config, error)

    def _config_error(self, model: ModelOp, config: Operation, error: EvalError) -> None:
        span = span_at(config)
        self.emit(_unknown_config(model, error, span, "config"))

    def check_config_rates(self, module: ModuleOp) -> None:
        """After the calls are resolved: each instance's and nested layer's overrides
        against the dropout rates that are configs."""
        for instance in [o for o in module.walk() if isinstance(o, InstanceOp)]:
            model = self.models.get(instance.model.root_reference.data)
            overrides = evaluate_kwargs(instance.overrides.data, {})
            if model is None or not isinstance(overrides, dict) or not overrides:
                continue
            given = ", ".join(f"`{k}={v!r}`" for k, v in overrides.items())
            primary = override_span(instance, next(iter(overrides)))
            self._config_rates(model, model_env(model, overrides), primary, given)
        for model in self.models.values():
            env = model_env(model)
            for layer in layers_of(model).values():
                nested = self.models.get(layer.kind.data)
                overrides = nested_overrides(layer, nested, env) if nested else None
                if nested is None or not isinstance(overrides, dict) or not overrides:
                    continue
                given = ", ".join(f"`{k}={v!r}`" for k, v in overrides.items())
                inner = model_env(nested, overrides)
                self._config_rates(nested, inner, span_of(layer), given)

    def _config_rates(
        self, model: ModelOp, env: Mapping[str, Value], primary: Span | None, given: str
    ) -> None:
        """TL0308 at the override that makes a config dropout rate (`dropout(x, p)`)
        fall outside [0, 1); the call as a secondary label."""
        if primary is None:
            return
        for op, name in _config_rate_ops(model):
            rate = env.get(name)
            if isinstance(rate, int | float) and not isinstance(rate, bool) and 0 <= rate < 1:
                continue
            message = f"with {given}, the dropout rate `{name}` is {rate!r}, not in [0, 1)"
            secondary = [
                Label(span, f"`{name}` is the rate here") for span in [span_of(op)] if span
            ]
            self.emit(Diagnostic.error("TL0308", message, Label(primary), secondary=secondary))

    def _derived_config_errors(
        self, model: ModelOp, overrides: Mapping[str, Value], primary: Span | None, given: str
    ) -> None:
        """A config computed from others (`head_dim = dim / n_heads`) has no value under
        the overrides `given` at `primary` (`Llama(dim=100)`): TL0423 there."""
        if primary is None:
            return
        for config, error in config_errors(model, overrides):
            span = span_of(config)
            name = config.sym_name.data  # type: ignore[attr-defined]
            message = f"with {given}, config `{name}` of `{model.sym_name.data}` has no value: "
            secondary = [Label(span, f"`{name}` is computed here")] if span else []
            self.emit(
                Diagnostic.error(
                    "TL0423",
                    message + error.message,
                    Label(primary),
                    secondary=secondary,
                    help=error.hint,
                )
            )

    def check_layer(
        self, model: ModelOp, layer: LayerOp, env: Mapping[str, Value], where: _Context
    ) -> None:
        if layer.when is not None and not self._built(model, layer, env):
            return
        if layer.var is not None and layer.var.data not in env:  # each position's arguments
            self._check_count(model, layer, env)
            for position in element_envs(layer, env):
                self.check_layer(model, layer, position, where)
            return
        kind = layer.kind.data
        spec = lookup(kind)
        if spec is not None:
            self._check_catalogue_layer(model, layer, spec, env, where)
        elif kind in self.models:
            self._check_nested(model, layer, env, where)
        elif not where.nested:
            self._unknown_kind(layer)

    def _built(self, model: ModelOp, layer: LayerOp, env: Mapping[str, Value]) -> bool:
        """Whether a conditional layer is built under `env`; its condition must be a
        boolean (TL0306 at the layer otherwise, and the layer is not checked)."""
        assert layer.when is not None
        value = evaluate_config(layer.when, env)
        span = span_of(layer)
        if isinstance(value, bool):
            return value
        if span is not None:
            error = (
                value
                if isinstance(value, EvalError)
                else EvalError(
                    f"the condition of a layer must be `true` or `false`, got `{value!r}`"
                )
            )
            self.emit(_unknown_config(model, error, span, "layer"))
        return False

    def _check_count(self, model: ModelOp, layer: LayerOp, env: Mapping[str, Value]) -> None:
        """TL0144 for a per-position list whose items are not a list (`for w in d`);
        TL0306 for items that name no config."""
        assert layer.count is not None
        count = evaluate_config(layer.count, env)
        span = span_of(layer)
        if not isinstance(count, EvalError) or span is None:
            return
        if count.config is not None:
            self.emit(_unknown_config(model, count, span, "layer"))
            return
        self.emit(Diagnostic.error("TL0144", count.message, Label(span)))

    def _unknown_kind(self, layer: LayerOp) -> None:
        kind = layer.kind.data
        span = span_at(layer)
        guess = suggest(kind) or did_you_mean(kind, self.models)
        help_text = f"did you mean `{guess}`?" if guess else "docs/reference.md lists the layers"
        message = f"unknown layer type `{kind}`"
        self.emit(Diagnostic.error("TL0302", message, Label(span), help=help_text))

    def _check_catalogue_layer(
        self,
        model: ModelOp,
        layer: LayerOp,
        spec: LayerSpec,
        env: Mapping[str, Value],
        where: _Context,
    ) -> None:
        values = layer_arguments(layer, env)
        if isinstance(values, ArgFailure):
            self._arg_failure(model, layer, values, where)
            return
        self._conditional_init(layer, spec)
        bound = spec.bind(*values)
        errors = bound if isinstance(bound, list) else spec.validate(bound)
        if not errors and not isinstance(bound, list):
            errors = [e for e in (too_many_params(spec, bound),) if e is not None]
        for error in errors:
            self._arg_error(layer, error, where)
        if not where.nested:
            self._literal_params(layer, spec)

    def _literal_params(self, layer: LayerOp, spec: LayerSpec) -> None:
        """`MultiHeadAttention(d, h, causal=causal)`: `causal` picks the PyTorch class
        (fuzz-findings/real-models/miscompile_mha_causal_config.nml)."""
        for name in spec.literal_params:
            given = layer.kwargs.data.get(name)
            span = arg_span(layer, None, name)
            if given is None or not mentions_config(given):
                continue
            message = (
                f"`{layer.sym_name.data}`: `{name}` of `{spec.name}` must be written as a "
                "literal, not a config: it picks the PyTorch module the layer becomes"
            )
            fix = f"write `{name}=true` or `{name}=false`"
            self.emit(Diagnostic.error("TL0422", message, Label(span), help=fix))

    def _conditional_init(self, layer: LayerOp, spec: LayerSpec) -> None:
        """TL0422: a conditional layer's module may be `None`, so the script cannot
        initialise it after building every layer (`init=` on it)."""
        inits = [k for k in layer.kwargs.data if k in spec.init_keywords()]
        span = arg_span(layer, None, inits[0]) if inits and layer.when is not None else None
        if span is None:
            return
        name = layer.sym_name.data
        message = f"`{name}` is built under a condition, so it cannot take `{inits[0]}`"
        help_text = "initialise it in a model of its own, or build it unconditionally"
        self.emit(Diagnostic.error("TL0422", message, Label(span), help=help_text))

    def _arg_failure(
        self, model: ModelOp, layer: LayerOp, failure: ArgFailure, where: _Context
    ) -> None:
        span = arg_span(layer, failure.position, failure.keyword)
        if where.nested:
            return
        self.emit(_unknown_config(model, failure.error, span, "layer"))

    def _arg_error(self, layer: LayerOp, error: ArgError, where: _Context) -> None:
        span = arg_span(layer, error.position, error.keyword)
        subject = f"`{layer.sym_name.data}`: {error.message}"
        if where.instance is None and where.via is None:
            self.emit(Diagnostic.error("TL0422", subject, Label(span), help=error.help))
            return
        if where.instance is None and where.via is not None:
            self._nested_arg_error(layer, error, span, where.via)
            return
        self._instance_arg_error(layer, error, span, where)

    def _nested_arg_error(self, layer: LayerOp, error: ArgError, span: Span, via: LayerOp) -> None:
        primary = span_of(via) or span
        message = f"`{layer_label(via)}.{layer.sym_name.data}`: {error.message}"
        declared = Label(span, f"with the arguments of `{layer_label(via)}`, this is invalid")
        self.emit(
            Diagnostic.error(
                "TL0422", message, Label(primary), secondary=[declared], help=error.help
            )
        )

    def _instance_arg_error(
        self, layer: LayerOp, error: ArgError, span: Span, where: _Context
    ) -> None:
        assert where.instance is not None
        key = next(iter(where.overrides), "")
        primary = override_span(where.instance, key) or span
        values = ", ".join(f"{k}={v!r}" for k, v in where.overrides.items())
        message = f"`{layer.sym_name.data}`: {error.message}"
        declared = Label(span, f"with `{values}`, this argument is invalid")
        self.emit(
            Diagnostic.error(
                "TL0422", message, Label(primary), secondary=[declared], help=error.help
            )
        )

    def _check_nested(
        self, model: ModelOp, layer: LayerOp, env: Mapping[str, Value], where: _Context
    ) -> None:
        nested = self.models[layer.kind.data]
        if nested is model or nested.sym_name == model.sequential:
            self._self_nesting(layer)  # `Sequential(Net(d))` in `Net` too
            return
        overrides = nested_overrides(layer, nested, env)
        if isinstance(overrides, ArgFailure):
            if nested.sequential is None:  # a `Sequential`'s: its element reports it
                self._arg_failure(model, layer, overrides, where)
            return
        for key in overrides:
            if key not in configs_of(nested):
                self._unknown_override(nested, key, arg_span(layer, None, key))
        if overrides and not where.nested:
            given = ", ".join(f"`{k}={v!r}`" for k, v in overrides.items())
            self._derived_config_errors(nested, overrides, span_of(layer), given)
        if overrides and where.depth < MAX_CHECK_DEPTH:
            # pytorch_false_negatives/mut-66016: `n_heads=0` reached MultiHeadAttention
            # through a nested model's arguments, which were never checked.
            via = where.via or layer
            if nested.sequential is not None and where.via is None:
                via = None  # a `Sequential`'s element: reported at the element itself
            inner = _Context(where.instance, where.overrides, via, where.depth + 1)
            nested_env = model_env(nested, overrides)
            for sub in layers_of(nested).values():
                self.check_layer(nested, sub, nested_env, inner)

    def _self_nesting(self, layer: LayerOp) -> None:
        span = span_at(layer)
        message = f"model `{layer.kind.data}` cannot contain itself"
        self.emit(Diagnostic.error("TL0307", message, Label(span)))

    def _unknown_override(self, model: ModelOp, key: str, span: Span) -> None:
        names = list(configs_of(model))
        guess = did_you_mean(key, names)
        listed = ", ".join(f"`{n}`" for n in names)
        if guess:
            help_text = f"did you mean `{guess}`?"
        elif listed:
            help_text = f"its config entries are {listed}"
        else:
            model_name = model.sym_name.data
            help_text = f"`{model_name}` has no config: instantiate it as `{model_name}()`"
        message = f"`{model.sym_name.data}` has no config entry `{key}`"
        self.emit(Diagnostic.error("TL0420", message, Label(span), help=help_text))

    # --- instances ---------------------------------------------------------------------

    def check_instance(self, instance: InstanceOp) -> None:
        name = instance.model.root_reference.data
        model = self.models.get(name)
        if model is None:
            self._unknown_model(instance, name)
            return
        overrides = self._instance_overrides(instance, model)
        if not overrides:
            return
        given = ", ".join(f"`{k}={v!r}`" for k, v in overrides.items())
        primary = override_span(instance, next(iter(overrides)))
        self._derived_config_errors(model, overrides, primary, given)
        env = model_env(model, overrides)
        where = _Context(instance, overrides)
        for layer in layers_of(model).values():
            self.check_layer(model, layer, env, where)

    def _unknown_model(self, instance: InstanceOp, name: str) -> None:
        span = span_at(instance)
        guess = did_you_mean(name, self.models)
        help_text = f"did you mean `{guess}`?" if guess else None
        self.emit(
            Diagnostic.error("TL0302", f"unknown model `{name}`", Label(span), help=help_text)
        )

    def _instance_overrides(self, instance: InstanceOp, model: ModelOp) -> dict[str, Value]:
        configs = configs_of(model)
        defaults = model_env(model)
        overrides: dict[str, Value] = {}
        for key, attr in instance.overrides.data.items():
            span = override_span(instance, key)
            if key not in configs:
                self._unknown_override(model, key, span)
                continue
            value = evaluate_config(attr, {})
            if isinstance(value, EvalError):
                why = f"has no value: {value.message}"
                self._bad_override(model, key, why, span, name_help(value))
                continue
            if isinstance(value, CallValue):
                continue
            if isinstance(value, int) and not fits_int64(value):
                self._bad_override(model, key, past_int64(value), span)
                continue
            if self._override_type_ok(model, key, value, defaults.get(key), span):
                overrides[key] = value
        return overrides

    def _bad_override(
        self, model: ModelOp, key: str, why: str, span: Span, help_text: str | None = None
    ) -> None:
        """TL0421: `config `key` of `Model` {why}`."""
        message = f"config `{key}` of `{model.sym_name.data}` {why}"
        self.emit(Diagnostic.error("TL0421", message, Label(span), help=help_text))

    def _override_type_ok(
        self, model: ModelOp, key: str, value: object, default: object, span: Span
    ) -> bool:
        expected = _kind_of(default)
        if expected is None or _kind_of(value) in _COMPATIBLE[expected]:
            return True
        why = f"is {_KIND_WORDS[expected]}, got `{value!r}`"
        self._bad_override(model, key, why, span, f"the default is `{default!r}`")
        return False


_KIND_WORDS = {
    "bool": "a boolean",
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "list": "a list",
}
_COMPATIBLE = {
    "bool": {"bool"},
    "int": {"int"},
    "float": {"float", "int"},
    "str": {"str"},
    "list": {"list"},
}


def _kind_of(value: object) -> str | None:
    if isinstance(value, bool):
        return "bool"
    for kind, cls in (("int", int), ("float", float), ("str", str), ("list", list)):
        if isinstance(value, cls):
            return kind
    return None


def _config_rate_ops(model: ModelOp) -> list[tuple[Operation, str]]:
    """The dropout and attention calls whose rate is a config, with the config's name."""
    found: list[tuple[Operation, str]] = []
    for op in model.walk():
        rate = op.properties.get("rate" if isinstance(op, DropoutOp) else "dropout_rate")
        if isinstance(op, DropoutOp | AttentionOp) and isinstance(rate, CfgAttr):
            found.append((op, rate.param.data))
    return found


def _floor_exact_divisions(model: ModelOp) -> None:
    """Each `/` of integer sizes in the model's configs and layer arguments as `//`
    (model_env.floor_exact_divisions), so the emitted `__init__` computes an `int`."""
    defaults = model_env(model)
    for config in configs_of(model).values():
        config.properties["value"] = floor_exact_divisions(config.value, defaults)
    for layer in layers_of(model).values():
        env = element_env(layer, defaults, 0)  # a per-position list: its loop variable's type
        layer.properties["args"] = floor_exact_divisions(layer.args, env)
        kwargs = {k: floor_exact_divisions(v, env) for k, v in layer.kwargs.data.items()}
        layer.properties["kwargs"] = DictionaryAttr(kwargs)
        if layer.count is not None:
            layer.properties["count"] = floor_exact_divisions(layer.count, defaults)


def config_errors(
    model: ModelOp, overrides: Mapping[str, Value]
) -> list[tuple[ConfigOp, EvalError]]:
    """Each config default that has no value under `overrides`, in order (those given
    are not evaluated): an unknown name, a division that is not exact, ..."""
    env: dict[str, Value] = {}
    errors: list[tuple[ConfigOp, EvalError]] = []
    for name, config in configs_of(model).items():
        if name in overrides:
            env[name] = overrides[name]
            continue
        value = evaluate_config(config.value, env)
        if isinstance(value, EvalError):
            errors.append((config, value))
        elif not isinstance(value, CallValue):
            env[name] = value
    return errors


def _unknown_config(model: ModelOp, error: EvalError, span: Span, what: str) -> Diagnostic:
    if error.too_large:
        return Diagnostic.error("TL0403", f"this value is {error.message}", Label(span))
    if error.hint is not None:  # a division that is not exact
        message = f"division of sizes must be exact: {error.message}"
        return Diagnostic.error("TL0423", message, Label(span), help=error.hint)
    if error.config is None:
        return Diagnostic.error("TL0306", error.message, Label(span), help=error.hint)
    names = list(configs_of(model))
    guess = did_you_mean(error.config, names)
    if guess:
        help_text = f"did you mean `{guess}`?"
    else:
        help_text = f"add `{error.config} = ...` to the `@config` of `{model.sym_name.data}`"
    message = f"unknown config `{error.config}` in a {what} argument"
    if what == "config":
        message = f"unknown config `{error.config}` in a config default"
    return Diagnostic.error("TL0306", message, Label(span), help=help_text)


# --- the pass ---------------------------------------------------------------------------------


def kernel_names(module: ModuleOp) -> frozenset[str]:
    """The names of the program's kernels (`kernel.func` ops).

    Matched by op name rather than class, so that checking a program without
    kernels does not import the kernel dialect.
    """
    names = (op.properties["sym_name"] for op in module.walk() if op.name == "kernel.func")
    return frozenset(name.data for name in names if isinstance(name, StringAttr))


def _resolvable(
    call: CallOp, kernels: frozenset[str], layers: Mapping[ModelOp, Mapping[str, LayerOp]]
) -> bool:
    """Whether `call` names what this pass resolves: a layer, a kernel or a builtin."""
    callee = call.callee.data
    model = enclosing_model(call)
    if model is not None and call.method is None and layer_name(callee, layers[model]):
        return True
    if call.method is None and callee in kernels:
        return True
    in_script = isinstance(call.parent_op(), train.MainOp)
    if callee.startswith("self.") or (
        in_script and (callee in PYTHON_BUILTINS or callee in SCRIPT_SAMPLERS)
    ):
        return False  # the script's own (`sum`, `randn(8, device=DEVICE)`): left as calls
    return build_builtin(call) is not None


@dataclass(frozen=True)
class ResolveNmlPass(TLPass):
    name = "resolve-nml"
    requires = ("desugar-pipes",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A call still names a layer, a kernel or a builtin (one this pass would resolve),
        or a pipe is left (desugar-pipes makes its stages such calls)."""
        if any(isinstance(op, PipeOp) for op in module.walk()):
            return True
        kernels = kernel_names(module)
        layers = {m: layers_of(m) for m in models_of(module).values()}
        calls = (op for op in module.walk() if isinstance(op, CallOp))
        return any(_resolvable(call, kernels, layers) for call in calls)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        checker = DeclarationChecker(models_of(op))
        for model in checker.models.values():
            checker.check_model(model)
        for instance in [o for o in op.walk() if isinstance(o, InstanceOp)]:
            checker.check_instance(instance)
        for model in checker.models.values():
            _floor_exact_divisions(model)
        layers = {m: layers_of(m) for m in checker.models.values()}
        resolve = ResolveCall(kernel_names(op), layers)
        walker = PatternRewriteWalker(resolve, apply_recursively=False)
        walker.rewrite_module(op)
        checker.check_config_rates(op)
        PatternRewriteWalker(ContiguousIsIdentity(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(TransposeAttr(), apply_recursively=False).rewrite_module(op)
        _erase_dead_constants(op)
