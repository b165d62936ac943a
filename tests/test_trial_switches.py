"""The plan's execution switches in a measured trial (gpuwork.measure.switches): tf32 and deterministic on during
every step (the checkpoint-restore run's too) and the caller's settings back afterwards; launch_blocking and
expandable_segments in the environment of the processes the CLI and torchrun start, and a notice in both
languages where a trial cannot apply them."""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

from gpuwork.measure import checkpoint as checkpoint_module
from gpuwork.measure import trial as trial_module
from gpuwork.measure.switches import CUBLAS_VARIABLE, execution_switches, startup_env, switch_notices
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """The trials here train: one torch thread (see conftest)."""


def tiny(**changes) -> TrainPlan:
    return TrainPlan(
        **{
            "model": "tiny-llama",
            "method": "full",
            "precision": "fp32",
            "seq_len": 32,
            "batch_size": 1,
            **changes,
        }
    )


def _state() -> tuple:
    return (
        torch.backends.cuda.matmul.allow_tf32,
        torch.get_float32_matmul_precision(),
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )


@pytest.fixture
def clean_env(monkeypatch):
    """The switches' variables unset here, and as they were after the test."""
    for name in (CUBLAS_VARIABLE, "CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_tf32_and_deterministic_are_on_in_every_step_and_the_callers_settings_come_back(
    monkeypatch, clean_env
):
    seen = []

    def spying(real):
        def step(*args, **kwargs):
            seen.append(_state())
            return real(*args, **kwargs)

        return step

    monkeypatch.setattr(trial_module, "train_step", spying(trial_module.train_step))
    monkeypatch.setattr(checkpoint_module, "train_step", spying(checkpoint_module.train_step))
    before = _state()
    assert before[:3] == (False, "highest", False)  # torch's defaults: what a plain kernel has
    record = trial_module.run_trial(tiny(tf32=True, deterministic=True), steps=1, warmup=0, device="cpu")
    assert record.fits and record.checkpoint is not None and record.checkpoint.verified
    assert len(seen) > 1  # the measured step and the checkpoint-restore run's steps
    assert all(s[:4] == (True, "high", True, True) and s[4] is False for s in seen)
    assert _state() == before
    assert record.environment.switches == ("deterministic", "tf32")
    again = trial_module.TrialRecord.from_dict(record.as_dict())  # the record keeps them
    assert again.environment.switches == ("deterministic", "tf32")


def test_a_plan_without_switches_changes_nothing_and_a_failing_block_still_restores(clean_env):
    before = _state()
    with execution_switches(tiny(), torch.device("cpu")):
        assert _state() == before
    with (
        pytest.raises(RuntimeError),
        execution_switches(tiny(tf32=True, deterministic=True), torch.device("cpu")),
    ):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.are_deterministic_algorithms_enabled()
        assert os.environ[CUBLAS_VARIABLE]  # set before cuBLAS starts, when it was unset
        raise RuntimeError("a step failed")
    assert _state() == before


def test_start_up_switches_go_into_the_environment_of_the_processes_started(clean_env):
    plan = tiny(launch_blocking=True, expandable_segments=True, deterministic=True)
    env = startup_env(plan, {"PATH": "/bin", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"})
    assert env["CUDA_LAUNCH_BLOCKING"] == "1" and env["PATH"] == "/bin"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128,expandable_segments:True"  # theirs kept
    assert env["PYTORCH_ALLOC_CONF"] == env["PYTORCH_CUDA_ALLOC_CONF"]  # newer torch reads this one first
    newer = startup_env(plan, {"PYTORCH_ALLOC_CONF": "expandable_segments:False,backend:native"})
    assert newer["PYTORCH_ALLOC_CONF"] == "backend:native,expandable_segments:True"
    assert switch_notices(plan, torch.device("cuda", 0), cuda_started=False, env=newer)[1] == []
    shadowed = {"PYTORCH_ALLOC_CONF": "backend:native", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert (
        switch_notices(
            tiny(expandable_segments=True), torch.device("cuda", 0), cuda_started=True, env=shadowed
        )[0]
        == []
    )  # torch reads PYTORCH_ALLOC_CONF: expandable segments are off
    assert env[CUBLAS_VARIABLE] == ":4096:8"
    assert (
        startup_env(plan, {CUBLAS_VARIABLE: ":16:8"})[CUBLAS_VARIABLE] == ":16:8"
    )  # a deterministic one stays
    assert startup_env(tiny(), {"PATH": "/bin"}) == {"PATH": "/bin"}  # no switch, nothing added
    # the torchrun launcher's ranks and the CLI's own process
    from gpuwork.cli.trial import startup_switches
    from gpuwork.measure.distributed import child_env

    ranks = child_env(plan)
    assert (
        ranks["CUDA_LAUNCH_BLOCKING"] == "1"
        and "expandable_segments:True" in ranks["PYTORCH_CUDA_ALLOC_CONF"]
    )
    assert "CUDA_LAUNCH_BLOCKING" not in child_env(tiny())
    cli: dict[str, str] = {}
    startup_switches(tiny(launch_blocking=True), cli)
    assert cli == {"CUDA_LAUNCH_BLOCKING": "1"}


def test_a_trial_that_cannot_apply_a_start_up_switch_says_so_in_both_languages():
    plan = tiny(launch_blocking=True, expandable_segments=True, tf32=True)
    cuda = torch.device("cuda", 0)
    applied, notices = switch_notices(plan, cuda, cuda_started=True, env={})
    assert applied == ["tf32"]
    assert [n["switch"] for n in notices] == ["expandable_segments", "launch_blocking"]
    en, ru = render(notices[1]), render(notices[1], "ru")
    assert "launch_blocking: CUDA_LAUNCH_BLOCKING=1 takes effect only when set before CUDA starts" in en
    assert "run `gpuwork trial ...` from a shell" in en
    assert "launch_blocking: CUDA_LAUNCH_BLOCKING=1 действует, только если задан до запуска CUDA" in ru
    assert "запустите `gpuwork trial ...` из командной строки" in ru
    started = startup_env(plan, {})  # what `gpuwork trial` and torchrun give the process
    assert switch_notices(plan, cuda, cuda_started=False, env=started) == (
        ["expandable_segments", "launch_blocking", "tf32"],
        [],
    )
    applied, notices = switch_notices(plan, torch.device("cpu"), cuda_started=False, env=started)
    assert applied == ["tf32"] and [n.code for n in notices] == ["trial.sub.switch_cpu"] * 2
    assert "has no effect on a CPU device" in render(notices[0])
    assert "не действует на CPU" in render(notices[0], "ru")
    late = switch_notices(tiny(deterministic=True), cuda, cuda_started=True, env={})[1]
    assert [n.code for n in late] == ["trial.sub.cublas_late"]
    assert "CUDA had already run in this process" in render(late[0])
    assert "CUDA в этом процессе уже работала" in render(late[0], "ru")


def test_the_record_shows_its_switches_and_the_start_up_notice_in_the_report_and_compare(clean_env):
    from gpuwork.cli.trial import format_compare, format_trial
    from gpuwork.measure.record import compare

    record = trial_module.run_trial(
        tiny(launch_blocking=True), steps=1, warmup=0, device="cpu", checkpoint=False
    )
    assert record.environment.switches == ()  # CPU: blocking launches mean nothing there
    assert [m.code for m in record.protocol.substitutions] == ["trial.sub.switch_cpu"]
    assert "launch_blocking (CUDA_LAUNCH_BLOCKING=1) has no effect on a CPU device" in format_trial(record)
    tf32 = trial_module.run_trial(tiny(tf32=True), steps=1, warmup=0, device="cpu", checkpoint=False)
    assert "execution switches: tf32" in format_trial(tf32)
    assert "переключатели выполнения: tf32" in format_trial(tf32, "ru")
    from gpuwork.present.tables import records_frame

    assert list(records_frame([record, tf32])["switches"]) == ["", "tf32"]
    table = format_compare(compare([record, tf32]), "ru")
    line = next(row for row in table.splitlines() if row.startswith("переключатели выполнения"))
    assert "нет" in line and "tf32" in line
    # the calibration prices the run the trial made: without the switch it could not apply, with the one it ran
    from gpuwork.measure.calibration import calibrate

    def on_h100(r):
        env = dataclasses.replace(
            r.environment,
            device="cuda:0",
            device_name="NVIDIA H100 80GB HBM3",
            device_total_bytes=81559 * 2**20,
            gpu_count=1,
        )
        return dataclasses.replace(r, environment=env)

    assert calibrate(on_h100(record)).plan["launch_blocking"] is False
    assert calibrate(on_h100(tf32)).plan["tf32"] is True
    hf_run = dataclasses.replace(
        on_h100(record), source="gpuwork.hf.GpuworkCallback"
    )  # the user's run set it
    assert calibrate(hf_run).plan["launch_blocking"] is True


@pytest.mark.slow
def test_each_torchrun_rank_runs_under_the_switches(clean_env):
    from gpuwork.measure.distributed import run_distributed

    plan = tiny(gpus=2, tf32=True, deterministic=True, launch_blocking=True)
    record = run_distributed(plan, 2, steps=1, warmup=0, checkpoint=False, timeout_s=300)
    assert record.fits and record.world_size == 2
    assert record.environment.switches == ("deterministic", "tf32")  # each rank's own trial turned them on
    assert "trial.sub.switch_cpu" in [m.code for m in record.protocol.substitutions]  # CPU ranks: no effect
