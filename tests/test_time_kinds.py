"""Every part a step's time can be split into has a name in both languages (the CLI and charts render them)."""

from __future__ import annotations

import pytest

from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan
from gpuwork.present.charts import TIME_COLORS
from gpuwork.present.messages import CATALOG, text, time_kind_code
from gpuwork.sizing import estimate_time

PLANS = {
    "offloaded optimizer (ZeRO-2)": TrainPlan(model="llama-3.2-1b", method="full", gpus=4, sharding="zero2",
                                              offload_optimizer=True),
    "offloaded parameters (ZeRO-3)": TrainPlan(model="llama-3.2-1b", method="full", gpus=4, sharding="zero3",
                                               offload_optimizer=True, offload_params=True),
    "Unsloth offloaded checkpoints": TrainPlan(model="llama-3.2-1b", method="lora", stack="unsloth",
                                               grad_checkpointing=True),
    "several GPUs": TrainPlan(model="llama-3.2-1b", method="full", gpus=8, sharding="fsdp"),
}


@pytest.mark.parametrize("kind", sorted(TIME_COLORS))
def test_each_step_part_has_its_name_in_both_languages(kind):
    code = time_kind_code(kind)
    assert code in CATALOG, code
    assert text(code, "en") and text(code, "ru") and text(code, "en") != text(code, "ru")


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_parts_an_estimate_gives_are_all_named(name):
    plan = PLANS[name]
    est = estimate_time(plan, resolve(plan).gpu("h100_sxm"))
    assert set(est.breakdown) <= set(TIME_COLORS), set(est.breakdown) - set(TIME_COLORS)
    for kind in est.breakdown:
        assert time_kind_code(kind) in CATALOG


def test_given_mfu_part_is_named():
    plan = TrainPlan(model="llama-3.2-1b")
    est = estimate_time(plan, resolve(plan).gpu("h100_sxm"), mfu=0.4)
    assert all(time_kind_code(kind) in CATALOG for kind in est.breakdown)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_apps_step_bar_colours_each_part_as_the_chart_does(name):
    """The app's stacked bar (ui.sizing_results.step_parts_html) and the step-time chart share one table: every
    part the estimate has shows in its chart colour, none in the grey of an unnamed part."""
    from gpuwork.present.charts import step_time_figure
    from gpuwork.ui.sizing_results import step_parts_html

    plan = PLANS[name]
    est = estimate_time(plan, resolve(plan).gpu("h100_sxm"))
    page = step_parts_html(est)
    shown = {part for part, seconds in est.breakdown.items() if seconds > 0}
    assert shown and all(f"background:{TIME_COLORS[part]};" in page for part in shown)
    assert "#888" not in page
    chart = {trace.marker.color for trace in step_time_figure(est).data}
    assert chart == {TIME_COLORS[part] for part in shown}
