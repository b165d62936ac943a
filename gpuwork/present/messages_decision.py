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
    "decision.sharding": (" with {sharding:raw}", " с {sharding:raw}"),
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
    "decision.why_offer": (
        "cheapest fitting offer: {offer_id:raw}, {run_s:dur}, {cost_usd:usd}",
        "самое дешёвое подходящее предложение: {offer_id:raw}, {run_s:dur}, {cost_usd:usd}"),
}
