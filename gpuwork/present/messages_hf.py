"""Catalog entries (code -> (English, Russian)) for measuring the user's own run (``gpuwork.measure.hf``).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: the checkpoint a Trainer saved (``hf.checkpoint.*``), the errors of
the callback and the ``measure`` context manager (``error.hf.*``), and the estimate beside what a run measured
(``gpuwork compare``: ``compare.*``, ``cli.compare.beside_*``).
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
