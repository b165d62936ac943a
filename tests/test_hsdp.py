"""HSDP (hybrid sharding): FSDP inside a shard group of one node, replicas across groups. Memory per GPU is
FSDP's over the group; per step the gathers and reduce-scatters stay on the node's NVLink and only each GPU's
gradient shard is all-reduced over the network (docs/communication.md 'HSDP')."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import advise
from gpuwork.estimate.comm import (
    ALL_GATHER,
    REDUCE_SCATTER,
    CommTraffic,
    Fabric,
    collective_s,
    comm_bytes_per_step,
    replica_all_reduce_s,
    replica_bytes_per_step,
    step_comm,
)
from gpuwork.facts.catalog import load_offers
from gpuwork.facts.configs import import_configs
from gpuwork.facts.network import load_comm_facts
from gpuwork.facts.resolve import resolve
from gpuwork.plan import HSDP_GROUP_GPUS, Sharding, TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory, estimate_time

FACTS = load_comm_facts()
FULL_8B = TrainPlan(model="llama-3.1-8b", method="full", seq_len=4096, gpus=2, sharding="fsdp")
MODEL_STATES = ("weights", "gradients", "optimizer_states")


def test_hsdp_on_16_gpus_keeps_fsdp_on_8_gpus_model_states_per_gpu():
    hsdp16 = estimate_memory(FULL_8B.replace(gpus=16, sharding="hsdp")).breakdown
    fsdp8 = estimate_memory(FULL_8B.replace(gpus=8)).breakdown
    fsdp16 = estimate_memory(FULL_8B.replace(gpus=16)).breakdown
    assert all(k in hsdp16 for k in MODEL_STATES)
    assert {k: hsdp16[k] for k in MODEL_STATES} == {k: fsdp8[k] for k in MODEL_STATES}
    # FSDP over all 16 GPUs halves them; HSDP does not (the gradients are freed at this peak: 0 in all three)
    for k in ("weights", "optimizer_states"):
        assert hsdp16[k] > 0 and 2 * fsdp16[k] == pytest.approx(hsdp16[k], abs=2)


def test_on_one_node_hsdp_is_fsdp():
    for n in (2, 8):
        fsdp, hsdp = FULL_8B.replace(gpus=n), FULL_8B.replace(gpus=n, sharding="hsdp")
        assert hsdp.shard_ranks == fsdp.shard_ranks == n
        assert estimate_memory(hsdp).breakdown == estimate_memory(fsdp).breakdown
        t_fsdp, t_hsdp = estimate_time(fsdp, "h100_sxm"), estimate_time(hsdp, "h100_sxm")
        assert t_hsdp.step_time_s == t_fsdp.step_time_s
        assert t_hsdp.comm.exposed_s == t_fsdp.comm.exposed_s > 0
        assert t_hsdp.comm.bytes_per_step == t_fsdp.comm.bytes_per_step


def _fabric(network_scale: float) -> Fabric:
    node = replace(FACTS.node_network("ib-ndr-400g"))
    node = replace(node, nic_bytes_s=node.nic_bytes_s * network_scale)
    return Fabric(intra_bytes_s=450e9, intra_efficiency=None, nvls=False, gpus_per_node=8, network=node)


def _traffic(gpus: int, ga: int = 2) -> CommTraffic:
    return CommTraffic(gpus=gpus, sharding=Sharding.HSDP, grad_accum=ga, units=32, grad_bytes=16e9,
                       gathered_bytes=16e9, params16_bytes=16e9)


def test_only_the_gradient_shard_all_reduce_crosses_the_network():
    # 32 GPUs, 4 nodes of 8: groups of 8, 4 replicas; each GPU all-reduces 16e9 / 8 = 2e9 gradient bytes,
    # sending 2 x 3/4 x 2e9 = 3e9 bytes to the other nodes per step, whatever the accumulation and gathers
    traffic = _traffic(32)
    assert replica_bytes_per_step(traffic) == pytest.approx(3e9)
    assert replica_bytes_per_step(replace(traffic, grad_accum=8, gathered_bytes=1e12)) == pytest.approx(3e9)
    inside = 7 / 8 * (2 * 16e9 * 2 + 16e9)  # gathers in forward and backward of 2 micro-batches + reduce-scatter
    assert comm_bytes_per_step(traffic)[0] == pytest.approx(inside + 3e9)
    slow, fast = _fabric(1.0), _fabric(4.0)
    t_slow = step_comm(FACTS, slow, traffic, forward_s=1.0, backward_s=2.0)
    t_fast = step_comm(FACTS, fast, traffic, forward_s=1.0, backward_s=2.0)
    node_only = replace(slow, network=None)
    ag = collective_s(FACTS, node_only, ALL_GATHER, 16e9 / 32, 8)
    rs = collective_s(FACTS, node_only, REDUCE_SCATTER, 16e9 / 32, 8)
    ar_slow = replica_all_reduce_s(FACTS, slow, 16e9 / 32 / 8, 4)
    ar_fast = replica_all_reduce_s(FACTS, fast, 16e9 / 32 / 8, 4)
    assert ar_slow == pytest.approx(4 * ar_fast, rel=0.05) and ar_slow > ar_fast > 0
    assert t_slow.total_s == pytest.approx(2 * 2 * 32 * ag + 32 * (rs + ar_slow))
    # a faster network shortens the all-reduces only
    assert t_slow.total_s - t_fast.total_s == pytest.approx(32 * (ar_slow - ar_fast))
    # long blocks: each micro-batch's first gather, the last reduce-scatter and the last all-reduce wait
    assert t_slow.exposed_s == pytest.approx(2 * ag + rs + ar_slow)


def test_a_ring_across_nodes_gets_the_nodes_nics_divided_by_its_gpus():
    # each GPU of a node runs its own replica ring: 8 rings share the node's NICs
    fab = _fabric(1.0)
    assert fab.network is not None
    size = 64 << 20
    ring = fab.network.node_bytes_s / 8
    curve = FACTS.curve_for("network-ring")
    half = curve.half_bytes * 4 / 8
    busbw = ring * curve.efficiency / (1 + (half / size) ** curve.exponent)
    assert replica_all_reduce_s(FACTS, fab, size, 4) == pytest.approx(2 * 3 / 4 * size / busbw)
    assert replica_all_reduce_s(FACTS, fab, size, 1) == 0.0


def test_over_several_nodes_hsdp_sends_less_and_steps_the_optimizer_on_one_groups_share():
    fsdp = estimate_time(FULL_8B.replace(gpus=32), "h100_sxm", nodes=4, network="ib-ndr-400g")
    hsdp = estimate_time(FULL_8B.replace(gpus=32, sharding="hsdp"), "h100_sxm", nodes=4, network="ib-ndr-400g")
    one_node = estimate_time(FULL_8B.replace(gpus=8), "h100_sxm")
    assert "HSDP" in hsdp.comm.strategy and "HSDP" not in fsdp.comm.strategy
    assert hsdp.comm.bytes_per_step < fsdp.comm.bytes_per_step
    # the optimizer updates an 8-way shard, as FSDP on one node of 8 does, not a 32-way one
    assert hsdp.optimizer_s == pytest.approx(one_node.optimizer_s) and hsdp.optimizer_s > fsdp.optimizer_s


def test_the_advisor_offers_hsdp_to_a_sharded_run_over_a_slow_network():
    # 32 GPUs in 4 nodes joined by 100 Gb/s Ethernet: FSDP gathers every block over the network, HSDP only
    # all-reduces gradient shards across it
    plan = FULL_8B.replace(gpus=32, dataset_tokens=10**9)
    slow = [o for o in load_offers() if str(o.network) == "ethernet-100g" and o.gpus_per_node == 8]
    assert slow
    suggestions = {s.key: s for s in advise(plan, slow, resolve(plan), limit=10).suggestions}
    assert "hsdp" in suggestions
    hsdp = suggestions["hsdp"]
    assert hsdp.plan.sharding is Sharding.HSDP and hsdp.plan.gpus == 32
    assert hsdp.time_change is not None and hsdp.time_change < 0
    en, ru = (render(hsdp.changes[0], lang) for lang in ("en", "ru"))
    assert "hsdp" in en and "32" in en and "8 GPUs" in en and "hsdp" in ru and "8 GPU" in ru
    # on one node there is nothing to offer: HSDP is FSDP there
    one_node = FULL_8B.replace(gpus=8, dataset_tokens=10**9)
    assert "hsdp" not in {s.key for s in advise(one_node, slow, resolve(one_node), limit=10).suggestions}


def test_the_shard_group_is_one_node():
    assert HSDP_GROUP_GPUS == 8
    assert FULL_8B.replace(gpus=64, sharding="hsdp").shard_ranks == 8
    assert FULL_8B.replace(gpus=64).shard_ranks == 64
    assert FULL_8B.replace(gpus=64, sharding="ddp").shard_ranks == 1
    assert Sharding.HSDP.shards_params and Sharding.HSDP.shards_gradients and Sharding.HSDP.shards_optimizer


def _read(tmp_path: Path, name: str, text: str) -> TrainPlan:
    path = tmp_path / name
    path.write_text(text)
    return import_configs([path]).plan(model="llama-3.1-8b")


ACCELERATE = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_sharding_strategy: {strategy}
{extra}mixed_precision: bf16
num_machines: 2
num_processes: 16
"""


@pytest.mark.parametrize(("strategy", "extra", "sharding"), [
    ("HYBRID_SHARD", "", "hsdp"),
    ("4", "", "hsdp"),
    ("FULL_SHARD", "", "fsdp"),
    ("HYBRID_SHARD_ZERO2", "", "zero2"),
    # FSDP2: hybrid sharding is a 2-D mesh of accelerate's ParallelismConfig
    ("FULL_SHARD", "  fsdp_version: 2\nparallelism_config:\n  parallelism_config_dp_replicate_size: 2\n"
                   "  parallelism_config_dp_shard_size: 8\n", "hsdp"),
    ("FULL_SHARD", "  fsdp_version: 2\nparallelism_config:\n  parallelism_config_dp_replicate_size: 1\n", "fsdp"),
])
def test_accelerate_hybrid_shard_reads_as_hsdp(tmp_path, strategy, extra, sharding):
    plan = _read(tmp_path, "accelerate.yaml", ACCELERATE.format(strategy=strategy, extra=extra))
    assert plan.sharding.value == sharding and plan.gpus == 16


@pytest.mark.parametrize(("name", "text"), [
    ("training_args.json", json.dumps({"fsdp": "hybrid_shard auto_wrap", "per_device_train_batch_size": 2})),
    ("llamafactory.yaml", "stage: sft\nfinetuning_type: full\ncutoff_len: 1024\nfsdp: hybrid_shard auto_wrap\n"),
    ("axolotl.yml", "base_model: meta-llama/Llama-3.1-8B\nsequence_len: 1024\nfsdp:\n  - hybrid_shard\n"
                    "  - auto_wrap\n"),
])
def test_the_trainer_fsdp_option_hybrid_shard_reads_as_hsdp(tmp_path, name, text):
    assert _read(tmp_path, name, text).sharding is Sharding.HSDP


def test_the_cli_takes_hsdp_and_refuses_an_unknown_sharding_naming_it(capsys):
    assert main(["estimate", "--model", "llama-3.1-8b", "--method", "full", "--gpus", "16", "--sharding", "hsdp",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "hsdp" in json.dumps(out)
    with pytest.raises(PlanError) as info:
        TrainPlan(model="llama-3.1-8b", sharding="hybrid")
    assert "hsdp" in str(info.value)
