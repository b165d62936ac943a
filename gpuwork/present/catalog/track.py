"""Catalog entries "track.*": the held-out track record beside a time estimate (docs/track_record.md)."""

from __future__ import annotations

PREFIX = "track"

_RUNS_RU = "{cases:pl:опубликованном запуске|опубликованных запусках|опубликованных запусках}"
_SOURCES_RU = "{sources:int} {sources:pl:источник|источника|источников}"

ENTRIES: dict[str, tuple[str, str]] = {
    "track.line": (
        "Track record: on {cases:int} published runs of this kind ({regime:@track.regime}; {sources:int} sources), "
        "measured step times were {p10:n2}–{p90:n2}× this estimate (10th–90th percentile, each source weighing the "
        "same, median {p50:n2}×, of predictions frozen before the figures were read).",
        "История точности: на {cases:int} " + _RUNS_RU + " такого рода ({regime:@track.regime}; " + _SOURCES_RU
        + ") измеренное время шага составило {p10:n2}–{p90:n2}× от этой оценки (10-й–90-й процентиль, каждый "
        "источник с равным весом, медиана {p50:n2}×, по прогнозам, зафиксированным до того, как были прочитаны "
        "опубликованные цифры)."),
    "track.line_all": (
        "Track record: on {cases:int} published runs of all kinds ({sources:int} sources), measured step times were "
        "{p10:n2}–{p90:n2}× this estimate (10th–90th percentile, each source weighing the same, median {p50:n2}×, "
        "of predictions frozen before the figures were read).",
        "История точности: на {cases:int} " + _RUNS_RU + " всех видов (" + _SOURCES_RU + ") измеренное время "
        "шага составило {p10:n2}–{p90:n2}× от этой оценки (10-й–90-й процентиль, каждый источник с равным весом, "
        "медиана {p50:n2}×, по прогнозам, зафиксированным до того, как были прочитаны опубликованные цифры)."),
    "track.range": (
        "At those ratios: step {step_lo:n2}–{step_hi:n2} s; whole run {run_lo:dur}–{run_hi:dur} (its time without "
        "the {margin:pct} margin, times the ratios).",
        "При этих отношениях: шаг {step_lo:n2}–{step_hi:n2} с; весь запуск {run_lo:dur}–{run_hi:dur} (его время без "
        "запаса {margin:pct}, умноженное на отношения)."),
    "track.request": (
        "At the 90th percentile of the track record ({p90:n2}× the estimated step time, {cases:int} published runs "
        "of this kind: {regime:@track.regime}) the run takes {run_s:dur}, a rental of {days:int} days{cost}.",
        "По 90-му процентилю истории точности ({p90:n2}× от оценки времени шага; на {cases:int} " + _RUNS_RU
        + " такого рода: {regime:@track.regime}) запуск займёт {run_s:dur}, аренда на {days:int} "
        "{days:pl:день|дня|дней}{cost}."),
    "track.request.cost": (
        "; at the example's price per GPU-hour about {cost_usd:usd}{verdict}",
        "; по цене примера за GPU-час около {cost_usd:usd}{verdict}"),
    "track.regime.all": ("all runs", "все запуски"),
    "track.regime.multi_node": ("several nodes", "несколько узлов"),
    "track.regime.consumer": ("consumer card", "потребительская карта"),
    "track.regime.short_micro_batch": ("<= 1,024 tokens per micro-batch", "<= 1 024 токенов на микробатч"),
    "track.regime.qlora": ("QLoRA", "QLoRA"),
    "track.regime.tuned": ("tuned kernels: Unsloth, compiled, frameworks",
                           "оптимизированные ядра: Unsloth, компиляция, фреймворки"),
    "track.regime.eager": ("eager PyTorch: HF Trainer, plain loops",
                           "PyTorch в eager-режиме: HF Trainer, простые циклы обучения"),
}
