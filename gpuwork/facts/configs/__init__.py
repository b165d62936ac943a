"""Read the training configs people already have and turn them into TrainPlan fields, with the mapping shown.

Formats, told apart by their keys (not the file name):

- ``hf``: Hugging Face ``TrainingArguments`` / TRL ``SFTConfig`` (+ TRL's ``ModelConfig`` keys a TRL recipe
  YAML holds), as JSON or YAML, including ``TrainingArguments.to_json_string()`` / ``to_dict()`` output;
- ``axolotl``: an axolotl YAML (``base_model``, ``sequence_len``, ``micro_batch_size``, ``adapter``, ...);
- ``llamafactory``: a LLaMA-Factory YAML (``finetuning_type``, ``cutoff_len``, ``stage``, ``template``, ...);
- ``deepspeed``: a DeepSpeed config JSON (``zero_optimization``, ``train_micro_batch_size_per_gpu``, ...);
- ``accelerate``: an accelerate config YAML (``distributed_type``, ``num_processes``, ``fsdp_config``, ...);
- ``peft``: a peft adapter's ``adapter_config.json`` (``peft_type``, ``r``, ``lora_alpha``, ``target_modules``,
  ``base_model_name_or_path``), as ``PeftModel.save_pretrained`` writes it.

Several files combine (a TrainingArguments JSON + a DeepSpeed JSON + an accelerate YAML). Each file makes
*claims* (plan field, value, file, key, rule); two files that claim different values for one field are an
error naming both (HF's DeepSpeed integration refuses such mismatches too), except *weak* claims (accelerate's
``mixed_precision`` and ``MULTI_GPU``), which yield to the training config, as Trainer's own arguments do.
DeepSpeed ``"auto"`` values claim nothing: they defer to the TrainingArguments file.

Rules worth knowing (each is also printed next to the field it decides):

- Precision. Trainer's ``bf16=True`` autocasts over the weights the model was loaded with (transformers
  ``TrainingArguments.bf16``: "Whether to use bf16 (mixed) precision training"). Weights loaded in fp32 (the
  ``from_pretrained`` default when no dtype is given) are fp32 masters: ``bf16-mixed``. Full fine-tuning of a
  model loaded in bf16 (``torch_dtype``/``dtype: bfloat16`` in the file; axolotl always loads in bf16 when
  ``bf16`` is on, ``normalize_config`` sets ``cfg.torch_dtype``) trains bf16 weights: ``bf16``. LLaMA-Factory
  upcasts trainable weights to fp32 unless ``pure_bf16``. DeepSpeed's ``bf16.enabled`` keeps fp32 master weights
  in its optimizer: ``bf16-mixed``. Adapters (LoRA/QLoRA) always run under autocast: ``bf16-mixed``.
  Under FSDP (Trainer's ``fsdp`` options, an accelerate config with ``distributed_type: FSDP``) with mixed
  precision on (a training config's ``bf16``/``fp16``, else accelerate's ``mixed_precision``), accelerate's
  ``prepare`` (0.30 and later, FSDP1 and FSDP2) upcasts 16-bit trainable weights to fp32: a full fine-tune loaded
  in bf16 is ``bf16-mixed`` (``fp16-mixed`` under fp16). axolotl's FSDP2 path has its own preparation without the
  upcast. docs/configs.md has the source lines.
- GPUs. accelerate's ``num_processes`` is the total over all machines (``accelerate launch`` starts
  ``num_processes // num_machines`` per machine); a DeepSpeed numeric ``train_batch_size`` gives the world size
  as ``train_batch_size / (micro-batch x accumulation)``.
- ``max_steps`` fixes the run's length: the plan's data becomes ``max_steps`` x tokens per step, one epoch.

Example:
    >>> imported = import_configs(["training_args.json", "ds_config.json"])   # doctest: +SKIP
    >>> imported.fields["sharding"], imported.fields["batch_size"]              # doctest: +SKIP
    ('zero3', 4)
"""


from gpuwork.facts.configs.base import DEFAULT_SHARDED_GPUS, Claim, ConfigImport, Format, read_config
from gpuwork.facts.configs.combine import import_configs
from gpuwork.facts.configs.optimizers import DEEPSPEED_OPTIMIZERS, OPTIMIZER_NAMES, optimizer_choice
from gpuwork.facts.configs.registry import FORMATS, REGISTRY, detect_format

__all__ = ["DEEPSPEED_OPTIMIZERS", "DEFAULT_SHARDED_GPUS", "FORMATS", "OPTIMIZER_NAMES", "REGISTRY", "Claim",
           "ConfigImport", "Format", "detect_format", "import_configs", "optimizer_choice", "read_config"]
