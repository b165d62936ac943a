"""Catalog entries "hf.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "hf"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the checkpoint the user's Trainer saved (gpuwork.measure.hf) --------------------------------------------
    "hf.checkpoint.saved_only": (
        "checkpoint save timed; not restored (GpuworkCallback(verify_restore=True) restores and compares it)",
        "сохранение чекпойнта замерено; восстановление не проверялось (GpuworkCallback(verify_restore=True) "
        "восстанавливает и сравнивает его)"),
    "hf.checkpoint.restored": (
        "restored {tensors} {tensors:pl:tensor|tensors} into a fresh model exactly; training was not resumed on it",
        "в новую модель точно восстановлено {tensors} {tensors:pl:тензор|тензора|тензоров}; обучение на ней не "
        "продолжалось"),
}
