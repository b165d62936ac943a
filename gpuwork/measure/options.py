"""How a trial runs besides its plan: one frozen ``TrialOptions`` in place of a long keyword list.

``iter_trial(plan, options)`` and ``run_trial(plan, options)`` take it; keywords given to them change a copy
(``iter_trial(plan, steps=5)`` is ``iter_trial(plan, TrialOptions(steps=5))``). ``checked()`` refuses values
a trial cannot run with (TrialError in the catalog's words) and fills in the measured-step cap;
``check_until_stable`` is that rule alone, for the callback and the CLI.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.measure.errors import TrialError
from gpuwork.measure.record import StepMeasurement
from gpuwork.measure.recorder import RSS_SAMPLE_INTERVAL_S
from gpuwork.measure.runtime import ModelFactory, Parallel
from gpuwork.measure.stability import DEFAULT_TOLERANCE
from gpuwork.message import msg
from gpuwork.units import is_whole

DEFAULT_MAX_STEPS = 200  # until_stable's cap: minutes on a GPU, and more steps rarely tighten a drifting run


@dataclass(frozen=True)
class ResumePoint:
    """Where an interrupted trial goes on from (``trial.resume_point``; ``TrialOptions.resume``)."""

    run_id: str  # the interrupted trial's run id
    record_path: str
    checkpoint: str  # its checkpoint folder
    step: int  # optimizer steps done at the checkpoint
    micro_batches: int  # micro-batches taken from the loader by then (the data position)
    steps: tuple[StepMeasurement, ...]  # the measurements of those steps, from the record
    data_changed: tuple[str, ...] = ()  # data files whose SHA-256 differs from the record, allowed by the caller


@dataclass(frozen=True)
class TrialOptions:
    """Everything a trial takes besides the plan; each field as ``gpuwork.measure.trial.iter_trial`` documents it."""

    steps: int = 10  # measured optimizer steps (after warm-up); with until_stable, the minimum
    warmup: int = 2  # steps run first and left out of the summary
    seed: int = 0
    device: Any = None  # "cpu", "cuda", "cuda:1", a torch.device, or None (CUDA when available)
    data: Any = None  # a TextData, .txt/.jsonl file(s) or folder, or None (the shipped corpus)
    tokenizer: str | Path | None = None
    out_dir: str | Path | None = None  # where the record and checkpoint go; None writes nothing
    memory_cap_bytes: int | None = None  # simulated device size
    model_factory: ModelFactory | None = None
    clock: Callable[[], float] = time.perf_counter
    lr: float | None = None
    loader_workers: int = 0
    checkpoint: bool = True  # the save -> restore -> verify -> resume round-trip
    max_grad_norm: float | None = None  # None: the plan's (clipping.MAX_GRAD_NORM when it clips, else no call)
    memory_sample_interval_s: float = RSS_SAMPLE_INTERVAL_S
    parallel: Parallel | None = None  # a multi-process run's hooks (gpuwork.measure.distributed)
    resume: ResumePoint | None = None
    checkpoint_every: int = 0
    handle_signals: bool | None = None
    after_checkpoint_save: Callable[[Path], Any] | None = None
    until_stable: float | None = None
    max_steps: int | None = None  # with until_stable: the most measured steps (None: DEFAULT_MAX_STEPS)

    def replace(self, **changes: Any) -> TrialOptions:
        """A copy with ``changes`` (TypeError for a name that is not an option)."""
        return dataclasses.replace(self, **changes) if changes else self

    def checked(self) -> TrialOptions:
        """These options with ``max_steps`` filled in (``check_until_stable``); TrialError for a value a trial
        cannot run with."""
        steps, warmup, cap, every = self.steps, self.warmup, self.memory_cap_bytes, self.checkpoint_every
        if not is_whole(steps, 1):
            raise TrialError(msg("error.trial.steps", steps=repr(steps)))
        if not is_whole(warmup, 0):
            raise TrialError(msg("error.trial.warmup", warmup=repr(warmup)))
        if cap is not None and cap <= 0:
            raise TrialError(msg("error.trial.memory_cap", cap=repr(cap)))
        if not is_whole(every, 0):
            raise TrialError(msg("error.trial.checkpoint_every", value=repr(every)))
        return dataclasses.replace(self, max_steps=check_until_stable(self.until_stable, self.max_steps, steps))

    @property
    def last_step(self) -> int:
        """The last optimizer step the trial may run, warm-up included (on checked options)."""
        if self.until_stable is None:
            return self.warmup + self.steps
        if self.max_steps is None:  # unchecked options: ``checked()`` fills the cap in
            raise TypeError("last_step needs checked options (max_steps is None)")
        return self.warmup + self.max_steps


@dataclass(frozen=True)
class OwnRunOptions:
    """How gpuwork measures a user's own run (``gpuwork.measure.hf``: ``GpuworkCallback`` and ``measure``, which
    document each field and take them as keywords too)."""

    out: str | Path | None = None  # folder for the record JSON; None writes nothing
    steps: int | None = None  # measured steps after warm-up, then the run stops; None measures the whole run
    warmup: int = 2  # steps left out of the summary (``measure`` defaults to 1)
    verify_restore: bool = False  # restore the first saved checkpoint into a fresh model and compare every tensor
    checkpoint: bool = True  # the callback, in a trial: save a checkpoint at its last step
    evaluate: bool | None = None  # the callback, in a trial: evaluate at its last step (None: as eval_strategy says)
    on_measure: Callable[[StepMeasurement], Any] | None = None  # called with each step's measurement
    memory_sample_interval_s: float = RSS_SAMPLE_INTERVAL_S
    until_stable: float | None = None
    max_steps: int | None = None

    def replace(self, **changes: Any) -> OwnRunOptions:
        """A copy with ``changes`` (TypeError for a name that is not an option)."""
        return dataclasses.replace(self, **changes) if changes else self


def check_until_stable(until_stable: float | None, max_steps: int | None, steps: int) -> int:
    """The measured-step cap for ``until_stable`` (``steps`` when it is None); TrialError for bad values."""
    if until_stable is None:
        return steps
    if isinstance(until_stable, bool) or not isinstance(until_stable, (int, float)) or not 0 < until_stable < 1:
        raise TrialError(msg("error.trial.tolerance", value=repr(until_stable), default=DEFAULT_TOLERANCE))
    cap = DEFAULT_MAX_STEPS if max_steps is None else max_steps
    if not is_whole(cap, steps):
        raise TrialError(msg("error.trial.max_steps", value=repr(cap), steps=steps))
    return max(cap, steps)


__all__ = ["DEFAULT_MAX_STEPS", "OwnRunOptions", "ResumePoint", "TrialOptions", "check_until_stable"]
