"""Catalog entries "error.config.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error.config"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- errors ------------------------------------------------------------------------------------------------------
    "error.config.missing": ("config file '{file:raw}' does not exist: check the path given to --from",
                             "файла конфигурации '{file:raw}' нет: проверьте путь в --from"),
    "error.config.unreadable": ("'{file:raw}' is not a text config file (JSON or YAML)",
                                "'{file:raw}' — не текстовый файл конфигурации (JSON или YAML)"),
    "error.config.bad_json": ("config file '{file:raw}' is not valid JSON (line {line}: {reason:raw})",
                              "файл конфигурации '{file:raw}' — некорректный JSON (строка {line}: {reason:raw})"),
    "error.config.bad_yaml": ("config file '{file:raw}' is not valid YAML (line {line}: {reason:raw})",
                              "файл конфигурации '{file:raw}' — некорректный YAML (строка {line}: {reason:raw})"),
    "error.config.needs_yaml": ("reading '{file:raw}' needs PyYAML: `pip install 'gpuwork[configs]'`",
                                "для чтения '{file:raw}' нужен PyYAML: `pip install 'gpuwork[configs]'`"),
    "error.config.not_mapping": ("config file '{file:raw}' holds a {kind:raw}, not a mapping of keys",
                                 "в файле конфигурации '{file:raw}' — {kind:raw}, а не набор ключей"),
    "error.config.not_mapping_key": ("'{file:raw}': {key:raw} must be a mapping of keys",
                                     "'{file:raw}': {key:raw} должен быть набором ключей"),
    "error.config.unrecognised": (
        "'{file:raw}' is not a config gpuwork reads (keys: {keys:raw}): pass a TrainingArguments / SFTConfig, "
        "axolotl, LLaMA-Factory, DeepSpeed or accelerate config",
        "'{file:raw}' — не та конфигурация, которую читает gpuwork (ключи: {keys:raw}): передайте TrainingArguments "
        "/ SFTConfig, axolotl, LLaMA-Factory, DeepSpeed или accelerate"),
    "error.config.not_whole": ("'{file:raw}': {key:raw} = {value:raw} must be a whole number",
                               "'{file:raw}': {key:raw} = {value:raw} должно быть целым числом"),
    "error.config.not_number": ("'{file:raw}': {key:raw} = {value:raw} must be a number",
                                "'{file:raw}': {key:raw} = {value:raw} должно быть числом"),
    "error.config.not_bool": ("'{file:raw}': {key:raw} = {value:raw} must be true or false",
                              "'{file:raw}': {key:raw} = {value:raw} должно быть `true` или `false`"),
    "error.config.optimizer_close": (
        "'{file:raw}': {key:raw} = {name:raw} is not an optimizer name Trainer, TRL, axolotl or DeepSpeed uses; "
        "did you mean {close:raw}?",
        "'{file:raw}': {key:raw} = {name:raw} — не имя оптимизатора из Trainer, TRL, axolotl или DeepSpeed; может "
        "быть, {close:raw}?"),
    "error.config.optimizer_unknown": (
        "'{file:raw}': {key:raw} = {name:raw} is not an optimizer name Trainer, TRL, axolotl or DeepSpeed uses: "
        "set --optimizer (adamw, adamw-8bit, paged-adamw-8bit, adafactor, sgd, lion)",
        "'{file:raw}': {key:raw} = {name:raw} — не имя оптимизатора из Trainer, TRL, axolotl или DeepSpeed: задайте "
        "--optimizer (adamw, adamw-8bit, paged-adamw-8bit, adafactor, sgd, lion)"),
    "error.config.bf16_and_fp16": ("'{file:raw}': {bf16:raw} and {fp16:raw} are both on: keep one",
                                   "'{file:raw}': {bf16:raw} и {fp16:raw} включены оба: оставьте один"),
    "error.config.conflict": (
        "{field:raw} is {value:raw} in {file:raw} ({key:raw}) but {other_value:raw} in {other_file:raw} "
        "({other_key:raw}): make the files agree, or set it with a flag",
        "{field:raw} = {value:raw} в {file:raw} ({key:raw}), но {other_value:raw} в {other_file:raw} "
        "({other_key:raw}): согласуйте файлы или задайте значение флагом"),
    "error.config.zero_stage": ("'{file:raw}': zero_optimization.stage = {value:raw}: must be 0, 1, 2 or 3",
                                "'{file:raw}': `zero_optimization.stage` = {value:raw}: должно быть 0, 1, 2 или 3"),
    "error.config.distributed_type": (
        "'{file:raw}': distributed_type {value:raw} is not an accelerate type (NO, MULTI_GPU, DEEPSPEED, FSDP, ...)",
        "'{file:raw}': `distributed_type` {value:raw} — не тип accelerate (NO, MULTI_GPU, DEEPSPEED, FSDP, ...)"),
    "error.config.fsdp_strategy": (
        "'{file:raw}': fsdp_sharding_strategy {value:raw} is not FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD "
        "or HYBRID_SHARD_ZERO2",
        "'{file:raw}': `fsdp_sharding_strategy` {value:raw} — не FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD "
        "или HYBRID_SHARD_ZERO2"),
    "error.config.finetuning_type": ("'{file:raw}': finetuning_type {value:raw}: must be lora, freeze or full",
                                     "'{file:raw}': `finetuning_type` {value:raw}: должно быть lora, freeze или full"),
    "error.config.train_batch_size": (
        "'{file:raw}': train_batch_size {total} is not a multiple of micro-batch {micro} x accumulation {accum}",
        "'{file:raw}': `train_batch_size` {total} не делится на микропакет {micro} × накопление {accum}"),
    "error.config.peft_type": (
        "'{file:raw}': peft_type {value:raw}: only LoRA adapters are modelled (peft_type LORA)",
        "'{file:raw}': `peft_type` {value:raw}: моделируются только адаптеры LoRA (`peft_type` LORA)"),
    "error.config.no_model": ("{files:raw} name no model: add --model (a preset, a config.json or a hub id)",
                              "{files:raw}: модель не указана: добавьте --model (заготовку, config.json или имя на "
                              "Hugging Face Hub)"),
    "error.config.not_deepspeed": ("'{file:raw}' is referenced by {key:raw} as a DeepSpeed config but is not one",
                                   "'{file:raw}' указан в {key:raw} как конфигурация DeepSpeed, но ею не является"),
    # -- model configs (gpuwork.facts.model) ----------------------------------------------------------------------
    "error.config.missing_fields": (
        "{name:raw} is an incomplete config.json: it lacks {fields:raw}; copy the model's full config.json "
        "(every field the architecture needs)",
        "{name:raw} — неполный config.json: в нём нет {fields:raw}; скопируйте полный config.json модели "
        "(все поля, нужные архитектуре)"),
    "error.config.not_positive_int": (
        "{name:raw}: {field:raw}={value:raw} must be a whole number >= 1",
        "{name:raw}: {field:raw}={value:raw} — нужно целое число >= 1"),
    "error.config.field_type": (
        "{name:raw}: {field:raw}={value:raw} is not {expected}: fix the config.json",
        "{name:raw}: {field:raw}={value:raw} — нужно {expected}: исправьте config.json"),
    "error.config.not_count": (
        "{name:raw}: {field:raw}={value:raw} must be a whole number >= 0",
        "{name:raw}: {field:raw}={value:raw} — нужно целое число >= 0"),
    "error.config.experts_per_token": (
        "{name:raw}: {per_token:int} experts per token, but only {experts:int} experts: a token cannot use more "
        "experts than the layer has; fix num_experts_per_tok",
        "{name:raw}: {per_token:int} экспертов на токен, но всего {experts:int} экспертов: токен не может "
        "использовать больше экспертов, чем есть в слое; исправьте num_experts_per_tok"),
    "error.config.too_large": (
        "{name:raw}: {field:raw}={value:raw} is beyond any real model: use at most {maximum:int}",
        "{name:raw}: {field:raw}={value:raw} — больше, чем у любой реальной модели: не больше {maximum:int}"),
    "error.config.heads_by_kv": (
        "{name:raw}: num_attention_heads={heads:int} is not divisible by num_key_value_heads={kv_heads:int}: "
        "key/value heads must divide the attention heads",
        "{name:raw}: num_attention_heads={heads:int} не делится на num_key_value_heads={kv_heads:int}: число "
        "голов ключей/значений должно делить число голов внимания"),
    "error.config.hidden_by_heads": (
        "{name:raw}: hidden_size={hidden:int} is not divisible by num_attention_heads={heads:int}: set head_dim "
        "or fix one of the two",
        "{name:raw}: hidden_size={hidden:int} не делится на num_attention_heads={heads:int}: задайте head_dim "
        "или исправьте одно из двух"),
}
