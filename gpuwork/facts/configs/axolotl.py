"""axolotl YAML configs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuwork.facts.configs.base import (
    AUTOCAST,
    Format,
    Reader,
    claim_attention,
    claim_fsdp_options,
    claim_grad_clip,
    claim_lora,
    claim_model,
    claim_optimizer_or_default,
    claim_precision,
    claim_schedule,
    claim_stack,
    claim_weight_decay,
    follow_deepspeed,
    lora_targets,
    show,
)
from gpuwork.facts.configs.defaults import defaults_for, pinned
from gpuwork.message import msg


def _set(r: Reader, name: str, key: str, kind: str) -> Any:
    """Claim ``name`` from ``key`` or from axolotl's default (pinned table); the value, or None."""
    value, rule = r.typed(key, kind)
    if value is not None:
        (r.claim if rule is None else r.claim_default)(name, value, key, rule)
    return value


def read(r: Reader, base: Path) -> None:
    """An axolotl YAML; a key it leaves out takes axolotl's default (its config schema, pinned table)."""
    r.defaults = (pinned("axolotl.schemas"),)
    key = "base_model_config" if r.has("base_model_config") else "base_model"
    if r.has(key):
        claim_model(r, key, base)
    r.used.add("base_model")
    adapter = str(r.get("adapter") or "").lower()
    four_bit, eight_bit = r.flag("load_in_4bit"), r.flag("load_in_8bit")
    if adapter == "qlora" or (adapter == "lora" and four_bit):
        r.claim("method", "qlora", "adapter" if adapter == "qlora" else "adapter, load_in_4bit")
        # loaders/model.py: prepare_model_for_kbit_training, then norms and embeddings cast back to torch_dtype
        r.claim("kbit_upcast", False, "adapter", msg("config.rule.axolotl_kbit_upcast"))
    elif adapter == "lora":
        r.claim("method", "lora", "adapter")
    elif adapter:
        r.note(msg("config.adapter_other", file=r.file, value=adapter))
    else:
        r.claim("method", "full", "adapter", msg("config.rule.no_adapter"))
    if eight_bit:
        r.note(msg("config.eight_bit_base", file=r.file, key="load_in_8bit"))
    if adapter in ("lora", "qlora"):
        claim_lora(r, r_key="lora_r", alpha_key="lora_alpha", dropout_key="lora_dropout")
        if r.flag("lora_target_linear"):
            r.claim("lora_targets", "all-linear", "lora_target_linear")
        else:
            targets = lora_targets(r.get("lora_target_modules"))
            if targets:
                r.claim("lora_targets", targets, "lora_target_modules")
    _set(r, "seq_len", "sequence_len", "int")
    if r.flag("sample_packing"):
        r.note(msg("config.packing", file=r.file, key="sample_packing"))
    micro = _set(r, "batch_size", "micro_batch_size", "int")
    total = r.int_("batch_size")
    if r.has("gradient_accumulation_steps") or total is None:
        _set(r, "grad_accum", "gradient_accumulation_steps", "int")
    elif micro:
        r.claim("grad_accum", max(1, total // micro), "batch_size, micro_batch_size",
                msg("config.rule.accum_from_batch", total=total, micro=micro))
    checkpointing, rule = r.typed("gradient_checkpointing", "any")
    if rule is not None:
        r.claim_default("grad_checkpointing", bool(checkpointing), "gradient_checkpointing", rule)
    elif checkpointing is not None:
        if isinstance(checkpointing, str) and checkpointing.lower() in ("unsloth", "offload"):
            r.claim("grad_checkpointing", True, "gradient_checkpointing",
                    msg("config.rule.offloaded_checkpointing", value=checkpointing))
        else:
            r.claim("grad_checkpointing", r.flag("gradient_checkpointing"), "gradient_checkpointing")
    if r.has("attn_implementation"):  # axolotl's newer spelling: transformers' attn_implementation names
        claim_attention(r, r.get("attn_implementation"), "attn_implementation")
    for key, attention in (("flash_attention", "flash"), ("sdp_attention", "sdpa"), ("xformers_attention", "sdpa"),
                           ("eager_attention", "eager")):
        if r.flag(key) and not r.has("attn_implementation"):
            r.claim("attention", attention, key,
                    msg("config.rule.xformers") if key == "xformers_attention" else None)
            break
    claim_optimizer_or_default(r, "optimizer")
    _claim_axolotl_precision(r, full=adapter not in ("lora", "qlora"))
    claim_schedule(r, epochs_key="num_epochs")
    # axolotl passes max_grad_norm to the Trainer only when set: unset, the Trainer's own default clips
    norm, source = defaults_for("transformers.TrainingArguments").lookup("max_grad_norm")
    trainer = msg("config.rule.framework_default", key="max_grad_norm", value=show(norm), source=source)
    claim_grad_clip(r, "max_grad_norm", (norm, msg("config.rule.axolotl_max_grad_norm", default=trainer)))
    claim_weight_decay(r)
    if r.has("saves_per_epoch"):
        r.note(msg("config.save_per_epoch", file=r.file, key="saves_per_epoch"))
    plugins = [str(p) for p in r.get("plugins") or ()]
    liger = any("liger" in p.lower() for p in plugins) or any(
        r.flag(k) for k in ("liger_rms_norm", "liger_glu_activation", "liger_fused_linear_cross_entropy",
                            "liger_rope", "liger_cross_entropy"))
    unsloth_keys = [k for k in ("unsloth_lora_mlp", "unsloth_lora_qkv", "unsloth_lora_o",
                                "unsloth_cross_entropy_loss", "unsloth_rms_norm", "unsloth_rope") if r.flag(k)]
    claim_stack(r, liger, bool(r.flag("torch_compile")), bool(unsloth_keys),
           {"hf-liger": "plugins" if any("liger" in p.lower() for p in plugins) else "liger_*",
            "torch-compile": "torch_compile", "unsloth": ", ".join(unsloth_keys)})
    _claim_fsdp(r)
    follow_deepspeed(r, "deepspeed", base)


def _claim_axolotl_precision(r: Reader, full: bool) -> None:
    """bf16/fp16 (mixed under accelerate, or pure with bfloat16/float16) and the autocast accelerate gets."""
    bf16, fp16 = r.typed("bf16", "any")[0], r.flag("fp16")
    bf16_on: bool | None
    if isinstance(bf16, str) and bf16.lower() == "auto":
        bf16_on = True
        auto_rule = True
    else:
        bf16_on, auto_rule = r.flag("bf16"), False
    # prepare_optim_env exports accelerate's mixed precision from bf16/fp16 ("no" when neither is on)
    r.claim(AUTOCAST, "bf16" if bf16_on else "fp16" if fp16 else "no", "bf16" if bf16_on or not fp16 else "fp16")
    pure_bf16, pure_fp16 = r.flag("bfloat16"), r.flag("float16")
    if pure_bf16 or pure_fp16:
        claim_precision(r, pure_bf16, pure_fp16, keys=("bfloat16", "float16"), pure=True,
                   pure_rule=msg("config.rule.axolotl_pure"), mixed_rule=msg("config.rule.trainer_mixed"))
    else:
        pure_rule, mixed_rule = msg("config.rule.axolotl_bf16"), msg("config.rule.adapter_mixed")
        if auto_rule:
            pure_rule, mixed_rule = msg("config.rule.bf16_auto", rule=pure_rule), msg("config.rule.bf16_auto",
                                                                                        rule=mixed_rule)
        claim_precision(r, bf16_on, fp16, keys=("bf16", "fp16"), pure=full, pure_rule=pure_rule, mixed_rule=mixed_rule,
                   tf32=r.flag("tf32"))


def _claim_fsdp(r: Reader) -> None:
    """axolotl's fsdp / fsdp_config keys: sharding, who prepares the model, offload."""
    fsdp = r.get("fsdp")
    fsdp_config = r.get("fsdp_config") or {}
    if fsdp or (fsdp_config and r.has("fsdp_version")):
        version = r.get("fsdp_version") or fsdp_config.get("fsdp_version") or fsdp_config.get("version") or 1
        # FSDP2: axolotl swaps in its own fsdp2_prepare_model, which keeps the loaded dtype (no upcast)
        claim_fsdp_options(r, fsdp or ["full_shard"], "fsdp",
                           prepare="axolotl-fsdp2" if str(version) == "2" else "accelerate")
        reshard = fsdp_config.get("reshard_after_forward", fsdp_config.get("fsdp_reshard_after_forward"))
        if reshard is False:
            r.claim("sharding", "zero2", "fsdp_config.reshard_after_forward", msg("config.rule.shard_grad_op"))
        if fsdp_config.get("fsdp_offload_params") or fsdp_config.get("offload_params"):
            r.claim("offload_params", True, "fsdp_config.offload_params")
            r.claim("offload_optimizer", True, "fsdp_config.offload_params", msg("config.rule.fsdp_offload"))


MARKERS = frozenset({"base_model", "sequence_len", "micro_batch_size", "adapter", "lora_target_linear",
    "num_epochs", "flash_attention", "sdp_attention", "datasets", "sample_packing",
    "saves_per_epoch", "val_set_size"})
# keys known to change nothing the plan models
IGNORED = frozenset("""
    base_model model_type tokenizer_type tokenizer_config trust_remote_code strict datasets test_datasets
    dataset_prepared_path val_set_size output_dir eval_sample_packing pad_to_sequence_len lora_model_dir
    lora_target_modules lora_fan_in_fan_out lora_modules_to_save wandb_project wandb_entity wandb_watch
    wandb_name wandb_log_model lr_scheduler learning_rate train_on_inputs group_by_length tf32
    early_stopping_patience resume_from_checkpoint local_rank logging_steps warmup_ratio warmup_steps
    evals_per_epoch eval_steps eval_table_size special_tokens tokens chat_template debug
    hub_model_id hub_strategy seed adam_beta1 adam_beta2 adam_epsilon loss_watchdog_threshold
    loss_watchdog_patience dataset_processes shuffle_merged_datasets eval_max_new_tokens save_first_step
    save_safetensors saves_per_epoch gptq xformers_attention eager_attention s2_attention low_cpu_mem_usage
    gradient_checkpointing_kwargs plugins liger_rms_norm liger_glu_activation liger_fused_linear_cross_entropy
    liger_rope liger_cross_entropy liger_layer_norm torch_compile_backend fsdp_version fsdp_config
    bfloat16 float16 batch_size max_steps save_strategy lora_target_linear peft_use_dora peft_use_rslora
    unfrozen_parameters dataset_exact_deduplication default_system_message remove_unused_columns
    """.split())

FORMAT = Format("axolotl", MARKERS, read, IGNORED)
