"""Optimizer names of the training tools (Trainer, axolotl, DeepSpeed) -> the optimizer gpuwork models."""

from __future__ import annotations

import difflib

from gpuwork.errors import PlanError
from gpuwork.message import Msg, msg

# Every transformers OptimizerNames value (4.x and 5.x), axolotl's extra names and DeepSpeed's optimizer types
# -> (plan optimizer, optimizer_impl or None, why it is only the nearest modelled choice or None).
# "Nearest" names an optimizer whose states gpuwork models; the reason says which way the estimate errs.
_EXACT = None
OPTIMIZER_NAMES: dict[str, tuple[str, str | None, str | None]] = {
    "adamw_torch": ("adamw", "foreach", _EXACT),
    "adamw_torch_fused": ("adamw", "fused", _EXACT),
    "adamw_hf": ("adamw", "for-loop", _EXACT),  # transformers' own AdamW: a Python loop over parameters
    "adamw_torch_xla": ("adamw", "foreach", "xla"),
    "adamw_torch_npu_fused": ("adamw", "fused", "npu"),
    "adamw_apex_fused": ("adamw", "fused", _EXACT),  # apex FusedAdam: fp32 states, one fused kernel
    "adamw_anyprecision": ("adamw", "foreach", "anyprecision"),
    "adamw_torch_4bit": ("adamw-8bit", None, "states_4bit"),
    "adamw_torch_8bit": ("adamw-8bit", None, "torchao_8bit"),
    "adamw_bnb_8bit": ("adamw-8bit", None, _EXACT),
    "adamw_8bit": ("adamw-8bit", None, _EXACT),
    "paged_adamw_8bit": ("paged-adamw-8bit", None, _EXACT),
    "paged_adamw_32bit": ("adamw", "foreach", "paged_32bit"),
    "paged_adamw": ("adamw", "foreach", "paged_32bit"),  # axolotl's spelling
    "ademamix": ("adamw", "foreach", "ademamix"),
    "ademamix_8bit": ("adamw-8bit", None, "ademamix"),
    "paged_ademamix_32bit": ("adamw", "foreach", "ademamix"),
    "paged_ademamix_8bit": ("paged-adamw-8bit", None, "ademamix"),
    "adafactor": ("adafactor", None, _EXACT),
    "sgd": ("sgd", "foreach", _EXACT),
    "adagrad": ("sgd", "foreach", "one_state"),
    "rmsprop": ("sgd", "foreach", "one_state"),
    "rmsprop_bnb": ("sgd", "foreach", "one_state"),
    "rmsprop_bnb_32bit": ("sgd", "foreach", "one_state"),
    "rmsprop_bnb_8bit": ("sgd", "foreach", "one_state_8bit"),
    "lion_32bit": ("lion", None, _EXACT),
    "lion_8bit": ("lion", None, "lion_8bit"),
    "paged_lion_32bit": ("lion", None, "paged_32bit"),
    "paged_lion_8bit": ("lion", None, "lion_8bit"),
    "galore_adamw": ("adamw", "foreach", "low_rank"),
    "galore_adamw_8bit": ("adamw-8bit", None, "low_rank"),
    "galore_adafactor": ("adafactor", None, "low_rank"),
    "galore_adamw_layerwise": ("adamw", "foreach", "low_rank"),
    "galore_adamw_8bit_layerwise": ("adamw-8bit", None, "low_rank"),
    "galore_adafactor_layerwise": ("adafactor", None, "low_rank"),
    "apollo_adamw": ("adamw", "foreach", "low_rank"),
    "apollo_adamw_layerwise": ("adamw", "foreach", "low_rank"),
    "lomo": ("sgd", "foreach", "lomo"),
    "adalomo": ("sgd", "foreach", "lomo"),
    "grokadamw": ("adamw", "foreach", "extra_state"),
    "schedule_free_adamw": ("adamw", "foreach", "schedule_free"),
    "schedule_free_radam": ("adamw", "foreach", "schedule_free"),
    "schedule_free_sgd": ("sgd", "foreach", "schedule_free"),
    "stable_adamw": ("adamw", "foreach", "other_impl"),
    # axolotl's own names (its `optimizer:` also takes every Trainer name above)
    "optimi_adamw": ("adamw", "foreach", "other_impl"),
    "ao_adamw_4bit": ("adamw-8bit", None, "states_4bit"),
    "ao_adamw_8bit": ("adamw-8bit", None, "torchao_8bit"),
    "ao_adamw_fp8": ("adamw-8bit", None, "torchao_8bit"),
    "adopt_adamw": ("adamw", "foreach", "other_impl"),
    "came_pytorch": ("adafactor", None, "other_impl"),
    "muon": ("sgd", "foreach", "one_state"),
}
# DeepSpeed's "optimizer": {"type": ...} (deepspeed/runtime/config.py names; compared lower-case)
DEEPSPEED_OPTIMIZERS: dict[str, tuple[str, str | None, str | None]] = {
    "adam": ("adamw", "fused", _EXACT),  # DeepSpeed FusedAdam (CPUAdam when offloaded): fp32 m and v
    "adamw": ("adamw", "fused", _EXACT),
    "fusedadam": ("adamw", "fused", _EXACT),
    "cpuadam": ("adamw", "fused", _EXACT),
    "lion": ("lion", None, _EXACT),
    "fusedlion": ("lion", None, _EXACT),
    "adagrad": ("sgd", "foreach", "one_state"),
    "lamb": ("adamw", "fused", "other_impl"),
    "onebitadam": ("adamw", "fused", "other_impl"),
    "zerooneadam": ("adamw", "fused", "other_impl"),
    "onebitlamb": ("adamw", "fused", "other_impl"),
    "muadam": ("adamw", "fused", "other_impl"),
    "muadamw": ("adamw", "fused", "other_impl"),
    "musgd": ("sgd", "foreach", _EXACT),
}


def optimizer_choice(name: str, *, file: str = "", key: str = "optim",
                     table: dict[str, tuple[str, str | None, str | None]] | None = None
                     ) -> tuple[str, str | None, Msg | None]:
    """A tool's optimizer name -> (plan optimizer, optimizer_impl or None, note when only the nearest choice).

    Raises PlanError naming the name, the file and the closest known names for a name no tool uses.
    """
    table = OPTIMIZER_NAMES if table is None else table
    key_name = str(name).strip().lower()
    if table is DEEPSPEED_OPTIMIZERS:
        key_name = key_name.replace("_", "")
    found = table.get(key_name)
    if found is None:
        close = difflib.get_close_matches(key_name, list(table), n=3, cutoff=0.6)
        if close:
            raise PlanError("optimizer", msg("error.config.optimizer_close", name=str(name), file=file, key=key,
                                             close=", ".join(close)))
        raise PlanError("optimizer", msg("error.config.optimizer_unknown", name=str(name), file=file, key=key))
    optimizer, impl, why = found
    note = None if why is None else msg("config.optimizer.nearest", name=str(name), optimizer=optimizer,
                                        why=msg(f"config.optimizer.why.{why}"))
    return optimizer, impl, note

