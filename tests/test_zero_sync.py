"""TrainPlan.zero_sync: nanotron's sliced ZeRO-1 (docs/communication.md 'Sliced ZeRO-1'). The numbers are rebuilt
from the stated rule with the module's own collective times and the eager-launch rate of kernels.csv."""

from __future__ import annotations

import json

import pytest

from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.estimate.comm import (
    ALL_GATHER,
    ALL_REDUCE,
    REDUCE_SCATTER,
    ZERO_BUCKET_ELEMENTS,
    CommTraffic,
    Fabric,
    collective_s,
    comm_bytes_per_step,
    sliced_copies,
    step_comm,
)
from gpuwork.facts.network import load_comm_facts
from gpuwork.facts.rates import load_rates
from gpuwork.plan import CommOverlap, Sharding, TrainPlan, ZeroSync
from gpuwork.sizing import estimate_time

FACTS = load_comm_facts()
FAB = Fabric(intra_bytes_s=450e9, intra_efficiency=None, nvls=False, gpus_per_node=8, network=None)
PARAMS = 1.24e9  # elements; fp32 gradients, bf16 parameters


def _traffic(tensors: int, gpus: int = 8) -> CommTraffic:
    return CommTraffic(gpus=gpus, sharding=Sharding.ZERO1, grad_accum=4, units=16, grad_bytes=PARAMS * 4,
                       gathered_bytes=PARAMS * 2, params16_bytes=PARAMS * 2, sliced_tensors=tensors)


def test_sliced_sync_all_reduces_the_whole_gradient_and_gathers_once_all_exposed():
    t = step_comm(FACTS, FAB, _traffic(147), forward_s=1.0, backward_s=2.0)
    want = collective_s(FACTS, FAB, ALL_REDUCE, PARAMS * 4, 8) + collective_s(FACTS, FAB, ALL_GATHER, PARAMS * 2, 8)
    assert t.total_s == pytest.approx(want) and t.exposed_s == pytest.approx(want)
    # DeepSpeed's bucketed sync of the same traffic reduce-scatters: half the gradient bytes on the wire
    bucketed = step_comm(FACTS, FAB, _traffic(0), forward_s=1.0, backward_s=2.0)
    buckets = -(-PARAMS // ZERO_BUCKET_ELEMENTS)
    rs = buckets * collective_s(FACTS, FAB, REDUCE_SCATTER, PARAMS * 4 / buckets, 8)
    assert bucketed.total_s == pytest.approx(rs + collective_s(FACTS, FAB, ALL_GATHER, PARAMS * 2 / buckets, 8)
                                             * buckets)
    assert t.total_s > bucketed.total_s
    assert comm_bytes_per_step(_traffic(147))[0] == pytest.approx(7 / 8 * (2 * PARAMS * 4 + PARAMS * 2))


def test_copies_are_one_per_tensor_and_rank_plus_two_per_rank():
    assert sliced_copies(_traffic(147, gpus=256)) == 256 * 149
    assert sliced_copies(_traffic(0, gpus=256)) == 0


def test_a_plan_states_it_and_the_copies_grow_with_the_gpus():
    rates = load_rates()
    launch_s = rates.kernel("launch_overhead_eager_nograd_us") * 1e-6
    base = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", gpus=64, batch_size=1,
                     seq_len=4096, grad_accum=4, sharding="zero1", stack="framework", attention="flash")
    for gpus in (64, 256):
        plan = base.replace(gpus=gpus)
        buckets = estimate_time(plan, "h100_sxm", nodes=gpus // 8, network="aws-p5")
        sliced = estimate_time(plan.replace(zero_sync="sliced"), "h100_sxm", nodes=gpus // 8, network="aws-p5")
        # llama-3.2-1b: 16 blocks of 7 linears and 2 norms, plus embedding, final norm and a tied head (3)
        copies_s = gpus * (16 * 9 + 3 + 2) * launch_s
        assert sliced.comm.exposed_s == pytest.approx(sliced.comm.comm_s)
        assert sliced.comm.exposed_s > buckets.comm.exposed_s + copies_s
        assert sliced.step_time_s > buckets.step_time_s + copies_s
    assert 256 * 149 * launch_s == pytest.approx(0.275, rel=0.01)  # at 7.2 us a launch: over a quarter second


def test_only_zero1_with_its_default_overlap_takes_it_in_both_languages():
    assert TrainPlan(gpus=8, sharding="zero1", zero_sync="sliced").zero_sync is ZeroSync.SLICED
    for fields in ({"sharding": "ddp"}, {"sharding": "zero2"}, {"sharding": "zero1", "comm_overlap": "on"}):
        with pytest.raises(PlanError) as err:
            TrainPlan(gpus=8, zero_sync="sliced", **fields)
        assert err.value.field == "zero_sync" and err.value.msg.code == "error.plan.zero_sync_sharding"
    for lang, words in (("en", "nanotron's ZeRO-1"), ("ru", "ZeRO-1 в nanotron")):
        assert "zero_sync='sliced'" in err.value.text(lang) and words in err.value.text(lang)


def test_a_sweep_out_of_zero1_drops_it_and_the_plan_round_trips():
    plan = TrainPlan(gpus=8, sharding="zero1", zero_sync="sliced")
    assert plan.replace(sharding="ddp").zero_sync is ZeroSync.BUCKETS
    assert plan.replace(gpus=16).zero_sync is ZeroSync.SLICED
    assert plan.single_gpu().zero_sync is ZeroSync.BUCKETS
    assert TrainPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan
    assert plan.comm_overlap is CommOverlap.DEFAULT


def test_the_cli_flag_sets_it():
    args = build_parser().parse_args(["estimate", "--gpus", "8", "--sharding", "zero1", "--zero-sync", "sliced"])
    assert plan_from_args(args).zero_sync is ZeroSync.SLICED
