"""The TrainPlan a user's run is, read from its model and, under a Trainer, its TrainingArguments and state.

Part of measuring the user's own run (``gpuwork.measure.hf``, which imports ``infer_plan`` from here): the
record says each plan field it read and where from.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuwork.errors import ModelError, PlanError
from gpuwork.facts.configs import optimizer_choice
from gpuwork.measure.errors import TrialError
from gpuwork.measure.sdpa import enabled_backend
from gpuwork.message import msg
from gpuwork.plan import HSDP_GROUP_GPUS, TrainPlan

# config keys that identify an architecture's shape: a user's model matching a preset on all of them is it
_SHAPE_KEYS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "intermediate_size", "vocab_size", "tie_word_embeddings", "n_embd", "n_layer", "n_head")


def unwrap(model: Any) -> Any:
    """The model inside DDP / FSDP / accelerate wrappers."""
    while hasattr(model, "module") and not hasattr(model, "peft_config"):
        model = model.module
    return model


def base_model(model: Any) -> Any:
    """The model under its wrappers and, for a peft model, under its adapters."""
    model = unwrap(model)
    if hasattr(model, "peft_config") and hasattr(model, "get_base_model"):
        return model.get_base_model()
    return model


def _model_ref(model: Any, out: Path | None) -> tuple[str, str]:
    """(plan.model, where it came from): a matching preset, a local config folder, a hub id, or the config
    written next to the record."""
    from gpuwork.facts.model import list_presets, load_config

    config = getattr(base_model(model), "config", None)
    if config is None:
        raise ModelError(msg("error.hf.no_config", model_class=type(model).__name__))
    data = config.to_dict()
    shape = {k: data.get(k) for k in _SHAPE_KEYS if k in data}
    for name in list_presets():
        preset, _ = load_config(name)
        if all(preset.get(k) == v for k, v in shape.items()):
            return name, "preset with the same shape"
    source = str(getattr(config, "name_or_path", "") or getattr(model, "name_or_path", "") or "")
    if source and (Path(source).expanduser() / "config.json").is_file():
        return source, "model folder"
    if source and source.count("/") == 1 and not Path(source).exists():
        return source, "hub id"
    folder = (out or Path.cwd()) / f"model-config-{data.get('model_type', 'model')}"
    folder.mkdir(parents=True, exist_ok=True)
    config.to_json_file(str(folder / "config.json"))
    return str(folder / "config.json"), "config written next to the record"


def _infer_method(model: Any, fields: dict[str, Any], put: Callable[[str, Any, str], Any]) -> None:
    """The method from the model: a peft model is ``lora`` (``qlora`` on a 4-bit base, with its rank, alpha, dropout
    and targets), a model with some frozen parameters ``freeze`` (with its trained blocks), else ``full``."""
    base = base_model(model)
    wrapped = unwrap(model)
    four_bit = bool(getattr(base, "is_loaded_in_4bit", False)) or any(
        "4bit" in type(p).__name__.lower() for p in base.parameters())
    if hasattr(wrapped, "peft_config"):
        cfg = next(iter(wrapped.peft_config.values()))
        fields["method"] = put("method", "qlora" if four_bit else "lora", "peft model" + (" on a 4-bit base" if four_bit
                                                                                          else ""))
        targets = cfg.target_modules
        targets = (targets,) if isinstance(targets, str) else tuple(sorted(targets or ()))
        if targets:
            fields["lora_targets"] = put("lora_targets", list(targets), "peft config")
        fields["lora_r"] = put("lora_r", int(cfg.r), "peft config")
        fields["lora_alpha"] = put("lora_alpha", int(cfg.lora_alpha), "peft config")
        fields["lora_dropout"] = put("lora_dropout", float(cfg.lora_dropout), "peft config")
    else:
        params = list(base.parameters())
        frozen = any(not p.requires_grad for p in params)
        fields["method"] = put("method", "freeze" if frozen else "full",
                               "some parameters frozen" if frozen else "every parameter trains")
        if frozen:
            from gpuwork.facts.model import find_blocks

            layers = getattr(base.config, "num_hidden_layers", None)
            with contextlib.suppress(Exception):  # blocks not found: the plan keeps its default
                if layers is not None:
                    _, blocks = find_blocks(base, layers)
                    trained = sum(1 for b in blocks if any(p.requires_grad for p in b.parameters()))
                    fields["trainable_layers"] = put("trainable_layers", max(1, trained),
                                                     "blocks with trainable weights")


def _adapter_compute_dtype(model: Any) -> tuple[Any, str]:
    """(dtype, what it was read from) the frozen base of a peft model computes in: a 4-bit base's
    ``bnb_4bit_compute_dtype`` (its quantization config), else the dtype most of the frozen floating-point weights
    are stored in. The adapters' own dtype says nothing: peft >= 0.12 upcasts 16-bit adapters to fp32
    (``get_peft_model(autocast_adapter_dtype=True)``, docs/peft_adapter_dtype.md) while the base GEMMs stay 16-bit."""
    import torch

    base = base_model(model)
    quant = getattr(getattr(base, "config", None), "quantization_config", None)
    compute = quant.get("bnb_4bit_compute_dtype") if isinstance(quant, dict) else getattr(
        quant, "bnb_4bit_compute_dtype", None)
    if isinstance(compute, str):
        compute = getattr(torch, compute.removeprefix("torch."), None)
    if isinstance(compute, torch.dtype):
        return compute, "quantization_config.bnb_4bit_compute_dtype"
    sizes: dict[Any, int] = {}
    for p in base.parameters():
        if not p.requires_grad and p.dtype.is_floating_point:
            sizes[p.dtype] = sizes.get(p.dtype, 0) + p.numel()
    if not sizes:
        return torch.float32, "no frozen floating-point weights"
    return max(sizes, key=lambda d: sizes[d]), "frozen base weights"


def _infer_precision(model: Any, args: Any, fields: dict[str, Any], put: Callable[[str, Any, str], Any]) -> None:
    """The plan's precision from the dtype the model computes in and the Trainer's mixed-precision flag.

    Full / freeze: the trainable weights' dtype (16-bit weights are a pure 16-bit plan, fp32 ones fp32, or
    ``<low>-mixed`` under ``args.bf16`` / ``args.fp16``). LoRA / QLoRA: the frozen base's compute dtype
    (``_adapter_compute_dtype``): a bf16 base with peft's fp32 adapters and no Trainer flag is ``bf16`` (the base
    GEMMs run in bf16, as gpuwork's own trial builds a ``bf16`` LoRA plan), with the flag ``bf16-mixed`` (autocast
    over a 16-bit base), an fp32 base without the flag ``fp32``."""
    import torch

    base = base_model(model)
    adapters = hasattr(unwrap(model), "peft_config")
    if adapters:
        dtype, where = _adapter_compute_dtype(model)
    else:
        dtype = next((p.dtype for p in base.parameters() if p.requires_grad), torch.float32)
        where = "trainable weights"
    half = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype)
    if args is not None and (getattr(args, "bf16", False) or getattr(args, "fp16", False)):
        low = "bf16" if getattr(args, "bf16", False) else "fp16"
        precision = f"{low}-mixed" if adapters or not half else low
        fields["precision"] = put("precision", precision, f"args.{low} with {where} in {dtype}")
    else:
        fields["precision"] = put("precision", half or "fp32", f"{where} in {dtype}")


def _infer_from_args(args: Any, state: Any, seq_len: int | None, world_size: int, fields: dict[str, Any],
                     put: Callable[[str, Any, str], Any]) -> bool:
    """The plan fields a Trainer's TrainingArguments (and state) say: batch, accumulation, optimizer, gradient
    clipping (``max_grad_norm`` > 0: the Trainer clips), weight decay (the value the Trainer hands its optimizer
    rather than the stack's default), TF32, sharding, checkpoints, epochs and dataset tokens. Returns whether the arguments ask for gradient checkpointing."""
    fields["batch_size"] = put("batch_size", int(args.per_device_train_batch_size),
                               "args.per_device_train_batch_size")
    fields["grad_accum"] = put("grad_accum", int(args.gradient_accumulation_steps),
                               "args.gradient_accumulation_steps")
    switch = getattr(args, "activation_checkpointing", None)  # transformers >= 5 name
    checkpointing = bool(switch if switch is not None else args.gradient_checkpointing)
    optim = str(getattr(args.optim, "value", args.optim))
    try:  # the one name table (gpuwork.facts.configs), as for --optimizer and --from
        optimizer, impl, nearest = optimizer_choice(optim, key="args.optim")
        source = f"args.optim={optim}" + (" (the nearest modelled optimizer)" if nearest is not None else "")
    except PlanError:
        optimizer, impl, source = "adamw", None, f"args.optim={optim} has no plan equivalent: adamw assumed"
    fields["optimizer"] = put("optimizer", optimizer, source)
    if impl:
        fields["optimizer_impl"] = put("optimizer_impl", impl, source)
    norm = getattr(args, "max_grad_norm", None)
    fields["grad_clip"] = put("grad_clip", norm is not None and float(norm) > 0, f"args.max_grad_norm={norm}")
    if getattr(args, "weight_decay", None) is not None:
        fields["weight_decay"] = put("weight_decay", float(args.weight_decay), "args.weight_decay")
    fields["tf32"] = put("tf32", *_tf32(args))
    if getattr(args, "fsdp", None):
        _infer_fsdp(args, world_size, fields, put)
    elif getattr(args, "deepspeed", None):
        put("sharding", "ddp", "args.deepspeed: the ZeRO stage is not read here (gpuwork plan --from reads "
            "DeepSpeed configs)")
    if getattr(args, "save_strategy", None) is not None and str(getattr(args.save_strategy, "value",
                                                                     args.save_strategy)) == "steps":
        fields["checkpoint_every_steps"] = put("checkpoint_every_steps", int(args.save_steps), "args.save_steps")
    if getattr(args, "save_total_limit", None):
        fields["checkpoints_kept"] = put("checkpoints_kept", int(args.save_total_limit), "args.save_total_limit")
    run_steps = getattr(state, "max_steps", 0) if state is not None else 0
    if run_steps and seq_len:
        epochs = float(args.num_train_epochs) if args.max_steps <= 0 else 1.0
        tokens = int(run_steps) * int(seq_len) * fields["batch_size"] * fields["grad_accum"] * world_size
        fields["epochs"] = put("epochs", epochs, "args.num_train_epochs" if args.max_steps <= 0
                               else "args.max_steps")
        fields["dataset_tokens"] = put("dataset_tokens", max(1, round(tokens / epochs)),
                                       "run steps x batch x seq_len x ranks / epochs (padded tokens)")
    return checkpointing


def _tf32(args: Any) -> tuple[bool, str]:
    """Whether fp32 matmuls run as TF32: ``args.tf32`` when set (the Trainer sets torch's switch from it), else
    the process's own switch at the time of reading (``torch.get_float32_matmul_precision()``: "highest", torch's
    default, is IEEE fp32; "high" / "medium" allow TF32)."""
    import torch

    if getattr(args, "tf32", None) is not None:
        return bool(args.tf32), "args.tf32"
    mode = torch.get_float32_matmul_precision()
    return mode != "highest", f"torch.get_float32_matmul_precision()={mode}"


def _infer_fsdp(args: Any, world_size: int, fields: dict[str, Any], put: Callable[[str, Any, str], Any]) -> None:
    """The Trainer's FSDP strategy -> sharding: the hybrid ones (hsdp, hsdp-zero2) with their shard group, the
    GPUs of one node (FSDP1 builds the group inside each machine: LOCAL_WORLD_SIZE under torchrun); else fsdp.
    transformers 5 keeps the strategy in ``fsdp_config["reshard_after_forward"]`` (a name under FSDP1), older
    versions in the ``fsdp`` option list."""
    fsdp, config = args.fsdp, getattr(args, "fsdp_config", None) or {}
    if isinstance(fsdp, bool):
        fsdp, source = [str(config.get("reshard_after_forward", ""))], "args.fsdp_config.reshard_after_forward"
    else:
        fsdp, source = fsdp.split() if isinstance(fsdp, str) else fsdp, "args.fsdp"
    options = {str(getattr(o, "value", o)).lower() for o in fsdp}
    hybrid = "hsdp-zero2" if "hybrid_shard_zero2" in options else "hsdp" if "hybrid_shard" in options else None
    if hybrid is None:
        fields["sharding"] = put("sharding", "fsdp", "args.fsdp")
        return
    fields["sharding"] = put("sharding", hybrid, source)
    local = os.environ.get("LOCAL_WORLD_SIZE", "")
    group = int(local) if local.isdigit() and int(local) > 0 else min(max(world_size, 1), HSDP_GROUP_GPUS)
    if world_size % group:
        group = max(world_size, 1)  # groups that do not divide the run: read as one group
    fields["shard_group_gpus"] = put("shard_group_gpus", group, "LOCAL_WORLD_SIZE (GPUs of one node)" if local
                                     else "one node of up to 8 GPUs")


def infer_plan(model: Any, args: Any = None, *, seq_len: int | None = None, batch_size: int | None = None,
               world_size: int = 1, out: str | Path | None = None, state: Any = None) -> tuple[TrainPlan, dict[str, Any]]:
    """The TrainPlan a user's run is, read from its model (and Trainer's TrainingArguments when given).

    Returns (plan, inferred): ``inferred`` maps each plan field set to ``{"value", "from"}`` so the
    record says what was read and what defaulted. Model: a preset of the same shape, the model's
    folder, its hub id, or its config written into ``out``. Method: a peft model is ``lora``
    (``qlora`` on a 4-bit base), a model with some frozen parameters ``freeze``, else ``full``.
    """
    inferred: dict[str, Any] = {}

    def put(field: str, value: Any, source: str) -> Any:
        inferred[field] = {"value": value, "from": source}
        return value

    fields: dict[str, Any] = {}
    ref, where = _model_ref(model, Path(out) if out is not None else None)
    fields["model"] = put("model", ref, where)
    base = base_model(model)
    _infer_method(model, fields, put)
    name = type(base).__name__
    task = "seq-cls" if name.endswith("ForSequenceClassification") else "masked-lm" if name.endswith(
        "ForMaskedLM") else "causal-lm"
    fields["task"] = put("task", task, f"model class {name}")
    _infer_precision(model, args, fields, put)
    attn = getattr(base.config, "_attn_implementation", None)
    attention = {"flash_attention_2": "flash", "flash_attention_3": "flash3", "flash_attention_4": "flash4",
                 "sdpa": "sdpa", "eager": "eager"}.get(str(attn))
    if attention:
        fields["attention"] = put("attention", attention, f"config._attn_implementation={attn}")
    if attention == "sdpa":  # torch's process-wide SDPA flags: what sdpa_kernel / enable_*_sdp restrict the run to
        # (transformers' config says only "sdpa"; unrestricted flags do not say which kernel torch picks: default kept)
        backend, flags = enabled_backend()
        if backend is not None:
            fields["sdpa_backend"] = put("sdpa_backend", backend.value, f"torch.backends.cuda SDPA flags: {flags}")
    if seq_len:
        fields["seq_len"] = put("seq_len", int(seq_len), "longest training batch measured")
    checkpointing = bool(getattr(base, "is_activation_checkpointing", None)  # transformers >= 5 name
                         or getattr(base, "is_gradient_checkpointing", False))
    if batch_size and args is None:
        fields["batch_size"] = put("batch_size", int(batch_size), "largest training batch measured")
    if args is not None:
        checkpointing = _infer_from_args(args, state, seq_len, world_size, fields, put) or checkpointing
    fields["grad_checkpointing"] = put("grad_checkpointing", checkpointing, "model / args.gradient_checkpointing")
    fields["gpus"] = put("gpus", max(1, world_size), "processes of the run")
    inferred["eval_fraction"] = {"value": TrainPlan.eval_fraction, "from": "default (no evaluation measured)"}
    try:
        plan = TrainPlan(**fields)
    except PlanError as exc:
        raise TrialError(msg("error.hf.plan_invalid", detail=str(exc))) from None
    return plan, inferred


__all__ = ["base_model", "infer_plan", "unwrap"]
