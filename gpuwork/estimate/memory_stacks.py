"""What a software stack's own code keeps in memory beyond the eager Hugging Face step (stacks.csv memory columns).

Pure helpers of ``gpuwork.estimate.memory``: the returned-logits copy of older Unsloth releases ([M4]), the chunk of
Liger's fused linear cross-entropy ([M2]), and Lit-GPT 2023's FSDP1 unit gradients ([M5]); sources in
gpuwork/facts/data/rates_sources.md.
"""

from __future__ import annotations

import math

from gpuwork.facts.rates import StackProfile
from gpuwork.facts.spec import ModelSpec, ParamCounts
from gpuwork.plan import Task, TrainPlan


def returned_logits_copy(spec: ModelSpec, plan: TrainPlan, loss_kernel: str) -> int:
    """Bytes per token of the fp32 copy of returned logits: older Unsloth models return them beside the loss, and
    accelerate's mixed-precision wrapper (convert_outputs_to_fp32) hands them to the Trainer as fp32, held until
    compute_loss returns ([M4], docs/memory_unsloth_releases.md)."""
    returned = spec.task is Task.CAUSAL_LM and loss_kernel == "inplace-returned" and plan.precision.is_mixed
    return 4 * spec.vocab_size if returned else 0


def chunked_logits_bytes(spec: ModelSpec, tokens: int, dtype_bytes: int) -> int:
    """One chunk of logits in Liger's fused linear cross-entropy: next_power_of_2(ceil(BT / ceil(V / H))) rows
    (at most BT) of V logits in the input dtype, so about BT x H elements whatever the vocabulary
    (liger_kernel/ops/fused_linear_cross_entropy.py)."""
    inc = max(math.ceil(spec.vocab_size / spec.hidden_size), 1)
    rows = min(1 << max(math.ceil(tokens / inc) - 1, 0).bit_length(), tokens)
    return rows * spec.vocab_size * dtype_bytes


def flat_unit_gradients(spec: ModelSpec, plan: TrainPlan, counts: ParamCounts,
                        profile: StackProfile | None) -> tuple[int, int] | None:
    """(gradients kept after the step's sync, gradients alive through the accumulation micro-batches) per GPU where
    a stack's FSDP1 units hold frozen weights and adapters in one flat parameter and accumulate under ``no_sync``
    (stacks.csv fsdp_grads unit-unsharded, [M5]); None elsewhere.

    The flat parameter needs a gradient, so every block's gradient has the whole block's size, in the compute dtype
    (bf16-true: the weights' own). Under no_sync it stays unsharded from the first micro-batch's backward to the
    step's last one, on every rank; the sync reduce-scatters it to a 1/N shard. The all-frozen root unit keeps none.
    """
    if profile is None or profile.fsdp_grads != "unit-unsharded" or not plan.uses_adapters \
            or not plan.sharding.per_unit or plan.shard_ranks < 2:
        return None
    full = plan.precision.compute_bytes * (spec.params_block * spec.num_layers + counts.adapter)  # + the adapters
    sharded = math.ceil(full / plan.shard_ranks)
    return sharded, (full if plan.grad_accum > 1 else 0)
