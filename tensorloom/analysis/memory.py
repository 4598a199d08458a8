"""The GPU memory one training step needs: weights, gradients, optimizer state, activations.

    b = training_budget(profile, Training(precision="bf16", optimizer="AdamW", loss="CrossEntropy"))
    b.terms()        # {"weights": ..., "gradients": ..., "optimizer state": ..., ...}
    b.peak           # what torch.cuda.max_memory_allocated() should report
    b.total          # the peak plus the CUDA context: what the GPU must hold

Assumptions (docs/info.md says more):
- Weights, gradients and optimizer state are fp32 whatever the precision: AMP
  keeps fp32 master weights. Optimizer state is a multiple of the weights
  (Adam/AdamW 2, SGD with momentum 1, without 0, RMSprop 1, ...), and a
  `foreach` step allocates temporaries of that size too (`STEP_TEMPORARIES`).
- Under AMP, autocast keeps a fp16/bf16 copy of every matmul weight until
  backward (2 bytes per such parameter).
- The loss saves its fp32 log-probabilities (CrossEntropy) or its inputs
  (regression losses); backward starts with two fp32 gradients of the output's
  size (the loss's result's and the output's; without a loss the output's only).
  Each layer's or op's backward then holds its output's and its input's gradients
  while the later steps' activations are freed and the weights' gradients are made
  (`BackwardMoment`, `backward_sweep`). Under AMP the loss runs on an fp32
  copy of the output, so the fp16/bf16 output itself is freed before backward
  (GPT-2 at B=16 in bf16 on an H200: 14.5 GiB measured, 1.5 GiB of bf16 logits
  fewer than the sum with it; bench/RESULTS.md).
- `compiled_peak` is the same step under torch.compile: inductor fuses the loss
  into the forward and backward, so no fp32 copy of the output exists; the
  output (in the step's precision) is saved for backward and its gradient is
  the backward's largest new tensor. Activations are taken as eager's.
- The step's peak is the largest of three moments: the start of backward (all
  activations alive, no gradients yet: `zero_grad` sets them to None), the largest
  step of backward, and the optimizer step (gradients, state and temporaries,
  activations freed).
- cuBLAS keeps a 32 MiB workspace per thread on Hopper (the forward's and
  autograd's), and cuBLASLt a 1 MiB one for nn.Linear's fused bias matmul:
  65 MiB, as `bench/memory_check.py explain` lists them on an H200.
- A layer whose backward runs a cuDNN kernel with its own workspace (LSTM,
  GRU) adds the largest such scratch to the backward peak
  (`LayerSpec.scratch_bytes`). cuDNN's convolution workspace is not modelled
  (no rule fits it; docs/info.md), and `tlc info` says so for models with
  convolutions.
- The CUDA context (about 512 MiB) is outside PyTorch's allocator; it is in
  `total`, not in `peak`.

Per rank, under `--nproc N --distributed ddp|fsdp` (`Parallelism`), at the
per-rank batch (a train block's `batch_size` is per process):
- DDP: every rank holds all weights, gradients and optimizer state, plus DDP's
  gradient buckets, a second fp32 copy of the gradients (`comm buffers`).
- FSDP (FSDP2 `fully_shard` on each block and the root): weights, gradients,
  optimizer state and step temporaries are 1/N each (fp32 shards). While a block
  runs, its weights are all-gathered at the training precision (2 bytes under
  bf16/fp16), the next block's are prefetched, and the root's (embeddings, head)
  stay gathered through forward and backward (`gathered weights`); a block's
  backward holds its unsharded gradients at that precision and in fp32 for the
  reduce-scatter (`comm buffers`). Autocast makes no weight copies: the gathered
  weights are already bf16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tensorloom.analysis.profile import BackwardMoment, ModelProfile
from tensorloom.catalogue.losses import TRAIN_LOSSES
from tensorloom.catalogue.optimizers import OPTIMIZERS as OPTIMIZER_SPECS
from tensorloom.catalogue.shapes import concrete

MiB = 1 << 20
WORKSPACE_BYTES = 65 * MiB
CUDA_CONTEXT_BYTES = 512 * MiB
FP32 = 4


@dataclass(frozen=True, slots=True)
class OptimizerModel:
    state: int  # fp32 tensors of the parameters' size kept between steps
    temporaries: int  # fp32 parameter-sized tensors a foreach step allocates


OPTIMIZERS: dict[str, OptimizerModel] = {
    **{name: OptimizerModel(s.state, s.temporaries) for name, s in OPTIMIZER_SPECS.items()},
    "SGD+momentum": OptimizerModel(
        OPTIMIZER_SPECS["SGD"].state + OPTIMIZER_SPECS["SGD"].momentum_state,
        OPTIMIZER_SPECS["SGD"].temporaries,
    ),
}
"""Optimizer state and step temporaries, in multiples of the fp32 weights (from the catalogue)."""

LOSS_SAVES = {name: record.saves for name, record in TRAIN_LOSSES.items()}
"""fp32 tensors of the model output's size the loss saves for backward (from the catalogue)."""


STRATEGIES = ("none", "ddp", "fsdp")


@dataclass(frozen=True, slots=True)
class Parallelism:
    """How the model is spread over `world_size` processes; the FSDP units' sizes."""

    strategy: str = "none"  # "ddp", "fsdp"
    world_size: int = 1
    root_params: int = 0  # FSDP: the parameters outside the blocks (the root unit)
    block_params: int = 0  # FSDP: the largest block's parameters


@dataclass(frozen=True, slots=True)
class OptimizerShare:
    """One optimizer of a block of `step` lines and the model's parameters it updates."""

    name: str  # an OPTIMIZERS key: `Muon`, `AdamW`, `SGD+momentum`
    params: int

    @property
    def state_bytes(self) -> int:
        return OPTIMIZERS.get(self.name, OPTIMIZERS["Adam"]).state * self.params * FP32


@dataclass(frozen=True, slots=True)
class Training:
    precision: str = "fp32"
    optimizer: str = "Adam"
    loss: str | None = None
    checkpointing: bool = False
    parallel: Parallelism = Parallelism()
    trainable: int | None = None  # `freeze`/`lora`: the parameters that train (None: all)
    # a block of `step` lines: each optimizer's share of the model (Muon's blocks, AdamW's
    # rest), each with its own state; `optimizer` is then their names joined
    optimizers: tuple[OptimizerShare, ...] = ()
    adapters: int = 0  # `lora`'s adapters: parameters beside the model's own, all trained


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """The terms of one training step's memory, in bytes."""

    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    activations_checkpointed: int
    weight_casts: int
    loss: int
    backward_working: int
    scratch: int
    step_temporaries: int
    output: int
    output_in_backward: int  # 0 under AMP with a loss: autocast's fp32 copy replaces it
    workspace: int
    cuda_context: int
    checkpointing: bool
    # backward's largest moment after its start: a step's saved activations and every
    # earlier step's, its gradient pair, and the gradients of its and the later steps' weights
    backward_sweep: int = 0
    gathered: int = 0  # FSDP: all-gathered weights (root, current and prefetched block)
    comm_buffers: int = 0  # DDP's gradient buckets; FSDP: a block's unsharded gradients
    strategy: str = "none"
    world_size: int = 1
    output_elements: int = 0
    loss_name: str | None = None

    def terms(self) -> dict[str, int]:
        """The budget as a sum: every term alive at once (an upper bound)."""
        act = self.activations_checkpointed if self.checkpointing else self.activations
        terms = {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer state": self.optimizer_state,
            "activations": act + self.weight_casts + self.loss + self.output_in_backward,
            "workspace": self.workspace + self.scratch,
            "cuda context": self.cuda_context,
        }
        if self.strategy == "fsdp":
            terms["gathered weights"] = self.gathered
        if self.strategy != "none":
            terms["comm buffers"] = self.comm_buffers
        return terms

    @property
    def backward_peak(self) -> int:
        """Backward's start (every activation, the loss's, the loss's gradients) or a later
        step of it (`backward_sweep`), whichever holds more; checkpointed, the start with
        the largest gradient pair."""
        act = self.activations_checkpointed if self.checkpointing else self.activations
        held = act + self.loss + self.backward_working
        if not self.checkpointing:
            held = max(self.activations + self.loss + self.loss_working, self.backward_sweep)
        live = held + self.weight_casts + self.output_in_backward
        live += self.scratch + self.gathered + self.comm_buffers
        return self.weights + self.optimizer_state + live

    @property
    def loss_working(self) -> int:
        """The loss's backward: the gradients of its fp32 result and of the output (a
        CrossEntropy's log-probabilities' and logits'), or, without a loss, the output's."""
        return 2 * self.output_elements * FP32 if self.loss_name else self.output_elements * FP32

    @property
    def compiled_peak(self) -> int:
        """The predicted peak under torch.compile: the loss fused, no fp32 copy of the output;
        the output saved for backward and its gradient alive at once."""
        act = self.activations_checkpointed if self.checkpointing else self.activations
        live = act + self.weight_casts + 2 * self.output + self.scratch
        backward = self.weights + self.optimizer_state + live
        return max(backward, self.step_peak) + self.workspace

    @property
    def step_peak(self) -> int:
        state = self.gradients + self.optimizer_state + self.step_temporaries
        buckets = self.comm_buffers if self.strategy == "ddp" else 0  # DDP's stay allocated
        return self.weights + state + self.output + buckets

    @property
    def peak(self) -> int:
        """The predicted `torch.cuda.max_memory_allocated()` of a training step."""
        return max(self.backward_peak, self.step_peak) + self.workspace

    @property
    def total(self) -> int:
        return self.peak + self.cuda_context

    def dominant(self) -> str:
        terms = self.terms()
        return max(terms, key=lambda k: terms[k])


def training_budget(profile: ModelProfile, training: Training) -> MemoryBudget | None:
    """The budget, or None while the activations are unknown (unbound dims)."""
    act = profile.activation_bytes
    if act is None or profile.output_bytes is None or profile.largest_tensor_bytes is None:
        return None
    parallel = training.parallel
    sharded = parallel.strategy == "fsdp"
    # FSDP2 pads each parameter's dim 0 to a multiple of N; the padding is left out.
    params = profile.params + training.adapters
    shard = math.ceil(params / parallel.world_size) if sharded else params
    weights = shard * FP32
    # frozen weights (`freeze`, `lora`'s base) get no gradients and no optimizer state
    trained = weights if training.trainable is None else min(
        weights, math.ceil(training.trainable / parallel.world_size) * FP32 if sharded
        else training.trainable * FP32
    )  # fmt: skip
    state, temporaries = _optimizer_bytes(training, trained, parallel.world_size if sharded else 1)
    out_elems = _elements(profile)
    loss = LOSS_SAVES.get(training.loss or "", 0) * out_elems * FP32
    # the loss's backward: the gradient of its fp32 result and of the output, both fp32
    working = max(profile.backward_pair_bytes, 2 * out_elems * FP32 if training.loss else 0)
    sweep = max((_moment(m, trained, profile.walked_params) for m in profile.moments), default=0)
    amp = training.precision != "fp32"
    gathered, comm = _communication(profile, parallel, 2 if amp else FP32)
    return MemoryBudget(
        weights=weights,
        gradients=trained,
        optimizer_state=state,
        activations=act,
        activations_checkpointed=profile.checkpointed_activation_bytes or act,
        weight_casts=profile.low_precision_params * 2 if amp and not sharded else 0,
        loss=loss,
        backward_working=working,
        backward_sweep=sweep,
        scratch=profile.scratch_bytes,
        step_temporaries=temporaries,
        output=profile.output_bytes,
        output_in_backward=0 if amp and training.loss else profile.output_bytes,
        workspace=WORKSPACE_BYTES,
        cuda_context=CUDA_CONTEXT_BYTES,
        checkpointing=training.checkpointing,
        gathered=gathered,
        comm_buffers=comm,
        strategy=parallel.strategy,
        world_size=parallel.world_size,
        output_elements=out_elems,
        loss_name=training.loss,
    )


def _moment(moment: BackwardMoment, trained: int, params: int) -> int:
    """What one step of backward holds: the activations still saved, its gradient pair, and
    the gradients already made, of its own weights and the later steps' (the trained
    share of them)."""
    made = trained - trained * moment.params // params if params else trained
    return moment.saved + moment.pair + made


def _optimizer_bytes(training: Training, trained: int, shards: int) -> tuple[int, int]:
    """(optimizer state, step temporaries) in bytes: the block's optimizer over the trained
    weights, or, with several, each over its share (Adam 2x, Muon 1x, SGD+momentum 1x); their
    steps run one after another, so the largest one's temporaries."""
    if not training.optimizers:
        optimizer = OPTIMIZERS.get(training.optimizer, OPTIMIZERS["Adam"])
        return optimizer.state * trained, optimizer.temporaries * trained
    state = temporaries = 0
    for share in training.optimizers:
        model = OPTIMIZERS.get(share.name, OPTIMIZERS["Adam"])
        weights = math.ceil(share.params / shards) * FP32
        state += model.state * weights
        temporaries = max(temporaries, model.temporaries * weights)
    return state, temporaries


def _communication(profile: ModelProfile, parallel: Parallelism, low: int) -> tuple[int, int]:
    """(gathered weights, communication buffers) per rank, in bytes; `low`: bytes per weight."""
    if parallel.strategy == "ddp":  # a group of one is not wrapped in DDP
        return 0, profile.params * FP32 if parallel.world_size > 1 else 0
    if parallel.strategy != "fsdp":
        return 0, 0
    block = parallel.block_params
    return (parallel.root_params + 2 * block) * low, block * (low + FP32)


def _elements(profile: ModelProfile) -> int:
    dims = concrete(profile.output_shape)
    return math.prod(dims) if dims is not None else 0


def optimizer_key(name: str, momentum: float | None = None) -> str:
    """`SGD` with a non-zero momentum has one buffer per parameter."""
    if name == "SGD" and momentum:
        return "SGD+momentum"
    return name


def parse_size(text: str) -> int | None:
    """`80GB`, `80G`, `80GiB`, `24000MB` -> bytes (GB and GiB both 2**30: GPU makers' use)."""
    units = {"": 1, "B": 1, "K": 1 << 10, "M": MiB, "G": 1 << 30, "T": 1 << 40}
    stripped = text.strip().upper().removesuffix("IB").removesuffix("B")
    number = stripped.rstrip("KMGT")
    unit = stripped[len(number) :]
    try:
        value = float(number)
    except ValueError:
        return None
    return int(value * units[unit]) if unit in units and value > 0 else None
