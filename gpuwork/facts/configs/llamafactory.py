"""LLaMA-Factory YAML configs."""

from __future__ import annotations

from pathlib import Path

from gpuwork.errors import PlanError
from gpuwork.facts.configs.base import (
    Format,
    Reader,
    claim_attention,
    claim_model,
    claim_optimizer,
    claim_precision,
    claim_schedule,
    claim_stack,
    follow_deepspeed,
    lora_targets,
    whole,
)
from gpuwork.message import msg

_LF_DEFAULTS = msg("config.rule.lf_default")


def read(r: Reader, base: Path) -> None:
    if r.has("model_name_or_path"):
        claim_model(r, "model_name_or_path", base)
    stage = str(r.get("stage", "sft")).lower()
    if stage not in ("sft", "pt"):
        r.note(msg("config.stage_other", file=r.file, stage=stage))
    finetuning = str(r.get("finetuning_type", "lora")).lower()
    bits = r.int_("quantization_bit")
    if finetuning == "lora":
        if bits == 4:
            r.claim("method", "qlora", "finetuning_type, quantization_bit")
        else:
            r.claim("method", "lora", "finetuning_type", None if r.has("finetuning_type") else _LF_DEFAULTS)
        if bits is not None and bits != 4:
            r.note(msg("config.eight_bit_base", file=r.file, key="quantization_bit"))
        rank = r.int_("lora_rank")
        r.claim("lora_r", rank if rank is not None else 8, "lora_rank", None if rank is not None else _LF_DEFAULTS)
        alpha = r.number("lora_alpha")
        if alpha is not None:
            r.claim("lora_alpha", whole(alpha), "lora_alpha")
        else:
            r.claim("lora_alpha", 2 * (rank or 8), "lora_alpha", msg("config.rule.lf_alpha"))
        dropout = r.number("lora_dropout")
        if dropout is not None:
            r.claim("lora_dropout", dropout, "lora_dropout")
        targets = lora_targets(r.get("lora_target", "all"))
        r.claim("lora_targets", targets, "lora_target", None if r.has("lora_target") else _LF_DEFAULTS)
    elif finetuning == "freeze":
        r.claim("method", "freeze", "finetuning_type")
        layers = r.int_("freeze_trainable_layers")
        r.claim("trainable_layers", layers if layers is not None else 2, "freeze_trainable_layers",
                None if layers is not None else _LF_DEFAULTS)
    elif finetuning == "full":
        r.claim("method", "full", "finetuning_type")
    else:
        raise PlanError("method", msg("error.config.finetuning_type", file=r.file, value=finetuning))
    if r.has("quantization_type"):
        r.claim("quant_type", str(r.get("quantization_type")).lower(), "quantization_type")
    double = r.flag("double_quantization")
    if double is not None:
        r.claim("double_quant", double, "double_quantization")
    seq = r.int_("cutoff_len")
    r.claim("seq_len", seq if seq is not None else 2048, "cutoff_len", None if seq is not None else _LF_DEFAULTS)
    if r.flag("packing") or r.flag("neat_packing"):
        r.note(msg("config.packing", file=r.file, key="packing"))
    batch = r.int_("per_device_train_batch_size")
    if batch is not None:
        r.claim("batch_size", batch, "per_device_train_batch_size")
    accum = r.int_("gradient_accumulation_steps")
    if accum is not None:
        r.claim("grad_accum", accum, "gradient_accumulation_steps")
    disabled = r.flag("disable_gradient_checkpointing")
    r.claim("grad_checkpointing", not disabled, "disable_gradient_checkpointing",
            None if disabled is not None else _LF_DEFAULTS)
    if r.has("flash_attn"):
        claim_attention(r, r.get("flash_attn"), "flash_attn")
    if r.has("optim"):
        claim_optimizer(r, str(r.get("optim")), "optim")
    pure = bool(r.flag("pure_bf16"))
    claim_precision(r, r.flag("bf16") or pure, r.flag("fp16"), keys=("pure_bf16" if pure else "bf16", "fp16"), pure=pure,
               pure_rule=msg("config.rule.lf_pure"), mixed_rule=msg("config.rule.lf_mixed"), tf32=r.flag("tf32"))
    claim_schedule(r, epochs_key="num_train_epochs")
    samples = r.int_("max_samples")
    if samples is not None:
        r.claim("max_samples", samples, "max_samples")  # tokens once seq_len is known
    claim_stack(r, bool(r.flag("enable_liger_kernel")), False, bool(r.flag("use_unsloth")),
           {"hf-liger": "enable_liger_kernel", "unsloth": "use_unsloth", "torch-compile": ""})
    follow_deepspeed(r, "deepspeed", base)


MARKERS = frozenset({"finetuning_type", "cutoff_len", "stage", "template", "lora_rank", "lora_target",
    "quantization_bit", "pure_bf16", "freeze_trainable_layers", "flash_attn",
    "enable_liger_kernel", "use_unsloth"})
# keys known to change nothing the plan models
IGNORED = frozenset("""
    trust_remote_code do_train dataset eval_dataset template overwrite_cache preprocessing_num_workers
    dataloader_num_workers output_dir logging_steps plot_loss overwrite_output_dir save_only_model report_to
    learning_rate lr_scheduler_type warmup_ratio warmup_steps ddp_timeout resume_from_checkpoint val_size
    per_device_eval_batch_size eval_strategy eval_steps weight_decay max_grad_norm adapter_name_or_path
    export_dir export_size export_device export_legacy_format create_new_adapter use_dora use_rslora
    additional_target pissa_init pissa_iter pissa_convert loraplus_lr_ratio quantization_method
    flash_attn max_samples stage finetuning_type quantization_bit lora_rank lora_target cutoff_len
    freeze_trainable_layers freeze_trainable_modules freeze_extra_modules pure_bf16 enable_liger_kernel
    use_unsloth rope_scaling shift_attn mixture_of_depths use_unsloth_gc upcast_layernorm upcast_lmhead_output
    train_from_scratch image_max_pixels video_max_pixels media_dir tokenized_path streaming buffer_size
    mix_strategy interleave_probs mask_history train_on_prompt neat_packing packing tool_format
    default_system ignore_pad_token_for_loss seed run_name push_to_hub hub_model_id logging_dir save_strategy
    predict_with_generate do_eval do_predict include_num_input_tokens_seen
    """.split())

FORMAT = Format("llamafactory", MARKERS, read, IGNORED)
