"""Catalog entries "trace.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "trace"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the traced step's stand-ins and categories (gpuwork.measure.trace) -------------------------------------
    "trace.stand_in.attention_dropout": (
        "attention dropout under SDPA traced as the GPU kernels store it: nothing (the CPU math fallback would keep "
        "an s x s mask)",
        "прореживание внимания под SDPA трассировано так, как его хранят ядра GPU: никак (запасной путь на CPU "
        "хранил бы квадратную маску длина × длина)"),
    "trace.stand_in.flash": (
        "attention: flash-attention 2 / 3 / 4 or cuDNN's traced as SDPA (same saved tensors: output + logsumexp)",
        "внимание: flash-attention 2 / 3 / 4 или cuDNN трассировано как SDPA (сохраняются те же тензоры: выход и "
        "логарифм суммы экспонент)"),
    "trace.stand_in.qlora": (
        "qlora: bitsandbytes Linear4bit traced with a stand-in of the same storage (packed uint8 + absmax) and bnb "
        "0.50 MatMul4Bit saved tensors",
        "qlora: Linear4bit из bitsandbytes трассирован заменой с тем же хранением (упакованные uint8 + absmax) и "
        "сохраняемыми тензорами MatMul4Bit из bnb 0.50"),
    "trace.stand_in.optimizer": (
        "optimizer: bitsandbytes {optimizer:raw} traced as its state tensors (fused kernel step)",
        "оптимизатор: {optimizer:raw} из bitsandbytes трассирован как его тензоры состояний (шаг одним слитым "
        "ядром)"),
    "trace.stand_in.fsdp": (
        "sharding: {sharding:raw} traced as PyTorch FSDP2 fully_shard per block over {ranks} fake ranks (per-rank "
        "numbers)",
        "шардирование: {sharding:raw} трассировано как fully_shard из FSDP2 (PyTorch) по блокам на {ranks} "
        "фиктивных {ranks:pl:процессе|процессах|процессах} (числа на один процесс)"),
    # English keeps the category keys as they are in JSON (gpuwork trace --json)
    "trace.category.parameters": ("parameters", "параметры"),
    "trace.category.buffers": ("buffers", "буферы"),
    "trace.category.gradients": ("gradients", "градиенты"),
    "trace.category.optimizer_states": ("optimizer_states", "состояния оптимизатора"),
    "trace.category.activations": ("activations", "активации"),
    "trace.category.temporaries": ("temporaries", "временные тензоры"),
    "trace.category.sharding_buffers": ("sharding_buffers", "буферы шардирования"),
}
