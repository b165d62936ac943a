"""A length histogram from a published mean +- sd (``estimate.lengths.moments_histogram``), numbers by hand.

With sd = mean the method of moments gives sigma^2 = ln 2 and a median of mean / sqrt(2); a normal table gives
Phi(sqrt(ln 2)) = Phi(0.8326) = 0.7974, so the share below twice the median is 0.7974 and below half of it 0.2026.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpuwork.estimate.lengths import moments_histogram
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory

MEAN = 1000 * math.sqrt(2)  # with sd = mean, the median is 1,000 tokens


def test_longer_samples_cut_to_seq_len_fill_the_top_bin():
    # bins 0-1,000 and 1,000-2,000: half below the median; everything above it ends in the top bin, cut or not
    hist = moments_histogram(MEAN, MEAN, 0, 10**9, 2000, bins=2)
    assert [n for n, _ in hist] == [1000, 2000]
    assert [w for _, w in hist] == pytest.approx([0.5, 0.5])


def test_longer_samples_dropped_leave_the_rest_renormalised():
    hist = moments_histogram(MEAN, MEAN, 0, 10**9, 2000, bins=2, longer="drop")
    assert [n for n, _ in hist] == [1000, 2000]
    # kept: P(X <= 2,000) = 0.7974, of which 0.5 below 1,000
    assert hist[0][1] == pytest.approx(0.5 / 0.7974, abs=1e-3)
    assert hist[1][1] == pytest.approx(0.2974 / 0.7974, abs=1e-3)


def test_the_published_longest_sample_bounds_the_histogram():
    # restricted to [0, 1,000] (the median): P(X <= 500) / P(X <= 1,000) = 0.2026 / 0.5
    hist = moments_histogram(MEAN, MEAN, 0, 1000, 4000, bins=2)
    assert [n for n, _ in hist] == [500, 1000]
    assert hist[0][1] == pytest.approx(0.2026 / 0.5, abs=1e-3)
    assert sum(w for _, w in hist) == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs", [dict(sd=0), dict(longer="pad"), dict(shortest=3000)])
def test_impossible_descriptions_are_refused(kwargs):
    args = dict(mean=MEAN, sd=MEAN, shortest=0, longest=10**9, seq_len=2000) | kwargs
    longer = args.pop("longer", "cut")
    with pytest.raises(ValueError):
        moments_histogram(**args, longer=longer)


def test_a_plan_with_such_a_histogram_peaks_at_its_longest_batch_and_fragments():
    plan = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, batch_size=1, grad_checkpointing=True)
    hist = moments_histogram(800, 600, 20, 6000, plan.seq_len, longer="drop")
    assert hist[-1][0] == 2048  # samples above seq_len dropped: the top bin ends at seq_len
    fixed, varied = estimate_memory(plan), estimate_memory(replace(plan, lengths=hist))
    assert varied.peak_allocated_bytes == fixed.peak_allocated_bytes
    assert varied.breakdown["allocator_fragmentation"] > 0
    assert varied.peak_reserved_bytes > fixed.peak_reserved_bytes
