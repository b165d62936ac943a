"""The one registry of config formats: each format module's FORMAT, in the order formats are told apart."""

from __future__ import annotations

from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts.configs import accelerate, axolotl, deepspeed, hf, llamafactory, peft
from gpuwork.facts.configs.base import Format
from gpuwork.message import msg

# Keys that only one format uses: the first format whose markers appear wins (most specific first).
REGISTRY: tuple[Format, ...] = (peft.FORMAT, accelerate.FORMAT, deepspeed.FORMAT, llamafactory.FORMAT,
                                axolotl.FORMAT, hf.FORMAT)
FORMAT_BY_NAME: dict[str, Format] = {f.name: f for f in REGISTRY}
FORMATS = ("hf", "axolotl", "llamafactory", "deepspeed", "accelerate", "peft")


def detect_format(data: dict[str, Any], file: str = "") -> str:
    """Which tool wrote ``data`` ("hf", "axolotl", "llamafactory", "deepspeed", "accelerate"), from its keys.

    A DeepSpeed-only key set (``fp16``/``bf16`` as ``{"enabled": ...}`` objects) counts as DeepSpeed.
    Raises PlanError naming the file when no format's keys are there.
    """
    keys = set(data)
    # TrainingArguments and axolotl hold bf16/fp16 as booleans; DeepSpeed as {"enabled": ...} sections
    if any(isinstance(data.get(k), dict) for k in ("bf16", "fp16", "zero_optimization")):
        return "deepspeed"
    for fmt in REGISTRY:
        if keys & fmt.markers:
            return fmt.name
    sample = ", ".join(sorted(keys)[:6]) or "none"
    raise PlanError("from", msg("error.config.unrecognised", file=file, keys=sample))
