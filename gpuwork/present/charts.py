"""Charts: pure functions from estimator results to ``plotly.graph_objects.Figure``.

Nothing here calls an estimator or computes a formula: every function takes results (a
``MemoryEstimate``, a what-if series, trial measurements, offer results) and only converts units for
display (bytes -> GiB/MiB, seconds -> hours) and lays them out. Widgets wrap these figures in
``FigureWidget`` and copy new ones in with ``batch_update()``; report notebooks display them as they are.

Every figure keeps a fixed set of traces for a given kind of input (one per breakdown term, one per
method, one per trial metric, one per rental mode) so that a live widget can be updated in place.

Example:
    >>> from gpuwork.estimate.memory import estimate_memory
    >>> from gpuwork.facts.catalog import load_gpus
    >>> from gpuwork.plan import TrainPlan
    >>> fig = memory_breakdown_figure(estimate_memory(TrainPlan()), [load_gpus()["rtx4090"]])
    >>> fig.layout.barmode
    'stack'

Limitations: labels exist in English and Russian only (catalog entries chart.*, term.*, total.* of
gpuwork.present.messages); GPU capacity lines use the driver-reported
total (what nvidia-smi shows), not what a run can use after a safety margin.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gpuwork.estimate.memory import GIB, MIB, SOURCES, TERM_LABELS, MemoryEstimate
from gpuwork.facts.catalog import GpuSpec
from gpuwork.present import messages
from gpuwork.units import HOUR_S, LANGS, fmt_number, unit

# The three totals of a MemoryEstimate, in the order they are shown; labels and meanings are catalog
# entries total.<attr> and total.<attr>.meaning (gpuwork.present.messages).
TOTALS: tuple[str, ...] = ("peak_allocated_bytes", "peak_reserved_bytes", "device_total_bytes")

# One colour per breakdown term (stable across figures) and per method / rental mode.
_TERM_COLORS = {
    "weights": "#4c78a8", "gradients": "#f58518", "optimizer_states": "#e45756", "activations": "#72b7b2",
    "logits_and_loss": "#54a24b", "temporaries": "#eeca3b", "sharding_buffers": "#b279a2",
    "cublas_workspace": "#9d755d", "allocator_cache": "#bab0ac", "allocator_segments": "#bab0ac",
    "paged_optimizer_states": "#ff9da6",
    "autocast_weight_copies": "#79706e", "cuda_context": "#d8b5a5",
}
_SERIES_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#9d755d")
_MODE_COLORS = {"on-demand": "#4c78a8", "reserved": "#54a24b", "interruptible": "#f58518"}
_GPU_LINE_COLORS = ("#444444", "#8c564b", "#7f7f7f", "#17becf", "#bcbd22", "#1f77b4")
_TOTAL_SYMBOLS = ("line-ew-open", "line-ew-open", "line-ew-open")
# What-if curves can coincide (scratch and full need the same memory): each later curve is drawn thinner,
# dashed and with another marker on top of the earlier ones, so the one below shows around and between it.
_SERIES_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid")
_SERIES_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x", "star", "cross")
_SEGMENT_MIN_GIB = 0.05  # segments below this carry no value label (it would read "0.0")


def text(key: str, lang: str = "en", **params: Any) -> str:
    """A chart label in ``lang`` ("en" or "ru"): the catalog entry ``chart.<key>``."""
    return messages.text(f"chart.{key}", lang, **params)


def term_label(term: str, lang: str = "en") -> str:
    """Display name of a breakdown term (catalog entry ``term.<term>``)."""
    if f"term.{term}" in messages.CATALOG:
        return messages.text(f"term.{term}", lang)
    return TERM_LABELS.get(term, term.replace("_", " "))


def total_label(attr: str, lang: str = "en") -> tuple[str, str]:
    """(label, meaning) of one of the three totals (``peak_allocated_bytes`` ...)."""
    if attr not in TOTALS:
        raise KeyError(attr)
    return messages.text(f"total.{attr}", lang), messages.text(f"total.{attr}.meaning", lang)


def _gib(n_bytes: float) -> float:
    return n_bytes / GIB


TEMPLATE = "plotly_white"


def _base_layout(title: str, template: str | None = TEMPLATE, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "xanchor": "left"},
        "template": template,
        "margin": {"l": 70, "r": 20, "t": 60, "b": 60},
        "legend": {"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left"},
        "font": {"size": 12},
    }
    layout.update(extra)
    return layout


# Plotly's number separators (decimal, thousands) by language: axis ticks and hover numbers as the page writes them
SEPARATORS = {"en": ".,", "ru": ",\u00a0"}


def _localized(lang: str, title: str, template: str | None = TEMPLATE, **extra: Any) -> dict[str, Any]:
    """``_base_layout`` with the axes' numbers in ``lang``'s form (1 234,5 in Russian, 1,234.5 in English)."""
    return {**_base_layout(title, template, **extra), "separators": SEPARATORS.get(lang, SEPARATORS["en"])}


def _gpu_lines(gpus: Sequence[GpuSpec], lang: str) -> tuple[list[dict], list[dict]]:
    """Dashed horizontal lines at each GPU's driver-reported total: (layout shapes, annotations).

    Plain dicts set in one layout update (``Figure.add_hline`` costs ~20 ms a line).
    """
    shapes, notes = [], []
    for i, gpu in enumerate(gpus):
        gib = _gib(gpu.memory_total_bytes)
        color = _GPU_LINE_COLORS[i % len(_GPU_LINE_COLORS)]
        shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": gib, "y1": gib,
                       "line": {"dash": "dash", "width": 1.5, "color": color}, "name": gpu.gpu_id})
        notes.append({"xref": "paper", "yref": "y", "x": 0, "y": gib, "xanchor": "left", "yanchor": "bottom",
                      "showarrow": False, "font": {"size": 11, "color": color},
                      "text": text("gpu_line", lang, name=html.escape(gpu.display_name),
                                   total_bytes=gpu.memory_total_bytes)})
    return shapes, notes


# -- memory breakdown --------------------------------------------------------------------------------


def memory_breakdown_figure(estimates: MemoryEstimate | Sequence[MemoryEstimate], gpus: Sequence[GpuSpec] = (),
                            *, labels: Sequence[str] | None = None, lang: str = "en",
                            template: str | None = TEMPLATE) -> go.Figure:
    """Stacked per-GPU memory bar(s), one segment per breakdown term, with candidate GPUs' memory.

    Args:
        estimates: one estimate or several (one bar each, e.g. several methods side by side).
        gpus: candidate cards; each gets a dashed line at its driver-reported total, GiB.
        labels: the bars' names; default "model, method".
        lang: "en" or "ru".
        template: plotly template; None skips it (a live widget keeps the one it was created with, and
            resolving a template costs ~13 ms a figure).

    Traces: one bar per term of ``TERM_LABELS`` (always all of them, zero where a plan has none; terms
    that are zero in every bar are left out of the legend), then one marker trace per total
    (allocated, reserved, device) whose hover says what that total counts.
    """
    items = [estimates] if isinstance(estimates, MemoryEstimate) else list(estimates)
    names = list(labels) if labels is not None else [f"{e.plan.model}, {e.plan.method.value}" for e in items]
    if len(names) != len(items):
        raise ValueError(f"{len(names)} labels for {len(items)} estimates")
    traces: list[Any] = []
    gib = unit("GiB", lang)
    for term in TERM_LABELS:
        values = [_gib(e.breakdown.get(term, 0)) for e in items]
        label = term_label(term, lang)
        source = html.escape(SOURCES.get(term, "")) if lang == "en" else ""  # sources are English citations
        traces.append(go.Bar(
            x=names, y=values, name=label, marker={"color": _TERM_COLORS.get(term)},
            # the value on its segment; plotly hides a label that does not fit (uniformtext below)
            text=[fmt_number(v, lang, 1) if v >= _SEGMENT_MIN_GIB else "" for v in values],
            textposition="inside", insidetextanchor="middle", textangle=0,
            showlegend=any(v > 0 for v in values), legendgroup="terms",
            hovertemplate=f"<b>{html.escape(label)}</b>: %{{y:.2f}} {gib}<br>%{{x}}<br>"
                          f"<span style='font-size:10px'>{_wrap(source)}</span><extra></extra>",
        ))
    for attr in TOTALS:
        label, meaning = total_label(attr, lang)
        traces.append(go.Scatter(
            x=names, y=[_gib(getattr(e, attr)) for e in items], mode="markers", name=label,
            marker={"symbol": "line-ew-open", "size": 46, "line": {"width": 3}},
            legendgroup="totals",
            hovertemplate=f"<b>{html.escape(label)}</b>: %{{y:.2f}} {gib}<br>{_wrap(html.escape(meaning))}"
                          "<extra></extra>",
        ))
    top = max([_gib(e.device_total_bytes) for e in items] + [_gib(g.memory_total_bytes) for g in gpus] + [0.0])
    shapes, notes = _gpu_lines(gpus, lang)
    layout = _localized(lang, text("breakdown_title", lang), template, barmode="stack", bargap=0.45, shapes=shapes, height=520,
                          annotations=notes, uniformtext={"minsize": 9, "mode": "hide"},
                          yaxis={"title": {"text": text("breakdown_y", lang)}, "range": [0, top * 1.1 or 1]},
                          xaxis={"title": {"text": text("breakdown_x", lang)}})
    return go.Figure(data=traces, layout=layout)


def _wrap(text_: str, width: int = 70) -> str:
    """Break long hover text into lines of about ``width`` characters (plotly hover does not wrap)."""
    words, lines, line = text_.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return "<br>".join(lines)


# -- what-if curves ---------------------------------------------------------------------------------


def runs_out_at(values: Sequence[float], totals: Sequence[float | None], capacity: float) -> int | None:
    """Index of the first value whose total is above ``capacity`` (None when all fit or are missing)."""
    for i, total in enumerate(totals):
        if total is not None and total > capacity:
            return i
    return None


def whatif_figure(values: Sequence[int], series: Mapping[str, Sequence[int | None]], gpus: Sequence[GpuSpec] = (),
                  *, field: str = "seq_len", current: int | None = None, lang: str = "en",
                  template: str | None = TEMPLATE) -> go.Figure:
    """Device total per GPU (GiB) against one plan field, one curve per method, with GPU capacities.

    Args:
        values: the x values (sequence lengths or micro-batches), ascending.
        series: curve name (a method) -> device total in bytes per value (None where that plan is invalid).
        gpus: cards whose driver-reported total is drawn as a dashed line; the first point of each
            curve above a card's line is marked "runs out".
        field: "seq_len" or "batch_size" (axis titles).
        current: the plan's own value, marked with a vertical dotted line.
        template: plotly template (None: none, see ``memory_breakdown_figure``).

    Traces: one line per series (in the given order), then one "runs out" marker trace.
    """
    traces: list[Any] = []
    xs = list(values)
    for i, (name, totals) in enumerate(series.items()):
        traces.append(go.Scatter(
            x=xs, y=[_gib(t) if t is not None else None for t in totals], mode="lines+markers", name=name,
            line={"color": _SERIES_COLORS[i % len(_SERIES_COLORS)], "width": max(1.5, 5 - 1.2 * i),
                  "dash": _SERIES_DASHES[i % len(_SERIES_DASHES)]},
            marker={"size": max(5, 11 - 2 * i), "symbol": _SERIES_SYMBOLS[i % len(_SERIES_SYMBOLS)]},
            connectgaps=False,
            hovertemplate=f"<b>{html.escape(name)}</b><br>{field} %{{x:,}}: %{{y:.2f}} GiB<extra></extra>",
        ))
    out_x, out_y, out_text = [], [], []
    for name, totals in series.items():
        for gpu in gpus:
            at = runs_out_at(xs, [_gib(t) if t is not None else None for t in totals], _gib(gpu.memory_total_bytes))
            total = totals[at] if at is not None else None
            if at is None or total is None:  # runs_out_at only stops at a total it has
                continue
            out_x.append(xs[at])
            out_y.append(_gib(total))
            out_text.append(text("runs_out_hover", lang, series=name, gpu=gpu.display_name,
                                 total_bytes=gpu.memory_total_bytes, field=field, x=xs[at]))
    traces.append(go.Scatter(
        x=out_x, y=out_y, mode="markers", name=text("runs_out", lang), text=out_text,
        marker={"symbol": "x", "size": 12, "color": "#c62828", "line": {"width": 1}},
        hovertemplate="%{text}<extra></extra>",
    ))
    shapes, notes = _gpu_lines(gpus, lang)
    if current is not None:
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": current, "x1": current, "y0": 0, "y1": 1,
                       "line": {"dash": "dot", "width": 1, "color": "#555"}, "name": "current"})
        notes.append({"xref": "x", "yref": "paper", "x": math.log10(current), "y": 1, "xanchor": "left",
                      "yanchor": "top", "showarrow": False, "font": {"size": 11, "color": "#555"},
                      "text": " " + text("current", lang)})
    yaxis: dict[str, Any] = {"title": {"text": text("whatif_y", lang)}, "rangemode": "tozero"}
    top = _whatif_top(series, gpus, xs, current)
    if top is not None:
        yaxis["range"] = [0, top]
    layout = _localized(lang,
        text(f"whatif_title_{field}", lang), template, shapes=shapes, annotations=notes,
        xaxis={"title": {"text": text(f"whatif_x_{field}", lang)}, "type": "log", "tickvals": xs,
               "ticktext": [f"{x:,}" for x in xs]},
        yaxis=yaxis,
    )
    return go.Figure(data=traces, layout=layout)


def _whatif_top(series: Mapping[str, Sequence[int | None]], gpus: Sequence[GpuSpec], xs: Sequence[int],
                current: int | None) -> float | None:
    """Upper end of the y axis: enough to show the cards' lines and the plan's own point with room above,
    without letting the longest curves squash them (those run off the top; zoom out to see them)."""
    values = [_gib(t) for totals in series.values() for t in totals if t is not None]
    if not values:
        return None
    limit = max([_gib(g.memory_total_bytes) * 1.6 for g in gpus], default=0.0)
    if current is not None and current in xs:
        at = xs.index(current)
        limit = max([limit] + [_gib(v) * 1.3 for v in (t[at] for t in series.values()) if v is not None])
    highest = max(values) * 1.05
    return min(highest, limit) if limit > 0 else highest


# -- trial curves ------------------------------------------------------------------------------------


_TRIAL_METRICS = (("loss", "loss"), ("step_time_s", "step_time"), ("tokens_per_s", "tokens_s"),
                  ("trial_memory_bytes", "memory"))


def trial_figure(steps: Sequence[Any], *, lang: str = "en") -> go.Figure:
    """Loss, step time, tokens/s and trial memory against the optimizer step (2 x 2 panels).

    Args:
        steps: ``gpuwork.measure.trial.StepMeasurement`` objects (warm-up included; drawn hollow and grey).

    Traces: for each metric (loss, step time, tokens/s, memory) a "measured" then a "warm-up" trace.
    """
    titles = [text(key, lang) for _attr, key in _TRIAL_METRICS]
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.16, vertical_spacing=0.16)
    for i, (attr, _key) in enumerate(_TRIAL_METRICS):
        row, col = divmod(i, 2)
        for warm in (False, True):
            chosen = [s for s in steps if bool(s.is_warmup) == warm]
            ys = [getattr(s, attr) for s in chosen]
            if attr == "trial_memory_bytes":
                ys = [y / MIB for y in ys]
            fig.add_trace(go.Scatter(
                x=[s.step for s in chosen], y=ys, mode="lines+markers" if not warm else "markers",
                name=text("warmup" if warm else "measured", lang), legendgroup="warm" if warm else "measured",
                showlegend=i == 0,
                marker={"color": "#9e9e9e" if warm else _SERIES_COLORS[i], "size": 7,
                        "symbol": "circle-open" if warm else "circle"},
                line={"color": _SERIES_COLORS[i]},
                hovertemplate=f"{html.escape(titles[i])}<br>step %{{x}}: %{{y:,.4g}}<extra></extra>",
            ), row=row + 1, col=col + 1)
        fig.update_xaxes(title_text=text("step_x", lang), row=row + 1, col=col + 1, rangemode="tozero",
                         title_font_size=11)
        fig.update_yaxes(title_text=titles[i], row=row + 1, col=col + 1, title_font_size=11)
    fig.update_layout(**_localized(lang, text("trial_title", lang), height=620,
                                     margin={"l": 70, "r": 20, "t": 90, "b": 60},
                                     legend={"orientation": "h", "x": 0, "y": 1.04, "xanchor": "left",
                                             "yanchor": "bottom"}))
    return fig


# -- estimate vs measured ----------------------------------------------------------------------------


def estimate_vs_measured_figure(rows: Sequence[Mapping[str, Any]], *, lang: str = "en") -> go.Figure:
    """Grouped bars: an estimate and the matching measurement for each row.

    Args:
        rows: dicts with ``label``, ``estimated_bytes``, ``measured_bytes`` and optionally
            ``estimated_what`` / ``measured_what`` (what each number counts, shown on hover).
            Shown in MiB when every value is below 1 GiB, else GiB.

    Traces: "estimate", then "measured".
    """
    values = [v for r in rows for v in (r.get("estimated_bytes"), r.get("measured_bytes")) if v is not None]
    small = all(v < GIB for v in values)
    unit_key, scale = ("MiB", MIB) if small else ("GiB", GIB)
    unit_shown = unit(unit_key, lang)
    labels = [str(r["label"]) for r in rows]
    traces: list[Any] = []
    for key, what, name, color in (("estimated_bytes", "estimated_what", text("estimate", lang), "#4c78a8"),
                                   ("measured_bytes", "measured_what", text("measured", lang), "#f58518")):
        ys = [r[key] / scale if r.get(key) is not None else None for r in rows]
        hover = [html.escape(str(r.get(what, ""))) for r in rows]
        traces.append(go.Bar(x=labels, y=ys, name=name, marker={"color": color}, customdata=hover,
                             hovertemplate=f"<b>{html.escape(name)}</b>: %{{y:,.1f}} {unit_shown}<br>"
                                           "%{customdata}<extra></extra>"))
    layout = _localized(lang, text("evm_title", lang), barmode="group",
                          yaxis={"title": {"text": text("evm_y", lang, unit=unit_shown)}})
    return go.Figure(data=traces, layout=layout)


# -- offers ------------------------------------------------------------------------------------------


def offers_figure(results: Iterable[Any], *, lang: str = "en") -> go.Figure:
    """Expected cost against expected wall time for each fitting offer, one trace per rental mode.

    Args:
        results: ``gpuwork.estimate.offers.OfferResult`` objects; offers that do not fit, or whose expected time
            or cost is infinite (preemptions faster than checkpoints), are left out.

    Traces: on-demand, reserved, interruptible (always three, possibly empty).
    """
    by_mode: dict[str, list[Any]] = {mode: [] for mode in _MODE_COLORS}
    for r in results:
        if not r.fits or r.expected_total_s is None or r.expected_cost_usd is None:
            continue
        if not (math.isfinite(r.expected_total_s) and math.isfinite(r.expected_cost_usd)):
            continue
        by_mode.setdefault(r.offer.mode.value, []).append(r)
    traces: list[Any] = []
    for mode, items in by_mode.items():
        hover = [
            f"<b>{html.escape(r.offer.offer_id)}</b> ({html.escape(r.offer.provider)})<br>"
            + text("offer_hover", lang, gpus=r.fit.plan.gpus, gpu=html.escape(r.offer.gpu.display_name),
                   sharding=r.fit.plan.sharding, region=r.offer.region, price_usd=r.offer.price_per_gpu_hour,
                   billed=r.billed_gpus)
            + ("<br>" + text("offer_preemptions", lang, preemptions=r.expected_preemptions)
               if r.expected_preemptions else "")
            for r in items
        ]
        traces.append(go.Scatter(
            x=[r.expected_total_s / HOUR_S for r in items], y=[r.expected_cost_usd for r in items],
            mode="markers", name=text("mode", lang, mode=mode),
            text=hover, marker={"size": 10, "color": _MODE_COLORS.get(mode, "#888"),
                                "line": {"width": 1, "color": "#333"}},
            hovertemplate=f"%{{text}}<br>%{{x:,.1f}} {unit('h', lang)}, %{{y:,.0f}} USD<extra></extra>",
        ))
    notes = [] if any(by_mode.values()) else [
        {"text": text("no_offers", lang), "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}]
    layout = _localized(lang, text("offers_title", lang), annotations=notes, height=500,
                          xaxis={"title": {"text": text("offers_x", lang)}, "type": "log"},
                          yaxis={"title": {"text": text("offers_y", lang)}, "type": "log"})
    return go.Figure(data=traces, layout=layout)


# -- step time ----------------------------------------------------------------------------------------

# One colour per part of a step (TimeEstimate.breakdown keys), stable across figures and the app's step bar.
TIME_COLORS = {
    "matmul": "#4c78a8", "attention": "#72b7b2", "memory": "#f58518", "optimizer": "#e45756",
    "launch overhead": "#bab0ac", "communication (exposed)": "#b279a2", "communication contention": "#d4a6c8", "data wait": "#9d755d",
    "optimizer on CPU": "#ff9da6", "parameter offload (PCIe)": "#eeca3b", "compute (given MFU)": "#54a24b",
    "checkpoint offload (PCIe)": "#d67195", "FSDP copies": "#ffbf79",
}


def time_color(part: str) -> str:
    """The colour of a part of a step (grey for one the table does not name)."""
    return TIME_COLORS.get(part, "#888")


def step_time_figure(times: Any | Sequence[Any], *, lang: str = "en", template: str | None = TEMPLATE) -> go.Figure:
    """Where one optimizer step goes on one GPU: a horizontal stacked bar per TimeEstimate, seconds
    labelled on each segment (the parts of ``TimeEstimate.breakdown``).

    Traces: one per part that any of the estimates has, in the order of ``TIME_COLORS``.
    """
    times = [times] if not isinstance(times, Sequence) else list(times)
    names = [f"{html.escape(t.gpu_name)} · {t.stack}" for t in times]
    parts = [k for k in TIME_COLORS if any(t.breakdown.get(k, 0) > 0 for t in times)]
    parts += sorted({k for t in times for k, v in t.breakdown.items() if v > 0} - set(parts))
    traces = []
    for part in parts:
        label = messages.text(messages.time_kind_code(part), lang)
        values = [t.breakdown.get(part, 0.0) for t in times]
        traces.append(go.Bar(
            y=names, x=values, name=label, orientation="h", marker={"color": time_color(part)},
            text=[f"{v:.3g} {unit('s', lang)}" if v > 0 else "" for v in values], textposition="inside",
            hovertemplate=f"{html.escape(label)}: %{{x:.4g}} {unit('s', lang)}<extra></extra>"))
    layout = _localized(lang, text("step_parts_title", lang), template, barmode="stack", height=160 + 60 * len(times),
                          xaxis={"title": {"text": text("step_seconds", lang)}}, legend={"orientation": "h", "y": -0.35})
    return go.Figure(data=traces, layout=layout)


def scaling_figure(points: Sequence[Any], *, gpu_name: str = "", lang: str = "en",
                   template: str | None = TEMPLATE) -> go.Figure:
    """Tokens per second per GPU against the number of GPUs (``gpuwork.estimate.timing.scaling``).

    Traces: tokens/s per GPU (markers and line) and the scaling efficiency on a second axis.
    """
    xs = [p.gpus for p in points]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=xs, y=[p.tokens_per_s_per_gpu for p in points], mode="lines+markers",
                             name=text("scaling_tokens", lang), marker={"color": _SERIES_COLORS[0]},
                             hovertemplate="%{x}: %{y:,.0f}<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=xs, y=[100 * p.scaling_efficiency for p in points], mode="lines+markers",
                             name=text("scaling_efficiency", lang), marker={"color": _SERIES_COLORS[1]},
                             line={"dash": "dot"}, hovertemplate="%{x}: %{y:.0f} %<extra></extra>"),
                  secondary_y=True)
    fig.update_layout(**_localized(lang, text("scaling_title", lang, gpu=html.escape(gpu_name)), template, height=380,
                                     xaxis={"title": {"text": text("scaling_x", lang)}, "type": "log",
                                            "tickvals": xs}))
    fig.update_yaxes(title_text=text("scaling_tokens", lang), rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text=text("scaling_efficiency", lang), range=[0, 105], secondary_y=True)
    return fig


__all__ = [
    "LANGS",
    "TOTALS",
    "estimate_vs_measured_figure",
    "memory_breakdown_figure",
    "offers_figure",
    "runs_out_at",
    "scaling_figure",
    "step_time_figure",
    "term_label",
    "text",
    "total_label",
    "trial_figure",
    "whatif_figure",
]
