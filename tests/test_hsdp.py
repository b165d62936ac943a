"""HSDP (hybrid sharding): FSDP inside a shard group (one node by default, shard_group_gpus), replicas across
groups. Memory per GPU is FSDP's over the group; per step the gathers and reduce-scatters stay on the node's NVLink
(or cross the network when the group spans nodes) and only each GPU's gradient shard is all-reduced between groups.
HSDP-ZeRO2 (_HYBRID_SHARD_ZERO2) keeps the weights whole from forward to the end of backward: no gather in backward
(docs/communication.md 'HSDP')."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import advise, hybrid_groups
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
from gpuwork.plan import HSDP_GROUP_GPUS, Sharding, TrainPlan, even_groups
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
    # 4x the rate: 4x the bytes in the same time, the latency in seconds unchanged (docs/communication.md)
    assert replica_all_reduce_s(FACTS, fast, 4 * 16e9 / 32 / 8, 4) == pytest.approx(ar_slow)
    assert 4 * ar_fast > ar_slow > ar_fast > 0
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
    assert curve.half_s is not None
    # the curve's latency in seconds, carried to the ring's share of the NICs
    half = curve.half_s * ring * curve.efficiency * 4 / 8
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
    assert "hsdp_g8" in suggestions  # shard groups of one node
    hsdp = suggestions["hsdp_g8"]
    assert hsdp.plan.sharding is Sharding.HSDP and hsdp.plan.gpus == 32 and hsdp.plan.shard_group_gpus == 8
    assert hsdp.time_change is not None and hsdp.time_change < 0
    en, ru = (render(hsdp.changes[0], lang) for lang in ("en", "ru"))
    assert "hsdp" in en and "32" in en and "groups of 8 GPUs" in en and "hsdp" in ru and "по 8 GPU" in ru
    # on one node there is nothing to offer: HSDP is FSDP there
    one_node = FULL_8B.replace(gpus=8, dataset_tokens=10**9)
    assert not any(s.plan.sharding.hybrid for s in advise(one_node, slow, resolve(one_node), limit=10).suggestions)


def test_the_shard_group_is_one_node_by_default():
    assert HSDP_GROUP_GPUS == 8 == TrainPlan().shard_group_gpus
    assert FULL_8B.replace(gpus=64, sharding="hsdp").shard_ranks == 8
    assert FULL_8B.replace(gpus=64, sharding="hsdp-zero2").shard_ranks == 8
    assert FULL_8B.replace(gpus=64, sharding="hsdp", shard_group_gpus=16).shard_ranks == 16
    assert FULL_8B.replace(gpus=4, sharding="hsdp").shard_ranks == 4  # fewer GPUs than a node: one group
    assert FULL_8B.replace(gpus=64, shard_group_gpus=16).shard_ranks == 64  # read by the hybrid shardings only
    assert FULL_8B.replace(gpus=64).shard_ranks == 64
    assert FULL_8B.replace(gpus=64, sharding="ddp").shard_ranks == 1
    assert Sharding.HSDP.shards_params and Sharding.HSDP.shards_gradients and Sharding.HSDP.shards_optimizer
    zero2 = Sharding.HSDP_ZERO2
    assert not zero2.shards_params and zero2.shards_gradients and zero2.shards_optimizer and zero2.hybrid


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
    ("HYBRID_SHARD_ZERO2", "", "hsdp-zero2"),
    ("5", "", "hsdp-zero2"),
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


# -- the shard group's size (TrainPlan.shard_group_gpus) ---------------------------------------------------------

FULL_70B = TrainPlan(model="llama-3.1-70b", method="full", seq_len=4096, gpus=16, sharding="hsdp",
                     grad_checkpointing=True)


@pytest.mark.parametrize("group", [2, 4, 8, 16])
def test_model_states_per_gpu_divide_by_the_shard_group(group):
    # HSDP over 16 GPUs in groups of g holds what FSDP over g GPUs holds: the states / g
    hsdp = estimate_memory(FULL_8B.replace(gpus=16, sharding="hsdp", shard_group_gpus=group))
    fsdp = estimate_memory(FULL_8B.replace(gpus=group))
    assert hsdp.plan.shard_ranks == group and hsdp.plan.gpus // group == 16 // group
    assert {k: hsdp.breakdown[k] for k in MODEL_STATES} == {k: fsdp.breakdown[k] for k in MODEL_STATES}
    whole = estimate_memory(FULL_8B.replace(gpus=16, sharding="ddp")).breakdown["optimizer_states"]
    assert hsdp.breakdown["optimizer_states"] == pytest.approx(whole / group, abs=1)


def test_a_shard_group_that_does_not_divide_the_gpus_is_refused_naming_the_fix():
    with pytest.raises(PlanError) as info:
        FULL_8B.replace(gpus=12, sharding="hsdp")  # the default group of 8 does not divide 12
    assert info.value.field == "shard_group_gpus"
    en, ru = info.value.text("en"), info.value.text("ru")
    assert "shard_group_gpus=8" in en and "gpus=12" in en and "--shard-group" in en and "2, 3, 4, 6, 12" in en
    assert "не делит" in ru and "--shard-group" in ru and "2, 3, 4, 6, 12" in ru
    with pytest.raises(PlanError) as info:
        FULL_8B.replace(gpus=16, sharding="hsdp-zero2", shard_group_gpus=6)
    assert "shard_group_gpus=6" in str(info.value) and "hsdp-zero2" in str(info.value)
    with pytest.raises(PlanError) as info:
        FULL_8B.replace(gpus=16, sharding="hsdp", shard_group_gpus=0)
    assert info.value.field == "shard_group_gpus"
    assert FULL_8B.replace(gpus=12, sharding="hsdp", shard_group_gpus=4).shard_ranks == 4
    # other shardings do not read it: fsdp on 12 GPUs keeps the default group
    assert FULL_8B.replace(gpus=12).shard_ranks == 12


def test_one_divisor_list_serves_the_plans_fix_and_the_advisors_groups():
    # plan.even_groups: the sizes n GPUs split into evenly, from 2 up to n (one group of all, last)
    assert even_groups(12) == (2, 3, 4, 6, 12) and even_groups(7) == (7,) and even_groups(1) == ()
    for n in range(2, 130):
        groups = even_groups(n)
        assert groups[-1] == n and list(groups) == sorted(set(groups)) and all(n % g == 0 for g in groups)
    # the advisor tries only those groups, never the one group of all (plain FSDP)
    for gpus in (12, 16, 48, 128):
        assert set(hybrid_groups(gpus, 8, lambda g: True)) <= set(even_groups(gpus)[:-1])
    assert hybrid_groups(7, 8, lambda g: True) == ()  # 7 GPUs split evenly only into one group of 7
    with pytest.raises(PlanError) as info:
        FULL_8B.replace(gpus=36, sharding="hsdp")
    assert "2, 3, 4, 6, 9, 12, 18, 36" in info.value.text("en")  # the fix lists the same sizes (first 8)


def test_a_shard_group_spanning_two_nodes_is_slower_than_one_inside_a_node():
    # 32 GPUs in 4 nodes of 8: groups of 16 gather over the network between two nodes, groups of 8 over NVLink
    def step(group: int) -> float:
        plan = FULL_8B.replace(gpus=32, sharding="hsdp", shard_group_gpus=group)
        return estimate_time(plan, "h100_sxm", nodes=4, network="ethernet-100g").step_time_s

    assert step(16) > step(8)
    # the group's collectives priced as FSDP's across nodes: its gathers bounded by the network
    traffic = replace(_traffic(32), shard_group=16)
    fab = _fabric(0.25)  # a node's NICs together at a quarter of 8 x 400 Gb/s: below NVLink
    t16 = step_comm(FACTS, fab, traffic, forward_s=1.0, backward_s=2.0)
    ag16 = collective_s(FACTS, fab, ALL_GATHER, 16e9 / 32, 16)
    rs16 = collective_s(FACTS, fab, REDUCE_SCATTER, 16e9 / 32, 16)
    ar = replica_all_reduce_s(FACTS, fab, 16e9 / 32 / 16, 2, 16)
    assert t16.total_s == pytest.approx(2 * 2 * 32 * ag16 + 32 * (rs16 + ar))
    assert ag16 > collective_s(FACTS, replace(fab, network=None), ALL_GATHER, 16e9 / 32, 16)


def test_a_shard_group_smaller_than_a_node_shares_the_nodes_nics_among_fewer_rings():
    # groups of 4 on nodes of 8: 4 replica rings leave each node, each with a quarter of its NICs
    fab = _fabric(1.0)
    assert fab.network is not None
    size = 64 << 20
    curve = FACTS.curve_for("network-ring")
    assert curve.half_s is not None
    plateau = fab.network.node_bytes_s / 4 * curve.efficiency
    busbw = plateau / (1 + (curve.half_s * plateau * 8 / 8 / size) ** curve.exponent)
    assert replica_all_reduce_s(FACTS, fab, size, 8, 4) == pytest.approx(2 * 7 / 8 * size / busbw)


# -- HSDP-ZeRO2 (_HYBRID_SHARD_ZERO2) ------------------------------------------------------------------------------

def test_hsdp_zero2_holds_whole_weights_and_sharded_gradients_and_optimizer_states():
    # between steps the weights are sharded as under hsdp; from forward to the end of backward every block stays
    # gathered (reshard_after_forward=False), so the peak holds the whole 16-bit model besides the shard
    hsdp = estimate_memory(FULL_70B)
    zero2 = estimate_memory(FULL_70B.replace(sharding="hsdp-zero2"))
    single = estimate_memory(FULL_70B.single_gpu()).breakdown
    z, h = zero2.breakdown, hsdp.breakdown
    assert z["weights"] == h["weights"] == pytest.approx(single["weights"] / 8, abs=1)
    assert z["sharding_buffers"] >= 0.95 * single["weights"] > h["sharding_buffers"]
    assert z["weights"] + z["sharding_buffers"] > h["weights"] + h["sharding_buffers"]
    assert zero2.device_total_bytes > hsdp.device_total_bytes
    assert z["optimizer_states"] == h["optimizer_states"] == pytest.approx(single["optimizer_states"] / 8, abs=1)
    # a larger group divides the optimizer states further, not the gathered weights
    wide = estimate_memory(FULL_70B.replace(sharding="hsdp-zero2", shard_group_gpus=16)).breakdown
    assert wide["sharding_buffers"] == pytest.approx(z["sharding_buffers"], rel=0.01)
    assert wide["optimizer_states"] < z["optimizer_states"]


def test_hsdp_zero2_memory_matches_a_fake_process_group_trace():
    # FSDP2 fully_shard(reshard_after_forward=False) over one shard group of fake ranks (torch FSDPMemTracker)
    from gpuwork.measure.accuracy import compare_with_trace
    from gpuwork.measure.trace import trace_memory

    plan = TrainPlan(model="tiny-llama", method="full", precision="bf16", batch_size=2, seq_len=256, gpus=4,
                     sharding="hsdp-zero2", shard_group_gpus=2)
    kept, resharded = trace_memory(plan), trace_memory(plan.replace(sharding="hsdp"))
    assert kept.breakdown["parameters"] == resharded.breakdown["parameters"]  # the shards
    assert kept.breakdown["sharding_buffers"] > resharded.breakdown["sharding_buffers"]  # the gathered blocks
    assert abs(compare_with_trace(plan)["error"]) < 0.02


def test_hsdp_zero2_does_not_gather_again_in_backward():
    traffic = replace(_traffic(32), sharding=Sharding.HSDP_ZERO2)
    fab = _fabric(1.0)
    node_only = replace(fab, network=None)
    ag = collective_s(FACTS, node_only, ALL_GATHER, 16e9 / 32, 8)
    rs = collective_s(FACTS, node_only, REDUCE_SCATTER, 16e9 / 32, 8)
    ar = replica_all_reduce_s(FACTS, fab, 16e9 / 32 / 8, 4)
    zero2 = step_comm(FACTS, fab, traffic, forward_s=1.0, backward_s=2.0)
    hsdp = step_comm(FACTS, fab, _traffic(32), forward_s=1.0, backward_s=2.0)
    assert zero2.total_s == pytest.approx(2 * 32 * ag + 32 * (rs + ar))  # forward gathers of 2 micro-batches
    assert hsdp.total_s - zero2.total_s == pytest.approx(2 * 32 * ag)
    # fewer bytes: one gather per micro-batch instead of two
    assert comm_bytes_per_step(traffic)[0] == pytest.approx(7 / 8 * (16e9 * 2 + 16e9) + 3e9)
    assert "HSDP-ZeRO2" in comm_bytes_per_step(traffic)[1]
    # the whole estimate: less communication in backward, so no longer a step
    t_hsdp = estimate_time(FULL_70B, "h100_sxm", nodes=2, network="ethernet-100g")
    t_zero2 = estimate_time(FULL_70B.replace(sharding="hsdp-zero2", shard_group_gpus=16), "h100_sxm", nodes=2,
                            network="ethernet-100g")
    t_fsdp16 = estimate_time(FULL_70B.replace(shard_group_gpus=16), "h100_sxm", nodes=2, network="ethernet-100g")
    assert t_zero2.comm.comm_s < t_fsdp16.comm.comm_s and t_zero2.step_time_s < t_fsdp16.step_time_s
    assert t_zero2.comm.bytes_per_step < t_hsdp.comm.bytes_per_step


# -- config readers ----------------------------------------------------------------------------------------------

ACCELERATE_NODES = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_sharding_strategy: {strategy}
{extra}num_machines: {machines}
num_processes: {processes}
"""


@pytest.mark.parametrize(("strategy", "extra", "machines", "processes", "sharding", "group"), [
    # FSDP1: torch shards hybrid inside each machine
    ("HYBRID_SHARD", "", 2, 16, "hsdp", 8),
    ("HYBRID_SHARD", "", 4, 16, "hsdp", 4),
    ("HYBRID_SHARD_ZERO2", "", 2, 32, "hsdp-zero2", 16),
    # FSDP2: the 2-D mesh of accelerate's ParallelismConfig
    ("FULL_SHARD", "  fsdp_version: 2\nparallelism_config:\n  parallelism_config_dp_replicate_size: 4\n"
                   "  parallelism_config_dp_shard_size: 4\n", 2, 16, "hsdp", 4),
    ("FULL_SHARD", "  fsdp_version: 2\nparallelism_config:\n  parallelism_config_dp_replicate_size: 2\n",
     2, 32, "hsdp", 16),
    ("FULL_SHARD", "  fsdp_version: 2\n  fsdp_reshard_after_forward: false\nparallelism_config:\n"
                   "  parallelism_config_dp_replicate_size: 2\n  parallelism_config_dp_shard_size: 8\n",
     2, 16, "hsdp-zero2", 8),
])
def test_accelerate_reads_the_shard_group(tmp_path, strategy, extra, machines, processes, sharding, group):
    path = tmp_path / "accelerate.yaml"
    path.write_text(ACCELERATE_NODES.format(strategy=strategy, extra=extra, machines=machines, processes=processes))
    imported = import_configs([path])
    plan = imported.plan(model="llama-3.1-8b")
    assert (plan.sharding.value, plan.shard_group_gpus, plan.gpus) == (sharding, group, processes)
    keys = {c.field: c.key for c in imported.claims}
    assert "dp_shard_size" in keys["shard_group_gpus"] or "num_processes" in keys["shard_group_gpus"]
    lines = [render(m, lang) for m in imported.report() for lang in ("en", "ru")]
    assert any("shard_group_gpus" in line and str(group) in line for line in lines)


def test_a_replicate_size_with_shards_of_one_gpu_is_plain_replication(tmp_path):
    extra = ("  fsdp_version: 2\nparallelism_config:\n  parallelism_config_dp_replicate_size: 16\n"
             "  parallelism_config_dp_shard_size: 1\n")
    plan = _read(tmp_path, "accelerate.yaml", ACCELERATE.format(strategy="FULL_SHARD", extra=extra))
    assert plan.sharding is Sharding.DDP


@pytest.mark.parametrize(("name", "text"), [
    ("training_args.json", json.dumps({"fsdp": "hybrid_shard_zero2 auto_wrap offload", "per_device_train_batch_size": 2})),
    ("llamafactory.yaml", "stage: sft\nfinetuning_type: full\ncutoff_len: 1024\nfsdp: hybrid_shard_zero2\n"),
])
def test_the_trainer_fsdp_option_hybrid_shard_zero2_reads_as_hsdp_zero2_on_one_node(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    imported = import_configs([path])
    plan = imported.plan(model="llama-3.1-8b", gpus=16)
    assert plan.sharding is Sharding.HSDP_ZERO2 and plan.shard_ranks == 8 and not plan.offload_params
    assert "shard_group_gpus" in imported.defaulted()  # the node: said as a default, not read


# -- plan files, links and the CLI -------------------------------------------------------------------------------

def test_the_shard_group_survives_plan_files_and_links(tmp_path):
    import yaml

    from gpuwork.facts.planfile import load_plan
    from gpuwork.ui.share import plan_file_bytes, plan_from_query, plan_query

    plan = FULL_70B.replace(sharding="hsdp-zero2", shard_group_gpus=16, gpus=32)
    path = tmp_path / "plan.json"
    path.write_bytes(plan_file_bytes(plan))
    assert load_plan(path) == plan
    assert TrainPlan.from_dict(yaml.safe_load(yaml.safe_dump(plan.as_dict()))) == plan
    assert "shard_group_gpus=16" in plan_query(plan) and plan_from_query(plan_query(plan)) == plan


def test_the_cli_takes_the_shard_group_and_refuses_one_that_does_not_divide(capsys):
    def per_gpu(*extra: str) -> int:
        assert main(["estimate", "--model", "llama-3.1-8b", "--method", "full", "--gpus", "16", "--json",
                     *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["plan"]["gpus"] == 16
        return out["plan"]["shard_group_gpus"], out["memory"]["device_total_bytes"]

    group8, node = per_gpu("--sharding", "hsdp")
    group16, wide = per_gpu("--sharding", "hsdp", "--shard-group", "16")
    assert (group8, group16) == (8, 16) and wide < node
    assert main(["estimate", "--model", "llama-3.1-8b", "--method", "full", "--gpus", "16", "--sharding", "hsdp",
                 "--shard-group", "5"]) != 0
    err = capsys.readouterr().err
    assert "shard_group_gpus=5" in err and "--shard-group" in err and "Traceback" not in err


def test_the_sizing_form_shows_and_reads_the_shard_group_for_hybrid_sharding_only():
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm(FULL_8B.replace(gpus=16))
    group = form.controls["shard_group_gpus"]
    assert group.layout.display == "none" and form.plan is not None and form.plan.sharding is Sharding.FSDP
    group.value = 5  # hidden: fsdp does not read it
    assert form.error is None and form.plan is not None and form.plan.shard_group_gpus == 8
    form.controls["sharding"].value = "hsdp"
    assert group.layout.display is None
    assert form.plan is None and form.error is not None and "5" in form.error  # 5 does not divide 16
    group.value = 16
    assert form.error is None and form.plan is not None
    assert (form.plan.sharding, form.plan.shard_group_gpus, form.plan.shard_ranks) == (Sharding.HSDP, 16, 16)
    form.set_lang("ru")
    assert group.description == "GPU в группе шардирования"


def test_gpu_counts_a_hybrid_plans_group_does_not_divide_are_left_out_not_an_error():
    # groups of 6: the scaling chart and the fit matrix skip the counts 6 does not divide (8, 16, ...)
    from gpuwork.estimate.fitmatrix import fit_matrix
    from gpuwork.sizing import scaling

    plan = FULL_8B.replace(gpus=12, sharding="hsdp", shard_group_gpus=6)
    points = scaling(plan, "h100_sxm", counts=(1, 2, 4, 6, 8, 12, 16, 24))
    assert [p.gpus for p in points] == [1, 2, 4, 6, 12, 24]
    matrix = fit_matrix(plan, load_offers(), resolve(plan), counts=(1, 2, 4, 8, 12))
    assert matrix.as_dict()["cells"]


@pytest.mark.parametrize(("strategy", "sharding"), [("hybrid_shard", "hsdp"), ("hybrid_shard_zero2", "hsdp-zero2"),
                                                     ("full_shard", "fsdp")])
def test_a_transformers_5_trainer_config_keeps_the_strategy_in_fsdp_config(tmp_path, strategy, sharding):
    # TrainingArguments of transformers 5 turn fsdp="hybrid_shard" into fsdp=True + reshard_after_forward
    import transformers

    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                                          report_to=[], use_cpu=True, save_strategy="no", fsdp=strategy,
                                          fsdp_config={"version": 1})
    assert args.fsdp is True and args.fsdp_config["reshard_after_forward"] == strategy
    path = tmp_path / "training_args.json"
    path.write_text(args.to_json_string())
    plan = import_configs([path]).plan(model="llama-3.1-8b", gpus=16)
    assert plan.sharding.value == sharding and plan.shard_ranks == (8 if sharding != "fsdp" else 16)


def test_a_live_trainers_hybrid_sharding_is_read_with_the_nodes_gpus_as_its_group(tmp_path, monkeypatch):
    import transformers

    from gpuwork.facts.model import load_config
    from gpuwork.measure.hf import infer_plan

    config, _ = load_config("tiny-llama")
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config)))
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                                          report_to=[], use_cpu=True, save_strategy="no",
                                          fsdp="hybrid_shard_zero2", fsdp_config={"version": 1})
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # torchrun's GPUs of this node
    plan, inferred = infer_plan(model, args, seq_len=64, world_size=8, out=tmp_path)
    assert (plan.sharding, plan.shard_group_gpus, plan.gpus) == (Sharding.HSDP_ZERO2, 4, 8)
    assert "LOCAL_WORLD_SIZE" in inferred["shard_group_gpus"]["from"]


def test_the_sharding_words_name_the_shard_group_where_there_are_several():
    from gpuwork.estimate.advisor import sharding_words

    several = sharding_words(FULL_8B.replace(gpus=32, sharding="hsdp-zero2", shard_group_gpus=16))
    en, ru = render(several, "en"), render(several, "ru")
    assert en.startswith("hsdp-zero2 in shard groups of 16 GPUs") and "в группах шардирования по 16 GPU" in ru
    assert "group" not in render(sharding_words(FULL_8B.replace(gpus=8, sharding="hsdp")), "en")  # one group
    assert "group" not in render(sharding_words(FULL_8B.replace(gpus=32)), "en")


@pytest.mark.parametrize(("sharding", "group", "gpu", "per_node"), [
    ("hsdp", 2, "l40s", 4), ("hsdp-zero2", 2, "l40s", 8), ("hsdp", 4, "l40s", 8), ("hsdp", 16, "h100_sxm", 8),
    ("hsdp-zero2", 4, "h100_sxm", 4), ("hsdp", 16, "rtx4090", 2)])
def test_per_gpu_throughput_never_rises_with_gpus_for_any_shard_group(sharding, group, gpu, per_node):
    # a ring of the replica all-reduce with several GPUs in one node is bounded by the intra-node link too
    # (PCIe on an L40S), not only by the node's NICs: without that, 16 GPUs in groups of 2 beat 8
    plan = FULL_8B.replace(sharding=sharding, shard_group_gpus=group, grad_accum=4)
    last = float("inf")
    for n in (1, 2, 4, 8, 16, 32, 64, 128):
        p = plan.single_gpu() if n == 1 else plan.replace(gpus=n)
        nodes = -(-n // per_node)
        est = estimate_time(p, gpu, nodes=nodes, network="ib-ndr-400g" if nodes > 1 else None)
        rate = p.tokens_per_step / n / (est.step_time_s - est.optimizer_s - est.offload_s)
        assert rate <= last * (1 + 1e-9), (n, rate, last)
        last = rate
