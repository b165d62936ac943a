"""What the panels share: labels, one-line errors, display formatting, plan input and live chart updates."""

from __future__ import annotations

import ast
import base64
import json
import logging
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.plan import TrainPlan
from gpuwork.ui.common import (
    PLOTLY_BASIC_TRACES,
    PLOTLY_BASIC_URL,
    PLOTLY_MIME,
    LiveFigure,
    error_html,
    friendly,
    plan_from,
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


def test_a_live_figure_sends_plotly_json_and_replaces_it() -> None:
    chart = LiveFigure("gpuwork-x")
    assert chart.figure is None and chart.out.outputs == () and "gpuwork-x" in chart.box._dom_classes
    chart.show(go.Figure(go.Bar(x=["a"], y=[1.5]), layout={"title": {"text": "one"}}))
    chart.show(go.Figure(go.Bar(x=["a"], y=[2.5]), layout={"title": {"text": "two"}}))
    (output,) = chart.out.outputs  # one output, replaced: the page never shows two charts
    sent = output["data"][PLOTLY_MIME]
    assert sent["data"][0]["y"] == [2.5] and sent["layout"]["title"]["text"] == "two"
    assert sent["config"]["displaylogo"] is False and chart.figure.layout.title.text == "two"
    chart.show(go.Figure(go.Bar(x=["a", "b"], y=np.array([1.5, 3.0]))))
    sent = json.loads(json.dumps(chart.out.outputs[0]["data"][PLOTLY_MIME]))  # plain JSON, as the comm sends it
    y = sent["data"][0]["y"]  # numpy arrays travel as plotly.js typed arrays (base64)
    assert np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]).tolist() == [1.5, 3.0]


def _drawn_by_fallback(html_text: str) -> dict:
    """The figure JSON inside a text/html fallback, as the page's script reads it."""
    (fig,) = re.findall(r"var fig = (.*);\n", html_text)
    return json.loads(fig.replace("<\\/", "</"))


def test_a_live_figure_carries_a_fallback_that_draws_the_same_json_with_the_basic_bundle() -> None:
    chart = LiveFigure("gpuwork-x")
    chart.show(go.Figure(go.Bar(x=["</script><b>x"], y=[1.5])))
    first = chart.out.outputs[0]["data"]
    chart.show(go.Figure(go.Bar(x=["</script><b>x"], y=[1.5])))
    second = chart.out.outputs[0]["data"]
    page = first["text/html"]
    assert _drawn_by_fallback(page) == first[PLOTLY_MIME]  # the same figure, config included
    assert "</script><b>" not in page  # a label cannot end the script
    assert page.count("</script>") == 1 and f'"{PLOTLY_BASIC_URL}"' in page
    # each output draws into its own element: an update never draws into the chart it replaces
    ids = [re.search(r'id="(gpuwork-plot-[0-9a-f]+)"', d["text/html"]).group(1) for d in (first, second)]
    assert ids[0] != ids[1]
    assert first["text/html"].count(ids[0]) == 2 and second["text/html"].count(ids[1]) == 2  # the element, its lookup


NOTEBOOKS = Path(__file__).resolve().parent.parent / "gpuwork" / "ui" / "notebooks"


def test_the_basic_bundle_is_plotlys_own_version_and_holds_every_trace_the_charts_use() -> None:
    from plotly.basedatatypes import BaseTraceType
    from plotly.offline import get_plotlyjs_version

    bundle = NOTEBOOKS / PLOTLY_BASIC_URL.removeprefix("voila/files/")
    head = bundle.read_text(encoding="utf-8")[:200]
    assert re.search(r"plotly\.js \(basic - minified\) v(\S+)", head).group(1) == get_plotlyjs_version(), (
        "update gpuwork/ui/notebooks/static/plotly-basic.min.js to the plotly.js version plotly ships "
        "(npm: plotly.js-basic-dist-min)")
    assert (bundle.parent / "plotly-basic.LICENSE.txt").read_text().startswith("MIT License")
    # every trace the package builds (go.Bar, go.Scatter, ...) is one the basic bundle draws
    used = set()
    for path in (Path(__file__).resolve().parent.parent / "gpuwork").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "go":
                cls = getattr(go, node.attr, None)
                if isinstance(cls, type) and issubclass(cls, BaseTraceType):
                    used.add(cls().type)
    assert used and used <= PLOTLY_BASIC_TRACES, used - PLOTLY_BASIC_TRACES
