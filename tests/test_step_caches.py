"""The step model's caches (gpuwork issues 19 and 22): op lists and prices are keyed by the facts they are built
from, so a plan, model, GPU or rate that differs in any field they read gets its own result, and plans that differ
only in data and schedule share one op list."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.estimate.ops import Phase, step_ops
from gpuwork.estimate.steptime import memory_kernel_t0_us, price_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack, TrainPlan

LLAMA_8B = "llama-3.1-8b"


def _forward(ops, name: str):
    return next(o for o in ops if o.name == name and o.phase is Phase.FORWARD)


def test_plans_that_differ_only_in_data_and_schedule_share_one_op_list():
    spec = get_spec(LLAMA_8B)
    plan = TrainPlan(model=LLAMA_8B, method="lora", seq_len=1024)
    ops = step_ops(plan, spec)
    assert step_ops(plan.replace(dataset_tokens=10**9, epochs=3.0, checkpoint_every_steps=50), spec) is ops
    doubled = step_ops(plan.replace(grad_accum=2), spec)
    # 32 blocks x 1 micro-batch, then x 2
    assert (_forward(ops, "self_attn.q_proj").count, _forward(doubled, "self_attn.q_proj").count) == (32, 64)


def test_a_model_with_the_same_name_and_size_but_other_shapes_gets_its_own_op_list():
    spec = get_spec(LLAMA_8B)
    plan = TrainPlan(model=LLAMA_8B, method="full", seq_len=1024)
    half = dataclasses.replace(spec, num_layers=16)  # same name and parameter count, half the blocks
    assert _forward(step_ops(plan, spec), "mlp.up_proj").count == 32
    assert _forward(step_ops(plan, half), "mlp.up_proj").count == 16


@pytest.mark.parametrize(("method", "trained"), [("full", 32), ("freeze", 4), ("lora", 32)])
def test_the_recompute_is_the_blocks_forward_over_the_blocks_the_gradient_reaches(method, trained):
    plan = TrainPlan(model=LLAMA_8B, method=method, seq_len=1024, grad_accum=3, trainable_layers=4,
                     grad_checkpointing=True)
    ops = step_ops(plan, get_spec(LLAMA_8B))
    recompute = [o for o in ops if o.phase is Phase.RECOMPUTE]
    blocks = [o for o in ops if o.phase is Phase.FORWARD and o.count % 32 == 0 and o.count >= 32 * 3]
    assert [o.name for o in recompute] == [o.name for o in blocks]
    for again, first in zip(recompute, blocks, strict=True):
        # the same kernels, x trained blocks / 32 blocks
        assert (again.flops, again.bytes, again.launches) == (first.flops, first.bytes, first.launches)
        assert again.count * 32 == first.count * trained


def test_a_price_follows_every_fact_it_reads():
    rates = load_rates()
    gpu, device = get_gpu("h100_sxm"), rates.device("h100_sxm")
    profile = rates.stacks[Stack.HF_TRAINER]
    ops = step_ops(TrainPlan(model="tiny-llama", method="full", seq_len=64), get_spec("tiny-llama"))
    hopper = price_ops(ops, gpu, device, rates, profile)
    # the same GPU id on another die: each memory-bound kernel pays the GA100's fixed time instead of the GH100's,
    # and the bytes of strided kernels move at the GA100's share of the bandwidth instead of the GH100's
    ampere_die = dataclasses.replace(gpu, architecture="Ampere GA100")
    on_ga100 = price_ops(ops, ampere_die, device, rates, profile)
    memory = [o for o in ops if o.kind.value == "memory"]
    memory_launches = sum(o.launches * o.count for o in memory)
    extra_us = memory_kernel_t0_us(ampere_die, rates)[0] - memory_kernel_t0_us(gpu, rates)[0]  # 2.58 - 2.41 us
    strided_bytes = sum(o.bytes * o.strided_share * o.count for o in memory)
    assert strided_bytes > 0  # eager rotary and RMSNorm's broadcast kernels
    extra_strided_s = strided_bytes / device.mem_bw_bytes_s * (1 / rates.kernel("membw_strided_fraction_ga100")
                                                                 - 1 / rates.kernel("membw_strided_fraction_gh100"))
    assert on_ga100.by_kind["memory"] - hopper.by_kind["memory"] == pytest.approx(
        memory_launches * extra_us * 1e-6 + extra_strided_s)
    # a slower host: the launch-bound step costs more, with the same GPU time
    slow_host = dataclasses.replace(rates, kernels={**rates.kernels, "launch_overhead_eager_us": 20.0})
    slower = price_ops(ops, gpu, device, slow_host, profile)
    assert slower.total_s > hopper.total_s
    assert slower.by_kind["memory"] == hopper.by_kind["memory"]
    # and the first GPU's price again, unchanged
    assert price_ops(ops, gpu, device, rates, profile) == hopper
