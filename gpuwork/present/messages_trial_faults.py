"""Catalog entries (code -> (English, Russian)) for a trial's faults: interruption, resume, failed writes and
the checkpoint check.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: files that cannot be written (``error.trial.disk_full`` ...), resuming
(``error.trial.resume_*``), the checkpoint check's findings (``checkpoint.*``) and what ``gpuwork trial`` says
when a signal stops it or a write fails (``cli.trial.*``, ``cli.help.trial.*``).
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    "error.trial.record_not_object": (
        "a trial record is a JSON object with the fields gpuwork trial writes; this file holds a JSON {kind:raw}",
        "запись пробного запуска — это JSON-объект с полями, которые пишет gpuwork trial; в этом файле JSON {kind:raw}"),
    # -- writing the record and checkpoints (gpuwork.measure.records) ----------------------------------------
    "error.trial.disk_full": (
        "no space left on the disk of {folder:raw} while writing {file:raw} ({detail:raw}): free space there or "
        "choose another --out folder",
        "на диске с папкой {folder:raw} нет места, файл {file:raw} не записан ({detail:raw}): освободите место "
        "или выберите другую папку --out"),
    "error.trial.out_read_only": (
        "{folder:raw} is not writable ({detail:raw}): make it writable (chmod u+w) or choose another --out folder",
        "в папку {folder:raw} нельзя писать ({detail:raw}): разрешите запись (chmod u+w) или выберите другую "
        "папку --out"),
    "error.trial.write_failed": (
        "cannot write {file:raw} in {folder:raw} ({detail:raw}): check that folder or choose another --out folder",
        "не удалось записать {file:raw} в папку {folder:raw} ({detail:raw}): проверьте эту папку или выберите "
        "другую папку --out"),
    "error.trial.checkpoint_every": (
        "checkpoint_every={value:raw}: use a whole number of steps >= 0 (0 saves a checkpoint only when a signal "
        "stops the trial)",
        "checkpoint_every={value:raw}: укажите целое число шагов ≥ 0 (при 0 чекпойнт сохраняется, только когда "
        "запуск остановлен сигналом)"),
    "error.trial.rng_kind": (
        "the numpy random generator {kind:raw} cannot be saved in a checkpoint (only MT19937 can)",
        "генератор случайных чисел numpy {kind:raw} нельзя сохранить в чекпойнте (можно только MT19937)"),

    # -- resuming an interrupted trial (gpuwork.measure.trial.resume_point) ----------------------------------
    "error.trial.resume_not_found": (
        "no trial record '{run:raw}' (looked in {folder:raw}): give the record's path, or its run id with --out",
        "запись пробного запуска «{run:raw}» не найдена (искали в {folder:raw}): укажите путь к записи или её "
        "идентификатор вместе с --out"),
    "error.trial.resume_complete": (
        "trial {run:raw} ran to the end: there is nothing to resume",
        "пробный запуск {run:raw} завершён: продолжать нечего"),
    "error.trial.resume_ramp": (
        "--ramp starts new probes and cannot go on with trial {run:raw}: drop --ramp or drop --resume",
        "--ramp запускает новые пробы и не может продолжить пробный запуск {run:raw}: уберите --ramp или "
        "--resume"),
    "error.trial.resume_nproc": (
        "trial {run:raw} ran as {processes} {processes:pl:process|processes}, not {nproc}: each process's data "
        "depends on how many there are, so it resumes with the same number (drop --nproc or give --nproc "
        "{processes})",
        "пробный запуск {run:raw} шёл в {processes} {processes:pl:процессе|процессах|процессах}, а не в {nproc}: "
        "данные каждого процесса зависят от их числа, поэтому продолжить можно только с тем же числом (уберите "
        "--nproc или укажите --nproc {processes})"),
    "error.trial.resume_no_checkpoint": (
        "trial {run:raw} left no checkpoint in {folder:raw}: it stopped before saving one (run with "
        "--checkpoint-every N to save one every N steps)",
        "пробный запуск {run:raw} не оставил чекпойнта в папке {folder:raw}: он остановился раньше, чем сохранил "
        "его (запускайте с --checkpoint-every N, чтобы сохранять чекпойнт каждые N шагов)"),
    "error.trial.resume_unreadable": (
        "cannot resume from {folder:raw}: {what}",
        "продолжить с чекпойнта {folder:raw} нельзя: {what}"),
    "error.trial.resume_mismatch": (
        "checkpoint {folder:raw} holds step {step:raw} but its record expects {expected:raw}: the record and the "
        "checkpoint do not belong together",
        "в чекпойнте {folder:raw} сохранён шаг {step:raw}, а запись ожидает {expected:raw}: запись и чекпойнт "
        "относятся к разным запускам"),

    # -- the honest checkpoint check (gpuwork.measure.checkpoint) ------------------------------------------
    "checkpoint.not_verified_because": ("checkpoint NOT verified: {parts}", "чекпойнт НЕ подтверждён: {parts}"),
    "checkpoint.file_missing": ("{file:raw} is missing", "нет файла {file:raw}"),
    "checkpoint.file_unreadable": (
        "{file:raw} cannot be read back ({kind:raw}: {detail:raw})",
        "файл {file:raw} не читается ({kind:raw}: {detail:raw})"),
    "checkpoint.state_differs": (
        "{count} {count:pl:entry|entries} of the state held in memory before the save differ after the restore "
        "(first: {first:raw})",
        "после восстановления отличаются от состояния в памяти до сохранения: {count} "
        "{count:pl:запись|записи|записей} (первые: {first:raw})"),

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
    "cli.help.trial.resume": (
        "go on with an interrupted trial (a run id or its record's path) from its last checkpoint, with the same "
        "data order and seeds",
        "продолжить прерванный пробный запуск (идентификатор или путь к записи) с последнего чекпойнта, с тем же "
        "порядком данных и теми же начальными значениями генераторов случайных чисел"),
    "cli.help.trial.checkpoint_every": (
        "also save a resumable checkpoint in --out every N steps (default 0: only when SIGINT or SIGTERM stops "
        "the trial)",
        "сохранять чекпойнт для продолжения в --out каждые N шагов (по умолчанию 0: только когда запуск "
        "остановлен сигналом SIGINT или SIGTERM)"),

    # -- the step time's confidence interval and --until-stable (gpuwork.measure.stability) -------------------
    "error.trial.tolerance": (
        "tolerance {value:raw}: give a share of the median step time between 0 and 1, e.g. {default:g} for +-3 %",
        "допуск {value:raw}: укажите долю медианного времени шага от 0 до 1, например {default:g} для ±3 %"),
    "error.trial.max_steps": (
        "max_steps {value:raw}: give a whole number of measured steps, at least the {steps} of --steps",
        "max_steps {value:raw}: укажите целое число измеряемых шагов, не меньше {steps} из --steps"),
    "error.trial.until_stable_with": (
        "--until-stable measures one plan: drop {flag:raw}, or drop --until-stable and give --steps",
        "--until-stable измеряет один план: уберите {flag:raw} или уберите --until-stable и задайте --steps"),
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
    "extrapolation.no_interval": (
        "{steps} measured {steps:pl:step|steps} give no 95 % interval of the step time (6 needed): the total is "
        "one figure, not a range",
        "по {steps} {steps:pl:шагу|шагам|шагам} замера 95-процентный интервал времени шага не строится (нужно 6): "
        "итог — одно число, а не диапазон"),
    "extrapolation.drift": (
        "the step time drifted {drift_pct:n1}% per 100 steps over the {steps} measured: the range assumes it "
        "stays level",
        "время шага менялось на {drift_pct:n1} % за 100 шагов на {steps} {steps:pl:шаге|шагах|шагах} "
        "замера: диапазон считает его постоянным"),
    "cli.compare.interval": ("step time 95 % interval", "интервал времени шага 95 %"),
    "cli.compare.interval_value": ("{low} - {high} (+-{half_pct:n1}%)", "{low} – {high} (±{half_pct:n1} %)"),
    "cli.compare.drift": ("drift per 100 steps", "дрейф на 100 шагов"),
    "cli.compare.drift_value": ("{drift_pct:n1}%", "{drift_pct:n1} %"),
    "cli.compare.steps": ("measured steps", "шагов замера"),
    "cli.compare.stable": ("until stable", "до стабильности"),
    "cli.compare.cost_range": ("cost per 1M tokens, 95 %", "стоимость 1 млн токенов, 95 %"),
    "cli.compare.usd_cost_range": ("${low} - ${high}", "{low} – {high} USD"),
    "cli.help.trial.until_stable": (
        "instead of a fixed --steps: run until the 95-percent confidence interval of the median step time is "
        "within --tolerance of it (--steps is then the minimum, --max-steps the cap)",
        "вместо фиксированного --steps: измерять, пока 95-процентный интервал медианного времени шага не "
        "уложится в --tolerance (--steps тогда минимум, --max-steps предел)"),
    "cli.help.trial.tolerance": (
        "with --until-stable: the interval's half-width as a share of the median (default 0.03: within 3 percent)",
        "с --until-stable: полуширина интервала как доля медианы (по умолчанию 0.03: в пределах 3 процентов)"),
    "cli.help.trial.max_steps": (
        "with --until-stable: the most measured steps (default 200)",
        "с --until-stable: наибольшее число измеряемых шагов (по умолчанию 200)"),
}
