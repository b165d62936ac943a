"""Catalog entries "checkpoint.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "checkpoint"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the checkpoint round-trip (gpuwork.measure.checkpoint) -------------------------------------------------
    "checkpoint.restored_exactly": (
        "restored {tensors} {tensors:pl:tensor|tensors} exactly",
        "восстановлено точно: {tensors} {tensors:pl:тензор|тензора|тензоров}"),
    "checkpoint.restored_fingerprints": (
        "restored {tensors} {tensors:pl:tensor|tensors} (fingerprints equal) from a distributed checkpoint",
        "из распределённого чекпойнта восстановлено {tensors} {tensors:pl:тензор|тензора|тензоров} (отпечатки "
        "совпадают)"),
    "checkpoint.verified_exact": (
        "{what}; the next {steps} losses match the uninterrupted run bit-exact",
        "{what}; следующие {steps} {steps:pl:значение|значения|значений} loss побитово совпадают с запуском без "
        "перерыва"),
    "checkpoint.verified_within": (
        "{what}; the next {steps} losses match the uninterrupted run within {rtol:g} relative",
        "{what}; следующие {steps} {steps:pl:значение|значения|значений} loss совпадают с запуском без перерыва с "
        "относительной точностью {rtol:g}"),
    "checkpoint.entries_differ": (
        "{count} saved entries differ after restore (first: {first:raw})",
        "после восстановления отличаются сохранённые записи: {count} (первые: {first:raw})"),
    "checkpoint.losses_differ": (
        "resumed losses {resumed:raw} differ from uninterrupted {uninterrupted:raw} by {diff:sci}",
        "значения loss после возобновления {resumed:raw} отличаются от запуска без перерыва {uninterrupted:raw} на "
        "{diff:sci}"),
    "checkpoint.not_verified": ("{parts}", "{parts}"),
    "checkpoint.on_rank": ("rank {rank}: {what}", "процесс {rank}: {what}"),
    "checkpoint.all_ranks": ("all {ranks} ranks: {what}", "все {ranks} {ranks:pl:процесс|процесса|процессов}: {what}"),
    "checkpoint.rank_skipped": ("a rank ran no checkpoint round-trip",
                                "один из процессов не проверил сохранение и восстановление чекпойнта"),
    # -- the honest checkpoint check (gpuwork.measure.checkpoint) ------------------------------------------
    "checkpoint.not_verified_because": ("checkpoint NOT verified: {parts}", "чекпойнт НЕ подтверждён: {parts}"),
    "checkpoint.file_missing": ("{file:raw} is missing", "нет файла {file:raw}"),
    "checkpoint.file_unreadable": (
        "{file:raw} cannot be read back ({kind:raw}: {detail:raw})",
        "файл {file:raw} не читается ({kind:raw}: {detail:raw})"),
    "checkpoint.state_differs": (
        "{count} {count:pl:entry|entries} of the state held in memory before the save differ after the restore "
        "(first: {first:raw})",
        "после восстановления отличаются от состояния в памяти до сохранения: {count} "
        "{count:pl:запись|записи|записей} (первые: {first:raw})"),
}
