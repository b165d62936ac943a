"""The checkpoint round-trip of a trial: save, continue, free, restore into a fresh model, verify, resume.

One implementation (``roundtrip``) for the one-process trial and for every rank of a torchrun
trial, in this order:

1. save the run's state (``CheckpointStore.save``), timed;
2. run RESUME_STEPS more steps on the original model: the uninterrupted losses;
3. free the original (the round-trip never holds two models at once);
4. build a fresh model, optimizer and scheduler (``runtime.build_run``), timed apart;
5. restore the checkpoint into it and set the saved RNG state (``CheckpointStore.load``), timed;
6. check every saved entry against the restored one (``CheckpointStore.verify``) and the RNG;
7. run the same RESUME_STEPS steps on the same batches: the resumed losses;
8. judge: every entry equal, and the resumed losses equal to the uninterrupted ones (bit-exact on
   CPU, GPU_LOSS_RTOL relative on CUDA).

What differs is where the state goes: ``FileCheckpoint`` writes Hugging Face Trainer's layout
(weights or adapter safetensors, optimizer.pt, scheduler.pt, rng_state.pth, trainer_state.json)
and compares tensors exactly; ``gpuwork.measure.distributed`` plugs in a store that writes one
``torch.distributed.checkpoint`` for all ranks and compares per-tensor fingerprints.

Limitations: the resume is RESUME_STEPS steps long; a difference that shows only later (e.g. a
data-loader position, which the trial does not save) is not seen.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.measure.runtime import (
    Run,
    Setup,
    TrialError,
    build_run,
    release_memory,
    rng_state,
    set_rng_state,
    train_step,
)
from gpuwork.message import Msg, msg

RESUME_STEPS = 2  # steps run after the checkpoint on both models; the 2nd depends on the optimizer state
GPU_LOSS_RTOL = 1e-3  # GPU kernels (atomics in backward, split-K GEMMs) are not bit-reproducible
CPU_LOSS_RTOL = 0.0  # the same ops on the same CPU threads give the same bits: compared exactly


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
    message: Msg  # what was checked and how it compared (checkpoint.* codes)


# -- where the state goes ------------------------------------------------------------------------------------


class CheckpointStore:
    """Where a round-trip writes the run's state and how it checks the restore (one per process)."""

    rank: int | None = None  # the process of a multi-process trial whose state this store holds, if any

    def save(self, run: Run, setup: Setup, folder: Path, step: int) -> Any:
        """Write the run's state into ``folder``; return what ``verify`` compares the restore with."""
        raise NotImplementedError

    def load(self, run: Run, setup: Setup, folder: Path) -> dict[str, Any]:
        """Restore ``folder`` into a freshly built run; return the RNG state saved with it."""
        raise NotImplementedError

    def verify(self, run: Run, setup: Setup, folder: Path, saved: Any) -> tuple[int, list[str]]:
        """(tensors checked, names of the saved entries that differ in the restored run)."""
        raise NotImplementedError

    def describe(self, checked: int) -> Msg:
        """What a verified restore did, for the message."""
        raise NotImplementedError


def save_training_state(run: Run, setup: Setup, folder: Path, step: int, **extra: Any) -> None:
    """scheduler.pt, scaler.pt (fp16 mixed precision) and trainer_state.json, as the HF Trainer names them."""
    import torch

    torch.save(run.scheduler.state_dict(), folder / "scheduler.pt")
    if run.scaler is not None:
        torch.save(run.scaler.state_dict(), folder / "scaler.pt")
    state = {"global_step": step, "seed": setup.seed, **extra, "plan": setup.plan.as_dict()}
    (folder / "trainer_state.json").write_text(json.dumps(state, indent=1))


def load_training_state(run: Run, folder: Path) -> None:
    """Restore what ``save_training_state`` wrote into a fresh run's scheduler and scaler."""
    import torch

    run.scheduler.load_state_dict(torch.load(folder / "scheduler.pt", weights_only=True))
    if run.scaler is not None:
        run.scaler.load_state_dict(torch.load(folder / "scaler.pt", weights_only=True))


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config")


def _model_state(model: Any) -> dict[str, Any]:
    if _is_peft(model):
        from peft import get_peft_model_state_dict

        return get_peft_model_state_dict(model)
    return model.state_dict()


def _weights_file(model: Any) -> str:
    return "adapter_model.safetensors" if _is_peft(model) else "model.safetensors"


class FileCheckpoint(CheckpointStore):
    """One process: Hugging Face Trainer's layout, every tensor compared exactly after the restore."""

    def save(self, run: Run, setup: Setup, folder: Path, step: int) -> None:
        import torch
        from safetensors.torch import save_file, save_model

        folder.mkdir(parents=True, exist_ok=True)
        if _is_peft(run.model):
            state = {k: v.detach().contiguous() for k, v in _model_state(run.model).items()}
            save_file(state, str(folder / _weights_file(run.model)))
        else:
            save_model(run.model, str(folder / _weights_file(run.model)))
        torch.save(run.optimizer.state_dict(), folder / "optimizer.pt")
        save_training_state(run, setup, folder, step)
        torch.save(rng_state(setup.device), folder / "rng_state.pth")

    def load(self, run: Run, setup: Setup, folder: Path) -> dict[str, Any]:
        import torch
        from safetensors.torch import load_file, load_model

        if _is_peft(run.model):
            from peft import set_peft_model_state_dict

            state = load_file(str(folder / _weights_file(run.model)), device=str(setup.device))
            result = set_peft_model_state_dict(run.model, state)
            if getattr(result, "unexpected_keys", None):
                raise TrialError(msg("error.trial.adapter_keys", keys=", ".join(result.unexpected_keys[:3])))
        else:
            missing, unexpected = load_model(run.model, str(folder / _weights_file(run.model)),
                                             device=str(setup.device))
            if missing or unexpected:
                raise TrialError(msg("error.trial.checkpoint_mismatch", missing=", ".join(missing[:3]) or "-",
                                     unexpected=", ".join(unexpected[:3]) or "-"))
        run.optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location=setup.device,
                                                 weights_only=True))
        load_training_state(run, folder)
        return torch.load(folder / "rng_state.pth", weights_only=False)  # our own file: python/numpy RNG tuples

    def verify(self, run: Run, setup: Setup, folder: Path, saved: Any) -> tuple[int, list[str]]:
        import torch
        from safetensors.torch import load_file

        checked, bad = _compare_states(load_file(str(folder / _weights_file(run.model))), _model_state(run.model),
                                       "model")
        for name, current, what in (("optimizer.pt", run.optimizer.state_dict(), "optimizer"),
                                    ("scheduler.pt", run.scheduler.state_dict(), "scheduler")):
            n, wrong = _compare_states(torch.load(folder / name, weights_only=True), current, what)
            checked += n
            bad += wrong
        return checked, bad

    def describe(self, checked: int) -> Msg:
        return msg("checkpoint.restored_exactly", tensors=checked)


# -- comparing states ---------------------------------------------------------------------------------------


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


def same_value(a: Any, b: Any) -> bool:
    """Plain values equal, NaN equal to NaN (a scheduler or optimizer may hold one)."""
    return a == b or (_is_nan(a) and _is_nan(b))


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
        elif other is _MISSING or not same_value(value, other):
            bad.append(key)
    return tensors, bad


_MISSING = object()


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# -- the round-trip ----------------------------------------------------------------------------------------------


def roundtrip(owner: list[Run], setup: Setup, *, scratch: Path, out_path: Path | None, stem: str, step: int,
              batches: list[dict[str, Any]], clock: Callable[[], float]) -> CheckpointResult:
    """Save, continue the original, free it, restore into a fresh build, verify, resume, compare.

    Args:
        owner: holds the only reference to the run; it is emptied so that the original is freed
            before the fresh model is built.
        setup: what ``build_run`` builds the fresh model from; its ``parallel`` hooks say where the state
            goes (``Parallel.checkpoint_store()``; None: ``FileCheckpoint``).
        scratch / out_path / stem: the checkpoint goes to ``out_path/<stem>-checkpoint`` (kept), or to
            ``scratch/checkpoint`` (removed with the scratch folder) when out_path is None.
        step: the optimizer steps done, saved with the state.
        batches: RESUME_STEPS x grad_accum batches, fed to both the original and the restored run.
        clock: seconds as a float.
    """
    import torch

    run = owner.pop()
    store = setup.parallel.checkpoint_store() or FileCheckpoint()
    folder = (out_path / f"{stem}-checkpoint") if out_path is not None else scratch / "checkpoint"
    cuda = setup.device.type == "cuda"
    barrier = setup.parallel.barrier

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(setup.device)

    def replay(target: Run) -> list[float]:
        queue = iter(batches)
        return [train_step(target, setup, lambda: next(queue), clock)[0] for _ in range(RESUME_STEPS)]

    sync()
    barrier()
    start = clock()
    saved = store.save(run, setup, folder, step)
    sync()
    barrier()
    save_s = clock() - start

    uninterrupted = replay(run)
    run = None  # free the original before the fresh model exists: the round-trip never holds two
    release_memory(setup.device)

    start = clock()
    fresh = build_run(setup)
    sync()
    rebuild_s = clock() - start
    start = clock()
    rng = store.load(fresh, setup, folder)
    set_rng_state(rng)
    sync()
    restore_s = clock() - start

    checked, bad = store.verify(fresh, setup, folder, saved)
    checked += 1  # the RNG state
    if not torch.equal(rng["torch"], torch.get_rng_state()):
        bad.append("rng.torch")
    resumed = replay(fresh)
    del fresh
    barrier()
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()} if folder.is_dir() else {}
    return _judge(uninterrupted, resumed, bad=bad, checked=checked, cuda=cuda, what=store.describe(checked),
                  path=str(folder) if out_path is not None else None, files=files, save_s=save_s,
                  rebuild_s=rebuild_s, restore_s=restore_s, rank=store.rank)


def _judge(uninterrupted: list[float], resumed: list[float], *, bad: list[str], checked: int, cuda: bool,
           what: Msg, path: str | None, files: dict[str, int], save_s: float, rebuild_s: float, restore_s: float,
           rank: int | None) -> CheckpointResult:
    """Every saved entry equal and the resumed losses matching the uninterrupted run (bit-exact on CPU,
    GPU_LOSS_RTOL on GPU)."""
    diffs = [abs(a - b) for a, b in zip(uninterrupted, resumed, strict=True)]
    max_diff = max(diffs) if diffs else 0.0
    rtol = GPU_LOSS_RTOL if cuda else CPU_LOSS_RTOL
    losses_ok = all(d <= rtol * max(1.0, abs(a)) for d, a in zip(diffs, uninterrupted, strict=True))
    verified = not bad and losses_ok
    if verified:
        if rtol == 0:
            message = msg("checkpoint.verified_exact", what=what, steps=RESUME_STEPS)
        else:
            message = msg("checkpoint.verified_within", what=what, steps=RESUME_STEPS, rtol=rtol)
    else:
        parts = []
        if bad:
            parts.append(msg("checkpoint.entries_differ", count=len(bad), first=", ".join(bad[:3])))
        if not losses_ok:
            parts.append(msg("checkpoint.losses_differ", resumed=_losses(resumed),
                             uninterrupted=_losses(uninterrupted), diff=max_diff))
        message = msg("checkpoint.not_verified", parts=tuple(parts))
    if rank is not None:
        message = msg("checkpoint.on_rank", rank=rank, what=message)
    return CheckpointResult(
        path=path, files=files, bytes_on_disk=sum(files.values()), save_s=save_s, rebuild_s=rebuild_s,
        restore_s=restore_s, tensors_checked=checked, tensors_equal=not bad,
        uninterrupted_losses=tuple(uninterrupted), resumed_losses=tuple(resumed), max_abs_loss_diff=max_diff,
        loss_rtol=rtol, verified=verified, message=message,
    )


def _losses(values: list[float]) -> str:
    """Losses as a list of numbers with every digit (a difference may be in the last one)."""
    return "[" + ", ".join(repr(v) for v in values) + "]"


__all__ = [
    "CPU_LOSS_RTOL",
    "GPU_LOSS_RTOL",
    "RESUME_STEPS",
    "CheckpointResult",
    "CheckpointStore",
    "FileCheckpoint",
    "flatten_state",
    "load_training_state",
    "roundtrip",
    "same_value",
    "save_training_state",
]
