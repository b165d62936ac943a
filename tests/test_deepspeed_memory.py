"""DeepSpeed ZeRO's own buffers (gpuwork.estimate.deepspeed_memory) as the estimate shows them.

The expected bytes are written from DeepSpeed v0.19.5's defaults and allocations (docs/sources.md#s-mem-zero-buffers):
reduce_bucket_size 5e8 elements, sub_group_size 1e9 elements, and the step's flattened gradient partition converted
to fp32.
"""

import math

import pytest

from gpuwork import TrainPlan, estimate_memory, get_spec
from gpuwork.estimate.deepspeed_memory import gradients_from_start, zero_buffers

P8B = get_spec("llama-3.1-8b").params_total
BUCKET = 500_000_000  # DeepSpeedZeroConfig.reduce_bucket_size
SUB_GROUP = 1_000_000_000  # DeepSpeedZeroConfig.sub_group_size


def _plan(sharding: str, gpus: int, precision: str = "bf16") -> TrainPlan:
    # batch 1 x 256 tokens: the optimizer step is the peak; a fused AdamW has no temporaries of its own
    return TrainPlan(model="llama-3.1-8b", method="full", precision=precision, seq_len=256, gpus=gpus,
                     sharding=sharding, optimizer_impl="fused")


def _step(plan: TrainPlan) -> dict[str, int]:
    est = estimate_memory(plan)
    assert est.peak_phase == "optimizer step"
    return est.breakdown


def test_zero3_worked_example_on_8_gpus():
    # 8.03e9 parameters over 8 GPUs: a 1.004e9-element partition, so sub_group_size bounds the step's gradient copies
    part = math.ceil(P8B / 8)
    group = min(part, SUB_GROUP)
    assert group == SUB_GROUP
    b = _step(_plan("zero3", 8))
    assert b["gradients"] == math.ceil(2 * P8B / 8)  # the bf16 flat gradient partition
    # bf16 bucket + at the step: the flattened bf16 copy of a sub-group's gradients and its fp32 conversion
    assert b["sharding_buffers"] == 2 * BUCKET + 2 * group + 4 * group


@pytest.mark.parametrize("gpus", [16, 32, 64])
def test_zero3_step_buffers_scale_with_the_partition(gpus):
    part = math.ceil(P8B / gpus)  # below sub_group_size: one sub-group holds the whole partition
    assert part < SUB_GROUP
    plan = _plan("zero3", gpus)
    est, fsdp = estimate_memory(plan), estimate_memory(plan.replace(sharding="fsdp"))
    # at the step both hold the same weights and bf16 gradient partition and nothing gathered; ZeRO-3 adds its fp32
    # masters and states (optimizer_states) and its buffers, 6 bytes per element of the partition and the bucket
    states = est.breakdown["optimizer_states"] - fsdp.breakdown["optimizer_states"]
    step = est.phase_peaks["optimizer step"] - fsdp.phase_peaks["optimizer step"]
    assert step - states == 2 * BUCKET + 6 * part


def test_zero2_worked_example_bf16_and_fp32():
    part = math.ceil(P8B / 8)
    bf16 = _step(_plan("zero2", 8))
    # the step's start: the 16-bit gradient partition, its flat copy and its fp32 copy; the reduce bucket is freed
    # once backward's gradients are reduced
    assert bf16["sharding_buffers"] == 2 * part + 4 * part
    fp32 = _step(_plan("zero2", 8, "fp32"))
    # fp32 weights: stage_1_and_2 still clones an fp32 master partition; the flat copy is already fp32
    assert fp32["sharding_buffers"] == 4 * part + 4 * part


def test_zero3_forward_holds_the_gradient_partition_and_bucket():
    plan = _plan("zero3", 16)
    fsdp = estimate_memory(plan.replace(sharding="fsdp"))
    est = estimate_memory(plan)
    part = math.ceil(P8B / 16)
    # same gathered units and weights; ZeRO-3 adds the fp32 masters (12 B vs 4 B of bf16 AdamW states per parameter),
    # the bf16 gradient partition made at construction and the bucket
    states = est.breakdown["optimizer_states"] - fsdp.breakdown["optimizer_states"]
    expected = states + 2 * part + 2 * BUCKET
    assert est.phase_peaks["forward"] - fsdp.phase_peaks["forward"] == expected


@pytest.mark.parametrize("sharding", ["ddp", "fsdp", "hsdp", "hsdp-zero2"])
def test_other_shardings_get_no_zero_buffers(sharding):
    plan = _plan(sharding, 16)
    assert set(zero_buffers(plan, P8B, 2, 1, 0).values()) == {0}
    est = estimate_memory(plan)
    b = est.breakdown
    grads = 2 * P8B if sharding == "ddp" else math.ceil(2 * P8B / plan.shard_ranks)
    ddp_bucket = grads if sharding == "ddp" else 0  # DDP's flat gradient bucket (gradient_as_bucket_view off)
    # the step holds the states, the gradients and nothing else (fused AdamW, nothing gathered)
    step = est.phase_peaks["optimizer step"] - b["cublas_workspace"]
    assert step == b["weights"] + b["optimizer_states"] + grads + ddp_bucket


def test_zero2_bucket_lives_through_backward_only():
    plan = _plan("zero2", 8)
    extra = zero_buffers(plan, P8B, 2, math.ceil(2 * P8B / 8), 0)
    # the bf16 bucket from backward's first gradient to the reduction's end
    assert extra["forward"] == 0
    assert extra["loss backward"] == extra["block backward"] == extra["backward end"] == 2 * BUCKET
    assert not gradients_from_start(plan) and gradients_from_start(_plan("zero3", 8))
