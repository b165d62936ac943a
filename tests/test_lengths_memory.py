"""Memory under real data: a length distribution in the plan, the peak from the longest batch, and reserved
memory from replaying PyTorch's CUDA caching allocator over batches of those lengths."""

import json

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.allocator import (
    ORDER_BATCHES,
    CachingAllocator,
    order_lengths,
    padded_mix,
    replay,
    segment_size,
)
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory
from gpuwork.units import MIB

HIST = "100:10,200:30,300:25,400:15,500:10,600:6,1024:4"


# -- the plan field ----------------------------------------------------------------------------------------------

def test_lengths_default_to_fixed_and_accept_packed_and_histograms():
    assert TrainPlan().lengths == "fixed" and TrainPlan().length_histogram is None
    assert TrainPlan(lengths=" Packed ").lengths == "packed"
    plan = TrainPlan(seq_len=1024, lengths="512:5, 128:2,512:1")
    assert plan.lengths == ((128, 2.0), (512, 6.0))  # sorted, repeated lengths summed
    assert plan.longest_batch_len == 512
    assert TrainPlan(seq_len=1024, lengths={"128": 2, "512": 6}) == plan
    assert TrainPlan(seq_len=1024, lengths=[[128, 2], [512, 6]]) == plan
    # through a plan file (JSON) and back
    assert TrainPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan


def test_lengths_above_seq_len_are_truncated_to_it():
    plan = TrainPlan(seq_len=1024, lengths="100:1,4000:1")
    assert plan.lengths == ((100, 1.0), (1024, 1.0))


@pytest.mark.parametrize("bad, code", [
    ("weird", "error.plan.lengths"), ("128", "error.plan.lengths"), ({}, "error.plan.lengths"), (7, "error.plan.lengths"),
    ("128:0", "error.plan.lengths_bin"), ("0:5", "error.plan.lengths_bin"), ("12.5:1", "error.plan.lengths_bin"),
    ("abc:1", "error.plan.lengths_bin"), ("128:nan", "error.plan.lengths_bin"),
])
def test_bad_lengths_are_one_clear_error_in_both_languages(bad, code):
    with pytest.raises(PlanError) as info:
        TrainPlan(lengths=bad)
    assert info.value.msg.code == code and info.value.field == "lengths"
    en, ru = render(info.value.msg, "en"), render(info.value.msg, "ru")
    assert "\n" not in en and en != ru


def test_expandable_segments_is_a_checked_switch():
    with pytest.raises(PlanError):
        TrainPlan(expandable_segments="yes")


# -- the allocator rules -----------------------------------------------------------------------------------------

def test_segments_follow_the_allocator_sizes():
    assert segment_size(2 * MIB) == 20 * MIB  # 1-10 MiB requests: a 20 MiB segment
    assert segment_size(11 * MIB) == 12 * MIB  # larger ones round up to 2 MiB


@pytest.mark.parametrize("expandable, small_then_large, large_then_small", [(False, 256, 128), (True, 140, 140)])
def test_the_devlog_examples(expandable, small_then_large, large_then_small):
    """pytorch/devlogs 2026-06-01: 8 x 16 MiB freed, then 4 x 32 MiB (and the other order)."""
    def run(first, second):
        alloc = CachingAllocator(expandable)
        for n, size in (first, second):
            handles = [alloc.malloc(size * MIB) for _ in range(n)]
            for h in handles:
                alloc.release(h)
        return alloc.peak_reserved // MIB

    assert run((8, 16), (4, 32)) == small_then_large
    assert run((4, 32), (8, 16)) == large_then_small


def test_orders_follow_the_padded_maximum_and_are_reproducible():
    hist = ((100, 90.0), (1000, 10.0))
    # padding to the longest of 8 draws: a batch is long with probability 1 - 0.9^8 = 0.5695
    (short, n_short), (long, n_long) = padded_mix(hist, 8)
    assert (n_short, n_long) == (100, 1000) and (short, long) == pytest.approx((0.9**8, 1 - 0.9**8))
    one, eight = order_lengths(padded_mix(hist, 1), seed=0), order_lengths(padded_mix(hist, 8), seed=0)
    assert len(eight) == ORDER_BATCHES and set(eight) == {100, 1000}
    assert eight.count(1000) / ORDER_BATCHES == pytest.approx(1 - 0.9**8, abs=0.03)
    assert one.count(1000) / ORDER_BATCHES == pytest.approx(0.1, abs=0.02)
    assert order_lengths(padded_mix(hist, 8), seed=0) == eight  # one order per seed: reproducible
    assert order_lengths(padded_mix(hist, 8), seed=1) != eight


# -- the estimate ------------------------------------------------------------------------------------------------

def _plan(**kw):
    return TrainPlan(**{"model": "qwen2.5-0.5b", "method": "lora", "batch_size": 8, "seq_len": 1024,
                        "grad_checkpointing": True, **kw})


def test_fixed_and_packed_keep_todays_estimate():
    fixed, packed = estimate_memory(_plan()), estimate_memory(_plan(lengths="packed"))
    assert packed.as_dict() == fixed.as_dict()
    assert "allocator_fragmentation" not in fixed.breakdown


def test_the_peak_comes_with_the_longest_batch():
    short = estimate_memory(_plan(lengths="100:5,512:1"))
    assert short.peak_allocated_bytes == estimate_memory(_plan(seq_len=512)).peak_allocated_bytes
    assert estimate_memory(_plan(lengths="100:5,1024:1")).peak_allocated_bytes == \
        estimate_memory(_plan()).peak_allocated_bytes


def test_varying_lengths_reserve_more_and_expandable_segments_less():
    fixed = estimate_memory(_plan())
    varied = estimate_memory(_plan(lengths=HIST))
    expandable = estimate_memory(_plan(lengths=HIST, expandable_segments=True))
    assert varied.peak_allocated_bytes == fixed.peak_allocated_bytes
    frag = varied.breakdown["allocator_fragmentation"]
    # small model, 151,936-token vocabulary: the vocabulary-wide loss tensors of shorter batches stay cached in
    # segments the longest batch's cannot use: reserved grows by more than half
    assert frag > 0.5 * fixed.peak_reserved_bytes
    assert varied.peak_reserved_bytes == fixed.peak_reserved_bytes + frag
    assert varied.device_total_bytes == varied.peak_reserved_bytes + varied.breakdown["cuda_context"]
    assert expandable.breakdown["allocator_fragmentation"] < 0.1 * frag
    assert "allocator_fragmentation" in varied.sources


def test_a_histogram_with_one_length_is_a_fixed_shape():
    one = estimate_memory(_plan(lengths="1024:7"))
    assert one.peak_reserved_bytes == estimate_memory(_plan()).peak_reserved_bytes


def test_the_replay_is_cached_and_pure():
    plan = _plan(lengths=HIST)
    first = estimate_memory(plan)
    hits = replay.cache_info().hits
    assert estimate_memory(plan).peak_reserved_bytes == first.peak_reserved_bytes
    assert replay.cache_info().hits > hits


# -- the histogram from the user's data ------------------------------------------------------------------------

def test_length_histogram_counts_documents_through_a_tokenizer(tmp_path):
    pytest.importorskip("tokenizers")
    from gpuwork.measure.lengths import length_histogram

    data = tmp_path / "train.jsonl"
    short, long = "hello world", " ".join(["word"] * 3000)
    data.write_text("\n".join(json.dumps({"text": t}) for t in (short, short, short, long)) + "\n", encoding="utf-8")
    hist = length_histogram([data], seq_len=512, bins=8)
    assert sum(n for _, n in hist) == 4
    assert hist[-1] == (512, 1)  # the long document is cut to seq_len
    assert hist[0][0] == 64 and hist[0][1] == 3  # short ones round up to the first of 8 steps of 64
    plan = TrainPlan(seq_len=512, lengths=hist)
    assert plan.longest_batch_len == 512


def test_cli_lengths_flags_reach_the_plan(tmp_path):
    import argparse

    from gpuwork.cli.args import plan_arguments, plan_from_args

    parser = argparse.ArgumentParser()
    plan_arguments(parser)
    args = parser.parse_args(["--model", "llama-3.2-1b", "--seq-len", "1024", "--lengths", "100:3,1024:1",
                              "--expandable-segments"])
    plan = plan_from_args(args)
    assert plan.lengths == ((100, 3.0), (1024, 1.0)) and plan.expandable_segments is True
    with pytest.raises(PlanError):
        plan_from_args(parser.parse_args(["--lengths", "lots"]))


# -- properties ---------------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None, database=None)
@given(bins=st.lists(st.tuples(st.integers(16, 1024), st.integers(1, 50)), min_size=1, max_size=6),
       batch=st.integers(1, 8), ckpt=st.booleans(), expandable=st.booleans())
def test_a_histogram_never_reserves_less_than_its_longest_batch_every_step(bins, batch, ckpt, expandable):
    plan = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=1024, batch_size=batch, grad_checkpointing=ckpt,
                     lengths=bins, expandable_segments=expandable)
    varied = estimate_memory(plan)
    fixed = estimate_memory(plan.replace(lengths="fixed", seq_len=plan.longest_batch_len))
    assert varied.peak_allocated_bytes == fixed.peak_allocated_bytes
    assert varied.peak_reserved_bytes >= fixed.peak_reserved_bytes


def test_skipping_repeated_lengths_changes_nothing():
    from gpuwork.estimate.allocator import StepTensors, step_program

    step = StepTensors(4, (4096,), (4096, 11008, 11008), (128_000 * 4,), (128_000 * 4,) * 2, (4096, 11008), (11008,))
    tokens = (512, 2048, 512, 1024, 2048, 256, 1024, 2048, 512)
    for expandable in (False, True):
        naive = CachingAllocator(expandable)  # every micro-batch replayed on one allocator, none skipped
        for t in tokens:
            naive.run(step_program(step, t)[0])
        peak = max(step_program(step, t)[1] for t in tokens)
        assert replay(step, tokens, expandable) == (naive.peak_reserved, peak)


def test_the_sizing_form_takes_lengths():
    pytest.importorskip("ipywidgets")
    from gpuwork.plan import lengths_text
    from gpuwork.ui.sizing import SizingForm

    plan = TrainPlan(model="llama-3.2-1b", seq_len=2048, batch_size=4, grad_checkpointing=True)
    form = SizingForm(plan)
    assert form.controls["lengths"].value == "fixed"
    form.controls["lengths"].value = "128:30,512:10,2048:2"
    assert form.values()["lengths"] == "128:30,512:10,2048:2"
    varied = TrainPlan(**{**plan.as_dict(), "lengths": form.values()["lengths"]})
    assert lengths_text(varied.lengths) == "128:30,512:10,2048:2"
    form.controls["lengths"].value = "lots"
    assert "lengths=" in form.message.value  # the plan's own one-line error


@pytest.mark.parametrize("checkpointing", [False, True])
def test_frozen_blocks_below_the_backward_add_no_fragmentation(checkpointing):
    # freeze-tuning whose backward stops at its two trained blocks (input_require_grads off): the frozen blocks
    # beneath keep nothing for backward, so the allocator replay holds the blocks the backward runs through, and
    # doubling the frozen depth leaves the fragmentation as it is (the replay once held every block's tensors)
    import json
    from pathlib import Path

    from gpuwork.estimate.memory import estimate_memory as estimate_with_spec
    from gpuwork.facts.model import build_spec

    config = json.loads((Path(__file__).resolve().parents[1] / "gpuwork" / "facts" / "data" / "models"
                         / "qwen2.5-0.5b.json").read_text(encoding="utf-8"))
    plan = TrainPlan(model="qwen2.5-0.5b", method="freeze", trainable_layers=2, seq_len=1024, batch_size=4,
                     lengths=HIST, grad_checkpointing=checkpointing, input_require_grads=False)
    frag = [estimate_with_spec(plan, build_spec(dict(config, num_hidden_layers=layers), "qwen2.5-0.5b"))
            .breakdown["allocator_fragmentation"] for layers in (24, 48)]
    assert frag[0] == frag[1] > 0
    # with the embeddings hooked the backward reaches every frozen block: they keep tensors, and depth counts
    hooked = plan.replace(input_require_grads=True)
    deep = [estimate_with_spec(hooked, build_spec(dict(config, num_hidden_layers=layers), "qwen2.5-0.5b"))
            .peak_allocated_bytes for layers in (24, 48)]
    assert deep[1] > deep[0]
