"""The cache emptied before the measured step (``cache_emptied``): how the replay prices it, and how a held-out memory
case carries it (docs/memory_misses.md, "The cache emptied before the measured step")."""

from __future__ import annotations

import json

import pytest

from gpuwork.estimate.allocator import StepTensors
from gpuwork.estimate.allocator_emptied import EmptyingAllocator, last_step_start, replay_emptied
from gpuwork.estimate.allocator_step import ParamLayout, StepBytes, replay_step, step_requests
from gpuwork.measure.accuracy import case_memory, memory_heldout_rows
from gpuwork.measure.heldout import CaseError, RereadError, heldout_sets, parse_sets, plan_from_json
from gpuwork.units import MIB

EVIDENCE = [{"url": "https://example.org/harness.py#L70", "quote": "torch.cuda.empty_cache()"}]
PLAN = {"model": "llama-3.2-1b", "method": "lora", "seq_len": 512, "batch_size": 2, "lora_targets": ["q_proj", "v_proj"],
        "eval_fraction": 0.0}


def test_emptying_gives_back_the_wholly_free_segments_and_restarts_the_peak():
    alloc = EmptyingAllocator()
    held: list[int] = []
    alloc.run((12 * MIB, 4 * MIB, ~1), held)  # a 12 MiB segment in use; a 4 MiB request's 20 MiB one, freed
    assert alloc.peak_reserved == 32 * MIB
    alloc.empty_cache()  # the 20 MiB segment is wholly free: released; the 12 MiB one holds a block: kept
    assert (alloc.reserved, alloc.peak_reserved) == (12 * MIB, 12 * MIB)
    alloc.run((16 * MIB,), held)  # no cached block: a 16 MiB segment of its own
    assert alloc.peak_reserved == 28 * MIB


# One block of one 16 MiB fp32 matrix (4 Mi elements), no embeddings or head; the forward saves one 12 MiB tensor,
# fused AdamW makes no temporaries. Counted by hand:
#   parameters: a 16 MiB segment. Step 1: the saved tensor maps 12 MiB, the gradient 16 MiB (the saved tensor
#   is still held), the saved tensor is freed; the two states map 16 MiB each (no free block holds them):
#   reserved 16 + 12 + 16 + 32 = 76 MiB. Steps 2-3: zero_grad frees the gradient; the saved tensor takes the
#   12 MiB segment (best fit), the gradient the 16 MiB one: nothing new, reserved 76 MiB, allocated peak
#   16 + 32 + 12 + 16 = 76 MiB (parameters, states, saved tensor and gradient): no cache.
#   Emptied before step 3: the free 12 MiB segment goes back (64 MiB left: parameters, states, the gradients);
#   zero_grad frees the 16 MiB gradient, the saved tensor now splits that block (12 + 4 MiB free), and the
#   gradient maps a new 16 MiB segment: peak 80 MiB, a 4 MiB cache where the kept cache had none.
LAYOUT = ParamLayout(embed=(), block=(4 * MIB,), head=(), layers=1, linears=(True,))
BYTES = StepBytes(param=4, grad=4, state=4, copy=0, impl="fused")
STEP = StepTensors(layers=1, layer_saved=(12 * MIB,), layer_transient=(), head=(), loss_transient=(), recompute=(),
                   backward_transient=())


def test_a_hand_counted_step_whose_reserved_peak_the_emptied_cache_changes():
    assert replay_step(LAYOUT, BYTES, STEP, 1) == (76 * MIB, 76 * MIB)
    assert replay_emptied(LAYOUT, BYTES, STEP, 1) == (80 * MIB, 76 * MIB)


def test_the_last_step_starts_with_the_zero_grad_releases():
    program, _, marks = step_requests(LAYOUT, BYTES, STEP, 1)
    # parameters 1 request; first step: saved, gradient, the saved tensor's release, two states = 5 (no zero_grad);
    # each later step: release of the gradient, saved, gradient, release of the saved tensor = 4
    assert len(program) == 1 + 5 + 4 + 4 and last_step_start(marks) == 10
    assert program[10] < 0 and program[11] == 12 * MIB


@pytest.mark.parametrize("impl", ["foreach", "for-loop", "out-of-place", "fused"])
@pytest.mark.parametrize("copy", [0, 2])
def test_the_last_step_repeats_the_step_before_it(impl, copy):
    # on a staff-like layout: the requests from the last step's start are the same sizes, in the same order, as
    # the step before (the releases name other handles); a wrong start would shift them
    layout = ParamLayout(embed=(10_000 * 512,), block=(512 * 512,) * 4 + (512 * 2048,) * 3 + (512,) * 2,
                         head=(10_000 * 512,), layers=4, linears=(True,) * 7 + (False,) * 2)
    by = StepBytes(param=4, grad=4, state=4, copy=copy, impl=impl)
    step = StepTensors(layers=4, layer_saved=(2048, 8192, 2048), layer_transient=(8192,), head=(40_000,),
                       loss_transient=(40_000,), recompute=(), backward_transient=(8192, 2048))
    program, _, marks = step_requests(layout, by, step, 512)
    start = last_step_start(marks)
    per_step = len(program) - start
    last, before = program[start:], program[start - per_step:start]
    assert [op for op in last if not isinstance(op, int) or op > 0] == [
        op for op in before if not isinstance(op, int) or op > 0]
    assert [isinstance(op, int) and op < 0 for op in last] == [isinstance(op, int) and op < 0 for op in before]


def _cs336_case(source: str, name_part: str):
    for held in heldout_sets(kind="memory"):
        for case in held.cases:
            if case.source_id.endswith(source) and name_part in case.name:
                return case
    raise LookupError(source)


def test_the_cs336_harnesses_that_empty_the_cache_carry_it_in_their_rereading():
    case = _cs336_case("a2p-yaoyuqian", "xl 1xh100_sxm b4 t128 fp32 train step (reserved)")
    assert not case.cache_emptied and case.reread is not None and case.reread.cache_emptied
    assert ("cache_emptied", "False", "True") in case.reread.changed
    r = case.as_reread()
    kept = case_memory(r.plan, r.metric, r.model_config, r.moe_experts, r.gpu_id)
    emptied = case_memory(r.plan, r.metric, r.model_config, r.moe_experts, r.gpu_id, cache_emptied=True)
    assert emptied != kept
    # the allocated peak does not depend on the cache
    allocated = [case_memory(r.plan, "allocated", r.model_config, r.moe_experts, r.gpu_id, cache_emptied=flag)
                 for flag in (False, True)]
    assert allocated[0] == allocated[1]


def test_an_emptied_cache_leaves_the_slack_path_as_it_is():
    # a Hugging Face model keeps ALLOCATOR_SLACK, a ratio read from runs: nothing there to replay from empty
    plan = plan_from_json(PLAN)
    assert case_memory(plan, "reserved", cache_emptied=True) == case_memory(plan, "reserved")


def _memory_doc(**extra) -> dict:
    case = {"name": "m", "source_id": "src", "source": "https://example.org/memory", "gpu_id": "a100_80_sxm",
            "plan": PLAN, "metric": "reserved", "predicted_bytes": 20 * 2**30, "measured": 25 * 2**30, **extra}
    return {"sets": [{"name": "mem1", "frozen_commit": "0" * 40, "predictions_commit": None, "cases": [case]}]}


def test_cache_emptied_is_parsed_and_round_trips():
    doc = _memory_doc(cache_emptied=True, reread={"cache_emptied": False, "why": "w", "evidence": EVIDENCE})
    (held,) = parse_sets(doc, "memory")
    case = held.cases[0]
    assert case.cache_emptied and case.reread is not None and not case.as_reread().cache_emptied
    assert case.reread.changed == (("cache_emptied", "True", "False"),)
    (again,) = parse_sets(json.loads(json.dumps(doc, ensure_ascii=False)), "memory")
    assert again == held
    (plain,) = parse_sets(_memory_doc(), "memory")
    assert not plain.cases[0].cache_emptied  # absent: the cache kept
    (row,) = memory_heldout_rows(held)  # the flag reaches the score; the slack path prices both alike
    assert row["estimated_bytes"] == row["reread_bytes"]


@pytest.mark.parametrize("value", ["yes", 1, 0, [], {}])
def test_a_cache_emptied_that_is_not_a_boolean_is_one_clear_error(value):
    with pytest.raises(CaseError) as caught:
        parse_sets(_memory_doc(cache_emptied=value), "memory")
    assert (caught.value.case, caught.value.field) == ("m", "cache_emptied")
    with pytest.raises(RereadError) as again:
        parse_sets(_memory_doc(reread={"cache_emptied": value, "why": "w", "evidence": EVIDENCE}), "memory")
    for err in (caught.value, again.value):
        assert err.msg is not None and err.msg.code == "error.heldout.cache_emptied"
        for lang in ("en", "ru"):
            text = err.text(lang)
            assert "m" in text and repr(value) in text and "Traceback" not in text
    assert "torch.cuda.empty_cache()" in caught.value.text("en")


def test_a_time_case_cannot_carry_cache_emptied():
    raw = {"name": "t", "source_id": "s", "source": "https://example.org/t", "gpu_id": "a100_80_sxm", "nodes": 1,
           "network": None, "plan": PLAN, "metric": "tokens_per_s_per_gpu", "predicted_tokens_per_s_per_gpu": 1.0}
    for bad in ({**raw, "cache_emptied": True}, {**raw, "reread": {"cache_emptied": True, "why": "w",
                                                                    "evidence": EVIDENCE}}):
        with pytest.raises(CaseError) as caught:
            parse_sets({"sets": [{"name": "s", "frozen_commit": "0" * 40, "cases": [bad]}]})
        assert caught.value.field == "cache_emptied"
        assert caught.value.msg is not None and caught.value.msg.code == "error.heldout.cache_emptied_time"
        assert caught.value.text("ru") != caught.value.text("en")


def test_marks_that_are_not_two_per_step_are_refused():
    with pytest.raises(ValueError, match="each ending in its update"):
        last_step_start((5, 9, 12))
    with pytest.raises(ValueError, match="each ending in its update"):
        last_step_start((5, 9, 8, 12, 14, 16))
