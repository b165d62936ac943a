"""Measure the user's own training run: a Trainer callback and a context manager for a plain loop.

The seed advice is to prove a plan with a short trial *of the real workload*. ``gpuwork trial`` runs
gpuwork's own loop; this module measures the user's: one added line turns a Hugging Face ``Trainer``
or TRL ``SFTTrainer`` run into the same ``TrialRecord`` (so ``gpuwork compare``, calibration and the
offers panel read it unchanged)::

    trainer.add_callback(GpuworkCallback(out="trial-out", steps=20))   # a 20-step trial, then stop
    trainer.train()

and a plain PyTorch loop does the same with ``measure``::

    with measure(model=model, out="trial-out", steps=20) as m:
        for batch in m.batches(loader):
            loss = model(**batch).loss; loss.backward(); opt.step(); opt.zero_grad()
            if m.step(batch, loss=loss):
                break

What is measured, per optimizer step after ``warmup`` steps (flagged, left out of the summary):

- wall time from the end of the previous step to the end of this one (CUDA synchronised), which
  includes the data wait and excludes logging, evaluation and checkpoint saves between steps;
- the data wait: the Trainer fetches a step's batches between ``on_step_end`` of the previous step
  (or the evaluation / save / log that followed it) and ``on_step_begin``; in a plain loop the time
  spent in ``next()`` of ``m.batches(loader)``;
- tokens from the batch itself (a forward pre-hook on the model in training mode reads
  ``attention_mask``): real tokens in ``StepMeasurement.tokens``, padding counted apart;
- memory, every rank: on CUDA the allocator's peak allocated and reserved (reset at each step) and
  the device total (``torch.cuda.mem_get_info``: what nvidia-smi shows); on CPU the process RSS
  (sampled every RSS_SAMPLE_INTERVAL_S), as ``gpuwork trial`` does;
- the loss the Trainer logs (the callback asks it to log every measured step; TRL and Trainer
  report the mean over ranks) or the loss given to ``m.step``.

The record is on disk as the run goes (with ``out``): each step is appended to its ``.steps.jsonl``
once its loss is in and the JSON rewritten at most every ``SUMMARY_INTERVAL_S``
(``gpuwork.measure.recorder.RecordFile``, as ``gpuwork trial`` does), so a killed run leaves a record
(``status="running"``) of every finished step. Under torchrun every rank's step is gathered as it is
committed (``GroupSteps``: one gather a step, as gpuwork's own ranks do) and rank 0 appends the merged
step with each rank's figures, so a group killed with SIGKILL keeps every finished step too; at the end
rank 0 rewrites the JSON with the whole merged record (per-rank figures, as before).

Also: the checkpoint save the Trainer makes (``on_save``, timed; with ``verify_restore=True`` the
saved weights or adapters are restored into a freshly built model and compared tensor by tensor),
and the evaluation pass (timed; its share of the whole run is the plan's ``eval_fraction``,
measured instead of assumed 5 %). Under torchrun / accelerate every rank measures and rank 0 writes
one record with per-rank figures (``RankResult``; gathered with torch.distributed).

The record's fields beyond gpuwork trial's: ``source`` (which of the two measured), ``inferred``
(each plan field read from the run and where from), ``evaluation`` (passes, times, share of the
run), ``saves`` (every checkpoint save, timed) and per step ``padding_tokens`` and, on CUDA,
``device_total_bytes``. Both trials give the median step time with its 95 % interval and drift
(``gpuwork.measure.stability``); ``until_stable=0.03`` runs until the interval is within +-3 %.

Limitations: the evaluation and save times are measured from the last event before them (step
end or the Trainer's log), so the Trainer's own bookkeeping in between is counted with them; the
loss the Trainer logs is the mean over ranks, so ``RankResult.losses`` repeat it on every rank;
the checkpoint round-trip does not resume training on the restored model (the Trainer owns the
loop); CPU memory is the process RSS (see ``gpuwork.measure.recorder``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from gpuwork.errors import ModelError, PlanError
from gpuwork.measure.errors import TrialError
from gpuwork.measure.hf_plan import base_model, infer_plan, unwrap
from gpuwork.measure.options import OwnRunOptions, check_until_stable
from gpuwork.measure.record import (
    STATUS_COMPLETE,
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
    merge_ranks,
    rank_result,
    summarize,
)
from gpuwork.measure.recorder import DeviceMemory, GroupSteps, Ranks, RecordFile, own_run_path, write_record
from gpuwork.measure.records import RecordWriteError, folder_error
from gpuwork.measure.stability import RunningStepTimes
from gpuwork.measure.trial import environment
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.units import is_whole

CALLBACK_SOURCE = "gpuwork.hf.GpuworkCallback"  # the record's source when the callback measured
UNTIL_STABLE_MIN_STEPS = 10  # until_stable without steps: measured steps before the first check



# -- memory ----------------------------------------------------------------------------------------------------


def _tensor_bytes(model: Any) -> int:
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])


# -- the measuring core, shared by the callback and the context manager ------------------------------------------


class _Recorder:
    """Collects step measurements, saves and evaluations; builds and writes the record."""

    def __init__(self, plan: TrainPlan | None, options: OwnRunOptions, source: str):
        steps, warmup, until_stable, max_steps = options.steps, options.warmup, options.until_stable, options.max_steps
        if steps is not None and not is_whole(steps, 1):
            raise TrialError(msg("error.trial.steps", steps=repr(steps)))
        if until_stable is not None and steps is None:
            steps = UNTIL_STABLE_MIN_STEPS
        self.until_stable = until_stable
        # until_stable: measured steps before the first check
        self.min_steps = steps if steps is not None else UNTIL_STABLE_MIN_STEPS
        self.max_steps = check_until_stable(until_stable, max_steps, steps or 1)
        self.converged = False
        self.agree: Callable[[Any], Any] = lambda value: value  # rank 0's decision on every rank (torchrun)
        if not is_whole(warmup, 0):
            raise TrialError(msg("error.trial.warmup", warmup=repr(warmup)))
        if plan is not None and not isinstance(plan, TrainPlan):
            raise TrialError(msg("error.hf.plan_type", kind=type(plan).__name__))
        self.plan = plan
        self.out = Path(options.out).expanduser() if options.out is not None else None
        self.steps = steps
        self.warmup = warmup
        self.on_measure = options.on_measure
        self.sample_interval_s = options.memory_sample_interval_s
        self.source = source
        self.measurements: list[StepMeasurement] = []
        self.times = RunningStepTimes()  # the measured steps' times, for until_stable at a constant cost per step
        self.saves: list[dict[str, Any]] = []
        self.evaluations_s: list[float] = []
        self.checkpoint: CheckpointResult | None = None
        self.inferred: dict[str, Any] = {}
        self.notes: list[str] = []
        self.memory: DeviceMemory | None = None
        self.model: Any = None
        self.optimizer: Any = None  # for the per-rank optimizer state bytes (torchrun) and the record's class
        self.device: Any = None
        self.held_before_bytes = 0
        self.started_s = time.perf_counter()
        self.created = datetime.now(UTC)
        self.micro_tokens = 0
        self.micro_padding = 0
        self.max_seq_len = 0
        self.max_rows = 0  # sequences in the largest micro-batch seen
        self.micro_batches = 0
        self.unsent = False  # the last step is not yet sent to on_measure
        self._hook: Any = None
        self.saved_to: Path | None = None
        self.record: TrialRecord | None = None
        # the record on disk as the run goes (with ``out``; a group's rank 0): each step appended once its loss is
        # in, the JSON rewritten at a bounded rate (RecordFile), so a killed run keeps every finished step
        self.world: _World | None = None
        self.group: GroupSteps | None = None  # under torchrun with rank 0's ``out``: every rank's steps, merged
        self.param_sizes = (0, 0)  # this rank's (param, trainable) bytes, for the running record's ranks
        self.writer: RecordFile | None = None
        self.write_error: Msg | None = None
        self.running: RunningSummary | None = None  # the committed steps' summary, kept at a constant cost per step
        self.guess_plan: Callable[[], tuple[TrainPlan, dict[str, Any]]] | None = None  # a running record's plan
        self.protocol_extra: dict[str, Any] = {}
        self._guessed: tuple[tuple[int, int], TrainPlan | None, dict[str, Any]] | None = None
        self._environment: TrialEnvironment | None = None

    # -- set-up ----------------------------------------------------------------------------------------------

    def attach(self, model: Any) -> None:
        """Start measuring ``model``'s run: memory baseline, the token-counting hook."""
        import torch

        self.model = model
        try:
            self.device = next(model.parameters()).device
        except StopIteration:
            self.device = torch.device("cpu")
        self.held_before_bytes = _tensor_bytes(model)
        self.memory = DeviceMemory(self.device, sample_interval_s=self.sample_interval_s,
                                   loaded_bytes=self.held_before_bytes)
        self._hook = unwrap(model).register_forward_pre_hook(self._count_tokens, with_kwargs=True)

    def join(self, world: _World) -> None:
        """The run's processes. Under torchrun, when rank 0 writes a record (its ``out``), every rank's finished
        step is gathered as it is committed, so that rank 0 appends the merged step while the run goes."""
        self.world = world
        self.agree = world.agree
        if world.size > 1 and world.agree(self.out is not None):  # rank 0's choice: every rank gathers, or none
            self.group = GroupSteps(world, self._device_kind())
            if self.model is not None:
                params = list(unwrap(self.model).parameters())
                self.param_sizes = (sum(p.numel() * p.element_size() for p in params),
                                    sum(p.numel() * p.element_size() for p in params if p.requires_grad))

    def _count_tokens(self, module: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        if not module.training:
            return  # evaluation batches are not training tokens
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        if ids is None or not hasattr(ids, "numel"):
            return
        total = int(ids.numel())
        real = int(mask.sum().item()) if mask is not None and hasattr(mask, "sum") else total
        self.micro_tokens += real
        self.micro_padding += total - real
        self.micro_batches += 1
        if ids.dim() >= 2:
            self.max_seq_len = max(self.max_seq_len, int(ids.shape[-1]))
            self.max_rows = max(self.max_rows, int(ids.shape[0]))

    def count_batch(self, batch: Any) -> None:
        """Tokens of a batch given to ``m.step`` when the model's hook saw none (a loop without ``model=``)."""
        if isinstance(batch, dict) and "input_ids" in batch:
            ids = batch["input_ids"]
            mask = batch.get("attention_mask")
            total = int(ids.numel())
            real = int(mask.sum().item()) if mask is not None else total
            self.micro_tokens += real
            self.micro_padding += total - real
            self.max_seq_len = max(self.max_seq_len, int(ids.shape[-1]))
            self.max_rows = max(self.max_rows, int(ids.shape[0]) if ids.dim() >= 2 else 1)
        elif hasattr(batch, "numel"):
            self.micro_tokens += int(batch.numel())
            self.max_seq_len = max(self.max_seq_len, int(batch.shape[-1]))

    # -- steps -------------------------------------------------------------------------------------------------

    @property
    def device_memory(self) -> DeviceMemory:
        """The run's memory sampler: started by ``attach`` or ``measure`` before the first step."""
        assert self.memory is not None, "attach the model (or start measure) before stepping"
        return self.memory

    def begin_step(self) -> None:
        self.micro_tokens = self.micro_padding = 0

    @property
    def measured_count(self) -> int:
        return self.times.n

    def step_done(self) -> bool:
        """Whether the trial has measured enough: ``steps`` steps, or with ``until_stable`` an interval within
        the tolerance (or ``max_steps``). Called once per step on every rank (the ranks agree on rank 0's)."""
        count = self.measured_count
        if self.until_stable is None:
            return self.steps is not None and count >= self.steps
        if count < self.min_steps:
            return False
        self.converged = bool(self.agree(self.times.is_stable(self.until_stable)))
        return self.converged or count >= self.max_steps

    def end_step(self, *, step_time_s: float, data_wait_s: float, loss: float, grad_norm: float | None = None,
                 learning_rate: float = math.nan, notify: bool = True) -> StepMeasurement:
        fields = self.device_memory.step_fields()
        step = len(self.measurements) + 1
        tokens = self.micro_tokens
        m = StepMeasurement(step=step, is_warmup=step <= self.warmup, loss=float(loss), step_time_s=step_time_s,
                            data_wait_s=data_wait_s, tokens=tokens,
                            tokens_per_s=tokens / step_time_s if step_time_s > 0 else math.inf,
                            grad_norm=None if grad_norm is None else float(grad_norm), learning_rate=float(learning_rate),
                            padding_tokens=self.micro_padding, **fields)
        self.measurements.append(m)
        if not m.is_warmup:
            self.times.add(m.step_time_s, m.step)
        self.micro_tokens = self.micro_padding = 0
        self.unsent = not notify
        if notify:
            self._commit(m)
        return m

    def notify(self) -> None:
        """Commit the last step once its loss is in (the Trainer logs after on_step_end)."""
        if self.unsent and self.measurements:
            self.unsent = False
            self._commit(self.measurements[-1])

    def _commit(self, m: StepMeasurement) -> None:
        """A finished step: into the running summary, onto the disk, then to ``on_measure``."""
        if self.running is None:
            self.running = RunningSummary(self._device_kind())
        self.running.add(m)
        if self.group is not None:  # every rank at the same event: the group's step, merged, for rank 0's file
            self.group.share(m, *self.param_sizes)
            row, ranks = self.group.row()
            self._flush(row, ranks)
        else:
            self._flush(m, None)
        if self.on_measure is not None:
            self.on_measure(m)

    def fill_loss(self, loss: float | None, grad_norm: float | None, learning_rate: float | None) -> None:
        """Put the Trainer's logged values into the last step (logging follows on_step_end); a step already
        committed (written to disk) keeps its values."""
        if not self.measurements or not self.unsent:
            return
        last = self.measurements[-1]
        self.measurements[-1] = dataclasses.replace(
            last, loss=last.loss if loss is None else float(loss),
            grad_norm=last.grad_norm if grad_norm is None else float(grad_norm),
            learning_rate=last.learning_rate if learning_rate is None else float(learning_rate))

    # -- saves, evaluations ---------------------------------------------------------------------------------

    def saved(self, folder: Path | None, save_s: float, verify: Callable[[Path], tuple[float, float, int, list[str]]]
              | None) -> None:
        files = {}
        if folder is not None and folder.is_dir():
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    files[str(path.relative_to(folder))] = path.stat().st_size
        self.saves.append({"path": str(folder) if folder else None, "save_s": save_s,
                           "bytes_on_disk": sum(files.values())})
        if self.checkpoint is not None:
            return  # the record keeps the first save's round-trip
        rebuild_s = restore_s = 0.0
        checked = 0
        differ: list[str] = []
        if verify is not None and folder is not None:
            rebuild_s, restore_s, checked, differ = verify(folder)
            if differ:
                message = msg("checkpoint.entries_differ", count=len(differ), first=", ".join(differ[:3]))
            else:
                message = msg("hf.checkpoint.restored", tensors=checked)
        else:
            message = msg("hf.checkpoint.saved_only")
        verified = verify is not None and checked > 0 and not differ
        self.checkpoint = CheckpointResult(
            path=str(folder) if folder else None, files=files, bytes_on_disk=sum(files.values()), save_s=save_s,
            rebuild_s=rebuild_s, restore_s=restore_s, tensors_checked=checked, tensors_equal=verified,
            uninterrupted_losses=(), resumed_losses=(), max_abs_loss_diff=0.0, loss_rtol=0.0, verified=verified,
            message=message)

    # -- the record -----------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self.memory is not None:
            self.memory.close()
        if self.writer is not None:
            self.writer.close()

    def _device_kind(self) -> str:
        return "GPU" if self.device is not None and self.device.type == "cuda" else "CPU"

    def _env(self) -> TrialEnvironment:
        if self._environment is None:
            self._environment = environment(self.device)
        return self._environment

    def _plan_so_far(self) -> tuple[TrainPlan | None, dict[str, Any]]:
        """The plan for a running record: the caller's, or inferred from what the run has shown so far (read
        again only when the longest batch grows)."""
        if self.plan is not None or self.guess_plan is None:
            return self.plan, dict(self.inferred)
        key = (self.max_seq_len, self.max_rows)
        if self._guessed is None or self._guessed[0] != key:
            try:
                plan, inferred = self.guess_plan()
            except (TrialError, ModelError, PlanError):
                plan, inferred = None, {}
            self._guessed = (key, plan, inferred)
        return self._guessed[1], dict(self._guessed[2])

    def _assemble(self, plan: TrainPlan | None, inferred: dict[str, Any], summary: TrialSummary | None, *,
                  steps: tuple[StepMeasurement, ...], peak: int, evaluation: dict[str, Any],
                  protocol_extra: dict[str, Any], status: str) -> TrialRecord:
        stability = None
        if self.until_stable is not None:
            stability = Stability.judged(summary, tolerance=self.until_stable, min_steps=self.min_steps,
                                         max_steps=self.max_steps, converged=self.converged)
        tokens_per_step = summary.tokens_per_step if summary is not None else 0  # the mean of the measured steps
        protocol = _protocol(plan, self, tokens_per_step, protocol_extra)
        return TrialRecord(
            protocol=protocol, environment=self._env(), summary=summary, steps=steps,
            checkpoint=self.checkpoint, fits=True, error=None, peak_trial_memory_bytes=peak,
            created_utc=self.created.isoformat(timespec="seconds"), duration_s=time.perf_counter() - self.started_s,
            notes=tuple(dict.fromkeys(self.notes)), stability=stability, source=self.source, evaluation=evaluation,
            inferred=inferred or None, saves=tuple(self.saves), status=status, write_error=self.write_error,
            saved_to=str(self.writer.path) if self.writer is not None else None)

    def _running_record(self) -> TrialRecord:
        """The record so far, without its steps (they are in the steps file): costs the same at any step."""
        plan, inferred = self._plan_so_far()
        running = self.running
        evaluation = {"passes": len(self.evaluations_s), "times_s": list(self.evaluations_s),
                      "mean_s": statistics.fmean(self.evaluations_s) if self.evaluations_s else None,
                      "share_of_run": None}
        own = self._assemble(plan, inferred, running.summary() if running else None, steps=(),
                             peak=running.highest_memory_bytes if running else 0, evaluation=evaluation,
                             protocol_extra=self.protocol_extra, status=STATUS_RUNNING)
        if self.group is None or self.world is None:
            return own
        merged = self.group.running_record(own, self.world.info(self))
        tokens = merged.summary.tokens_per_step if merged.summary is not None else 0  # all ranks' real tokens
        return self.world.callback_fields(dataclasses.replace(
            merged, protocol=dataclasses.replace(merged.protocol, tokens_per_step=tokens)), own)

    def _flush(self, m: StepMeasurement, ranks: list[tuple[float, float, float]] | None) -> None:
        """Append a committed step (a group's: merged, with each rank's figures) to the record's steps file;
        rewrite its JSON when due. The process that writes only (a group's rank 0); a failed write is said in
        the record."""
        if self.out is None or self.world is None or self.world.rank != 0 or self.write_error is not None:
            return
        try:
            if self.writer is None:
                plan, _ = self._plan_so_far()
                try:
                    self.out.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise folder_error(exc, self.out) from None
                self.writer = RecordFile(own_run_path(self.out, plan.model if plan else "unknown",
                                                      plan.method.value if plan else "unknown", self.created))
                self.writer.write(self._running_record())  # the name is taken before the first line
                self.writer.start()
            self.writer.append(m, ranks)
            if self.writer.due():
                self.writer.write(self._running_record())
        except RecordWriteError as exc:  # disk full, read-only: the run goes on, the record says so
            self.write_error = exc.msg
            if self.writer is not None:
                self.writer.close()
            self.writer = None

    def build(self, *, protocol_extra: dict[str, Any], runs: dict[str, Any], world: _World) -> TrialRecord | None:
        """The record of this rank, merged with the other ranks' on rank 0 (None on other ranks)."""
        plan, inferred = self.plan, dict(self.inferred)
        measured = [m for m in self.measurements if not m.is_warmup]
        eval_share = _eval_share(self.evaluations_s, measured, runs)
        if plan is not None and eval_share is not None and "eval_fraction" in inferred:
            plan = plan.replace(eval_fraction=min(max(eval_share, 0.0), 1.0))
            inferred["eval_fraction"] = {"value": plan.eval_fraction, "from": "measured evaluation pass"}
        summary = summarize(self.measurements, self._device_kind())  # tokens per step: the mean of the measured
        evaluation = {"passes": len(self.evaluations_s), "times_s": list(self.evaluations_s),
                      "mean_s": statistics.fmean(self.evaluations_s) if self.evaluations_s else None,
                      "share_of_run": eval_share, **runs}
        peak = max([m.trial_memory_bytes for m in self.measurements] or [0])
        record = self._assemble(plan, inferred, summary, steps=tuple(self.measurements), peak=peak,
                                evaluation=evaluation, protocol_extra=protocol_extra, status=STATUS_COMPLETE)
        if world.size > 1:
            merged = world.merge(record, self)
            if merged is None:  # not rank 0
                return None
            record = merged
        if self.writer is not None:  # every step is in its steps file: the JSON alone is rewritten
            record = dataclasses.replace(record, saved_to=str(self.writer.path))  # a merged record names it too
            self.writer.write(record)
            self.writer.close()
            self.saved_to = self.writer.path
        elif self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            path = own_run_path(self.out, record.protocol.model, record.protocol.method, self.created)
            record = dataclasses.replace(record, saved_to=str(path))
            write_record(record, path)
            self.saved_to = path
        self.record = record
        return record


def _eval_share(evaluations_s: list[float], measured: list[StepMeasurement], runs: dict[str, Any]) -> float | None:
    """Evaluation time of the whole run over its training time: passes x mean pass / (steps x median step)."""
    if not evaluations_s or not measured:
        return None
    total_steps, passes = runs.get("run_steps"), runs.get("run_eval_passes")
    if not total_steps or passes is None:
        return None
    train_s = total_steps * statistics.median(m.step_time_s for m in measured)
    return passes * statistics.fmean(evaluations_s) / train_s if train_s > 0 else None


def _protocol(plan: TrainPlan | None, rec: _Recorder, tokens_per_step: int, extra: dict[str, Any]) -> TrialProtocol:
    model = rec.model
    base = unwrap(model) if model is not None else None
    total = sum(p.numel() for p in base.parameters()) if base is not None else 0
    trainable = sum(p.numel() for p in base.parameters() if p.requires_grad) if base is not None else 0
    plan_dict = plan.as_dict() if plan is not None else {}
    precision = plan.precision.value if plan is not None else "unknown"
    attention = str(getattr(getattr(base, "config", None), "_attn_implementation", None) or "unknown")
    protocol = TrialProtocol(
        model=plan.model if plan is not None else "unknown", method=plan.method.value if plan is not None else "unknown",
        task=plan.task.value if plan is not None else "unknown", steps=rec.measured_count, warmup=rec.warmup,
        micro_batch=plan.batch_size if plan is not None else 0, grad_accum=plan.grad_accum if plan is not None else 1,
        seq_len=plan.seq_len if plan is not None else rec.max_seq_len, tokens_per_step=tokens_per_step, seed=0,
        learning_rate=math.nan, lr_schedule="the caller's", max_grad_norm=None, precision_requested=precision,
        precision_used=precision, attention_requested=plan.attention.value if plan is not None else attention,
        attention_used=attention, optimizer=plan.optimizer.value if plan is not None else "unknown",
        optimizer_class="unknown", grad_checkpointing=plan.grad_checkpointing if plan is not None else False,
        params_total=total, params_trainable=trainable, weights="the caller's model",
        dataset={"name": "the caller's data"}, tokenizer={"kind": "the caller's"}, loader_workers=0,
        memory_cap_bytes=None, substitutions=(), plan=plan_dict)
    return dataclasses.replace(protocol, **extra) if extra else protocol  # what the Trainer's arguments say


def _spec_check(plan: TrainPlan, rec: _Recorder) -> None:
    """Whether gpuwork can size the model (its estimators need a ModelSpec): noted in the record."""
    from gpuwork.facts.model import spec_for_plan

    try:
        spec = spec_for_plan(plan)
    except Exception as exc:  # noqa: BLE001 - the record says why the estimate cannot be made
        rec.inferred["model_spec"] = {"value": None, "from": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
        return
    rec.inferred["model_spec"] = {"value": getattr(spec, "name", plan.model),
                                  "from": "gpuwork.facts.model.spec_for_plan"}


# -- checkpoint restore into a fresh model ------------------------------------------------------------------------


def _weights(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    files = sorted(folder.glob("adapter_model*.safetensors")) or sorted(folder.glob("model*.safetensors"))
    saved: dict[str, Any] = {}
    for path in files:
        saved.update(load_file(str(path)))
    if not saved:
        import torch

        for name in ("adapter_model.bin", "pytorch_model.bin"):
            if (folder / name).is_file():
                saved.update(torch.load(folder / name, map_location="cpu", weights_only=True))
    return saved


def _verifier(model: Any) -> Callable[[Path], tuple[float, float, int, list[str]]]:
    """Restore a Trainer checkpoint folder into a freshly built model (meta device, tensors assigned from the
    files) and compare each restored tensor with the live model's."""

    def verify(folder: Path) -> tuple[float, float, int, list[str]]:
        import torch

        live = unwrap(model)
        start = time.perf_counter()
        base = base_model(model)
        with torch.device("meta"):
            fresh = type(base)(base.config)
        if hasattr(live, "peft_config"):
            from peft import get_peft_model

            fresh = get_peft_model(fresh, next(iter(live.peft_config.values())))
        rebuild_s = time.perf_counter() - start
        start = time.perf_counter()
        saved = _weights(folder)
        if hasattr(live, "peft_config"):  # adapter files drop the adapter's name from each key
            adapter = next(iter(live.peft_config))
            names = {n.replace(f".{adapter}.", "."): n for n in fresh.state_dict()}
            saved = {names.get(k, k): v for k, v in saved.items()}
        fresh.load_state_dict(saved, strict=False, assign=True)
        restore_s = time.perf_counter() - start
        restored = {n: t for n, t in fresh.state_dict().items() if t.device.type != "meta"}
        current = {n: t.detach().to("cpu") for n, t in live.state_dict().items() if n in restored}
        differ = [n for n, t in restored.items() if n not in current or not torch.equal(t.to("cpu"), current[n])]
        if len(restored) < len(saved):  # a saved tensor that found no place in the fresh model
            differ.append(f"{len(saved) - len(restored)} saved tensors not restored")
        return rebuild_s, restore_s, len(restored), differ

    return verify


# -- several processes --------------------------------------------------------------------------------------------


class _World(Ranks):
    """The run's processes (``Ranks``), with every rank's figures gathered into one record on rank 0."""

    def merge(self, record: TrialRecord, rec: _Recorder) -> TrialRecord | None:

        mine = {"record": record.as_dict(), "rank": dataclasses.asdict(_rank_result(record, rec, self.rank))}
        gathered = self.gather(mine)
        if self.rank != 0:
            return None
        records = [TrialRecord.from_dict(g["record"]) for g in gathered]
        ranks = [RankResult(**{**g["rank"], "error": None, **{k: tuple(g["rank"][k]) for k in (
            "losses", "step_times_s", "data_wait_s")}}) for g in gathered]
        merged = merge_ranks(records, ranks, self.info(rec))
        # each rank's evaluation passes beside rank 0's
        evaluation = {**(record.evaluation or {}),
                      "ranks": [{"rank": i, **(r.evaluation or {})} for i, r in enumerate(records)]}
        return dataclasses.replace(self.callback_fields(merged, record), evaluation=evaluation)

    def info(self, rec: _Recorder) -> ParallelInfo:
        """How the caller's group ran (the record's ``parallel``)."""
        base = unwrap(rec.model)
        strategy = "fsdp" if "FullyShardedDataParallel" in type(rec.model).__name__ or hasattr(
            base, "_fsdp_wrapped_module") else "ddp"
        return ParallelInfo(world_size=self.size, backend=self.backend, strategy=strategy,
                            sharding_requested=rec.plan.sharding.value if rec.plan is not None else "",
                            wrapping=f"{type(rec.model).__name__} (the caller's)", reshard_after_forward=None,
                            launcher=os.environ.get("GPUWORK_LAUNCHER", "torchrun / accelerate launch"))

    @staticmethod
    def callback_fields(merged: TrialRecord, own: TrialRecord) -> TrialRecord:
        """What ``merge_ranks`` does not carry: the callback's record-level fields, rank 0's (``own``)."""
        return dataclasses.replace(merged, checkpoint=own.checkpoint, source=own.source, evaluation=own.evaluation,
                                   inferred=own.inferred, stability=own.stability, saves=own.saves)


def _rank_result(record: TrialRecord, rec: _Recorder, rank: int) -> RankResult:
    base = unwrap(rec.model)
    params = list(base.parameters())
    digest = hashlib.sha256()
    for name, p in base.named_parameters():
        digest.update(f"{name}:{float(p.detach().double().sum()):.17g};".encode())
    optimizer = rec.optimizer
    optimizer_bytes = 0
    if optimizer is not None:
        for state in getattr(optimizer, "state", {}).values():
            optimizer_bytes += sum(v.numel() * v.element_size() for v in state.values() if hasattr(v, "numel"))
    return rank_result(record, rank, param_bytes=sum(p.numel() * p.element_size() for p in params),
                       trainable_param_bytes=sum(p.numel() * p.element_size() for p in params if p.requires_grad),
                       optimizer_state_bytes=optimizer_bytes, params_sha256=digest.hexdigest(), fits=True, error=None)


# -- the Trainer callback ---------------------------------------------------------------------------------------


class GpuworkCallback(TrainerCallback):
    """Measure a ``transformers.Trainer`` / TRL ``SFTTrainer`` run and write a ``TrialRecord``.

    Args:
        plan: the TrainPlan the run is; None infers it from the Trainer's arguments and model (what was
            inferred is in the record's ``inferred``).
        options: an ``OwnRunOptions`` (None: the defaults); keywords change a copy of it. Its fields:
        out: folder for the record JSON (``trial-<model>-<method>-<time>.json``); None writes nothing
            (``.record`` still holds it).
        steps: measured steps after warm-up, then the run stops (a trial): the callback asks the Trainer
            to save a checkpoint (``checkpoint=True``) and to evaluate (``evaluate``) at that step, and
            measures both. None measures the whole run and stops nothing.
        warmup: steps excluded from the summary (allocator growth, lazy initialisation).
        verify_restore: restore the first saved checkpoint into a fresh model and compare every tensor.
        checkpoint: in a trial, save a checkpoint at its last step (timed).
        evaluate: in a trial, run the evaluation pass at its last step; None = when the Trainer's
            ``eval_strategy`` is not "no".
        on_measure: called with each StepMeasurement (live curves in a notebook).
        until_stable: run the trial until the median step time's 95 % interval lies within +-this share of
            the median (e.g. 0.03; ``gpuwork.measure.stability``), checked from the ``steps``-th measured
            step on (``steps`` None: UNTIL_STABLE_MIN_STEPS); ``record.stability`` says whether it converged.
        max_steps: with ``until_stable``, the most measured steps (default 200).

    Example:
        >>> trainer.add_callback(GpuworkCallback(out="trial-out", steps=20))
        >>> trainer.train()  # stops after 2 + 20 steps; the record is in trial-out/
    """

    def __init__(self, plan: TrainPlan | None = None, options: OwnRunOptions | None = None, **changes: Any):
        self.options = (options if options is not None else OwnRunOptions()).replace(**changes)
        self._plan = plan
        self._rec = _Recorder(plan, self.options, CALLBACK_SOURCE)  # validates the arguments now, not at train()
        self.verify_restore = self.options.verify_restore
        self.checkpoint = self.options.checkpoint
        self.evaluate = self.options.evaluate
        self.record: TrialRecord | None = None
        self.saved_to: Path | None = None
        self._world: _World | None = None
        self._boundary_s = 0.0  # when the last step, log, evaluation or save ended
        self._step_begin_s: float | None = None
        self._step_end_s: float | None = None

    # -- events ---------------------------------------------------------------------------------------------

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        if model is None:
            raise TrialError(msg("error.hf.no_model"))
        self._rec = _Recorder(self._plan, self.options, CALLBACK_SOURCE)
        self._rec.attach(model)
        self._rec.optimizer = optimizer
        self._world = world = _World()
        self._rec.join(world)
        self._args = args
        rec = self._rec
        rec.protocol_extra = _trainer_protocol(args, rec)
        rec.guess_plan = lambda: infer_plan(rec.model, args, seq_len=rec.max_seq_len or None,
                                            world_size=world.size, out=rec.out, state=state)
        self._memory_sync()
        self._boundary_s = time.perf_counter()
        self._step_end_s = self._boundary_s

    def _memory_sync(self) -> None:
        if self._rec.memory is not None:
            self._rec.memory.sync()

    def on_step_begin(self, args, state, control, **kwargs):
        self._rec.notify()
        now = time.perf_counter()
        self._data_wait_s = now - self._boundary_s
        self._rec.begin_step()
        self._rec.device_memory.reset_peak()
        self._step_begin_s = now

    def on_step_end(self, args, state, control, **kwargs):
        if self._step_begin_s is None:
            return control
        self._memory_sync()
        now = time.perf_counter()
        step_time_s = (now - self._step_begin_s) + self._data_wait_s
        self._rec.end_step(step_time_s=step_time_s, data_wait_s=self._data_wait_s, loss=math.nan, notify=False)
        self._step_begin_s = None
        self._boundary_s = self._step_end_s = now
        control.should_log = True  # per-step loss: logged at this step, filled in on_log
        if self._rec.step_done():
            control.should_training_stop = True
            if self.checkpoint:
                control.should_save = True
            if self.evaluate or (self.evaluate is None and str(getattr(args.eval_strategy, "value",
                                                                        args.eval_strategy)) != "no"):
                control.should_evaluate = True
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs and not any(k.startswith("eval_") for k in logs):
            self._rec.fill_loss(logs.get("loss"), logs.get("grad_norm"), logs.get("learning_rate"))
            self._rec.notify()
            self._boundary_s = time.perf_counter()  # logging is not the next step's data wait

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        now = time.perf_counter()
        if self._rec.measurements:  # an evaluation before the first step is not part of a step interval
            self._rec.evaluations_s.append(now - self._boundary_s)
        self._boundary_s = now

    def on_save(self, args, state, control, **kwargs):
        self._memory_sync()
        now = time.perf_counter()
        save_s = now - self._boundary_s
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        verify = _verifier(self._rec.model) if self.verify_restore else None
        self._rec.saved(folder if folder.is_dir() else None, save_s, verify)
        self._boundary_s = time.perf_counter()

    def on_train_end(self, args, state, control, model=None, **kwargs):
        rec = self._rec
        try:
            if rec.model is None:
                return
            rec.notify()
            if rec.plan is None:
                plan, inferred = infer_plan(rec.model, args, seq_len=rec.max_seq_len or None,
                                            world_size=self._world.size, out=rec.out, state=state)
                rec.plan, rec.inferred = plan, inferred
                _spec_check(plan, rec)
            runs = _run_counts(args, state)
            record = rec.build(protocol_extra=_trainer_protocol(args, rec), runs=runs, world=self._world)
            self.record, self.saved_to = record, rec.saved_to
        finally:
            rec.close()


def _run_counts(args: Any, state: Any) -> dict[str, Any]:
    """The run's optimizer steps and how many evaluation passes it makes (for the evaluation's share)."""
    total = int(getattr(state, "max_steps", 0) or 0)
    strategy = str(getattr(args.eval_strategy, "value", args.eval_strategy))
    if strategy == "steps":
        every = args.eval_steps or args.logging_steps
        every = int(every if every >= 1 else math.ceil(every * total))
        passes = total // every if every else 0
    elif strategy == "epoch":
        passes = math.ceil(float(args.num_train_epochs)) if args.max_steps <= 0 else 1
    else:
        passes = 1  # a trial that forces one pass: a run evaluates at least once at the end
    return {"run_steps": total, "run_eval_passes": passes, "eval_strategy": strategy}


def _trainer_protocol(args: Any, rec: _Recorder) -> dict[str, Any]:
    optimizer = rec.optimizer
    opt_class = type(getattr(optimizer, "optimizer", optimizer))  # accelerate wraps the optimizer
    schedule = str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type))
    return dict(seed=int(args.seed), learning_rate=float(args.learning_rate),
                lr_schedule=f"{schedule}, warm-up {args.warmup_steps} steps",
                max_grad_norm=float(args.max_grad_norm) if args.max_grad_norm else None,
                optimizer_class=f"{opt_class.__module__}.{opt_class.__name__}" if optimizer is not None else "unknown",
                weights=str(getattr(base_model(rec.model).config, "name_or_path", "") or "the caller's model"),
                dataset={"name": "the Trainer's train_dataset"},
                tokenizer={"kind": "the Trainer's processing_class"},
                loader_workers=int(args.dataloader_num_workers))


# -- the context manager for a plain loop -----------------------------------------------------------------------


class Measurement:
    """What ``measure(...)`` yields: call ``step`` after each optimizer step; ``batches`` times the data."""

    def __init__(self, rec: _Recorder, model: Any, optimizer: Any, verify_restore: bool):
        self._rec = rec
        self._model = model
        self._verify = verify_restore
        self._rec.optimizer = optimizer
        self._mark_s = time.perf_counter()
        self._wait_s = 0.0
        self.record: TrialRecord | None = None

    @property
    def measurements(self) -> tuple[StepMeasurement, ...]:
        return tuple(self._rec.measurements)

    def batches(self, loader: Iterable[Any]) -> Iterator[Any]:
        """The loader's batches, each ``next()`` timed as data wait."""
        iterator = iter(loader)
        while True:
            start = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self._wait_s += time.perf_counter() - start
            yield batch

    def step(self, batch: Any = None, *, loss: Any = math.nan) -> bool:
        """End of one optimizer step: record it. Returns True once ``steps`` measured steps are done."""
        self._rec.device_memory.sync()
        now = time.perf_counter()
        if self._rec.micro_batches == 0 and batch is not None:  # no model hook: count the batch given
            self._rec.count_batch(batch)
        value = float(loss.detach().float().item()) if hasattr(loss, "detach") else float(loss)
        self._rec.end_step(step_time_s=now - self._mark_s, data_wait_s=self._wait_s, loss=value)
        self._rec.micro_batches = 0
        self._rec.device_memory.reset_peak()
        self._wait_s = 0.0
        self._mark_s = time.perf_counter()
        return self._rec.step_done()

    @contextlib.contextmanager
    def saving(self, folder: str | Path) -> Iterator[None]:
        """Time a checkpoint save into ``folder`` (restored and compared when ``verify_restore``)."""
        start = time.perf_counter()
        yield
        save_s = time.perf_counter() - start
        verify = _verifier(self._model) if self._verify and self._model is not None else None
        self._rec.saved(Path(folder), save_s, verify)
        self._mark_s += time.perf_counter() - start  # the save is not part of the next step

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        """Time an evaluation pass (its share of the run goes into the record)."""
        start = time.perf_counter()
        yield
        self._rec.evaluations_s.append(time.perf_counter() - start)
        self._mark_s += time.perf_counter() - start


@contextlib.contextmanager
def measure(plan: TrainPlan | None = None, options: OwnRunOptions | None = None, *, model: Any = None,
            optimizer: Any = None, run_steps: int | None = None, eval_passes: int | None = None, **changes: Any
            ) -> Iterator[Measurement]:
    """Measure a plain PyTorch training loop; the record is written when the block ends.

    Args:
        plan: the TrainPlan the loop is; None infers it from ``model`` (method, precision, the longest batch).
        model: the model trained (tokens are counted from its training forward calls; parameters,
            memory baseline, restore checks); None counts tokens from the batches given to ``step``.
        optimizer: for the per-rank optimizer state bytes under torchrun.
        options: an ``OwnRunOptions`` (None: the defaults with ``warmup=1``); keywords change a copy of it.
        out, steps, warmup, verify_restore, on_measure, until_stable, max_steps: as ``GpuworkCallback``
            (``m.step`` returns True once the interval is tight or ``max_steps`` are measured).
        run_steps, eval_passes: the whole run's optimizer steps and evaluation passes, for the share of
            time the evaluation takes (``Measurement.evaluating``).

    Example:
        >>> with measure(model=model, out="trial-out", steps=10) as m:
        ...     for batch in m.batches(loader):
        ...         model(**batch).loss.backward(); opt.step(); opt.zero_grad()
        ...         if m.step(batch):
        ...             break
        >>> m.record.summary.median_step_time_s > 0
        True
    """
    import torch

    options = (options if options is not None else OwnRunOptions(warmup=1)).replace(**changes)
    rec = _Recorder(plan, options, "gpuwork.hf.measure")
    if model is not None:
        rec.attach(model)
    else:
        rec.device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else (
            torch.device("cpu"))
        rec.memory = DeviceMemory(rec.device, sample_interval_s=options.memory_sample_interval_s, loaded_bytes=0)
    world = _World()
    rec.join(world)
    if model is not None:
        rec.guess_plan = lambda: infer_plan(model, seq_len=rec.max_seq_len or None, batch_size=rec.max_rows or None,
                                            world_size=world.size, out=rec.out)
    m = Measurement(rec, model, optimizer, options.verify_restore)
    try:
        yield m
        if rec.plan is None:
            if model is None:
                raise TrialError(msg("error.hf.no_plan"))
            rec.plan, rec.inferred = infer_plan(model, seq_len=rec.max_seq_len or None,
                                                batch_size=rec.max_rows or None, world_size=world.size, out=rec.out)
            _spec_check(rec.plan, rec)
        runs = {"run_steps": run_steps, "run_eval_passes": eval_passes}
        m.record = rec.build(protocol_extra={}, runs=runs, world=world)
    finally:
        rec.close()


__all__ = ["GpuworkCallback", "Measurement", "infer_plan", "measure", "write_record"]

