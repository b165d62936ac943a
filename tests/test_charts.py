"""Charts are pure data -> figure: fixed traces, GiB on display, units and meanings in every axis title."""

from __future__ import annotations

import math
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from gpuwork.estimate.memory import GIB, MIB, TERM_LABELS
from gpuwork.facts.catalog import load_gpus, load_offers
from gpuwork.plan import TrainPlan
from gpuwork.present import charts
from gpuwork.sizing import estimate_memory

GPUS = load_gpus()
CARDS = [GPUS["rtx4090"], GPUS["h100_sxm"]]


def _axis_titles(fig: go.Figure) -> list[str]:
    layout = fig.layout.to_plotly_json()
    return [v["title"]["text"] for k, v in layout.items()
            if k.startswith(("xaxis", "yaxis")) and v.get("title", {}).get("text")]


def test_breakdown_stacks_every_term_in_gib_with_the_totals_and_card_lines() -> None:
    est = estimate_memory(TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048))
    fig = charts.memory_breakdown_figure(est, CARDS)
    assert fig.layout.barmode == "stack"
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in bars] == list(TERM_LABELS.values())
    for term, trace in zip(TERM_LABELS, bars, strict=True):
        assert trace.y[0] == pytest.approx(est.breakdown.get(term, 0) / GIB)
        assert trace.showlegend == (est.breakdown.get(term, 0) > 0)
    # the segments add up to the device total (what nvidia-smi shows)
    assert sum(t.y[0] for t in bars) == pytest.approx(est.device_total_bytes / GIB, rel=1e-9)
    totals = {t.name: t.y[0] for t in fig.data if t.type == "scatter"}
    assert totals == pytest.approx({"Peak allocated": est.peak_allocated_bytes / GIB,
                                    "Peak reserved": est.peak_reserved_bytes / GIB,
                                    "Device total": est.device_total_bytes / GIB})
    hovers = " ".join(t.hovertemplate for t in fig.data if t.type == "scatter")
    assert "max_memory_allocated" in hovers and "nvidia-smi" in hovers
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert [s.y0 for s in lines] == pytest.approx([g.memory_total_bytes / GIB for g in CARDS])
    assert any("RTX 4090" in a.text for a in fig.layout.annotations)
    titles = _axis_titles(fig)
    assert any("GiB" in t and "nvidia-smi" in t for t in titles), titles


def test_breakdown_compares_several_estimates_and_speaks_russian() -> None:
    ests = [estimate_memory(TrainPlan(model="qwen2.5-0.5b", method=m)) for m in ("full", "lora")]
    fig = charts.memory_breakdown_figure(ests, labels=["full", "lora"], lang="ru")
    assert list(fig.data[0].x) == ["full", "lora"]
    assert fig.data[0].name == "веса"
    assert "ГиБ" in " ".join(_axis_titles(fig))
    with pytest.raises(ValueError):
        charts.memory_breakdown_figure(ests, labels=["one"])


def test_whatif_marks_where_each_curve_runs_out_of_each_card() -> None:
    values = [1024, 2048, 4096]
    series = {"full": [10 * GIB, 30 * GIB, 90 * GIB], "lora": [5 * GIB, None, 20 * GIB]}
    fig = charts.whatif_figure(values, series, CARDS, field="seq_len", current=2048)
    assert [t.name for t in fig.data] == ["full", "lora", "runs out"]
    assert list(fig.data[0].y) == pytest.approx([10, 30, 90])
    assert fig.data[1].y[1] is None  # an invalid plan leaves a gap
    out = fig.data[-1]
    # full passes the 4090 (24 GiB) at 2048 and the H100 (79.6 GiB) at 4096; lora fits both
    assert list(out.x) == [2048, 4096]
    assert "RTX 4090" in out.text[0] and "H100" in out.text[1]
    assert fig.layout.xaxis.type == "log"
    titles = _axis_titles(fig)
    assert any("tokens" in t for t in titles) and any("GiB" in t and "nvidia-smi" in t for t in titles)
    assert any(s.name == "current" and s.x0 == 2048 for s in fig.layout.shapes)
    batch = charts.whatif_figure([1, 2], {"lora": [GIB, 2 * GIB]}, field="batch_size")
    assert any("micro-batch" in t for t in _axis_titles(batch))


def test_runs_out_at() -> None:
    assert charts.runs_out_at([1, 2, 3], [1.0, None, 5.0], 4.0) == 2
    assert charts.runs_out_at([1, 2], [1.0, 2.0], 4.0) is None


def _step(step: int, warm: bool) -> SimpleNamespace:
    return SimpleNamespace(step=step, is_warmup=warm, loss=9.0 - step / 10, step_time_s=0.1 * step,
                           tokens_per_s=1000.0 + step, trial_memory_bytes=(100 + step) * MIB)


def test_trial_curves_split_warmup_and_measured_per_metric() -> None:
    steps = [_step(1, True), _step(2, False), _step(3, False)]
    fig = charts.trial_figure(steps)
    assert len(fig.data) == 8  # (measured, warm-up) x (loss, step time, tokens/s, memory)
    loss, loss_warm, time_, _time_warm, _tps, _tps_warm, mem, _mem_warm = fig.data
    assert list(loss.x) == [2, 3] and list(loss_warm.x) == [1]
    assert list(time_.y) == pytest.approx([0.2, 0.3])
    assert list(mem.y) == pytest.approx([102, 103])  # MiB
    titles = _axis_titles(fig)
    assert any("tokens/s" in t for t in titles) and any("MiB" in t for t in titles) and any(", s" in t for t in titles)
    assert len(charts.trial_figure([]).data) == 8  # same traces before the first step (live widget)


def test_estimate_vs_measured_picks_the_unit() -> None:
    rows = [{"label": "peak memory", "estimated_bytes": 80 * MIB, "measured_bytes": 90 * MIB,
             "estimated_what": "tensors", "measured_what": "RSS"}]
    fig = charts.estimate_vs_measured_figure(rows)
    assert [t.name for t in fig.data] == ["estimate", "measured"]
    assert fig.data[0].y[0] == pytest.approx(80) and "MiB" in fig.layout.yaxis.title.text
    big = charts.estimate_vs_measured_figure([{**rows[0], "estimated_bytes": 3 * GIB}])
    assert "GiB" in big.layout.yaxis.title.text and big.data[1].y[0] == pytest.approx(90 / 1024)


def test_offers_scatter_one_trace_per_mode_only_fitting_finite_offers() -> None:
    from gpuwork.sizing import evaluate_offers

    results = evaluate_offers(TrainPlan(model="llama-3.1-8b", method="qlora"))
    fig = charts.offers_figure(results)
    assert [t.name for t in fig.data] == ["on-demand", "reserved", "interruptible"]
    plotted = sum(len(t.x) for t in fig.data)
    expected = [r for r in results if r.fits and math.isfinite(r.expected_total_s) and math.isfinite(r.expected_cost_usd)]
    assert plotted == len(expected) > 0
    first = next(r for r in expected if r.offer.mode.value == "on-demand")
    trace = fig.data[0]
    i = [t.split("</b>")[0].removeprefix("<b>") for t in trace.text].index(first.offer.offer_id)
    assert trace.x[i] == pytest.approx(first.expected_total_s / 3600) and trace.y[i] == pytest.approx(
        first.expected_cost_usd)
    assert fig.layout.xaxis.type == "log" and "hours" in fig.layout.xaxis.title.text
    assert "USD" in fig.layout.yaxis.title.text
    empty = charts.offers_figure([])
    assert sum(len(t.x or ()) for t in empty.data) == 0 and empty.layout.annotations
    assert load_offers()  # the catalog the chart was built from


def test_charts_never_call_estimators() -> None:
    import ast
    from pathlib import Path

    tree = ast.parse(Path(charts.__file__).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.attr for a in ast.walk(tree) if isinstance(a, ast.Attribute)}
    for forbidden in ("estimate_memory", "estimate_time", "estimate_disk", "evaluate_offers", "match_profile"):
        assert forbidden not in names, forbidden


def test_step_time_figure_stacks_the_breakdown_with_values():
    from gpuwork.present.charts import step_time_figure
    from gpuwork.sizing import estimate_time

    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    times = [estimate_time(plan, "h100_sxm"), estimate_time(plan.replace(gpus=2), "rtx4090")]
    fig = step_time_figure(times, lang="ru")
    assert fig.layout.barmode == "stack"
    by_name = {trace.name: trace for trace in fig.data}
    assert "умножения матриц" in by_name and "обмен, не скрытый вычислениями" in by_name
    matmul = by_name["умножения матриц"]
    assert list(matmul.x) == [t.breakdown["matmul"] for t in times]
    assert all(label.endswith(" с") for label in matmul.text)  # every segment says its value and unit
    # the segments of each bar add up to the priced step (less what the data feed adds)
    for i, t in enumerate(times):
        assert sum(trace.x[i] for trace in fig.data) == pytest.approx(t.step_time_s)


def test_scaling_figure_plots_tokens_per_gpu_and_efficiency():
    from gpuwork.present.charts import scaling_figure
    from gpuwork.sizing import scaling

    points = scaling(TrainPlan(model="llama-3.1-8b", method="full", seq_len=4096, gpus=8, sharding="fsdp"),
                     "h100_sxm")
    fig = scaling_figure(points, gpu_name="H100 SXM")
    tokens, efficiency = fig.data
    assert list(tokens.x) == [1, 2, 4, 8, 16, 32, 64]
    assert list(tokens.y) == [p.tokens_per_s_per_gpu for p in points]
    assert all(0 < y <= 100 for y in efficiency.y)
    assert "H100 SXM" in fig.layout.title.text


def test_breakdown_segments_carry_their_values() -> None:
    est = estimate_memory(TrainPlan(model="llama-3.2-1b", method="full", seq_len=2048))
    fig = charts.memory_breakdown_figure(est, CARDS)
    bars = [t for t in fig.data if t.type == "bar"]
    weights = bars[0]
    assert weights.text[0] == f"{est.breakdown['weights'] / GIB:.1f}" and weights.textposition == "inside"
    for trace in bars:  # a zero or tiny segment has no label; plotly hides one that does not fit
        assert (trace.text[0] == "") == (trace.y[0] < 0.05)
    assert fig.layout.uniformtext.mode == "hide"
    ru = charts.memory_breakdown_figure(est, lang="ru")
    assert "," in ru.data[0].text[0]  # the language's decimal comma


def test_whatif_curves_that_coincide_stay_visible() -> None:
    """scratch and full need the same memory: the later curve is dashed and thinner, drawn on top."""
    series = {"scratch": [2 * GIB, 4 * GIB], "full": [2 * GIB, 4 * GIB], "lora": [GIB, 2 * GIB]}
    fig = charts.whatif_figure([512, 1024], series)
    scratch, full, lora = fig.data[:3]
    assert list(scratch.y) == list(full.y)
    assert full.line.dash != scratch.line.dash and full.line.width < scratch.line.width
    assert full.marker.symbol != scratch.marker.symbol and full.marker.size < scratch.marker.size
    assert len({t.line.dash for t in (scratch, full, lora)}) == 3
