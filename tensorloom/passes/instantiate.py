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

A config that has no value (`resolve-nml` reported why) is left out, as it is
from `model_env`. When a value cannot be an attribute (an integer past 64 bits:
the checks report it), the instance gets no `config` and its readers evaluate
the model's defaults as before. The model's own ops keep their config
references: the emitted model still takes its configs as constructor arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tensorloom.dialects.nml import InstanceOp, ModelOp
from tensorloom.passes.model_env import (
    INSTANCE_CONFIG,
    config_attr,
    evaluate_kwargs,
    lookup_symbol,
    model_env,
)


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
            op.attributes[INSTANCE_CONFIG] = attr


@dataclass(frozen=True)
class InstantiatePass(ModulePass):
    name = "instantiate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        instantiate(op)
