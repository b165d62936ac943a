"""Catalog entries "profile.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "profile"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- rental profiles (gpuwork.estimate.profiles) -------------------------------------------------------------
    "profile.name.01": ("LoRA/QLoRA and a short check", "LoRA/QLoRA и короткая проверка"),
    "profile.name.02": ("regular fine-tuning", "регулярное дообучение"),
    "profile.name.03": ("full weight update", "полное обновление весов"),
    "profile.gpus.01": ("1 GPU with 24-48 GB", "1 GPU на 24–48 ГБ"),
    "profile.gpus.02": ("1 server GPU with 80 GB", "1 серверный GPU на 80 ГБ"),
    "profile.gpus.03": ("2+ identical GPUs with 80 GB+ each", "2+ одинаковых GPU по 80 ГБ и больше"),
    "profile.check.trial": (
        "measure step time and peak memory in a short trial before renting for longer",
        "замерить время шага и пиковую память в коротком пробном запуске до долгой аренды"),
    "profile.check.checkpoints": (
        "checkpoint save and restore: time and size on the rented disk",
        "сохранение и восстановление чекпойнта: время и размер на арендованном диске"),
    "profile.check.data_feed": (
        "data feed speed: the loader must keep up with the GPU",
        "скорость подачи данных: загрузчик должен успевать за GPU"),
    "profile.check.sharding": (
        "sharding strategy (ZeRO-2/ZeRO-3/FSDP) and memory per GPU",
        "стратегию шардирования (ZeRO-2/ZeRO-3/FSDP) и память на каждом GPU"),
    "profile.check.interconnect": (
        "exchange between GPUs (NVLink/NVSwitch) and between nodes (InfiniBand/RoCE)",
        "обмен между GPU (NVLink/NVSwitch) и между узлами (InfiniBand/RoCE)"),
    "profile.small_model": (
        " ({method:@method}, but the model is small: {params:bn} B parameters)",
        " ({method:@method}, но модель небольшая: {params:bn} млрд параметров)"),
    "profile.fits_small_card": (
        "fits one {card_gb} GB card{note}: {need_bytes:gib} of {usable_bytes:gib} on {gpu}",
        "помещается на одну карту {card_gb} ГБ{note}: {need_bytes:gib} из {usable_bytes:gib} на {gpu}"),
    "profile.short_run": (
        "short run: ~{run_s:dur} on {gpu} (a short check is up to {max_s:dur}), so on-demand rental suits it",
        "короткий запуск: около {run_s:dur} на {gpu} (короткая проверка — до {max_s:dur}), поэтому подходит "
        "почасовая аренда"),
    "profile.fits_server_card": (
        "fits one {card_gb} GB server card: {need_bytes:gib} of {usable_bytes:gib} on {gpu}",
        "помещается на одну серверную карту {card_gb} ГБ: {need_bytes:gib} из {usable_bytes:gib} на {gpu}"),
    "profile.regular_run": (
        "estimated {run_s:dur}: a regular run for a reserved GPU",
        "оценка времени — {run_s:dur}: обычный запуск для зарезервированного GPU"),
    "profile.long_run": (
        "longer than a month on one GPU: consider several GPUs (profile 03) to finish sooner",
        "на одном GPU дольше месяца: чтобы закончить быстрее, стоит взять несколько GPU (профиль 03)"),
    "profile.too_big_for_one": (
        "one {card_gb} GB card is not enough: {need_bytes:gib} needed, {usable_bytes:gib} usable on {gpu}",
        "одной карты на {card_gb} ГБ не хватает: нужно {need_bytes:gib}, на {gpu} доступно {usable_bytes:gib}"),
    "profile.plan_uses_gpus": (
        "the plan uses {gpus} GPUs{one_card}",
        "план рассчитан на {gpus} GPU{one_card}"),
    "profile.one_card_would_do": (
        " (one {card_gb} GB card would hold it: {need_bytes:gib})",
        " (хватило бы и одной карты на {card_gb} ГБ: {need_bytes:gib})"),
    "profile.fits_one_with_checkpointing": (
        "{too_big} with the plan as it is; it fits only with gradient checkpointing on (the plan has it off; it "
        "costs about a third more compute): activations are what does not fit",
        "{too_big} в плане как есть; помещается только с пересчётом активаций (gradient_checkpointing; в плане "
        "он выключен, это примерно на треть больше вычислений): не помещаются активации"),
    "profile.fits_several_with_checkpointing": (
        "it fits several GPUs only with gradient checkpointing on (the plan has it off; it costs about a third "
        "more compute): activations are what does not fit",
        "на нескольких GPU помещается только с пересчётом активаций (gradient_checkpointing; в плане он "
        "выключен, это примерно на треть больше вычислений): не помещаются активации"),
    "profile.none_fits": (
        "even {gpus} x {gpu} with ZeRO-3 do not fit ({best_bytes:gib} per GPU at best): reduce the batch or "
        "sequence, enable gradient checkpointing or offloading, or use adapters",
        "не помещается даже на {gpus} × {gpu} с ZeRO-3 (в лучшем случае {best_bytes:gib} на GPU): уменьшите "
        "батч или длину последовательности, включите пересчёт активаций (gradient_checkpointing) или выгрузку "
        "на CPU, либо используйте адаптеры"),
    "profile.where.one_node": ("one node", "один узел"),
    "profile.where.nodes": (
        "{nodes} nodes of {per_node} over {network:@network}",
        "{nodes} {nodes:pl:узел|узла|узлов} по {per_node} через {network:@network}"),
    "profile.fits_several": (
        "fits on {gpus} x {gpu} ({where}) with {sharding:raw}: {need_bytes:gib} of {usable_bytes:gib} per GPU",
        "помещается на {gpus} × {gpu} ({where}) с {sharding:raw}: {need_bytes:gib} из {usable_bytes:gib} на GPU"),
    "profile.several_time": (
        "estimated {run_s:dur}, scaling efficiency {efficiency:pct}; {verdict}",
        "оценка времени — {run_s:dur}, эффективность масштабирования {efficiency:pct}; {verdict}"),
    "profile.reject01.several_gpus": ("the plan asks for several GPUs", "план рассчитан на несколько GPU"),
    "profile.reject01.too_long": (
        "fits a {card_gb} GB card but runs ~{run_s:dur} on {gpu}: longer than a short check ({max_s:dur})",
        "помещается на карту {card_gb} ГБ, но на {gpu} займёт около {run_s:dur} — дольше короткой проверки "
        "({max_s:dur})"),
    "profile.reject01.too_big_for_card": (
        "needs {need_bytes:gib}, more than the {usable_bytes:gib} usable on a {card_gb} GB {gpu}",
        "нужно {need_bytes:gib} — больше, чем доступно на карте {card_gb} ГБ {gpu} ({usable_bytes:gib})"),
    "profile.reject01.too_big": (
        "needs {need_bytes:gib} on one GPU, more than a 24-48 GB card holds",
        "на одном GPU нужно {need_bytes:gib} — больше, чем есть у карты на 24–48 ГБ"),
    "profile.reject02.oversized": (
        "a reserved {card_gb} GB card is more than this run needs",
        "резервировать карту на {card_gb} ГБ для такого запуска избыточно"),
    "profile.reject03.one_gpu_enough": (
        "one GPU is enough: {need_bytes:gib} fits one {card_gb} GB card, so several GPUs are not needed for memory",
        "хватает одного GPU: {need_bytes:gib} помещаются на карту {card_gb} ГБ, несколько GPU по памяти не нужны"),
    "profile.reject03.checkpointing_enough": (
        "several GPUs are not needed once gradient checkpointing is on",
        "с пересчётом активаций (gradient_checkpointing) несколько GPU не нужны"),
    # -- how to rent: from the run length (gpuwork.estimate.profiles.rental_mode) ----------------------------------
    "profile.mode.on_demand": (
        "on demand: {used_s:dur} of use costs {on_demand_usd:usd} by the hour and {reserved_usd:usd} reserved "
        "(billed for {period_s:dur}); a reservation pays off only after {break_even_s:dur}",
        "почасовая аренда: {used_s:dur} работы стоят {on_demand_usd:usd} по часам и {reserved_usd:usd} при "
        "резерве (оплата за {period_s:dur}); резерв окупается только после {break_even_s:dur}"),
    "profile.mode.reserved": (
        "reserved: {used_s:dur} of use costs {reserved_usd:usd} reserved (billed for {period_s:dur}) and "
        "{on_demand_usd:usd} by the hour; a reservation pays off after {break_even_s:dur}",
        "резерв: {used_s:dur} работы стоят {reserved_usd:usd} при резерве (оплата за {period_s:dur}) и "
        "{on_demand_usd:usd} по часам; резерв окупается после {break_even_s:dur}"),
    "profile.mode.no_reserved": (
        "on demand: the catalog has no reservation for this GPU and count ({used_s:dur} of use)",
        "почасовая аренда: резерва для этого GPU и числа карт в каталоге нет ({used_s:dur} работы)"),
    "profile.mode.only_reserved": (
        "reserved: the catalog rents this GPU and count only reserved ({used_s:dur} of use)",
        "резерв: в каталоге этот GPU и число карт сдаются только в резерв ({used_s:dur} работы)"),
    "profile.mode.on_demand_typical": (
        "on demand: {used_s:dur} of use is less than the {break_even_s:dur} after which a month's reservation at "
        "the typical discount pays off",
        "почасовая аренда: {used_s:dur} работы — меньше {break_even_s:dur}, после которых окупается резерв на "
        "месяц с обычной скидкой"),
    "profile.mode.reserved_typical": (
        "reserved: {used_s:dur} of use is more than the {break_even_s:dur} after which a month's reservation at "
        "the typical discount pays off",
        "резерв: {used_s:dur} работы — больше {break_even_s:dur}, после которых окупается резерв на месяц с "
        "обычной скидкой"),
}
