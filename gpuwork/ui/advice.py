"""The advisor and fit-matrix panels: what to change so the plan fits or costs less, and the plan on every GPU.

``AdvicePanel`` shows ``gpuwork.sizing.advise``'s few best changes (memory per GPU, time and cost against the
plan as it is), each with an "Apply" button that hands the changed plan to ``on_apply`` listeners (the app
sets the form to it, and the offers and the request follow). ``FitMatrixPanel`` shows
``gpuwork.sizing.fit_matrix``: every catalog GPU x 1/2/4/8, fits, headroom, largest micro-batch and sequence,
time and cost, as one scrollable table. Pure renders: ``advice_status_html``, ``suggestion_html``,
``fit_matrix_html``. Both panels evaluate lazily (``set_plan(plan, lazy=True)``, then ``refresh_if_stale``
when shown) and say so instead of showing another plan's results while the form is invalid (``invalidate``).

Example:
    >>> panel = AdvicePanel({"model": "mistral-7b", "method": "qlora"}, filters=lambda: {"mode": ["on-demand"]})
    >>> panel.advice.suggestions[0].gpu_id
    'rtx4090'

Limitations: the suggestions are the advisor's standard changes (``gpuwork.estimate.advisor``); prices are the
bundled catalog's illustrative snapshots.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets

from gpuwork import sizing
from gpuwork.estimate.memory import GIB
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render, text
from gpuwork.ui.common import (
    LANGS,
    MUTED,
    error_html,
    friendly,
    heading_html,
    note_html,
    one_line,
    quiet,
    start_plan,
    table_html,
    ui,
)
from gpuwork.units import MISSING, fmt_duration, fmt_number, fmt_usd

FIT_COLUMNS = ("gpu", "gpus", "sharding", "memory", "headroom", "batch", "seq", "time", "cost")


# -- pure renders ---------------------------------------------------------------------------------------------


def advice_status_html(advice: Any, lang: str = "en", rented: bool = True) -> str:
    """What the plan as it is does (its cheapest offer, or that none fits), and "no change helps" when so
    (``rented=False``: on the user's own cards, where an offer and its price do not apply, without the former)."""
    parts = [f'<p class="gpuwork-advice-stack" style="margin:2px 0">'
             f'{html.escape(text("stack.label", lang, stack=advice.plan.stack.value))}</p>']
    if rented:
        parts.append(f'<p class="gpuwork-advice-status" style="margin:2px 0">'
                     f'{html.escape(render(advice.status, lang))}</p>')
    if not advice.suggestions:
        parts.append(note_html(html.escape(text("advice.none", lang)), MUTED, "gpuwork-advice-none"))
    return "".join(parts)


def combines_words(suggestion: Any, advice: Any, lang: str = "en") -> str:
    """The other suggestions this one combines with, as their changes in words ("with gradient checkpointing"),
    never their keys ("seq_len_1024"); a key the advice does not list is left out."""
    by_key = {s.key: s for s in (advice.suggestions if advice is not None else ())}
    words = [", ".join(render(c, lang) for c in by_key[k].changes) for k in suggestion.combines_with if k in by_key]
    return "; ".join(w for w in words if w)


def suggestion_html(suggestion: Any, lang: str = "en", summary: Any = None, advice: Any = None) -> str:
    """One suggestion in words: the change, memory per GPU, where it fits, time and cost against the plan
    (``summary``: another wording of it, e.g. memory and time on the user's own cards; ``advice``: the advice it
    belongs to, whose other suggestions name what it combines with)."""
    line = html.escape(render(summary if summary is not None else suggestion.summary, lang))
    combines = combines_words(suggestion, advice, lang)
    if combines:
        line += note_html(html.escape(text("advice.combines", lang, keys=combines)))
    return f'<div class="gpuwork-suggestion" style="margin:2px 0">{line}</div>'


def _cell_cells(c: Any, lang: str) -> list[str]:
    memory = f"{fmt_number(c.device_total_bytes / GIB, lang, 1)} / {fmt_number(c.usable_bytes / GIB, lang, 1)}"
    head = [html.escape(c.gpu_name), str(c.gpus), html.escape(c.plan.sharding.value), memory]
    if not c.fits:
        return [*head, f"<span style='color:{MUTED}'>{html.escape(text('cli.fit.no', lang))}</span>", "", "", "", "",
                ""]
    cost = fmt_usd(c.cost_usd, lang) if c.cost_usd is not None else MISSING
    if c.price_source == "typical":
        cost += f" <span style='color:{MUTED}'>({html.escape(text('cli.fit.typical', lang))})</span>"
    where = (f"<code>{html.escape(c.offer_id)}</code> {html.escape(c.provider or '')}" if c.offer_id else "")
    return [*head, fmt_number(c.headroom_bytes / GIB, lang, 1), f"{c.max_batch_size}{'+' if c.max_batch_capped else ''}",
            f"{c.max_seq_len}{'+' if c.max_seq_capped else ''}",
            fmt_duration(c.total_s, lang) if c.total_s is not None else MISSING, cost, where]


def fit_matrix_html(matrix: Any, lang: str = "en") -> str:
    """The fit matrix as one table (every GPU x count, fitting cells in bold), scrollable both ways."""
    header = [html.escape(ui("fit_col_gpus", lang) if k == "gpus" else text(f"cli.fit.col.{k}", lang))
              for k in FIT_COLUMNS] + [html.escape(ui("fit_col_offer", lang))]
    rows = []
    for c in matrix.cells:
        cells = _cell_cells(c, lang)
        rows.append([f"<b>{v}</b>" if c.fits and i == 0 else v for i, v in enumerate(cells)])
    fits = sum(c.fits for c in matrix.cells)
    parts = [note_html(html.escape(text("stack.label", lang, stack=matrix.plan.stack.value)), cls="gpuwork-fit-stack"),
             note_html(html.escape(ui("fit_rows", lang, fits=fits, cells=len(matrix.cells))))]
    best = matrix.cheapest()
    if best is not None:
        parts.append(f'<p class="gpuwork-fit-cheapest" style="margin:2px 0">'
                     f'{html.escape(render(msg("cli.fit.cheapest", gpus=best.gpus, gpu=best.gpu_name, run_s=best.total_s, cost_usd=best.cost_usd), lang))}</p>')
    table = table_html(header, rows, "gpuwork-fit-table", right=(1, 3, 4, 5, 6, 7, 8))
    # the table scrolls inside its own box: 100 rows do not push the page's other parts away
    parts.append(f'<div class="gpuwork-fit-scroll" style="max-height:640px;overflow:auto">{table}</div>')
    return "".join(parts)


# -- the panels -------------------------------------------------------------------------------------------------


class _LazyPanel:
    """A tab that evaluates its plan when shown: ``set_plan(plan, lazy=True)`` marks it stale;
    ``invalidate(message)`` replaces its results with the message (the form's plan is invalid)."""

    lang: str

    def __init__(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self.plan: TrainPlan | None = None
        self.error: str | None = None
        self._stale = False
        self.message = widgets.HTML()
        self.message.add_class("gpuwork-message")
        self.heading = widgets.HTML()
        self.intro = widgets.HTML()

    def _start(self, plan: TrainPlan | Mapping[str, Any] | None) -> None:
        """The end of a panel's construction: its labels, then the starting plan (a TrainPlan, a dict of its
        fields, or None), evaluated at once; a bad one shows its message."""
        self._apply_labels()
        start_plan(self, plan)

    def set_plan(self, plan: TrainPlan, *, lazy: bool = False) -> None:
        self.plan, self._stale = plan, True
        self.error, self.message.value = None, ""  # an earlier plan's error: this plan is evaluated afresh
        if lazy:
            self._clear()  # the last plan's results must not show, even for a moment, when the tab is opened
        else:
            self.refresh()

    def refresh_if_stale(self) -> None:
        if self._stale:
            self.refresh()

    def refresh(self) -> None:
        if self.plan is None:
            return
        try:
            with quiet():
                self._evaluate(self.plan)
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            self._show_error(friendly(exc, self.lang))
            return
        self.error, self._stale = None, False
        self.message.value = ""
        self._render()

    def invalidate(self, message: str) -> None:
        """The form's plan is invalid: drop this tab's results (they were another plan's) and say why."""
        self.plan, self._stale = None, False
        self._clear()
        self._show_error(message)

    def _show_error(self, message: str) -> None:
        self.error = one_line(message)
        self.message.value = error_html(message)
        self._clear()

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.plan is not None and not self._stale:
            self._render()

    def _evaluate(self, plan: TrainPlan) -> None:
        raise NotImplementedError

    def _render(self) -> None:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError

    def _apply_labels(self) -> None:
        raise NotImplementedError


class AdvicePanel(_LazyPanel):
    """The advisor for the current plan: its status and the best changes, each with an "Apply" button.

    State: ``plan``, ``advice`` (gpuwork.estimate.advisor.Advice; None until evaluated or while invalid),
    ``error``. ``filters`` returns the offer filters of ``evaluate_offers`` to price on (the app passes the
    Offers tab's). ``on_apply(callback)``: ``callback(plan)`` when a suggestion is applied.
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en",
                 filters: Callable[[], Mapping[str, Any]] | None = None, limit: int = 5,
                 have: Callable[[], Any] | None = None):
        super().__init__(lang)
        self.filters = filters or dict
        self.have = have or (lambda: None)  # the cards the user owns ((count, GpuSpec)) or None: rent
        self.limit = limit
        self.advice: Any = None
        self.decision: Any = None
        self._listeners: list[Callable[[TrainPlan], Any]] = []
        self.status = widgets.HTML()
        self.status.add_class("gpuwork-advice-status-box")
        self.rows = widgets.VBox()
        self.rows.add_class("gpuwork-advice-rows")
        self.buttons: list[widgets.Button] = []
        self._start(plan)

    def on_apply(self, callback: Callable[[TrainPlan], Any]) -> None:
        self._listeners.append(callback)

    def _evaluate(self, plan: TrainPlan) -> None:
        from gpuwork.estimate.decision import Constraints

        filters = {k: v for k, v in dict(self.filters()).items() if v is not None}
        have = self.have()
        if have is not None:  # on the user's own cards: changes for fit and speed there (gpuwork.estimate.decision)
            self.decision = sizing.decide(plan, limit=self.limit, constraints=Constraints(have=have))
            self.advice = self.decision.advice
            return
        self.advice = sizing.advise(plan, limit=self.limit, **filters)
        # the one answer from this advice: what the Sizing, Offers and Request tabs show (gpuwork.estimate.decision)
        self.decision = sizing.decide(plan, advice=self.advice, constraints=Constraints(filters=filters))

    def apply(self, index: int) -> TrainPlan:
        """Apply suggestion ``index`` (0 = the best): every listener gets its changed plan."""
        suggestion = self.advice.suggestions[index]
        for callback in self._listeners:
            callback(suggestion.plan)
        return suggestion.plan

    def _render(self) -> None:
        advice = self.advice
        own = self.decision is not None and self.decision.own
        self.status.value = advice_status_html(advice, self.lang, rented=not own) + (
            f'<p class="gpuwork-decision" style="margin:2px 0"><b>'
            f'{html.escape(render(self.decision.summary, self.lang))}</b></p>' if self.decision is not None else "")
        rows, self.buttons = [], []
        for i, s in enumerate(advice.suggestions):
            button = widgets.Button(description=ui("apply", self.lang), tooltip=ui("apply_hint", self.lang),
                                    button_style="primary", layout={"width": "120px", "flex": "0 0 auto"})
            button.add_class("gpuwork-apply")
            button.on_click(lambda _b, i=i: self.apply(i))
            self.buttons.append(button)
            row = widgets.HBox([button, widgets.HTML(suggestion_html(
                s, self.lang, self.decision.suggestion_line(s) if own else None, advice),
                layout={"flex": "1 1 auto"})],
                               layout={"align_items": "center"})
            row.add_class("gpuwork-advice-row")
            rows.append(row)
        self.rows.children = rows

    def _clear(self) -> None:
        self.advice = self.decision = None
        self.status.value = ""
        self.rows.children = ()
        self.buttons = []

    def _apply_labels(self) -> None:
        self.heading.value = heading_html(4, ui("h_advice", self.lang))
        self.intro.value = note_html(html.escape(ui("advice_intro", self.lang)))

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.heading, self.intro, self.message, self.status, self.rows])
        box.add_class("gpuwork-advice")
        return box


class FitMatrixPanel(_LazyPanel):
    """The plan on every catalog GPU x 1/2/4/8 (gpuwork.sizing.fit_matrix) as one scrollable table.

    State: ``plan``, ``matrix`` (a FitMatrix; None until evaluated or while invalid), ``error``.
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en",
                 decide: Callable[[TrainPlan], Any] | None = None):
        super().__init__(lang)
        self.matrix: Any = None
        self.decision: Any = None
        # the one answer under the app's filters and owned cards (gpuwork.estimate.decision), said above the matrix
        # of the plan as written, so this tab names the card the other tabs name
        self.decide = decide
        self.table = widgets.HTML()
        self.table.add_class("gpuwork-fit")
        self._start(plan)

    def _evaluate(self, plan: TrainPlan) -> None:
        self.matrix = sizing.fit_matrix(plan)
        self.decision = self.decide(plan) if self.decide is not None else None

    def _render(self) -> None:
        answer = ""
        if self.decision is not None:
            answer = (f'<p class="gpuwork-decision" style="margin:2px 0"><b>'
                      f'{html.escape(render(self.decision.summary, self.lang))}</b></p>'
                      + note_html(html.escape(ui("fit_as_written", self.lang)), MUTED, "gpuwork-fit-as-written"))
        self.table.value = answer + fit_matrix_html(self.matrix, self.lang)

    def _clear(self) -> None:
        self.matrix = self.decision = None
        self.table.value = ""

    def _apply_labels(self) -> None:
        self.heading.value = heading_html(4, ui("h_fit", self.lang))
        self.intro.value = note_html(html.escape(ui("fit_intro", self.lang)))

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.heading, self.intro, self.message, self.table])
        box.add_class("gpuwork-fit-panel")
        return box


__all__ = ["FIT_COLUMNS", "AdvicePanel", "FitMatrixPanel", "advice_status_html", "fit_matrix_html",
           "suggestion_html"]
