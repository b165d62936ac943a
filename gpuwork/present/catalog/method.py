"""Catalog entries "method.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "method"

ENTRIES: dict[str, tuple[str, str]] = {
    "method.scratch": ("training from scratch", "обучение с нуля"),
    "method.full": ("full weight update", "полное обновление весов"),
    "method.freeze": ("last layers trained, the rest frozen", "обучаются последние слои, остальные заморожены"),
    "method.lora": ("LoRA adapters", "LoRA-адаптеры"),
    "method.qlora": ("QLoRA adapters on a 4-bit base", "QLoRA-адаптеры на 4-битной базе"),
}
