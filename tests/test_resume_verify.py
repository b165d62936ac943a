"""A resume that trusts nothing it did not check (issue 21, item 1), and the trial verb's own bad inputs.

``gpuwork trial --resume RUN`` checks the checkpoint against its manifest (every file's size and SHA-256, the run
id and step, a seal over the manifest) before anything is loaded, and the restored state against the per-tensor
digests taken at the save after loading. Each kind of damage the save-and-restore check is tested with
(tests/test_checkpoint_check.py) and the kinds the issue names are done here to real checkpoints of tiny
interrupted trials (tiny-llama, seq 32, batch 2, CPU, one thread) and must be refused with one line naming the
file and exit status 4. The data files and the flags given with --resume are checked against the record.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
from pathlib import Path

import pytest
from test_checkpoint_check import SAVE_CHECK_DAMAGE, damage_checkpoint, flip_last_byte

from gpuwork.cli import main
from gpuwork.cli.trial import EXIT_CHECKPOINT_NOT_VERIFIED, MAX_STEPS
from gpuwork.measure.checkpoint import MANIFEST_FILE, CheckpointDamaged, _seal, file_sha256
from gpuwork.measure.trial import TrialError, TrialRecord, resume_options, run_trial
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render

TINY = dict(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2, lora_r=4)
EXIT_USAGE = 2


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every trial here trains: one torch thread (see conftest)."""


def stopped_trial(folder: Path, at: int, *, seed: int = 3, method: str = "full", data=None) -> Path:
    """The record of a trial (5 steps, 1 warm-up) stopped by SIGTERM after step ``at``; its checkpoint beside it."""
    def stop(m):
        if m.step == at:
            os.kill(os.getpid(), signal.SIGTERM)

    record = run_trial(TrainPlan(**{**TINY, "method": method}), steps=4, warmup=1, seed=seed, out_dir=folder,
                       data=data, callbacks=[stop])
    assert record.status == "interrupted" and len(record.steps) == at
    return Path(record.saved_to)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Interrupted trials to damage copies of: 'a' (stopped at step 2), 'a1' (the same trial stopped at step 1),
    'b' (another seed, step 2), 'lora' (adapters, step 2)."""
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for name, kwargs in {"a": dict(at=2), "a1": dict(at=1), "b": dict(at=2, seed=4),
                         "lora": dict(at=2, method="lora")}.items():
        out[name] = stopped_trial(base / name, **kwargs)
    return out


def checkpoint_of(record: Path) -> Path:
    return record.with_name(f"{record.stem}-checkpoint")


def copy_run(record: Path, folder: Path) -> Path:
    """A copy of a record (with the files beside it that share its name: its steps) and its checkpoint in
    ``folder``; the copy's record path."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in record.parent.glob(f"{record.stem}.*"):
        shutil.copy2(path, folder / path.name)
    shutil.copytree(checkpoint_of(record), folder / checkpoint_of(record).name)
    return folder / record.name


def edit_safetensors_header(path: Path, edit) -> None:
    """Change a safetensors file's JSON header with ``edit(header)``, padded to its old length (same file size)."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    edit(header)
    new = json.dumps(header, separators=(",", ":")).encode()
    assert len(new) <= length
    path.write_bytes(raw[:8] + new.ljust(length, b" ") + raw[8 + length:])


def swap_offsets(header: dict) -> None:
    """Swap the data offsets of two tensors of the same byte size (the file stays valid, the weights move)."""
    sized: dict[int, str] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        if end - start in sized:
            other = header[sized[end - start]]
            entry["data_offsets"], other["data_offsets"] = other["data_offsets"], entry["data_offsets"]
            return
        sized[end - start] = name
    raise AssertionError("no two tensors of one size")


def to_int32(header: dict) -> None:
    name = next(k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
    header[name]["dtype"] = "I32"


def reseal(folder: Path) -> None:
    """What a forger would do: the manifest's files re-hashed and the seal recomputed (the tensors' digests kept)."""
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    for name in manifest["files"]:
        path = folder / name
        manifest["files"][name] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    body = {k: v for k, v in manifest.items() if k != "seal"}
    (folder / MANIFEST_FILE).write_text(json.dumps({**body, "seal": _seal(body)}))


def resume_cli(record: Path, *extra: str, capsys) -> tuple[int, str, str]:
    rc = main(["trial", "--resume", str(record), "--no-progress", *extra])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# -- every kind of damage, refused before anything is loaded ----------------------------------------------


def _damage(kind: str, folder: Path, runs: dict[str, Path], marker: Path) -> None:
    other_run, other_step = checkpoint_of(runs["b"]), checkpoint_of(runs["a1"])
    if kind in SAVE_CHECK_DAMAGE:  # the save-and-restore check's own kinds
        damage_checkpoint(kind, folder)
    elif kind == "a pickled file that would run code":
        import pickle

        class Payload:
            def __reduce__(self):
                return (Path.touch, (marker,))

        (folder / "rng_state.pth").write_bytes(pickle.dumps({"torch": Payload()}))
    elif kind == "weights swapped in from another run":
        shutil.copy2(other_run / "model.safetensors", folder / "model.safetensors")
    elif kind == "safetensors header dtype edited":
        edit_safetensors_header(folder / "model.safetensors", to_int32)
    elif kind == "safetensors header data offsets edited":
        edit_safetensors_header(folder / "model.safetensors", swap_offsets)
    elif kind == "optimizer state from another step":
        shutil.copy2(other_step / "optimizer.pt", folder / "optimizer.pt")
    elif kind == "scheduler state from another step":
        shutil.copy2(other_step / "scheduler.pt", folder / "scheduler.pt")
    elif kind == "an extra unexpected file":
        (folder / "notes.txt").write_text("mine")
    elif kind == "a file replaced by a link to its copy":
        kept = folder.parent / "kept.safetensors"
        shutil.move(folder / "model.safetensors", kept)
        (folder / "model.safetensors").symlink_to(kept)
    elif kind == "manifest edited":
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        manifest["files"]["model.safetensors"]["sha256"] = "0" * 64
        (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    elif kind == "manifest missing":
        (folder / MANIFEST_FILE).unlink()
    elif kind == "manifest not JSON":
        (folder / MANIFEST_FILE).write_text("{not json")
    elif kind == "a resealed manifest naming a file outside the folder":
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        manifest["files"]["../../outside.bin"] = {"bytes": 1, "sha256": "0" * 64}
        body = {k: v for k, v in manifest.items() if k != "seal"}
        (folder / MANIFEST_FILE).write_text(json.dumps({**body, "seal": _seal(body)}))
    elif kind == "an extra link to a folder":
        (folder / "more").symlink_to(folder.parent, target_is_directory=True)
    elif kind == "whole checkpoint from another run":
        shutil.rmtree(folder)
        shutil.copytree(other_run, folder)
    else:
        raise AssertionError(kind)


# kind -> (error.resume.<code>, the file the line names; None: the folder alone)
KINDS = {
    # the kinds tests/test_checkpoint_check.py shows the round-trip's own check
    "flipped bit in the weights": ("file_digest", "model.safetensors"),
    "flipped bit in the adapter": ("file_digest", "adapter_model.safetensors"),
    "truncated optimizer.pt": ("file_size", "optimizer.pt"),
    "missing trainer_state.json": ("file_missing", "trainer_state.json"),
    "missing optimizer.pt": ("file_missing", "optimizer.pt"),
    "wrong optimizer state": ("file_digest", "optimizer.pt"),
    "swapped RNG state": ("file_digest", "rng_state.pth"),
    "wrong step in trainer_state.json": ("file_digest", "trainer_state.json"),
    "a pickled file that would run code": ("file_size", "rng_state.pth"),
    # and the kinds issue 21 names
    "weights swapped in from another run": ("file_digest", "model.safetensors"),
    "safetensors header dtype edited": ("file_digest", "model.safetensors"),
    "safetensors header data offsets edited": ("file_digest", "model.safetensors"),
    "optimizer state from another step": ("file_digest", "optimizer.pt"),
    "scheduler state from another step": ("file_digest", "scheduler.pt"),
    # (no "RNG state from another step": tiny-llama has no dropout, so its RNG files of steps 1 and 2 are the same
    # bytes, the same state; a swapped generator is "swapped RNG state")
    "an extra unexpected file": ("file_extra", "notes.txt"),
    "a file replaced by a link to its copy": ("file_not_regular", "model.safetensors"),
    "manifest edited": ("manifest_edited", None),
    "manifest missing": ("no_manifest", None),
    "manifest not JSON": ("manifest_unreadable", None),
    "whole checkpoint from another run": ("other_run", None),
    "a resealed manifest naming a file outside the folder": ("manifest_unreadable", None),
    "an extra link to a folder": ("file_extra", "more"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_of_damage_is_refused_before_loading(kind, runs, tmp_path, capsys):
    code, file = KINDS[kind]
    record = copy_run(runs["lora" if "adapter" in kind else "a"], tmp_path / "run")
    marker = tmp_path / "ran"
    _damage(kind, checkpoint_of(record), runs, marker)
    # the Python API: the package's own error, with the code and the file
    with pytest.raises(CheckpointDamaged) as caught:
        resume_options(record)
    found = caught.value.msg
    if code in ("file_digest", "file_size"):  # the same size or not: either names the file
        assert found.code in ("error.resume.file_digest", "error.resume.file_size"), str(caught.value)
    else:
        assert found.code == f"error.resume.{code}", str(caught.value)
    if file is not None:
        assert found["file"] == file
    assert found["folder"] == str(checkpoint_of(record))
    # the command line: one line naming the file, exit 4, nothing trained, nothing new written
    before = sorted(p.name for p in record.parent.iterdir())
    rc, out, err = resume_cli(record, capsys=capsys)
    assert rc == EXIT_CHECKPOINT_NOT_VERIFIED == 4
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuwork: error: cannot resume from "), err
    assert (file or str(checkpoint_of(record))) in lines[0]
    assert out == "" and not marker.exists()
    assert sorted(p.name for p in record.parent.iterdir()) == before
    ru = render(found, "ru")
    assert ru.startswith("продолжить с чекпойнта ") and (file or "") in ru


@pytest.mark.slow
def test_a_forged_manifest_is_caught_by_the_tensor_digests_after_loading(runs, tmp_path, capsys):
    """Files damaged and the manifest re-hashed and resealed to match: the per-tensor digests taken in memory at
    the save still tell."""
    record = copy_run(runs["a"], tmp_path / "run")
    folder = checkpoint_of(record)
    flip_last_byte(folder / "model.safetensors")
    reseal(folder)
    resume_options(record)  # every file matches the (forged) manifest
    rc, _, err = resume_cli(record, capsys=capsys)
    assert rc == EXIT_CHECKPOINT_NOT_VERIFIED
    lines = err.strip().splitlines()
    assert len(lines) == 2, err  # the "verified before loading" line (files match), then the refusal
    assert "verified before loading: 5 files" in lines[0]
    assert "after loading, 1 entry differs from the digests taken at the save (first: model." in lines[1]
    assert not [p for p in record.parent.glob("*.json") if p != record]  # no new record was started... or kept


@pytest.mark.slow
def test_an_undamaged_checkpoint_resumes_and_says_what_was_checked(runs, tmp_path, capsys):
    record = copy_run(runs["a"], tmp_path / "run")
    reference = run_trial(TrainPlan(**TINY), steps=4, warmup=1, seed=3, checkpoint=False)
    rc, out, err = resume_cli(record, "--json", capsys=capsys)
    assert rc == 0, err
    assert f"checkpoint {checkpoint_of(record)} verified before loading: 5 files match" in err
    resumed = TrialRecord.from_dict(json.loads(out)["record"])
    assert [s.loss for s in resumed.steps] == [s.loss for s in reference.steps]  # bit for bit on the CPU
    assert "changed_since_resume" not in resumed.protocol.dataset


# -- the data and the flags against the record -----------------------------------------------------------


@pytest.mark.slow
def test_a_changed_data_file_is_refused_unless_allowed_and_then_recorded(tmp_path, capsys):
    data = tmp_path / "corpus.txt"
    data.write_text("The quick brown fox jumps over the lazy dog. " * 400)
    record = stopped_trial(tmp_path / "out", 2, data=[str(data)])
    data.write_text(data.read_text() + "One more sentence.")
    rc, _, err = resume_cli(record, capsys=capsys)
    assert rc == EXIT_USAGE
    [line] = err.strip().splitlines()
    assert line.startswith(f"gpuwork: error: data file {data} changed since trial {record.stem} (SHA-256 ")
    assert "--allow-changed-data" in line
    with pytest.raises(TrialError) as caught:
        resume_options(record)
    assert caught.value.msg.code == "error.resume.data_changed" and caught.value.msg["path"] == str(data)

    rc, out, err = resume_cli(record, "--allow-changed-data", "--json", capsys=capsys)
    assert rc == 0, err
    assert f"data changed since {record.stem}, allowed by --allow-changed-data" in err and str(data) in err
    resumed = TrialRecord.from_dict(json.loads(out)["record"])
    assert resumed.protocol.dataset["changed_since_resume"] == {"run_id": record.stem, "files": [str(data)]}
    assert TrialRecord.from_json(Path(resumed.saved_to)).protocol.dataset["changed_since_resume"]["files"] == [
        str(data)]

    data.unlink()
    rc, _, err = resume_cli(record, "--allow-changed-data", capsys=capsys)
    assert rc == EXIT_USAGE and len(err.strip().splitlines()) == 1
    assert f"data file {data} of trial {record.stem} cannot be read" in err


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "named", "recorded"), [
    (["--steps", "9"], "--steps 9", "4"),
    (["--seed", "3", "--warmup", "5"], "--warmup 5", "1"),  # the same seed is no conflict; the warm-up is
    (["--model", "tiny-gpt2"], "--model tiny-gpt2", "tiny-llama"),
    (["--batch-size", "4"], "--batch-size 4", "2"),
    (["--device", "cuda"], "--device cuda", "cpu"),
    (["--memory-cap-gib", "3"], "--memory-cap-gib 3.0", "-"),
    (["--until-stable"], "--until-stable", "--steps 4"),
])
def test_flags_that_conflict_with_the_record_are_refused(runs, tmp_path, capsys, flags, named, recorded):
    record = copy_run(runs["a"], tmp_path / "run")
    rc, out, err = resume_cli(record, *flags, capsys=capsys)
    assert rc == EXIT_USAGE and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"gpuwork: error: {named}") and f"which ran with {recorded}:" in line, line
    assert "drop " in line


def test_allow_changed_data_without_resume_is_refused(capsys):
    rc = main(["trial", "--model", "tiny-llama", "--allow-changed-data", "--no-progress"])
    assert rc == EXIT_USAGE
    assert "--allow-changed-data applies only with --resume" in capsys.readouterr().err


# -- what --resume is given -----------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "says"), [
    ("empty", "--resume was given an empty name"),
    ("blank", "--resume was given an empty name"),
    ("folder", "is a folder, not a trial record"),
    ("loop", "is a symbolic link that leads back to itself"),
    ("dangling", "which does not exist: point it at"),
    ("fifo", "is not a regular file (a pipe, device or socket)"),
])
def test_what_resume_is_given_is_named_for_what_it_is(tmp_path, capsys, make, says):
    target = tmp_path / "thing"
    if make == "empty":
        given = ""
    elif make == "blank":
        given = "  "
    else:
        given = str(target)
        if make == "folder":
            target.mkdir()
        elif make == "loop":
            target.symlink_to(target)
        elif make == "dangling":
            target.symlink_to(tmp_path / "gone.json")
        elif make == "fifo":
            os.mkfifo(target)  # reading it would block: it must not be opened
    rc = main(["trial", "--resume", given, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and len(err.strip().splitlines()) == 1, err
    assert says in err and "does not exist: give" not in err and "no trial record" not in err
    with pytest.raises(TrialError, match="resume|folder|link|regular"):
        resume_options(given)


# -- the ranges of the trial's numeric flags (--seed, --nproc, --timeout-s: cli.args.FLAG_BOUNDS, at parsing) ----


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--steps", "0", "from 1 to 100,000"),
    ("--steps", str(MAX_STEPS + 1), "from 1 to 100,000"),
    ("--steps", str(10**18), "from 1 to 100,000"),
    ("--warmup", "-1", "from 0 to 10,000"),
    ("--warmup", "10001", "from 0 to 10,000"),
    ("--checkpoint-every", "-1", "from 0 to 100,000"),
    ("--checkpoint-every", "100001", "from 0 to 100,000"),
    ("--max-steps", "0", "from 1 to 100,000"),
    ("--memory-cap-gib", "-1", "above 0 and at most 16,384"),
    ("--memory-cap-gib", "1e308", "above 0 and at most 16,384"),
    ("--price-per-hour", "-1", "from 0 to 10,000"),
    ("--price-per-hour", "1e308", "from 0 to 10,000"),
])
def test_numeric_flags_have_ranges_with_both_ends(capsys, flag, value, says):
    rc = main(["trial", "--model", "tiny-llama", flag, value, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"gpuwork: error: {flag} ") and says in err
    # before anything starts, with --resume too (the range is the flag's, whatever the record says)
    rc = main(["trial", "--resume", "nope", flag, value, "--no-progress"])
    assert rc == EXIT_USAGE and says in capsys.readouterr().err


def test_the_range_message_speaks_russian(capsys):
    assert main(["trial", "--model", "tiny-llama", "--steps", "0", "--lang", "ru", "--no-progress"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "укажите целое число от 1 до 100 000 (измеряемые шаги оптимизатора)" in err


# -- under torchrun (two gloo ranks on the CPU; each launch takes 10-20 s) --------------------------------------


@pytest.mark.slow
def test_under_torchrun_damage_is_refused_before_loading_and_a_forgery_after(tmp_path, capsys):
    from gpuwork.measure.distributed import run_distributed

    def stop(m):
        if m.step == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    stopped = run_distributed(TrainPlan(**{**TINY, "gpus": 2}), 2, steps=12, warmup=1, seed=3, out_dir=tmp_path,
                              callbacks=[stop], timeout_s=600)
    assert stopped.status == "interrupted" and stopped.world_size == 2
    record = Path(stopped.saved_to)
    folder = checkpoint_of(record)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert sorted(manifest["tensors"]) == ["0", "1"]  # each rank's digests
    assert {".metadata", "__0_0.distcp", "__1_0.distcp", "rng_state_1.pth"} <= set(manifest["files"])
    # DDP's replicas are saved once: the tensors are in rank 0's part, which both ranks read back
    path = folder / "__0_0.distcp"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # tensor bytes make up most of the file
    path.write_bytes(bytes(data))
    rc, out, err = resume_cli(record, capsys=capsys)
    assert rc == EXIT_CHECKPOINT_NOT_VERIFIED and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"gpuwork: error: cannot resume from {folder}: __0_0.distcp is not the file saved")

    reseal(folder)  # the forger's manifest: the files pass, the ranks' digests after loading do not
    rc, out, err = resume_cli(record, capsys=capsys)
    assert rc == EXIT_CHECKPOINT_NOT_VERIFIED, err
    refusal = [line for line in err.strip().splitlines() if line.startswith("gpuwork: error:")]
    assert len(refusal) == 1 and "after loading, 1 entry differs from the digests taken at the save" in refusal[0]
    assert "rank " in refusal[0]
