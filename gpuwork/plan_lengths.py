"""A plan's sequence lengths (``TrainPlan.lengths``): "fixed", "packed", "padded", or a histogram of lengths, read from
the CLI's "LEN:WEIGHT,..." text, a plan file's mapping or pairs, and written back as that text."""

from __future__ import annotations

import math
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.message import msg

LENGTH_KINDS = ("fixed", "packed", "padded")


def is_packed(lengths: Any) -> bool:
    """Whether a lengths value (the plan's, or a form's or a caller's text before coercion) says packed rows."""
    return isinstance(lengths, str) and lengths.strip().lower() == "packed"


MAX_LENGTH_BINS = 10_000


def coerce_lengths(value: Any, seq_len: int) -> str | tuple[tuple[int, float], ...]:
    """"fixed", "packed", "padded", or a histogram as ((length, weight), ...) sorted by length, repeated lengths summed.

    A histogram comes as "LEN:WEIGHT,LEN:WEIGHT" (the CLI), {length: weight} or [[length, weight], ...] (a plan
    file); weights are counts or shares, only their ratios count."""
    if isinstance(value, str):
        key = value.strip().lower()
        if key in LENGTH_KINDS:
            return key
        pairs: list[Any] = []
        for part in key.replace(";", ",").split(","):
            if not part.strip():
                continue
            length, sep, weight = part.replace("=", ":").partition(":")
            if not sep:
                raise PlanError("lengths", msg("error.plan.lengths", value=repr(value)))
            pairs.append((length.strip(), weight.strip()))
    elif isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        pairs = [tuple(p) for p in value]
    else:
        raise PlanError("lengths", msg("error.plan.lengths", value=repr(value)))
    if not pairs or len(pairs) > MAX_LENGTH_BINS:
        raise PlanError("lengths", msg("error.plan.lengths", value=repr(value)))
    bins: dict[int, float] = {}
    for length, weight in pairs:
        n, w = _number_or_none(length, integer=True), _number_or_none(weight)
        if n is None or n < 1 or w is None or w <= 0:
            raise PlanError("lengths", msg("error.plan.lengths_bin", length=str(length), weight=str(weight)))
        n = min(int(n), seq_len)  # longer sequences are truncated to seq_len (the tokenizer's max_length)
        bins[n] = bins.get(n, 0.0) + float(w)
    return tuple(sorted(bins.items()))


def lengths_text(lengths: str | tuple[tuple[int, float], ...]) -> str:
    """``TrainPlan.lengths`` as the text the CLI and forms take back: "fixed", "packed", "padded" or "128:40,512:6.5"."""
    if isinstance(lengths, str):
        return lengths
    return ",".join(f"{n}:{int(w) if float(w).is_integer() else repr(float(w))}" for n, w in lengths)


def _number_or_none(value: Any, integer: bool = False) -> float | None:
    """A finite number from a number or its text (a whole one when ``integer``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if integer and float(value) != int(value):
        return None
    return value


__all__ = ["LENGTH_KINDS", "MAX_LENGTH_BINS", "coerce_lengths", "is_packed", "lengths_text"]
