"""Every optimizer a train block may name, one record each.

    optimizer = AdamW(lr=3e-4, weight_decay=0.1)

A record says what check-train accepts (its arguments, with types and ranges),
what the script builds (`torch.optim.AdamW`), and what it costs: `state` is how
many fp32 tensors of the parameters' size the optimizer keeps between steps
(Adam's two moments), `temporaries` how many a foreach step allocates while it
runs; tlc info's memory budget (analysis/memory.py) reads both. Adding an
optimizer is one record here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorloom.catalogue.args import BETAS, EPS, LR, MOMENTUM, WEIGHT_DECAY, Arg, arg_names


@dataclass(frozen=True, slots=True)
class OptimizerSpec:
    name: str
    summary: str
    args: tuple[Arg, ...]
    state: int
    temporaries: int
    momentum_state: int = 0  # extra state when `momentum` is non-zero (SGD's buffer)
    default_lr: float = 0.001  # torch.optim's default: what a block that sets no `lr` gets
    default_weight_decay: float = 0.0  # torch.optim's, for a block that sets no `weight_decay`

    @property
    def torch(self) -> str:
        return f"torch.optim.{self.name}"

    @property
    def keywords(self) -> tuple[str, ...]:
        return arg_names(self.args)


def _flags(*names: str) -> tuple[Arg, ...]:
    return tuple(Arg(name, "bool") for name in names)


_ADAM_ARGS = (LR, BETAS, EPS, WEIGHT_DECAY, Arg("amsgrad", "bool"),
              *_flags("foreach", "maximize", "capturable", "differentiable", "fused"))  # fmt: skip

OPTIMIZER_SPECS: tuple[OptimizerSpec, ...] = (
    OptimizerSpec("Adam", "Adam: adaptive moments", _ADAM_ARGS, 2, 1),
    OptimizerSpec(
        "AdamW", "Adam with decoupled weight decay", _ADAM_ARGS, 2, 1, default_weight_decay=0.01
    ),
    OptimizerSpec(
        "SGD", "stochastic gradient descent, with optional momentum",
        (LR, MOMENTUM, Arg("dampening", "float"), WEIGHT_DECAY, Arg("nesterov", "bool"),
         *_flags("maximize", "foreach", "differentiable", "fused")),
        0, 0, momentum_state=1,
    ),
    OptimizerSpec(
        "RMSprop", "divides by a running RMS of the gradients",
        (LR, Arg("alpha", "float", low=0.0), EPS, WEIGHT_DECAY, MOMENTUM, Arg("centered", "bool"),
         *_flags("capturable", "foreach", "maximize", "differentiable")),
        1, 1, default_lr=0.01,
    ),
    OptimizerSpec(
        "Adagrad", "per-parameter rates from summed squared gradients",
        (LR, Arg("lr_decay", "float", low=0.0, open_low=False), WEIGHT_DECAY,
         Arg("initial_accumulator_value", "float", low=0.0, open_low=False), EPS,
         *_flags("foreach", "maximize", "differentiable", "fused")),
        1, 1, default_lr=0.01,
    ),
    OptimizerSpec(
        "Adadelta", "Adagrad with a running window",
        (LR, Arg("rho", "float", low=0.0, high=1.0), EPS, WEIGHT_DECAY,
         *_flags("foreach", "capturable", "maximize", "differentiable")),
        2, 2, default_lr=1.0,
    ),
    OptimizerSpec(
        "Adamax", "Adam with the infinity norm",
        (LR, BETAS, EPS, WEIGHT_DECAY,
         *_flags("foreach", "maximize", "differentiable", "capturable")),
        2, 1, default_lr=0.002,
    ),
    OptimizerSpec(
        "NAdam", "Adam with Nesterov momentum",
        (LR, BETAS, EPS, WEIGHT_DECAY, Arg("momentum_decay", "float", low=0.0, open_low=False),
         Arg("decoupled_weight_decay", "bool"),
         *_flags("foreach", "maximize", "capturable", "differentiable")),
        2, 1, default_lr=0.002,
    ),
    OptimizerSpec(
        "Muon", "momentum orthogonalised by Newton-Schulz; 2-D parameters only (torch 2.9+)",
        (LR, WEIGHT_DECAY, MOMENTUM, Arg("nesterov", "bool"), Arg("ns_coefficients", "floats"),
         EPS, Arg("ns_steps", "int", low=1, open_low=False),
         Arg("adjust_lr_fn", "str", choices=("original", "match_rms_adamw"))),
        1, 1, default_weight_decay=0.1,
    ),
    OptimizerSpec(
        "RAdam", "Adam with a rectified warm-up of the variance",
        (LR, BETAS, EPS, WEIGHT_DECAY, Arg("decoupled_weight_decay", "bool"),
         *_flags("foreach", "maximize", "capturable", "differentiable")),
        2, 1,
    ),
)  # fmt: skip

OPTIMIZERS: dict[str, OptimizerSpec] = {spec.name: spec for spec in OPTIMIZER_SPECS}
"""Optimizer records by name (the torch.optim class name)."""
