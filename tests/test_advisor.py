"""Tests for gpuwork.estimate.advisor and the rental mode rule (gpuwork.estimate.profiles.rental_mode): the QLoRA
7B case lands on a 24 GB card, every suggestion is priced against the plan, the changed plan is what it says, and a
2-hour job is never a monthly reservation."""

from __future__ import annotations

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import MIN_SAVING, advise
from gpuwork.estimate.offers import offer_name
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
    # the offer as the tables name it, never its catalog id (issue 20: plain words)
    offer = gc.outcome.offer.offer
    assert f"(offer “{render(offer_name(offer), 'en')}”)" in text_en
    assert f"(предложение «{render(offer_name(offer), 'ru')}»)" in text_ru
    status_en, status_ru = render(advice.status, "en"), render(advice.status, "ru")
    assert f"(offer “{render(offer_name(base.offer), 'en')}”)" in status_en
    assert "предложение «" in status_ru and " на узел, " in status_ru
    for shown in (text_en, text_ru, status_en, status_ru):
        assert offer.offer_id not in shown and base.offer.offer_id not in shown


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
    # the dataset that takes about 700 h (and then 780 h) at this plan's estimated rate on one H100
    def tokens_for(hours: float) -> int:
        return int(plan.dataset_tokens * hours * HOUR_S / m.time.total_s)
    long = match_profile(plan.replace(dataset_tokens=tokens_for(700)))
    assert 684 * HOUR_S < long.time.total_s < 720 * HOUR_S
    assert long.profile.mode is Mode.RESERVED and long.rental.reason.code == "profile.mode.reserved"
    # a little longer than the month: two reserved months cost more than the hours on demand
    longer = match_profile(plan.replace(dataset_tokens=tokens_for(780)))
    assert 720 * HOUR_S < longer.time.total_s and longer.profile.mode is Mode.ON_DEMAND


# -- FSDP among the changes, and the bytes per parameter each sharding keeps ---------------------------------------

@pytest.mark.parametrize(("sharding", "precision", "optimizer"), [
    ("fsdp", "bf16", "adamw"), ("fsdp", "bf16-mixed", "adamw"), ("fsdp", "bf16", "sgd"),
    ("zero3", "bf16", "adamw"), ("zero3", "fp16", "adamw"), ("zero3", "bf16-mixed", "adamw"),
    ("zero3", "bf16", "adamw-8bit"), ("fsdp", "bf16", "adamw-8bit")])
def test_the_bytes_per_parameter_shown_are_the_memory_estimates_own(sharding: str, precision: str,
                                                                      optimizer: str) -> None:
    """What a sharding is said to keep per trained parameter is what the memory estimate holds for that plan: with
    the weights and optimizer on the CPU, host bytes x GPUs / trained parameters + the gradient's bytes."""
    from gpuwork.estimate.advisor import state_bytes_per_param

    plan = TrainPlan(model="tiny-llama", method="full", precision=precision, optimizer=optimizer, gpus=4,
                     sharding=sharding, offload_optimizer=True, offload_params=True)
    est = estimate_memory(plan)
    per_param = state_bytes_per_param(plan)
    host_per_param = est.host_bytes * plan.gpus / est.params.trainable
    assert per_param == round(host_per_param + plan.precision.param_bytes)
    # DeepSpeed's own figure where it keeps fp32 masters (the memory estimate's warning)
    warned = [w for w in est.warnings if w.code == "memory.fp32_master"]
    assert bool(warned) == plan.fp32_master_weights == (sharding == "zero3" and precision != "bf16-mixed")
    if warned:
        assert warned[0]["bytes_per_param"] == per_param
    # the plan keeps the same states wherever they sit: on the GPU as in CPU memory
    assert state_bytes_per_param(plan.replace(offload_optimizer=False, offload_params=False)) == per_param


def test_pure_bf16_keeps_half_the_bytes_under_fsdp_as_under_zero() -> None:
    from gpuwork.estimate.advisor import state_bytes_per_param

    fsdp = TrainPlan(model="tiny-llama", method="full", gpus=8, sharding="fsdp")
    zero3 = fsdp.replace(sharding="zero3")
    assert 2 * state_bytes_per_param(fsdp) == state_bytes_per_param(zero3)
    # bf16-mixed keeps fp32 weights under both: the same bytes
    assert (state_bytes_per_param(fsdp.replace(precision="bf16-mixed"))
            == state_bytes_per_param(zero3.replace(precision="bf16-mixed")) == state_bytes_per_param(zero3))
    # adapters: a frozen base and fp32 adapters, not one figure
    assert state_bytes_per_param(fsdp.replace(method="lora")) is None


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_fsdp_and_fsdp_with_cpu_offload_are_tried_wherever_the_plan_allows(method: str) -> None:
    from gpuwork.estimate.advisor import SHARDINGS, _changes

    plan = TrainPlan(model="tiny-llama", method=method)
    changes = {c.key: c for c in _changes(plan)}
    for gpus in (2, 4, 8):
        for sharding, offload in SHARDINGS:
            key = f"{sharding.value}{'_offload' if offload else ''}_x{gpus}"
            changed = changes[key].apply(plan)  # a valid plan: TrainPlan's own checks passed
            assert (changed.gpus, changed.sharding, changed.offload_optimizer) == (gpus, sharding, offload)
            # FSDP's CPU offload moves the parameters too; DeepSpeed's offload_optimizer the optimizer only
            assert changed.offload_params == (offload and sharding.value == "fsdp")
    assert {"fsdp_x8", "fsdp_offload_x8"} <= set(changes)


def test_the_advisor_says_which_sharding_and_what_it_keeps_per_parameter() -> None:
    """A pure-bf16 70B full fine-tune on NVIDIA cards runs sharded; every line says the sharding and its bytes per
    parameter (FSDP would keep 2 + 2 bytes of weights and gradients and the optimizer's states in bf16, ZeRO-3 adds
    fp32 masters; which one the answer takes is the offers' cost and time)."""
    from gpuwork.estimate.advisor import state_bytes_per_param
    from gpuwork.estimate.decision import Constraints
    from gpuwork.sizing import decide

    plan = TrainPlan(model="llama-3.1-70b", method="full", dataset_tokens=10**8)
    d = decide(plan, constraints=Constraints(vendor="NVIDIA"))
    run = d.run_plan
    name = run.sharding.value
    assert name in ("fsdp", "zero3") and d.suggestion is not None
    per_param = state_bytes_per_param(run)
    assert state_bytes_per_param(run.replace(sharding="fsdp")) < state_bytes_per_param(run.replace(sharding="zero3"))
    en, ru = render(d.summary, "en"), render(d.summary, "ru")
    assert f"with {name} (bf16: {per_param} bytes per trained parameter" in en
    assert f"с {name} (bf16: {per_param} байт на обучаемый параметр" in ru
    line_en, line_ru = render(d.suggestion.summary, "en"), render(d.suggestion.summary, "ru")
    assert f"{name} (bf16: {per_param} bytes per trained parameter" in line_en
    assert f"{name} (bf16: {per_param} байт на обучаемый параметр" in line_ru
    assert d.as_dict()["state_bytes_per_param"] == per_param and d.as_dict()["sharding"] == name


def test_with_room_left_checkpointing_on_one_block_in_two_is_offered_for_speed() -> None:
    plan = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, batch_size=4, grad_checkpointing=True)
    advice = advise_plan(plan, mode="on-demand")
    half = advice.get("recompute_every_2")
    assert half.plan == plan.replace(recompute_every=2)
    assert half.time_change < -MIN_SAVING and half.outcome.memory_per_gpu_bytes > estimate_memory(plan).device_total_bytes
    assert half.outcome.fits
    assert "one block in 2" in render(half.summary, "en") and "каждом 2-м блоке" in render(half.summary, "ru")
    # nothing to offer where every block's recompute is Unsloth's own, or already spread
    for other in (plan.replace(stack="unsloth"), plan.replace(recompute_every=2)):
        assert all(not s.key.startswith("recompute_every") for s in advise_plan(other, mode="on-demand").suggestions)
