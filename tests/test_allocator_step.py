"""Whole fixed-shape steps replayed through the caching allocator (gpuwork.estimate.allocator_step).

No CPU check of the numbers against torch is possible: the CUDA caching allocator exists only on a CUDA device
(on CPU, torch's allocator has no segments), so the rules are checked by hand here and against the CS336 held-out
rows of docs/memory_misses.md."""

from __future__ import annotations

import pytest

from gpuwork import TrainPlan, estimate_memory
from gpuwork.estimate import allocator_step
from gpuwork.estimate.allocator import StepTensors
from gpuwork.estimate.allocator_step import ParamLayout, StepBytes, replay_step, whole_step_known
from gpuwork.estimate.memory import ALLOCATOR_SLACK
from gpuwork.facts.model import spec_for_plan
from gpuwork.measure.accuracy import case_memory
from gpuwork.measure.heldout import heldout_sets
from gpuwork.units import MIB


@pytest.fixture
def replaying(monkeypatch):
    """The whole-step replay switched on (off by default: allocator_step.REPLAY_FIXED_STEPS)."""
    monkeypatch.setattr(allocator_step, "REPLAY_FIXED_STEPS", True)

# one block of one 16 MiB fp32 matrix (4 Mi elements), no embeddings or head; fused AdamW (no temporaries)
_LAYOUT = ParamLayout(embed=(), block=(4 * MIB // 1,), head=(), layers=1, linears=(True,))
_BYTES = StepBytes(param=4, grad=4, state=4, copy=0, impl="fused")
_TOKENS = 1024


def _saving(per_token: int) -> StepTensors:
    return StepTensors(layers=1, layer_saved=(per_token,), layer_transient=(), head=(), loss_transient=(),
                       recompute=(), backward_transient=())


def test_small_activations_keep_a_20_mib_segment_beside_the_gradients():
    # a 5 MiB activation (< kMinLargeAlloc 10 MiB) maps a 20 MiB segment. By hand, segments in MiB:
    # parameter 16 | step 1: activation -> new 20 (15 free), gradient 16 -> new 16, activation freed (20 free),
    # exp_avg takes the 20 (split 16 + 4 free), exp_avg_sq -> new 16 | step 2: zero_grad frees a 16, the
    # activation takes it (best fit: 16 < 20 is gone, the 16 is the smallest free block), the gradient finds
    # only 4 and 11 free -> new 16 | step 3: the same blocks again. Reserved 16 + 20 + 16 + 16 + 16 = 84 MiB,
    # allocated peak 16 + 2 x 16 + 5 + 16 = 69 MiB.
    reserved, allocated = replay_step(_LAYOUT, _BYTES, _saving(5 * MIB // _TOKENS), _TOKENS)
    assert (reserved, allocated) == (84 * MIB, 69 * MIB)


def test_large_activations_get_exact_segments_that_gradients_reuse():
    # a 16 MiB activation (>= 10 MiB) maps a 16 MiB segment, which a 16 MiB state or gradient can take once freed:
    # parameter 16 | step 1: activation new 16, gradient new 16, exp_avg takes the activation's, exp_avg_sq new
    # 16 | step 2: activation takes the freed gradient's, gradient new 16 | step 3: no new segment.
    # Reserved 5 x 16 = 80 MiB = the allocated peak 16 + 2 x 16 + 16 + 16: no cache.
    reserved, allocated = replay_step(_LAYOUT, _BYTES, _saving(16 * MIB // _TOKENS), _TOKENS)
    assert (reserved, allocated) == (80 * MIB, 80 * MIB)


_FULL = dict(model="llama-3.2-1b", method="full", precision="bf16-mixed", batch_size=1)


@pytest.mark.parametrize("seq_len", [128, 512, 2048, 4096])
@pytest.mark.parametrize("impl", ["foreach", "for-loop", "fused", "out-of-place"])
def test_replayed_reserved_is_at_least_allocated(replaying, seq_len, impl):
    est = estimate_memory(TrainPlan(**_FULL, seq_len=seq_len, optimizer_impl=impl))
    assert "allocator_segments" in est.breakdown and "allocator_cache" not in est.breakdown
    assert est.peak_reserved_bytes == est.peak_allocated_bytes + est.breakdown["allocator_segments"]
    assert est.peak_reserved_bytes >= est.peak_allocated_bytes


def test_off_by_default_the_slack_stays():
    assert not allocator_step.REPLAY_FIXED_STEPS
    est = estimate_memory(TrainPlan(**_FULL, seq_len=512))
    assert "allocator_segments" not in est.breakdown and est.breakdown["allocator_cache"] > 0


def _cs336_reserved(tail: str) -> float:
    """Estimated reserved / allocated of a CS336 held-out case (its re-read plan: the staff model's config)."""
    for held in heldout_sets(kind="memory"):
        for case in held.cases:
            if case.name.startswith("cs336 A2 BraveBeter") and tail in case.name and case.metric == "reserved":
                r = case.as_reread()
                return case_memory(r.plan, "reserved", r.model_config) / case_memory(r.plan, "allocated",
                                                                                       r.model_config)
    raise LookupError(tail)


def test_cache_share_falls_with_tokens_per_micro_batch(replaying):
    # the staff xl model (hidden 2560, fp32): at 4 x 128 tokens a hidden-sized activation is 5 MiB and its 20 MiB
    # segments stay cached beside the gradients and the optimizer step (measured reserved / allocated 1.115); at
    # 2,048 tokens it is 20 MiB, exact-size segments the gradients reuse (measured 1.020)
    small, large = _cs336_reserved("b4 t128 fp32"), _cs336_reserved("b1 t2048 fp32")
    assert small > large > 1
    assert small - 1 > 3 * (large - 1)


@pytest.mark.parametrize("fields", [dict(method="lora"), dict(gpus=8, sharding="fsdp"), dict(grad_accum=4),
                                    dict(expandable_segments=True), dict(optimizer="adamw-8bit")])
def test_plans_with_unknown_tensors_keep_the_slack(replaying, fields):
    plan = TrainPlan(**{**_FULL, "seq_len": 512, **fields})
    assert not whole_step_known(spec_for_plan(plan), plan)
    est = estimate_memory(plan)
    assert "allocator_segments" not in est.breakdown
    assert est.breakdown["allocator_cache"] == int(est.peak_allocated_bytes * (1 + ALLOCATOR_SLACK)) - (
        est.peak_allocated_bytes)
