"""DeepSpeed ZeRO's own buffers on one GPU, per moment of the step (sharding zero1 / zero2 / zero3).

Read from DeepSpeed v0.19.5 (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py, config.py, engine.py), with no
offload; docs/sources.md#s-mem-zero-buffers says which lines. The weights, gradient partition, fp32 master of 16-bit
weights and the optimizer's states are the estimate's own terms; these are the buffers around them:

- the reduce bucket: ``reduce_bucket_size`` elements (5e8) in the optimizer's dtype. ZeRO-1/2 take it at the first
  gradient of a backward and free it once the gradients are reduced; ZeRO-3 holds it from the optimizer's
  construction on, in the communication dtype.
- at the step, each group's gradient partition flattened (a copy in the gradient dtype) and converted to fp32
  (ZeRO-3: one sub-group at a time, at most ``sub_group_size`` elements). The fp32 gradient the optimizer's
  construction attaches (``initialize_optimizer_states``) is set to None before it returns: nothing left of it.
- ZeRO-1/2 clone the fp32 master partition even from fp32 weights; ZeRO-3 reuses fp32 weights (since v0.18.2).
- ZeRO-3 allocates its flat gradient partition at the optimizer's construction, so it exists in the forward too
  (``gradients_from_start``).
"""

from __future__ import annotations

import math

from gpuwork.plan import Sharding, TrainPlan

# DeepSpeed ZeRO defaults (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig): reduce_bucket_size 5e8 elements,
# sub_group_size 1e9 elements.
REDUCE_BUCKET_ELEMENTS = 500_000_000
SUB_GROUP_ELEMENTS = 1_000_000_000

MOMENTS = ("forward", "loss backward", "block backward", "backward end", "optimizer step")
ZERO_SHARDINGS = (Sharding.ZERO1, Sharding.ZERO2, Sharding.ZERO3)


def zero_buffers(plan: TrainPlan, trainable: int, grad_bytes: int, grads: int, opt_temp: int) -> dict[str, int]:
    """Bytes per GPU DeepSpeed ZeRO adds at each moment of the step (all zero for other shardings).

    ``trainable``: parameters the optimizer trains; ``grad_bytes``: bytes per element of their gradients (the
    trained weights' dtype); ``grads``: the gradient partition per GPU; ``opt_temp``: the optimizer's own
    temporaries at the step.
    """
    extra = dict.fromkeys(MOMENTS, 0)
    if plan.sharding not in ZERO_SHARDINGS:
        return extra
    part = math.ceil(trainable / plan.shard_ranks)  # this rank's partition of the trained parameters
    stage3 = plan.sharding is Sharding.ZERO3
    if stage3:
        # the bucket is in the communication dtype: the ds config's bf16/fp16, else the weights' (fp32)
        bucket = REDUCE_BUCKET_ELEMENTS * plan.precision.param_bytes
        for name in MOMENTS:
            extra[name] += bucket
    else:
        # the bucket is in the optimizer's dtype (the trained weights'); stage 1/2 overlap_comm is off by default,
        # so one buffer, not two
        for name in ("loss backward", "block backward", "backward end"):
            extra[name] += REDUCE_BUCKET_ELEMENTS * grad_bytes
    if plan.offload_optimizer:
        return extra  # the fp32 partition, its gradient and the step run in CPU RAM
    group = min(part, SUB_GROUP_ELEMENTS) if stage3 else part
    if not plan.fp32_master_weights and (grad_bytes != 4 or not stage3):
        for name in MOMENTS:  # an fp32 master the estimate does not count yet (ZeRO-1/2 clone fp32 weights too)
            extra[name] += 4 * part
    flat = grad_bytes * group + (4 * group if grad_bytes != 4 else 0)  # flatten, then .to(fp32)
    prepare = flat  # the step's start: the gradients and their flat and fp32 copies
    if stage3:
        update = 4 * group + opt_temp  # the gradient partition stays (it is the persistent flat buffer)
    else:
        update = 4 * part + opt_temp - grads  # ZeRO-1/2 free the 16-bit gradients once copied
    # the estimate's step moment already holds the gradients and opt_temp: add what the larger of the two phases
    # needs beyond them (never less: that moment stays a bound)
    extra["optimizer step"] += max(max(prepare, update) - opt_temp, 0)
    return extra


def gradients_from_start(plan: TrainPlan) -> bool:
    """ZeRO-3 keeps its flat gradient partition (``grad_partitions_flat_buffer``) from the optimizer's construction
    on, so the gradients take their memory in the forward of every step, not only under accumulation."""
    return plan.sharding is Sharding.ZERO3 and not plan.offload_optimizer


__all__ = ["REDUCE_BUCKET_ELEMENTS", "SUB_GROUP_ELEMENTS", "ZERO_SHARDINGS", "gradients_from_start", "zero_buffers"]
