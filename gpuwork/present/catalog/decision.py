"""Catalog entries "decision.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "decision"

ENTRIES: dict[str, tuple[str, str]] = {
    "decision.answer": (
        "Answer: {gpus} x {gpu}{where}{sharding}, offer “{offer}”, profile {profile_id:raw}{changes}: "
        "{run_s:dur}, {cost_usd:usd}",
        "Ответ: {gpus} × {gpu}{where}{sharding}, предложение «{offer}», профиль {profile_id:raw}{changes}: "
        "{run_s:dur}, {cost_usd:usd}"),
    "decision.nodes": (" on {nodes} nodes", " на {nodes} {nodes:pl:узле|узлах|узлах}"),
    "decision.sharding": (" with {sharding}", " с {sharding}"),
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
    "decision.why_fit_own": (
        "the plan as written does not fit your cards; the change that makes it fit and runs fastest: {changes:list}",
        "план в текущем виде не помещается на ваши карты; изменение, с которым помещается и работает быстрее всего: "
        "{changes:list}"),
    "decision.own_suggestion": (
        "{changes:list}: {memory_bytes:gib} per GPU on {gpus} of your cards, {run_s:dur}",
        "{changes:list}: {memory_bytes:gib} на GPU, ваших карт: {gpus}, {run_s:dur}"),
    "decision.why_offer": (
        "cheapest fitting offer: “{offer}”, {run_s:dur}, {cost_usd:usd}",
        "самое дешёвое подходящее предложение: «{offer}», {run_s:dur}, {cost_usd:usd}"),
}
