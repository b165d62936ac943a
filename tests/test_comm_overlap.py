"""TrainPlan.comm_overlap: when DDP / ZeRO-1/2 reduce gradients and gather parameters (docs/communication.md
'Overlap switches'). Numbers are rebuilt from the stated rule with the module's own collective times."""

from __future__ import annotations

import json
import math

import pytest

from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.estimate.comm import (
    ALL_GATHER,
    ALL_REDUCE,
    REDUCE_SCATTER,
    CommTraffic,
    Fabric,
    collective_s,
    megatron_bucket_elements,
    step_comm,
)
from gpuwork.facts.network import load_comm_facts
from gpuwork.plan import CommOverlap, Sharding, TrainPlan
from gpuwork.sizing import estimate_time
from gpuwork.ui.sizing import SizingForm

FACTS = load_comm_facts()
FAB = Fabric(intra_bytes_s=450e9, intra_efficiency=None, nvls=False, gpus_per_node=8, network=None)
PARAMS = 1.5e9  # elements; fp32 gradients, bf16 parameters (Megatron --bf16)


def _traffic(sharding: Sharding, overlap: CommOverlap, gpus: int = 8, ga: int = 1, last: float = 0.0) -> CommTraffic:
    return CommTraffic(gpus=gpus, sharding=sharding, grad_accum=ga, units=48, grad_bytes=PARAMS * 4,
                       gathered_bytes=PARAMS * 2, params16_bytes=PARAMS * 2, last_grad_bytes=last, overlap=overlap)


def test_megatron_bucket_is_40m_elements_or_1m_per_rank():
    assert megatron_bucket_elements(8) == 40e6
    assert megatron_bucket_elements(64) == 64e6
    assert megatron_bucket_elements(40) == 40e6


def test_off_is_one_collective_after_backward_all_exposed():
    ddp = step_comm(FACTS, FAB, _traffic(Sharding.DDP, CommOverlap.OFF), forward_s=100.0, backward_s=200.0)
    one = collective_s(FACTS, FAB, ALL_REDUCE, PARAMS * 4, 8)
    assert ddp.total_s == pytest.approx(one) and ddp.exposed_s == pytest.approx(one)
    assert ddp.message_bytes == PARAMS * 4
    zero = step_comm(FACTS, FAB, _traffic(Sharding.ZERO1, CommOverlap.OFF), forward_s=100.0, backward_s=200.0)
    both = collective_s(FACTS, FAB, REDUCE_SCATTER, PARAMS * 4, 8) + collective_s(FACTS, FAB, ALL_GATHER,
                                                                                   PARAMS * 2, 8)
    assert zero.total_s == pytest.approx(both) and zero.exposed_s == pytest.approx(both)


def test_off_exposes_what_the_default_ddp_buckets_hide():
    default = step_comm(FACTS, FAB, _traffic(Sharding.DDP, CommOverlap.DEFAULT), forward_s=1.0, backward_s=2.0)
    off = step_comm(FACTS, FAB, _traffic(Sharding.DDP, CommOverlap.OFF), forward_s=1.0, backward_s=2.0)
    assert default.exposed_s < 0.2 * default.total_s  # torch DDP: all but the last bucket behind backward
    assert off.exposed_s == off.total_s > 5 * default.exposed_s


def _buckets(total: float, bucket: float) -> tuple[int, float]:
    count = max(1, math.ceil(total / bucket))
    return count, total / count


def test_on_zero_hides_reduce_scatter_behind_backward_and_gathers_behind_forward():
    elements = megatron_bucket_elements(8)
    rs_count, rs_size = _buckets(PARAMS * 4, elements * 4)
    ag_count, ag_size = _buckets(PARAMS * 2, elements * 2)
    rs = collective_s(FACTS, FAB, REDUCE_SCATTER, rs_size, 8)
    ag = collective_s(FACTS, FAB, ALL_GATHER, ag_size, 8)
    assert rs_count == ag_count == 38
    long = step_comm(FACTS, FAB, _traffic(Sharding.ZERO1, CommOverlap.ON, ga=2), forward_s=20.0, backward_s=40.0)
    assert long.total_s == pytest.approx(rs_count * rs + ag_count * ag)
    # long passes: the last bucket's reduce-scatter and the first bucket's gather wait
    assert long.exposed_s == pytest.approx(rs + ag)
    assert long.message_bytes == pytest.approx(rs_size)
    # no compute to hide behind: everything waits
    none = step_comm(FACTS, FAB, _traffic(Sharding.ZERO1, CommOverlap.ON), forward_s=0.0, backward_s=0.0)
    assert none.exposed_s == pytest.approx(none.total_s)
    # one micro-batch's forward of f seconds: each later gather waits max(0, t - f / buckets)
    f = ag_count * ag / 2
    half = step_comm(FACTS, FAB, _traffic(Sharding.ZERO1, CommOverlap.ON), forward_s=f, backward_s=100.0)
    assert half.exposed_s == pytest.approx(rs + ag + (ag_count - 1) * (ag - f / ag_count))


def test_on_ddp_uses_megatrons_buckets_and_an_embedding_above_one_waits_alone():
    elements = megatron_bucket_elements(8)
    last = 80e6 * 4  # an 80 M-parameter embedding's fp32 gradient, above one 40 M-element bucket
    t = step_comm(FACTS, FAB, _traffic(Sharding.DDP, CommOverlap.ON, last=last), forward_s=10.0, backward_s=20.0)
    count, size = _buckets(PARAMS * 4 - last, elements * 4)
    one = collective_s(FACTS, FAB, ALL_REDUCE, size, 8)
    alone = collective_s(FACTS, FAB, ALL_REDUCE, last, 8)
    assert t.total_s == pytest.approx(count * one + alone)
    assert t.exposed_s == pytest.approx(one + alone)


def test_a_plan_states_it_and_the_step_prices_it():
    base = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", gpus=4, batch_size=4,
                     seq_len=1024, stack="framework")
    default, off = (estimate_time(base.replace(comm_overlap=v), "h100_sxm") for v in ("default", "off"))
    assert off.comm.exposed_s == pytest.approx(off.comm.comm_s)  # one all-reduce after backward
    assert off.comm.contention_s == 0.0  # nothing runs beside compute
    assert off.comm.exposed_s > default.comm.exposed_s
    assert off.step_time_s > default.step_time_s
    assert base.replace(comm_overlap="on").comm_overlap is CommOverlap.ON


def test_per_unit_shardings_refuse_a_switch_in_both_languages():
    with pytest.raises(PlanError) as err:
        TrainPlan(gpus=8, sharding="fsdp", comm_overlap="off")
    assert err.value.field == "comm_overlap" and err.value.msg.code == "error.plan.comm_overlap_sharding"
    for lang, words in (("en", "block by block"), ("ru", "блок за блоком")):
        text = err.value.text(lang)
        assert "comm_overlap='off'" in text and "sharding='fsdp'" in text and words in text


def test_the_form_shows_it_for_ddp_and_zero_only():
    form = SizingForm({"model": "llama-3.2-1b", "method": "full", "gpus": 4})
    field = form.controls["comm_overlap"]
    assert field.layout.display is None and form.plan.comm_overlap is CommOverlap.DEFAULT
    assert [value for _, value in field.options] == ["default", "off", "on"]
    field.value = "off"
    assert form.error is None and form.plan.comm_overlap is CommOverlap.OFF
    form.controls["sharding"].value = "fsdp"  # hidden: not read
    assert form.error is None and form.plan.comm_overlap is CommOverlap.DEFAULT and field.layout.display == "none"


def test_a_sweep_into_fsdp_drops_the_switch_and_ddp_keeps_it():
    plan = TrainPlan(gpus=8, sharding="zero1", comm_overlap="on")
    assert plan.replace(sharding="fsdp").comm_overlap is CommOverlap.DEFAULT
    assert plan.replace(sharding="ddp").comm_overlap is CommOverlap.ON
    assert plan.single_gpu().comm_overlap is CommOverlap.ON
    assert TrainPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan


def test_the_cli_flag_sets_it():
    args = build_parser().parse_args(["estimate", "--gpus", "4", "--comm-overlap", "off"])
    assert plan_from_args(args).comm_overlap is CommOverlap.OFF


def test_the_rental_request_says_how_the_times_were_priced():
    from gpuwork.present.request import rental_request

    plan = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", gpus=4, comm_overlap="off")
    suggested = rental_request(plan, lang="en").fields["suggested"]
    assert suggested["sharding"] == "ddp" and suggested["comm_overlap"] == "off"
