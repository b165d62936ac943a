"""The measured trial: a real fine-tune of the plan's model on real text, measured step by step.

The provider's advice is to prove a configuration before renting for a month: fixed steps, batch,
input size and environment; step time, peak memory and data-loading speed after warm-up; a
checkpoint saved *and* restored. ``run_trial(plan)`` does exactly that on whatever device is
present (CUDA if available, else the CPU with a small model built from a config) and returns a
``TrialRecord``; ``iter_trial(plan)`` is the same run as a generator of ``StepMeasurement``s
(warm-up steps included, flagged) whose return value is the record, for live charts.

What a trial does, in order:

1. Resolves the model (``gpuwork.facts.model.load_config``) and builds it with random weights via
   ``AutoModelFor*.from_config`` (or ``from_pretrained`` when the plan's model is a local folder
   with weights and the method is not ``scratch``); applies the method: ``full``/``scratch`` train
   everything, ``freeze`` the last ``trainable_layers`` blocks + final norm + untied head, ``lora``
   adds peft adapters, ``qlora`` saves the model to a temporary folder and reloads it in 4 bits
   with bitsandbytes (the recipe in shared/reference/stack_facts.md).
2. Tokenizes and packs text (``gpuwork.measure.textdata``: the shipped corpus unless ``data`` is given).
3. Runs ``warmup`` + ``steps`` optimizer steps of ``grad_accum`` micro-batches each, timing every
   step with ``clock``, the wait for data, and memory (CUDA allocator peaks; process RSS on CPU).
4. Saves a checkpoint (weights or adapters, optimizer, scheduler, RNG, step), runs RESUME_STEPS
   more steps on the original model, frees it, restores the checkpoint into a freshly built model
   and optimizer, checks every saved tensor, runs the same steps and compares the losses.
5. Summarizes the measured steps (warm-up excluded) and writes the record as JSON when
   ``out_dir`` is given. Nothing else is written except temporary folders that are removed.

Substitutions are explicit: 16-bit precisions run in fp32 on CPU (bf16 is 35-40x slower on CPUs
without bf16 hardware, stack_facts.md), "flash" attention falls back to SDPA without CUDA or the
flash-attn package, paged optimizers run unpaged on CPU; ``TrialProtocol.substitutions`` lists each.

Out of memory — a real ``torch.OutOfMemoryError`` on CUDA (or the CPU allocator's failure), or the
simulated one raised when the measured memory passes ``memory_cap_bytes`` — ends the steps, frees
the model and gives a record with ``fits=False`` and the memory reached; the caller's process lives.

Example:
    >>> record = run_trial(TrainPlan(model="tiny-llama", method="lora", seq_len=64, batch_size=2),
    ...                    steps=5, warmup=1)
    >>> record.fits, record.checkpoint.verified
    (True, True)

Several processes (one per GPU, DDP or FSDP2) run the same code under torchrun: see
``gpuwork.measure.distributed``, which plugs its ``Parallel`` hooks into ``iter_trial``. ``extrapolate``
turns a record into the whole run's time and cost.

Limitations: ``iter_trial`` alone is one process on one device; CPU memory is the process RSS
sampled every few milliseconds and at phase boundaries, so a peak shorter
than the sampling interval can be missed and memory the allocator keeps is counted; the checkpoint
round-trip holds the original and the restored model one after the other, never both at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import gc
import json
import math
import os
import platform
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuwork.errors import GpuworkError, ModelError
from gpuwork.plan import ALL_LINEAR, Attention, Method, Optimizer, Precision, Task, TrainPlan

if TYPE_CHECKING:
    import torch

    from gpuwork.measure.textdata import TextData

SCHEMA_VERSION = 1  # bump when a record field changes meaning
DATA_WAIT_THRESHOLD = 0.05  # data wait above this share of step time: "the device waits for data"
RESUME_STEPS = 2  # steps run after the checkpoint on both models; the 2nd depends on the optimizer state
GPU_LOSS_RTOL = 1e-3  # GPU kernels (atomics in backward, split-K GEMMs) are not bit-reproducible
CPU_LOSS_RTOL = 0.0  # the same ops on the same CPU threads give the same bits: compared exactly
RSS_SAMPLE_INTERVAL_S = 0.02  # CPU memory sampler period: 5 ms cost ~5% of a 100 ms step (benchmarks/trial_overhead.py)
MAX_GRAD_NORM = 1.0  # gradient clipping as in transformers' Trainer default
# Learning rates: common fine-tuning defaults (transformers/peft examples); the trial measures speed,
# the rate only has to keep losses finite and moving. Lion wants ~3-10x less than AdamW (Chen et al. 2023).
DEFAULT_LR_FULL = 3e-4
DEFAULT_LR_ADAPTERS = 1e-3
LR_FACTOR = {Optimizer.SGD: 10.0, Optimizer.LION: 0.3}
_HEAD_MODULES = ("lm_head", "cls", "classifier", "score", "qa_outputs")  # as gpuwork.facts.model counts heads

ModelFactory = Callable[[Any, TrainPlan], Any]  # (transformers config, plan) -> nn.Module on CPU, fp32


class TrialError(GpuworkError, RuntimeError):
    """A trial cannot be set up as asked (bad arguments, unusable model or data)."""


# -- what a trial produces ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StepMeasurement:
    """One optimizer step as measured. Times in seconds, memory in bytes.

    Memory: on CUDA the allocator's peaks during the step (``torch.cuda.max_memory_allocated`` /
    ``max_memory_reserved``, reset at each step start); on CPU the process resident set size (RSS),
    its highest sample during the step and its value after the step. ``trial_memory_bytes`` is what
    ``memory_cap_bytes`` is compared with: CUDA peak allocated, or CPU RSS peak, minus what was in
    use before the trial built anything.
    """

    step: int  # 1-based optimizer step, warm-up included
    is_warmup: bool
    loss: float  # mean loss over the step's micro-batches
    step_time_s: float  # wall time of the step: data wait + forward + backward + optimizer
    data_wait_s: float  # time spent waiting for the step's batches (and copying them to the device)
    tokens: int  # tokens processed in the step: micro-batch x seq_len x grad_accum
    tokens_per_s: float
    grad_norm: float  # total L2 norm of the trainable gradients before clipping
    learning_rate: float
    trial_memory_bytes: int
    cuda_peak_allocated_bytes: int | None = None
    cuda_peak_reserved_bytes: int | None = None
    rss_peak_bytes: int | None = None
    rss_after_step_bytes: int | None = None


@dataclass(frozen=True)
class TrialProtocol:
    """The fixed conditions of the trial: what was run, on what data, with which substitutions."""

    model: str
    method: str
    task: str  # the resolved task (never "auto")
    steps: int  # measured steps
    warmup: int  # steps run first and excluded from the summary
    micro_batch: int
    grad_accum: int
    seq_len: int
    tokens_per_step: int
    seed: int
    learning_rate: float
    lr_schedule: str
    max_grad_norm: float | None
    precision_requested: str
    precision_used: str  # what the trial computed in (see substitutions)
    attention_requested: str
    attention_used: str  # the model's attn_implementation
    optimizer: str  # the plan's choice
    optimizer_class: str  # the class that ran
    grad_checkpointing: bool
    params_total: int
    params_trainable: int
    weights: str  # "random" or the folder the weights came from
    dataset: dict[str, Any]  # name, size_bytes, sha256, files, tokens, rows, repeats
    tokenizer: dict[str, Any]  # kind, source, vocab_size, special ids
    loader_workers: int
    memory_cap_bytes: int | None
    substitutions: tuple[str, ...]  # every place the trial did not run exactly what the plan says
    plan: dict[str, Any]  # TrainPlan.as_dict()


@dataclass(frozen=True)
class TrialEnvironment:
    """Software versions and hardware the trial ran on."""

    python: str
    platform: str
    torch: str
    transformers: str | None
    peft: str | None
    bitsandbytes: str | None
    accelerate: str | None
    tokenizers: str | None
    device: str  # "cpu" or "cuda:N"
    device_name: str  # GPU name, or the CPU model
    device_total_bytes: int  # GPU memory (torch.cuda.mem_get_info), or the machine's RAM
    cpu_model: str
    cpu_logical_cores: int
    torch_threads: int
    ram_total_bytes: int
    cuda_version: str | None = None
    cudnn_version: int | None = None
    driver_version: str | None = None
    gpu_compute_capability: str | None = None
    gpu_count: int = 0


@dataclass(frozen=True)
class TrialSummary:
    """Measured steps only (warm-up excluded). Times in seconds, memory in bytes."""

    measured_steps: int
    median_step_time_s: float
    p90_step_time_s: float
    mean_step_time_s: float
    min_step_time_s: float
    tokens_per_step: int
    tokens_per_s: float  # tokens_per_step / median step time
    mean_data_wait_s: float
    data_wait_fraction: float  # mean data wait / mean step time
    data_bound: bool  # data_wait_fraction > DATA_WAIT_THRESHOLD
    verdict: str
    first_loss: float
    last_loss: float
    losses_finite: bool
    peak_trial_memory_bytes: int
    cuda_peak_allocated_bytes: int | None
    cuda_peak_reserved_bytes: int | None
    rss_peak_bytes: int | None
    warmup_mean_step_time_s: float | None  # how slow the first steps were, for the record


@dataclass(frozen=True)
class CheckpointResult:
    """Save -> restore into a fresh model -> verify -> resume, compared with the uninterrupted run."""

    path: str | None  # None when it lived in a temporary folder that is gone
    files: dict[str, int]  # file name -> bytes
    bytes_on_disk: int
    save_s: float
    rebuild_s: float  # building the fresh model and optimizer (not part of restore_s)
    restore_s: float  # reading the files into the fresh model, optimizer, scheduler, RNG
    tensors_checked: int
    tensors_equal: bool
    uninterrupted_losses: tuple[float, ...]
    resumed_losses: tuple[float, ...]
    max_abs_loss_diff: float
    loss_rtol: float  # 0 on CPU (bit-exact), GPU_LOSS_RTOL on CUDA
    verified: bool  # tensors equal and losses within loss_rtol
    message: str


@dataclass(frozen=True)
class TrialRecord:
    """Everything a trial measured; JSON round-trips with ``to_json`` / ``from_json``."""

    protocol: TrialProtocol
    environment: TrialEnvironment
    summary: TrialSummary | None  # None when no measured step completed
    steps: tuple[StepMeasurement, ...]  # warm-up included (is_warmup=True)
    checkpoint: CheckpointResult | None
    fits: bool
    error: str | None  # the out-of-memory message when fits is False
    peak_trial_memory_bytes: int  # highest over all steps (and at the failure when fits is False)
    created_utc: str
    duration_s: float  # the whole trial: build, steps, checkpoint round-trip
    notes: tuple[str, ...] = ()  # library warnings seen while building
    saved_to: str | None = None  # the JSON file written in out_dir
    schema_version: int = SCHEMA_VERSION
    parallel: ParallelInfo | None = None  # set when the trial ran as several processes (torchrun)
    ranks: tuple[RankResult, ...] = ()  # one entry per process of a multi-process trial

    @property
    def world_size(self) -> int:
        """Processes (devices) the trial ran on."""
        return self.parallel.world_size if self.parallel is not None else 1

    @property
    def measured(self) -> tuple[StepMeasurement, ...]:
        return tuple(s for s in self.steps if not s.is_warmup)

    @property
    def plan(self) -> TrainPlan:
        return TrainPlan.from_dict(self.protocol.plan)

    @property
    def label(self) -> str:
        p = self.protocol
        label = f"{p.model} {p.method} b{p.micro_batch}x{p.seq_len}"
        if self.parallel is not None:
            label += f" {self.parallel.world_size}x{self.parallel.strategy}"
        return label

    def as_dict(self) -> dict[str, Any]:
        return _jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialRecord:
        if data.get("schema_version") != SCHEMA_VERSION:
            raise TrialError(f"trial record schema {data.get('schema_version')} is not {SCHEMA_VERSION}: "
                             "re-run the trial with this gpuwork version")
        data = dict(data)
        data["protocol"] = _build(TrialProtocol, data["protocol"])
        data["environment"] = _build(TrialEnvironment, data["environment"])
        data["summary"] = _build(TrialSummary, data["summary"]) if data.get("summary") else None
        data["steps"] = tuple(_build(StepMeasurement, s) for s in data["steps"])
        data["checkpoint"] = _build(CheckpointResult, data["checkpoint"]) if data.get("checkpoint") else None
        data["notes"] = tuple(data.get("notes", ()))
        data["parallel"] = _build(ParallelInfo, data["parallel"]) if data.get("parallel") else None
        data["ranks"] = tuple(_build(RankResult, r) for r in data.get("ranks") or ())
        return _build(cls, data)

    def to_json(self, path: str | Path | None = None) -> str:
        """The record as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.as_dict(), indent=1, allow_nan=True) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> TrialRecord:
        """Read a record from a JSON file (or from JSON text)."""
        text = str(source)
        if not text.lstrip().startswith("{"):
            text = Path(source).read_text()
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True)
class ParallelInfo:
    """How a multi-process trial was run (``gpuwork.measure.distributed``)."""

    world_size: int  # processes, one device each
    backend: str  # "nccl" (CUDA) or "gloo" (CPU)
    strategy: str  # "ddp" (DistributedDataParallel) or "fsdp2" (torch.distributed.fsdp.fully_shard)
    sharding_requested: str  # the plan's sharding
    wrapping: str  # what was wrapped, e.g. "fully_shard on each of 4 decoder blocks + the root"
    reshard_after_forward: bool | None  # FSDP2 only: True = ZeRO-3-like, False = ZeRO-2-like
    launcher: str  # the torchrun command line


@dataclass(frozen=True)
class RankResult:
    """What one process of a multi-process trial measured. Times in seconds, memory in bytes."""

    rank: int
    device: str
    device_name: str
    losses: tuple[float, ...]  # this rank's own loss per step (its own data shard), warm-up included
    step_times_s: tuple[float, ...]  # per step, warm-up included
    data_wait_s: tuple[float, ...]
    tokens_per_step: int  # this rank's tokens per optimizer step
    median_step_time_s: float | None  # measured steps only
    tokens_per_s: float | None  # this rank's tokens / its median step time
    peak_trial_memory_bytes: int  # see StepMeasurement.trial_memory_bytes
    cuda_peak_allocated_bytes: int | None
    cuda_peak_reserved_bytes: int | None
    rss_peak_bytes: int | None
    param_bytes: int  # parameters held by this rank (its shard under FSDP), after wrapping
    trainable_param_bytes: int  # the trainable part of param_bytes
    optimizer_state_bytes: int  # optimizer state tensors held by this rank after the measured steps
    params_sha256: str  # SHA-256 of the parameters' fingerprints after the measured steps (DDP: all equal)
    fits: bool
    error: str | None
    checkpoint_verified: bool | None


def _build(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    for f in dataclasses.fields(cls):
        if f.name in values and isinstance(values[f.name], list) and "tuple" in str(f.type):
            values[f.name] = tuple(values[f.name])
    return cls(**values)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


# -- pure summaries ------------------------------------------------------------------------------------


def summarize(steps: Sequence[StepMeasurement], device_kind: str = "GPU") -> TrialSummary | None:
    """Summary of the measured (non-warm-up) steps; None when there are none. Pure."""
    measured = [s for s in steps if not s.is_warmup]
    if not measured:
        return None
    times = sorted(s.step_time_s for s in measured)
    median = statistics.median(times)
    mean_time = statistics.fmean(times)
    wait = statistics.fmean(s.data_wait_s for s in measured)
    fraction = wait / mean_time if mean_time > 0 else 0.0
    data_bound = fraction > DATA_WAIT_THRESHOLD
    if data_bound:
        verdict = (f"the {device_kind} waits for data: {fraction:.0%} of step time is data wait (more than "
                   f"{DATA_WAIT_THRESHOLD:.0%}): add loader workers or pre-tokenize")
    else:
        verdict = f"data loading keeps up: {fraction:.1%} of step time is data wait"
    warm = [s.step_time_s for s in steps if s.is_warmup]
    tokens = measured[0].tokens

    def peak(name: str) -> int | None:
        values = [getattr(s, name) for s in measured if getattr(s, name) is not None]
        return max(values) if values else None

    return TrialSummary(
        measured_steps=len(measured),
        median_step_time_s=median,
        p90_step_time_s=_percentile(times, 0.9),
        mean_step_time_s=mean_time,
        min_step_time_s=times[0],
        tokens_per_step=tokens,
        tokens_per_s=tokens / median if median > 0 else math.inf,
        mean_data_wait_s=wait,
        data_wait_fraction=fraction,
        data_bound=data_bound,
        verdict=verdict,
        first_loss=measured[0].loss,
        last_loss=measured[-1].loss,
        losses_finite=all(math.isfinite(s.loss) for s in measured),
        peak_trial_memory_bytes=max(s.trial_memory_bytes for s in measured),
        cuda_peak_allocated_bytes=peak("cuda_peak_allocated_bytes"),
        cuda_peak_reserved_bytes=peak("cuda_peak_reserved_bytes"),
        rss_peak_bytes=peak("rss_peak_bytes"),
        warmup_mean_step_time_s=statistics.fmean(warm) if warm else None,
    )


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default method) of sorted values."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def compare(records: Sequence[TrialRecord], price_per_hour: float | Sequence[float | None] | None = None
            ) -> list[dict[str, Any]]:
    """Rows for a side-by-side table of trials (one dict per record, same keys in each).

    Args:
        records: trial records.
        price_per_hour: a rental price per GPU-hour (one for all, or one per record, None to skip);
            gives ``cost_per_1m_tokens`` = price x GPUs / 3600 x seconds per 1M tokens at the measured
            speed (GPUs = the trial's processes; tokens/s of a multi-process trial is all of them).
    """
    if price_per_hour is None or isinstance(price_per_hour, (int, float)):
        prices = [price_per_hour] * len(records)
    else:
        prices = list(price_per_hour)
        if len(prices) != len(records):
            raise TrialError(f"price_per_hour has {len(prices)} prices for {len(records)} records: give one "
                             "price, or one per record")
    rows = []
    for record, price in zip(records, prices, strict=True):
        p, s = record.protocol, record.summary
        tokens_per_s = s.tokens_per_s if s else None
        cost = None
        if price is not None and tokens_per_s:
            cost = price * record.world_size / 3600.0 * (1e6 / tokens_per_s)
        rows.append({
            "trial": record.label,
            "model": p.model,
            "method": p.method,
            "precision": p.precision_used,
            "optimizer": p.optimizer,
            "micro_batch": p.micro_batch,
            "seq_len": p.seq_len,
            "grad_accum": p.grad_accum,
            "device": record.environment.device_name,
            "gpus": record.world_size,
            "fits": record.fits,
            "median_step_time_s": s.median_step_time_s if s else None,
            "p90_step_time_s": s.p90_step_time_s if s else None,
            "tokens_per_s": tokens_per_s,
            "peak_memory_bytes": record.peak_trial_memory_bytes,
            "data_wait_fraction": s.data_wait_fraction if s else None,
            "checkpoint_verified": record.checkpoint.verified if record.checkpoint else None,
            "price_per_hour": price,
            "cost_per_1m_tokens": cost,
        })
    return rows


# -- extrapolation: from the measured steps to the whole run --------------------------------------------------

# Margin on the extrapolated total for what a short trial does not see: restarts after a failure,
# slower steps late in a run (longer documents, thermal throttling, a noisy neighbour), stragglers
# among several GPUs. The same 10 % as gpuwork.estimate.timing.TIME_MARGIN, so a measured total and an
# estimated total are comparable.
TRIAL_TIME_MARGIN = 0.10
# Checkpoint write speed to the rented disk when the caller gives none: network block volumes give
# 0.2-1 GB/s, local NVMe 2-3 GB/s; 0.5 GB/s is the conservative middle (= gpuwork.estimate.timing.DISK_WRITE_BYTES_S).
CHECKPOINT_WRITE_BYTES_S = 0.5e9


@dataclass(frozen=True)
class OfferCost:
    """The extrapolated run priced at one catalog offer (``gpuwork.facts.catalog.load_offers``)."""

    offer_id: str
    provider: str
    gpu_id: str
    mode: str  # on-demand | reserved | interruptible
    region: str
    price_per_gpu_hour: float  # USD
    min_rental_hours: float
    billed_hours: float  # max(run hours, min_rental_hours)
    cost: float  # USD: billed_hours x gpus x price_per_gpu_hour
    note: str  # e.g. "interruptible: preemption rework not included"


@dataclass(frozen=True)
class Extrapolation:
    """Total time (and cost) of the whole run from a trial's measured steady-state step time.

    total_s = train_s + eval_s + checkpoint_s + margin_s, with
    train_s = steps x step_time_s, steps = ceil(dataset_tokens x epochs / tokens_per_step),
    eval_s = train_s x eval_fraction, checkpoint_s = checkpoints x checkpoint_bytes / write speed,
    checkpoints = steps // checkpoint_every_steps, margin_s = margin x (train + eval + checkpoints).
    """

    trial: str  # the record's label
    device_name: str
    gpus: int  # GPUs of the run being extrapolated (the plan's)
    measured_gpus: int  # processes the trial ran on
    step_time_s: float  # steady state: median measured step time (data wait included)
    tokens_per_step: int  # all GPUs of the run
    tokens_per_s: float
    dataset_tokens: int
    epochs: float
    steps: int
    train_s: float
    eval_fraction: float
    eval_s: float
    checkpoint_every_steps: int
    checkpoints: int
    checkpoint_bytes: int  # one checkpoint, as measured by the round-trip (or estimated, see notes)
    checkpoint_bytes_measured: bool
    checkpoint_write_bytes_s: float
    checkpoint_s: float
    margin: float
    margin_s: float
    total_s: float
    price_per_gpu_hour: float | None
    cost: float | None  # USD at price_per_gpu_hour: total hours x gpus x price
    catalog_gpu_id: str | None  # the catalog GPU the trial's device matched, if any
    offers: tuple[OfferCost, ...]  # the same GPU model's catalog offers, cheapest first
    notes: tuple[str, ...]

    @property
    def total_hours(self) -> float:
        return self.total_s / 3600.0

    @property
    def gpu_hours(self) -> float:
        return self.total_s / 3600.0 * self.gpus

    def as_dict(self) -> dict[str, Any]:
        return {**_jsonable(dataclasses.asdict(self)), "total_hours": self.total_hours,
                "gpu_hours": self.gpu_hours}


_SHAPE_FIELDS = ("model", "method", "precision", "optimizer", "seq_len", "batch_size", "grad_accum",
                 "grad_checkpointing", "attention", "lora_r", "lora_targets", "sharding")


def extrapolate(record: TrialRecord, plan: TrainPlan | None = None, *, eval_fraction: float | None = None,
                checkpoint_write_bytes_s: float = CHECKPOINT_WRITE_BYTES_S, margin: float = TRIAL_TIME_MARGIN,
                price_per_gpu_hour: float | None = None, offers: Sequence[Any] | None = None) -> Extrapolation:
    """The whole run's time (and cost) from a trial's measured steps. Pure apart from reading offers.

    Args:
        record: a trial that fits, with measured steps.
        plan: the run to extrapolate to (dataset_tokens, epochs, eval_fraction,
            checkpoint_every_steps, gpus); None = the trial's own plan. Its batch shape (model,
            method, precision, seq_len, batch_size, grad_accum, ...) must be the trial's.
        eval_fraction: share of training time spent on validation; None = plan.eval_fraction.
        checkpoint_write_bytes_s: disk write speed for checkpoints, bytes/s.
        margin: share added to the total (TRIAL_TIME_MARGIN).
        price_per_gpu_hour: USD per GPU-hour, for ``cost``.
        offers: catalog offers to price; None = ``gpuwork.facts.catalog.load_offers()`` filtered to the GPU
            model the trial ran on (none when the device matches no catalog GPU, e.g. a CPU).

    Example:
        >>> ext = extrapolate(record, record.plan.replace(dataset_tokens=10**9), price_per_gpu_hour=2.0)
        >>> ext.total_s > ext.train_s
        True

    Limitations: assumes every step of the run costs the measured median (same shapes, same data
    speed); when the plan has more GPUs than the trial measured, scaling is assumed linear
    (communication between the extra GPUs is not measured); interruptible offers are priced
    without preemption rework.
    """
    if record.summary is None or not record.fits:
        raise TrialError(f"trial '{record.label}' has no measured step that fits: nothing to extrapolate "
                         "(re-run with a smaller batch or more memory)")
    plan = plan if plan is not None else record.plan
    measured_plan = record.plan
    differs = [f for f in _SHAPE_FIELDS if getattr(plan, f) != getattr(measured_plan, f)]
    if differs:
        raise TrialError(f"the plan differs from the trial in {', '.join(differs)}: the measured step time only "
                         "holds for the trial's shape; run a trial with this plan")
    eval_fraction = plan.eval_fraction if eval_fraction is None else eval_fraction
    if not 0 <= eval_fraction < 1:
        raise TrialError(f"eval_fraction={eval_fraction!r}: use a share of training time in [0, 1), e.g. 0.05")
    if checkpoint_write_bytes_s <= 0:
        raise TrialError("checkpoint_write_bytes_s must be above 0 (e.g. 0.5e9 for 0.5 GB/s)")
    if margin < 0:
        raise TrialError(f"margin={margin!r} must be >= 0 (0.10 adds 10 %)")
    if price_per_gpu_hour is not None and price_per_gpu_hour < 0:
        raise TrialError(f"price_per_gpu_hour={price_per_gpu_hour!r} must be >= 0")
    notes: list[str] = []
    measured_gpus = record.world_size
    per_gpu_tokens = record.summary.tokens_per_step // measured_gpus
    tokens_per_step = per_gpu_tokens * plan.gpus
    if record.environment.device == "cpu":
        notes.append("measured on a CPU: the total is this CPU's time, not a GPU's")
    if plan.gpus != measured_gpus:
        notes.append(f"measured on {measured_gpus} process(es), extrapolated to {plan.gpus} GPUs assuming linear "
                     "scaling (communication between them not measured)")
    step_s = record.summary.median_step_time_s
    steps = max(1, math.ceil(plan.dataset_tokens * plan.epochs / tokens_per_step))
    train_s = steps * step_s
    eval_s = train_s * eval_fraction
    if record.checkpoint is not None:
        ckpt_bytes, measured_ckpt = record.checkpoint.bytes_on_disk, True
    else:
        from gpuwork.sizing import checkpoint_bytes

        ckpt_bytes, measured_ckpt = checkpoint_bytes(plan), False
        notes.append("the trial ran no checkpoint round-trip: checkpoint size estimated (gpuwork.estimate.disk)")
    checkpoints = steps // plan.checkpoint_every_steps
    ckpt_s = checkpoints * ckpt_bytes / checkpoint_write_bytes_s
    margin_s = margin * (train_s + eval_s + ckpt_s)
    total_s = train_s + eval_s + ckpt_s + margin_s
    hours = total_s / 3600.0
    cost = hours * plan.gpus * price_per_gpu_hour if price_per_gpu_hour is not None else None

    gpu_id = None
    if record.environment.device != "cpu":
        from gpuwork.measure.calibration import match_catalog_gpu

        gpu = match_catalog_gpu(record.environment.device_name, record.environment.device_total_bytes)
        gpu_id = gpu.gpu_id if gpu is not None else None
        if gpu is None:
            notes.append(f"'{record.environment.device_name}' matches no GPU of data/gpus.csv: no offers priced")
    if offers is None:
        if gpu_id is not None:
            from gpuwork.facts.catalog import load_offers

            offers = [o for o in load_offers() if o.gpu_id == gpu_id]
        else:
            offers = []
    priced = []
    for offer in offers:
        billed = max(hours, float(offer.min_rental_hours))
        mode = str(getattr(offer.mode, "value", offer.mode))
        priced.append(OfferCost(
            offer_id=offer.offer_id, provider=offer.provider, gpu_id=offer.gpu_id, mode=mode,
            region=str(getattr(offer.region, "value", offer.region)), price_per_gpu_hour=offer.price_per_gpu_hour,
            min_rental_hours=float(offer.min_rental_hours), billed_hours=billed,
            cost=billed * plan.gpus * offer.price_per_gpu_hour,
            note="interruptible: preemption rework not included" if mode == "interruptible" else ""))
    priced.sort(key=lambda o: o.cost)
    return Extrapolation(
        trial=record.label, device_name=record.environment.device_name, gpus=plan.gpus, measured_gpus=measured_gpus,
        step_time_s=step_s, tokens_per_step=tokens_per_step, tokens_per_s=tokens_per_step / step_s,
        dataset_tokens=plan.dataset_tokens, epochs=plan.epochs, steps=steps, train_s=train_s,
        eval_fraction=eval_fraction, eval_s=eval_s, checkpoint_every_steps=plan.checkpoint_every_steps,
        checkpoints=checkpoints, checkpoint_bytes=ckpt_bytes, checkpoint_bytes_measured=measured_ckpt,
        checkpoint_write_bytes_s=checkpoint_write_bytes_s, checkpoint_s=ckpt_s, margin=margin, margin_s=margin_s,
        total_s=total_s, price_per_gpu_hour=price_per_gpu_hour, cost=cost, catalog_gpu_id=gpu_id,
        offers=tuple(priced), notes=tuple(notes),
    )


# -- one process or several: the hooks a multi-process trial plugs in ----------------------------------


class Parallel:
    """Hooks that let ``iter_trial`` run as one of several processes; these defaults are one process.

    ``gpuwork.measure.distributed`` subclasses it (DDP / FSDP2 wrapping, a data shard per rank, a
    distributed checkpoint). Every method is called at the same point on every rank.
    """

    rank = 0
    world_size = 1
    writes_record = True  # False: the caller merges the ranks' records and writes the result

    def agree(self, value: Any) -> Any:
        """Rank 0's value on every rank (timestamps, file names)."""
        return value

    def barrier(self) -> None:
        """Wait for every rank."""

    def substitutions(self, plan: TrainPlan, device: torch.device) -> list[str]:
        """Where this way of running differs from the plan."""
        if plan.gpus > 1:
            return [f"gpus={plan.gpus}, sharding={plan.sharding}: this trial runs one process on one device "
                    "(multi-GPU trials run under torchrun: gpuwork trial --nproc N)"]
        return []

    def scratch_dir(self, stack: contextlib.ExitStack, out_path: Path | None, stem: str) -> Path:
        """A folder for temporary files, removed when the trial ends (same path on every rank)."""
        return _scratch_dir(stack, out_path, stem)

    def wrap(self, model: Any, setup: _Setup) -> Any:
        """The model as it trains (DDP / fully_shard); called before the optimizer is built."""
        return model

    def shard(self, dataset: Any) -> Any:
        """This rank's part of the dataset."""
        return dataset

    def sync_gradients(self, model: Any, sync: bool) -> contextlib.AbstractContextManager:
        """Context for one micro-batch's backward; ``sync`` is False for all but the last of a step."""
        return contextlib.nullcontext()

    def grad_norm(self, norm: Any) -> float:
        """The total gradient norm as a float (a sharded norm is reduced first)."""
        return float(norm.item())

    def after_steps(self, run: _Run) -> None:
        """Called once the measured steps are done, before the checkpoint round-trip."""

    def checkpoint_roundtrip(self, owner: list[_Run], setup: _Setup, scratch: Path, out_path: Path | None,
                             stem: str, step: int, batches: list[dict[str, Any]],
                             clock: Callable[[], float]) -> CheckpointResult:
        return _checkpoint_roundtrip(owner, setup, scratch, out_path, stem, step, batches, clock)


_ONE_PROCESS = Parallel()


# -- memory monitors -------------------------------------------------------------------------------------


class _RssMonitor:
    """Process RSS: a background sampler keeps the highest value since the last reset."""

    def __init__(self, interval_s: float):
        import psutil

        self._process = psutil.Process()
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.baseline_bytes = self.read()
        self._peak = self.baseline_bytes
        self._thread: threading.Thread | None = None
        if interval_s > 0:
            self._thread = threading.Thread(target=self._run, name="gpuwork-rss-sampler", daemon=True)
            self._thread.start()

    def read(self) -> int:
        return int(self._process.memory_info().rss)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            value = self.read()
            if value > self._peak:
                self._peak = value

    def reset(self) -> None:
        self._peak = self.read()

    def sample(self) -> int:
        value = self.read()
        if value > self._peak:
            self._peak = value
        return value

    @property
    def peak_bytes(self) -> int:
        return self._peak

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)


class _Memory:
    """Trial memory on the trial's device, compared with the cap at phase boundaries."""

    def __init__(self, device: torch.device, cap_bytes: int | None, sample_interval_s: float):
        import torch

        self.device = device
        self.cap_bytes = cap_bytes
        self.cuda = device.type == "cuda"
        self.rss: _RssMonitor | None = None
        self.baseline_bytes = 0
        self.highest_bytes = 0
        if self.cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)  # earlier work in this process must not count
            self.baseline_bytes = torch.cuda.memory_allocated(device)
        else:
            self.rss = _RssMonitor(sample_interval_s)
            self.baseline_bytes = self.rss.baseline_bytes

    def reset_peak(self) -> None:
        import torch

        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.rss.reset()

    def trial_bytes(self) -> int:
        """Peak since the last reset, above the baseline."""
        import torch

        if self.cuda:
            used = torch.cuda.max_memory_allocated(self.device) - self.baseline_bytes
        else:
            self.rss.sample()
            used = self.rss.peak_bytes - self.baseline_bytes
        used = max(0, int(used))
        self.highest_bytes = max(self.highest_bytes, used)
        return used

    def check(self, phase: str) -> None:
        """Raise torch.OutOfMemoryError when the measured memory passes the cap."""
        import torch

        used = self.trial_bytes()
        if self.cap_bytes is not None and used > self.cap_bytes:
            raise torch.OutOfMemoryError(
                f"memory cap exceeded after {phase}: the trial used {used / 2**20:.1f} MiB, the cap is "
                f"{self.cap_bytes / 2**20:.1f} MiB")

    def step_fields(self) -> dict[str, int | None]:
        import torch

        used = self.trial_bytes()
        if self.cuda:
            return {"trial_memory_bytes": used,
                    "cuda_peak_allocated_bytes": int(torch.cuda.max_memory_allocated(self.device)),
                    "cuda_peak_reserved_bytes": int(torch.cuda.max_memory_reserved(self.device))}
        return {"trial_memory_bytes": used, "rss_peak_bytes": self.rss.peak_bytes,
                "rss_after_step_bytes": self.rss.read()}

    def close(self) -> None:
        if self.rss is not None:
            self.rss.close()


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "not enough memory" in text)


def _release_memory(device: torch.device | None) -> None:
    import torch

    gc.collect()
    if device is not None and device.type == "cuda":
        torch.cuda.empty_cache()
    _malloc_trim()


def _malloc_trim() -> None:
    """Return freed heap pages to the OS (glibc), so the next trial's RSS baseline is honest."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# -- the run: model, optimizer, scheduler ------------------------------------------------------------------


@dataclass
class _Setup:
    """Everything resolved once per trial and needed to (re)build the model."""

    plan: TrainPlan
    config_dict: dict[str, Any]
    model_name: str
    task: Task
    device: torch.device
    compute_dtype: torch.dtype  # the dtype the model computes in
    param_dtype: torch.dtype  # the dtype trainable weights are kept in
    autocast_dtype: torch.dtype | None  # mixed precision: the autocast dtype
    precision_used: str
    attention: str  # attn_implementation asked of transformers
    lr: float
    seed: int
    warmup: int
    max_grad_norm: float | None
    weights_dir: Path | None  # local pretrained weights, or None for random init
    factory: ModelFactory | None
    pad_id: int
    substitutions: list[str]
    qlora_base_dir: Path | None = None  # random-init model saved for 4-bit loading
    parallel: Parallel = dataclasses.field(default_factory=Parallel)  # one process unless torchrun


@dataclass
class _Run:
    model: Any
    optimizer: Any
    scheduler: Any
    scaler: Any  # torch.amp.GradScaler for fp16-mixed, else None
    trainable: list[Any]
    params_total: int
    params_trainable: int


def _hf_config(setup: _Setup) -> Any:
    import transformers

    model_type = setup.config_dict.get("model_type")
    if model_type not in transformers.CONFIG_MAPPING:
        raise ModelError(f"model_type '{model_type}' of {setup.model_name} is not known to transformers "
                         f"{transformers.__version__}: upgrade transformers or pick another model")
    config = transformers.CONFIG_MAPPING[model_type].from_dict(dict(setup.config_dict))
    if setup.task is Task.SEQ_CLS:
        config.num_labels = 2
        if getattr(config, "pad_token_id", None) is None:
            config.pad_token_id = setup.pad_id  # needed to find the last token of each row (batch > 1)
    config.use_cache = False  # training: no KV cache
    return config


def _auto_class(task: Task) -> Any:
    import transformers

    return {
        Task.CAUSAL_LM: transformers.AutoModelForCausalLM,
        Task.SEQ_CLS: transformers.AutoModelForSequenceClassification,
        Task.MASKED_LM: transformers.AutoModelForMaskedLM,
    }[task]


def _base_model(setup: _Setup, config: Any, dtype: torch.dtype, device: torch.device | None = None) -> Any:
    """The plan's base model on ``device`` (default: the trial's) in ``dtype``, seeded.

    Random weights are initialised directly on the device (no CPU copy of a large model); local
    weights are loaded with ``from_pretrained``; a factory's model is moved and cast.
    """
    import torch

    device = device or setup.device
    torch.manual_seed(setup.seed)
    auto = _auto_class(setup.task)
    if setup.factory is not None:
        return setup.factory(config, setup.plan).to(dtype).to(device)
    kwargs = {"attn_implementation": setup.attention, "dtype": dtype}
    try:
        if setup.weights_dir is not None:
            return auto.from_pretrained(str(setup.weights_dir), config=config, **kwargs).to(device)
        with torch.device(device):
            return auto.from_config(config, **kwargs)
    except (ValueError, ImportError) as exc:
        message = str(exc).lower()
        if setup.attention == "eager" or ("attn" not in message and "attention" not in message):
            raise
        setup.substitutions.append(f"attention {setup.attention} -> eager: {type(config).__name__} does not "
                                   "support it")
        setup.attention = "eager"
        return _base_model(setup, config, dtype, device)


def _build_run(setup: _Setup) -> _Run:
    """Model with the method applied, on the device, plus optimizer, scheduler and scaler."""
    import torch

    plan = setup.plan
    config = _hf_config(setup)
    if plan.method is Method.QLORA:
        model = _qlora_model(setup, config)
    else:
        model = _base_model(setup, config, setup.param_dtype)
        if plan.grad_checkpointing:
            _enable_checkpointing(model)
        if plan.method is Method.FREEZE:
            _freeze_all_but_last(model, plan.trainable_layers, setup.task)
        elif plan.method is Method.LORA:
            model = _with_lora(model, setup)
    model.train()
    model = setup.parallel.wrap(model, setup)  # DDP / fully_shard before the optimizer sees parameters
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise TrialError(f"method '{plan.method}' left no trainable parameter in {setup.model_name}")
    optimizer = _make_optimizer(plan, trainable, setup)
    warmup = setup.warmup

    def schedule(done: int) -> float:  # linear warm-up over the trial's warm-up steps, then constant
        return min(1.0, (done + 1) / (warmup + 1))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    scaler = None
    if setup.autocast_dtype == torch.float16:
        scaler = torch.amp.GradScaler(setup.device.type)
    params_total = sum(p.numel() for p in model.parameters())
    if plan.method is Method.QLORA:  # Params4bit packs two 4-bit values per uint8 element
        params_total = sum(p.numel() * (2 if p.dtype == torch.uint8 else 1) for p in model.parameters())
    return _Run(model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler, trainable=trainable,
                params_total=params_total, params_trainable=sum(p.numel() for p in trainable))


def _preload(setup: _Setup) -> None:
    """Import what building the model imports, so that library code is not counted as trial memory."""
    import safetensors.torch  # noqa: F401
    import transformers  # noqa: F401

    with contextlib.suppress(Exception):  # resolving the class imports its modeling module
        _auto_class(setup.task)._model_mapping[type(_hf_config(setup))]
    if setup.plan.uses_adapters:
        import peft  # noqa: F401
    if setup.plan.method is Method.QLORA or setup.plan.optimizer in (
            Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT, Optimizer.LION):
        import bitsandbytes  # noqa: F401


def _enable_checkpointing(model: Any) -> None:
    kwargs = {"use_reentrant": False}  # works with frozen inputs (LoRA, freeze) without input grads
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.x name
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    elif hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    else:
        raise TrialError(f"{type(model).__name__} does not support gradient checkpointing: turn it off")


def _find_blocks(model: Any) -> tuple[str, Any]:
    import torch

    layers = getattr(model.config, "num_hidden_layers", None)
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == layers:
            return name, module
    raise TrialError(f"cannot find the {layers} transformer blocks of {type(model).__name__} for method='freeze'")


def _freeze_all_but_last(model: Any, layers: int, task: Task) -> None:
    """Train the last ``layers`` blocks, the final norm and the head (less any weight tied to the
    embeddings), as gpuwork.facts.model counts them."""
    import torch

    prefix, blocks = _find_blocks(model)
    for p in model.parameters():
        p.requires_grad_(False)
    for block in list(blocks)[-layers:]:
        for p in block.parameters():
            p.requires_grad_(True)
    for name, module in model.named_modules():
        if name and not name.startswith(prefix) and "norm" in type(module).__name__.lower() and name.count(".") <= 1:
            for p in module.parameters(recurse=False):
                p.requires_grad_(True)
    # the head trains except a weight tied to the input embeddings (those stay frozen)
    embedding_ids = {id(m.weight) for n, m in model.named_modules()
                     if isinstance(m, torch.nn.Embedding) and not n.startswith(prefix + ".")}
    for name, module in model.named_children():
        if name in _HEAD_MODULES:
            for p in module.parameters():
                if id(p) not in embedding_ids:
                    p.requires_grad_(True)


def _lora_config(setup: _Setup) -> Any:
    from peft import LoraConfig

    plan = setup.plan
    targets: Any = ALL_LINEAR if plan.lora_targets == (ALL_LINEAR,) else list(plan.lora_targets)
    task_type = {Task.CAUSAL_LM: "CAUSAL_LM", Task.SEQ_CLS: "SEQ_CLS"}.get(setup.task)
    return LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha, lora_dropout=plan.lora_dropout,
                      target_modules=targets, task_type=task_type, bias="none")


def _with_lora(model: Any, setup: _Setup) -> Any:
    from peft import get_peft_model

    try:
        return get_peft_model(model, _lora_config(setup))
    except ValueError as exc:
        if "target" in str(exc).lower():
            raise ModelError(f"lora_targets {list(setup.plan.lora_targets)} do not fit {setup.model_name}: "
                             f"{str(exc).splitlines()[0]} (use its module names or 'all-linear')") from None
        raise


def _qlora_model(setup: _Setup, config: Any) -> Any:
    """stack_facts recipe: save the random-init model, reload it 4-bit, prepare for k-bit training, add LoRA."""
    import torch
    from peft import prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    source = setup.weights_dir
    if source is None:
        if setup.qlora_base_dir is None:
            raise TrialError("internal: no folder for the 4-bit base model")
        if setup.parallel.rank == 0 and not (setup.qlora_base_dir / "config.json").is_file():
            # once per trial (the restore reuses it), by rank 0 only; built on the CPU: the 16-bit
            # base never occupies the GPU, only its 4-bit reload does
            base = _base_model(setup, config, setup.compute_dtype, torch.device("cpu"))
            base.save_pretrained(str(setup.qlora_base_dir))
            del base
            _release_memory(setup.device)
        setup.parallel.barrier()  # the other ranks load what rank 0 wrote
        source = setup.qlora_base_dir
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=setup.plan.quant_type.value,
                               bnb_4bit_use_double_quant=setup.plan.double_quant,
                               bnb_4bit_compute_dtype=setup.compute_dtype)
    device_map = {"": setup.device.index or 0} if setup.device.type == "cuda" else {"": "cpu"}
    torch.manual_seed(setup.seed)
    model = _auto_class(setup.task).from_pretrained(
        str(source), config=config, quantization_config=quant, device_map=device_map,
        dtype=setup.compute_dtype, attn_implementation=setup.attention)
    model = prepare_model_for_kbit_training(
        model, use_gradient_checkpointing=setup.plan.grad_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False})
    return _with_lora(model, setup)


def _make_optimizer(plan: TrainPlan, params: list[Any], setup: _Setup) -> Any:
    import torch

    lr = setup.lr
    opt = plan.optimizer
    if opt is Optimizer.ADAMW:
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.0, foreach=plan.optimizer_foreach)
    if opt is Optimizer.SGD:
        return torch.optim.SGD(params, lr=lr, momentum=0.9, foreach=plan.optimizer_foreach)
    if opt is Optimizer.ADAFACTOR:
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=lr, scale_parameter=False, relative_step=False, warmup_init=False)
    import bitsandbytes as bnb

    if opt is Optimizer.ADAMW_8BIT:
        return bnb.optim.AdamW8bit(params, lr=lr, weight_decay=0.0)
    if opt is Optimizer.PAGED_ADAMW_8BIT:
        return bnb.optim.PagedAdamW8bit(params, lr=lr, weight_decay=0.0)
    if opt is Optimizer.LION:
        return bnb.optim.Lion(params, lr=lr, weight_decay=0.0)
    raise TrialError(f"optimizer '{opt}' is not supported by the trial")


# -- one training step ----------------------------------------------------------------------------------------


def _to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    if device.type == "cpu":
        return batch
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def _train_step(run: _Run, setup: _Setup, next_batch: Callable[[], dict[str, Any]], clock: Callable[[], float],
                memory: _Memory | None) -> tuple[float, float, float, float]:
    """One optimizer step of grad_accum micro-batches. Returns (loss, grad_norm, data_wait_s, lr)."""
    import torch

    accum = setup.plan.grad_accum
    device = setup.device
    wait = 0.0
    losses = []
    autocast = (torch.autocast(device.type, dtype=setup.autocast_dtype) if setup.autocast_dtype is not None
                else contextlib.nullcontext())
    lr = float(run.optimizer.param_groups[0]["lr"])
    for index in range(accum):
        start = clock()
        batch = _to_device(next_batch(), device)
        wait += clock() - start
        with setup.parallel.sync_gradients(run.model, index == accum - 1):
            with autocast:
                loss = run.model(**batch).loss / accum
            if memory is not None:
                memory.check("forward")
            if run.scaler is not None:
                run.scaler.scale(loss).backward()
            else:
                loss.backward()
        if memory is not None:
            memory.check("backward")
        losses.append(loss.detach())
        del loss
    if run.scaler is not None:
        run.scaler.unscale_(run.optimizer)
    max_norm = setup.max_grad_norm if setup.max_grad_norm is not None else math.inf
    grad_norm = torch.nn.utils.clip_grad_norm_(run.trainable, max_norm)
    if run.scaler is not None:
        run.scaler.step(run.optimizer)
        run.scaler.update()
    else:
        run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    loss_value = float(torch.stack(losses).sum().item())
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if memory is not None:
        memory.check("optimizer step")
    return loss_value, setup.parallel.grad_norm(grad_norm), wait, lr


# -- checkpoint round-trip ------------------------------------------------------------------------------------------


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config")


def _model_state(model: Any) -> dict[str, Any]:
    if _is_peft(model):
        from peft import get_peft_model_state_dict

        return get_peft_model_state_dict(model)
    return model.state_dict()


def _rng_state(device: torch.device) -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state_all()
    with contextlib.suppress(ImportError):
        import numpy as np

        state["numpy"] = np.random.get_state()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    import torch

    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])


def _save_checkpoint(run: _Run, setup: _Setup, folder: Path, step: int) -> dict[str, int]:
    """HF Trainer's layout: weights (or adapter) safetensors, optimizer.pt, scheduler.pt, rng_state.pth."""
    import torch
    from safetensors.torch import save_file, save_model

    folder.mkdir(parents=True, exist_ok=True)
    if _is_peft(run.model):
        state = {k: v.detach().contiguous() for k, v in _model_state(run.model).items()}
        save_file(state, str(folder / "adapter_model.safetensors"))
    else:
        save_model(run.model, str(folder / "model.safetensors"))
    torch.save(run.optimizer.state_dict(), folder / "optimizer.pt")
    torch.save(run.scheduler.state_dict(), folder / "scheduler.pt")
    if run.scaler is not None:
        torch.save(run.scaler.state_dict(), folder / "scaler.pt")
    torch.save(_rng_state(setup.device), folder / "rng_state.pth")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "seed": setup.seed,
                                                           "plan": setup.plan.as_dict()}, indent=1))
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()}


def _load_checkpoint(run: _Run, setup: _Setup, folder: Path) -> dict[str, Any]:
    """Load a checkpoint into a fresh run; returns the RNG state it held."""
    import torch
    from safetensors.torch import load_file, load_model

    if _is_peft(run.model):
        from peft import set_peft_model_state_dict

        state = load_file(str(folder / "adapter_model.safetensors"), device=str(setup.device))
        result = set_peft_model_state_dict(run.model, state)
        if getattr(result, "unexpected_keys", None):
            raise TrialError(f"adapter checkpoint has unexpected keys: {result.unexpected_keys[:3]}")
    else:
        missing, unexpected = load_model(run.model, str(folder / "model.safetensors"), device=str(setup.device))
        if missing or unexpected:
            raise TrialError(f"checkpoint does not match the model: missing {missing[:3]}, unexpected "
                             f"{unexpected[:3]}")
    run.optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location=setup.device,
                                             weights_only=True))
    run.scheduler.load_state_dict(torch.load(folder / "scheduler.pt", weights_only=True))
    if run.scaler is not None:
        run.scaler.load_state_dict(torch.load(folder / "scaler.pt", weights_only=True))
    return torch.load(folder / "rng_state.pth", weights_only=False)  # our own file: python/numpy RNG tuples


def flatten_state(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested dicts/lists as one flat dict keyed by a path ("a.b[0]")."""
    if isinstance(value, dict):
        for k, v in value.items():
            flatten_state(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            flatten_state(f"{prefix}[{i}]", v, out)
    else:
        out[prefix] = value


def _compare_states(saved: Any, restored: Any, what: str) -> tuple[int, list[str]]:
    """Count tensors in ``saved`` and list the entries that differ in ``restored``."""
    import torch

    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    flatten_state(what, saved, a)
    flatten_state(what, restored, b)
    tensors = 0
    bad = []
    for key, value in a.items():
        other = b.get(key, _MISSING)
        if torch.is_tensor(value):
            tensors += 1
            if not (torch.is_tensor(other) and value.shape == other.shape and value.dtype == other.dtype
                    and torch.equal(value.cpu(), other.cpu())):
                bad.append(key)
        elif other is _MISSING or (value != other and not (_is_nan(value) and _is_nan(other))):
            bad.append(key)
    return tensors, bad


_MISSING = object()


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# -- the trial ------------------------------------------------------------------------------------------------


def iter_trial(plan: TrainPlan, *, steps: int = 10, warmup: int = 2, seed: int = 0, device: Any = None,
               data: TextData | str | Path | Sequence[str | Path] | None = None,
               tokenizer: str | Path | None = None, out_dir: str | Path | None = None,
               memory_cap_bytes: int | None = None, model_factory: ModelFactory | None = None,
               clock: Callable[[], float] = time.perf_counter, lr: float | None = None, loader_workers: int = 0,
               checkpoint: bool = True, max_grad_norm: float | None = MAX_GRAD_NORM,
               memory_sample_interval_s: float = RSS_SAMPLE_INTERVAL_S, parallel: Parallel | None = None,
               ) -> Generator[StepMeasurement, None, TrialRecord]:
    """Run a measured trial, yielding each step's measurement; the generator returns the TrialRecord.

    Args:
        plan: the run to prove (model, method, precision, optimizer, seq_len, batch_size, grad_accum, ...).
        steps: measured optimizer steps (after warm-up).
        warmup: optimizer steps run first, yielded with ``is_warmup=True`` and left out of the summary.
        seed: seeds model init, data order, masking and dropout.
        device: "cpu", "cuda", "cuda:1" or a torch.device; None = CUDA when available, else CPU.
        data: a TextData, .txt/.jsonl file(s) or folder, or None for the shipped corpus.
        tokenizer: a local tokenizer folder; None trains a byte-level BPE on the data (in memory).
        out_dir: where the record JSON (``trial-<model>-<method>-<timestamp>.json``) and the
            checkpoint folder are written; None writes nothing (temporary folders are removed).
        memory_cap_bytes: simulated device size: raise out-of-memory when the trial's measured
            memory (see StepMeasurement) passes it.
        model_factory: ``(transformers config, plan) -> nn.Module`` to build the base model instead
            of ``from_config`` (called again for the checkpoint restore; must be deterministic).
        clock: seconds as a float; injectable for tests.
        lr: learning rate; None = DEFAULT_LR_FULL / DEFAULT_LR_ADAPTERS x LR_FACTOR[optimizer].
        loader_workers: DataLoader worker processes (0 = load in this process).
        checkpoint: run the save -> restore -> verify -> resume round-trip.
        max_grad_norm: gradient clipping norm (None = no clipping; the norm is still measured).
        memory_sample_interval_s: CPU RSS sampling period (0 = sample at phase boundaries only).
        parallel: hooks of a multi-process run (``gpuwork.measure.distributed`` passes them); None = one process.
    Raises TrialError / ModelError / DataError for unusable inputs; out of memory is not raised
    but recorded (``fits=False``). While the generator runs, transformers' logging is set to errors
    and its progress bars are off (both restored at the end); the caller's RNG states are restored.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise TrialError(f"steps={steps!r}: measure at least one step")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise TrialError(f"warmup={warmup!r}: use a whole number >= 0 (2 is typical)")
    if memory_cap_bytes is not None and memory_cap_bytes <= 0:
        raise TrialError(f"memory_cap_bytes={memory_cap_bytes}: use a positive number of bytes or None")
    import torch

    parallel = parallel if parallel is not None else _ONE_PROCESS
    started = clock()
    created = parallel.agree(datetime.now(UTC))
    setup, text = _prepare(plan, device=device, seed=seed, warmup=warmup, lr=lr, data=data, tokenizer=tokenizer,
                           model_factory=model_factory, max_grad_norm=max_grad_norm, parallel=parallel)
    dev, model_name, weights_dir, task, lr = setup.device, setup.model_name, setup.weights_dir, setup.task, setup.lr
    stamp = created.strftime("%Y%m%dT%H%M%SZ")
    stem = f"trial-{_slug(model_name)}-{plan.method.value}-{stamp}"
    out_path = Path(out_dir).expanduser() if out_dir is not None else None
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
        stem = _unique_stem(out_path, stem)
    stem = parallel.agree(stem)
    environment = _environment(dev)

    measurements: list[StepMeasurement] = []
    notes: list[str] = []
    error: str | None = None
    checkpoint_result: CheckpointResult | None = None
    run: _Run | None = None
    memory: _Memory | None = None
    loader = None
    temp = contextlib.ExitStack()
    params_total = params_trainable = 0
    caller_rng = _rng_state(dev)  # the trial seeds torch/python RNGs; the caller gets theirs back
    _release_memory(dev)
    try:
        temp.enter_context(_quiet_libraries())
        scratch = parallel.scratch_dir(temp, out_path, stem)
        if plan.method is Method.QLORA and weights_dir is None:
            setup.qlora_base_dir = scratch / "base-model"
        _preload(setup)
        memory = _Memory(dev, memory_cap_bytes, memory_sample_interval_s)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                run = _build_run(setup)
            notes.extend(_useful_warnings(caught))
            params_total, params_trainable = run.params_total, run.params_trainable
            memory.check("building the model")
            from gpuwork.measure.textdata import cycle, make_loader

            dataset = parallel.shard(text.dataset(task.value, seed=seed))
            loader = make_loader(dataset, plan.batch_size, workers=loader_workers, seed=seed,
                                 pin_memory=dev.type == "cuda")
            batches = cycle(loader)
            torch.manual_seed(seed + 1)  # dropout stream, independent of init
            for step in range(1, warmup + steps + 1):
                memory.reset_peak()
                start = clock()
                loss, grad_norm, wait, step_lr = _train_step(run, setup, lambda: next(batches), clock, memory)
                elapsed = clock() - start
                tokens = plan.tokens_per_step // plan.gpus
                m = StepMeasurement(step=step, is_warmup=step <= warmup, loss=loss, step_time_s=elapsed,
                                    data_wait_s=wait, tokens=tokens,
                                    tokens_per_s=tokens / elapsed if elapsed > 0 else math.inf,
                                    grad_norm=grad_norm, learning_rate=step_lr, **memory.step_fields())
                measurements.append(m)
                yield m
            parallel.after_steps(run)
            if checkpoint:
                resume_batches = [next(batches) for _ in range(RESUME_STEPS * plan.grad_accum)]
                owner, run = [run], None  # the round-trip takes the only reference and frees it
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    checkpoint_result = parallel.checkpoint_roundtrip(owner, setup, scratch, out_path, stem,
                                                                      warmup + steps, resume_batches, clock)
                notes.extend(_useful_warnings(caught))
        except Exception as exc:  # noqa: BLE001 - only out-of-memory is recorded; anything else re-raised
            if not _is_oom(exc):
                raise
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'out of memory'}"
            if memory is not None:
                with contextlib.suppress(Exception):
                    memory.trial_bytes()
        finally:
            run = None
            loader = None
            batches = None
            _release_memory(dev)
    finally:
        if memory is not None:
            memory.close()
        temp.close()
        _set_rng_state(caller_rng)

    fits = error is None
    peak = max([memory.highest_bytes if memory else 0] + [s.trial_memory_bytes for s in measurements])
    protocol = TrialProtocol(
        model=model_name, method=plan.method.value, task=task.value, steps=steps, warmup=warmup,
        micro_batch=plan.batch_size, grad_accum=plan.grad_accum, seq_len=plan.seq_len,
        tokens_per_step=plan.tokens_per_step // plan.gpus, seed=seed, learning_rate=lr,
        lr_schedule=f"linear warm-up over {warmup} steps, then constant", max_grad_norm=max_grad_norm,
        precision_requested=plan.precision.value, precision_used=setup.precision_used,
        attention_requested=plan.attention.value, attention_used=setup.attention,
        optimizer=plan.optimizer.value, optimizer_class=_optimizer_class_name(plan.optimizer),
        grad_checkpointing=plan.grad_checkpointing, params_total=params_total, params_trainable=params_trainable,
        weights=str(weights_dir) if weights_dir is not None else "random", dataset=text.as_dict(),
        tokenizer=text.tokenizer.as_dict(), loader_workers=loader_workers, memory_cap_bytes=memory_cap_bytes,
        substitutions=tuple(setup.substitutions), plan=plan.as_dict(),
    )
    json_path = out_path / f"{stem}.json" if out_path is not None else None
    record = TrialRecord(
        protocol=protocol, environment=environment,
        summary=summarize(measurements, "GPU" if dev.type == "cuda" else "CPU"),
        steps=tuple(measurements), checkpoint=checkpoint_result, fits=fits, error=error,
        peak_trial_memory_bytes=peak, created_utc=created.isoformat(timespec="seconds"),
        duration_s=clock() - started, notes=tuple(dict.fromkeys(notes)),
        saved_to=str(json_path) if json_path is not None else None,
    )
    if json_path is not None and parallel.writes_record:
        record.to_json(json_path)
    return record


def _prepare(plan: TrainPlan, *, device: Any, seed: int, warmup: int, lr: float | None, data: Any,
             tokenizer: Any, model_factory: ModelFactory | None, max_grad_norm: float | None,
             parallel: Parallel | None = None) -> tuple[_Setup, TextData]:
    """Resolve device, model config, task, precision, attention, learning rate and data for a trial."""
    from gpuwork.facts.model import load_config, resolve_task

    dev = _resolve_device(device)
    config_dict, model_name = load_config(plan.model)
    task = resolve_task(config_dict, plan.task)
    substitutions: list[str] = []
    compute, param_dtype, autocast_dtype, precision_used = _precision(plan.precision, dev, substitutions)
    attention = _attention(plan.attention, dev, compute, substitutions)
    if plan.optimizer is Optimizer.PAGED_ADAMW_8BIT and dev.type == "cpu":
        substitutions.append("paged-adamw-8bit runs unpaged on CPU (bitsandbytes has no paged memory there)")
    parallel = parallel if parallel is not None else _ONE_PROCESS
    substitutions.extend(parallel.substitutions(plan, dev))
    if lr is None:
        lr = (DEFAULT_LR_ADAPTERS if plan.uses_adapters else DEFAULT_LR_FULL) * LR_FACTOR.get(plan.optimizer, 1.0)
    weights_dir = _weights_dir(plan.model) if plan.method is not Method.SCRATCH else None
    text = _text_data(data, tokenizer, plan.seq_len, _vocab_size(config_dict),
                      min_sequences=plan.batch_size * parallel.world_size)
    setup = _Setup(plan=plan, config_dict=config_dict, model_name=model_name, task=task, device=dev,
                   compute_dtype=compute, param_dtype=param_dtype, autocast_dtype=autocast_dtype,
                   precision_used=precision_used, attention=attention, lr=lr, seed=seed, warmup=warmup,
                   max_grad_norm=max_grad_norm, weights_dir=weights_dir, factory=model_factory,
                   pad_id=text.tokenizer.pad_id, substitutions=substitutions, parallel=parallel)
    return setup, text


def run_trial(plan: TrainPlan, *, steps: int = 10, warmup: int = 2, seed: int = 0, device: Any = None,
              data: TextData | str | Path | Sequence[str | Path] | None = None, tokenizer: str | Path | None = None,
              out_dir: str | Path | None = None, memory_cap_bytes: int | None = None,
              model_factory: ModelFactory | None = None, clock: Callable[[], float] = time.perf_counter,
              callbacks: Iterable[Callable[[StepMeasurement], Any]] = (), **options: Any) -> TrialRecord:
    """Run a measured trial to the end and return its TrialRecord; each step goes to every callback.

    Takes the arguments of ``iter_trial`` (``lr``, ``loader_workers``, ``checkpoint``,
    ``max_grad_norm``, ``memory_sample_interval_s`` as keywords).
    """
    callbacks = list(callbacks)
    gen = iter_trial(plan, steps=steps, warmup=warmup, seed=seed, device=device, data=data, tokenizer=tokenizer,
                     out_dir=out_dir, memory_cap_bytes=memory_cap_bytes, model_factory=model_factory, clock=clock,
                     **options)
    while True:
        try:
            measurement = next(gen)
        except StopIteration as stop:
            return stop.value
        for callback in callbacks:
            callback(measurement)


def _checkpoint_roundtrip(owner: list[_Run], setup: _Setup, scratch: Path, out_path: Path | None, stem: str,
                          step: int, batches: list[dict[str, Any]], clock: Callable[[], float]) -> CheckpointResult:
    """Save, continue the original, free it, restore into a fresh build, verify, resume, compare.

    ``owner`` holds the only reference to the original run; it is emptied so that the original is
    freed before the fresh model is built (the round-trip never holds two models at once).
    """
    import torch

    run = owner.pop()

    folder = (out_path / f"{stem}-checkpoint") if out_path is not None else scratch / "checkpoint"
    cuda = setup.device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(setup.device)

    sync()
    start = clock()
    files = _save_checkpoint(run, setup, folder, step)
    sync()
    save_s = clock() - start
    rng = _rng_state(setup.device)

    def replay(target: _Run) -> list[float]:
        queue = iter(batches)
        return [_train_step(target, setup, lambda: next(queue), clock, None)[0] for _ in range(RESUME_STEPS)]

    _set_rng_state(rng)
    uninterrupted = replay(run)
    run = None  # free the original before the fresh model exists: the round-trip never holds two
    _release_memory(setup.device)

    start = clock()
    fresh = _build_run(setup)
    sync()
    rebuild_s = clock() - start
    start = clock()
    saved_rng = _load_checkpoint(fresh, setup, folder)
    _set_rng_state(saved_rng)
    sync()
    restore_s = clock() - start

    from safetensors.torch import load_file

    weights_file = "adapter_model.safetensors" if _is_peft(fresh.model) else "model.safetensors"
    checked, bad = _compare_states(load_file(str(folder / weights_file)), _model_state(fresh.model), "model")
    for name, current, what in ((("optimizer.pt"), fresh.optimizer.state_dict(), "optimizer"),
                                ("scheduler.pt", fresh.scheduler.state_dict(), "scheduler")):
        n, wrong = _compare_states(torch.load(folder / name, weights_only=True), current, what)
        checked += n
        bad += wrong
    n, wrong = _compare_states({"torch": torch.load(folder / "rng_state.pth", weights_only=False)["torch"]},
                               {"torch": torch.get_rng_state()}, "rng")
    checked += n
    bad += wrong
    resumed = replay(fresh)
    del fresh
    return checkpoint_result(
        uninterrupted, resumed, bad=bad, checked=checked, cuda=cuda, what=f"restored {checked} tensors exactly",
        path=str(folder) if out_path is not None else None, files=files, save_s=save_s, rebuild_s=rebuild_s,
        restore_s=restore_s)


def checkpoint_result(uninterrupted: list[float], resumed: list[float], *, bad: list[str], checked: int,
                      cuda: bool, what: str, path: str | None, files: dict[str, int], save_s: float,
                      rebuild_s: float, restore_s: float, prefix: str = "") -> CheckpointResult:
    """Judge a save → restore round-trip: every saved entry equal and the resumed losses matching the
    uninterrupted run (bit-exact on CPU, GPU_LOSS_RTOL on GPU)."""
    diffs = [abs(a - b) for a, b in zip(uninterrupted, resumed, strict=True)]
    max_diff = max(diffs) if diffs else 0.0
    rtol = GPU_LOSS_RTOL if cuda else CPU_LOSS_RTOL
    losses_ok = all(d <= rtol * max(1.0, abs(a)) for d, a in zip(diffs, uninterrupted, strict=True))
    verified = not bad and losses_ok
    if verified:
        how = "bit-exact" if rtol == 0 else f"within {rtol:g} relative"
        message = f"{prefix}{what}; the next {RESUME_STEPS} losses match the uninterrupted run {how}"
    else:
        parts = []
        if bad:
            parts.append(f"{prefix}{len(bad)} saved entries differ after restore (first: {', '.join(bad[:3])})")
        if not losses_ok:
            parts.append(f"{prefix}resumed losses {resumed} differ from uninterrupted {uninterrupted} "
                         f"by {max_diff:.3g}")
        message = "; ".join(parts)
    return CheckpointResult(
        path=path, files=files, bytes_on_disk=sum(files.values()), save_s=save_s, rebuild_s=rebuild_s,
        restore_s=restore_s, tensors_checked=checked, tensors_equal=not bad,
        uninterrupted_losses=tuple(uninterrupted), resumed_losses=tuple(resumed), max_abs_loss_diff=max_diff,
        loss_rtol=rtol, verified=verified, message=message,
    )


# -- ramp ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RampProbe:
    """One short trial of the ramp."""

    batch_size: int
    seq_len: int
    fits: bool
    peak_trial_memory_bytes: int
    median_step_time_s: float | None
    tokens_per_s: float | None
    error: str | None


@dataclass(frozen=True)
class RampResult:
    """The largest micro-batch (at the plan's seq_len), then the longest seq_len at that batch, that fit."""

    probes: tuple[RampProbe, ...]
    max_batch_size: int | None  # None when not even the smallest batch fit
    max_seq_len: int | None  # at max_batch_size
    batch_limited_by: str  # "out of memory", "max_batch_size" or "nothing fit"
    seq_limited_by: str  # "out of memory", "max_seq_len" or "nothing fit"

    def as_dict(self) -> dict[str, Any]:
        return _jsonable(dataclasses.asdict(self))


def ramp(plan: TrainPlan, *, max_batch_size: int = 256, max_seq_len: int | None = None, steps: int = 2,
         warmup: int = 1, memory_cap_bytes: int | None = None, **trial_options: Any) -> RampResult:
    """Find what fits: double the micro-batch from the plan's until out of memory, then the seq_len.

    When the plan's batch does not fit, the batch is halved down to 1 first. Each probe is a short
    trial without the checkpoint round-trip (``steps`` measured after ``warmup``).

    Args:
        plan: the starting point (its batch_size and seq_len).
        max_batch_size: stop doubling the batch here.
        max_seq_len: stop doubling seq_len here; None = the model's max_position_embeddings.
        memory_cap_bytes: simulated device size (see iter_trial).
        trial_options: passed to run_trial (device, data, seed, model_factory, ...).
    """
    from gpuwork.facts.model import load_config

    trial_options = {**trial_options, "checkpoint": False, "out_dir": None}
    if max_seq_len is None:
        config, _ = load_config(plan.model)
        max_seq_len = int(config.get("max_position_embeddings") or config.get("n_positions") or plan.seq_len)
    probes: list[RampProbe] = []

    def probe(batch: int, seq: int) -> bool:
        record = run_trial(plan.replace(batch_size=batch, seq_len=seq), steps=steps, warmup=warmup,
                           memory_cap_bytes=memory_cap_bytes, **trial_options)
        s = record.summary
        probes.append(RampProbe(batch_size=batch, seq_len=seq, fits=record.fits,
                                peak_trial_memory_bytes=record.peak_trial_memory_bytes,
                                median_step_time_s=s.median_step_time_s if s else None,
                                tokens_per_s=s.tokens_per_s if s else None, error=record.error))
        return record.fits

    batch = plan.batch_size
    while not probe(batch, plan.seq_len):  # the plan's batch does not fit: halve until one does
        if batch == 1:
            return RampResult(tuple(probes), None, None, "nothing fit", "nothing fit")
        batch //= 2
    best_batch = batch
    if best_batch < plan.batch_size:
        batch_reason = "out of memory"
    else:
        batch_reason = "max_batch_size"
        while best_batch * 2 <= max_batch_size:
            if not probe(best_batch * 2, plan.seq_len):
                batch_reason = "out of memory"
                break
            best_batch *= 2
    seq = plan.seq_len
    best_seq = seq
    seq_reason = "max_seq_len"
    while seq * 2 <= max_seq_len:
        seq *= 2
        if probe(best_batch, seq):
            best_seq = seq
        else:
            seq_reason = "out of memory"
            break
    return RampResult(tuple(probes), best_batch, best_seq, batch_reason, seq_reason)


# -- helpers: device, precision, environment, data, files ---------------------------------------------------------


def _resolve_device(device: Any) -> torch.device:
    import torch

    if device is None:
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise TrialError(f"device '{device}' asked for, but this torch sees no CUDA GPU: use device='cpu'")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
    elif dev.type != "cpu":
        raise TrialError(f"device '{device}' is not supported: use 'cpu' or 'cuda[:N]'")
    return dev


def _precision(precision: Precision, device: torch.device, substitutions: list[str]
               ) -> tuple[torch.dtype, torch.dtype, torch.dtype | None, str]:
    """(compute dtype, trainable weight dtype, autocast dtype or None, precision used)."""
    import torch

    if precision is Precision.FP32:
        return torch.float32, torch.float32, None, "fp32"
    if device.type == "cpu":
        substitutions.append(f"precision {precision.value} -> fp32 on CPU (16-bit matmuls are 35-40x slower "
                             "on CPUs without bf16 hardware; stack_facts.md)")
        return torch.float32, torch.float32, None, "fp32"
    low = torch.bfloat16 if precision in (Precision.BF16, Precision.BF16_MIXED) else torch.float16
    if low == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        substitutions.append(f"precision {precision.value} -> fp16 equivalent: this GPU has no bf16")
        low = torch.float16
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[low]
    if precision.is_mixed:
        return low, torch.float32, low, f"{name}-mixed"
    return low, low, None, name


def _attention(attention: Attention, device: torch.device, compute: torch.dtype, substitutions: list[str]) -> str:
    import torch

    if attention is Attention.EAGER:
        return "eager"
    if attention is Attention.SDPA:
        return "sdpa"
    reason = None
    if device.type != "cuda":
        reason = "no CUDA device"
    elif compute == torch.float32:
        reason = "flash-attention needs fp16/bf16"
    else:
        try:
            from transformers.utils import is_flash_attn_2_available

            if not is_flash_attn_2_available():
                reason = "the flash-attn package is not installed"
        except ImportError:
            reason = "transformers cannot check for flash-attn"
    if reason:
        substitutions.append(f"attention flash -> sdpa: {reason}")
        return "sdpa"
    return "flash_attention_2"


def _optimizer_class_name(opt: Optimizer) -> str:
    return {
        Optimizer.ADAMW: "torch.optim.AdamW",
        Optimizer.SGD: "torch.optim.SGD(momentum=0.9)",
        Optimizer.ADAFACTOR: "transformers.optimization.Adafactor",
        Optimizer.ADAMW_8BIT: "bitsandbytes.optim.AdamW8bit",
        Optimizer.PAGED_ADAMW_8BIT: "bitsandbytes.optim.PagedAdamW8bit",
        Optimizer.LION: "bitsandbytes.optim.Lion",
    }[opt]


def _vocab_size(config: dict[str, Any]) -> int:
    value = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    if not isinstance(value, int) or value < 1:
        raise ModelError("the model config has no vocab_size: the trial cannot size its tokenizer")
    return value


def _weights_dir(ref: str) -> Path | None:
    """A local folder with pretrained weights next to the config, if the plan's model is one."""
    from gpuwork.facts.paths import models_dir

    if (models_dir() / f"{ref}.json").is_file():  # a preset name: config only, never a folder
        return None
    path = Path(ref).expanduser()
    folder = path if path.is_dir() else path.parent if path.is_file() else None
    if folder is None:
        return None
    if any(folder.glob("*.safetensors")) or (folder / "pytorch_model.bin").is_file():
        return folder
    return None


def _text_data(data: Any, tokenizer: Any, seq_len: int, vocab_size: int, *, min_sequences: int) -> TextData:
    from gpuwork.measure.textdata import BUILTIN_DATASET, TextData, prepare_text_data

    if isinstance(data, TextData):
        if data.seq_len == seq_len and data.sequences.shape[0] >= min_sequences:
            return data
        files = None if data.source.name == BUILTIN_DATASET else [f.path for f in data.source.files]
        return prepare_text_data(seq_len, vocab_size, files=files, tokenizer=data.tokenizer,
                                 min_sequences=min_sequences)
    return prepare_text_data(seq_len, vocab_size, files=data, tokenizer=tokenizer, min_sequences=min_sequences)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).stem if name.endswith(".json") else name).strip("_") or "model"


def _unique_stem(folder: Path, stem: str) -> str:
    candidate, n = stem, 2
    while (folder / f"{candidate}.json").exists() or (folder / f"{candidate}-checkpoint").exists():
        candidate = f"{stem}-{n}"
        n += 1
    return candidate


def _scratch_dir(stack: contextlib.ExitStack, out_path: Path | None, stem: str) -> Path:
    """A folder for temporary files, removed when the trial ends: inside out_dir when given."""
    if out_path is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpuwork-trial-")))
    folder = out_path / f".{stem}-tmp"
    folder.mkdir(parents=True, exist_ok=True)
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return folder


@contextlib.contextmanager
def _quiet_libraries() -> Iterator[None]:
    """Silence transformers' progress bars and info logs during the trial, then restore them."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _useful_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """Warnings worth keeping in the record (deprecations are noise for a sizing run)."""
    keep = []
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, FutureWarning, PendingDeprecationWarning)):
            continue
        keep.append(f"{w.category.__name__}: {str(w.message).splitlines()[0][:300]}")
    return keep


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - not installed
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _driver_version() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            value = pynvml.nvmlSystemGetDriverVersion()
            return value.decode() if isinstance(value, bytes) else str(value)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML missing: try nvidia-smi
        pass
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True)
        return out.stdout.strip().splitlines()[0] or None
    except Exception:  # noqa: BLE001 - no driver tools
        return None


def _environment(device: torch.device) -> TrialEnvironment:
    import psutil
    import torch

    ram = int(psutil.virtual_memory().total)
    cpu = _cpu_model()
    common = dict(
        python=platform.python_version(), platform=platform.platform(), torch=torch.__version__,
        transformers=_version("transformers"), peft=_version("peft"), bitsandbytes=_version("bitsandbytes"),
        accelerate=_version("accelerate"), tokenizers=_version("tokenizers"), cpu_model=cpu,
        cpu_logical_cores=os.cpu_count() or 1, torch_threads=torch.get_num_threads(), ram_total_bytes=ram,
    )
    if device.type != "cuda":
        return TrialEnvironment(device="cpu", device_name=cpu, device_total_bytes=ram, **common)
    props = torch.cuda.get_device_properties(device)
    _, total = torch.cuda.mem_get_info(device)
    return TrialEnvironment(
        device=str(device), device_name=torch.cuda.get_device_name(device), device_total_bytes=int(total),
        cuda_version=torch.version.cuda, cudnn_version=torch.backends.cudnn.version(),
        driver_version=_driver_version(), gpu_compute_capability=f"{props.major}.{props.minor}",
        gpu_count=torch.cuda.device_count(), **common,
    )


__all__ = [
    "CHECKPOINT_WRITE_BYTES_S",
    "TRIAL_TIME_MARGIN",
    "CheckpointResult",
    "Extrapolation",
    "ModelFactory",
    "OfferCost",
    "Parallel",
    "ParallelInfo",
    "RampProbe",
    "RampResult",
    "RankResult",
    "StepMeasurement",
    "TrialEnvironment",
    "TrialError",
    "TrialProtocol",
    "TrialRecord",
    "TrialSummary",
    "compare",
    "extrapolate",
    "iter_trial",
    "ramp",
    "run_trial",
    "summarize",
]
