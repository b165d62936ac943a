"""The checkpointing a trial or a trace runs for a plan: non-reentrant ``torch.utils.checkpoint`` over each block, and
under ``TrainPlan.recompute`` "ops" or "matmuls" a selective policy over the block's aten ops (docs/recompute.md).

- "ops", torchtitan's op-level policy as its ``activation_checkpoint.py`` describes it (mode "selective", option
  "op"): the outputs of torch's SDPA kernels and of ``aten.mm`` are kept for backward, except every second mm call
  of the block (counted separately in the forward and in the recompute, so both agree).
- "matmuls", the compute-intensive list of torch's selective-checkpointing examples: every ``mm``, ``addmm`` and
  ``bmm`` output and the SDPA kernels' are kept.
Every other op is recomputed. The CPU flash kernel stands in for the CUDA ones on a CPU trial or trace.
``gpuwork.estimate.recompute`` prices the same rules.
"""

from __future__ import annotations

from typing import Any

from gpuwork.plan import Recompute, TrainPlan

# the fused attention kernels whose outputs both policies keep (the CPU flash kernel: a CPU run's stand-in)
_KEPT_ATTENTION = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                   "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu")
_MATMULS = ("mm", "addmm", "bmm")  # what "matmuls" keeps besides the attention kernels


def checkpoint_kwargs(plan: TrainPlan) -> dict[str, Any]:
    """``gradient_checkpointing_kwargs`` for a Hugging Face model: non-reentrant (it works whether or not the
    blocks' inputs require grad), with the op-level policy's ``context_fn`` where the plan asks for one."""
    kwargs: dict[str, Any] = {"use_reentrant": False}
    if plan.recompute is Recompute.OPS:
        kwargs["context_fn"] = op_policy_contexts
    elif plan.recompute is Recompute.MATMULS:
        kwargs["context_fn"] = matmul_policy_contexts
    return kwargs


def checkpoint_one_in(model: Any, plan: TrainPlan) -> None:
    """After checkpointing was enabled on every block: keep it on blocks 0, n, 2n, ... only (``recompute_every``
    n), as transformers 5's ``every_n_layers`` sets each decoder layer's flag; nothing to do for n = 1."""
    if plan.recompute_every == 1:
        return
    from transformers.modeling_layers import GradientCheckpointingLayer

    blocks = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    for i, block in enumerate(blocks):
        block.gradient_checkpointing = i % plan.recompute_every == 0


def _kept_ops(names: tuple[str, ...]) -> set[Any]:
    import torch

    aten = torch.ops.aten
    return {getattr(aten, name).default for name in names if hasattr(aten, name)}


def op_policy_contexts() -> tuple[Any, Any]:
    """A fresh pair of selective-checkpoint contexts for one block call under torchtitan's policy (the mm count
    starts again per call)."""
    import torch
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    mm = torch.ops.aten.mm.default
    kept = _kept_ops(_KEPT_ATTENTION)
    calls = {False: 0, True: 0}  # mm calls so far in the forward and in the recompute

    def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        if func is mm:
            calls[ctx.is_recompute] += 1
            odd = calls[ctx.is_recompute] % 2 == 1
            return CheckpointPolicy.MUST_SAVE if odd else CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in kept else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def matmul_policy_contexts() -> tuple[Any, Any]:
    """A pair of selective-checkpoint contexts for one block call that keeps every matmul and SDPA output."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    return create_selective_checkpoint_contexts(list(_kept_ops(_KEPT_ATTENTION + _MATMULS)))


__all__ = ["checkpoint_kwargs", "checkpoint_one_in", "matmul_policy_contexts", "op_policy_contexts"]
