"""A case is scored against what its figure timed: the scorer adds exactly the parts its ``covers`` names."""

from __future__ import annotations

import pytest

from gpuwork.estimate.timing import DISK_WRITE_BYTES_S
from gpuwork.measure.accuracy import time_accuracy_rows
from gpuwork.measure.heldout import heldout_sets, parse_sets
from gpuwork.measure.time_cases import STEPS_ONLY, Covers, TimeCase
from gpuwork.plan import TrainPlan
from gpuwork.sizing import checkpoint_bytes, estimate_disk, estimate_time

PLAN = TrainPlan(model="llama-3.2-1b", method="lora", precision="bf16", seq_len=1024, batch_size=2, grad_accum=2,
                 eval_fraction=0.0)
STEPS = 12


def _row(covers: Covers, samples: int | None = STEPS * 4):
    case = TimeCase(name="a run", plan=PLAN, gpu_id="h100_sxm", metric="samples_per_s", measured=10.0,
                    source="test", source_id="test", samples=samples,
                    measured_time_s=samples / 10.0 if samples else None, covers=covers)
    return time_accuracy_rows((case,))[0]


@pytest.fixture(scope="module")
def est():
    return estimate_time(PLAN, "h100_sxm")


def test_the_words_round_trip_and_a_bad_word_is_refused():
    words = ["steps", "first_steps", "start_up", "eval_every:100", "save_every:250", "final_save_full"]
    assert list(Covers.parse(words).words()) == words
    assert Covers.parse(None) == Covers.parse(["steps"]) == STEPS_ONLY
    for bad in (["first_steps"], [], "steps", ["steps", "save_every:0"], ["steps", "eval_every"],
                ["steps", "first_steps:3"], ["steps", "warmup"]):
        with pytest.raises(ValueError):
            Covers.parse(bad)


def test_saves_need_the_run_s_samples():
    with pytest.raises(ValueError, match="samples"):
        _row(Covers(save_every=5), samples=None)


def test_steps_alone_and_unpriced_first_steps_score_the_step_throughput(est):
    alone, first = _row(STEPS_ONLY), _row(Covers(first_steps=True, start_up=True))
    assert alone.covered is None
    assert alone.predicted == pytest.approx(est.tokens_per_s / PLAN.gpus)
    assert first.predicted == alone.predicted
    assert first.covered is not None and first.covered.not_estimated == ("first steps", "start-up")
    assert first.covered.total_s == first.covered.steps_s == pytest.approx(STEPS * est.step_time_s)


def test_a_save_adds_the_write_time_of_the_disk_estimate_s_checkpoint(est):
    row = _row(Covers(save_every=5))
    steps_s = STEPS * est.step_time_s
    saves_s = (STEPS // 5) * checkpoint_bytes(PLAN) / DISK_WRITE_BYTES_S
    assert row.covered is not None and row.covered.steps == STEPS
    assert row.covered.saves_s == pytest.approx(saves_s) and row.covered.eval_s == 0
    assert row.predicted == pytest.approx(est.tokens_per_s * steps_s / (steps_s + saves_s))


def test_a_final_full_save_writes_the_model_s_weights(est):
    row = _row(Covers(final_save_full=True))
    final_s = estimate_disk(PLAN).checkpoint.weights_bytes / DISK_WRITE_BYTES_S
    assert final_s > 0
    assert row.covered is not None and row.covered.final_save_s == pytest.approx(final_s)
    assert row.covered.saves_s == 0


def test_evaluation_is_the_app_s_default_share_of_the_training_time(est):
    row = _row(Covers(eval_every=4))
    assert row.covered is not None
    assert row.covered.eval_s == pytest.approx(TrainPlan().eval_fraction * STEPS * est.step_time_s)
    assert row.predicted == pytest.approx(est.tokens_per_s / (1 + TrainPlan().eval_fraction))


def test_a_held_out_case_reads_covers_and_keeps_its_frozen_prediction():
    raw = {"name": "run", "source_id": "s", "source": "s", "gpu_id": "h100_sxm", "metric": "samples_per_s",
           "covers": ["steps", "save_every:5"], "plan": PLAN.as_dict(), "predicted_tokens_per_s_per_gpu": 123.0,
           "measured": 10.0, "samples": STEPS * 4}
    held = parse_sets({"sets": [{"name": "x", "frozen_commit": "0" * 40, "cases": [raw]}]})[0]
    assert held.cases[0].covers == Covers(save_every=5) and held.cases[0].time_case().covers == Covers(save_every=5)
    with pytest.raises(ValueError):
        parse_sets({"sets": [{"name": "x", "frozen_commit": "0" * 40, "cases": [{**raw, "covers": ["saves"]}]}]})


def test_the_bundled_70b_blog_run_covers_its_evaluations_and_saves():
    case = next(c for s in heldout_sets() for c in s.cases if c.source_id == "hf-blog-fsdp-70b")
    assert case.covers == Covers(first_steps=True, eval_every=100, save_every=250, final_save_full=True)


def test_a_variable_length_run_is_scored_in_the_tokens_its_samples_hold():
    """A run of a length histogram (real data padded per micro-batch) is priced in real tokens per second; its
    published samples/s or step time converts with the histogram's mean tokens, not its longest length. Scored
    so, a run whose published time is the estimate's own comes out at zero error whatever the longest length."""
    plan = PLAN.replace(seq_len=512, lengths=((64, 6), (128, 3), (512, 1)), batch_size=4, grad_accum=1)
    mean = (64 * 6 + 128 * 3 + 512 * 1) / 10
    est = estimate_time(plan, "h100_sxm")
    samples_s = est.tokens_per_s / mean
    by_samples = TimeCase(name="a", plan=plan, gpu_id="h100_sxm", metric="samples_per_s", measured=samples_s,
                          source="test", source_id="test")
    by_step = TimeCase(name="b", plan=plan, gpu_id="h100_sxm", metric="step_s", measured=4 / samples_s,
                       source="test", source_id="test")
    rows = time_accuracy_rows((by_samples, by_step))
    assert [r.measured for r in rows] == pytest.approx([samples_s * mean] * 2)
    assert [r.error for r in rows] == pytest.approx([0.0, 0.0], abs=1e-9)
