"""Catalog entries "ui.cmp.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "ui.cmp"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the trial comparison table's headers: what each column counts and its unit --------------------------------------
    "ui.cmp.trial": ("Trial", "Запуск"),
    "ui.cmp.model": ("Model", "Модель"),
    "ui.cmp.method": ("Method", "Метод"),
    "ui.cmp.precision": ("Precision", "Точность"),
    "ui.cmp.optimizer": ("Optimizer", "Оптимизатор"),
    "ui.cmp.sharding": ("Sharding (as run)", "Шардирование (как запущено)"),
    "ui.cmp.micro_batch": ("Micro-batch (sequences)", "Микробатч (последовательностей)"),
    "ui.cmp.seq_len": ("Sequence length (tokens)", "Длина последовательности (токенов)"),
    "ui.cmp.grad_accum": ("Gradient accumulation (micro-batches)", "Накопление градиента (микробатчей)"),
    "ui.cmp.device": ("Device", "Устройство"),
    "ui.cmp.gpus": ("GPUs", "Число GPU"),
    "ui.cmp.fits": ("Fits in memory", "Помещается в память"),
    "ui.cmp.median_step_time_s": ("Median step time", "Медианное время шага"),
    "ui.cmp.p90_step_time_s": ("Step time, 90th percentile", "Время шага, 90-й процентиль"),
    "ui.cmp.step_time_low_s": ("Step time, lower bound (95 %)", "Время шага, нижняя граница (95 %)"),
    "ui.cmp.step_time_high_s": ("Step time, upper bound (95 %)", "Время шага, верхняя граница (95 %)"),
    "ui.cmp.step_time_half_width": ("Step time uncertainty (± of the median, 95 %)",
                                    "Неопределённость времени шага (± от медианы, 95 %)"),
    "ui.cmp.drift_per_100_steps": ("Step time change over the measured steps",
                                   "Изменение времени шага за замеренные шаги"),
    "ui.cmp.measured_steps": ("Measured steps", "Замерено шагов"),
    "ui.cmp.converged": ("Step time settled", "Время шага устоялось"),
    "ui.cmp.source": ("Measured by", "Чем замерено"),
    "ui.cmp.switches": ("Execution settings applied (TF32, deterministic mode, blocking launches, allocator)",
                        "Применённые настройки выполнения (TF32, детерминированный режим, блокирующие запуски, аллокатор)"),
    "ui.cmp.tokens_per_s": ("Throughput (tokens/s)", "Скорость (токенов/с)"),
    "ui.cmp.peak_memory_bytes": ("Peak memory", "Пик памяти"),
    "ui.cmp.data_wait_fraction": ("Time waiting for data (share of a step)", "Ожидание данных (доля шага)"),
    "ui.cmp.checkpoint_verified": ("Checkpoint saved and restored", "Чекпойнт сохранён и восстановлен"),
    "ui.cmp.price_per_hour": ("Price per hour", "Цена в час"),
    "ui.cmp.cost_per_1m_tokens": ("Cost per 1 M tokens", "Стоимость 1 млн токенов"),
    "ui.cmp.cost_per_1m_tokens_low": ("Cost per 1 M tokens, from", "Стоимость 1 млн токенов, от"),
    "ui.cmp.cost_per_1m_tokens_high": ("Cost per 1 M tokens, to", "Стоимость 1 млн токенов, до"),
}
