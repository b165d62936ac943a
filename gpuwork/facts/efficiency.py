"""Efficiency defaults for the step-time model: data/mfu.csv (MFU per method group and GPU architecture)."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import CatalogError
from gpuwork.facts.paths import data_dir

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
        raise CatalogError(f"{file.name}: cannot read {file}: {exc.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in MFU_CSV_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise CatalogError(f"{file.name} line 1: column(s) {', '.join(missing)} missing; expected "
                           f"{', '.join(MFU_CSV_COLUMNS)}")
    rows = []
    for line, raw in enumerate(reader, start=2):
        try:
            values = [float(raw[c]) for c in ("mfu", "mfu_low", "mfu_high")]
        except (TypeError, ValueError):
            raise CatalogError(f"{file.name} line {line}: mfu, mfu_low and mfu_high must be numbers") from None
        mfu, low, high = values
        if not 0 < low <= mfu <= high <= 1:
            raise CatalogError(f"{file.name} line {line}: need 0 < mfu_low <= mfu <= mfu_high <= 1")
        if raw["method_group"] not in METHOD_GROUPS:
            raise CatalogError(f"{file.name} line {line}, field 'method_group': {raw['method_group']!r} is not "
                               f"one of {', '.join(METHOD_GROUPS)}")
        rows.append(MfuRow(raw["method_group"], raw["architecture"].strip(), mfu, low, high, raw["basis"]))
    return tuple(rows)


def mfu_table(path: str | Path | None = None) -> tuple[MfuRow, ...]:
    """The MFU defaults (data/mfu.csv): per method group and GPU architecture, with their basis."""
    return _read_mfu_table(str(path or data_dir() / MFU_CSV))


__all__ = ["METHOD_GROUPS", "MFU_CSV", "MfuRow", "mfu_table"]
