"""Catalog entries (code -> (English, Russian)) for the advisor, the fit matrix, the rental mode rule and the
request's protocol lines (framework, links, validation, the trial's figures).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: the rental mode (``profile.mode.*``), the advisor (``advice.*``), the
``advise`` and ``fit`` verbs (``cli.advise.*``, ``cli.fit.*``, ``cli.help.advise.*``, ``cli.help.fit.*``), the
request (``request.framework`` ...) and their errors.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
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

    # -- the advisor (gpuwork.estimate.advisor) ---------------------------------------------------------------------
    "advice.change.grad_checkpointing": ("with gradient checkpointing", "с пересчётом активаций"),
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
    "advice.sharding": ("{sharding:raw}{offload}", "{sharding:raw}{offload}"),
    "advice.sharding.state": (
        "{sharding:raw}{offload} ({precision:raw}: {bytes_per_param} bytes per trained parameter for weights, "
        "gradients and optimizer states, before sharding)",
        "{sharding:raw}{offload} ({precision:raw}: {bytes_per_param} байт на обучаемый параметр на веса, градиенты "
        "и состояния оптимизатора до шардирования)"),
    "advice.sharding.offload": (" with CPU offload", " с выгрузкой в память CPU"),
    "advice.change.seq_len": ("sequence {old:int} -> {new:int} tokens", "последовательность {old:int} → {new:int} токенов"),
    "advice.note.experiment": ("changes the experiment", "меняет эксперимент"),
    "advice.note.global_batch": ("more tokens per optimizer step", "больше токенов на шаг оптимизатора"),
    "advice.where": (
        "fits {gpus} x {gpu}{sharding} ({offer_id:raw}, {provider:raw}, {mode:@mode})",
        "помещается на {gpus} × {gpu}{sharding} ({offer_id:raw}, {provider:raw}, {mode:@mode})"),
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
        "The plan as it is: {memory_bytes:gib} per GPU, cheapest on {gpus} x {gpu}{sharding} ({offer_id:raw}, "
        "{provider:raw}, {mode:@mode}): {run_s:dur}, {cost_usd:usd}.",
        "План в текущем виде: {memory_bytes:gib} на GPU, дешевле всего на {gpus} × {gpu}{sharding} ({offer_id:raw}, "
        "{provider:raw}, {mode:@mode}): {run_s:dur}, {cost_usd:usd}."),
    "advice.none": (
        "No standard change makes the run fit or at least 5% cheaper.",
        "Ни одно стандартное изменение не делает запуск возможным или дешевле хотя бы на 5 %."),
    "advice.combines": ("combines with: {keys:raw}", "сочетается с: {keys:raw}"),
    "error.advice.limit": ("limit must be a whole number of at least 1, not {value:raw}",
                           "limit должен быть целым числом не меньше 1, а не {value:raw}"),
    "error.fitmatrix.counts": ("counts must be GPU counts of at least 1, e.g. (1, 2, 4, 8), not {value:raw}",
                               "counts должны быть числами GPU не меньше 1, например (1, 2, 4, 8), а не {value:raw}"),

    # -- gpuwork advise / gpuwork fit (gpuwork.cli.advise) --------------------------------------------------------
    "cli.advise.header": ("Changes that make the run fit or cheaper ({tried} plans priced, {elapsed_ms:int} ms):",
                          "Изменения, с которыми запуск помещается или дешевле (оценено планов: {tried}, "
                          "{elapsed_ms:int} мс):"),
    "cli.advise.item": ("{rank}. {summary}", "{rank}. {summary}"),
    "cli.fit.header": (
        "Fit matrix: {model}, {method:raw}, context {seq_len:int} x batch {batch} ({cells} cells, {elapsed_ms:int} ms; "
        "memory per GPU of the usable; time and cost of the whole run)",
        "Матрица размещения: {model}, {method:raw}, контекст {seq_len:int} × батч {batch} (ячеек: {cells}, "
        "{elapsed_ms:int} мс; память на GPU из доступной; время и стоимость всего запуска)"),
    "cli.fit.col.gpu": ("GPU", "GPU"),
    "cli.fit.col.gpus": ("GPUs", "GPU"),
    "cli.fit.col.sharding": ("sharding", "шардирование"),
    "cli.fit.col.memory": ("GiB / usable", "ГиБ / доступно"),
    "cli.fit.col.headroom": ("headroom", "запас"),
    "cli.fit.col.batch": ("max batch", "макс. батч"),
    "cli.fit.col.seq": ("max seq", "макс. контекст"),
    "cli.fit.col.time": ("time", "время"),
    "cli.fit.col.cost": ("cost", "стоимость"),
    "cli.fit.no": ("does not fit", "не помещается"),
    "cli.fit.typical": ("typical price", "типичная цена"),
    "cli.fit.cheapest": ("Cheapest: {gpus} x {gpu}, {run_s:dur}, {cost_usd:usd}.",
                         "Дешевле всего: {gpus} × {gpu}, {run_s:dur}, {cost_usd:usd}."),
    "cli.help.advise.summary": ("suggest changes (checkpointing, micro-batch, 8-bit optimizer, QLoRA, sharding, "
                                "shorter sequence) that make the run fit or cheaper",
                                "предложить изменения (пересчёт активаций, микробатч, 8-битный оптимизатор, QLoRA, "
                                "шардирование, короче последовательность), с которыми запуск помещается или дешевле"),
    "cli.help.advise.limit": ("how many suggestions to show (default 5)",
                              "сколько предложений показать (по умолчанию 5)"),
    "cli.help.fit.summary": ("the fit matrix: every GPU of the catalog x 1/2/4/8: fits, headroom, largest batch and "
                             "sequence, time and cost",
                             "матрица размещения: каждый GPU каталога × 1/2/4/8: помещается ли, запас, наибольшие "
                             "батч и контекст, время и стоимость"),
    "cli.help.fit.all": ("also show the rows of GPUs on which nothing fits",
                         "показать и строки GPU, на которых ничего не помещается"),
    "cli.help.fit.gpu": ("only this GPU (repeatable), e.g. --gpu rtx4090",
                         "только этот GPU (можно повторять), например --gpu rtx4090"),
    "cli.help.lang.advice": ("language of the suggestions: en or ru", "язык предложений: en или ru"),

    # -- the request: what the provider needs to reproduce the protocol (gpuwork.present.request) ------------------
    "request.framework": ("Software: {framework:raw}; {launch}.", "Программы: {framework:raw}; {launch}."),
    "request.launch.single": ("one GPU, one process", "один GPU, один процесс"),
    "request.launch.multi": (
        "{gpus} processes via {launcher:raw}, {backend:raw} between GPUs",
        "{gpus} {gpus:pl:процесс|процесса|процессов} через {launcher:raw}, обмен между GPU — {backend:raw}"),
    "request.links.single": ("Links: one GPU, no exchange between GPUs.",
                             "Связь: один GPU, обмена между GPU нет."),
    "request.links": (
        "Links: each GPU sends {bytes_step:size} per optimizer step, {need_bytes_s:rate} per GPU on average over a "
        "{step_s:n2} s step; inside the node {link:@link}: {verdict}{between}.",
        "Связь: каждый GPU передаёт {bytes_step:size} за шаг оптимизатора, в среднем {need_bytes_s:rate} на GPU "
        "при шаге {step_s:n2} с; внутри узла {link:@link}: {verdict}{between}."),
    "request.links.between": ("; between nodes {network:@network}, at least {need_bytes_s:rate} per GPU",
                              "; между узлами {network:@network}, не меньше {need_bytes_s:rate} на GPU"),
    "request.validation": (
        "Validation: {share:pct} of the training time, about {eval_s:dur} of the {run_s:dur} run.",
        "Валидация: {share:pct} времени обучения, около {eval_s:dur} из {run_s:dur} запуска."),
    "request.trial_measured": (
        "Measured in the trial ({device:raw}, {steps} measured steps after warm-up): step {step_s:n3} s, "
        "{tokens_s:int} tokens/s, peak memory {peak_bytes:gib}, data wait {wait:pct}{checkpoint}.",
        "Замерено в пробном запуске ({device:raw}, {steps} {steps:pl:шаг|шага|шагов} после прогрева): шаг "
        "{step_s:n3} с, {tokens_s:int} токенов/с, пиковая память {peak_bytes:gib}, ожидание данных {wait:pct}"
        "{checkpoint}."),
    "request.trial_measured.checkpoint": (
        "; checkpoint of {size_bytes:size} saved in {save_s:n1} s and restored in {restore_s:n1} s",
        "; чекпойнт {size_bytes:size} сохранён за {save_s:n1} с и восстановлен за {restore_s:n1} с"),
    "request.trial_measured.failed": (
        "The trial did not complete a measured step ({device:raw}): {error}.",
        "Пробный запуск не завершил ни одного замеренного шага ({device:raw}): {error}."),
    "request.rental_mode": ("Rental mode: {reason}.", "Режим аренды: {reason}."),
}
