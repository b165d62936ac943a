"""Torch FSDP's root unit (embeddings, head, final norm): kept gathered from forward to backward (FSDP1
``_post_forward_reshard``, FSDP2 ``fully_shard`` docs), so it is gathered once a micro-batch, its gather waits at
the start of each forward and its reduce-scatter, after the embedding gradients, closes backward
(docs/communication.md 'The root unit')."""

from __future__ import annotations

import pytest

from gpuwork.estimate.comm import (
    ALL_GATHER,
    REDUCE_SCATTER,
    CommTraffic,
    Fabric,
    collective_s,
    comm_bytes_per_step,
    step_comm,
)
from gpuwork.estimate.timing import _traffic
from gpuwork.facts.model import spec_for_plan
from gpuwork.facts.network import load_comm_facts
from gpuwork.facts.spec import count_params
from gpuwork.plan import Sharding, TrainPlan

FACTS = load_comm_facts()
NVLINK = Fabric(intra_bytes_s=300e9, intra_efficiency=None, nvls=False, gpus_per_node=8, network=None)


def _traffic_with_root(sharding: Sharding = Sharding.FSDP, ga: int = 2) -> CommTraffic:
    # 32 blocks of 0.5 GB and a root of 4 GB (gathered), gradients in fp32: 32 x 1 GB + 8 GB
    return CommTraffic(gpus=8, sharding=sharding, grad_accum=ga, units=32, grad_bytes=40e9, gathered_bytes=20e9,
                       params16_bytes=20e9, root_gathered_bytes=4e9, root_grad_bytes=8e9)


def test_the_root_is_gathered_once_a_micro_batch_and_waits_at_both_ends():
    t = step_comm(FACTS, NVLINK, _traffic_with_root(), forward_s=100.0, backward_s=200.0)
    ag = collective_s(FACTS, NVLINK, ALL_GATHER, 0.5e9, 8)
    rs = collective_s(FACTS, NVLINK, REDUCE_SCATTER, 1e9, 8)
    root_ag = collective_s(FACTS, NVLINK, ALL_GATHER, 4e9, 8)
    root_rs = collective_s(FACTS, NVLINK, REDUCE_SCATTER, 8e9, 8)
    assert t.total_s == pytest.approx(2 * (2 * 32 * ag + root_ag) + 32 * rs + root_rs)
    # long blocks hide every block's gather but each micro-batch's first; the root's gather and reduction wait
    assert t.exposed_s == pytest.approx(2 * (root_ag + ag) + rs + root_rs)
    assert t.message_bytes == pytest.approx(0.5e9)
    sent, _ = comm_bytes_per_step(_traffic_with_root())
    assert sent == pytest.approx(7 / 8 * (2 * (4e9 + 2 * 16e9) + 40e9))


def test_without_a_root_the_units_share_everything_as_before():
    even = CommTraffic(gpus=8, sharding=Sharding.FSDP, grad_accum=1, units=32, grad_bytes=32e9,
                       gathered_bytes=16e9, params16_bytes=16e9)
    t = step_comm(FACTS, NVLINK, even, forward_s=100.0, backward_s=200.0)
    ag = collective_s(FACTS, NVLINK, ALL_GATHER, 0.5e9, 8)
    rs = collective_s(FACTS, NVLINK, REDUCE_SCATTER, 1e9, 8)
    assert t.exposed_s == pytest.approx(ag + rs) and t.total_s == pytest.approx(32 * (2 * ag + rs))


def test_hsdp_zero2_gathers_the_root_once_like_the_blocks():
    sent, _ = comm_bytes_per_step(_traffic_with_root(Sharding.HSDP_ZERO2, ga=1))
    # one group of all 8 GPUs (shard_group 8): no replicas; every parameter gathered once
    assert sent == pytest.approx(7 / 8 * (20e9 + 40e9))


def _plan(**fields: object) -> TrainPlan:
    base = dict(model="llama-3.1-8b", method="full", precision="bf16-mixed", seq_len=2048, batch_size=1,
                sharding="fsdp", gpus=64)
    return TrainPlan(**{**base, **fields})


def test_a_torch_fsdp_plan_names_its_root_and_zero3_does_not():
    plan = _plan()
    spec = spec_for_plan(plan)
    counts = count_params(spec, plan)
    root = spec.params_embedding + spec.params_head + spec.params_other
    assert root > 1e9  # Llama 3's 128k vocabulary: embeddings and head 1.05 B of 8 B
    t = _traffic(plan, spec, counts)
    assert t.root_gathered_bytes == 2 * root and t.root_grad_bytes == 4 * root
    zero3 = _traffic(_plan(sharding="zero3"), spec, counts)
    assert zero3.root_gathered_bytes == zero3.root_grad_bytes == 0
    lora = _plan(method="lora")
    lora_t = _traffic(lora, spec, count_params(spec, lora))
    assert lora_t.root_gathered_bytes == 2 * root and lora_t.root_grad_bytes == 0  # the root is frozen


def test_a_large_vocabulary_root_adds_its_exposed_collectives_across_nodes():
    plan = _plan()
    spec = spec_for_plan(plan)
    counts = count_params(spec, plan)
    fab = Fabric(intra_bytes_s=300e9, intra_efficiency=None, nvls=False, gpus_per_node=8,
                 network=FACTS.node_network("dgx-a100"))
    with_root = _traffic(plan, spec, counts)
    spread = CommTraffic(**{**with_root.__dict__, "root_gathered_bytes": 0.0, "root_grad_bytes": 0.0})
    a = step_comm(FACTS, fab, with_root, forward_s=10.0, backward_s=20.0)
    b = step_comm(FACTS, fab, spread, forward_s=10.0, backward_s=20.0)
    root_ag = collective_s(FACTS, fab, ALL_GATHER, with_root.root_gathered_bytes, 64)
    root_rs = collective_s(FACTS, fab, REDUCE_SCATTER, with_root.root_grad_bytes, 64)
    assert a.exposed_s > b.exposed_s + 0.5 * (root_ag + root_rs)
    assert a.total_s < b.total_s  # the root is not gathered again in backward
