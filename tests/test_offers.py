"""Tests for gpuwork.estimate.offers and the driver-reported memory column of gpus.csv: fit search, costs worked
by hand, preemptions (Young/Daly), filters and ranking."""

from __future__ import annotations

import csv
import io
import math
from datetime import date
from pathlib import Path

import pytest

from gpuwork.errors import CatalogError, PlanError
from gpuwork.estimate.offers import (
    DEFAULT_SAFETY_MARGIN,
    RESTART_OVERHEAD_S,
    billed_nodes,
    evaluate_offer,
    preemption_cost,
    usable_memory_bytes,
    young_daly_interval_s,
)
from gpuwork.facts.catalog import (
    GPUS_CSV_COLUMNS,
    GPUS_CSV_OPTIONAL_COLUMNS,
    MIB,
    Link,
    Mode,
    Network,
    Offer,
    Region,
    get_gpu,
    load_gpus,
    load_offers,
)
from gpuwork.facts.resolve import resolve
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory, estimate_time, evaluate_offers, fit_plan

BUNDLED = Path(__file__).resolve().parent.parent / "data"


def _offer(gpu_id: str, *, gpus: int = 1, mode: str = "on-demand", price: float = 2.0, min_hours: float = 1,
           link: str = "pcie", network: str = "none", offer_id: str | None = None) -> Offer:
    gpu = get_gpu(gpu_id)
    return Offer(offer_id=offer_id or f"test-{gpu_id}-{gpus}x-{mode}", provider="test", gpu_id=gpu.gpu_id, gpu=gpu,
                 gpus_per_node=gpus, link=Link(link), network=Network(network), mode=Mode(mode), region=Region.EU,
                 price_per_gpu_hour=price, min_rental_hours=min_hours, as_of=date(2026, 11, 1), note="test")


# -- driver-reported memory (gpus.csv memory_total_mib) -----------------------------------------------


def test_memory_total_column_matches_public_nvidia_smi():
    gpus = load_gpus()
    reported = {"h100_sxm": 81_559, "rtx4090": 24_564, "a100_80_sxm": 81_920, "a100_40_sxm": 40_960,
                "h200_sxm": 143_771, "l40s": 46_068, "rtx_a6000": 49_140, "l4": 23_034, "rtx3090": 24_576}
    for gpu_id, mib in reported.items():
        assert gpus[gpu_id].memory_total_mib == mib, gpu_id
        assert gpus[gpu_id].memory_total_bytes == mib * MIB
        assert gpus[gpu_id].memory_total_source == "nvidia-smi"
    for gpu in gpus.values():
        assert gpu.memory_total_source in {"nvidia-smi", "rocm-smi", "estimated"}
        # reported totals lie between the marketed GB (decimal) x 0.85 and the marketed GB read as GiB
        assert 0.85 * gpu.memory_bytes <= gpu.memory_total_bytes <= 1.05 * gpu.memory_gb * 2**30
    assert gpus["mi325x"].memory_total_source == "estimated"  # no public rocm-smi output found
    assert gpus["mi325x"].memory_total_bytes == 256 * 1024 * MIB


def test_memory_total_column_is_optional_and_checked(tmp_path):
    rows = list(csv.DictReader(open(BUNDLED / "gpus.csv", encoding="utf-8", newline="")))
    # without the optional columns: memory_gb x 1024 MiB, marked "estimated"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(GPUS_CSV_COLUMNS), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (tmp_path / "old.csv").write_text(buffer.getvalue(), encoding="utf-8")
    h100 = load_gpus(tmp_path / "old.csv")["h100_sxm"]
    assert h100.memory_total_source == "estimated" and h100.memory_total_bytes == 80 * 1024 * MIB
    # a value in GB instead of MiB names the file, line and field
    rows[16] = {**rows[16], "memory_total_mib": "80"}
    buffer = io.StringIO()
    columns = list(GPUS_CSV_COLUMNS) + list(GPUS_CSV_OPTIONAL_COLUMNS)
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (tmp_path / "bad.csv").write_text(buffer.getvalue(), encoding="utf-8")
    with pytest.raises(CatalogError, match=r"bad.csv line 18, field 'memory_total_mib'.*not GB"):
        load_gpus(tmp_path / "bad.csv")


def test_usable_memory_keeps_the_margin_free():
    h100 = get_gpu("h100_sxm")
    # 81,559 MiB x 2**20 = 85,520,809,984 B; x (1 - 0.05) = 81,244,769,484.8 -> 81,244,769,484 B (75.7 GiB)
    assert usable_memory_bytes(h100) == int(81_559 * 2**20 * (1 - DEFAULT_SAFETY_MARGIN)) == 81_244_769_484
    assert usable_memory_bytes(h100, 0.0) == 81_559 * 2**20


# -- fitting ------------------------------------------------------------------------------------------


def test_fit_as_planned_or_with_more_gpus_and_sharding():
    h100 = get_gpu("h100_sxm")
    small = TrainPlan(model="llama-3.1-8b", method="qlora")
    fit = fit_plan(small, h100, max_gpus=8)
    assert fit.fits and fit.plan == small and fit.changes == ()
    assert fit.device_total_bytes == estimate_memory(small).device_total_bytes
    assert fit.reason == msg("fit.as_planned", need_bytes=fit.device_total_bytes, usable_bytes=fit.usable_bytes)
    # Llama-3.1-8B full, pure bf16 AdamW: ~81.8 GiB > 75.7 GiB usable on one H100
    full = TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048)
    assert estimate_memory(full).device_total_bytes > usable_memory_bytes(h100)
    fit = fit_plan(full, h100, max_gpus=8)
    # ZeRO-2 keeps the 16 GB of bf16 weights whole and shards 14 B/param (bf16 gradients, fp32 masters and
    # AdamW states): 16 + 112 / n GB of model states next to ~17 GB of activations fits 80 GB from n = 3
    assert fit.fits and fit.plan.gpus == 3
    # DDP keeps a full replica on each GPU (plus buckets): it does not fit, ZeRO-2 does
    assert estimate_memory(full.replace(gpus=3)).device_total_bytes > usable_memory_bytes(h100)
    assert fit.plan.sharding == "zero2"
    assert fit.changes == (msg("change.gpus", old=1, new=3), msg("change.sharding", old="ddp", new="zero2"))
    assert fit.reason == msg("fit.with_gpus", gpus=3, sharding="zero2", need_bytes=fit.device_total_bytes,
                             usable_bytes=fit.usable_bytes)
    assert fit.device_total_bytes <= fit.usable_bytes and fit.headroom_bytes >= 0
    # no room in a single 24 GB card: the closest attempt is reported
    miss = fit_plan(full, get_gpu("rtx4090"), max_gpus=1)
    assert not miss.fits and miss.reason.code == "fit.does_not_fit"
    assert miss.reason["need_bytes"] == miss.device_total_bytes > miss.reason["usable_bytes"] == miss.usable_bytes
    assert miss.as_dict()["reason"] == {"code": "fit.does_not_fit", "params": dict(miss.reason.params)}
    with pytest.raises(PlanError, match="safety_margin"):
        fit_plan(full, h100, max_gpus=1, safety_margin=1.5)


# -- preemptions -----------------------------------------------------------------------------------------


def test_young_daly_worked_example():
    # C = 60 s write, MTBF = 20 h = 72,000 s: sqrt(2 x 60 x 72,000) = sqrt(8,640,000) = 2,939.4 s
    assert young_daly_interval_s(60, 72_000) == pytest.approx(2939.39, abs=0.01)


def test_preemption_cost_worked_example():
    # 10 h of work, 0.1 preemptions/h, checkpoints every 30 min: loss = 900 s + 600 s restart = 1,500 s;
    # λ = 0.1/3600 per s; λ·loss = 0.041667; wall = 36,000 / (1 - 0.041667) = 37,565.2 s;
    # preemptions = λ x wall = 1.0435; lost = 1.0435 x 1,500 = 1,565.2 s
    preemptions, lost, wall = preemption_cost(36_000, 0.1, 1_800)
    assert wall == pytest.approx(37_565.2, abs=0.1)
    assert preemptions == pytest.approx(1.0435, abs=1e-4)
    assert lost == pytest.approx(wall - 36_000)
    assert lost == pytest.approx(preemptions * (1_800 / 2 + RESTART_OVERHEAD_S))  # half an interval + restart
    assert preemption_cost(36_000, 0.0, 1_800) == (0.0, 0.0, 36_000)
    assert preemption_cost(36_000, 10.0, 3_600)[2] == math.inf  # preempted faster than work is saved


# -- costs -----------------------------------------------------------------------------------------------


def test_on_demand_cost_worked_example():
    plan = TrainPlan(model="llama-3.1-8b", method="qlora")
    offer = _offer("h100_sxm", price=2.0)
    r = evaluate_offer(plan, offer, resolve(plan))
    t = estimate_time(plan, "h100_sxm")
    assert r.fits and r.time.total_s == pytest.approx(t.total_s)
    # run cost = hours x 1 GPU x $2.00; billed = at least the 1-hour minimum
    assert r.run_cost_usd == pytest.approx(t.total_s / 3600 * 2.0)
    assert r.billed_cost_usd == pytest.approx(max(t.total_s / 3600, 1) * 2.0)
    assert r.expected_cost_usd == r.billed_cost_usd and r.expected_preemptions == 0
    assert r.min_rental_cost_usd == 2.0
    assert {"offer_id", "fits", "expected_cost_usd", "time"} <= set(r.as_dict())


def test_reserved_bills_whole_periods():
    plan = TrainPlan(model="llama-3.1-8b", method="qlora", dataset_tokens=40_000_000_000)
    r = evaluate_offer(plan, _offer("h100_sxm", mode="reserved", price=1.5, min_hours=720), resolve(plan))
    hours = r.time.total_s / 3600
    assert hours > 720  # ~2 h per 100 M tokens x 400: more than one month
    periods = math.ceil(hours / 720)
    assert r.billed_cost_usd == pytest.approx(periods * 720 * 1.5)
    assert r.min_rental_cost_usd == pytest.approx(720 * 1.5)


def test_interruptible_adds_expected_rework_and_recommends_an_interval():
    plan = TrainPlan(model="llama-3.1-8b", method="qlora")
    r = evaluate_offer(plan, _offer("l40s", mode="interruptible", price=0.4), resolve(plan),
                       preemption_rate_per_hour=0.2)
    t = r.time
    interval = plan.checkpoint_every_steps * t.step_time_s
    preemptions, lost, wall = preemption_cost(t.total_s, 0.2, interval)
    assert r.checkpoint_interval_s == pytest.approx(interval)
    assert r.expected_total_s == pytest.approx(wall) and r.expected_preemptions == pytest.approx(preemptions)
    assert r.expected_cost_usd == pytest.approx(wall / 3600 * 0.4)
    assert r.expected_cost_usd > r.billed_cost_usd
    # Young/Daly with the checkpoint write time and MTBF = 1/0.2 h = 18,000 s
    assert r.recommended_checkpoint_interval_s == pytest.approx(math.sqrt(2 * t.checkpoint_write_s * 18_000))
    assert r.recommended_checkpoint_every_steps == round(r.recommended_checkpoint_interval_s / t.step_time_s)
    notes = [reason for reason in r.reasons if reason.code == "offer.interruptible"]
    assert len(notes) == 1
    note = notes[0]
    assert note["preemptions"] == pytest.approx(preemptions) and note["lost_s"] == pytest.approx(lost)
    assert note["rate_per_hour"] == 0.2 and note["interval_s"] == pytest.approx(interval)
    assert note["recommended_s"] == r.recommended_checkpoint_interval_s
    assert note["recommended_steps"] == r.recommended_checkpoint_every_steps


def test_whole_nodes_are_rented():
    plan = TrainPlan(model="llama-3.1-8b", method="qlora")
    node = _offer("h100_sxm", gpus=8, link="nvlink_switch", price=3.0)
    used = evaluate_offer(plan, node, resolve(plan))
    assert used.billed_gpus == 8 and used.fit.plan.gpus == 8 and msg("change.gpus", old=1, new=8) in used.fit.changes
    assert msg("offer.whole_node_used", billed_gpus=8, needed_gpus=1) in used.reasons
    alone = evaluate_offer(plan, node, resolve(plan), use_whole_node=False)
    assert alone.billed_gpus == 8 and alone.fit.plan.gpus == 1
    assert msg("offer.whole_node_idle", per_node=8, used_gpus=1) in alone.reasons
    assert alone.run_cost_usd == pytest.approx(alone.time.total_s / 3600 * 8 * 3.0)
    assert used.time.total_s < alone.time.total_s and used.run_cost_usd < alone.run_cost_usd
    # more GPUs than a node has, and no network: cannot run
    big = evaluate_offer(plan.replace(gpus=16, sharding="zero3"), node, resolve(plan))
    assert not big.fits and big.reasons[0] == msg("offer.no_network", gpus=16, per_node=8)


# -- the catalog ---------------------------------------------------------------------------------------


def test_evaluate_offers_filters_and_ranks():
    plan = TrainPlan(model="llama-3.1-8b", method="qlora")
    results = evaluate_offers(plan)
    fits = [r for r in results if r.fits]
    unfit = [r for r in results if not r.fits]
    assert fits and unfit and results == fits + unfit  # offers that do not fit come last
    costs = [r.expected_cost_usd for r in fits]
    assert costs == sorted(costs)
    assert all(r.offer.gpu.memory_gb <= 24 for r in unfit)  # 29 GiB: 24 GB cards are out
    on_demand = evaluate_offers(plan, mode="on-demand", include_unfit=False)
    assert on_demand and all(r.offer.mode is Mode.ON_DEMAND and r.fits for r in on_demand)
    by_time = evaluate_offers(plan, sort="time", include_unfit=False)
    walls = [r.expected_total_s for r in by_time]
    assert walls == sorted(walls)
    cheap = evaluate_offers(plan, max_price_per_gpu_hour=1.0, min_vram_gb=40, region="us", gpu_class="server")
    assert all(r.offer.price_per_gpu_hour <= 1.0 and r.offer.region is Region.US for r in cheap)
    budget = evaluate_offers(plan, budget_usd=10.0, include_unfit=False)
    assert budget and all(r.expected_cost_usd <= 10.0 and r.within_budget for r in budget)


def test_deadline_ranking():
    plan = TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048)
    results = evaluate_offers(plan, sort="deadline", deadline_s=6 * 3600, include_unfit=False)
    meets = [r for r in results if r.meets_deadline]
    misses = [r for r in results if not r.meets_deadline]
    assert meets and misses and results == meets + misses
    assert [r.expected_cost_usd for r in meets] == sorted(r.expected_cost_usd for r in meets)
    assert [r.expected_total_s for r in misses] == sorted(r.expected_total_s for r in misses)
    with pytest.raises(PlanError, match="deadline_s"):
        evaluate_offers(plan, sort="deadline")
    with pytest.raises(PlanError, match="sort='cheapest'") as info:
        evaluate_offers(plan, sort="cheapest")
    assert info.value.msg.code == "error.offers.sort"
    assert info.value.text("ru") == "sort='cheapest' — не из списка: cost, time, deadline, price, vram"
    with pytest.raises(CatalogError, match="interruptible"):
        evaluate_offers(plan, mode="spot")


def test_price_and_vram_rankings_keep_unfit_offers_last() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, dataset_tokens=10**8)
    by_price = evaluate_offers(plan, sort="price")
    fits = [r for r in by_price if r.fits]
    assert fits and by_price[:len(fits)] == fits  # every offer that fits comes before every one that does not
    assert [r.offer.price_per_gpu_hour for r in fits] == sorted(r.offer.price_per_gpu_hour for r in fits)
    by_vram = [r for r in evaluate_offers(plan, sort="vram") if r.fits]
    assert [r.offer.gpu.memory_bytes for r in by_vram] == sorted((r.offer.gpu.memory_bytes for r in by_vram),
                                                                 reverse=True)


def test_nodes_are_billed_whole() -> None:
    node = next(o for o in load_offers() if o.gpus_per_node == 8)
    assert billed_nodes(1, node) == (1, 8)
    assert billed_nodes(8, node) == (1, 8)
    assert billed_nodes(9, node) == (2, 16)


def test_the_pricing_options_read_the_same_as_an_object_or_as_keywords() -> None:
    """evaluate_offers/evaluate_offer take their pricing as one frozen OfferOptions or as keywords (issue 22, item 6:
    no function with more than 8 parameters); both give the same offers, and a misspelt name is still refused."""
    from gpuwork.estimate.offers import OfferOptions, evaluate_offer
    from gpuwork.estimate.offers import evaluate_offers as evaluate_on
    from gpuwork.facts.catalog import load_offers

    plan = TrainPlan(model="llama-3.1-8b", method="lora", dataset_tokens=10**8)
    inputs, offers = resolve(plan), load_offers()
    options = OfferOptions(safety_margin=0.2, preemption_rate_per_hour=0.5, deadline_s=4 * 3600.0,
                           use_whole_node=False)
    by_object = evaluate_on(plan, offers, inputs, options=options, mode="interruptible", sort="time")
    by_name = evaluate_on(plan, offers, inputs, safety_margin=0.2, preemption_rate_per_hour=0.5,
                          deadline_s=4 * 3600.0, use_whole_node=False, mode="interruptible", sort="time")
    assert [r.as_dict() for r in by_object] == [r.as_dict() for r in by_name]
    assert by_object and all(r.offer.mode.value == "interruptible" for r in by_object)
    # the options are what they say: the margin shrinks the usable memory, the deadline is checked
    first = by_object[0]
    assert first.fit.usable_bytes == int(first.offer.gpu.memory_total_bytes * 0.8)
    assert first.meets_deadline == (first.expected_total_s <= 4 * 3600.0)
    one = evaluate_offer(plan, first.offer, inputs, options=options)
    assert one.as_dict() == first.as_dict()
    # a keyword overrides the object's field
    assert evaluate_offer(plan, first.offer, inputs, options=options, deadline_s=None).meets_deadline is None
    with pytest.raises(TypeError):
        evaluate_on(plan, offers, inputs, safety_margn=0.2)
    with pytest.raises(TypeError):
        evaluate_offer(plan, first.offer, inputs, budget=5)
