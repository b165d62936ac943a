"""The offers panel without a browser: filters, sorting, the cost-vs-time chart, trial records side by side."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest
from conftest import upload_value

from gpuwork.measure.trial import TrialRecord, run_trial
from gpuwork.plan import TrainPlan
from gpuwork.ui.common import quiet
from gpuwork.ui.offers import OffersPanel
from gpuwork.ui.trial import DEFAULT_TRIAL_PLAN

OFFER_PLAN = {"model": "llama-3.1-8b", "method": "qlora", "seq_len": 2048, "batch_size": 4}




@pytest.fixture(scope="module")
def trial_record(one_thread, tmp_path_factory: pytest.TempPathFactory) -> TrialRecord:
    """The trial panel's default trial (tiny-llama on the CPU), saved: a record to compare."""
    with quiet():  # as the trial panel runs it: library deprecation warnings stay out of the output
        return run_trial(TrainPlan.from_dict(DEFAULT_TRIAL_PLAN), steps=2, warmup=1,
                         out_dir=tmp_path_factory.mktemp("trials"))


def test_offers_filters_sorting_scatter_and_interruptible() -> None:
    panel = OffersPanel(OFFER_PLAN)
    assert panel.error is None and panel.results and all(r.fits for r in panel.results)
    assert "gpuwork-offers" in panel.table.value
    scatter = panel.scatter.figure
    assert [t.name for t in scatter.data] == ["on-demand", "reserved", "interruptible"]
    assert "Expected preemptions" in panel.interruptible.value

    panel.modes.value = ("interruptible",)
    assert {r.offer.mode.value for r in panel.results} == {"interruptible"}
    scatter = panel.scatter.figure  # the chart drawn for the new filters
    assert len(scatter.data[2].x) == len(panel.results) and len(scatter.data[0].x or ()) == 0
    panel.modes.value = ()
    assert "pick at least one" in panel.error and "gpuwork-error" in panel.message.value
    panel.modes.value = ("on-demand", "reserved", "interruptible")
    panel.sort.value = "price"
    prices = [r.offer.price_per_gpu_hour for r in panel.results]
    assert prices == sorted(prices)
    panel.max_price.value = 1.0
    assert all(r.offer.price_per_gpu_hour <= 1.0 for r in panel.results)
    panel.max_price.value = -1
    assert "must be a number >= 0" in panel.error
    panel.set_lang("ru")  # the panel re-checks its filters in the new language
    assert panel.error == f"{panel.max_price.description}: -1 — нужно число не меньше 0"
    panel.set_lang("en")
    panel.max_price.value = 0
    panel.include_unfit.value = True
    assert any(not r.fits for r in panel.results) or panel.results
    panel.preemption_rate.value = 0.5
    assert panel.error is None


def test_offers_with_a_plan_that_fits_nowhere_keep_working() -> None:
    panel = OffersPanel({"model": "llama-3.1-70b", "method": "full", "seq_len": 8192})
    panel.classes.value = ("consumer",)
    assert panel.error is None and "No offer passes" in panel.table.value
    panel.include_unfit.value = True
    assert panel.results and not any(r.fits for r in panel.results)


def test_compare_trial_records(trial_record: TrialRecord) -> None:
    panel = OffersPanel(OFFER_PLAN, with_request=False)
    assert "No trial records" in panel.compare.value
    panel.add_record(trial_record)
    assert "tiny-llama" in panel.compare.value and "Throughput (tokens/s)" in panel.compare.value and "tokens per s" not in panel.compare.value
    panel.record_price.value = 2.0
    assert "$" in panel.compare.value
    saved = Path(trial_record.saved_to)
    steps = next(saved.parent.glob("*.steps.jsonl"))
    # the record alone names its steps file, which is not there: one clear line, nothing added
    panel.record_upload.value = upload_value(saved.read_bytes(), "trial.json")
    assert len(panel.records) == 1 and steps.name in panel.error
    # picked together, the record and its steps file are one record
    panel.record_upload.value = (*upload_value(saved.read_bytes(), "trial.json"),
                                 *upload_value(steps.read_bytes(), steps.name))
    assert len(panel.records) == 2 and len(panel.records[1].steps) == len(trial_record.steps)
    panel.record_upload.value = upload_value(b"{}", "bad.json")
    assert "bad.json is not a gpuwork trial record" in panel.error
    from_file = OffersPanel(OFFER_PLAN, records=[trial_record.saved_to], with_request=False)
    assert len(from_file.records) == 1


def test_offers_panel_report_mode(shown: list) -> None:
    panel = OffersPanel(OFFER_PLAN, report=True)
    for part in ("filters", "table", "scatter", "interruptible", "compare", "request"):
        panel.show(part)
    assert sum(isinstance(o, go.Figure) for o in shown) == 1
    assert panel.scatter.figure is None
    assert any("gpuwork-request-text" in getattr(o, "data", "") for o in shown)


def test_offers_name_their_provider_and_filter_by_checkboxes() -> None:
    panel = OffersPanel(OFFER_PLAN, with_request=False)
    first = panel.results[0].offer
    assert f'data-offer-id="{first.offer_id}"' in panel.table.value and first.provider in panel.table.value
    assert f">{first.offer_id}<" not in panel.table.value  # the id is the tooltip; the cell reads as a name
    assert "Provider" in panel.table.value and "Provider" in panel.interruptible.value
    # a multiple choice is a row of checkboxes: ticking one off is a click, not Ctrl+click
    assert [b.description for b in panel.modes.boxes] == ["on-demand", "reserved", "interruptible"]
    panel.modes.boxes[0].value = False
    panel.modes.boxes[1].value = False
    assert panel.modes.value == ("interruptible",)
    assert {r.offer.mode.value for r in panel.results} == {"interruptible"}
    panel.set_lang("ru")  # relabelled, still ticked as before
    assert [b.value for b in panel.modes.boxes] == [False, False, True] and panel.modes.boxes[2].description == "прерываемая"


def test_every_number_of_the_offers_panel_is_typed_text_read_by_the_validation_layer() -> None:
    from gpuwork.ui.common import NumberText

    panel = OffersPanel(OFFER_PLAN, with_request=False)
    for control in (panel.max_price, panel.min_vram, panel.budget, panel.preemption_rate, panel.limit,
                    panel.record_price):
        assert isinstance(control, NumberText)
    panel.max_price.value = "1.5"
    assert panel.error is None and all(r.offer.price_per_gpu_hour <= 1.5 for r in panel.results)
    panel.max_price.value = "cheap"
    assert panel.error == "max_price='cheap' is not a number: write digits with a decimal point, e.g. 0.5 or 1e4"
    panel.max_price.value = "0"
    panel.limit.value = "3"
    assert panel.error is None and panel.table.value.count("gpuwork-offer-name") == 3
    panel.limit.value = "0"
    assert panel.error == f"{panel.limit.description}: 0 must be at least 1"
    panel.limit.value = "25"
    panel.preemption_rate.value = "1e-1"
    assert panel.error is None
    panel.record_price.value = "-2"
    assert "gpuwork-error" in panel.compare.value


def test_compare_formats_the_records_interval_drift_and_cost_range(trial_record: TrialRecord) -> None:
    from gpuwork.measure.trial import compare
    from gpuwork.ui.offers import compare_html

    row = compare([trial_record], 2.0)[0]
    page = compare_html([trial_record], 2.0)
    for key in ("cost_per_1m_tokens", "cost_per_1m_tokens_low", "cost_per_1m_tokens_high"):
        if row[key] is not None:
            assert f"${row[key]:.2f}" in page, key
    if row["step_time_half_width"] is not None:
        assert f"{row['step_time_half_width'] * 100:,.1f}%" in page
    if row["drift_per_100_steps"] is not None:  # over the steps measured, not extrapolated to 100 steps
        over = row["drift_per_100_steps"] * row["measured_steps"] / 100
        assert f"{over * 100:,.1f}%" in page
        assert f"{row['drift_per_100_steps'] * 100:,.1f}%" not in page or row["measured_steps"] == 100
    assert repr(row["drift_per_100_steps"]) not in page  # never the raw float
    assert "Step time change over the measured steps" in page and "Cost per 1 M tokens, from" in page


def test_the_comparison_says_what_each_column_counts_and_the_drift_over_the_measured_steps(
        trial_record: TrialRecord) -> None:
    """Human headers (issue 20, item 6): no record keys, and the drift over the steps the trial measured, not
    extrapolated to 100 steps (a short trial's -28.8 per 100 steps read as "drift -2,879 %")."""
    import dataclasses
    import html as html_lib

    from gpuwork.measure.record import compare
    from gpuwork.ui.offers import compare_html

    row = compare([trial_record], None)[0]
    for lang in ("en", "ru"):
        shown = html_lib.unescape(compare_html([trial_record], None, lang))
        headers = shown.split("<tbody>")[0]
        assert not [k for k in row if k in headers], [k for k in row if k in headers]
    summary = trial_record.summary
    if summary is None or not row.get("measured_steps"):
        return
    drifting = dataclasses.replace(trial_record, summary=dataclasses.replace(summary, drift_per_100_steps=-28.79))
    measured = compare([drifting], None)[0]["measured_steps"]
    shown = compare_html([drifting], None, "en")
    assert f"{-28.79 * measured:.1f}%" in shown and "-2,879.0%" not in shown


@pytest.mark.parametrize(("lang", "header"), [("en", "Bytes per trained parameter"),
                                              ("ru", "Байт на обучаемый параметр")])
def test_the_offers_table_shows_what_each_sharding_keeps_per_trained_parameter(lang: str, header: str) -> None:
    """The bytes per trained parameter of each row's plan, as the advisor and the answer say them (issue 20): a pure
    bf16 full fine-tune keeps 8 under DDP and 16 under ZeRO (fp32 masters), so the figure follows the row's
    sharding; adapters have no single figure (a dash)."""
    import re

    from gpuwork.estimate.memory import state_bytes_per_param
    from gpuwork.ui.common import ui
    from gpuwork.ui.offers import offer_results, offers_table_html, state_bytes_cell

    plan = TrainPlan(model="llama-3.1-8b", method="full", dataset_tokens=10**8)
    results = offer_results(plan)  # the plan as written (the panel prices the answer's changed plan)
    page = offers_table_html(results, lang)
    heads = re.findall(r"<th[^>]*>(.*?)</th>", page)
    col = heads.index(header)
    assert heads[col - 1] == ui("col_sharding", lang)  # right after the sharding
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", page)[1:]]
    assert len(rows) == len(results)
    seen = set()
    for r, cells in zip(results, rows, strict=True):
        per_param = state_bytes_per_param(r.fit.plan)
        assert cells[col] == state_bytes_cell(r.fit.plan, lang) == str(per_param)
        assert cells[col - 1] == r.fit.plan.sharding.value
        seen.add((r.fit.plan.sharding.value, per_param))
    assert ("ddp", 8) in seen and ("zero3", 16) in seen  # the figure is the sharding's, not the precision's
    note = "weights, gradients and optimizer states" if lang == "en" else "веса, градиенты и состояния оптимизатора"
    assert note in page
    lora = TrainPlan(model="llama-3.1-8b", method="lora")
    assert state_bytes_cell(lora, lang) == "–"
