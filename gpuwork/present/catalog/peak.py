"""Catalog entries "peak.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "peak"

ENTRIES: dict[str, tuple[str, str]] = {
    "peak.bf16": ("BF16 tensor, dense, FP32 accumulate", "BF16 на тензорных ядрах, плотные, накопление в FP32"),
    "peak.fp16": ("FP16 tensor, dense, FP32 accumulate", "FP16 на тензорных ядрах, плотные, накопление в FP32"),
    "peak.fp32": ("FP32 (non-tensor; TF32 off, the PyTorch default for matmuls)",
                  "FP32 без тензорных ядер (TF32 выключен, как по умолчанию в PyTorch)"),
    "peak.tf32": ("TF32 tensor, dense (fp32 matmuls with allow_tf32)",
                  "TF32 на тензорных ядрах, плотные (умножения матриц fp32 при allow_tf32)"),
    "peak.fp8": ("FP8 tensor, dense (linear layers in FP8)",
                 "FP8 на тензорных ядрах, плотные (линейные слои в FP8)"),
}
