"""Catalog entries "ui.compare.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "ui.compare"

ENTRIES: dict[str, tuple[str, str]] = {
    "ui.compare.trial": ("trial", "запуск"),
    "ui.compare.model": ("model", "модель"),
    "ui.compare.method": ("method", "метод"),
    "ui.compare.precision": ("precision", "точность"),
    "ui.compare.optimizer": ("optimizer", "оптимизатор"),
    "ui.compare.micro_batch": ("micro batch", "микробатч"),
    "ui.compare.seq_len": ("seq len", "длина"),
    "ui.compare.grad_accum": ("grad accum", "накопление"),
    "ui.compare.device": ("device", "устройство"),
    "ui.compare.gpus": ("gpus", "GPU"),
    "ui.compare.fits": ("fits", "помещается"),
    "ui.compare.median_step_time_s": ("median step time s", "медиана шага"),
    "ui.compare.p90_step_time_s": ("p90 step time s", "шаг p90"),
    "ui.compare.tokens_per_s": ("tokens per s", "токенов/с"),
    "ui.compare.peak_memory_bytes": ("peak memory bytes", "пик памяти"),
    "ui.compare.data_wait_fraction": ("data wait fraction", "ожидание данных"),
    "ui.compare.checkpoint_verified": ("checkpoint verified", "чекпойнт проверен"),
    "ui.compare.price_per_hour": ("price per hour", "цена в час"),
    "ui.compare.cost_per_1m_tokens": ("cost per 1m tokens", "стоимость 1 млн токенов"),
    "ui.compare.step_time_low_s": ("step time low", "шаг, нижняя граница"),
    "ui.compare.step_time_high_s": ("step time high", "шаг, верхняя граница"),
    "ui.compare.step_time_half_width": ("step time ± (95 %)", "шаг ± (95 %)"),
    "ui.compare.drift_per_100_steps": ("drift per 100 steps", "дрейф на 100 шагов"),
    "ui.compare.measured_steps": ("measured steps", "шагов замерено"),
    "ui.compare.converged": ("step time settled", "время шага устоялось"),
    "ui.compare.source": ("measured by", "чем замерено"),
    "ui.compare.cost_per_1m_tokens_low": ("cost per 1M tokens, low", "стоимость 1 млн токенов, от"),
    "ui.compare.cost_per_1m_tokens_high": ("cost per 1M tokens, high", "стоимость 1 млн токенов, до"),
}
