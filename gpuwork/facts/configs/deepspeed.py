"""DeepSpeed config JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts.configs.base import Claim, Format, Reader, claim_optimizer, claim_precision
from gpuwork.facts.configs.optimizers import DEEPSPEED_OPTIMIZERS
from gpuwork.message import msg


def _ds_value(r: Reader, section: dict[str, Any], key: str, path: str) -> Any:
    """A DeepSpeed value; "auto" is noted as deferred and returned as None."""
    value = section.get(key)
    if isinstance(value, str) and value.strip().lower() == "auto":
        r.claims.append(Claim("__auto__", path, r.file, path))
        return None
    return value


def read(r: Reader, base: Path) -> None:
    data = r.data
    r.used.update({"zero_optimization", "bf16", "fp16", "train_micro_batch_size_per_gpu",
                   "gradient_accumulation_steps", "train_batch_size", "optimizer", "activation_checkpointing",
                   "gradient_clipping"})
    zero = data.get("zero_optimization") or {}
    if not isinstance(zero, dict):
        raise PlanError("sharding", msg("error.config.not_mapping_key", file=r.file, key="zero_optimization"))
    stage = _ds_value(r, zero, "stage", "zero_optimization.stage")
    if stage is not None:
        if stage not in (0, 1, 2, 3):
            raise PlanError("sharding", msg("error.config.zero_stage", file=r.file, value=repr(stage)))
        r.claim("sharding", "ddp" if stage == 0 else f"zero{stage}", "zero_optimization.stage")
    for section, name in (("offload_optimizer", "offload_optimizer"), ("offload_param", "offload_params")):
        offload = zero.get(section) or {}
        device = str(offload.get("device", "none")).lower() if isinstance(offload, dict) else "none"
        if device in ("cpu", "nvme"):
            if name == "offload_params" and stage is not None and stage < 3:
                r.note(msg("config.offload_param_stage", file=r.file, stage=stage))
                continue
            r.claim(name, True, f"zero_optimization.{section}.device",
                    msg("config.rule.nvme") if device == "nvme" else None)
    for family in ("bf16", "fp16"):
        block = data.get(family)
        if isinstance(block, dict):
            _ds_value(r, block, "enabled", f"{family}.enabled")
    bf16 = data.get("bf16", {}).get("enabled") if isinstance(data.get("bf16"), dict) else None
    fp16 = data.get("fp16", {}).get("enabled") if isinstance(data.get("fp16"), dict) else None
    bf16 = None if isinstance(bf16, str) else bf16
    fp16 = None if isinstance(fp16, str) else fp16
    if bf16 or fp16 or (bf16 is False and fp16 is False):
        # DeepSpeed casts the module to bf16/fp16 and its optimizer keeps fp32 master weights and states
        # (engine._configure_distributed_model, zero/stage_1_and_2.py, zero/stage3.py, bf16_optimizer.py)
        # ZeRO-1/2/3: TrainPlan.fp32_master_weights prices the masters of pure 16-bit weights; stage 0 (DeepSpeed's
        # bf16/fp16 optimizer without sharding) is priced as mixed precision, the nearest plan with fp32 masters
        claim_precision(r, bf16, fp16, keys=("bf16.enabled", "fp16.enabled"), pure=stage in (1, 2, 3),
                        pure_rule=msg("config.rule.ds_master"), mixed_rule=msg("config.rule.ds_master"))
    micro = _ds_value(r, data, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu")
    if micro is not None:
        r.claim("batch_size", int(micro), "train_micro_batch_size_per_gpu")
    accum = _ds_value(r, data, "gradient_accumulation_steps", "gradient_accumulation_steps")
    if accum is not None:
        r.claim("grad_accum", int(accum), "gradient_accumulation_steps")
    total = _ds_value(r, data, "train_batch_size", "train_batch_size")
    if total is not None:
        r.claim("train_batch_size", int(total), "train_batch_size")  # world size once micro and accum are known
    _claim_clipping(r)
    optimizer = data.get("optimizer")
    if isinstance(optimizer, dict) and optimizer.get("type"):
        claim_optimizer(r, str(optimizer["type"]), "optimizer.type", DEEPSPEED_OPTIMIZERS)
    checkpointing = data.get("activation_checkpointing")
    if isinstance(checkpointing, dict) and (checkpointing.get("partition_activations")
                                            or checkpointing.get("cpu_checkpointing")):
        r.note(msg("config.ds_activation_checkpointing", file=r.file))


def _claim_clipping(r: Reader) -> None:
    """grad_clip from ``gradient_clipping``: the engine clips when it is > 0 (docs/grad_clip.md). "auto" is the
    Trainer's max_grad_norm (HF's integration fills it); left out, DeepSpeed's default decides, and that changed
    in 0.19.3 (0.0 -> 1.0): unclaimed, with a note."""
    if r.get("gradient_clipping") is None:
        r.note(msg("config.ds_clipping_unset", file=r.file))
        return
    if _ds_value(r, r.data, "gradient_clipping", "gradient_clipping") is None:
        return  # "auto": combine names the max_grad_norm claim it defers to
    norm = r.number("gradient_clipping")
    if norm is not None:
        r.claim("grad_clip", norm > 0, "gradient_clipping", msg("config.rule.ds_clipping"))


MARKERS = frozenset({"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
    "zero_allow_untested_optimizer", "gradient_clipping", "steps_per_print",
    "wall_clock_breakdown", "zero_force_ds_cpu_optimizer"})
# keys known to change nothing the plan models
IGNORED: frozenset[str] = frozenset()

FORMAT = Format("deepspeed", MARKERS, read, IGNORED)
