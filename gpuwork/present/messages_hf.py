"""Catalog entries (code -> (English, Russian)) for measuring the user's own run (``gpuwork.measure.hf``).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: the checkpoint a Trainer saved (``hf.checkpoint.*``), the errors of
the callback and the ``measure`` context manager (``error.hf.*``), the estimate beside what a run measured
(``gpuwork compare``: ``compare.*``, ``cli.compare.beside_*``; the trial panel: ``ui.beside.*``), and the live
curves of a measured run (``ui.live.*``).
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the checkpoint the user's Trainer saved (gpuwork.measure.hf) --------------------------------------------
    "hf.checkpoint.saved_only": (
        "checkpoint save timed; not restored (GpuworkCallback(verify_restore=True) restores and compares it)",
        "сохранение чекпойнта замерено; восстановление не проверялось (GpuworkCallback(verify_restore=True) "
        "восстанавливает и сравнивает его)"),
    "hf.checkpoint.restored": (
        "restored {tensors} {tensors:pl:tensor|tensors} into a fresh model exactly; training was not resumed on it",
        "в новую модель точно восстановлено {tensors} {tensors:pl:тензор|тензора|тензоров}; обучение на ней не "
        "продолжалось"),

    # -- the estimate beside what a run measured (gpuwork compare, gpuwork.measure.calibration.beside) ---------
    "compare.cpu_no_estimate": (
        "CPU trial: there is no GPU estimate to compare (memory is the process RSS, and the time estimator models "
        "the GPUs of data/gpus.csv)",
        "запуск на CPU: сравнивать не с чем, оценки для GPU нет (память — это RSS процесса, а оценка времени "
        "моделирует GPU из data/gpus.csv)"),
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
    "cli.help.compare.save_calibration": (
        "save each record's calibration for its GPU and software stack (~/.config/gpuwork/calibration.json, or "
        "$GPUWORK_CALIBRATION); a CPU record has nothing to save",
        "сохранить калибровку каждой записи для её GPU и программного стека (~/.config/gpuwork/calibration.json "
        "или $GPUWORK_CALIBRATION); у записи с CPU сохранять нечего"),

    # -- live curves of a measured run, and the estimate beside a record in the trial panel (gpuwork.ui.trial) --
    "ui.live.waiting": ("Waiting for the first step of the run…", "Ждём первый шаг запуска…"),
    "ui.live.step": ("Step {step}: loss {loss:n3}, {time:n3} s, {tps:int} tokens/s",
                     "Шаг {step}: loss {loss:n3}, {time:n3} с, {tps:int} токенов/с"),
    "ui.live.step_warmup": ("Step {step} (warm-up): loss {loss:n3}, {time:n3} s, {tps:int} tokens/s",
                            "Шаг {step} (прогрев): loss {loss:n3}, {time:n3} с, {tps:int} токенов/с"),
    "ui.trial_loaded": ("Record {label:raw}: {n} measured {n:pl:step|steps} on {device:raw}.",
                        "Запись {label:raw}: {n} {n:pl:шаг|шага|шагов} замера на {device:raw}."),
    "ui.beside.title": (
        "The estimate for exactly this configuration (stack {stack:raw}, GPU {gpu:raw}) beside what was measured",
        "Оценка ровно для этой конфигурации (стек {stack:raw}, GPU {gpu:raw}) рядом с замером"),
    "ui.beside.title_no_gpu": (
        "The estimate for exactly this configuration (stack {stack:raw}) beside what was measured",
        "Оценка ровно для этой конфигурации (стек {stack:raw}) рядом с замером"),
    "ui.beside.quantity": ("Quantity", "Величина"),
    "ui.beside.measured": ("Measured", "Замер"),
    "ui.beside.estimated": ("Estimated", "Оценка"),
    "ui.beside.error": ("Error (measured / estimated − 1)", "Ошибка (замер / оценка − 1)"),
    "ui.beside.error_value": ("{sign:raw}{pct:n1}%", "{sign:raw}{pct:n1} %"),
    "ui.beside.allocated": ("allocated peak (torch.cuda.max_memory_allocated)",
                            "пик выделенной памяти (torch.cuda.max_memory_allocated)"),
    "ui.beside.reserved": ("reserved peak (torch.cuda.max_memory_reserved)",
                           "пик зарезервированной памяти (torch.cuda.max_memory_reserved)"),
    "ui.beside.device": ("device total (what nvidia-smi shows)", "всего на устройстве (как показывает nvidia-smi)"),
    "ui.beside.step": ("step time (median)", "время шага (медиана)"),
    "ui.beside.tokens": ("tokens/s", "токенов/с"),
    # the report's text for 02_trial's last markdown cell (gpuwork.ui.report replaces the notebook's prose)
    "report.md.02_trial.4": (
        "## Your own Trainer run, live\nThe same record from your own `Trainer` / TRL `SFTTrainer` run, with its "
        "curves drawn while it trains: `trainer.add_callback(GpuworkCallback(out=\"trials\", steps=20, "
        "on_measure=curves.update))` with `curves = gpuwork.hf.LiveCurves()` displayed in a notebook.",
        "## Ваш собственный запуск Trainer, вживую\nТа же запись из вашего запуска `Trainer` / TRL `SFTTrainer`, а "
        "его кривые рисуются во время обучения: `trainer.add_callback(GpuworkCallback(out=\"trials\", steps=20, "
        "on_measure=curves.update))`, где `curves = gpuwork.hf.LiveCurves()` показан в блокноте."),

    # -- errors ------------------------------------------------------------------------------------------------
    "error.hf.plan_type": (
        "plan must be a gpuwork TrainPlan or None (None infers it from the run), not {kind:raw}",
        "plan должен быть TrainPlan из gpuwork или None (тогда он выводится из запуска), а не {kind:raw}"),
    "error.hf.no_model": (
        "the Trainer passed no model to GpuworkCallback: add the callback to a Trainer built with a model",
        "Trainer не передал модель в GpuworkCallback: добавьте обратный вызов к Trainer, созданному с моделью"),
    "error.hf.no_config": (
        "{model_class:raw} has no Hugging Face config to infer the plan from: pass plan=TrainPlan(...)",
        "у {model_class:raw} нет конфигурации Hugging Face, из которой можно вывести план: передайте "
        "plan=TrainPlan(...)"),
    "error.hf.no_plan": (
        "measure() needs plan=TrainPlan(...) or model=... to know what ran",
        "measure() нужен plan=TrainPlan(...) или model=..., чтобы знать, что запускалось"),
    "error.hf.plan_invalid": (
        "the plan inferred from the run is not valid ({detail:raw}): pass plan=TrainPlan(...)",
        "план, выведенный из запуска, некорректен ({detail:raw}): передайте plan=TrainPlan(...)"),
}
