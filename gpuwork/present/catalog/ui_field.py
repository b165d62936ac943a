"""Catalog entries "ui.field.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "ui.field"

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
    "ui.field.eval_batch_size": ("Eval batch", "Батч оценки"),
    "ui.field.eval_samples": ("Eval samples", "Примеров оценки"),
    "ui.field.eval_keep": ("Eval keeps", "Оценка хранит"),
    "ui.field.eval_accum": ("Eval accumulation", "Накопление оценки"),
    "ui.field.mlm_predictions": ("Masked positions per sequence", "Маскированных позиций в последовательности"),
    "ui.field.packed_document_tokens": ("Packed document tokens", "Токенов в упакованном документе"),
    "ui.field.comm_overlap": ("Gradient sync", "Синхронизация градиентов"),
    "ui.field.fsdp_wrap": ("FSDP units", "Блоки обёртки FSDP"),
    "ui.field.recompute": ("Recomputes", "Пересчитывает"),
    "ui.field.recompute_every": ("Checkpoint one block in", "Чекпойнтинг на каждом N-м блоке"),
    "ui.field.sdpa_backend": ("SDPA kernel", "Ядро SDPA"),
    "ui.field.input_require_grads": ("Backward through frozen blocks", "Обратный проход через замороженные блоки"),
    "ui.field.grad_clip": ("Gradient clipping", "Ограничение нормы градиента"),
    "ui.field.deterministic": ("Deterministic mode", "Детерминированный режим"),
    "ui.field.launch_blocking": ("Blocking launches", "Блокирующие запуски ядер"),
    "ui.field.tf32": ("TF32 matmuls", "Умножения матриц в TF32"),
    "ui.field.fp8_linear": ("FP8 linear layers", "Линейные слои в FP8"),
    "ui.field.checkpoint_every_steps": ("Checkpoint every", "Чекпойнт каждые"),
    "ui.field.checkpoints_kept": ("Checkpoints kept", "Хранить чекпойнтов"),
}
