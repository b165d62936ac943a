"""The trial record: its schema, reading and writing it, and the summaries computed from it. No torch import.

Every runner writes this one record (``gpuwork.measure.trial`` for gpuwork's own loop,
``gpuwork.measure.distributed`` for a torchrun group, ``gpuwork.measure.hf`` for a user's Trainer or loop),
and every reader (``compare``, ``gpuwork.measure.extrapolation``, ``gpuwork.measure.calibration``, the CLI's
``compare`` / ``request --record`` / ``report``, the tables) reads it from here, without importing a runner.

- ``TrialRecord`` and its parts (``StepMeasurement``, ``TrialProtocol``, ``TrialEnvironment``,
  ``TrialSummary``, ``Stability``, ``CheckpointResult``, ``ParallelInfo``, ``RankResult``):
  frozen dataclasses, JSON round-trips with ``to_json`` / ``from_json``; older records (English
  text in place of coded messages, the callback's ``own_run`` section) are read too.
- ``summarize``: the measured steps' summary (median, p90, interval, data wait, peaks).
- ``compare``: rows for a side-by-side table of records.
- ``merge_ranks`` / ``rank_result`` / ``rank_steps``: one record for a group of processes from each
  rank's record, and back.

All pure except ``TrialRecord.to_json(path)`` (an atomic write, ``gpuwork.measure.records``) and
``TrialRecord.from_json(Path)`` (reads the file).
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.measure import records
from gpuwork.measure.coded import all_from_json, from_json, to_json
from gpuwork.measure.errors import TrialError
from gpuwork.measure.stability import CONFIDENCE, step_time_stats
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan

SCHEMA_VERSION = 1  # bump when a record field changes meaning
DATA_WAIT_THRESHOLD = 0.05  # data wait above this share of step time: "the device waits for data"
# TrialRecord.status: "running" (rewritten after each step), "interrupted" (a signal ended it; resumable),
# "complete" (every step ran, or out of memory ended it: see fits)
STATUS_RUNNING, STATUS_INTERRUPTED, STATUS_COMPLETE = "running", "interrupted", "complete"


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
    device_total_bytes: int | None = None  # CUDA: memory in use on the device after the step (mem_get_info
    #   total - free: reserved + CUDA context + other processes, what nvidia-smi shows); None on CPU
    padding_tokens: int | None = None  # padding in the step's batches, not counted in ``tokens``;
    #   gpuwork's own trial packs text (0); the callback counts the attention mask's zeros


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
    substitutions: tuple[Msg, ...]  # every place the trial did not run exactly what the plan says
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
    verdict: Msg  # trial.data_wait.bound / trial.data_wait.keeps_up
    first_loss: float
    last_loss: float
    losses_finite: bool
    peak_trial_memory_bytes: int
    cuda_peak_allocated_bytes: int | None
    cuda_peak_reserved_bytes: int | None
    rss_peak_bytes: int | None
    warmup_mean_step_time_s: float | None  # how slow the first steps were, for the record
    # the median step's 95 % confidence interval and drift (gpuwork.measure.stability; None: too few steps,
    # or a record written before they were measured)
    step_time_low_s: float | None = None
    step_time_high_s: float | None = None
    step_time_coverage: float | None = None  # the interval's exact coverage, >= step_time_confidence
    step_time_half_width: float | None = None  # max distance from the median to an end, as a share of it
    step_time_confidence: float | None = None
    step_time_interval_method: str | None = None
    drift_per_100_steps: float | None = None  # least-squares slope of step time x 100 steps / median


@dataclass(frozen=True)
class Stability:
    """``--until-stable``: the rule the trial ran under and whether it was met."""

    tolerance: float  # stop once the interval lies within +-tolerance of the median
    confidence: float
    min_steps: int  # measured steps run before the first check
    max_steps: int  # measured steps at most
    converged: bool  # the interval met the tolerance (False: the cap, a signal or out of memory came first)
    measured_steps: int
    half_width: float | None  # at the last measured step

    @classmethod
    def judged(cls, summary: TrialSummary | None, *, tolerance: float, min_steps: int, max_steps: int,
               converged: bool) -> Stability:
        """The rule a trial ran under, with the measured steps and interval of ``summary`` (what was judged)."""
        return cls(tolerance=tolerance, confidence=CONFIDENCE, min_steps=min_steps, max_steps=max_steps,
                   converged=converged, measured_steps=summary.measured_steps if summary else 0,
                   half_width=summary.step_time_half_width if summary else None)


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
    loss_rtol: float  # 0 on CPU (bit-exact), checkpoint.GPU_LOSS_RTOL on CUDA
    verified: bool  # tensors equal and losses within loss_rtol
    message: Msg  # what was checked and how it compared (checkpoint.* codes)


@dataclass(frozen=True)
class TrialRecord:
    """Everything a trial measured; JSON round-trips with ``to_json`` / ``from_json``."""

    protocol: TrialProtocol
    environment: TrialEnvironment
    summary: TrialSummary | None  # None when no measured step completed
    steps: tuple[StepMeasurement, ...]  # warm-up included (is_warmup=True)
    checkpoint: CheckpointResult | None
    fits: bool
    error: Msg | None  # what ran out of memory when fits is False (trial.out_of_memory, trial.memory_cap_exceeded)
    peak_trial_memory_bytes: int  # highest over all steps (and at the failure when fits is False)
    created_utc: str
    duration_s: float  # the whole trial: build, steps, checkpoint round-trip
    notes: tuple[str, ...] = ()  # library warnings seen while building (the libraries' own English text)
    saved_to: str | None = None  # the JSON file written in out_dir
    schema_version: int = SCHEMA_VERSION
    parallel: ParallelInfo | None = None  # set when the trial ran as several processes (torchrun)
    ranks: tuple[RankResult, ...] = ()  # one entry per process of a multi-process trial
    status: str = STATUS_COMPLETE  # STATUS_RUNNING / STATUS_INTERRUPTED / STATUS_COMPLETE
    run_id: str | None = None  # the name of the record and checkpoint files (records.new_run_id)
    resumed_from: str | None = None  # the run id of the interrupted trial this one went on from
    stop_signal: str | None = None  # "SIGINT" / "SIGTERM" when status is interrupted
    write_error: Msg | None = None  # a write to out_dir that failed (disk full, read-only): error.trial.*
    stability: Stability | None = None  # set when the trial ran until its step time was stable
    source: str = "gpuwork trial"  # what measured: "gpuwork trial", "gpuwork.hf.GpuworkCallback", "gpuwork.hf.measure"
    evaluation: dict[str, Any] | None = None  # the evaluation passes timed: passes, times_s, mean_s,
    #   share_of_run (of the run's training time), run_steps, run_eval_passes[, eval_strategy, ranks]
    inferred: dict[str, Any] | None = None  # plan field -> {"value", "from"}: how the plan of a user's run was read
    saves: tuple[dict[str, Any], ...] = ()  # every checkpoint save a user's run made: path, save_s, bytes_on_disk

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
        """JSON-ready data; messages as ``Msg.as_dict()``."""
        return to_json(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialRecord:
        """A record from ``as_dict()`` data; records written before messages were coded (English text in
        ``verdict``, ``error``, ``substitutions``, ``message``) are read too (see ``gpuwork.measure.coded``)."""
        if not isinstance(data, dict):
            raise TrialError(msg("error.trial.record_not_object", kind=type(data).__name__))
        if data.get("schema_version") != SCHEMA_VERSION:
            raise TrialError(msg("error.trial.record_schema", found=str(data.get("schema_version")),
                                 expected=SCHEMA_VERSION))
        data = _own_run_fields(dict(data))
        protocol = dict(data["protocol"])
        protocol["substitutions"] = all_from_json(protocol.get("substitutions"))
        data["protocol"] = _build(TrialProtocol, protocol)
        data["environment"] = _build(TrialEnvironment, data["environment"])
        if data.get("summary"):
            data["summary"] = _build(TrialSummary, {**data["summary"], "verdict": from_json(data["summary"]["verdict"])})
        else:
            data["summary"] = None
        data["steps"] = tuple(_build(StepMeasurement, s) for s in data["steps"])
        if data.get("checkpoint"):
            checkpoint = data["checkpoint"]
            data["checkpoint"] = _build(CheckpointResult, {**checkpoint, "message": from_json(checkpoint["message"])})
        else:
            data["checkpoint"] = None
        data["error"] = from_json(data.get("error"))
        data["write_error"] = from_json(data.get("write_error"))
        data["notes"] = tuple(data.get("notes", ()))
        data["parallel"] = _build(ParallelInfo, data["parallel"]) if data.get("parallel") else None
        data["stability"] = _build(Stability, data["stability"]) if data.get("stability") else None
        data["ranks"] = tuple(_build(RankResult, {**r, "error": from_json(r.get("error"))})
                              for r in data.get("ranks") or ())
        return _build(cls, data)

    def to_json(self, path: str | Path | None = None) -> str:
        """The record as JSON text; also written to ``path`` when given, atomically (a temporary file renamed
        over it: a reader never sees half a record); RecordWriteError names the folder when that fails."""
        text = json.dumps(self.as_dict(), indent=1, allow_nan=True) + "\n"
        if path is not None:
            records.write_text(Path(path), text)
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> TrialRecord:
        """A record from a JSON file (a ``Path``) or from JSON text (a ``str``: always parsed as text, never
        opened as a path, so uploaded content such as "/dev/zero" cannot make gpuwork read a file)."""
        text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
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
    error: Msg | None  # as TrialRecord.error
    checkpoint_verified: bool | None


def _own_run_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A record the user's-run callback wrote before these were fields (its JSON section "own_run"), with
    that section's source, inferred plan, evaluation, saves and per-step padding / device total as fields."""
    own = data.get("own_run")
    if not isinstance(own, dict):
        return data
    extra = {e.get("step"): e for e in own.get("steps") or ()}
    steps = [{**s, **{k: extra.get(s.get("step"), {}).get(k) for k in ("padding_tokens", "device_total_bytes")}}
             for s in data.get("steps") or ()]
    return {**data, "steps": steps, "source": own.get("source", "gpuwork trial"), "inferred": own.get("inferred"),
            "evaluation": own.get("evaluation"), "saves": own.get("saves") or ()}


def _build(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    for f in dataclasses.fields(cls):
        if f.name in values and isinstance(values[f.name], list) and "tuple" in str(f.type):
            values[f.name] = tuple(values[f.name])
    return cls(**values)


# -- summaries (pure) ------------------------------------------------------------------------------------


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
        verdict = msg("trial.data_wait.bound", device=device_kind, share=fraction, threshold=DATA_WAIT_THRESHOLD)
    else:
        verdict = msg("trial.data_wait.keeps_up", share=fraction)
    warm = [s.step_time_s for s in steps if s.is_warmup]
    tokens = round(statistics.fmean(s.tokens for s in measured))  # batches of a user's run vary in real tokens
    stats = step_time_stats([s.step_time_s for s in measured], [s.step for s in measured])

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
        step_time_low_s=stats.low_s,
        step_time_high_s=stats.high_s,
        step_time_coverage=stats.coverage,
        step_time_half_width=stats.half_width,
        step_time_confidence=stats.confidence,
        step_time_interval_method=stats.method,
        drift_per_100_steps=stats.drift_per_100_steps,
    )


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default method) of sorted values."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def compare(records: Sequence[TrialRecord], price_per_hour: float | Sequence[float | None] | None = None,
            *, estimates: bool = False) -> list[dict[str, Any]]:
    """Rows for a side-by-side table of trials (one dict per record, same keys in each).

    Args:
        records: trial records.
        price_per_hour: a rental price per GPU-hour (one for all, or one per record, None to skip);
            gives ``cost_per_1m_tokens`` = price x GPUs / 3600 x seconds per 1M tokens at the measured
            speed (GPUs = the trial's processes; tokens/s of a multi-process trial is all of them);
            ``cost_per_1m_tokens_low`` / ``_high`` the same at the ends of the step time's 95 % interval.
        estimates: add ``estimate``, the estimate for exactly each record's plan next to what it measured
            (``gpuwork.measure.calibration.beside``: memory per total, median step time, tokens/s, each with
            its error measured / estimated - 1), and ``calibration``, the ``Calibration`` it came from (None
            when the record has no measured step). Off by default: it builds each model's estimate.
    """
    if price_per_hour is None or isinstance(price_per_hour, (int, float)):
        prices = [price_per_hour] * len(records)
    else:
        prices = list(price_per_hour)
        if len(prices) != len(records):
            raise TrialError(msg("error.trial.prices", prices=len(prices), records=len(records)))
    rows = []
    for record, price in zip(records, prices, strict=True):
        p, s = record.protocol, record.summary
        tokens_per_s = s.tokens_per_s if s else None
        cost = cost_low = cost_high = None
        low_s = s.step_time_low_s if s else None
        high_s = s.step_time_high_s if s else None
        if price is not None and tokens_per_s:
            cost = price * record.world_size / 3600.0 * (1e6 / tokens_per_s)
            if low_s is not None and high_s is not None:  # cost per token is proportional to the step time
                cost_low, cost_high = (cost * t / s.median_step_time_s for t in (low_s, high_s))
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
            "step_time_low_s": low_s,
            "step_time_high_s": high_s,
            "step_time_half_width": s.step_time_half_width if s else None,
            "drift_per_100_steps": s.drift_per_100_steps if s else None,
            "measured_steps": s.measured_steps if s else 0,
            "converged": record.stability.converged if record.stability else None,
            "source": record.source,
            "tokens_per_s": tokens_per_s,
            "peak_memory_bytes": record.peak_trial_memory_bytes,
            "data_wait_fraction": s.data_wait_fraction if s else None,
            "checkpoint_verified": record.checkpoint.verified if record.checkpoint else None,
            "price_per_hour": price,
            "cost_per_1m_tokens": cost,
            "cost_per_1m_tokens_low": cost_low,
            "cost_per_1m_tokens_high": cost_high,
        })
        if estimates:
            rows[-1].update(_estimate_beside(record))
    return rows


def _estimate_beside(record: TrialRecord) -> dict[str, Any]:
    from gpuwork.measure.calibration import CalibrationError, beside, calibrate

    try:
        cal = calibrate(record)
    except CalibrationError:
        cal = None  # beside() says why
    return {"estimate": beside(record, cal), "calibration": cal}


# -- a group of processes: one record from each rank's (pure) --------------------------------------------


def rank_steps(record: TrialRecord, rank: int, upto: int) -> list[StepMeasurement]:
    """Rank ``rank``'s first ``upto`` steps as its own process measured them, from a merged record: its loss,
    time and data wait (``record.ranks``) and its share of the tokens; memory is the merged step's (the
    highest rank's). Merging these again (``merge_ranks``) gives the record's steps back exactly."""
    own = record.ranks[rank]
    out = []
    for i, m in enumerate(record.steps[:upto]):
        time_s, tokens = own.step_times_s[i], m.tokens // record.world_size
        out.append(dataclasses.replace(m, loss=own.losses[i], step_time_s=time_s, data_wait_s=own.data_wait_s[i],
                                       tokens=tokens, tokens_per_s=tokens / time_s if time_s > 0 else math.inf))
    return out


# -- merging the ranks' records (pure) --------------------------------------------------------------------------


def rank_result(record: TrialRecord, rank: int, *, param_bytes: int, trainable_param_bytes: int,
                optimizer_state_bytes: int, params_sha256: str, fits: bool | None = None,
                error: Msg | None = None) -> RankResult:
    """What one rank reports for the merged record: its record's figures and its model's sizes and digest
    (``fits``/``error``: the record's unless given). gpuwork's ranks and the Trainer callback's use it."""
    s = record.summary
    return RankResult(
        rank=rank, device=record.environment.device, device_name=record.environment.device_name,
        losses=tuple(m.loss for m in record.steps), step_times_s=tuple(m.step_time_s for m in record.steps),
        data_wait_s=tuple(m.data_wait_s for m in record.steps), tokens_per_step=record.protocol.tokens_per_step,
        median_step_time_s=s.median_step_time_s if s else None, tokens_per_s=s.tokens_per_s if s else None,
        peak_trial_memory_bytes=record.peak_trial_memory_bytes,
        cuda_peak_allocated_bytes=s.cuda_peak_allocated_bytes if s else None,
        cuda_peak_reserved_bytes=s.cuda_peak_reserved_bytes if s else None,
        rss_peak_bytes=s.rss_peak_bytes if s else None, param_bytes=param_bytes,
        trainable_param_bytes=trainable_param_bytes, optimizer_state_bytes=optimizer_state_bytes,
        params_sha256=params_sha256, fits=record.fits if fits is None else fits,
        error=record.error if fits is None else error,
        checkpoint_verified=record.checkpoint.verified if record.checkpoint else None)


def _max_or_none(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def merge_ranks(records: Sequence[TrialRecord], ranks: Sequence[RankResult], parallel: ParallelInfo,
                saved_to: str | None = None) -> TrialRecord:
    """One record for the whole group from each rank's record (rank order). Pure.

    Per step (the steps every rank completed): step time and data wait = the slowest rank's, tokens =
    the sum, tokens/s = summed tokens / slowest time, memory = the highest rank's, loss = the mean of
    the ranks' own losses, gradient norm and learning rate = rank 0's (the same everywhere).
    """
    if not records or len(records) != len(ranks):
        raise TrialError(msg("error.trial.merge_ranks"))
    first = records[0]
    count = min(len(r.steps) for r in records)
    steps: list[StepMeasurement] = []
    for i in range(count):
        row = [r.steps[i] for r in records]
        time_s = max(m.step_time_s for m in row)
        tokens = sum(m.tokens for m in row)
        steps.append(StepMeasurement(
            step=row[0].step, is_warmup=row[0].is_warmup, loss=statistics.fmean(m.loss for m in row),
            step_time_s=time_s, data_wait_s=max(m.data_wait_s for m in row), tokens=tokens,
            tokens_per_s=tokens / time_s if time_s > 0 else math.inf, grad_norm=row[0].grad_norm,
            learning_rate=row[0].learning_rate, trial_memory_bytes=max(m.trial_memory_bytes for m in row),
            cuda_peak_allocated_bytes=_max_or_none(m.cuda_peak_allocated_bytes for m in row),
            cuda_peak_reserved_bytes=_max_or_none(m.cuda_peak_reserved_bytes for m in row),
            rss_peak_bytes=_max_or_none(m.rss_peak_bytes for m in row),
            rss_after_step_bytes=_max_or_none(m.rss_after_step_bytes for m in row),
            device_total_bytes=_max_or_none(m.device_total_bytes for m in row),
            padding_tokens=_sum_or_none(m.padding_tokens for m in row)))
    protocol = dataclasses.replace(first.protocol, tokens_per_step=sum(r.protocol.tokens_per_step for r in records))
    checkpoint = first.checkpoint
    if checkpoint is not None:
        others = [r.checkpoint for r in records[1:]]
        all_ok = checkpoint.verified and all(c is not None and c.verified for c in others)
        failed = tuple(c.message for c in [checkpoint, *others] if c is not None and not c.verified)
        checkpoint = dataclasses.replace(
            checkpoint, verified=all_ok,
            tensors_checked=sum(c.tensors_checked for c in [checkpoint, *others] if c is not None),
            tensors_equal=all(c is not None and c.tensors_equal for c in [checkpoint, *others]),
            save_s=max(c.save_s for c in [checkpoint, *others] if c is not None),
            restore_s=max(c.restore_s for c in [checkpoint, *others] if c is not None),
            rebuild_s=max(c.rebuild_s for c in [checkpoint, *others] if c is not None),
            max_abs_loss_diff=max(c.max_abs_loss_diff for c in [checkpoint, *others] if c is not None),
            message=msg("checkpoint.all_ranks", ranks=len(records), what=_unranked(checkpoint.message)) if all_ok
            else msg("checkpoint.not_verified", parts=failed) if failed else msg("checkpoint.rank_skipped"))
    errors = tuple(msg("trial.rank_error", rank=rr.rank, error=r.error)
                   for r, rr in zip(records, ranks, strict=True) if r.error)
    kind = "GPU" if first.environment.device != "cpu" else "CPU"
    summary = summarize(steps, kind)
    stability = first.stability
    if stability is not None:  # judged on the merged (slowest-rank) times: say what was judged
        stability = dataclasses.replace(stability, measured_steps=summary.measured_steps if summary else 0,
                                        half_width=summary.step_time_half_width if summary else None)
    return TrialRecord(
        protocol=protocol, environment=first.environment, summary=summary, steps=tuple(steps),
        checkpoint=checkpoint, fits=all(r.fits for r in records),
        error=(errors[0] if len(errors) == 1 else msg("trial.rank_errors", errors=errors)) if errors else None,
        peak_trial_memory_bytes=max(r.peak_trial_memory_bytes for r in records), created_utc=first.created_utc,
        duration_s=max(r.duration_s for r in records), notes=tuple(dict.fromkeys(n for r in records for n in r.notes)),
        saved_to=saved_to, parallel=parallel, ranks=tuple(ranks), stability=stability, source=first.source,
        status=first.status, run_id=first.run_id, resumed_from=first.resumed_from, stop_signal=first.stop_signal,
        write_error=first.write_error)


def _unranked(message: Msg) -> Msg:
    """A rank's checkpoint message without its "rank N:" wrapper (the merged record speaks for all ranks)."""
    return message["what"] if message.code == "checkpoint.on_rank" else message


__all__ = [
    "DATA_WAIT_THRESHOLD",
    "SCHEMA_VERSION",
    "STATUS_COMPLETE",
    "STATUS_INTERRUPTED",
    "STATUS_RUNNING",
    "CheckpointResult",
    "ParallelInfo",
    "RankResult",
    "Stability",
    "StepMeasurement",
    "TrialEnvironment",
    "TrialError",
    "TrialProtocol",
    "TrialRecord",
    "TrialSummary",
    "compare",
    "merge_ranks",
    "rank_result",
    "rank_steps",
    "summarize",
]
