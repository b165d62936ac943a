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


__all__ = ["CONFIDENCE", "DEFAULT_TOLERANCE", "METHOD", "StepTimeStats", "drift_per_100_steps", "is_stable",
           "median_interval", "step_time_stats"]
