"""Catalog entries "date.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "date"

ENTRIES: dict[str, tuple[str, str]] = {
    "date": ("{day:raw} {month:@month} {year:raw}", "{day:raw} {month:@month} {year:raw} года"),
}
