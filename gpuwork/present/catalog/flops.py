"""Catalog entries "flops.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "flops"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- time (gpuwork.estimate.timing) ------------------------------------------------------------------------------
    "flops.convention": ("{method} + attention 12·L·H·Q·T{recompute}", "{method} + внимание 12·L·H·Q·T{recompute}"),
    "flops.full": ("6N (full update)", "6N (полное обновление)"),
    "flops.adapters": ("4N + 6 x adapter params (frozen base)", "4N + 6 × параметры адаптеров (база заморожена)"),
    "flops.freeze": ("2N + 2 x (trained blocks + head) + 2 x trainable",
                     "2N + 2 × (обучаемые блоки + голова) + 2 × обучаемые"),
    "flops.freeze_input_grads": ("2N + 2N (input gradients through every block) + 2 x trainable",
                                 "2N + 2N (градиенты по входу через все блоки) + 2 × обучаемые"),
    "flops.recompute": (" + recompute (gradient checkpointing)", " + пересчёт активаций"),
    "flops.recompute_ops": (" + recompute of the ops torchtitan's op-level policy does not keep",
                            " + пересчёт операций, выходы которых не хранит пооперационная политика torchtitan"),
    "flops.recompute_matmuls": (" + recompute of the ops besides matmuls and attention (every matmul output kept)",
                                " + пересчёт операций, кроме матричных умножений и внимания (их выходы хранятся)"),
}
