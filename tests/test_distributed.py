"""Tests for gpuwork.measure.distributed: the trial as 2 processes under torchrun (gloo on CPU), DDP and FSDP2.

The two real runs (tiny-llama, seq 64, batch 2, 1 warm-up + 3 steps) take about 15 s each on a
2-core machine; everything else is pure. Timings are never asserted.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from gpuwork.measure.checkpoint import CPU_LOSS_RTOL, RESUME_STEPS
from gpuwork.measure.distributed import (
    _RankShard,
    free_port,
    merge_ranks,
    rank_main,
    run_distributed,
    strategy_for,
    torchrun_command,
)
from gpuwork.measure.trial import ParallelInfo, RankResult, StepMeasurement, TrialError, TrialRecord
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render


def plan(**changes) -> TrainPlan:
    base = dict(model="tiny-llama", method="full", precision="fp32", seq_len=64, batch_size=2, gpus=2)
    base.update(changes)
    return TrainPlan(**base)


# -- pure parts --------------------------------------------------------------------------------------------


def test_sharding_maps_to_ddp_or_fsdp2():
    assert strategy_for(plan(), "cpu").name == "ddp"
    for sharding in ("fsdp", "zero3"):
        s = strategy_for(plan(sharding=sharding), "cpu")
        assert (s.name, s.reshard_after_forward, s.substitutions) == ("fsdp2", True, ())
    zero2 = strategy_for(plan(sharding="zero2"), "cuda")
    assert zero2.reshard_after_forward is False and zero2.substitutions == (msg("trial.sub.zero2"),)
    assert "ZeRO-2-like" in render(zero2.substitutions[0])
    zero1 = strategy_for(plan(sharding="zero1"), "cuda").substitutions
    assert zero1 == (msg("trial.sub.zero1"),) and "no optimizer-only sharding" in render(zero1[0])
    offload = strategy_for(plan(sharding="fsdp", offload_params=True), "cpu")
    assert offload.substitutions == (msg("trial.sub.offload_cpu"),)
    assert "nothing to offload" in render(offload.substitutions[0])
    with pytest.raises(TrialError, match="use sharding='ddp'"):
        strategy_for(plan(method="qlora", sharding="fsdp"), "cuda")


def test_each_rank_gets_its_own_rows():
    rows = list(range(11))
    shards = [_RankShard(rows, r, 2) for r in range(2)]
    assert [len(s) for s in shards] == [5, 5]
    assert [s[i] for s in shards for i in range(len(s))] == [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]
    with pytest.raises(IndexError):
        shards[0][5]


def test_torchrun_command_binds_to_loopback_only(tmp_path):
    port = free_port()
    assert 0 < port < 65536
    cmd = torchrun_command(2, tmp_path / "spec.json", port=port, python="python3")
    assert cmd[:3] == ["python3", "-m", "torch.distributed.run"]
    assert cmd[cmd.index("--master-addr") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--master-port") + 1] == str(port)
    assert cmd[cmd.index("--nproc-per-node") + 1] == "2"
    assert cmd[-4:] == ["--module", "gpuwork.measure.distributed", "--spec", str(tmp_path / "spec.json")]


def test_bad_launch_arguments_are_refused():
    with pytest.raises(TrialError, match="nproc"):
        run_distributed(plan(), 0)
    with pytest.raises(TrialError, match="at least 2 processes"):
        run_distributed(plan(sharding="fsdp"), 1)
    with pytest.raises(TrialError, match="device"):
        run_distributed(plan(), 2, device="tpu")
    with pytest.raises(TrialError, match="qlora"):
        run_distributed(plan(method="qlora", sharding="fsdp"), 2)
    # the options every rank's trial checks, refused here before any process starts
    for option, value, code in (("steps", 0, "steps"), ("warmup", -1, "warmup"),
                                ("checkpoint_every", -1, "checkpoint_every"), ("memory_cap_bytes", 0, "memory_cap")):
        with pytest.raises(TrialError) as caught:
            run_distributed(plan(), 2, **{option: value})
        assert caught.value.msg.code == f"error.trial.{code}", option


def test_rank_main_outside_torchrun_says_how_to_run(tmp_path, monkeypatch, capsys):
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    spec = tmp_path / "spec.json"
    spec.write_text("{}")
    assert rank_main(["--spec", str(spec)]) == 2
    assert "gpuwork trial --nproc" in capsys.readouterr().err


def _step(n: int, time_s: float, loss: float, memory: int, warm: bool = False) -> StepMeasurement:
    return StepMeasurement(step=n, is_warmup=warm, loss=loss, step_time_s=time_s, data_wait_s=time_s / 10, tokens=128,
                           tokens_per_s=128 / time_s, grad_norm=1.5, learning_rate=1e-3, trial_memory_bytes=memory,
                           rss_peak_bytes=memory + 10)


@pytest.mark.slow
def test_merge_takes_the_slowest_rank_sums_tokens_and_averages_losses(ddp_fsdp):
    ddp, _ = ddp_fsdp
    base = TrialRecord.from_dict(ddp.as_dict())
    a = dataclasses.replace(base, steps=(_step(1, 1.0, 2.0, 100, warm=True), _step(2, 0.5, 2.0, 100),
                                         _step(3, 0.4, 1.0, 300)), parallel=None, ranks=())
    b = dataclasses.replace(base, steps=(_step(1, 2.0, 4.0, 200, warm=True), _step(2, 0.25, 3.0, 200),
                                         _step(3, 0.8, 2.0, 100)), parallel=None, ranks=())
    merged = merge_ranks([a, b], list(ddp.ranks), ddp.parallel)
    assert [s.step_time_s for s in merged.steps] == [2.0, 0.5, 0.8]
    assert [s.loss for s in merged.steps] == [3.0, 2.5, 1.5]
    assert [s.tokens for s in merged.steps] == [256] * 3
    assert [s.trial_memory_bytes for s in merged.steps] == [200, 200, 300]
    assert merged.steps[1].tokens_per_s == 256 / 0.5
    assert merged.summary.measured_steps == 2 and merged.summary.median_step_time_s == pytest.approx(0.65)
    assert merged.protocol.tokens_per_step == 2 * base.protocol.tokens_per_step
    assert merged.world_size == 2 and merged.fits


# -- two real processes ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ddp_fsdp(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    seen: list[StepMeasurement] = []
    ddp = run_distributed(plan(sharding="ddp"), 2, steps=3, warmup=1, out_dir=out / "ddp", callbacks=[seen.append],
                          timeout_s=300)
    fsdp = run_distributed(plan(sharding="fsdp"), 2, steps=3, warmup=1, timeout_s=300)
    assert [m.step for m in seen] == [1, 2, 3, 4]  # rank 0's steps streamed as they ran
    return ddp, fsdp


@pytest.mark.slow
def test_ddp_and_fsdp_finish_with_two_ranks(ddp_fsdp):
    for record, strategy, backend in zip(ddp_fsdp, ("ddp", "fsdp2"), ("gloo", "gloo"), strict=True):
        assert record.fits and record.error is None
        assert record.parallel.world_size == 2 and record.parallel.strategy == strategy
        assert record.parallel.backend == backend and "127.0.0.1" in record.parallel.launcher
        assert [r.rank for r in record.ranks] == [0, 1]
        assert record.summary.measured_steps == 3 and len(record.steps) == 4
        assert record.protocol.tokens_per_step == 2 * 2 * 64  # both ranks
        assert all(r.tokens_per_step == 128 and len(r.losses) == 4 for r in record.ranks)
        assert all(math.isfinite(x) for r in record.ranks for x in r.losses)
        step = record.steps[-1]
        assert step.step_time_s == max(r.step_times_s[-1] for r in record.ranks)
        assert step.loss == pytest.approx(sum(r.losses[-1] for r in record.ranks) / 2)
        assert record.checkpoint.verified, record.checkpoint.message
        assert record.checkpoint.resumed_losses == record.checkpoint.uninterrupted_losses  # bit-exact on CPU
        assert all(r.checkpoint_verified for r in record.ranks)
        assert ".metadata" in record.checkpoint.files and "__1_0.distcp" in record.checkpoint.files
        # the one round-trip of gpuwork.measure.checkpoint, as the one-process trial runs it
        assert {"scheduler.pt", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"} <= set(record.checkpoint.files)
        assert len(record.checkpoint.resumed_losses) == RESUME_STEPS and record.checkpoint.loss_rtol == CPU_LOSS_RTOL
        message = record.checkpoint.message
        assert message.code == "checkpoint.all_ranks" and message["ranks"] == 2
        assert message["what"].code == "checkpoint.verified_exact" and message["what"]["steps"] == RESUME_STEPS
        assert message["what"]["what"].code == "checkpoint.restored_fingerprints"
        assert render(message).endswith(f"the next {RESUME_STEPS} losses match the uninterrupted run bit-exact")
    assert "fully_shard on each of 4 decoder blocks + the root" in ddp_fsdp[1].parallel.wrapping


@pytest.mark.slow
def test_ddp_replicas_agree_and_the_ranks_see_different_data(ddp_fsdp):
    ddp, fsdp = ddp_fsdp
    r0, r1 = ddp.ranks
    assert r0.params_sha256 == r1.params_sha256  # DDP keeps the replicas identical
    assert r0.losses != r1.losses  # each rank trains on its own rows
    assert fsdp.ranks[0].params_sha256 != fsdp.ranks[1].params_sha256  # shards differ
    # the same init, data and math: the two strategies give the same losses, rank by rank
    for a, b in zip(ddp.ranks, fsdp.ranks, strict=True):
        assert a.losses[0] == b.losses[0]
        assert a.losses == pytest.approx(b.losses, rel=1e-5)


@pytest.mark.slow
def test_fsdp_holds_half_the_parameters_of_ddp_per_rank(ddp_fsdp):
    ddp, fsdp = ddp_fsdp
    for d, f in zip(ddp.ranks, fsdp.ranks, strict=True):
        assert f.param_bytes == pytest.approx(d.param_bytes / 2, rel=0.02)
        assert f.optimizer_state_bytes == pytest.approx(d.optimizer_state_bytes / 2, rel=0.02)
    assert ddp.ranks[0].param_bytes == 4 * ddp.protocol.params_total  # fp32, full replica


@pytest.mark.slow
def test_record_is_written_once_in_out_dir_and_round_trips(ddp_fsdp):
    ddp, fsdp = ddp_fsdp
    out = Path(ddp.saved_to).parent
    stem = Path(ddp.saved_to).stem
    # the record, its steps file and the checkpoint; the work folder removed
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}-checkpoint", f"{stem}.json", f"{stem}.steps.jsonl"]
    again = TrialRecord.from_json(Path(ddp.saved_to))
    assert again == ddp and again.ranks == ddp.ranks and again.parallel == ddp.parallel
    assert json.loads(Path(ddp.saved_to).read_text())["parallel"]["strategy"] == "ddp"
    assert fsdp.saved_to is None and fsdp.checkpoint.path is None
    assert ddp.label.endswith("2xddp") and fsdp.label.endswith("2xfsdp2")


@pytest.mark.slow
def test_rank_results_survive_json(ddp_fsdp):
    ddp, _ = ddp_fsdp
    r = ddp.ranks[0]
    assert RankResult(**{**dataclasses.asdict(r)}) == r
    assert ParallelInfo(**dataclasses.asdict(ddp.parallel)) == ddp.parallel


@pytest.mark.slow
def test_a_ranks_error_reaches_the_caller_as_a_coded_message(tmp_path):
    """A rank refuses the trial (its data file is missing): the launcher raises the rank's own message, which
    renders in either language."""
    with pytest.raises(TrialError) as info:
        run_distributed(plan(), 2, steps=1, warmup=0, data=tmp_path / "missing.txt", timeout_s=300)
    error = info.value.msg
    assert error.code == "error.trial.rank" and error["error"].code == "error.data.missing"
    assert str(info.value).endswith(f"data file '{tmp_path / 'missing.txt'}' does not exist: check the path")
    assert info.value.text("ru").endswith(f"файла данных '{tmp_path / 'missing.txt'}' нет: проверьте путь")
