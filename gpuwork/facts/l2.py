"""Published bandwidths of kernels whose data sit in the L2 cache, by working-set size: data/l2_measurements.csv.

They are the evidence for the step model's L2 rule (``gpuwork.estimate.l2_reuse``; docs/kernels.md "Kernels whose
inputs are still in L2"): a read of a tensor the previous kernel just touched, and the write of a temporary the next
kernel reads and frees, move at the copy rate measured on the GPU for a working set at least as large as the pair
of kernels' (``l2_copy_steps``). Rows of access ``copy`` count reads and writes, as the model's bytes do; ``read``
rows (read-only L2 benchmarks) document where each L2 stops holding a working set and are not used in pricing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from gpuwork.errors import CatalogError
from gpuwork.facts.paths import data_dir
from gpuwork.facts.tables import cell_number, read_rows
from gpuwork.message import msg

L2_CSV = "l2_measurements.csv"
ACCESSES = ("copy", "read")  # reads and writes counted / a read-only kernel
_COLUMNS = ("gpu_id", "l2_mb", "benchmark", "access", "footprint_bytes", "gbs", "source", "note")


@dataclass(frozen=True)
class L2Row:
    """One published bandwidth of one kernel over a working set of ``footprint_bytes``."""

    gpu_id: str
    l2_mb: float  # the GPU's L2 capacity as its vendor states it (0: not stated for this GPU)
    benchmark: str
    access: str  # one of ACCESSES
    footprint_bytes: int  # distinct bytes the kernel touches over and over
    bytes_per_s: float
    source: str  # tag in rates_sources.md
    note: str


def _row(path: Path, line: int, row: dict[str, str]) -> L2Row:
    def number(column: str, blank_ok: bool = False) -> float:
        if blank_ok and not row[column].strip():
            return 0.0
        return cell_number(path, line, column, row[column])

    if row["access"].strip() not in ACCESSES:
        raise CatalogError(msg("error.rates.value", file=path.name, line=line, column="access", value=row["access"]))
    return L2Row(gpu_id=row["gpu_id"].strip(), l2_mb=number("l2_mb", blank_ok=True),
                 benchmark=row["benchmark"].strip(), access=row["access"].strip(),
                 footprint_bytes=int(number("footprint_bytes")), bytes_per_s=number("gbs") * 1e9,
                 source=row["source"].strip(), note=row["note"].strip())


@functools.lru_cache(maxsize=4)
def _load(folder: str) -> tuple[L2Row, ...]:
    path = Path(folder) / L2_CSV
    if not path.exists():  # a data folder without the file: no GPU has an L2 rule
        return ()
    return tuple(_row(path, i, row) for i, row in enumerate(read_rows(path, _COLUMNS), start=2))


def load_l2_measurements(folder: str | Path | None = None) -> tuple[L2Row, ...]:
    """The rows of l2_measurements.csv in ``folder`` (default: the data folder in use), cached per folder."""
    return _load(str(Path(folder) if folder is not None else data_dir()))


@functools.lru_cache(maxsize=256)
def _steps(gpu_id: str, folder: str) -> tuple[tuple[float, float], ...]:
    return tuple(sorted((float(r.footprint_bytes), r.bytes_per_s) for r in _load(folder)
                        if r.gpu_id == gpu_id and r.access == "copy"))


def l2_copy_steps(gpu_id: str, folder: str | Path | None = None) -> tuple[tuple[float, float], ...]:
    """(working set in bytes, bytes/s) of the GPU's measured copy rows, smallest working set first; () for a GPU
    without one (it keeps the large-array pricing)."""
    return _steps(gpu_id, str(Path(folder) if folder is not None else data_dir()))


__all__ = ["ACCESSES", "L2_CSV", "L2Row", "l2_copy_steps", "load_l2_measurements"]
