"""Catalog entries "filekind.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "filekind"

ENTRIES: dict[str, tuple[str, str]] = {
    # the kinds of file gpuwork reads, each with its own size cap (gpuwork.facts.reading.FileKind)
    "filekind.config": ("training config", "конфиг обучения"),
    "filekind.plan": ("plan file", "файл плана"),
    "filekind.model_config": ("model config.json", "config.json модели"),
    "filekind.table": ("data table (CSV)", "таблица данных (CSV)"),
    "filekind.record": ("trial record", "запись пробного запуска"),
    "filekind.text_data": ("text data (.txt, .jsonl)", "текстовые данные (.txt, .jsonl)"),
    "filekind.tokenizer": ("tokenizer.json", "tokenizer.json"),
}
