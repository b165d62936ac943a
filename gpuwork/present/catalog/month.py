"""Catalog entries "month.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "month"

ENTRIES: dict[str, tuple[str, str]] = {
    "month.1": ("January", "января"),
    "month.2": ("February", "февраля"),
    "month.3": ("March", "марта"),
    "month.4": ("April", "апреля"),
    "month.5": ("May", "мая"),
    "month.6": ("June", "июня"),
    "month.7": ("July", "июля"),
    "month.8": ("August", "августа"),
    "month.9": ("September", "сентября"),
    "month.10": ("October", "октября"),
    "month.11": ("November", "ноября"),
    "month.12": ("December", "декабря"),
}
