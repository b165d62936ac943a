"""Catalog entries "argkind.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "argkind"

ENTRIES: dict[str, tuple[str, str]] = {
    "argkind.int": ("int", "целое число"),
    "argkind.float": ("float", "число"),
}
