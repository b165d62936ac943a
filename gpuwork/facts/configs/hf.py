"""Hugging Face TrainingArguments / TRL configs (SFTConfig, DPOConfig, ..., with TRL's ModelConfig keys)."""

from __future__ import annotations

from pathlib import Path

from gpuwork.facts.configs.base import (
    Format,
    Reader,
    claim_attention,
    claim_fsdp_options,
    claim_lora,
    claim_model,
    claim_optimizer,
    claim_precision,
    claim_schedule,
    claim_stack,
    follow_deepspeed,
    lora_targets,
)
from gpuwork.message import msg


def read(r: Reader, base: Path) -> None:
    """TrainingArguments / SFTConfig (+ TRL ModelConfig / ScriptArguments keys in a TRL recipe)."""
    for key in ("model_name_or_path", "model_name"):
        if r.has(key):
            claim_model(r, key, base)
            break
    init = r.get("model_init_kwargs") or {}
    dtype = str(r.get("torch_dtype") or r.get("dtype") or init.get("torch_dtype") or init.get("dtype") or "")
    method = None
    use_peft = r.flag("use_peft")
    if r.flag("load_in_4bit"):
        method = "qlora"
        r.claim("method", "qlora", "load_in_4bit")
    elif use_peft:
        method = "lora"
        r.claim("method", "lora", "use_peft")
    elif use_peft is False:
        method = "full"
        r.claim("method", "full", "use_peft")
    elif r.has("model_name_or_path"):  # a TRL recipe: ModelConfig.use_peft defaults to False
        method = "full"
        r.claim("method", "full", "use_peft", msg("config.rule.trl_full"))
    if r.flag("load_in_8bit"):
        r.note(msg("config.eight_bit_base", file=r.file, key="load_in_8bit"))
    if r.flag("use_dora"):
        r.note(msg("config.dora", file=r.file))
    claim_lora(r, r_key="lora_r", alpha_key="lora_alpha", dropout_key="lora_dropout")
    targets = lora_targets(r.get("lora_target_modules"))
    if targets:
        r.claim("lora_targets", targets, "lora_target_modules")
    if r.has("bnb_4bit_quant_type"):
        r.claim("quant_type", str(r.get("bnb_4bit_quant_type")).lower(), "bnb_4bit_quant_type")
    nested = r.flag("use_bnb_nested_quant")
    if nested is not None:
        r.claim("double_quant", nested, "use_bnb_nested_quant")
    for key in ("max_seq_length", "max_length", "block_size", "model_max_length"):
        seq = r.int_(key)
        if seq is not None:
            r.claim("seq_len", seq, key)
            break
    r.used.update({"max_seq_length", "max_length", "block_size", "model_max_length"})  # the first one set decides
    if r.flag("packing"):
        r.note(msg("config.packing", file=r.file, key="packing"))
    r.used.update({"per_device_train_batch_size", "per_gpu_train_batch_size", "gradient_checkpointing",
                   "activation_checkpointing", "use_liger_kernel", "use_liger"})
    for key in ("per_device_train_batch_size", "per_gpu_train_batch_size"):
        batch = r.int_(key)
        if batch is not None:
            r.claim("batch_size", batch, key)
            break
    accum = r.int_("gradient_accumulation_steps")
    if accum is not None:
        r.claim("grad_accum", accum, "gradient_accumulation_steps")
    for key in ("gradient_checkpointing", "activation_checkpointing"):
        on = r.flag(key)
        if on is not None:
            r.claim("grad_checkpointing", on, key)
            break
    if r.flag("activation_offloading"):
        r.note(msg("config.activation_offloading", file=r.file))
    attn = r.get("attn_implementation") or init.get("attn_implementation")
    if attn:
        claim_attention(r, attn, "attn_implementation" if r.has("attn_implementation") else
                   "model_init_kwargs.attn_implementation")
    if r.has("optim") or r.flag("adafactor"):
        key = "optim" if r.has("optim") else "adafactor"
        name = r.get("optim") if key == "optim" else "adafactor"
        claim_optimizer(r, str(name), key)
    loaded = {"bfloat16": "bf16", "torch.bfloat16": "bf16", "float16": "fp16", "torch.float16": "fp16"}.get(dtype)
    pure = loaded is not None and method == "full"  # adapters run under autocast whatever the base is stored in
    bf16, fp16 = r.flag("bf16"), r.flag("fp16")
    if pure and not bf16 and not fp16:
        r.claim("precision", loaded, "torch_dtype" if r.has("torch_dtype") else "dtype",
                msg("config.rule.pure_loaded", dtype=dtype))
    else:
        claim_precision(r, bf16, fp16, keys=("bf16", "fp16"), pure=pure,
                   pure_rule=msg("config.rule.pure_loaded", dtype=dtype),
                   mixed_rule=msg("config.rule.trainer_mixed"), tf32=r.flag("tf32"))
    if dtype and dtype != "auto":
        r.used.update({"torch_dtype", "dtype"})
    elif dtype == "auto":
        r.note(msg("config.dtype_auto", file=r.file))
    claim_schedule(r, epochs_key="num_train_epochs")
    liger = bool(r.flag("use_liger_kernel") or r.flag("use_liger"))
    compile_ = bool(r.flag("torch_compile"))
    claim_stack(r, liger, compile_, False, {"hf-liger": "use_liger_kernel" if r.has("use_liger_kernel") else "use_liger",
                                       "torch-compile": "torch_compile"})
    claim_fsdp_options(r, r.get("fsdp"), "fsdp")
    follow_deepspeed(r, "deepspeed", base)



MARKERS = frozenset({"per_device_train_batch_size", "gradient_accumulation_steps", "optim", "num_train_epochs",
    "output_dir", "learning_rate", "max_seq_length", "max_length", "packing",
    "dataset_text_field", "model_name_or_path", "use_peft", "save_steps", "bf16", "fp16",
    "gradient_checkpointing", "model_init_kwargs", "lr_scheduler_type", "max_steps"})
# keys known to change nothing the plan models
IGNORED = frozenset("""
    output_dir overwrite_output_dir do_train do_eval do_predict eval_strategy evaluation_strategy
    prediction_loss_only per_device_eval_batch_size per_gpu_eval_batch_size eval_accumulation_steps eval_delay
    torch_empty_cache_steps learning_rate weight_decay adam_beta1 adam_beta2 adam_epsilon max_grad_norm
    lr_scheduler_type lr_scheduler_kwargs warmup_ratio warmup_steps log_level log_level_replica log_on_each_node
    logging_dir logging_strategy logging_first_step logging_steps logging_nan_inf_filter save_safetensors
    save_on_each_node save_only_model restore_callback_states_from_checkpoint no_cuda use_cpu use_mps_device
    seed data_seed jit_mode_eval use_ipex fp16_opt_level half_precision_backend bf16_full_eval fp16_full_eval
    tf32 local_rank ddp_backend tpu_num_cores tpu_metrics_debug debug dataloader_drop_last eval_steps
    dataloader_num_workers dataloader_prefetch_factor past_index run_name disable_tqdm remove_unused_columns
    label_names load_best_model_at_end metric_for_best_model greater_is_better ignore_data_skip
    fsdp_min_num_params fsdp_config fsdp_transformer_layer_cls_to_wrap accelerator_config parallelism_config
    label_smoothing_factor optim_args group_by_length length_column_name report_to ddp_find_unused_parameters
    ddp_bucket_cap_mb ddp_broadcast_buffers ddp_static_graph dataloader_pin_memory
    dataloader_persistent_workers dataloader_multiprocessing_context dataloader_in_order skip_memory_metrics
    use_legacy_prediction_loop push_to_hub resume_from_checkpoint hub_model_id hub_strategy hub_token
    hub_private_repo hub_always_push hub_revision gradient_checkpointing_kwargs activation_checkpointing_kwargs
    include_inputs_for_metrics include_for_metrics eval_do_concat_batches fp16_backend push_to_hub_model_id
    push_to_hub_organization push_to_hub_token mp_parameters auto_find_batch_size full_determinism torchdynamo
    ray_scope ddp_timeout torch_compile_backend torch_compile_mode dispatch_batches split_batches
    include_tokens_per_second include_num_input_tokens_seen neftune_noise_alpha optim_target_modules
    batch_eval_metrics eval_on_start eval_use_gather_object average_tokens_across_devices liger_kernel_config
    use_cache project trackio_space_id trackio_bucket_id trackio_static_space_id enable_jit_checkpoint
    train_sampling_strategy save_strategy adafactor use_liger_kernel use_liger
    sortish_sampler predict_with_generate generation_max_length generation_num_beams generation_config
    chat_template_path dataset_text_field dataset_kwargs dataset_num_proc dataset_batch_size eos_token
    pad_token shuffle_dataset packing_strategy padding_free pad_to_multiple_of eval_packing
    completion_only_loss assistant_only_loss loss_type activation_offloading num_of_sequences chars_per_token
    use_flash_attention dataset_name dataset_config dataset_train_split dataset_test_split dataset_streaming
    gradient_checkpointing_use_reentrant ignore_bias_buffers model_revision trust_remote_code
    lora_target_parameters lora_modules_to_save lora_task_type use_rslora use_dora bnb_4bit_quant_storage
    bnb_4bit_compute_dtype load_in_8bit model_name dataset_mixture tokenizer_name_or_path
    torch_dtype dtype model_init_kwargs attn_implementation
    """.split())

FORMAT = Format("hf", MARKERS, read, IGNORED)
