"""Catalog entries "cli.plan.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "cli.plan"

ENTRIES: dict[str, tuple[str, str]] = {
    "cli.plan.header": (
        "gpuwork plan: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, seq {seq_len:raw} x batch {batch} "
        "(x{grad_accum}), {gpus} {gpus:pl:GPU|GPUs}, {sharding:raw}{checkpointing}",
        "gpuwork, план: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, контекст {seq_len:raw} × батч "
        "{batch} (×{grad_accum}), {gpus} GPU, {sharding:raw}{checkpointing}"),
    "cli.plan.weight_decay": (
        "weight decay {value:raw} (torch AdamW foreach / for-loop: one more pass over the weights when not 0)",
        "затухание весов {value:raw} (AdamW из PyTorch, foreach и цикл по тензорам: при ненулевом значении ещё один "
        "проход по весам)"),
    "cli.plan.weight_decay_default": (
        "weight decay {value:raw}, the stack's default (torch AdamW foreach / for-loop: one more pass over the "
        "weights); --weight-decay sets it",
        "затухание весов {value:raw} — значение стека по умолчанию (AdamW из PyTorch, foreach и цикл по тензорам: ещё "
        "один проход по весам); задаётся через --weight-decay"),
    "cli.plan.data": (
        "data: {tokens:int} tokens x {epochs:g} epoch(s); checkpoint every {every} steps, {kept} kept",
        "данные: {tokens:int} {tokens:pl:токен|токена|токенов} × {epochs:g} эп.; чекпойнт каждые {every} "
        "{every:pl:шаг|шага|шагов}, хранится {kept}"),
    "cli.plan.memory": ("memory per GPU (as planned):", "память на GPU (по плану):"),
    "cli.plan.device_total": ("device total (nvidia-smi)", "всего на устройстве (nvidia-smi)"),
    "cli.plan.peak_at": ("(peak at {phase:@phase})", "(пик — на {phase:@phase})"),
    "cli.plan.profile": ("profile {profile_id:raw} \"{name}\": {gpus} x {gpu} ({mode:@mode})",
                         "профиль {profile_id:raw} «{name}»: {gpus} × {gpu} ({mode:@mode})"),
    "cli.plan.no_profile": ("profile: none fits", "профиль: ни один не подходит"),
    "cli.plan.rejected": ("not {profile_id:raw}: {why}", "не {profile_id:raw}: {why}"),
    "cli.plan.changes": ("changes to the plan: {changes:list}", "изменения к плану: {changes:list}"),
    "cli.plan.check": ("check: {what}", "проверить: {what}"),
    "cli.plan.time": (
        "time on {gpus} x {gpu} ({peak}, {tflops:g} TFLOPS, MFU {mfu:n2} {source:@mfu.source}):",
        "время на {gpus} × {gpu} ({peak}, {tflops:g} TFLOPS, MFU {mfu:n2}, {source:@mfu.source}):"),
    "cli.plan.flops": ("FLOPs per token", "FLOPs на токен"),
    "cli.plan.flops_value": ("{flops:sci}  ({note})", "{flops:sci}  ({note})"),
    "cli.plan.mfu": ("MFU: {note}", "MFU: {note}"),
    "cli.plan.breakdown": ("where a step goes (one GPU, {stack:@stack}): {parts:list}",
                           "из чего состоит шаг (один GPU, {stack:@stack}): {parts:list}"),
    "cli.plan.breakdown_part": ("{kind} {seconds:n3} s ({share:pct})", "{kind} {seconds:n3} с ({share:pct})"),
    "cli.plan.scaling": ("tokens/s per GPU on 1–64 x {gpu} (8 per node, InfiniBand NDR 400G between nodes): "
                         "{points:list}",
                         "токенов/с на GPU для 1–64 × {gpu} (по 8 в узле, между узлами InfiniBand NDR 400G): "
                         "{points:list}"),
    "cli.plan.scaling_point": ("{gpus}: {tokens_s:int}", "{gpus}: {tokens_s:int}"),
    "cli.plan.step": (
        "step: compute {compute_s:n3} s + optimizer {optimizer_s:n3} s + exposed communication {exposed_s:n3} s = "
        "{step_s:n3} s",
        "шаг: вычисления {compute_s:n3} с + оптимизатор {optimizer_s:n3} с + открытый обмен {exposed_s:n3} с = "
        "{step_s:n3} с"),
    "cli.plan.throughput": ("throughput", "скорость"),
    "cli.plan.throughput_value": ("{tokens_s:int} tokens/s ({steps:int} steps)",
                                  "{tokens_s:int} токенов/с ({steps:int} {steps:pl:шаг|шага|шагов})"),
    "cli.plan.total": (
        "training {train_s:dur} + eval {eval_s:dur} + {checkpoints:int} checkpoints {checkpoint_s:dur} + margin "
        "{margin_s:dur} = {total_s:dur} ({gpu_hours:int} GPU-hours)",
        "обучение {train_s:dur} + валидация {eval_s:dur} + {checkpoints:int} "
        "{checkpoints:pl:чекпойнт|чекпойнта|чекпойнтов} {checkpoint_s:dur} + запас {margin_s:dur} = "
        "{total_s:dur} ({gpu_hours:int} GPU-часов)"),
    "cli.plan.communication": ("communication: {verdict}", "обмен между GPU: {verdict}"),
    "cli.plan.data_feed": ("data: {verdict}", "данные: {verdict}"),
    "cli.plan.disk": ("disk: {total_bytes:size} recommended", "диск: рекомендуется {total_bytes:size}"),
    "cli.plan.note": ("note: {note}", "примечание: {note}"),
    "cli.plan.offers": ("cheapest fitting offers (illustrative prices):",
                        "самые дешёвые подходящие предложения (цены ориентировочные):"),
    "cli.plan.warning": ("warning: {warning}", "предупреждение: {warning}"),
    "cli.plan.gpu_too_small": (
        "the plan needs {need_bytes:gib} per GPU; {gpu} has {usable_bytes:gib} usable: it will not fit as planned",
        "плану нужно {need_bytes:gib} на GPU, у {gpu} доступно {usable_bytes:gib}: как запланировано, не "
        "поместится"),
}
