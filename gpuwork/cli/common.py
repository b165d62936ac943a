"""What the sizing verbs share (``plan``, ``offers``, ``request``, ``advise``, ``fit``): their parser with the plan,
data and time flags, ``--have``, the output flags, and the plan and time options read back from them.

One copy each, so that a verb module never imports another verb module's helpers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gpuwork.cli.args import FlagValueError, check_argument, escaped_output, plan_arguments, plan_from_args
from gpuwork.errors import GpuworkError, PlanError
from gpuwork.message import Msg, msg
from gpuwork.plan import UPPER_BOUNDS, TrainPlan
from gpuwork.present.messages import text
from gpuwork.units import parse_count, parse_size

# -- argument types ---------------------------------------------------------------------------------


def checkpointing_note(plan: TrainPlan) -> Msg | None:
    """The headers' word on gradient checkpointing: what it recomputes, or nothing when it is off."""
    if not plan.grad_checkpointing:
        return None
    what = msg(f"cli.checkpointing.{plan.recompute.value}")
    return what if plan.recompute_every == 1 else msg("cli.checkpointing.one_in", what=what, every=plan.recompute_every)


def flag_error(exc: GpuworkError, unread: str = "", instead: Msg | None = None) -> Exception:
    """A flag's error in the catalog's words: ``instead`` when ``exc`` has the code ``unread``, else its own
    message; an error raised without a code stays itself (argparse calls the value invalid)."""
    if exc.msg is None:
        return exc
    return FlagValueError(instead if instead is not None and exc.msg.code == unread else exc.msg)


def size_bytes(text: str) -> int:
    """'200GB', '1.5 TB', '500MiB', '2e11' -> bytes (decimal GB/TB, binary GiB/MiB; gpuwork.units.parse_size)."""
    try:
        return parse_size(text, "dataset_bytes", maximum=UPPER_BOUNDS["dataset_bytes"])
    except PlanError as exc:  # the flag is named by argparse: say what a size looks like, or the range
        raise flag_error(exc, "error.input.not_size", msg("error.args.size", value=repr(text))) from None


def token_count(text: str) -> int:
    """'50B', '100M', '5e9', '2M tokens' -> a whole number of tokens (gpuwork.units.parse_count)."""
    try:
        return parse_count(text, "dataset_tokens", maximum=UPPER_BOUNDS["dataset_tokens"])
    except PlanError as exc:
        raise flag_error(exc, "error.input.not_count", msg("error.args.tokens", value=repr(text))) from None


def have_cards(value: str) -> tuple[int, Any]:
    """'1xrtx4090', '2 x A100 80GB SXM', '1×RTX 4090' -> (count, GpuSpec): the cards the user owns (--have)."""
    from gpuwork.errors import CatalogError
    from gpuwork.sizing import parse_have

    try:
        have = parse_have(value)
    except (PlanError, CatalogError) as exc:
        raise flag_error(exc) from None
    if have is None:
        raise FlagValueError(msg("error.args.have", value=repr(value)))
    return have


# -- flags ------------------------------------------------------------------------------------------


def data_arguments(parser: argparse.ArgumentParser, lang: str = "en") -> None:
    g = parser.add_argument_group(text("cli.help.data.title", lang))
    g.add_argument("--dataset-tokens", type=token_count, metavar="N", help=text("cli.help.data.dataset_tokens", lang))
    g.add_argument("--dataset-bytes", type=size_bytes, metavar="SIZE", help=text("cli.help.data.dataset_bytes", lang))
    g.add_argument("--compression-ratio", type=float, default=1.0, metavar="X",
                   help=text("cli.help.data.compression_ratio", lang))
    g.add_argument("--epochs", type=float)
    g.add_argument("--eval-fraction", type=float, help=text("cli.help.data.eval_fraction", lang))
    g.add_argument("--checkpoint-every", type=int, dest="checkpoint_every_steps", metavar="STEPS")
    g.add_argument("--checkpoints-kept", type=int)


def time_arguments(parser: argparse.ArgumentParser, lang: str = "en") -> None:
    g = parser.add_argument_group(text("cli.help.time.title", lang))
    g.add_argument("--mfu", type=float, help=text("cli.help.time.mfu", lang))
    g.add_argument("--loader-tokens-per-s", type=float, help=text("cli.help.time.loader", lang))
    g.add_argument("--disk-write-gbs", type=float, help=text("cli.help.time.disk_write", lang))


def sizing_parser(subparsers: Any, verb: str, summary: str, lang: str = "en", *,
                  timed: bool = True) -> argparse.ArgumentParser:
    """A sizing verb's parser (help ``summary``, a catalog code): the plan and data flags, and the time flags
    when ``timed``, their help in ``lang``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(verb, help=text(summary, lang))
    plan_arguments(parser, lang)
    data_arguments(parser, lang)
    if timed:
        time_arguments(parser, lang)
    return parser


def have_argument(group: argparse._ActionsContainer, lang: str = "en") -> None:
    """--have N×GPU: the cards the user owns."""
    group.add_argument("--have", type=have_cards, metavar="N×GPU", help=text("cli.help.have", lang))


def output_arguments(parser: argparse.ArgumentParser, command: Callable[[argparse.Namespace], int], lang: str = "en",
                     *, lang_help: str, json_help: str = "cli.help.json", check: bool = True) -> None:
    """--lang and --json (their help: catalog codes), --check where the verb has one, and the command it runs."""
    parser.add_argument("--lang", choices=("en", "ru"), default="en", help=text(lang_help, lang))
    parser.add_argument("--json", action="store_true", help=text(json_help, lang))
    if check:
        check_argument(parser, lang)
    parser.set_defaults(func=escaped_output(command))


# -- what the flags say -----------------------------------------------------------------------------


def verb_lang(args: argparse.Namespace) -> str:
    return getattr(args, "lang", None) or "en"


def full_plan(args: argparse.Namespace) -> TrainPlan:
    """TrainPlan from --plan/flags (gpuwork.cli.plan_from_args) plus the data and schedule flags."""
    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT

    plan = plan_from_args(args)
    changes: dict[str, Any] = {}
    for name in ("dataset_tokens", "dataset_bytes", "epochs", "eval_fraction", "checkpoint_every_steps",
                 "checkpoints_kept"):
        value = getattr(args, name, None)
        if value is not None:
            changes[name] = value
    if changes.get("epochs") is not None and float(changes["epochs"]).is_integer():
        changes["epochs"] = int(changes["epochs"])
    if "dataset_bytes" in changes and "dataset_tokens" not in changes:
        ratio = getattr(args, "compression_ratio", 1.0) or 1.0
        changes["dataset_tokens"] = max(1, round(changes["dataset_bytes"] * ratio / BYTES_PER_TOKEN_TEXT))
        print(text("cli.dataset_tokens_note", verb_lang(args), tokens=changes["dataset_tokens"],
                   bytes_per_token=BYTES_PER_TOKEN_TEXT), file=sys.stderr)
    return plan.replace(**changes) if changes else plan


def time_options(args: argparse.Namespace) -> dict[str, Any]:
    """The time estimator's options from --mfu, --loader-tokens-per-s and --disk-write-gbs."""
    options: dict[str, Any] = {}
    if getattr(args, "mfu", None) is not None:
        options["mfu"] = args.mfu
    if getattr(args, "loader_tokens_per_s", None) is not None:
        options["loader_tokens_per_s"] = args.loader_tokens_per_s
    if getattr(args, "disk_write_gbs", None) is not None:
        options["disk_write_bytes_s"] = args.disk_write_gbs * 1e9
    return options
