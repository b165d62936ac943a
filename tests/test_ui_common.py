"""What the panels share: labels, one-line errors, display formatting, plan input and live chart updates."""

from __future__ import annotations

import logging

import plotly.graph_objects as go
import pytest

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.plan import TrainPlan
from gpuwork.ui.common import (
    LiveFigure,
    error_html,
    friendly,
    plan_from,
    sync_figure,
    table_html,
    ui,
)


def test_labels_fall_back_to_english() -> None:
    assert ui("method", "ru") == "Метод" and ui("method") == "Method"
    assert ui("method", "de") == "Method"  # an unknown language
    with pytest.raises(KeyError):
        ui("no-such-label")


def test_errors_are_one_escaped_line_and_a_bug_says_so(caplog: pytest.LogCaptureFixture) -> None:
    assert error_html("a <b>\n  c") == ('<div class="gpuwork-error" style="color:#c62828;font-weight:600">'
                                       "a &lt;b&gt; c</div>")
    assert friendly(PlanError("seq_len", "seq_len=0:\n use >= 1")) == "seq_len=0: use >= 1"
    with caplog.at_level(logging.ERROR, logger="gpuwork.ui.common"):
        assert friendly(GpuworkError("fine")) == "fine"
        assert not caplog.records  # a user's mistake is not logged as a bug
        line = friendly(RuntimeError("boom"))
    assert line.startswith("unexpected error (RuntimeError: boom); this is a bug in gpuwork")
    assert [r.exc_info[0] for r in caplog.records] == [RuntimeError]  # logged with its traceback


def test_table_html_aligns_the_chosen_columns_right() -> None:
    out = table_html(("a", "b"), [("x", "1")], "t", right=(1,))
    assert out.startswith('<table class="t"')
    assert '<td style="text-align:left;padding:2px 8px">x</td>' in out
    assert '<td style="text-align:right;white-space:nowrap;padding:2px 8px">1</td>' in out


def test_plan_from_accepts_a_plan_fields_a_saved_plan_or_nothing() -> None:
    plan = TrainPlan(model="tiny-llama", seq_len=64)
    assert plan_from(plan) is plan
    assert plan_from({"model": "tiny-llama", "seq_len": 64}) == plan
    assert plan_from({"plan": {"model": "tiny-llama", "seq_len": 64}, "memory": {}}) == plan
    assert plan_from(None) == TrainPlan()
    assert plan_from({"seq_len": 64}, {"model": "tiny-llama", "seq_len": 32}) == plan
    with pytest.raises(PlanError, match="seq_len"):
        plan_from({"seq_len": 0})


def test_sync_figure_updates_in_place_or_replaces_the_traces() -> None:
    target = go.FigureWidget(go.Figure(go.Bar(x=["a"], y=[1]), layout={"title": {"text": "one"}}))
    bar = target.data[0]
    sync_figure(target, go.Figure(go.Bar(x=["a"], y=[2]), layout={"title": {"text": "two"}}))
    assert target.data[0] is bar and list(bar.y) == [2] and target.layout.title.text == "two"
    sync_figure(target, go.Figure([go.Scatter(x=[1], y=[3]), go.Scatter(x=[1], y=[4])]))
    assert [t.type for t in target.data] == ["scatter", "scatter"] and list(target.data[1].y) == [4]


def test_a_deferred_chart_waits_for_the_first_to_render() -> None:
    first = LiveFigure("first")
    second = LiveFigure("second", after=first)
    second.show(go.Figure(go.Bar(y=[1])))
    assert second.widget is None and second.pending is not None
    first.show(go.Figure(go.Bar(y=[2])))
    first.widget._js2py_traceDeltas = {"trace_deltas": [], "trace_edit_id": 0}  # what the browser sends
    assert second.pending is None and list(second.widget.data[0].y) == [1]
    assert second.box.children == (second.widget,)
