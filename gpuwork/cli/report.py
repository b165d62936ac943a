"""Command line: ``gpuwork report --plan plan.json --out DIR`` — the workbook as offline HTML.

``register(subparsers, lang)`` adds the subcommand to gpuwork's parser.
Errors print one line on stderr and exit with status 2 (no traceback), as everywhere in ``gpuwork.cli``.

    gpuwork report --plan plan.json --out reports/llama-lora
    gpuwork report --out /tmp/report --notebooks 01_sizing,03_offers
    gpuwork report --out /tmp/report-ru --lang ru

``gpuwork report --help`` explains the plan file (JSON with TrainPlan fields) and ``--lang``.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from gpuwork.cli.args import FlagValueError, escaped_output
from gpuwork.message import msg
from gpuwork.present.messages import text
from gpuwork.units import LANGS


def _paragraphs(text: str, width: int = 100) -> str:
    """Each line of ``text`` wrapped as a paragraph, a blank line between (argparse keeps them as written)."""
    return "\n\n".join(textwrap.fill(line, width) for line in text.splitlines() if line.strip())


def _notebook_list(text: str) -> tuple[str, ...]:
    from gpuwork.ui.report import NOTEBOOKS

    names = tuple(n.strip().removesuffix(".ipynb") for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in NOTEBOOKS]
    if not names or unknown:
        raise FlagValueError(msg("error.args.notebooks", value=repr(text), choices=", ".join(NOTEBOOKS)))
    return names


def _cmd_report(args: argparse.Namespace) -> int:
    from gpuwork.facts import reading
    from gpuwork.facts.model import spec_for_plan
    from gpuwork.facts.planfile import load_plan
    from gpuwork.plan import TrainPlan
    from gpuwork.ui.report import NOTEBOOKS, PLOTLY_FILE, build_report

    # the folder resolved first: a dangling link, a loop or a file is refused before anything is made, and
    # nothing the report writes may lead out of it through a link left inside
    out = reading.output_folder(args.out)
    notebooks = args.notebooks or NOTEBOOKS
    reading.inside_folder(out, ["index.html", PLOTLY_FILE, "trials",
                                *(f"{n}.{ext}" for n in notebooks for ext in ("ipynb", "html"))])
    plan = load_plan(args.plan) if args.plan else TrainPlan()
    spec_for_plan(plan)  # an unknown or broken model is the user's error (exit 2), before any page is built
    result = build_report(plan, out, notebooks=notebooks, steps=args.steps,
                          progress=not args.no_progress and sys.stderr.isatty() or args.progress,
                          timeout_s=args.timeout, lang=args.lang)
    for page in result.html:
        print(page)
    print(text("cli.report.done", args.lang, pages=len(result.html), out=str(result.out_dir),
               elapsed_s=result.elapsed_s, index=str(result.index)), file=sys.stderr)
    return 0


def register(subparsers: Any, lang: str = "en") -> None:
    """Add `report` to a gpuwork subparsers object, its help in ``lang``."""
    p = subparsers.add_parser("report", help=text("cli.help.report.summary", lang),
                              description=_paragraphs(text("cli.help.report.description", lang)),
                              epilog=_paragraphs(text("cli.help.report.epilog", lang)),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", metavar="FILE", help=text("cli.help.report.plan", lang))
    p.add_argument("--out", metavar="DIR", required=True, help=text("cli.help.report.out", lang))
    p.add_argument("--notebooks", type=_notebook_list, metavar="NAMES", help=text("cli.help.report.notebooks", lang))
    p.add_argument("--steps", type=int, default=5, metavar="N", help=text("cli.help.report.steps", lang))
    p.add_argument("--timeout", type=float, default=900, metavar="S", help=text("cli.help.report.timeout", lang))
    p.add_argument("--progress", action="store_true", help=text("cli.help.report.progress", lang))
    p.add_argument("--no-progress", action="store_true", help=text("cli.help.report.no_progress", lang))
    p.add_argument("--lang", choices=LANGS, default="en", help=text("cli.help.lang.pages", lang))
    p.set_defaults(func=escaped_output(_cmd_report, stderr=False))
