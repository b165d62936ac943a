"""Argument handling shared by every ``gpuwork`` verb: the parser, the plan flags, the plan file."""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys
import textwrap
from typing import Any

from gpuwork.errors import EXIT_USAGE, GpuworkError, PlanError
from gpuwork.estimate.timing import MFU_RANGE
from gpuwork.facts.planfile import read_plan_fields
from gpuwork.facts.reading import escape_chars
from gpuwork.message import Msg, msg
from gpuwork.plan import PLAN_RANGES, Stack, TrainPlan, field_names, plan_from_choices
from gpuwork.present.messages import LANGS, MessageError, render, text
from gpuwork.units import Range


def check_argument(parser: argparse.ArgumentParser, lang: str = "en") -> None:
    """--check: exit status 1 when nothing fits (plan, offers, advise), for scripts and CI."""
    parser.add_argument("--check", action="store_true", help=text(f"cli.help.check.{parser.prog.split()[-1]}", lang))


def with_mapping(out: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """A verb's JSON object with the --from mapping as "from" (what each file set, what defaulted)."""
    mapping = getattr(args, "config_mapping", None)
    return out if mapping is None else {**out, "from": mapping}


# The command line being parsed (set by gpuwork.cli.main): argparse reports a bad flag before --lang is read.
current_argv: list[str] = []


def argv_lang(argv: list[str] | None = None) -> str:
    """The --lang of a command line, read ahead of parsing ("en" unless it says --lang ru)."""
    argv = current_argv if argv is None else argv
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv) and argv[i + 1] in LANGS:
            return argv[i + 1]
        if arg.startswith("--lang=") and arg.split("=", 1)[1] in LANGS:
            return arg.split("=", 1)[1]
    return "en"


def error_line(message: str, lang: str) -> str:
    """"gpuwork: error: ..." in the reader's language: the one way every verb reports an error (control characters
    in it escaped: the message may quote what the user gave)."""
    return text("error.cli.line", lang, message=terminal_safe(message))


class FlagValueError(argparse.ArgumentTypeError):
    """A flag value that does not parse, with a message code, so the error can be said in the reader's language."""

    last: Msg | None = None  # argparse keeps only the text: the parser looks the message up here

    def __init__(self, message: Msg):
        FlagValueError.last = message
        super().__init__(render(message, "en"))


# argparse's own phrases (Python 3.11) -> catalog codes, for a command line that asked for another language
_ARGPARSE = (
    (re.compile(r"invalid (?P<kind>\w+) value: (?P<value>.+)"), "error.args.invalid_value"),
    (re.compile(r"invalid choice: (?P<value>.+) \(choose from (?P<choices>.+)\)"), "error.args.invalid_choice"),
    (re.compile(r"expected one argument"), "error.args.expected_one"),
    (re.compile(r"unrecognized arguments: (?P<value>.+)"), "error.args.unrecognized"),
    (re.compile(r"the following arguments are required: (?P<value>.+)"), "error.args.required"),
)


def _localized(message: str, lang: str) -> str:
    if lang == "en":
        return message
    match = re.fullmatch(r"argument (?P<arg>[^:]+): (?P<rest>.*)", message, flags=re.S)
    arg, rest = (match["arg"], match["rest"]) if match else (None, message)
    coded = FlagValueError.last
    if coded is not None and rest == render(coded, "en"):
        rest = render(coded, lang)
    else:
        for pattern, code in _ARGPARSE:
            found = pattern.fullmatch(rest)
            if found:
                try:
                    rest = text(code, lang, **found.groupdict())
                except MessageError:  # a phrase about a type the catalog does not name: leave argparse's words
                    pass
                break
    return text("error.args.argument", lang, arg=arg, message=rest) if arg else rest


# Every numeric flag is checked once, where it is parsed: float flags must be finite (argparse's float takes "nan"
# and "inf"), and each flag below must be in its range, both ends (gpuwork.units.Range, the one range mechanism of
# plans, flags and records). A key "VERB --flag" holds for one verb only. Plan fields (--seq-len, --gpus, ...)
# are checked by TrainPlan itself; the trial checks its --steps, --warmup, --memory-cap-gib and --price-per-hour
# in gpuwork.cli.trial. The ends are where a value stops being a run and becomes a typo: 1e-300 and 1e308 are
# refused like -1.
FLAG_BOUNDS: dict[str, Range] = {
    "--compression-ratio": Range(1, 100),  # unpacked size / downloaded size of the raw dataset
    "--epochs": PLAN_RANGES["epochs"],
    "--mfu": MFU_RANGE,  # a share of the dense peak, as estimate_time's mfu= takes it
    "--loader-tokens-per-s": Range(1, 1e12),
    "--disk-write-gbs": Range(1e-3, 10_000),
    "--offers": Range(0, 10_000),
    "--max-price": Range(0, 1_000),  # USD per GPU-hour; catalog prices stop at 1,000 too
    "--min-vram": Range(0, 4_096),  # GB per GPU, as the GPU table
    "--budget": Range(0.01, 1e9),  # USD
    "--deadline-hours": Range(0.01, 1e6),
    "--preemption-rate": Range(0, 1_000),
    "--safety-margin": Range(0, 1, high_open=True),
    "--limit": Range(1, 1_000_000),
    "--rent-days": Range(1, 36_500),
    "--nproc": Range(1, 4_096),
    "--seed": Range(0, 2**32 - 1),
    "--timeout-s": Range(0, 7 * 86_400, low_open=True),
    "--dataset-tokens": Range(1, PLAN_RANGES["dataset_tokens"].high),
    "--port": Range(1, 65_535),
    "--pool": Range(0, 1_000),
    "report --steps": Range(1, 10_000),
    "report --timeout": Range(1, 7 * 86_400),  # seconds per notebook: a second to a week
}


def finite_float(text: str) -> float:
    """argparse's float without NaN and infinity (registered for every ``type=float`` flag of a Parser)."""
    value = float(text)  # a ValueError reads "invalid float value: ..." as argparse says it
    if not math.isfinite(value):
        raise FlagValueError(msg("error.flag.not_finite", value=repr(text)))
    return value


def seq_length(text: str) -> int:
    """--seq-len as people write it: 4096, 4k (4,096), 32k (32,768) (gpuwork.sizing.parse_seq_len)."""
    from gpuwork.errors import PlanError
    from gpuwork.sizing import parse_seq_len

    try:
        return parse_seq_len(text, "seq_len")
    except PlanError:
        raise FlagValueError(msg("error.flag.not_seq_len", value=repr(text))) from None


def _bound_problem(value: float, bounds: Range) -> Msg | None:
    if bounds.problem(value) is None:
        return None
    code = "error.flag.range" + ("_above" if bounds.low_open else "") + ("_below" if bounds.high_open else "")
    return msg(code, value=repr(value), minimum=bounds.low, maximum=bounds.high)


def terminal_safe(text: str) -> str:
    """``text`` with every control and invisible character a terminal acts on escaped (\\x1b, \\u202e; newline
    and tab kept: ``facts.reading.UNSAFE_IN_TEXT``): what the user gave, shown as data."""
    return escape_chars(text)


class _SafeStream:
    """A text stream whose writes are ``terminal_safe``: escape bytes in a file or flag never reach the terminal."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(terminal_safe(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def escaped_output(func: Any, *, stderr: bool = True) -> Any:
    """A verb's function whose stdout (and stderr unless ``stderr=False``) is ``terminal_safe`` while it runs."""

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> Any:
        saved = sys.stdout, sys.stderr
        sys.stdout = _SafeStream(saved[0])
        if stderr:
            sys.stderr = _SafeStream(saved[1])
        try:
            return func(args)
        finally:
            sys.stdout, sys.stderr = saved

    return run


@functools.cache
def _help_formatter(base: type[argparse.HelpFormatter], usage_prefix: str) -> type[argparse.HelpFormatter]:
    """``base`` with "usage: " in the catalog's words (argparse takes it from its own gettext catalog), and help
    lines that never break inside a hyphenated name (a stack such as ``dle-pytorch`` stays whole)."""

    class HelpFormatter(base):  # type: ignore[valid-type,misc]
        def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
            super().add_usage(usage, actions, groups, usage_prefix if prefix is None else prefix)

        def _split_lines(self, text: str, width: int) -> list[str]:
            if base._split_lines is not argparse.HelpFormatter._split_lines:  # RawText keeps its own lines
                return super()._split_lines(text, width)
            return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    return HelpFormatter


class Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line (exit 2), in the language the command line asks for.

    ``lang`` is the language of the help: argparse's own words ("usage: ", "options", -h's help) come from the
    catalog (cli.help.*), so ``--help --lang ru`` is Russian and English stays argparse's text.
    """

    def __init__(self, *args: Any, lang: str = "en", **kwargs: Any) -> None:
        add_help = kwargs.pop("add_help", True)
        kwargs.setdefault("allow_abbrev", False)  # `estimate --gpu` must not be read as --gpus
        base = kwargs.pop("formatter_class", argparse.HelpFormatter)
        kwargs["formatter_class"] = _help_formatter(base, text("cli.help.usage", lang))
        kwargs["add_help"] = False  # added below, with its help text from the catalog
        super().__init__(*args, **kwargs)
        # the two groups argparse creates itself, titled in English by its own catalog
        self._positionals.title = text("cli.help.positionals", lang)
        self._optionals.title = text("cli.help.options", lang)
        if add_help:  # argparse's -h, with its help text from our catalog
            self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS,
                              help=text("cli.help.help", lang))
        self.register("type", float, finite_float)  # every `type=float` flag: NaN and inf are refused

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        namespace, extras = super().parse_known_args(args, namespace)
        verb = self.prog.split()[-1]
        for action in self._actions:  # each flag in its range (FLAG_BOUNDS), named in the one error line
            keys = [k for o in action.option_strings for k in (f"{verb} {o}", o) if k in FLAG_BOUNDS]
            value = getattr(namespace, action.dest, None) if keys else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                problem = _bound_problem(value, FLAG_BOUNDS[keys[0]])
                if problem is not None:
                    FlagValueError.last = problem
                    self.error(f"argument {'/'.join(action.option_strings)}: {render(problem, 'en')}")
        return namespace, extras

    def error(self, message: str) -> None:  # type: ignore[override]
        lang = argv_lang()
        line = text("error.args.see_help", lang, message=_localized(message, lang), prog=self.prog)
        self.exit(EXIT_USAGE, error_line(line, lang) + "\n")


def plan_arguments(parser: argparse.ArgumentParser, lang: str = "en") -> None:
    """The TrainPlan flags, their help in ``lang``."""
    def say(code: str) -> str:
        return text(f"cli.help.run.{code}", lang)

    g = parser.add_argument_group(say("title"))
    g.add_argument("--plan", metavar="FILE", help=say("plan"))
    g.add_argument("--from", dest="from_files", metavar="FILE", action="append", help=say("from"))
    g.add_argument("--model", help=say("model"))
    g.add_argument("--method", help=say("method"))
    g.add_argument("--task", help=say("task"))
    g.add_argument("--precision", help=say("precision"))
    g.add_argument("--optimizer", help=say("optimizer"))
    g.add_argument("--seq-len", type=seq_length, metavar="N", help=say("seq_len"))
    g.add_argument("--batch-size", type=int, help=say("batch_size"))
    g.add_argument("--grad-accum", type=int, help=say("grad_accum"))
    g.add_argument("--grad-checkpointing", action="store_true", default=None, help=say("grad_checkpointing"))
    g.add_argument("--recompute", help=say("recompute"))
    g.add_argument("--recompute-every", type=int, help=say("recompute_every"))
    g.add_argument("--attention", help=say("attention"))
    g.add_argument("--sdpa-backend", help=say("sdpa_backend"))
    g.add_argument("--trainable-layers", type=int, help=say("trainable_layers"))
    g.add_argument("--lora-r", type=int, help=say("lora_r"))
    g.add_argument("--lora-alpha", type=float, help=say("lora_alpha"))
    g.add_argument("--lora-dropout", type=float, help=say("lora_dropout"))
    g.add_argument("--lora-targets", help=say("lora_targets"))
    g.add_argument("--quant-type", help=say("quant_type"))
    g.add_argument("--no-double-quant", dest="double_quant", action="store_false", default=None,
                   help=say("double_quant"))
    g.add_argument("--no-kbit-upcast", dest="kbit_upcast", action="store_false", default=None,
                   help=say("kbit_upcast"))
    g.add_argument("--gpus", type=int, help=say("gpus"))
    g.add_argument("--sharding", help=say("sharding"))
    g.add_argument("--shard-group", dest="shard_group_gpus", type=int, metavar="N", help=say("shard_group"))
    g.add_argument("--comm-overlap", help=say("comm_overlap"))
    g.add_argument("--fsdp-wrap", help=say("fsdp_wrap"))
    g.add_argument("--zero-sync", help=say("zero_sync"))
    g.add_argument("--offload-optimizer", action="store_true", default=None, help=say("offload_optimizer"))
    g.add_argument("--offload-params", action="store_true", default=None, help=say("offload_params"))
    g.add_argument("--optimizer-impl", help=say("optimizer_impl"))
    g.add_argument("--no-foreach", dest="optimizer_impl", action="store_const", const="for-loop", default=None,
                   help=say("foreach"))
    g.add_argument("--stack", help=text("cli.help.run.stack", lang, stacks=" | ".join(Stack)))
    g.add_argument("--lengths", help=say("lengths"))
    g.add_argument("--input-require-grads", action="store_true", default=None, help=say("input_require_grads"))
    g.add_argument("--no-input-require-grads", dest="input_require_grads", action="store_false", default=None,
                   help=say("no_input_require_grads"))
    g.add_argument("--no-grad-clip", dest="grad_clip", action="store_false", default=None, help=say("grad_clip"))
    g.add_argument("--weight-decay", type=float, metavar="WD", help=say("weight_decay"))
    g.add_argument("--deterministic", action="store_true", default=None, help=say("deterministic"))
    g.add_argument("--launch-blocking", action="store_true", default=None, help=say("launch_blocking"))
    g.add_argument("--tf32", action="store_true", default=None, help=say("tf32"))
    g.add_argument("--fp8-linear", action="store_true", default=None, help=say("fp8_linear"))
    g.add_argument("--expandable-segments", action="store_true", default=None, help=say("expandable_segments"))
    g.add_argument("--eval-batch-size", type=int, metavar="N", help=say("eval_batch_size"))
    g.add_argument("--eval-samples", type=int, metavar="N", help=say("eval_samples"))
    g.add_argument("--eval-keep", help=say("eval_keep"))
    g.add_argument("--eval-accum", type=int, metavar="N", help=say("eval_accum"))
    g.add_argument("--mlm-predictions", type=int, metavar="N", help=say("mlm_predictions"))
    g.add_argument("--packed-document-tokens", type=int, metavar="N", help=say("packed_document_tokens"))
    g.add_argument("--lengths-from", nargs="+", metavar="FILE", help=say("lengths_from"))
    g.add_argument("--lengths-tokenizer", metavar="DIR", help=say("lengths_tokenizer"))


_FLAG_FIELDS = ("model", "method", "task", "precision", "optimizer", "seq_len", "batch_size", "grad_accum",
                "grad_checkpointing", "attention", "trainable_layers", "lora_r", "lora_alpha", "lora_dropout",
                "lora_targets", "quant_type", "double_quant", "kbit_upcast", "gpus", "sharding", "shard_group_gpus",
                "offload_optimizer", "offload_params", "optimizer_impl", "stack", "lengths", "expandable_segments",
                "eval_batch_size", "eval_samples", "eval_keep", "eval_accum", "mlm_predictions", "packed_document_tokens",
                "comm_overlap", "grad_clip", "fsdp_wrap", "deterministic", "zero_sync",
                "launch_blocking", "tf32", "fp8_linear", "weight_decay", "sdpa_backend", "input_require_grads", "recompute",
                "recompute_every")


def plan_from_args(args: argparse.Namespace) -> TrainPlan:
    """TrainPlan from a --plan file and/or flags (flags win); where none of them states a precision, the method's
    (``gpuwork.plan.plan_from_choices``: QLoRA's is bf16-mixed)."""
    fields: dict[str, Any] = {}
    stated: set[str] = set()
    lang = getattr(args, "lang", None) or "en"
    if getattr(args, "optimizer", None) is not None:
        args.optimizer, impl = optimizer_flag(args.optimizer, lang)
        if impl is not None and getattr(args, "optimizer_impl", None) is None:
            args.optimizer_impl = impl
    if getattr(args, "plan", None):
        given = read_plan_fields(args.plan)
        fields.update(TrainPlan.from_dict(given).as_dict())
        stated.update(given)
    if getattr(args, "from_files", None):  # the user's training configs (gpuwork.facts.configs), printed on stderr
        from gpuwork.facts.configs import import_configs

        flagged = [name for name in field_names() if getattr(args, name, None) is not None]
        imported = import_configs(args.from_files, overridden=flagged)
        fields.update(imported.fields)
        stated.update(imported.fields)
        args.config_mapping = imported.as_dict(flagged)  # the verbs' --json carries it as "from"
        print("\n".join(render(line, lang) for line in imported.report(flagged)) + "\n", file=sys.stderr)
    for name in _FLAG_FIELDS:
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
            stated.add(name)
    if "precision" not in stated:
        fields.pop("precision", None)
    if getattr(args, "lengths_from", None):  # the user's texts through their tokenizer: a length histogram
        from gpuwork.measure.lengths import length_histogram
        from gpuwork.plan import TrainPlan as _Plan

        seq_len = fields.get("seq_len", _Plan.seq_len)
        fields["lengths"] = length_histogram(args.lengths_from, getattr(args, "lengths_tokenizer", None),
                                             seq_len=seq_len if isinstance(seq_len, int) else _Plan.seq_len)
    if "lora_alpha" in fields and float(fields["lora_alpha"]).is_integer():
        fields["lora_alpha"] = int(fields["lora_alpha"])
    plan = plan_from_choices(fields)
    say_block_profile_note(plan, lang)
    return plan


def optimizer_flag(name: str, lang: str = "en") -> tuple[str, str | None]:
    """--optimizer's value -> (plan optimizer, optimizer_impl or None): a gpuwork name as it is, or a name the
    Trainer, TRL, axolotl or DeepSpeed uses, through the one table the config files are read with
    (gpuwork.facts.configs.OPTIMIZER_NAMES). A name modelled only by its nearest choice says so on stderr."""
    import difflib

    from gpuwork.facts.configs import OPTIMIZER_NAMES, optimizer_choice
    from gpuwork.plan import Optimizer

    if name in {o.value for o in Optimizer}:
        return name, None
    try:
        optimizer, impl, nearest = optimizer_choice(name, key="--optimizer")
    except GpuworkError:
        known = [o.value for o in Optimizer] + list(OPTIMIZER_NAMES)
        close = difflib.get_close_matches(name.strip().lower(), known, n=3, cutoff=0.6)
        raise PlanError("optimizer", msg("error.cli.optimizer_unknown", name=name,
                               allowed=", ".join(o.value for o in Optimizer),
                               close=", ".join(close) if close else "-")) from None
    if nearest is not None:
        print(text("cli.warning", lang, text=render(nearest, lang)), file=sys.stderr)
    return optimizer, impl


def say_block_profile_note(plan: TrainPlan, lang: str = "en") -> None:
    """On stderr: what the gather step's tracing of a block without a hand-written model said (traced, could
    not be traced, no torch); the workbook shows the same note (``facts.resolve.with_block_profiles``)."""
    from gpuwork.facts.block_profiles import block_profile_note
    from gpuwork.facts.model import spec_for_plan
    from gpuwork.facts.resolve import with_block_profiles

    note = block_profile_note(with_block_profiles(plan, spec_for_plan(plan)))
    if note is not None:
        print(render(note, lang), file=sys.stderr)


def load_record(path: str) -> Any:
    """A trial record file for compare and request: one clear error for a missing, broken, foreign or absurd
    file (``TrialRecord.from_json``: bounded read, its steps file beside it, every number in range)."""
    from pathlib import Path

    from gpuwork.measure.record import TrialRecord

    return TrialRecord.from_json(Path(path))
