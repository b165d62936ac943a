"""Catalog entries "change.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "change"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- changes a fit or a profile makes to the plan ------------------------------------------------------------
    "change.gpus": ("gpus {old} -> {new}", "число GPU {old} → {new}"),
    "change.sharding": ("sharding {old:raw} -> {new:raw}", "шардирование {old:raw} → {new:raw}"),
    "change.grad_checkpointing_on": (
        "grad_checkpointing off -> on", "включить пересчёт активаций (gradient_checkpointing)"),
}
