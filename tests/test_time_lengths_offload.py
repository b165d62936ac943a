"""The time model follows the memory model: a stack's checkpoint offload (Unsloth) is priced over PCIe, and a
length histogram prices micro-batches padded to their longest member and counts real tokens (gpuwork issue 19)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from gpuwork.estimate.memory import estimate_memory
from gpuwork.estimate.timing import LENGTH_GRID, estimate_time, padded_lengths, real_tokens_per_sequence
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan

BASE = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=1024, batch_size=2, grad_accum=2,
                 dataset_tokens=10_000_000)
# FlashAttention-2 gets no padding mask: a histogram's step is the expectation over padded lengths alone (SDPA's
# masked kernel for batches of unequal rows is tests/test_sdpa_padding_mask_time.py's)
FLASH = BASE.replace(attention="flash")


def _time(plan: TrainPlan, gpu: str = "h100_sxm", inputs=None):
    inputs = inputs or resolve(plan)
    return estimate_time(plan, inputs.gpu(gpu), inputs)


# -- lengths ----------------------------------------------------------------------------------------


def test_fixed_and_packed_price_alike_and_a_one_length_histogram_equals_fixed():
    fixed = _time(BASE)
    assert _time(BASE.replace(lengths="packed")).step_time_s == fixed.step_time_s
    one = _time(BASE.replace(lengths="1024:7"))
    assert one.step_time_s == pytest.approx(fixed.step_time_s, rel=1e-12)
    assert one.tokens_per_step == fixed.tokens_per_step == 1024 * 2 * 2
    assert "lengths" not in fixed.sources and "lengths" in one.sources


def test_padded_length_is_the_longest_of_the_batch():
    # two lengths, 3 : 1; a batch of 2 is all-short with probability (3/4)^2
    plan = BASE.replace(lengths="256:3,1024:1")
    assert [n for _, n in padded_lengths(plan)] == [256, 1024]
    assert [p for p, _ in padded_lengths(plan)] == pytest.approx([9 / 16, 7 / 16])
    assert [p for p, _ in padded_lengths(plan.replace(batch_size=1))] == pytest.approx([3 / 4, 1 / 4])
    assert padded_lengths(BASE) is None
    assert real_tokens_per_sequence(plan) == pytest.approx((256 * 3 + 1024) / 4)


def test_histogram_step_is_the_expected_cost_of_padded_batches_and_tokens_are_real():
    plan = FLASH.replace(lengths="256:3,1024:1")
    est = _time(plan)
    short = _time(FLASH.replace(seq_len=256)).step_time_s
    long = _time(FLASH).step_time_s
    assert est.step_time_s == pytest.approx(9 / 16 * short + 7 / 16 * long, rel=1e-9)
    real = 2 * 2 * (256 * 3 + 1024) / 4  # batch x accumulation x mean length = 1792
    assert est.tokens_per_step == real
    assert est.tokens_per_s == pytest.approx(real / est.step_time_s)
    assert est.steps == math.ceil(10_000_000 / real)
    assert est.train_s == pytest.approx(est.steps * est.step_time_s)
    # padding costs where the GPU bounds the step: real tokens per second fall below the same data at a fixed
    # 448-token length (its mean). At batch 2 the host's dispatch bounds every length alike and the two tie (equal to
    # the last bit under Python 3.12's compensated sum), so batch 8, where 448 and 1,024 tokens are GPU-bound
    big = FLASH.replace(batch_size=8)
    assert _time(big.replace(seq_len=448)).step_time_s < _time(big).step_time_s
    assert _time(big.replace(lengths="256:3,1024:1")).tokens_per_s < 0.9 * _time(big.replace(seq_len=448)).tokens_per_s


def test_bigger_batches_pad_more():
    one, four = (_time(FLASH.replace(lengths="128:9,1024:1", batch_size=b)) for b in (1, 4))
    # the same real tokens per sequence (mean 217.6), but a batch of 4 is padded to 1024 far more often:
    # 1 - 0.9^4 = 34 % of batches against 10 %
    assert one.tokens_per_step == round(2 * 217.6) and four.tokens_per_step == round(8 * 217.6)
    for b, est in ((1, one), (4, four)):
        short = _time(FLASH.replace(seq_len=128, batch_size=b)).step_time_s
        long = _time(FLASH.replace(batch_size=b)).step_time_s
        assert est.step_time_s == pytest.approx(0.9 ** b * short + (1 - 0.9 ** b) * long, rel=1e-9)


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("weight", [lambda n: 1 + n % 7, lambda n: round(1000 * 0.995 ** n) + 1],
                         ids=["uniform", "long-tailed"])
def test_a_long_histogram_is_priced_on_a_grid_close_to_the_exact_expectation(batch, weight):
    lengths = ",".join(f"{n}:{weight(n)}" for n in range(16, 1024 + 1, 8))  # 127 lengths
    plan = FLASH.replace(lengths=lengths, batch_size=batch, grad_accum=1)
    assert len(plan.length_histogram) > LENGTH_GRID
    est = _time(plan)
    exact = sum(p * _time(FLASH.replace(seq_len=n, batch_size=batch, grad_accum=1)).step_time_s
                for p, n in padded_lengths(plan))
    assert est.step_time_s == pytest.approx(exact, rel=0.01)
    assert est.sources["lengths"].startswith(f"{len(plan.length_histogram)} lengths")


# -- checkpoint offload -----------------------------------------------------------------------------

UNSLOTH = FLASH.replace(stack="unsloth", grad_checkpointing=True)


def _slow_link(inputs, share: float):
    kernels = {**inputs.rates.kernels, "pinned_copy_d2h_fraction": share, "pinned_copy_h2d_fraction": share}
    return dataclasses.replace(inputs, rates=dataclasses.replace(inputs.rates, kernels=kernels))


def test_offload_moves_what_the_memory_model_offloads():
    inputs = resolve(UNSLOTH)
    est = _time(UNSLOTH, inputs=inputs)
    memory = estimate_memory(UNSLOTH, inputs.spec, inputs.rates.stacks[UNSLOTH.stack])
    assert memory.host_transfer_bytes > 0
    assert est.checkpoint_offload.bytes_per_step == pytest.approx(memory.host_transfer_bytes)
    assert "checkpoint offload" in est.sources and "[K15]" in est.sources["checkpoint offload"]
    assert est.breakdown["checkpoint offload (PCIe)"] == est.checkpoint_offload.exposed_s
    assert est.as_dict()["checkpoint_offload"]["bytes_per_step"] == est.checkpoint_offload.bytes_per_step
    # the same plan without the stack's offload, or without checkpointing, copies nothing
    assert _time(UNSLOTH.replace(stack="hf-trainer")).checkpoint_offload is None
    assert _time(UNSLOTH.replace(grad_checkpointing=False)).checkpoint_offload is None


def test_offload_rates_are_the_pcie_link_times_the_measured_shares():
    inputs = resolve(UNSLOTH)
    for gpu in ("h100_sxm", "rtx4090"):
        est = _time(UNSLOTH, gpu, inputs)
        link = inputs.gpu(gpu).pcie_bw_bytes_s
        assert est.checkpoint_offload.d2h_bytes_s == pytest.approx(link * 0.82)
        assert est.checkpoint_offload.h2d_bytes_s == pytest.approx(link * 0.60)
        half = est.checkpoint_offload.bytes_per_step / 2
        assert est.checkpoint_offload.copy_s == pytest.approx(half / (link * 0.82) + half / (link * 0.60))


def test_only_the_copies_that_outlast_their_block_add_to_the_step():
    inputs = resolve(UNSLOTH)
    fast = _time(UNSLOTH, inputs=inputs)
    assert fast.checkpoint_offload.exposed_s <= fast.checkpoint_offload.copy_s
    # a link 1000x slower than measured: the copies dominate and what is exposed adds to the step
    slow = _time(UNSLOTH, inputs=_slow_link(inputs, 0.0006))
    exposed = slow.checkpoint_offload.exposed_s
    assert exposed > 0.9 * slow.checkpoint_offload.copy_s > 0
    assert slow.step_time_s - fast.step_time_s == pytest.approx(exposed - fast.checkpoint_offload.exposed_s)
    assert slow.breakdown["checkpoint offload (PCIe)"] == exposed
    assert sum(slow.breakdown.values()) == pytest.approx(slow.step_time_s)


def test_offload_follows_the_padded_lengths():
    plan = UNSLOTH.replace(lengths="256:3,1024:1")
    inputs = resolve(plan)
    est = _time(plan, inputs=inputs)
    profile = inputs.rates.stacks[plan.stack]
    short = estimate_memory(UNSLOTH.replace(seq_len=256), inputs.spec, profile).host_transfer_bytes
    long = estimate_memory(UNSLOTH, inputs.spec, profile).host_transfer_bytes
    assert est.checkpoint_offload.bytes_per_step == pytest.approx(9 / 16 * short + 7 / 16 * long)
