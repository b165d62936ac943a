"""What every runner measures with: memory, the ranks' agreement, run names and the record file.

One recorder for the three runners (``gpuwork.measure.trial``: gpuwork's own loop; ``gpuwork.measure.distributed``:
each rank of a torchrun group; ``gpuwork.measure.hf``: a user's Trainer or loop):

- ``DeviceMemory``: memory on the run's device, per step. CUDA: the allocator's peaks (reset at each step
  start) and what the device holds after the step (``torch.cuda.mem_get_info``: what nvidia-smi shows); CPU:
  the process resident set size, sampled every RSS_SAMPLE_INTERVAL_S by a background thread (``RssSampler``)
  and at each phase boundary. ``check`` raises the simulated out-of-memory of a memory cap.
- ``Ranks``: torch.distributed when it is initialised: ``agree`` gives rank 0's value on every rank and
  ``gather`` every rank's value on every rank; in one process both give the value back.
- ``GroupSteps``: a group's steps as they are taken (one gather a step), merged per step and summarised as they
  come, so that its rank 0 writes the merged record as the run goes (gpuwork's ranks and the callback's).
- Run names: ``run_id`` (gpuwork's trials: ``records.reserve_run_id``, unique by a random part) and
  ``own_run_path`` (a user's run: ``trial-<model>-<method>-<UTC time>[-N].json``, the first free name).
- ``write_record``: a whole record, its steps file and JSON each written atomically (``records.write_text``:
  a reader never sees half); ``RecordFile``: a running trial's record, each step appended as one line and
  the JSON rewritten at most every SUMMARY_INTERVAL_S seconds, so a step costs the same at step 10 and
  step 100,000 and a killed trial keeps every finished step.

Limitations: a CPU peak shorter than the sampling interval can be missed, and memory the allocator keeps
is counted (RSS); the CUDA device total is read after the step (the driver keeps no peak).
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from gpuwork.measure import records
from gpuwork.message import msg
from gpuwork.units import MIB

if TYPE_CHECKING:
    import torch

    from gpuwork.measure.record import ParallelInfo, StepMeasurement, TrialRecord

# a running record's JSON (summary, status) is rewritten at most this often; each step is appended as it ends
SUMMARY_INTERVAL_S = 5.0
RSS_SAMPLE_INTERVAL_S = 0.02  # CPU memory sampler period: 5 ms cost ~5% of a 100 ms step (benchmarks/trial_overhead.py)


# -- memory ---------------------------------------------------------------------------------------------------


class RssSampler:
    """Process RSS: a background sampler keeps the highest value since the last reset (0 s: no thread)."""

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


class StepMemory(TypedDict):
    """``DeviceMemory.step_fields``: a step's memory fields of ``StepMeasurement``, in bytes (CUDA or CPU's)."""

    trial_memory_bytes: int
    cuda_peak_allocated_bytes: NotRequired[int]
    cuda_peak_reserved_bytes: NotRequired[int]
    device_total_bytes: NotRequired[int]
    rss_peak_bytes: NotRequired[int]
    rss_after_step_bytes: NotRequired[int | None]


class DeviceMemory:
    """The run's memory on its device, as ``StepMeasurement`` holds it.

    ``loaded_bytes`` says where counting starts. None (a trial that builds its model after this): from what
    was in use when measuring began, so earlier work in the process does not count. A number (a user's run,
    whose model was loaded before): CUDA counts the allocator's whole peak; CPU counts the RSS growth plus
    ``loaded_bytes`` (the tensors already loaded when the RSS baseline was taken).
    """

    def __init__(self, device: torch.device, *, cap_bytes: int | None = None,
                 sample_interval_s: float = RSS_SAMPLE_INTERVAL_S, loaded_bytes: int | None = None):
        import torch

        self.device = device
        self.cap_bytes = cap_bytes
        self.cuda = device.type == "cuda"
        self.rss: RssSampler | None = None
        self.loaded_bytes = loaded_bytes or 0
        self.baseline_bytes = 0
        self.highest_bytes = 0
        if self.cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)  # earlier work in this process must not count
            if loaded_bytes is None:
                self.baseline_bytes = torch.cuda.memory_allocated(device)
        else:
            self.rss = RssSampler(sample_interval_s)
            self.baseline_bytes = self.rss.baseline_bytes

    def sync(self) -> None:
        """Wait for the device's queued work, so that a clock read after it includes that work (CUDA)."""
        if self.cuda:
            import torch

            torch.cuda.synchronize(self.device)

    def reset_peak(self) -> None:
        import torch

        if self.rss is None:  # CUDA
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.rss.reset()

    def trial_bytes(self) -> int:
        """Peak since the last reset, counted as the constructor says."""
        if self.rss is not None:
            self.rss.sample()
        return self._used()

    def _used(self) -> int:
        import torch

        if self.rss is None:  # CUDA
            used = torch.cuda.max_memory_allocated(self.device) - self.baseline_bytes
        else:
            used = self.rss.peak_bytes - self.baseline_bytes
        used = max(0, int(used)) + (self.loaded_bytes if not self.cuda else 0)
        self.highest_bytes = max(self.highest_bytes, used)
        return used

    def check(self, phase: str) -> None:
        """Raise torch.OutOfMemoryError when the measured memory passes the cap (``phase``: build, forward,
        backward, optimizer; the error's ``gpuwork_msg`` says it in the catalog's words)."""
        import torch

        used = self.trial_bytes()
        if self.cap_bytes is not None and used > self.cap_bytes:
            error = torch.OutOfMemoryError(
                f"memory cap exceeded after {phase}: the trial used {used / MIB:.1f} MiB, the cap is "
                f"{self.cap_bytes / MIB:.1f} MiB")
            # torch's exception has no such field: readers take it with getattr
            vars(error)["gpuwork_msg"] = msg("trial.memory_cap_exceeded", phase=phase, used_mib=used / MIB,
                                             cap_mib=self.cap_bytes / MIB)
            raise error

    def step_fields(self) -> StepMemory:
        """The memory fields of the step just ended (``StepMeasurement``)."""
        import torch

        now = self.rss.sample() if self.rss is not None else None
        used = self._used()
        if self.rss is None:  # CUDA
            free, total = torch.cuda.mem_get_info(self.device)  # after the step: not a peak (the driver keeps none)
            return {"trial_memory_bytes": used,
                    "cuda_peak_allocated_bytes": int(torch.cuda.max_memory_allocated(self.device)),
                    "cuda_peak_reserved_bytes": int(torch.cuda.max_memory_reserved(self.device)),
                    "device_total_bytes": int(total - free)}
        return {"trial_memory_bytes": used, "rss_peak_bytes": self.rss.peak_bytes, "rss_after_step_bytes": now}

    def close(self) -> None:
        if self.rss is not None:
            self.rss.close()


# -- several processes --------------------------------------------------------------------------------------


class Ranks:
    """The processes of a torch.distributed group (torchrun / accelerate), or this one process alone."""

    def __init__(self) -> None:
        import torch.distributed as dist

        self.active = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.active else 0
        self.size = dist.get_world_size() if self.active else 1
        self.backend = str(dist.get_backend()) if self.active else ""

    def agree(self, value: Any) -> Any:
        """Rank 0's value on every rank (a collective: every rank calls it at the same point)."""
        if not self.active:
            return value
        import torch.distributed as dist

        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, value: Any) -> list[Any]:
        """Every rank's value, in rank order, on every rank (a collective)."""
        if not self.active:
            return [value]
        import torch.distributed as dist

        gathered: list[Any] = [None] * self.size
        dist.all_gather_object(gathered, value)
        return gathered


RankFigures = tuple[float, float, float]  # a rank's (loss, step time, data wait) of one step, as steps files hold it


class GroupSteps:
    """A group's steps as they are taken, for the merged record its rank 0 writes as the run goes (``RecordFile``).

    Every rank calls ``share`` with the step it just finished (one gather, at the same point on every rank);
    ``row`` is then the merged step (``merge_step``: what the final ``merge_ranks`` gives for it) with each rank's
    figures for the steps file, and ``running_record`` the merged record so far, from summaries kept as the steps
    come. Only the latest step of each rank is held, so a step costs the same at step 10 and step 100,000.
    """

    def __init__(self, ranks: Ranks, device_kind: str):
        from gpuwork.measure.record import RunningSummary

        self.ranks = ranks
        self.last: list[StepMeasurement] = []  # each rank's latest step, rank order
        self.rank_sizes: list[tuple[int, int]] = [(0, 0)] * ranks.size  # (param, trainable) bytes per rank
        self.rank_summaries = [RunningSummary(device_kind) for _ in range(ranks.size)]
        self.merged_summary = RunningSummary(device_kind)  # the merged steps (the record's)

    def share(self, m: StepMeasurement, param_bytes: int = 0, trainable_param_bytes: int = 0
              ) -> list[StepMeasurement]:
        """This rank's step to every rank (a collective); every rank's step of it, in rank order."""
        from gpuwork.measure.record import StepMeasurement

        gathered = self.ranks.gather((dataclasses.asdict(m), param_bytes, trainable_param_bytes))
        self.last = []
        for r, (step, params, trainable) in enumerate(gathered):
            own = StepMeasurement(**step)
            self.last.append(own)
            self.rank_sizes[r] = (params, trainable)
            self.rank_summaries[r].add(own)
        return self.last

    def row(self) -> tuple[StepMeasurement, list[RankFigures]]:
        """The step every rank just shared, merged, with each rank's (loss, step time, data wait)."""
        return self._merged(self.last)

    def _merged(self, row: Sequence[StepMeasurement]) -> tuple[StepMeasurement, list[RankFigures]]:
        from gpuwork.measure.record import merge_step

        merged = merge_step(row)
        self.merged_summary.add(merged)
        return merged, [(s.loss, s.step_time_s, s.data_wait_s) for s in row]

    def resumed(self, rank_steps: Sequence[Sequence[StepMeasurement]]) -> list[tuple[StepMeasurement,
                                                                                    list[RankFigures]]]:
        """The merged rows of the steps a resumed group goes on from (each rank's own), summarised as shared ones."""
        for summary, own in zip(self.rank_summaries, rank_steps, strict=True):
            for s in own:
                summary.add(s)
        return [self._merged(row) for row in zip(*rank_steps, strict=False)]

    def running_record(self, record: TrialRecord, parallel: ParallelInfo) -> TrialRecord:
        """The merged record of the steps shared so far, without the steps (they are in the steps file): ``record``
        (rank 0's own, its steps left out) with each rank's summary, merged; costs the same at any step."""
        from gpuwork.measure.record import merge_ranks, rank_result

        per_rank = [dataclasses.replace(record, steps=(), summary=summary.summary(),
                                        peak_trial_memory_bytes=max(record.peak_trial_memory_bytes if r == 0 else 0,
                                                                    summary.highest_memory_bytes))
                    for r, summary in enumerate(self.rank_summaries)]
        ranks = [rank_result(own, r, param_bytes=self.rank_sizes[r][0], trainable_param_bytes=self.rank_sizes[r][1],
                             optimizer_state_bytes=0, params_sha256="")
                 for r, own in enumerate(per_rank)]
        merged = merge_ranks(per_rank, ranks, parallel, record.saved_to)
        summary = self.merged_summary.summary()
        stability = merged.stability
        if stability is not None:
            stability = dataclasses.replace(stability, measured_steps=summary.measured_steps if summary else 0,
                                            half_width=summary.step_time_half_width if summary else None)
        return dataclasses.replace(merged, summary=summary, stability=stability)


# -- run names and the record file ----------------------------------------------------------------------------


def run_id(out_dir: Path | None, model: str, method: str, created: datetime) -> str:
    """A gpuwork trial's run id: free in ``out_dir`` (``records.reserve_run_id``), or new when nothing is written."""
    if out_dir is None:
        return records.new_run_id(model, method, created)
    return records.reserve_run_id(out_dir, model, method, created)


def own_run_path(folder: Path, model: str, method: str, created: datetime) -> Path:
    """Where a user's run's record goes: ``trial-<model>-<method>-<UTC time>.json``, or ``-2``, ``-3``... if taken."""
    stem = records.run_stem(model, method, created)
    candidate, n = folder / f"{stem}.json", 2
    while candidate.exists():
        candidate = folder / f"{stem}-{n}.json"
        n += 1
    return candidate


def write_record(record: TrialRecord, path: str | Path) -> Path:
    """Write a whole record: its steps file (``<name>.steps.jsonl``) and then the record JSON, each atomically
    (a reader never sees half a file); RecordWriteError names the folder. Costs one pass over the steps: for a
    record written once (the end of a run, a merged group); a running trial appends with ``RecordFile``."""
    from gpuwork.measure.record import record_step_rows, step_line, steps_path

    path = Path(path)
    lines = steps_path(path)
    records.write_bytes(lines, b"".join(step_line(m, ranks) for m, ranks in record_step_rows(record)))
    records.write_text(path, _record_text(record, lines.name, len(record.steps)))
    return path


def _record_text(record: TrialRecord, steps_file: str, count: int) -> str:
    return json.dumps(record.on_disk(steps_file, count), indent=1, allow_nan=True) + "\n"


class RecordFile:
    """A running trial's record on disk, at a cost per step that does not grow with the step count.

    Each step is appended to the steps file as one line (``append``: ``records.append_bytes``, kept by a
    SIGKILL); the record JSON (protocol, summary, status, no steps) is rewritten atomically by ``write``,
    which the runner calls when ``due()`` (at most every ``interval_s`` seconds) and at the end. A reader
    takes the steps file's whole lines, so a record killed between two writes still holds every finished
    step (``TrialRecord.from_json`` recomputes its summary). ``bytes_written`` counts what went to disk.
    """

    def __init__(self, path: str | Path, *, interval_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        from gpuwork.measure.record import steps_path

        self.path = Path(path)
        self.steps_path = steps_path(self.path)
        self.interval_s = SUMMARY_INTERVAL_S if interval_s is None else interval_s
        self.clock = clock
        self.count = 0  # lines in the steps file
        self.bytes_written = 0
        self._fd: int | None = None
        self._started = False
        self._last: float | None = None

    def start(self, rows: Iterable[tuple[StepMeasurement, Sequence[tuple[float, float, float]] | None]] = ()) -> None:
        """Create the steps file, with the steps a resumed trial keeps (``rows``: step, ranks' figures)."""
        self._fd = records.open_append(self.steps_path)
        self._started = True
        data = b"".join(self._line(m, ranks) for m, ranks in rows)
        if data:
            records.append_bytes(self._fd, self.steps_path, data)
            self.bytes_written += len(data)

    def _line(self, m: StepMeasurement, ranks: Sequence[tuple[float, float, float]] | None) -> bytes:
        from gpuwork.measure.record import step_line

        self.count += 1
        return step_line(m, ranks)

    def append(self, m: StepMeasurement, ranks: Sequence[tuple[float, float, float]] | None = None) -> None:
        """One finished step at the end of the steps file (RecordWriteError when the disk refuses it)."""
        if not self._started:
            self.start()
        if self._fd is None:  # closed: the trial has ended
            return
        line = self._line(m, ranks)
        records.append_bytes(self._fd, self.steps_path, line)
        self.bytes_written += len(line)

    def due(self) -> bool:
        """Whether ``interval_s`` has passed since the record JSON was last written."""
        return self._last is None or self.clock() - self._last >= self.interval_s

    def write(self, record: TrialRecord) -> None:
        """The record JSON, its steps counted as those appended so far (``record.steps`` are not written)."""
        text = _record_text(record, self.steps_path.name, self.count)
        records.write_text(self.path, text)
        self.bytes_written += len(text.encode("utf-8"))
        self._last = self.clock()

    def close(self) -> None:
        """Close the steps file (``write`` may still rewrite the record JSON)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = ["RSS_SAMPLE_INTERVAL_S", "SUMMARY_INTERVAL_S", "DeviceMemory", "GroupSteps", "Ranks", "RecordFile",
           "RssSampler", "own_run_path", "run_id", "write_record"]
