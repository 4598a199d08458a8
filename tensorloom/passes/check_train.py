"""`check-train`: a train block's settings, and the loss against model and data.

    train net on data:
        epoch = 10                 TL0401 unknown setting `epoch` (did you mean `epochs`?)
        optimizer = Adma(lr=0.1)   TL0404 unknown optimizer `Adma` (did you mean `Adam`?)
        loss = CrossEntropy        TL0408 if `net` gives 5 classes and the data has 10

Every key is a record of catalogue/train_keys.py, and `SETTINGS` holds each record's check:
a plain value's type, range and choices, a structured value's own (the `check` its record
names, catalogue/train_rules.py); docs/train-block.md documents them. Also checked: the
dataset's options (TL07xx, from `catalogue/datasets.py`), and likely mistakes (warnings): a softmax
right before `CrossEntropy`, which applies its own, `fp16`, which needs CUDA, and
`load_dataset()`, which trains on synthetic data (TL0707).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Attribute, Operation, TypeAttribute

from tensorloom.catalogue.data_files import DatasetProblem
from tensorloom.catalogue.datasets import (
    CLASSIFICATION,
    ORDERED_SOURCES,
    REGRESSION,
    SEQUENCE,
    UNKNOWN_TASK,
    DatasetError,
    DatasetInfo,
    is_language_model_data,
)
from tensorloom.catalogue.losses import FLOATS, INDICES, TRAIN_LOSSES
from tensorloom.catalogue.schedules import PER_EPOCH
from tensorloom.catalogue.shapes import Dim, format_shape
from tensorloom.catalogue.train_keys import KEYS, OLDER_NAMES, TRAIN_KEYS
from tensorloom.catalogue.train_rules import LOSSES, Check, as_call
from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects import kernel, train
from tensorloom.dialects.nml import (
    AnyType,
    ApplyOp,
    FuncOp,
    InstanceOp,
    KernelCallOp,
    LogSoftmaxOp,
    NoneValueAttr,
    ReturnOp,
    SoftmaxOp,
    TensorType,
)
from tensorloom.dialects.nml.types import PREFIX, CallAttr
from tensorloom.passes.support.batch_fields import (
    LossFields,
    block_loss_fields,
    field_listing,
    is_xy,
    named_parameter_span,
)
from tensorloom.passes.support.dataset_files import dataset_check
from tensorloom.passes.support.loss_functions import (
    BatchTypes,
    Metric,
    MetricProblem,
    batch_types,
    check_function,
    function_named,
    functions_of,
    metrics_of,
)
from tensorloom.passes.support.model_env import (
    CallValue,
    EvalError,
    Evaluated,
    evaluate,
    forward_of,
    lookup_symbol,
    models_of,
    name_help,
)
from tensorloom.passes.support.objectives import (
    NOT_WITH_STEPS,
    PER_OPTIMIZER,
    STEP_EXCLUSIVE,
    Step,
    StepOptimizer,
    calls_model,
    check_objective,
    check_sampler,
    frozen_names,
    initial_paths,
    layer_kind,
    objective_named,
    optimizer_of,
    optimizer_set,
    parameter_type,
    step_of,
    takes_carried,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.step_groups import GroupChecker
from tensorloom.source import Span


@dataclass(frozen=True, slots=True)
class Setting:
    check: Check
    doc: str


SETTINGS: dict[str, Setting] = {key.name: Setting(key.checked, key.summary) for key in TRAIN_KEYS}
"""Every key a train block accepts: catalogue/train_keys.py's records, as checks."""


# --- the loss against model and data ------------------------------------------------------------


@dataclass
class LoopChecker:
    """Checks one `train.loop`."""

    module: ModuleOp
    loop: train.LoopOp
    by_field: LossFields | None = None  # a `loss` block over named fields: its binding

    def check(self) -> None:
        seen: dict[str, Span] = {}
        for op in self.loop.body.block.ops:
            if isinstance(op, train.SetOp):
                self._setting(op, seen)
        info = self._dataset()
        self._samples()
        carries = self.loop.carries()
        if carries:  # each problem reported; the objective still takes one parameter for each
            CarryChecker(self.module, self.loop).check()
            carries = list({op.var.data: op for op in reversed(carries)}.values())[::-1]
        if self.loop.runs_objectives():
            batch = batch_types(None, info)
            ObjectiveChecker(self.module, self.loop, batch, info, carries).check()
            self._precision()
            return
        instance = self._instance()
        fits = info is None or self.by_field is not None
        if instance is not None and not fits and not self._inputs_fit(instance):
            return
        self._loss(info, instance)
        self._metrics(info, instance)
        self._recipe_metrics()
        self._precision()
        if instance is not None and self._value("loss") is not None:
            self._kernel_gradients(instance)

    def _setting(self, op: train.SetOp, seen: dict[str, Span]) -> None:
        key = op.key.data
        key_span = span_at(op)
        if key in seen:
            earlier = Label(seen[key], "first set here")
            report(
                Diagnostic.error(
                    "TL0409", f"`{key}` is set twice", Label(key_span), secondary=[earlier]
                )
            )
            return
        seen[key] = key_span
        setting = SETTINGS.get(key)
        if setting is None:
            self._unknown_key(key, key_span)
            return
        if key == "optimizer" and optimizer_set(op.value) is not None:
            self._optimizer_set(op)
            return
        value = evaluate(op.value, {})
        if isinstance(value, EvalError) and _holds_calls(op.value):
            return  # `metrics = [accuracy, top_k(5)]`: `_metrics` reads the calls
        if isinstance(value, EvalError):
            where = span_of(op.value_loc) if op.value_loc is not None else None
            message = f"`{key}` has no value: {value.message}"
            code = "TL0403" if value.too_large else "TL0402"
            if value.too_large:
                message = f"`{value.keyword or key}` is {value.message}"
            help_text = name_help(value)
            report(Diagnostic.error(code, message, Label(where or key_span), help=help_text))
            return
        if key == "loss" and function_named(self.module, value) is not None:
            return  # a loss written in the file: `_loss` checks it against model and data
        if key in NOT_WITH_STEPS and self.loop.steps():
            return  # ObjectiveChecker says it is not taken
        problem = setting.check(key, value)
        if problem is not None:
            where = span_of(op.value_loc) if op.value_loc is not None else None
            report(
                Diagnostic.error(
                    problem.code, problem.message, Label(where or key_span), help=problem.help
                )
            )

    def _samples(self) -> None:
        """`samples = sample`: a `fn` of the block's models that returns images."""
        op = self.loop.settings().get("samples")
        value = evaluate(op.value, {}) if op is not None else None
        call = as_call(value) if value is not None and not isinstance(value, EvalError) else None
        if op is None or call is None:
            return
        func = functions_of(self.module).get(call.name)
        if func is not None:
            check_sampler(self.module, func, self.loop.model_names(), op.value_loc)
            return
        guess = did_you_mean(call.name, list(functions_of(self.module)))
        models = ", ".join(self.loop.model_names())
        message = f"unknown function `{call.name}`: `samples` names a top-level `fn`"
        write = f"write `fn {call.name}({models}) -> Tensor:` returning images [N, C, H, W]"
        help_text = f"did you mean `{guess}`?" if guess else write
        span = (span_of(op.value_loc) if op.value_loc is not None else None) or span_at(op)
        report(Diagnostic.error("TL0418", message, Label(span), help=help_text))

    def _optimizer_set(self, op: train.SetOp) -> None:
        """`optimizer = (Muon(hidden, lr=0.02), AdamW(rest, lr=3e-3))`: each optimizer's
        arguments against the catalogue, the groups against the model (step_groups.py)."""
        groups = {name: g.value for name, g in self.loop.groups().items()}
        calls = optimizer_set(op.value) or []
        locs = op.element_locs.data if op.element_locs is not None else [op.value_loc] * len(calls)
        optimizers: list[StepOptimizer] = []
        for call, loc in zip(calls, locs, strict=False):
            where = span_of(loc) if loc is not None else span_at(op)
            optimizer = optimizer_of(call, loc, groups)
            if optimizer is None:
                _error_at(where, "TL0402", "each optimizer is a call, as in `AdamW(rest)`", None)
                continue
            optimizers.append(optimizer)
            if not optimizer.args:
                message = f"`{optimizer.name}` of `optimizer` updates nothing"
                help_text = f"name what it updates: `{optimizer.name}(hidden, ...)`"
                _error_at(where, "TL0433", message, help_text)
            kwargs = tuple(optimizer.kwargs)
            problem = KEYS["optimizer"].checked("optimizer", CallValue(optimizer.name, (), kwargs))  # type: ignore[arg-type]
            if problem is not None:
                _error_at(where, problem.code, problem.message, problem.help)
        checker = GroupChecker(self.module, self.loop, [("`optimizer`", optimizers)],
                               _options_problem, names_checked=False)  # fmt: skip
        checker.check()
        sharded = self.loop.settings().get("distributed")
        if sharded is not None and evaluate(sharded.value, {}) == "fsdp":
            message = (
                '`distributed = "fsdp"` checkpoints one optimizer over the sharded model; '
                "several over parameter groups are not sharded yet"
            )
            help_text = 'use `distributed = "ddp"`, or one optimizer'
            _error_at(span_of(sharded.value_loc), "TL0456", message, help_text)

    def _unknown_key(self, key: str, span: Span) -> None:
        guess = did_you_mean(key, SETTINGS)
        help_text = f"did you mean `{guess}`?" if guess else "see docs/train-block.md"
        report(Diagnostic.error("TL0401", f"unknown setting `{key}`", Label(span), help=help_text))

    def _value(self, key: str) -> Evaluated | None:
        attr = self.loop.setting(key)
        if attr is None:
            return None
        value = evaluate(attr, {})
        return None if isinstance(value, EvalError) else value

    # --- dataset ----------------------------------------------------------------------

    def _dataset(self) -> DatasetInfo | None:
        op = lookup_symbol(self.module, self.loop.data, train.DatasetOp)
        if op is None:
            return None
        checked = dataset_check(op)
        if isinstance(checked, DatasetError):
            _dataset_error(op, checked)
            return None
        for problem in checked.problems:
            _dataset_error(op, problem)
        if any(not p.is_warning for p in checked.problems):
            return None
        if op.source is None:
            _synthetic_warning(op)
        by_field = block_loss_fields(self.module, self.loop, checked.info)
        if by_field is not None:
            self.by_field = by_field
            return self._fields_loss(checked.info, by_field)
        if self.loop.runs_objectives():
            _no_target(self.loop, "a block of objectives")
        elif checked.info.fields is None:
            _no_target(self.loop, f"`{checked.info.name}`, which yields samples and targets,")
        if not self.loop.runs_objectives() and checked.layout is not None:
            _dataset_error(op, checked.layout)
            return None
        if not self.loop.runs_objectives() and not is_xy(checked.info):
            return None  # a model without a forward: reported where it is declared
        return checked.info

    def _fields_loss(self, info: DatasetInfo, by_field: LossFields) -> DatasetInfo | None:
        """A `loss` block over named fields: each forward parameter a field (TL0441), the
        target a field (TL0470); the data as the loss checks see it, the forward's first
        field as the samples and the target as the targets."""
        if by_field.unknown is not None:
            _forward_field_unknown(self.module, self.loop, info, by_field)
            return None
        if not by_field.target_known:
            _target_unknown(self.loop, info, by_field.target)
            return None
        first = info.field_named(by_field.inputs[0]) if by_field.inputs else None
        target = info.field_named(by_field.target)
        assert target is not None, "target_known: the target is a field"
        labels = target.dtype == "i64"
        task = (SEQUENCE if target.shape else CLASSIFICATION) if labels else REGRESSION
        return replace(
            info, sample_shape=first.shape if first is not None else None,
            dtype=first.dtype if first is not None else "f32", num_classes=None,
            target_shape=target.shape, target_dtype=target.dtype,
            task=task if target.shape is not None else UNKNOWN_TASK,
        )  # fmt: skip

    # --- loss -------------------------------------------------------------------------

    def _loss(self, info: DatasetInfo | None, instance: InstanceOp | None) -> None:
        function = function_named(self.module, self._value("loss"))
        if function is not None:
            output = self._output_type(instance) if instance is not None else None
            check_function(function, batch_types(output, info), "loss")
            return
        call = as_call(self._value("loss")) if self._value("loss") is not None else None
        if call is None or call.name not in LOSSES or instance is None:
            return
        if self._tuple_output(instance, call.name):
            return
        if info is not None and self._targets_problem(info, instance, call.name):
            return
        if call.name not in ("CrossEntropy", "NLL"):
            return
        self._softmax_before(instance, call.name)
        if info is None or info.num_classes is None:
            return
        output = self._output(instance)
        if output is not None:
            self._classes(output, info, call.name)

    def _inputs_fit(self, instance: InstanceOp) -> bool:
        """A dataset feeds the forward one input (`model(x)`): a forward taking more fails at
        the first step."""
        model = models_of(self.module).get(instance.model.root_reference.data)
        forward = forward_of(model) if model is not None else None
        if forward is None or len(forward.arg_names.data) <= 1:
            return True
        names = ", ".join(f"`{a.data}`" for a in forward.arg_names.data)
        count = len(forward.arg_names.data)
        data = self.loop.data.root_reference.data
        message = (
            f"`{instance.model.root_reference.data}`'s forward takes {count} inputs ({names}), "
            f"but a dataset feeds one: the samples of `{data}`"
        )
        span = span_of(self.loop.data_loc) if self.loop.data_loc is not None else None
        span = span or span_at(self.loop)
        help_text = (
            "call the model from an objective, which receives the data's fields: "
            "`objective = f` with `fn f(net, x, y) -> Tensor`"
        )
        report(Diagnostic.error("TL0417", message, Label(span), help=help_text))
        return False

    def _targets_problem(self, info: DatasetInfo, instance: InstanceOp, loss: str) -> bool:
        """A built-in loss against targets of the wrong kind (class labels into `MSE`,
        floats into `NLL`) or, for float targets, of another shape than the output."""
        if info.synthetic or info.task == UNKNOWN_TASK or info.target_shape is None:
            return False  # synthetic labels are made to fit; a file's are unknown
        takes = TRAIN_LOSSES[loss].targets
        labels = info.target_dtype == "i64"
        span = self._loss_span()
        if span is None:
            return False
        if labels and takes == FLOATS:
            classes = f" ({info.num_classes} classes)" if info.num_classes is not None else ""
            message = (
                f"`{loss}` compares the output with float targets, but `{info.name}`'s "
                f"targets are class labels{classes}"
            )
            help_text = (
                "for classes, use `loss = CrossEntropy`; for regression, load float targets "
                "(a .npz whose `y` is float, or a .csv whose target column is)"
            )
            report(Diagnostic.error("TL0416", message, Label(span), help=help_text))
            return True
        if labels:
            return False
        if takes == INDICES:
            message = (
                f"`{loss}` takes class labels, but `{info.name}`'s targets are floats (regression)"
            )
            help_text = "use `loss = MSE` (or `L1`, `SmoothL1`) for float targets"
            report(Diagnostic.error("TL0416", message, Label(span), help=help_text))
            return True
        output = self._output(instance)
        if output is None or PREFIX in output:
            return False
        want = info.target_shape
        got = output[1:]
        if len(got) == len(want) and all(
            not isinstance(g, int) or g == w for g, w in zip(got, want, strict=True)
        ):
            return False
        targets = format_shape(("B", *want))
        message = (
            f"`{loss}` compares the output {format_shape(output)} with `{info.name}`'s "
            f"targets {targets} element by element: the shapes differ"
        )
        if len(got) != len(want):
            message += " (PyTorch would broadcast them, silently)"
        help_text = f"make the model's output {targets}"
        report(Diagnostic.error("TL0416", message, Label(span), help=help_text))
        return True

    def _tuple_output(self, instance: InstanceOp, loss: str) -> bool:
        """A forward that returns several values cannot feed a built-in loss: say so."""
        output = self._output_type(instance)
        if output is None or isinstance(output, TensorType | AnyType):
            return False
        span = self._loss_span()
        if span is None:
            return True
        model = instance.model.root_reference.data
        message = f"`{loss}` takes one tensor, but `{model}`'s forward returns a tuple"
        help_text = "return one tensor, or write the loss in the file: `fn my_loss(out, y)`"
        report(Diagnostic.error("TL0408", message, Label(span), help=help_text))
        return True

    def _instance(self) -> InstanceOp | None:
        return lookup_symbol(self.module, self.loop.model, InstanceOp)

    def _metrics(self, info: DatasetInfo | None, instance: InstanceOp | None) -> None:
        op = self.loop.settings().get("metrics")
        if op is None:
            return
        functions = functions_of(self.module)
        metrics = metrics_of(op.value, list(functions))
        span = (span_of(op.value_loc) if op.value_loc is not None else None) or span_at(op)
        if isinstance(metrics, MetricProblem):
            report(Diagnostic.error("TL0415", metrics.message, Label(span), help=metrics.help))
            return
        output = self._output_type(instance) if instance is not None else None
        checked = {function_named(self.module, self._value("loss"))}
        for metric in metrics:
            func = functions.get(metric.name) if metric.kind == "function" else None
            if func is not None and func not in checked:
                check_function(func, batch_types(output, info), "metric")
                checked.add(func)

    def _reported(self) -> list[str]:
        """The keys validation records, which `keep_best` and `early_stopping` may name."""
        functions = functions_of(self.module)
        custom = function_named(self.module, self._value("loss")) is not None
        op = self.loop.settings().get("metrics")
        listed = metrics_of(op.value, list(functions)) if op is not None else []
        keys = ["val_loss"] + ([m.key for m in listed] if isinstance(listed, list) else [])
        loss = as_call(self._value("loss"))
        if not custom and op is None and (loss is None or loss.name in ("CrossEntropy", "NLL")):
            keys.append("val_accuracy")
        if self._value("ema") is not None:
            keys += [f"ema_{key}" for key in keys]
        return keys

    def _recipe_metrics(self) -> None:
        """`keep_best = M` and `early_stopping = patience(N, metric=M)` name a reported metric;
        a key and its older name (`grad_accum`, `accumulate_steps`) are one setting."""
        settings = self.loop.settings()
        for older, newer in OLDER_NAMES.items():
            if newer in settings and older in settings:
                message = f"`{older}` is `{newer}`'s older name: set one of them"
                report(Diagnostic.error("TL0409", message, Label(span_at(settings[older]))))
        for key in ("keep_best", "early_stopping"):
            value = self._value(key)
            call = value if isinstance(value, CallValue) else None
            metric = dict(call.kwargs).get("metric", "val_loss") if call is not None else value
            if not isinstance(metric, str) or key not in settings:
                continue
            reported = self._reported()
            if metric in reported:
                continue
            op = settings[key]
            span = span_of(op.value_loc) if op.value_loc is not None else None
            span = span or span_at(op)
            guess = did_you_mean(metric, reported)
            listed = ", ".join(f"`{m}`" for m in reported)
            help_text = f"did you mean `{guess}`?" if guess else f"validation reports {listed}"
            message = f"`{key}` names `{metric}`, which validation does not report"
            report(Diagnostic.error("TL0415", message, Label(span), help=help_text))

    def _output_type(self, instance: InstanceOp) -> Attribute | None:
        """The model's output type on this loop's data, symbols resolved: what
        `shape-inference` wrote on the loop (`model_output`)."""
        return self.loop.model_output

    def _output(self, instance: InstanceOp) -> tuple[Dim, ...] | None:
        result = self._output_type(instance)
        if not isinstance(result, TensorType) or result.dims is None:
            return None
        return result.dims

    def _classes(self, output: tuple[Dim, ...], info: DatasetInfo, loss: str) -> None:
        if not output:
            return
        target = info.target_shape or ()
        classes = output[-1] if len(output) == len(target) + 2 else None
        span = self._loss_span()
        if span is None:
            return
        if classes is None:
            self._rank_problem(output, target, loss, span)
            return
        wider = isinstance(classes, int) and classes > (info.num_classes or classes)
        if is_language_model_data(info) and wider:
            return  # a vocabulary wider than the data's (GPT-2's 50257 over bytes), not narrower
        if isinstance(classes, int) and classes != info.num_classes:
            message = (
                f"`{loss}` needs one output per class: the model gives {classes}, "
                f"`{info.name}` has {info.num_classes} classes"
            )
            if is_language_model_data(info):
                message = (
                    f"`{loss}` needs one output per token of the vocabulary: the model gives "
                    f"{classes}, `{info.name}` data has {info.num_classes} tokens"
                )
            help_text = f"make the model's last layer output {info.num_classes} features"
            report(Diagnostic.error("TL0408", message, Label(span), help=help_text))

    def _rank_problem(
        self, output: tuple[Dim, ...], target: tuple[int, ...], loss: str, span: Span
    ) -> None:
        shape = format_shape(output)
        want = "[B, C]" if not target else "[B, T, C]"
        message = (
            f"`{loss}` expects outputs of shape {want} for targets of shape "
            f"{format_shape(('B', *target))}, got {shape}"
        )
        report(Diagnostic.error("TL0408", message, Label(span)))

    def _loss_span(self) -> Span | None:
        op = self.loop.settings().get("loss")
        if op is None:
            return None
        value = span_of(op.value_loc) if op.value_loc is not None else None
        return value or span_at(op)

    def _softmax_before(self, instance: InstanceOp, loss: str) -> None:
        model = models_of(self.module).get(instance.model.root_reference.data)
        forward = forward_of(model) if model is not None else None
        last = forward.body.block.last_op if forward is not None else None
        if not isinstance(last, ReturnOp) or not last.values:
            return
        producer = last.values[0].owner
        if not isinstance(producer, SoftmaxOp | LogSoftmaxOp):
            return
        span = span_at(producer)
        if isinstance(producer, SoftmaxOp):
            message = f"`softmax` before `{loss}`: the loss applies its own (log-)softmax"
            help_text = "return the logits; apply softmax only when you need probabilities"
            if loss == "NLL":
                message = "`NLL` expects log-probabilities, got a `softmax` output"
                help_text = "use `log_softmax` instead"
            report(Diagnostic.warning("TL0410", message, Label(span), help=help_text))
        elif loss == "CrossEntropy":
            message = "`log_softmax` before `CrossEntropy`: the loss applies its own"
            help_text = "return the logits, or use `loss = NLL`"
            report(Diagnostic.warning("TL0410", message, Label(span), help=help_text))

    # --- kernels in a trained forward ---------------------------------------------------

    def _kernel_gradients(self, instance: InstanceOp) -> None:
        """A Triton kernel has no backward: the layers that feed it would not train."""
        model = models_of(self.module).get(instance.model.root_reference.data)
        forward = forward_of(model) if model is not None else None
        if forward is None:
            return
        calls = [
            op
            for op in forward.walk()
            if isinstance(op, KernelCallOp) and not _has_backward(self.module, op)
        ]
        if not _trains_anything(forward, calls):
            self._no_gradient(calls[-1] if calls else forward, instance)
            return
        for call in calls:
            layers = _layers_feeding(call, forward)
            span = span_at(call)
            if not layers:
                continue
            kernel = call.kernel.root_reference.data
            named = ", ".join(f"`{name}`" for name in layers)
            message = (
                f"`{kernel}` is a Triton kernel and has no backward: "
                f"{named} before it will not train"
            )
            help_text = (
                f"give `{kernel}` a backward kernel: `@kernel(backward={kernel}_bwd)` "
                "(docs/kernels.md), or use a built-in op here (`gelu`, `relu`, ...)"
            )
            report(
                Diagnostic.warning(
                    "TL0412", message, Label(span, "gradients stop here"), help=help_text
                )
            )

    def _no_gradient(self, where: Operation, instance: InstanceOp) -> None:
        """pytorch_false_negatives/gen-874: `loss.backward()` raised "element 0 of tensors
        does not require grad": no layer reaches the output, or every path passes a kernel."""
        span = span_at(where)
        if isinstance(where, KernelCallOp):
            kernel = where.kernel.root_reference.data
            message = (
                f"nothing the loss depends on can train: every layer's output passes `{kernel}`"
            )
            help_text = (
                f"give `{kernel}` a backward kernel, `@kernel(backward={kernel}_bwd)`, "
                "or use a built-in op here"
            )
            label = Label(span, "gradients stop here")
        else:
            model = instance.model.root_reference.data
            message = f"`{model}`'s output depends on no layer, so training has nothing to train"
            help_text = "apply a layer with weights in `forward`, such as `Linear`"
            label = Label(span, "")
        report(Diagnostic.error("TL0412", message, label, help=help_text))

    # --- precision --------------------------------------------------------------------

    def _precision(self) -> None:
        if self._value("precision") != "fp16":
            return
        op = self.loop.settings()["precision"]
        span = span_of(op.value_loc) if op.value_loc is not None else None
        span = span or span_at(op)
        if self._value("distributed") == "fsdp":
            message = '`precision = fp16` is not supported with `distributed = "fsdp"`'
            note = "fp16 needs a GradScaler, and FSDP's sharded gradients need a sharded one"
            help_text = "use `precision = bf16`: FSDP all-gathers the weights in bf16"
            report(Diagnostic.error("TL0430", message, Label(span), notes=[note], help=help_text))
            return
        message = "`fp16` needs a CUDA GPU; on a CPU-only run it falls back to fp32"
        help_text = "use `precision = bf16` to get mixed precision on the CPU as well"
        report(Diagnostic.warning("TL0411", message, Label(span), help=help_text))


@dataclass
class ObjectiveChecker:
    """A block whose data feeds objectives: `objective = f` (one model, the block's
    `optimizer`), or `step f with Opt(models...)` lines (objectives.py)."""

    module: ModuleOp
    loop: train.LoopOp
    batch: BatchTypes
    info: DatasetInfo | None = None
    carries: list[train.CarryOp] = field(default_factory=list[train.CarryOp])
    carrying: list[FuncOp] = field(default_factory=list[FuncOp])  # objectives taking them
    checked: set[str] = field(default_factory=set[str])

    @property
    def models(self) -> list[str]:
        return self.loop.model_names()

    def check(self) -> None:
        if self._synthetic_data():
            return
        if self.loop.steps():
            self._steps()
            self._carried_by_a_step()
        else:
            self._one_objective()

    def _synthetic_data(self) -> bool:
        """`load_dataset()` shapes its samples from the model the data feeds; an objective
        feeds them to functions, not to one model's forward."""
        data = lookup_symbol(self.module, self.loop.data, train.DatasetOp)
        if not isinstance(data, train.DatasetOp) or data.source is not None:
            return False
        where = span_of(self.loop.data_loc) if self.loop.data_loc is not None else None
        message = (
            "an objective needs data whose samples are known; synthetic data takes its shape "
            "from a model's input"
        )
        help_text = 'load a dataset, as in `load_dataset("digits")`, or a file'
        _error_at(where, "TL0431", message, help_text)
        return True

    def _one_objective(self) -> None:
        setting = self.loop.settings()["objective"]
        if len(self.models) > 1:
            where = span_of(self.loop.model_loc) if self.loop.model_loc is not None else None
            message = "a block of several models trains them with `step` lines"
            help_text = "write `step NAME with Adam(MODEL, ...)` for each optimizer"
            _error_at(where, "TL0431", message, help_text)
            return
        if "loss" in self.loop.settings():
            loss = self.loop.settings()["loss"]
            message = "`loss` and `objective` are both set: the objective is what is minimised"
            _error_at(span_of(loss), "TL0431", message, "remove `loss`")
        value = evaluate(setting.value, {})
        call = as_call(value) if not isinstance(value, EvalError) else None
        if call is not None:  # first: it fixes the carried values' types, which metrics take
            self._objective(call.name, setting.value_loc)
        if "metrics" in self.loop.settings():
            self._objective_metrics(self.loop.settings()["metrics"])

    def _objective_metrics(self, op: train.SetOp, *, steps: bool = False) -> None:
        """`metrics = [f]` beside an objective (or `step` lines): functions of the models and
        the batch, as the objective is; `accuracy` and `top_k` read a model's output, which
        it has not."""
        functions = list(functions_of(self.module))
        metrics = metrics_of(op.value, functions)
        where = span_of(op.value_loc or op)
        if isinstance(metrics, MetricProblem):
            _error_at(where, "TL0415", metrics.message, metrics.help)
            return
        for metric in metrics:
            if steps and self._not_a_steps_metric(metric, where):
                continue
            if metric.kind == "perplexity":  # exp of `val_loss`: it reads no output
                continue
            if metric.kind != "function":
                message = (
                    f"`{metric.name if metric.kind == 'accuracy' else 'top_k'}` reads the "
                    "model's output, which an objective computes itself"
                )
                help_text = (
                    "write the metric as a `fn` of the models and the batch, as the objective "
                    "is: `fn acc(net, x, y) -> Tensor`"
                )
                _error_at(where, "TL0431", message, help_text)
                continue
            func = functions_of(self.module)[metric.name]
            if metric.name not in self.checked:
                self.checked.add(metric.name)
                carries = self.carries if takes_carried(func, self.models, self.carries) else ()
                check_objective(self.module, func, self.models, self.batch, op.value_loc,
                                self.info, role="metric", carries=carries,
                                offered=self.carries)  # fmt: skip

    def _not_a_steps_metric(self, metric: Metric, where: Span | None) -> bool:
        """In a block of `step` lines a metric takes no carried values, and there is no
        `val_loss` for `perplexity` to follow: TL0431 for either."""
        models = ", ".join(self.models)
        if metric.kind == "perplexity":
            message = (
                "`perplexity` follows `val_loss`, which a block of `step` lines does not "
                "report: each objective is reported by its name"
            )
            help_text = f"write it as a `fn` of `{models}, x, y` that returns `exp(...)` of a loss"
            _error_at(where, "TL0431", message, help_text)
            return True
        func = functions_of(self.module).get(metric.name) if metric.kind == "function" else None
        if func is None or not takes_carried(func, self.models, self.carries):
            return False
        message = (
            f"`{metric.name}` takes the carried values; a metric of a block of `step` lines "
            "takes the models and the batch"
        )
        _error_at(where, "TL0431", message, f"write `fn {metric.name}({models}, x, y) -> Tensor`")
        return True

    def _objective(self, name: str, loc: Attribute | None, step: bool = False) -> FuncOp | None:
        """The objective `name`, checked once; a step's takes the carried values only if it
        has parameters for them (the others run beside them)."""
        func = objective_named(self.module, name, loc, "an objective of this block")
        if func is not None and name not in self.checked:
            self.checked.add(name)
            carries = self.carries
            if step and not takes_carried(func, self.models, carries):
                carries = []
            before = [op.carried for op in carries]
            start = [b for b in before if b is not None] if step and self.carrying else None
            if start is not None and len(start) != len(carries):
                start = None
            check_objective(self.module, func, self.models, self.batch, loc, self.info,
                            carries=carries, start=start)  # fmt: skip
            if carries:
                self._same_carried(func, before)
                self.carrying.append(func)
        return func

    def _same_carried(self, func: FuncOp, before: Sequence[TypeAttribute | None]) -> None:
        """Steps that take the carried values pass them on to one another: one type each."""
        for op, was in zip(self.carries, before, strict=True):
            if was is None or op.carried is None or was == op.carried:
                continue
            first = self.carrying[0].sym_name.data
            message = (
                f"the steps `{first}` and `{func.sym_name.data}` carry `{op.var.data}` as "
                f"different types: {was}, then {op.carried}"
            )
            help_text = "the steps pass the carried value on to one another: return one type"
            where = span_of(func) or span_of(op)
            _error_at(where, "TL0447", message, help_text, span_of(op), "carried here")
            op.carried = was

    def _carried_by_a_step(self) -> None:
        """In a block of `step` lines some step's objective takes the carried values (and
        returns them); TL0446 at the `carry` line when none does."""
        if not self.carries or self.carrying:
            return
        var = self.carries[0].var.data
        models = ", ".join(self.models)
        message = f"no step's objective takes the carried value `{var}`"
        help_text = (
            f"give the step that feeds it a parameter for it, after the batch: "
            f"`fn NAME({models}, x, y, {var})` returning `(loss, {var})`"
        )
        _error_at(span_of(self.carries[0]), "TL0446", message, help_text)

    def _steps(self) -> None:
        for key, op in self.loop.settings().items():
            if key in STEP_EXCLUSIVE or key in NOT_WITH_STEPS:
                self._not_taken(key, op)
        schedule = self.loop.settings().get("lr_schedule")
        if schedule is not None:
            call = as_call(evaluate(schedule.value, {}))  # type: ignore[arg-type]
            if call is not None and call.name in PER_EPOCH:
                self._per_optimizer("lr_schedule", call, span_of(schedule.value_loc))
        groups = {name: op.value for name, op in self.loop.groups().items()}
        owners: dict[str, Step] = {}
        steps: list[Step] = []
        for op in self.loop.steps():
            step = step_of(op, groups)
            if step is None:
                message = "a step's optimizer is a call, as in `Adam(D, lr=2e-4)`"
                _error_at(span_of(op.optimizer_locs()[0]), "TL0402", message, None)
                continue
            steps.append(step)
            for optimizer in step.optimizers:
                self._optimizer(optimizer)
                self._step_models(step, optimizer, owners, groups)
            func = self._objective(step.objective, op.objective_loc, step=True)
            carried = len(self.carries) if func in self.carrying else 0
            if func is not None and len(func.names) == len(self.models) + 2 + carried:
                self._reaches(step, func)
        if "metrics" in self.loop.settings():
            self._objective_metrics(self.loop.settings()["metrics"], steps=True)
        users = [(f"step `{s.objective}`", s.optimizers) for s in steps]
        GroupChecker(self.module, self.loop, users, _options_problem).check()
        stepped = {model for step in steps for model in step.models}
        frozen = self._declared_frozen(steps)
        for model in self.models:
            if model not in stepped and model not in owners and model not in frozen:
                self._frozen(model)

    def _declared_frozen(self, steps: list[Step]) -> set[str]:
        """`freeze = [T]`: the models frozen on purpose (a teacher); TL0457 for a name that is
        not a model of the block, TL0458 for one a step's optimizer updates."""
        op = self.loop.settings().get("freeze")
        if op is None:
            return set()
        where = (span_of(op.value_loc) if op.value_loc is not None else None) or span_at(op)
        frozen: set[str] = set()
        for name in frozen_names(op):
            if name not in self.models:
                guess = did_you_mean(name, self.models)
                listed = ", ".join(f"`{m}`" for m in self.models)
                message = (
                    f"`{name}` is not a model of this train block: with `step` lines, "
                    "`freeze` names whole models"
                )
                help_text = f"did you mean `{guess}`?" if guess else f"its models: {listed}"
                _error_at(where, "TL0457", message, help_text)
            elif any(name in o.models for s in steps for o in s.optimizers):
                step, optimizer = next((s, o) for s in steps for o in s.optimizers
                                       if name in o.models)  # fmt: skip
                message = f"`{name}` is frozen, but step `{step.objective}` updates it"
                help_text = f"remove `{name}` from `freeze` or from the optimizer of that step"
                updated = span_of(optimizer.loc) if optimizer.loc is not None else None
                secondary = [Label(updated, "updated here")] if updated is not None else []
                report(Diagnostic.error("TL0458", message, Label(where), secondary=secondary,
                                        help=help_text))  # fmt: skip
            else:
                frozen.add(name)
        return frozen

    def _not_taken(self, key: str, op: train.SetOp) -> None:
        if key in STEP_EXCLUSIVE:
            message = f"`{key}` is not taken by a block of `step` lines: each step names its own"
            help_text = "name the objective and the optimizer in a `step` line"
        else:
            message = f"`{key}` is not supported in a block of `step` lines yet"
            help_text = "remove it; docs/train-block.md lists what several steps support"
        _error_at(span_of(op), "TL0431", message, help_text)

    def _optimizer(self, optimizer: StepOptimizer) -> None:
        """The optimizer's arguments against the catalogue; its own `lr_schedule` and
        `grad_clip` (objectives.PER_OPTIMIZER) as the block-level keys are checked."""
        where = span_of(optimizer.loc)
        for key, value in optimizer.kwargs:
            if key in PER_OPTIMIZER:
                self._per_optimizer(key, value, where)  # type: ignore[arg-type]
        kwargs = tuple((k, v) for k, v in optimizer.kwargs if k not in PER_OPTIMIZER)
        call = CallValue(optimizer.name, (), kwargs)  # type: ignore[arg-type]
        problem = KEYS["optimizer"].checked("optimizer", call)
        if problem is not None:
            _error_at(where, problem.code, problem.message, problem.help)

    def _per_optimizer(self, key: str, value: Evaluated, where: Span | None) -> None:
        if value is None:
            return  # `lr_schedule=none`: this optimizer opts out of the block's
        problem = SETTINGS[key].check(key, value)
        if problem is not None:
            _error_at(where, problem.code, problem.message, problem.help)
            return
        call = as_call(value) if key == "lr_schedule" else None
        if call is not None and call.name in PER_EPOCH:
            message = (
                f"`{call.name}` steps on the validation loss after each epoch; the optimizers "
                "of `step` lines take schedules of their optimizer steps"
            )
            help_text = "use a per-step schedule: `cosine(...)`, `linear(...)` or `step(...)`"
            _error_at(where, "TL0456", message, help_text)

    def _step_models(
        self, step: Step, optimizer: StepOptimizer, owners: dict[str, Step],
        groups: dict[str, Attribute],
    ) -> None:  # fmt: skip
        """TL0433 for an optimizer over nothing or over a name that is no model or group;
        TL0432 for a whole model in two optimizers (step_groups.py checks groups' parameters)."""
        where = span_of(optimizer.loc)
        if not optimizer.args:
            message = f"the optimizer of step `{step.objective}` updates nothing"
            help_text = f"name the models it updates: `{optimizer.name}({self.models[0]}, ...)`"
            _error_at(where, "TL0433", message, help_text)
        for model in optimizer.whole_models():
            if model in groups:
                continue
            if model not in self.models:
                guess = did_you_mean(model, [*self.models, *groups])
                message = f"`{model}` is not a model of this train block"
                listed = ", ".join(f"`{m}`" for m in self.models)
                help_text = f"did you mean `{guess}`?" if guess else f"its models: {listed}"
                _error_at(where, "TL0433", message, help_text)
            elif model in owners:
                first = owners[model]
                message = (
                    f"`{model}` is updated by two optimizers: steps `{first.objective}` "
                    f"and `{step.objective}`"
                )
                help_text = "give each model's parameters to one optimizer"
                earlier = next(o.loc for o in first.optimizers if model in o.whole_models())
                _error_at(where, "TL0432", message, help_text, span_of(earlier))
            else:
                owners[model] = step

    def _reaches(self, step: Step, func: FuncOp) -> None:
        for optimizer in step.optimizers:
            for model in optimizer.models:
                if model in self.models and not calls_model(func, self.models.index(model)):
                    name = func.names[self.models.index(model)]
                    message = (
                        f"the objective `{step.objective}` never calls `{name}`, so the "
                        f"optimizer of this step gets no gradients for `{model}`"
                    )
                    help_text = (
                        f"call `{name}(...)` in `{step.objective}`, or optimize another model"
                    )
                    _error_at(span_of(optimizer.loc), "TL0434", message, help_text)

    def _frozen(self, model: str) -> None:
        locs = self.loop.model_locs.data if self.loop.model_locs is not None else []
        where = next((span_of(loc) for loc, m in zip(locs, self.models, strict=False)
                      if m == model), None)  # fmt: skip
        message = f"no step's optimizer updates `{model}`: it stays frozen (run under no_grad)"
        help_text = (
            f"if it should train, add `step NAME with Adam({model}, ...)`; if it is frozen on "
            f"purpose (a teacher), say so: `freeze = [{model}]`"
        )
        if where is not None:
            report(Diagnostic.warning("TL0435", message, Label(where), help=help_text))


@dataclass
class CarryChecker:
    """A block's `carry NAME = none` lines: each needs its initial value, the block an
    objective (which takes and returns it: objectives.py checks that) and data whose batches
    continue one another."""

    module: ModuleOp
    loop: train.LoopOp

    def check(self) -> None:
        carries = self.loop.carries()
        for op in carries:
            self._initial(op)
        self._unique(carries)
        self._objective(carries[0])
        for op in carries:
            self._sharded_start(op)
        self._ordered_data(carries[0])

    def _initial(self, op: train.CarryOp) -> None:
        var = op.var.data
        if op.init is None:
            message = f"the carried value `{var}` has no initial value"
            help_text = f"write `carry {var} = none`: a recurrent layer starts from zeros"
            _error_at(span_of(op), "TL0445", message, help_text)
        elif initial_paths(op.init) is not None:
            self._learned(op, initial_paths(op.init) or [])
        elif not isinstance(op.init, NoneValueAttr):
            message = (
                f"the carried value `{var}` must start from `none` (the zero state) or from "
                "parameters of a model"
            )
            help_text = (
                f"write `carry {var} = none`: the recurrent layers it feeds start from zeros; "
                f"or a learned start, `carry {var} = net.h0` with `layer h0 = Parameter(...)`"
            )
            _error_at(span_of(op.init_loc) or span_of(op), "TL0445", message, help_text)

    def _learned(self, op: train.CarryOp, paths: list[str]) -> None:
        """`carry state = (net.h0, net.c0)`: each a `Parameter` of a model of the block
        (TL0465), which the epoch's first batch starts from."""
        models = self.loop.model_names()
        where = span_of(op.init_loc) or span_of(op)
        for path in paths:
            if parameter_type(self.module, path) is not None and path.split(".")[0] in models:
                continue
            instance, _, name = path.partition(".")
            listed = ", ".join(f"`{m}`" for m in models)
            if instance not in models:
                message = f"`{instance}` in `{path}` is not a model of this train block"
                help_text = f"a learned start is a `Parameter` of one of its models: {listed}"
            else:
                message = f"`{path}` is not a `Parameter` of `{instance}`"
                declared = layer_kind(self.module, instance, name)
                help_text = (
                    f"declare it in `{instance}`'s model, as `layer {name or 'h0'} = "
                    "Parameter(num_layers, 1, hidden)`, and expand it to the batch in the "
                    "objective"
                )
                if declared is not None:
                    help_text = (
                        f"`{name}` is a `{declared}` layer; a learned start is a `Parameter` "
                        "of the model, as `layer h0 = Parameter(num_layers, 1, hidden)`"
                    )
            _error_at(where, "TL0465", message, help_text)

    def _unique(self, carries: list[train.CarryOp]) -> None:
        seen: dict[str, train.CarryOp] = {}
        for op in carries:
            first = seen.setdefault(op.var.data, op)
            if first is not op:
                message = f"`{op.var.data}` is carried twice"
                _error_at(span_of(op), "TL0449", message, "keep one `carry` line for it",
                          span_of(first), "first carried here")  # fmt: skip

    def _objective(self, op: train.CarryOp) -> None:
        if self.loop.runs_objectives():
            return
        var = op.var.data
        message = (
            f"the carried value `{var}` needs an objective that takes and returns it; "
            "`loss` computes a batch's loss from one output"
        )
        help_text = (
            f"write `fn NAME(net, x, y, {var})` returning `(loss, {var})` and set "
            "`objective = NAME`"
        )
        _error_at(span_of(op), "TL0446", message, help_text)

    def _sharded_start(self, op: train.CarryOp) -> None:
        """A learned start under FSDP: the objective would read the `Parameter`'s shard."""
        distributed = self.loop.setting("distributed")
        if distributed is None or evaluate(distributed, {}) != "fsdp":
            return
        if op.init is None or initial_paths(op.init) is None:
            return
        message = (
            f'a learned start of `{op.var.data}` is not supported with `distributed = "fsdp"`: '
            "the objective would read one rank's shard of the parameter"
        )
        help_text = "start from `none`, or use `distributed = ddp`, which carries learned starts"
        _error_at(span_of(op.init_loc) or span_of(op), "TL0449", message, help_text)

    def _ordered_data(self, op: train.CarryOp) -> None:
        """The carried value continues the previous batch: each batch must continue it too."""
        data = lookup_symbol(self.module, self.loop.data, train.DatasetOp)
        if not isinstance(data, train.DatasetOp) or data.source is None:
            return
        source = data.source.data
        if source in ORDERED_SOURCES:
            return
        var = op.var.data
        message = (
            f"the carried value `{var}` needs batches that continue one another, but "
            f"`{source}` data are shuffled"
        )
        help_text = (
            'load the text as streams: `load_dataset("words", path="stdlib", block_size=35)` '
            "takes its windows in order"
        )
        where = span_of(self.loop.data_loc) if self.loop.data_loc is not None else None
        _error_at(where or span_of(op), "TL0448", message, help_text, span_of(op), "carried here")


def _options_problem(
    optimizer: str, options: tuple[tuple[str, object], ...]
) -> tuple[str, str, str | None] | None:
    """What is wrong with per-group options (`gains(weight_decay=0.0)`) for `optimizer`."""
    call = CallValue(optimizer, (), options)  # type: ignore[arg-type]
    problem = KEYS["optimizer"].checked("optimizer", call)
    return (problem.code, problem.message, problem.help) if problem is not None else None


def _error_at(
    where: Span | None, code: str, message: str, help_text: str | None,
    earlier: Span | None = None, earlier_label: str = "first named here",
) -> None:  # fmt: skip
    if where is None:
        return
    secondary = [Label(earlier, earlier_label)] if earlier is not None else []
    report(Diagnostic.error(code, message, Label(where), secondary=secondary, help=help_text))


def _synthetic_warning(op: train.DatasetOp) -> None:
    span = span_at(op)
    message = "`load_dataset()` names no data: training uses random synthetic samples"
    note = "their shape and classes are inferred from the model's input and output"
    help_text = (
        'name a dataset, as in `load_dataset("digits")`, or a file: '
        '`load_dataset("data/train.npz")`'
    )
    report(Diagnostic.warning("TL0707", message, Label(span), notes=[note], help=help_text))


def _forward_field_unknown(
    module: ModuleOp, loop: train.LoopOp, info: DatasetInfo, by_field: LossFields
) -> None:
    """TL0441: a `loss` block over named fields feeds each forward parameter the field it
    names; this one names none."""
    assert by_field.unknown is not None
    name = by_field.inputs[by_field.unknown]
    instance = lookup_symbol(module, loop.model, InstanceOp)
    model_name = instance.model.root_reference.data if instance is not None else "model"
    model = models_of(module).get(model_name)
    forward = forward_of(model) if model is not None else None
    span = span_at(forward) if forward is not None else span_at(loop)
    span = named_parameter_span(span, name)
    message = (
        f"`{name}` is not a field of `{info.name}`: a `loss` block feeds `{model_name}`'s "
        "forward the fields its parameters name"
    )
    names = [f.name for f in info.fields or ()]
    guess = did_you_mean(name, names)
    help_text = (
        f"did you mean `{guess}`?"
        if guess
        else f"name the forward's parameters after the fields: {field_listing(info)}"
    )
    data_span = span_of(loop.data_loc) if loop.data_loc is not None else None
    secondary = [Label(data_span, "the fields come from here")] if data_span is not None else []
    report(Diagnostic.error("TL0441", message, Label(span), secondary=secondary, help=help_text))


def _target_unknown(loop: train.LoopOp, info: DatasetInfo, target: str) -> None:
    """TL0470: the loss's target is not a field (`target = NAME`, or no `label` or `y`)."""
    names = [f.name for f in info.fields or ()]
    op = loop.settings().get("target")
    if op is not None:
        span = (span_of(op.value_loc) if op.value_loc is not None else None) or span_at(op)
        message = (
            f"`{target}` is not a field of `{info.name}`: `target` names the field the loss "
            "compares the output with"
        )
        guess = did_you_mean(target, names)
        help_text = f"did you mean `{guess}`?" if guess else f"name one of {field_listing(info)}"
    else:
        span = (span_of(loop.data_loc) if loop.data_loc is not None else None) or span_at(loop)
        message = (
            f"`{info.name}` has no field `label` or `y` for the loss: it yields "
            f"{field_listing(info)}"
        )
        help_text = "name the field the loss compares the output with: `target = FIELD`"
    report(Diagnostic.error("TL0470", message, Label(span), help=help_text))


def _no_target(loop: train.LoopOp, what: str) -> None:
    """TL0471: `target` picks the loss's field of data of named fields, and only there."""
    op = loop.settings().get("target")
    if op is None:
        return
    message = f"`target` picks a field for the loss, and {what} has none to pick"
    help_text = (
        "remove `target`: each objective receives its fields by name"
        if "objectives" in what
        else "remove `target`: the loss takes the data's targets"
    )
    report(Diagnostic.error("TL0471", message, Label(span_at(op)), help=help_text))


def _dataset_error(op: train.DatasetOp, error: DatasetError | DatasetProblem) -> None:
    span = span_at(op)
    if error.option is not None and op.option_locs is not None:
        keys = list(op.options.data)
        if error.option in keys:
            span = span_of(op.option_locs.data[keys.index(error.option)]) or span
    if isinstance(error, DatasetProblem) and error.is_warning:
        report(Diagnostic.warning(error.code, error.message, Label(span), help=error.help))
        return
    report(Diagnostic.error(error.code, error.message, Label(span), help=error.help))


def _has_backward(module: ModuleOp, call: KernelCallOp) -> bool:
    """Whether the called kernel was given a backward (`@kernel(backward=...)`)."""
    func = lookup_symbol(module, call.kernel.root_reference.data, kernel.FuncOp)
    return func is not None and func.backward is not None


def _trains_anything(forward: Operation, stops: list[KernelCallOp]) -> bool:
    """Whether a layer reaches the forward's return value without passing a kernel in `stops`."""
    returns = [o for o in forward.walk() if isinstance(o, ReturnOp)]
    seen: set[Operation] = set()
    pending = [v.owner for r in returns for v in r.operands]
    while pending:
        owner = pending.pop()
        if not isinstance(owner, Operation) or owner in seen or owner in stops:
            continue
        if isinstance(owner, ApplyOp):
            return True
        seen.add(owner)
        pending += [operand.owner for operand in owner.operands]
    return False


def _layers_feeding(op: KernelCallOp, forward: Operation) -> list[str]:
    """The layers whose outputs reach `op`'s arguments, in the order the forward applies them."""
    upstream: set[Operation] = set()
    pending = [arg.owner for arg in op.args]
    while pending:
        owner = pending.pop()
        if isinstance(owner, Operation) and owner not in upstream:  # else a block argument
            upstream.add(owner)
            pending += [operand.owner for operand in owner.operands]
    applied = [o for o in forward.walk() if isinstance(o, ApplyOp) and o in upstream]
    return list(dict.fromkeys(a.layer.root_reference.data for a in applied))


@dataclass(frozen=True)
class CheckTrainPass(TLPass):
    name = "check-train"
    requires = ("shape-inference",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, train.LoopOp)]:
            LoopChecker(op, loop).check()


def _holds_calls(value: Attribute) -> bool:
    return isinstance(value, ArrayAttr) and any(isinstance(a, CallAttr) for a in value.data)
