"""The trial panel: a measured trial (tiny model on the CPU by default) with live curves.

``TrialPanel`` runs ``gpuwork.measure.trial`` with progress, Stop, the checkpoint round-trip, the
ramp, the extrapolation to the whole run and estimate vs measured; ``load(path)`` shows a record written
earlier (by ``gpuwork trial`` or by the user's own Trainer run, ``gpuwork.hf.GpuworkCallback``) the same way.
Its pure updates are ``estimate_vs_measured_rows``, ``beside_rows`` / ``beside_html`` (the estimate for exactly
the record's configuration beside what it measured, with the error) and ``extrapolate``. In demo mode (the
Voila app) it runs tiny presets only, within ``DEMO_LIMITS`` (the ramp too), on the CPU, in the server's one
waiting line of expensive actions (``gpuwork.ui.queue``: "waiting (n ahead)", bounded; Stop leaves the line).

``LiveCurves`` is the panel's live figure on its own, fed by the ``on_measure`` hook of the user's run::

    curves = LiveCurves()
    display(curves)
    trainer.add_callback(GpuworkCallback(out="trial-out", steps=20, on_measure=curves.update))
    trainer.train()  # the curves move while the Trainer runs

Example:
    >>> panel = TrialPanel(steps=2, warmup=1)
    >>> record = panel.run()  # a few seconds on a CPU
    >>> record.fits, len(record.measured)
    (True, 2)

Limitations: a trial on a CPU proves the pipeline, not the speed: the whole-run extrapolation and the time
estimate need a trial on a GPU listed in data/gpus.csv, the memory estimate a CUDA trial. The Run button runs
the trial in a background thread; a second run from the same panel while one is going is refused.
"""

from __future__ import annotations

import contextlib
import html
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.estimate.memory import MIB
from gpuwork.facts.model import list_presets
from gpuwork.measure import calibration, extrapolation
from gpuwork.measure.clipping import clipping_note
from gpuwork.message import msg
from gpuwork.plan import Method, Precision, TrainPlan
from gpuwork.present import charts
from gpuwork.present.messages import render, text
from gpuwork.sizing import estimate_memory
from gpuwork.ui import common
from gpuwork.ui.common import (
    CHECKBOX_LAYOUT,
    LANGS,
    NOTE_COLOR,
    WIDE,
    LiveFigure,
    NumberText,
    describe,
    error_html,
    friendly,
    html_output,
    note_html,
    one_line,
    plan_caption,
    plan_from,
    quiet,
    run_in_thread,
    ui,
)
from gpuwork.units import GB, MISSING, fmt_duration, fmt_int, fmt_memory, fmt_seconds, fmt_size

_log = logging.getLogger(__name__)

# Trial defaults: a tiny real model on the CPU, a few steps (seconds).
DEFAULT_TRIAL_PLAN = {"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128,
                      "batch_size": 4}
# The app's demo trial: tiny presets only, short, in the server's waiting line (the ramp's probes too).
DEMO_LIMITS = {"steps": 20, "warmup": 3, "seq_len": 256, "batch_size": 8, "grad_accum": 4}
# Any trial from the panel: a measurement, not a training run (the plan bounds seq_len, batch and accumulation).
COUNT_LIMITS = {"steps": 10_000, "warmup": 1_000}
# LiveCurves redraws at most this often: each redraw sends the figure's changed traces to the browser, and a
# tiny model's steps (milliseconds) would otherwise queue more messages than the frontend draws.
LIVE_MIN_INTERVAL_S = 0.5


# -- trial: pure update --------------------------------------------------------------------------------


def estimate_vs_measured_rows(record: Any, lang: str = "en") -> list[dict[str, Any]]:
    """Rows for ``charts.estimate_vs_measured_figure``: the estimate of the trial's own plan (as it ran:
    its precision, device count and attention) next to what the trial measured, each with what it counts
    (labels in ``lang``).

    On CUDA the numbers come from ``gpuwork.measure.calibration.calibrate`` (the
    same comparison the calibration file keeps); on a CPU the measured number is the process RSS.
    """
    def say(key: str) -> str:
        return text(f"trial.evm.{key}", lang)

    def cuda_rows(allocated: tuple[int, int | None], reserved: tuple[int, int | None]) -> list[dict[str, Any]]:
        return [
            {"label": say("peak_allocated"), "estimated_bytes": allocated[0], "measured_bytes": allocated[1],
             "estimated_what": say("estimate_live"), "measured_what": say("measured_allocated")},
            {"label": say("peak_reserved"), "estimated_bytes": reserved[0], "measured_bytes": reserved[1],
             "estimated_what": say("estimate_cache"), "measured_what": say("measured_reserved")},
        ]

    s = record.summary
    if s is not None and s.cuda_peak_allocated_bytes and record.fits:
        try:
            memory = calibration.calibrate(record).memory
        except GpuworkError:
            memory = None
        if memory is not None:
            return cuda_rows((memory.estimated_allocated_bytes, memory.measured_allocated_bytes),
                             (memory.estimated_reserved_bytes, memory.measured_reserved_bytes))
    plan = record.plan
    with contextlib.suppress(GpuworkError, ValueError):
        plan = plan.replace(precision=record.protocol.precision_used)
    with contextlib.suppress(GpuworkError, ValueError):
        plan = plan.single_gpu()
    try:
        est = estimate_memory(plan)
    except GpuworkError:
        return []
    if s is not None and s.cuda_peak_allocated_bytes:
        return cuda_rows((est.peak_allocated_bytes, s.cuda_peak_allocated_bytes),
                         (est.peak_reserved_bytes, s.cuda_peak_reserved_bytes))
    return [{"label": say("peak_memory"), "estimated_bytes": est.peak_allocated_bytes,
             "measured_bytes": record.peak_trial_memory_bytes, "estimated_what": say("estimate_gpu"),
             "measured_what": say("measured_rss")}]


def beside_rows(record: Any, lang: str = "en", side: Mapping[str, Any] | None = None
                ) -> tuple[list[dict[str, str]], list[str]]:
    """The estimate for exactly the record's configuration beside what it measured, as display rows.

    From ``gpuwork.measure.calibration.beside`` (what ``gpuwork compare`` shows): on CUDA the three memory
    totals (allocated, reserved, and the device total when the record measured it), then the median step time
    and tokens/s. Each row is {"quantity", "measured", "estimated", "error"} in ``lang``; a quantity without an
    estimate (a CPU trial, a GPU outside data/gpus.csv) shows its measured value and "–". Returns (rows,
    notes): the notes say why an estimate is missing (a CPU trial: there is no GPU estimate). ``side``:
    ``calibration.beside(record)`` when already made.
    """
    side = calibration.beside(record) if side is None else side
    notes = [render(n, lang) for n in side["notes"]]

    def row(key: str, measured: str, estimated: str = MISSING, error: float | None = None) -> dict[str, str]:
        shown = MISSING if error is None else ui("beside.error_value", lang, sign="+" if error >= 0 else "-",
                                                 pct=abs(error) * 100)
        return {"quantity": ui(f"beside.{key}", lang), "measured": measured, "estimated": estimated, "error": shown}

    rows = []
    for total, pair in (side["memory"] or {}).items():
        if pair is not None:
            rows.append(row(total, fmt_memory(pair["measured_bytes"], lang), fmt_memory(pair["estimated_bytes"], lang),
                            pair["error"]))
    s = record.summary
    step, tokens = side["step_time"], side["tokens_per_s"]
    if step is not None:
        rows.append(row("step", fmt_seconds(step["measured_s"], lang), fmt_seconds(step["estimated_s"], lang),
                        step["error"]))
    elif s is not None:
        rows.append(row("step", fmt_seconds(s.median_step_time_s, lang)))
    if tokens is not None:
        rows.append(row("tokens", fmt_int(tokens["measured"], lang), fmt_int(tokens["estimated"], lang),
                        tokens["error"]))
    elif s is not None:
        rows.append(row("tokens", fmt_int(s.tokens_per_s, lang)))
    return rows, notes


def beside_html(record: Any, lang: str = "en") -> str:
    """``beside_rows`` as an HTML table under a title naming the software stack and the catalog GPU, then the
    notes (class ``gpuwork-beside``)."""
    side = calibration.beside(record)
    rows, notes = beside_rows(record, lang, side)
    title = (ui("beside.title", lang, stack=side["stack"], gpu=side["gpu_id"]) if side["gpu_id"]
             else ui("beside.title_no_gpu", lang, stack=side["stack"]))
    cells = ("quantity", "measured", "estimated", "error")
    head = "".join(f'<th style="text-align:{"left" if c == "quantity" else "right"};padding:2px 10px">'
                   f"{html.escape(ui(f'beside.{c}', lang))}</th>" for c in cells)
    body = "".join("<tr>" + "".join(f'<td style="text-align:{"left" if c == "quantity" else "right"};'
                                     f'padding:2px 10px">{html.escape(r[c])}</td>' for c in cells) + "</tr>"
                   for r in rows)
    table = f'<table class="gpuwork-beside-table"><tr>{head}</tr>{body}</table>' if rows else ""
    return (f'<div class="gpuwork-beside"><p><b>{html.escape(title)}</b></p>{table}'
            + "".join(note_html(html.escape(n)) for n in notes) + "</div>")


def extrapolate(record: Any, plan: TrainPlan | None = None,
                lang: str = "en") -> tuple[extrapolation.Extrapolation | None, str | None]:
    """The whole run at the trial's measured speed: (Extrapolation, None), or (None, why not in ``lang``).

    ``gpuwork.measure.extrapolation.extrapolate``, the answer ``gpuwork trial`` prints (steps, tokens,
    eval and checkpoint margins, billed hours per offer). The panel shows it for a trial on a GPU of
    data/gpus.csv only: a CPU's or an unknown device's time is no rental's time.
    """
    env = record.environment
    if record.summary is None or not record.fits:
        return None, env.device_name
    try:
        ext = extrapolation.extrapolate(record, plan)
    except GpuworkError as exc:
        return None, f"{env.device_name} ({one_line(exc.text(lang))})"
    if ext.catalog_gpu_id is None:
        unmatched = [n for n in ext.notes if n.code == "extrapolation.unknown_gpu"]
        return None, f"{env.device_name} ({render(unmatched[0], lang)})" if unmatched else env.device_name
    return ext, None


def ramp_limits(plan: TrainPlan, demo: bool) -> tuple[int, int]:
    """(largest batch, longest sequence) the ramp may probe: 4 x the batch and 2 x the sequence, within
    DEMO_LIMITS in demo mode."""
    batch, seq = plan.batch_size * 4, plan.seq_len * 2
    if demo:
        batch, seq = min(batch, DEMO_LIMITS["batch_size"]), min(seq, DEMO_LIMITS["seq_len"])
    return max(batch, plan.batch_size), max(seq, plan.seq_len)


# -- the trial panel ------------------------------------------------------------------------------------


class TrialPanel(common.Panel):
    """A measured trial with live curves: tiny model on the CPU by default (gpuwork.measure.trial).

    State: ``steps_seen`` (StepMeasurement so far), ``record`` (TrialRecord of the last finished run),
    ``ramp_result``, ``stopped``, ``error``. ``run()`` runs synchronously (notebooks, tests); the Run
    button runs it in a thread so that Stop, checked between steps, can be pressed.

    Args:
        plan: the trial plan (default: tiny-llama, LoRA, fp32, seq 128, batch 4).
        steps / warmup: measured and warm-up optimizer steps.
        ramp: after the trial, find the largest micro-batch and sequence that fit (short probes).
        out_dir: where the TrialRecord JSON (and checkpoint) is written; None writes nothing.
        demo: the app's guarded mode: tiny presets only, DEMO_LIMITS, CPU, in the server's waiting line.
        queue: the waiting line (gpuwork.ui.queue.ActionQueue); default: the server's line in demo mode,
            none otherwise.
        device: "cpu", "cuda", ... (None: CUDA when present, else CPU; demo: always CPU).
        note: a line shown above the controls (e.g. "a CPU stand-in for ...").
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, steps: int = 5, warmup: int = 1,
                 ramp: bool = False, out_dir: str | os.PathLike[str] | None = None, demo: bool = False,
                 device: str | None = None, note: str | None = None, lang: str = "en", report: bool = False,
                 queue: Any = None):
        self.lang = lang if lang in LANGS else "en"
        self.queue = queue
        self.report = report
        self.demo = demo
        self.extra_note = note
        self.device = "cpu" if demo else device
        self.out_dir = str(out_dir) if out_dir is not None else None
        self.steps_seen: list[Any] = []
        self.record: Any = None
        self.ramp_result: Any = None
        self.stopped = False
        self.error: str | None = None
        self.listeners: list[Callable[[Any], Any]] = []
        self._stop = threading.Event()
        self._running = threading.Lock()
        try:
            base = plan_from(plan, DEFAULT_TRIAL_PLAN if plan is None else None)
            start_error = None
        except GpuworkError as exc:
            base, start_error = plan_from(DEFAULT_TRIAL_PLAN), friendly(exc, self.lang)
        self.base_plan = base
        lay = {"width": "340px"}
        presets = [p for p in list_presets() if p.startswith("tiny-")] if demo else list_presets()
        model = base.model if base.model in presets or demo is False else presets[0]
        if model not in presets:
            presets = [model, *presets]
        self.controls: dict[str, widgets.ValueWidget] = {
            "model": widgets.Dropdown(options=presets, value=model, style=WIDE, layout=lay),
            "method": widgets.Dropdown(options=[m.value for m in Method], value=base.method.value, style=WIDE,
                                       layout=lay),
            "precision": widgets.Dropdown(options=[p.value for p in Precision], value=base.precision.value,
                                          style=WIDE, layout=lay),
            "seq_len": NumberText(value=base.seq_len, style=WIDE, layout=lay),
            "batch_size": NumberText(value=base.batch_size, style=WIDE, layout=lay),
            "grad_accum": NumberText(value=base.grad_accum, style=WIDE, layout=lay),
        }
        self.steps = NumberText(value=steps, style=WIDE, layout=lay)
        self.warmup = NumberText(value=warmup, style=WIDE, layout=lay)
        self.ramp = widgets.Checkbox(value=ramp, style=WIDE, indent=True, layout=CHECKBOX_LAYOUT)
        self.run_button = widgets.Button(button_style="primary", icon="play")
        self.stop_button = widgets.Button(button_style="warning", icon="stop", disabled=True)
        self.progress = widgets.IntProgress(value=0, min=0, max=steps + warmup, style=WIDE, layout=lay)
        self.status = widgets.HTML()
        self.status.add_class("gpuwork-trial-status")
        self.results = widgets.HTML()
        self.results.add_class("gpuwork-trial-results")
        self.beside = widgets.HTML()  # the estimate for exactly the record's configuration beside the measurement
        self.beside.add_class("gpuwork-trial-beside")
        self.note = widgets.HTML()
        for name, control in {**self.controls, "steps": self.steps, "warmup": self.warmup}.items():
            control.add_class(f"gpuwork-trial-{name.replace('_', '-')}")
        self.run_button.add_class("gpuwork-trial-run")
        self.stop_button.add_class("gpuwork-trial-stop")
        self.run_button.on_click(lambda _b: self.start())
        self.stop_button.on_click(lambda _b: self.stop())
        for control in [*self.controls.values(), self.steps, self.warmup]:
            control.observe(lambda _c: self._ready(), names="value")
        self.curves = LiveFigure("gpuwork-trial-curves")
        self.comparison = LiveFigure("gpuwork-trial-evm")
        self._apply_labels()
        if start_error:
            self.error = start_error
            self.status.value = error_html(start_error)
        else:
            self._ready()

    def _apply_labels(self) -> None:
        lang = self.lang
        describe({**self.controls, "steps": self.steps, "warmup": self.warmup, "ramp": self.ramp,
                  "run": self.run_button, "stop": self.stop_button, "progress": self.progress}, lang)
        notes = [ui("demo_note", lang).format(steps=DEMO_LIMITS["steps"], seq=DEMO_LIMITS["seq_len"],
                                              batch=DEMO_LIMITS["batch_size"])] if self.demo else []
        if self.extra_note:
            notes.append(self.extra_note)
        self.note.value = "".join(note_html(html.escape(n), NOTE_COLOR) for n in notes)

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.record is not None:
            self._render_record()
        elif not self._running.locked():
            self._ready()

    def trial_plan(self) -> TrainPlan:
        """The plan the controls describe (validated; demo limits enforced)."""
        values = {name: control.number(name) if isinstance(control, NumberText) else control.value
                  for name, control in self.controls.items()}
        plan = self.base_plan.replace(**values)
        if self.demo:
            if not plan.model.startswith("tiny-"):
                raise PlanError("model", msg("error.trial.demo_tiny_only", model=plan.model))
            for name in ("seq_len", "batch_size", "grad_accum"):
                if getattr(plan, name) > DEMO_LIMITS[name]:
                    raise PlanError(name, msg("error.trial.demo_limit", field=name, value=getattr(plan, name),
                                              limit=DEMO_LIMITS[name]))
        return plan

    def _counts(self) -> tuple[int, int]:
        # count fields: number() parses whole numbers only (parse_count), so int() changes no value
        steps, warmup = int(self.steps.number("steps")), int(self.warmup.number("warmup"))
        if steps < 1:
            raise PlanError("steps", msg("error.trial.steps", steps=repr(steps)))
        if warmup < 0:
            raise PlanError("warmup", msg("error.trial.warmup", warmup=repr(warmup)))
        for name, value in (("steps", steps), ("warmup", warmup)):
            if value > COUNT_LIMITS[name]:
                raise PlanError(name, msg("error.trial.count_limit", field=name, value=value,
                                          limit=COUNT_LIMITS[name]))
        if self.demo and (steps > DEMO_LIMITS["steps"] or warmup > DEMO_LIMITS["warmup"]):
            raise PlanError("steps", msg("error.trial.demo_steps", steps=DEMO_LIMITS["steps"],
                                         warmup=DEMO_LIMITS["warmup"]))
        return steps, warmup

    def _ready(self) -> None:
        if self._running.locked():
            return
        try:
            plan = self.trial_plan()
            self._counts()
        except GpuworkError as exc:
            self.error = friendly(exc, self.lang)
            self.status.value = error_html(self.error)
            self.run_button.disabled = True
            return
        self.error = None
        self.run_button.disabled = False
        # a report is a static page: it names the plan and asks no one to press a button
        self.status.value = note_html(html.escape(ui("trial_plan" if self.report else "trial_ready", self.lang,
                                                     plan=plan_caption(plan, lang=self.lang))))

    # -- running ----------------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        """Run in a background thread (the Run button): Stop stays clickable."""
        return run_in_thread("trial", self.run)

    def stop(self) -> None:
        """Ask the running trial to stop; it stops after the current step."""
        self._stop.set()

    def run(self) -> Any:
        """Run the trial to the end (or until Stop); returns the TrialRecord, or None."""
        if not self._running.acquire(blocking=False):
            self.status.value = error_html(ui("busy", self.lang))
            return None
        try:
            try:
                plan = self.trial_plan()
                steps, warmup = self._counts()
            except GpuworkError as exc:
                self.error = friendly(exc, self.lang)
                self.status.value = error_html(self.error)
                return None
            queue = self.queue
            if queue is None and self.demo:
                from gpuwork.ui.queue import shared_queue

                queue = shared_queue()
            if queue is None:
                return self._run(plan, steps, warmup)
            self._stop.clear()
            self.run_button.disabled, self.stop_button.disabled = True, False  # Stop leaves the line
            try:
                with queue.turn(self._waiting, self._stop):
                    return self._run(plan, steps, warmup)
            except GpuworkError as exc:  # the line is full, or Stop was pressed while waiting
                self.error = friendly(exc, self.lang)
                self.status.value = error_html(self.error)
                return None
        finally:
            self._running.release()
            self.run_button.disabled = False
            self.stop_button.disabled = True

    def _waiting(self, ahead: int) -> None:
        self.status.value = note_html(html.escape(ui("queue_waiting", self.lang, n=ahead)), NOTE_COLOR,
                                      cls="gpuwork-waiting")

    def _run(self, plan: TrainPlan, steps: int, warmup: int) -> Any:
        from gpuwork.measure.trial import iter_trial

        self._stop.clear()
        self.stopped, self.error, self.record, self.ramp_result = False, None, None, None
        self.steps_seen = []
        self.results.value = self.beside.value = ""
        self.progress.max, self.progress.value = steps + warmup, 0
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.status.value = note_html(html.escape(ui("trial_building", self.lang)))
        if not self.report:
            self.curves.show(charts.trial_figure([], lang=self.lang))
        gen = None
        try:
            with quiet():
                gen = iter_trial(plan, steps=steps, warmup=warmup, out_dir=self.out_dir, device=self.device)
                while True:
                    if self._stop.is_set():
                        gen.close()
                        self.stopped = True
                        self.status.value = note_html(html.escape(ui("trial_stopped", self.lang).format(
                            n=len(self.steps_seen))), NOTE_COLOR)
                        return None
                    try:
                        m = next(gen)
                    except StopIteration as done:
                        record = done.value
                        break
                    self._on_step(m, steps + warmup)
                if self.ramp.value:
                    from gpuwork.measure.trial import ramp

                    max_batch, max_seq = ramp_limits(plan, self.demo)
                    self.ramp_result = ramp(plan, max_batch_size=max_batch, max_seq_len=max_seq, steps=1, warmup=0,
                                            device=self.device)
        except Exception as exc:  # noqa: BLE001 - one line, the panel keeps working
            if gen is not None:
                with contextlib.suppress(Exception):
                    gen.close()
            self.error = friendly(exc, self.lang)
            self.status.value = error_html(self.error)
            return None
        self.record = record
        self._render_record()
        for callback in self.listeners:
            try:
                callback(record)
            except Exception as exc:  # noqa: BLE001
                _log.error("trial listener failed", exc_info=exc)
        return record

    def load(self, record: Any) -> Any:
        """Show a finished trial's record as if it had just run here: a ``TrialRecord``, or the path of its JSON
        (written by ``gpuwork trial`` or by ``gpuwork.hf.GpuworkCallback`` on the user's own run). Returns the
        record, or None with the reason in ``status`` when the file cannot be read."""
        from gpuwork.measure.trial import TrialRecord

        if isinstance(record, (str, os.PathLike)):
            path = Path(record).expanduser()
            try:
                record = TrialRecord.from_json(path)
            except (OSError, ValueError, KeyError, TypeError, AttributeError, GpuworkError) as exc:
                # AttributeError: valid JSON that is not an object (TrialRecord.from_dict expects a dict)
                self.error = ui("cannot_read_record", self.lang, name=str(path), error=(
                    friendly(exc, self.lang) if isinstance(exc, GpuworkError) else one_line(str(exc))))
                self.status.value = error_html(self.error)
                return None
        self.error, self.stopped, self.ramp_result = None, False, None
        self.record, self.steps_seen = record, list(record.steps)
        self._render_record()
        self.status.value = note_html(html.escape(ui("trial_loaded", self.lang, label=record.label,
                                                     n=len(record.measured), device=record.environment.device_name)))
        return record

    def _on_step(self, m: Any, total: int) -> None:
        self.steps_seen.append(m)
        self.progress.value = m.step
        self.status.value = note_html(html.escape(ui("trial_step", self.lang).format(
            step=m.step, total=total, loss=m.loss, time=m.step_time_s, tps=m.tokens_per_s)))
        if not self.report:
            self.curves.show(charts.trial_figure(self.steps_seen, lang=self.lang))

    def _render_record(self) -> None:
        record, lang = self.record, self.lang
        s = record.summary
        lines = []
        if not record.fits:
            lines.append(error_html(ui("trial_oom", lang, error=record.error,
                                       mib=round(record.peak_trial_memory_bytes / MIB))))
        if s is not None:
            lines.append("<p>" + html.escape(ui("summary", lang).format(
                median=s.median_step_time_s, p90=s.p90_step_time_s, tps=s.tokens_per_s,
                mib=s.peak_trial_memory_bytes / MIB, device=record.environment.device_name,
                first=s.first_loss, last=s.last_loss)) + "</p>")
            lines.append(note_html(html.escape(ui("data_verdict", lang).format(verdict=s.verdict))))
            lines.append(note_html(html.escape(render(clipping_note(record), lang))))
        c = record.checkpoint
        if c is not None:
            verdict = ui("verified" if c.verified else "not_verified", lang)
            size = fmt_size(c.bytes_on_disk, lang) if c.bytes_on_disk >= GB / 10 else fmt_memory(c.bytes_on_disk, lang)
            lines.append('<p class="gpuwork-checkpoint">' + html.escape(ui("checkpoint", lang).format(
                verdict=verdict, message=c.message, size=size, save=c.save_s, restore=c.restore_s)) + "</p>")
        r = self.ramp_result
        if r is not None:
            if r.max_batch_size is None:
                lines.append(f"<p>{html.escape(ui('ramp_none', lang))}</p>")
            else:
                lines.append('<p class="gpuwork-ramp">' + html.escape(ui("ramp_line", lang).format(
                    batch=r.max_batch_size, seq0=record.protocol.seq_len,
                    why_b=msg("ramp.limit_of", why=r.batch_limited_by), seq=r.max_seq_len,
                    why_s=msg("ramp.limit_of", why=r.seq_limited_by), n=len(r.probes))) + "</p>")
        time, why = extrapolate(record, lang=lang)
        if time is not None:
            lines.append("<p>" + html.escape(ui("extrapolation", lang).format(
                gpus=time.gpus, gpu=time.catalog_gpu_name, total=fmt_duration(time.total_s, lang),
                steps=time.steps)) + "</p>")
        else:
            lines.append(note_html(html.escape(ui("no_extrapolation", lang).format(device=why))))
        if record.protocol.substitutions:
            lines.append(note_html(html.escape(ui("substitutions", lang).format(
                what=tuple(record.protocol.substitutions))), NOTE_COLOR))
        if record.protocol.sdpa_backend_used:  # the kernel torch's SDPA ran (gpuwork.measure.sdpa)
            lines.append(note_html(html.escape(ui("sdpa", lang, used=record.protocol.sdpa_backend_used,
                                                  asked=record.protocol.sdpa_backend_requested or "-"))))
        if record.environment.switches:
            lines.append(note_html(html.escape(ui("switches", lang).format(what=", ".join(record.environment.switches)))))
        saved = common.public_text(record.saved_to) if record.saved_to and common.is_public() else record.saved_to
        lines.append(note_html(ui("saved", lang).format(path=html.escape(saved)) if saved
                               else html.escape(ui("not_saved", lang))))
        self.results.value = '<div class="gpuwork-trial-record">' + "".join(lines) + "</div>"
        self.beside.value = beside_html(record, lang)
        self.progress.value = self.progress.max
        self.status.value = note_html(html.escape(ui("trial_done", lang).format(
            n=len(record.measured), s=record.duration_s)))
        if not self.report:
            self.curves.show(charts.trial_figure(record.steps, lang=lang))
            rows = estimate_vs_measured_rows(record, lang)
            if rows:
                self.comparison.show(charts.estimate_vs_measured_figure(rows, lang=lang))

    # -- views ------------------------------------------------------------------------------------

    def controls_box(self) -> widgets.Widget:
        box = widgets.VBox([self.note, *self.controls.values(), self.steps, self.warmup, self.ramp,
                            widgets.HBox([self.run_button, self.stop_button]), self.progress, self.status])
        box.add_class("gpuwork-trial-controls")
        return box

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.controls_box(), self.curves.box, self.results, self.beside, self.comparison.box])
        box.add_class("gpuwork-trial")
        return box

    def live_parts(self) -> dict[str, Callable[[], Any]]:
        """"controls" (with the live curves), "curves", "results", "estimate_vs_measured" (the estimate for
        exactly the record's configuration beside the measurement, then the memory bars)."""
        return {"controls": lambda: widgets.VBox([self.controls_box(), self.curves.box]),
                "curves": lambda: None,  # live above, under the controls
                "results": lambda: self.results,
                "estimate_vs_measured": lambda: widgets.VBox([self.beside, self.comparison.box])}

    def static_parts(self) -> dict[str, Callable[[], list[Any]]]:
        record = self.record
        return {
            "controls": lambda: [html_output(self.note.value + self.status.value)],
            "curves": lambda: [charts.trial_figure(record.steps if record else self.steps_seen, lang=self.lang)],
            "results": lambda: [html_output(self.results.value or self.status.value)],
            "estimate_vs_measured": lambda: ([html_output(self.beside.value)] if self.beside.value else []) + (
                [charts.estimate_vs_measured_figure(estimate_vs_measured_rows(record, self.lang), lang=self.lang)]
                if record is not None and estimate_vs_measured_rows(record, self.lang) else []),
        }


def _finite(x: float | None) -> float | None:
    """None ("–" on display) for a value a step did not measure: a NaN loss (a loop that gave none), an infinite
    rate."""
    return x if x is not None and math.isfinite(x) else None

# -- live curves of any measured run ---------------------------------------------------------------------


class LiveCurves:
    """The trial panel's live curves (loss, step time, tokens/s, memory: ``charts.trial_figure``) for any
    measured run: pass ``update`` as the ``on_measure`` hook of ``gpuwork.hf.GpuworkCallback`` or
    ``gpuwork.hf.measure`` and display the object in a notebook.

    Redraws are throttled: at most one every ``min_interval_s``; steps that arrive in between are kept and
    drawn by the next redraw, or by a timer when the interval since the last redraw is over (so the run's final
    steps show without another call). ``flush()`` draws now.

    Args:
        lang: "en" or "ru" (the figure's labels and the status line).
        min_interval_s: the shortest time between two redraws, seconds.
        clock: seconds, monotonic (a seam for tests).

    Example:
        >>> curves = LiveCurves(lang="en")
        >>> display(curves)                                  # in a notebook cell
        >>> trainer.add_callback(GpuworkCallback(steps=20, on_measure=curves.update))
        >>> trainer.train()                                  # the curves move with the run
        >>> len(curves.steps)
        22

    Limitations: under torchrun every rank calls its own hook; a notebook runs one process, so the curves
    are that process's. ``update`` may be called from any thread (the redraw timer is one).
    """

    def __init__(self, lang: str = "en", *, min_interval_s: float = LIVE_MIN_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic):
        self.lang = lang if lang in LANGS else "en"
        self.min_interval_s = float(min_interval_s)
        self.steps: list[Any] = []  # every StepMeasurement received, warm-up included
        self.drawn = 0  # how many of them the figure shows
        self.redraws = 0
        self._clock = clock
        self._last_s = -math.inf
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()  # guards steps, the timer and the time of the last redraw
        self._drawing = threading.Lock()  # one redraw at a time, in the order of the snapshots
        self.status = widgets.HTML(note_html(html.escape(ui("live.waiting", self.lang))))
        self.status.add_class("gpuwork-live-status")
        self.figure = LiveFigure("gpuwork-live-curves")
        self.figure.show(charts.trial_figure([], lang=self.lang))

    @property
    def shown(self) -> Any:
        """The figure drawn last (a plotly ``go.Figure``)."""
        return self.figure.figure

    def update(self, measurement: Any) -> None:
        """Add one ``StepMeasurement`` (the ``on_measure`` hook); redraw unless the last redraw is too recent."""
        with self._lock:
            self.steps.append(measurement)
            wait_s = self._last_s + self.min_interval_s - self._clock()
            if wait_s > 0:
                if self._timer is None:
                    self._timer = threading.Timer(wait_s, self.flush)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self.flush()

    def flush(self) -> None:
        """Draw every step received so far, now."""
        with self._drawing:
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                self._last_s = self._clock()
                steps = list(self.steps)
            if len(steps) == self.drawn:
                return
            self.figure.show(charts.trial_figure(steps, lang=self.lang))
            self.drawn, self.redraws = len(steps), self.redraws + 1
            m = steps[-1]
            self.status.value = note_html(html.escape(ui("live.step_warmup" if m.is_warmup else "live.step", self.lang,
                                                         step=m.step, loss=_finite(m.loss),
                                                         time=_finite(m.step_time_s), tps=_finite(m.tokens_per_s))))

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.status, self.figure.box])
        box.add_class("gpuwork-live")
        return box

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view()._repr_mimebundle_(**kwargs)


__all__ = [
    "COUNT_LIMITS",
    "DEFAULT_TRIAL_PLAN",
    "DEMO_LIMITS",
    "LIVE_MIN_INTERVAL_S",
    "LiveCurves",
    "TrialPanel",
    "beside_html",
    "beside_rows",
    "estimate_vs_measured_rows",
    "extrapolate",
    "ramp_limits",
]
