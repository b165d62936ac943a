"""Catalog entries "recordunit.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "recordunit"

ENTRIES: dict[str, tuple[str, str]] = {
    "recordunit.s": ("seconds", "секунды"),
    "recordunit.bytes": ("bytes", "байты"),
    "recordunit.tokens": ("tokens", "токены"),
    "recordunit.tokens_s": ("tokens per second", "токены в секунду"),
    "recordunit.share": ("a fraction of 1", "доля единицы"),
    "recordunit.loss": ("loss units (NaN and infinity allowed)", "единицы потерь (NaN и бесконечность допустимы)"),
    "recordunit.count": ("a count", "штуки"),
    "recordunit.number": ("a plain number", "просто число"),
}
