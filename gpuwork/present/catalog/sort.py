"""Catalog entries "sort.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "sort"

ENTRIES: dict[str, tuple[str, str]] = {
    "sort.cost": ("cost", "по стоимости"),
    "sort.time": ("time", "по времени"),
    "sort.deadline": ("deadline", "по сроку"),
    "sort.price": ("price", "по цене"),
    "sort.vram": ("vram", "по памяти"),
}
