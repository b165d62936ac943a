"""Tests for gpuwork.estimate.fitmatrix: each cell agrees with the memory estimator and the offers' billing, the
largest batch and sequence are the boundary of what fits, and a plan's matrix is cached."""

from __future__ import annotations

import dataclasses
import time

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.fitmatrix import SEQ_STEP, clear_cache, fit_matrix
from gpuwork.estimate.offers import billed_hours, usable_memory_bytes
from gpuwork.facts.catalog import get_gpu, load_offers
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory, estimate_time
from gpuwork.sizing import fit_matrix as fit_matrix_plan

PLAN = TrainPlan(model="mistral-7b", method="qlora", seq_len=2048, grad_checkpointing=True)


def test_every_gpu_and_count_once() -> None:
    inputs = resolve(PLAN)
    m = fit_matrix(PLAN, load_offers(), inputs)
    assert set(m.gpu_ids) == set(inputs.gpus) and m.counts == (1, 2, 4, 8)
    assert len(m.cells) == 4 * len(inputs.gpus)
    memories = [m.cell(g, 1).usable_bytes for g in m.gpu_ids]
    assert memories == sorted(memories)  # rows by memory


def test_a_cell_is_the_memory_estimate_and_its_boundaries() -> None:
    m = fit_matrix_plan(PLAN)
    c = m.cell("rtx4090", 1)
    usable = usable_memory_bytes(get_gpu("rtx4090"))
    assert c.fits and c.usable_bytes == usable
    assert c.device_total_bytes == estimate_memory(PLAN).device_total_bytes
    assert c.headroom_bytes == usable - c.device_total_bytes > 0
    # the largest micro-batch fits and one more does not
    assert estimate_memory(PLAN.replace(batch_size=c.max_batch_size)).device_total_bytes <= usable
    assert estimate_memory(PLAN.replace(batch_size=c.max_batch_size + 1)).device_total_bytes > usable
    # the largest sequence (in SEQ_STEP steps) likewise
    assert c.max_seq_len % SEQ_STEP == 0 and c.max_seq_len >= PLAN.seq_len
    assert estimate_memory(PLAN.replace(seq_len=c.max_seq_len)).device_total_bytes <= usable
    assert estimate_memory(PLAN.replace(seq_len=c.max_seq_len + SEQ_STEP)).device_total_bytes > usable
    # cost: the cheapest offer of the RTX 4090 for one GPU, billed as the offers bill
    offer = next(o for o in load_offers() if o.offer_id == c.offer_id)
    assert offer.gpu_id == "rtx4090" and c.price_source == "offer"
    if offer.mode.value != "interruptible":
        t = estimate_time(PLAN, "rtx4090", link="pcie")
        assert c.cost_usd == pytest.approx(billed_hours(t.total_s / 3600, offer) * offer.price_per_gpu_hour)


def test_a_plan_that_needs_sharding_and_one_that_fits_nowhere() -> None:
    full = TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", seq_len=2048)
    m = fit_matrix_plan(full)
    one, two, four = m.cell("h100_sxm", 1), m.cell("h100_sxm", 2), m.cell("h100_sxm", 4)
    assert not one.fits and one.max_batch_size == 0 and one.total_s is None and one.cost_usd is None
    # ZeRO keeps 16 B per parameter (fp32 masters and AdamW states): 64 GB of model states on each of 2 GPUs
    # plus the step's fp32 temporaries do not fit 80 GB; 4 GPUs do
    assert not two.fits
    assert four.fits and four.plan.sharding.value in ("zero2", "zero3") and four.plan.gpus == 4
    assert four.device_total_bytes == estimate_memory(four.plan).device_total_bytes <= four.usable_bytes
    huge = fit_matrix_plan(TrainPlan(model="llama-3.1-70b", method="full", seq_len=2048), gpu_ids=["rtx4090"])
    assert not any(c.fits for c in huge.cells) and huge.cheapest() is None


def test_the_matrix_is_cached_per_plan() -> None:
    clear_cache()
    start = time.perf_counter()
    first = fit_matrix_plan(PLAN)
    cold_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    again = fit_matrix_plan(PLAN)
    warm_ms = (time.perf_counter() - start) * 1000
    assert again is first
    assert fit_matrix_plan(PLAN.replace(batch_size=2)) is not first
    print(f"fit matrix: {len(first.cells)} cells, {cold_ms:.0f} ms cold, {warm_ms:.2f} ms cached, "
          f"{first.memory_estimates} memory estimates")


def test_bad_counts_are_an_error() -> None:
    with pytest.raises(PlanError, match="counts"):
        fit_matrix_plan(PLAN, counts=(0, 2))


def test_the_cache_answers_anew_when_a_fact_or_an_option_changes() -> None:
    # the cache is keyed by every fact the matrix reads: equal facts hit it, a changed one does not
    inputs, offers = resolve(PLAN), load_offers()
    first = fit_matrix(PLAN, offers, inputs, gpu_ids=["rtx4090", "h100_sxm"])
    assert fit_matrix(PLAN, offers, dataclasses.replace(inputs), gpu_ids=["h100_sxm", "rtx4090"]) is first
    slower = fit_matrix(PLAN, offers, inputs, gpu_ids=["rtx4090", "h100_sxm"], time_options={"calibration": {"scale": 0.5}})
    assert slower is not first
    assert slower.cell("rtx4090", 1).total_s == pytest.approx(first.cell("rtx4090", 1).total_s * 2, rel=0.05)
    # a family switch lives outside ModelSpec equality (spec.extras): the cache still sees it
    spec = dataclasses.replace(inputs.spec, extras={**inputs.spec.extras, "params_final_norm": 10**9})
    other = fit_matrix(PLAN, offers, dataclasses.replace(inputs, spec=spec), gpu_ids=["rtx4090", "h100_sxm"])
    assert other is not first
