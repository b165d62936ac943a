"""Catalog entries "offer.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "offer"

ENTRIES: dict[str, tuple[str, str]] = {
    # an offer as people read it (tables, the answer line, the request's example); its catalog id stays in JSON
    "offer.name": ("{provider:raw}: {per_node:int} × {gpu:raw} per node, {mode:@mode}",
                   "{provider:raw}: {per_node:int} × {gpu:raw} на узел, {mode:@mode}"),
    # what each sharding keeps per trained parameter, as the advisor and the answer say it (offers tables, JSON)
    "offer.col.state_bytes": ("Bytes per trained parameter", "Байт на обучаемый параметр"),
    "offer.col.state_bytes_short": ("B/param", "Б/парам"),
    "offer.state_bytes_note": (
        "Bytes per trained parameter: weights, gradients and optimizer states before sharding, with fp32 master "
        "weights where the sharding keeps them (ZeRO in bf16); – where it is not one figure (adapters on a frozen "
        "base, an optimizer with factored states).",
        "Байт на обучаемый параметр: веса, градиенты и состояния оптимизатора до шардирования, с fp32-копией весов, "
        "где шардирование её хранит (ZeRO в bf16); – где это не одно число (адаптеры на замороженной модели, "
        "оптимизатор с факторизованными состояниями)."),
    "offer.no_network": (
        "needs {gpus} GPUs; a node has {per_node} and the offer has no inter-node network",
        "нужно {gpus} GPU; в узле их {per_node}, а сети между узлами у предложения нет"),
    "offer.whole_node_used": (
        "the node's {billed_gpus} GPUs are rented whole, so all are used ({needed_gpus} would be enough for memory)",
        "узел с {billed_gpus} GPU арендуется целиком, поэтому заняты все ({needed_gpus} хватило бы по памяти)"),
    "offer.whole_node_idle": (
        "the node has {per_node} GPUs and is rented whole; the plan uses {used_gpus}",
        "в узле {per_node} GPU, он арендуется целиком; план использует {used_gpus}"),
    "offer.interruptible": (
        "interruptible: ~{preemptions:n1} expected preemptions at {rate_per_hour:g}/h cost {lost_s:dur} of rework; "
        "checkpoint every ~{recommended_s:dur} (~{recommended_steps} {recommended_steps:pl:step|steps}; now every "
        "{interval_s:dur})",
        "прерываемое: около {preemptions:n1} прерываний при {rate_per_hour:g} в час — это {lost_s:dur} "
        "повторной работы; сохраняйте чекпойнт каждые ~{recommended_s:dur} (~{recommended_steps} "
        "{recommended_steps:pl:шаг|шага|шагов}; сейчас каждые {interval_s:dur})"),
    "offer.preemptions_outpace_checkpoints": (
        "preemptions come faster than checkpoints save work: checkpoint more often",
        "прерывания случаются чаще, чем чекпойнты сохраняют работу: сохраняйте чекпойнты чаще"),
    "offer.reserved_minimum": (
        "reserved for {min_rental_s:dur}; the run needs {run_s:dur}",
        "резервирование минимум на {min_rental_s:dur}; обучению нужно {run_s:dur}"),
}
