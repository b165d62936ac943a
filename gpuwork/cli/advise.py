"""Command line: ``gpuwork advise | fit`` — what to change so the run fits or costs less, and the fit matrix.

    gpuwork advise --model mistral-7b --method qlora --mode on-demand --lang ru
    gpuwork fit --model mistral-7b --method qlora --grad-checkpointing --json

Both verbs print catalog messages in ``--lang en|ru``; ``--json`` keeps codes and numbers. The time the
computation took is printed (and is in the JSON as ``elapsed_ms``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from gpuwork.cli import common
from gpuwork.cli.args import with_mapping
from gpuwork.errors import EXIT_NO_FIT
from gpuwork.message import msg
from gpuwork.present.messages import render, text
from gpuwork.units import MISSING, fmt_duration, fmt_number, fmt_usd

GIB = 2**30


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in (("mode", args.mode), ("region", args.region)) if v}


def _cmd_advise(args: argparse.Namespace) -> int:
    from gpuwork.estimate.decision import Constraints
    from gpuwork.sizing import advise, decide

    plan = common.full_plan(args)
    lang = common.verb_lang(args)
    start = time.perf_counter()
    if args.have:  # the user's own cards: the advisor picks changes for fit and speed on them
        decision = decide(plan, limit=args.limit, time_options=common.time_options(args),
                          constraints=Constraints(have=args.have))
        advice = decision.advice
    else:
        advice = advise(plan, limit=args.limit, time_options=common.time_options(args), **_filters(args))
        # the one answer from this advice (gpuwork.estimate.decision): what plan, offers and request name too
        decision = decide(plan, advice=advice, time_options=common.time_options(args),
                          constraints=Constraints(filters=_filters(args)))
    elapsed_ms = (time.perf_counter() - start) * 1000
    # --check: the plan as it is fits no offer (the suggestions say what would make it fit)
    status = EXIT_NO_FIT if args.check and advice.baseline.offer is None else 0
    if args.json:
        out = {**advice.as_dict(), "elapsed_ms": elapsed_ms, "stack": plan.stack.value,
               "decision": decision.as_dict(),
               "rendered": {"stack": text("stack.label", lang, stack=plan.stack.value),
                            "status": render(advice.status, lang), "decision": render(decision.summary, lang),
                            "suggestions": [render(decision.suggestion_line(s), lang) for s in advice.suggestions]}}
        print(json.dumps(with_mapping(out, args), indent=2, ensure_ascii=False))
        return status
    print(text("stack.label", lang, stack=plan.stack.value))
    if not args.have:  # the status prices the plan on an offer; on owned cards the answer says it all
        print(render(advice.status, lang))
    print(render(decision.summary, lang))
    if not advice.suggestions:
        print(text("advice.none", lang))
    else:
        print(text("cli.advise.header", lang, tried=advice.tried, elapsed_ms=elapsed_ms))
        for rank, s in enumerate(advice.suggestions, start=1):
            print(text("cli.advise.item", lang, rank=rank, summary=decision.suggestion_line(s)))
            if s.combines_with:
                print("   " + text("advice.combines", lang, keys=", ".join(s.combines_with)))
    if status:
        print(text("cli.check.no_fit", lang), file=sys.stderr)
    return status


def _cell_line(c: Any, lang: str, widths: tuple[int, ...]) -> str:
    memory = f"{fmt_number(c.device_total_bytes / GIB, lang, 1)} / {fmt_number(c.usable_bytes / GIB, lang, 1)}"
    if not c.fits:
        tail = [text("cli.fit.no", lang), "", "", "", ""]
    else:
        cost = fmt_usd(c.cost_usd, lang) if c.cost_usd is not None else MISSING
        if c.price_source == "typical":
            cost += f" ({text('cli.fit.typical', lang)})"
        tail = [fmt_number(c.headroom_bytes / GIB, lang, 1),
                f"{c.max_batch_size}{'+' if c.max_batch_capped else ''}",
                f"{c.max_seq_len}{'+' if c.max_seq_capped else ''}",
                fmt_duration(c.total_s, lang) if c.total_s is not None else MISSING, cost]
    cols = [c.gpu_name, str(c.gpus), c.plan.sharding.value, memory, *tail]
    return "  ".join(v.ljust(w) for v, w in zip(cols, widths, strict=True)).rstrip()


def _cmd_fit(args: argparse.Namespace) -> int:
    from gpuwork.sizing import fit_matrix

    plan = common.full_plan(args)
    lang = common.verb_lang(args)
    start = time.perf_counter()
    matrix = fit_matrix(plan, time_options=common.time_options(args), gpu_ids=args.gpu or None)
    elapsed_ms = (time.perf_counter() - start) * 1000
    if args.json:
        print(json.dumps(with_mapping({**matrix.as_dict(), "elapsed_ms": elapsed_ms}, args), indent=2,
                         ensure_ascii=False))
        return 0
    print(text("cli.fit.header", lang, model=plan.model, method=plan.method, seq_len=plan.seq_len,
               batch=plan.batch_size, cells=len(matrix.cells), elapsed_ms=elapsed_ms))
    print(text("stack.label", lang, stack=plan.stack.value))
    rows = [gpu for gpu in matrix.gpu_ids if args.all or any(c.fits for c in matrix.cells if c.gpu_id == gpu)]
    widths = (26, 2, 12, 15, 14, 10, 14, 14, 12)
    header = [text(f"cli.fit.col.{k}", lang) for k in ("gpu", "gpus", "sharding", "memory", "headroom", "batch",
                                                        "seq", "time", "cost")]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for gpu in rows:
        for c in matrix.cells:
            if c.gpu_id == gpu:
                print(_cell_line(c, lang, widths))
    best = matrix.cheapest()
    if best is not None:
        print(render(msg("cli.fit.cheapest", gpus=best.gpus, gpu=best.gpu_name, run_s=best.total_s,
                         cost_usd=best.cost_usd), lang))
    return 0


def register(subparsers: Any, lang: str = "en") -> None:
    """Add `advise` and `fit` to a gpuwork subparsers object, their help in ``lang``."""
    p = common.sizing_parser(subparsers, "advise", "cli.help.advise.summary", lang)
    p.add_argument("--mode", action="append", help=text("cli.help.offers.mode", lang))
    p.add_argument("--region", action="append", help=text("cli.help.offers.region", lang))
    common.have_argument(p, lang)
    p.add_argument("--limit", type=int, default=5, metavar="N", help=text("cli.help.advise.limit", lang))
    common.output_arguments(p, _cmd_advise, lang, lang_help="cli.help.lang.advice")

    p = common.sizing_parser(subparsers, "fit", "cli.help.fit.summary", lang)
    p.add_argument("--gpu", action="append", help=text("cli.help.fit.gpu", lang))
    p.add_argument("--all", action="store_true", help=text("cli.help.fit.all", lang))
    common.output_arguments(p, _cmd_fit, lang, lang_help="cli.help.lang.table", check=False)


__all__ = ["register"]
