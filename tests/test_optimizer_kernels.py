"""Kernels and bytes of the optimizer step, counted from the code (estimate.adamw_passes, estimate.optimizer_ops
optimizer_ops; docs/kernels.md "Optimizer step: kernels and bytes, counted from the code"): ATen's
multi_tensor_apply chunking, torch's foreach and fused AdamW, clip_grad_norm_, GradScaler and DeepSpeed ZeRO's fp32
masters. The passes are checked against what a real torch step dispatches on the CPU."""

from __future__ import annotations

import math

import pytest
from conftest import record_aten_calls

from gpuwork.estimate.adamw_passes import (
    FOREACH_ADAMW_DEPTHS,
    FOREACH_TENSORS_MOVED,
    FUSED_ADAMW_DEPTH,
    adamw_passes,
    mta_launches,
)
from gpuwork.estimate.ops import Phase, param_tensors, step_ops
from gpuwork.facts.model import get_spec
from gpuwork.facts.spec import count_params
from gpuwork.plan import OptimizerImpl, TrainPlan


def test_a_pass_launches_when_320_chunks_or_its_tensor_limit_fill():
    assert mta_launches(6, 1_000, 1) == 1  # one partial launch
    assert mta_launches(111, 111, 1) == 2  # 110 tensors per launch at depth 1
    assert mta_launches(111, 111, 1, scalar_list=True) == 2  # 96 with a list of scalars
    assert mta_launches(37, 37, 4) == 2  # 36 at depth 4
    assert mta_launches(1, 320 * 65_536, 1) == 1
    assert mta_launches(1, 320 * 65_536 + 1, 1) == 2  # the 321st chunk opens a second launch
    # 7 B elements: 106,812 chunks of 65,536 in 334 launches of 320 blocks, whatever the tensor count
    assert mta_launches(291, 7e9, 3) == math.ceil(math.ceil(7e9 / 65_536) / 320) == 334


def test_foreach_adamw_launches_each_of_its_seven_passes_and_fused_one_plus_the_step_count():
    tensors, elements = 291, 6.74e9
    assert adamw_passes(OptimizerImpl.FOREACH, tensors, elements) == (
        FOREACH_TENSORS_MOVED, sum(mta_launches(tensors, elements, d, s) for d, s in FOREACH_ADAMW_DEPTHS))
    assert adamw_passes(OptimizerImpl.FUSED, tensors, elements) == (
        7, mta_launches(tensors, elements, FUSED_ADAMW_DEPTH) + 3)  # 291 step counts: 3 launches of 110
    # a small model: every pass fits one launch's blocks, the tensor limits decide
    assert adamw_passes(OptimizerImpl.FOREACH, 148, 1.2e6)[1] == 3 + 2 + 4 + 3 + 2 + 2 + 4


def _optimizer(plan: TrainPlan):
    return {o.name: o for o in step_ops(plan, get_spec(plan.model)) if o.phase is Phase.OPTIMIZER}


def test_a_7b_update_counts_its_chunks_not_36_tensors_per_launch():
    plan = TrainPlan(model="llama-2-7b", method="full", precision="bf16")
    spec = get_spec(plan.model)
    n = count_params(spec, plan).trainable
    ops = _optimizer(plan)
    update = ops["AdamW update"]
    assert update.launches == sum(mta_launches(param_tensors(spec, plan, n), n, d, s) for d, s in FOREACH_ADAMW_DEPTHS)
    assert update.launches > 7 * 300  # some 322 launches per pass, where 36 tensors per launch gave 9
    assert update.bytes == pytest.approx(n * 18 * 2)
    # clipping: the norm pass and its cleanup kernel, stack, vector_norm, add, reciprocal, mul, clamp, the scaling
    assert ops["gradient clipping"].launches == 2 * mta_launches(param_tensors(spec, plan, n), n, 1) + 7


def test_fp16_loss_scaling_waits_for_the_gpu_before_the_update():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", precision="fp16-mixed")
    unscale = _optimizer(plan)["gradient unscale (fp16 loss scaling)"]
    assert unscale.host_sync  # GradScaler.step reads found_inf with .item()
    assert not any(o.host_sync for o in _optimizer(plan.replace(precision="bf16-mixed")).values())


def test_zero_fp32_masters_update_fp32_states_and_cast_twice():
    plan = TrainPlan(model="qwen2.5-7b", method="scratch", precision="bf16", sharding="zero1", gpus=8,
                     optimizer_impl="fused")
    n = count_params(get_spec(plan.model), plan).trainable / 8
    ops = _optimizer(plan)
    assert ops["AdamW update"].bytes == pytest.approx(n * 7 * 4)  # fp32 p, m, v and the fp32 gradient
    assert ops["gradient partition to fp32 (ZeRO masters)"].bytes == pytest.approx(n * (2 + 2 + 2 + 4))
    assert ops["fp32 masters to 16-bit weights (ZeRO)"].bytes == pytest.approx(n * (4 + 2))
    # FSDP keeps no fp32 masters: the update moves the weights' own dtype and nothing is cast
    fsdp = _optimizer(plan.replace(sharding="fsdp"))
    assert fsdp["AdamW update"].bytes == pytest.approx(n * 7 * 2)
    assert not any("ZeRO" in name for name in fsdp)


def _model(torch):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    model(torch.randn(2, 16)).sum().backward()
    return model


def test_torch_foreach_adamw_runs_the_counted_passes():
    torch = pytest.importorskip("torch")
    model = _model(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, foreach=True)
    opt.step()  # the first step creates the states
    passes = []
    for func, args in record_aten_calls(opt.step):
        name = func.overloadpacket.__name__
        lists = [a for a in args if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor)]
        if not name.startswith("_foreach_") or lists[0][0].dim() == 0:
            continue  # the step counts are CPU scalars off the GPU
        scalar_list = func._overloadname == "ScalarList"  # bias corrections, step sizes: Python floats
        depth = len(lists) + (0 if name.endswith("_") else 1)  # an out-of-place pass writes a new list
        moved = len({t[0].data_ptr() for t in lists}) + 1  # each distinct list read once, one list written
        passes.append((depth, scalar_list, moved))
    assert [(d, s) for d, s, _ in passes] == list(FOREACH_ADAMW_DEPTHS)
    assert sum(m for _, _, m in passes) == FOREACH_TENSORS_MOVED


def test_torch_fused_adamw_and_clip_grad_norm_run_the_counted_kernels():
    torch = pytest.importorskip("torch")
    model = _model(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=True)
    opt.step()
    names = [f.overloadpacket.__name__ for f, _ in record_aten_calls(opt.step) if not str(f).startswith("profiler")]
    assert names == ["_foreach_add_", "_fused_adamw_"]  # the step counts live on the device, then one pass
    clip = [f.overloadpacket.__name__ for f, _ in
            record_aten_calls(lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True))]
    # 6 single kernels between the two foreach passes (+ _foreach_norm's cleanup kernel on CUDA: 7)
    assert clip == ["_foreach_norm", "stack", "linalg_vector_norm", "add", "reciprocal", "mul", "clamp",
                    "_foreach_mul_"]


def test_the_k18a_row_the_split_share_comes_from():
    from gpuwork.facts.rates import load_rates

    # Llama 2 70B's 68.98 B parameters over 128 ranks: 8,223 chunks, 26 launches of the fused (depth-4) pass
    shard = 68_976_648_192 / 128
    assert mta_launches(1, shard, FUSED_ADAMW_DEPTH) == 26
    assert load_rates().kernel("mta_split_bandwidth_share") == pytest.approx(3.578 / 4.539, abs=5e-4)


def test_split_passes_stream_at_the_share_and_small_ones_at_the_copy_rate():
    from dataclasses import replace

    from gpuwork.estimate.steptime import memory_kernel_t0_us, price_ops
    from gpuwork.facts.catalog import get_gpu
    from gpuwork.facts.rates import load_rates
    from gpuwork.plan import Stack

    rates, gpu = load_rates(), get_gpu("h100_sxm")
    device, profile = rates.device("h100_sxm"), rates.stacks[Stack.HF_TRAINER]
    share, t0_s = rates.kernel("mta_split_bandwidth_share"), memory_kernel_t0_us(gpu, rates)[0] * 1e-6
    big = _optimizer(TrainPlan(model="llama-2-7b", method="full", precision="bf16"))["AdamW update"]
    small = _optimizer(TrainPlan(model="qwen2.5-0.5b", method="full", precision="bf16"))["AdamW update"]
    assert big.mta_split and small.mta_split  # 0.5 B elements: 7,500 chunks, still more than 320
    tiny = _optimizer(TrainPlan(model="tiny-llama", method="full", precision="bf16"))["AdamW update"]
    assert not tiny.mta_split
    for op in (big, small):
        gpu_s = price_ops((op,), gpu, device, rates, profile).by_kind["optimizer"]
        assert gpu_s == pytest.approx(op.launches * t0_s + op.bytes / (device.mem_bw_bytes_s * share))
        # the same op as one kernel at the copy rate: slower by 1 / share in its bytes
        whole = price_ops((replace(op, mta_split=False),), gpu, device, rates, profile).by_kind["optimizer"]
        assert gpu_s > whole
    # the for-loop runs one TensorIterator kernel per tensor: no split
    loop = _optimizer(TrainPlan(model="llama-2-7b", method="full", precision="bf16", optimizer_impl="for-loop"))
    assert not loop["AdamW update"].mta_split and loop["gradient clipping"].mta_split
