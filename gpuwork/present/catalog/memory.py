"""Catalog entries "memory.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "memory"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- memory warnings (gpuwork.estimate.memory) ----------------------------------------------------------------
    "memory.seq_len_above_max": (
        "seq_len={seq_len:raw} is above {model}'s max_position_embeddings={max_position_embeddings:raw}: quality "
        "may suffer unless RoPE scaling is configured",
        "seq_len={seq_len:raw} больше, чем max_position_embeddings={max_position_embeddings:raw} у {model}: "
        "качество может пострадать, если не настроено масштабирование RoPE"),
    "memory.no_sdpa_path": (
        "transformers has no SDPA path for {architecture} (attention soft-capping): training runs with "
        "attention='eager' or 'flash'; set one of those",
        "в transformers нет пути SDPA для {architecture} (из-за ограничения логитов внимания): обучение идёт с "
        "attention='eager' или 'flash' — задайте одно из них"),
    "memory.offload_host": (
        "offloaded states use {host_bytes:gib} of CPU RAM per GPU",
        "выгруженные состояния занимают {host_bytes:gib} оперативной памяти CPU на каждый GPU"),
    "memory.activation_offload": (
        "checkpointed activations are offloaded: {host_bytes:gib} of CPU RAM per GPU, {transfer_bytes:gib} copied "
        "over the host link per step",
        "сохранённые активации выгружаются: {host_bytes:gib} оперативной памяти CPU на каждый GPU, "
        "{transfer_bytes:gib} пересылается по шине за шаг"),
    # -- the software stack's effect on an estimate (gpuwork.estimate.memory) ------------------------------------
    "memory.moe_experts_unquantized": (
        "bitsandbytes leaves {model}'s fused MoE expert tensors unquantised ({params:count} parameters: transformers "
        "5 stores each layer's experts as one tensor, not as nn.Linear), and peft's k-bit preparation upcasts them "
        "to fp32: {expert_bytes:gib} of weights where 4-bit would take {nf4_bytes:gib}; the estimate counts them so",
        "bitsandbytes не квантует объединённые тензоры экспертов MoE у {model} ({params:count} параметров: "
        "transformers 5 хранит экспертов слоя одним тензором, а не nn.Linear), а подготовка peft к k-bit обучению "
        "переводит их в fp32: {expert_bytes:gib} весов вместо {nf4_bytes:gib} в 4 битах; оценка учитывает это"),
    "memory.fp32_master": (
        "{sharding:raw} in {precision:raw}: DeepSpeed keeps fp32 master weights and optimizer states next to the "
        "16-bit weights and gradients, {bytes_per_param} bytes per trained parameter before sharding",
        "{sharding:raw} в {precision:raw}: оптимизатор ZeRO хранит главные копии весов и свои состояния в fp32 "
        "рядом с 16-битными весами и градиентами, {bytes_per_param} байт на обучаемый параметр до шардирования"),
}
