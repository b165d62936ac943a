"""``gpuwork estimate | trace | models | accuracy``: the memory estimate, exact mode, presets, accuracy."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

from gpuwork.cli.args import escaped_output, plan_arguments, plan_from_args, with_mapping
from gpuwork.cli.common import checkpointing_note
from gpuwork.errors import GpuworkError, PlanError
from gpuwork.message import msg
from gpuwork.present.messages import render, text
from gpuwork.units import GIB, LANGS, fmt_int, fmt_number


def _gib(n: int, lang: str = "en") -> str:
    return f"{fmt_number(n / GIB, lang, 2):>9s}"


def format_estimate(est: Any, lang: str = "en") -> str:
    """The per-GPU breakdown and the three totals, labelled in ``lang``."""
    plan = est.plan
    lines = [
        text("cli.estimate.header", lang, model=plan.model, method=plan.method, precision=plan.precision,
             optimizer=plan.optimizer, seq_len=plan.seq_len, batch=plan.batch_size, grad_accum=plan.grad_accum,
             gpus=plan.gpus, sharding=plan.sharding, checkpointing=checkpointing_note(plan)),
        text("cli.estimate.params", lang, total=est.params.total, trainable=est.params.trainable),
        "",
        text("cli.estimate.breakdown", lang, phase=est.peak_phase),
    ]
    for key, value in est.breakdown.items():
        if value:
            lines.append(f"  {text(f'term.{key}', lang):52s} {_gib(value, lang)}")
    lines += [
        "",
        f"  {text('cli.estimate.allocated', lang):52s} {_gib(est.peak_allocated_bytes, lang)}",
        f"  {text('cli.estimate.reserved', lang):52s} {_gib(est.peak_reserved_bytes, lang)}",
        f"  {text('cli.estimate.device', lang):52s} {_gib(est.device_total_bytes, lang)}",
    ]
    if est.host_bytes:
        lines.append(f"  {text('cli.estimate.host', lang):52s} {_gib(est.host_bytes, lang)}")
    return "\n".join(lines)


def _cmd_estimate(args: argparse.Namespace) -> int:
    from gpuwork.sizing import estimate_memory

    plan = plan_from_args(args)
    est = estimate_memory(plan)
    lang = getattr(args, "lang", None) or "en"
    for warning in est.warnings:
        print(text("cli.warning", lang, text=render(warning, lang)), file=sys.stderr)
    calibrated = None
    if getattr(args, "calibrated", None):
        from gpuwork.measure.calibration import apply_memory_calibration, load_calibration

        device = load_calibration(args.calibrated)
        if device is None or not device.memory_factors:
            raise PlanError("calibrated", msg("error.calibration.none_stored", device=args.calibrated))
        calibrated = apply_memory_calibration(est, device)
    if args.json:
        out = {"plan": plan.as_dict(), "params": {"total": est.params.total, "trainable": est.params.trainable},
               "memory": est.as_dict()}
        if calibrated:
            out["calibrated"] = calibrated
        print(json.dumps(with_mapping(out, args), indent=2))
    else:
        print(format_estimate(est, lang))
        if calibrated:
            f = calibrated["factors"]
            print("\n" + text("cli.estimate.calibrated", lang, device=args.calibrated, allocated=f["allocated"],
                              reserved=f["reserved"]))
            for key, label in (("peak_allocated_bytes", "cli.estimate.allocated"),
                               ("peak_reserved_bytes", "cli.estimate.reserved"),
                               ("device_total_bytes", "cli.estimate.device")):
                print(f"  {text(label, lang):52s} {_gib(calibrated[key], lang)}")
    return 0


# The deepest released models have 126 blocks (Llama 3.1 405B); tracing runs each one under fake tensors.
MAX_TRACE_LAYERS = 160


def _cmd_trace(args: argparse.Namespace) -> int:
    from gpuwork.errors import TraceError
    from gpuwork.facts.model import spec_for_plan
    from gpuwork.measure.trace import trace_memory
    from gpuwork.sizing import estimate_memory

    plan = plan_from_args(args)
    lang = args.lang
    layers = spec_for_plan(plan).num_layers
    if layers > MAX_TRACE_LAYERS:  # tracing runs every layer, about a second each: say so instead of an hour
        raise GpuworkError(msg("error.trace.too_many_layers", layers=layers, limit=MAX_TRACE_LAYERS,
                               model=plan.model))
    try:
        with warnings.catch_warnings():  # libraries' deprecation notices are not the user's business here
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            result = trace_memory(plan, progress=not args.json and sys.stderr.isatty(),
                                  progress_labels=(text("cli.trace.progress", lang), text("cli.trace.progress_unit", lang)))
    except TraceError as exc:
        # the op or module that fake tensors cannot run is named; the analytic estimate still answers
        error = exc.msg or msg("measure.text", text=str(exc))
        print(text("cli.warning", lang, text=msg("cli.trace.fallback", error=error)), file=sys.stderr)
        args.json = getattr(args, "json", False)
        return _cmd_estimate(args)
    if args.json:
        print(json.dumps(with_mapping(result.as_dict(), args), indent=2))
        return 0
    est = estimate_memory(plan)
    print(text("cli.trace.header", lang, model=plan.model, method=plan.method, precision=plan.precision,
               seq_len=plan.seq_len, batch=plan.batch_size, elapsed_s=result.elapsed_s))
    print(text("cli.trace.peak", lang, phase=result.peak_phase))
    for key, value in result.breakdown.items():
        if value:
            print(f"  {text(f'trace.category.{key}', lang):52s} {_gib(value, lang)}")
    print(f"  {text('cli.trace.traced', lang):52s} {_gib(result.peak_allocated_bytes, lang)}")
    analytic = est.traceable_bytes  # the same quantity: live tensors, no cuBLAS workspace
    difference = analytic / result.peak_allocated_bytes - 1
    print(f"  {text('cli.trace.analytic', lang):52s} {_gib(analytic, lang)}  "
          + text("cli.trace.difference", lang, sign="+" if difference >= 0 else "-", pct=abs(difference) * 100))
    for note in result.stand_ins:
        print(text("cli.trace.stand_in", lang, what=note))
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from gpuwork.facts.model import get_spec, list_presets, rebuild_preset_cache

    lang = args.lang
    if args.rebuild:
        path = rebuild_preset_cache(progress=sys.stderr.isatty())
        print(text("cli.models.wrote", lang, path=str(path)))
        return 0
    rows: list[dict[str, Any]] = []
    for name in list_presets():
        spec = get_spec(name)
        rows.append({"name": name, "architecture": spec.architecture, "params_total": spec.params_total,
                     "params_active": spec.params_active, "layers": spec.num_layers, "hidden": spec.hidden_size,
                     "max_position": spec.max_position})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    def head(key: str) -> str:
        return text(f"cli.models.{key}", lang)

    print(f"{head('preset'):22s}{head('architecture'):32s}{head('parameters'):>18s}{head('active'):>18s}"
          f"{head('layers'):>8s}{head('context'):>9s}")
    for r in rows:
        print(f"{r['name']:22s}{r['architecture']:32s}{fmt_int(r['params_total'], lang):>18s}"
              f"{fmt_int(r['params_active'], lang):>18s}{r['layers']:>8}{r['max_position']:>9}")
    return 0


def _cmd_accuracy(args: argparse.Namespace) -> int:
    from gpuwork.facts import reading
    from gpuwork.measure.accuracy import accuracy_report, time_accuracy_page

    # checked before the report is computed, not after: a folder, a FIFO, a dangling link or a missing folder
    out = reading.output_file(args.out) if args.out is not None else None
    if args.track_record:
        from gpuwork.measure.track_record import track_record_csv

        report = track_record_csv()
    else:
        report = time_accuracy_page() if args.time else accuracy_report(grid=args.grid)
    if out is not None:
        out.write_text(report, encoding="utf-8")  # other OS errors: gpuwork.cli.main's one handler
        print(text("cli.accuracy.wrote", getattr(args, "lang", None) or "en", path=str(out)))
    else:
        print(report)
    return 0


def register(sub: Any, lang: str = "en") -> None:
    """Add estimate, trace, models and accuracy to the gpuwork subparsers, their help in ``lang``."""
    p = sub.add_parser("estimate", help=text("cli.help.estimate.summary", lang))
    plan_arguments(p, lang)
    p.add_argument("--json", action="store_true", help=text("cli.help.json", lang))
    p.add_argument("--lang", choices=LANGS, default="en", help=text("cli.help.lang.report", lang))
    p.add_argument("--calibrated", metavar="DEVICE", help=text("cli.help.estimate.calibrated", lang))
    p.set_defaults(func=escaped_output(_cmd_estimate))
    p = sub.add_parser("trace", help=text("cli.help.trace.summary", lang))
    plan_arguments(p, lang)
    p.add_argument("--json", action="store_true", help=text("cli.help.json", lang))
    p.add_argument("--lang", choices=LANGS, default="en", help=text("cli.help.lang.output", lang))
    p.set_defaults(func=escaped_output(_cmd_trace))
    p = sub.add_parser("models", help=text("cli.help.models.summary", lang))
    p.add_argument("--json", action="store_true")
    p.add_argument("--lang", choices=LANGS, default="en", help=text("cli.help.lang.output", lang))
    p.add_argument("--rebuild", action="store_true", help=text("cli.help.models.rebuild", lang))
    p.set_defaults(func=escaped_output(_cmd_models))
    p = sub.add_parser("accuracy", help=text("cli.help.accuracy.summary", lang))
    p.add_argument("--out", metavar="FILE", help=text("cli.help.accuracy.out", lang))
    p.add_argument("--grid", action="store_true", help=text("cli.help.accuracy.grid", lang))
    p.add_argument("--time", action="store_true", help=text("cli.help.accuracy.time", lang))
    p.add_argument("--track-record", action="store_true", help=text("cli.help.accuracy.track_record", lang))
    p.set_defaults(func=escaped_output(_cmd_accuracy))
