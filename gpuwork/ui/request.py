"""The request panel: the rental request (gpuwork.present.request) for a plan, ready to copy or download.

``RequestPanel`` holds the request's options (language, start date, budget, rent period, dataset size,
trial and context wording); ``request_links_html`` gives the download links (data: URIs, .txt and
.json). The Offers panel embeds one (``OffersPanel(with_request=True)``); the app shows it as a tab.

Example:
    >>> panel = RequestPanel({"model": "llama-3.1-8b", "method": "qlora"})
    >>> panel.text.value.startswith("Fine-tuning, QLoRA")
    True

Limitations: the request is written in English or Russian only.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets

from gpuwork import sizing
from gpuwork.errors import PlanError
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present import request as rental
from gpuwork.ui.common import (
    CHECKBOX_LAYOUT,
    LANGS,
    WIDE,
    describe,
    error_html,
    friendly,
    heading_html,
    note_html,
    one_line,
    quiet,
    start_plan,
    ui,
)

MAX_RENT_DAYS = 36_500  # a rental period beyond a hundred years is a typo (the CLI's --rent-days has the same bound)


class RequestPanel:
    """The rental request (gpuwork.present.request) for the current plan, in Russian or English, ready to copy.

    State: ``request`` (the RentalRequest), ``error``. Output: a text area with the request and download
    links (data: URIs, .txt and .json). With ``filters`` (the app passes the Offers tab's ``offer_filters``) the
    request asks for the cheapest fitting offer under them, the one the Offers tab and the advisor name.
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en", report: bool = False,
                 show_lang: bool = True, options: Mapping[str, Any] | None = None,
                 filters: Callable[[], Mapping[str, Any]] | None = None, have: Callable[[], Any] | None = None):
        self.lang = lang if lang in LANGS else "en"
        self.filters = filters
        self.have = have or (lambda: None)  # the cards the user owns ((count, GpuSpec)) or None: rent
        self.report = report
        self.request: Any = None
        self.error: str | None = None
        self.plan: TrainPlan | None = None
        opts = dict(options or {})
        lay = {"width": "380px"}
        self.req_lang = widgets.ToggleButtons(options=[(ui("lang_name.en"), "en"), (ui("lang_name.ru"), "ru")], value=self.lang,
                                              style=WIDE)
        self.req_lang.layout.display = None if show_lang else "none"
        self.start_date = widgets.Text(value=str(opts.get("start_date") or ""), continuous_update=False, style=WIDE,
                                       layout=lay)
        self.budget = widgets.FloatText(value=float(opts.get("budget_usd") or 0), style=WIDE, layout=lay)
        self.rent_days = widgets.IntText(value=int(opts.get("rent_period_days") or 0), style=WIDE, layout=lay)
        self.dataset_gb = widgets.FloatText(value=float(opts.get("dataset_gb") or 0), style=WIDE, layout=lay)
        self.trial_required = widgets.Checkbox(value=bool(opts.get("trial_required", True)), style=WIDE,
                                               layout=CHECKBOX_LAYOUT)
        self.explicit_context = widgets.Checkbox(value=not opts.get("context_in_config", True), style=WIDE,
                                                 layout=CHECKBOX_LAYOUT)
        self.message = widgets.HTML()
        self.text = widgets.Textarea(layout={"width": "100%", "height": "280px"})
        self.text.add_class("gpuwork-request-text")
        self.links = widgets.HTML()
        self.links.add_class("gpuwork-request-links")
        self.heading = widgets.HTML()
        self._inputs = [self.req_lang, self.start_date, self.budget, self.rent_days, self.dataset_gb,
                        self.trial_required, self.explicit_context]
        for control in self._inputs:
            control.observe(lambda _c: self.refresh(), names="value")
        for name in ("req_lang", "start_date", "budget", "rent_days", "dataset_gb", "trial_required",
                     "explicit_context"):
            getattr(self, name).add_class(f"gpuwork-request-{name.replace('_', '-')}")  # stable hooks for browser tests
        self._apply_labels()
        start_plan(self, plan)

    def _apply_labels(self) -> None:
        lang = self.lang
        describe({"req_lang": self.req_lang, "start_date": self.start_date, "budget": self.budget,
                  "rent_days": self.rent_days, "dataset_gb": self.dataset_gb, "trial_required": self.trial_required,
                  "explicit_context": self.explicit_context}, lang)
        self.start_date.placeholder = ui("date_hint", lang)
        self.heading.value = heading_html(4, ui("h_request", lang)) + note_html(html.escape(
            f"{ui('rent_days', lang)}: {ui('days_hint', lang)}; {ui('dataset_gb', lang)}: {ui('gb_hint', lang)}; "
            f"{ui('budget', lang)}: 0 = –. {ui('copy_hint', lang)}"))

    def set_lang(self, lang: str) -> None:
        """Switch the labels and the request's language."""
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.req_lang.value != self.lang:
            self.req_lang.value = self.lang  # refreshes
        else:
            self.refresh()

    def set_plan(self, plan: TrainPlan, *, lazy: bool = False) -> None:
        """Write the request for ``plan`` (with ``lazy=True``: on the next ``refresh``)."""
        self.plan = plan
        if lazy:
            self.error, self.message.value = None, ""  # an earlier plan's error: this plan is written afresh
            # the last plan's request must not stay ready to copy, even for a moment, when the tab is opened
            self.request, self.text.value, self.links.value = None, "", ""
            return
        self.refresh()

    def options(self) -> dict[str, Any]:
        """rental_request keyword arguments from the controls (0 / empty = not stated)."""
        date_text = self.start_date.value.strip()
        return {
            "lang": self.req_lang.value,
            "start_date": date_text or None,
            "budget_usd": self.budget.value or None,
            "rent_period_days": self.rent_days.value or None,
            "trial_required": self.trial_required.value,
            "context_in_config": not self.explicit_context.value,
        }

    def decision(self, plan: TrainPlan) -> Any:
        """The one answer under ``filters`` and the request's budget and period (``gpuwork.estimate.decision``):
        the card, count, nodes, mode and changes the Sizing, Advice and Offers tabs show too."""
        from gpuwork.estimate.decision import Constraints

        filters = {k: v for k, v in dict(self.filters()).items() if v is not None} if self.filters else {}
        days = self.rent_days.value or None
        have = self.have()
        if have is not None:  # owned cards: the request names them and the changes, and no rental price
            return sizing.decide(plan, constraints=Constraints(have=have))
        return sizing.decide(plan, constraints=Constraints(filters=filters, budget_usd=self.budget.value or None,
                                                           rental_period_s=days * 86400 if days else None))

    def chosen_offer(self, plan: TrainPlan) -> Any:
        """The offer the request asks for: the one answer's (``decision``), or None when nothing fits (the request
        then names the profile's card)."""
        return self.decision(plan).offer

    def refresh(self) -> None:
        if self.plan is None:
            return
        try:
            plan = self.plan
            gb = self.dataset_gb.value
            if gb:
                if gb < 0:
                    raise PlanError("dataset_bytes", msg("error.ui.dataset_size", gb=gb))
                plan = plan.replace(dataset_bytes=round(gb * 1e9))
            days = self.rent_days.value
            if not 0 <= days <= MAX_RENT_DAYS:
                raise PlanError("rent_days", msg("ui.rent_days_range", value=str(days), maximum=MAX_RENT_DAYS))
            with quiet():
                decision = self.decision(plan)
                chosen = {"match": decision.match, "offer": decision.offer} if decision.fits else {}
                if decision.own:
                    chosen = {"match": decision.match, "include_offer": False} if decision.fits else {}
                req = rental.rental_request(plan, **chosen, **self.options())
        except Exception as exc:  # noqa: BLE001
            self._show_error(friendly(exc, self.lang))
            return
        self.request, self.error = req, None
        self.message.value = ""
        self.text.value = req.text
        self.links.value = request_links_html(req, self.lang)

    def _show_error(self, message: str) -> None:
        self.request, self.error = None, one_line(message)
        self.message.value = error_html(message)
        self.text.value = ""  # another plan's request must not stay ready to copy under the error
        self.links.value = ""

    def invalidate(self, message: str) -> None:
        """The form's plan is invalid: drop the request (it was another plan's) and say why."""
        self.plan = None
        self._show_error(message)

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.heading, *self._inputs, self.message, self.text, self.links])
        box.add_class("gpuwork-request")
        return box

    def static_html(self) -> str:
        if self.request is None:
            return error_html(self.error or "no request")
        return (f'<pre class="gpuwork-request-text" style="white-space:pre-wrap">{html.escape(self.request.text)}'
                f"</pre>{request_links_html(self.request, self.lang)}")


def request_links_html(req: Any, lang: str = "en") -> str:
    """Download links for the request text and JSON as data: URIs (no server round-trip)."""
    txt = base64.b64encode(req.text.encode("utf-8")).decode("ascii")
    js = base64.b64encode(json.dumps(req.as_dict(), ensure_ascii=False, indent=2, default=str).encode("utf-8"))
    name = f"gpu-request-{req.lang}"
    return (f'<a class="gpuwork-download" download="{name}.txt" href="data:text/plain;charset=utf-8;base64,{txt}">'
            f"{html.escape(ui('download_txt', lang))}</a> &nbsp; "
            f'<a class="gpuwork-download-json" download="{name}.json" '
            f'href="data:application/json;charset=utf-8;base64,{js.decode("ascii")}">'
            f"{html.escape(ui('download_json', lang))}</a>")


__all__ = [
    "RequestPanel",
    "request_links_html",
]
