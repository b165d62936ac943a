"""accelerate's SIZE_BASED_WRAP -> TrainPlan.fsdp_wrap, in the one case the model's size decides exactly.

torch's ``size_based_auto_wrap_policy`` (FSDP1) wraps a submodule only when its not-yet-wrapped parameters reach
``min_num_params``; accelerate's FSDP2 policy wraps a module whose parameters exceed it. A model whose parameters
are all fewer than ``min_num_params`` therefore leaves no submodule to wrap: the root is the only unit ('whole').
A larger model, or one whose size the files do not let gpuwork count (a hub id), is left unclaimed with a note
(docs/communication.md 'One unit for the whole model').
"""

from __future__ import annotations

from typing import Any

from gpuwork.facts.configs.base import Claim
from gpuwork.message import Msg, msg

SIZE_WRAP = "__size_wrap__"  # the fact an accelerate file states: min_num_params, under a torch FSDP sharding
# accelerate launch's --fsdp_min_num_params default (commands/launch.py), exported as FSDP_MIN_NUM_PARAMS
LAUNCH_MIN_NUM_PARAMS = int(1e8)
_PLAN_FIELDS = ("method", "task", "lora_r", "lora_targets", "trainable_layers")  # what the parameter count reads


def model_params(chosen: dict[str, Claim]) -> int | None:
    """Every parameter of the model the files name, adapters included (``count_params().total``, an upper bound
    on the numel of a 4-bit base), or None when it cannot be counted without the hub (or the plan is invalid)."""
    model = chosen.get("model")
    if model is None or (model.rule is not None and model.rule.code.startswith("config.rule.model_hub")):
        return None
    from gpuwork.errors import GpuworkError
    from gpuwork.facts.model import get_spec
    from gpuwork.facts.spec import count_params
    from gpuwork.plan import TrainPlan

    values: dict[str, Any] = {name: chosen[name].value for name in _PLAN_FIELDS if name in chosen}
    try:
        plan = TrainPlan(model=str(model.value), **values)
        return count_params(get_spec(plan.model, plan.task), plan).total
    except (GpuworkError, ValueError, TypeError):
        return None


def size_wrap(chosen: dict[str, Claim], by_field: dict[str, list[Claim]], notes: list[Msg]) -> None:
    """fsdp_wrap 'whole' from a size-based policy when the whole model is below its threshold; else a note."""
    stated = by_field.get(SIZE_WRAP)
    if not stated or "fsdp_wrap" in chosen:
        return
    policy = stated[0]
    params = model_params(chosen)
    if params is None:
        notes.append(msg("config.size_wrap_unknown", file=policy.file, key=policy.key, min=policy.value))
    elif params >= policy.value:
        notes.append(msg("config.size_wrap_larger", file=policy.file, key=policy.key, min=policy.value,
                         params=params))
    else:
        chosen["fsdp_wrap"] = Claim("fsdp_wrap", "whole", policy.file, policy.key,
                                    msg("config.rule.size_wrap_whole", params=params, min=policy.value))


__all__ = ["LAUNCH_MIN_NUM_PARAMS", "SIZE_WRAP", "model_params", "size_wrap"]
