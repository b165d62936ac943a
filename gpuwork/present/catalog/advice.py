"""Catalog entries "advice.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "advice"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the advisor (gpuwork.estimate.advisor) ---------------------------------------------------------------------
    "advice.change.grad_checkpointing": ("with gradient checkpointing", "с пересчётом активаций"),
    "advice.change.recompute_every": (
        "gradient checkpointing on one block in {every} (transformers' every_n_layers): less recompute, more memory",
        "пересчёт активаций только в каждом {every}-м блоке (every_n_layers в transformers): меньше пересчёта, "
        "больше памяти"),
    "advice.change.micro_batch": (
        "micro-batch {old} -> {new} with gradient accumulation x{accum} (the same tokens per step)",
        "микробатч {old} → {new} с накоплением градиента ×{accum} (столько же токенов на шаг)"),
    "advice.change.optimizer": ("optimizer {old:raw} -> {new:raw}", "оптимизатор {old:raw} → {new:raw}"),
    "advice.change.qlora": ("QLoRA (4-bit base model) instead of LoRA",
                            "QLoRA (базовая модель в 4 битах) вместо LoRA"),
    "advice.change.sharding": ("{gpus} GPUs with {sharding:raw} sharding",
                               "{gpus} GPU с шардированием {sharding:raw}"),
    "advice.change.sharding_offload": ("{gpus} GPUs with {sharding:raw} sharding and CPU offload",
                                       "{gpus} GPU с шардированием {sharding:raw} и выгрузкой в память CPU"),
    # a plan's sharding as shown everywhere (advisor, answer, request): what it keeps per trained parameter
    "advice.sharding": ("{sharding:raw}{group}{offload}", "{sharding:raw}{group}{offload}"),
    "advice.sharding.state": (
        "{sharding:raw}{group}{offload} ({precision:raw}: {bytes_per_param} bytes per trained parameter for weights, "
        "gradients and optimizer states, before sharding)",
        "{sharding:raw}{group}{offload} ({precision:raw}: {bytes_per_param} байт на обучаемый параметр на веса, "
        "градиенты и состояния оптимизатора до шардирования)"),
    "advice.sharding.offload": (" with CPU offload", " с выгрузкой в память CPU"),
    "advice.sharding.group": (" in shard groups of {group} GPUs", " в группах шардирования по {group} GPU"),
    "advice.change.seq_len": ("sequence {old:int} -> {new:int} tokens", "последовательность {old:int} → {new:int} токенов"),
    "advice.note.experiment": ("changes the experiment", "меняет эксперимент"),
    "advice.note.global_batch": ("more tokens per optimizer step", "больше токенов на шаг оптимизатора"),
    "advice.where": (
        "fits {gpus} x {gpu}{sharding} (offer “{offer}”)",
        "помещается на {gpus} × {gpu}{sharding} (предложение «{offer}»)"),
    "advice.where.sharding": (" with {sharding}", " с {sharding}"),
    "advice.suggestion": (
        "{changes:list}: {memory_bytes:gib} per GPU, {where}, {time_sign:raw}{time_change:pct} time, "
        "{cost_sign:raw}{cost_change:pct} cost ({run_s:dur}, {cost_usd:usd}){notes}",
        "{changes:list}: {memory_bytes:gib} на GPU, {where}, время {time_sign:raw}{time_change:pct}, "
        "стоимость {cost_sign:raw}{cost_change:pct} ({run_s:dur}, {cost_usd:usd}){notes}"),
    "advice.suggestion.new": (
        "{changes:list}: {memory_bytes:gib} per GPU, {where}, {run_s:dur}, {cost_usd:usd}{notes}",
        "{changes:list}: {memory_bytes:gib} на GPU, {where}, {run_s:dur}, {cost_usd:usd}{notes}"),
    "advice.notes": (" — {notes:list}", " — {notes:list}"),
    "advice.status.no_fit": (
        "The plan as it is fits no offer of the catalog (one GPU would need {need_bytes:gib}).",
        "План в текущем виде не помещается ни в одно предложение каталога (одному GPU нужно {need_bytes:gib})."),
    "advice.status.fits": (
        "The plan as it is: {memory_bytes:gib} per GPU, cheapest on {gpus} x {gpu}{sharding} (offer “{offer}”): "
        "{run_s:dur}, {cost_usd:usd}.",
        "План в текущем виде: {memory_bytes:gib} на GPU, дешевле всего на {gpus} × {gpu}{sharding} "
        "(предложение «{offer}»): {run_s:dur}, {cost_usd:usd}."),
    "advice.none": (
        "No standard change makes the run fit or at least 5% cheaper.",
        "Ни одно стандартное изменение не делает запуск возможным или дешевле хотя бы на 5 %."),
    "advice.combines": ("combines with: {keys:raw}", "сочетается с: {keys:raw}"),
    "advice.with_same_card": ("{line}; {same}", "{line}; {same}"),
    "advice.same_card": (
        "the change alone, on the same {gpus} x {gpu}: {memory_sign:raw}{memory_change:pct} memory per GPU{time}",
        "само изменение на тех же {gpus} × {gpu}: память на GPU {memory_sign:raw}{memory_change:pct}{time}"),
    "advice.same_card.time": (", {time_sign:raw}{time_change:pct} time", ", время {time_sign:raw}{time_change:pct}"),
    "advice.change.hybrid": (
        "{gpus} GPUs with {sharding:raw} in shard groups of {group} GPUs ({groups} copies of the model states): the "
        "states are divided inside a group, only gradient shards are all-reduced between groups",
        "{gpus} GPU с {sharding:raw} в группах шардирования по {group} GPU (копий состояний модели: {groups}): "
        "состояния делятся внутри группы, между группами идёт только all-reduce долей градиентов"),
    "advice.change.one_node": (
        "inside one node: {gpus} GPUs with {sharding:raw}, the same tokens per step",
        "в одном узле: {gpus} GPU с {sharding:raw}, столько же токенов на шаг"),
}
