"""`tlc info`'s activations against the bytes autograd saves for the emitted model, on the CPU.

The emitted model runs one forward under `torch.autograd.graph.saved_tensors_hooks`;
every storage a saved tensor lives in is counted once, the parameters' own storages
left out (autograd keeps a weight it saves without a copy). That sum is the memory the
forward leaves alive for backward, what the budget's `activations` term stands for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tensorloom.analysis.memory import Training, training_budget
from tensorloom.analysis.profile import ProfileOptions, profile_file
from tests.e2e.test_info_params import emitted

# A tied LM head, as GPT-2 and Mamba write theirs: `x @ wte.weight.T` saves the
# embedding's own weight (a view of it), no new memory.
TIED = """
@model TiedLM:
    @config:
        vocab = 1000
        d = 32

    @layers:
        wte = Embedding(vocab, d)
        ln  = LayerNorm(d)
        fc  = Linear(d, d)

    @forward(idx: Tensor[B, T]):
        x = ln(relu(fc(wte(idx))))
        return x @ wte.weight.T
"""


def saved_bytes(model: torch.nn.Module, *inputs: Any) -> int:
    """The bytes of the storages autograd saves in one forward, each once, weights left out."""
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(*inputs)
    return sum(storages.values())


def test_a_tied_head_saves_no_copy_of_the_weight(tmp_path: Path) -> None:
    path = tmp_path / "tied.nml"
    path.write_text(TIED)
    result, profiles = profile_file(path, ProfileOptions(4, "fp32", {"T": 16}))
    assert result.ok
    profile = profiles[0]
    module, _ = emitted(path)
    model = module.TiedLM().train()
    measured = saved_bytes(model, torch.randint(0, 1000, (4, 16)))
    assert profile.activation_bytes == measured
    matmul = profile.layers[-1]
    # the matmul saves its left operand, ln's output, and the weight at no cost
    assert (matmul.kind, matmul.activation_bytes) == ("matmul", 4 * 16 * 32 * 4)


def test_the_head_backward_holds_the_logits_gradient_once(tmp_path: Path) -> None:
    """Without a loss the step's backward starts from the logits' gradient and computes the
    head input's, [4, 16, 1000] and [4, 16, 32] fp32: not the logits' size twice."""
    path = tmp_path / "tied.nml"
    path.write_text(TIED)
    _, profiles = profile_file(path, ProfileOptions(4, "fp32", {"T": 16}))
    budget = training_budget(profiles[0], Training())
    assert budget is not None
    assert budget.backward_working == 4 * 16 * 1000 * 4 + 4 * 16 * 32 * 4
    with_loss = training_budget(profiles[0], Training(loss="CrossEntropy"))
    assert with_loss is not None  # the loss's: its fp32 log-probabilities' and the logits'
    assert with_loss.backward_working == 2 * 4 * 16 * 1000 * 4


def test_under_autocast_the_head_saves_the_weights_low_precision_copy(tmp_path: Path) -> None:
    """Autocast casts `wte.weight.T` to bf16 for the matmul, and that copy is saved."""
    path = tmp_path / "tied.nml"
    path.write_text(TIED)
    _, fp32 = profile_file(path, ProfileOptions(4, "fp32", {"T": 16}))
    _, bf16 = profile_file(path, ProfileOptions(4, "bf16", {"T": 16}))
    x = 4 * 16 * 32  # ln's output, fp32 in both: autocast runs LayerNorm in fp32
    assert fp32[0].layers[-1].activation_bytes == 4 * x
    assert bf16[0].layers[-1].activation_bytes == 2 * x + 2 * 1000 * 32


# Heads merged after a matmul (a copy: the transposed result is not contiguous) and after
# `scaled_dot_product_attention` (a view: the fused kernels lay their result out as
# [B, T, heads, d] already; on the CPU as the query is laid out, here split from [B, T, d]).
HEADS = """
@model Manual:
    @layers:
        proj = Linear(32, 32)

    @forward(x: Tensor[B, T, 32]):
        let q = x.view(B, 4, T, 8)
        let y = relu(softmax(q @ q.transpose(2, 3), dim=-1) @ q)
        return proj(y.transpose(1, 2).reshape(B, T, 32))

@model Fused:
    @layers:
        proj = Linear(32, 32)

    @forward(x: Tensor[B, T, 32]):
        let q = x.view(B, T, 4, 8).transpose(1, 2)
        let y = scaled_dot_product_attention(q, q, q)
        return proj(y.transpose(1, 2).reshape(B, T, 32))
"""


def test_merging_heads_copies_a_matmuls_result_not_attentions(tmp_path: Path) -> None:
    path = tmp_path / "heads.nml"
    path.write_text(HEADS)
    result, profiles = profile_file(path, ProfileOptions(2, "fp32", {"T": 16}))
    assert result.ok
    module, _ = emitted(path)
    for profile in profiles:
        model = getattr(module, profile.model)().train()
        x = torch.randn(2, 16, 32, requires_grad=True)
        assert profile.activation_bytes == saved_bytes(model, x), profile.model
    manual, fused = (next(p for p in profiles if p.model == m) for m in ("Manual", "Fused"))
    # relu saves its [2, 4, 16, 8] result; proj saves the merged copy of it, 4 bytes each
    assert manual.layers[-1].activation_bytes == 2 * 16 * 32 * 4
    assert fused.layers[-1].activation_bytes == 0  # attention's own saved result, viewed


# A gated unit over the halves of one projection: saving either half keeps the whole
# projection alive (one storage), as Mamba's `u, z = in_proj(x).split(d)` does.
GATE = """
@model Gate:
    @layers:
        fc = Linear(8, 32)

    @forward(x: Tensor[B, 8]):
        let (u, z) = fc(x).split(16, dim=-1)
        return u * silu(z)
"""


def test_saving_a_split_half_keeps_the_whole_tensor(tmp_path: Path) -> None:
    path = tmp_path / "gate.nml"
    path.write_text(GATE)
    result, profiles = profile_file(path, ProfileOptions(4, "fp32"))
    assert result.ok
    module, _ = emitted(path)
    model = module.Gate().train()
    measured = saved_bytes(model, torch.randn(4, 8, requires_grad=True))
    # fc's input [4, 8], its whole output [4, 32] once, silu's result [4, 16]
    assert profiles[0].activation_bytes == measured == 4 * (4 * 8 + 4 * 32 + 4 * 16)
