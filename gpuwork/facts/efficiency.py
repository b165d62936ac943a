"""Efficiency defaults for the step-time model: data/mfu.csv (MFU per method group and GPU architecture)."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import CatalogError
from gpuwork.facts.paths import data_dir
from gpuwork.message import msg

MFU_CSV = "mfu.csv"
# "-single": one GPU, no sharding (Hugging Face Trainer / PEFT style loops)
METHOD_GROUPS = ("full", "lora", "fp32", "full-single", "lora-single")
MFU_CSV_COLUMNS = ("method_group", "architecture", "mfu", "mfu_low", "mfu_high", "basis")


@dataclass(frozen=True)
class MfuRow:
    """One row of data/mfu.csv."""

    method_group: str  # one of METHOD_GROUPS
    architecture: str  # prefix of GpuSpec.architecture, or "*"
    mfu: float
    low: float
    high: float
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return {"method_group": self.method_group, "architecture": self.architecture, "mfu": self.mfu,
                "low": self.low, "high": self.high, "basis": self.basis}


@functools.lru_cache(maxsize=4)
def _read_mfu_table(path: str) -> tuple[MfuRow, ...]:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(msg("error.catalog.unreadable", file=file.name, path=str(file),
                               reason=str(exc.strerror))) from None
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in MFU_CSV_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        problem = msg("error.efficiency.columns_missing", missing=", ".join(missing),
                      expected=", ".join(MFU_CSV_COLUMNS))
        raise CatalogError(msg("error.catalog.line", file=file.name, line=1, problem=problem))
    rows = []
    for line, raw in enumerate(reader, start=2):
        try:
            values = [float(raw[c]) for c in ("mfu", "mfu_low", "mfu_high")]
        except (TypeError, ValueError):
            raise CatalogError(msg("error.catalog.line", file=file.name, line=line,
                                   problem=msg("error.efficiency.not_numbers"))) from None
        mfu, low, high = values
        if not 0 < low <= mfu <= high <= 1:
            raise CatalogError(msg("error.catalog.line", file=file.name, line=line,
                                   problem=msg("error.efficiency.order")))
        if raw["method_group"] not in METHOD_GROUPS:
            problem = msg("error.catalog.not_one_of", value=repr(raw["method_group"]),
                          choices=", ".join(METHOD_GROUPS))
            raise CatalogError(msg("error.catalog.row", file=file.name, line=line, field="method_group",
                                   problem=problem))
        rows.append(MfuRow(raw["method_group"], raw["architecture"].strip(), mfu, low, high, raw["basis"]))
    return tuple(rows)


def mfu_table(path: str | Path | None = None) -> tuple[MfuRow, ...]:
    """The MFU defaults (data/mfu.csv): per method group and GPU architecture, with their basis."""
    return _read_mfu_table(str(path or data_dir() / MFU_CSV))


__all__ = ["METHOD_GROUPS", "MFU_CSV", "MfuRow", "mfu_table"]
