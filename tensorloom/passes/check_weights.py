"""`check-weights`: a `weights` block against its file's header, config.json and the model's
tensors; a train block's `freeze` and `lora` against the model's layers.

    weights model from "gpt2":                                       TL0801 absent (warning)
        config "n_positions" -> block_size                            TL0814 sizes differ
        "transformer.{a}.{p}" -> "{a}.{p}"                            TL0806 shape differs
        "transformer.h.{i}.attn.c_attn.weight" -> ["h.{i}.q.weight", "h.{i}.k.weight",
            "h.{i}.v.weight"] along 0 transposed                      TL0812 pieces differ

1. Find the instance the block names (TL0803) and its model's state dict: every parameter
   and buffer with its shape under the instance's config (support/state_dict.py).
2. Read the source's header (catalogue/weight_files.py: a safetensors file, a Hugging Face
   folder, sharded or not, or a torch state dict), no tensor data: an absent source is a
   warning (the weights may live on the training machine), an unreadable one an error.
3. Compare config.json with the instance's config: each `config "KEY" -> name` line, and
   every integer config named as a config.json entry (TL0814; TL0815 for a line naming an
   entry neither side has).
4. Apply the rules, in order, to every file name (the first that matches decides; a join's
   patterns group the names whose parts agree), as the emitted script's `load_pretrained`
   does, and report at the rule's line: a target the model lacks or that two tensors fill
   (TL0807), a shape that differs (TL0806, both names and both shapes), a join or split
   whose pieces do not fit (TL0812), a join whose partner the file lacks (TL0813), a dtype
   the load casts (TL0808, a warning); at the block's header: file tensors no rule covers
   (TL0805) and model tensors nothing fills (TL0804). A rule that cannot be applied (a
   `{x}` that is not a name or is repeated, joined patterns naming different parts, a
   target naming a part the pattern lacks, `along` on a one-to-one rule) is TL0809, and the
   block is not compared.
5. A train block's `freeze = [wte, h[0:6]]` names layers (or parameters) of its model, a
   slice within the list's length (TL0810); `lora = LoRA(targets=[c_attn])` names Linear
   layers, by their name or the end of their path (TL0811).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from tensorloom.catalogue.shapes import format_shape
from tensorloom.catalogue.weight_files import (
    TensorHeader,
    WeightFileError,
    WeightHeader,
    read_weight_header,
)
from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects.nml import InstanceOp
from tensorloom.dialects.nml.types import CallAttr
from tensorloom.dialects.train import LoopOp, SetOp, WeightsOp
from tensorloom.passes.support.model_env import (
    lookup_symbol,
    model_env,
    models_of,
    override_value,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.state_dict import ModelTree, UnknownState, model_tree
from tensorloom.passes.support.weight_rules import (
    Mapping,
    Matched,
    Rule,
    match_names,
    rule_problem,
)
from tensorloom.source import Span

_MODEL_DTYPE = "F32"  # the emitted model's parameters: fp32, whatever the autocast
_INTEGER_DTYPE = "I64"  # its integer buffers (BatchNorm's `num_batches_tracked`)


@dataclass(frozen=True)
class CheckWeightsPass(TLPass):
    name = "check-weights"
    requires = ("resolve-nml",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for found in op.walk():
            if isinstance(found, WeightsOp):
                _check(op, found)
            elif isinstance(found, LoopOp):
                _check_fine_tuning(op, found)


def _tree(module: ModuleOp, inst: InstanceOp) -> ModelTree | None:
    """The instance's layers and state dict under its config, or None where unknown."""
    model = models_of(module).get(inst.model.root_reference.data)
    if model is None:
        return None
    overrides = {k: override_value(v) for k, v in inst.overrides.data.items()}
    env = model_env(model, {k: v for k, v in overrides.items() if v is not None})
    try:
        return model_tree(model, env, models_of(module))
    except UnknownState:
        return None  # resolve-nml reported the layer whose arguments have no value


def _check_fine_tuning(module: ModuleOp, loop: LoopOp) -> None:
    settings = loop.settings()
    if "freeze" not in settings and "lora" not in settings:
        return
    if loop.steps():
        return  # with `step` lines `freeze` names whole models (check-train)
    inst = lookup_symbol(module, loop.model.root_reference.data, InstanceOp)
    tree = _tree(module, inst) if inst is not None else None
    if tree is None:
        return
    if "freeze" in settings:
        _check_freeze(settings["freeze"], tree)
    if "lora" in settings:
        _check_lora(settings["lora"], tree)


def _value_span(op: SetOp) -> Span:
    return (span_of(op.value_loc) if op.value_loc is not None else None) or span_at(op)


def _check_freeze(op: SetOp, tree: ModelTree) -> None:
    span = _value_span(op)
    if not isinstance(op.value, ArrayAttr):
        return  # check-train reported a value that is not a list
    for item in op.value.data:
        if not isinstance(item, StringAttr):
            continue
        problem = _freeze_problem(item.data, tree)
        if problem is not None:
            message, help_text = problem
            report(Diagnostic.error("TL0810", message, Label(span, ""), help=help_text))


def _freeze_problem(path: str, tree: ModelTree) -> tuple[str, str | None] | None:
    sliced = re.fullmatch(r"(.+)\[(\d*):(\d*)\]", path)
    if sliced is not None:
        base, high = sliced.group(1), sliced.group(3)
        if base not in tree.lists:
            return f"`{base}` is not a layer list of the model", _layers_help(base, tree)
        if high and int(high) > tree.lists[base]:
            count = tree.lists[base]
            return (f"`{path}` reaches past `{base}`'s {count} layers",
                    f"write `{base}[{sliced.group(2)}:{count}]`")  # fmt: skip
        return None
    if path in tree.kinds or path in tree.shapes or path in tree.lists:
        return None
    return f"`{path}` is not a layer of the model", _layers_help(path, tree)


def _layers_help(path: str, tree: ModelTree) -> str | None:
    names = [k for k in tree.kinds if "." not in k] + list(tree.lists)
    guess = did_you_mean(path, names)
    return (
        f"did you mean `{guess}`?"
        if guess
        else "its layers: " + ", ".join(f"`{n}`" for n in dict.fromkeys(names))
    )


def _check_lora(op: SetOp, tree: ModelTree) -> None:
    span = _value_span(op)
    call = op.value
    if not isinstance(call, CallAttr):
        return
    targets = call.kwargs.data.get("targets")
    if not isinstance(targets, ArrayAttr):
        return
    linears = tree.linear_paths()
    for target in targets.data:
        if not isinstance(target, StringAttr):
            continue
        name = target.data
        if not any(p == name or p.endswith("." + name) for p in linears):
            ends = sorted({p.rsplit(".", 1)[-1] for p in linears})
            guess = did_you_mean(name, ends)
            report(
                Diagnostic.error(
                    "TL0811",
                    f"no Linear layer of the model is named `{name}`",
                    Label(span, ""),
                    help=f"did you mean `{guess}`?"
                    if guess
                    else "its Linear layers: " + ", ".join(f"`{e}`" for e in ends),
                )
            )


def _check(module: ModuleOp, op: WeightsOp) -> None:
    header_span = span_at(op)
    written = span_of(op.instance_loc) if op.instance_loc is not None else None
    instance_span = written or header_span
    inst = lookup_symbol(module, op.instance.data, InstanceOp)
    if inst is None:
        report(
            Diagnostic.error(
                "TL0803",
                f"`{op.instance.data}` is not a model instance",
                Label(instance_span, "weights are for an instance declared with `let`"),
                help="declare it first: `let model = GPT(...)`",
            )
        )
        return
    tree = _tree(module, inst)
    if tree is None:
        return
    rules = [Rule.of(r) for r in op.rules()]
    if not _rules_valid(op, rules, header_span):
        return
    header = _header(op, header_span)
    if header is None:
        return
    _check_config(op, header, _config_values(module, inst), instance_span)
    _compare(op, rules, header, tree, header_span)


def _rules_valid(op: WeightsOp, rules: list[Rule], header_span: Span) -> bool:
    """TL0809 for each rule whose pattern or target cannot be applied."""
    valid = True
    for index, rule in enumerate(rules):
        problem = rule_problem(rule)
        if problem is not None:
            valid = False
            report(
                Diagnostic.error(
                    "TL0809",
                    f"this rule cannot be applied: {problem}",
                    Label(_rule_span(op, index, header_span), ""),
                )
            )
    return valid


def _source_span(op: WeightsOp, fallback: Span) -> Span:
    return (span_of(op.source_loc) if op.source_loc is not None else None) or fallback


def _header(op: WeightsOp, header_span: Span) -> WeightHeader | None:
    path = Path(op.source.data)
    if not path.is_absolute() and not path.exists() and header_span.file:
        path = Path(header_span.file).parent / path  # beside the program
    span = _source_span(op, header_span)
    if not path.exists():
        report(
            Diagnostic.warning(
                "TL0801",
                f"`{op.source.data}` is not there at check time: the names are not checked",
                Label(span, "no such file or folder"),
                help="if the weights live on the training machine, pass `--weights PATH` there",
            )
        )
        return None
    try:
        return read_weight_header(path)
    except WeightFileError as exc:
        report(Diagnostic.error("TL0802", f"cannot read the weights: {exc}", Label(span, "")))
        return None


def _rule_span(op: WeightsOp, index: int, fallback: Span) -> Span:
    locs = op.rule_locs.data if op.rule_locs is not None else ()
    found = span_of(locs[index]) if index < len(locs) else None
    return found or fallback


def _config_values(module: ModuleOp, inst: InstanceOp) -> dict[str, object]:
    """The instance's config values: its model's defaults under its overrides."""
    model = models_of(module).get(inst.model.root_reference.data)
    if model is None:
        return {}
    overrides = {k: override_value(v) for k, v in inst.overrides.data.items()}
    return dict(model_env(model, {k: v for k, v in overrides.items() if v is not None}))


def _check_config(
    op: WeightsOp, header: WeightHeader, values: dict[str, object], instance_span: Span
) -> None:
    """`config "num_attention_heads" -> n_head` lines, then the model's config entries named
    as config.json's (`n_embd`, `vocab_size`): equal, or TL0814 at the line (TL0815 for a
    line naming an entry neither side has)."""
    written = op.configs()
    locs = op.config_locs.data if op.config_locs is not None else ()
    for index, (key, name) in enumerate(written):
        span = (span_of(locs[index]) if index < len(locs) else None) or instance_span
        if not header.config:
            _no_config_entry(f"`{op.source.data}` has no config.json to read `{key}` from",
                             "a Hugging Face folder has one; remove the line", span)  # fmt: skip
        elif key not in header.config:
            guess = did_you_mean(key, [str(k) for k in header.config])
            _no_config_entry(f"config.json has no `{key}`",
                             f"did you mean `{guess}`?" if guess else None, span)  # fmt: skip
        elif name not in values:
            guess = did_you_mean(name, list(values))
            _no_config_entry(f"the model has no config `{name}`",
                             f"did you mean `{guess}`?" if guess else None, span)  # fmt: skip
        else:
            _config_agrees(op, key, header.config[key], name, values[name], span)
    declared = {name for _, name in written}
    for name, value in values.items():
        stated = header.config.get(name)
        if name in declared or not _is_int(stated) or not _is_int(value):
            continue
        _config_agrees(op, name, stated, name, value, instance_span)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _no_config_entry(message: str, help_text: str | None, span: Span) -> None:
    report(Diagnostic.error("TL0815", message, Label(span, ""), help=help_text))


def _config_agrees(
    op: WeightsOp, key: str, stated: object, name: str, value: object, span: Span
) -> None:
    if stated == value:  # 1e-12 in config.json and the model's 1e-12 compare equal as floats
        return
    report(
        Diagnostic.error(
            "TL0814",
            f"config.json has `{key}` {stated!r}, the model's `{name}` is {value!r}",
            Label(span, f"`{op.instance.data}` has `{name}` {value!r}"),
            help=f"build `{op.instance.data}` with `{name}={stated!r}`, or load weights of "
            f"its size",
        )
    )


def _compare(
    op: WeightsOp,
    rules: list[Rule],
    header: WeightHeader,
    tree: ModelTree,
    span: Span,
) -> None:
    expected = tree.shapes
    names = list(header.tensors)
    matched = match_names(names, rules)
    filled: dict[str, str] = {}
    cast: set[int] = set()
    reported: set[int] = set()  # rules whose shapes were reported once
    for mapping in matched.mappings:
        rule, rule_span = rules[mapping.rule], _rule_span(op, mapping.rule, span)
        if not _targets_known(mapping, expected, filled, rule_span):
            continue
        filled.update(dict.fromkeys(mapping.targets, mapping.sources[0]))
        tensors = [header.tensors[n] for n in mapping.sources]
        if mapping.rule not in reported and _shapes_differ(
            mapping, rule, tensors, expected, rule_span
        ):
            reported.add(mapping.rule)
        own = _INTEGER_DTYPE if mapping.targets[0] in tree.integers else _MODEL_DTYPE
        odd = next((t for t in tensors if t.dtype != own), None)
        if odd is not None and mapping.rule not in cast:
            cast.add(mapping.rule)
            name = mapping.sources[tensors.index(odd)]
            report(
                Diagnostic.warning(
                    "TL0808",
                    f"`{name}` is {odd.dtype}: the load casts it to the model's "
                    f"{'int64' if own == _INTEGER_DTYPE else 'float32'}",
                    Label(rule_span, f"{odd.dtype} in the file"),
                )
            )
    _partial(op, matched, span)
    _unmatched_and_missing(op, matched.unmatched, [k for k in expected if k not in filled], span)


def _targets_known(
    mapping: Mapping, expected: dict[str, tuple[int, ...]], filled: dict[str, str], span: Span
) -> bool:
    """TL0807 for a target the model lacks or one that another tensor already fills."""
    for target in mapping.targets:
        if target not in expected:
            _no_target(mapping.sources[0], target, expected, span)
            return False
        if target in filled:
            report(
                Diagnostic.error(
                    "TL0807",
                    f"`{filled[target]}` and `{mapping.sources[0]}` both fill `{target}`",
                    Label(span, "this rule maps two of the file's tensors to one"),
                    help="make the patterns tell them apart, or `ignore` one",
                )
            )
            return False
    return True


def _partial(op: WeightsOp, matched: Matched, span: Span) -> None:
    """TL0813 once per rule whose join finds some of its tensors and not the others."""
    seen: set[int] = set()
    for index, found, absent in matched.partial:
        if index in seen:
            continue
        seen.add(index)
        report(
            Diagnostic.error(
                "TL0813",
                f"`{found[0]}` is joined with {_some(absent)}, which `{op.source.data}` lacks",
                Label(_rule_span(op, index, span), "this rule joins tensors the file has not"),
                help="each pattern of a join must match a tensor for the same parts",
            )
        )


def _unmatched_and_missing(
    op: WeightsOp, unmatched: list[str], missing: list[str], span: Span
) -> None:
    notes = _map_note(op)
    if unmatched:
        first = unmatched[0]
        report(
            Diagnostic.error(
                "TL0805",
                f"no rule maps {_some(unmatched)} of `{op.source.data}`",
                Label(span, f"{len(unmatched)} of the file's tensors are not mapped"),
                notes=notes,
                help=f'map them, or ignore them: `ignore "{first}"`',
            )
        )
    if missing:
        report(
            Diagnostic.error(
                "TL0804",
                f"nothing in `{op.source.data}` fills {_some(missing)}",
                Label(span, f"{len(missing)} of the model's tensors are not filled"),
                notes=notes,
                help="add a rule whose target names them",
            )
        )


def _map_note(op: WeightsOp) -> list[str]:
    """Where the rules of the `@weights` map a block applies are written, if it applies one."""
    if op.weights_map is None:
        return []
    where = span_of(op.weights_map_loc) if op.weights_map_loc is not None else None
    at = f" ({Path(where.file).name}:{where.line})" if where is not None else ""
    return [f"the block applies the map `{op.weights_map.data}`{at}"]


def _no_target(name: str, target: str, expected: dict[str, tuple[int, ...]], span: Span) -> None:
    near = [k for k in expected if k.split(".")[-1] == target.split(".")[-1]][:1]
    report(
        Diagnostic.error(
            "TL0807",
            f"`{name}` maps to `{target}`, which the model does not have",
            Label(span, f"no `{target}` in the model"),
            help=f"the model has `{near[0]}`" if near else None,
        )
    )


def _loaded(tensor: TensorHeader, transposed: bool) -> tuple[int, ...]:
    return tuple(reversed(tensor.shape)) if transposed else tensor.shape


def _shapes_differ(
    mapping: Mapping,
    rule: Rule,
    tensors: list[TensorHeader],
    expected: dict[str, tuple[int, ...]],
    span: Span,
) -> bool:
    """Report (TL0806 one to one, TL0812 a join or split) a shape that differs; True if so."""
    if not rule.several:
        tensor, want = tensors[0], expected[mapping.targets[0]]
        if _loaded(tensor, rule.transposed) == want:
            return False
        _shape(mapping.sources[0], tensor, mapping.targets[0], want, rule.transposed, span)
        return True
    got = [_loaded(t, rule.transposed) for t in tensors]
    want = [expected[t] for t in mapping.targets]
    problem = _join_problem(mapping.sources, got, rule.dim, "the file's") or _join_problem(
        mapping.targets, want, rule.dim, "the model's"
    )
    if problem is None:
        if _joined(got, rule.dim) == _joined(want, rule.dim):
            return False
        problem = _joined_text(mapping, tensors, rule, want)
    fixes = _transposing_fits(tensors, rule, want)
    help_text = "the file stores them the other way round: end the rule with `transposed`"
    report(
        Diagnostic.error(
            "TL0812", problem, Label(span, "shapes differ"), help=help_text if fixes else None
        )
    )
    return True


def _transposing_fits(tensors: list[TensorHeader], rule: Rule, want: list[tuple[int, ...]]) -> bool:
    """Whether the file's matrices, transposed, would join or split into the model's."""
    if rule.transposed or any(len(t.shape) != 2 for t in tensors):
        return False
    return _fits([tuple(reversed(t.shape)) for t in tensors], want, rule.dim)


def _fits(got: list[tuple[int, ...]], want: list[tuple[int, ...]], dim: int) -> bool:
    ok = _join_problem((), got, dim, "") is None and _join_problem((), want, dim, "") is None
    return ok and _joined(got, dim) == _joined(want, dim)


def _join_problem(
    names: tuple[str, ...], shapes: list[tuple[int, ...]], dim: int, side: str
) -> str | None:
    """Why tensors of these shapes cannot be joined along `dim`, or None."""
    if len(shapes) < 2 and all(dim < len(s) for s in shapes):
        return None
    for name, shape in zip(names or ("",) * len(shapes), shapes, strict=True):
        if dim >= len(shape):
            return f"{side} `{name}` is {format_shape(shape)}: it has no dim {dim} to join along"
    first = shapes[0]
    for name, shape in zip(names or ("",) * len(shapes), shapes, strict=True):
        rest = [d for d in range(max(len(shape), len(first))) if d != dim]
        if len(shape) != len(first) or any(shape[d] != first[d] for d in rest):
            return (
                f"{side} `{names[0] if names else ''}` {format_shape(first)} and `{name}` "
                f"{format_shape(shape)} cannot be joined along dim {dim}: they differ elsewhere"
            )
    return None


def _joined(shapes: list[tuple[int, ...]], dim: int) -> tuple[int, ...]:
    first = list(shapes[0])
    first[dim] = sum(s[dim] for s in shapes)
    return tuple(first)


def _joined_text(
    mapping: Mapping, tensors: list[TensorHeader], rule: Rule, want: list[tuple[int, ...]]
) -> str:
    """`a` [96, 96], `b` [96, 96] joined along dim 0 are [192, 96], the model's `c` is ..."""
    dim = rule.dim
    if len(tensors) == 1:
        loaded = _loaded(tensors[0], rule.transposed)
        turned = f" ({format_shape(loaded)} transposed)" if rule.transposed else ""
        file_side = f"`{mapping.sources[0]}` is {format_shape(tensors[0].shape)}{turned}"
    else:
        got = [_loaded(t, rule.transposed) for t in tensors]
        turned = " transposed and" if rule.transposed else ""
        file_side = (
            f"{_listed(mapping.sources, got)}{turned} joined along dim {dim} are "
            f"{format_shape(_joined(got, dim))}"
        )
    if len(want) == 1:
        model_side = f"the model's `{mapping.targets[0]}` is {format_shape(want[0])}"
    else:
        model_side = (
            f"the model's {_listed(mapping.targets, want)} joined along dim {dim} are "
            f"{format_shape(_joined(want, dim))}"
        )
    return f"{file_side}, {model_side}"


def _listed(names: tuple[str, ...], shapes: list[tuple[int, ...]]) -> str:
    parts = [f"`{n}` {format_shape(s)}" for n, s in zip(names, shapes, strict=True)]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _shape(
    name: str,
    tensor: TensorHeader,
    target: str,
    want: tuple[int, ...],
    transposed: bool,
    span: Span,
) -> None:
    got = _loaded(tensor, transposed)
    stored = format_shape(tensor.shape)
    as_loaded = f" ({format_shape(got)} transposed)" if transposed else ""
    swapped = not transposed and len(want) == 2 and tuple(reversed(got)) == want
    report(
        Diagnostic.error(
            "TL0806",
            f"`{name}` is {stored}{as_loaded}, the model's `{target}` is {format_shape(want)}",
            Label(span, "shapes differ"),
            help="the file stores it the other way round: end the rule with `transposed`"
            if swapped
            else None,
        )
    )


def _some(names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")
