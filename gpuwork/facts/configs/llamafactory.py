"""LLaMA-Factory YAML configs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts.configs.base import (
    AUTOCAST,
    Format,
    Reader,
    claim_attention,
    claim_deterministic,
    claim_fsdp_options,
    claim_grad_clip,
    claim_model,
    claim_optimizer_or_default,
    claim_precision,
    claim_schedule,
    claim_stack,
    claim_tf32,
    claim_weight_decay,
    follow_deepspeed,
    lora_targets,
    whole,
)
from gpuwork.facts.configs.defaults import defaults_for, pinned
from gpuwork.message import msg


def _set(r: Reader, name: str, key: str, kind: str, convert: Callable[[Any], Any] | None = None) -> Any:
    """Claim ``name`` from ``key`` or from its LLaMA-Factory / transformers default; the value, or None."""
    value, rule = r.typed(key, kind)
    if value is not None:
        value = convert(value) if convert is not None else value
        (r.claim if rule is None else r.claim_default)(name, value, key, rule)
    return value


def read(r: Reader, base: Path) -> None:
    """A LLaMA-Factory YAML; a key it leaves out takes LLaMA-Factory's default (pinned table), and the
    Trainer settings its TrainingArguments inherits take transformers' (installed or pinned)."""
    r.defaults = (pinned("llamafactory.hparams"), defaults_for("transformers.TrainingArguments"))
    if r.has("model_name_or_path"):
        claim_model(r, "model_name_or_path", base)
    stage = str(r.get("stage", "sft")).lower()
    if stage not in ("sft", "pt"):
        r.note(msg("config.stage_other", file=r.file, stage=stage))
    _method(r)
    _set(r, "seq_len", "cutoff_len", "int")
    if r.flag("packing") or r.flag("neat_packing"):
        r.note(msg("config.packing", file=r.file, key="packing"))
    if r.flag("neat_packing"):  # packing without cross-attention between examples (docs/packed_documents.md)
        r.note(msg("config.packed_documents", file=r.file, key="neat_packing"))
    _set(r, "batch_size", "per_device_train_batch_size", "int")
    _set(r, "grad_accum", "gradient_accumulation_steps", "int")
    _set(r, "grad_checkpointing", "disable_gradient_checkpointing", "flag", lambda off: not off)
    if r.has("flash_attn"):
        claim_attention(r, r.get("flash_attn"), "flash_attn")
    claim_optimizer_or_default(r, "optim")
    pure = bool(r.flag("pure_bf16"))
    bf16, fp16 = r.typed("bf16", "flag")[0], r.typed("fp16", "flag")[0]
    if bf16 or fp16:  # Trainer's mixed_precision; pure_bf16 alone leaves it to accelerate launch
        r.claim(AUTOCAST, "fp16" if fp16 and not bf16 else "bf16", "bf16" if bf16 else "fp16")
    claim_precision(r, bf16 or pure, fp16, keys=("pure_bf16" if pure else "bf16", "fp16"), pure=pure,
                    pure_rule=msg("config.rule.lf_pure"), mixed_rule=msg("config.rule.lf_mixed"), tf32=r.flag("tf32"))
    claim_schedule(r, epochs_key="num_train_epochs")
    claim_grad_clip(r, "max_grad_norm")  # Seq2SeqTrainingArguments' own, passed to the Trainer
    claim_weight_decay(r)
    claim_deterministic(r)
    claim_tf32(r)  # Seq2SeqTrainingArguments' own tf32, handed to the Trainer
    samples = r.int_("max_samples")
    if samples is not None:
        r.claim("max_samples", samples, "max_samples")  # tokens once seq_len is known
    claim_stack(r, bool(r.flag("enable_liger_kernel")), False, bool(r.flag("use_unsloth")),
                {"hf-liger": "enable_liger_kernel", "unsloth": "use_unsloth", "torch-compile": ""})
    claim_fsdp_options(r, r.get("fsdp"), "fsdp")  # TrainingArguments' option string ("hybrid_shard auto_wrap")
    follow_deepspeed(r, "deepspeed", base)


def _method(r: Reader) -> None:
    finetuning, method_rule = r.typed("finetuning_type", "any")
    finetuning = str(finetuning).lower()
    bits = r.int_("quantization_bit")
    if finetuning == "lora":
        if bits == 4:
            r.claim("method", "qlora", "finetuning_type, quantization_bit")
        else:
            (r.claim if method_rule is None else r.claim_default)("method", "lora", "finetuning_type", method_rule)
        if bits is not None and bits != 4:
            r.note(msg("config.eight_bit_base", file=r.file, key="quantization_bit"))
        rank = _set(r, "lora_r", "lora_rank", "int")
        alpha, rule = r.typed("lora_alpha", "number")
        if alpha is not None:
            r.claim("lora_alpha", whole(alpha), "lora_alpha")
        else:  # FinetuningArguments.__post_init__: lora_alpha = lora_alpha or lora_rank * 2
            r.claim_default("lora_alpha", 2 * rank, "lora_alpha", msg("config.rule.both", first=rule,
                                                                      second=msg("config.rule.lf_alpha")))
        _set(r, "lora_dropout", "lora_dropout", "number")
        _set(r, "lora_targets", "lora_target", "any", lora_targets)
    elif finetuning == "freeze":
        r.claim("method", "freeze", "finetuning_type")
        _set(r, "trainable_layers", "freeze_trainable_layers", "int")
    elif finetuning == "full":
        r.claim("method", "full", "finetuning_type")
    else:
        raise PlanError("method", msg("error.config.finetuning_type", file=r.file, value=finetuning))
    if bits == 4:
        _set(r, "quant_type", "quantization_type", "any", lambda v: str(v).lower())
        _set(r, "double_quant", "double_quantization", "flag")


MARKERS = frozenset({"finetuning_type", "cutoff_len", "stage", "template", "lora_rank", "lora_target",
    "quantization_bit", "pure_bf16", "freeze_trainable_layers", "flash_attn",
    "enable_liger_kernel", "use_unsloth"})
# keys known to change nothing the plan models
IGNORED = frozenset("""
    trust_remote_code do_train dataset eval_dataset template overwrite_cache preprocessing_num_workers
    dataloader_num_workers output_dir logging_steps plot_loss overwrite_output_dir save_only_model report_to
    learning_rate lr_scheduler_type warmup_ratio warmup_steps ddp_timeout resume_from_checkpoint val_size
    per_device_eval_batch_size eval_strategy eval_steps adapter_name_or_path
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
