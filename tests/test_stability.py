"""Tests for gpuwork.measure.stability: the median step's confidence interval and drift, on fixed step lists
whose figures are worked by hand in the comments."""

from __future__ import annotations

import math

import pytest

from gpuwork.measure.stability import (
    CONFIDENCE,
    drift_per_100_steps,
    is_stable,
    median_interval,
    step_time_stats,
)

# ten steps; sorted: 0.47 0.48 0.49 0.50 0.50 0.50 0.51 0.52 0.53 0.55, median (0.50 + 0.50) / 2 = 0.50
TEN = [0.50, 0.52, 0.48, 0.51, 0.49, 0.50, 0.53, 0.47, 0.50, 0.55]


def test_ten_steps_give_the_second_and_ninth_order_statistics() -> None:
    # B ~ Binomial(10, 1/2): P(B <= 0) = 1/1024, P(B <= 1) = 11/1024 = 0.0107 <= 0.025,
    # P(B <= 2) = 56/1024 = 0.0547 > 0.025, so k = 2: [x(2), x(9)] = [0.48, 0.53], coverage 1 - 22/1024
    low, high, coverage = median_interval(TEN)
    assert (low, high) == (0.48, 0.53)
    assert coverage == pytest.approx(1 - 22 / 1024)
    stats = step_time_stats(TEN)
    assert stats.median_s == pytest.approx(0.50)
    # the larger side: high - median = 0.03 against median - low = 0.02, over the median 0.50
    assert stats.half_width == pytest.approx(0.06)
    assert stats.confidence == CONFIDENCE == 0.95 and stats.steps == 10
    assert is_stable(TEN, 0.06 + 1e-9) and not is_stable(TEN, 0.05)


def test_six_steps_are_the_fewest_with_a_95_percent_interval() -> None:
    # n = 6: P(B <= 0) = 1/64 = 0.0156 <= 0.025 -> the whole range, coverage 1 - 2/64 = 0.96875
    six = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95]
    assert median_interval(six) == (0.9, 1.2, pytest.approx(0.96875))
    # n = 5: P(B <= 0) = 1/32 = 0.031 > 0.025 -> no interval at 95 %, but one at 90 % (0.031 <= 0.05)
    assert median_interval(six[:5]) is None
    assert median_interval(six[:5], confidence=0.90) == (0.9, 1.2, pytest.approx(1 - 2 / 32))
    stats = step_time_stats(six[:5])
    assert stats.low_s is stats.high_s is stats.half_width is None and stats.median_s == 1.05
    assert not is_stable(six[:5], 0.5)


def test_the_interval_ignores_how_far_out_the_slowest_step_is() -> None:
    # distribution-free: a 10x slow step outside the order statistics used moves neither end
    slow = [*TEN[:-1], 5.0]  # replaces 0.55, the largest
    assert median_interval(slow)[:2] == (0.48, 0.53)


def test_drift_is_the_least_squares_slope_per_100_steps_over_the_median() -> None:
    # times rise 0.01 s per step around a median of 1.02 s: 0.01 x 100 / 1.02 = 0.980 per 100 steps
    assert drift_per_100_steps([3, 4, 5, 6, 7], [1.00, 1.01, 1.02, 1.03, 1.04]) == pytest.approx(1 / 1.02)
    # level with noise symmetric about the middle: slope 0
    assert drift_per_100_steps([1, 2, 3, 4], [1.0, 1.1, 1.1, 1.0]) == pytest.approx(0.0)
    # falling 0.5 s over steps 1..3 around a median of 2.0: slope -0.25 -> -12.5 per 100 steps
    assert drift_per_100_steps([1, 2, 3], [2.25, 2.0, 1.75]) == pytest.approx(-12.5)
    assert drift_per_100_steps([1], [1.0]) is None
    assert step_time_stats([2.25, 2.0, 1.75], [1, 2, 3]).drift_per_100_steps == pytest.approx(-12.5)


def test_no_times_and_bad_confidence() -> None:
    assert step_time_stats([]) is None
    with pytest.raises(ValueError, match="confidence"):
        median_interval(TEN, confidence=1.0)
    assert math.isclose(step_time_stats([0.2] * 8).half_width, 0.0)
