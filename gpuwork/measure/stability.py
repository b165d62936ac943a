"""How sure a trial is of its step time: a confidence interval of the median step and its drift. Pure.

Ten steps on a noisy machine are not a measurement. ``step_time_stats(times)`` gives, for the
measured (post-warm-up) step times of a trial:

- the median and its **distribution-free confidence interval** from order statistics: with the
  times sorted ``x(1) <= ... <= x(n)`` and ``B ~ Binomial(n, 1/2)``, the interval is
  ``[x(k), x(n+1-k)]`` for the largest ``k`` with ``P(B <= k-1) <= (1 - confidence) / 2``; it covers
  the true median with probability ``1 - 2 P(B <= k-1) >= confidence`` whatever the distribution of
  the step times (Conover, *Practical Nonparametric Statistics*, 3rd ed., section 3.2; the interval
  ``scipy.stats.quantile_test(...).confidence_interval()`` returns). At 95 % it needs n >= 6 steps
  (n = 6: the whole range, 96.9 %; n = 10: ``[x(2), x(9)]``, 97.9 %); fewer give no interval.
- the **half-width**: the larger distance from the median to an end, as a share of the median (the
  interval lies within +-half-width of it); ``--until-stable`` stops once it is within the tolerance;
- the **drift**: the least-squares slope of step time over step number, as a share of the median per
  100 steps (+0.05 = steps get 5 % slower every 100 steps).

Why order statistics, not a bootstrap or a t-interval: the median is what the trial reports and
extrapolates, and step times are skewed (a slow step now and then), which a t-interval on the mean
assumes away; the order-statistic interval is exact for any distribution, needs no random resampling
(the same steps always give the same interval, checkable by hand) and only the standard library, so
``gpuwork compare`` reads it on the core install. scipy is not a dependency.

Limitations: the interval assumes the steps are independent draws from one distribution; a trend
(see the drift) or steps that come in slow/fast runs make it too narrow. It bounds the *median* step;
a run's total is the sum of its steps, which a few very slow steps push above steps x median.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95  # the interval the trials report
DEFAULT_TOLERANCE = 0.03  # --until-stable: the interval within +-3 % of the median
METHOD = "order statistics (distribution-free, binomial)"


@dataclass(frozen=True)
class StepTimeStats:
    """The median step time with its confidence interval and drift. Times in seconds."""

    steps: int  # measured steps the figures come from
    median_s: float
    low_s: float | None  # None: too few steps for an interval at this confidence
    high_s: float | None
    coverage: float | None  # the interval's exact coverage (>= confidence)
    half_width: float | None  # max(median - low, high - median) / median
    drift_per_100_steps: float | None  # slope x 100 / median; None for fewer than 2 steps
    confidence: float = CONFIDENCE
    method: str = METHOD


def _binomial_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def median_interval(times: Sequence[float], confidence: float = CONFIDENCE
                    ) -> tuple[float, float, float] | None:
    """(low, high, coverage) of the median of ``times``: the order statistics x(k), x(n+1-k) (module
    docstring); None when ``times`` are too few for that confidence."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    n = len(times)
    tail = (1 - confidence) / 2
    k = 0
    while k + 1 <= n // 2 and _binomial_cdf(k, n) <= tail:  # x(k+1) still keeps the tail within bounds
        k += 1
    if k == 0:
        return None
    ordered = sorted(times)
    return ordered[k - 1], ordered[n - k], 1 - 2 * _binomial_cdf(k - 1, n)


def drift_per_100_steps(steps: Sequence[int], times: Sequence[float]) -> float | None:
    """Least-squares slope of time over step number x 100 / median time; None for fewer than 2 steps."""
    if len(times) < 2 or len(set(steps)) < 2:
        return None
    median = statistics.median(times)
    if median <= 0:
        return None
    mean_x, mean_y = statistics.fmean(steps), statistics.fmean(times)
    sxx = sum((x - mean_x) ** 2 for x in steps)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(steps, times, strict=True))
    return sxy / sxx * 100 / median


def step_time_stats(times: Sequence[float], steps: Sequence[int] | None = None,
                    confidence: float = CONFIDENCE) -> StepTimeStats | None:
    """Median, interval, half-width and drift of measured step times (``steps``: their step numbers,
    default 1..n); None for no times."""
    if not times:
        return None
    steps = list(steps) if steps is not None else list(range(1, len(times) + 1))
    median = statistics.median(times)
    interval = median_interval(times, confidence)
    low = high = coverage = half = None
    if interval is not None:
        low, high, coverage = interval
        half = max(median - low, high - median) / median if median > 0 else math.inf
    return StepTimeStats(steps=len(times), median_s=median, low_s=low, high_s=high, coverage=coverage,
                         half_width=half, drift_per_100_steps=drift_per_100_steps(steps, times),
                         confidence=confidence)


def is_stable(times: Sequence[float], tolerance: float, confidence: float = CONFIDENCE) -> bool:
    """Whether the median's interval lies within +-``tolerance`` of it."""
    stats = step_time_stats(times, confidence=confidence)
    return stats is not None and stats.half_width is not None and stats.half_width <= tolerance




class RunningStepTimes:
    """``step_time_stats`` kept as the steps come, at a cost per step that does not grow with the step count.

    The times are kept sorted (``bisect.insort``: a binary search and one C-level move of the list, some
    microseconds at 100,000 steps); the interval's order-statistic rank ``k`` moves by at most one per step,
    and the binomial tail ``P(B <= k-1)`` it needs follows from the previous one by the recurrences
    ``F(n+1, j) = F(n, j) - p(n, j) / 2`` and ``p(n+1, j) = p(n, j) (n+1) / (2 (n+1-j))``, so no sum over ``n``
    is redone; the drift is a least-squares slope from running means and co-moments (Welford's update).
    ``stats()`` equals ``step_time_stats`` of the same times (tests/test_record_bookkeeping.py checks it).
    """

    def __init__(self, confidence: float = CONFIDENCE):
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
        self.confidence = confidence
        self._tail = (1 - confidence) / 2
        self.sorted: list[float] = []
        self.n = 0
        self._k = 0  # the interval's rank: x(k), x(n+1-k); 0: no interval yet
        self._pmf = 1.0  # p(n, k) = C(n, k) / 2^n (n = 0: p(0, 0) = 1)
        self._cdf = 1.0  # F(n, k) = P(B <= k)
        self._mean_x = self._mean_y = self._sxx = self._sxy = 0.0
        self._steps_distinct = False
        self._first_step: int | None = None

    def add(self, time_s: float, step: int | None = None) -> None:
        """One more measured step's time (``step``: its number, default the count so far + 1)."""
        import bisect

        step = self.n + 1 if step is None else step
        bisect.insort(self.sorted, time_s)
        # binomial tail at rank k from n to n + 1 trials
        n, k = self.n, self._k
        self._cdf -= self._pmf / 2
        self._pmf = self._pmf * (n + 1) / (2 * (n + 1 - k))
        self.n = n = n + 1
        # x(k+1) keeps the tail within bounds when F(n, k) <= tail (``median_interval``'s loop, one step at a time)
        while self._k + 1 <= n // 2 and self._cdf <= self._tail:
            k = self._k
            self._pmf = self._pmf * (n - k) / (k + 1)
            self._cdf += self._pmf
            self._k = k + 1
        dx = step - self._mean_x
        self._mean_x += dx / n
        self._mean_y += (time_s - self._mean_y) / n
        self._sxx += dx * (step - self._mean_x)
        self._sxy += dx * (time_s - self._mean_y)
        if self._first_step is None:
            self._first_step = step
        elif step != self._first_step:
            self._steps_distinct = True

    def stats(self) -> StepTimeStats | None:
        """The figures ``step_time_stats`` gives for the times added so far; None before the first."""
        if not self.n:
            return None
        n, k, ordered = self.n, self._k, self.sorted
        median = _sorted_median(ordered)
        low = high = coverage = half = None
        if k:
            low, high = ordered[k - 1], ordered[n - k]
            coverage = 1 - 2 * self._cdf_below_k()
            half = max(median - low, high - median) / median if median > 0 else math.inf
        drift = None
        if n >= 2 and self._steps_distinct and median > 0 and self._sxx > 0:
            drift = self._sxy / self._sxx * 100 / median
        return StepTimeStats(steps=n, median_s=median, low_s=low, high_s=high, coverage=coverage, half_width=half,
                             drift_per_100_steps=drift, confidence=self.confidence)

    def _cdf_below_k(self) -> float:
        """F(n, k-1) = F(n, k) - p(n, k)."""
        return self._cdf - self._pmf

    def is_stable(self, tolerance: float) -> bool:
        """``is_stable`` of the times added so far."""
        stats = self.stats()
        return stats is not None and stats.half_width is not None and stats.half_width <= tolerance


def _sorted_median(ordered: Sequence[float]) -> float:
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2

__all__ = ["CONFIDENCE", "DEFAULT_TOLERANCE", "METHOD", "RunningStepTimes", "StepTimeStats", "drift_per_100_steps",
           "is_stable", "median_interval", "step_time_stats"]
