"""Catalog entries (code -> (English, Russian)) for the app's advisor and fit-matrix tabs (``gpuwork.ui.advice``)
and for what every tab shows while the form's plan is invalid (``gpuwork.ui.app``).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. The suggestions' own words are the advisor's entries (``advice.*``,
``messages_advisor``); the fit matrix's column titles are the CLI's (``cli.fit.col.*``).
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    # -- tabs -------------------------------------------------------------------------------------------------------
    "ui.tab_advice": ("Advice", "Советы"),
    "ui.tab_fit": ("All GPUs", "Все GPU"),
    # -- one state: every tab says the plan is invalid instead of showing another plan's results ---------------
    "ui.invalid_tab": (
        "No results: the plan on the Sizing tab is invalid ({error:raw}). Fix it there; every tab follows.",
        "Результатов нет: план на вкладке «Расчёт» неверен ({error:raw}). Исправьте его там — все вкладки "
        "обновятся."),
    # -- the advisor --------------------------------------------------------------------------------------------
    "ui.h_advice": ("What to change", "Что изменить"),
    "ui.advice_intro": (
        "The standard memory savers (gradient checkpointing, a smaller micro-batch with more accumulation, an 8-bit "
        "optimizer, QLoRA, sharding or offload on several GPUs, a shorter sequence), tried one at a time and in "
        "pairs, each priced on its cheapest fitting offer with the Offers tab's filters. Apply sets the form to the "
        "changed plan; the offers and the request follow.",
        "Стандартные способы сэкономить память (пересчёт активаций, меньший микробатч с накоплением градиента, "
        "8-битный оптимизатор, QLoRA, шардирование или выгрузка на нескольких GPU, более короткая "
        "последовательность) по одному и парами; каждый оценён на самом дешёвом подходящем предложении с "
        "фильтрами вкладки «Предложения». «Применить» переносит изменённый план в форму; предложения и заявка "
        "следуют за ним."),
    "ui.apply": ("Apply", "Применить"),
    "ui.apply_hint": ("Set the form to this plan", "Перенести этот план в форму"),
    "ui.applied": ("Applied: {changes:list}.", "Применено: {changes:list}."),
    # -- the fit matrix -------------------------------------------------------------------------------------------
    "ui.h_fit": ("The plan on every GPU of the catalog, 1, 2, 4 and 8 of each",
                 "План на каждом GPU каталога: по 1, 2, 4 и 8 штук"),
    "ui.fit_intro": (
        "Memory per GPU against the usable memory (the card's total less the safety margin); headroom is what is "
        "left; the largest micro-batch (at this sequence) and the longest sequence (at this micro-batch) that fit; "
        "time and cost of the whole run on the cheapest offer with that many GPUs, else at the catalog's typical "
        "price.",
        "Память на GPU против доступной (полный объём карты минус запас); запас — что остаётся; наибольший "
        "микробатч (при этой последовательности) и самая длинная последовательность (при этом микробатче), которые "
        "помещаются; время и стоимость всего запуска на самом дешёвом предложении с таким числом GPU, иначе по "
        "типичной цене каталога."),
    "ui.fit_col_offer": ("offer", "предложение"),
    "ui.fit_col_gpus": ("GPUs", "кол-во"),
    "ui.fit_rows": ("{fits} of {cells} combinations fit.", "Помещается: {fits} из {cells} сочетаний."),
}
