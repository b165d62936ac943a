"""Catalog entries "upload.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "upload"

ENTRIES: dict[str, tuple[str, str]] = {
    "upload.what.config": ("config.json", "config.json"),
    "upload.what.record": ("trial record", "запись пробного запуска"),
}
