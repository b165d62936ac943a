"""Published timings of memory-bound kernels by size: data/membw_measurements.csv.

They are the evidence for the step model's memory-bound kernel, t = t0 + bytes / bw
(``gpuwork.estimate.steptime.memory_kernel_s``): bw is the GPU's large-array bandwidth (rates.csv
``mem_bw_gbs``), t0 the fixed time of one kernel on its die, derived from the smallest rows here by the rule in
``derive_t0_us``: kernels.csv ``membw_t0_batch_us_<die>`` from back-to-back launches (a step's kernels, queued ahead
by the host) and ``membw_t0_us_<die>`` from single launches (a kernel after a host sync). docs/kernels.md tabulates
every row against the model.
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from pathlib import Path

from gpuwork.errors import CatalogError
from gpuwork.facts.paths import data_dir
from gpuwork.facts.rates import Rates
from gpuwork.facts.tables import cell_number, read_rows
from gpuwork.message import msg

MEMBW_CSV = "membw_measurements.csv"
TIMINGS = ("cold", "batch")  # nvbench "GPU Time" of single launches / "Batch GPU" of back-to-back launches
_COLUMNS = ("gpu_id", "die", "kernel", "dtype", "elements", "bytes", "time_us", "timing", "covered", "source", "note")


@dataclass(frozen=True)
class MembwRow:
    """One published timing of one memory-bound kernel at one size."""

    gpu_id: str
    die: str  # last word of gpus.csv architecture, lower case: the key suffix of kernels.csv membw_t0_us_<die>
    kernel: str
    dtype: str
    elements: int
    bytes: int  # bytes read + written
    time_s: float
    timing: str  # one of TIMINGS
    covered: bool  # inside what the model claims to reproduce (else ``note`` says why not)
    source: str  # tag in rates_sources.md
    note: str


def _row(path: Path, line: int, row: dict[str, str]) -> MembwRow:
    def number(column: str) -> float:
        return cell_number(path, line, column, row[column])

    for column, allowed in (("timing", TIMINGS), ("covered", ("0", "1"))):
        if row[column].strip() not in allowed:
            raise CatalogError(msg("error.rates.value", file=path.name, line=line, column=column, value=row[column]))
    return MembwRow(gpu_id=row["gpu_id"].strip(), die=row["die"].strip(), kernel=row["kernel"].strip(),
                    dtype=row["dtype"].strip(), elements=int(number("elements")), bytes=int(number("bytes")),
                    time_s=number("time_us") * 1e-6, timing=row["timing"].strip(), covered=row["covered"] == "1",
                    source=row["source"].strip(), note=row["note"].strip())


@functools.lru_cache(maxsize=4)
def _load(folder: str) -> tuple[MembwRow, ...]:
    path = Path(folder) / MEMBW_CSV
    return tuple(_row(path, i, row) for i, row in enumerate(read_rows(path, _COLUMNS), start=2))


def load_membw_measurements(folder: str | Path | None = None) -> tuple[MembwRow, ...]:
    """The rows of membw_measurements.csv in ``folder`` (default: the data folder in use), cached per folder."""
    return _load(str(Path(folder) if folder is not None else data_dir()))


def derive_t0_us(rows: tuple[MembwRow, ...], rates: Rates, timing: str = "cold") -> dict[str, float]:
    """t0 per die by the rule of rates_sources.md: the mean over its covered rows of this ``timing`` and of the
    smallest size of (time - bytes / mem_bw_gbs). The larger rows are left to test the model. Dies without a
    covered row of this timing are absent."""
    t0: dict[str, float] = {}
    for die in sorted({r.die for r in rows if r.covered and r.timing == timing}):
        mine = [r for r in rows if r.die == die and r.covered and r.timing == timing]
        smallest = min(r.elements for r in mine)
        t0[die] = statistics.mean(
            (r.time_s - r.bytes / rates.devices[r.gpu_id].mem_bw_bytes_s) * 1e6 for r in mine if r.elements == smallest)
    return t0


__all__ = ["MEMBW_CSV", "TIMINGS", "MembwRow", "derive_t0_us", "load_membw_measurements"]
