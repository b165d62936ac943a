"""The track record shown beside a step-time estimate (docs/track_record.md).

``time_band`` picks, for a run, the row of the held-out track record (``facts/data/time_track_record.csv``) that
speaks for it: of the kinds of run it belongs to (``gpuwork.estimate.regimes``) with at least ``MIN_CASES``
cases, the one whose 90th percentile is highest, so the range shown is the widest the record supports; none:
all runs. It reports the record, it does not change the estimate: a step or run time times ``p10`` / ``p90`` is
the range the frozen predictions' errors imply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuwork.estimate.regimes import REGIME_IDS, REGIMES, regimes
from gpuwork.estimate.timing import TimeEstimate
from gpuwork.facts.catalog import GpuSpec
from gpuwork.facts.track_record import ALL_RUNS, TrackRecordRow
from gpuwork.plan import TrainPlan

# fewer cases than this and a regime's 10th/90th percentiles rest on one or two runs: the all-runs row speaks
MIN_CASES = 15


@dataclass(frozen=True)
class TimeBand:
    """Measured step time / estimated step time on the published runs of this kind (frozen predictions)."""

    regime: str  # a REGIME_IDS id, or ALL_RUNS
    cases: int
    sources: int
    p10: float
    p50: float
    p90: float

    def times(self, seconds: float) -> tuple[float, float, float]:
        """``seconds`` (a step or a whole run) at the 10th, 50th and 90th percentile ratio."""
        return seconds * self.p10, seconds * self.p50, seconds * self.p90

    def run_times(self, time: TimeEstimate) -> tuple[float, float, float]:
        """The whole run at the three ratios: its time without the fixed margin (the ratios stand in for it)."""
        return self.times(time.total_s - time.margin_s)

    def as_dict(self) -> dict[str, Any]:
        return {"regime": self.regime, "cases": self.cases, "sources": self.sources, "p10": self.p10,
                "p50": self.p50, "p90": self.p90}


def time_band(plan: TrainPlan, gpu: GpuSpec, nodes: int, record: Mapping[str, TrackRecordRow]) -> TimeBand:
    """The track-record row for a run on ``plan.gpus`` x ``gpu`` over ``nodes`` nodes (``record``: the loaded
    file by regime id): its most pessimistic regime with ``MIN_CASES`` cases, else all runs."""
    found = [record[REGIME_IDS[r]] for r in regimes(plan, gpu, nodes)
             if REGIME_IDS[r] in record and record[REGIME_IDS[r]].cases >= MIN_CASES]
    # the highest 90th percentile; a tie goes to the regime listed first in REGIMES
    row = max(found, key=lambda r: (r.p90, -_order(r.regime)), default=record[ALL_RUNS])
    return TimeBand(regime=row.regime, cases=row.cases, sources=row.sources, p10=row.p10, p50=row.p50, p90=row.p90)


def _order(regime_id: str) -> int:
    return [REGIME_IDS[r] for r in REGIMES].index(regime_id)


__all__ = ["MIN_CASES", "TimeBand", "time_band"]
