"""Command line: ``gpuwork plan | offers | request`` — from a plan to a rental.

``register(subparsers, lang)`` adds the three subcommands to gpuwork's parser.
Errors print one line on stderr and exit with status 2, as everywhere in ``gpuwork.cli``.

    gpuwork plan --model llama-3.1-8b --method lora --dataset-bytes 200GB
    gpuwork offers --model llama-3.1-8b --method qlora --mode on-demand --sort cost
    gpuwork request --model llama-3.1-8b --method lora --dataset-bytes 200GB --rent-days 30 --lang ru

Every verb takes ``--lang en|ru``: reasons, notes, verdicts and labels come from the message catalog
(``gpuwork.present.messages``). JSON output keeps codes and numbers (``{"code": ..., "params": ...}``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from gpuwork.cli.args import FlagValueError, escaped_output, load_record, with_mapping
from gpuwork.cli.common import (
    checkpointing_note,
    full_plan,
    have_argument,
    output_arguments,
    sizing_parser,
    time_options,
    verb_lang,
)
from gpuwork.errors import EXIT_NO_FIT, PlanError
from gpuwork.estimate.offers import SORT_KEYS
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.present.band import band_messages
from gpuwork.present.messages import render, render_all, text, time_kind_code
from gpuwork.units import (
    HOUR_S,
    MISSING,
    fmt_duration,
    fmt_gib,
    fmt_int,
    fmt_number,
    fmt_size,
    fmt_usd,
)

# -- argument types ---------------------------------------------------------------------------------


MAX_START_DAYS = 2 * 366  # a rental request asks for hardware within two years; further is a typo in the year


def _iso_date(text: str) -> date:
    """--start-date: YYYY-MM-DD, from today to two years ahead (a rental cannot start in the past)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):  # fromisoformat also takes 20260101 and week dates
        raise FlagValueError(msg("error.args.date", value=repr(text)))
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise FlagValueError(msg("error.args.date", value=repr(text))) from None
    today = date.today()
    if not today <= day <= today + timedelta(days=MAX_START_DAYS):
        raise FlagValueError(msg("error.args.date_range", value=repr(text), first=today.isoformat(),
                                 last=(today + timedelta(days=MAX_START_DAYS)).isoformat()))
    return day


# -- plan -------------------------------------------------------------------------------------------


def step_breakdown(time: Any) -> tuple[Msg, ...]:
    """Where one step goes on one GPU, largest first, as catalog messages (seconds and share)."""
    total = sum(time.breakdown.values()) or 1.0
    parts = sorted(((k, v) for k, v in time.breakdown.items() if v > 0), key=lambda kv: -kv[1])
    return tuple(msg("cli.plan.breakdown_part", kind=msg(time_kind_code(k)), seconds=v, share=v / total)
                 for k, v in parts)


def _cmd_plan(args: argparse.Namespace) -> int:
    from gpuwork.estimate.decision import Constraints
    from gpuwork.estimate.offers import usable_memory_bytes
    from gpuwork.facts.catalog import get_gpu
    from gpuwork.sizing import (
        decide,
        estimate_disk,
        estimate_memory,
        estimate_time,
        evaluate_offers,
        match_profile,
        scaling,
        time_band,
    )

    lang = verb_lang(args)
    plan = full_plan(args)
    options = time_options(args)
    memory = estimate_memory(plan)
    # the one answer (gpuwork.estimate.decision): the profile line names what advise, offers and request name
    decision = decide(plan, time_options=options, constraints=Constraints(have=args.have) if args.have else None)
    match = decision.match if decision.fits else match_profile(plan, time_options=options)
    run_plan = match.fitted_plan or plan
    warnings: list[Msg] = []
    if args.gpu:
        gpu = get_gpu(args.gpu)
        run_plan = plan
        if memory.device_total_bytes > usable_memory_bytes(gpu):
            warnings.append(msg("cli.plan.gpu_too_small", need_bytes=memory.device_total_bytes,
                                gpu=gpu.display_name, usable_bytes=usable_memory_bytes(gpu)))
    else:
        gpu = get_gpu(match.gpu_id) if match.gpu_id else get_gpu("h100_sxm")
    nodes = -(-run_plan.gpus // 8)
    time = (match.time if decision.fits and not args.gpu and match.time is not None else
            estimate_time(run_plan, gpu, nodes=nodes, network="ib-ndr-400g" if nodes > 1 else None, **options))
    curve = scaling(run_plan, gpu, **options)
    disk = estimate_disk(plan, compression_ratio=args.compression_ratio)
    fitting = evaluate_offers(plan, include_unfit=False, time_options=options)
    offers = fitting[: args.offers]
    # --check: with --gpu, that GPU must hold the plan; else some hardware profile or catalog offer must
    fits = not warnings if args.gpu else (match.profile is not None or bool(fitting))
    band = time_band(time, gpu)  # the held-out track record beside the estimate
    status = EXIT_NO_FIT if args.check and not fits else 0
    if args.json:
        out = {"plan": plan.as_dict(), "memory": memory.as_dict(), "profile": match.as_dict(),
               "decision": decision.as_dict(),
               "time": {"gpu_id": gpu.gpu_id, "plan": run_plan.as_dict(), **time.as_dict(),
                        "track_record": band.as_dict()},
               "scaling": [point.as_dict() for point in curve],
               "disk": disk.as_dict(), "offers": [r.as_dict() for r in offers], "fits": fits}
        print(json.dumps(with_mapping(out, args), indent=2, default=str))
        return status
    print(format_plan_report(PlanReport(plan, memory, match, run_plan, time, disk, offers, curve, band), lang))
    if args.have:  # on the user's own cards: the answer there (time, no rental cost)
        print("\n" + render(decision.summary, lang))
    for warning in [*memory.warnings, *warnings]:
        print(text("cli.warning", lang, text=render(warning, lang)), file=sys.stderr)
    if status:
        print(text("cli.check.no_fit", lang), file=sys.stderr)
    return status


@dataclass(frozen=True)
class PlanReport:
    """What `gpuwork plan` reports: the plan as written and the estimates for the setup it runs on."""

    plan: TrainPlan  # as written
    memory: Any  # estimate_memory(plan)
    match: Any  # the profile of the one answer
    run_plan: TrainPlan  # the plan as it runs (the answer's count and sharding)
    time: Any  # estimate_time of run_plan
    disk: Any  # estimate_disk(plan)
    offers: Sequence[Any] = ()  # the cheapest fitting offers
    scaling: Sequence[Any] = ()  # throughput by GPU count
    band: Any = None  # gpuwork.sizing.time_band(time): the held-out track record, shown under the total


def _weight_decay_line(plan: TrainPlan, lang: str) -> list[str]:
    """The optimizer's weight decay as priced, when the plan states it or its stack's default is not 0."""
    value = plan.weight_decay_in_effect
    if plan.weight_decay is None and value == 0:
        return []
    code = "cli.plan.weight_decay" if plan.weight_decay is not None else "cli.plan.weight_decay_default"
    return [text(code, lang, value=f"{value:g}")]


def format_plan_report(report: PlanReport, lang: str = "en") -> str:
    """The `gpuwork plan` report: memory, profile, time (where a step goes, throughput by GPU count),
    communication, data, disk, offers (in ``lang``)."""
    def say(code: str, **params: Any) -> str:
        return text(code, lang, **params)

    p, memory, match, run_plan, disk = report.plan, report.memory, report.match, report.run_plan, report.disk
    offers, scaling = report.offers, report.scaling
    lines = [
        say("cli.plan.header", model=p.model, method=p.method, precision=p.precision, optimizer=p.optimizer,
            seq_len=p.seq_len, batch=p.batch_size, grad_accum=p.grad_accum, gpus=p.gpus, sharding=p.sharding,
            checkpointing=checkpointing_note(p)),
        say("cli.plan.data", tokens=p.dataset_tokens, epochs=p.epochs, every=p.checkpoint_every_steps,
            kept=p.checkpoints_kept),
        say("stack.label", stack=run_plan.stack.value),  # the stack every estimate below is priced with
        *_weight_decay_line(run_plan, lang),
        "",
        say("cli.plan.memory"),
        f"  {say('cli.plan.device_total'):33s}{fmt_gib(memory.device_total_bytes, lang)}  "
        f"{say('cli.plan.peak_at', phase=memory.peak_phase)}",
        "",
    ]
    if match.profile is not None:
        lines.append(say("cli.plan.profile", profile_id=match.profile.profile_id, name=match.profile.name,
                         gpus=match.gpus, gpu=match.gpu_name, mode=match.profile.mode))
    else:
        lines.append(say("cli.plan.no_profile"))
    lines += [f"  + {r}" for r in render_all(match.reasons, lang)]
    lines += [f"  - {say('cli.plan.rejected', profile_id=k, why=v)}" for k, v in sorted(match.rejected.items())]
    if match.changes:
        lines.append("  " + say("cli.plan.changes", changes=match.changes))
    lines += ["  " + say("cli.plan.check", what=c) for c in match.checks]
    t = report.time
    lines += [
        "",
        say("cli.plan.time", gpus=run_plan.gpus, gpu=t.gpu_name, peak=t.peak, tflops=t.peak_flops_per_gpu / 1e12,
            mfu=t.mfu.value, source=t.mfu.source),
        f"  {say('cli.plan.flops'):33s}{say('cli.plan.flops_value', flops=t.flops_per_token.total, note=t.flops_per_token.note)}",
        "  " + say("cli.plan.mfu", note=t.mfu.note),
        "  " + say("cli.plan.step", compute_s=t.compute_s, optimizer_s=t.optimizer_s, exposed_s=t.comm.exposed_s,
                   step_s=t.step_time_s),
        "  " + say("cli.plan.breakdown", stack=t.stack, parts=step_breakdown(t)),
        f"  {say('cli.plan.throughput'):33s}{say('cli.plan.throughput_value', tokens_s=t.tokens_per_s, steps=t.steps)}",
        "  " + say("cli.plan.total", train_s=t.train_s, eval_s=t.eval_s, checkpoints=t.checkpoints,
                   checkpoint_s=t.checkpoint_s, margin_s=t.margin_s, total_s=t.total_s, gpu_hours=t.gpu_hours),
        *("  " + render(m, lang) for m in (band_messages(report.band, t) if report.band else ())),
        *(["  " + say("cli.plan.scaling", gpu=t.gpu_name, points=tuple(
            msg("cli.plan.scaling_point", gpus=pt.gpus, tokens_s=pt.tokens_per_s_per_gpu) for pt in scaling))]
          if scaling else []),
        "  " + say("cli.plan.communication", verdict=t.comm.verdict),
        "  " + say("cli.plan.data_feed", verdict=t.data.verdict),
        "",
        say("cli.plan.disk", total_bytes=disk.recommended_bytes),
    ]
    for item in disk.lines:
        lines.append(f"  {render(item.label, lang):44s}{fmt_size(item.bytes, lang):>10s}  {render(item.rule, lang)}")
    lines.append(f"  {say('disk.label.margin'):44s}{fmt_size(disk.margin_bytes, lang):>10s}")
    lines += ["  " + say("cli.plan.note", note=n) for n in disk.notes]
    if offers:
        lines += ["", say("cli.plan.offers")]
        lines += [_offer_line(r, lang) for r in offers]
    for warning in t.warnings:
        lines.append(say("cli.plan.warning", warning=warning))
    return "\n".join(lines)


# -- offers -----------------------------------------------------------------------------------------


def _offer_header(lang: str) -> str:
    def col(key: str) -> str:
        return text(f"cli.offers.col.{key}", lang)

    per_param = text("offer.col.state_bytes_short", lang)
    return (f"{col('provider'):18s}{col('per_node'):>9s}  {col('gpu'):24s}{col('mode'):18s}{col('region'):8s}"
            f"{col('price'):>8s}{col('gpus'):>6s} "
            f"{col('sharding'):13s}{per_param:>8s}{col('time'):>16s}{col('cost'):>12s}  {col('notes')}")


def _sharding_cell(plan: TrainPlan) -> str:
    """The sharding, with the shard group's size after a slash when a hybrid sharding runs several groups."""
    if plan.several_shard_groups:
        return f"{plan.sharding.value}/{plan.shard_ranks}"
    return plan.sharding.value


def _hybrid_note(results: list[Any], lang: str) -> str | None:
    """The line that reads "hsdp/8" when a row shows one."""
    groups = sorted({r.fit.plan.shard_ranks for r in results if r.fits and r.fit.plan.several_shard_groups})
    return text("cli.offers.hybrid_note", lang, groups=", ".join(str(g) for g in groups)) if groups else None


def _state_bytes(plan: TrainPlan, lang: str) -> str:
    """Bytes per trained parameter the row's sharding keeps (estimate.memory.state_bytes_per_param), or a dash."""
    from gpuwork.estimate.memory import state_bytes_per_param

    per_param = state_bytes_per_param(plan)
    return fmt_int(per_param, lang) if per_param is not None else MISSING


def _offer_line(r: Any, lang: str = "en") -> str:
    o = r.offer
    mode = text("cli.offers.mode", lang, mode=o.mode)
    region = text("ui.region_option", lang, value=o.region)
    price = fmt_number(o.price_per_gpu_hour, lang, 2)
    # the offer as its readable name says it (provider: N x GPU per node, mode, region), never its catalog id
    offer = (f"{o.provider or MISSING:18s}{o.gpus_per_node:>9d}  {o.gpu.display_name:24s}{mode:18s}{region:8s}"
             f"{price:>8s}")
    if not r.fits:
        return (f"{offer}"
                f"{MISSING:>6s} {MISSING:13s}{MISSING:>8s}{MISSING:>16s}{MISSING:>12s}  {render(r.fit.reason, lang)}")
    notes = []
    if r.fit.changes:
        notes.append(", ".join(render_all(r.fit.changes, lang)))
    if r.expected_preemptions and not math.isfinite(r.expected_preemptions):  # the run would never get ahead
        notes.append(text("offer.preemptions_outpace_checkpoints", lang) + "; "
                     + text("cli.offers.checkpoint_every", lang, steps=r.recommended_checkpoint_every_steps))
    elif r.expected_preemptions:
        notes.append(text("cli.offers.preemptions", lang, preemptions=r.expected_preemptions,
                          steps=r.recommended_checkpoint_every_steps))
    if r.meets_deadline is False:
        notes.append(text("cli.offers.misses_deadline", lang))
    return (f"{offer}"
            f"{r.fit.plan.gpus:>6d} {_sharding_cell(r.fit.plan):13s}{_state_bytes(r.fit.plan, lang):>8s}"
            f"{fmt_duration(r.expected_total_s, lang):>16s}"
            f"{fmt_usd(r.expected_cost_usd, lang):>12s}  {'; '.join(notes)}")


def _cmd_offers(args: argparse.Namespace) -> int:
    from gpuwork.estimate.decision import Constraints
    from gpuwork.estimate.offers import DEFAULT_PREEMPTION_RATE_PER_HOUR, DEFAULT_SAFETY_MARGIN
    from gpuwork.facts.catalog import load_offers
    from gpuwork.sizing import decide, evaluate_offers

    if args.sort == "deadline" and args.deadline_hours is None:
        raise PlanError("deadline_s", msg("error.cli.deadline_hours"))
    plan = full_plan(args)
    rate = args.preemption_rate if args.preemption_rate is not None else DEFAULT_PREEMPTION_RATE_PER_HOUR
    offers = load_offers(args.catalog) if args.catalog else None
    margin = args.safety_margin if args.safety_margin is not None else DEFAULT_SAFETY_MARGIN
    deadline_s = args.deadline_hours * HOUR_S if args.deadline_hours is not None else None
    filters = {k: v for k, v in (("min_vram_gb", args.min_vram), ("gpu_class", args.gpu_class), ("mode", args.mode),
                                 ("region", args.region), ("max_price_per_gpu_hour", args.max_price))
               if v is not None}
    # the one answer under the same filters; ranked by cost, the table prices the plan the answer runs (with its
    # change, if any), so its top row is the card, count, nodes and mode that plan, advise and request name
    decision = decide(plan, offers, time_options=time_options(args), safety_margin=margin,
                      preemption_rate_per_hour=rate,
                      constraints=Constraints(filters=filters, budget_usd=args.budget, deadline_s=deadline_s,
                                              have=args.have))
    # on owned cards (--have) the market table is the plan as written; the answer line says what runs on them
    priced = decision.changed_plan if args.sort == "cost" and args.have is None else plan
    results = evaluate_offers(
        priced, offers, safety_margin=margin, preemption_rate_per_hour=rate, sort=args.sort, deadline_s=deadline_s,
        budget_usd=args.budget, include_unfit=args.all, time_options=time_options(args), **filters)
    status = EXIT_NO_FIT if args.check and not any(r.fits for r in results) else 0
    if args.limit:
        results = results[: args.limit]
    if args.json:
        rows = [r.as_dict() for r in results]
        # with --from, the mapping travels too: {"from": ..., "offers": [...]}; without, the list as always
        mapping = getattr(args, "config_mapping", None)
        if args.have is not None:  # the answer on the owned cards is not a market row: it travels beside them
            out: Any = {"decision": decision.as_dict(), "offers": rows, **({"from": mapping} if mapping else {})}
        else:
            out = rows if mapping is None else {"from": mapping, "offers": rows}
        print(json.dumps(out, indent=2, default=str))
        return status
    lang = verb_lang(args)
    print(text("cli.offers.header", lang, model=plan.model, method=plan.method, seq_len=plan.seq_len,
               batch=plan.batch_size, tokens=plan.dataset_tokens, epochs=plan.epochs, sort=args.sort,
               stack=msg("stack.label", stack=plan.stack.value)))
    if not results:
        print(text("cli.offers.none", lang))
    else:
        print(_offer_header(lang))
        for r in results:
            print(_offer_line(r, lang))
        print(text("offer.state_bytes_note", lang))
        if (note := _hybrid_note(results, lang)) is not None:
            print(note)
    if results or args.have is not None:
        print(render(decision.summary, lang))
    if status:
        print(text("cli.check.no_fit", lang), file=sys.stderr)
    return status


# -- request ----------------------------------------------------------------------------------------


def _cmd_request(args: argparse.Namespace) -> int:
    from gpuwork.estimate.decision import Constraints
    from gpuwork.present.request import rental_request
    from gpuwork.sizing import decide

    plan = full_plan(args)
    record = load_record(args.record) if args.record else None
    # the one answer: the request asks for the card, count, mode and changes that plan, advise and offers show
    decision = decide(plan, time_options=time_options(args), constraints=Constraints(
        budget_usd=args.budget, rental_period_s=args.rent_days * 86400 if args.rent_days else None, have=args.have))
    owned = decision.fits and args.have is not None  # owned cards: that card, count and changes, no rental price
    req = rental_request(plan, match=decision.match if decision.fits else None,
                         offer=None if owned else decision.offer, include_offer=not owned, lang=args.lang,
                         start_date=args.start_date, budget_usd=args.budget, rent_period_days=args.rent_days,
                         trial_required=not args.no_trial, context_in_config=not args.explicit_context,
                         compression_ratio=args.compression_ratio, trial_record=record)
    if args.format == "json":
        out = with_mapping(req.as_dict(), args)
        if args.have is not None:
            out["decision"] = decision.as_dict()
        print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
    else:
        print(req.text)
        if args.have is not None:
            print("\n" + render(decision.summary, args.lang))
    return 0


# -- wiring -----------------------------------------------------------------------------------------


def register(subparsers: Any, lang: str = "en") -> None:
    """Add `plan`, `offers` and `request` to a gpuwork subparsers object, their help in ``lang``."""
    p = sizing_parser(subparsers, "plan", "cli.help.plan.summary", lang)
    p.add_argument("--gpu", help=text("cli.help.plan.gpu", lang))
    have_argument(p, lang)
    p.add_argument("--offers", type=int, default=5, metavar="N", help=text("cli.help.plan.offers", lang))
    output_arguments(p, _cmd_plan, lang, lang_help="cli.help.lang.report")

    p = sizing_parser(subparsers, "offers", "cli.help.offers.summary", lang)
    f = p.add_argument_group(text("cli.help.offers.title", lang))
    f.add_argument("--max-price", type=float, metavar="USD", help=text("cli.help.offers.max_price", lang))
    f.add_argument("--mode", action="append", help=text("cli.help.offers.mode", lang))
    f.add_argument("--class", dest="gpu_class", action="append", help=text("cli.help.offers.gpu_class", lang))
    f.add_argument("--region", action="append", help=text("cli.help.offers.region", lang))
    f.add_argument("--min-vram", type=float, metavar="GB", help=text("cli.help.offers.min_vram", lang))
    f.add_argument("--budget", type=float, metavar="USD", help=text("cli.help.offers.budget", lang))
    f.add_argument("--sort", choices=SORT_KEYS, default="cost")
    f.add_argument("--deadline-hours", type=float, metavar="H", help=text("cli.help.offers.deadline_hours", lang))
    f.add_argument("--preemption-rate", type=float, default=None, metavar="PER_H",
                   help=text("cli.help.offers.preemption_rate", lang))
    f.add_argument("--safety-margin", type=float, metavar="FRACTION", help=text("cli.help.offers.safety_margin", lang))
    f.add_argument("--catalog", metavar="FILE", help=text("cli.help.offers.catalog", lang))
    f.add_argument("--all", action="store_true", help=text("cli.help.offers.all", lang))
    f.add_argument("--limit", type=int, metavar="N", help=text("cli.help.offers.limit", lang))
    have_argument(f, lang)
    output_arguments(p, _cmd_offers, lang, lang_help="cli.help.lang.table", json_help="cli.help.offers.json")

    p = sizing_parser(subparsers, "request", "cli.help.request.summary", lang, timed=False)
    p.add_argument("--lang", choices=("ru", "en"), default="en")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--start-date", type=_iso_date, metavar="YYYY-MM-DD")
    p.add_argument("--budget", type=float, metavar="USD")
    p.add_argument("--rent-days", type=int, metavar="DAYS", help=text("cli.help.request.rent_days", lang))
    p.add_argument("--no-trial", action="store_true", help=text("cli.help.request.no_trial", lang))
    p.add_argument("--explicit-context", action="store_true", help=text("cli.help.request.explicit_context", lang))
    p.add_argument("--record", metavar="FILE", help=text("cli.help.request.record", lang))
    have_argument(p, lang)
    p.set_defaults(func=escaped_output(_cmd_request))
