"""The checkpoint round-trip of a trial: save, continue, free, restore into a fresh model, verify, resume.

One implementation (``roundtrip``) for the one-process trial and for every rank of a torchrun
trial, in this order:

1. hash the run's whole state in memory (model, optimizer, scheduler, RNG, step and data position),
   then save it (``CheckpointStore.save``, atomically: a temporary folder moved into place), timed;
2. run RESUME_STEPS more steps on the original model: the uninterrupted losses;
3. free the original (the round-trip never holds two models at once);
4. build a fresh model, optimizer and scheduler (``runtime.build_run``), timed apart;
5. restore the checkpoint into it and set the saved RNG state (``CheckpointStore.load``), timed;
   a file that is missing or cannot be read ends the check there: "checkpoint NOT verified";
6. compare the restored state with the digests taken in memory before the save
   (``CheckpointStore.verify``): a flipped bit, a wrong optimizer state, a swapped RNG state or a
   wrong step show up here, because the reference never came from the files;
7. run the same RESUME_STEPS steps on the same batches: the resumed losses;
8. judge: every entry equal, and the resumed losses equal to the uninterrupted ones (bit-exact on
   CPU, GPU_LOSS_RTOL relative on CUDA).

What differs is where the state goes: ``FileCheckpoint`` writes Hugging Face Trainer's layout
(weights or adapter safetensors, optimizer.pt, scheduler.pt, rng_state.pth, trainer_state.json)
and compares tensors exactly; ``gpuwork.measure.distributed`` plugs in a store that writes one
``torch.distributed.checkpoint`` for all ranks and compares per-tensor fingerprints.

Every file is read with ``torch.load(weights_only=True)`` or safetensors: the RNG state is stored as
tensors (``runtime.rng_tensors``), so a swapped file cannot run code.

Limitations: the resume is RESUME_STEPS steps long; the digests are SHA-256 of each tensor's bytes,
taken on the CPU (a copy of one tensor at a time).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.measure import records
from gpuwork.measure.record import CheckpointResult
from gpuwork.measure.runtime import (
    Run,
    Setup,
    TrialError,
    build_run,
    is_oom,
    release_memory,
    rng_from_tensors,
    rng_state,
    rng_tensors,
    set_rng_state,
    train_step,
)
from gpuwork.message import Msg, msg

RESUME_STEPS = 2  # steps run after the checkpoint on both models; the 2nd depends on the optimizer state
GPU_LOSS_RTOL = 1e-3  # GPU kernels (atomics in backward, split-K GEMMs) are not bit-reproducible
CPU_LOSS_RTOL = 0.0  # the same ops on the same CPU threads give the same bits: compared exactly


# -- where the state goes ------------------------------------------------------------------------------------


class CheckpointStore:
    """Where a round-trip writes the run's state and how it checks the restore (one per process)."""

    rank: int | None = None  # the process of a multi-process trial whose state this store holds, if any
    reading: str = ""  # the file being read by ``load`` (named when it cannot be read)

    def save(self, run: Run, setup: Setup, folder: Path, step: int, **position: Any) -> Any:
        """Write the run's state into ``folder``; return what ``verify`` compares the restore with, taken
        in memory before anything is written. ``position``: the data position (``micro_batches``)."""
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

    def restored_digests(self, run: Run, setup: Setup) -> Any:
        """After ``load`` (and the RNG set from it): the digests of the restored state, in the form ``save``
        writes into the manifest, for a resume to compare with ``saved_digests``."""
        raise NotImplementedError

    def saved_digests(self, manifest: dict[str, Any]) -> Any:
        """This process's part of the digests a manifest holds."""
        return manifest.get("tensors")


TRAINER_STATE = "trainer_state.json"
RNG_FILE = "rng_state.pth"
OPTIMIZER_FILE = "optimizer.pt"
SCHEDULER_FILE = "scheduler.pt"
SCALER_FILE = "scaler.pt"
POSITION_KEYS = ("global_step", "micro_batches", "seed")  # what the trainer state must bring back exactly


def save_training_state(run: Run, setup: Setup, folder: Path, step: int, **extra: Any) -> None:
    """scheduler.pt, scaler.pt (fp16 mixed precision) and trainer_state.json, as the HF Trainer names them
    (each written atomically)."""
    records.save_torch(run.scheduler.state_dict(), folder / SCHEDULER_FILE)
    if run.scaler is not None:
        records.save_torch(run.scaler.state_dict(), folder / SCALER_FILE)
    state = {"global_step": step, "seed": setup.seed, **extra, "plan": setup.plan.as_dict()}
    records.write_text(folder / TRAINER_STATE, json.dumps(state, indent=1))


def load_training_state(run: Run, folder: Path, store: CheckpointStore | None = None) -> dict[str, Any]:
    """Restore what ``save_training_state`` wrote into a fresh run's scheduler and scaler; return the
    trainer state (step, seed, data position)."""
    import torch

    def reading(name: str) -> Path:
        if store is not None:
            store.reading = name
        return folder / name

    run.scheduler.load_state_dict(torch.load(reading(SCHEDULER_FILE), weights_only=True))
    if run.scaler is not None:
        run.scaler.load_state_dict(torch.load(reading(SCALER_FILE), weights_only=True))
    state = json.loads(reading(TRAINER_STATE).read_text())
    if not isinstance(state, dict):
        raise ValueError(f"{TRAINER_STATE} holds {type(state).__name__}, not an object")
    return state


def read_trainer_state(folder: Path) -> dict[str, Any]:
    """The trainer state of a checkpoint folder (step, seed, data position, run id)."""
    return json.loads((folder / TRAINER_STATE).read_text())


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config")


def _model_state(model: Any) -> dict[str, Any]:
    if _is_peft(model):
        from peft import get_peft_model_state_dict

        return get_peft_model_state_dict(model)
    return model.state_dict()


def _weights_file(model: Any) -> str:
    return "adapter_model.safetensors" if _is_peft(model) else "model.safetensors"


def _weights_to_save(model: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The tensors of the weights file and its metadata, shared tensors once (as ``safetensors.save_model``)."""
    state = {k: v.detach() for k, v in _model_state(model).items()}
    metadata: dict[str, str] = {"format": "pt"}
    if not _is_peft(model):
        from safetensors.torch import _remove_duplicate_names

        for kept, removed in _remove_duplicate_names(state).items():
            for name in removed:
                metadata[name] = kept
                del state[name]
    return {k: v.contiguous() for k, v in state.items()}, metadata


def snapshot(run: Run, setup: Setup, step: int | None, **position: Any) -> dict[str, Any]:
    """Digests of the run's whole state as it is in memory now: model (what is saved), optimizer, scheduler,
    RNG, step, seed and data position. A flat dict: tensor -> (dtype, shape, SHA-256), plain values as they are.
    ``step`` is None where a restored trainer state lacks it: the digests then differ from the saved ones."""
    out: dict[str, Any] = {}
    out.update(digest_state("model", _model_state(run.model)))
    out.update(digest_state("optimizer", run.optimizer.state_dict()))
    out.update(digest_state("scheduler", run.scheduler.state_dict()))
    if run.scaler is not None:
        out.update(digest_state("scaler", run.scaler.state_dict()))
    out.update(digest_state("rng", rng_tensors(rng_state(setup.device))))
    trainer = {"global_step": step, "seed": setup.seed, **position}
    out.update(digest_state("trainer_state", {k: trainer.get(k) for k in POSITION_KEYS}))
    return out


def digest_state(what: str, state: Any) -> dict[str, Any]:
    """A nested state flattened ("optimizer.state.0.exp_avg"), each tensor as (dtype, shape, SHA-256 of its bytes)."""
    import torch

    flat: dict[str, Any] = {}
    flatten_state(what, state, flat)
    return {k: _digest(v) if torch.is_tensor(v) else v for k, v in flat.items()}


def _digest(t: Any) -> tuple[str, tuple[int, ...], str]:
    import torch

    x = t.detach()
    if hasattr(x, "to_local"):
        x = x.to_local()
    x = x.cpu().contiguous().reshape(-1)
    raw = x.view(torch.uint8) if x.dtype != torch.bool else x.to(torch.uint8)
    return str(t.dtype), tuple(t.shape), hashlib.sha256(raw.numpy().tobytes()).hexdigest()


def tensor_sha256(t: Any) -> str:
    """SHA-256 of a tensor's bytes (a DTensor's local part), taken on the CPU."""
    return _digest(t)[2]


class FileCheckpoint(CheckpointStore):
    """One process: Hugging Face Trainer's layout, the restore compared with the state hashed before the save."""

    def __init__(self) -> None:
        self.trainer_state: dict[str, Any] = {}

    def save(self, run: Run, setup: Setup, folder: Path, step: int, **position: Any) -> dict[str, Any]:
        before = snapshot(run, setup, step, **position)  # the reference, before a byte is written
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = records.temp_folder(folder)
        try:
            tensors, metadata = _weights_to_save(run.model)
            records.save_safetensors(tensors, staging / _weights_file(run.model), metadata)
            del tensors
            records.save_torch(run.optimizer.state_dict(), staging / OPTIMIZER_FILE)
            save_training_state(run, setup, staging, step, **position)
            records.save_torch(rng_tensors(rng_state(setup.device)), staging / RNG_FILE)
            write_manifest(staging, run_id=position.get("run_id"), step=step, tensors=before)
            records.replace_folder(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone already when it was moved into place
        return before

    def load(self, run: Run, setup: Setup, folder: Path) -> dict[str, Any]:
        import torch
        from safetensors.torch import load_file, load_model

        self.reading = _weights_file(run.model)
        if _is_peft(run.model):
            from peft import set_peft_model_state_dict

            state = load_file(str(folder / self.reading), device=str(setup.device))
            result = set_peft_model_state_dict(run.model, state)
            unexpected_keys = getattr(result, "unexpected_keys", None)  # peft annotates a bare namedtuple
            if unexpected_keys:
                raise TrialError(msg("error.trial.adapter_keys", keys=", ".join(unexpected_keys[:3])))
        else:
            missing, unexpected = load_model(run.model, str(folder / self.reading), device=str(setup.device))
            if missing or unexpected:
                raise TrialError(msg("error.trial.checkpoint_mismatch", missing=", ".join(missing[:3]) or "-",
                                     unexpected=", ".join(unexpected[:3]) or "-"))
        self.reading = OPTIMIZER_FILE
        run.optimizer.load_state_dict(torch.load(folder / OPTIMIZER_FILE, map_location=setup.device,
                                                 weights_only=True))
        self.trainer_state = load_training_state(run, folder, self)
        self.reading = RNG_FILE
        return rng_from_tensors(torch.load(folder / RNG_FILE, weights_only=True))

    def verify(self, run: Run, setup: Setup, folder: Path, saved: Any) -> tuple[int, list[str]]:
        return compare_digests(saved, self.restored_digests(run, setup))

    def restored_digests(self, run: Run, setup: Setup) -> dict[str, Any]:
        state = self.trainer_state
        position = {k: v for k, v in state.items() if k in POSITION_KEYS and k not in ("global_step", "seed")}
        restored = snapshot(run, setup, state.get("global_step"), **position)
        restored["trainer_state.seed"] = state.get("seed")
        return restored

    def describe(self, checked: int) -> Msg:
        return msg("checkpoint.restored_exactly", tensors=checked)


def compare_digests(saved: dict[str, Any], restored: dict[str, Any]) -> tuple[int, list[str]]:
    """(tensors in ``saved``, the entries of ``saved`` that are missing or different in ``restored``)."""
    tensors = sum(1 for v in saved.values() if _is_digest(v))
    bad = [k for k, v in saved.items() if k not in restored or not same_value(v, restored[k])]
    bad += [k for k in restored if k not in saved]
    return tensors, bad


def _is_digest(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 3 and isinstance(value[2], str) and len(value[2]) == 64


# -- the manifest: what resume checks before it loads anything -------------------------------------------------

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
MAX_MANIFEST_BYTES = 64 * 2**20  # a manifest holds a digest per tensor: kilobytes to a few MB for large models
_HASH_CHUNK = 2**20


class CheckpointDamaged(TrialError):
    """A checkpoint that does not match the digests taken when it was saved: a resume refuses it."""


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _json_form(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists; a value JSON cannot hold as its repr), so that what was
    written and what is compared later have one form."""
    return json.loads(json.dumps(value, default=repr, allow_nan=True))


def _seal(body: dict[str, Any]) -> str:
    """SHA-256 of the manifest's content in one canonical form: any edit that does not recompute it shows."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name != MANIFEST_FILE or p.parent != folder)


def write_manifest(folder: Path, *, run_id: str | None, step: int, tensors: Any) -> None:
    """``manifest.json`` in a filled checkpoint folder (before it is moved into place): every file's size and
    SHA-256, the run id and step, the per-tensor digests taken in memory before the save (``tensors``), and a
    seal over all of it."""
    files = {p.relative_to(folder).as_posix(): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
             for p in _entries(folder) if p.is_file()}
    body = {"format": MANIFEST_FORMAT, "run_id": run_id, "step": step, "files": files, "tensors": _json_form(tensors)}
    records.write_text(folder / MANIFEST_FILE, json.dumps({**body, "seal": _seal(body)}, allow_nan=True))


def _refuse(folder: Path, code: str, **values: Any) -> CheckpointDamaged:
    return CheckpointDamaged(msg(f"error.resume.{code}", folder=str(folder), **values))


def read_manifest(folder: Path, *, run_id: str | None = None, step: int | None = None) -> dict[str, Any]:
    """The manifest of ``folder``, checked to be whole and unedited (its seal) and to belong to ``run_id`` and
    ``step`` when given; its files are not read (``verify_manifest`` does that). Raises CheckpointDamaged."""
    import stat

    def refuse(code: str, **values: Any) -> CheckpointDamaged:
        return _refuse(folder, code, **values)

    path = folder / MANIFEST_FILE
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise refuse("no_manifest") from None
    except OSError as exc:
        raise refuse("manifest_unreadable", detail=f"{type(exc).__name__}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise refuse("file_not_regular", file=MANIFEST_FILE)
    if info.st_size > MAX_MANIFEST_BYTES:
        raise refuse("manifest_too_big", size_bytes=info.st_size, limit_bytes=MAX_MANIFEST_BYTES)
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise refuse("manifest_unreadable", detail=f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise refuse("manifest_unreadable", detail=f"not a manifest of format {MANIFEST_FORMAT}")
    body = {k: v for k, v in manifest.items() if k != "seal"}
    if manifest.get("seal") != _seal(body) or manifest.get("format") != MANIFEST_FORMAT:
        raise refuse("manifest_edited")
    if run_id is not None and manifest.get("run_id") != run_id:
        raise refuse("other_run", found=str(manifest.get("run_id")), expected=run_id)
    if step is not None and manifest.get("step") != step:
        raise refuse("other_step", found=str(manifest.get("step")), expected=str(step))
    return manifest


def verify_manifest(folder: Path, *, run_id: str | None = None, step: int | None = None) -> dict[str, Any]:
    """The manifest of ``folder`` after checking, before anything is loaded, that it is whole and unedited, that
    it belongs to ``run_id`` and ``step`` (when given), and that every file is there with its size and SHA-256
    and nothing else is. Raises CheckpointDamaged with one line naming the file and what differs."""
    import stat

    def refuse(code: str, **values: Any) -> CheckpointDamaged:
        return _refuse(folder, code, **values)

    manifest = read_manifest(folder, run_id=run_id, step=step)
    listed: dict[str, Any] = manifest["files"]
    for name in listed:  # names inside the folder only: a forged manifest must not send the check elsewhere
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise refuse("manifest_unreadable", detail=f"a file name outside the folder: {name[:200]!r}")
    present = {p.relative_to(folder).as_posix(): p for p in _entries(folder)}
    for name in sorted(present):
        if name not in listed and (present[name].is_symlink() or not present[name].is_dir()):
            raise refuse("file_extra", file=name)
    for name, saved in sorted(listed.items()):
        if not isinstance(saved, dict):
            raise refuse("manifest_edited")
        file = folder / name
        try:
            info = file.lstat()
        except FileNotFoundError:
            raise refuse("file_missing", file=name, size_bytes=int(saved.get("bytes") or 0)) from None
        if not stat.S_ISREG(info.st_mode):
            raise refuse("file_not_regular", file=name)
        if info.st_size != saved.get("bytes"):
            raise refuse("file_size", file=name, size_bytes=info.st_size, saved_bytes=int(saved.get("bytes") or 0))
        now = file_sha256(file)
        if now != saved.get("sha256"):
            raise refuse("file_digest", file=name, now=now[:12], saved=str(saved.get("sha256"))[:12])
    return manifest


def check_restored(folder: Path, saved: Any, restored: Any) -> int:
    """Compare the digests taken after loading with the manifest's (``saved``, as ``write_manifest`` stored them);
    return the tensors checked. Raises CheckpointDamaged naming the first entries that differ."""
    saved, restored = _json_form(saved), _json_form(restored)
    if not isinstance(saved, dict) or not isinstance(restored, dict):
        raise CheckpointDamaged(msg("error.resume.manifest_edited", folder=str(folder)))
    bad = [k for k, v in saved.items() if k not in restored or not same_value(v, restored[k])]
    bad += [k for k in restored if k not in saved]
    if bad:
        raise CheckpointDamaged(msg("error.resume.state_differs", folder=str(folder), count=len(bad),
                                    first=", ".join(bad[:3])))
    return sum(1 for v in saved.values() if isinstance(v, list))


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


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


# -- the round-trip ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SavePoint:
    """Where the round-trip's checkpoint is taken: the steps done, the data position, the batches that follow."""

    step: int  # optimizer steps done, saved with the state
    batches: list[dict[str, Any]]  # RESUME_STEPS x grad_accum batches, fed to both the original and the restored run
    micro_batches: int | None = None  # micro-batches taken from the loader (None: not saved)


@dataclass(frozen=True)
class _Readback:
    """What restoring the checkpoint into a fresh build found, and how long each part took."""

    rebuild_s: float
    restore_s: float
    checked: int = 0
    bad: tuple[str, ...] = ()
    resumed: tuple[float, ...] = ()
    unreadable: Msg | None = None


def roundtrip(owner: list[Run], setup: Setup, at: SavePoint, *, folder: Path, kept: bool,
              clock: Callable[[], float], after_save: Callable[[Path], Any] | None = None) -> CheckpointResult:
    """Save, continue the original, free it, restore into a fresh build, verify, resume, compare.

    Args:
        owner: holds the only reference to the run; it is emptied so that the original is freed
            before the fresh model is built.
        setup: what ``build_run`` builds the fresh model from; its ``parallel`` hooks say where the state
            goes (``Parallel.checkpoint_store()``; None: ``FileCheckpoint``).
        at: the steps done, the data position and the batches the original and the restored run both take.
        folder / kept: where the checkpoint goes; ``kept`` says it stays (its path is then in the result), else
            it lies in a scratch folder removed after the trial.
        clock: seconds as a float.
        after_save: called with the checkpoint folder after the save and before the restore (fault injection).
    """
    run = owner.pop()
    store = setup.parallel.checkpoint_store() or FileCheckpoint()
    cuda = setup.device.type == "cuda"
    position = {} if at.micro_batches is None else {"micro_batches": at.micro_batches}

    _sync(setup)
    setup.parallel.barrier()
    start = clock()
    saved = store.save(run, setup, folder, at.step, **position)
    _sync(setup)
    setup.parallel.barrier()
    save_s = clock() - start
    if after_save is not None:
        after_save(folder)

    uninterrupted = _replay(run, setup, at.batches, clock)
    del run  # free the original before the fresh model exists: the round-trip never holds two
    release_memory(setup.device)
    back = _read_back(store, setup, folder, saved, at, clock)
    setup.parallel.barrier()
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()} if folder.is_dir() else {}
    return _judge(uninterrupted, back, cuda=cuda, what=store.describe(back.checked),
                  path=str(folder) if kept else None, files=files, save_s=save_s, rank=store.rank)


def _sync(setup: Setup) -> None:
    """Wait for the device, so that a timed phase ends when its work does."""
    import torch

    if setup.device.type == "cuda":
        torch.cuda.synchronize(setup.device)


def _replay(target: Run, setup: Setup, batches: list[dict[str, Any]], clock: Callable[[], float]) -> list[float]:
    """RESUME_STEPS steps on ``batches``: their losses."""
    queue = iter(batches)
    return [train_step(target, setup, lambda: next(queue), clock)[0] for _ in range(RESUME_STEPS)]


def _read_back(store: CheckpointStore, setup: Setup, folder: Path, saved: Any, at: SavePoint,
               clock: Callable[[], float]) -> _Readback:
    """Build a fresh run, restore the checkpoint into it, compare its state with the digests of the save and take
    the same steps again; a file that cannot be read back ends it there."""
    import torch

    start = clock()
    fresh = build_run(setup)
    _sync(setup)
    rebuild_s = clock() - start
    start = clock()
    try:
        rng = store.load(fresh, setup, folder)
        set_rng_state(rng)
    except Exception as exc:  # noqa: BLE001 - any failure to read a file back is the verdict, not a crash
        if is_oom(exc):
            raise
        unreadable = unreadable_file(store.reading, exc)
        _sync(setup)
        return _Readback(rebuild_s=rebuild_s, restore_s=clock() - start, unreadable=unreadable)
    _sync(setup)
    restore_s = clock() - start
    checked, bad = store.verify(fresh, setup, folder, saved)
    if store.rank is not None:  # the distributed store does not digest the RNG: compare it here
        checked += 1
        if not torch.equal(rng["torch"], torch.get_rng_state()):
            bad.append("rng.torch")
    resumed = _replay(fresh, setup, at.batches, clock)
    return _Readback(rebuild_s=rebuild_s, restore_s=restore_s, checked=checked, bad=tuple(bad),
                     resumed=tuple(resumed))


def unreadable_file(name: str, exc: BaseException) -> Msg:
    """The message for a checkpoint file that is missing or cannot be read back."""
    if isinstance(exc, FileNotFoundError):
        return msg("checkpoint.file_missing", file=name or "?")
    detail = str(exc).splitlines()[0][:300] if str(exc) else ""
    return msg("checkpoint.file_unreadable", file=name or "?", kind=type(exc).__name__, detail=detail)


def _judge(uninterrupted: list[float], back: _Readback, *, cuda: bool, what: Msg, path: str | None,
           files: dict[str, int], save_s: float, rank: int | None) -> CheckpointResult:
    """Every file read back, every entry equal to the state hashed before the save, and the resumed losses
    matching the uninterrupted run (bit-exact on CPU, GPU_LOSS_RTOL on GPU)."""
    rtol = GPU_LOSS_RTOL if cuda else CPU_LOSS_RTOL
    unreadable, bad, resumed = back.unreadable, list(back.bad), list(back.resumed)
    if unreadable is None:
        diffs = [abs(a - b) for a, b in zip(uninterrupted, resumed, strict=True)]
        losses_ok = all(d <= rtol * max(1.0, abs(a)) for d, a in zip(diffs, uninterrupted, strict=True))
    else:
        diffs, losses_ok = [], False
    max_diff = max(diffs) if diffs else 0.0
    verified = unreadable is None and not bad and losses_ok
    if verified:
        if rtol == 0:
            message = msg("checkpoint.verified_exact", what=what, steps=RESUME_STEPS)
        else:
            message = msg("checkpoint.verified_within", what=what, steps=RESUME_STEPS, rtol=rtol)
    else:
        parts = []
        if unreadable is not None:
            parts.append(unreadable)
        if bad:
            parts.append(msg("checkpoint.state_differs", count=len(bad), first=", ".join(bad[:3])))
        if unreadable is None and not losses_ok:
            parts.append(msg("checkpoint.losses_differ", resumed=_losses(resumed),
                             uninterrupted=_losses(uninterrupted), diff=max_diff))
        message = msg("checkpoint.not_verified_because", parts=tuple(parts))
    if rank is not None:
        message = msg("checkpoint.on_rank", rank=rank, what=message)
    return CheckpointResult(
        path=path, files=files, bytes_on_disk=sum(files.values()), save_s=save_s, rebuild_s=back.rebuild_s,
        restore_s=back.restore_s, tensors_checked=back.checked, tensors_equal=unreadable is None and not bad,
        uninterrupted_losses=tuple(uninterrupted), resumed_losses=tuple(resumed), max_abs_loss_diff=max_diff,
        loss_rtol=rtol, verified=verified, message=message,
    )


def _losses(values: list[float]) -> str:
    """Losses as a list of numbers with every digit (a difference may be in the last one)."""
    return "[" + ", ".join(repr(v) for v in values) + "]"


__all__ = [
    "CPU_LOSS_RTOL",
    "MANIFEST_FILE",
    "CheckpointDamaged",
    "check_restored",
    "file_sha256",
    "read_manifest",
    "verify_manifest",
    "write_manifest",
    "OPTIMIZER_FILE",
    "RNG_FILE",
    "TRAINER_STATE",
    "GPU_LOSS_RTOL",
    "RESUME_STEPS",
    "SavePoint",
    "CheckpointResult",
    "CheckpointStore",
    "FileCheckpoint",
    "compare_digests",
    "digest_state",
    "flatten_state",
    "load_training_state",
    "read_trainer_state",
    "roundtrip",
    "same_value",
    "save_training_state",
    "snapshot",
    "tensor_sha256",
    "unreadable_file",
]
