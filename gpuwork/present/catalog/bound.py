"""Catalog entries "bound.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "bound"

ENTRIES: dict[str, tuple[str, str]] = {
    "bound.seq_len": ("16 M tokens, longer than any model's context", "16 млн токенов, длиннее контекста любой модели"),
    "bound.batch_size": ("sequences per GPU per step", "последовательностей на GPU за шаг"),
    "bound.grad_accum": ("micro-batches per optimizer step", "микробатчей на шаг оптимизатора"),
    "bound.gpus": ("the largest clusters", "самые большие кластеры"),
    "bound.layers": ("blocks in one model", "блоков в одной модели"),
    "bound.lora_r": ("adapter rank", "ранг адаптера"),
    "bound.lora_alpha": ("LoRA scale numerator", "числитель масштаба LoRA"),
    "bound.dataset_tokens": ("a quadrillion tokens", "квадриллион токенов"),
    "bound.dataset_bytes": ("an exabyte", "эксабайт"),
    "bound.epochs": ("passes over the data", "проходов по данным"),
    "bound.checkpoint_every_steps": ("optimizer steps", "шагов оптимизатора"),
    "bound.eval_batch_size": ("sequences per GPU per evaluation batch", "последовательностей на GPU в батче оценки"),
    "bound.eval_samples": ("a billion evaluation samples", "миллиард примеров оценки"),
    "bound.eval_accum": ("evaluation batches between copies to the CPU", "батчей оценки между копированиями на CPU"),
    "bound.checkpoints_kept": ("checkpoints on one disk", "контрольных точек на одном диске"),
    "bound.mlm_predictions": ("masked positions in one sequence, no longer than any context",
                              "маскированных позиций в одной последовательности, не длиннее любого контекста"),
    "bound.packed_document_tokens": ("tokens in one packed document, no longer than any context",
                                     "токенов в одном упакованном документе, не длиннее любого контекста"),
}
