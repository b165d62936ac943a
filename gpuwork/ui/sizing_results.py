"""What the estimators say about one plan, without widgets: ``size_plan`` (a ``SizingResult``) with its what-if
series (``whatif_series``), and the HTML the sizing form shows for it (totals, details, a step's parts, the exact
check's trace).
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.estimate.memory import GIB, MemoryEstimate
from gpuwork.facts.block_profiles import block_profile_note
from gpuwork.facts.catalog import GpuSpec
from gpuwork.facts.model import spec_for_plan
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, TrainPlan
from gpuwork.present import charts
from gpuwork.present.band import band_messages
from gpuwork.present.messages import render, render_all, text, time_kind_code
from gpuwork.sizing import decide, estimate_disk, estimate_memory, match_profile, resolve, scaling, time_band
from gpuwork.ui.common import (
    MUTED,
    NOTE_COLOR,
    heading_html,
    note_html,
    one_line,
    plan_caption,
    table_html,
    ui,
)
from gpuwork.units import GB, fmt_number, fmt_seconds, fmt_size

WHATIF_VALUES = {
    "seq_len": (256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
    "batch_size": (1, 2, 4, 8, 16, 32, 64),
}
WHATIF_METHODS = tuple(m.value for m in Method)


def _gib(n_bytes: float, lang: str = "en") -> str:
    """GiB with two decimals, no unit (the column says GiB)."""
    return fmt_number(n_bytes / GIB, lang, 2)


# -- sizing: pure update -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SizingResult:
    """What the estimators say about one plan (no widgets)."""

    plan: TrainPlan
    memory: MemoryEstimate
    axis: str  # the what-if field: "seq_len" or "batch_size"
    whatif_values: tuple[int, ...]
    whatif: dict[str, list[int | None]]  # method -> device total bytes per value (None: invalid there)
    profile: Any = None  # gpuwork.estimate.profiles.ProfileMatch when that module is present
    disk: Any = None  # gpuwork.estimate.disk.DiskPlan
    notes: tuple[Msg, ...] = field(default_factory=tuple)  # parts that could not be estimated, one each
    scaling: tuple = ()  # gpuwork.estimate.timing.ScalingPoint on 1..64 of the profile's GPU
    decision: Any = None  # gpuwork.estimate.decision.Decision: the one answer the profile shows


def whatif_series(plan: TrainPlan, axis: str, values: Sequence[int], methods: Sequence[str] = WHATIF_METHODS
                  ) -> dict[str, list[int | None]]:
    """Device total per GPU (bytes) of ``plan`` with ``axis`` set to each value, for each method."""
    if axis not in WHATIF_VALUES:
        raise PlanError(axis, msg("error.ui.whatif_axis", value=repr(axis), choices=", ".join(WHATIF_VALUES)))
    spec = spec_for_plan(plan)
    out: dict[str, list[int | None]] = {}
    for method in methods:
        row: list[int | None] = []
        for value in values:
            try:
                row.append(estimate_memory(plan.replace(method=method, **{axis: value}), spec).device_total_bytes)
            except GpuworkError:
                row.append(None)
        out[method] = row
    return out


def size_plan(plan: TrainPlan, *, axis: str = "seq_len", constraints: Any = None) -> SizingResult:
    """Memory, what-if curves, profile (with its time estimate) and disk for one plan.

    The profile is the one answer's (``gpuwork.estimate.decision.decide`` under ``constraints``, the Offers tab's
    filters in the app): the card, count, nodes and mode the Advice, Offers and Request tabs show; the reference-card
    profile (``match_profile``) only when no offer fits.

    Raises GpuworkError when the memory estimate itself cannot be made; profile and disk failures
    become one-line ``notes`` so that the memory answer is still shown. The first note, for a family without a
    hand-written block model, is what the gather step's tracing said (as the CLI says it on stderr).
    """
    memory = estimate_memory(plan)
    values = tuple(sorted(set(WHATIF_VALUES[axis]) | {getattr(plan, axis)}))
    series = whatif_series(plan, axis, values)
    traced = block_profile_note(resolve(plan).spec)
    notes: list[Msg] = [] if traced is None else [traced]
    profile = disk = decision = None
    try:
        decision = decide(plan, constraints=constraints)
        profile = decision.match if decision.fits else match_profile(plan)
    except GpuworkError as exc:
        notes.append(msg("ui.not_estimated", what="profile", error=one_line(exc)))
    try:
        disk = estimate_disk(plan)
    except GpuworkError as exc:
        notes.append(msg("ui.not_estimated", what="disk", error=one_line(exc)))
    curve: tuple = ()
    if profile is not None and profile.time is not None:
        with contextlib.suppress(GpuworkError):  # the time line above already says what failed
            curve = scaling(profile.time.plan, profile.time.gpu_id)
    return SizingResult(plan, memory, axis, values, series, profile, disk, tuple(notes), curve, decision)


def memory_units_html(gpu: GpuSpec, lang: str = "en") -> str:
    """One card's memory the three ways people meet it (as sold in GB, nvidia-smi's GiB total, the GiB a plan
    may use) and why they differ: 80 GB, 79.6 GiB total, 75.7 GiB usable for an H100 SXM."""
    from gpuwork.estimate.offers import DEFAULT_SAFETY_MARGIN, usable_memory_bytes

    return ui("memory_units", lang, gpu=html.escape(gpu.display_name), card_gb=round(gpu.memory_bytes / GB),
              total_bytes=gpu.memory_total_bytes, usable_bytes=usable_memory_bytes(gpu), margin=DEFAULT_SAFETY_MARGIN)


def stack_html(plan: TrainPlan, lang: str = "en") -> str:
    """The software stack the plan's estimates are priced with ("stack: HF Trainer (eager)"), one line."""
    return (f'<p class="gpuwork-stack" style="margin:2px 0">'
            f'{html.escape(text("stack.label", lang, stack=plan.stack.value))}</p>')


def totals_html(plan: TrainPlan, est: MemoryEstimate, lang: str = "en", model_label: str | None = None,
                gpu: GpuSpec | None = None) -> str:
    """The three totals with what each one counts, the peak's phase, warnings and offloaded RAM."""
    rows = []
    for attr in charts.TOTALS:
        label, meaning = charts.total_label(attr, lang)
        rows.append((f"<b>{html.escape(label)}</b>", f"<b>{_gib(getattr(est, attr), lang)}</b>", html.escape(meaning)))
    table = table_html((ui("total", lang), ui("gib", lang), ui("meaning", lang)), rows, "gpuwork-totals", right=(1,))
    notes = [ui("peak_at", lang, phase=est.peak_phase),
             ui("params", lang, total=est.params.total, trainable=est.params.trainable)]
    if est.host_bytes:
        notes.append(html.escape(ui("host", lang, host_bytes=est.host_bytes)))
    warn = "".join(note_html("⚠ " + html.escape(one_line(render(w, lang))), NOTE_COLOR, "gpuwork-warning")
                   for w in est.warnings)
    return (f'<div class="gpuwork-summary"><p style="margin:2px 0">{html.escape(plan_caption(plan, model_label, lang))}'
            f"</p>{stack_html(plan, lang)}{table}<p style='margin:2px 0;color:{MUTED}'>{' '.join(notes)} {memory_units_html(gpu, lang) if gpu else ui('gib_note', lang)}</p>"
            f"{warn}</div>")


def details_html(result: SizingResult, lang: str = "en") -> str:
    """Profile (with reasons), time on the profile's card and the disk plan, as HTML."""
    parts: list[str] = []
    match = result.profile
    if match is not None:
        parts.append(heading_html(4, ui("h_profile", lang)))
        if match.profile is None:
            parts.append(f"<p>{ui('no_profile', lang)}</p>")
        elif result.decision is not None and result.decision.own:  # the user's cards: no rental mode to name
            parts.append("<p>" + html.escape(ui("profile_own", lang, id=match.profile.profile_id,
                                                name=match.profile.name, gpus=match.gpus,
                                                gpu=match.gpu_name or "?")) + "</p>")
        else:
            parts.append("<p>" + html.escape(ui("profile", lang, id=match.profile.profile_id, name=match.profile.name,
                                                gpus=match.gpus, gpu=match.gpu_name or "?",
                                                mode=match.profile.mode)) + "</p>")
        if result.decision is not None:  # the one answer, as the other tabs say it
            parts.append('<p class="gpuwork-decision" style="margin:2px 0"><b>'
                         + html.escape(render(result.decision.summary, lang)) + "</b></p>")
        items = [f"<li>+ {html.escape(r)}</li>" for r in render_all(match.reasons, lang)]
        items += [f"<li style='color:{MUTED}'>– " + html.escape(ui("not_profile", lang, id=k, why=v))
                  + "</li>" for k, v in sorted(match.rejected.items())]
        if match.changes:
            items.append("<li>" + html.escape(ui("changes", lang, what=match.changes)) + "</li>")
        items += [f"<li>{html.escape(ui('check', lang, what=c))}</li>" for c in match.checks]
        parts.append(f'<ul class="gpuwork-profile" style="margin:2px 0">{"".join(items)}</ul>')
        t = match.time
        if t is not None:
            parts.append(heading_html(4, ui("h_time", lang)))
            parts.append(stack_html(t.plan, lang))
            parts.append('<p class="gpuwork-time">' + ui(  # the template's own <b>; the GPU name escaped
                "time_line", lang, gpus=t.plan.gpus, gpu=html.escape(t.gpu_name), step_s=t.step_time_s,
                tokens_s=t.tokens_per_s, steps=t.steps, train_s=t.train_s, eval_s=t.eval_s,
                checkpoint_s=t.checkpoint_s, margin_s=t.margin_s, total_s=t.total_s, gpu_hours=t.gpu_hours) + "</p>")
            # the held-out track record: how far measured steps fell from estimates like this one
            parts += ['<p class="gpuwork-track-record">' + html.escape(render(m, lang)) + "</p>"
                      for m in band_messages(time_band(t), t)]
            parts.append(note_html(html.escape(ui("peak", lang, peak=t.peak, tflops=t.peak_flops_per_gpu / 1e12))))
            parts.append(note_html(html.escape(ui("mfu", lang, mfu=t.mfu.value, note=t.mfu.note))))
            parts.append(step_parts_html(t, lang))
            if result.scaling:
                points = tuple(msg("cli.plan.scaling_point", gpus=pt.gpus, tokens_s=pt.tokens_per_s_per_gpu)
                               for pt in result.scaling)
                parts.append(note_html(html.escape(ui("scaling_line", lang, gpu=t.gpu_name, points=points))))
            for line in (*t.comm.verdict, t.data.verdict, *t.warnings):
                parts.append(note_html(html.escape(render(line, lang))))
    disk = result.disk
    if disk is not None:
        parts.append(heading_html(4, ui("h_disk", lang)))
        parts.append("<p>" + ui("disk_total", lang, total_bytes=disk.recommended_bytes,
                                margin_bytes=disk.margin_bytes) + "</p>")
        rows = [(html.escape(render(item.label, lang)), fmt_size(item.bytes, lang),
                 f"<span style='color:{MUTED}'>{html.escape(render(item.rule, lang))}</span>") for item in disk.lines]
        parts.append(table_html(("", "", ""), rows, "gpuwork-disk", right=(1,)))
        parts += [note_html(html.escape(n), NOTE_COLOR) for n in render_all(disk.notes, lang)]
    parts += [note_html(html.escape(n), NOTE_COLOR) for n in render_all(result.notes, lang)]
    return '<div class="gpuwork-details">' + "".join(parts) + "</div>"


def step_parts_html(time: Any, lang: str = "en") -> str:
    """Where one step goes: a stacked bar (segments sized by their share) and a table of seconds and shares."""
    total = sum(time.breakdown.values()) or 1.0
    parts = sorted(((k, v) for k, v in time.breakdown.items() if v > 0), key=lambda kv: -kv[1])
    bar = "".join(
        f'<div title="{html.escape(text(time_kind_code(k), lang))}" style="width:{100 * v / total:.2f}%;'
        f'background:{charts.time_color(k)};height:14px"></div>' for k, v in parts)
    rows = [(html.escape(text(time_kind_code(k), lang)), ui("step_part", lang, seconds=v),
             fmt_number(100 * v / total, lang, 0) + " %") for k, v in parts]
    return ("<div class='gpuwork-step-parts'>" + note_html(html.escape(ui("step_parts", lang, stack=time.stack,
                                                                          gpu=time.gpu_name)))
            + f"<div style='display:flex;width:100%;max-width:520px;margin:2px 0'>{bar}</div>"
            + table_html(("", "", ""), rows, "gpuwork-step-table", right=(1, 2)) + "</div>")


def trace_html(plan: TrainPlan, traced: Any, est: MemoryEstimate | None, lang: str = "en") -> str:
    """Traced peak (fake-tensor step) next to the analytic estimate of the same quantity."""
    rows = [(html.escape(charts.term_label(k, lang)), _gib(v, lang)) for k, v in traced.breakdown.items() if v]
    parts = [note_html(html.escape(ui("trace_plan", lang, plan=plan_caption(plan, lang=lang)))),
             table_html((ui("category", lang), ui("gib", lang)), rows, "gpuwork-trace-breakdown", right=(1,))]
    total_rows = [(f"<b>{ui('traced', lang)}</b>", f"<b>{_gib(traced.peak_allocated_bytes, lang)}</b>")]
    if est is not None and est.plan == plan:
        analytic = est.traceable_bytes  # as `gpuwork trace` shows
        diff = analytic / traced.peak_allocated_bytes - 1 if traced.peak_allocated_bytes else float("nan")
        total_rows += [(ui("analytic", lang), _gib(analytic, lang)),
                       (ui("difference", lang), fmt_number(diff * 100, lang, 1) + "%")]
        parts.append(table_html(("", ui("gib", lang)), total_rows, "gpuwork-trace-totals", right=(1,)))
        parts.append(note_html(html.escape(ui("traced_phase", lang, traced=traced.peak_phase,
                                              analytic=est.peak_phase))))
    else:
        parts.append(table_html(("", ui("gib", lang)), total_rows, "gpuwork-trace-totals", right=(1,)))
    parts += [note_html(html.escape(ui("stand_in", lang, what=s)), NOTE_COLOR) for s in traced.stand_ins]
    parts.append(note_html(fmt_seconds(traced.elapsed_s, lang)))
    return '<div class="gpuwork-trace">' + "".join(parts) + "</div>"


