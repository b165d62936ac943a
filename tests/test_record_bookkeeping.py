"""A trial's bookkeeping costs the same at step 10 and step 1,000 (issue 21, item 5), and a killed trial keeps
every finished step.

The record's steps go to ``<run>.steps.jsonl``, one line appended per step; the record JSON (summary, status) is
rewritten at a bounded rate; the figures derived per step (median, interval, drift, peaks) are kept as the steps
come. Cost is counted in bytes written per step, not in time (speed: benchmarks/trial_bookkeeping.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_record_validation import make_record

from gpuwork.measure import records
from gpuwork.measure.record import (
    RunningSummary,
    TrialRecord,
    merge_step,
    step_line,
    steps_path,
    summarize,
)
from gpuwork.measure.recorder import RecordFile, write_record
from gpuwork.measure.stability import RunningStepTimes, step_time_stats

ROOT = Path(__file__).resolve().parents[1]


# -- the running figures are the figures -------------------------------------------------------------------------


def test_running_interval_and_drift_equal_the_batch_ones():
    rng = random.Random(7)
    running, times, steps = RunningStepTimes(), [], []
    for n in range(1, 700):
        t = rng.lognormvariate(-3, 0.4) * (1 + n / 2000)  # a slow drift, skewed noise
        times.append(t)
        steps.append(n + 2)
        running.add(t, n + 2)
        if n > 60 and n % 37:
            continue  # the batch figures cost O(n^2) each: checked at every count up to 60, then every 37th
        got, want = running.stats(), step_time_stats(times, steps)
        for name in ("median_s", "low_s", "high_s", "coverage", "half_width", "drift_per_100_steps"):
            a, b = getattr(got, name), getattr(want, name)
            assert (a is None) == (b is None), (n, name)
            if a is not None:
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (n, name, a, b)


def test_the_summary_is_the_steps_own_median_p90_mean_and_peaks():
    record = make_record(steps=40)
    measured = [m for m in record.steps if not m.is_warmup]
    times = sorted(m.step_time_s for m in measured)
    s = summarize(record.steps, "CPU")
    assert s.measured_steps == 40 and s.median_step_time_s == statistics.median(times)
    assert s.p90_step_time_s == pytest.approx(statistics.quantiles(times, n=10, method="inclusive")[-1])
    assert s.mean_step_time_s == pytest.approx(statistics.fmean(times)) and s.min_step_time_s == times[0]
    assert s.peak_trial_memory_bytes == max(m.trial_memory_bytes for m in measured)
    assert s.rss_peak_bytes == max(m.rss_peak_bytes for m in measured)
    assert s.warmup_mean_step_time_s == record.steps[0].step_time_s
    running = RunningSummary("CPU")
    for m in record.steps:
        running.add(m)
    assert running.summary() == s


# -- bytes written per step ---------------------------------------------------------------------------------------


def test_bytes_written_per_step_do_not_grow_with_the_step_count(tmp_path):
    base = make_record(steps=1)
    template = base.steps[-1]
    writer = RecordFile(tmp_path / "run.json", interval_s=0.0)  # the summary rewritten after every step
    writer.start()
    per_step = {}
    running = RunningSummary("CPU")
    for step in range(1, 1001):
        m = dataclasses.replace(template, step=step, step_time_s=0.1 + (step % 7) / 100, loss=5 + (step % 3) / 10)
        running.add(m)
        before = writer.bytes_written
        writer.append(m)
        writer.write(dataclasses.replace(base, steps=(), summary=running.summary()))
        per_step[step] = writer.bytes_written - before
    writer.close()
    # the step number's digits and the figures' own digits vary; the size does not follow the step count
    assert per_step[1000] <= per_step[10] + 40
    assert max(per_step[s] for s in range(900, 1001)) <= max(per_step[s] for s in range(10, 110)) + 40
    record_size = (tmp_path / "run.json").stat().st_size
    assert record_size < 10_000  # the JSON holds no step
    back = TrialRecord.from_json(tmp_path / "run.json")
    assert [m.step for m in back.steps] == list(range(1, 1001)) and back.summary == running.summary()


@pytest.mark.slow
def test_a_real_trial_writes_the_same_bytes_at_its_last_step_as_at_its_second(tmp_path, monkeypatch):
    from gpuwork.measure import recorder
    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    monkeypatch.setattr(recorder, "SUMMARY_INTERVAL_S", 0.0)  # the record JSON too, after every step
    written: list[int] = []
    real_append, real_write = records.append_bytes, records.write_file

    def append(fd, path, data):
        written[-1] += len(data)
        real_append(fd, path, data)

    def whole(path, fill):
        class Count:
            def __init__(self, f):
                self.f = f

            def write(self, data):
                if written:
                    written[-1] += len(data)
                return self.f.write(data)

            def __getattr__(self, name):
                return getattr(self.f, name)

        real_write(path, lambda f: fill(Count(f)))

    monkeypatch.setattr(records, "append_bytes", append)
    monkeypatch.setattr(records, "write_file", whole)
    plan = TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=8, batch_size=1, lora_r=4)
    written.append(0)
    record = run_trial(plan, steps=14, warmup=1, out_dir=tmp_path, device="cpu", checkpoint=False,
                       callbacks=[lambda m: written.append(0)])
    per_step = written[1:-1]  # bytes written while step 2 ... 15 was taken (a step's line, the record JSON)
    assert len(per_step) == 14 and all(b > 0 for b in per_step)
    # from the 6th measured step on the summary holds its interval: the same fields at every later step, so
    # only the digits of the figures differ, not the size with the step count
    assert max(per_step[-3:]) <= min(per_step[6:9]) + 60
    assert TrialRecord.from_json(Path(record.saved_to)).steps == record.steps


# -- a kill keeps every finished step -----------------------------------------------------------------------------

KILLED_TRIAL = """
import sys
from gpuwork.measure.trial import run_trial
from gpuwork.plan import TrainPlan
plan = TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=8, batch_size=1, lora_r=4)
run_trial(plan, steps=100000, warmup=1, out_dir=sys.argv[1], device="cpu", checkpoint=False,
          callbacks=[lambda m: print("done", m.step, flush=True)])
"""


def kill_after_steps(script: str, folder: Path, steps: int) -> list[int]:
    """Run ``script`` (given ``folder``) in a Python subprocess that prints "done <step>" after each step, SIGKILL it
    once ``steps`` steps are done; the steps it said were done."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", script, str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    finished: list[int] = []
    try:
        deadline = time.monotonic() + 600
        while len(finished) < steps and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("done "):
                finished.append(int(line.split()[1]))
        assert len(finished) >= steps, f"the run did not reach step {steps}"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return finished


@pytest.mark.slow
def test_sigkill_mid_run_keeps_every_finished_step_and_the_record_loads(tmp_path):
    finished = kill_after_steps(KILLED_TRIAL, tmp_path, 6)
    [path] = sorted(tmp_path.glob("*.json"))
    lines = [json.loads(x) for x in steps_path(path).read_text().splitlines() if x.endswith("}")]
    steps_in_file = [x["step"] for x in lines]
    assert steps_in_file == list(range(1, len(steps_in_file) + 1))
    assert set(finished) <= set(steps_in_file)  # a step is in the file before the caller hears of it
    record = TrialRecord.from_json(path)
    assert record.status == "running" and [m.step for m in record.steps] == steps_in_file
    assert record.summary.measured_steps == len(steps_in_file) - 1  # recomputed beyond the last summary
    assert record.summary == summarize(record.steps, "CPU")


def test_a_line_cut_short_by_a_kill_is_left_out(tmp_path):
    record = make_record(steps=5)
    path = write_record(record, tmp_path / "r.json")
    with open(steps_path(path), "ab") as f:
        f.write(step_line(record.steps[0])[:30])  # a write the kill interrupted
    assert TrialRecord.from_json(path).steps == record.steps


# -- older records, damaged steps files, groups ----------------------------------------------------------------


def test_a_record_written_the_old_way_with_its_steps_inside_loads(tmp_path):
    record = make_record(steps=6)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(record.as_dict(), indent=1))  # as gpuwork wrote every record before
    assert "steps_file" not in old.read_text() and not steps_path(old).exists()
    assert TrialRecord.from_json(old) == record
    new = write_record(record, tmp_path / "new.json")
    assert json.loads(new.read_text())["steps"] == [] and steps_path(new).is_file()
    assert TrialRecord.from_json(new) == record


def test_a_missing_or_short_steps_file_is_one_clear_error(tmp_path):
    from gpuwork.measure.errors import TrialError
    from gpuwork.present.messages import render

    record = make_record(steps=6)
    path = write_record(record, tmp_path / "r.json")
    lines = steps_path(path).read_text().splitlines(keepends=True)
    steps_path(path).write_text("".join(lines[:3]))
    with pytest.raises(TrialError) as caught:
        TrialRecord.from_json(path)
    assert "holds 3 steps, fewer than the 7 its record counts" in render(caught.value.msg, "en")
    steps_path(path).unlink()
    with pytest.raises(TrialError) as caught:
        TrialRecord.from_json(path)
    assert "copy the record together with its .steps.jsonl file" in render(caught.value.msg, "en")
    data = json.loads(path.read_text())
    data["steps_file"] = "../../etc/passwd"
    path.write_text(json.dumps(data))
    with pytest.raises(TrialError) as caught:
        TrialRecord.from_json(path)
    assert "not a file name in the record's own folder" in render(caught.value.msg, "en")
    with pytest.raises(TrialError):  # the text alone cannot hold the steps: said, not zero steps
        TrialRecord.from_json(path.read_text())


def test_a_group_record_keeps_each_ranks_figures_in_its_steps_file(tmp_path):
    from gpuwork.measure.record import ParallelInfo, merge_ranks, rank_result

    a = make_record(steps=5)
    b = dataclasses.replace(a, steps=tuple(dataclasses.replace(m, step_time_s=m.step_time_s * 2, loss=m.loss + 1)
                                           for m in a.steps))
    ranks = [rank_result(r, i, param_bytes=1, trainable_param_bytes=1, optimizer_state_bytes=0, params_sha256="")
             for i, r in enumerate((a, b))]
    info = ParallelInfo(world_size=2, backend="gloo", strategy="ddp", sharding_requested="none",
                        wrapping="DistributedDataParallel", reshard_after_forward=None, launcher="torchrun")
    merged = merge_ranks([a, b], ranks, info)
    assert merged.steps[2] == merge_step([a.steps[2], b.steps[2]])
    path = write_record(merged, tmp_path / "group.json")
    assert json.loads(path.read_text())["ranks"][1]["losses"] == []
    assert TrialRecord.from_json(path) == merged
