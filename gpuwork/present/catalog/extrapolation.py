"""Catalog entries "extrapolation.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "extrapolation"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the whole run from a trial (gpuwork.measure.extrapolation) ----------------------------------------------
    "extrapolation.cpu": ("measured on a CPU: the total is this CPU's time, not a GPU's",
                          "замерено на CPU: итог — время этого CPU, а не GPU"),
    "extrapolation.linear_scaling": (
        "measured on {measured} {measured:pl:process|processes}, extrapolated to {gpus} {gpus:pl:GPU|GPUs} assuming "
        "linear scaling (communication between them not measured)",
        "замерено на {measured} {measured:pl:процессе|процессах|процессах}, пересчитано на {gpus} GPU в "
        "предположении линейного масштабирования (обмен между ними не замерялся)"),
    "extrapolation.checkpoint_estimated": (
        "the trial ran no checkpoint round-trip: checkpoint size estimated (gpuwork.estimate.disk)",
        "пробный запуск не сохранял чекпойнт: его размер оценён (gpuwork.estimate.disk)"),
    "extrapolation.unknown_gpu": ("'{device:raw}' matches no GPU of data/gpus.csv: no offers priced",
                                  "'{device:raw}' не совпадает ни с одним GPU из data/gpus.csv: предложения не оценены"),
    "extrapolation.offers_left_out": (
        "{count} {count:pl:offer|offers} left out: a node has fewer than {gpus} GPUs and no inter-node network",
        "не учтено предложений: {count} — в узле меньше {gpus} GPU, а сети между узлами нет"),
    "extrapolation.offer.interruptible": ("interruptible: preemption rework not included",
                                          "прерываемое: повторная работа после прерываний не учтена"),
    "extrapolation.offer.whole_node": (
        "the node's {billed_gpus} GPUs are rented whole; the run uses {gpus}",
        "узел с {billed_gpus} GPU арендуется целиком; запуск использует {gpus}"),
    "extrapolation.no_interval": (
        "{steps} measured {steps:pl:step|steps} give no 95 % interval of the step time (6 needed): the total is "
        "one figure, not a range",
        "по {steps} {steps:pl:шагу|шагам|шагам} замера 95-процентный интервал времени шага не строится (нужно 6): "
        "итог — одно число, а не диапазон"),
    "extrapolation.drift": (
        "the step time drifted {drift_pct:n1}% per 100 steps over the {steps} measured: the range assumes it "
        "stays level",
        "время шага менялось на {drift_pct:n1} % за 100 шагов на {steps} {steps:pl:шаге|шагах|шагах} "
        "замера: диапазон считает его постоянным"),
}
