"""A trial that loses nothing: unique run ids, atomic records, signals, resume, full and read-only disks.

Real tiny trials on the CPU (tiny-llama / tiny-gpt2, seq 32, batch 2, a few steps, one thread). The only
stand-in is the disk: ``gpuwork.measure.records.write_file`` (the one function every record and checkpoint
file goes through) is replaced to fail with ENOSPC / EROFS where a real full or read-only disk is needed.
Signals are real: sent to this process from a step callback, or to a ``gpuwork trial`` subprocess.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.measure import records
from gpuwork.measure.record import steps_path
from gpuwork.measure.records import RecordWriteError
from gpuwork.measure.trial import TrialError, TrialRecord, resume_options, run_trial
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2, lora_r=4)
CLI = ["--model", "tiny-llama", "--method", "full", "--precision", "fp32", "--seq-len", "32", "--batch-size", "2",
       "--no-progress"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here trains: one torch thread (see conftest)."""


def losses(record: TrialRecord) -> list[float]:
    return [s.loss for s in record.steps]


def signal_at(step: int, sig: int = signal.SIGTERM):
    """A step callback that sends ``sig`` to this process once ``step`` has been measured."""
    def callback(m):
        if m.step == step:
            os.kill(os.getpid(), sig)
    return callback


def temp_leftovers(folder: Path) -> list[str]:
    """Temporary files and folders (the scratch folder, half-written files): none may outlive a trial."""
    return sorted(p.name for p in folder.iterdir() if records.TEMP_MARK in p.name or p.name.endswith("-tmp"))


# -- run ids and atomic files (pure, fast) ---------------------------------------------------------------


def test_run_ids_started_in_the_same_second_never_collide(tmp_path):
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    ids = {records.new_run_id("tiny-llama", "lora", now) for _ in range(5000)}
    assert len(ids) == 5000
    assert all(i.startswith("trial-tiny-llama-lora-20260101T120000Z-") for i in ids)
    taken = records.reserve_run_id(tmp_path, "m", "full", now)
    (tmp_path / f"{taken}.json").write_text("{}")
    assert records.reserve_run_id(tmp_path, "m", "full", now) != taken


def test_a_failed_write_keeps_the_old_file_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "record.json"
    records.write_text(path, '{"old": true}')

    def half_then_disk_full(f):
        f.write(b'{"new": ')
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(RecordWriteError) as caught:
        records.write_file(path, half_then_disk_full)
    assert json.loads(path.read_text()) == {"old": True}
    assert list(tmp_path.iterdir()) == [path]
    assert caught.value.msg.code == "error.trial.disk_full" and caught.value.folder == tmp_path
    text = str(caught.value)
    assert str(tmp_path) in text and "free space there or choose another --out folder" in text
    assert "освободите место" in caught.value.text("ru")


def test_replacing_a_folder_is_all_or_nothing(tmp_path):
    target = tmp_path / "run-checkpoint"
    for content in ("first", "second"):
        staging = records.temp_folder(target)
        (staging / "file").write_text(content)
        records.replace_folder(staging, target)
        assert (target / "file").read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-checkpoint"]
    # a crash between the two renames leaves the older folder aside; it is still found
    os.replace(target, tmp_path / ".run-checkpoint.old-1234abcd")
    assert records.previous_folder(target) == tmp_path / ".run-checkpoint.old-1234abcd"


# -- signals, resume ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uninterrupted():
    """The reference: 5 steps (1 warm-up) of tiny-llama without a stop."""
    return run_trial(TrainPlan(**TINY), steps=4, warmup=1, seed=3, checkpoint=False)


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "at"), [(signal.SIGTERM, 2), (signal.SIGINT, 1)])
def test_a_signal_ends_the_step_saves_and_the_resume_gives_the_same_losses(tmp_path, uninterrupted, sig, at):
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    stopped = run_trial(TrainPlan(**TINY), steps=4, warmup=1, seed=3, out_dir=tmp_path, callbacks=[signal_at(at, sig)])
    assert stopped.status == "interrupted" and stopped.stop_signal == signal.Signals(sig).name
    assert [s.step for s in stopped.steps] == list(range(1, at + 1)) and stopped.checkpoint is None
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # given back
    on_disk = TrialRecord.from_json(Path(stopped.saved_to))
    assert on_disk == stopped
    folder = Path(stopped.saved_to).with_name(f"{stopped.run_id}-checkpoint")
    assert json.loads((folder / "trainer_state.json").read_text())["global_step"] == at
    assert temp_leftovers(tmp_path) == []

    options = resume_options(stopped.saved_to)
    assert options["resume"].step == at and options["seed"] == 3 and options["out_dir"] == str(tmp_path)
    resumed = run_trial(options.pop("plan"), checkpoint=True, **options)
    assert resumed.status == "complete" and resumed.resumed_from == stopped.run_id
    assert resumed.run_id != stopped.run_id
    assert losses(resumed) == pytest.approx(losses(uninterrupted), rel=1e-6, abs=0)
    assert losses(resumed)[:at] == losses(stopped)  # the measured steps are carried over
    assert resumed.checkpoint.verified
    assert TrialRecord.from_json(Path(stopped.saved_to)) == stopped  # the interrupted record is never overwritten
    with pytest.raises(TrialError, match="ran to the end"):
        resume_options(resumed.saved_to)


@pytest.mark.slow
def test_an_interrupted_qlora_trial_removes_its_16_bit_copy(tmp_path):
    seen: list[str] = []

    def look_then_stop(m):
        seen.extend(temp_leftovers(tmp_path))
        os.kill(os.getpid(), signal.SIGINT)

    stopped = run_trial(TrainPlan(**{**TINY, "method": "qlora"}), steps=3, warmup=0, out_dir=tmp_path,
                        callbacks=[look_then_stop])
    assert any(name.endswith("-tmp") for name in seen)  # the 16-bit base model lived there during the run
    assert stopped.status == "interrupted" and len(stopped.steps) == 1
    assert temp_leftovers(tmp_path) == []
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"{stopped.run_id}-checkpoint", f"{stopped.run_id}.json", f"{stopped.run_id}.steps.jsonl"]
    assert "adapter_model.safetensors" in os.listdir(tmp_path / f"{stopped.run_id}-checkpoint")


@pytest.mark.slow
def test_the_cli_prints_the_steps_and_how_to_resume_on_sigterm(tmp_path, monkeypatch, capsys):
    import gpuwork.measure.trial as trial_module

    real = trial_module.run_trial

    def with_signal(*args, **kwargs):
        kwargs["callbacks"] = [*kwargs.get("callbacks", []), signal_at(1)]
        return real(*args, **kwargs)

    monkeypatch.setattr(trial_module, "run_trial", with_signal)  # the signal comes from inside the real run
    rc = main(["trial", *CLI, "--steps", "3", "--warmup", "0", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 128 + signal.SIGTERM
    assert "step time" in captured.out and "loss" in captured.out
    line = captured.err.strip().splitlines()[-1]
    assert line.startswith("gpuwork: stopped by SIGTERM after 1 of 3 steps") and "--resume" in line
    record = next(tmp_path.glob("*.json"))
    monkeypatch.setattr(trial_module, "run_trial", real)
    assert main(["trial", "--resume", str(record), "--no-progress"]) == 0
    assert f"resumed {record.stem} at step 2" in capsys.readouterr().out


# -- disk full, read-only folder ---------------------------------------------------------------------------


def fail_writes_after(monkeypatch, good: int, code: int) -> list[Path]:
    """Let ``good`` writes through the seams (whole files, and a step appended to a record's steps file), then fail
    each with OSError(code); returns the paths tried."""
    real, real_append = records.write_file, records.append_bytes
    tried: list[Path] = []

    def seam(path, write):
        tried.append(Path(path))
        if len(tried) > good:
            raise records.write_error(OSError(code, os.strerror(code)), Path(path))
        real(path, write)

    def append(fd, path, data):
        tried.append(Path(path))
        if len(tried) > good:
            raise records.write_error(OSError(code, os.strerror(code)), Path(path))
        real_append(fd, path, data)

    monkeypatch.setattr(records, "write_file", seam)
    monkeypatch.setattr(records, "append_bytes", append)
    return tried


@pytest.mark.slow
def test_disk_full_mid_trial_keeps_measuring_and_the_last_record_on_disk_is_whole(tmp_path, monkeypatch):
    tried = fail_writes_after(monkeypatch, good=2, code=errno.ENOSPC)  # the first record and step 1's
    record = run_trial(TrainPlan(**TINY), steps=3, warmup=0, out_dir=tmp_path)
    assert [s.step for s in record.steps] == [1, 2, 3]  # measured to the end, in memory
    assert record.write_error.code == "error.trial.disk_full" and record.write_error["folder"] == str(tmp_path)
    assert record.saved_to is None and record.checkpoint is None  # no round-trip on a full disk
    assert len(tried) == 3  # it stopped writing after the first failure
    on_disk = TrialRecord.from_json(tried[0])
    assert on_disk.status == "running" and [s.step for s in on_disk.steps] == [1]
    assert temp_leftovers(tmp_path) == []


@pytest.mark.slow
def test_disk_full_in_the_cli_prints_the_measurements_and_one_line(tmp_path, monkeypatch, capsys):
    fail_writes_after(monkeypatch, good=1, code=errno.ENOSPC)
    rc = main(["trial", *CLI, "--steps", "2", "--warmup", "0", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 2
    assert "step time" in captured.out and "loss" in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpuwork: error: the measurements above were not saved: no space")
    assert str(tmp_path) in err[0] and "free space there or choose another --out folder" in err[0]


@pytest.mark.slow
def test_a_read_only_out_folder_is_said_before_any_step(tmp_path, monkeypatch, capsys):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        probe = out / "probe"
        try:  # root writes anyway: then the read-only file system is simulated at the seam
            probe.write_text("")
            probe.unlink()
            fail_writes_after(monkeypatch, good=0, code=errno.EROFS)
            monkeypatch.setattr(Path, "mkdir", _refuse_mkdir_in(out, Path.mkdir))
        except PermissionError:
            pass
        steps: list = []
        with pytest.raises(RecordWriteError) as caught:
            run_trial(TrainPlan(**TINY), steps=2, warmup=0, out_dir=out, callbacks=[steps.append])
        assert steps == [] and caught.value.msg.code == "error.trial.out_read_only"
        assert str(out) in str(caught.value) and "make it writable" in str(caught.value)
        assert main(["trial", *CLI, "--steps", "1", "--warmup", "0", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(out) in err[0] and "Traceback" not in err[0]
        assert list(out.iterdir()) == []
    finally:
        out.chmod(0o755)


def _refuse_mkdir_in(folder: Path, real):
    def mkdir(self, *args, **kwargs):
        if Path(self).parent == folder:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return real(self, *args, **kwargs)
    return mkdir


# -- processes: two at once, and killed at random points ---------------------------------------------------------


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpuwork", "trial", *CLI, *args]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


@pytest.mark.slow
def test_two_trials_started_together_into_one_folder_keep_their_own_files(tmp_path):
    procs = [subprocess.Popen(_cli("--steps", "1", "--warmup", "0", "--seed", str(seed), "--out", str(tmp_path)),
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for seed in (1, 2)]
    for p in procs:
        p.communicate(timeout=300)
        assert p.returncode == 0
    found = [TrialRecord.from_json(p) for p in sorted(tmp_path.glob("*.json"))]
    assert len(found) == 2 and found[0].run_id != found[1].run_id
    assert sorted(r.protocol.seed for r in found) == [1, 2]
    for r in found:
        state = json.loads((tmp_path / f"{r.run_id}-checkpoint" / "trainer_state.json").read_text())
        assert state["seed"] == r.protocol.seed and r.checkpoint.verified
    assert temp_leftovers(tmp_path) == []


FAULT_RUNS = int(os.environ.get("GPUWORK_FAULT_RUNS", "2"))  # the target is 20; 2 keeps the suite short
FAULT_SEED = int(os.environ.get("GPUWORK_FAULT_SEED", "12"))


def _faults() -> list[tuple[str, str]]:
    rng = random.Random(FAULT_SEED)
    kinds = [("SIGTERM", "checkpoint"), ("SIGKILL", "checkpoint"), ("SIGINT", "step")]  # SIGINT: also in-process
    return kinds[:FAULT_RUNS] + [(rng.choice(["SIGINT", "SIGTERM", "SIGKILL"]), rng.choice(["step", "checkpoint"]))
                                 for _ in range(FAULT_RUNS - len(kinds))]


@pytest.fixture(scope="module")
def reference_losses():
    return losses(run_trial(TrainPlan(**TINY), steps=5, warmup=1, seed=5, checkpoint=False))


def _steps_in_file(record: Path) -> int:
    """Whole lines in a record's steps file (each step is appended as one line)."""
    steps = steps_path(record)
    return steps.read_bytes().count(b"\n") if steps.exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "when"), _faults())
def test_a_trial_killed_at_a_random_point_loses_nothing(tmp_path, reference_losses, sig, when):
    """SIGINT/SIGTERM/SIGKILL during a step or while a checkpoint is written (--checkpoint-every 1): every record
    in the folder is whole, none is overwritten, and the run resumes to the uninterrupted losses."""
    rng = random.Random(f"{FAULT_SEED}-{sig}-{when}")
    proc = subprocess.Popen(_cli("--steps", "5", "--warmup", "1", "--seed", "5", "--checkpoint-every", "1",
                                 "--out", str(tmp_path)), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    after_steps = rng.randint(1, 4)
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        names = os.listdir(tmp_path)
        writing = any(".tmp-" in n for n in names)
        record = next((tmp_path / n for n in names if n.endswith(".json") and not n.startswith(".")), None)
        json.loads(record.read_text()) if record else None  # whole, or this raises
        done = _steps_in_file(record) if record else 0
        if done >= after_steps and (when == "step" or writing):
            break
        time.sleep(0.002)
    proc.send_signal(getattr(signal, sig))
    proc.communicate(timeout=240)
    if sig != "SIGKILL":
        assert proc.returncode in (0, 128 + getattr(signal, sig))
    found = sorted(tmp_path.glob("*.json"))
    assert len(found) == 1
    record = TrialRecord.from_json(found[0])  # never a truncated record
    assert record.steps and [s.step for s in record.steps] == list(range(1, len(record.steps) + 1))
    assert losses(record) == pytest.approx(reference_losses[:len(record.steps)], rel=1e-6, abs=0)
    if record.status == "complete":
        return
    assert record.status == ("running" if sig == "SIGKILL" else "interrupted")
    resumed = subprocess.run([sys.executable, "-m", "gpuwork", "trial", "--resume", str(found[0]), "--no-progress",
                              "--json"], env=_env(), capture_output=True, text=True, timeout=240)
    if sig == "SIGKILL" and records.previous_folder(found[0].with_name(f"{record.run_id}-checkpoint")) is None:
        # killed before its first checkpoint was in place: nothing to resume from, and it says so
        assert resumed.returncode == 2 and "left no checkpoint" in resumed.stderr
        return
    assert resumed.returncode == 0, resumed.stderr
    again = TrialRecord.from_dict(json.loads(resumed.stdout)["record"])
    assert again.resumed_from == record.run_id and again.checkpoint.verified
    assert losses(again) == pytest.approx(reference_losses, rel=1e-6, abs=0)
    assert TrialRecord.from_json(found[0]) == record  # the interrupted record is left as it was
    assert temp_leftovers(tmp_path) == []


def test_resume_errors_name_the_problem(tmp_path):
    with pytest.raises(TrialError, match="no trial record 'nope'"):
        resume_options("nope", tmp_path)
    assert "идентификатор" in render(msg("error.trial.resume_not_found", run="x", folder="y"), "ru")


def test_a_record_file_that_is_json_but_no_object_is_a_clear_error(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("[1, 2]")
    with pytest.raises(TrialError) as err:
        TrialRecord.from_json(path)
    # the file is named, with what it holds instead of a record
    assert err.value.msg.code == "error.trial.not_a_record" and str(path) in str(err.value) and "list" in str(err.value)
