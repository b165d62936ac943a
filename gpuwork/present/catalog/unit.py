"""Catalog entries "unit.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "unit"

ENTRIES: dict[str, tuple[str, str]] = {
    "unit.millions": ("{n:n1} M", "{n:n1} млн"),
    "unit.billions": ("{n:n2} B", "{n:n2} млрд"),
    "unit.million_tokens": ("{n:n0} M tokens", "{n:n0} млн токенов"),
    "unit.billion_tokens": ("{n:n1} B tokens", "{n:n1} млрд токенов"),
}
