"""Argument handling shared by every ``gpuwork`` verb: the parser, the plan flags, the plan file."""

from __future__ import annotations

import argparse
from typing import Any

from gpuwork.facts.planfile import read_plan_fields
from gpuwork.plan import TrainPlan

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line (exit 2) instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"gpuwork: error: {message} (see `{self.prog} --help`)\n")


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


