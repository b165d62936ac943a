"""Catalog entries "cli.trial.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "cli.trial"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- gpuwork trial (gpuwork.cli.trial) ----------------------------------------------------------------------
    "cli.trial.header": (
        "gpuwork trial: {model}, {method:raw}, {precision}, {optimizer:raw}, seq {seq_len} x batch {batch} "
        "(x{grad_accum} accumulation){checkpointing}, {processes} on {device} ({device_name:raw})",
        "gpuwork, пробный запуск: {model}, {method:raw}, {precision}, {optimizer:raw}, контекст {seq_len} × батч {batch} "
        "(накопление ×{grad_accum}){checkpointing}, {processes} на {device} ({device_name:raw})"),
    "cli.trial.precision_asked": ("{used:raw} (asked {asked:raw})", "{used:raw} (запрошено {asked:raw})"),
    "cli.trial.one_process": ("1 process", "1 процесс"),
    "cli.trial.processes": ("{world} processes ({strategy:raw}, {backend:raw})",
                            "{world} {world:pl:процесс|процесса|процессов} ({strategy:raw}, {backend:raw})"),
    "cli.trial.processes_mesh": ("{world} processes ({strategy:raw} on {replicas} {replicas:pl:replica|replicas} x "
                                 "{shards} {shards:pl:shard|shards}, {backend:raw})",
                                 "{world} {world:pl:процесс|процесса|процессов} ({strategy:raw} на сетке {replicas} "
                                 "{replicas:pl:реплика|реплики|реплик} × {shards} {shards:pl:шард|шарда|шардов}, "
                                 "{backend:raw})"),
    "cli.trial.cpu": ("cpu", "CPU"),
    "cli.trial.substitution": ("  substitution: {what}", "  замена: {what}"),
    "cli.trial.sdpa": ("  attention: sdpa, kernel {used:raw} (sdpa_backend {asked:raw})",
                       "  внимание: sdpa, ядро {used:raw} (sdpa_backend {asked:raw})"),
    "cli.trial.switches": ("  execution switches: {what:raw}", "  переключатели выполнения: {what:raw}"),
    "cli.trial.row.step_time": ("step time", "время шага"),
    "cli.trial.row.throughput": ("throughput", "скорость"),
    "cli.trial.row.data_wait": ("data wait", "данные"),
    "cli.trial.row.loss": ("loss", "loss"),
    "cli.trial.row.clipping": ("clipping", "клиппинг"),  # short: the rows align on the widest label
    "cli.trial.row.peak_memory": ("peak memory", "пик памяти"),
    "cli.trial.row.checkpoint": ("checkpoint", "чекпойнт"),
    "cli.trial.row.fits": ("fits", "помещается"),
    "cli.trial.step_time": (
        "median {median}, p90 {p90} ({steps} {steps:pl:step|steps} after {warmup} warm-up)",
        "медиана {median}, p90 {p90} (шагов замера: {steps}, прогрева: {warmup})"),
    "cli.trial.no_steps": ("no measured step completed", "ни один шаг замера не завершился"),
    "cli.trial.throughput": (
        "{tokens_s:int} tokens/s ({tokens:int} tokens per step{all_ranks})",
        "{tokens_s:int} токенов/с ({tokens:int} {tokens:pl:токен|токена|токенов} за шаг{all_ranks})"),
    "cli.trial.all_ranks": (", all ranks", ", все процессы"),
    "cli.trial.loss": ("{first} -> {last}", "{first} → {last}"),
    "cli.trial.memory_cpu": (
        "{peak} above the process's start{ranks} — process RSS (CPU memory; runtime and allocator cache included; "
        "not comparable with GPU memory); RSS peak {rss}",
        "{peak} сверх памяти процесса до запуска{ranks} — RSS процесса (память CPU, вместе со средой выполнения и "
        "кэшем аллокатора; не сравнимо с памятью GPU); пик RSS {rss}"),
    "cli.trial.memory_cuda": (
        "allocated {allocated} (torch.cuda.max_memory_allocated){ranks}, reserved {reserved} (max_memory_reserved: + "
        "the allocator's cache); the device total adds the CUDA context, not measured here",
        "выделено {allocated} (torch.cuda.max_memory_allocated){ranks}, зарезервировано {reserved} "
        "(max_memory_reserved: + кэш аллокатора); всего на устройстве добавляется контекст CUDA, здесь он не "
        "замеряется"),
    "cli.trial.highest_of": (" (highest of {ranks} ranks)",
                             " (наибольший из {ranks} {ranks:pl:процесса|процессов|процессов})"),
    "cli.trial.rank_memory": (
        "rank {rank}: peak {peak} above start, {kind} {measured}; parameters held {params}, optimizer states "
        "{states}",
        "процесс {rank}: пик {peak} сверх начального, {kind} {measured}; параметры {params}, состояния "
        "оптимизатора {states}"),
    "cli.trial.kind_allocated": ("allocated", "выделено"),
    "cli.trial.kind_rss": ("RSS", "RSS"),
    "cli.trial.checkpoint": (
        "{state}: save {save}, restore {restore} (+ rebuild {rebuild}), {size} on disk",
        "{state}: сохранение {save}, восстановление {restore} (+ пересборка {rebuild}), {size} на диске"),
    "cli.trial.verified": ("verified", "проверен"),
    "cli.trial.not_verified": ("NOT verified", "НЕ проверен"),
    "cli.trial.checkpoint_not_run": ("round-trip not run", "сохранение и восстановление не проверялись"),
    "cli.trial.fits": ("yes{cap}", "да{cap}"),
    "cli.trial.under_cap": (" (under the cap of {cap})", " (в пределах {cap})"),
    "cli.trial.does_not_fit": ("does not fit — {error}; peak reached {peak} above the start",
                               "не помещается — {error}; достигнутый пик {peak} сверх начального"),
    "cli.trial.record": ("record: {path:raw}", "запись: {path:raw}"),
    "cli.trial.no_extrapolation": ("no extrapolation: {error}", "экстраполяции нет: {error}"),
    "cli.trial.progress": ("trial", "запуск"),
    "cli.trial.progress_unit": ("step", "шаг"),
    "cli.trial.extrapolated": (
        "extrapolated to {tokens:int} tokens x {epochs:g} epoch(s) on {where}: {steps:int} steps",
        "пересчёт на {tokens:int} {tokens:pl:токен|токена|токенов} × эпох {epochs:g} на {where}: {steps:int} "
        "{steps:pl:шаг|шага|шагов}"),
    "cli.trial.where_cpu": ("{gpus} CPU process(es) like this one",
                            "{gpus} {gpus:pl:процессе|процессах|процессах} CPU, как этот"),
    "cli.trial.where_gpu": ("{gpus} {gpus:pl:GPU|GPUs}", "{gpus} GPU"),
    "cli.trial.parts": (
        "  train {train} + validation {eval} ({eval_share:pct}) + {checkpoints} checkpoint write(s) {checkpoint} "
        "({size} each at {write_gbs:g} GB/s) + margin {margin} ({margin_share:pct})",
        "  обучение {train} + валидация {eval} ({eval_share:pct}) + запись чекпойнтов ({checkpoints}) {checkpoint} "
        "(по {size} при {write_gbs:g} ГБ/с) + запас {margin} ({margin_share:pct})"),
    "cli.trial.total": ("  total {total} = {hours:n1} {unit}", "  итого {total} = {hours:n1} {unit}"),
    "cli.trial.process_hours": ("process-hours", "процессо-часов"),
    "cli.trial.gpu_hours": ("GPU-hours", "GPU-часов"),
    "cli.trial.cost": ("  cost ${cost:n2} at ${price:g} per GPU-hour", "  стоимость {cost:n2} USD по {price:g} USD "
                       "за GPU-час"),
    "cli.trial.offer": (
        "  offer {offer:raw} ({provider:raw}, {mode:@mode}, ${price:g}/GPU-h, billed {hours:n1} h x {gpus} {gpus:pl:GPU|GPUs}): "
        "${cost:n2}{notes}",
        "  предложение {offer:raw} ({provider:raw}, {mode:@mode}, {price:g} USD/GPU-ч, к оплате {hours:n1} ч × "
        "{gpus} GPU): {cost:n2} USD{notes}"),
    "cli.trial.offer_notes": (" — {notes}", " — {notes}"),
    "cli.trial.note": ("  note: {note}", "  примечание: {note}"),
    "cli.trial.calibration": ("calibration on {device:raw}{gpu}", "калибровка на {device:raw}{gpu}"),
    "cli.trial.calibration_gpu": (" ({gpu_id:raw})", " ({gpu_id:raw})"),
    "cli.trial.cal_allocated": ("  allocated peak: measured {measured}, estimated {estimated} (factor {factor:n3})",
                                "  пик выделенной: замер {measured}, оценка {estimated} (коэффициент {factor:n3})"),
    "cli.trial.cal_reserved": (
        "  reserved peak:  measured {measured}, estimated {estimated} (factor {factor:n3})",
        "  пик зарезервированной: замер {measured}, оценка {estimated} (коэффициент {factor:n3})"),
    "cli.trial.cal_step": ("  step time: measured {measured}, estimated {estimated} (factor {factor:n3})",
                           "  время шага: замер {measured}, оценка {estimated} (коэффициент {factor:n3})"),
    "cli.trial.cal_mfu": ("  MFU: measured {measured_pct:n1}%, estimator's default {estimated_pct:n1}%",
                          "  MFU: замер {measured_pct:n1} %, по умолчанию в оценке {estimated_pct:n1} %"),
    "cli.trial.calibration_saved": ("calibration saved to {path:raw}", "калибровка сохранена в {path:raw}"),
    "cli.trial.calibration_nothing": (
        "calibration: nothing to save (no memory or time factor from this device)",
        "калибровка: сохранять нечего (с этого устройства нет поправок ни памяти, ни времени)"),
    "cli.trial.calibration_skipped": ("calibration: skipped, the run does not fit",
                                      "калибровка: пропущена, запуск не помещается"),
    # -- gpuwork trial: stopped, resumed, not saved (gpuwork.cli.trial) -----------------------------------
    "cli.trial.interrupted": (
        "stopped by {signal:raw} after {done} of {total} steps; checkpoint and record saved in {folder:raw}; go on "
        "with: gpuwork trial --resume {run:raw}",
        "остановлено сигналом {signal:raw} после {done} из {total} шагов; чекпойнт и запись сохранены в "
        "{folder:raw}; продолжить: gpuwork trial --resume {run:raw}"),
    "cli.trial.interrupted_unsaved": (
        "stopped by {signal:raw} after {done} of {total} steps; nothing was saved (no --out), so it cannot be "
        "resumed",
        "остановлено сигналом {signal:raw} после {done} из {total} шагов; ничего не сохранено (нет --out), "
        "продолжить нельзя"),
    "cli.trial.not_saved": (
        "the measurements above were not saved: {error}",
        "измерения выше не сохранены: {error}"),
    "cli.trial.checkpoint_failed": (
        "the checkpoint check failed: {what}",
        "проверка чекпойнта не пройдена: {what}"),
    "cli.trial.resumed": (
        "resumed {run:raw} at step {step}",
        "продолжение запуска {run:raw} с шага {step}"),
    "cli.trial.row.interval": ("interval", "интервал"),
    "cli.trial.interval": (
        "95 %: median in {low} - {high} (+-{half_pct:n1}%, coverage {coverage_pct:n1}%, order statistics); drift "
        "{drift_pct:n1}% per 100 steps",
        "95 %: медиана в пределах {low} – {high} (±{half_pct:n1} %, покрытие {coverage_pct:n1} %, "
        "порядковые статистики); дрейф {drift_pct:n1} % на 100 шагов"),
    "cli.trial.no_interval": (
        "no 95 % interval: {steps} measured {steps:pl:step|steps}, at least 6 needed",
        "95-процентного интервала нет: шагов замера {steps}, нужно не меньше 6"),
    "cli.trial.row.until_stable": ("stability", "сходимость"),
    "cli.trial.stable": (
        "reached: +-{half_pct:n1}% within +-{tolerance_pct:n1}% after {steps} measured {steps:pl:step|steps}",
        "достигнута: ±{half_pct:n1} % в пределах ±{tolerance_pct:n1} % после {steps} "
        "{steps:pl:шага|шагов|шагов} замера"),
    "cli.trial.not_stable": (
        "NOT reached: +-{half} after {steps} measured {steps:pl:step|steps} (cap {max_steps}, tolerance "
        "+-{tolerance_pct:n1}%): the range below is wider than asked",
        "НЕ достигнута: ±{half} после {steps} {steps:pl:шага|шагов|шагов} замера (предел {max_steps}, допуск "
        "±{tolerance_pct:n1} %): диапазон ниже шире запрошенного"),
    "cli.trial.half_pct": ("{value:n1}%", "{value:n1} %"),
    "cli.trial.total_range": (
        "  range at the step time's 95 % interval: {low} - {high}",
        "  диапазон при 95-процентном интервале времени шага: {low} – {high}"),
    "cli.trial.cost_range": (
        "  cost range ${low:n2} - ${high:n2}",
        "  диапазон стоимости {low:n2} – {high:n2} USD"),
    "cli.trial.offer_range": (
        "    at the interval's ends: ${low:n2} - ${high:n2}",
        "    на концах интервала: {low:n2} – {high:n2} USD"),
}
