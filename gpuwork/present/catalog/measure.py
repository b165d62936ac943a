"""Catalog entries "measure.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "measure"

ENTRIES: dict[str, tuple[str, str]] = {
    # text a record held before its messages were coded (gpuwork.measure.coded): shown as it is
    "measure.text": ("{text}", "{text}"),
}
