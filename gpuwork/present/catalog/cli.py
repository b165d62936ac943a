"""Catalog entries "cli.*" except cli.compare.*, cli.help.*, cli.plan.*, cli.trial.* (their own files): code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "cli"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the command line (gpuwork.cli.plan) ------------------------------------------------------------------------
    "cli.warning": ("gpuwork: warning: {text}", "gpuwork: предупреждение: {text}"),
    "cli.estimate.header": (
        "gpuwork estimate: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, seq {seq_len:int} x batch "
        "{batch} (x{grad_accum} accumulation), {gpus} {gpus:pl:GPU|GPUs}, {sharding:raw}{checkpointing}",
        "gpuwork estimate: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, контекст {seq_len:int} × батч "
        "{batch} (накопление ×{grad_accum}), {gpus} GPU, {sharding:raw}{checkpointing}"),
    # the headers' checkpointing, when it is on (TrainPlan.grad_checkpointing and recompute)
    "cli.checkpointing.block": (", checkpointing whole blocks", ", чекпойнтинг целых блоков"),
    "cli.checkpointing.ops": (", op-level selective checkpointing (torchtitan)",
                              ", выборочный чекпойнтинг по операциям (torchtitan)"),
    "cli.checkpointing.matmuls": (", selective checkpointing keeping every matmul output",
                                  ", выборочный чекпойнтинг с хранением всех матричных умножений"),
    "cli.checkpointing.one_in": ("{what} on one block in {every}", "{what} на каждом {every}-м блоке"),
    "cli.estimate.params": ("parameters: {total:int} total, {trainable:int} trainable",
                            "параметры: всего {total:int}, обучаемых {trainable:int}"),
    "cli.estimate.breakdown": ("per-GPU memory at the peak ({phase:@phase}), GiB:",
                               "память на GPU в пике (на {phase:@phase}), ГиБ:"),
    "cli.estimate.allocated": ("peak allocated (torch max_memory_allocated)",
                               "пик занятой памяти (torch max_memory_allocated)"),
    "cli.estimate.reserved": ("peak reserved (torch max_memory_reserved)",
                              "пик зарезервированной (torch max_memory_reserved)"),
    "cli.estimate.device": ("device total (what nvidia-smi shows)", "всего на устройстве (как в nvidia-smi)"),
    "cli.estimate.host": ("CPU RAM for offloaded states", "ОЗУ CPU под выгруженные состояния"),
    "cli.dataset_tokens_note": (
        "gpuwork: note: dataset_tokens = {tokens:int} from --dataset-bytes at {bytes_per_token:g} B/token (give "
        "--dataset-tokens to override)",
        "gpuwork: примечание: dataset_tokens = {tokens:int} из --dataset-bytes по {bytes_per_token:g} Б на токен "
        "(задайте --dataset-tokens, чтобы указать точно)"),
    "cli.block_profile.traced": (
        "gpuwork has no hand-written block model for '{model_type:raw}': traced one block of the real class in "
        "{seconds:n1} s; memory and time follow it",
        "для '{model_type:raw}' в gpuwork нет ручной модели блока: один блок настоящего класса трассирован за "
        "{seconds:n1} с; память и время считаются по нему"),
    "cli.block_profile.failed": (
        "'{model_type:raw}' has no hand-written block model and its block could not be traced ({error}): the "
        "nearest family's block stands in",
        "для '{model_type:raw}' нет ручной модели блока, и трассировать его не удалось ({error}): вместо него "
        "взят блок ближайшего семейства"),
    "cli.block_profile.no_torch": (
        "'{model_type:raw}' has no hand-written block model; install gpuwork[trial] (torch) to trace the real "
        "block: the nearest family's block stands in",
        "для '{model_type:raw}' нет ручной модели блока; установите gpuwork[trial] (torch), чтобы трассировать "
        "настоящий блок: вместо него взят блок ближайшего семейства"),
    "cli.block_profile.preset": (
        "'{model_type:raw}' has no hand-written block model and the preset bundles no traced block for this "
        "method, precision and attention: the nearest family's block stands in (give its config.json to trace "
        "the real block)",
        "для '{model_type:raw}' нет ручной модели блока, а пресет не содержит трассированного блока для этого "
        "метода, точности и внимания: вместо него взят блок ближайшего семейства (укажите его config.json, "
        "чтобы трассировать настоящий блок)"),
    "cli.offers.header": (
        "gpuwork offers: {model}, {method:raw}, seq {seq_len:raw} x batch {batch}, {tokens:int} tokens x "
        "{epochs:g} epoch(s); {stack}; sorted by {sort:@sort}; prices illustrative",
        "gpuwork, предложения: {model}, {method:raw}, контекст {seq_len:raw} × батч {batch}, {tokens:int} "
        "{tokens:pl:токен|токена|токенов} × {epochs:g} эп.; {stack}; сортировка {sort:@sort}; цены ориентировочные"),
    "cli.offers.mode": ("{mode:@mode}", "{mode:@mode}"),
    "cli.offers.none": ("no offer passes the filters", "ни одно предложение не проходит фильтры"),
    "cli.app.public_host": (
        "gpuwork app: note: listening on {host:raw}, beyond this machine; the app has no login, so put it behind a "
        "reverse proxy that authenticates users",
        "gpuwork app: внимание: сервер слушает {host:raw}, за пределами этой машины; входа по паролю в приложении "
        "нет, поэтому поставьте перед ним обратный прокси с проверкой пользователей"),
    "cli.offers.col.provider": ("provider", "провайдер"),
    "cli.offers.col.per_node": ("per node", "на узел"),
    "cli.offers.col.gpu": ("GPU", "GPU"),
    "cli.offers.col.mode": ("mode", "аренда"),
    "cli.offers.col.region": ("region", "регион"),
    "cli.offers.hybrid_note": (
        "hsdp/N, hsdp-zero2/N: hybrid sharding in shard groups of N GPUs (here {groups:raw}), the model states "
        "divided within a group and replicated across groups.",
        "hsdp/N, hsdp-zero2/N: гибридное шардирование группами по N GPU (здесь {groups:raw}): состояния модели "
        "делятся внутри группы и повторяются между группами."),
    "cli.offers.col.price": ("$/GPU-h", "$/GPU-ч"),
    "cli.offers.col.gpus": ("GPUs", "GPU"),
    "cli.offers.col.sharding": ("sharding", "шардинг"),
    "cli.offers.col.time": ("time", "время"),
    "cli.offers.col.cost": ("cost", "стоимость"),
    "cli.offers.col.notes": ("notes", "примечания"),
    "cli.offers.preemptions": (
        "~{preemptions:n1} preemptions; checkpoint every ~{steps} steps",
        "~{preemptions:n1} прерываний; чекпойнт каждые ~{steps} {steps:pl:шаг|шага|шагов}"),
    "cli.offers.checkpoint_every": ("checkpoint every ~{steps} steps",
                                    "чекпойнт каждые ~{steps} {steps:pl:шаг|шага|шагов}"),
    "cli.offers.misses_deadline": ("misses the deadline", "не успевает к сроку"),
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
    # --check (plan, offers, advise) on stderr, after the report: why the exit status is 1
    "cli.check.no_fit": ("gpuwork: --check: nothing fits (exit status 1)",
                         "gpuwork: --check: ничего не подходит (код завершения 1)"),
    "cli.trace.progress": ("trace", "трассировка"),
    "cli.trace.progress_unit": ("stage", "этап"),
    "cli.ramp.header": ("ramp: batch x seq_len -> fits, peak above start, median step, tokens/s",
                        "рампа: батч × seq_len → помещается, пик сверх начального, медиана шага, токенов/с"),
    "cli.ramp.fits": ("fits", "да"),
    "cli.ramp.by": ("x", "×"),
    "cli.ramp.oom": ("OOM", "OOM"),
    "cli.ramp.nothing": ("nothing fits: not even batch 1 at the plan's seq_len",
                         "ничего не помещается: даже батч 1 при seq_len плана"),
    "cli.ramp.result": (
        "largest batch {batch} (limited by {batch_why:@ramp.limit}); at that batch the longest seq_len {seq} "
        "(limited by {seq_why:@ramp.limit})",
        "наибольший батч {batch} (ограничение: {batch_why:@ramp.limit}); при этом батче наибольшая seq_len {seq} "
        "(ограничение: {seq_why:@ramp.limit})"),
    # -- gpuwork trace, models, estimate --calibrated (gpuwork.cli.estimate) ------------------------------------
    "cli.trace.header": (
        "gpuwork trace: {model}, {method:raw}, {precision:raw}, seq {seq_len} x batch {batch} — one step under fake "
        "tensors ({elapsed_s:n1} s)",
        "gpuwork, трассировка: {model}, {method:raw}, {precision:raw}, контекст {seq_len} × батч {batch} — один шаг на "
        "фиктивных тензорах ({elapsed_s:n1} с)"),
    "cli.trace.peak": ("peak of live tensors at {phase:@phase}, GiB:", "пик живых тензоров — на {phase:@phase}, ГиБ:"),
    "cli.trace.traced": ("traced peak allocated", "пик выделенной по трассировке"),
    "cli.trace.analytic": ("analytic estimate (same quantity)", "аналитическая оценка (та же величина)"),
    "cli.trace.difference": ("({sign}{pct:n1}%)", "({sign}{pct:n1} %)"),
    "cli.trace.stand_in": ("  stand-in: {what}", "  замена: {what}"),
    "cli.trace.fallback": ("{error}; showing the analytic estimate", "{error}; показана аналитическая оценка"),
    "cli.models.preset": ("preset", "пресет"),
    "cli.models.architecture": ("architecture", "архитектура"),
    "cli.models.parameters": ("parameters", "параметры"),
    "cli.models.active": ("active", "активные"),
    "cli.models.layers": ("layers", "слои"),
    "cli.models.context": ("context", "контекст"),
    "cli.models.wrote": ("wrote {path:raw}", "записано: {path:raw}"),
    "cli.estimate.calibrated": (
        "calibrated with trials on {device:raw} (measured/estimated: allocated x{allocated:n3}, reserved "
        "x{reserved:n3}), GiB:",
        "с калибровкой по запускам на {device:raw} (замер/оценка: выделенная ×{allocated:n3}, зарезервированная "
        "×{reserved:n3}), ГиБ:"),
    # -- gpuwork report and its pages (gpuwork.cli.report, gpuwork.ui.report) -----------------------------------
    "cli.report.done": (
        "gpuwork report: {pages} page(s) in {out:raw} ({elapsed_s:n0} s); open {index:raw}",
        "gpuwork, отчёт: {pages} {pages:pl:страница|страницы|страниц} в {out:raw} ({elapsed_s:n0} с); откройте "
        "{index:raw}"),
    "cli.resume.data_changed": (
        "data changed since {run:raw}, allowed by --allow-changed-data (noted in the new record): {files:raw}",
        "данные изменились после {run:raw}, разрешено флагом --allow-changed-data (отмечено в новой записи): "
        "{files:raw}"),
    "cli.resume.verified": (
        "checkpoint {folder:raw} verified before loading: {files} {files:pl:file|files} match the SHA-256 "
        "digests of the save",
        "чекпойнт {folder:raw} проверен до загрузки: {files} {files:pl:файл|файла|файлов} совпадают с "
        "отпечатками SHA-256, снятыми при сохранении"),
    "cli.accuracy.wrote": ("wrote {path:raw}", "записано: {path:raw}"),
}
