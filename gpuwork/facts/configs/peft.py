"""peft adapter_config.json (PeftModel.save_pretrained)."""

from __future__ import annotations

from pathlib import Path

from gpuwork.errors import PlanError
from gpuwork.facts.configs.base import Format, Reader, claim_lora, claim_model, lora_targets
from gpuwork.facts.configs.defaults import defaults_for
from gpuwork.message import msg

_PEFT_TASKS = {"CAUSAL_LM": "causal-lm", "SEQ_CLS": "seq-cls"}


def read(r: Reader, base: Path) -> None:
    """A peft adapter_config.json: LoRA's rank, alpha, dropout and targets, and the base model it was made for.

    The base model counts only when it is a preset (or a hub id of one) or a folder that exists here: adapters
    trained elsewhere record a path on that machine. The method is a weak ``lora`` (a TrainingArguments file
    that loads the base in 4 bits makes it ``qlora``); the file cannot tell how the base was loaded.
    """
    r.defaults = (defaults_for("peft.LoraConfig"),)
    kind = str(r.get("peft_type") or "LORA").upper()
    if kind != "LORA":
        raise PlanError("method", msg("error.config.peft_type", file=r.file, value=kind))
    r.claim("method", "lora", "peft_type", msg("config.rule.peft_lora"), weak=True)
    if r.has("base_model_name_or_path"):
        claim_model(r, "base_model_name_or_path", base)
        if r.claims[-1].rule is not None and r.claims[-1].rule.code.startswith("config.rule.model_hub"):
            r.claims.pop()  # neither a preset nor a folder here: the user says which with --model
            r.note(msg("config.peft_base_unknown", file=r.file, value=str(r.get("base_model_name_or_path"))))
    claim_lora(r, r_key="r", alpha_key="lora_alpha", dropout_key="lora_dropout")
    targets = r.get("target_modules")
    if isinstance(targets, str) and lora_targets(targets) != "all-linear":
        r.note(msg("config.peft_regex", file=r.file, value=targets))  # peft matches a string as a regex
    elif lora_targets(targets):
        r.claim("lora_targets", lora_targets(targets), "target_modules")
    task = _PEFT_TASKS.get(str(r.get("task_type") or "").upper())
    if task is not None:
        r.claim("task", task, "task_type")
    if r.flag("use_dora"):
        r.note(msg("config.dora", file=r.file))
    saved = r.get("modules_to_save")
    if saved:
        names = ", ".join(str(m) for m in saved) if isinstance(saved, (list, tuple)) else str(saved)
        r.note(msg("config.peft_modules_to_save", file=r.file, modules=names))
    if r.get("layers_to_transform") is not None:
        r.note(msg("config.peft_layers", file=r.file))


MARKERS = frozenset({"peft_type"})
# keys known to change nothing the plan models
IGNORED = frozenset("""
    auto_mapping revision inference_mode fan_in_fan_out bias use_rslora init_lora_weights layers_pattern
    rank_pattern alpha_pattern megatron_config megatron_core trainable_token_indices loftq_config eva_config
    corda_config use_qalora qalora_group_size layer_replication runtime_config lora_bias target_parameters
    exclude_modules alora_invocation_tokens arrow_config ensure_weight_tying peft_version kasa_config
    lora_ga_config monteclora_config use_bdlora velora_config
    """.split())

FORMAT = Format("peft", MARKERS, read, IGNORED)
