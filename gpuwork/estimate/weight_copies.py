"""The weight copies a step holds beside the weights: autocast's 16-bit copies of fp32 weights (mixed precision), the
FP8 weights and their transposes of FP8 linear layers (``TrainPlan.fp8_linear``, docs/fp8.md), and mixed-precision
QLoRA's 16-bit copy of the fp32 head. ``estimate.memory`` adds them to the step's terms ("weight copies")."""

from __future__ import annotations

from gpuwork.estimate.memory_dtypes import fsdp_16bit_compute, peft_qlora_autocast
from gpuwork.facts.rates import StackProfile
from gpuwork.facts.spec import ModelSpec, ParamCounts
from gpuwork.plan import Task, TrainPlan


def autocast_copies(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts) -> int:
    """Bytes of the 16-bit copies autocast caches of the trained linear weights (0 outside mixed precision). Under
    FP8 linears (TrainPlan.fp8_linear) each block linear holds its FP8 weight and its transpose instead (1 + 1 bytes
    a weight, in any precision), and autocast's 16-bit copy is the head's alone (docs/fp8.md)."""
    if plan.fp8_linear:
        return fp8_weight_copies(spec, plan)
    if not plan.precision.is_mixed or plan.uses_adapters or fsdp_16bit_compute(plan):
        return 0
    if plan.sharding.shards_params:
        return 2 * plan.precision.compute_bytes * spec.params_largest_module
    linear_params = sum(lin.count * lin.params for lin in spec.linears)
    return 2 * linear_params * counts.trainable // max(counts.base, 1)


def fp8_weight_copies(spec: ModelSpec, plan: TrainPlan) -> int:
    """FP8 linears: the FP8 weight and its transpose of every block linear (2 bytes a weight; of the largest module
    alone where the weights are sharded, gathered one unit at a time), plus autocast's 16-bit copy of the trained
    head under mixed precision (``autocast_copies``)."""
    block = sum(lin.count * lin.params for lin in spec.linears if lin.in_block)
    head = sum(lin.count * lin.params for lin in spec.linears if not lin.in_block)
    if plan.sharding.shards_params:
        return 2 * spec.params_largest_module
    head_copy = 2 * head if plan.precision.is_mixed and not fsdp_16bit_compute(plan) else 0
    return 2 * block + head_copy  # frozen blocks (method "freeze") run in FP8 too


def autocast_head_copy(spec: ModelSpec, plan: TrainPlan, profile: StackProfile | None) -> int:
    """Mixed-precision QLoRA: autocast casts the frozen fp32 lm_head weight to 16 bit for F.linear, and the matmul
    keeps that copy for the input gradient from the head's forward to its backward (none where a fused linear
    cross-entropy takes the weight itself)."""
    if not peft_qlora_autocast(plan, profile) or spec.task is not Task.CAUSAL_LM:
        return 0
    if profile is not None and profile.loss_kernel == "chunked":
        return 0
    return 2 * spec.vocab_size * spec.hidden_size


__all__ = ["autocast_copies", "autocast_head_copy", "fp8_weight_copies"]
