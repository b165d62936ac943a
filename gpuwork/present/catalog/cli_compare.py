"""Catalog entries "cli.compare.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "cli.compare"

ENTRIES: dict[str, tuple[str, str]] = {
    "cli.compare.beside_stack": ("estimate for: stack / GPU", "оценка для: стек / GPU"),
    "cli.compare.beside_allocated": ("allocated peak: measured / estimated (error)",
                                     "пик выделенной памяти: замер / оценка (ошибка)"),
    "cli.compare.beside_reserved": ("reserved peak: measured / estimated (error)",
                                    "пик зарезервированной памяти: замер / оценка (ошибка)"),
    "cli.compare.beside_device": ("device total: measured / estimated (error)",
                                  "всего на устройстве: замер / оценка (ошибка)"),
    "cli.compare.beside_step": ("step time (median): measured / estimated (error)",
                                "время шага (медиана): замер / оценка (ошибка)"),
    "cli.compare.beside_tokens": ("tokens/s: measured / estimated (error)", "токенов/с: замер / оценка (ошибка)"),
    "cli.compare.beside_value": ("{measured} / {estimated} ({sign:raw}{error_pct:n1}%)",
                                 "{measured} / {estimated} ({sign:raw}{error_pct:n1} %)"),
    "cli.compare.beside_note": ("column {column}: {note}", "столбец {column}: {note}"),
    "cli.compare.calibration_saved": ("column {column}: calibration saved to {path:raw}",
                                      "столбец {column}: калибровка сохранена в {path:raw}"),
    "cli.compare.calibration_nothing": (
        "column {column}: calibration: nothing to save (no memory or time factor from this device)",
        "столбец {column}: калибровка: сохранять нечего (с этого устройства нет поправок ни памяти, ни времени)"),
    # -- gpuwork compare ---------------------------------------------------------------------------------------
    "cli.compare.trial": ("trial", "запуск"),
    "cli.compare.device": ("device", "устройство"),
    "cli.compare.gpus": ("GPUs", "GPU"),
    "cli.compare.sharding": ("sharding (as run)", "шардирование (как запущено)"),
    "cli.compare.sharding_ddp": ("{sharding:raw}: DDP, {world} full {world:pl:replica|replicas}",
                                 "{sharding:raw}: DDP, {world} {world:pl:полная реплика|полные реплики|полных реплик}"),
    "cli.compare.sharding_fsdp": ("{sharding:raw}: FSDP2 over {world} {world:pl:rank|ranks}, {reshard}",
                                  "{sharding:raw}: FSDP2 на {world} {world:pl:процессе|процессах|процессах}, {reshard}"),
    "cli.compare.sharding_other": ("{sharding:raw}: {strategy:raw} over {world} {world:pl:rank|ranks}",
                                   "{sharding:raw}: {strategy:raw} на {world} {world:pl:процессе|процессах|процессах}"),
    "cli.compare.sharding_hsdp": (
        "{sharding:raw}: FSDP2 on a mesh of {replicas} {replicas:pl:replica|replicas} x {shards} {shards:pl:shard|shards}, "
        "{reshard}",
        "{sharding:raw}: FSDP2 на сетке {replicas} {replicas:pl:реплика|реплики|реплик} × {shards} "
        "{shards:pl:шард|шарда|шардов}, {reshard}"),
    "cli.compare.reshard_on": ("parameters resharded after forward", "параметры снова шардируются после прямого прохода"),
    "cli.compare.reshard_off": ("parameters kept gathered until backward ends",
                                "параметры остаются собранными до конца обратного прохода"),
    "cli.compare.fits": ("fits", "помещается"),
    "cli.compare.median": ("step time (median)", "время шага (медиана)"),
    "cli.compare.p90": ("step time (p90)", "время шага (p90)"),
    "cli.compare.tokens_s": ("tokens/s", "токенов/с"),
    "cli.compare.peak_memory": ("peak memory", "пик памяти"),
    "cli.compare.checkpoint": ("checkpoint verified", "чекпойнт проверен"),
    "cli.compare.switches": ("execution switches", "переключатели выполнения"),
    "cli.compare.no_switches": ("none", "нет"),
    "cli.compare.price": ("price per GPU-hour", "цена за GPU-час"),
    "cli.compare.cost": ("cost per 1M tokens", "стоимость 1 млн токенов"),
    "cli.compare.yes": ("yes", "да"),
    "cli.compare.no": ("NO", "НЕТ"),
    "cli.compare.usd_price": ("${value:g}", "{value:g} USD"),
    "cli.compare.usd_cost": ("${value}", "{value} USD"),
    "cli.compare.interval": ("step time 95 % interval", "интервал времени шага 95 %"),
    "cli.compare.interval_value": ("{low} - {high} (+-{half_pct:n1}%)", "{low} – {high} (±{half_pct:n1} %)"),
    "cli.compare.drift": ("drift per 100 steps", "дрейф на 100 шагов"),
    "cli.compare.drift_value": ("{drift_pct:n1}%", "{drift_pct:n1} %"),
    "cli.compare.steps": ("measured steps", "шагов замера"),
    "cli.compare.stable": ("until stable", "до стабильности"),
    "cli.compare.cost_range": ("cost per 1M tokens, 95 %", "стоимость 1 млн токенов, 95 %"),
    "cli.compare.usd_cost_range": ("${low} - ${high}", "{low} – {high} USD"),
}
