"""Command line for measured trials: ``gpuwork trial`` and ``gpuwork compare``.

``register(subparsers, lang)`` adds both commands to the main parser (``gpuwork.cli``).

Exit status of ``gpuwork trial``: 0 the run fits (or, with ``--ramp``, something fits); 3 it does
not fit (out of memory, or over ``--memory-cap-gib``): the peak reached is printed, this is a
result and not an error; 4 the checkpoint check failed ("checkpoint NOT verified"); 2 an error in
what was asked, or a record that could not be written (one line on stderr; the measurements are
still printed); 130 / 143 stopped by SIGINT / SIGTERM (the steps measured so far are printed, saved,
and ``--resume RUN`` goes on from the checkpoint; with ``--nproc`` also when torchrun is the one signalled,
and the resume runs as many processes as the record says).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuwork.cli.args import with_mapping
from gpuwork.cli.common import checkpointing_note
from gpuwork.errors import (
    EXIT_CHECKPOINT_NOT_VERIFIED,
    EXIT_DOES_NOT_FIT,
    EXIT_OK,
    EXIT_SIGNAL_BASE,
    EXIT_USAGE,
    GpuworkError,
)
from gpuwork.measure.clipping import clipping_note
from gpuwork.measure.stability import DEFAULT_TOLERANCE
from gpuwork.message import msg
from gpuwork.present.messages import render, text
from gpuwork.present.tables import sharding_as_run
from gpuwork.units import GB, GIB, LANGS, fmt_int, fmt_memory, fmt_number, fmt_seconds

if TYPE_CHECKING:
    from gpuwork.plan import TrainPlan

# -- formatting (pure) -----------------------------------------------------------------------------------------


def _size(n: int | float | None, lang: str = "en") -> str:
    return "-" if n is None else fmt_memory(n, lang)


def _seconds(s: float | None, lang: str = "en") -> str:
    return "-" if s is None else fmt_seconds(s, lang)


def _memory_lines(record: Any, lang: str = "en") -> list[str]:
    env, s = record.environment, record.summary
    ranks = msg("cli.trial.highest_of", ranks=record.world_size) if record.world_size > 1 else None
    lines = []
    if env.device == "cpu":
        rss = s.rss_peak_bytes if s else None
        lines.append(text("cli.trial.memory_cpu", lang, peak=_size(record.peak_trial_memory_bytes, lang), ranks=ranks,
                          rss=_size(rss, lang)))
    else:
        alloc = s.cuda_peak_allocated_bytes if s else None
        reserved = s.cuda_peak_reserved_bytes if s else None
        lines.append(text("cli.trial.memory_cuda", lang, allocated=_size(alloc, lang), ranks=ranks,
                          reserved=_size(reserved, lang)))
    for r in record.ranks:
        allocated = r.cuda_peak_allocated_bytes is not None
        measured = r.cuda_peak_allocated_bytes if allocated else r.rss_peak_bytes
        lines.append(text("cli.trial.rank_memory", lang, rank=r.rank, peak=_size(r.peak_trial_memory_bytes, lang),
                          kind=msg("cli.trial.kind_allocated" if allocated else "cli.trial.kind_rss"),
                          measured=_size(measured, lang), params=_size(r.param_bytes, lang),
                          states=_size(r.optimizer_state_bytes, lang)))
    return lines


def _processes(record: Any) -> Any:
    """One process, N processes (strategy, backend), or, on a 2-D mesh (HSDP), its replicas x shards."""
    parallel = record.parallel
    if parallel is None:
        return msg("cli.trial.one_process")
    mesh = parallel.mesh_shape
    if mesh is not None and len(mesh) == 2:
        return msg("cli.trial.processes_mesh", world=record.world_size, strategy=parallel.strategy,
                   replicas=mesh[0], shards=mesh[1], backend=parallel.backend)
    return msg("cli.trial.processes", world=record.world_size, strategy=parallel.strategy, backend=parallel.backend)


def format_trial(record: Any, lang: str = "en") -> str:
    """The summary table of a trial record, in ``lang``."""
    p, env, s = record.protocol, record.environment, record.summary
    processes = _processes(record)
    precision = p.precision_used if p.precision_used == p.precision_requested else \
        msg("cli.trial.precision_asked", used=p.precision_used, asked=p.precision_requested)
    head = [text("cli.trial.header", lang, model=p.model, method=p.method, precision=precision, optimizer=p.optimizer,
                 seq_len=p.seq_len, batch=p.micro_batch, grad_accum=p.grad_accum,
                 checkpointing=checkpointing_note(record.plan), processes=processes,
                 device=msg("cli.trial.cpu") if env.device == "cpu" else env.device, device_name=env.device_name)]
    head += [text("cli.trial.substitution", lang, what=sub) for sub in p.substitutions]
    if p.sdpa_backend_used:  # the kernel torch's SDPA ran under the plan's sdpa_backend (gpuwork.measure.sdpa)
        head.append(text("cli.trial.sdpa", lang, used=p.sdpa_backend_used, asked=p.sdpa_backend_requested or "-"))
    if env.switches:  # the plan's execution switches it ran under (tf32, deterministic, ...)
        head.append(text("cli.trial.switches", lang, what=", ".join(env.switches)))
    rows: list[tuple[str, str]] = []

    def row(key: str, value: str) -> None:
        rows.append((text(f"cli.trial.row.{key}", lang) if key else "", value))

    if s is not None:
        row("step_time", text("cli.trial.step_time", lang, median=_seconds(s.median_step_time_s, lang),
                              p90=_seconds(s.p90_step_time_s, lang), steps=s.measured_steps, warmup=p.warmup))
        if s.step_time_interval_method is not None:  # records written before the interval have none
            row("interval", _interval(s, lang))
        if record.stability is not None:
            row("until_stable", _stability(record.stability, lang))
        row("throughput", text("cli.trial.throughput", lang, tokens_s=s.tokens_per_s, tokens=s.tokens_per_step,
                               all_ranks=msg("cli.trial.all_ranks") if record.world_size > 1 else None))
        row("data_wait", render(s.verdict, lang))
        row("loss", text("cli.trial.loss", lang, first=fmt_number(s.first_loss, lang, 4),
                         last=fmt_number(s.last_loss, lang, 4)))
        row("clipping", render(clipping_note(record), lang))
    else:
        row("step_time", text("cli.trial.no_steps", lang))
    memory = _memory_lines(record, lang)
    row("peak_memory", memory[0])
    for line in memory[1:]:
        row("", line)
    ck = record.checkpoint
    if ck is not None:
        row("checkpoint", text("cli.trial.checkpoint", lang,
                               state=msg("cli.trial.verified" if ck.verified else "cli.trial.not_verified"),
                               save=_seconds(ck.save_s, lang), restore=_seconds(ck.restore_s, lang),
                               rebuild=_seconds(ck.rebuild_s, lang), size=_size(ck.bytes_on_disk, lang)))
        row("", render(ck.message, lang))
    elif record.fits:
        row("checkpoint", text("cli.trial.checkpoint_not_run", lang))
    if record.fits:
        cap = (msg("cli.trial.under_cap", cap=_size(p.memory_cap_bytes, lang)) if p.memory_cap_bytes else None)
        row("fits", text("cli.trial.fits", lang, cap=cap))
    else:
        row("fits", text("cli.trial.does_not_fit", lang, error=record.error,
                         peak=_size(record.peak_trial_memory_bytes, lang)))
    width = max(len(k) for k, _ in rows) + 2
    lines = head + [f"  {k:<{width}}{v}" for k, v in rows]
    if record.saved_to:
        lines.append(text("cli.trial.record", lang, path=record.saved_to))
    return "\n".join(lines)


def _pct1(share: float | None) -> float | None:
    return None if share is None else share * 100


def _interval(s: Any, lang: str = "en") -> str:
    """The median step time's 95 % interval and drift (``gpuwork.measure.stability``), in ``lang``."""
    if s.step_time_low_s is None:
        return text("cli.trial.no_interval", lang, steps=s.measured_steps)
    return text("cli.trial.interval", lang, low=_seconds(s.step_time_low_s, lang), high=_seconds(s.step_time_high_s, lang),
                half_pct=_pct1(s.step_time_half_width), coverage_pct=_pct1(s.step_time_coverage),
                drift_pct=_pct1(s.drift_per_100_steps or 0.0))


def _stability(st: Any, lang: str = "en") -> str:
    """Whether ``--until-stable`` reached its tolerance, in ``lang``."""
    if st.converged:
        return text("cli.trial.stable", lang, half_pct=_pct1(st.half_width), tolerance_pct=_pct1(st.tolerance),
                    steps=st.measured_steps)
    half = "-" if st.half_width is None else text("cli.trial.half_pct", lang, value=_pct1(st.half_width))
    return text("cli.trial.not_stable", lang, half=half, steps=st.measured_steps, max_steps=st.max_steps,
                tolerance_pct=_pct1(st.tolerance))


def format_extrapolation(ext: Any, on_cpu: bool = False, lang: str = "en") -> str:
    """The whole run at the trial's speed (``gpuwork.measure.extrapolation``), in ``lang``."""
    where = msg("cli.trial.where_cpu" if on_cpu else "cli.trial.where_gpu", gpus=ext.gpus)
    lines = [text("cli.trial.extrapolated", lang, tokens=ext.dataset_tokens, epochs=ext.epochs, where=where,
                  steps=ext.steps),
             text("cli.trial.parts", lang, train=_seconds(ext.train_s, lang), eval=_seconds(ext.eval_s, lang),
                  eval_share=ext.eval_fraction, checkpoints=ext.checkpoints,
                  checkpoint=_seconds(ext.checkpoint_s, lang), size=_size(ext.checkpoint_bytes, lang),
                  write_gbs=ext.checkpoint_write_bytes_s / GB, margin=_seconds(ext.margin_s, lang),
                  margin_share=ext.margin),
             text("cli.trial.total", lang, total=_seconds(ext.total_s, lang), hours=ext.gpu_hours,
                  unit=msg("cli.trial.process_hours" if on_cpu else "cli.trial.gpu_hours"))]
    if ext.total_low_s is not None:
        lines.append(text("cli.trial.total_range", lang, low=_seconds(ext.total_low_s, lang),
                          high=_seconds(ext.total_high_s, lang)))
    if ext.cost is not None:
        lines.append(text("cli.trial.cost", lang, cost=ext.cost, price=ext.price_per_gpu_hour))
        if ext.cost_low is not None:
            lines.append(text("cli.trial.cost_range", lang, low=ext.cost_low, high=ext.cost_high))
    for offer in ext.offers[:5]:
        lines.append(text("cli.trial.offer", lang, offer=offer.offer_id, provider=offer.provider, mode=offer.mode,
                          price=offer.price_per_gpu_hour, hours=offer.billed_hours, gpus=offer.billed_gpus,
                          cost=offer.cost,
                          notes=msg("cli.trial.offer_notes", notes=offer.notes) if offer.notes else None))
        if offer.cost_low is not None and offer.cost_high is not None:
            lines.append(text("cli.trial.offer_range", lang, low=offer.cost_low, high=offer.cost_high))
    lines.extend(text("cli.trial.note", lang, note=n) for n in ext.notes)
    return "\n".join(lines)


def format_calibration(cal: Any, lang: str = "en") -> str:
    """A calibration's measured/estimated factors and notes (``gpuwork.measure.calibration``), in ``lang``."""
    gpu = msg("cli.trial.calibration_gpu", gpu_id=cal.gpu_id) if cal.gpu_id else None
    lines = [text("cli.trial.calibration", lang, device=cal.device_name, gpu=gpu)]
    if cal.memory is not None:
        m = cal.memory
        lines.append(text("cli.trial.cal_allocated", lang, measured=_size(m.measured_allocated_bytes, lang),
                          estimated=_size(m.estimated_allocated_bytes, lang), factor=m.allocated_factor))
        lines.append(text("cli.trial.cal_reserved", lang, measured=_size(m.measured_reserved_bytes, lang),
                          estimated=_size(m.estimated_reserved_bytes, lang), factor=m.reserved_factor))
    if cal.time is not None:
        t = cal.time
        lines.append(text("cli.trial.cal_step", lang, measured=_seconds(t.measured_step_time_s, lang),
                          estimated=_seconds(t.estimated_step_time_s, lang), factor=t.step_time_factor))
        lines.append(text("cli.trial.cal_mfu", lang, measured_pct=t.measured_mfu * 100,
                          estimated_pct=t.estimated_mfu * 100))
    lines.extend(text("cli.trial.note", lang, note=n) for n in cal.notes)
    return "\n".join(lines)


def format_compare(rows: list[dict[str, Any]], lang: str = "en") -> str:
    """A side-by-side table of compare() rows: one column per trial, labelled in ``lang``."""
    def yes_no(v: Any) -> str:
        return "-" if v is None else text("cli.compare.yes" if v else "cli.compare.no", lang)

    def price(v: float | None) -> str:
        return "-" if v is None else text("cli.compare.usd_price", lang, value=v)

    def cost(v: float | None) -> str:  # four decimals: a cent per million tokens is a real difference
        return "-" if v is None else text("cli.compare.usd_cost", lang, value=fmt_number(v, lang, 4))

    def interval(r: dict[str, Any]) -> str:
        if r.get("step_time_low_s") is None:
            return "-"
        return text("cli.compare.interval_value", lang, low=_seconds(r["step_time_low_s"], lang),
                    high=_seconds(r["step_time_high_s"], lang), half_pct=_pct1(r["step_time_half_width"]))

    def drift(v: float | None) -> str:
        return "-" if v is None else text("cli.compare.drift_value", lang, drift_pct=_pct1(v))

    def cost_range(r: dict[str, Any]) -> str:
        if r.get("cost_per_1m_tokens_low") is None:
            return "-"
        return text("cli.compare.usd_cost_range", lang, low=fmt_number(r["cost_per_1m_tokens_low"], lang, 4),
                    high=fmt_number(r["cost_per_1m_tokens_high"], lang, 4))

    def sharding(r: dict[str, Any]) -> str:
        said = sharding_as_run(r)
        return "-" if said is None else render(said, lang)

    whole_row = None  # a field computed from the whole row, not one key
    fields: list[tuple[str, str | None, Callable[[Any], str]]] = [("trial", "trial", str), ("device", "device", str), ("gpus", "gpus", str),
              ("sharding", whole_row, sharding), ("fits", "fits", yes_no), ("median", "median_step_time_s", lambda v: _seconds(v, lang)),
              ("interval", whole_row, interval), ("drift", "drift_per_100_steps", drift),
              ("steps", "measured_steps", str), ("stable", "converged", yes_no),
              ("p90", "p90_step_time_s", lambda v: _seconds(v, lang)),
              ("tokens_s", "tokens_per_s", lambda v: "-" if v is None else fmt_int(v, lang)),
              ("peak_memory", "peak_memory_bytes", lambda v: _size(v, lang)),
              ("checkpoint", "checkpoint_verified", yes_no),
              ("switches", "switches", lambda v: ", ".join(v) if v else text("cli.compare.no_switches", lang)),
              ("price", "price_per_hour", price), ("cost", "cost_per_1m_tokens", cost),
              ("cost_range", whole_row, cost_range)]
    if any("estimate" in r for r in rows):
        fields += _beside_fields(lang)
    table = [[text(f"cli.compare.{label}", lang)] + [fmt(r if key is whole_row else r.get(key)) for r in rows]
             for label, key, fmt in fields]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    for column, r in enumerate(rows, 1):  # why a column has no estimate (CPU, a GPU outside the catalog, ...)
        notes = (r.get("estimate") or {}).get("notes") or ()
        lines += [text("cli.compare.beside_note", lang, column=column, note=n) for n in notes]
    return "\n".join(lines)


def _beside_fields(lang: str) -> list[tuple[str, Any, Any]]:
    """The estimate-beside-measurement rows of ``format_compare``: measured / estimated (error) per quantity."""
    def cell(pair: dict[str, Any] | None, show: Any, measured: str, estimated: str) -> str:
        if pair is None:
            return "-"
        error = pair["error"]
        return text("cli.compare.beside_value", lang, measured=show(pair[measured]), estimated=show(pair[estimated]),
                    sign="+" if error >= 0 else "-", error_pct=abs(error) * 100)

    def memory(total: str) -> Any:
        def fmt(r: dict[str, Any]) -> str:
            m = (r.get("estimate") or {}).get("memory")
            return cell(m.get(total) if m else None, lambda v: _size(v, lang), "measured_bytes", "estimated_bytes")
        return fmt

    def step(r: dict[str, Any]) -> str:
        return cell((r.get("estimate") or {}).get("step_time"), lambda v: _seconds(v, lang), "measured_s",
                    "estimated_s")

    def tokens(r: dict[str, Any]) -> str:
        return cell((r.get("estimate") or {}).get("tokens_per_s"), lambda v: fmt_int(v, lang), "measured", "estimated")

    def stack(r: dict[str, Any]) -> str:
        e = r.get("estimate") or {}
        return "-" if not e.get("stack") else f"{e['stack']}{' / ' + e['gpu_id'] if e.get('gpu_id') else ''}"

    whole_row = None
    return [("beside_stack", whole_row, stack), ("beside_allocated", whole_row, memory("allocated")),
            ("beside_reserved", whole_row, memory("reserved")), ("beside_device", whole_row, memory("device")),
            ("beside_step", whole_row, step), ("beside_tokens", whole_row, tokens)]


def format_ramp(result: Any, lang: str = "en") -> str:
    """The ramp's probes and what limited the batch and the sequence, in ``lang``."""
    lines = [text("cli.ramp.header", lang)]
    fits, oom, by = text("cli.ramp.fits", lang), text("cli.ramp.oom", lang), text("cli.ramp.by", lang)
    for p in result.probes:
        lines.append(f"  {p.batch_size:>4} {by} {p.seq_len:<6} {fits if p.fits else oom:<5} "
                     f"{_size(p.peak_trial_memory_bytes, lang):>11}  {_seconds(p.median_step_time_s, lang):>9}  "
                     f"{'-' if p.tokens_per_s is None else fmt_int(p.tokens_per_s, lang)}")
    if result.max_batch_size is None:
        lines.append(text("cli.ramp.nothing", lang))
    else:
        lines.append(text("cli.ramp.result", lang, batch=result.max_batch_size, batch_why=result.batch_limited_by,
                          seq=result.max_seq_len, seq_why=result.seq_limited_by))
    return "\n".join(lines)


# -- commands (gather -> present) -------------------------------------------------------------------------------


def _plan(args: argparse.Namespace) -> Any:
    from gpuwork.cli.args import plan_from_args

    if getattr(args, "nproc", None) and getattr(args, "gpus", None) is None:
        args.gpus = args.nproc  # the processes are the GPUs (and sharding other than ddp needs gpus >= 2)
    plan = plan_from_args(args)
    changes = {k: getattr(args, k) for k in ("dataset_tokens", "epochs") if getattr(args, k, None) is not None}
    return plan.replace(**changes) if changes else plan


def _progress(total: int, enabled: bool, lang: str = "en") -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=text("cli.trial.progress", lang), unit=text("cli.trial.progress_unit", lang),
                file=sys.stderr, disable=None if enabled else True, leave=False, dynamic_ncols=True)


def _cmd_trial(args: argparse.Namespace) -> int:
    from gpuwork.measure.checkpoint import CheckpointDamaged
    from gpuwork.measure.trial import DEFAULT_MAX_STEPS, TrialError, check_until_stable

    lang = args.lang
    check_flags(args)
    try:
        plan, resume = _plan_or_resume(args)
    except CheckpointDamaged as exc:  # the checkpoint check failed, before anything was loaded
        return _refused(exc, lang)
    cap = None
    if args.memory_cap_gib is not None:
        cap = int(args.memory_cap_gib * GIB)
    data = args.data or None
    stable: dict[str, Any] = {}
    if args.until_stable and not resume:
        if args.ramp:
            raise TrialError(msg("error.trial.until_stable_with", flag="--ramp"))
        stable = {"until_stable": args.tolerance, "max_steps": args.max_steps}
        check_until_stable(args.tolerance, args.max_steps, args.steps)
    startup_switches(plan)
    if args.ramp:
        return _ramp(args, plan, cap, data)
    done_before = resume["resume"].step if resume else 0
    step_cap = resume.get("max_steps") or stable.get("max_steps") or DEFAULT_MAX_STEPS
    most = step_cap if (stable or resume.get("until_stable") is not None) else args.steps
    bar = _progress(args.warmup + most, not args.no_progress, lang)
    bar.update(done_before)

    def on_step(m: Any) -> None:
        bar.update(1)
        bar.set_postfix({"loss": fmt_number(m.loss, lang, 3),
                         text("cli.trial.progress_unit", lang): _seconds(m.step_time_s, lang)}, refresh=False)

    if resume:  # on stderr, --json or not
        _say_resume(resume, lang)
    # a resumed trial takes what it was started with; a new one takes the flags
    given = resume or {"seed": args.seed, "data": data, "out_dir": args.out, "memory_cap_bytes": cap, **stable}
    try:
        record = _run(args, plan, given, on_step)
    except CheckpointDamaged as exc:  # the per-tensor check after loading
        return _refused(exc, lang)
    except TrialError as exc:
        if resume and _rank_refused_resume(exc):  # the same check on a rank of a torchrun trial
            return _refused(exc, lang)
        raise
    finally:
        bar.close()
    return _report(args, plan, record, done_before)


def startup_switches(plan: TrainPlan, environ: Any = None) -> None:
    """Put the plan's start-up switches (launch_blocking, expandable_segments; deterministic's cuBLAS workspace)
    into this process's environment before CUDA starts in it: ``gpuwork trial`` is a process of its own, so its
    one-process trial runs under them, and torchrun's ranks inherit them (``gpuwork.measure.switches``)."""
    import os

    from gpuwork.measure.switches import startup_env

    environ = os.environ if environ is None else environ
    environ.update(startup_env(plan, environ))


def _plan_or_resume(args: argparse.Namespace) -> tuple[TrainPlan, dict[str, Any]]:
    """The plan from the flags, or with --resume the interrupted trial's plan and the options it goes on with
    (``resume_options``; steps, warm-up, device and process count go back into ``args``)."""
    from gpuwork.measure.trial import TrialError, resume_options

    if args.resume is None:
        if args.allow_changed_data:
            raise TrialError(msg("error.resume.allow_without_resume"))
        for name, default in _DEFAULTS.items():
            if getattr(args, name) is None:
                setattr(args, name, default)
        return _plan(args), {}
    if not args.resume.strip():
        raise TrialError(msg("error.resume.empty"))
    if args.ramp:
        raise TrialError(msg("error.trial.resume_ramp", run=args.resume))
    resume = resume_options(args.resume, args.out, allow_changed_data=args.allow_changed_data)
    processes = resume.pop("nproc", None)
    if args.nproc is not None and args.nproc != (processes or 1):
        # each rank's data shard depends on the number of processes: another number is another data order
        raise TrialError(msg("error.trial.resume_nproc", run=args.resume, processes=processes or 1,
                             nproc=args.nproc))
    args.nproc = processes
    plan = resume.pop("plan")
    _refuse_conflicts(args, resume, plan)
    args.device = resume.pop("device")
    args.steps, args.warmup = resume.pop("steps"), resume.pop("warmup")
    return plan, resume


def _ramp(args: argparse.Namespace, plan: TrainPlan, cap: int | None, data: Any) -> int:
    """``gpuwork trial --ramp``: the largest batch, then the longest sequence, that fit."""
    from gpuwork.measure.trial import TrialError, ramp

    if args.nproc:
        raise TrialError(msg("error.trial.flag_ramp_nproc"))
    result = ramp(plan, steps=args.steps, warmup=args.warmup, memory_cap_bytes=cap, data=data, seed=args.seed,
                  device=args.device)
    if args.json:
        print(json.dumps(with_mapping(result.as_dict(), args), indent=1))
    else:
        print(format_ramp(result, lang=args.lang))
    return EXIT_OK if result.max_batch_size is not None else EXIT_DOES_NOT_FIT


def _run(args: argparse.Namespace, plan: TrainPlan, given: dict[str, Any], on_step: Callable[[Any], None]) -> Any:
    """The trial itself: one process, or ``--nproc`` under torchrun."""
    from gpuwork.measure.trial import run_trial

    common = {"steps": args.steps, "warmup": args.warmup, "device": args.device,
              "checkpoint": not args.no_checkpoint, "callbacks": [on_step],
              "checkpoint_every": args.checkpoint_every or 0, **given}
    if args.nproc:
        from gpuwork.measure.distributed import run_distributed

        return run_distributed(plan, args.nproc, timeout_s=args.timeout_s, **common)
    return run_trial(plan, **common)


def _report(args: argparse.Namespace, plan: TrainPlan, record: Any, done_before: int) -> int:
    """The record, the whole run's time and cost and the calibration, as text or JSON; the exit status."""
    from gpuwork.measure.extrapolation import extrapolate

    lang = args.lang
    interrupted = record.status == "interrupted"
    extrapolation = None
    if record.fits and record.summary is not None and not interrupted:
        try:  # to plan.gpus: with --nproc N and no --gpus, the N measured
            extrapolation = extrapolate(record, plan, price_per_gpu_hour=args.price_per_hour)
        except GpuworkError as exc:
            warning = msg("cli.trial.no_extrapolation", error=exc.msg or msg("measure.text", text=str(exc)))
            print(text("cli.warning", lang, text=warning), file=sys.stderr)
    calibration, saved = None, None
    if args.calibrate and record.fits and not interrupted:
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
        print(json.dumps(with_mapping(out, args), indent=1, allow_nan=True))
        return _exit_status(record, lang)
    if record.resumed_from:
        print(text("cli.trial.resumed", lang, run=record.resumed_from, step=done_before + 1))
    print(format_trial(record, lang))
    if extrapolation is not None:
        print(format_extrapolation(extrapolation, on_cpu=record.environment.device == "cpu", lang=lang))
    if calibration is not None:
        print(format_calibration(calibration, lang))
        print(text("cli.trial.calibration_saved", lang, path=str(saved)) if saved else
              text("cli.trial.calibration_nothing", lang))
    elif args.calibrate:
        print(text("cli.trial.calibration_skipped", lang))
    return _exit_status(record, lang)


# -- the flags' ranges and a resume's checks ----------------------------------------------------------------

MAX_STEPS = 100_000  # a trial measures tens to thousands of steps; past this it is a training run
MAX_WARMUP = 10_000
MAX_MEMORY_CAP_GIB = 16384.0  # 16 TiB: above any one device
MAX_PRICE_PER_HOUR = 10_000.0  # US dollars per GPU-hour
_DEFAULTS = {"steps": 10, "warmup": 2, "seed": 0, "tolerance": DEFAULT_TOLERANCE}  # when not resuming


def check_flags(args: argparse.Namespace) -> None:
    """Every numeric flag of ``gpuwork trial`` within a range with both ends (TrialError naming the flag and the
    range)."""
    from gpuwork.measure.errors import TrialError

    whole = [("--steps", args.steps, 1, MAX_STEPS, "steps"), ("--warmup", args.warmup, 0, MAX_WARMUP, "warmup"),
             ("--checkpoint-every", args.checkpoint_every, 0, MAX_STEPS, "checkpoint_every"),
             ("--max-steps", args.max_steps, 1, MAX_STEPS, "max_steps")]  # --seed, --nproc: cli.args.FLAG_BOUNDS
    for flag, value, low, high, what in whole:
        if value is not None and not low <= value <= high:
            raise TrialError(msg("error.trial_flags.whole", flag=flag, value=str(value), low=low, high=high,
                                 what=msg(f"trial_flags.{what}")))
    cap = args.memory_cap_gib
    if cap is not None and not (math.isfinite(cap) and 0 < cap <= MAX_MEMORY_CAP_GIB):
        raise TrialError(msg("error.trial_flags.number", flag="--memory-cap-gib", value=repr(cap), low=0,
                             high=MAX_MEMORY_CAP_GIB, what=msg("trial_flags.memory_cap")))
    price = args.price_per_hour
    if price is not None and not (math.isfinite(price) and 0 <= price <= MAX_PRICE_PER_HOUR):
        raise TrialError(msg("error.trial_flags.number_from", flag="--price-per-hour", value=repr(price), low=0,
                             high=MAX_PRICE_PER_HOUR, what=msg("trial_flags.price")))


def _refuse_conflicts(args: argparse.Namespace, resume: dict[str, Any], plan: Any) -> None:
    """A flag given with --resume that differs from what the record ran with: TrialError naming the flag, the value
    given and the value recorded (a resume goes on exactly as the trial started)."""
    from gpuwork.cli.args import _FLAG_FIELDS
    from gpuwork.measure.errors import TrialError

    run = resume["resume"].run_id

    def conflict(flag: str, given: Any, recorded: Any) -> TrialError:
        return TrialError(msg("error.resume.flag_conflict", flag=flag, given=str(given), run=run,
                              recorded=str(recorded)))

    for name, flag in (("plan", "--plan"), ("from_files", "--from"), ("lengths_from", "--lengths-from")):
        if getattr(args, name, None):
            value = getattr(args, name)
            raise conflict(flag, " ".join(value) if isinstance(value, list) else value, "its recorded plan")
    for name in (*_FLAG_FIELDS, "dataset_tokens", "epochs"):
        value = getattr(args, name, None)
        if value is None:
            continue
        recorded = getattr(plan, name, None)
        try:
            same = plan.replace(**{name: value}) == plan
        except (GpuworkError, ValueError, TypeError):
            same = False
        if not same:
            raise conflict("--" + name.replace("_", "-"), value, getattr(recorded, "value", recorded))
    stability = (resume.get("until_stable"), resume.get("max_steps"))
    given = [("--steps", args.steps, resume["steps"]), ("--warmup", args.warmup, resume["warmup"]),
             ("--seed", args.seed, resume["seed"]), ("--device", args.device, resume["device"]),
             ("--tolerance", args.tolerance, stability[0]), ("--max-steps", args.max_steps, stability[1])]
    for flag, value, recorded in given:
        if value is not None and value != recorded:
            raise conflict(flag, value, recorded if recorded is not None else "-")
    if args.until_stable and stability[0] is None:
        raise conflict("--until-stable", f"(--tolerance {args.tolerance or DEFAULT_TOLERANCE})",
                       f"--steps {resume['steps']}")
    if args.memory_cap_gib is not None and int(args.memory_cap_gib * GIB) != resume["memory_cap_bytes"]:
        recorded_cap = resume["memory_cap_bytes"]
        raise conflict("--memory-cap-gib", args.memory_cap_gib,
                       "-" if recorded_cap is None else fmt_number(recorded_cap / GIB, args.lang, 3))
    if args.data:
        recorded_data = [str(Path(p).expanduser().resolve()) for p in (resume.get("data") or [])]
        wanted = [str(Path(p).expanduser().resolve()) for p in args.data]
        if wanted != recorded_data:
            raise conflict("--data", " ".join(args.data), " ".join(resume.get("data") or []) or "-")


def _say_resume(resume: dict[str, Any], lang: str) -> None:
    """What was checked before loading, and a data change that was allowed, on stderr."""
    from gpuwork.measure.checkpoint import read_manifest

    point = resume["resume"]
    manifest = read_manifest(Path(point.checkpoint))
    print(text("cli.resume.verified", lang, folder=point.checkpoint, files=len(manifest["files"])), file=sys.stderr)
    if point.data_changed:
        print(text("cli.warning", lang, text=msg("cli.resume.data_changed", run=point.run_id,
                                                 files=", ".join(point.data_changed))), file=sys.stderr)


def _rank_refused_resume(exc: GpuworkError) -> bool:
    """A torchrun rank's error that is a resume's refused checkpoint (``error.resume.*`` inside the rank's line)."""
    error = exc.msg
    inner = error["error"] if error is not None and error.code == "error.trial.rank" else None
    return getattr(inner, "code", "").startswith("error.resume.")


def _refused(exc: GpuworkError, lang: str) -> int:
    """A checkpoint that does not match its manifest: one line, exit 4 (the checkpoint check failed)."""
    from gpuwork.cli.args import error_line

    print(error_line(exc.text(lang), lang), file=sys.stderr)
    return EXIT_CHECKPOINT_NOT_VERIFIED


def _exit_status(record: Any, lang: str) -> int:
    """The exit status of a finished trial, with one line on stderr for each way it did not succeed."""
    import signal

    if record.write_error is not None:
        print(f"gpuwork: error: {text('cli.trial.not_saved', lang, error=record.write_error)}", file=sys.stderr)
        return EXIT_USAGE
    if record.status == "interrupted":
        done = record.steps[-1].step if record.steps else 0
        total = record.protocol.warmup + (record.stability.max_steps if record.stability else record.protocol.steps)
        if record.saved_to:
            line = text("cli.trial.interrupted", lang, signal=record.stop_signal, done=done, total=total,
                        folder=str(Path(record.saved_to).parent), run=record.saved_to)
        else:
            line = text("cli.trial.interrupted_unsaved", lang, signal=record.stop_signal, done=done, total=total)
        print(f"gpuwork: {line}", file=sys.stderr)
        number = getattr(signal, record.stop_signal or "SIGINT", signal.SIGINT)
        return EXIT_SIGNAL_BASE + int(number)
    if record.checkpoint is not None and not record.checkpoint.verified:
        print(f"gpuwork: error: {text('cli.trial.checkpoint_failed', lang, what=record.checkpoint.message)}",
              file=sys.stderr)
        return EXIT_CHECKPOINT_NOT_VERIFIED
    return EXIT_OK if record.fits else EXIT_DOES_NOT_FIT


def _cmd_compare(args: argparse.Namespace) -> int:
    from gpuwork.measure.record import TrialError, compare

    if args.price_per_hour is not None and args.price_per_hour < 0:
        raise TrialError(msg("error.trial.flag_price"))
    from gpuwork.cli.args import load_record

    records = [load_record(p) for p in args.records]
    rows = compare(records, args.price_per_hour, estimates=True)
    saved = _save_calibrations(rows) if args.save_calibration else None
    if args.json:
        paths = saved if saved is not None else [None] * len(rows)
        out = [_json_row(r, args.lang) | ({"calibration_file": str(path) if path else None} if saved is not None else {})
               for r, path in zip(rows, paths, strict=True)]
        print(json.dumps(out, indent=1, allow_nan=True))
    else:
        print(format_compare(rows, args.lang))
        for column, path in enumerate(saved or (), 1):  # nothing when not asked
            print(text("cli.compare.calibration_saved", args.lang, column=column, path=str(path)) if path else
                  text("cli.compare.calibration_nothing", args.lang, column=column))
    return EXIT_OK


def _save_calibrations(rows: list[dict[str, Any]]) -> list[Path | None]:
    """Save each row's calibration (by device, with its stack); None where there is nothing to save (CPU)."""
    from gpuwork.measure.calibration import save_calibration

    out: list[Path | None] = []
    for r in rows:
        cal = r.get("calibration")
        useful = cal is not None and (cal.memory is not None or cal.time is not None)
        out.append(save_calibration(cal) if cal is not None and useful else None)
    return out


def _json_row(row: dict[str, Any], lang: str) -> dict[str, Any]:
    """A compare row as JSON: the calibration as its dict, the estimate's notes rendered in ``lang``."""
    out = {k: v for k, v in row.items() if k != "calibration"}
    cal = row.get("calibration")
    estimate = dict(row.get("estimate") or {})
    estimate["notes"] = [{"code": n.code, "text": render(n, lang)} for n in estimate.get("notes", ())]
    out["estimate"] = estimate
    out["calibration"] = cal.as_dict() if cal is not None else None
    return out


# -- wiring ---------------------------------------------------------------------------------------------


def register(subparsers: Any, lang: str = "en") -> None:
    """Add ``trial`` and ``compare`` to a parser's subcommands (as ``gpuwork.cli`` builds them), help in ``lang``."""
    from gpuwork.cli.args import plan_arguments

    p = subparsers.add_parser("trial", help=text("cli.help.trial.summary", lang),
                              description=text("cli.help.trial.description", lang),
                              epilog=text("cli.help.trial.epilog", lang),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    plan_arguments(p, lang)
    g = p.add_argument_group(text("cli.help.trial.title", lang))
    # None: not given (a resume takes the record's; a new trial the defaults in _DEFAULTS)
    g.add_argument("--steps", type=int, help=text("cli.help.trial.steps", lang))
    g.add_argument("--warmup", type=int, help=text("cli.help.trial.warmup", lang))
    g.add_argument("--until-stable", action="store_true", help=text("cli.help.trial.until_stable", lang))
    g.add_argument("--tolerance", type=float, help=text("cli.help.trial.tolerance", lang))
    g.add_argument("--max-steps", type=int, metavar="N", help=text("cli.help.trial.max_steps", lang))
    g.add_argument("--ramp", action="store_true", help=text("cli.help.trial.ramp", lang))
    g.add_argument("--out", metavar="DIR", help=text("cli.help.trial.out", lang))
    g.add_argument("--nproc", type=int, help=text("cli.help.trial.nproc", lang))
    g.add_argument("--memory-cap-gib", type=float, help=text("cli.help.trial.memory_cap", lang))
    g.add_argument("--data", nargs="+", metavar="FILE", help=text("cli.help.trial.data", lang))
    g.add_argument("--device", choices=("cpu", "cuda"), help=text("cli.help.trial.device", lang))
    g.add_argument("--seed", type=int)
    g.add_argument("--no-checkpoint", action="store_true", help=text("cli.help.trial.no_checkpoint", lang))
    g.add_argument("--timeout-s", type=float, help=text("cli.help.trial.timeout", lang))
    g.add_argument("--price-per-hour", type=float, metavar="USD", help=text("cli.help.trial.price", lang))
    g.add_argument("--dataset-tokens", type=int, help=text("cli.help.trial.dataset_tokens", lang))
    g.add_argument("--epochs", type=float, help=text("cli.help.trial.epochs", lang))
    g.add_argument("--calibrate", action="store_true", help=text("cli.help.trial.calibrate", lang))
    g.add_argument("--json", action="store_true", help=text("cli.help.trial.json", lang))
    g.add_argument("--no-progress", action="store_true", help=text("cli.help.trial.no_progress", lang))
    g.add_argument("--resume", metavar="RUN", help=text("cli.help.trial.resume", lang))
    g.add_argument("--checkpoint-every", type=int, metavar="N", help=text("cli.help.trial.checkpoint_every", lang))
    g.add_argument("--allow-changed-data", action="store_true", help=text("cli.help.trial.allow_changed_data", lang))
    p.add_argument("--lang", choices=LANGS, default="en", help=text("cli.help.lang.output", lang))
    p.set_defaults(func=_cmd_trial)

    p = subparsers.add_parser("compare", help=text("cli.help.compare.summary", lang))
    p.add_argument("records", nargs="+", metavar="RECORD.json", help=text("cli.help.compare.records", lang))
    p.add_argument("--price-per-hour", type=float, metavar="USD", help=text("cli.help.compare.price", lang))
    p.add_argument("--json", action="store_true", help=text("cli.help.compare.json", lang))
    p.add_argument("--save-calibration", action="store_true", help=text("cli.help.compare.save_calibration", lang))
    p.add_argument("--lang", choices=LANGS, default="en", help=text("cli.help.lang.output", lang))
    p.set_defaults(func=_cmd_compare)


__all__ = ["EXIT_CHECKPOINT_NOT_VERIFIED", "EXIT_DOES_NOT_FIT", "format_compare", "format_trial", "register"]

