"""The published time cases are a usable evaluation set: broad, resolvable and well-formed."""

from __future__ import annotations

import math

import pytest

from gpuwork.errors import CatalogError
from gpuwork.facts.catalog import get_gpu
from gpuwork.measure.time_cases import EXTRA_GPUS, METRICS, TIME_CASES, TimeCase
from gpuwork.plan import Method, TrainPlan
from gpuwork.sizing import estimate_memory


def _gpu(gpu_id: str):
    return EXTRA_GPUS[gpu_id] if gpu_id in EXTRA_GPUS else get_gpu(gpu_id)


def test_at_least_thirty_cases_from_six_sources():
    assert len(TIME_CASES) >= 30
    assert len({c.source_id for c in TIME_CASES}) >= 6


def test_names_are_unique():
    names = [c.name for c in TIME_CASES]
    assert len(names) == len(set(names))


def test_gpu_counts_span_one_to_at_least_sixty_four():
    counts = {c.plan.gpus for c in TIME_CASES}
    assert min(counts) == 1
    assert max(counts) >= 64
    assert any(1 < n <= 8 for n in counts)  # a single multi-GPU node as well


def test_every_method_that_trains_a_language_model_is_covered():
    methods = {c.plan.method for c in TIME_CASES}
    assert {Method.LORA, Method.QLORA, Method.FULL, Method.SCRATCH} <= methods


def test_consumer_and_data_centre_cards_are_both_covered():
    classes = {_gpu(c.gpu_id).gpu_class.value for c in TIME_CASES}
    assert {"consumer", "server"} <= classes


def test_every_gpu_id_resolves():
    for case in TIME_CASES:
        assert _gpu(case.gpu_id).gpu_id == case.gpu_id, case.name


def test_extra_gpus_are_not_in_the_catalog():
    for gpu_id in EXTRA_GPUS:
        with pytest.raises(CatalogError):
            get_gpu(gpu_id)


def test_every_measurement_is_finite_positive_and_in_a_known_metric():
    for case in TIME_CASES:
        assert case.metric in METRICS, case.name
        assert math.isfinite(case.measured) and case.measured > 0, case.name
        assert case.source and case.source_id, case.name


def test_a_run_time_comes_with_its_sample_count_and_matches_the_rate():
    for case in TIME_CASES:
        if case.measured_time_s is None:
            assert case.samples is None, case.name
            continue
        assert case.samples and case.metric == "samples_per_s", case.name
        # the HF docs print both, rounded; elsewhere the rate is derived from the time
        assert case.samples / case.measured_time_s == pytest.approx(case.measured, rel=0.01), case.name


def test_every_plan_builds_a_memory_estimate():
    for case in TIME_CASES:
        est = estimate_memory(case.plan)
        assert est.peak_allocated_bytes > 0, case.name


def test_a_case_with_an_unknown_metric_or_a_bad_value_is_refused():
    plan = TrainPlan()
    with pytest.raises(ValueError, match="metric"):
        TimeCase(name="x", plan=plan, gpu_id="h100_sxm", metric="tokens/s", measured=1.0, source="s", source_id="s")
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="measured"):
            TimeCase(name="x", plan=plan, gpu_id="h100_sxm", metric="step_s", measured=bad, source="s", source_id="s")


def test_only_cases_that_name_an_older_transformers_loop_over_experts():
    looped = [c for c in TIME_CASES if c.moe_experts is not None]
    assert {c.moe_experts for c in looped} == {"loop"}
    # the fms-acceleration runs state transformers 4.48.1 (MixtralSparseMoeBlock loops over nn.Linear experts)
    assert {c.source_id for c in looped} == {"fms-acceleration"}
    assert all("transformers 4.48.1" in c.notes for c in looped)
    assert {c.name for c in looped if "Mixtral" in c.name} == {"fms Mixtral-8x7B QLoRA 1xA100",
                                                               "fms Mixtral-8x7B LoRA FSDP 2xA100"}
