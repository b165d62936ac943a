"""Hugging Face TrainingArguments / TRL configs (SFTConfig, DPOConfig, ..., with TRL's ModelConfig keys)."""

from __future__ import annotations

import json
import re
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
    claim_lora,
    claim_model,
    claim_optimizer,
    claim_optimizer_or_default,
    claim_schedule,
    claim_stack,
    claim_tf32,
    claim_weight_decay,
    follow_deepspeed,
    lora_targets,
    model_dtype,
)
from gpuwork.facts.configs.defaults import defaults_for
from gpuwork.message import Msg, msg

# keys only TRL's configs hold (SFTConfig, DPOConfig, ModelConfig, ScriptArguments): the file is a TRL recipe
_TRL_KEYS = frozenset("""
    model_name_or_path use_peft lora_r lora_alpha lora_dropout lora_target_modules load_in_4bit load_in_8bit
    bnb_4bit_quant_type use_bnb_nested_quant max_length max_seq_length packing dataset_text_field dataset_name
    dataset_mixture chat_template model_init_kwargs padding_free completion_only_loss assistant_only_loss
    beta max_prompt_length loss_type ref_model_init_kwargs precompute_ref_log_probs rpo_alpha dataset_num_proc
    """.split())
_DPO_KEYS = frozenset({"beta", "max_prompt_length", "ref_model_init_kwargs", "precompute_ref_log_probs",
                       "rpo_alpha", "ref_adapter_name", "sync_ref_model", "max_completion_length"})
_LOADED = {"bfloat16": "bf16", "torch.bfloat16": "bf16", "float16": "fp16", "torch.float16": "fp16",
           "float32": "fp32", "torch.float32": "fp32"}


def config_class(data: dict[str, Any]) -> str:
    """Which class the file fills: TRL's DPOConfig or SFTConfig (a TRL recipe), else Trainer's TrainingArguments."""
    keys = set(data)
    if keys & _DPO_KEYS:
        return "trl.DPOConfig"
    if keys & _TRL_KEYS:
        return "trl.SFTConfig"
    return "transformers.TrainingArguments"


def read(r: Reader, base: Path) -> None:
    """TrainingArguments / SFTConfig / DPOConfig (+ TRL ModelConfig / ScriptArguments keys in a TRL recipe).

    A key the file leaves out takes the default of the class it fills (``defaults.defaults_for``): TRL's
    config and ModelConfig for a TRL recipe, Trainer's TrainingArguments otherwise.
    """
    cls = config_class(r.data)
    trl = cls.startswith("trl.")
    r.defaults = (defaults_for(cls), defaults_for("trl.ModelConfig")) if trl else (defaults_for(cls),)
    for key in ("model_name_or_path", "model_name"):
        if r.has(key):
            claim_model(r, key, base)
            break
    method = _method(r, trl)
    _sizes(r, cls)
    _evaluation(r)
    init = r.get("model_init_kwargs") or {}
    attn = r.get("attn_implementation") or init.get("attn_implementation")
    if attn:
        claim_attention(r, attn, "attn_implementation" if r.has("attn_implementation") else
                        "model_init_kwargs.attn_implementation")
    if r.flag("adafactor") and not r.has("optim"):
        claim_optimizer(r, "adafactor", "adafactor")
    else:
        claim_optimizer_or_default(r, "optim")
    _precision(r, method, trl, init)
    claim_schedule(r, epochs_key="num_train_epochs")
    claim_grad_clip(r, "max_grad_norm")
    claim_weight_decay(r)
    claim_deterministic(r)
    claim_tf32(r, "torch_compile")
    liger = bool(r.flag("use_liger_kernel") or r.flag("use_liger"))
    compile_ = bool(r.flag("torch_compile"))
    claim_stack(r, liger, compile_, False, {"hf-liger": "use_liger_kernel" if r.has("use_liger_kernel") else
                                            "use_liger", "torch-compile": "torch_compile"})
    claim_fsdp_options(r, r.get("fsdp"), "fsdp", r.get("fsdp_config"))
    follow_deepspeed(r, "deepspeed", base)


def _method(r: Reader, trl: bool) -> str:
    """Full fine-tuning unless the file asks for PEFT (Trainer trains every weight it is handed)."""
    four_bit, four_rule = r.typed("load_in_4bit", "flag")
    use_peft, peft_rule = r.typed("use_peft", "flag")
    if four_bit:
        method = "qlora"
        r.claim("method", "qlora", "load_in_4bit")
    elif use_peft:
        method = "lora"
        r.claim("method", "lora", "use_peft")
    elif r.has("use_peft"):
        method = "full"
        r.claim("method", "full", "use_peft")
    else:
        method = "full"
        r.claim_default("method", "full", "use_peft" if trl else "-",
                        msg("config.rule.trl_full", rule=peft_rule) if trl else msg("config.rule.no_peft"))
    if r.flag("load_in_8bit"):
        r.note(msg("config.eight_bit_base", file=r.file, key="load_in_8bit"))
    if r.flag("use_dora"):
        r.note(msg("config.dora", file=r.file))
    if method in ("lora", "qlora"):
        claim_lora(r, r_key="lora_r", alpha_key="lora_alpha", dropout_key="lora_dropout")
        targets = lora_targets(r.get("lora_target_modules"))
        if targets:
            r.claim("lora_targets", targets, "lora_target_modules")
    r.used.update({"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "bnb_4bit_quant_type",
                   "use_bnb_nested_quant"})  # LoRA settings train nothing without use_peft
    if method == "qlora":
        quant, rule = r.typed("bnb_4bit_quant_type", "any")
        if quant is not None:
            (r.claim if rule is None else r.claim_default)("quant_type", str(quant).lower(), "bnb_4bit_quant_type",
                                                          rule)
        nested, rule = r.typed("use_bnb_nested_quant", "flag")
        if nested is not None:
            (r.claim if rule is None else r.claim_default)("double_quant", nested, "use_bnb_nested_quant", rule)
        if config_class(r.data) == "trl.SFTConfig":  # what SFTTrainer does (other trainers: not read)
            _claim_trl_kbit_upcast(r, defaults_for("trl.SFTConfig").version)
    del four_rule
    return method


# TRL 0.27.0 (commit 20cc2e1) dropped SFTTrainer's prepare_model_for_kbit_training (docs/memory_misses.md)
_TRL_NO_KBIT_PREPARATION = (0, 27, 0)


def _claim_trl_kbit_upcast(r: Reader, version: str) -> None:
    """Whether the TRL release that reads the file keeps peft's fp32 upcast of a 4-bit model's other parameters."""
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:3])
    if parts >= _TRL_NO_KBIT_PREPARATION:
        r.claim("kbit_upcast", False, "load_in_4bit", msg("config.rule.trl_no_kbit_preparation", version=version))
    else:
        # 0.7.5-0.26: prepared, then embeddings and lm_head cast back to bf16; the fp32 norms keep the stream fp32
        r.claim("kbit_upcast", True, "load_in_4bit", msg("config.rule.trl_kbit_preparation", version=version))


def _sizes(r: Reader, cls: str) -> None:
    """Sequence length, micro-batch, accumulation and checkpointing, from the file or the class's defaults."""
    r.used.update({"max_seq_length", "max_length", "block_size", "model_max_length", "per_gpu_train_batch_size",
                   "gradient_checkpointing", "activation_checkpointing", "use_liger_kernel", "use_liger",
                   "pad_to_max_length"})
    for key in ("max_seq_length", "max_length", "block_size", "model_max_length"):  # the first one set decides
        seq = r.int_(key)
        if seq is not None:
            r.claim("seq_len", seq, key)
            break
    else:
        seq, rule = r.default("max_length")
        if seq is not None:
            r.claim_default("seq_len", int(seq), "max_length", rule)
    if r.flag("packing"):
        r.note(msg("config.packing", file=r.file, key="packing"))
    if r.flag("padding_free"):  # TRL: one flattened sequence, a varlen flash kernel (docs/packed_documents.md)
        r.note(msg("config.packed_documents", file=r.file, key="padding_free"))
    if r.flag("pad_to_max_length"):  # transformers' example scripts: every row padded to the length, a mask marks it
        r.claim("lengths", "padded", "pad_to_max_length")
    batch_key = "per_gpu_train_batch_size" if r.has("per_gpu_train_batch_size") else "per_device_train_batch_size"
    batch, rule = r.typed(batch_key, "int")
    if batch is not None:
        if cls == "trl.DPOConfig":  # chosen and rejected go through the model together (concatenated_forward)
            r.claim("batch_size", 2 * batch, batch_key, msg("config.rule.dpo_pairs", batch=batch) if rule is None
                    else msg("config.rule.both", first=rule, second=msg("config.rule.dpo_pairs", batch=batch)))
            r.note(msg("config.dpo_reference", file=r.file))
        else:
            (r.claim if rule is None else r.claim_default)("batch_size", batch, batch_key, rule)
    accum, rule = r.typed("gradient_accumulation_steps", "int")
    if accum is not None:
        (r.claim if rule is None else r.claim_default)("grad_accum", accum, "gradient_accumulation_steps", rule)
    for key in ("activation_checkpointing", "gradient_checkpointing"):
        if r.has(key):
            on = bool(r.flag(key))
            r.claim("grad_checkpointing", on, key)
            break
    else:
        default, rule = r.default("gradient_checkpointing")
        on = bool(default)
        r.claim_default("grad_checkpointing", on, "gradient_checkpointing", rule)
    if on:
        _checkpointing_kwargs(r)
    if r.flag("activation_offloading"):
        r.note(msg("config.activation_offloading", file=r.file))


def _checkpointing_kwargs(r: Reader) -> None:
    """transformers 5's checkpointing options in the Trainer's kwargs (a mapping, or its JSON text on a command
    line): ``every_n_layers`` (one block in n) as the plan's ``recompute_every``; ``offload`` noted, not priced."""
    for key in ("activation_checkpointing_kwargs", "gradient_checkpointing_kwargs"):
        kwargs = r.get(key)
        if isinstance(kwargs, str):
            try:
                kwargs = json.loads(kwargs)
            except ValueError:
                kwargs = None
        if not isinstance(kwargs, dict):
            continue
        every = kwargs.get("every_n_layers")
        if every is not None:
            if isinstance(every, bool) or not isinstance(every, int):
                raise PlanError("from", msg("error.config.not_whole", file=r.file, key=f"{key}.every_n_layers",
                                            value=repr(every)))
            r.claim("recompute_every", every, f"{key}.every_n_layers")
        if kwargs.get("offload"):
            r.note(msg("config.checkpointing_offload", file=r.file, key=key))
        return


def _evaluation(r: Reader) -> None:
    """The in-run evaluation, where the file's strategy says one runs (eval_strategy / evaluation_strategy "steps"
    or "epoch"): its micro-batch (per_device_eval_batch_size, else the framework's default), eval_accumulation_steps,
    and prediction_loss_only (only the loss kept). Whether predictions are kept otherwise depends on the script's
    compute_metrics, which no config holds: the plan's default (the loss only) stays."""
    r.used.update({"per_device_eval_batch_size", "per_gpu_eval_batch_size", "eval_strategy", "evaluation_strategy",
                   "eval_accumulation_steps", "prediction_loss_only"})  # read, or without effect with no evaluation
    key = "eval_strategy" if r.has("eval_strategy") else "evaluation_strategy"
    strategy = str(r.get(key) or "no").strip().lower()
    if strategy not in ("steps", "epoch"):
        return
    batch_key = "per_gpu_eval_batch_size" if r.has("per_gpu_eval_batch_size") else "per_device_eval_batch_size"
    batch, rule = r.typed(batch_key, "int")
    if batch is not None:
        (r.claim if rule is None else r.claim_default)("eval_batch_size", batch, batch_key, rule)
    accum = r.int_("eval_accumulation_steps")
    if accum is not None:
        r.claim("eval_accum", accum, "eval_accumulation_steps")
    if r.flag("prediction_loss_only"):
        r.claim("eval_keep", "loss", "prediction_loss_only")


def _load_dtype(r: Reader, trl: bool, init: dict[str, Any]) -> tuple[str | None, str, Msg | None]:
    """(bf16 / fp16 / fp32 or None when unknown, the key, the rule) of the weights as the model is loaded."""
    for key, value in (("torch_dtype", r.get("torch_dtype")), ("dtype", r.get("dtype")),
                       ("model_init_kwargs.dtype", init.get("dtype") or init.get("torch_dtype"))):
        if value is not None and str(value) != "auto":
            return _LOADED.get(str(value)), key, None
        if value is not None:  # "auto": the checkpoint's own dtype, as transformers 5 does by default
            return model_dtype(r), key, msg("config.rule.dtype_config", dtype=str(model_dtype(r) or "?"))
    if trl:  # TRL loads in ModelConfig.dtype, float32 by default (also SFTTrainer without model_init_kwargs)
        value, rule = r.default("dtype")
        return _LOADED.get(str(value)), "dtype", rule
    transformers = r.defaults[0]
    if int(str(transformers.version).split(".")[0]) < 5:  # transformers 4 loaded float32 by default
        return "fp32", "-", msg("config.rule.dtype_v4", version=transformers.version)
    loaded = model_dtype(r)
    return loaded, "-", msg("config.rule.dtype_config", dtype=str(loaded or "?"))


def _precision(r: Reader, method: str, trl: bool, init: dict[str, Any]) -> None:
    """Autocast (bf16 / fp16) over the weights as loaded: 16-bit weights train in 16 bits, fp32 ones are masters."""
    loaded, dtype_key, dtype_rule = _load_dtype(r, trl, init)
    fp16, _ = r.typed("fp16", "flag")
    bf16, bf16_rule = r.typed("bf16", "flag")
    if bf16 is None and trl and bf16_rule is not None:  # TRL's __post_init__: bf16 unless fp16
        bf16 = not fp16
        bf16_rule = msg("config.rule.trl_bf16", rule=bf16_rule)
    if bf16 and fp16:
        raise PlanError("precision", msg("error.config.bf16_and_fp16", file=r.file, bf16="bf16", fp16="fp16"))
    family = "bf16" if bf16 else "fp16" if fp16 else None
    key = "bf16" if bf16 else "fp16" if fp16 else "bf16, fp16"
    if family is not None:  # TrainingArguments passes it to the Accelerator as mixed_precision
        r.claim(AUTOCAST, family, key)
    claim = r.claim  # what the run does with the weights as loaded: stated, whatever defaults it took
    if loaded in ("bf16", "fp16") and (method == "full" or family is None):
        # autocast over 16-bit weights keeps them 16-bit: weights, gradients and AdamW states in that dtype
        claim("precision", loaded, dtype_key if family is None else f"{dtype_key}, {key}",
              msg("config.rule.pure_loaded", dtype=loaded) if dtype_rule is None else
              msg("config.rule.both", first=dtype_rule, second=msg("config.rule.pure_loaded", dtype=loaded)))
    elif family is not None:
        rule = msg("config.rule.trainer_mixed") if method == "full" else msg("config.rule.adapter_mixed")
        if loaded is None and method == "full":
            rule = msg("config.rule.dtype_unknown")
        if bf16_rule is not None and family == "bf16":
            rule = msg("config.rule.both", first=bf16_rule, second=rule)
        if dtype_rule is not None:
            rule = msg("config.rule.both", first=dtype_rule, second=rule)
        claim("precision", f"{family}-mixed", key, rule)
    elif r.has("bf16") or r.has("fp16") or loaded == "fp32":
        claim("precision", "fp32", key, msg("config.rule.fp32_tf32") if r.flag("tf32") else msg("config.rule.fp32"))
    r.used.update({"torch_dtype", "dtype", "tf32"})


MARKERS = frozenset({"per_device_train_batch_size", "gradient_accumulation_steps", "optim", "num_train_epochs",
    "output_dir", "learning_rate", "max_seq_length", "max_length", "packing",
    "dataset_text_field", "model_name_or_path", "use_peft", "save_steps", "bf16", "fp16",
    "gradient_checkpointing", "model_init_kwargs", "lr_scheduler_type", "max_steps"})
# keys known to change nothing the plan models
IGNORED = _TRL_KEYS - {"model_name_or_path", "use_peft", "lora_r", "lora_alpha", "lora_dropout"} | frozenset("""
    dataset_mixer dataset_splits chat_template max_completion_length ref_adapter_name sync_ref_model
    label_pad_token_id truncation_mode generate_during_eval
    output_dir overwrite_output_dir do_train do_eval do_predict eval_delay
    torch_empty_cache_steps learning_rate adam_beta1 adam_beta2 adam_epsilon
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
    hub_private_repo hub_always_push hub_revision
    include_inputs_for_metrics include_for_metrics eval_do_concat_batches fp16_backend push_to_hub_model_id
    push_to_hub_organization push_to_hub_token mp_parameters auto_find_batch_size torchdynamo
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
