"""The held-out track record beside a time estimate, as the surfaces say it (docs/track_record.md).

One wording for the app's sizing tab, ``gpuwork plan``, the HTML report and the rental request; the band itself
is ``gpuwork.sizing.time_band``, computed here, where it is shown, never inside ``estimate_time``.
"""

from __future__ import annotations

import math

from gpuwork.estimate.band import TimeBand
from gpuwork.estimate.timing import TIME_MARGIN, TimeEstimate
from gpuwork.facts.track_record import ALL_RUNS
from gpuwork.message import Msg, msg
from gpuwork.units import DAY_S


def band_messages(band: TimeBand, time: TimeEstimate) -> tuple[Msg, Msg]:
    """The record line (cases, kind of run, 10th-90th percentile ratios) and the step and run ranges it implies."""
    fields = dict(cases=band.cases, sources=band.sources, p10=band.p10, p50=band.p50, p90=band.p90)
    line = (msg("track.line_all", **fields) if band.regime == ALL_RUNS
            else msg("track.line", regime=band.regime, **fields))
    step_lo, _, step_hi = band.times(time.step_time_s)
    run_lo, _, run_hi = band.run_times(time)
    return line, msg("track.range", step_lo=step_lo, step_hi=step_hi, run_lo=run_lo, run_hi=run_hi,
                     margin=TIME_MARGIN)


def band_request(band: TimeBand, time: TimeEstimate, cost_usd: float | None, budget_usd: float | None) -> Msg:
    """The request's line: the run and its rental at the record's 90th percentile, and the example's cost then
    (``cost_usd``: the example offer's cost at that time; None: no example)."""
    run_s = band.run_times(time)[2]
    cost = None
    if cost_usd is not None:
        verdict = None if budget_usd is None else msg(
            "request.within_budget" if cost_usd <= budget_usd else "request.over_budget")
        cost = msg("track.request.cost", cost_usd=cost_usd, verdict=verdict)
    return msg("track.request", p90=band.p90, cases=band.cases, regime=band.regime, run_s=run_s,
               days=max(1, math.ceil(run_s / DAY_S)), cost=cost)


__all__ = ["band_messages", "band_request"]
