"""What a block keeps under an op-level selective checkpointing policy (``TrainPlan.recompute`` "ops" or "matmuls").

Selective checkpointing (``torch.utils.checkpoint`` with ``create_selective_checkpoint_contexts``) wraps each block
with a policy over the aten ops the block calls: the outputs of the ops the policy saves are kept for backward
(``MUST_SAVE``) and every other op runs again in backward (``PREFER_RECOMPUTE``) (docs/recompute.md).

- "ops", torchtitan's (torchtitan/distributed/activation_checkpoint.py, ``mode = "selective"``,
  ``selective_ac_option = "op"``): the save list holds torch's SDPA kernels and ``torch.mm``; of the mm calls,
  counted in the order the block makes them, every second one is recomputed after all. So a Llama block keeps the
  outputs of q_proj, v_proj, gate_proj and down_proj (calls 1, 3, 5, 7) and of its attention kernel, and recomputes
  k_proj, o_proj and up_proj with the norms, rotary, activation and products. A linear with a bias calls
  ``addmm``, which is not on the list: recomputed, and not counted. Eager attention's matmuls are ``bmm``:
  recomputed.
- "matmuls", the compute-intensive list of torch's selective-checkpointing examples (PyTorch blog "Current and New
  Activation Checkpointing Techniques in PyTorch", 2025): every ``mm``, ``addmm`` and ``bmm`` output and torch's
  SDPA kernels' are kept. Eager attention keeps its two bmm outputs (the scores and P·V) and recomputes the
  softmax.

Under both, a LoRA adapter's two matmuls (peft: the base layer first, then lora_A, then lora_B) are mm calls like
any other; MoE expert matmuls (grouped, or a loop over the experts that received tokens) are left out and
recomputed (their number of mm calls depends on the routing); the flash-attn library's kernels (attention
"flash", "flash3", "flash4") are not aten SDPA ops, so neither list keeps them: the attention runs again.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from gpuwork.errors import PlanError
from gpuwork.estimate.linear_groups import block_groups
from gpuwork.estimate.memory_dtypes import Dtypes
from gpuwork.facts.spec import ModelSpec, lora_target_linears
from gpuwork.message import msg
from gpuwork.plan import Attention, Precision, Recompute, TrainPlan

# torch's SDPA ops the policies keep (attention "cudnn": cuDNN's kernel behind SDPA); not the flash-attn library's
_SDPA_KERNELS = (Attention.SDPA, Attention.CUDNN)
# estimate.ops' names of eager attention's two bmm calls (the scores Q·K^T and P·V)
EAGER_MATMULS = ("attention Q·K^T", "attention P·V")
FUSED_KERNEL = "attention (fused kernel)"


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
    """The block matmuls whose outputs the plan's op-level policy keeps (none without one): every one under
    "matmuls", the odd-numbered mm calls (no bias), counted from one, under "ops"."""
    if not selective(plan):
        return ()
    matmuls = block_matmuls(spec, plan)
    return matmuls if plan.recompute is Recompute.MATMULS else _odd_mm_calls(matmuls)


@functools.lru_cache(maxsize=256)
def _odd_mm_calls(matmuls: tuple[BlockMatmul, ...]) -> tuple[BlockMatmul, ...]:
    calls = [mm for mm in matmuls if not mm.bias]  # addmm is not on torchtitan's save list
    return tuple(calls[0::2])


def kept_weights(spec: ModelSpec, plan: TrainPlan) -> int:
    """Weights (over all blocks) of the matmuls whose forward the op-level policy does not re-run."""
    return sum(mm.weights for mm in kept_matmuls(spec, plan))


def selective(plan: TrainPlan) -> bool:
    """The plan checkpoints its blocks under an op-level policy ("ops" or "matmuls")."""
    return plan.grad_checkpointing and plan.recompute is not Recompute.BLOCK


def attention_kept(plan: TrainPlan) -> str | None:
    """What of the attention core the op-level policy keeps: "kernel" (torch's SDPA kernel: its output and
    logsumexp), "matmuls" (eager attention's two bmm outputs, under "matmuls"), or None (it runs again in the
    recompute: no policy, eager attention under "ops", the flash-attn library's kernels)."""
    if not selective(plan):
        return None
    if fused_attention(plan):
        return "kernel" if plan.attention in _SDPA_KERNELS else None
    return "matmuls" if plan.recompute is Recompute.MATMULS else None


def check_traced_recompute(plan: TrainPlan, spec: ModelSpec) -> None:
    """The op policy counts a block's mm calls in order, which a traced block profile (a family without a
    hand-written block: its kernels merged by signature) does not keep.

    Raises:
        PlanError: the plan checkpoints under the op policy and the model's block is a traced one.
    """
    if selective(plan):
        raise PlanError("recompute", msg("error.plan.recompute_traced", value=plan.recompute.value,
                                         model_type=spec.model_type or spec.architecture))


def fused_attention(plan: TrainPlan) -> bool:
    """The attention core is one fused kernel (SDPA or flash-attn), not eager's bmm and softmax; fp32 plans take
    the eager path for flash, which has no fp32 kernel (``estimate.ops``)."""
    return not (plan.attention is Attention.EAGER or (plan.precision is Precision.FP32 and plan.attention.is_flash))


def kept_op_names(spec: ModelSpec, plan: TrainPlan) -> frozenset[str]:
    """``estimate.ops``' names of the forward ops whose outputs the op-level policy keeps: the recompute leaves them
    out (empty without a policy)."""
    kept = {mm.name for mm in kept_matmuls(spec, plan)}
    attention = attention_kept(plan)
    if attention == "kernel":
        kept.add(FUSED_KERNEL)
    elif attention == "matmuls":
        kept.update(EAGER_MATMULS)
    return frozenset(kept)


def policy_kept_bytes(spec: ModelSpec, plan: TrainPlan, dt: Dtypes) -> tuple[int, ...]:
    """Bytes per token of each tensor an op-level policy keeps per block besides its input (none under whole-block
    checkpointing), in the memory estimate's dtypes: the kept matmuls' outputs, and the SDPA kernel's output and fp32
    logsumexp or eager attention's scores (one row of the attention span per head) and P·V output."""
    kept = tuple(mm.out_features * (dt.adapter if mm.adapter else dt.linear_out) for mm in kept_matmuls(spec, plan))
    a, q_dim = spec.num_heads, spec.num_heads * spec.head_dim
    match attention_kept(plan):
        case "kernel":
            kept += ((dt.attn_saved or dt.linear_out) * q_dim, 4 * a)
        case "matmuls":
            kept += (dt.linear_out * a * plan.attention_span, dt.linear_out * q_dim)
    return kept


__all__ = ["EAGER_MATMULS", "FUSED_KERNEL", "BlockMatmul", "attention_kept", "block_matmuls", "check_traced_recompute",
           "fused_attention", "kept_matmuls", "kept_op_names", "kept_weights", "policy_kept_bytes", "selective"]
