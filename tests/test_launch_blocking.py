"""TrainPlan.launch_blocking: CUDA_LAUNCH_BLOCKING=1, every kernel launch waits for its kernel.

CUDA's programming guide: the variable disables the asynchrony of kernel launches; PyTorch's CUDA semantics note:
it forces synchronous computation. The step model then prices each kernel as its dispatch plus its GPU time, each
starting on an idle GPU (estimate.steptime), and no collective hides behind compute (estimate.comm).
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.steptime import LAUNCH_OVERHEAD, host_us_per_kernel, price_ops
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan

LLAMA = TrainPlan(model="llama-3.1-8b", method="full", seq_len=8192, batch_size=2, grad_checkpointing=True)


def _priced(plan: TrainPlan, gpu_id: str = "h100_sxm"):
    inputs = resolve(plan)
    gpu = inputs.gpu(gpu_id)
    return inputs, gpu


def test_off_by_default_and_the_default_price_is_unchanged() -> None:
    assert LLAMA.launch_blocking is False
    inputs, gpu = _priced(LLAMA)
    ops = step_ops(LLAMA, inputs.spec)
    device, profile = inputs.rates.device(gpu.gpu_id), inputs.rates.stacks[LLAMA.stack]
    assert price_ops(ops, gpu, device, inputs.rates, profile) == price_ops(
        ops, gpu, device, inputs.rates, profile, blocking=False
    )
    # the op list does not change: blocking changes only how its kernels are priced
    assert step_ops(dataclasses.replace(LLAMA, launch_blocking=True), inputs.spec) == ops


def test_blocking_adds_every_dispatch_to_the_gpu_time() -> None:
    inputs, gpu = _priced(LLAMA)
    ops = step_ops(LLAMA, inputs.spec)
    rates = inputs.rates
    device, profile = rates.device(gpu.gpu_id), rates.stacks[LLAMA.stack]
    base = price_ops(ops, gpu, device, rates, profile)
    blocked = price_ops(ops, gpu, device, rates, profile, blocking=True)
    dispatch_s = sum(
        op.launches * op.count * host_us_per_kernel(op.phase, rates, profile, device) * 1e-6
        for op in ops
        if op.count > 0
    )
    gpu_s = sum(v for k, v in blocked.by_kind.items() if k != LAUNCH_OVERHEAD)
    assert blocked.by_kind[LAUNCH_OVERHEAD] == pytest.approx(
        dispatch_s
    )  # every dispatch exposed, none hidden
    assert blocked.total_s == pytest.approx(gpu_s + dispatch_s)
    # slower by at least the summed dispatch less what the asynchronous step already charged for the host
    assert blocked.total_s >= base.total_s - base.by_kind[LAUNCH_OVERHEAD] + dispatch_s - 1e-9
    # memory-bound kernels start cold: their GPU time grows by launches x (cold t0 - back-to-back t0)
    assert blocked.by_kind["memory"] > base.by_kind["memory"]
    assert blocked.by_kind["matmul"] == pytest.approx(base.by_kind["matmul"])


def test_the_estimate_grows_by_the_dispatch_and_communication_is_all_exposed() -> None:
    plan = TrainPlan(
        model="llama-3.1-8b",
        method="full",
        seq_len=2048,
        batch_size=1,
        grad_checkpointing=True,
        gpus=8,
        sharding="fsdp",
    )
    inputs, gpu = _priced(plan)
    before = estimate_time(plan, gpu, inputs)
    after = estimate_time(dataclasses.replace(plan, launch_blocking=True), gpu, inputs)
    assert before.comm.exposed_s < before.comm.comm_s  # FSDP prefetches its gathers behind compute
    assert after.comm.exposed_s == pytest.approx(after.comm.comm_s)  # none hidden under blocking launches
    assert after.comm.contention_s == 0.0
    # the hidden part comes out in the open, its contention (compute slowed beside it) goes, each dispatch adds
    assert (
        after.step_time_s
        >= before.step_time_s
        - before.comm.contention_s
        + (after.comm.comm_s - before.comm.exposed_s)
        + after.breakdown[LAUNCH_OVERHEAD]
        - before.breakdown[LAUNCH_OVERHEAD]
        - 1e-9
    )
    ddp = TrainPlan(model="llama-3.2-1b", method="full", seq_len=2048, batch_size=4, gpus=8)
    inputs, gpu = _priced(ddp)
    blocked = estimate_time(dataclasses.replace(ddp, launch_blocking=True), gpu, inputs)
    assert (
        estimate_time(ddp, gpu, inputs).comm.exposed_s
        < blocked.comm.exposed_s
        == pytest.approx(blocked.comm.comm_s)
    )
