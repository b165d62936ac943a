"""Catalog entries "compare.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "compare"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the estimate beside what a run measured (gpuwork compare, gpuwork.measure.calibration.beside) ---------
    "compare.cpu_no_estimate": (
        "CPU trial: there is no GPU estimate to compare (memory is the process RSS, and the time estimator models "
        "the GPUs of data/gpus.csv)",
        "запуск на CPU: сравнивать не с чем, оценки для GPU нет (память — это RSS процесса, а оценка времени "
        "моделирует GPU из data/gpus.csv)"),
}
