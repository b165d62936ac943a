"""Catalog entries (code -> (English, Russian)) for the inputs people have (issue 20, items 4-6): the dataset as a size,
a file of documents or tokens, the fields' plain names in messages, the owned cards in the profile line, links.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder kinds
are documented there. Used by ``gpuwork.ui.sizing``, ``request``, ``common`` and ``app``.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    # -- a field named in a message as people call it, never as the plan's attribute ------------------------------
    "ui.field.seq_len": ("Sequence length", "Длина последовательности"),
    "ui.field.batch_size": ("Micro-batch", "Микробатч"),
    "ui.field.grad_accum": ("Gradient accumulation", "Накопление градиента"),
    "ui.field.gpus": ("Number of GPUs", "Число GPU"),
    "ui.field.dataset_tokens": ("Dataset", "Датасет"),
    "ui.field.dataset_bytes": ("Dataset size", "Размер датасета"),
    "ui.field.epochs": ("Epochs", "Эпохи"),
    "ui.field.lora_r": ("LoRA rank", "Ранг LoRA"),
    "ui.field.lora_alpha": ("LoRA alpha", "Альфа LoRA"),
    "ui.field.trainable_layers": ("Trainable layers", "Обучаемые слои"),
    "ui.field.lengths": ("Sequence lengths", "Длины последовательностей"),
    "ui.field.lora_targets": ("LoRA target modules", "Модули LoRA"),
    "ui.field.model": ("Model", "Модель"),
    "ui.field.method": ("Method", "Метод"),
    "ui.field.limit": ("Rows", "Строк"),
    "ui.field.rent_days": ("Rent period", "Срок аренды"),
    "ui.field.have": ("My cards", "Мои карты"),
    "ui.field.eval_fraction": ("Validation share", "Доля валидации"),
    "ui.field.checkpoint_every_steps": ("Checkpoint every", "Чекпойнт каждые"),
    "ui.field.checkpoints_kept": ("Checkpoints kept", "Хранить чекпойнтов"),
    # a field's value in a message: "Sequence length: 'abc' is not a count: ..."
    "ui.field_problem": ("{label}: {problem:raw}", "{label}: {problem:raw}"),
    # -- the dataset: tokens, a size or a file of documents -------------------------------------------------------
    "ui.dataset": ("Dataset (tokens or size)", "Датасет (токены или размер)"),
    "ui.dataset_hint": ("e.g. 50M tokens, 200 MB or 1.5 GB", "например 50M токенов, 200 MB или 1.5 GB"),
    "ui.dataset_from_size": (
        "{size:raw} of text ≈ {tokens:int} tokens at {ratio:g} bytes per token (a stated average for English "
        "text; upload the documents to count them with the model's tokenizer).",
        "{size:raw} текста ≈ {tokens:int} токенов при {ratio:g} байта на токен (принятое среднее для "
        "английского текста; загрузите документы, чтобы посчитать их токенизатором модели)."),
    "ui.documents": ("Documents", "Документы"),
    "ui.documents_hint": (
        "A file of documents (.txt, .jsonl, .json, .md, .csv): its tokens are counted.",
        "Файл с документами (.txt, .jsonl, .json, .md, .csv): в нём будут посчитаны токены."),
    "ui.documents_counted": (
        "{name:raw}: {documents:int} documents, {size:raw}, {tokens:int} tokens counted with the tokenizer of "
        "{model:raw}.",
        "{name:raw}: документов {documents:int}, {size:raw}, {tokens:int} токенов по токенизатору "
        "{model:raw}."),
    "ui.documents_ratio": (
        "{name:raw}: {documents:int} documents, {size:raw} ≈ {tokens:int} tokens at {ratio:g} bytes per "
        "token (no tokenizer of {model:raw} on this machine: a stated average for English text).",
        "{name:raw}: документов {documents:int}, {size:raw} ≈ {tokens:int} токенов при {ratio:g} байта на "
        "токен (токенизатора {model:raw} на этой машине нет: принятое среднее для английского текста)."),
    "ui.documents_empty": ("{name:raw} holds no text: upload a file of documents.",
                           "В {name:raw} нет текста: загрузите файл с документами."),
    "ui.documents_too_large": (
        "{name:raw} is larger than {limit:raw}: type its size instead (e.g. 2 GB); the tokens are then "
        "estimated at the stated bytes per token.",
        "{name:raw} больше {limit:raw}: введите его размер (например 2 GB); токены тогда оцениваются по "
        "принятому числу байт на токен."),
    # -- the rental period -------------------------------------------------------------------------------------------
    "ui.rent_days_range": (
        "Rent period {value:raw} days: use a whole number from 1 to {maximum:int} days (0 = from the run's time).",
        "Срок аренды {value:raw} дн.: укажите целое число от 1 до {maximum:int} дней (0 — по времени запуска)."),
    # -- the owned cards in the profile line ---------------------------------------------------------------------------
    "ui.profile_own": ("Profile {id:raw} “{name}”: {gpus} × {gpu} (your own cards, no rental).",
                       "Профиль {id:raw} «{name}»: {gpus} × {gpu} (ваши карты, без аренды)."),
    # -- the language switch ---------------------------------------------------------------------------------------------
    "ui.lang_label": ("Language", "Язык"),
    # -- links --------------------------------------------------------------------------------------------------------------
    "ui.link_hub_preset": (
        "{model:raw} is a Hugging Face Hub id: sized as the bundled preset {preset:raw}, the same architecture.",
        "{model:raw} — id на Hugging Face Hub: расчёт по встроенному пресету {preset:raw} с той же архитектурой."),
    # -- the trial comparison table's headers: what each column counts and its unit --------------------------------------
    "ui.cmp.trial": ("Trial", "Запуск"),
    "ui.cmp.model": ("Model", "Модель"),
    "ui.cmp.method": ("Method", "Метод"),
    "ui.cmp.precision": ("Precision", "Точность"),
    "ui.cmp.optimizer": ("Optimizer", "Оптимизатор"),
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
    "ui.cmp.tokens_per_s": ("Throughput (tokens/s)", "Скорость (токенов/с)"),
    "ui.cmp.peak_memory_bytes": ("Peak memory", "Пик памяти"),
    "ui.cmp.data_wait_fraction": ("Time waiting for data (share of a step)", "Ожидание данных (доля шага)"),
    "ui.cmp.checkpoint_verified": ("Checkpoint saved and restored", "Чекпойнт сохранён и восстановлен"),
    "ui.cmp.price_per_hour": ("Price per hour", "Цена в час"),
    "ui.cmp.cost_per_1m_tokens": ("Cost per 1 M tokens", "Стоимость 1 млн токенов"),
    "ui.cmp.cost_per_1m_tokens_low": ("Cost per 1 M tokens, from", "Стоимость 1 млн токенов, от"),
    "ui.cmp.cost_per_1m_tokens_high": ("Cost per 1 M tokens, to", "Стоимость 1 млн токенов, до"),
    # -- the All GPUs tab: the one answer above the matrix of the plan as written -------------------------------
    "ui.fit_as_written": (
        "The table below is the plan as written on every card (its count and sharding as needed); the answer above "
        "may include a change (see Advice).",
        "Таблица ниже — план как он задан, на каждой карте (число GPU и шардирование — по необходимости); ответ выше "
        "может включать изменение (см. «Советы»)."),
    # -- an offer named as people read it (its catalog id stays in the tooltip) --------------------------------------
    "ui.offer_name": ("{provider:raw}: {per_node:int} × {gpu:raw} per node, {mode:@mode}",
                      "{provider:raw}: {per_node:int} × {gpu:raw} на узел, {mode:@mode}"),
}
