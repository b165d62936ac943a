"""Catalog entries "fit.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "fit"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- fitting and offers (gpuwork.estimate.offers) ---------------------------------------------------------------
    "fit.as_planned": (
        "fits as planned: {need_bytes:gib} of {usable_bytes:gib}",
        "помещается как запланировано: {need_bytes:gib} из {usable_bytes:gib}"),
    "fit.with_gpus": (
        "fits with {gpus} {gpus:pl:GPU|GPUs} and {sharding:raw}: {need_bytes:gib} of {usable_bytes:gib} per GPU",
        "помещается на {gpus} GPU с {sharding:raw}: {need_bytes:gib} из {usable_bytes:gib} на GPU"),
    "fit.does_not_fit": (
        "does not fit: needs {need_bytes:gib} per GPU with {gpus} {gpus:pl:GPU|GPUs} and {sharding:raw}; "
        "{usable_bytes:gib} usable",
        "не помещается: нужно {need_bytes:gib} на GPU при {gpus} GPU и {sharding:raw}; доступно "
        "{usable_bytes:gib}"),
}
