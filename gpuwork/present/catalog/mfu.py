"""Catalog entries "mfu.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "mfu"

ENTRIES: dict[str, tuple[str, str]] = {
    "mfu.source.default": ("per-operation model", "пооперационная модель"),
    "mfu.source.argument": ("argument", "задано"),
    "mfu.source.calibration": ("calibration", "по замеру"),
    "mfu.argument": ("given by the caller", "задано вручную"),
    "mfu.calibrated": ("measured: {label}; every operation's speed x {scale:n2}",
                       "по замеру: {label}; скорость каждой операции × {scale:n2}"),
    "mfu.a_trial": ("a measured trial", "пробный запуск"),
    "mfu.op_model": (
        "what the per-operation model of the step comes to ({stack:raw} on {gpu}: measured matmul, attention and "
        "memory rates, kernel launches)",
        "к чему приходит пооперационная модель шага ({stack:raw} на {gpu}: измеренные скорости умножения матриц, "
        "внимания и памяти, запуски ядер)"),
}
