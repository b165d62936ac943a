"""Catalog entries (code -> (English, Russian)) for the one decision (``gpuwork.estimate.decision``): the answer
every surface shows, why it was chosen, and the "my hardware" answer.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    "decision.answer": (
        "Answer: {gpus} x {gpu}{where}{sharding}, {mode:@mode} ({offer_id:raw}, {provider:raw}), "
        "profile {profile_id:raw}{changes}: {run_s:dur}, {cost_usd:usd}",
        "Ответ: {gpus} × {gpu}{where}{sharding}, {mode:@mode} ({offer_id:raw}, {provider:raw}), "
        "профиль {profile_id:raw}{changes}: {run_s:dur}, {cost_usd:usd}"),
    "decision.nodes": (" on {nodes} nodes", " на {nodes} {nodes:pl:узле|узлах|узлах}"),
    "decision.sharding": (" with {sharding}", " с {sharding}"),
    "request.suggested.sharding_state": (", {sharding} sharding", ", шардирование {sharding}"),
    "decision.with": ("; changes: {changes:list}", "; с изменениями: {changes:list}"),
    "decision.none": (
        "Answer: no offer fits the run, with or without a standard change ({need_bytes:gib} on one GPU).",
        "Ответ: запуск не помещается ни на одно предложение, ни как есть, ни со стандартными изменениями "
        "({need_bytes:gib} на одном GPU)."),
    "decision.why_change": (
        "the change ({changes:list}) makes the whole run cheapest",
        "изменение ({changes:list}) делает весь запуск самым дешёвым"),
    "decision.why_fit": (
        "the plan as written fits no offer; the cheapest change that makes it fit: {changes:list}",
        "план в текущем виде не помещается ни на одно предложение; самое дешёвое изменение, с которым "
        "помещается: {changes:list}"),
    "decision.answer_own": (
        "Answer on your cards: {gpus} x {gpu}{sharding}, {memory_bytes:gib} of {usable_bytes:gib} per GPU{changes}: "
        "{run_s:dur}; no rental cost",
        "Ответ на ваших картах: {gpus} × {gpu}{sharding}, {memory_bytes:gib} из {usable_bytes:gib} на GPU{changes}: "
        "{run_s:dur}; без затрат на аренду"),
    "decision.none_own": (
        "Answer: the run does not fit your cards, with or without a standard change ({need_bytes:gib} on one GPU).",
        "Ответ: запуск не помещается на ваши карты ни как есть, ни со стандартными изменениями "
        "({need_bytes:gib} на одном GPU)."),
    "decision.why_own": (
        "the fastest setup that fits your cards: {run_s:dur}",
        "самая быстрая конфигурация, которая помещается на ваши карты: {run_s:dur}"),
    "error.decision.have_count": (
        "the number of your cards must be a whole number of at least 1, not {value:raw}",
        "число ваших карт должно быть целым, не меньше 1, а не {value:raw}"),
    "decision.why_fit_own": (
        "the plan as written does not fit your cards; the change that makes it fit and runs fastest: {changes:list}",
        "план в текущем виде не помещается на ваши карты; изменение, с которым помещается и работает быстрее всего: "
        "{changes:list}"),
    "cli.help.have": (
        "the cards you own, e.g. 1xrtx4090 or 2x\"A100 80GB SXM\": fit the run to them (changes for fit and speed), "
        "time only, no rental cost",
        "ваши собственные карты, например 1xrtx4090 или 2x\"A100 80GB SXM\": подогнать запуск под них (изменения "
        "ради памяти и скорости), только время, без затрат на аренду"),
    "error.args.have": (
        "not a count and a card: {value:raw} (write it as 1xrtx4090)",
        "это не число и карта: {value:raw} (пишите как 1xrtx4090)"),
    "decision.own_suggestion": (
        "{changes:list}: {memory_bytes:gib} per GPU on {gpus} of your cards, {run_s:dur}",
        "{changes:list}: {memory_bytes:gib} на GPU, ваших карт: {gpus}, {run_s:dur}"),
    "ui.have": ("My cards (N×GPU)", "Свои карты (N×GPU)"),
    "ui.have_hint": (
        "the cards you own, e.g. 1xrtx4090: every tab fits the run to them; time only, no rental cost. Empty: rent",
        "ваши собственные карты, например 1xrtx4090: все вкладки подгоняют запуск под них; только время, без затрат "
        "на аренду. Пусто — аренда"),
    "advice.with_same_card": ("{line}; {same}", "{line}; {same}"),
    "advice.same_card": (
        "the change alone, on the same {gpus} x {gpu}: {memory_sign:raw}{memory_change:pct} memory per GPU{time}",
        "само изменение на тех же {gpus} × {gpu}: память на GPU {memory_sign:raw}{memory_change:pct}{time}"),
    "advice.same_card.time": (", {time_sign:raw}{time_change:pct} time", ", время {time_sign:raw}{time_change:pct}"),
    "advice.change.one_node": (
        "inside one node: {gpus} GPUs with {sharding:raw}, the same tokens per step",
        "в одном узле: {gpus} GPU с {sharding:raw}, столько же токенов на шаг"),
    "decision.why_offer": (
        "cheapest fitting offer: {offer_id:raw}, {run_s:dur}, {cost_usd:usd}",
        "самое дешёвое подходящее предложение: {offer_id:raw}, {run_s:dur}, {cost_usd:usd}"),
}
