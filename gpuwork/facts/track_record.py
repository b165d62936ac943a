"""The step-time model's held-out track record: data/time_track_record.csv (docs/track_record.md).

One row per kind of run (``gpuwork.estimate.regimes``, by its id) and one for all runs (``ALL_RUNS``): how many
revealed held-out cases and sources it holds and the 10th / 50th / 90th percentile of measured step time over the
step time predicted before the figure was read. ``gpuwork accuracy --track-record`` regenerates it from
time_heldout.json; ``gpuwork.estimate.band.time_band`` picks the row shown beside an estimate.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from gpuwork.errors import CatalogError
from gpuwork.facts.paths import bundled_data_dir
from gpuwork.facts.tables import read_rows
from gpuwork.message import msg

TRACK_RECORD_NAME = "time_track_record.csv"
ALL_RUNS = "all"
COLUMNS = ("regime", "cases", "sources", "p10", "p50", "p90", "source")


@dataclass(frozen=True)
class TrackRecordRow:
    """One kind of run's record: measured / predicted step time at three percentiles of its cases."""

    regime: str  # an id of gpuwork.estimate.regimes.REGIME_IDS, or ALL_RUNS
    cases: int
    sources: int
    p10: float
    p50: float
    p90: float


def _row(path: Path, line: int, row: dict[str, str]) -> TrackRecordRow:
    def bad(column: str) -> CatalogError:
        return CatalogError(msg("error.rates.value", file=path.name, line=line, column=column, value=row[column]))

    numbers: dict[str, float] = {}
    for column in COLUMNS[1:6]:
        try:
            numbers[column] = float(row[column])
        except ValueError:
            raise bad(column) from None
        if not numbers[column] > 0 or (column in ("cases", "sources") and not numbers[column].is_integer()):
            raise bad(column)
    if not row["regime"].strip():
        raise bad("regime")
    if not numbers["p10"] <= numbers["p50"] <= numbers["p90"]:  # percentiles in order
        raise bad("p50")
    return TrackRecordRow(regime=row["regime"].strip(), cases=int(numbers["cases"]), sources=int(numbers["sources"]),
                          p10=numbers["p10"], p50=numbers["p50"], p90=numbers["p90"])


@functools.lru_cache(maxsize=4)
def _load(file: str) -> dict[str, TrackRecordRow]:
    path = Path(file)
    rows = {r.regime: r for r in (_row(path, i, raw) for i, raw in enumerate(read_rows(path, COLUMNS), start=2))}
    if ALL_RUNS not in rows:
        raise CatalogError(msg("error.rates.missing_key", file=path.name, key=ALL_RUNS))
    return rows


def load_track_record(path: str | Path | None = None) -> dict[str, TrackRecordRow]:
    """The rows of time_track_record.csv by regime id (default: the bundled file), cached per file."""
    return _load(str(Path(path) if path is not None else bundled_data_dir() / TRACK_RECORD_NAME))


__all__ = ["ALL_RUNS", "COLUMNS", "TRACK_RECORD_NAME", "TrackRecordRow", "load_track_record"]
