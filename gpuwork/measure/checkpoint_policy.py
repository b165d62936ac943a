"""The checkpointing a trial or a trace runs for a plan: non-reentrant ``torch.utils.checkpoint`` over each block, and
under ``TrainPlan.recompute`` "ops" torchtitan's op-level selective policy (docs/recompute.md).

The policy, as torchtitan's ``activation_checkpoint.py`` describes it (mode "selective", option "op"): the outputs
of the fused SDPA kernels and of ``aten.mm`` are kept for backward, except every second mm call of the block
(counted separately in the forward and in the recompute, so both agree); every other op is recomputed. The CPU
flash kernel stands in for the CUDA ones on a CPU trial or trace. ``gpuwork.estimate.recompute`` prices the same rule.
"""

from __future__ import annotations

from typing import Any

from gpuwork.plan import Recompute, TrainPlan

# the fused attention kernels whose outputs the policy keeps (the CPU flash kernel: a CPU run's stand-in)
_KEPT_ATTENTION = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                   "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu")


def checkpoint_kwargs(plan: TrainPlan) -> dict[str, Any]:
    """``gradient_checkpointing_kwargs`` for a Hugging Face model: non-reentrant (it works whether or not the
    blocks' inputs require grad), with the op policy's ``context_fn`` where the plan asks for it."""
    kwargs: dict[str, Any] = {"use_reentrant": False}
    if plan.recompute is Recompute.OPS:
        kwargs["context_fn"] = op_policy_contexts
    return kwargs


def op_policy_contexts() -> tuple[Any, Any]:
    """A fresh pair of selective-checkpoint contexts for one block call (the mm count starts again per call)."""
    import torch
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    kept = {getattr(aten, name).default for name in _KEPT_ATTENTION if hasattr(aten, name)}
    calls = {False: 0, True: 0}  # mm calls so far in the forward and in the recompute

    def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        if func is aten.mm.default:
            calls[ctx.is_recompute] += 1
            odd = calls[ctx.is_recompute] % 2 == 1
            return CheckpointPolicy.MUST_SAVE if odd else CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in kept else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


__all__ = ["checkpoint_kwargs", "op_policy_contexts"]
