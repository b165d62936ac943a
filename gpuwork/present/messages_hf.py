"""Catalog entries (code -> (English, Russian)) for measuring the user's own run (``gpuwork.measure.hf``).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: the checkpoint a Trainer saved (``hf.checkpoint.*``) and the errors of
the callback and the ``measure`` context manager (``error.hf.*``).
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
