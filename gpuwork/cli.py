"""Command line: ``gpuwork estimate | trace | models | accuracy``.

Errors in what the user typed print one line on stderr and exit with status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.memory import TERM_LABELS
from gpuwork.plan import TrainPlan

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line (exit 2) instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"gpuwork: error: {message} (see `{self.prog} --help`)\n")


def _plan_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("the run (defaults: TrainPlan's)")
    g.add_argument("--plan", metavar="FILE", help="plan.json with TrainPlan fields; flags override it")
    g.add_argument("--model", help="preset name (see `gpuwork models`), config.json path, or hub id")
    g.add_argument("--method", help="scratch | full | freeze | lora | qlora")
    g.add_argument("--task", help="auto | causal-lm | seq-cls | masked-lm")
    g.add_argument("--precision", help="fp32 | fp16 | bf16 | fp16-mixed | bf16-mixed")
    g.add_argument("--optimizer", help="adamw | adamw-8bit | paged-adamw-8bit | adafactor | sgd | lion")
    g.add_argument("--seq-len", type=int, help="tokens per sequence")
    g.add_argument("--batch-size", type=int, help="micro-batch: sequences per GPU per step")
    g.add_argument("--grad-accum", type=int, help="micro-batches per optimizer step")
    g.add_argument("--grad-checkpointing", action="store_true", default=None, help="recompute blocks in backward")
    g.add_argument("--attention", help="eager | sdpa | flash")
    g.add_argument("--trainable-layers", type=int, help="method=freeze: last N blocks trained")
    g.add_argument("--lora-r", type=int, help="LoRA rank")
    g.add_argument("--lora-alpha", type=float, help="LoRA alpha")
    g.add_argument("--lora-dropout", type=float, help="LoRA dropout")
    g.add_argument("--lora-targets", help="comma-separated module names, or all-linear")
    g.add_argument("--quant-type", help="qlora: nf4 | fp4")
    g.add_argument("--no-double-quant", dest="double_quant", action="store_false", default=None,
                   help="qlora: keep fp32 absmax constants")
    g.add_argument("--gpus", type=int, help="data-parallel GPUs")
    g.add_argument("--sharding", help="ddp | zero1 | zero2 | zero3 | fsdp")
    g.add_argument("--offload-optimizer", action="store_true", default=None, help="optimizer states on CPU")
    g.add_argument("--offload-params", action="store_true", default=None, help="parameters on CPU (zero3/fsdp)")
    g.add_argument("--no-foreach", dest="optimizer_foreach", action="store_false", default=None,
                   help="single-tensor optimizer step (no multi-tensor temporaries)")


_FLAG_FIELDS = ("model", "method", "task", "precision", "optimizer", "seq_len", "batch_size", "grad_accum",
                "grad_checkpointing", "attention", "trainable_layers", "lora_r", "lora_alpha", "lora_dropout",
                "lora_targets", "quant_type", "double_quant", "gpus", "sharding", "offload_optimizer",
                "offload_params", "optimizer_foreach")


def plan_from_args(args: argparse.Namespace) -> TrainPlan:
    """TrainPlan from a --plan file and/or flags (flags win)."""
    fields: dict[str, Any] = {}
    if getattr(args, "plan", None):
        path = Path(args.plan)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise PlanError("plan", f"plan file '{path}' does not exist") from None
        except json.JSONDecodeError as exc:
            raise PlanError("plan", f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
        if isinstance(data, dict) and "plan" in data and isinstance(data["plan"], dict):
            data = data["plan"]  # accept the output of `estimate --json` as a plan
        fields.update(TrainPlan.from_dict(data).as_dict())
    for name in _FLAG_FIELDS:
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    if "lora_alpha" in fields and float(fields["lora_alpha"]).is_integer():
        fields["lora_alpha"] = int(fields["lora_alpha"])
    return TrainPlan.from_dict(fields)


def _gib(n: int) -> str:
    return f"{n / 2**30:8.2f}"




def format_estimate(est: Any) -> str:
    plan = est.plan
    lines = [
        f"gpuwork estimate: {plan.model}, {plan.method}, {plan.precision}, {plan.optimizer}, "
        f"seq {plan.seq_len} x batch {plan.batch_size} (x{plan.grad_accum} accumulation), "
        f"{plan.gpus} GPU(s) {plan.sharding}",
        f"parameters: {est.params.total:,} total, {est.params.trainable:,} trainable",
        "",
        f"per-GPU memory at the peak ({est.peak_phase}), GiB:",
    ]
    for key, value in est.breakdown.items():
        if value:
            lines.append(f"  {TERM_LABELS.get(key, key):44s}{_gib(value)}")
    lines += [
        "",
        f"  {'peak allocated (torch max_memory_allocated)':44s}{_gib(est.peak_allocated_bytes)}",
        f"  {'peak reserved (torch max_memory_reserved)':44s}{_gib(est.peak_reserved_bytes)}",
        f"  {'device total (what nvidia-smi shows)':44s}{_gib(est.device_total_bytes)}",
    ]
    if est.host_bytes:
        lines.append(f"  {'CPU RAM for offloaded states':44s}{_gib(est.host_bytes)}")
    return "\n".join(lines)


def _cmd_estimate(args: argparse.Namespace) -> int:
    from gpuwork.memory import estimate_memory

    plan = plan_from_args(args)
    est = estimate_memory(plan)
    for warning in est.warnings:
        print(f"gpuwork: warning: {warning}", file=sys.stderr)
    calibrated = None
    if getattr(args, "calibrated", None):
        from gpuwork.calibration import apply_memory_calibration, load_calibration

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
        print(format_estimate(est))
        if calibrated:
            f = calibrated["factors"]
            print(f"\ncalibrated with trials on {args.calibrated} (measured/estimated: allocated x{f['allocated']:.3f}, "
                  f"reserved x{f['reserved']:.3f}), GiB:")
            for key, label in (("peak_allocated_bytes", "peak allocated"), ("peak_reserved_bytes", "peak reserved"),
                               ("device_total_bytes", "device total")):
                print(f"  {label:44s}{_gib(calibrated[key])}")
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from gpuwork.errors import TraceError
    from gpuwork.memory import estimate_memory
    from gpuwork.trace import trace_memory

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
            print(f"  {key:44s}{_gib(value)}")
    print(f"  {'traced peak allocated':44s}{_gib(result.peak_allocated_bytes)}")
    analytic = est.peak_allocated_bytes - est.breakdown.get("cublas_workspace", 0)
    print(f"  {'analytic estimate (same quantity)':44s}{_gib(analytic)}  "
          f"({analytic / result.peak_allocated_bytes - 1:+.1%})")
    for note in result.stand_ins:
        print(f"  stand-in: {note}")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from gpuwork.model import get_spec, list_presets, rebuild_preset_cache

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
    from gpuwork.accuracy import accuracy_report

    text = accuracy_report(grid=args.grid)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpuwork", description="Size a fine-tuning run before renting a GPU.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    p = sub.add_parser("estimate", help="per-GPU memory of a training step (analytic, instant)")
    _plan_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--calibrated", metavar="DEVICE", help="also show totals corrected by the calibration that "
                   "`gpuwork trial --calibrate` stored for this device (off by default)")
    p.set_defaults(func=_cmd_estimate)
    p = sub.add_parser("trace", help="exact mode: trace one real step under fake tensors (seconds to a minute)")
    _plan_arguments(p)
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
    from gpuwork import cli_plan, cli_report, cli_trial

    cli_plan.register(sub)
    cli_trial.register(sub)
    cli_report.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except GpuworkError as exc:
        print(f"gpuwork: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gpuwork: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `gpuwork models | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
