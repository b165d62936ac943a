"""The offers panel: rental offers for a plan, filtered and sorted, with cost vs time and trial records.

``OffersPanel`` shows every catalog offer evaluated for the plan (``offer_results``, filters and the
rankings of ``SORTS``) as a table (``offers_table_html``), a cost-vs-time chart, the interruptible
offers with their preemptions and checkpoint intervals (``interruptible_html``), trial records side by
side (``compare_html``) and, with ``with_request``, the rental request (``gpuwork.ui.request``).

Example:
    >>> panel = OffersPanel({"model": "llama-3.1-8b", "method": "qlora"})
    >>> all(r.fits for r in panel.results)
    True

Limitations: prices are the bundled catalog's illustrative dated snapshots, not quotes.
"""

from __future__ import annotations

import dataclasses
import html
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from gpuwork import sizing
from gpuwork.errors import GpuworkError, PlanError
from gpuwork.estimate.memory import MIB, state_bytes_per_param
from gpuwork.estimate.offers import DEFAULT_PREEMPTION_RATE_PER_HOUR, offer_name
from gpuwork.facts.catalog import GpuClass, Mode, Region
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present import charts, messages
from gpuwork.present.messages import render, render_all
from gpuwork.present.tables import SHARDING_FIELDS, sharding_as_run
from gpuwork.ui import common
from gpuwork.ui.choices import CheckboxGroup
from gpuwork.ui.common import (
    CHECKBOX_LAYOUT,
    LANGS,
    MUTED,
    NOTE_COLOR,
    WIDE,
    LiveFigure,
    NumberText,
    error_html,
    friendly,
    heading_html,
    html_output,
    note_html,
    one_line,
    plan_caption,
    quiet,
    start_plan,
    table_html,
    ui,
)
from gpuwork.ui.request import RequestPanel
from gpuwork.units import fmt_duration, fmt_int, fmt_number, fmt_usd, parse_count, unit

SORTS = ("cost", "time", "price", "vram")  # the rankings of estimate.offers.sort_offers the panel offers
# Columns of gpuwork.measure.trial.compare that are shares (0.05 = 5 %): shown as percent, one decimal.
_PERCENT_KEYS = ("data_wait_fraction", "step_time_half_width", "drift_per_100_steps")


# -- offers: pure update --------------------------------------------------------------------------------


@dataclass(frozen=True)
class OfferFilters:
    """The panel's filters and ranking, as ``offer_results`` takes them (None: no condition).

    ``sort``: "cost" / "time" (the evaluator's rankings), "price" (per GPU-hour) or "vram" (most memory first);
    offers that do not fit always come last, and only with ``include_unfit``.
    """

    modes: Sequence[str] | None = None
    classes: Sequence[str] | None = None
    regions: Sequence[str] | None = None
    max_price: float | None = None  # USD per GPU-hour
    min_vram_gb: float | None = None
    budget_usd: float | None = None
    sort: str = "cost"
    include_unfit: bool = False
    preemption_rate_per_hour: float | None = None  # None: the evaluator's default


def offer_results(plan: TrainPlan, filters: OfferFilters | None = None, /, **settings: Any) -> list[Any]:
    """Offers evaluated for ``plan`` (gpuwork.estimate.offers.evaluate_offers), filtered and sorted by ``filters``
    and the ``OfferFilters`` fields given by name (``offer_results(plan, sort="time", modes=["reserved"])``)."""
    f = dataclasses.replace(filters or OfferFilters(), **settings)
    if f.sort not in SORTS:
        raise PlanError("sort", msg("error.ui.offers_sort", value=repr(f.sort), choices=", ".join(SORTS)))
    kwargs: dict[str, Any] = {}
    if f.preemption_rate_per_hour is not None:
        kwargs["preemption_rate_per_hour"] = f.preemption_rate_per_hour
    return sizing.evaluate_offers(
        plan, sort=f.sort, mode=list(f.modes) if f.modes is not None else None,
        gpu_class=list(f.classes) if f.classes is not None else None,
        region=list(f.regions) if f.regions is not None else None, max_price_per_gpu_hour=f.max_price,
        min_vram_gb=f.min_vram_gb, budget_usd=f.budget_usd, include_unfit=f.include_unfit, **kwargs)


def offer_name_html(offer: Any, lang: str = "en") -> str:
    """An offer as people read it ("marketplace-a: 8 × H100 SXM per node, on-demand"); its catalog id, which the
    answer line and the CLI quote, in the tooltip and a data attribute."""
    name = render(offer_name(offer), lang)
    oid = html.escape(offer.offer_id, quote=True)
    return f'<span class="gpuwork-offer-name" title="{oid}" data-offer-id="{oid}">{html.escape(name)}</span>'


def offers_table_html(results: Sequence[Any], lang: str = "en", limit: int | None = None,
                      plan: TrainPlan | None = None) -> str:
    """The offers as a table; with ``plan``, headed by the software stack they are priced with."""
    stack = (note_html(html.escape(messages.text("stack.label", lang, stack=plan.stack.value)),
                       cls="gpuwork-offers-stack") if plan is not None else "")
    if not results:
        return stack + note_html(html.escape(ui("no_offers", lang)), NOTE_COLOR, "gpuwork-offers-empty")
    rows = []
    for r in results[:limit] if limit else results:
        o = r.offer
        if r.fits:
            notes = render_all(r.fit.changes, lang)
            if r.expected_preemptions:
                notes.append(ui("preemptions", lang, preemptions=r.expected_preemptions))
            if r.meets_deadline is False:
                notes.append(ui("misses_deadline", lang))
            used = f"{r.fit.plan.gpus} / {r.billed_gpus}"
            cells = (used, r.fit.plan.sharding.value, state_bytes_cell(r.fit.plan, lang),
                     fmt_duration(r.expected_total_s, lang), fmt_usd(r.expected_cost_usd, lang),
                     html.escape("; ".join(notes)))
        else:
            cells = ("–", "–", "–", "–", "–",
                     f"<span style='color:{MUTED}'>{html.escape(render(r.fit.reason, lang))}</span>")
        rows.append((offer_name_html(o, lang), html.escape(o.provider), html.escape(o.gpu.display_name),
                     html.escape(ui("mode_option", lang, value=o.mode)), html.escape(ui("region_option", lang,
                                                                                         value=o.region)),
                     fmt_number(o.price_per_gpu_hour, lang, 2), *cells))
    header = [ui(k, lang) for k in ("col_offer", "col_provider", "col_gpu", "col_mode", "col_region", "col_price",
                                    "col_gpus", "col_sharding")]
    header += [messages.text("offer.col.state_bytes", lang), ui("col_time", lang), ui("col_cost", lang),
               ui("col_notes", lang)]
    return (stack + table_html(header, rows, "gpuwork-offers", right=(5, 6, 8, 9, 10))
            + note_html(html.escape(ui("offers_note", lang)))
            + note_html(html.escape(messages.text("offer.state_bytes_note", lang)), cls="gpuwork-state-bytes-note"))


def state_bytes_cell(plan: TrainPlan, lang: str = "en") -> str:
    """What the row's sharding keeps per trained parameter (``estimate.memory.state_bytes_per_param``, as the advisor
    and the answer say it), or a dash where that is not one figure (adapters, Adafactor)."""
    per_param = state_bytes_per_param(plan)
    return fmt_int(per_param, lang) if per_param is not None else "–"


def interruptible_html(results: Sequence[Any], lang: str = "en") -> str:
    """Interruptible offers that fit: expected preemptions, rework, checkpoint interval now vs recommended."""
    rows = []
    for r in results:
        if not r.fits or r.offer.mode is not Mode.INTERRUPTIBLE or r.time is None:
            continue
        recommended = (ui("recommended", lang, interval_s=r.recommended_checkpoint_interval_s,
                          steps=r.recommended_checkpoint_every_steps)
                       if r.recommended_checkpoint_interval_s is not None else "–")
        rows.append((offer_name_html(r.offer, lang), html.escape(r.offer.provider),
                     fmt_duration(r.time.total_s, lang),
                     fmt_duration(r.expected_total_s, lang), fmt_number(r.expected_preemptions, lang, 1),
                     fmt_duration(r.expected_lost_s, lang), fmt_duration(r.checkpoint_interval_s, lang), recommended,
                     fmt_usd(r.expected_cost_usd, lang)))
    if not rows:
        return note_html(html.escape(ui("none_interruptible", lang)))
    header = [ui(k, lang) for k in ("col_offer", "col_provider", "col_uninterrupted", "col_time", "col_preemptions",
                                    "col_rework", "col_interval", "col_recommended", "col_cost")]
    return table_html(header, rows, "gpuwork-interruptible", right=(2, 3, 4, 5, 6, 8))


def compare_html(records: Sequence[Any], price_per_hour: float | None, lang: str = "en") -> str:
    """Trial records side by side (gpuwork.measure.trial.compare)."""
    if not records:
        return note_html(html.escape(ui("no_records", lang)))
    from gpuwork.measure.record import compare

    rows = compare(records, price_per_hour)
    for row in rows:  # drift is per 100 steps; a short trial measured fewer: its change over the steps it measured
        drift, steps = row.get("drift_per_100_steps"), row.get("measured_steps")
        if drift is not None and steps:
            row["drift_per_100_steps"] = drift * steps / 100

    def fmt(value: Any, key: str) -> str:
        if value is None:
            return "–"
        if isinstance(value, bool):
            return ui("yes" if value else "no", lang)
        if key == "tokens_per_s":
            return fmt_int(value, lang)
        if key.endswith("_bytes"):
            return f"{fmt_int(value / MIB, lang)} {unit('MiB', lang)}"
        if key.endswith("_s"):
            return f"{fmt_number(value, lang, 3)} {unit('s', lang)}"
        if key in _PERCENT_KEYS:  # shares of a step: one decimal is what a reader can act on
            return f"{fmt_number(value * 100, lang, 1)}{'%' if lang == 'en' else chr(0xA0) + '%'}"
        if key.startswith("cost_per_1m_tokens") or key == "price_per_hour":
            return fmt_usd(value, lang)
        if isinstance(value, float):
            return fmt_number(value, lang, 3)
        return html.escape(str(value))

    def title(key: str) -> str:  # what the column counts, in words with its unit; never the record's key
        for code in (f"ui.cmp.{key}", f"ui.compare.{key}"):
            if code in messages.CATALOG:
                return messages.text(code, lang)
        return key.replace("_", " ")

    def cell(row: dict[str, Any], key: str) -> str:
        if key == "sharding":  # the four fields of how the processes ran, as one sentence
            said = sharding_as_run(row)
            return "–" if said is None else html.escape(messages.render(said, lang))
        if key == "switches":  # the plan's execution switches the trial ran under (gpuwork.measure.switches)
            return html.escape(", ".join(row[key]) or messages.text("cli.compare.no_switches", lang))
        return fmt(row[key], key)

    keys = [k for k in rows[0] if k == "sharding" or k not in SHARDING_FIELDS]
    return table_html([html.escape(title(k)) for k in keys], [[cell(row, k) for k in keys] for row in rows],
                      "gpuwork-compare")


# -- the offers panel -----------------------------------------------------------------------------------


def _not_negative(control: NumberText, name: str) -> int | float:
    """The number typed into ``control``; PlanError naming the field when it is not a number >= 0."""
    value = control.number(name)
    if value < 0:
        raise PlanError(name, msg("ui.must_be_positive", what=control.description, value=repr(value)))
    return value


class OffersPanel(common.Panel):
    """Rental offers for the current plan: filters, sorting, table, cost vs time, interruptible offers,
    trial records side by side and (``with_request``) the rental request.

    State: ``plan``, ``results`` (OfferResult list after filters), ``records`` (TrialRecords to compare),
    ``error``.
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en",
                 report: bool = False, with_request: bool = True, records: Sequence[Any] = (),
                 request: Mapping[str, Any] | None = None, have: str = ""):
        self.lang = lang if lang in LANGS else "en"
        self.report = report
        self.plan: TrainPlan | None = None
        self.results: list[Any] = []
        self.decision: Any = None  # the one answer (gpuwork.estimate.decision) the table is headed by
        self.records: list[Any] = []
        self.error: str | None = None
        self._stale = True
        self._muted = False
        default_rate = DEFAULT_PREEMPTION_RATE_PER_HOUR
        lay = {"width": "340px"}
        # checkboxes, not list boxes: choosing several must not need Ctrl+click
        self.modes = CheckboxGroup(options=self._choice_options("mode_option", Mode), value=tuple(m.value for m in Mode))
        self.classes = CheckboxGroup(options=self._choice_options("class_option", GpuClass),
                                     value=tuple(c.value for c in GpuClass))
        self.regions = CheckboxGroup(options=self._choice_options("region_option", Region),
                                     value=tuple(r.value for r in Region))
        # typed numbers are read by gpuwork.units ("1.5", "1e3"); a bad one is a message naming the field
        self.max_price = NumberText(0, kind="number", style=WIDE, layout=lay)
        self.min_vram = NumberText(0, kind="number", style=WIDE, layout=lay)
        self.budget = NumberText(0, kind="number", style=WIDE, layout=lay)
        self.sort = widgets.Dropdown(options=self._sort_options(), value="cost", style=WIDE, layout=lay)
        self.include_unfit = widgets.Checkbox(value=False, style=WIDE, layout=CHECKBOX_LAYOUT)
        self.preemption_rate = NumberText(default_rate, kind="number", style=WIDE, layout=lay)
        self.limit = NumberText(25, kind="count", style=WIDE, layout=lay)
        # "my hardware": N x card the user owns (1xrtx4090); empty = rent (gpuwork.estimate.decision)
        self.have = widgets.Text(value=have or "", style=WIDE, layout=lay)
        self.have.add_class("gpuwork-have")
        self.message = widgets.HTML()
        self.table = widgets.HTML()
        self.table.add_class("gpuwork-offers-table")
        self.interruptible = widgets.HTML()
        # a record is two files since its steps are appended per step: the JSON and its .steps.jsonl
        self.record_upload = widgets.FileUpload(accept=".json,.jsonl", multiple=True)
        self.record_price = NumberText(0, kind="number", style=WIDE, layout=lay)
        self.compare = widgets.HTML()
        self.headings = {k: widgets.HTML() for k in ("h_offers", "h_interruptible", "h_compare")}
        self.scatter = LiveFigure("gpuwork-offers-scatter")
        self._filters = [self.modes, self.classes, self.regions, self.max_price, self.min_vram, self.budget, self.sort,
                         self.include_unfit, self.preemption_rate, self.limit, self.have]
        for control in self._filters:
            control.observe(lambda _c: self.refresh(), names="value")
        self.record_upload.observe(self._on_records, names="value")
        self.record_price.observe(lambda _c: self._render_compare(), names="value")
        # the request asks for the one answer under this tab's filters: the table's top row
        self.request = (RequestPanel(lang=self.lang, report=report, options=request, filters=self.offer_filters)
                        if with_request else None)
        self._apply_labels()
        for path in records:
            self._load_record_file(path)
        start_plan(self, plan)
        self._render_compare()

    def _sort_options(self) -> list[tuple[str, str]]:
        return [(ui(f"sort_{s}", self.lang), s) for s in SORTS]

    def _choice_options(self, key: str, choices: Any) -> list[tuple[str, str]]:
        return [(ui(key, self.lang, value=c), c.value) for c in choices]

    def _apply_labels(self) -> None:
        lang = self.lang
        for control, key in ((self.modes, "modes"), (self.classes, "classes"), (self.regions, "regions"),
                             (self.max_price, "max_price"), (self.min_vram, "min_vram"), (self.budget, "budget"),
                             (self.sort, "sort"), (self.include_unfit, "include_unfit"),
                             (self.preemption_rate, "preemption_rate"), (self.limit, "limit"),
                             (self.record_upload, "records"), (self.record_price, "record_price"),
                             (self.have, "have")):
            control.description = ui(key, lang)
        self.have.tooltip = ui("have_hint", lang)
        for control in (self.max_price, self.min_vram, self.budget):
            control.tooltip = ui("zero_any", lang)
        for key, heading in self.headings.items():
            heading.value = heading_html(4, ui(key, lang))
        self._muted = True
        try:
            for control, options in ((self.sort, self._sort_options()),
                                     (self.modes, self._choice_options("mode_option", Mode)),
                                     (self.classes, self._choice_options("class_option", GpuClass)),
                                     (self.regions, self._choice_options("region_option", Region))):
                value = control.value
                control.options = options
                control.value = value
        finally:
            self._muted = False

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.request is not None:
            self.request.set_lang(lang)
        self.refresh()
        self._render_compare()

    def set_plan(self, plan: TrainPlan, *, lazy: bool = False) -> None:
        """Evaluate offers for ``plan`` (with ``lazy=True``: on the next ``refresh``)."""
        self.plan = plan
        self._stale = True
        self.error, self.message.value = None, ""  # an earlier plan's error: this plan is evaluated afresh
        if self.request is not None and not lazy:
            self.request.set_plan(plan)
        if lazy:  # the last plan's offers must not show, even for a moment, when the tab is opened
            self.results = []
            self.table.value = self.interruptible.value = ""
            self.scatter.box.layout.visibility = "hidden"
        else:
            self.refresh()

    def refresh_if_stale(self) -> None:
        if self._stale:
            self.refresh()
            if self.request is not None and self.plan is not None:
                self.request.set_plan(self.plan)

    def filters(self) -> dict[str, Any]:
        """offer_results keyword arguments from the controls (0 = no limit; all ticked = no filter)."""
        def chosen(control: CheckboxGroup, what: str) -> list[str] | None:
            if not control.value:
                raise PlanError(what, msg("ui.pick_one", what=control.description))
            return None if len(control.value) == len(control.options) else list(control.value)

        numbers = {}
        for control, name in ((self.max_price, "max_price"), (self.min_vram, "min_vram_gb"), (self.budget, "budget_usd"),
                              (self.preemption_rate, "preemption_rate_per_hour")):
            numbers[name] = _not_negative(control, name)
        return {"modes": chosen(self.modes, "mode"), "classes": chosen(self.classes, "gpu_class"),
                "regions": chosen(self.regions, "region"), "max_price": numbers["max_price"] or None,
                "min_vram_gb": numbers["min_vram_gb"] or None, "budget_usd": numbers["budget_usd"] or None,
                "sort": self.sort.value, "include_unfit": self.include_unfit.value,
                "preemption_rate_per_hour": numbers["preemption_rate_per_hour"]}

    def offer_filters(self) -> dict[str, Any]:
        """The filters as ``evaluate_offers`` keywords (what the advisor prices on): no sorting, no unfit offers,
        no limit left unset."""
        f = self.filters()
        out = {"mode": f["modes"], "gpu_class": f["classes"], "region": f["regions"],
               "max_price_per_gpu_hour": f["max_price"], "min_vram_gb": f["min_vram_gb"], "budget_usd": f["budget_usd"],
               "preemption_rate_per_hour": f["preemption_rate_per_hour"]}
        return {k: v for k, v in out.items() if v is not None}

    def have_cards(self) -> Any:
        """The cards the user owns from the "my cards" field ((count, GpuSpec)), or None (rent). Raises PlanError or
        CatalogError for a value that is not a count and a known card."""
        return sizing.parse_have(self.have.value)

    def on_filters(self, callback: Callable[[], Any]) -> None:
        """Call ``callback()`` after any filter changes (the app marks the advice stale)."""
        for control in self._filters:
            control.observe(lambda _c: callback(), names="value")

    def invalidate(self, message: str) -> None:
        """The form's plan is invalid: drop the offers (they were another plan's) and say why."""
        self.plan, self.results, self._stale = None, [], False
        self._show_error(message)
        self.table.value = ""
        self.interruptible.value = ""
        self.scatter.box.layout.visibility = "hidden"
        if self.request is not None:
            self.request.invalidate(message)

    def refresh(self) -> None:
        if self.plan is None or self._muted:
            return
        try:
            limit = parse_count(self.limit.value, "limit", minimum=None)  # a count field: a whole number
            if limit < 1:
                raise PlanError("limit", msg("ui.must_be_one", what=self.limit.description, value=str(limit)))
            with quiet():
                filters = self.filters()
                # the one answer under these filters (gpuwork.estimate.decision); ranked by cost, the table prices
                # the plan it runs (with its change, if any), so the top row is what the other tabs name
                from gpuwork.estimate.decision import Constraints

                have = self.have_cards()
                self.decision = sizing.decide(self.plan, constraints=Constraints(filters=self.offer_filters(),
                                                                                 have=have))
                priced = self.decision.changed_plan if filters["sort"] == "cost" and have is None else self.plan
                results = offer_results(priced, **filters)
        except Exception as exc:  # noqa: BLE001
            self._show_error(friendly(exc, self.lang))
            return
        self.results, self.error, self._stale = results, None, False
        self.message.value = ""
        answer = (f'<p class="gpuwork-decision" style="margin:2px 0"><b>'
                  f'{html.escape(render(self.decision.summary, self.lang))}</b></p>')
        self.table.value = answer + offers_table_html(results, self.lang, limit, self.plan)
        self.interruptible.value = interruptible_html(results, self.lang)
        if not self.report:
            self.scatter.box.layout.visibility = "visible"
            self.scatter.show(self.scatter_figure())

    def _show_error(self, message: str) -> None:
        self.error = one_line(message)
        self.message.value = error_html(message)

    def scatter_figure(self) -> go.Figure:
        return charts.offers_figure(self.results, lang=self.lang)

    # -- trial records ----------------------------------------------------------------------------

    def add_record(self, record: Any) -> None:
        self.records.append(record)
        self._render_compare()

    def _load_record_file(self, path: str | os.PathLike[str]) -> None:
        from gpuwork.measure.record import TrialRecord

        try:
            self.records.append(TrialRecord.from_json(Path(path)))
        except (OSError, ValueError, KeyError, TypeError, GpuworkError) as exc:
            self._show_error(ui("cannot_read_record", self.lang, name=str(path),
                                error=friendly(exc, self.lang) if isinstance(exc, GpuworkError) else str(exc)))

    def _on_records(self, change: Any) -> None:
        from gpuwork.measure.record import STEPS_SUFFIX, TrialRecord, with_steps_text

        items = list(change["new"] or ())
        steps = {common.upload_name(i): i for i in items if common.upload_name(i).endswith(STEPS_SUFFIX)}
        for item in items:
            name = item.get("name", "record.json")
            if name in steps:
                continue  # read with the record that names it
            try:
                data = common.upload_json(item, "record")
                # a record whose steps are in its own file: read them from the upload of that name
                if isinstance(data, dict) and isinstance(data.get("steps_file"), str) and data["steps_file"] in steps:
                    text = common.upload_content(steps[data["steps_file"]], "record").decode("utf-8")
                    data = with_steps_text(data, text, data["steps_file"])
                self.records.append(TrialRecord.from_dict(data))
            except (ValueError, KeyError, TypeError, UnicodeDecodeError, GpuworkError) as exc:
                self._show_error(ui("bad_record", self.lang, name=name, error=one_line(exc)))
        self._render_compare()

    def _render_compare(self) -> None:
        try:
            price = _not_negative(self.record_price, "price")
            self.compare.value = compare_html(self.records, price or None, self.lang)
        except Exception as exc:  # noqa: BLE001
            self.compare.value = error_html(friendly(exc, self.lang))

    # -- views ------------------------------------------------------------------------------------

    def filters_box(self) -> widgets.Widget:
        left = widgets.VBox([self.modes, self.classes, self.regions])
        right = widgets.VBox([self.max_price, self.min_vram, self.budget, self.sort, self.preemption_rate, self.limit,
                              self.include_unfit, self.have])
        box = widgets.HBox([left, right], layout={"flex_flow": "row wrap"})
        box.add_class("gpuwork-offers-filters")
        return box

    def view(self) -> widgets.Widget:
        compare = widgets.VBox([self.headings["h_compare"], widgets.HBox([self.record_upload, self.record_price]),
                                self.compare])
        parts = [self.headings["h_offers"], self.filters_box(), self.message, self.table, self.scatter.box,
                 self.headings["h_interruptible"], self.interruptible, compare]
        if self.request is not None:
            parts.append(self.request.view())
        box = widgets.VBox(parts)
        box.add_class("gpuwork-offers")
        return box

    def show(self, part: str) -> None:
        """Display "filters", "table", "scatter", "interruptible", "compare" or "request"."""
        self.refresh_if_stale()
        super().show(part)

    def live_parts(self) -> dict[str, Callable[[], Any]]:
        return {"filters": lambda: widgets.VBox([self.filters_box(), self.message]),
                "table": lambda: self.table, "scatter": lambda: self.scatter.box,
                "interruptible": lambda: self.interruptible,
                "compare": lambda: widgets.VBox([widgets.HBox([self.record_upload, self.record_price]),
                                                 self.compare]),
                "request": lambda: self.request.view() if self.request else None}

    def static_parts(self) -> dict[str, Callable[[], list[Any]]]:
        caption = plan_caption(self.plan, lang=self.lang) if self.plan else ""
        return {
            "filters": lambda: [html_output(note_html(html.escape(caption)) + (self.message.value or ""))],
            "table": lambda: [html_output(self.table.value)],
            "scatter": lambda: [self.scatter_figure()],
            "interruptible": lambda: [html_output(self.interruptible.value)],
            "compare": lambda: [html_output(self.compare.value)],
            "request": lambda: [html_output(self.request.static_html())] if self.request else [],
        }


__all__ = [
    "SORTS",
    "OfferFilters",
    "OffersPanel",
    "compare_html",
    "interruptible_html",
    "offer_results",
    "offers_table_html",
]
