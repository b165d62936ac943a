"""The bundled CSV tables' one reader and number parser: rates, kernel measurements, networks and the track record
share them."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from gpuwork.errors import CatalogError
from gpuwork.facts import reading
from gpuwork.message import msg


def read_rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of a bundled CSV, with one clear error for a missing column or an unreadable file."""
    try:  # a regular UTF-8 file within reading.TABLE bytes (GPUWORK_DATA may point anywhere)
        text = reading.read_text(path, reading.TABLE)
    except reading.ReadError as exc:
        raise CatalogError(exc.msg) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in columns if c not in (reader.fieldnames or ())]
    if missing:
        raise CatalogError(msg("error.rates.columns", file=path.name, missing=", ".join(missing)))
    return list(reader)


def cell_number(path: Path, line: int, column: str, value: str, positive: bool = True) -> float:
    """A table cell as a finite number (above 0 unless ``positive`` is False), or one clear error naming the file,
    line, column and value."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or (positive and number <= 0):
        raise CatalogError(msg("error.rates.value", file=path.name, line=line, column=column, value=value))
    return number


__all__ = ["cell_number", "read_rows"]
