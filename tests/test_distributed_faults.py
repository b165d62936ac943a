"""A two-process trial (torchrun, gloo on the CPU) that loses nothing: signals, resume, SIGKILL, --until-stable.

Real torchrun and real signals with tiny-llama (seq 32, batch 2, one thread per rank). Every run here
launches two ranks (about 10-20 s each on a 2-core machine). The one stand-in: the signal to gpuwork's own
process comes from a step callback (as in tests/test_trial_faults.py), so it lands while the ranks still
have steps to go. Timings are never asserted; --until-stable is checked against its own rule.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.measure import records
from gpuwork.measure.checkpoint import read_trainer_state
from gpuwork.measure.distributed import SHUTDOWN_GRACE_S, run_distributed, torchrun_command
from gpuwork.measure.launch import OWNER_FILE, WORK_PREFIX, remove_stale_work
from gpuwork.measure.record import steps_path
from gpuwork.measure.stability import is_stable
from gpuwork.measure.trial import TrialRecord, resume_options
from gpuwork.plan import TrainPlan

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2, gpus=2)
CLI = ["--model", "tiny-llama", "--method", "full", "--precision", "fp32", "--seq-len", "32", "--batch-size", "2",
       "--no-progress", "--nproc", "2", "--timeout-s", "600"]
STEPS, WARMUP, SEED = 12, 1, 3  # enough steps that a signal after step 2 lands before the last


def losses(record: TrialRecord) -> list[float]:
    return [s.loss for s in record.steps]


def leftovers(folder: Path) -> list[str]:
    """Hidden files and folders (temporary names, the torchrun work folder): none may outlive a trial."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def check_interrupted(record: TrialRecord, sig: str, total: int = WARMUP + STEPS) -> None:
    """Every rank stopped at the same step, before the last; the checkpoint holds that step and is whole."""
    done = len(record.steps)
    assert record.status == "interrupted" and record.stop_signal == sig and record.world_size == 2
    assert 1 <= done < total and [s.step for s in record.steps] == list(range(1, done + 1))
    assert [len(r.losses) for r in record.ranks] == [done, done]  # the ranks agreed on the step
    folder = Path(record.saved_to).with_name(f"{record.run_id}-checkpoint")
    state = read_trainer_state(folder)
    assert (state["global_step"], state["world_size"], state["seed"]) == (done, 2, SEED)
    assert {".metadata", "rng_state_0.pth", "rng_state_1.pth", "scheduler.pt"} <= set(os.listdir(folder))
    assert leftovers(Path(record.saved_to).parent) == []


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted run the resumed one must reproduce."""
    return run_distributed(TrainPlan(**TINY), 2, steps=STEPS, warmup=WARMUP, seed=SEED, checkpoint=False,
                           timeout_s=600)


def test_torchrun_gives_the_ranks_time_to_save_after_a_signal(tmp_path):
    cmd = torchrun_command(2, tmp_path / "spec.json", port=29500)
    assert cmd[cmd.index("--shutdown-timeout") + 1] == str(SHUTDOWN_GRACE_S)


@pytest.mark.slow
def test_sigterm_to_gpuwork_stops_both_ranks_at_one_step_and_the_resume_gives_the_same_losses(
        tmp_path, monkeypatch, capsys, reference):
    import gpuwork.measure.distributed as distributed

    real = distributed.run_distributed

    def signal_at_step_2(*args, **kwargs):
        def send(m):
            if m.step == 2:
                os.kill(os.getpid(), signal.SIGTERM)
        kwargs["callbacks"] = [*kwargs.get("callbacks", []), send]
        return real(*args, **kwargs)

    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(distributed, "run_distributed", signal_at_step_2)
    rc = main(["trial", *CLI, "--steps", str(STEPS), "--warmup", str(WARMUP), "--seed", str(SEED),
               "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 128 + signal.SIGTERM
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # given back
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpuwork: stopped by SIGTERM after ") and "--resume" in err[0]
    assert "2 processes (ddp, gloo)" in captured.out
    [path] = tmp_path.glob("*.json")
    stopped = TrialRecord.from_json(path)
    check_interrupted(stopped, "SIGTERM")
    assert f"after {len(stopped.steps)} of {WARMUP + STEPS} steps" in err[0]
    assert losses(stopped) == pytest.approx(losses(reference)[:len(stopped.steps)], rel=1e-6, abs=0)

    # the record says how many processes: another number is refused before anything starts
    assert main(["trial", "--resume", str(path), "--nproc", "3", "--no-progress"]) == 2
    assert "ran as 2 processes, not 3" in capsys.readouterr().err
    assert resume_options(path)["nproc"] == 2

    monkeypatch.setattr(distributed, "run_distributed", real)
    assert main(["trial", "--nproc", "2", "--resume", str(path), "--no-progress", "--json"]) == 0
    resumed = TrialRecord.from_dict(json.loads(capsys.readouterr().out)["record"])
    assert resumed.status == "complete" and resumed.resumed_from == stopped.run_id and resumed.world_size == 2
    assert losses(resumed) == pytest.approx(losses(reference), rel=1e-6, abs=0)
    for mine, theirs in zip(resumed.ranks, reference.ranks, strict=True):  # each rank's own data and losses
        assert list(mine.losses) == pytest.approx(list(theirs.losses), rel=1e-6, abs=0)
    assert resumed.steps[:len(stopped.steps)] == stopped.steps  # the measured steps are carried over as they were
    assert resumed.checkpoint.verified, resumed.checkpoint.message
    assert TrialRecord.from_json(path) == stopped  # the interrupted record is never overwritten
    assert leftovers(tmp_path) == []


def _gpuwork(*args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "gpuwork", "trial", *CLI, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_steps(proc: subprocess.Popen, folder: Path, count: int) -> Path:
    """The record once the ranks have measured ``count`` steps (rank 0 appends each to the steps file)."""
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        for path in folder.glob("*.json"):
            json.loads(path.read_text())  # whole, or this raises
            steps = steps_path(path)
            if steps.exists() and steps.read_bytes().count(b"\n") >= count:
                return path
        time.sleep(0.05)
    raise AssertionError(f"no record with {count} steps: {proc.communicate(timeout=60)}")


def _torchrun(proc: subprocess.Popen) -> int:
    import psutil

    [child] = [c for c in psutil.Process(proc.pid).children() if "torch.distributed.run" in " ".join(c.cmdline())]
    return child.pid


@pytest.mark.slow
def test_sigterm_to_torchruns_process_group_gives_one_interrupted_record(tmp_path):
    proc = _gpuwork("--steps", "40", "--warmup", str(WARMUP), "--seed", str(SEED), "--out", str(tmp_path))
    _wait_for_steps(proc, tmp_path, 2)
    os.killpg(_torchrun(proc), signal.SIGTERM)  # torchrun runs in its own session: its group is itself
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuwork: stopped by SIGTERM after "), err
    [path] = tmp_path.glob("*.json")
    record = TrialRecord.from_json(path)
    check_interrupted(record, "SIGTERM", total=WARMUP + 40)


@pytest.mark.slow
def test_sigint_to_the_gpuwork_process_gives_one_interrupted_record(tmp_path):
    proc = _gpuwork("--steps", "40", "--warmup", str(WARMUP), "--seed", str(SEED), "--out", str(tmp_path))
    _wait_for_steps(proc, tmp_path, 2)
    proc.send_signal(signal.SIGINT)  # what Ctrl+C sends; torchrun, in its own session, does not get it
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGINT, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuwork: stopped by SIGINT after "), err
    [path] = tmp_path.glob("*.json")
    check_interrupted(TrialRecord.from_json(path), "SIGINT", total=WARMUP + 40)


@pytest.mark.slow
def test_sigkill_leaves_a_whole_record_and_checkpoint_that_resume_accepts(tmp_path):
    import psutil

    proc = _gpuwork("--steps", "40", "--warmup", str(WARMUP), "--seed", str(SEED), "--checkpoint-every", "1",
                    "--out", str(tmp_path))
    path = _wait_for_steps(proc, tmp_path, 3)
    tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    for p in tree:  # every process at once, the ranks included (they run in sessions of their own)
        p.kill()
    psutil.wait_procs(tree, timeout=60)
    proc.communicate(timeout=60)
    record = TrialRecord.from_json(path)  # never a truncated record
    assert record.status == "running" and record.world_size == 2
    done = len(record.steps)
    assert done >= 3 and [s.step for s in record.steps] == list(range(1, done + 1))
    assert [len(r.losses) for r in record.ranks] == [done, done]
    folder = records.previous_folder(path.with_name(f"{record.run_id}-checkpoint"))
    state = read_trainer_state(folder)
    assert 2 <= state["global_step"] <= done and state["world_size"] == 2
    options = resume_options(path)
    assert options["nproc"] == 2 and options["resume"].step == state["global_step"]
    assert [p for p in leftovers(tmp_path) if records.TEMP_MARK in p] == []  # half-written files removed
    # the killed run's work folder stays until the next run in the same folder, which removes it
    (stale,) = tmp_path.glob(f"{WORK_PREFIX}*")
    after = run_distributed(TrainPlan(**TINY), 2, steps=1, warmup=0, checkpoint=False, out_dir=tmp_path,
                            timeout_s=600)
    assert after.status == "complete" and not stale.exists()
    assert [p for p in leftovers(tmp_path) if p.startswith(WORK_PREFIX)] == []


# the seam for a full disk under one rank: Python imports sitecustomize at start-up, and torchrun's rank 1 then
# may write files of at most 64 KiB (its checkpoint part fails; SIGXFSZ ignored, so the write itself fails)
_RANK1_SMALL_FILES = """\
import os
if os.environ.get("LOCAL_RANK") == "1":
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
"""


@pytest.mark.slow
def test_a_failed_checkpoint_write_on_rank_1_is_one_line_and_the_measurements_are_shown(tmp_path):
    seam = tmp_path / "seam"
    seam.mkdir()
    (seam / "sitecustomize.py").write_text(_RANK1_SMALL_FILES)
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(seam), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "gpuwork", "trial", *CLI, "--steps", "3", "--warmup", "1",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    # both ranks gave the save up together (no wait for a timeout), and one line says which file, where, why
    assert done.returncode == 2 and len(errors) == 1, done.stderr[-3000:]
    (line,) = errors
    assert line.startswith("gpuwork: error: the measurements above were not saved: cannot write ")
    assert "-checkpoint in " + str(out) in line and "rank 1" in line and "Traceback" not in done.stderr
    assert "loss" in done.stdout and "checkpoint   round-trip not run" in done.stdout
    (record,) = out.glob("trial-*.json")
    assert len(TrialRecord.from_json(record).steps) == 1 + 3  # every measured step kept on disk
    assert leftovers(out) == []  # no half-written checkpoint, no work folder


def test_only_the_work_folders_of_runs_that_are_gone_are_removed(tmp_path):
    import psutil

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    me = psutil.Process()
    owners = {"gone": {"pid": gone.pid, "started": 1.0},
              "reused pid": {"pid": me.pid, "started": me.create_time() - 3600},  # another process, same pid
              "live": {"pid": me.pid, "started": me.create_time()}}
    for name, owner in owners.items():
        folder = tmp_path / f"{WORK_PREFIX}{name.replace(' ', '-')}"
        folder.mkdir()
        (folder / OWNER_FILE).write_text(json.dumps(owner))
        (folder / "spec.json").write_text("{}")
    (tmp_path / f"{WORK_PREFIX}no-owner").mkdir()  # not ours to judge: kept
    (tmp_path / "trial-x.json").write_text("{}")  # a record: never touched
    removed = sorted(p.name for p in remove_stale_work(tmp_path))
    assert removed == [f"{WORK_PREFIX}gone", f"{WORK_PREFIX}reused-pid"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{WORK_PREFIX}live", f"{WORK_PREFIX}no-owner",
                                                          "trial-x.json"]


UNTIL_STABLE_STEPS, UNTIL_STABLE_CAP, TOLERANCE = 6, 10, 0.25


@pytest.mark.slow
def test_until_stable_is_judged_on_rank_0_and_every_rank_stops_where_it_says():
    record = run_distributed(TrainPlan(**TINY), 2, steps=UNTIL_STABLE_STEPS, warmup=1, until_stable=TOLERANCE,
                             max_steps=UNTIL_STABLE_CAP, checkpoint=False, timeout_s=600)
    st, s = record.stability, record.summary
    measured = s.measured_steps
    assert st is not None and st.measured_steps == measured and st.max_steps == UNTIL_STABLE_CAP
    assert UNTIL_STABLE_STEPS <= measured <= UNTIL_STABLE_CAP
    assert [len(r.losses) for r in record.ranks] == [measured + 1] * 2  # every rank stopped at the same step
    # the rule, replayed on the merged (slowest-rank) times the record reports: it held first where the run stopped
    times = [m.step_time_s for m in record.measured]
    held = [k for k in range(UNTIL_STABLE_STEPS, measured + 1) if is_stable(times[:k], TOLERANCE)]
    if st.converged:
        assert held == [measured] and st.half_width <= TOLERANCE
    else:
        assert held == [] and measured == UNTIL_STABLE_CAP


def test_until_stable_with_nproc_reaches_the_launcher_checked():
    from gpuwork.measure.trial import TrialError

    with pytest.raises(TrialError, match="max_steps 3"):
        run_distributed(TrainPlan(**TINY), 2, steps=6, until_stable=0.1, max_steps=3)
