"""Measured trials on several devices: the same trial, one process per device, under torchrun.

``run_distributed(plan, nproc)`` launches
``python -m torch.distributed.run --nnodes 1 --nproc-per-node N --master-addr 127.0.0.1 --master-port P
--module gpuwork.measure.distributed --spec FILE`` as a subprocess. Each process (rank) runs
``gpuwork.measure.trial.iter_trial`` with this module's ``DistributedParallel`` hooks:

- process group: ``nccl`` on CUDA (rank *r* on ``cuda:LOCAL_RANK``), ``gloo`` on the CPU;
- the model is wrapped after the method is applied and before the optimizer is built:
  ``sharding="ddp"`` → ``DistributedDataParallel``; ``"fsdp"``/``"zero3"`` → FSDP2
  (``torch.distributed.fsdp.fully_shard``) on every decoder block, then on the root, resharding after
  forward (ZeRO-3-like); ``"zero2"``/``"zero1"`` → the same without resharding after forward
  (ZeRO-2-like: FSDP2 has no optimizer-only sharding, a substitution the record lists); ``"hsdp"`` → FSDP2 on a
  2-D ``DeviceMesh`` (``replicate`` x ``shard``: the plan's shard groups x ``shard_group_gpus``), parameters
  sharded inside each group and replicated across groups, resharding after forward (PyTorch HYBRID_SHARD);
  ``"hsdp-zero2"`` → the same mesh without resharding after forward (_HYBRID_SHARD_ZERO2); the record keeps
  the mesh (``ParallelInfo.mesh_shape``); a group that does not divide the processes is the plan's error;
- each rank trains on its own shard of the packed rows (row ``i`` goes to rank ``i mod N``);
  gradient accumulation skips the gradient sync on all but the last micro-batch of a step;
- each rank measures its own steps and memory; the checkpoint round-trip (the one of
  ``gpuwork.measure.checkpoint``, with ``DistributedCheckpoint`` as its store) writes one distributed
  checkpoint (``torch.distributed.checkpoint``: every rank writes its part), restores it into a
  freshly built and wrapped model, checks each tensor's fingerprint and resumes;
- rank 0 gathers the ranks' records (``all_gather_object``) and writes one ``TrialRecord``:
  per step the slowest rank's time, the summed tokens (so tokens/s is for all devices), the
  highest memory and the mean loss; per rank its own results (``record.ranks``).

The plan travels as a JSON file in a work folder inside ``out_dir`` (or a temporary folder) that is
removed when the run ends. The rendezvous binds to the loopback address only (127.0.0.1 and a
free port) rather than ``--standalone``, which names ``localhost`` (the same thing, less explicit).

Interruption and resume follow the one-process trial's policy (``iter_trial``), agreed between the ranks
(``DistributedParallel`` implements ``Parallel``'s step-boundary hooks): before each step the ranks all-reduce
their stop requests (a SIGINT / SIGTERM a rank got from torchrun, or the stop file ``run_distributed`` writes when
it is signalled itself), so all of them stop at the same step; they save the checkpoint together (every
rank its part, into a hidden folder rank 0 moves into place), and rank 0 writes one merged record marked
``interrupted``. While the steps run, rank 0 rewrites the merged record after each one (every rank's step
is gathered), so a SIGKILL leaves the last whole record and checkpoint. ``run_distributed(resume=...)``
restores each rank's part, RNG and data position; ``--until-stable`` is judged on rank 0 on the slowest
rank's step times (what the record reports) and broadcast.

Out of memory on a rank: that rank writes its record to the work folder and exits with
``EXIT_DOES_NOT_FIT``; torchrun stops the others; ``run_distributed`` returns a record with
``fits=False`` and what the failing rank(s) measured.

Example:
    >>> record = run_distributed(TrainPlan(model="tiny-llama", method="full", precision="fp32", seq_len=64,
    ...                                    batch_size=2, gpus=2, sharding="fsdp"), nproc=2, steps=3, warmup=1)
    >>> record.world_size, len(record.ranks)
    (2, 2)

Limitations: one node only; QLoRA (bitsandbytes 4-bit weights) runs with DDP only; FSDP2 needs
one parameter dtype per wrapped block (fine for fp32 and for pure 16-bit full fine-tuning); the
checkpoint round-trip compares per-tensor fingerprints (float64 sum, absolute sum, sum of
squares and SHA-256 of each rank's local part) rather than gathering the shards; a signal sent to torchrun gives the ranks SHUTDOWN_GRACE_S to
save before torchrun kills them; after a SIGKILL the hidden work folder (``.gpuwork-torchrun-*``) stays
in out_dir until the next run there (``remove_stale_work``); a resumed rank's earlier steps keep the merged
record's memory (the highest rank's); CPU offload (``offload_params``/``offload_optimizer``) maps
to FSDP2's ``CPUOffloadPolicy`` on CUDA, which offloads parameters, gradients and the optimizer step
together.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuwork.errors import EXIT_DOES_NOT_FIT, GpuworkError
from gpuwork.measure import records
from gpuwork.measure.checkpoint import (
    CheckpointStore,
    flatten_state,
    load_training_state,
    same_value,
    save_training_state,
    tensor_sha256,
    write_manifest,
)
from gpuwork.measure.coded import LEGACY_TEXT, from_json, to_json
from gpuwork.measure.launch import (
    ERROR_PREFIX,
    STEP_PREFIX,
    WORK_PREFIX,
    claim,
    free_port,
    launch,
    remove_stale_work,
)
from gpuwork.measure.options import ResumePoint, TrialOptions
from gpuwork.measure.record import (
    STATUS_INTERRUPTED,
    ParallelInfo,
    RankResult,
    StepMeasurement,
    TrialRecord,
    merge_ranks,
    rank_result,
    rank_steps,
)
from gpuwork.measure.recorder import GroupSteps, Ranks, write_record
from gpuwork.measure.records import RecordWriteError
from gpuwork.measure.runtime import (
    Parallel,
    Run,
    Setup,
    TrialError,
    find_blocks,
    is_oom,
    rng_from_tensors,
    rng_state,
    rng_tensors,
)
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, Sharding, TrainPlan
from gpuwork.units import is_whole

if TYPE_CHECKING:
    import torch

EXIT_ERROR = 2  # a rank refused the trial (TrialError / ModelError / DataError...): message on stderr
SPEC_FILE = "trial-spec.json"
RESULT_FILE = "record.json"
DEFAULT_TIMEOUT_S = 1800.0  # process-group timeout: a rank stuck this long in a collective fails
STOP_FILE = "stop"  # run_distributed writes the signal's name here when it is asked to stop; ranks look each step
# torchrun's wait between forwarding a signal to the ranks and killing them (its own default, 30 s, is short for
# a large model's checkpoint): the ranks end the step, save and write the record in this time
SHUTDOWN_GRACE_S = 300
MESH_DIMS = ("replicate", "shard")  # FSDP2's mesh dimensions: HSDP uses both, plain FSDP the last
_early_signal = [0]  # a signal a rank got before the trial's own handlers were installed (rank_main)


# -- how the plan maps to torch's wrappers (pure) ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Strategy:
    """The wrapper a plan's sharding maps to."""

    name: str  # "ddp" | "fsdp2"
    reshard_after_forward: bool | None  # FSDP2 only
    substitutions: tuple[Msg, ...]
    # FSDP2's device mesh of a hybrid plan: (replicas, ranks per shard group); None: one dimension over all ranks
    hybrid_mesh: tuple[int, int] | None = None


def strategy_for(plan: TrainPlan, device_type: str) -> Strategy:
    """DDP for ``ddp``; FSDP2 fully_shard for the ZeRO/FSDP shardings, on a 2-D mesh for the hybrid ones (see the
    module docstring)."""
    notes: list[Msg] = []
    if plan.sharding is Sharding.DDP:
        if plan.offload_optimizer or plan.offload_params:  # TrainPlan refuses this; kept for safety
            notes.append(msg("trial.sub.offload_ddp"))
        return Strategy("ddp", None, tuple(notes))
    if plan.method is Method.QLORA:
        raise TrialError(msg("error.trial.qlora_sharded", sharding=plan.sharding))
    reshard = plan.sharding.shards_params
    if plan.sharding is Sharding.ZERO1:
        notes.append(msg("trial.sub.zero1"))
    elif plan.sharding is Sharding.ZERO2:
        notes.append(msg("trial.sub.zero2"))
    if plan.offload_params or plan.offload_optimizer:
        if device_type == "cuda":
            notes.append(msg("trial.sub.offload_fsdp"))
        else:
            notes.append(msg("trial.sub.offload_cpu"))
    if plan.sharding.hybrid:  # HYBRID_SHARD / _HYBRID_SHARD_ZERO2: FSDP2 over (replicate, shard), nothing substituted
        return Strategy("fsdp2", reshard, tuple(notes), (plan.shard_groups, plan.shard_ranks))
    return Strategy("fsdp2", reshard, tuple(notes))


class _RankShard:
    """Rank ``rank``'s rows of a dataset: rows rank, rank + N, rank + 2N, ... (picklable for workers)."""

    def __init__(self, dataset: Any, rank: int, world_size: int):
        self.dataset, self.rank, self.world_size = dataset, rank, world_size

    def __len__(self) -> int:
        return len(self.dataset) // self.world_size

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.dataset[index * self.world_size + self.rank]


def _local(t: Any) -> Any:
    """A DTensor's local shard, or the tensor itself."""
    return t.to_local() if hasattr(t, "to_local") else t


def _tensor_bytes(tensors: Iterable[Any]) -> int:
    return sum(int(_local(t).numel()) * int(_local(t).element_size()) for t in tensors)


def _fingerprint(t: Any) -> tuple[str, tuple[int, ...], float, float, float, str]:
    """(dtype, local shape, float64 sum, absolute sum, sum of squares, SHA-256 of the bytes) of a tensor's local
    part (the sums alone miss a flipped low bit: 0 -> 1e-45 leaves a float64 sum as it was)."""
    import torch

    x = _local(t).detach()
    flat = x.reshape(-1).to(torch.float64)
    return (str(x.dtype), tuple(x.shape), float(flat.sum()), float(flat.abs().sum()), float((flat * flat).sum()),
            tensor_sha256(x))


def _fingerprints(state: Any) -> tuple[dict[str, Any], int]:
    """Each entry of a (nested) state dict: a tensor's fingerprint or the plain value; and the tensor count."""
    import torch

    flat: dict[str, Any] = {}
    flatten_state("", state, flat)
    tensors = sum(1 for v in flat.values() if torch.is_tensor(v))
    return {k: _fingerprint(v) if torch.is_tensor(v) else v for k, v in flat.items()}, tensors


# -- checkpoint: one torch.distributed.checkpoint for all ranks ------------------------------------------------


class DistributedCheckpoint(CheckpointStore):
    """Every rank writes its part of one distributed checkpoint (``torch.distributed.checkpoint``); rank 0
    adds the scheduler and trainer state, each rank its RNG. The restore is checked by per-tensor
    fingerprints (the shards are not gathered)."""

    def __init__(self, rank: int, world_size: int, device: torch.device, barrier: Callable[[], None] | None = None):
        self.rank, self.world_size, self.device = rank, world_size, device
        self.barrier = barrier or (lambda: None)
        self.ranks = Ranks()  # the group's agreement (every rank's store is made after init_process_group)
        self.trainer_state: dict[str, Any] = {}

    def _options(self, setup: Setup) -> tuple[Any, Any]:
        from torch.distributed.checkpoint.state_dict import StateDictOptions

        adapters = setup.plan.uses_adapters  # save what trains (as the one-process trial saves its adapter)
        return (StateDictOptions(ignore_frozen_params=adapters),
                StateDictOptions(ignore_frozen_params=adapters, strict=not adapters))

    def _state(self, run: Run, setup: Setup) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model_sd, optim_sd = get_state_dict(run.model, run.optimizer, options=self._options(setup)[0])
        return {"model": model_sd, "optimizer": optim_sd}

    def save(self, run: Run, setup: Setup, folder: Path, step: int, **position: Any) -> Any:
        """Every rank writes its part into one hidden folder that rank 0 then moves into place, so that a
        kill mid-save leaves the previous checkpoint whole (as ``FileCheckpoint`` does for one process)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.api import CheckpointException

        state = self._state(run, setup)
        fingerprints, checked = _fingerprints(state)  # in memory, before the save
        staging: Path | None = None
        refused: Any = None
        if self.rank == 0:
            try:
                folder.parent.mkdir(parents=True, exist_ok=True)
                staging = records.temp_folder(folder)
            except RecordWriteError as exc:
                refused = exc.msg
            except OSError as exc:
                refused = records.folder_error(exc, folder.parent).msg
        # the staging folder's name, or why there is none, on every rank
        where, refused = self.ranks.agree((str(staging) if staging else None, refused))
        if refused is not None:
            raise RecordWriteError(refused, folder.parent)
        staging = Path(where)
        try:
            failure: Msg | None = None
            try:
                dcp.save(state, checkpoint_id=str(staging))
                if self.rank == 0:
                    save_training_state(run, setup, staging, step, world_size=self.world_size, **position)
                records.save_torch(rng_tensors(rng_state(self.device)), staging / f"rng_state_{self.rank}.pth")
            except RecordWriteError as exc:
                failure = exc.msg
            except (Exception, CheckpointException) as exc:  # noqa: BLE001 - a failed write becomes one line
                failure = _write_failure(exc, folder)
                if failure is None:
                    raise
            # every rank learns of any rank's failed write (a full disk under rank 1's part, say), so they all
            # give up the save together instead of waiting for each other at the barrier
            failed = next((f for f in self.ranks.gather(failure) if f is not None), None)
            if failed is not None:
                raise RecordWriteError(failed, folder.parent)
            every = self.ranks.gather(fingerprints)  # each rank's digests go into the one manifest
            self.barrier()
            if self.rank == 0:
                try:  # every part is written: its files' SHA-256 and the ranks' digests, then into place
                    write_manifest(staging, run_id=position.get("run_id"), step=step,
                                   tensors={str(r): fp for r, fp in enumerate(every)})
                    records.replace_folder(staging, folder)
                except RecordWriteError as exc:
                    failure = exc.msg
            failed = self.ranks.agree(failure if self.rank == 0 else None)
            if failed is not None:
                raise RecordWriteError(failed, folder.parent)
            self.barrier()
        finally:
            if self.rank == 0:
                shutil.rmtree(staging, ignore_errors=True)  # gone already when it was moved into place
        return fingerprints, checked, run.scheduler.state_dict()

    def load(self, run: Run, setup: Setup, folder: Path) -> dict[str, Any]:
        import torch
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict

        state = self._state(run, setup)
        self.reading = ".metadata"
        dcp.load(state, checkpoint_id=str(folder))
        set_state_dict(run.model, run.optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"],
                       options=self._options(setup)[1])
        self.trainer_state = load_training_state(run, folder, self)
        self.reading = f"rng_state_{self.rank}.pth"
        return rng_from_tensors(torch.load(folder / self.reading, weights_only=True))

    def verify(self, run: Run, setup: Setup, folder: Path, saved: Any) -> tuple[int, list[str]]:
        fingerprints, checked, scheduler_saved = saved
        restored, _ = _fingerprints(self._state(run, setup))
        bad = [k for k, v in fingerprints.items() if k not in restored or not same_value(v, restored[k])]
        current = run.scheduler.state_dict()
        bad += [f"scheduler.{k}" for k, v in scheduler_saved.items() if not same_value(v, current.get(k))]
        return checked, bad

    def describe(self, checked: int) -> Msg:
        return msg("checkpoint.restored_fingerprints", tensors=checked)

    def restored_digests(self, run: Run, setup: Setup) -> dict[str, Any]:
        return _fingerprints(self._state(run, setup))[0]

    def saved_digests(self, manifest: dict[str, Any]) -> Any:
        return (manifest.get("tensors") or {}).get(str(self.rank))


# -- the hooks each rank plugs into iter_trial -------------------------------------------------------------


class DistributedParallel(Parallel):
    """``Parallel`` hooks for one rank of a torchrun process group (see the module docstring), and the step
    agreement: every rank stops at the same step (the ranks' stop requests reduced each step), until_stable
    is judged on rank 0 on the slowest rank's times, and rank 0 rewrites the merged record after each step."""

    writes_record = False  # rank 0 merges and writes after gathering

    def __init__(self, plan: TrainPlan, device: torch.device, work_dir: Path, backend: str):
        import torch.distributed as dist

        self.dist = dist
        self.ranks = Ranks()  # agreement and gathering, as the callback's ranks do it
        self.rank = self.ranks.rank
        self.world_size = self.ranks.size
        self.device = device
        self.backend = backend
        self.work_dir = Path(work_dir)
        self.strategy = strategy_for(plan, device.type)
        self.sharding = plan.sharding
        self.wrapping = ""
        self.param_bytes = 0
        self.trainable_param_bytes = 0
        self.optimizer_state_bytes = 0
        self.params_sha256 = ""
        self._fsdp_root: Any = None
        self.mesh_shape: tuple[int, ...] | None = None  # FSDP2's device mesh as built (None: DDP)
        self.mesh_dim_names: tuple[str, ...] | None = None
        self.launcher = ""
        self.rank_steps: list[list[StepMeasurement]] = [[] for _ in range(self.world_size)]  # every rank's steps
        # every rank's step as it ends, merged for the record rank 0 writes as the steps go (as the callback's)
        self.group = GroupSteps(self.ranks, "GPU" if device.type == "cuda" else "CPU")

    # -- the step boundaries (Parallel.stop_signal, share_step, group_step_times, running_record) ----------

    def stop_signal(self, requested: str | None) -> str | None:
        """The highest signal number any rank was sent (or run_distributed was: the stop file), on every rank."""
        import torch

        local = max(int(signal.Signals[requested]) if requested else 0, _early_signal[0], self._stop_file_signal())
        flag = torch.tensor([local], dtype=torch.int64, device=self.device if self.backend == "nccl" else "cpu")
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MAX)
        agreed = int(flag.item())
        return signal.Signals(agreed).name if agreed else None

    def _stop_file_signal(self) -> int:
        try:
            name = (self.work_dir / STOP_FILE).read_text().strip()
        except OSError:
            return 0
        return int(getattr(signal, name, signal.SIGTERM))

    def share_step(self, m: StepMeasurement) -> None:
        for r, step in enumerate(self.group.share(m, self.param_bytes, self.trainable_param_bytes)):
            self.rank_steps[r].append(step)

    def record_row(self, m: StepMeasurement) -> tuple[StepMeasurement, list[tuple[float, float, float]]]:
        """The merged step (``merge_step``) of the step every rank just shared, with each rank's own figures."""
        return self.group.row()

    def resumed_rows(self, steps: list[StepMeasurement]) -> list[tuple[StepMeasurement, list[Any]]]:
        """The merged steps a resumed group keeps, each rank's summary fed with its own."""
        return self.group.resumed(self.rank_steps)

    def group_step_times(self, own: list[StepMeasurement]) -> list[float]:
        """Per measured step the slowest rank's time: what the merged record reports (``merge_ranks``)."""
        count = min(len(steps) for steps in self.rank_steps)
        return [max(steps[i].step_time_s for steps in self.rank_steps) for i in range(count)
                if not self.rank_steps[0][i].is_warmup]

    def running_record(self, record: TrialRecord) -> TrialRecord | None:
        """On rank 0, the merged record of the steps every rank has taken so far, without the steps (they are
        in the steps file: ``record_row``), from the running summaries; None on the others."""
        if self.rank != 0:
            return None
        return self.group.running_record(record, self.info(self.launcher))

    # -- agreement ----------------------------------------------------------------------------------

    def agree(self, value: Any) -> Any:
        return self.ranks.agree(value)

    def barrier(self) -> None:
        if self.backend == "nccl":
            self.dist.barrier(device_ids=[self.device.index])
        else:
            self.dist.barrier()

    def substitutions(self, plan: TrainPlan, device: torch.device) -> list[Msg]:
        notes = list(self.strategy.substitutions)
        if plan.gpus != self.world_size:
            notes.append(msg("trial.sub.gpus_processes", gpus=plan.gpus, processes=self.world_size))
        return notes

    def scratch_dir(self, stack: contextlib.ExitStack, out_path: Path | None, stem: str) -> Path:
        folder = self.work_dir / "scratch"  # shared by the ranks; the launcher removes the work folder
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # -- model, data, steps -----------------------------------------------------------------------------

    def wrap(self, model: Any, setup: Any) -> Any:
        import torch

        if self.strategy.name == "ddp":
            ids = [self.device.index] if self.device.type == "cuda" else None
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
            self.wrapping = f"DistributedDataParallel over {self.world_size} ranks ({self.backend})"
            self._fsdp_root = None
        else:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard

            shape = self.strategy.hybrid_mesh or (self.world_size,)
            names = MESH_DIMS[-len(shape):]
            # a hybrid mesh's rows are the shard groups (ranks 0..S-1, S..2S-1, ...: one node each on real GPUs)
            mesh = init_device_mesh(self.device.type, shape, mesh_dim_names=names)
            self.mesh_shape, self.mesh_dim_names = tuple(shape), names
            kwargs: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": self.strategy.reshard_after_forward}
            if (setup.plan.offload_params or setup.plan.offload_optimizer) and self.device.type == "cuda":
                kwargs["offload_policy"] = CPUOffloadPolicy()
            _, blocks = find_blocks(model)
            for block in blocks:
                fully_shard(block, **kwargs)
            root = model.get_base_model() if hasattr(model, "get_base_model") else model
            fully_shard(root, **kwargs)
            self._fsdp_root = root
            on_mesh = "" if len(shape) == 1 else f", mesh {shape[0]} replicate x {shape[1]} shard"
            self.wrapping = (f"fully_shard on each of {len(blocks)} decoder blocks + the root "
                             f"(reshard_after_forward={self.strategy.reshard_after_forward}{on_mesh}, {self.backend})")
        params = list(model.parameters())
        self.param_bytes = _tensor_bytes(params)
        self.trainable_param_bytes = _tensor_bytes(p for p in params if p.requires_grad)
        return model

    def shard(self, dataset: Any) -> Any:
        return _RankShard(dataset, self.rank, self.world_size)

    def sync_gradients(self, model: Any, sync: bool) -> contextlib.AbstractContextManager:
        if self._fsdp_root is not None:
            self._fsdp_root.set_requires_gradient_sync(sync)
            return contextlib.nullcontext()
        if not sync and hasattr(model, "no_sync"):
            return model.no_sync()
        return contextlib.nullcontext()

    def grad_norm(self, norm: Any) -> float:
        if hasattr(norm, "full_tensor"):
            norm = norm.full_tensor()
        return float(norm.item())

    def after_steps(self, run: Any) -> None:
        import torch

        states = [v for state in run.optimizer.state.values() for v in state.values() if torch.is_tensor(v)]
        self.optimizer_state_bytes = _tensor_bytes(states)
        digest = hashlib.sha256()
        for name, p in run.model.named_parameters():
            digest.update(name.removeprefix("module.").encode())
            digest.update(repr(_fingerprint(p)).encode())
        self.params_sha256 = digest.hexdigest()

    # -- checkpoint round-trip ---------------------------------------------------------------------------

    def checkpoint_store(self) -> CheckpointStore:
        return DistributedCheckpoint(self.rank, self.world_size, self.device, barrier=self.barrier)

    # -- what this rank reports ---------------------------------------------------------------------------

    def rank_result(self, record: TrialRecord) -> RankResult:
        return rank_result(record, self.rank, param_bytes=self.param_bytes,
                           trainable_param_bytes=self.trainable_param_bytes,
                           optimizer_state_bytes=self.optimizer_state_bytes, params_sha256=self.params_sha256)

    def info(self, launcher: str) -> ParallelInfo:
        return ParallelInfo(world_size=self.world_size, backend=self.backend, strategy=self.strategy.name,
                            sharding_requested=self.sharding.value, wrapping=self.wrapping,
                            reshard_after_forward=self.strategy.reshard_after_forward, launcher=launcher,
                            mesh_shape=self.mesh_shape, mesh_dim_names=self.mesh_dim_names)


# -- one rank (what torchrun starts) ------------------------------------------------------------------------


def _report_error(rank: Any, error: Msg) -> None:
    """One line on stderr for the launcher: ERROR_PREFIX + the rank's message as JSON (it renders it)."""
    line = json.dumps(msg("error.trial.rank", rank=str(rank), error=error).as_dict())
    sys.stderr.flush()
    # one write(2): every rank shares this pipe, and a line written in pieces can interleave with another rank's
    os.write(sys.stderr.fileno(), f"{ERROR_PREFIX}{line}\n".encode())


def rank_main(argv: list[str] | None = None) -> int:
    """Entry point of each process under torchrun: ``python -m gpuwork.measure.distributed --spec FILE``."""
    parser = argparse.ArgumentParser(prog="gpuwork.measure.distributed", description="one rank of a gpuwork trial "
                                     "(started by torchrun; use `gpuwork trial --nproc N`)", allow_abbrev=False)
    parser.add_argument("--spec", required=True, help="the trial spec JSON written by run_distributed")
    args = parser.parse_args(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        # started by hand, not by the launcher: a person reads this line
        print(f"gpuwork: error: {TrialError(msg('error.trial.not_torchrun'))}", file=sys.stderr, flush=True)
        return EXIT_ERROR
    _note_early_signals()
    spec = json.loads(Path(args.spec).read_text())
    work_dir = Path(args.spec).parent
    try:
        return _rank(spec, work_dir)
    except GpuworkError as exc:
        _report_error(os.environ.get("RANK"), exc.msg or msg(LEGACY_TEXT, text=str(exc)))  # uncoded: English
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the traceback for debugging, one line for the launcher
        traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        _report_error(os.environ.get("RANK"), msg("trial.crash", kind=type(exc).__name__, detail=first[:2000]))
        return 1


def _note_early_signals() -> None:
    """Until the trial's own handlers are in place (they take over in iter_trial), a SIGINT / SIGTERM is noted
    and counted as a stop request at the first step, rather than killing the rank mid-start."""
    def note(signum: int, frame: Any) -> None:
        _early_signal[0] = max(_early_signal[0], signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, note)


def _resume_point(spec: dict[str, Any], hooks: DistributedParallel) -> ResumePoint | None:
    """The spec's resume point with this rank's own earlier steps; every rank's go to ``hooks.rank_steps``."""
    given = spec.get("resume")
    if not given:
        return None
    prior = TrialRecord.from_json(Path(given["record_path"]))
    step = int(given["step"])
    hooks.rank_steps = [rank_steps(prior, r, step) for r in range(hooks.world_size)]
    return ResumePoint(run_id=given["run_id"], record_path=given["record_path"], checkpoint=given["checkpoint"],
                       step=step, micro_batches=int(given["micro_batches"]),
                       steps=tuple(hooks.rank_steps[hooks.rank]), data_changed=tuple(given.get("data_changed", ())))


def _rank(spec: dict[str, Any], work_dir: Path) -> int:
    import torch
    import torch.distributed as dist

    from gpuwork.measure.trial import iter_trial

    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    wanted = spec.get("device") or "auto"
    use_cuda = wanted == "cuda" or (wanted == "auto" and torch.cuda.is_available())
    if use_cuda:
        if not torch.cuda.is_available():
            raise TrialError(msg("error.trial.no_cuda", device="cuda"))
        if local_rank >= torch.cuda.device_count():
            raise TrialError(msg("error.trial.too_few_gpus", processes=world, gpus=torch.cuda.device_count()))
        torch.cuda.set_device(local_rank)
        device, backend = torch.device("cuda", local_rank), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    timeout = timedelta(seconds=float(spec.get("timeout_s") or DEFAULT_TIMEOUT_S))
    kwargs: dict[str, Any] = {"device_id": device} if backend == "nccl" else {}
    dist.init_process_group(backend, timeout=timeout, **kwargs)
    try:
        plan = TrainPlan.from_dict(spec["plan"])
        hooks = DistributedParallel(plan, device, work_dir, backend)
        hooks.launcher = spec.get("launcher", "torchrun")
        given = {k: spec[k] for k in ("max_grad_norm", "until_stable", "max_steps") if k in spec}
        options = TrialOptions(
            steps=spec["steps"], warmup=spec["warmup"], seed=spec.get("seed", 0), device=device, data=spec.get("data"),
            tokenizer=spec.get("tokenizer"), out_dir=spec.get("out_dir"), memory_cap_bytes=spec.get("memory_cap_bytes"),
            lr=spec.get("lr"), loader_workers=spec.get("loader_workers", 0), checkpoint=spec.get("checkpoint", True),
            parallel=hooks, resume=_resume_point(spec, hooks), handle_signals=True,
            checkpoint_every=spec.get("checkpoint_every", 0), **given)
        gen = iter_trial(plan, options)
        while True:
            try:
                m = next(gen)
            except StopIteration as stop:
                record: TrialRecord = stop.value
                break
            if rank == 0:
                print(STEP_PREFIX + json.dumps(dataclasses.asdict(m)), flush=True)
        info = hooks.info(hooks.launcher)
        mine = {"record": record.as_dict(), "rank": to_json(hooks.rank_result(record)),
                "parallel": to_json(info)}
        if not record.fits:
            # the other ranks may wait in a collective this rank will never join: leave the result in a
            # file and exit; torchrun stops the group and run_distributed reads the files
            (work_dir / f"rank{rank}-does-not-fit.json").write_text(json.dumps(mine, allow_nan=True))
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_DOES_NOT_FIT)
        gathered = hooks.ranks.gather(mine)
        if rank == 0:
            merged = _merge_payloads(gathered)
            write_record(merged, work_dir / RESULT_FILE)
            if merged.saved_to:
                write_record(merged, merged.saved_to)
        hooks.barrier()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


def _merge_payloads(payloads: Sequence[dict[str, Any]]) -> TrialRecord:
    payloads = sorted(payloads, key=lambda p: p["rank"]["rank"])
    records = [TrialRecord.from_dict(p["record"]) for p in payloads]
    ranks = [RankResult(**{**p["rank"], **{k: tuple(p["rank"][k]) for k in ("losses", "step_times_s",
                                                                             "data_wait_s")},
                            "error": from_json(p["rank"].get("error"))})
             for p in payloads]
    given = payloads[0]["parallel"]
    parallel = ParallelInfo(**{**given, **{k: tuple(given[k]) for k in ("mesh_shape", "mesh_dim_names")
                                           if given.get(k) is not None}})
    return merge_ranks(records, ranks, parallel, records[0].saved_to)


# -- the launcher --------------------------------------------------------------------------------------------


# TrialOptions fields of the one-process trial: the ranks set these themselves
_ONE_PROCESS_OPTIONS = ("model_factory", "clock", "memory_sample_interval_s", "parallel", "handle_signals",
                        "after_checkpoint_save")


def torchrun_command(nproc: int, spec_path: str | Path, *, port: int, python: str | None = None) -> list[str]:
    """The command ``run_distributed`` starts: torchrun on one node, rendezvous on 127.0.0.1 only."""
    return [python or sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--node-rank", "0",
            "--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1", "--master-port", str(port),
            "--max-restarts", "0", "--shutdown-timeout", str(SHUTDOWN_GRACE_S),
            "--module", "gpuwork.measure.distributed", "--spec", str(spec_path)]


def child_env(plan: TrainPlan, threads: int | None = None) -> dict[str, str]:
    """The environment torchrun and its ranks start with: this process's, with the plan's start-up switches
    (CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF, deterministic's CUBLAS_WORKSPACE_CONFIG; they work only when
    set before CUDA starts, ``gpuwork.measure.switches.startup_env``) and the launcher's own settings."""
    from gpuwork.measure.switches import startup_env

    env = startup_env(plan, os.environ)
    # one OpenMP thread per process unless asked: N processes x M threads on few cores stall each other
    env["OMP_NUM_THREADS"] = str(threads) if threads else env.get("OMP_NUM_THREADS", "1")
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("PYTHONUNBUFFERED", "1")
    if sys.platform == "linux" and Path("/sys/class/net/lo").exists():
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # gloo's data connections on the loopback interface
    return env


def run_distributed(plan: TrainPlan, nproc: int, options: TrialOptions | None = None, *,
                    callbacks: Iterable[Callable[[StepMeasurement], Any]] = (), timeout_s: float | None = None,
                    threads_per_process: int | None = None, python: str | None = None, **changes: Any) -> TrialRecord:
    """Run the trial as ``nproc`` processes under torchrun and return rank 0's merged record.

    Args:
        plan: the run; ``gpus`` is set to ``nproc`` (the processes are the GPUs); ``sharding`` picks
            DDP or FSDP2 (see the module docstring).
        nproc: processes, one per device (CUDA GPUs when present, else CPU processes with gloo).
        options: a ``TrialOptions`` (None: all defaults); keywords change a copy of it. Of its fields, these
            apply (the others are the one-process trial's: TypeError when set):
        steps, warmup, seed, data, tokenizer, memory_cap_bytes, lr, checkpoint, loader_workers: as
            ``gpuwork.measure.trial.iter_trial`` (memory_cap_bytes applies to each rank).
        device: "cpu", "cuda" or None (CUDA when the ranks see it).
        out_dir: where the record JSON and the checkpoint folder go (and, while it runs, the work
            folder with the plan); None = a temporary folder removed at the end.
        callbacks: called with rank 0's StepMeasurement of each step as it arrives.
        timeout_s: stop the whole group after this many seconds (TrialError); None = no limit.
        threads_per_process: OMP_NUM_THREADS for each process (default: the caller's, else 1).
        python: the interpreter for torchrun (default: this one).
        max_grad_norm, until_stable, max_steps, checkpoint_every: as ``iter_trial``; ``until_stable`` is judged
            on rank 0 on the slowest rank's step times and every rank stops where rank 0 says.
        resume: go on from an interrupted multi-process trial (``gpuwork.measure.trial.resume_options`` gives
            it with the same ``nproc``, seed and data): every rank restores its part of the checkpoint.

    SIGINT / SIGTERM sent to this process (in the main thread) or to torchrun end the current step on every
    rank (the ranks agree on the step), save a checkpoint (with ``out_dir``) and return the merged record with
    ``status="interrupted"``; a second signal to this process stops the group at once.

    Raises TrialError when a rank refuses the trial, torchrun fails, or the timeout passes; out of
    memory is not raised: the record has ``fits=False``.
    """
    o = (options if options is not None else TrialOptions()).replace(**changes)
    plan = _checked(plan, nproc, o)
    out_path = Path(o.out_dir).expanduser() if o.out_dir is not None else None
    with contextlib.ExitStack() as stack:
        if out_path is not None:
            out_path.mkdir(parents=True, exist_ok=True)
            remove_stale_work(out_path)
            work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=out_path))
            stack.callback(shutil.rmtree, work, ignore_errors=True)
            claim(work)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpuwork-torchrun-")))
        spec_path = work / SPEC_FILE
        command = torchrun_command(nproc, spec_path, port=free_port(), python=python)
        spec_path.write_text(json.dumps(_spec(plan, o, out_path, timeout_s, " ".join(command)), indent=1))
        rc, tail = launch(command, child_env(plan, threads_per_process), list(callbacks), timeout_s, work / STOP_FILE)
        return _outcome(rc, tail, work, nproc, timeout_s)
    raise AssertionError("unreachable")  # pragma: no cover


def _checked(plan: TrainPlan, nproc: int, o: TrialOptions) -> TrainPlan:
    """The plan with ``gpus`` set to ``nproc``; TypeError for a one-process option, TrialError for a value the
    group cannot run with."""
    unused = [f.name for f in dataclasses.fields(o) if f.name in _ONE_PROCESS_OPTIONS and getattr(o, f.name) != f.default]
    if unused:
        raise TypeError(f"run_distributed() does not take {', '.join(unused)}")
    device = o.device
    if not is_whole(nproc, 1):
        raise TrialError(msg("error.trial.nproc", nproc=repr(nproc)))
    o.checked()  # steps, warm-up, checkpoint interval, until-stable: as every rank's trial checks them
    if device not in (None, "cpu", "cuda"):
        raise TrialError(msg("error.trial.nproc_device", device=repr(device)))
    if plan.gpus != nproc:
        if nproc == 1 and plan.sharding is not Sharding.DDP:
            raise TrialError(msg("error.trial.sharding_one_process", sharding=plan.sharding))
        plan = plan.replace(gpus=nproc)
    strategy_for(plan, "cuda" if device == "cuda" else "cpu")  # refuse impossible combinations here
    return plan


def _spec(plan: TrainPlan, o: TrialOptions, out_path: Path | None, timeout_s: float | None,
          launcher: str) -> dict[str, Any]:
    """What every rank reads from the spec file: the plan and the options, paths made absolute, and the command."""
    data, tokenizer, resume = o.data, o.tokenizer, o.resume
    data_arg: Any = data
    if data is not None:
        items = [data] if isinstance(data, (str, Path)) else list(data)
        data_arg = [str(Path(d).expanduser().resolve()) for d in items]
    return {"plan": plan.as_dict(), "steps": o.steps, "warmup": o.warmup, "seed": o.seed,
            "device": o.device or "auto", "data": data_arg,
            "tokenizer": str(Path(tokenizer).expanduser().resolve()) if tokenizer else None,
            "out_dir": str(out_path.resolve()) if out_path is not None else None,
            "memory_cap_bytes": o.memory_cap_bytes, "lr": o.lr, "checkpoint": o.checkpoint,
            "loader_workers": o.loader_workers, "timeout_s": timeout_s or DEFAULT_TIMEOUT_S,
            "max_grad_norm": o.max_grad_norm, "until_stable": o.until_stable, "max_steps": o.max_steps,
            "checkpoint_every": o.checkpoint_every, "launcher": launcher,
            "resume": None if resume is None else {
                "run_id": resume.run_id, "record_path": str(Path(resume.record_path).resolve()),
                "checkpoint": str(Path(resume.checkpoint).resolve()), "step": resume.step,
                "micro_batches": resume.micro_batches, "data_changed": list(resume.data_changed)}}


def _outcome(rc: int | None, tail: list[str], work: Path, nproc: int, timeout_s: float | None) -> TrialRecord:
    """Rank 0's merged record, the record of the ranks that ran out of memory, or the error that ended the group."""
    result = work / RESULT_FILE
    if rc is not None and result.is_file():
        record = TrialRecord.from_json(result)
        # torchrun exits non-zero when it was the one signalled, after the ranks saved and wrote
        if rc == 0 or record.status == STATUS_INTERRUPTED:
            return record
    failed = sorted(work.glob("rank*-does-not-fit.json"))
    if failed:
        merged = _merge_payloads([json.loads(p.read_text()) for p in failed])
        if merged.saved_to:
            write_record(merged, merged.saved_to)
        return merged
    reported = [line[len(ERROR_PREFIX):] for line in tail if line.startswith(ERROR_PREFIX)]
    if reported:  # the first rank's own coded message; a line that did not come through whole only if alone
        whole = [line for line in reported if _rank_error(line).code != "trial.crash"]
        raise TrialError(_rank_error((whole or reported)[0]))
    if rc is None:
        raise TrialError(msg("error.trial.timeout", processes=nproc, timeout_s=timeout_s))
    shown = " | ".join(line.strip() for line in tail[-6:] if line.strip())
    raise TrialError(msg("error.trial.torchrun", status=rc, output=shown[-1500:]))


def _write_failure(exc: BaseException, folder: Path) -> Msg | None:
    """One line for a checkpoint part that could not be written (None for out of memory, which is not a write's
    fault). An OSError behind it (the exception, its cause, or one rank's failure inside torch's
    CheckpointException) says disk full / read-only; torch.save's own writer reports a short write without an
    errno ("unexpected pos ..."), which is then quoted as it is."""
    if is_oom(exc):
        return None
    seen: list[tuple[BaseException, int | None]] = [(exc, None)]
    visited: set[int] = set()
    first: tuple[BaseException, int | None] | None = None
    while seen:
        current, rank = seen.pop(0)
        if id(current) in visited:
            continue
        visited.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            return records.write_error(current, folder / Path(current.filename or "-").name).msg
        failures = getattr(current, "failures", None)
        if isinstance(failures, dict):  # rank -> (exception, traceback)
            seen += [(pair[0] if isinstance(pair, tuple) else pair, r) for r, pair in failures.items()]
        elif first is None:
            first = (current, rank)
        seen += [(e, rank) for e in (current.__cause__, current.__context__) if e is not None]
    cause, rank = first or (exc, None)
    text = str(cause).strip()
    detail = (f"rank {rank}: " if rank is not None else "") + type(cause).__name__ + (
        f": {text.splitlines()[-1]}" if text else "")
    return msg("error.trial.write_failed", folder=str(folder.parent), file=folder.name, detail=detail)


def _rank_error(text: str) -> Msg:
    """A rank's error line (after ERROR_PREFIX) as a message; a line that is not JSON is shown as it is."""
    try:
        error = from_json(json.loads(text))
    except (ValueError, TypeError):
        error = None
    return error if error is not None else msg("trial.crash", kind="torchrun", detail=text[:2000])  # "null" too


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EXIT_DOES_NOT_FIT",
    "DistributedCheckpoint",
    "DistributedParallel",
    "Strategy",
    "child_env",
    "free_port",
    "merge_ranks",
    "remove_stale_work",
    "rank_main",
    "run_distributed",
    "strategy_for",
    "torchrun_command",
]


def _exit_now(code: int) -> None:
    """Leave without the interpreter's teardown: the process group is destroyed and the files are written, but a
    C++ thread of torch's still joinable at teardown ends the rank with SIGABRT ("terminate called without an
    active exception", seen about once in ten runs on a loaded 2-core machine), which torchrun reports as a
    failed group after the record was written."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(rank_main())
