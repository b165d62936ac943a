"""The trial's gradient clipping, taken from the plan: what norm it clips at, and how a record says so.

``TrainPlan.grad_clip`` on: ``clip_grad_norm_`` before each update at ``MAX_GRAD_NORM`` (transformers' Trainer
default) unless the caller gives another norm; off: the trial never calls it, as the run it stands for never
does, so its steps carry no gradient norm (``StepMeasurement.grad_norm`` None). A norm given for a plan that
never clips is refused (both named): timing a clipping pass would contradict the plan (docs/grad_clip.md).
Plain Python: no torch.
"""

from __future__ import annotations

import math
from typing import Any

from gpuwork.measure.errors import TrialError
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan

MAX_GRAD_NORM = 1.0  # gradient clipping as in transformers' Trainer default (TrainingArguments.max_grad_norm)


def clip_norm(plan: TrainPlan, given: float | None) -> float | None:
    """The norm the trial clips at (None: no ``clip_grad_norm_`` call): ``given`` when set, else the plan's.
    TrialError for a norm that is not a positive finite number, or one given for a plan that never clips."""
    if given is None:
        return MAX_GRAD_NORM if plan.grad_clip else None
    if isinstance(given, bool) or not isinstance(given, (int, float)) or not 0 < given < math.inf:
        raise TrialError(msg("error.trial.max_grad_norm", value=repr(given)))
    if not plan.grad_clip:
        raise TrialError(msg("error.trial.max_grad_norm_unclipped", value=repr(given)))
    return float(given)


def clipping_note(record: Any) -> Msg:
    """What a record says about clipping: the norm it clipped at and the last measured gradient norm, or that
    no norm was measured (a run that never clips; a record of a user's run whose loop logged none)."""
    norms = [m.grad_norm for m in record.steps if m.grad_norm is not None and math.isfinite(m.grad_norm)]
    limit = record.protocol.max_grad_norm
    last = msg("trial.clip.last", value=norms[-1]) if norms else msg("trial.clip.no_norm")
    if limit is None:
        return msg("trial.clip.off") if not norms else msg("trial.clip.not_clipped", last=last)
    return msg("trial.clip.on", norm=float(limit), last=last)


__all__ = ["MAX_GRAD_NORM", "clip_norm", "clipping_note"]
