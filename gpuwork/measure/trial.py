"""The measured trial: a real fine-tune of the plan's model on real text, measured step by step.

The provider's advice is to prove a configuration before renting for a month: fixed steps, batch,
input size and environment; step time, peak memory and data-loading speed after warm-up; a
checkpoint saved *and* restored. ``run_trial(plan)`` does exactly that on whatever device is
present (CUDA if available, else the CPU with a small model built from a config) and returns a
``TrialRecord``; ``iter_trial(plan)`` is the same run as a generator of ``StepMeasurement``s
(warm-up steps included, flagged) whose return value is the record, for live charts.

What a trial does, in order:

1. Resolves the model (``gpuwork.facts.model.load_config``) and builds it (``gpuwork.measure.runtime``)
   with random weights via ``AutoModelFor*.from_config`` (or ``from_pretrained`` when the plan's
   model is a local folder with weights and the method is not ``scratch``); applies the method:
   ``full``/``scratch`` train everything, ``freeze`` the last ``trainable_layers`` blocks + final
   norm + untied head, ``lora`` adds peft adapters, ``qlora`` saves the model to a temporary folder
   and reloads it in 4 bits with bitsandbytes (the recipe in docs/sources.md#s-cpu-qlora).
2. Tokenizes and packs text (``gpuwork.measure.textdata``: the shipped corpus unless ``data`` is given).
3. Runs ``warmup`` + ``steps`` optimizer steps of ``grad_accum`` micro-batches each, timing every
   step with ``clock``, the wait for data, and memory (CUDA allocator peaks; process RSS on CPU).
4. Saves a checkpoint (weights or adapters, optimizer, scheduler, RNG, step), runs RESUME_STEPS
   more steps on the original model, frees it, restores the checkpoint into a freshly built model
   and optimizer, checks every saved tensor, runs the same steps and compares the losses
   (``gpuwork.measure.checkpoint``, the same round-trip for every rank of a torchrun trial).
5. Summarizes the measured steps (warm-up excluded) and writes the record as JSON when
   ``out_dir`` is given. Nothing else is written except temporary folders that are removed.

Substitutions are explicit: 16-bit precisions run in fp32 on CPU (bf16 is 35-40x slower on CPUs
without bf16 hardware, docs/sources.md#s-cpu-bf16), "flash" attention falls back to SDPA without CUDA or the
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
``gpuwork.measure.distributed``, which plugs its ``Parallel`` hooks into ``iter_trial``. The record's
schema and summaries are ``gpuwork.measure.record`` (re-exported here); memory sampling, the ranks'
agreement, run ids and the record file are ``gpuwork.measure.recorder``, shared with the other runners;
the options are one frozen ``TrialOptions`` (``gpuwork.measure.options``).
``gpuwork.measure.extrapolation.extrapolate`` turns a record into the whole run's time and cost.

Limitations: ``iter_trial`` alone is one process on one device; CPU memory is the process RSS
sampled every few milliseconds and at phase boundaries, so a peak shorter
than the sampling interval can be missed and memory the allocator keeps is counted; the checkpoint
round-trip holds the original and the restored model one after the other, never both at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import platform
import signal
import tempfile
import threading
import warnings
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuwork.facts.reading import link_target
from gpuwork.measure import records, sdpa
from gpuwork.measure.checkpoint import (
    RESUME_STEPS,
    CheckpointDamaged,
    FileCheckpoint,
    SavePoint,
    check_restored,
    file_sha256,
    read_manifest,
    read_trainer_state,
    roundtrip,
    unreadable_file,
    verify_manifest,
)
from gpuwork.measure.coded import to_json
from gpuwork.measure.options import DEFAULT_MAX_STEPS, ResumePoint, TrialOptions, check_until_stable
from gpuwork.measure.record import (
    DATA_WAIT_THRESHOLD,
    SCHEMA_VERSION,
    STATUS_COMPLETE,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
    CheckpointResult,
    ParallelInfo,
    RankResult,
    RunningSummary,
    Stability,
    StepMeasurement,
    TrialEnvironment,
    TrialProtocol,
    TrialRecord,
    TrialSummary,
    compare,
    summarize,
)
from gpuwork.measure.recorder import RSS_SAMPLE_INTERVAL_S, DeviceMemory, RecordFile, run_id
from gpuwork.measure.records import RecordWriteError
from gpuwork.measure.runtime import (
    ONE_PROCESS,
    ModelFactory,
    Parallel,
    Run,
    TrialError,
    build_run,
    is_oom,
    optimizer_class_name,
    preload,
    prepare,
    quiet_libraries,
    release_memory,
    rng_state,
    set_rng_state,
    train_step,
)
from gpuwork.measure.stability import RunningStepTimes
from gpuwork.measure.switches import execution_switches
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, Method, TrainPlan

# -- resuming an interrupted trial ---------------------------------------------------------------------


def find_record(run: str | Path, out_dir: str | Path | None = None) -> Path:
    """A trial's record file from a path or a run id (looked for in ``out_dir``, then the current folder).

    Only a regular file is a record: an empty name, a folder, a link loop, a dangling link, a pipe or a device is
    refused with a line that says which (never "not found")."""
    if not str(run).strip():
        raise TrialError(msg("error.resume.empty"))
    path = Path(run).expanduser()
    if _record_path_problem(path) is None and path.is_file():
        return path
    name = path.name if path.name.endswith(".json") else f"{path.name}.json"
    for folder in ([Path(out_dir).expanduser()] if out_dir is not None else []) + [path.parent, Path.cwd()]:
        candidate = folder / name
        problem = _record_path_problem(candidate)
        if problem is None and candidate.is_file():
            return candidate
    problem = _record_path_problem(path)
    if problem is not None:
        raise TrialError(msg(problem.code, **dict(problem.params)))
    raise TrialError(msg("error.trial.resume_not_found", run=str(run),
                         folder=str(Path(out_dir).expanduser() if out_dir is not None else Path.cwd())))


def _record_path_problem(path: Path) -> Msg | None:
    """Why ``path`` cannot be a record although something is there (None: a regular file, or nothing at all)."""
    import stat

    try:
        info = path.lstat()
    except OSError:
        return None  # nothing there: the name may be a run id
    if stat.S_ISLNK(info.st_mode):
        try:
            info = path.stat()
        except FileNotFoundError:
            return msg("error.resume.dangling_link", path=str(path), target=link_target(path))
        except (OSError, RuntimeError):  # ELOOP
            return msg("error.resume.link_loop", path=str(path))
    if stat.S_ISDIR(info.st_mode):
        return msg("error.resume.is_folder", path=str(path))
    if not stat.S_ISREG(info.st_mode):
        return msg("error.resume.not_regular", path=str(path))
    return None


def resume_point(run: str | Path, out_dir: str | Path | None = None) -> tuple[TrialRecord, ResumePoint]:
    """The record of an interrupted (or killed) trial and the checkpoint it can go on from.

    Leftover temporary files of that run (a SIGKILL leaves them) are removed. Raises TrialError naming
    the file when the record or checkpoint cannot be used.
    """
    path = find_record(run, out_dir)
    try:
        record = TrialRecord.from_json(path)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TrialError(msg("error.trial.not_a_record", path=str(path), kind=type(exc).__name__,
                             detail=str(exc).splitlines()[0] if str(exc) else "")) from None
    run_id = record.run_id or path.stem
    if record.status == STATUS_COMPLETE:
        raise TrialError(msg("error.trial.resume_complete", run=run_id))
    folder = records.previous_folder(path.parent / f"{path.stem}-checkpoint")
    if folder is None:
        raise TrialError(msg("error.trial.resume_no_checkpoint", run=run_id, folder=str(path.parent)))
    # every file against the digests taken when it was saved, before anything is read from it
    manifest = verify_manifest(folder, run_id=run_id)
    try:
        state = read_trainer_state(folder)
        step, taken = int(state["global_step"]), int(state["micro_batches"])
        world = int(state.get("world_size", 1))
    except Exception as exc:  # noqa: BLE001 - missing, truncated or foreign: one line naming the file
        raise TrialError(msg("error.trial.resume_unreadable", folder=str(folder),
                             what=unreadable_file("trainer_state.json", exc))) from None
    if manifest.get("step") != step:
        raise CheckpointDamaged(msg("error.resume.other_step", folder=str(folder), found=str(manifest.get("step")),
                                    expected=str(step)))
    done = tuple(s for s in record.steps if s.step <= step)
    if [s.step for s in done] != list(range(1, step + 1)) or world != record.world_size:
        raise TrialError(msg("error.trial.resume_mismatch", folder=str(folder), step=str(step),
                             expected=len(done)))
    records.remove_leftovers(path.parent, path.stem)
    return record, ResumePoint(run_id=run_id, record_path=str(path), checkpoint=str(folder), step=step,
                               micro_batches=taken, steps=done)


def resume_options(run: str | Path, out_dir: str | Path | None = None, *,
                   allow_changed_data: bool = False) -> dict[str, Any]:
    """``run_trial`` keyword arguments that go on with an interrupted trial exactly as it was started:
    plan, steps, warm-up, seed, learning rate, clipping, data, tokenizer, loader workers, memory cap,
    out_dir (the interrupted record's folder unless given), the device kind it ran on and ``resume``; for a trial
    that ran as several processes also ``nproc`` (for ``gpuwork.measure.distributed.run_distributed``, which
    takes the same).

    The checkpoint is checked against its manifest (``resume_point``) and every data file against the SHA-256 the
    record holds: a changed file is refused (TrialError) unless ``allow_changed_data``, and then the new record's
    ``protocol.dataset["changed_since_resume"]`` names the files."""
    from gpuwork.measure.textdata import BUILTIN_DATASET

    record, point = resume_point(run, out_dir)
    changed = changed_data(record)
    if changed and not allow_changed_data:
        path, now, saved = changed[0]
        raise TrialError(msg("error.resume.data_changed", path=path, run=point.run_id, now=now[:12], saved=saved[:12]))
    if changed:
        point = dataclasses.replace(point, data_changed=tuple(path for path, _, _ in changed))
    p = record.protocol
    data = None if p.dataset.get("name") == BUILTIN_DATASET else [f["path"] for f in p.dataset.get("files", [])]
    tokenizer = p.tokenizer.get("source") if p.tokenizer.get("kind") == "pretrained" else None
    options = {"plan": record.plan, "steps": p.steps, "warmup": p.warmup, "seed": p.seed, "lr": p.learning_rate,
               "max_grad_norm": p.max_grad_norm, "data": data, "tokenizer": tokenizer,
               "loader_workers": p.loader_workers, "memory_cap_bytes": p.memory_cap_bytes,
               "out_dir": out_dir if out_dir is not None else str(Path(point.record_path).parent), "resume": point,
               "device": "cuda" if record.environment.device.startswith("cuda") else "cpu"}
    if record.stability is not None:  # the same stopping rule
        options.update(until_stable=record.stability.tolerance, max_steps=record.stability.max_steps)
    if record.parallel is not None:  # the same processes: each rank's data shard depends on how many
        options["nproc"] = record.parallel.world_size
    return options


def changed_data(record: TrialRecord) -> list[tuple[str, str, str]]:
    """The data files of a record whose SHA-256 differs now: (path, SHA-256 now, SHA-256 recorded). A file that
    cannot be read (gone, a folder, a pipe) is a TrialError naming it."""
    import stat

    from gpuwork.measure.textdata import BUILTIN_DATASET, builtin_text_files

    dataset = record.protocol.dataset
    listed = [f for f in dataset.get("files", []) if isinstance(f, dict)]
    run = record.run_id or "?"
    if dataset.get("name") == BUILTIN_DATASET:  # the shipped corpus: where it is installed now
        paths = [str(p) for p in builtin_text_files()]
        if len(paths) != len(listed):
            return [(str(Path(paths[0]).parent), "-" * 12, str(dataset.get("sha256", "")))]
    else:
        paths = [str(f.get("path")) for f in listed]
    changed = []
    for path, saved in zip(paths, listed, strict=True):
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise IsADirectoryError(path) if os.path.isdir(path) else OSError("not a regular file")
            now = file_sha256(Path(path))
        except OSError as exc:
            detail = exc.strerror or str(exc) or type(exc).__name__
            raise TrialError(msg("error.resume.data_missing", path=path, run=run, detail=detail)) from None
        if now != saved.get("sha256"):
            changed.append((path, now, str(saved.get("sha256"))))
    return changed


# -- the trial ------------------------------------------------------------------------------------------------


class _StopSignals:
    """SIGINT / SIGTERM ask the trial to stop after the current step; a second signal stops it at once.

    Installed only in the main thread (Python delivers signals there); the previous handlers come back
    when the trial ends.
    """

    def __init__(self, enabled: bool):
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}
        if enabled and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signal_name is not None:  # asked twice: stop now (temporary folders are still removed)
            self.close()
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    @property
    def number(self) -> int:
        """The signal's number (0: none yet), what the ranks of a group reduce to agree."""
        return int(signal.Signals[self.signal_name]) if self.signal_name else 0

    def close(self) -> None:
        for sig, handler in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):  # not the main thread any more (generator collected)
                signal.signal(sig, handler)
        self._previous = {}


def iter_trial(plan: TrainPlan, options: TrialOptions | None = None, **changes: Any
               ) -> Generator[StepMeasurement, None, TrialRecord]:
    """Run a measured trial, yielding each step's measurement; the generator returns the TrialRecord.

    Args:
        plan: the run to prove (model, method, precision, optimizer, seq_len, batch_size, grad_accum, ...).
        options: a ``TrialOptions`` (None: all defaults); keywords change a copy of it
            (``iter_trial(plan, steps=5)``). Its fields:
        steps: measured optimizer steps (after warm-up).
        warmup: optimizer steps run first, yielded with ``is_warmup=True`` and left out of the summary.
        seed: seeds model init, data order, masking and dropout.
        device: "cpu", "cuda", "cuda:1" or a torch.device; None = CUDA when available, else CPU.
        data: a TextData, .txt/.jsonl file(s) or folder, or None for the shipped corpus.
        tokenizer: a local tokenizer folder; None trains a byte-level BPE on the data (in memory).
        out_dir: where the record JSON (``<run id>.json``, see ``records.new_run_id``) and the
            checkpoint folder (``<run id>-checkpoint``) are written; each step is appended to the record's
            steps file (``<run id>.steps.jsonl``) and its JSON (``status="running"``) rewritten atomically at
            most every ``recorder.SUMMARY_INTERVAL_S``. None writes nothing (temporary folders are removed).
        memory_cap_bytes: simulated device size: raise out-of-memory when the trial's measured
            memory (see StepMeasurement) passes it.
        model_factory: ``(transformers config, plan) -> nn.Module`` to build the base model instead
            of ``from_config`` (called again for the checkpoint restore; must be deterministic).
        clock: seconds as a float; injectable for tests.
        lr: learning rate; None = DEFAULT_LR_FULL / DEFAULT_LR_ADAPTERS x LR_FACTOR[optimizer].
        loader_workers: DataLoader worker processes (0 = load in this process).
        checkpoint: run the save -> restore -> verify -> resume round-trip.
        max_grad_norm: clip_grad_norm_'s norm; None = the plan's (1.0 when ``plan.grad_clip``, else no clipping
            call and no gradient norm measured); a norm for a plan that never clips is refused (TrialError).
        memory_sample_interval_s: CPU RSS sampling period (0 = sample at phase boundaries only).
        parallel: hooks of a multi-process run (``gpuwork.measure.distributed`` passes them); None = one process.
        resume: go on from an interrupted trial's checkpoint (``resume_point``): its steps are kept, the
            model, optimizer, scheduler, RNG and data position restored, and the next step is the one the
            uninterrupted run would have taken.
        checkpoint_every: also save a resumable checkpoint to out_dir every N steps (0 = only when stopped
            by a signal), so that a killed trial (SIGKILL, power loss) can be resumed.
        handle_signals: stop cleanly on SIGINT / SIGTERM (end the step, save a checkpoint, return the record
            with ``status="interrupted"``); None = yes for one process in the main thread.
        after_checkpoint_save: called with the round-trip's checkpoint folder between save and restore
            (fault injection: corrupt a file and see the check catch it).
        until_stable: run until the median step time's 95 % interval lies within +-this share of the
            median (``gpuwork.measure.stability``; e.g. 0.03), checked after each measured step from the
            ``steps``-th on; ``steps`` is then the minimum. ``record.stability`` says whether it converged.
        max_steps: with ``until_stable``, the most measured steps (default DEFAULT_MAX_STEPS).
    Raises TrialError / ModelError / DataError for unusable inputs, RecordWriteError when out_dir cannot
    be written at the start; out of memory is not raised but recorded (``fits=False``), and a write that
    fails later (disk full) is recorded in ``write_error`` while the steps go on in memory. While the
    generator runs, transformers' logging is set to errors and its progress bars are off (both restored
    at the end); the caller's RNG states are restored.
    """
    options = (options if options is not None else TrialOptions()).replace(**changes).checked()
    parallel = options.parallel
    if parallel is None:
        parallel = ONE_PROCESS
        options = options.replace(parallel=parallel)
    handle = options.handle_signals
    stop = _StopSignals(parallel.world_size == 1 if handle is None else handle)
    try:
        return (yield from _Trial(plan, options, stop).execute())
    finally:
        stop.close()


class _Trial:
    """The body of ``iter_trial`` (options checked, signal handlers installed), in phases: prepare (here), build,
    measure, verify and write; what they share lives on the instance."""

    def __init__(self, plan: TrainPlan, options: TrialOptions, stop: _StopSignals):
        o = self.o = options
        self.plan, self.stop, self.resume = plan, stop, o.resume
        self.parallel = o.parallel if o.parallel is not None else ONE_PROCESS
        self.started = o.clock()
        self.created = self.parallel.agree(datetime.now(UTC))
        self.setup, self.text = prepare(plan, o)
        self.dev = self.setup.device
        self.out_path = Path(o.out_dir).expanduser() if o.out_dir is not None else None
        if self.out_path is not None:
            try:
                self.out_path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise records.folder_error(exc, self.out_path) from None
        self.stem = self.parallel.agree(run_id(self.out_path, self.setup.model_name, plan.method.value, self.created))
        self.environment = dataclasses.replace(environment(self.dev), switches=tuple(self.setup.switches))
        self.json_path = self.out_path / f"{self.stem}.json" if self.out_path is not None else None
        self.checkpoint_folder = self.out_path / f"{self.stem}-checkpoint" if self.out_path is not None else None

        self.measurements: list[StepMeasurement] = list(self.resume.steps) if self.resume is not None else []
        self.notes: list[str] = []
        self.error: Msg | None = None
        self.write_failure: Msg | None = None
        self.checkpoint_result: CheckpointResult | None = None
        self.run: Run | None = None
        self.memory: DeviceMemory | None = None
        self.loader: Any = None
        self.batches: Any = None
        self.taken = 0  # micro-batches drawn from the loader: the data position a checkpoint saves
        self.temp = contextlib.ExitStack()
        self.params_total = self.params_trainable = 0
        self.status = STATUS_RUNNING
        # each step is appended to the record's steps file and its JSON rewritten at a bounded rate by the process
        # that writes (rank 0 writes the merged one): the bookkeeping of a step does not grow with the step count
        self.flushing = self.json_path is not None and self.parallel.rank == 0
        self.writer = RecordFile(self.json_path) if self.json_path is not None and self.flushing else None
        if self.writer is not None:
            self.temp.callback(self.writer.close)
        self.converged = False
        self.own = RunningSummary("GPU" if self.dev.type == "cuda" else "CPU")  # this process's steps: its summary
        self.judged = RunningStepTimes()  # the measured steps' times as the record reports them: what until_stable judges
        for m in self.measurements:
            self.own.add(m)
        self.resumed_rows = self.parallel.resumed_rows(self.measurements)
        for m, _ in self.resumed_rows:
            if not m.is_warmup:
                self.judged.add(m.step_time_s, m.step)
        self.data_source = self.text.as_dict()
        if self.resume is not None and self.resume.data_changed:  # allowed by the caller (--allow-changed-data)
            self.data_source["changed_since_resume"] = {"run_id": self.resume.run_id,
                                                        "files": list(self.resume.data_changed)}

    def make_record(self, state: str, *, with_steps: bool = True) -> TrialRecord:
        plan, setup, o, resume = self.plan, self.setup, self.o, self.resume
        peak = max(self.memory.highest_bytes if self.memory else 0, self.own.highest_memory_bytes)
        protocol = TrialProtocol(
            model=setup.model_name, method=plan.method.value, task=setup.task.value, steps=o.steps, warmup=o.warmup,
            micro_batch=plan.batch_size, grad_accum=plan.grad_accum, seq_len=plan.seq_len,
            tokens_per_step=plan.tokens_per_step // plan.gpus, seed=o.seed, learning_rate=setup.lr,
            lr_schedule=f"linear warm-up over {o.warmup} steps, then constant", max_grad_norm=setup.max_grad_norm,
            precision_requested=plan.precision.value, precision_used=setup.precision_used,
            attention_requested=plan.attention.value, attention_used=setup.attention,
            sdpa_backend_requested=plan.sdpa_backend.value if plan.attention is Attention.SDPA else "",
            sdpa_backend_used=setup.sdpa_used if setup.attention == "sdpa" else "",
            optimizer=plan.optimizer.value, optimizer_class=optimizer_class_name(plan.optimizer),
            grad_checkpointing=plan.grad_checkpointing, params_total=self.params_total,
            params_trainable=self.params_trainable,
            weights=str(setup.weights_dir) if setup.weights_dir is not None else "random", dataset=self.data_source,
            tokenizer=self.text.tokenizer.as_dict(), loader_workers=o.loader_workers,
            memory_cap_bytes=o.memory_cap_bytes, substitutions=tuple(setup.substitutions), plan=plan.as_dict(),
        )
        summary = self.own.summary()
        stability = None
        if o.until_stable is not None:
            stability = Stability.judged(summary, tolerance=o.until_stable, min_steps=o.steps,
                                         max_steps=o.max_steps if o.max_steps is not None else DEFAULT_MAX_STEPS,
                                         converged=self.converged)
        return TrialRecord(
            protocol=protocol, environment=self.environment, summary=summary, stability=stability,
            steps=tuple(self.measurements) if with_steps else (), checkpoint=self.checkpoint_result,
            fits=self.error is None, error=self.error,
            peak_trial_memory_bytes=peak, created_utc=self.created.isoformat(timespec="seconds"),
            duration_s=o.clock() - self.started, notes=tuple(dict.fromkeys(self.notes)),
            saved_to=str(self.json_path) if self.json_path is not None and self.write_failure is None else None,
            status=state, run_id=self.stem, resumed_from=resume.run_id if resume is not None else None,
            stop_signal=self.stop.signal_name if state == STATUS_INTERRUPTED else None,
            write_error=self.write_failure,
        )

    def _write_failed(self, exc: RecordWriteError) -> None:
        """A write that failed after the start (disk full): measure on in memory, say so at the end."""
        self.write_failure, self.flushing = exc.msg, False

    def flush(self, row: StepMeasurement, ranks: Any) -> None:
        """The step just taken at the end of the steps file; the record JSON rewritten when it is due."""
        if not self.flushing or self.writer is None:
            return
        try:
            self.writer.append(row, ranks)
            if self.writer.due():
                record = self.parallel.running_record(self.make_record(STATUS_RUNNING, with_steps=False))
                if record is not None:
                    self.writer.write(record)
        except RecordWriteError as exc:
            self._write_failed(exc)

    def save_resumable(self, done: int) -> None:
        """A checkpoint ``resume_point`` can go on from (with out_dir; every rank of a group writes its part)."""
        # rank 0 alone writes the record, so its write failure is what every rank follows
        if self.checkpoint_folder is None or self.parallel.agree(self.write_failure) is not None:
            return
        assert self.run is not None  # saved between steps, while the run is built
        try:
            store = self.parallel.checkpoint_store() or FileCheckpoint()
            store.save(self.run, self.setup, self.checkpoint_folder, done, micro_batches=self.taken, run_id=self.stem)
        except RecordWriteError as exc:
            self._write_failed(exc)

    def next_batch(self) -> dict[str, Any]:
        self.taken += 1
        return next(self.batches)

    def execute(self) -> Generator[StepMeasurement, None, TrialRecord]:
        """Build, measure, verify; out of memory ends it with ``fits=False``; then the record is written."""
        caller_rng = rng_state(self.dev)  # the trial seeds torch/python RNGs; the caller gets theirs back
        release_memory(self.dev)
        try:
            self.temp.enter_context(quiet_libraries())
            self.temp.enter_context(execution_switches(self.plan, self.dev))  # the caller's settings back at the end
            # the plan's SDPA backend for every forward / backward from here (steps, checkpoint round-trip), checked
            # under those settings before any model work: a backend that cannot run here is one message
            self.temp.enter_context(sdpa.restricted(sdpa.restriction(self.plan, self.setup.attention)))
            self.setup.sdpa_used = sdpa.check(self.plan, self.setup.attention, self.dev, self.setup.compute_dtype,
                                              self.setup.config_dict, self.setup.substitutions)
            try:
                scratch = self.parallel.scratch_dir(self.temp, self.out_path, self.stem)
            except OSError as exc:
                raise records.folder_error(exc, self.out_path or Path(tempfile.gettempdir())) from None
            if self.plan.method is Method.QLORA and self.setup.weights_dir is None:
                self.setup.qlora_base_dir = scratch / "base-model"
            preload(self.setup)
            self.memory = DeviceMemory(self.dev, cap_bytes=self.o.memory_cap_bytes,
                                       sample_interval_s=self.o.memory_sample_interval_s)
            try:
                first = self._build()
                done, stopped = yield from self._measure(first)
                if stopped:
                    self.status = STATUS_INTERRUPTED
                else:
                    self._verify(scratch, done)
                    self.status = STATUS_COMPLETE
            except Exception as exc:  # noqa: BLE001 - only out-of-memory is recorded; anything else re-raised
                if sdpa.no_kernel(exc):  # a call the plan's SDPA backend refuses: one line, not torch's traceback
                    raise sdpa.no_kernel_error(exc, self.plan) from None
                if not is_oom(exc):
                    raise
                self._out_of_memory(exc)
            finally:
                self.run = self.loader = self.batches = None
                release_memory(self.dev)
        finally:
            if self.memory is not None:
                self.memory.close()
            self.temp.close()  # the scratch folder, with QLoRA's 16-bit copy of the base model
            set_rng_state(caller_rng)
        return self._write()

    def _build(self) -> int:
        """Build the model (restored when resuming), write the first record and start the loader; the first step."""
        import torch

        from gpuwork.measure.textdata import cycle, make_loader

        assert self.memory is not None
        setup, resume, parallel = self.setup, self.resume, self.parallel
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.run = build_run(setup)
        self.notes.extend(_useful_warnings(caught))
        self.params_total, self.params_trainable = self.run.params_total, self.run.params_trainable
        self.memory.check("build")
        # a checkpoint that fails its check is refused before this run writes anything
        restored_rng = _restore(self.run, setup, resume) if resume is not None else None
        # the first record: a read-only folder or a full disk is said before any step, by every rank
        refused: Msg | None = None
        if self.flushing and self.writer is not None:
            try:
                first_record = parallel.running_record(self.make_record(STATUS_RUNNING, with_steps=False))
                if first_record is not None:
                    self.writer.write(first_record)
                    self.writer.start(self.resumed_rows)  # a resumed trial's record keeps the steps it goes on from
            except RecordWriteError as exc:
                refused = exc.msg
        refused = parallel.agree(refused)
        if refused is not None:
            assert self.out_path is not None  # only a trial with an out folder writes records (every rank's same)
            raise RecordWriteError(refused, self.out_path)
        o = self.o
        dataset = parallel.shard(self.text.dataset(setup.task.value, seed=o.seed))
        self.loader = make_loader(dataset, self.plan.batch_size, workers=o.loader_workers, seed=o.seed,
                                  pin_memory=self.dev.type == "cuda")
        self.batches = cycle(self.loader)
        if resume is not None and restored_rng is not None:
            for _ in range(resume.micro_batches):  # the same data order: skip what was trained on
                next(self.batches)
            self.taken = resume.micro_batches
            set_rng_state(restored_rng)
            return resume.step + 1
        torch.manual_seed(o.seed + 1)  # dropout stream, independent of init
        return 1

    def _measure(self, first: int) -> Generator[StepMeasurement, None, tuple[int, bool]]:
        """The optimizer steps from ``first``, each yielded; returns (steps done, stopped by a signal)."""
        o, plan, parallel, stop, memory, run = self.o, self.plan, self.parallel, self.stop, self.memory, self.run
        assert memory is not None and run is not None
        done = first - 1
        saved_at = None  # the step of the resumable checkpoint this run saved last
        stopped = False
        tokens = plan.tokens_per_step // plan.gpus
        for step in range(first, o.last_step + 1):
            stop.signal_name = parallel.stop_signal(stop.signal_name)  # every rank the same answer
            if stop.requested:
                stopped = True
                break
            memory.reset_peak()
            start = o.clock()
            loss, grad_norm, wait, step_lr = train_step(run, self.setup, self.next_batch, o.clock, memory)
            elapsed = o.clock() - start
            m = StepMeasurement(step=step, is_warmup=step <= o.warmup, loss=loss, step_time_s=elapsed,
                                data_wait_s=wait, tokens=tokens,
                                tokens_per_s=tokens / elapsed if elapsed > 0 else math.inf,
                                grad_norm=grad_norm, learning_rate=step_lr, padding_tokens=0,  # packed rows
                                **memory.step_fields())
            self.measurements.append(m)
            self.own.add(m)
            done = step
            parallel.share_step(m)
            row, ranks = parallel.record_row(m)  # the step as the record holds it (a group's: merged)
            if not row.is_warmup:
                self.judged.add(row.step_time_s, row.step)
            self.flush(row, ranks)
            yield m
            if o.until_stable is not None and step > o.warmup:
                # judged on rank 0 (on the times the record reports), followed by every rank
                self.converged = parallel.agree(self.judged.n >= o.steps and self.judged.is_stable(o.until_stable))
                if self.converged:
                    break
            if o.checkpoint_every and step % o.checkpoint_every == 0 and step < o.last_step:
                self.save_resumable(step)
                saved_at = step
        if not stopped:  # a signal during the last step
            stop.signal_name = parallel.stop_signal(stop.signal_name)
            stopped = stop.requested
        if stopped and saved_at != done:
            self.save_resumable(done)
        return done, stopped

    def _verify(self, scratch: Path, done: int) -> None:
        """The checkpoint round-trip after the last step: save, restore into a fresh build, compare."""
        assert self.run is not None
        self.parallel.after_steps(self.run)
        if not self.o.checkpoint or self.parallel.agree(self.write_failure) is not None:  # rank 0's failure rules
            return
        position = self.taken
        resume_batches = [next(self.batches) for _ in range(RESUME_STEPS * self.plan.grad_accum)]
        owner, self.run = [self.run], None  # the round-trip takes the only reference and frees it
        folder = self.checkpoint_folder if self.checkpoint_folder is not None else scratch / "checkpoint"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.checkpoint_result = roundtrip(
                    owner, self.setup, SavePoint(step=done, micro_batches=position, batches=resume_batches),
                    folder=folder, kept=self.out_path is not None, clock=self.o.clock,
                    after_save=self.o.after_checkpoint_save)
            self.notes.extend(_useful_warnings(caught))
        except RecordWriteError as exc:
            self._write_failed(exc)

    def _out_of_memory(self, exc: BaseException) -> None:
        """Record out of memory as the trial's end (``fits=False``) with the memory it reached."""
        detail = str(exc).splitlines()[0] if str(exc) else ""
        self.error = getattr(exc, "gpuwork_msg", None) or (
            msg("trial.out_of_memory", kind=type(exc).__name__, detail=detail) if detail
            else msg("trial.out_of_memory_bare", kind=type(exc).__name__))
        self.status = STATUS_COMPLETE
        if self.memory is not None:
            with contextlib.suppress(Exception):
                self.memory.trial_bytes()

    def _write(self) -> TrialRecord:
        """The final record, written by the process that writes it (a group's rank 0, after gathering)."""
        record = self.make_record(self.status)
        try:
            if self.flushing and self.writer is not None and self.parallel.writes_record:
                try:
                    self.writer.write(record)
                except RecordWriteError as exc:
                    self.write_failure = exc.msg
                    record = self.make_record(self.status)
        finally:
            if self.writer is not None:
                self.writer.close()
        return record


def _restore(run: Run, setup: Any, resume: ResumePoint) -> dict[str, Any]:
    """Load an interrupted trial's checkpoint into a freshly built run (this rank's part of it); return its RNG
    state. ``resume_point`` checked every file against the manifest before; after the load, the restored
    state is compared with the per-tensor digests the manifest took in memory at the save."""
    store = setup.parallel.checkpoint_store() or FileCheckpoint()
    folder = Path(resume.checkpoint)
    manifest = read_manifest(folder, run_id=resume.run_id, step=resume.step)  # unedited (its seal), this run
    try:
        rng = store.load(run, setup, folder)
    except Exception as exc:  # noqa: BLE001 - a file that cannot be read back: one line naming it
        if is_oom(exc):
            raise
        raise TrialError(msg("error.trial.resume_unreadable", folder=str(folder),
                             what=unreadable_file(store.reading, exc))) from None
    found = store.trainer_state.get("global_step")
    if found != resume.step or store.trainer_state.get("seed") != setup.seed:
        raise TrialError(msg("error.trial.resume_mismatch", folder=str(folder), step=str(found),
                             expected=resume.step))
    current = rng_state(setup.device)
    set_rng_state(rng)  # the digests were taken with the saved RNG state current
    try:
        restored = store.restored_digests(run, setup)
    finally:
        set_rng_state(current)
    check_restored(folder, store.saved_digests(manifest), restored)
    return rng


def run_trial(plan: TrainPlan, options: TrialOptions | None = None, *,
              callbacks: Iterable[Callable[[StepMeasurement], Any]] = (), **changes: Any) -> TrialRecord:
    """Run a measured trial to the end and return its TrialRecord; each step goes to every callback.

    Takes the options of ``iter_trial`` (a ``TrialOptions`` and/or its fields as keywords).
    """
    callbacks = list(callbacks)
    gen = iter_trial(plan, options, **changes)
    while True:
        try:
            measurement = next(gen)
        except StopIteration as stop:
            return stop.value
        for callback in callbacks:
            callback(measurement)


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
    error: Msg | None  # as TrialRecord.error


@dataclass(frozen=True)
class RampResult:
    """The largest micro-batch (at the plan's seq_len), then the longest seq_len at that batch, that fit."""

    probes: tuple[RampProbe, ...]
    max_batch_size: int | None  # None when not even the smallest batch fit
    max_seq_len: int | None  # at max_batch_size
    # what stopped the search, a code rendered by the catalog's ramp.limit.<code> (spaces as "_"):
    batch_limited_by: str  # "out of memory", "max_batch_size" or "nothing fit"
    seq_limited_by: str  # "out of memory", "max_seq_len" or "nothing fit"

    def as_dict(self) -> dict[str, Any]:
        return to_json(self)


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


# -- helpers: environment, files, warnings ----------------------------------------------------------------------


_slug = records.slug


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


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform says."""
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


def environment(device: Any) -> TrialEnvironment:
    """Software versions and hardware of ``device`` (a torch.device: "cpu" or "cuda:N"), as a record holds them."""
    import psutil
    import torch

    ram = int(psutil.virtual_memory().total)
    cpu = cpu_model()
    host = TrialEnvironment(
        python=platform.python_version(), platform=platform.platform(), torch=torch.__version__,
        transformers=_version("transformers"), peft=_version("peft"), bitsandbytes=_version("bitsandbytes"),
        accelerate=_version("accelerate"), tokenizers=_version("tokenizers"), device="cpu", device_name=cpu,
        device_total_bytes=ram, cpu_model=cpu, cpu_logical_cores=os.cpu_count() or 1,
        torch_threads=torch.get_num_threads(), ram_total_bytes=ram,
    )
    if device.type != "cuda":
        return host
    props = torch.cuda.get_device_properties(device)
    _, total = torch.cuda.mem_get_info(device)
    return dataclasses.replace(
        host, device=str(device), device_name=torch.cuda.get_device_name(device), device_total_bytes=int(total),
        cuda_version=torch.version.cuda, cudnn_version=torch.backends.cudnn.version(),
        driver_version=_driver_version(), gpu_compute_capability=f"{props.major}.{props.minor}",
        gpu_count=torch.cuda.device_count(),
    )


__all__ = [
    "DEFAULT_MAX_STEPS",
    "RSS_SAMPLE_INTERVAL_S",
    "check_until_stable",
    "changed_data",
    "DATA_WAIT_THRESHOLD",
    "SCHEMA_VERSION",
    "STATUS_COMPLETE",
    "STATUS_INTERRUPTED",
    "STATUS_RUNNING",
    "CheckpointResult",
    "ModelFactory",
    "Parallel",
    "ParallelInfo",
    "RampProbe",
    "RampResult",
    "RankResult",
    "ResumePoint",
    "StepMeasurement",
    "TrialOptions",
    "TrialEnvironment",
    "TrialError",
    "TrialProtocol",
    "TrialRecord",
    "TrialSummary",
    "Stability",
    "compare",
    "environment",
    "find_record",
    "iter_trial",
    "ramp",
    "resume_options",
    "resume_point",
    "run_trial",
    "summarize",
]
