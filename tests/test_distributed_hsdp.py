"""The measured trial runs HSDP as HSDP: FSDP2 on a 2-D DeviceMesh (replicate x shard) under torchrun.

Real torchrun, gloo on the CPU, tiny-llama (seq 32, batch 2, 1 warm-up + 2 steps): four processes as 2 shard
groups of 2 (the plan's ``shard_group_gpus=2``), as hsdp and hsdp-zero2, against the same four processes under
plain FSDP2. Each run takes
about 30-60 s on a 2-core machine; timings are never asserted.
"""

from __future__ import annotations

import pytest

from gpuwork.cli import main
from gpuwork.errors import PlanError
from gpuwork.measure.distributed import run_distributed, strategy_for
from gpuwork.measure.trial import compare
from gpuwork.plan import TrainPlan

TINY = dict(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2)
RUN = dict(steps=2, warmup=1, seed=5, timeout_s=600)


def plan(**changes) -> TrainPlan:
    return TrainPlan(**{**TINY, "gpus": 4, **changes})


# -- pure ---------------------------------------------------------------------------------------------------


def test_hybrid_shardings_map_to_fsdp2_on_a_replicate_by_shard_mesh():
    hsdp = strategy_for(plan(sharding="hsdp", shard_group_gpus=2), "cpu")
    assert (hsdp.name, hsdp.reshard_after_forward, hsdp.hybrid_mesh, hsdp.substitutions) == ("fsdp2", True, (2, 2), ())
    zero2 = strategy_for(plan(sharding="hsdp-zero2", shard_group_gpus=2), "cpu")
    assert (zero2.reshard_after_forward, zero2.hybrid_mesh, zero2.substitutions) == (False, (2, 2), ())
    # one group holds every GPU (the default group of 8 on 4): one replica; groups of one GPU: pure replication
    assert strategy_for(plan(sharding="hsdp"), "cpu").hybrid_mesh == (1, 4)
    assert strategy_for(plan(sharding="hsdp", shard_group_gpus=1), "cpu").hybrid_mesh == (4, 1)
    assert strategy_for(plan(sharding="fsdp"), "cpu").hybrid_mesh is None


def test_a_group_that_does_not_divide_the_processes_is_refused_before_any_process_starts(tmp_path, capsys):
    out = tmp_path / "never"
    six = plan(gpus=6, sharding="hsdp", shard_group_gpus=3)  # a valid plan, run on 4 processes
    with pytest.raises(PlanError) as info:
        run_distributed(six, 4, steps=1, warmup=0, out_dir=out)
    assert info.value.field == "shard_group_gpus"
    assert info.value.msg.code == "error.plan.shard_group" and info.value.msg["gpus"] == 4
    assert "shard_group_gpus=3 does not divide gpus=4" in str(info.value)
    assert "shard_group_gpus=3 не делит gpus=4" in info.value.text("ru")
    assert not out.exists()  # nothing launched, no folder made
    flags = ["trial", "--model", "tiny-llama", "--method", "full", "--precision", "fp32", "--seq-len", "32",
             "--batch-size", "2", "--nproc", "4", "--sharding", "hsdp", "--shard-group", "3", "--no-progress",
             "--steps", "1", "--warmup", "0", "--out", str(out)]
    for lang, words in (("en", "does not divide gpus=4"), ("ru", "не делит gpus=4")):
        assert main([*flags, "--lang", lang]) != 0
        captured = capsys.readouterr()
        assert words in captured.err and "Traceback" not in captured.err
    assert not out.exists()


def test_the_compare_row_says_how_each_record_ran():
    """The "sharding (as run)" row of gpuwork compare, from each record's ``parallel`` (a written record)."""
    from dataclasses import replace
    from pathlib import Path

    from gpuwork.cli.trial import format_compare
    from gpuwork.measure.trial import ParallelInfo, TrialRecord

    one = TrialRecord.from_json(Path(__file__).parent / "data" / "trial_record_own_run.json")
    base = dict(world_size=2, backend="gloo", wrapping="", launcher="torchrun")

    def ran(**given):
        return replace(one, parallel=ParallelInfo(**{**base, **given}))

    records = [one, ran(strategy="ddp", sharding_requested="ddp", reshard_after_forward=None),
               ran(strategy="fsdp", sharding_requested="", reshard_after_forward=None),  # a Trainer's FSDP1
               ran(strategy="fsdp2", sharding_requested="zero2", reshard_after_forward=False, mesh_shape=(2,),
                   mesh_dim_names=("shard",)),
               ran(strategy="fsdp2", sharding_requested="hsdp", reshard_after_forward=True, mesh_shape=(2, 1),
                   mesh_dim_names=("replicate", "shard"))]
    rows = compare(records)
    assert [r["mesh_shape"] for r in rows] == [None, None, None, (2,), (2, 1)]
    expected = {"en": ["-", "ddp: DDP, 2 full replicas", "fsdp: fsdp over 2 ranks",
                       "zero2: FSDP2 over 2 ranks, parameters kept gathered until backward ends",
                       "hsdp: FSDP2 on a mesh of 2 replicas x 1 shard, parameters resharded after forward"],
                "ru": ["-", "ddp: DDP, 2 полные реплики", "fsdp: fsdp на 2 процессах",
                       "zero2: FSDP2 на 2 процессах, параметры остаются собранными до конца обратного прохода",
                       "hsdp: FSDP2 на сетке 2 реплики × 1 шард, параметры снова шардируются после прямого прохода"]}
    for lang, cells in expected.items():
        line = next(x for x in format_compare(rows, lang).splitlines() if x.startswith(("sharding", "шардирование")))
        assert [c.strip() for c in line.split("  ") if c.strip()][1:] == cells
    assert records[-1].label.endswith(" 2xfsdp2(2x1)") and records[3].label.endswith(" 2xfsdp2")


def test_the_trial_summary_names_the_mesh():
    """`gpuwork trial`'s header line says replicas x shards for a 2-D mesh, the strategy alone otherwise."""
    from dataclasses import replace
    from pathlib import Path

    from gpuwork.cli.trial import format_trial
    from gpuwork.measure.trial import ParallelInfo, TrialRecord

    one = TrialRecord.from_json(Path(__file__).parent / "data" / "trial_record_own_run.json")
    base = dict(world_size=4, backend="gloo", wrapping="", launcher="torchrun", strategy="fsdp2")
    hsdp = replace(one, parallel=ParallelInfo(**base, sharding_requested="hsdp", reshard_after_forward=True,
                                              mesh_shape=(2, 2), mesh_dim_names=("replicate", "shard")))
    flat = replace(one, parallel=ParallelInfo(**base, sharding_requested="fsdp", reshard_after_forward=True,
                                              mesh_shape=(4,), mesh_dim_names=("shard",)))
    assert "4 processes (fsdp2 on 2 replicas x 2 shards, gloo)" in format_trial(hsdp, "en")
    assert "4 процесса (fsdp2 на сетке 2 реплики × 2 шарда, gloo)" in format_trial(hsdp, "ru")
    assert "4 processes (fsdp2, gloo)" in format_trial(flat, "en")


# -- four real processes ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fsdp_hsdp():
    fsdp = run_distributed(plan(sharding="fsdp"), 4, checkpoint=False, **RUN)
    hsdp = run_distributed(plan(sharding="hsdp", shard_group_gpus=2), 4, **RUN)
    zero2 = run_distributed(plan(sharding="hsdp-zero2", shard_group_gpus=2), 4, checkpoint=False, **RUN)
    return fsdp, hsdp, zero2


@pytest.mark.slow
def test_hsdp_runs_on_a_2x2_mesh_and_the_record_names_it(fsdp_hsdp):
    fsdp, hsdp, zero2 = fsdp_hsdp
    assert hsdp.fits and hsdp.error is None and hsdp.world_size == 4
    par = hsdp.parallel
    assert (par.strategy, par.sharding_requested, par.reshard_after_forward) == ("fsdp2", "hsdp", True)
    assert par.mesh_shape == (2, 2) and par.mesh_dim_names == ("replicate", "shard")
    assert "mesh 2 replicate x 2 shard" in par.wrapping
    z = zero2.parallel  # the same mesh, parameters kept gathered from forward to the end of backward
    assert (z.sharding_requested, z.reshard_after_forward, z.mesh_shape) == ("hsdp-zero2", False, (2, 2))
    assert "reshard_after_forward=False, mesh 2 replicate x 2 shard" in z.wrapping and not zero2.protocol.substitutions
    assert fsdp.parallel.mesh_shape == (4,) and fsdp.parallel.mesh_dim_names == ("shard",)
    assert hsdp.label.endswith("4xfsdp2(2x2)") and fsdp.label.endswith("4xfsdp2")
    # the distributed checkpoint round-trip works on the 2-D mesh
    assert hsdp.checkpoint.verified, hsdp.checkpoint.message


@pytest.mark.slow
def test_each_hsdp_rank_holds_half_the_parameters_and_replicas_hold_the_same_half(fsdp_hsdp):
    fsdp, hsdp, zero2 = fsdp_hsdp
    full = 4 * hsdp.protocol.params_total  # fp32 bytes of one whole copy
    for f, h, z in zip(fsdp.ranks, hsdp.ranks, zero2.ranks, strict=True):
        assert h.param_bytes == pytest.approx(full / 2, rel=0.02)  # a group of 2 shards: 1/2, not 1/4
        assert z.param_bytes == h.param_bytes  # sharded the same between steps
        assert f.param_bytes == pytest.approx(full / 4, rel=0.02)
        assert h.optimizer_state_bytes == pytest.approx(2 * f.optimizer_state_bytes, rel=0.02)
    sha = [r.params_sha256 for r in hsdp.ranks]
    # ranks 0, 1 are shard group 0 and ranks 2, 3 group 1: the same shard position holds the same values
    assert sha[0] == sha[2] and sha[1] == sha[3] and sha[0] != sha[1]


@pytest.mark.slow
def test_hsdp_losses_match_plain_fsdp_on_the_same_data(fsdp_hsdp):
    fsdp, hsdp, zero2 = fsdp_hsdp
    for f, h, z in zip(fsdp.ranks, hsdp.ranks, zero2.ranks, strict=True):
        assert len(h.losses) == 3 and h.losses[0] == f.losses[0]  # same init and rows before any update
        assert h.losses == pytest.approx(f.losses, rel=1e-5)
        assert z.losses == pytest.approx(f.losses, rel=1e-5)
    assert hsdp.ranks[0].losses != hsdp.ranks[1].losses  # every rank trains on its own rows


@pytest.mark.slow
def test_compare_shows_the_mesh_and_the_resharding(fsdp_hsdp):
    from gpuwork.cli.trial import format_compare

    fsdp, hsdp, zero2 = fsdp_hsdp
    rows = compare([fsdp, hsdp, zero2])
    assert [r["mesh_shape"] for r in rows] == [(4,), (2, 2), (2, 2)]
    assert [r["sharding"] for r in rows] == ["fsdp", "hsdp", "hsdp-zero2"]
    en, ru = (format_compare(rows, lang) for lang in ("en", "ru"))
    assert "hsdp: FSDP2 on a mesh of 2 replicas x 2 shards, parameters resharded after forward" in en
    assert "fsdp: FSDP2 over 4 ranks, parameters resharded after forward" in en
    assert "hsdp-zero2: FSDP2 on a mesh of 2 replicas x 2 shards, parameters kept gathered until backward ends" in en
    assert "hsdp: FSDP2 на сетке 2 реплики × 2 шарда, параметры снова шардируются после прямого прохода" in ru
