"""The app's hidden tabs never hold another plan's results: a form change clears them until they are shown.

In the browser a tab's old content stayed on screen for the server's round-trip after the tab was opened
(the All GPUs matrix of a 70B plan under a 7B form); tests/test_app_tasks.py drives that in Chromium.
"""

from __future__ import annotations

from gpuwork.ui import app as app_view
from gpuwork.ui.app import build_app


def test_a_form_change_clears_every_hidden_tab_until_it_is_shown() -> None:
    app = build_app({"model": "llama-3.1-70b", "method": "full"})
    for index in range(len(app_view.TABS) - 1):  # every tab evaluated for the 70B plan
        app.tabs.selected_index = index
    assert app.fit.matrix is not None and "70b" in app.request.text.value.lower()
    app.tabs.selected_index = 0
    app.sizing.controls["model"].value = "mistral-7b"
    assert app.advice.status.value == "" and not app.advice.rows.children and app.advice.advice is None
    assert app.fit.table.value == "" and app.fit.matrix is None
    assert app.offers.table.value == "" and app.offers.results == []
    assert app.offers.scatter.box.layout.visibility == "hidden"
    assert app.request.text.value == "" and app.request.links.value == "" and app.request.request is None
    for name, panel in (("advice", app.advice), ("fit", app.fit), ("offers", app.offers)):
        app.tabs.selected_index = app_view.TABS.index(name)
        assert panel.plan == app.plan and panel.plan.model == "mistral-7b"
    assert app.fit.matrix.plan == app.plan and app.offers.results[0].fit.plan.model == "mistral-7b"
    assert app.offers.scatter.box.layout.visibility == "visible"
    app.tabs.selected_index = app_view.TABS.index("request")
    assert "Mistral-7B" in app.request.text.value and "70B" not in app.request.text.value


def _reachable(widget, seen: set[int] | None = None) -> set[int]:
    """The ids of the widgets a page would draw for ``widget``: it and every widget its traits hold."""
    import ipywidgets as widgets

    seen = set() if seen is None else seen
    if id(widget) in seen:
        return seen
    seen.add(id(widget))
    for name in widget.keys:
        value = getattr(widget, name, None)
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, widgets.Widget):
                _reachable(item, seen)
    return seen


def test_the_first_paint_draws_the_sizing_tab_only_and_a_tab_fills_when_first_shown() -> None:
    app = build_app(None)
    first_paint = len(_reachable(app))
    assert "gpuwork-sizing" in app.tabs.children[0]._dom_classes
    assert all(slot.children == () for slot in app.tabs.children[1:])  # empty slots: nothing to draw yet
    offers = app_view.TABS.index("offers")
    app.tabs.selected_index = offers
    (view,) = app.tabs.children[offers].children
    assert "gpuwork-offers" in view._dom_classes
    assert app.offers.results and app.offers.results[0].fit.plan == app.plan
    for index in range(len(app.tabs.children)):
        app.tabs.selected_index = index
    app.tabs.selected_index = offers  # shown again: the same view, not a second one
    assert app.tabs.children[offers].children == (view,)
    # the hidden tabs held over half of the page's widgets
    assert first_paint < 0.6 * len(_reachable(app))
