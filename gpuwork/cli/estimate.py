"""``gpuwork estimate | trace | models | accuracy``: the memory estimate, exact mode, presets, accuracy."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpuwork.cli.args import plan_arguments, plan_from_args
from gpuwork.errors import PlanError
from gpuwork.present.messages import render, text
from gpuwork.units import GIB, fmt_number


def _gib(n: int, lang: str = "en") -> str:
    return f"{fmt_number(n / GIB, lang, 2):>9s}"


def format_estimate(est: Any, lang: str = "en") -> str:
    """The per-GPU breakdown and the three totals, labelled in ``lang``."""
    plan = est.plan
    lines = [
        text("cli.estimate.header", lang, model=plan.model, method=plan.method, precision=plan.precision,
             optimizer=plan.optimizer, seq_len=plan.seq_len, batch=plan.batch_size, grad_accum=plan.grad_accum,
             gpus=plan.gpus, sharding=plan.sharding),
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
            raise PlanError("calibrated", f"no memory calibration stored for '{args.calibrated}': run "
                            "`gpuwork trial --calibrate` on that GPU first")
        calibrated = apply_memory_calibration(est, device)
    if args.json:
        out = {"plan": plan.as_dict(), "params": {"total": est.params.total, "trainable": est.params.trainable},
               "memory": est.as_dict()}
        if calibrated:
            out["calibrated"] = calibrated
        print(json.dumps(out, indent=2))
    else:
        print(format_estimate(est, lang))
        if calibrated:
            f = calibrated["factors"]
            print(f"\ncalibrated with trials on {args.calibrated} (measured/estimated: allocated x{f['allocated']:.3f}, "
                  f"reserved x{f['reserved']:.3f}), GiB:")
            for key, label in (("peak_allocated_bytes", "peak allocated"), ("peak_reserved_bytes", "peak reserved"),
                               ("device_total_bytes", "device total")):
                print(f"  {label:52s} {_gib(calibrated[key])}")
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from gpuwork.errors import TraceError
    from gpuwork.measure.trace import trace_memory
    from gpuwork.sizing import estimate_memory

    plan = plan_from_args(args)
    try:
        result = trace_memory(plan, progress=not args.json and sys.stderr.isatty())
    except TraceError as exc:
        # the op or module that fake tensors cannot run is named; the analytic estimate still answers
        print(f"gpuwork: warning: {exc}; showing the analytic estimate", file=sys.stderr)
        args.json = getattr(args, "json", False)
        return _cmd_estimate(args)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0
    est = estimate_memory(plan)
    print(f"gpuwork trace: {plan.model}, {plan.method}, {plan.precision}, seq {plan.seq_len} x batch "
          f"{plan.batch_size} — one step under fake tensors ({result.elapsed_s:.1f} s)")
    print(f"peak of live tensors at {result.peak_phase}, GiB:")
    for key, value in result.breakdown.items():
        if value:
            print(f"  {key:52s} {_gib(value)}")
    print(f"  {'traced peak allocated':52s} {_gib(result.peak_allocated_bytes)}")
    analytic = est.traceable_bytes  # the same quantity: live tensors, no cuBLAS workspace
    print(f"  {'analytic estimate (same quantity)':52s} {_gib(analytic)}  "
          f"({analytic / result.peak_allocated_bytes - 1:+.1%})")
    for note in result.stand_ins:
        print(f"  stand-in: {note}")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from gpuwork.facts.model import get_spec, list_presets, rebuild_preset_cache

    if args.rebuild:
        path = rebuild_preset_cache(progress=sys.stderr.isatty())
        print(f"wrote {path}")
        return 0
    rows = []
    for name in list_presets():
        spec = get_spec(name)
        rows.append({"name": name, "architecture": spec.architecture, "params_total": spec.params_total,
                     "params_active": spec.params_active, "layers": spec.num_layers, "hidden": spec.hidden_size,
                     "max_position": spec.max_position})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'preset':22s}{'architecture':32s}{'parameters':>18s}{'active':>18s}{'layers':>8s}{'context':>9s}")
    for r in rows:
        print(f"{r['name']:22s}{r['architecture']:32s}{r['params_total']:>18,}{r['params_active']:>18,}"
              f"{r['layers']:>8}{r['max_position']:>9}")
    return 0


def _cmd_accuracy(args: argparse.Namespace) -> int:
    from gpuwork.measure.accuracy import accuracy_report

    text = accuracy_report(grid=args.grid)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


def register(sub: Any) -> None:
    """Add estimate, trace, models and accuracy to the gpuwork subparsers."""
    p = sub.add_parser("estimate", help="per-GPU memory of a training step (analytic, instant)")
    plan_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--lang", choices=("en", "ru"), default="en", help="language of the report (en or ru)")
    p.add_argument("--calibrated", metavar="DEVICE", help="also show totals corrected by the calibration that "
                   "`gpuwork trial --calibrate` stored for this device (off by default)")
    p.set_defaults(func=_cmd_estimate)
    p = sub.add_parser("trace", help="exact mode: trace one real step under fake tensors (seconds to a minute)")
    plan_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_trace)
    p = sub.add_parser("models", help="list bundled model presets with exact parameter counts")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rebuild", action="store_true", help="rebuild data/model_specs.json on the meta device")
    p.set_defaults(func=_cmd_models)
    p = sub.add_parser("accuracy", help="estimates vs published measurements (docs/accuracy.md)")
    p.add_argument("--out", metavar="FILE", help="write Markdown here instead of printing it")
    p.add_argument("--grid", action="store_true", help="also trace the small-model grid (minutes)")
    p.set_defaults(func=_cmd_accuracy)
