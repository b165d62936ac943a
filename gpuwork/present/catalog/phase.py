"""Catalog entries "phase.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "phase"

ENTRIES: dict[str, tuple[str, str]] = {
    "phase.forward": ("forward", "прямом проходе"),
    "phase.loss_backward": ("loss backward", "обратном проходе через loss"),
    "phase.block_backward": ("block backward", "обратном проходе через блоки"),
    "phase.backward_end": ("backward end", "конце обратного прохода"),
    "phase.optimizer_step": ("optimizer step", "шаге оптимизатора"),
    "phase.evaluation": ("in-run evaluation", "оценке между шагами обучения"),
    # the traced step's phases (gpuwork.measure.trace)
    "phase.backward": ("backward", "обратном проходе"),
    "phase.optimizer": ("optimizer", "шаге оптимизатора"),
    "phase.after-step": ("after-step", "после шага"),
    "phase.step": ("step", "шаге"),
}
