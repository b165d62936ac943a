"""The Voila app: tabs Sizing / Advice / All GPUs / Offers / Request / Demo trial over one plan, in English or Russian.

``notebooks/app.ipynb`` only calls ``build_app()``. The panels come from ``gpuwork.ui.sizing``,
``offers``, ``request`` and ``trial`` (state + pure update + thin view, shared pieces in
``gpuwork.ui.common``); this module wires them together:

- one state: the app holds one plan (``App.plan``, the form's) or one error (``App.error``); every valid change
  is handed to the Advice, All GPUs, Offers and Request tabs, which re-evaluate when they are shown (so typing
  in the form stays fast); an invalid input replaces every tab's results with the error, so no tab ever shows
  another plan's numbers;
- the advisor's "Apply" sets the form to the changed plan (and so every tab); it prices on the Offers tab's
  filters, so its suggestion and the offers' top row agree;
- the plan comes from the page's URL query (``gpuwork.ui.share``: ``?model=llama-3.1-8b&method=qlora&lang=ru``),
  read in the page's own kernel; a bad value shows the validation message. In a preheated kernel (Voila's
  ``preheat_kernel``) the app is built first with the default plan, and the query is applied when the visitor
  arrives;
- the language switch relabels every tab and rewrites the rental request;
- the demo trial is guarded: tiny models on the CPU, a few steps (the ramp too); its record joins the
  Offers tab's side-by-side comparison;
- expensive actions ("Verify exactly", the demo trial with its ramp) wait in the server's one bounded line
  (``gpuwork.ui.queue``) and say "waiting (n ahead)";
- uploads (config.json, trial records) are read as the bytes sent, at most 1 MB, never as a path; served by
  Voila (``public``), errors name no server path and an unexpected one shows a reference, not its text.

Example:
    >>> app = build_app()
    >>> app.sizing.controls["seq_len"].value = 4096  # charts and totals re-render
    >>> app.sizing.memory.device_total_bytes > 0
    True

Limitations: one plan per page (each Voila page gets its own kernel); the demo trial proves the
pipeline on this machine's CPU, not a GPU's speed.
"""

from __future__ import annotations

import contextlib
import html
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

# Startup time of the Voila page: plotly's FigureWidget imports nbformat, whose jsonschema imports the
# optional ``rfc3987_syntax`` package (when installed) to check IRI formats; building its grammar takes
# 2-6 s on a 2-core machine, a third of the page's first render. Nothing in this kernel validates IRIs,
# so the app's kernel goes without it (jsonschema then skips that format check).
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import ipywidgets as widgets  # noqa: E402

from gpuwork.errors import GpuworkError  # noqa: E402
from gpuwork.estimate.memory import GIB  # noqa: E402
from gpuwork.message import msg  # noqa: E402
from gpuwork.plan import TrainPlan  # noqa: E402
from gpuwork.ui import common  # noqa: E402
from gpuwork.ui.advice import AdvicePanel, FitMatrixPanel  # noqa: E402
from gpuwork.ui.common import (  # noqa: E402
    LANGS,
    error_html,
    friendly,
    note_html,
    one_line,
    plan_from,
    run_in_thread,
    ui,
)
from gpuwork.ui.offers import OffersPanel  # noqa: E402
from gpuwork.ui.request import RequestPanel  # noqa: E402
from gpuwork.ui.share import (  # noqa: E402
    address_bar_html,
    page_link_query,
    page_query,
    plan_from_query,
)
from gpuwork.ui.sizing import SizingForm  # noqa: E402
from gpuwork.ui.trial import TrialPanel  # noqa: E402

# The notebook's heading, the same in every language; the app shows its subtitle (ui("title")) in the chosen one.
TITLE = "gpuwork"
TABS = ("sizing", "advice", "fit", "offers", "request", "trial")


def served_by_voila() -> bool:
    """True in a kernel Voila started for a visitor (Voila puts SERVER_SOFTWARE=voila/<version> in its env), or
    preheated for the next one (VOILA_PREHEAT: the visitor's variables arrive only with the visitor)."""
    return (os.environ.get("SERVER_SOFTWARE", "").startswith("voila/")
            or os.environ.get("VOILA_PREHEAT", "False") == "True")


def preheated() -> bool:
    """True in a kernel Voila started before its visitor (``preheat_kernel``): the page's query comes later."""
    return os.environ.get("VOILA_PREHEAT", "False") == "True" and not os.environ.get("SERVER_SOFTWARE")


def query_lang(query: str) -> str | None:
    """The ``lang`` of a page query ("en" or "ru"), or None."""
    values = parse_qs(query.lstrip("?")).get("lang")
    return values[-1] if values and values[-1] in LANGS else None


class AppSizingForm(SizingForm):
    """The app's sizing form: "Verify exactly" waits in the server's line (``queue``, default the shared one)
    and shows "waiting (n ahead)" meanwhile; a second press while it waits or runs is refused."""

    def __init__(self, *args: Any, queue: Any = None, **kwargs: Any):
        self.queue = queue
        self._queued = threading.Lock()
        super().__init__(*args, **kwargs)

    def _waiting(self, ahead: int) -> None:
        self.verify_out.value = note_html(html.escape(ui("queue_waiting", self.lang, n=ahead)), common.NOTE_COLOR,
                                          cls="gpuwork-waiting")

    def queued(self, action: Callable[[], Any]) -> Any:
        """Run ``action`` in its turn; a full line or a second press shows one line instead."""
        if not self._queued.acquire(blocking=False):
            self.verify_out.value = error_html(ui("busy", self.lang))
            return None
        try:
            if self.queue is None:
                from gpuwork.ui.queue import shared_queue

                self.queue = shared_queue()
            return self.queue.run(action, on_wait=self._waiting)
        except GpuworkError as exc:
            self.verify_out.value = error_html(friendly(exc, self.lang))
            return None
        finally:
            self._queued.release()

    def _start(self, action: Callable[[], Any]) -> None:
        run_in_thread(action.__name__, lambda: self.queued(action))


def record_from_upload(item: Mapping[str, Any]) -> Any:
    """A TrialRecord from one uploaded file's bytes (at most common.UPLOAD_LIMIT_BYTES); never opens a path.

    Raises GpuworkError naming the file and what is wrong with it.
    """
    from gpuwork.measure.record import TrialRecord

    data = common.upload_json(item, "record")
    name = common.upload_name(item, "record.json")
    if not isinstance(data, dict):
        raise GpuworkError(msg("error.upload.not_record", name=name, reason="not a JSON object"))
    try:
        return TrialRecord.from_dict(data)
    except GpuworkError as exc:
        raise GpuworkError(msg("error.upload.not_record", name=name, reason=one_line(exc.text("en")))) from None
    except KeyError as exc:
        raise GpuworkError(msg("error.upload.not_record", name=name, reason=f"no field {exc}")) from None
    except (TypeError, ValueError, AttributeError, RecursionError):
        raise GpuworkError(msg("error.upload.not_record", name=name, reason="fields of the wrong kind")) from None


class App(widgets.VBox):
    """The whole app: a header with the language switch, then the tabs.

    State: ``plan`` (the form's valid plan, or None) and ``error`` (the one-line message while it is invalid);
    every tab renders from them. Attributes: ``sizing`` (SizingForm), ``advice`` (AdvicePanel), ``fit``
    (FitMatrixPanel), ``offers`` (OffersPanel), ``request`` (RequestPanel), ``trial`` (TrialPanel in demo mode,
    or None), ``tabs`` and ``lang_toggle``.

    ``query``: a page's URL query (``?model=...&lang=ru``) applied over ``plan``; a bad value starts from the
    default plan with the validation message shown.
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en",
                 demo_trial: bool = True, queue: Any = None, query: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.plan: TrainPlan | None = None
        self.error: str | None = None
        lang = query_lang(query) or lang
        self.lang = lang if lang in LANGS else "en"
        start_error = None
        if query:
            try:
                plan = plan_from_query(query, base=plan_from(plan) if plan is not None else None)
            except GpuworkError as exc:
                start_error = friendly(exc, self.lang)
        self.intro = widgets.HTML(layout={"flex": "1 1 auto"})
        self.intro.add_class("gpuwork-intro")
        # each language named in full, in itself, whatever the page's language
        self.lang_toggle = widgets.ToggleButtons(options=[(ui("lang_name.en"), "en"), (ui("lang_name.ru"), "ru")],
                                                 value=self.lang, tooltips=[ui("lang_label", "en"),
                                                                            ui("lang_label", "ru")],
                                                 style={"button_width": "auto", "description_width": "auto"},
                                                 layout={"width": "auto"})
        self.lang_toggle.add_class("gpuwork-lang")
        self.address = widgets.HTML(layout={"display": "none"})  # the address bar follows the form
        self.address.add_class("gpuwork-address-box")
        self._address_serial = 0
        self.sizing = AppSizingForm(plan, lang=self.lang, queue=queue)
        self.offers = OffersPanel(lang=self.lang, with_request=False)
        # records are read here, from the bytes sent (the panel's own reader also accepts a path)
        with contextlib.suppress(ValueError, AttributeError):
            self.offers.record_upload.unobserve(self.offers._on_records, names="value")
        self.offers.record_upload.observe(self._on_records, names="value")
        # the request asks for the offer the Offers tab ranks first and the advisor prices on
        self.request = RequestPanel(lang=self.lang, show_lang=False, filters=self.offers.offer_filters,
                                    have=self.offers.have_cards)
        # the advisor prices on the Offers tab's filters: its best suggestion is the offers' top row
        self.advice = AdvicePanel(lang=self.lang, filters=self.offers.offer_filters, have=self.offers.have_cards)
        # the Sizing tab's profile is the one answer under the same filters and owned cards (gpuwork.estimate.decision)
        self.sizing.filters, self.sizing.have = self.offers.offer_filters, self.offers.have_cards
        self.advice.on_apply(self.apply_plan)
        self.offers.on_filters(self._on_filters)
        self.fit = FitMatrixPanel(lang=self.lang, decide=self._decide)
        self.trial = TrialPanel(demo=True, lang=self.lang, queue=queue) if demo_trial else None
        views = [self.sizing.view(), self.advice.view(), self.fit.view(), self.offers.view(), self.request.view()]
        if self.trial is not None:
            views.append(self.trial.view())
            self.trial.listeners.append(self.offers.add_record)
        # a hidden tab's widgets are drawn when it is first shown: the first paint draws the Sizing tab only
        self._views = views
        self.tabs = widgets.Tab(children=[views[0], *(widgets.VBox(layout={"width": "100%"}) for _ in views[1:])])
        self.tabs.add_class("gpuwork-tabs")
        self.sizing.on_plan(self._on_plan)
        self.sizing.on_error(self._on_invalid)
        self.tabs.observe(self._on_tab, names="selected_index")
        self.lang_toggle.observe(lambda change: self.set_lang(change["new"]), names="value")
        self.children = [widgets.HBox([self.intro, self.lang_toggle, self.address],
                                      layout={"justify_content": "space-between", "align_items": "flex-start"}),
                         self.tabs]
        self.add_class("gpuwork-app")
        self._apply_labels()
        if start_error is not None:
            self.sizing._show_error(start_error)  # the listeners clear the other tabs
        elif self.sizing.plan is not None:
            self._on_plan(self.sizing.plan)
        else:
            self._on_invalid(self.sizing.error or ui("invalid", self.lang))

    def _on_records(self, change: Any) -> None:
        for item in change["new"] or ():
            try:
                record = record_from_upload(item)
            except GpuworkError as exc:
                self.offers.error = friendly(exc, self.lang)
                self.offers.message.value = error_html(self.offers.error)
                continue
            self.offers.add_record(record)

    def _follow_address(self) -> None:
        """Put this page's query (the plan and the language) in the browser's address bar (served pages only)."""
        if not served_by_voila():
            return
        self._address_serial += 1
        self.address.value = address_bar_html(self.query(), self._address_serial)

    def _apply_labels(self) -> None:
        self.lang_toggle.description = ui("lang_label", self.lang)
        self.intro.value = (f'<h3 class="gpuwork-title" style="margin:0 0 4px 0">{ui("title", self.lang)}</h3>'
                            f'<p style="margin:0 12px 6px 0;max-width:1100px">{ui("intro", self.lang)}</p>')
        self.tabs.titles = tuple(ui(f"tab_{name}", self.lang) for name in TABS[: len(self.tabs.children)])

    def _current(self) -> str:
        index = self.tabs.selected_index
        return TABS[index] if index is not None else "sizing"

    def _on_plan(self, plan: TrainPlan) -> None:
        """A new valid plan: the hidden tabs re-evaluate when they are shown."""
        self.plan, self.error = plan, None
        self.advice.set_plan(plan, lazy=True)
        self.fit.set_plan(plan, lazy=True)
        self.offers.set_plan(plan, lazy=True)
        self.request.set_plan(plan, lazy=True)
        self._request_stale = True
        self._refresh_visible()
        self._follow_address()

    def _on_invalid(self, error: str) -> None:
        """The form's input is invalid: every other tab drops its results and says so (one state)."""
        self.plan, self.error = None, error
        message = ui("invalid_tab", self.lang, error=error)
        for panel in (self.advice, self.fit, self.offers, self.request):
            panel.invalidate(message)
        self._request_stale = False

    def _on_filters(self) -> None:
        """The Offers tab's filters changed: the advice and the request, priced on them, are evaluated again when
        shown."""
        if self.plan is not None:
            self.advice.set_plan(self.plan, lazy=True)
            self.fit.set_plan(self.plan, lazy=True)  # its answer line is decided under these filters
            self.request.set_plan(self.plan, lazy=True)
            self._request_stale = True
            self.sizing.redecide()  # its profile line is decided under these filters too
            self._refresh_visible()

    def _decide(self, plan: TrainPlan) -> Any:
        """The one answer for ``plan`` under the Offers tab's filters and owned cards, as every tab shows it."""
        from gpuwork import sizing
        from gpuwork.estimate.decision import Constraints

        filters = {k: v for k, v in self.offers.offer_filters().items() if v is not None}
        return sizing.decide(plan, constraints=Constraints(filters=filters, have=self.offers.have_cards()))

    def apply_plan(self, plan: TrainPlan | Mapping[str, Any]) -> None:
        """Set the form to ``plan`` (an advisor's suggestion, a link's plan): every tab follows."""
        self.sizing.apply_plan(plan)

    def query(self) -> str:
        """The URL query that reproduces this page: the plan's fields and the language ("" while invalid)."""
        if self.plan is None:
            return ""
        return page_link_query(self.plan, self.lang)

    def follow_page_query(self) -> None:
        """Apply the page's URL query (read in this kernel: ``gpuwork.ui.share.page_query``; in a preheated
        kernel it waits for the visitor). A bad value shows the validation message."""
        query = page_query()
        if not query:
            return
        lang = query_lang(query)
        if lang is not None and lang != self.lang:
            self.set_lang(lang)
        try:
            plan = plan_from_query(query)
        except GpuworkError as exc:
            self.sizing._show_error(friendly(exc, self.lang))
            return
        self.apply_plan(plan)

    def _on_tab(self, _change: Any) -> None:
        index = self.tabs.selected_index
        if index is not None:
            slot = self.tabs.children[index]
            if slot is not self._views[index] and not slot.children:
                slot.children = (self._views[index],)
        self._refresh_visible()

    def _refresh_visible(self) -> None:
        current = self._current()
        if current == "advice":
            self.advice.refresh_if_stale()
        elif current == "fit":
            self.fit.refresh_if_stale()
        elif current == "offers":
            self.offers.refresh_if_stale()
        elif current == "request" and getattr(self, "_request_stale", False):
            self._request_stale = False
            self.request.refresh()

    def set_lang(self, lang: str) -> None:
        """Relabel every tab and rewrite the request in ``lang`` ("en" or "ru")."""
        self.lang = lang if lang in LANGS else "en"
        if self.lang_toggle.value != self.lang:
            self.lang_toggle.value = self.lang
            return  # the toggle's observer calls back
        self._apply_labels()
        self.sizing.set_lang(self.lang)
        self.advice.set_lang(self.lang)
        self.fit.set_lang(self.lang)
        self.offers.set_lang(self.lang)
        self.request.set_lang(self.lang)
        if self.trial is not None:
            self.trial.set_lang(self.lang)
        if self.plan is not None:
            self._follow_address()


class StaticApp:
    """The app's content as plain figures and HTML (report mode: survives offline HTML export)."""

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en"):
        self.sizing = SizingForm(plan, lang=lang, report=True)
        self.offers = OffersPanel(self.sizing.plan, lang=lang, report=True) if self.sizing.plan else None

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        if self.sizing.plan is None:
            display(HTML(error_html(self.sizing.error or "invalid plan")))
            return
        for part in ("controls", "totals", "breakdown", "whatif", "details"):
            self.sizing.show(part)
        if self.offers is not None:
            for part in ("table", "scatter", "request"):
                self.offers.show(part)


def build_app(plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en", report: bool = False,
              demo_trial: bool = True, public: bool | None = None, query: str | None = None) -> App | StaticApp:
    """The app's widget tree, starting from ``plan`` (default: ``TrainPlan()``); ``report=True`` gives
    the same content as static figures and HTML.

    ``query`` (a URL query, see ``gpuwork.ui.share``) is applied over ``plan``; by default, in a kernel Voila
    serves and with no ``plan`` given, it is the page's own query. A preheated kernel (its visitor not there
    yet) builds the default plan first and applies the query when the visitor arrives, in a background thread.

    ``public`` (default: when Voila serves this kernel) makes this kernel's errors name no server path and
    show a reference instead of an unexpected exception's text (``gpuwork.ui.common.set_public``).
    """
    if public is None:
        public = served_by_voila()
    if public:
        common.set_public(True)
    if report:
        return StaticApp(plan, lang=lang)
    follow = False
    if query is None and plan is None and served_by_voila():
        if preheated():
            follow, query = True, ""
        else:
            query = page_query()
    app = App(plan, lang=lang, demo_trial=demo_trial, query=query or "")
    if follow:
        run_in_thread("page-query", app.follow_page_query)
    return app


__all__ = ["GIB", "TABS", "TITLE", "App", "AppSizingForm", "StaticApp", "build_app", "error_html", "one_line",
           "preheated", "query_lang", "record_from_upload", "served_by_voila"]
