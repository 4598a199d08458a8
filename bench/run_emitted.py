"""Run an emitted TensorLoom script as `__main__`, then report its peak GPU memory.

    python bench/run_emitted.py bench/generated/mlp_tl_default.py --epochs 5 --metrics m.jsonl

Three options, for the diagnosis of a step's speed, go before the script
(bench/handwritten must be on PYTHONPATH for the second): `--model-only-compile`
compiles the model alone and computes the loss outside it (as the scripts did before
`BatchLoss`), `--profile-steps N` profiles N optimizer steps of the fifth epoch, after its first
(bench/handwritten/step_profile.py; the GPU suite times epochs 2-4 of such a run), and
`--fp8 RECIPE` converts the model's `nn.Linear` layers to torchao's float8 training
(`tensorwise` or `rowwise`; needs torchao) before the script compiles it, as
`gpt2_train.py --fp8` does to nanoGPT's model (a candidate, not a language feature).
It prints the script's own output, then one last line of JSON,
`{"peak_mem_bytes": ..., "wall_s": ..., "exit_code": ...}`; the GPU suite reads it.
The script runs in this process so that `torch.cuda.max_memory_allocated()`
sees its allocations; the script itself is unchanged.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from typing import Any


def exit_code(error: SystemExit) -> int:
    if error.code is None:
        return 0
    return error.code if isinstance(error.code, int) else 1


def batch_loss_class(script_globals: dict[str, Any]) -> Any:
    """The module of a batch's loss the script compiles: its own `BatchLoss(model)`, or the
    runtime's `ModelLoss(model, loss_fn)`."""
    return script_globals.get("BatchLoss") or script_globals["ModelLoss"]


def rewrapped(module: Any, model: Any) -> Any:
    """`module` (a BatchLoss or ModelLoss) around another model."""
    if hasattr(module, "loss_fn"):
        return type(module)(model, module.loss_fn)
    return type(module)(model)


def with_model_only_compile(script_globals: dict[str, Any]) -> None:
    """`BatchLoss(model)` compiled becomes `BatchLoss(compiled model)` (`ModelLoss` alike):
    the loss runs eagerly outside the compiled graph."""
    plain = script_globals["maybe_compile"]
    batch_loss = batch_loss_class(script_globals)

    def maybe_compile(model: Any, *args: Any) -> Any:
        if isinstance(model, batch_loss):
            return rewrapped(model, plain(model.model, *args))
        return plain(model, *args)

    script_globals["maybe_compile"] = maybe_compile


def with_fp8(script_globals: dict[str, Any], recipe: str) -> None:
    """Before the script's first `maybe_compile`, its model's linears whose sizes divide
    by 16 become torchao `Float8Linear`s (in place: the parameters, hence the optimizer's,
    are the same tensors). `BatchLoss(model)` converts the model it wraps."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    plain = script_globals["maybe_compile"]
    batch_loss = batch_loss_class(script_globals)
    config = Float8LinearConfig.from_recipe_name(recipe)
    done: set[int] = set()

    def divisible(module: Any, fqn: str) -> bool:
        return module.in_features % 16 == 0 and module.out_features % 16 == 0

    def maybe_compile(module: Any, *args: Any) -> Any:
        model = module.model if isinstance(module, batch_loss) else module
        if id(model) not in done:
            convert_to_float8_training(model, config=config, module_filter_fn=divisible)
            done.add(id(model))
        return plain(module, *args)

    script_globals["maybe_compile"] = maybe_compile


PROFILED_EPOCH = 4  # the fifth: epochs 2-4 stay unprofiled for the timing


def with_step_profile(script_globals: dict[str, Any], steps: int) -> Any:
    """Profile `steps` optimizer steps of the fifth epoch, after its first."""
    from step_profile import StepProfile  # bench/handwritten, on PYTHONPATH

    profile = StepProfile(after=1, steps=steps)
    plain_epoch, plain_step = script_globals["train_one_epoch"], script_globals["_optimizer_step"]
    state = {"on": False}

    def train_one_epoch(trainer: Any, epoch: int, max_steps: Any) -> Any:
        state["on"] = epoch == PROFILED_EPOCH
        return plain_epoch(trainer, epoch, max_steps)

    def optimizer_step(trainer: Any) -> None:
        plain_step(trainer)
        if state["on"]:
            profile.step()

    script_globals["train_one_epoch"] = train_one_epoch
    script_globals["_optimizer_step"] = optimizer_step
    return profile


def main() -> int:
    argv = sys.argv[1:]
    model_only, profile_steps, fp8 = False, 0, None
    while argv[:1] in (["--model-only-compile"], ["--profile-steps"], ["--fp8"]):
        if argv[0] == "--model-only-compile":
            model_only, argv = True, argv[1:]
        elif argv[0] == "--fp8":
            fp8, argv = argv[1], argv[2:]
        else:
            profile_steps, argv = int(argv[1]), argv[2:]
    if not argv:
        print("usage: run_emitted.py [--model-only-compile] [--profile-steps N] "
              "[--fp8 RECIPE] SCRIPT [ARGS...]", file=sys.stderr)  # fmt: skip
        return 2
    script, *args = argv
    sys.argv = [script, *args]
    start = time.perf_counter()
    code, profile = 0, None
    try:
        if not model_only and not profile_steps and fp8 is None:
            runpy.run_path(script, run_name="__main__")
        else:  # load without running, patch, then run its main
            namespace = runpy.run_path(script, run_name="tensorloom_bench_script")
            script_globals = namespace["main"].__globals__
            if model_only:
                with_model_only_compile(script_globals)
            if profile_steps:
                profile = with_step_profile(script_globals, profile_steps)
            if fp8 is not None:
                with_fp8(script_globals, fp8)
            code = namespace["main"](args)
    except SystemExit as error:
        code = exit_code(error)
    wall_s = time.perf_counter() - start
    import torch

    peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    result = {"peak_mem_bytes": peak, "wall_s": wall_s, "exit_code": code}
    if profile is not None:
        result["profile"] = profile.summary()
    print(json.dumps(result), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
