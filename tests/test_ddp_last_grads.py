"""DDP: a trained input embedding's gradient comes from the last op of backward (the lookup is the first op of
forward; a head tied to it accumulates into the same gradient), so its all-reduce cannot hide behind backward
(docs/communication.md 'What overlaps with compute', DDP)."""

from __future__ import annotations

import math

import pytest

from gpuwork.estimate.comm import ALL_REDUCE, DDP_BUCKET_BYTES, CommTraffic, Fabric, collective_s, step_comm
from gpuwork.estimate.timing import _traffic
from gpuwork.facts.model import spec_for_plan
from gpuwork.facts.network import load_comm_facts
from gpuwork.facts.spec import count_params
from gpuwork.plan import Sharding, TrainPlan

FACTS = load_comm_facts()
NVLINK = Fabric(intra_bytes_s=300e9, intra_efficiency=None, nvls=False, gpus_per_node=8, network=None)


def _ddp(grads: float, last: float) -> CommTraffic:
    return CommTraffic(gpus=8, sharding=Sharding.DDP, grad_accum=2, units=12, grad_bytes=grads,
                       gathered_bytes=grads / 2, params16_bytes=grads / 2, last_grad_bytes=last)


def test_an_embedding_above_the_bucket_cap_is_reduced_after_backward():
    grads, emb = 500e6, 154e6  # GPT-2 small in fp32: 124 M parameters, 38.6 M of them the tied embedding
    t = step_comm(FACTS, NVLINK, _ddp(grads, emb), forward_s=1.0, backward_s=2.0)
    buckets = math.ceil((grads - emb) / DDP_BUCKET_BYTES)
    one = collective_s(FACTS, NVLINK, ALL_REDUCE, (grads - emb) / buckets, 8)
    last = collective_s(FACTS, NVLINK, ALL_REDUCE, emb, 8)
    # a long backward hides every other bucket but the last; the embedding's own bucket follows it
    assert t.exposed_s == pytest.approx(one + last)
    assert t.total_s == pytest.approx(buckets * one + last)
    without = step_comm(FACTS, NVLINK, _ddp(grads, 0.0), forward_s=1.0, backward_s=2.0)
    assert t.exposed_s > without.exposed_s
    # below the cap the embedding shares the last bucket, which waits for the end of backward anyway
    small = step_comm(FACTS, NVLINK, _ddp(grads, DDP_BUCKET_BYTES / 2), forward_s=1.0, backward_s=2.0)
    assert small == without


def _plan(**kw) -> TrainPlan:
    base = dict(model="gpt2", method="full", precision="fp32", seq_len=512, batch_size=4, gpus=2, sharding="ddp")
    return TrainPlan(**{**base, **kw})


def test_the_plans_whose_embedding_is_trained_under_ddp_carry_it():
    plan = _plan()
    spec = spec_for_plan(plan)
    # GPT-2 small: token embeddings 50,257 x 768 (the head is tied to them) and positions 1,024 x 768, fp32 grads
    emb = 50_257 * 768 + 1_024 * 768
    assert spec.params_embedding == emb
    assert _traffic(plan, spec, count_params(spec, plan)).last_grad_bytes == emb * 4
    for other in (_plan(method="lora", lora_targets=("c_attn",)), _plan(method="freeze"), _plan(sharding="fsdp"), _plan(sharding="zero2")):
        assert _traffic(other, spec, count_params(spec, other)).last_grad_bytes == 0, other
