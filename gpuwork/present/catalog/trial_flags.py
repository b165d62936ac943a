"""Catalog entries "trial_flags.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "trial_flags"

ENTRIES: dict[str, tuple[str, str]] = {
    "trial_flags.steps": ("measured optimizer steps", "измеряемые шаги оптимизатора"),
    "trial_flags.warmup": ("warm-up steps", "шаги прогрева"),
    "trial_flags.checkpoint_every": ("steps between checkpoints; 0: only on a signal",
                                     "шагов между чекпойнтами; 0 — только по сигналу"),
    "trial_flags.max_steps": ("the most measured steps", "наибольшее число измеряемых шагов"),
    "trial_flags.memory_cap": ("GiB of simulated device memory", "ГиБ моделируемой памяти устройства"),
    "trial_flags.price": ("US dollars per GPU-hour", "долларов США за GPU-час"),
}
