"""The step-time model's held-out track record, by kind of run: ``facts/data/time_track_record.csv``.

Read from the frozen predictions of ``time_heldout.json`` alone (docs/track_record.md): for every revealed case,
the ratio measured step time / predicted step time = predicted throughput / measured throughput = 1 + the frozen
error of docs/time_accuracy.md. Cases the hardware bound rules out (measured FLOP use above ``PHYSICAL_LIMIT``)
are left out, as the page leaves them out. Only stored numbers and the FLOPs per token are read: no step is
priced, so the file's test stays fast. ``gpuwork accuracy --track-record --out FILE`` writes it.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from gpuwork.estimate.flops import flops_per_token
from gpuwork.estimate.regimes import REGIME_IDS, REGIMES, regimes
from gpuwork.estimate.timing import flops_plan, peak_flops
from gpuwork.facts.rates import with_stack_input_grads
from gpuwork.facts.track_record import ALL_RUNS, COLUMNS, TRACK_RECORD_NAME
from gpuwork.measure.accuracy import PHYSICAL_LIMIT, case_nodes, case_spec, measured_per_gpu
from gpuwork.measure.heldout import HELDOUT_NAME, HeldoutSet, heldout_sets
from gpuwork.measure.time_cases import case_gpu
from gpuwork.sizing import resolve

QUANTILES = (0.1, 0.5, 0.9)


@dataclass(frozen=True)
class FrozenCase:
    """One revealed held-out case as its frozen prediction scores it."""

    name: str
    source_id: str
    ratio: float  # measured step time / frozen predicted step time (1 + frozen error)
    excluded: bool  # measured FLOP use above PHYSICAL_LIMIT
    regimes: tuple[str, ...]


def frozen_cases(sets: tuple[HeldoutSet, ...] | None = None) -> list[FrozenCase]:
    """Every revealed held-out time case, scored by its frozen prediction (the configuration as recorded)."""
    out = []
    for held in heldout_sets() if sets is None else sets:
        for case in held.cases:
            if not case.revealed:
                continue
            tc = case.time_case()
            gpu = case_gpu(tc.gpu_id)
            spec = case_spec(tc.plan.model, tc.model_config) if tc.model_config else resolve(tc.plan).spec
            measured = measured_per_gpu(tc)
            # the utilisation time_accuracy_rows computes, from the same FLOPs per token and peak
            flops = flops_per_token(flops_plan(with_stack_input_grads(tc.plan)), spec).total
            use = flops * measured / peak_flops(gpu, tc.plan.precision, tc.plan.tf32, tc.plan.fp8_linear)[0]  # TF32 plans: its peak
            out.append(FrozenCase(name=case.name, source_id=case.source_id, ratio=case.predicted / measured,
                                  excluded=use > PHYSICAL_LIMIT, regimes=regimes(tc.plan, gpu, case_nodes(tc))))
    return out


def _source_weighted_quantile(cases: list[FrozenCase], q: float) -> float:
    """Nearest rank with every source weighing the same: the smallest ratio with at least ``q`` of the total weight
    at or below it, each case weighing 1 / (its source's cases in the group). A source is one program run one way
    (one author's loop, one framework's table), so one source with many rows must not stand for many runs."""
    per_source: dict[str, int] = {}
    for c in cases:
        per_source[c.source_id] = per_source.get(c.source_id, 0) + 1
    total = float(len(per_source))
    seen = 0.0
    for c in sorted(cases, key=lambda c: c.ratio):
        seen += 1.0 / per_source[c.source_id]
        if seen >= q * total - 1e-9:
            return c.ratio
    return max(c.ratio for c in cases)


def track_record_rows(cases: list[FrozenCase]) -> list[dict[str, str]]:
    """The file's rows: all runs, then each regime with at least one case (source-weighted nearest-rank
    percentiles)."""
    kept = [c for c in cases if not c.excluded]
    groups = [(ALL_RUNS, kept)] + [(REGIME_IDS[r], [c for c in kept if r in c.regimes]) for r in REGIMES]
    rows = []
    for regime, group in groups:
        if not group:
            continue
        p10, p50, p90 = (_source_weighted_quantile(group, q) for q in QUANTILES)
        rows.append({"regime": regime, "cases": str(len(group)), "sources": str(len({c.source_id for c in group})),
                     "p10": f"{p10:.3f}", "p50": f"{p50:.3f}", "p90": f"{p90:.3f}",
                     "source": f"frozen predictions in {HELDOUT_NAME} ({len(cases) - len(kept)} cases beyond the "
                               "peak left out); docs/track_record.md"})
    return rows


def track_record_csv(sets: tuple[HeldoutSet, ...] | None = None) -> str:
    """The text of ``time_track_record.csv`` for the held-out sets on file."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(track_record_rows(frozen_cases(sets)))
    return out.getvalue()


__all__ = ["QUANTILES", "TRACK_RECORD_NAME", "FrozenCase", "frozen_cases", "track_record_csv", "track_record_rows"]
