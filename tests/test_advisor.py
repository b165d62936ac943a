"""Tests for gpuwork.estimate.advisor and the rental mode rule (gpuwork.estimate.profiles.rental_mode): the QLoRA
7B case lands on a 24 GB card, every suggestion is priced against the plan, the changed plan is what it says, and a
2-hour job is never a monthly reservation."""

from __future__ import annotations

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import MIN_SAVING, advise
from gpuwork.estimate.profiles import TYPICAL_RESERVED_BREAK_EVEN_S, rental_mode
from gpuwork.facts.catalog import Mode, load_offers
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import advise as advise_plan
from gpuwork.sizing import estimate_memory, evaluate_offers, match_profile
from gpuwork.units import HOUR_S

QLORA_7B = TrainPlan(model="mistral-7b", method="qlora", seq_len=2048)


def test_qlora_7b_at_defaults_gets_checkpointing_on_a_24gb_card() -> None:
    need = estimate_memory(QLORA_7B).device_total_bytes
    assert need > 22 * 2**30  # 23.9 GiB: above the 22.8 GiB a 24 GB card may use
    advice = advise_plan(QLORA_7B, mode="on-demand")
    gc = advice.get("grad_checkpointing")
    assert gc.plan == QLORA_7B.replace(grad_checkpointing=True)  # the one-click change
    assert gc.outcome.offer.offer.gpu.memory_gb == 24 and gc.outcome.offer.fit.plan.gpus == 1
    assert gc.outcome.memory_per_gpu_bytes == estimate_memory(gc.plan).device_total_bytes < 10 * 2**30
    # against the plan on its own cheapest on-demand offer
    base = evaluate_offers(QLORA_7B, mode="on-demand", include_unfit=False)[0]
    assert advice.baseline.offer.offer.offer_id == base.offer.offer_id
    assert gc.cost_change == pytest.approx(gc.outcome.cost_usd / base.expected_cost_usd - 1)
    assert gc.time_change == pytest.approx(gc.outcome.total_s / base.expected_total_s - 1)
    text_en, text_ru = render(gc.summary, "en"), render(gc.summary, "ru")
    assert text_en.startswith("with gradient checkpointing: 7.7 GiB per GPU, fits 1 x GeForce RTX 4090")
    assert text_ru.startswith("с пересчётом активаций: 7,7 ГиБ на GPU, помещается на 1 × GeForce RTX 4090")


def test_every_suggestion_fits_and_is_cheaper_or_smaller() -> None:
    plan = TrainPlan(model="mistral-7b", method="qlora", seq_len=2048, batch_size=4)  # 78 GiB on one GPU
    advice = advise_plan(plan)
    base_cost = advice.baseline.cost_usd
    assert advice.suggestions and advice.tried > len(advice.suggestions)
    for s in advice.suggestions:
        assert s.outcome.fits and s.outcome.memory_per_gpu_bytes <= s.outcome.offer.fit.usable_bytes
        assert s.outcome.cost_usd <= base_cost * 1.10
        assert s.cost_change == pytest.approx(s.outcome.cost_usd / base_cost - 1)
        assert set(s.combines_with) <= {x.key for x in advice.suggestions} - {s.key}
    # the experiment-changing ones (a shorter sequence) come after those that keep it
    flags = [s.changes_experiment for s in advice.suggestions]
    assert flags == sorted(flags)
    mb = advice.get("micro_batch_1")  # same tokens per step: batch 4 x 1 -> 1 x 4
    assert (mb.plan.batch_size, mb.plan.grad_accum) == (1, 4) and mb.plan.tokens_per_step == plan.tokens_per_step
    assert mb.cost_change < -MIN_SAVING


def test_pairs_and_sharding_are_searched() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", seq_len=2048)
    advice = advise(plan, load_offers(), resolve(plan))
    keys = [s.key for s in advice.suggestions]
    # DeepSpeed ZeRO keeps fp32 masters and AdamW states (2 + 2 + 12 B/param): on 2 GPUs 8 B x 8.0 B params of
    # model states and the 4 B/param fp32 optimizer temporary leave no room on a 80 GB card; 4 GPUs do
    assert "optimizer_adamw-8bit" in keys and "zero3_x4" in keys
    z = advice.get("zero3_x4")
    assert (z.plan.gpus, z.plan.sharding.value) == (4, "zero3")
    assert "optimizer_adamw-8bit" in z.combines_with
    # 4 and 8 GPUs of ZeRO-3 both run on the same 8-GPU node: shown once
    assert "zero3_x8" not in keys


def test_bad_limit_is_an_error() -> None:
    with pytest.raises(PlanError, match="limit"):
        advise_plan(QLORA_7B, limit=0)


def test_rental_mode_follows_the_run_length() -> None:
    offers = load_offers()
    # one H100 SXM: reserved 2.28 $/h x 720 h = 1,641.60 $; on demand 2.40 $/h -> 684 h break-even
    short = rental_mode(2 * HOUR_S, "h100_sxm", 1, offers)
    assert short.mode is Mode.ON_DEMAND
    assert short.break_even_s == pytest.approx(2.28 * 720 / 2.40 * HOUR_S)
    assert short.reason["on_demand_usd"] == pytest.approx(2 * 2.40) and short.reason["reserved_usd"] == pytest.approx(
        2.28 * 720)
    long = rental_mode(700 * HOUR_S, "h100_sxm", 1, offers)
    assert long.mode is Mode.RESERVED  # 700 h x 2.40 = 1,680 $ > 1,641.60 $
    # a month's rental period makes reserving cheaper even for a short run
    assert rental_mode(2 * HOUR_S, "h100_sxm", 1, offers, period_s=720 * HOUR_S).mode is Mode.RESERVED
    # without prices: the typical 35 % discount on a month
    assert TYPICAL_RESERVED_BREAK_EVEN_S == pytest.approx(468 * HOUR_S)
    assert rental_mode(2 * HOUR_S, "h100_sxm").mode is Mode.ON_DEMAND
    assert rental_mode(500 * HOUR_S, "h100_sxm").mode is Mode.RESERVED


def test_a_two_hour_job_on_an_80gb_card_is_not_a_monthly_reservation() -> None:
    """Profile 02 used to carry its brief's "reserved" mode whatever the run length."""
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=8192, batch_size=2, grad_checkpointing=True,
                     dataset_tokens=20_000_000)
    m = match_profile(plan)
    assert m.profile.profile_id == "02" and m.time.total_s < 2 * HOUR_S
    assert m.profile.mode is Mode.ON_DEMAND and m.rental.mode is Mode.ON_DEMAND
    assert m.rental.reason.code == "profile.mode.on_demand"
    assert "reservation pays off only after 684 h" in render(m.rental.reason)
    long = match_profile(plan.replace(dataset_tokens=16_960_000_000))  # ~ 700 h on one H100
    assert 684 * HOUR_S < long.time.total_s < 720 * HOUR_S
    assert long.profile.mode is Mode.RESERVED and long.rental.reason.code == "profile.mode.reserved"
    # a little longer than the month: two reserved months cost more than the hours on demand
    assert match_profile(plan.replace(dataset_tokens=20_000_000_000)).profile.mode is Mode.ON_DEMAND
