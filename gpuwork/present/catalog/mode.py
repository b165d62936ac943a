"""Catalog entries "mode.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "mode"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- names looked up by value ({x:@prefix}) -----------------------------------------------------------------
    "mode.on-demand": ("on-demand", "почасовая аренда"),
    "mode.reserved": ("reserved", "резервирование"),
    "mode.interruptible": ("interruptible", "прерываемая"),
}
