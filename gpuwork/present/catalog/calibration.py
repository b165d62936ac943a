"""Catalog entries "calibration.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "calibration"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- calibration (gpuwork.measure.calibration) --------------------------------------------------------------
    "calibration.cpu_memory": (
        "CPU trial: memory is the process RSS (runtime, libraries, allocator cache), not a GPU quantity: no memory "
        "factor derived",
        "запуск на CPU: память — это RSS процесса (среда выполнения, библиотеки, кэш аллокатора), а не величина "
        "GPU: поправка памяти не выводится"),
    "calibration.no_allocator_peaks": ("the record holds no CUDA allocator peaks: no memory factor derived",
                                       "в записи нет пиков аллокатора CUDA: поправка памяти не выводится"),
    "calibration.unknown_gpu": ("'{device:raw}' matches no GPU of data/gpus.csv: no time calibration",
                                "'{device:raw}' не совпадает ни с одним GPU из data/gpus.csv: калибровки времени нет"),
    "calibration.cpu_time": (
        "CPU trial: the time estimator models GPUs of data/gpus.csv only: no time calibration",
        "запуск на CPU: оценка времени моделирует только GPU из data/gpus.csv: калибровки времени нет"),
    "calibration.precision_differs": ("the trial computed in {used:raw}, the plan asks {asked:raw}",
                                      "запуск считал в {used:raw}, а в плане — {asked:raw}"),
    "calibration.no_timing": ("gpuwork.estimate.timing is not available: no time calibration",
                              "gpuwork.estimate.timing недоступен: калибровки времени нет"),
}
