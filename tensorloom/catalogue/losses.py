"""Every built-in loss, one record each, in both its spellings.

    loss = CrossEntropy(label_smoothing=0.1)          # a train block names the module
    return cross_entropy(out, y, label_smoothing=0.1)  # a loss fn calls the function

A record holds the train block's name (`CrossEntropy`, emitted as
`nn.CrossEntropyLoss`), the function's name where a `.tl` loss fn may call it
(`cross_entropy`, emitted as `F.cross_entropy`), the keyword arguments with their
ranges, which targets it takes (class indices or floats: the shape rule of the
`nml.loss` op and check-train's output-against-dataset check read this),
`saves`, how many fp32 tensors of the output's size it keeps for backward (tlc
info's memory budget), and `flops`, its FLOPs per element of the output (tlc info's
`cost`: 5 for a log-softmax, as for a softmax, 1 for each elementwise step and for
the sum the reduction takes).
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorloom.catalogue.args import REDUCTION, Arg, arg_names
from tensorloom.catalogue.costs import Cost, per_input_element

INDICES = "indices"  # class indices (int64), the input's shape without its class dim
FLOATS = "floats"  # float targets of the input's shape
INDICES_OR_PROBABILITIES = "indices or probabilities"


@dataclass(frozen=True, slots=True)
class LossRecord:
    module: str
    function: str | None
    summary: str
    targets: str
    args: tuple[Arg, ...]
    saves: int
    flops: int
    torch_function: str | None = None
    # What the functional form (`cross_entropy(out, y, ...)`) takes besides `reduction`;
    # the module's `weight` is not one of them.
    function_args: tuple[Arg, ...] = ()
    # `kl_div` also takes "batchmean", the sum over a batch divided by its size (the KL
    # divergence's true value, which distillation scales by T²).
    reductions: tuple[str, ...] = ("mean", "sum", "none")

    @property
    def cost(self) -> Cost:
        """Its cost in `tlc info`: `flops` per element of the output (operand 0), computed
        in float32 under autocast, as PyTorch's losses are."""
        return per_input_element(self.flops, autocast="fp32")

    @property
    def torch_module(self) -> str:
        return f"nn.{self.module}Loss"

    @property
    def keywords(self) -> tuple[str, ...]:
        return arg_names(self.args)

    @property
    def function_keywords(self) -> tuple[str, ...]:
        return arg_names(self.function_args)


WEIGHT = Arg("weight", "any")
IGNORE_INDEX = Arg("ignore_index", "int")
LABEL_SMOOTHING = Arg("label_smoothing", "float", low=0.0, high=1.0, open_low=False)
BETA = Arg("beta", "float", low=0.0, open_low=False)
LOG_TARGET = Arg("log_target", "bool")

LOSS_RECORDS: tuple[LossRecord, ...] = (
    LossRecord("CrossEntropy", "cross_entropy", "log-softmax over dim 1, then NLL",
               INDICES_OR_PROBABILITIES, (WEIGHT, IGNORE_INDEX, REDUCTION, LABEL_SMOOTHING), 1, 6,
               "F.cross_entropy", (LABEL_SMOOTHING, IGNORE_INDEX)),
    LossRecord("NLL", "nll", "negative log-likelihood of log-probabilities", INDICES,
               (WEIGHT, IGNORE_INDEX, REDUCTION), 0, 1, "F.nll_loss", (IGNORE_INDEX,)),
    LossRecord("MSE", "mse", "mean squared error", FLOATS, (REDUCTION,), 2, 3, "F.mse_loss"),
    LossRecord("L1", "l1", "mean absolute error", FLOATS, (REDUCTION,), 2, 3, "F.l1_loss"),
    LossRecord("SmoothL1", "smooth_l1", "Huber-like L1", FLOATS,
               (REDUCTION, BETA), 2, 5, "F.smooth_l1_loss", (BETA,)),
    LossRecord("Huber", None, "squared error near 0, absolute error beyond `delta`", FLOATS,
               (REDUCTION, Arg("delta", "float", low=0.0)), 2, 5),
    LossRecord("BCE", "binary_cross_entropy", "binary cross-entropy of probabilities", FLOATS,
               (WEIGHT, REDUCTION), 2, 7, "F.binary_cross_entropy"),
    LossRecord("BCEWithLogits", "bce_with_logits", "binary cross-entropy of logits", FLOATS,
               (WEIGHT, REDUCTION, Arg("pos_weight", "any")), 2, 7,
               "F.binary_cross_entropy_with_logits"),
    LossRecord("KLDiv", "kl_div", "KL divergence; the input is log-probabilities", FLOATS,
               (REDUCTION, LOG_TARGET), 2, 4, "F.kl_div", (LOG_TARGET,),
               ("mean", "sum", "none", "batchmean")),
)  # fmt: skip

TRAIN_LOSSES: dict[str, LossRecord] = {r.module: r for r in LOSS_RECORDS}
"""The losses a train block names (`loss = CrossEntropy`), by module name."""

FUNCTIONAL_LOSSES: dict[str, LossRecord] = {r.function: r for r in LOSS_RECORDS if r.function}
"""The losses a `.tl` loss fn may call (`cross_entropy(out, y)`), by function name."""
