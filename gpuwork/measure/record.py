"""The trial record: its schema, reading and writing it, and the summaries computed from it. No torch import.

Every runner writes this one record (``gpuwork.measure.trial`` for gpuwork's own loop,
``gpuwork.measure.distributed`` for a torchrun group, ``gpuwork.measure.hf`` for a user's Trainer or loop),
and every reader (``compare``, ``gpuwork.measure.extrapolation``, ``gpuwork.measure.calibration``, the CLI's
``compare`` / ``request --record`` / ``report``, the tables) reads it from here, without importing a runner.

- ``TrialRecord`` and its parts (``StepMeasurement``, ``TrialProtocol``, ``TrialEnvironment``,
  ``TrialSummary``, ``Stability``, ``CheckpointResult``, ``ParallelInfo``, ``RankResult``):
  frozen dataclasses, JSON round-trips with ``to_json`` / ``from_json``; a record of another
  ``SCHEMA_VERSION`` is refused with one line naming both versions. A record file keeps its steps beside it (``<run>.steps.jsonl``, one line a step, appended as measured:
  ``steps_path``, ``step_line``, ``TrialRecord.on_disk``); ``from_json`` reads both, through
  ``gpuwork.facts.reading``, and ``from_dict`` checks every number against a range with both ends and
  escapes control characters in strings.
- ``summarize`` / ``RunningSummary``: the measured steps' summary (median, p90, interval, data wait, peaks),
  all at once or kept as steps come at a cost per step that does not grow.
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

from gpuwork.facts import reading
from gpuwork.measure import records
from gpuwork.measure.coded import all_from_json, from_json, to_json
from gpuwork.measure.errors import TrialError
from gpuwork.measure.stability import CONFIDENCE, RunningStepTimes
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.units import DAY_S, NOT_WHOLE, Range

# bump when the record's layout or a field's meaning changes; a record of another version is refused with one line
# (error.trial.record_schema). 2: the steps live beside the JSON, one line each (<run>.steps.jsonl, ``steps_file`` and
# ``step_count`` in the JSON), the user's-run figures are fields (no "own_run" section), every message is coded
SCHEMA_VERSION = 2
DATA_WAIT_THRESHOLD = 0.05  # data wait above this share of step time: "the device waits for data"
STEPS_SUFFIX = ".steps.jsonl"  # <run>.json's steps, one JSON object a line, appended as they are measured
# TrialRecord.status: "running" (its steps appended as they come), "interrupted" (a signal ended it; resumable),
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
    grad_norm: float | None  # total L2 norm of the trainable gradients before clipping; None: not measured (a run
    #   that never clips: no clip_grad_norm_ call)
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
    # attention "sdpa": the plan's sdpa_backend ("" for another attention, and in records written before it was kept)
    sdpa_backend_requested: str = ""
    # the backend torch gave the model's attention call under the trial's restriction (gpuwork.measure.sdpa.check:
    # flash / efficient / cudnn / math; "auto" when torch could not be asked); "" when the model did not run SDPA,
    # or the record was written before it was kept
    sdpa_backend_used: str = ""


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
    # the plan's execution switches the trial ran under (tf32, deterministic, launch_blocking,
    # expandable_segments; gpuwork.measure.switches): one the plan asks for and this lacks is in the substitutions
    switches: tuple[str, ...] = ()


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
            if self.parallel.mesh_shape is not None and len(self.parallel.mesh_shape) > 1:  # replicas x shard group
                label += "(" + "x".join(str(n) for n in self.parallel.mesh_shape) + ")"
        return label

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data; messages as ``Msg.as_dict()``."""
        return to_json(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialRecord:
        """A record from ``as_dict()`` data (its steps inside); a record of another schema version is refused
        (``error.trial.record_schema``)."""
        if not isinstance(data, dict):
            raise TrialError(msg("error.trial.record_not_object", kind=type(data).__name__))
        data = _escaped(data)  # no control character of a record reaches a terminal raw
        _check_schema(data)
        if data.get("steps_file") and data.get("steps") == [] and data.get("step_count"):
            raise TrialError(msg("error.trial.record_steps_elsewhere", file=str(data["steps_file"])[:200]))
        data = dict(data)
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
        record = _build(cls, data)
        _check_numbers(record)
        return record

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
        opened as a path, so uploaded content such as "/dev/zero" cannot make gpuwork read a file).

        A file is read through ``gpuwork.facts.reading`` (a regular file within ``reading.RECORD``'s size) with
        its steps file beside it (``<name>.steps.jsonl``, see ``steps_path``) or its steps inside the JSON (as
        ``to_json`` writes them); its numbers are checked (``from_dict``). Any problem with a file is one
        ``TrialError`` naming it. A running record whose steps file holds more steps than its summary counted
        (the trial was killed between two summaries) gets its summary and peak recomputed from the steps."""
        if not isinstance(source, Path):
            return cls.from_dict(reading.parse_json(source, "(record text)"))
        path = str(source)
        try:
            data = reading.load_json(source, reading.RECORD, missing=msg("error.trial.record_missing", path=path))
        except reading.ReadError as exc:
            raise TrialError(exc.msg) from None
        except json.JSONDecodeError as exc:
            raise TrialError(msg("error.trial.record_json", path=path, line=exc.lineno, detail=exc.msg)) from None
        if not isinstance(data, dict):
            raise TrialError(msg("error.trial.not_a_record", path=path, kind=type(data).__name__, detail="-"))
        counted = None
        if data.get("steps_file") and data.get("schema_version") == SCHEMA_VERSION:
            counted = data.get("step_count")
            data = _with_steps_file(data, source)
        try:
            record = cls.from_dict(data)
        except TrialError as exc:
            raise TrialError(msg("error.trial.record_in", path=path,
                                 error=exc.msg or msg("measure.text", text=str(exc)[:200]))) from None
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise TrialError(msg("error.trial.not_a_record", path=path, kind=type(exc).__name__,
                                 detail=_escape(str(exc)[:200]))) from None
        if counted is not None and len(record.steps) > counted and record.status == STATUS_RUNNING:
            kind = "GPU" if record.environment.device != "cpu" else "CPU"
            record = dataclasses.replace(
                record, summary=summarize(record.steps, kind),
                peak_trial_memory_bytes=max([record.peak_trial_memory_bytes,
                                             *(m.trial_memory_bytes for m in record.steps)]))
        return record

    def on_disk(self, steps_file: str, step_count: int) -> dict[str, Any]:
        """The JSON of the record file whose steps are in ``steps_file`` (one line each, ``step_line``): the
        record without its steps or the ranks' per-step figures, so writing it costs the same at any step."""
        bare = dataclasses.replace(self, steps=(), ranks=tuple(
            dataclasses.replace(r, losses=(), step_times_s=(), data_wait_s=()) for r in self.ranks))
        return {**bare.as_dict(), "steps_file": steps_file, "step_count": step_count}


def steps_path(record_path: str | Path) -> Path:
    """The steps file of a record file: ``<name>.json`` -> ``<name>.steps.jsonl``, in the same folder."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.stem + STEPS_SUFFIX)


def step_line(m: StepMeasurement, ranks: Sequence[tuple[float, float, float]] | None = None) -> bytes:
    """One line of a steps file: the step's fields, and for a group each rank's (loss, step time, data wait)."""
    data: dict[str, Any] = {f.name: getattr(m, f.name) for f in dataclasses.fields(StepMeasurement)}
    if ranks is not None:
        data["ranks"] = [list(r) for r in ranks]
    return (json.dumps(data, allow_nan=True, separators=(",", ":")) + "\n").encode("utf-8")


def record_step_rows(record: TrialRecord) -> list[tuple[StepMeasurement, list[tuple[float, float, float]] | None]]:
    """Each step of ``record`` with its ranks' (loss, step time, data wait), as ``step_line`` takes them."""
    rows = []
    for i, m in enumerate(record.steps):
        ranks = None
        if record.ranks and all(i < len(r.losses) for r in record.ranks):
            ranks = [(r.losses[i], r.step_times_s[i], r.data_wait_s[i]) for r in record.ranks]
        rows.append((m, ranks))
    return rows


def _with_steps_file(data: dict[str, Any], record_path: Path) -> dict[str, Any]:
    """The record's data with the steps (and the ranks' per-step figures) read from its steps file.

    Only a file name in the record's own folder is followed; a last line without its newline (a kill
    mid-write) is left out; the file must hold at least the steps the record counted."""
    name = data["steps_file"]
    path = str(record_path)
    if not isinstance(name, str) or Path(name).name != name or name in (".", ".."):
        raise TrialError(msg("error.trial.record_steps_name", path=path, name=_escape(str(name)[:200])))
    file = record_path.parent / name
    try:
        text = reading.read_text(file, reading.RECORD, missing=msg("error.trial.record_steps_missing",
                                                                   path=path, steps=str(file)))
    except reading.ReadError as exc:
        raise TrialError(exc.msg) from None
    return with_steps_text(data, text, file)


def with_steps_text(data: dict[str, Any], text: str, file: str | Path) -> dict[str, Any]:
    """The record's data with the steps parsed from the text of its steps file (``file`` names it in errors):
    a record read from disk, or uploaded together with its steps file."""
    lines = text.split("\n")
    lines.pop()  # the part after the last newline: empty, or a line a kill cut short
    steps, per_rank = [], []
    for number, line in enumerate(lines, 1):
        try:
            item = reading.parse_json(line, file)
        except json.JSONDecodeError as exc:
            raise TrialError(msg("error.trial.record_steps_line", path=str(file), line=number,
                                 detail=exc.msg)) from None
        except reading.ReadError as exc:
            raise TrialError(exc.msg) from None
        if not isinstance(item, dict):
            raise TrialError(msg("error.trial.record_steps_line", path=str(file), line=number,
                                 detail=type(item).__name__))
        per_rank.append(item.pop("ranks", None))
        steps.append(item)
    counted = data.get("step_count")
    if isinstance(counted, int) and not isinstance(counted, bool) and len(steps) < counted:
        raise TrialError(msg("error.trial.record_steps_short", path=str(file), found=len(steps), counted=counted))
    data = {**data, "steps": steps}
    ranks = data.get("ranks")
    if isinstance(ranks, list) and ranks:
        rebuilt = []
        for r, rank in enumerate(ranks):
            rows = [row[r] for row in per_rank if isinstance(row, list) and r < len(row)]
            if not isinstance(rank, dict) or len(rows) != len(per_rank) or any(
                    not isinstance(row, list) or len(row) != 3 for row in rows):
                raise TrialError(msg("error.trial.record_steps_ranks", path=str(file), rank=r))
            rebuilt.append({**rank, "losses": [row[0] for row in rows], "step_times_s": [row[1] for row in rows],
                            "data_wait_s": [row[2] for row in rows]})
        data["ranks"] = rebuilt
    return data


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
    # FSDP2's device mesh: (ranks,) over all of them, or (replicas, ranks per shard group) for hsdp / hsdp-zero2;
    # None for DDP (and in records written before the mesh was recorded)
    mesh_shape: tuple[int, ...] | None = None
    mesh_dim_names: tuple[str, ...] | None = None  # ("shard",) or ("replicate", "shard")


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


def _check_schema(data: dict[str, Any]) -> None:
    """A record of this ``SCHEMA_VERSION``, else one TrialError naming the version found and the one read."""
    found = data.get("schema_version")
    if isinstance(found, int) and not isinstance(found, bool) and found != SCHEMA_VERSION and abs(found) < 10 ** 9:
        raise TrialError(msg("error.trial.record_schema", found=str(found), expected=SCHEMA_VERSION))
    if found != SCHEMA_VERSION or isinstance(found, bool) or not isinstance(found, int):
        raise TrialError(msg("error.trial.record_no_schema", expected=SCHEMA_VERSION))


# -- checking a record read from a file ---------------------------------------------------------------------

def _escape(text: str) -> str:
    """A record's string as data: shown on terminals and pages, so every control and invisible character is
    replaced by its escape (\\x1b, \\u202e) when read."""
    return reading.escape_chars(text, reading.UNSAFE_IN_FIELD)


def _escaped(value: Any) -> Any:
    """``value`` with every string (and dict key) escaped (``_escape``); numbers and the rest as they are."""
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value


_SECONDS = Range(0.0, 100 * DAY_S, unit="s")  # a step, a save, a whole trial: at most 100 days
_BYTES = Range(0, 2 ** 53, unit="bytes", whole=True)  # memory, files: at most 8 PiB
_TOKENS = Range(0, 10 ** 12, unit="tokens", whole=True)
_RATE = Range(0.0, 1e12, unit="tokens_s", infinite=True)
_SHARE = Range(0.0, 1.0 + 1e-9, unit="share")  # a fraction (a sum of parts of a step may round above 1 by an ulp)
_LOSS = Range(-1e12, 1e12, unit="loss", nonfinite=True)
_COUNT = Range(0, 10 ** 9, unit="count", whole=True)
_POSITIVE = Range(1, 10 ** 9, unit="count", whole=True)
_PROCESSES = Range(0, 10 ** 6, unit="count", whole=True)
_ANY = Range(-1e18, 1e18, unit="number")  # a number in a free-form section (dataset, plan, evaluation): finite

_FIELD_RANGES: dict[str, Range] = {
    # a step
    "step": _POSITIVE, "step_time_s": _SECONDS, "data_wait_s": _SECONDS, "tokens": _TOKENS, "tokens_per_s": _RATE,
    "grad_norm": Range(0.0, 1e12, unit="number", nonfinite=True), "loss": _LOSS,
    "learning_rate": Range(0.0, 1e3, unit="number", nonfinite=True), "trial_memory_bytes": _BYTES,
    "cuda_peak_allocated_bytes": _BYTES, "cuda_peak_reserved_bytes": _BYTES, "rss_peak_bytes": _BYTES,
    "rss_after_step_bytes": _BYTES, "device_total_bytes": _BYTES, "padding_tokens": _TOKENS,
    # the protocol, the machine
    # steps: 0 in a user's run whose record was written during its warm-up
    "steps": _COUNT, "warmup": _COUNT, "micro_batch": _POSITIVE, "grad_accum": _POSITIVE,
    "seq_len": _POSITIVE, "tokens_per_step": _TOKENS, "seed": Range(-(2 ** 63), 2 ** 64, unit="number", whole=True),
    "max_grad_norm": Range(0.0, 1e12, unit="number"), "params_total": Range(0, 10 ** 14, unit="count", whole=True),
    "params_trainable": Range(0, 10 ** 14, unit="count", whole=True),
    "loader_workers": Range(0, 1024, unit="count", whole=True),
    "memory_cap_bytes": _BYTES, "cpu_logical_cores": _PROCESSES, "torch_threads": _PROCESSES,
    "ram_total_bytes": _BYTES, "cudnn_version": _COUNT, "gpu_count": _PROCESSES,
    # the summary, stability
    "measured_steps": _COUNT, "median_step_time_s": _SECONDS, "p90_step_time_s": _SECONDS,
    "mean_step_time_s": _SECONDS, "min_step_time_s": _SECONDS, "mean_data_wait_s": _SECONDS,
    "data_wait_fraction": _SHARE, "first_loss": _LOSS, "last_loss": _LOSS, "peak_trial_memory_bytes": _BYTES,
    "warmup_mean_step_time_s": _SECONDS, "step_time_low_s": _SECONDS, "step_time_high_s": _SECONDS,
    "step_time_coverage": _SHARE, "step_time_half_width": Range(0.0, 1e6, unit="share", infinite=True),
    "step_time_confidence": _SHARE, "drift_per_100_steps": Range(-1e6, 1e6, unit="share"),
    "tolerance": _SHARE, "confidence": _SHARE, "min_steps": _COUNT, "max_steps": _COUNT,
    "half_width": Range(0.0, 1e6, unit="share", infinite=True),
    # the checkpoint, the record, the ranks
    "bytes_on_disk": _BYTES, "save_s": _SECONDS, "rebuild_s": _SECONDS, "restore_s": _SECONDS,
    "tensors_checked": _COUNT, "uninterrupted_losses": _LOSS, "resumed_losses": _LOSS,
    "max_abs_loss_diff": Range(0.0, 1e12, unit="loss", nonfinite=True), "loss_rtol": _SHARE, "files": _BYTES,
    "duration_s": _SECONDS, "schema_version": _POSITIVE, "world_size": Range(1, 10 ** 6, unit="count", whole=True),
    "rank": _PROCESSES, "losses": _LOSS, "step_times_s": _SECONDS, "param_bytes": _BYTES,
    "trainable_param_bytes": _BYTES, "optimizer_state_bytes": _BYTES,
}


def _out_of_range(where: str, value: Any, bounds: Range, problem: str) -> TrialError:
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    code = "error.trial.record_whole" if problem == NOT_WHOLE else "error.trial.record_value"
    return TrialError(msg(code, field=where, value=shown, low=f"{bounds.low:g}", high=f"{bounds.high:g}",
                          unit=bounds.unit))


def _check_value(where: str, value: Any, bounds: Range) -> None:
    """One number of a record against its range (a list, tuple or dict of them: each)."""
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _check_value(f"{where}.{key}", item, bounds)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_value(f"{where}[{i}]", item, bounds)
        return
    if dataclasses.is_dataclass(value) or isinstance(value, Msg):
        return
    if not isinstance(value, (int, float)):
        return
    problem = bounds.problem(value)
    if problem is not None:
        raise _out_of_range(where, value, bounds, problem)


def _check_numbers(item: Any, where: str = "") -> None:
    """Every number of a record within its range (``_FIELD_RANGES``; free-form sections: finite and below
    1e18), else a TrialError naming the field (``steps[12].step_time_s``), its value and the range."""
    for f in dataclasses.fields(item):
        value = getattr(item, f.name)
        name = f"{where}.{f.name}" if where else f.name
        if isinstance(value, Msg) or (isinstance(value, tuple) and value and isinstance(value[0], Msg)):
            continue  # coded messages: their numbers are the runner's own wording, checked by the catalog
        if isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            for i, part in enumerate(value):
                _check_numbers(part, f"{name}[{i}]")
        elif dataclasses.is_dataclass(value):
            _check_numbers(value, name)
        else:
            _check_value(name, value, _FIELD_RANGES.get(f.name, _ANY))


def _build(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    for f in dataclasses.fields(cls):
        if f.name in values and isinstance(values[f.name], list) and "tuple" in str(f.type):
            values[f.name] = tuple(values[f.name])
    return cls(**values)


# -- summaries (pure) ------------------------------------------------------------------------------------


class RunningSummary:
    """``summarize`` kept as the steps come: ``add`` costs the same at step 10 and step 100,000.

    Sums, extremes, the first and last loss and the peaks are running values; the median, p90, interval and
    drift come from ``gpuwork.measure.stability.RunningStepTimes``. ``summary()`` is what ``summarize`` gives
    for the same steps (``summarize`` is this, fed all at once).
    """

    def __init__(self, device_kind: str = "GPU"):
        self.device_kind = device_kind
        self.times = RunningStepTimes()
        self.count = 0
        self._time_sum = self._wait_sum = 0.0
        self._tokens_sum = 0
        self._first_loss = self._last_loss = math.nan
        self._finite = True
        self._peak_trial = 0
        self._peaks: dict[str, int | None] = dict.fromkeys(_PEAK_FIELDS)
        self._warm_count = 0
        self._warm_sum = 0.0
        self.highest_memory_bytes = 0  # over every step, warm-up included

    def add(self, m: StepMeasurement) -> None:
        self.highest_memory_bytes = max(self.highest_memory_bytes, m.trial_memory_bytes)
        if m.is_warmup:
            self._warm_count += 1
            self._warm_sum += m.step_time_s
            return
        if not self.count:
            self._first_loss = m.loss
        self.count += 1
        self.times.add(m.step_time_s, m.step)
        self._time_sum += m.step_time_s
        self._wait_sum += m.data_wait_s
        self._tokens_sum += m.tokens
        self._last_loss = m.loss
        self._finite = self._finite and math.isfinite(m.loss)
        self._peak_trial = max(self._peak_trial, m.trial_memory_bytes) if self.count > 1 else m.trial_memory_bytes
        for name in _PEAK_FIELDS:
            value = getattr(m, name)
            if value is not None:
                old = self._peaks[name]
                self._peaks[name] = value if old is None else max(old, value)

    def summary(self) -> TrialSummary | None:
        """The measured steps' summary so far; None before the first measured step."""
        stats = self.times.stats()  # None exactly when no step was counted
        if not self.count or stats is None:
            return None
        n, ordered = self.count, self.times.sorted
        median = stats.median_s
        mean_time = self._time_sum / n
        wait = self._wait_sum / n
        fraction = wait / mean_time if mean_time > 0 else 0.0
        data_bound = fraction > DATA_WAIT_THRESHOLD
        if data_bound:
            verdict = msg("trial.data_wait.bound", device=self.device_kind, share=fraction,
                          threshold=DATA_WAIT_THRESHOLD)
        else:
            verdict = msg("trial.data_wait.keeps_up", share=fraction)
        tokens = round(self._tokens_sum / n)  # batches of a user's run vary in real tokens
        return TrialSummary(
            measured_steps=n,
            median_step_time_s=median,
            p90_step_time_s=_percentile(ordered, 0.9),
            mean_step_time_s=mean_time,
            min_step_time_s=ordered[0],
            tokens_per_step=tokens,
            tokens_per_s=tokens / median if median > 0 else math.inf,
            mean_data_wait_s=wait,
            data_wait_fraction=fraction,
            data_bound=data_bound,
            verdict=verdict,
            first_loss=self._first_loss,
            last_loss=self._last_loss,
            losses_finite=self._finite,
            peak_trial_memory_bytes=self._peak_trial,
            cuda_peak_allocated_bytes=self._peaks["cuda_peak_allocated_bytes"],
            cuda_peak_reserved_bytes=self._peaks["cuda_peak_reserved_bytes"],
            rss_peak_bytes=self._peaks["rss_peak_bytes"],
            warmup_mean_step_time_s=self._warm_sum / self._warm_count if self._warm_count else None,
            step_time_low_s=stats.low_s,
            step_time_high_s=stats.high_s,
            step_time_coverage=stats.coverage,
            step_time_half_width=stats.half_width,
            step_time_confidence=stats.confidence,
            step_time_interval_method=stats.method,
            drift_per_100_steps=stats.drift_per_100_steps,
        )


_PEAK_FIELDS = ("cuda_peak_allocated_bytes", "cuda_peak_reserved_bytes", "rss_peak_bytes")


def summarize(steps: Sequence[StepMeasurement], device_kind: str = "GPU") -> TrialSummary | None:
    """Summary of the measured (non-warm-up) steps; None when there are none. Pure (``RunningSummary``)."""
    running = RunningSummary(device_kind)
    for m in steps:
        running.add(m)
    return running.summary()


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
        p, s, par = record.protocol, record.summary, record.parallel
        tokens_per_s = s.tokens_per_s if s else None
        cost = cost_low = cost_high = None
        low_s = s.step_time_low_s if s else None
        high_s = s.step_time_high_s if s else None
        if price is not None and tokens_per_s:
            cost = price * record.world_size / 3600.0 * (1e6 / tokens_per_s)
            if s is not None and low_s is not None and high_s is not None:  # cost per token ~ step time
                median_s = s.median_step_time_s
                cost_low, cost_high = (cost * t / median_s for t in (low_s, high_s))
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
            "switches": list(record.environment.switches),  # the plan's execution switches it ran under
            "gpus": record.world_size,
            # how the processes ran: the plan's sharding, the wrapper, its mesh and resharding (None: one process)
            "sharding": par.sharding_requested if par else None,
            "strategy": par.strategy if par else None,
            "mesh_shape": par.mesh_shape if par else None,
            "reshard_after_forward": par.reshard_after_forward if par else None,
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
    steps = [merge_step([r.steps[i] for r in records]) for i in range(count)]
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


def merge_step(row: Sequence[StepMeasurement]) -> StepMeasurement:
    """One step of a group from each rank's measurement of it (rank order), as ``merge_ranks`` merges steps."""
    time_s = max(m.step_time_s for m in row)
    tokens = sum(m.tokens for m in row)
    return StepMeasurement(
        step=row[0].step, is_warmup=row[0].is_warmup, loss=statistics.fmean(m.loss for m in row),
        step_time_s=time_s, data_wait_s=max(m.data_wait_s for m in row), tokens=tokens,
        tokens_per_s=tokens / time_s if time_s > 0 else math.inf, grad_norm=row[0].grad_norm,
        learning_rate=row[0].learning_rate, trial_memory_bytes=max(m.trial_memory_bytes for m in row),
        cuda_peak_allocated_bytes=_max_or_none(m.cuda_peak_allocated_bytes for m in row),
        cuda_peak_reserved_bytes=_max_or_none(m.cuda_peak_reserved_bytes for m in row),
        rss_peak_bytes=_max_or_none(m.rss_peak_bytes for m in row),
        rss_after_step_bytes=_max_or_none(m.rss_after_step_bytes for m in row),
        device_total_bytes=_max_or_none(m.device_total_bytes for m in row),
        padding_tokens=_sum_or_none(m.padding_tokens for m in row))


def _unranked(message: Msg) -> Msg:
    """A rank's checkpoint message without its "rank N:" wrapper (the merged record speaks for all ranks)."""
    return message["what"] if message.code == "checkpoint.on_rank" else message


__all__ = [
    "DATA_WAIT_THRESHOLD",
    "SCHEMA_VERSION",
    "STATUS_COMPLETE",
    "STATUS_INTERRUPTED",
    "STATUS_RUNNING",
    "STEPS_SUFFIX",
    "CheckpointResult",
    "ParallelInfo",
    "RankResult",
    "RunningSummary",
    "Stability",
    "StepMeasurement",
    "TrialEnvironment",
    "TrialError",
    "TrialProtocol",
    "TrialRecord",
    "TrialSummary",
    "compare",
    "merge_ranks",
    "merge_step",
    "rank_result",
    "rank_steps",
    "record_step_rows",
    "step_line",
    "steps_path",
    "summarize",
    "with_steps_text",
]
