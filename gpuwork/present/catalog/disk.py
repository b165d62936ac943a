"""Catalog entries "disk.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "disk"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- disk (gpuwork.estimate.disk) --------------------------------------------------------------------------------
    "disk.label.dataset_compressed": ("dataset as downloaded (compressed)", "датасет в скачанном виде (сжатый)"),
    "disk.label.dataset_unpacked": ("dataset unpacked", "датасет в распакованном виде"),
    "disk.label.dataset_raw": ("dataset (raw text)", "датасет (исходный текст)"),
    "disk.label.tokenized": ("tokenized dataset (token ids)", "токенизированный датасет (номера токенов)"),
    "disk.label.base_model": ("base model download", "скачанная базовая модель"),
    "disk.label.checkpoints": (
        "checkpoints ({kept} kept + 1 being written)",
        "чекпойнты ({kept} {kept:pl:хранится|хранятся|хранятся} + 1 записывается)"),
    "disk.label.export": ("final model export", "итоговая модель"),
    "disk.label.environment": (
        "software (container image or venv, caches)",
        "программы (образ контейнера или виртуальное окружение Python, кэши)"),
    "disk.label.margin": ("margin", "запас"),
    "disk.rule.given_compressed": ("dataset_bytes as given (compressed download)", "dataset_bytes как задано "
                                   "(сжатый архив)"),
    "disk.rule.given": ("dataset_bytes as given", "dataset_bytes как задано"),
    "disk.rule.tokens_compressed": (
        "{tokens:int} tokens x {bytes_per_token:g} B/token (English BPE) / compression {ratio:g}",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {bytes_per_token:g} Б на токен (английский BPE) / сжатие "
        "{ratio:g}"),
    "disk.rule.tokens_text": (
        "{tokens:int} tokens x {bytes_per_token:g} B/token (English BPE: ~4 characters per token)",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {bytes_per_token:g} Б на токен (английский BPE: ~4 "
        "символа на токен)"),
    "disk.rule.unpacked": (
        "downloaded size x compression ratio {ratio:g} (both kept)",
        "скачанный размер × степень сжатия {ratio:g} (хранятся оба)"),
    "disk.rule.tokenized_uint16": (
        "{tokens:int} tokens x {id_bytes} B (uint16: vocab {vocab:int} < {limit:int})",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {id_bytes} Б (uint16: словарь {vocab:int} < {limit:int})"),
    "disk.rule.tokenized_uint32": (
        "{tokens:int} tokens x {id_bytes} B (uint32: vocab {vocab:int} >= {limit:int})",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {id_bytes} Б (uint32: словарь {vocab:int} ≥ {limit:int})"),
    "disk.rule.scratch": (
        "training from scratch: no base weights to download", "обучение с нуля: базовые веса скачивать не нужно"),
    "disk.rule.base_prequantized": (
        "pre-quantized 4-bit: {quantized:int} linear weights x 4.127 bits (NF4 + double quant, Dettmers et al. "
        "2023, QLoRA) + "
        "{others:int} others x 2 B",
        "заранее квантованная 4-битная: {quantized:int} весов линейных слоёв × 4,127 бита (NF4 + двойная "
        "квантизация, Деттмерс и др. 2023, QLoRA) + {others:int} остальных × 2 Б"),
    "disk.rule.base_bf16": (
        "{params:int} params x 2 B (bf16 safetensors: 2 bytes per weight)",
        "{params:int} {params:pl:параметр|параметра|параметров} × 2 Б (bf16 safetensors: 2 байта на вес)"),
    "disk.what.adapter": ("adapter x 4 B + optimizer states", "адаптер × 4 Б + состояния оптимизатора"),
    "disk.what.weights": (
        "weights in the saved dtype + optimizer states", "веса в сохраняемом типе + состояния оптимизатора"),
    "disk.what.weights_masters": (
        "weights in the saved dtype + optimizer states + fp32 masters",
        "веса в сохраняемом типе + состояния оптимизатора + fp32-копии весов"),
    "disk.rule.checkpoints": (
        "{count} x {each_bytes:gb2} ({what}); transformers Trainer writes a new checkpoint before deleting the "
        "oldest (save_total_limit rotation)",
        "{count} × {each_bytes:gb2} ({what}); Trainer из transformers записывает новый чекпойнт, прежде чем "
        "удалить самый старый (ротация save_total_limit)"),
    "disk.rule.export_adapter": (
        "{trainable:int} trainable params x 4 B (PEFT adapter, fp32)",
        "{trainable:int} обучаемых {trainable:pl:параметр|параметра|параметров} × 4 Б (адаптер PEFT, fp32)"),
    "disk.rule.export_adapter_merged": (
        "{trainable:int} trainable params x 4 B (PEFT adapter, fp32) + merged model {params:int} x 2 B (bf16)",
        "{trainable:int} обучаемых {trainable:pl:параметр|параметра|параметров} × 4 Б (адаптер PEFT, fp32) + "
        "объединённая модель {params:int} × 2 Б (bf16)"),
    "disk.rule.export_full": (
        "{params:int} params x {param_bytes} B ({dtype:raw} safetensors)",
        "{params:int} {params:pl:параметр|параметра|параметров} × {param_bytes} Б ({dtype:raw} safetensors)"),
    "disk.rule.environment": (
        "assumption: a CUDA PyTorch container unpacks to ~{size_bytes:gb}",
        "допущение: контейнер PyTorch с CUDA в распакованном виде занимает ~{size_bytes:gb}"),
    "disk.note.bytes_per_token": (
        "dataset_bytes / dataset_tokens = {bytes_per_token:n1} B per token, far from the ~{expected:g} B of English "
        "text: check dataset_tokens (time and the tokenized files use it)",
        "dataset_bytes / dataset_tokens = {bytes_per_token:n1} Б на токен — далеко от ~{expected:g} Б "
        "английского текста: проверьте dataset_tokens (по нему считаются время и токенизированные файлы)"),
    "disk.note.multi_node": (
        "multi-node runs need the dataset and base model on every node or on a shared volume",
        "при обучении на нескольких узлах датасет и базовая модель нужны на каждом узле или на общем томе"),
}
