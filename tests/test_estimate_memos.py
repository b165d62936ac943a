"""The step-time estimate's memos (gpuwork issue 19, speed): what an estimate reads of its plan alone
(``timing._plan_part``, by the plan, model and stack objects) and a one-GPU plan's communication
(``comm.plan_comm``, by the card, its link and the facts) are found once and reused, and never answer for
another plan, model, card or link: each answer equals the one a process with empty caches gives."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from conftest import clear_package_caches

from gpuwork.estimate import comm
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan

BASE = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
GPUS = ("h100_sxm", "a100_80_sxm", "l40s", "rtx4090", "mi300x")


def _answer(plan: TrainPlan, gpu_id: str, inputs=None, **options) -> tuple:
    inputs = inputs or resolve(plan)
    est = estimate_time(plan, inputs.gpu(gpu_id), inputs, **options)
    return est.as_dict(), sorted(est.sources.items())


def _alone(plan: TrainPlan, gpu_id: str, inputs=None, **options) -> tuple:
    clear_package_caches()
    try:
        return _answer(plan, gpu_id, inputs, **options)
    finally:
        clear_package_caches()


def _gets_its_own_answer(plan: TrainPlan, inputs, other: TrainPlan, other_inputs) -> None:
    """``other`` (on ``other_inputs``) estimated right after ``plan`` gets the answer it gets alone, not ``plan``'s,
    and ``plan`` after it its own again."""
    alone = _alone(other, "h100_sxm", other_inputs)
    before = _answer(plan, "h100_sxm", inputs)
    assert _answer(other, "h100_sxm", other_inputs) == alone != before
    assert _answer(plan, "h100_sxm", inputs) == before


def test_a_plan_estimated_after_a_sweep_of_others_gets_its_first_answer():
    inputs = resolve(BASE)
    clear_package_caches()
    first = [_answer(BASE, g, inputs) for g in GPUS]
    others = [BASE.replace(method=m, seq_len=s, grad_accum=a, grad_checkpointing=c)
              for m, s, a, c in itertools.product(("full", "lora", "qlora"), (512, 4096), (1, 4), (False, True))]
    for plan, gpu_id in itertools.product(others, GPUS):
        estimate_time(plan, inputs.gpu(gpu_id), inputs)
    assert [_answer(BASE, g, inputs) for g in GPUS] == first


# one field each that the plan's part reads (operations, FLOPs, counts, traffic, checkpoint bytes, tokens)
CHANGES = {
    "seq_len": dict(seq_len=1024),
    "grad_accum": dict(grad_accum=4),
    "method": dict(method="full"),
    "lora_r": dict(lora_r=64),
    "batch_size": dict(batch_size=4),
    "grad_checkpointing": dict(grad_checkpointing=True),
    "lengths": dict(lengths=((512, 1.0), (2048, 1.0))),
    "dataset_tokens": dict(dataset_tokens=10**7),
    "gpus": dict(gpus=8, sharding="fsdp"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_plan_that_differs_in_one_field_gets_its_own_answer(change):
    inputs = resolve(BASE)
    _gets_its_own_answer(BASE, inputs, BASE.replace(**CHANGES[change]), inputs)


def test_an_equal_plan_object_gets_the_same_answer():
    inputs = resolve(BASE)
    first = _answer(BASE, "l40s", inputs)
    assert _answer(TrainPlan(**BASE.as_dict()), "l40s", inputs) == first


def test_another_model_or_stack_object_gets_its_own_answer():
    inputs = resolve(BASE)
    spec = inputs.spec
    other_spec = dataclasses.replace(inputs, spec=dataclasses.replace(spec, num_layers=spec.num_layers // 2))
    profile = inputs.rates.stacks[BASE.stack]
    slower_stack = dataclasses.replace(inputs, rates=dataclasses.replace(
        inputs.rates, stacks={**inputs.rates.stacks, BASE.stack: dataclasses.replace(profile, fused_norm=True)}))
    for changed in (other_spec, slower_stack):
        _gets_its_own_answer(BASE, inputs, BASE, changed)


def test_one_gpu_communication_follows_the_card_and_the_link():
    inputs = resolve(BASE)
    nvlink = _alone(BASE, "h100_sxm", inputs)
    pcie = _alone(BASE, "h100_sxm", inputs, link="pcie")
    clear_package_caches()
    assert _answer(BASE, "h100_sxm", inputs) == nvlink
    assert _answer(BASE, "h100_sxm", inputs, link="pcie") == pcie
    assert pcie[0]["comm"]["link"] == "pcie" != nvlink[0]["comm"]["link"]
    assert pcie[0]["comm"]["bandwidth_bytes_s"] < nvlink[0]["comm"]["bandwidth_bytes_s"]
    assert _answer(BASE, "a100_80_sxm", inputs) == _alone(BASE, "a100_80_sxm", inputs)


@pytest.mark.parametrize("base_step", [0.0, 1e-6, 0.37, 1e9, math.inf])
def test_one_gpu_communication_is_what_the_whole_model_gives(base_step):
    inputs = resolve(BASE)
    gpu = inputs.gpu("h100_sxm")
    setting = comm.CommSetting(BASE, gpu, inputs.rates, inputs.comm, gpu.link, None, 1,
                               inputs.rates.device("h100_sxm").sm_count)
    traffic = comm.CommTraffic(gpus=1, sharding=BASE.sharding, grad_accum=1, units=32, grad_bytes=1e8,
                               gathered_bytes=1e10, params16_bytes=1e8)
    whole = comm._plan_comm(setting, traffic, 0.2, 0.3, base_step)
    clear_package_caches()
    assert comm.plan_comm(setting, traffic, 0.5, 0.1, 2.0) == (whole[0], 0.0) or math.isinf(base_step)
    got = comm.plan_comm(setting, traffic, 0.2, 0.3, base_step)  # memo hit, or the whole model at an infinite step
    assert (got[0].as_dict(), got[1]) == (whole[0].as_dict(), whole[1]) or math.isnan(whole[0].scaling_efficiency)
    assert got[0].exposed_s == got[0].comm_s == got[0].contention_s == 0.0 and got[1] == 0.0
