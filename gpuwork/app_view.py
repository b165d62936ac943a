"""The Voila app's first panel: a small form bound to a TrainPlan and the per-GPU memory it needs.

Three thin layers, no formulas here (the estimator computes, this module only shows):
``plan_from_values`` (form values -> validated TrainPlan), ``estimate_html`` / ``error_html``
(estimate -> HTML, bytes converted to GiB for display only) and ``EstimatePanel`` (the widgets:
every control change rebuilds the plan and re-renders). ``notebooks/app.ipynb`` just displays
``build_app()``.

Example:
    >>> panel = build_app()
    >>> panel.controls["seq_len"].value = 4096  # the table re-renders
    >>> panel.estimate.peak_allocated_bytes > 0
    True

Limitations:
    Only model, method, precision, sequence length, micro-batch and LoRA target modules are
    editable; every other TrainPlan field keeps its default (one GPU, AdamW, SDPA attention, LoRA r=16).
"""

from __future__ import annotations

import html
import logging
from typing import Any

import ipywidgets as widgets

from gpuwork.errors import GpuworkError
from gpuwork.memory import GIB, TERM_LABELS, MemoryEstimate, estimate_memory
from gpuwork.model import list_presets
from gpuwork.plan import Method, Precision, TrainPlan

TITLE = "gpuwork — GPU sizing for fine-tuning"
FORM_FIELDS = ("model", "method", "precision", "seq_len", "batch_size", "lora_targets")

# (attribute of the estimate, label, what it means): shown under the breakdown table.
TOTALS: tuple[tuple[str, str, str], ...] = (
    ("peak_allocated_bytes", "Peak allocated",
     "tensors alive at the worst moment of a step: what torch.cuda.max_memory_allocated() reports"),
    ("peak_reserved_bytes", "Peak reserved",
     "allocated peak plus the PyTorch caching allocator's cache: torch.cuda.max_memory_reserved()"),
    ("device_total_bytes", "Device total",
     "reserved plus the CUDA context and library workspaces: what nvidia-smi shows; "
     "compare this with the card's memory"),
)

_log = logging.getLogger(__name__)
_ERROR_COLOR = "#c62828"


def plan_from_values(base: TrainPlan, values: dict[str, Any]) -> TrainPlan:
    """The plan the form describes: ``base`` with the form's fields replaced (validated).

    Raises:
        PlanError: a value is invalid (the message names the field and the fix).
    """
    return base.replace(**values)


def one_line(message: str) -> str:
    """A message on one line (the app shows errors as a single line)."""
    return " ".join(str(message).split())


def error_html(message: str) -> str:
    """A friendly one-line error in red, HTML-escaped."""
    return (f'<div class="gpuwork-error" style="color:{_ERROR_COLOR};font-weight:600">'
            f"{html.escape(one_line(message))}</div>")


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:,.2f}"


def _label(term: str) -> str:
    return TERM_LABELS.get(term, term.replace("_", " "))


def estimate_html(plan: TrainPlan, est: MemoryEstimate) -> str:
    """HTML for one estimate: the per-GPU breakdown table in GiB (non-zero terms), then the three totals.

    Args:
        plan: the plan that was estimated (for the caption).
        est: a ``gpuwork.memory.MemoryEstimate``: ``breakdown`` (term -> bytes), the three ``*_bytes``
            totals, ``sources`` (term -> where it comes from), ``peak_phase``, ``warnings`` and
            ``host_bytes``.
    """
    caption = (f"Per-GPU memory for <b>{html.escape(plan.model)}</b>, {plan.method.value}, "
               f"{plan.precision.value}, sequence length {plan.seq_len:,}, micro-batch {plan.batch_size}")
    if est.peak_phase:
        caption += f"; the peak comes during the <b>{html.escape(est.peak_phase)}</b>"
    sources = est.sources
    rows = "".join(
        f'<tr><td>{html.escape(_label(term))}</td><td style="text-align:right">{_gib(n_bytes)}</td>'
        f'<td style="color:#555">{html.escape(sources.get(term, ""))}</td></tr>'
        for term, n_bytes in est.breakdown.items()
        if n_bytes  # terms absent from this plan (0 bytes) are left out, as the CLI does
    )
    totals = "".join(
        f'<tr><td><b>{label}</b></td><td style="text-align:right"><b>{_gib(getattr(est, attr))}</b></td>'
        f'<td style="color:#555">{html.escape(meaning)}</td></tr>'
        for attr, label, meaning in TOTALS
    )
    notes = "".join(f'<li style="color:#9a6700">{html.escape(one_line(w))}</li>'
                    for w in est.warnings)
    if est.host_bytes:
        notes += f"<li>Offloaded to CPU RAM (not on the GPU): {_gib(est.host_bytes)} GiB</li>"
    return (
        '<div class="gpuwork-estimate">'
        f"<p>{caption}</p>"
        '<table class="gpuwork-breakdown">'
        '<thead><tr><th style="text-align:left">Term</th><th style="text-align:right">GiB</th>'
        '<th style="text-align:left">Source</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        '<table class="gpuwork-totals" style="margin-top:0.8em">'
        '<thead><tr><th style="text-align:left">Total</th><th style="text-align:right">GiB</th>'
        '<th style="text-align:left">Meaning</th></tr></thead>'
        f"<tbody>{totals}</tbody></table>"
        + (f'<ul class="gpuwork-notes">{notes}</ul>' if notes else "")
        + '<p style="color:#555">GiB = 2<sup>30</sup> bytes.</p>'
        "</div>"
    )


class EstimatePanel(widgets.VBox):
    """Form (model, method, precision, seq length, micro-batch, LoRA targets) + its memory estimate.

    State after each change: ``plan`` and ``estimate`` (None while the input is invalid) and
    ``error`` (the one-line message shown, or None). ``controls`` maps TrainPlan field -> widget.
    """

    def __init__(self, plan: TrainPlan | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.base_plan = plan if plan is not None else TrainPlan()
        self.plan: TrainPlan | None = None
        self.estimate: MemoryEstimate | None = None
        self.error: str | None = None

        presets = list_presets()
        if self.base_plan.model not in presets:
            presets = [self.base_plan.model, *presets]
        style = {"description_width": "150px"}
        self.controls: dict[str, widgets.ValueWidget] = {
            "model": widgets.Dropdown(options=presets, value=self.base_plan.model,
                                      description="Model", style=style),
            "method": widgets.Dropdown(options=[m.value for m in Method], value=self.base_plan.method.value,
                                       description="Method", style=style),
            "precision": widgets.Dropdown(options=[p.value for p in Precision],
                                          value=self.base_plan.precision.value,
                                          description="Precision", style=style),
            "seq_len": widgets.IntText(value=self.base_plan.seq_len, description="Sequence length",
                                       style=style),
            "batch_size": widgets.IntText(value=self.base_plan.batch_size, description="Micro-batch",
                                          style=style),
            # Module names differ between architectures (q_proj / query / c_attn): free text, checked by
            # the estimator, whose message lists the model's linear modules.
            "lora_targets": widgets.Text(value=",".join(self.base_plan.lora_targets),
                                         description="LoRA targets", placeholder="q_proj,v_proj or all-linear",
                                         continuous_update=False, style=style),
        }
        self.result = widgets.HTML()
        self.result.add_class("gpuwork-result")
        self.children = [*self.controls.values(), self.result]
        for name, control in self.controls.items():
            control.add_class(f"gpuwork-{name.replace('_', '-')}")  # stable hooks for browser tests
            control.observe(self._on_change, names="value")
        self.refresh()

    def _on_change(self, _change: dict[str, Any]) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the plan from the form and re-render; invalid input shows a red one-line message."""
        values = {name: control.value for name, control in self.controls.items()}
        try:
            plan = plan_from_values(self.base_plan, values)
            est = estimate_memory(plan)
        except GpuworkError as exc:
            self._show_error(str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            _log.exception("estimate failed for %r", values)
            self._show_error(f"unexpected error ({type(exc).__name__}: {exc}); this is a bug in gpuwork, "
                             "please report it with the values you entered")
            return
        self.plan, self.estimate, self.error = plan, est, None
        self.result.value = estimate_html(plan, est)

    def _show_error(self, message: str) -> None:
        self.plan, self.estimate, self.error = None, None, one_line(message)
        self.result.value = error_html(message)


def build_app(plan: TrainPlan | None = None) -> EstimatePanel:
    """The app's widget tree, starting from ``plan`` (default: ``TrainPlan()``)."""
    return EstimatePanel(plan)


__all__ = ["GIB", "TITLE", "TOTALS", "EstimatePanel", "build_app", "error_html", "estimate_html", "one_line",
           "plan_from_values"]
