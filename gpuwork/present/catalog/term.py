"""Catalog entries "term.*": the memory breakdown's terms (English from gpuwork.estimate.memory.TERM_LABELS)."""

from __future__ import annotations

from gpuwork.estimate.memory import TERM_LABELS

PREFIX = "term"

# Russian names of the memory breakdown terms; the English ones are gpuwork.estimate.memory.TERM_LABELS.
_TERMS_RU = {
    "weights": "веса",
    "gradients": "градиенты",
    "optimizer_states": "состояния оптимизатора",
    "activations": "активации (сохранённые для обратного прохода)",
    "logits_and_loss": "логиты и loss",
    "temporaries": "временные буферы (обратный проход / шаг оптимизатора)",
    "sharding_buffers": "буферы шардирования / DDP",
    "cublas_workspace": "рабочая область cuBLAS",
    "allocator_cache": "кэш аллокатора (зарезервировано, не занято)",
    "allocator_fragmentation": "кэш аллокатора от разной длины батчей",
    "allocator_segments": "кэш аллокатора (зарезервировано, не занято; шаги воспроизведены целиком: модель, "
                          "написанная вручную, её тензоры известны по одному)",
    "paged_optimizer_states": "paged-состояния оптимизатора (unified memory)",
    "autocast_weight_copies": "копии весов (16-битные autocast, линейные слои FP8)",
    "cuda_context": "контекст CUDA и ядра",
    "stream_pools": "кэши потоков all-gather / reduce-scatter FSDP (зарезервировано)",
    "eval_forward": "батч оценки (прямой проход без градиентов)",
    "eval_predictions": "выходы оценки, хранимые на GPU",
    "eval_segments": "кэш аллокатора от оценки",
}

ENTRIES: dict[str, tuple[str, str]] = {f"term.{key}": (label, _TERMS_RU[key]) for key, label in TERM_LABELS.items()}
