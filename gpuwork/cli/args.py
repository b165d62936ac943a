"""Argument handling shared by every ``gpuwork`` verb: the parser, the plan flags, the plan file."""

from __future__ import annotations

import argparse
import re
from typing import Any

from gpuwork.facts.planfile import read_plan_fields
from gpuwork.message import Msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import LANGS, MessageError, render, text

EXIT_USAGE = 2


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
    """"gpuwork: error: ..." in the reader's language: the one way every verb reports an error."""
    return text("error.cli.line", lang, message=message)


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


class Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line (exit 2), in the language the command line asks for."""

    def error(self, message: str) -> None:  # type: ignore[override]
        lang = argv_lang()
        line = text("error.args.see_help", lang, message=_localized(message, lang), prog=self.prog)
        self.exit(EXIT_USAGE, error_line(line, lang) + "\n")


def plan_arguments(parser: argparse.ArgumentParser) -> None:
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
        fields.update(TrainPlan.from_dict(read_plan_fields(args.plan)).as_dict())
    for name in _FLAG_FIELDS:
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    if "lora_alpha" in fields and float(fields["lora_alpha"]).is_integer():
        fields["lora_alpha"] = int(fields["lora_alpha"])
    return TrainPlan.from_dict(fields)


