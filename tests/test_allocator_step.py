"""Whole fixed-shape steps replayed through the caching allocator (gpuwork.estimate.allocator_step).

No CPU check of the numbers against torch is possible: the CUDA caching allocator exists only on a CUDA device
(on CPU, torch's allocator has no segments), so the rules are checked by hand here and against the CS336 held-out
rows of docs/memory_misses.md."""

from __future__ import annotations

import pytest

from gpuwork import TrainPlan, estimate_memory
from gpuwork.estimate import allocator_step
from gpuwork.estimate import memory as memory_model
from gpuwork.estimate.allocator import CachingAllocator, StepTensors
from gpuwork.estimate.allocator_step import ParamLayout, StepBytes, own_model, replay_step, whole_step_known
from gpuwork.estimate.memory import ALLOCATOR_SLACK, CUDA_CONTEXT_BYTES
from gpuwork.facts.model import build_spec, spec_for_plan
from gpuwork.measure.accuracy import case_memory, case_spec
from gpuwork.measure.heldout import heldout_sets
from gpuwork.measure.time_cases import case_gpu
from gpuwork.units import MIB

# a hand-written model: the CS336 staff Transformer LM's 'small' size as a Llama config that states how it writes
# its softmax and SiLU (op by op), as the CS336 held-out cases re-read it
_STAFF = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 10000, "hidden_size": 768,
          "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 12,
          "head_dim": 64, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "hidden_act": "silu",
          "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
          "softmax_impl": "composite", "hidden_act_impl": "composite"}
_STAFF_SPEC = build_spec(_STAFF, "staff-small")
_STAFF_PLAN = dict(model="staff-small", method="scratch", precision="fp32", attention="eager", batch_size=4,
                   stack="torch-loop")

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


def test_a_failed_mapping_releases_the_wholly_free_segments():
    # limit 40 MiB: a 5 MiB tensor maps a 20 MiB segment and is freed (20 cached); a 24 MiB one fits no free block
    # and its segment would make 44 > 40: the free 20 MiB segment goes back to CUDA, then 24 is mapped
    alloc = CachingAllocator(limit=40 * MIB)
    alloc.release(alloc.malloc(5 * MIB))
    alloc.malloc(24 * MIB)
    assert (alloc.reserved, alloc.peak_reserved, alloc.released) == (24 * MIB, 24 * MIB, 20 * MIB)
    assert alloc.segment_sizes() == (24 * MIB,)
    unbounded = CachingAllocator()
    unbounded.release(unbounded.malloc(5 * MIB))
    unbounded.malloc(24 * MIB)
    assert unbounded.reserved == 44 * MIB


def test_a_segment_with_a_block_in_use_stays():
    # the 20 MiB segment holds a 3 MiB tensor still in use: nothing can be released, the 24 MiB segment is mapped
    # past the limit (an out-of-memory error on the device, shown as reserved beyond the card)
    alloc = CachingAllocator(limit=40 * MIB)
    first, _ = alloc.malloc(5 * MIB), alloc.malloc(3 * MIB)
    alloc.release(first)
    alloc.malloc(24 * MIB)
    assert (alloc.reserved, alloc.released) == (44 * MIB, 0)


def test_the_card_releases_a_step_s_cached_segment():
    # a 12 MiB activation and foreach AdamW (one 16 MiB temporary). Unbounded, in MiB: parameter 16 | step 1:
    # activation new 12, gradient new 16, activation freed (12 cached), exp_avg and exp_avg_sq new 16 each, the
    # temporary finds only 12 free: new 16 -> reserved 92 | steps 2-3 reuse them: allocated peak 16 + 16 + 2 x 16 +
    # 16 = 80, cache 12. On an 80 MiB card the temporary's 16 would make 92: the free 12 is released and the 16
    # mapped (80); in step 2 the activation splits a free 16 (12 + 4), and once it is freed the temporary takes
    # that 16 again: reserved 80, no cache.
    step = _saving(12 * MIB // _TOKENS)
    foreach = StepBytes(param=4, grad=4, state=4, copy=0, impl="foreach")
    assert replay_step(_LAYOUT, foreach, step, _TOKENS) == (92 * MIB, 80 * MIB)
    assert replay_step(_LAYOUT, foreach, step, _TOKENS, 80 * MIB) == (80 * MIB, 80 * MIB)


def _staff(**fields) -> TrainPlan:
    return TrainPlan(**{**_STAFF_PLAN, **fields})


@pytest.mark.parametrize("seq_len", [128, 512, 2048])
@pytest.mark.parametrize("impl", ["foreach", "for-loop", "fused", "out-of-place"])
def test_replayed_reserved_is_at_least_allocated(seq_len, impl):
    est = estimate_memory(_staff(seq_len=seq_len, optimizer_impl=impl), _STAFF_SPEC)
    assert "allocator_segments" in est.breakdown and "allocator_cache" not in est.breakdown
    assert est.peak_reserved_bytes == est.peak_allocated_bytes + est.breakdown["allocator_segments"]
    assert est.peak_reserved_bytes >= est.peak_allocated_bytes


def _case(words: tuple[str, ...], metric: str = "reserved"):
    for held in heldout_sets(kind="memory"):
        for case in held.cases:
            if case.name.startswith("cs336") and all(w in case.name for w in words) and case.metric == metric:
                return case.as_reread()
    raise LookupError(words)


def test_the_card_bounds_the_replayed_cache():
    # hesiyang's staff xl1600 (d 1600, 48 blocks) at 1 x 1,024 tokens, fp32, on a 48 GB card (49,140 MiB):
    # unbounded the replay's segments pass the card; bounded, the cached ones are released on the failed mapping
    r = _case(("hesiyang", "t1024"))
    spec = case_spec(r.plan.model, r.model_config)
    card = case_gpu(r.gpu_id).memory_total_bytes
    free = memory_model.estimate_memory(r.plan, spec)
    bounded = memory_model.estimate_memory(r.plan, spec, device_bytes=card)
    assert free.device_total_bytes > card >= bounded.device_total_bytes
    assert bounded.peak_allocated_bytes == free.peak_allocated_bytes
    assert 0 < bounded.breakdown["allocator_segments"] < free.breakdown["allocator_segments"]
    assert estimate_memory(r.plan, spec, gpu=r.gpu_id).peak_reserved_bytes == bounded.peak_reserved_bytes
    roomy = memory_model.estimate_memory(r.plan, spec, device_bytes=free.device_total_bytes)
    assert roomy.peak_reserved_bytes == free.peak_reserved_bytes  # a card that holds it all changes nothing


def test_on_by_default_for_hand_written_models_only():
    assert allocator_step.REPLAY_FIXED_STEPS
    assert own_model(_STAFF_SPEC)
    hf = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", batch_size=1, seq_len=512)
    spec = spec_for_plan(hf)
    assert whole_step_known(spec, hf) and not own_model(spec)  # every tensor of the step known, but coarse
    est = estimate_memory(hf)
    assert "allocator_segments" not in est.breakdown
    assert est.breakdown["allocator_cache"] == int(est.peak_allocated_bytes * (1 + ALLOCATOR_SLACK)) - (
        est.peak_allocated_bytes)
    assert "allocator_segments" in estimate_memory(_staff(seq_len=512), _STAFF_SPEC).breakdown


def test_switched_off_the_slack_stays(monkeypatch):
    monkeypatch.setattr(allocator_step, "REPLAY_FIXED_STEPS", False)
    est = estimate_memory(_staff(seq_len=512), _STAFF_SPEC)
    assert "allocator_segments" not in est.breakdown and est.breakdown["allocator_cache"] > 0


def _cs336_reserved(tail: str) -> float:
    """Estimated reserved / allocated of a CS336 held-out case (its re-read plan: the staff model's config)."""
    for held in heldout_sets(kind="memory"):
        for case in held.cases:
            if case.name.startswith("cs336 A2 BraveBeter") and tail in case.name and case.metric == "reserved":
                r = case.as_reread()
                return case_memory(r.plan, "reserved", r.model_config, None, r.gpu_id) / case_memory(
                    r.plan, "allocated", r.model_config, None, r.gpu_id)
    raise LookupError(tail)


def test_cache_share_falls_with_tokens_per_micro_batch():
    # the staff xl model (hidden 2560, fp32): at 4 x 128 tokens a hidden-sized activation is 5 MiB and its 20 MiB
    # segments stay cached beside the gradients and the optimizer step (measured reserved / allocated 1.115); at
    # 2,048 tokens it is 20 MiB, exact-size segments the gradients reuse (measured 1.020)
    small, large = _cs336_reserved("b4 t128 fp32"), _cs336_reserved("b1 t2048 fp32")
    assert small > large > 1
    assert small - 1 > 3 * (large - 1)


def test_cs336_estimates_stay_on_their_cards():
    # hesiyang's xl1600 at 1,024 tokens on a 48 GB card: unbounded, the replay reserved more than the card holds
    checked = 0
    for held in heldout_sets(kind="memory"):
        for case in held.cases:
            if case.name.startswith("cs336") and case.metric == "reserved":
                r = case.as_reread()
                card = case_gpu(r.gpu_id).memory_total_bytes
                allocated = case_memory(r.plan, "allocated", r.model_config, None, r.gpu_id)
                if allocated + CUDA_CONTEXT_BYTES <= card:
                    assert case_memory(r.plan, "device", r.model_config, None, r.gpu_id) <= card, case.name
                    checked += 1
    assert checked


@pytest.mark.parametrize("fields", [dict(method="lora"), dict(gpus=8, sharding="fsdp"), dict(grad_accum=4),
                                    dict(expandable_segments=True), dict(optimizer="adamw-8bit")])
def test_plans_with_unknown_tensors_keep_the_slack(fields):
    plan = _staff(seq_len=512, **fields)
    assert not whole_step_known(_STAFF_SPEC, plan)
    est = estimate_memory(plan, _STAFF_SPEC)
    assert "allocator_segments" not in est.breakdown
    assert est.breakdown["allocator_cache"] == int(est.peak_allocated_bytes * (1 + ALLOCATOR_SLACK)) - (
        est.peak_allocated_bytes)
