"""Command line for measured trials: ``gpuwork trial`` and ``gpuwork compare``.

``register(subparsers)`` adds both commands to the main parser (``gpuwork.cli``).

Exit status of ``gpuwork trial``: 0 the run fits (or, with ``--ramp``, something fits); 3 it does
not fit (out of memory, or over ``--memory-cap-gib``): the peak reached is printed, this is a
result and not an error; 2 an error in what was asked (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError
from gpuwork.units import GIB, MIB

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_DOES_NOT_FIT = 3

_TRIAL_EPILOG = """\
exit status:
  0  the run fits (with --ramp: at least the smallest batch fits)
  3  it does not fit: out of memory (or over --memory-cap-gib); the peak reached is printed
  2  an error in the arguments, the model, the data or a file (one line on stderr)

examples:
  gpuwork trial --model tiny-llama --method lora --seq-len 64 --batch-size 2 --steps 5
  gpuwork trial --model llama-3.1-8b --method qlora --seq-len 2048 --out trials/ --price-per-hour 2.5
  gpuwork trial --model tiny-llama --method full --nproc 2 --sharding fsdp
  gpuwork compare trials/*.json --price-per-hour 2.5
"""


# -- formatting (pure) -----------------------------------------------------------------------------------------


def _size(n: int | float | None) -> str:
    if n is None:
        return "-"
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB else f"{n / MIB:.1f} MiB"


def _seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def _memory_lines(record: Any) -> list[str]:
    env, s = record.environment, record.summary
    ranks = f" (highest of {record.world_size} ranks)" if record.world_size > 1 else ""
    lines = []
    if env.device == "cpu":
        rss = s.rss_peak_bytes if s else None
        lines.append(f"{_size(record.peak_trial_memory_bytes)} above the process's start{ranks} — process RSS "
                     f"(CPU memory; runtime and allocator cache included; not comparable with GPU memory); "
                     f"RSS peak {_size(rss)}")
    else:
        alloc = s.cuda_peak_allocated_bytes if s else None
        reserved = s.cuda_peak_reserved_bytes if s else None
        lines.append(f"allocated {_size(alloc)} (torch.cuda.max_memory_allocated){ranks}, reserved "
                     f"{_size(reserved)} (max_memory_reserved: + the allocator's cache); the device total adds "
                     "the CUDA context, not measured here")
    for r in record.ranks:
        measured = r.cuda_peak_allocated_bytes if r.cuda_peak_allocated_bytes is not None else r.rss_peak_bytes
        lines.append(f"rank {r.rank}: peak {_size(r.peak_trial_memory_bytes)} above start, "
                     f"{'allocated' if r.cuda_peak_allocated_bytes is not None else 'RSS'} {_size(measured)}; "
                     f"parameters held {_size(r.param_bytes)}, optimizer states {_size(r.optimizer_state_bytes)}")
    return lines


def format_trial(record: Any) -> str:
    """The summary table of a trial record."""
    p, env, s = record.protocol, record.environment, record.summary
    procs = (f"{record.world_size} processes ({record.parallel.strategy}, {record.parallel.backend})"
             if record.parallel is not None else "1 process")
    precision = p.precision_used if p.precision_used == p.precision_requested else \
        f"{p.precision_used} (asked {p.precision_requested})"
    head = [f"gpuwork trial: {p.model}, {p.method}, {precision}, {p.optimizer}, seq {p.seq_len} x batch "
            f"{p.micro_batch} (x{p.grad_accum} accumulation), {procs} on {env.device} ({env.device_name})"]
    for sub in p.substitutions:
        head.append(f"  substitution: {sub}")
    rows: list[tuple[str, str]] = []
    if s is not None:
        rows.append(("step time", f"median {_seconds(s.median_step_time_s)}, p90 {_seconds(s.p90_step_time_s)} "
                                  f"({s.measured_steps} steps after {p.warmup} warm-up)"))
        rows.append(("throughput", f"{s.tokens_per_s:,.0f} tokens/s ({s.tokens_per_step:,} tokens per step"
                                   f"{', all ranks' if record.world_size > 1 else ''})"))
        rows.append(("data wait", s.verdict))
        rows.append(("loss", f"{s.first_loss:.4f} -> {s.last_loss:.4f}"))
    else:
        rows.append(("step time", "no measured step completed"))
    memory = _memory_lines(record)
    rows.append(("peak memory", memory[0]))
    rows.extend(("", line) for line in memory[1:])
    ck = record.checkpoint
    if ck is not None:
        state = "verified" if ck.verified else "NOT verified"
        rows.append(("checkpoint", f"{state}: save {_seconds(ck.save_s)}, restore {_seconds(ck.restore_s)} "
                                   f"(+ rebuild {_seconds(ck.rebuild_s)}), {_size(ck.bytes_on_disk)} on disk"))
        rows.append(("", ck.message))
    elif record.fits:
        rows.append(("checkpoint", "round-trip not run"))
    if record.fits:
        cap = f" (under the cap of {_size(p.memory_cap_bytes)})" if p.memory_cap_bytes else ""
        rows.append(("fits", f"yes{cap}"))
    else:
        rows.append(("fits", f"does not fit — {record.error}; peak reached {_size(record.peak_trial_memory_bytes)} "
                             "above the start"))
    width = max(len(k) for k, _ in rows) + 2
    lines = head + [f"  {k:<{width}}{v}" for k, v in rows]
    if record.saved_to:
        lines.append(f"record: {record.saved_to}")
    return "\n".join(lines)


def format_extrapolation(ext: Any, on_cpu: bool = False) -> str:
    where = f"{ext.gpus} CPU process(es) like this one" if on_cpu else f"{ext.gpus} GPU(s)"
    lines = [f"extrapolated to {ext.dataset_tokens:,} tokens x {ext.epochs:g} epoch(s) on {where}: "
             f"{ext.steps:,} steps",
             f"  train {_seconds(ext.train_s)} + validation {_seconds(ext.eval_s)} ({ext.eval_fraction:.0%}) + "
             f"{ext.checkpoints} checkpoint write(s) {_seconds(ext.checkpoint_s)} ({_size(ext.checkpoint_bytes)} each "
             f"at {ext.checkpoint_write_bytes_s / 1e9:g} GB/s) + margin {_seconds(ext.margin_s)} ({ext.margin:.0%})",
             f"  total {_seconds(ext.total_s)} = {ext.gpu_hours:,.1f} {'process' if on_cpu else 'GPU'}-hours"]
    if ext.cost is not None:
        lines.append(f"  cost ${ext.cost:,.2f} at ${ext.price_per_gpu_hour:g} per GPU-hour")
    for offer in ext.offers[:5]:
        lines.append(f"  offer {offer.offer_id} ({offer.provider}, {offer.mode}, ${offer.price_per_gpu_hour:g}/GPU-h, "
                     f"billed {offer.billed_hours:,.1f} h x {offer.billed_gpus} GPU(s)): ${offer.cost:,.2f}"
                     f"{' — ' + offer.note if offer.note else ''}")
    lines.extend(f"  note: {n}" for n in ext.notes)
    return "\n".join(lines)


def format_calibration(cal: Any) -> str:
    lines = [f"calibration on {cal.device_name}" + (f" ({cal.gpu_id})" if cal.gpu_id else "")]
    if cal.memory is not None:
        m = cal.memory
        lines.append(f"  allocated peak: measured {_size(m.measured_allocated_bytes)}, estimated "
                     f"{_size(m.estimated_allocated_bytes)} (factor {m.allocated_factor:.3f})")
        lines.append(f"  reserved peak:  measured {_size(m.measured_reserved_bytes)}, estimated "
                     f"{_size(m.estimated_reserved_bytes)} (factor {m.reserved_factor:.3f})")
    if cal.time is not None:
        t = cal.time
        lines.append(f"  step time: measured {_seconds(t.measured_step_time_s)}, estimated "
                     f"{_seconds(t.estimated_step_time_s)} (factor {t.step_time_factor:.3f})")
        lines.append(f"  MFU: measured {t.measured_mfu:.1%}, estimator's default {t.estimated_mfu:.1%}")
    lines.extend(f"  note: {n}" for n in cal.notes)
    return "\n".join(lines)


def format_compare(rows: list[dict[str, Any]]) -> str:
    """A side-by-side table of compare() rows: one column per trial."""
    fields = [("trial", "trial", str), ("device", "device", str), ("GPUs", "gpus", str), ("fits", "fits",
              lambda v: "yes" if v else "NO"), ("step time (median)", "median_step_time_s", _seconds),
              ("step time (p90)", "p90_step_time_s", _seconds),
              ("tokens/s", "tokens_per_s", lambda v: "-" if v is None else f"{v:,.0f}"),
              ("peak memory", "peak_memory_bytes", _size),
              ("checkpoint verified", "checkpoint_verified", lambda v: "-" if v is None else ("yes" if v else "NO")),
              ("price per GPU-hour", "price_per_hour", lambda v: "-" if v is None else f"${v:g}"),
              ("cost per 1M tokens", "cost_per_1m_tokens", lambda v: "-" if v is None else f"${v:,.4f}")]
    table = [[label] + [fmt(r.get(key)) for r in rows] for label, key, fmt in fields]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table)


def format_ramp(result: Any) -> str:
    lines = ["ramp: batch x seq_len -> fits, peak above start, median step, tokens/s"]
    for p in result.probes:
        lines.append(f"  {p.batch_size:>4} x {p.seq_len:<6} {'fits' if p.fits else 'OOM ':<5} "
                     f"{_size(p.peak_trial_memory_bytes):>11}  {_seconds(p.median_step_time_s):>9}  "
                     f"{'-' if p.tokens_per_s is None else f'{p.tokens_per_s:,.0f}'}")
    if result.max_batch_size is None:
        lines.append("nothing fits: not even batch 1 at the plan's seq_len")
    else:
        lines.append(f"largest batch {result.max_batch_size} (limited by {result.batch_limited_by}); at that batch "
                     f"the longest seq_len {result.max_seq_len} (limited by {result.seq_limited_by})")
    return "\n".join(lines)


# -- commands (gather -> present) -------------------------------------------------------------------------------


def _plan(args: argparse.Namespace) -> Any:
    from gpuwork.cli.args import plan_from_args

    if getattr(args, "nproc", None) and getattr(args, "gpus", None) is None:
        args.gpus = args.nproc  # the processes are the GPUs (and sharding other than ddp needs gpus >= 2)
    plan = plan_from_args(args)
    changes = {k: getattr(args, k) for k in ("dataset_tokens", "epochs") if getattr(args, k, None) is not None}
    return plan.replace(**changes) if changes else plan


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="trial", unit="step", file=sys.stderr, disable=None if enabled else True,
                leave=False, dynamic_ncols=True)


def _cmd_trial(args: argparse.Namespace) -> int:
    from gpuwork.measure.extrapolation import extrapolate
    from gpuwork.measure.trial import TrialError, ramp, run_trial

    plan = _plan(args)
    if args.steps < 1 or args.warmup < 0:
        raise TrialError("--steps must be >= 1 and --warmup >= 0")
    cap = None
    if args.memory_cap_gib is not None:
        if args.memory_cap_gib <= 0:
            raise TrialError("--memory-cap-gib must be above 0")
        cap = int(args.memory_cap_gib * GIB)
    if args.price_per_hour is not None and args.price_per_hour < 0:
        raise TrialError("--price-per-hour must be >= 0")
    data = args.data or None
    if args.ramp:
        if args.nproc:
            raise TrialError("--ramp runs single-process probes: drop --nproc")
        result = ramp(plan, steps=args.steps, warmup=args.warmup, memory_cap_bytes=cap, data=data, seed=args.seed,
                      device=args.device)
        if args.json:
            print(json.dumps(result.as_dict(), indent=1))
        else:
            print(format_ramp(result))
        return EXIT_OK if result.max_batch_size is not None else EXIT_DOES_NOT_FIT
    bar = _progress(args.warmup + args.steps, not args.no_progress)

    def on_step(m: Any) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{m.loss:.3f}", step=_seconds(m.step_time_s), refresh=False)

    try:
        if args.nproc:
            from gpuwork.measure.distributed import run_distributed

            record = run_distributed(plan, args.nproc, steps=args.steps, warmup=args.warmup, seed=args.seed,
                                     device=args.device, data=data, out_dir=args.out, memory_cap_bytes=cap,
                                     checkpoint=not args.no_checkpoint, callbacks=[on_step],
                                     timeout_s=args.timeout_s)
        else:
            record = run_trial(plan, steps=args.steps, warmup=args.warmup, seed=args.seed, device=args.device,
                               data=data, out_dir=args.out, memory_cap_bytes=cap,
                               checkpoint=not args.no_checkpoint, callbacks=[on_step])
    finally:
        bar.close()
    extrapolation = None
    if record.fits and record.summary is not None:
        try:  # to plan.gpus: with --nproc N and no --gpus, the N measured
            extrapolation = extrapolate(record, plan, price_per_gpu_hour=args.price_per_hour)
        except GpuworkError as exc:
            print(f"gpuwork: warning: no extrapolation: {exc}", file=sys.stderr)
    calibration, saved = None, None
    if args.calibrate and record.fits:
        from gpuwork.measure.calibration import calibrate, save_calibration

        calibration = calibrate(record)
        if calibration.memory is not None or calibration.time is not None:
            saved = save_calibration(calibration)
    if args.json:
        out: dict[str, Any] = {"record": record.as_dict()}
        out["extrapolation"] = extrapolation.as_dict() if extrapolation else None
        if args.calibrate:
            out["calibration"] = calibration.as_dict() if calibration else None
            out["calibration_file"] = str(saved) if saved else None
        print(json.dumps(out, indent=1, allow_nan=True))
    else:
        print(format_trial(record))
        if extrapolation is not None:
            print(format_extrapolation(extrapolation, on_cpu=record.environment.device == "cpu"))
        if calibration is not None:
            print(format_calibration(calibration))
            print(f"calibration saved to {saved}" if saved else
                  "calibration: nothing to save (no memory or time factor from this device)")
        elif args.calibrate:
            print("calibration: skipped, the run does not fit")
    return EXIT_OK if record.fits else EXIT_DOES_NOT_FIT


def _load_record(path: str) -> Any:
    from gpuwork.measure.trial import TrialError, TrialRecord

    file = Path(path)
    if not file.is_file():
        raise TrialError(f"trial record '{path}' does not exist")
    try:
        return TrialRecord.from_json(file)
    except json.JSONDecodeError as exc:
        raise TrialError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except TrialError as exc:
        raise TrialError(f"{path}: {exc}") from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise TrialError(f"{path} is not a gpuwork trial record ({type(exc).__name__}: {exc})") from None


def _cmd_compare(args: argparse.Namespace) -> int:
    from gpuwork.measure.trial import TrialError, compare

    if args.price_per_hour is not None and args.price_per_hour < 0:
        raise TrialError("--price-per-hour must be >= 0")
    records = [_load_record(p) for p in args.records]
    rows = compare(records, args.price_per_hour)
    if args.json:
        print(json.dumps(rows, indent=1, allow_nan=True))
    else:
        print(format_compare(rows))
    return EXIT_OK


# -- wiring ---------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``trial`` and ``compare`` to a parser's subcommands (as ``gpuwork.cli`` builds them)."""
    from gpuwork.cli.args import plan_arguments

    p = subparsers.add_parser(
        "trial", help="measured trial: a real fine-tune on this machine (step time, memory, checkpoint)",
        description="Run a short real fine-tune of the plan on this machine's device (CUDA if present, else the "
                    "CPU): warm-up, measured steps, checkpoint save -> restore -> verify; then extrapolate to the "
                    "whole run.", epilog=_TRIAL_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    plan_arguments(p)
    g = p.add_argument_group("the trial")
    g.add_argument("--steps", type=int, default=10, help="measured optimizer steps (default 10)")
    g.add_argument("--warmup", type=int, default=2, help="warm-up steps, not measured (default 2)")
    g.add_argument("--ramp", action="store_true", help="instead: double the batch, then seq_len, until out of memory")
    g.add_argument("--out", metavar="DIR", help="write the record JSON and the checkpoint here")
    g.add_argument("--nproc", type=int, help="processes (GPUs) under torchrun: DDP, or FSDP2 with --sharding fsdp")
    g.add_argument("--memory-cap-gib", type=float, help="simulated device size: out of memory above this")
    g.add_argument("--data", nargs="+", metavar="FILE", help=".txt / .jsonl files or folders (default: shipped text)")
    g.add_argument("--device", choices=("cpu", "cuda"), help="default: CUDA when present, else CPU")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--no-checkpoint", action="store_true", help="skip the checkpoint round-trip")
    g.add_argument("--timeout-s", type=float, help="--nproc: stop the processes after this many seconds")
    g.add_argument("--price-per-hour", type=float, metavar="USD", help="price per GPU-hour, for the total cost")
    g.add_argument("--dataset-tokens", type=int, help="tokens in one epoch, for the extrapolation")
    g.add_argument("--epochs", type=float, help="epochs, for the extrapolation")
    g.add_argument("--calibrate", action="store_true",
                   help="compare with the estimates and save per-device factors to the calibration file "
                        "($GPUWORK_CALIBRATION or ~/.config/gpuwork/calibration.json)")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=_cmd_trial)

    p = subparsers.add_parser("compare", help="trial records side by side (step time, tokens/s, memory, cost)")
    p.add_argument("records", nargs="+", metavar="RECORD.json", help="trial records written by `gpuwork trial --out`")
    p.add_argument("--price-per-hour", type=float, metavar="USD", help="price per GPU-hour, for cost per 1M tokens")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=_cmd_compare)



__all__ = ["EXIT_DOES_NOT_FIT", "format_compare", "format_trial", "register"]

