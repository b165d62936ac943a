"""Calibration: what a measured trial says about the estimators, kept per device in one user file.

``calibrate(record, plan)`` compares a ``TrialRecord`` with ``estimate_memory`` (and with
``gpuwork.estimate.timing.estimate_time`` when that module is present) for the same plan:

- memory, CUDA only: measured ``torch.cuda.max_memory_allocated`` peak / estimated
  ``peak_allocated_bytes`` and measured ``max_memory_reserved`` / estimated ``peak_reserved_bytes``
  (the highest rank of a multi-process trial; the estimate is per GPU). On a CPU the trial measures
  the process RSS, which holds the Python runtime, libraries and the allocator's cache and is no
  GPU quantity: no memory factor is derived (a note says so).
- time, GPUs of data/gpus.csv only (the device name matched by
  ``gpuwork.facts.catalog.match_gpu_name``): the measured MFU (model FLOPs per token x measured tokens/s ÷
  (GPUs x dense peak)) next to the estimator's, the step-time ratio, and the efficiency that makes
  ``estimate_time`` reproduce the measured step (``time_calibration``, the mapping
  ``estimate_time(..., calibration=...)`` takes).

``beside(record)`` is the same comparison as ``gpuwork compare`` shows it: each quantity measured next to the
estimate for exactly the record's plan, with the error measured / estimated - 1 (memory per total, median
step time, tokens/s). Time entries keep the plan's software stack, and ``DeviceCalibration.time_calibration``
applies an entry only to plans of the same stack (an efficiency measured under Unsloth says nothing about the
plain Trainer).

``save_calibration(cal)`` adds the result to the user's calibration file, by device name (the name
torch reports, e.g. "NVIDIA H200"): ``~/.config/gpuwork/calibration.json``, or the file named by the
environment variable ``GPUWORK_CALIBRATION``, or ``path=``. Nothing else is ever written.
``load_calibration(device_name)`` reads a device's entries back; ``apply_memory_calibration(estimate,
factors)`` returns corrected totals next to the estimate's own and never changes ``estimate_memory``
(corrections are off unless a caller applies them, and shown as such when on).

File format (JSON, ``schema_version`` 1)::

    {"schema_version": 1,
     "devices": {"NVIDIA H200": {"gpu_id": "h200_sxm",
                                 "entries": [<Calibration.as_dict()>, ...]}}}   # oldest first

Example:
    >>> cal = calibrate(record)                   # a record from gpuwork.measure.trial.run_trial on a GPU
    >>> path = save_calibration(cal)              # ~/.config/gpuwork/calibration.json
    >>> factors = load_calibration(cal.device_name).memory_factors
    >>> apply_memory_calibration(estimate_memory(plan), factors)["peak_reserved_bytes"]

Limitations: factors are medians over a device's trials of any shape; a factor measured at one
batch shape corrects another shape only as far as the error scales with the total. Time
calibration is kept per method group (full / adapters / fp32) and precision.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError
from gpuwork.estimate.timing import method_group
from gpuwork.facts import reading
from gpuwork.facts.catalog import match_gpu_name
from gpuwork.measure.coded import all_from_json, to_json
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, SdpaBackend, TrainPlan

SCHEMA_VERSION = 1
ENV_CALIBRATION = "GPUWORK_CALIBRATION"  # overrides the default file location
DEFAULT_PATH = Path("~/.config/gpuwork/calibration.json")
MAX_ENTRIES_PER_DEVICE = 50  # oldest entries beyond this are dropped when saving


class CalibrationError(GpuworkError, ValueError):
    """A calibration file cannot be read or written; the message names the file and the fix."""


# -- one trial against the estimates (pure apart from reading data files) -------------------------------------


@dataclass(frozen=True)
class MemoryCalibration:
    """Measured vs estimated per-GPU memory (bytes) and the ratios measured / estimated."""

    measured_allocated_bytes: int  # torch.cuda.max_memory_allocated, highest rank, measured steps
    estimated_allocated_bytes: int  # estimate_memory(plan).peak_allocated_bytes
    allocated_factor: float
    measured_reserved_bytes: int  # torch.cuda.max_memory_reserved
    estimated_reserved_bytes: int  # estimate_memory(plan).peak_reserved_bytes
    reserved_factor: float
    # what nvidia-smi shows (mem_get_info total - free, highest over measured steps and ranks) against
    # estimate_memory(plan).device_total_bytes; None for records that did not measure it
    measured_device_bytes: int | None = None
    estimated_device_bytes: int | None = None
    device_factor: float | None = None


@dataclass(frozen=True)
class TimeCalibration:
    """Measured vs estimated speed on a catalog GPU."""

    gpu_id: str
    peak_flops_per_gpu: float  # the dense peak the estimator uses for the plan's precision
    model_flops_per_token: float  # FLOPs per token without recompute (MFU's numerator)
    measured_tokens_per_s: float  # all GPUs
    measured_step_time_s: float  # median
    measured_mfu: float  # model FLOPs/s achieved / (GPUs x peak)
    estimated_tokens_per_s: float
    estimated_step_time_s: float
    estimated_mfu: float  # the estimator's default, same definition
    step_time_factor: float  # measured / estimated step time
    efficiency: float  # the factor estimate_time applies (calibration "scale") to reproduce the measured step
    method_group: str  # "full" | "lora" | "fp32": which plans this entry calibrates
    precision: str
    tokens_per_micro_batch: int
    stack: str | None = None  # the plan's software stack: an efficiency holds for that stack only
    #   (None in entries saved before stacks were kept: their plan's stack is used)


@dataclass(frozen=True)
class Calibration:
    """One trial compared with the estimates for its plan."""

    device_name: str
    device_kind: str  # "cuda" | "cpu"
    gpu_id: str | None  # the matching data/gpus.csv GPU, if any
    trial: str  # the record's label
    record_created_utc: str
    calibrated_utc: str
    world_size: int
    plan: dict[str, Any]  # the plan the estimates were made for (as the trial ran it)
    memory: MemoryCalibration | None
    time: TimeCalibration | None
    notes: tuple[Msg, ...]  # why a factor is missing or what to keep in mind (calibration.* codes)

    @property
    def memory_factors(self) -> dict[str, float] | None:
        if self.memory is None:
            return None
        return {"allocated": self.memory.allocated_factor, "reserved": self.memory.reserved_factor}

    def time_calibration(self) -> dict[str, Any] | None:
        """The mapping ``gpuwork.estimate.timing.estimate_time(..., calibration=)`` takes, or None."""
        return _time_mapping(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return to_json(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        data = dict(data)
        data["memory"] = MemoryCalibration(**data["memory"]) if data.get("memory") else None
        data["time"] = TimeCalibration(**data["time"]) if data.get("time") else None
        data["notes"] = all_from_json(data.get("notes"))  # English text in files written before codes
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def _plan_as_run(record: Any, plan: TrainPlan | None) -> TrainPlan:
    """The plan the trial actually ran: its device count and sharding, the attention and SDPA backend it used, and
    only the execution switches it ran under (``environment.switches``: a ``gpuwork trial`` record lacks one it
    could not apply, and every record written before the trial applied them lacks all; gpuwork.measure.switches).
    A user's run measured by gpuwork.hf keeps its plan's switches: that run set them itself."""
    from gpuwork.measure.switches import requested

    plan = plan if plan is not None else record.plan
    if record.source == "gpuwork trial":
        off = {name: False for name in requested(plan) if name not in record.environment.switches}
        plan = plan.replace(**off) if off else plan
    world = record.world_size
    if world == 1:
        plan = plan.single_gpu()
    elif plan.gpus != world:
        plan = plan.replace(gpus=world)
    used = {"flash_attention_2": Attention.FLASH, "flash_attention_3": Attention.FLASH3,
            "flash_attention_4": Attention.FLASH4, "sdpa": Attention.SDPA, "eager": Attention.EAGER}
    attention = used.get(record.protocol.attention_used)
    if attention is not None and attention is not plan.attention:
        plan = plan.replace(attention=attention)
    # the SDPA backend torch gave the trial's attention (gpuwork.measure.sdpa): priced as it ran, not as planned
    # (the math fallback has no price of its own: the plan's stays; a record written before it was kept says "")
    ran = getattr(record.protocol, "sdpa_backend_used", "")
    if plan.attention is Attention.SDPA and ran in {b.value for b in SdpaBackend} and ran != plan.sdpa_backend.value:
        plan = plan.replace(sdpa_backend=SdpaBackend(ran))
    return plan


def calibrate(record: Any, plan: TrainPlan | None = None) -> Calibration:
    """Compare a trial with the estimators for the same plan (see the module docstring).

    Args:
        record: a ``gpuwork.measure.record.TrialRecord`` that fits, with measured steps.
        plan: the plan to estimate; None = the record's plan (run as the trial ran it: its number of
            processes, the attention it used).
    Raises CalibrationError when the record has no measured step.
    """
    from gpuwork.sizing import estimate_memory

    if record.summary is None or not record.fits:
        raise CalibrationError(msg("error.calibration.no_steps", trial=record.label))
    plan = _plan_as_run(record, plan)
    env, s = record.environment, record.summary
    notes: list[Msg] = []
    cuda = env.device != "cpu"
    memory = None
    if not cuda:
        notes.append(msg("calibration.cpu_memory"))
    elif s.cuda_peak_allocated_bytes is None or s.cuda_peak_reserved_bytes is None:
        notes.append(msg("calibration.no_allocator_peaks"))
    else:
        est = estimate_memory(plan)
        device = _measured_device_bytes(record)
        memory = MemoryCalibration(
            measured_allocated_bytes=int(s.cuda_peak_allocated_bytes),
            estimated_allocated_bytes=est.peak_allocated_bytes,
            allocated_factor=s.cuda_peak_allocated_bytes / est.peak_allocated_bytes,
            measured_reserved_bytes=int(s.cuda_peak_reserved_bytes),
            estimated_reserved_bytes=est.peak_reserved_bytes,
            reserved_factor=s.cuda_peak_reserved_bytes / est.peak_reserved_bytes,
            measured_device_bytes=device,
            estimated_device_bytes=est.device_total_bytes if device is not None else None,
            device_factor=device / est.device_total_bytes if device is not None else None)
    gpu = match_gpu_name(env.device_name, env.device_total_bytes) if cuda else None
    if cuda and gpu is None:
        notes.append(msg("calibration.unknown_gpu", device=env.device_name))
    elif not cuda:
        notes.append(msg("calibration.cpu_time"))
    time_cal = _time(record, plan, gpu, notes) if gpu is not None else None
    if record.protocol.precision_used.split("-")[0] not in plan.precision.value:
        notes.append(msg("calibration.precision_differs", used=record.protocol.precision_used,
                         asked=plan.precision))
    return Calibration(
        device_name=env.device_name, device_kind="cuda" if cuda else "cpu",
        gpu_id=gpu.gpu_id if gpu is not None else None, trial=record.label,
        record_created_utc=record.created_utc, calibrated_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        world_size=record.world_size, plan=plan.as_dict(), memory=memory, time=time_cal, notes=tuple(notes))


def _measured_device_bytes(record: Any) -> int | None:
    """The highest device total over the measured steps (a merged record holds each step's highest rank)."""
    values = [s.device_total_bytes for s in record.steps
              if not s.is_warmup and getattr(s, "device_total_bytes", None) is not None]
    return int(max(values)) if values else None


def _time(record: Any, plan: TrainPlan, gpu: Any, notes: list[Msg]) -> TimeCalibration | None:
    try:
        from gpuwork.sizing import estimate_time
    except ImportError:
        notes.append(msg("calibration.no_timing"))
        return None
    te = estimate_time(plan, gpu)
    s = record.summary
    world = record.world_size
    tokens_per_s = s.tokens_per_s  # all ranks
    measured_mfu = te.flops_per_token.model * tokens_per_s / (world * te.peak_flops_per_gpu)
    # the factor on the GPU-bound work that makes the per-operation model reproduce the measured step
    fitted = estimate_time(plan, gpu, calibration={"tokens_per_s": tokens_per_s / world, "gpu_id": gpu.gpu_id})
    efficiency = fitted.mfu.scale
    return TimeCalibration(
        gpu_id=gpu.gpu_id, peak_flops_per_gpu=te.peak_flops_per_gpu, model_flops_per_token=te.flops_per_token.model,
        measured_tokens_per_s=tokens_per_s, measured_step_time_s=s.median_step_time_s, measured_mfu=measured_mfu,
        estimated_tokens_per_s=te.tokens_per_s, estimated_step_time_s=te.step_time_s,
        estimated_mfu=te.model_flops_utilization, step_time_factor=s.median_step_time_s / te.step_time_s,
        efficiency=efficiency, method_group=method_group(plan), precision=plan.precision.value,
        tokens_per_micro_batch=plan.tokens_per_micro_batch, stack=plan.stack.value)


def _time_mapping(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    t = entry.get("time")
    if not t or not t["efficiency"] > 0:
        return None
    return {"scale": t["efficiency"], "gpu_id": t["gpu_id"], "tokens_per_micro_batch": t["tokens_per_micro_batch"],
            # names only (no words), so the label reads the same in every language
            "source": f"{entry.get('trial')}, {entry.get('device_name')}, {entry.get('record_created_utc')}"}


def _error(measured: float, estimated: float) -> float:
    return measured / estimated - 1.0


def beside(record: Any, cal: Calibration | None = None) -> dict[str, Any]:
    """The estimate for exactly the record's plan next to what the record measured, with the error.

    ``cal``: ``calibrate(record)`` when already made. Returns {"device_kind", "gpu_id", "stack", "memory",
    "step_time", "tokens_per_s", "notes"}: ``memory`` maps "allocated" / "reserved" / "device" to
    {"measured_bytes", "estimated_bytes", "error"} (error = measured / estimated - 1; "device" is None when the
    record did not measure it), ``step_time`` is {"measured_s", "estimated_s", "error"} (the median step) and
    ``tokens_per_s`` {"measured", "estimated", "error"}, each None where there is nothing to compare: a CPU
    trial has no GPU estimate (``compare.cpu_no_estimate``), a GPU outside data/gpus.csv no time estimate.
    A record without measured steps gives only the reason in ``notes``.
    """
    empty = {"device_kind": "cpu" if record.environment.device == "cpu" else "cuda", "gpu_id": None,
             "stack": str(record.plan.stack.value), "memory": None, "step_time": None, "tokens_per_s": None}
    if cal is None:
        try:
            cal = calibrate(record)
        except CalibrationError as exc:
            return {**empty, "notes": (exc.msg,) if exc.msg is not None else ()}
    notes = list(cal.notes)
    if cal.device_kind == "cpu":  # one plain sentence instead of the two calibration notes
        notes = [msg("compare.cpu_no_estimate"),
                 *(n for n in notes if n.code not in ("calibration.cpu_memory", "calibration.cpu_time"))]
    memory = None
    if cal.memory is not None:
        m = cal.memory
        memory = {
            "allocated": {"measured_bytes": m.measured_allocated_bytes, "estimated_bytes": m.estimated_allocated_bytes,
                          "error": m.allocated_factor - 1.0},
            "reserved": {"measured_bytes": m.measured_reserved_bytes, "estimated_bytes": m.estimated_reserved_bytes,
                         "error": m.reserved_factor - 1.0},
            "device": None if m.measured_device_bytes is None or m.estimated_device_bytes is None else {
                "measured_bytes": m.measured_device_bytes, "estimated_bytes": m.estimated_device_bytes,
                "error": _error(m.measured_device_bytes, m.estimated_device_bytes)},
        }
    step = tokens = None
    if cal.time is not None:
        t = cal.time
        step = {"measured_s": t.measured_step_time_s, "estimated_s": t.estimated_step_time_s,
                "error": t.step_time_factor - 1.0}
        tokens = {"measured": t.measured_tokens_per_s, "estimated": t.estimated_tokens_per_s,
                  "error": _error(t.measured_tokens_per_s, t.estimated_tokens_per_s)}
    return {**empty, "device_kind": cal.device_kind, "gpu_id": cal.gpu_id, "stack": entry_stack(cal),
            "memory": memory, "step_time": step, "tokens_per_s": tokens, "notes": tuple(notes)}


# -- the user file ----------------------------------------------------------------------------------------------


def default_calibration_path() -> Path:
    """$GPUWORK_CALIBRATION if set, else ~/.config/gpuwork/calibration.json."""
    env = os.environ.get(ENV_CALIBRATION)
    return Path(env).expanduser() if env else DEFAULT_PATH.expanduser()


def _read(path: Path) -> dict[str, Any]:
    if not os.path.lexists(path):
        return {"schema_version": SCHEMA_VERSION, "devices": {}}
    try:  # a regular file within its cap (no FIFO, device, folder, dangling link or loop), JSON within bounds
        data = reading.load_json(path, reading.SMALL_JSON)
    except reading.ReadError as exc:
        raise CalibrationError(exc.msg) from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(msg("error.calibration.json", path=str(path), line=exc.lineno, detail=exc.msg)) from None
    except OSError as exc:
        raise CalibrationError(msg("error.calibration.read", path=str(path), detail=str(exc.strerror))) from None
    if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
        raise CalibrationError(msg("error.calibration.not_a_file", path=str(path)))
    if data.get("schema_version") != SCHEMA_VERSION:
        raise CalibrationError(msg("error.calibration.schema", path=str(path), found=str(data.get("schema_version")),
                                   expected=SCHEMA_VERSION))
    return data


@dataclass(frozen=True)
class DeviceCalibration:
    """A device's saved calibrations (oldest first) and the corrections they give."""

    device_name: str
    gpu_id: str | None
    entries: tuple[Calibration, ...]
    path: str

    @property
    def memory_factors(self) -> dict[str, float] | None:
        """Median measured/estimated ratios over the entries with memory data: {"allocated", "reserved"}."""
        mems = [e.memory for e in self.entries if e.memory is not None]
        if not mems:
            return None
        return {"allocated": statistics.median(m.allocated_factor for m in mems),
                "reserved": statistics.median(m.reserved_factor for m in mems), "trials": len(mems)}

    def time_calibration(self, plan: TrainPlan) -> dict[str, Any] | None:
        """The newest entry's ``estimate_time`` calibration for plans like ``plan`` (same method
        group, precision and software stack), or None."""
        group = method_group(plan)
        for entry in reversed(self.entries):
            t = entry.time
            if (t is not None and t.method_group == group and t.precision == plan.precision.value
                    and entry_stack(entry) == plan.stack.value):
                return entry.time_calibration()
        return None


def entry_stack(cal: Calibration) -> str:
    """The software stack a calibration was measured under (older entries: their plan's, else the default)."""
    if cal.time is not None and cal.time.stack:
        return cal.time.stack
    return str(cal.plan.get("stack") or TrainPlan.stack.value)


def save_calibration(cal: Calibration, path: str | Path | None = None) -> Path:
    """Add ``cal`` to the calibration file (by device name) and return the file's path.

    Args:
        cal: the result of ``calibrate``.
        path: the file; None = ``default_calibration_path()``. Its folder is created if needed;
            the file is replaced atomically (written next to it, then renamed).
    """
    target = Path(path).expanduser() if path is not None else default_calibration_path()
    data = _read(target)
    device = data["devices"].setdefault(cal.device_name, {"gpu_id": cal.gpu_id, "entries": []})
    device["gpu_id"] = cal.gpu_id or device.get("gpu_id")
    device["entries"] = [*device.get("entries", []), cal.as_dict()][-MAX_ENTRIES_PER_DEVICE:]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.tmp")
        temp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
        os.replace(temp, target)
    except OSError as exc:
        raise CalibrationError(msg("error.calibration.write", path=str(target), detail=str(exc.strerror),
                                   env=ENV_CALIBRATION)) from None
    return target


def load_calibration(device_name: str, path: str | Path | None = None) -> DeviceCalibration | None:
    """A device's saved calibrations, or None when the file or the device is absent."""
    target = Path(path).expanduser() if path is not None else default_calibration_path()
    data = _read(target)
    device = data["devices"].get(device_name)
    if device is None:
        return None
    try:
        entries = tuple(Calibration.from_dict(e) for e in device.get("entries", []))
    except (TypeError, KeyError) as exc:
        raise CalibrationError(msg("error.calibration.malformed", path=str(target), device=device_name,
                                   detail=str(exc))) from None
    return DeviceCalibration(device_name=device_name, gpu_id=device.get("gpu_id"), entries=entries,
                             path=str(target))


def apply_memory_calibration(estimate: Any, factors: Any) -> dict[str, Any]:
    """Corrected memory totals next to the estimate's own; ``estimate_memory`` is never changed.

    Args:
        estimate: a ``gpuwork.estimate.memory.MemoryEstimate``.
        factors: {"allocated": x, "reserved": y}, a ``DeviceCalibration`` / ``Calibration``, or None.
    Returns {"calibrated": bool, "factors", "peak_allocated_bytes", "peak_reserved_bytes",
    "device_total_bytes", "estimated": {the three uncorrected totals}}. The device total is the
    corrected reserved peak plus what the estimate adds outside the allocator (CUDA context).
    """
    if factors is not None and not isinstance(factors, Mapping):
        factors = factors.memory_factors
    estimated = {"peak_allocated_bytes": estimate.peak_allocated_bytes,
                 "peak_reserved_bytes": estimate.peak_reserved_bytes,
                 "device_total_bytes": estimate.device_total_bytes}
    if not factors:
        return {"calibrated": False, "factors": None, **estimated, "estimated": estimated}
    for name in ("allocated", "reserved"):
        value = factors.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise CalibrationError(msg("error.calibration.factor", name=name, value=repr(value)))
    allocated = round(estimate.peak_allocated_bytes * factors["allocated"])
    reserved = round(estimate.peak_reserved_bytes * factors["reserved"])
    outside = estimate.device_total_bytes - estimate.peak_reserved_bytes
    return {"calibrated": True, "factors": {"allocated": factors["allocated"], "reserved": factors["reserved"]},
            "peak_allocated_bytes": allocated, "peak_reserved_bytes": max(reserved, allocated),
            "device_total_bytes": max(reserved, allocated) + outside, "estimated": estimated}


__all__ = [
    "DEFAULT_PATH",
    "ENV_CALIBRATION",
    "Calibration",
    "CalibrationError",
    "DeviceCalibration",
    "MemoryCalibration",
    "TimeCalibration",
    "apply_memory_calibration",
    "beside",
    "calibrate",
    "default_calibration_path",
    "entry_stack",
    "load_calibration",
    "save_calibration",
]
