"""What a block keeps under torchtitan's op-level selective checkpointing (``TrainPlan.recompute`` "ops").

torchtitan (torchtitan/distributed/activation_checkpoint.py, ``mode = "selective"``, ``selective_ac_option = "op"``)
wraps each block in ``torch.utils.checkpoint`` with a policy over the aten ops the block calls: the outputs of the
ops on its save list are kept for backward (``MUST_SAVE``) and every other op runs again in backward
(``PREFER_RECOMPUTE``). The save list holds the fused SDPA kernels and ``torch.mm``; of the mm calls, counted in
the order the block makes them, every second one is recomputed after all. So a Llama block keeps the outputs of
q_proj, v_proj, gate_proj and down_proj (calls 1, 3, 5, 7) and of its attention kernel, and recomputes k_proj,
o_proj and up_proj with the norms, rotary, activation and products (docs/recompute.md).

What this module decides from the block's linears, in the order ``estimate.ops`` walks them:
- a linear with a bias calls ``addmm``, which is not on the list: recomputed, and not counted;
- a LoRA adapter's two matmuls (peft: the base layer first, then lora_A, then lora_B) are mm calls like any other;
- MoE expert matmuls (grouped, or a loop over the experts that received tokens) are left out of the count and
  recomputed: their number of mm calls depends on the routing.
Eager attention's matmuls are ``bmm`` (recomputed); the fused kernel's output and logsumexp are kept.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from gpuwork.errors import PlanError
from gpuwork.estimate.linear_groups import block_groups
from gpuwork.facts.spec import ModelSpec, lora_target_linears
from gpuwork.message import msg
from gpuwork.plan import Attention, Precision, Recompute, TrainPlan


class BlockMatmul(NamedTuple):
    """One matmul a block's forward calls: the op's name in ``estimate.ops``, its output columns, and whether it
    adds a bias in the same call (addmm)."""

    name: str
    out_features: int
    bias: bool
    adapter: bool  # a LoRA matmul (its output in the adapters' dtype)
    weights: int  # weights it multiplies, over every block that holds it


_GROUP_ORDER = ("attn_in", "attn_out", "mlp_in", "mlp_hidden")


def block_matmuls(spec: ModelSpec, plan: TrainPlan) -> tuple[BlockMatmul, ...]:
    """The block's dense matmuls in call order (MoE experts left out)."""
    return _block_matmuls(spec, plan.uses_adapters, plan.lora_targets, plan.lora_r)


@functools.lru_cache(maxsize=256)
def _block_matmuls(spec: ModelSpec, adapters: bool, targets: tuple[str, ...], r: int) -> tuple[BlockMatmul, ...]:
    groups = block_groups(spec)
    lora = {lin.name for lin in lora_target_linears(spec, targets)} if adapters else set()
    out: list[BlockMatmul] = []
    for group in _GROUP_ORDER:
        for lin in groups[group]:
            out.append(BlockMatmul(lin.name, lin.out_features, lin.bias, False, lin.params * lin.count))
            if lin.name in lora:
                out += [BlockMatmul(f"{lin.name} LoRA A", r, False, True, r * lin.in_features * lin.count),
                        BlockMatmul(f"{lin.name} LoRA B", lin.out_features, False, True,
                                    r * lin.out_features * lin.count)]
    return tuple(out)


def kept_matmuls(spec: ModelSpec, plan: TrainPlan) -> tuple[BlockMatmul, ...]:
    """The matmuls whose outputs the op policy keeps: the odd-numbered mm calls (no bias), counted from one."""
    return _kept(block_matmuls(spec, plan))


@functools.lru_cache(maxsize=256)
def _kept(matmuls: tuple[BlockMatmul, ...]) -> tuple[BlockMatmul, ...]:
    calls = [mm for mm in matmuls if not mm.bias]  # addmm is not on the save list
    return tuple(calls[0::2])


def kept_weights(spec: ModelSpec, plan: TrainPlan) -> int:
    """Weights (over all blocks) of the matmuls whose forward the op policy does not re-run."""
    return sum(mm.weights for mm in kept_matmuls(spec, plan)) if ops_policy(plan) else 0


def ops_policy(plan: TrainPlan) -> bool:
    """The plan checkpoints its blocks under torchtitan's op-level policy."""
    return plan.grad_checkpointing and plan.recompute is Recompute.OPS


def check_traced_recompute(plan: TrainPlan, spec: ModelSpec) -> None:
    """The op policy counts a block's mm calls in order, which a traced block profile (a family without a
    hand-written block: its kernels merged by signature) does not keep.

    Raises:
        PlanError: the plan checkpoints under the op policy and the model's block is a traced one.
    """
    if ops_policy(plan):
        raise PlanError("recompute", msg("error.plan.recompute_traced", value=plan.recompute.value,
                                         model_type=spec.model_type or spec.architecture))


def fused_attention(plan: TrainPlan) -> bool:
    """The attention core is one fused kernel (SDPA or flash-attn), not eager's bmm and softmax; fp32 plans take
    the eager path for flash, which has no fp32 kernel (``estimate.ops``)."""
    return not (plan.attention is Attention.EAGER or (plan.precision is Precision.FP32 and plan.attention.is_flash))


def kept_matmul_names(spec: ModelSpec, plan: TrainPlan) -> frozenset[str]:
    """``kept_matmuls``' op names (empty unless the plan checkpoints under the op policy)."""
    if not ops_policy(plan):
        return frozenset()
    return frozenset(mm.name for mm in kept_matmuls(spec, plan))


__all__ = ["BlockMatmul", "block_matmuls", "check_traced_recompute", "fused_attention", "kept_matmul_names",
           "kept_matmuls", "kept_weights", "ops_policy"]
