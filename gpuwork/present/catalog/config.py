"""Catalog entries "config.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "config"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the report ---------------------------------------------------------------------------------------------
    "config.header": ("Imported {count} config {count:pl:file|files}:",
                      "Прочитано {count} {count:pl:файл|файла|файлов} конфигурации:"),
    "config.file": ("  {file:raw} ({format:@config.format})", "  {file:raw} ({format:@config.format})"),
    "config.format.hf": ("Hugging Face TrainingArguments / TRL SFTConfig",
                         "Hugging Face TrainingArguments / TRL SFTConfig"),
    "config.format.axolotl": ("axolotl YAML", "YAML axolotl"),
    "config.format.llamafactory": ("LLaMA-Factory YAML", "YAML LLaMA-Factory"),
    "config.format.deepspeed": ("DeepSpeed config", "конфигурация DeepSpeed"),
    "config.format.accelerate": ("accelerate config", "конфигурация accelerate"),
    "config.format.peft": ("peft adapter config", "конфигурация адаптера peft"),
    "config.rule.peft_lora": (
        "LoRA adapter; the file does not say how the base is loaded: --method qlora for a 4-bit one",
        "адаптер LoRA; файл не говорит, как загружена база: --method qlora для 4-битной"),
    "config.peft_base_unknown": (
        "{file:raw}: base_model_name_or_path = {value:raw} is neither a bundled preset nor a folder here: "
        "name the model with --model",
        "{file:raw}: `base_model_name_or_path` = {value:raw} — не встроенная заготовка и не папка на этой машине: "
        "укажите модель через --model"),
    "config.peft_regex": (
        "{file:raw}: target_modules = {value:raw} is a regular expression peft matches against module names; "
        "not read: set --lora-targets",
        "{file:raw}: `target_modules` = {value:raw} — регулярное выражение, которое peft сверяет с именами "
        "модулей; не прочитано: задайте --lora-targets"),
    "config.peft_modules_to_save": (
        "{file:raw}: modules_to_save ({modules:raw}) train in full beside the adapters; not counted (memory "
        "estimate too low)",
        "{file:raw}: `modules_to_save` ({modules:raw}) обучаются полностью рядом с адаптерами; не учтены (оценка "
        "памяти занижена)"),
    "config.peft_layers": (
        "{file:raw}: layers_to_transform: adapters on some layers only; counted on every layer (too high)",
        "{file:raw}: `layers_to_transform`: адаптеры только на части слоёв; учтены на всех слоях (оценка "
        "завышена)"),
    "config.understood": ("Understood (plan field = value <- file: key):",
                          "Понято (поле плана = значение ← файл: ключ):"),
    "config.mapped": ("  {field:raw} = {value:raw}  <- {file:raw}: {key:raw}",
                      "  {field:raw} = {value:raw}  ← {file:raw}: {key:raw}"),
    "config.mapped_rule": ("  {field:raw} = {value:raw}  <- {file:raw}: {key:raw} ({rule})",
                           "  {field:raw} = {value:raw}  ← {file:raw}: {key:raw} ({rule})"),
    "config.mapped_overridden": (
        "  {field:raw}: {flag:raw} on the command line wins over {value:raw} from {file:raw}: {key:raw}",
        "  {field:raw}: {flag:raw} в командной строке важнее, чем {value:raw} из {file:raw}: {key:raw}"),
    "config.defaulted_title": ("Defaulted (no file sets them; change with the flag of the same name):",
                               "По умолчанию (ни один файл их не задаёт; меняются одноимённым флагом):"),
    "config.defaulted": ("  {field:raw} = {value:raw}", "  {field:raw} = {value:raw}"),
    "config.ignored_title": ("Ignored (no effect on memory, time, disk or cost):",
                             "Пропущено (не влияет на память, время, диск и стоимость):"),
    "config.ignored": ("  {file:raw}: {keys:raw}", "  {file:raw}: {keys:raw}"),
    "config.notes_title": ("Notes:", "Замечания:"),
    "config.note": ("  - {note}", "  - {note}"),
    # -- how a value was decided ------------------------------------------------------------------------------------
    "config.rule.model_local": ("local config {path:raw}", "локальная конфигурация {path:raw}"),
    "config.rule.model_preset": ("hub id {hub_id:raw} is the bundled preset {preset:raw}",
                                 "модель {hub_id:raw} — это встроенная заготовка {preset:raw}"),
    "config.rule.model_variant": (
        "{hub_id:raw} has the architecture of the bundled preset {preset:raw} (an instruct/chat variant)",
        "у {hub_id:raw} архитектура встроенной заготовки {preset:raw} (вариант для инструкций или диалога)"),
    "config.rule.model_hub": (
        "not a bundled preset: kept as a hub id; its config is read from the Hugging Face cache or the network",
        "не встроенная заготовка: оставлено как имя на Hugging Face Hub; конфигурация читается из кэша "
        "Hugging Face или из сети"),
    "config.rule.model_hub_needs_transformers": (
        "not a bundled preset: a hub id, whose config needs transformers (pip install 'gpuwork[trial]'); or give "
        "--model a preset or a config.json",
        "не встроенная заготовка: имя на Hugging Face Hub, для чтения его конфигурации нужен transformers "
        "(pip install 'gpuwork[trial]'); или укажите в --model заготовку или config.json"),
    "config.rule.trainer_mixed": (
        "Trainer autocasts over fp32 weights unless the model is loaded in 16-bit: mixed",
        "Trainer включает autocast поверх весов fp32, если модель не загружена в 16 битах: смешанная точность"),
    "config.rule.pure_loaded": ("the model is loaded in {dtype:raw}, so the trained weights are 16-bit",
                                "модель загружается в {dtype:raw}, поэтому обучаемые веса 16-битные"),
    "config.rule.adapter_mixed": ("adapters train under autocast over a 16-bit base",
                                  "адаптеры обучаются с autocast поверх 16-битной базы"),
    "config.rule.axolotl_bf16": (
        "axolotl loads the weights in bf16 when bf16 is on: full fine-tuning trains bf16 weights",
        "axolotl загружает веса в bf16, когда включён `bf16`: при полном дообучении обучаются веса bf16"),
    "config.rule.bf16_auto": ("bf16: auto, taken as bf16 (every catalog GPU since Ampere has it); {rule}",
                              "`bf16: auto` принято за bf16 (его поддерживают все GPU каталога начиная с Ampere); "
                              "{rule}"),
    "config.rule.axolotl_pure": ("pure 16-bit, no autocast", "чистая 16-битная точность без autocast"),
    "config.rule.axolotl_max_grad_norm": (
        "axolotl passes max_grad_norm to the Trainer only when set (core/builders/base.py @067b021c), so the "
        "Trainer's own applies: {default}",
        "axolotl передаёт max_grad_norm в Trainer, только если он задан (core/builders/base.py @067b021c), "
        "поэтому действует значение Trainer: {default}"),
    "config.rule.axolotl_kbit_upcast": (
        "axolotl runs prepare_model_for_kbit_training, then casts the norms and embeddings back to the load dtype: "
        "only the adapters stay fp32 (src/axolotl/loaders/model.py @2b66ee1)",
        "axolotl вызывает prepare_model_for_kbit_training, а затем возвращает нормализации и эмбеддинги в тип "
        "загрузки: в fp32 остаются только адаптеры (src/axolotl/loaders/model.py @2b66ee1)"),
    "config.rule.trl_no_kbit_preparation": (
        "TRL {version:raw}: SFTTrainer runs no prepare_model_for_kbit_training (from 0.27.0), the model stays 16-bit",
        "TRL {version:raw} не вызывает prepare_model_for_kbit_training (начиная с 0.27.0), модель остаётся "
        "16-битной"),
    "config.rule.trl_kbit_preparation": (
        "TRL {version:raw}: SFTTrainer runs prepare_model_for_kbit_training (0.7.5-0.26); embeddings and lm_head "
        "go back to bf16, the norms stay fp32 and keep the stream fp32",
        "TRL {version:raw} вызывает prepare_model_for_kbit_training (0.7.5-0.26); эмбеддинги и lm_head "
        "возвращаются в bf16, нормализации остаются в fp32 и оставляют поток fp32"),
    "config.rule.kbit_upcast_unknown": (
        "the files do not say whether the framework keeps peft's fp32 upcast of embeddings, norms and lm_head: "
        "peft's QLoRA recipe (prepare_model_for_kbit_training) keeps it; --no-kbit-upcast if yours skips it",
        "файлы не говорят, сохраняет ли фреймворк повышение точности эмбеддингов, нормализаций и lm_head до fp32 "
        "из peft: рецепт QLoRA в peft (prepare_model_for_kbit_training) его сохраняет; --no-kbit-upcast, если ваш "
        "фреймворк его пропускает"),
    "config.rule.lf_mixed": ("LLaMA-Factory upcasts the trained weights to fp32 unless pure_bf16: mixed",
                             "LLaMA-Factory хранит обучаемые веса в fp32, если не задан `pure_bf16`: смешанная "
                             "точность"),
    "config.rule.lf_pure": ("pure_bf16: weights, gradients and optimizer states in bf16",
                            "`pure_bf16`: веса, градиенты и состояния оптимизатора в bf16"),
    "config.rule.ds_master": (
        "DeepSpeed runs the model in 16 bits and its optimizer keeps fp32 master weights and states",
        "DeepSpeed выполняет модель в 16 битах, а его оптимизатор хранит главные копии весов и состояния в fp32"),
    "config.rule.fsdp_upcast": (
        "loaded in {dtype:raw}, but under FSDP ({source:raw}) with mixed precision {mixed:raw} ({mixed_source:raw}) "
        "accelerate's prepare (0.30 and later) upcasts the trained 16-bit weights to fp32: fp32 weights, gradients "
        "and optimizer states, {mixed:raw} compute",
        "загружена в {dtype:raw}, но под FSDP ({source:raw}) со смешанной точностью {mixed:raw} ({mixed_source:raw}) "
        "подготовка модели в accelerate (0.30 и новее) переводит обучаемые 16-битные веса в fp32: веса, градиенты и "
        "состояния оптимизатора в fp32, вычисления в {mixed:raw}"),
    "config.rule.axolotl_fsdp2_no_upcast": (
        "FSDP2 in {file:raw}: axolotl prepares the model with its own code, which keeps the loaded dtype (no fp32 "
        "upcast as in accelerate)",
        "FSDP2 в {file:raw}: axolotl готовит модель своим кодом, который сохраняет тип загруженных весов (без "
        "перевода в fp32, как в accelerate)"),
    "config.rule.fp32": ("neither bf16 nor fp16 is on", "не включены ни bf16, ни fp16"),
    "config.rule.fp32_tf32": ("neither bf16 nor fp16 is on; tf32 speeds up fp32 matmuls and changes no memory",
                              "не включены ни bf16, ни fp16; tf32 ускоряет умножение матриц в fp32 и не меняет "
                              "память"),
    "config.rule.tf32": (
        "TrainingArguments sets torch.backends.cuda.matmul.allow_tf32 to it (null keeps torch's default, off): fp32 "
        "matmuls on the TF32 tensor cores",
        "TrainingArguments записывает его в torch.backends.cuda.matmul.allow_tf32 (пустое значение оставляет "
        "умолчание PyTorch — выключено): умножения матриц fp32 идут на тензорных ядрах TF32"),
    "config.rule.tf32_compile": (
        "with torch_compile and tf32 left out, TrainingArguments turns TF32 on (unless fp16 is on without bf16)",
        "при torch_compile и незаданном tf32 TrainingArguments включает TF32 (если не включён fp16 без bf16)"),
    "config.rule.lf_alpha": ("LLaMA-Factory's default: twice lora_rank", "по умолчанию в LLaMA-Factory: дважды `lora_rank`"),
    "config.rule.trl_full": ("{rule}: every weight trains", "{rule}: обучаются все веса"),
    "config.rule.no_peft": ("no PEFT section: Trainer trains every weight of the model it is handed",
                            "раздела PEFT нет: Trainer обучает все веса переданной ему модели"),
    "config.rule.framework_default": ("{key:raw} not set: {value:raw}, {source}",
                                      "{key:raw} не задан: {value:raw}, {source}"),
    "config.default.installed": ("the {framework:raw} {version:raw} default ({cls:raw}, installed)",
                                 "значение {framework:raw} {version:raw} по умолчанию ({cls:raw}, установлен)"),
    "config.default.pinned": (
        "the {framework:raw} {version:raw} default ({cls:raw}; pinned table: {url:raw})",
        "значение {framework:raw} {version:raw} по умолчанию ({cls:raw}; закреплённая таблица: {url:raw})"),
    "config.rule.both": ("{first}; {second}", "{first}; {second}"),
    "config.rule.as_stated": ("as the file states", "как указано в файле"),
    "config.rule.trl_bf16": ("{rule}; TRL turns bf16 on unless fp16 is", "{rule}; TRL включает bf16, если не включён fp16"),
    "config.rule.dpo_pairs": (
        "DPO runs each chosen and rejected answer through the model together: 2 x {batch} sequences",
        "DPO пропускает выбранный и отвергнутый ответы через модель вместе: 2 × {batch} последовательностей"),
    "config.rule.dtype_config": (
        "no dtype given: transformers 5 loads the checkpoint in its config's dtype ({dtype:raw})",
        "dtype не задан: transformers 5 загружает модель в типе из её конфигурации ({dtype:raw})"),
    "config.rule.dtype_v4": ("no dtype given: transformers {version:raw} loads the weights in fp32",
                             "dtype не задан: transformers {version:raw} загружает веса в fp32"),
    "config.rule.dtype_unknown": (
        "the load dtype is unknown until the model's config is read: taken as fp32 weights under autocast",
        "тип загрузки неизвестен, пока не прочитана конфигурация модели: приняты веса fp32 под autocast"),
    "config.rule.no_adapter": ("no adapter: every weight trains", "адаптера нет: обучаются все веса"),
    "config.rule.accum_from_batch": ("batch_size {total} / micro_batch_size {micro}",
                                     "`batch_size` {total} / `micro_batch_size` {micro}"),
    "config.rule.offloaded_checkpointing": (
        "gradient_checkpointing: {value:raw} also offloads the saved activations to the CPU; not modelled: the "
        "estimate counts them on the GPU",
        "`gradient_checkpointing: {value:raw}` ещё и выгружает сохранённые активации на CPU; это не "
        "моделируется: оценка считает их на GPU"),
    "config.rule.xformers": ("xformers memory-efficient attention, modelled as sdpa",
                             "экономное по памяти внимание xformers, моделируется как sdpa"),
    "config.rule.flash_like": ("{value:raw}: a flash-attention kernel", "{value:raw}: ядро flash-attention"),
    "config.rule.attention_other": ("{value:raw} is not modelled; the nearest is sdpa",
                                    "{value:raw} не моделируется; ближайший вариант — sdpa"),
    "config.rule.shard_grad_op": ("gradients and optimizer states sharded, weights replicated (like ZeRO-2)",
                                  "градиенты и состояния оптимизатора шардированы, веса на каждом GPU (как ZeRO-2)"),
    "config.rule.hybrid_shard": ("hybrid sharding: FSDP inside each shard group of {group} GPUs, "
                                 "replicas across groups (hsdp)",
                                 "гибридное шардирование: FSDP внутри каждой группы из {group} GPU, "
                                 "реплики между группами (hsdp)"),
    "config.rule.hybrid_shard_zero2": (
        "hybrid sharding without re-gathering in backward: gradients and optimizer states sharded inside each "
        "shard group of {group} GPUs, weights whole on every GPU from forward to the end of backward, "
        "replicas across groups (hsdp-zero2)",
        "гибридное шардирование без повторного сбора весов в обратном проходе: градиенты и состояния оптимизатора "
        "шардированы внутри каждой группы из {group} GPU, веса целиком на каждом GPU от прямого прохода "
        "до конца обратного, реплики между группами (hsdp-zero2)"),
    "config.rule.shard_group_node": (
        "PyTorch's hybrid sharding shards inside each machine: num_processes / num_machines = {group} GPUs",
        "гибридное шардирование PyTorch делит состояния внутри каждой машины: num_processes / num_machines = "
        "{group} GPU"),
    "config.rule.shard_group_replicas": (
        "GPUs over the replicas: num_processes / dp_replicate_size = {group} GPUs per shard group",
        "GPU на реплики: num_processes / dp_replicate_size = {group} GPU в группе шардирования"),
    "config.rule.fsdp_wrap_blocks": (
        "TRANSFORMER_BASED_WRAP: one FSDP unit per decoder block plus the root (the Trainer's default in "
        "transformers 5.24.0)",
        "TRANSFORMER_BASED_WRAP: по блоку FSDP на каждый слой декодера и корневой (по умолчанию в Trainer, "
        "transformers 5.24.0)"),
    "config.rule.fsdp_wrap_whole": (
        "NO_WRAP: no auto-wrap policy, the whole model is one FSDP unit, gathered before forward and "
        "reduce-scattered after backward (accelerate 1.16.0's plugin default when no policy is set)",
        "NO_WRAP: без политики обёртки вся модель — один блок FSDP, собирается до прямого прохода и сводится после "
        "обратного (так по умолчанию в плагине accelerate 1.16.0, если политика не задана)"),
    "config.rule.full_determinism": (
        "the Trainer calls enable_full_determinism, which runs torch.use_deterministic_algorithms(True) (and sets "
        "CUDA_LAUNCH_BLOCKING=1 from inside the Trainer, after the script may already have started CUDA: "
        "launch_blocking is not assumed; set it if the run's launches block; transformers 5.24.0 trainer_utils.py)",
        "Trainer вызывает enable_full_determinism, а та включает детерминированный режим PyTorch "
        "(torch.use_deterministic_algorithms) и задаёт CUDA_LAUNCH_BLOCKING=1 изнутри Trainer, когда скрипт мог "
        "уже запустить CUDA: launch_blocking не предполагается, задайте его, если запуски ядер блокируются "
        "(transformers 5.24.0, trainer_utils.py)"),
    "config.rule.fsdp_offload": ("FSDP CPU offload moves parameters, gradients and the optimizer step to the CPU",
                                 "выгрузка FSDP на CPU переносит туда параметры, градиенты и шаг оптимизатора"),
    "config.rule.ds_clipping": (
        "DeepSpeed's engine clips the gradients when gradient_clipping > 0; 0 turns clipping off",
        "движок DeepSpeed ограничивает норму градиента при gradient_clipping > 0; 0 отключает ограничение"),
    "config.rule.size_wrap_whole": (
        "SIZE_BASED_WRAP with min_num_params {min:int}: the whole model has {params:int} parameters, fewer, so no "
        "submodule reaches the threshold and the root is the only FSDP unit",
        "SIZE_BASED_WRAP с min_num_params {min:int}: во всей модели {params:int} параметров, меньше порога, "
        "поэтому ни один подмодуль его не достигает и единственный блок FSDP — корень"),
    "config.rule.size_wrap_zero": (
        "SIZE_BASED_WRAP with fsdp_min_num_params 0: accelerate drops the policy, so the whole model is one FSDP "
        "unit",
        "SIZE_BASED_WRAP с fsdp_min_num_params 0: accelerate отключает политику обёртки, и вся модель — один блок "
        "FSDP"),
    "config.rule.nvme": ("offload to NVMe, modelled as CPU offload", "выгрузка на NVMe, моделируется как выгрузка на CPU"),
    "config.rule.stage_from_name": (
        "{path:raw} is not here: ZeRO stage {stage} read from its file name (pass the file with --from to read it)",
        "файла {path:raw} здесь нет: стадия ZeRO {stage} взята из его имени (передайте файл через --from, чтобы "
        "прочитать его)"),
    "config.rule.offload_from_name": ("{path:raw} is not here: offload read from its file name",
                                      "файла {path:raw} здесь нет: выгрузка взята из его имени"),
    "config.rule.num_processes": (
        "accelerate's num_processes is the total over {machines} {machines:pl:machine|machines}",
        "`num_processes` в accelerate — общее число процессов на {machines} {machines:pl:машине|машинах|машинах}"),
    "config.rule.world_size": ("train_batch_size {total} / (micro-batch {micro} x accumulation {accum})",
                               "`train_batch_size` {total} / (микропакет {micro} × накопление {accum})"),
    "config.rule.gpus_assumed": (
        "sharding needs several GPUs and no file says how many: one node of {gpus} assumed (set --gpus)",
        "шардированию нужно несколько GPU, а ни один файл не говорит сколько: принят один узел из {gpus} "
        "(задайте --gpus)"),
    "config.rule.max_steps": ("max_steps {steps} x {tokens_per_step} tokens per step",
                              "`max_steps` {steps} × {tokens_per_step} токенов за шаг"),
    "config.rule.max_steps_epoch": ("the run is max_steps long: one pass over that many tokens",
                                    "длина запуска задана `max_steps`: один проход по этому числу токенов"),
    "config.rule.max_samples": ("at most {samples} samples x {seq_len} tokens (an upper bound)",
                                "не больше {samples} примеров × {seq_len} токенов (оценка сверху)"),
    "config.rule.no_saves": ("save_strategy: no: no checkpoints", "`save_strategy: no`: чекпойнты не сохраняются"),
    # -- notes -------------------------------------------------------------------------------------------------------
    "config.keeps_every_checkpoint": (
        "{file:raw}: {source}: the Trainer keeps every checkpoint it saves; the disk estimate counts checkpoints_kept "
        "of them",
        "{file:raw}: {source}: Trainer хранит все сохранённые чекпойнты; оценка диска считает checkpoints_kept из них"),
    "config.dpo_reference": (
        "{file:raw}: DPO also runs a frozen reference model (a copy of the base, or the base without the adapter); "
        "not counted in the estimate",
        "{file:raw}: DPO также выполняет замороженную эталонную модель (копию базовой или базовую без адаптера); "
        "в оценке она не учтена"),
    "config.optimizer.nearest": ("{name:raw} is modelled as {optimizer:raw}: {why}",
                                 "{name:raw} моделируется как {optimizer:raw}: {why}"),
    "config.optimizer.why.xla": ("the XLA (TPU) build of AdamW; the same states",
                                 "сборка AdamW для XLA (TPU); те же состояния"),
    "config.optimizer.why.npu": ("the Ascend NPU build of fused AdamW; the same states",
                                 "сборка объединённого AdamW для Ascend NPU; те же состояния"),
    "config.optimizer.why.anyprecision": (
        "AnyPrecisionAdamW may keep its states in bf16; the estimate counts fp32 states (too high)",
        "AnyPrecisionAdamW может хранить состояния в bf16; оценка считает их в fp32 (завышена)"),
    "config.optimizer.why.states_4bit": ("4-bit states; the nearest modelled is 8-bit (estimate too high)",
                                         "4-битные состояния; ближайшее моделируемое — 8-битные (оценка завышена)"),
    "config.optimizer.why.torchao_8bit": ("torchao's low-bit AdamW; modelled as bitsandbytes' 8-bit states",
                                          "малобитный AdamW из torchao; моделируется как 8-битные состояния "
                                          "bitsandbytes"),
    "config.optimizer.why.paged_32bit": (
        "paged fp32 states, counted on the GPU as they stay there unless memory runs short",
        "страничные состояния fp32; считаются на GPU, так как остаются там, пока хватает памяти"),
    "config.optimizer.why.ademamix": ("AdEMAMix keeps a third state; the estimate counts two (too low)",
                                      "AdEMAMix хранит третье состояние; оценка считает два (занижена)"),
    "config.optimizer.why.one_state": ("one state per weight, as SGD with momentum",
                                       "одно состояние на вес, как у SGD с моментом"),
    "config.optimizer.why.one_state_8bit": ("one 8-bit state per weight; counted as fp32 (too high)",
                                            "одно 8-битное состояние на вес; считается как fp32 (оценка завышена)"),
    "config.optimizer.why.lion_8bit": ("8-bit Lion state; counted as fp32 (too high)",
                                       "8-битное состояние Lion; считается как fp32 (оценка завышена)"),
    "config.optimizer.why.low_rank": (
        "low-rank projected states (GaLore/APOLLO) are far smaller; the estimate counts full states (too high)",
        "состояния в низкоранговой проекции (GaLore/APOLLO) намного меньше; оценка считает полные (завышена)"),
    "config.optimizer.why.lomo": ("LOMO fuses the update into backward and keeps no states (estimate too high)",
                                  "LOMO выполняет обновление внутри обратного прохода и не хранит состояний "
                                  "(оценка завышена)"),
    "config.optimizer.why.extra_state": ("it keeps an extra gradient average (estimate too low)",
                                         "он хранит ещё одно среднее градиентов (оценка занижена)"),
    "config.optimizer.why.schedule_free": ("schedule-free keeps as many states as the optimizer it wraps",
                                           "вариант без расписания хранит столько же состояний, сколько исходный "
                                           "оптимизатор"),
    "config.optimizer.why.other_impl": ("another implementation with the same number of fp32 states",
                                        "другая реализация с тем же числом состояний fp32"),
    "config.eight_bit_base": (
        "{file:raw}: {key:raw}: an 8-bit base is not modelled; planned as LoRA over a 16-bit base (weights "
        "estimate about 2x too high; --method qlora for a 4-bit base)",
        "{file:raw}: {key:raw}: 8-битная база не моделируется; план — LoRA над 16-битной базой (оценка весов "
        "примерно вдвое завышена; --method qlora для 4-битной базы)"),
    "config.dora": ("{file:raw}: use_dora: DoRA adds a magnitude vector per target; modelled as LoRA",
                    "{file:raw}: `use_dora`: DoRA добавляет вектор величин на каждый целевой слой; моделируется "
                    "как LoRA"),
    "config.packing": ("{file:raw}: {key:raw}: sequences are packed to the full length, as the plan assumes",
                       "{file:raw}: {key:raw}: последовательности упаковываются до полной длины, как и "
                       "предполагает план"),
    "config.packed_documents": (
        "{file:raw}: {key:raw}: attention stays inside each packed example; to price that, set "
        "packed_document_tokens to the examples' mean length (with lengths packed and a flash kernel)",
        "{file:raw}: {key:raw}: внимание не выходит за пределы каждого упакованного примера; чтобы учесть это, "
        "задайте packed_document_tokens равным средней длине примеров (при упаковке строк и flash-ядре)"),
    "config.checkpointing_offload": (
        "{file:raw}: {key:raw} offload keeps the checkpointed blocks' inputs in pinned host memory; not modelled "
        "(estimate too high)",
        "{file:raw}: `offload` в {key:raw} держит входы блоков с чекпойнтингом в закреплённой памяти хоста; не "
        "моделируется (оценка завышена)"),
    "config.activation_offloading": (
        "{file:raw}: activation_offloading moves saved activations to the CPU; not modelled (estimate too high)",
        "{file:raw}: `activation_offloading` выгружает сохранённые активации на CPU; не моделируется (оценка "
        "завышена)"),
    "config.dtype_auto": ("{file:raw}: dtype auto loads the checkpoint's own dtype; precision taken from bf16/fp16",
                          "{file:raw}: `dtype: auto` загружает тип данных чекпойнта; точность взята из bf16/fp16"),
    "config.attention_auto": ("{file:raw}: {key:raw}: auto picks the kernel at run time; sdpa assumed",
                              "{file:raw}: {key:raw}: `auto` выбирает ядро при запуске; принято sdpa"),
    "config.adapter_other": ("{file:raw}: adapter {value:raw} is not modelled; method left to the default",
                             "{file:raw}: адаптер {value:raw} не моделируется; метод оставлен по умолчанию"),
    "config.stage_other": (
        "{file:raw}: stage {stage:raw} (preference or reward training) is not modelled: planned as fine-tuning",
        "{file:raw}: стадия {stage:raw} (обучение на предпочтениях или модели награды) не моделируется: "
        "план — обычное дообучение"),
    "config.save_per_epoch": ("{file:raw}: {key:raw}: saves per epoch, not every N steps; checkpoint interval "
                              "left to the default",
                              "{file:raw}: {key:raw}: сохранение раз в эпоху, а не каждые N шагов; интервал "
                              "чекпойнтов оставлен по умолчанию"),
    "config.save_ratio": ("{file:raw}: save_steps {value:g} is a share of the run; checkpoint interval left to the "
                          "default",
                          "{file:raw}: `save_steps` {value:g} — доля длины запуска; интервал чекпойнтов оставлен "
                          "по умолчанию"),
    "config.stack_also": ("{file:raw}: {key:raw} is on too; the stack is modelled as {stack:raw}",
                          "{file:raw}: {key:raw} тоже включён; программный стек моделируется как {stack:raw}"),
    "config.deepspeed_missing": ("{file:raw}: {key:raw}: {path:raw} is not here; pass it with --from",
                                 "{file:raw}: {key:raw}: файла {path:raw} здесь нет; передайте его через --from"),
    "config.offload_param_stage": ("{file:raw}: offload_param needs ZeRO stage 3 (stage {stage}); ignored",
                                   "{file:raw}: `offload_param` работает только со стадией ZeRO 3 (стадия {stage}); "
                                   "пропущено"),
    "config.ds_clipping_unset": (
        "{file:raw}: gradient_clipping is not set, so DeepSpeed's own default decides whether the run clips: 1.0 "
        "(clips) from DeepSpeed 0.19.3, 0.0 (never clips) before; the Trainer's max_grad_norm reaches DeepSpeed "
        "only through \"auto\". grad_clip is not read from this file (--no-grad-clip for DeepSpeed before 0.19.3)",
        "{file:raw}: gradient_clipping не задан, поэтому ограничивать ли норму градиента, решает умолчание "
        "DeepSpeed: 1.0 (ограничивает) начиная с DeepSpeed 0.19.3, 0.0 (не ограничивает) в более ранних версиях; "
        "max_grad_norm из Trainer попадает в DeepSpeed только через `auto`. grad_clip из этого файла не "
        "читается (--no-grad-clip для DeepSpeed до 0.19.3)"),
    "config.size_wrap_unknown": (
        "{file:raw}: {key:raw}: SIZE_BASED_WRAP (min_num_params {min:int}) is not read into fsdp_wrap: which "
        "submodules become FSDP units depends on the model's size, which is not known here (a hub model); the plan "
        "keeps one unit per block",
        "{file:raw}: {key:raw}: SIZE_BASED_WRAP (min_num_params {min:int}) не переносится в fsdp_wrap: какие "
        "подмодули станут блоками FSDP, зависит от размера модели, а он здесь неизвестен (модель из хаба); в плане "
        "остаётся один блок на слой"),
    "config.size_wrap_larger": (
        "{file:raw}: {key:raw}: SIZE_BASED_WRAP (min_num_params {min:int}) is not read into fsdp_wrap: the model "
        "has {params:int} parameters, so which submodules become FSDP units depends on their own sizes, which "
        "fsdp_wrap cannot state; the plan keeps one unit per block",
        "{file:raw}: {key:raw}: SIZE_BASED_WRAP (min_num_params {min:int}) не переносится в fsdp_wrap: в модели "
        "{params:int} параметров, и какие подмодули станут блоками FSDP, зависит от их размеров, чего fsdp_wrap "
        "выразить не может; в плане остаётся один блок на слой"),
    "config.ds_activation_checkpointing": (
        "{file:raw}: DeepSpeed activation partitioning / CPU checkpointing is not modelled (estimate too high)",
        "{file:raw}: разбиение активаций / их выгрузка на CPU в DeepSpeed не моделируются (оценка завышена)"),
    "config.accelerate_other": ("{file:raw}: distributed_type {value:raw} is not modelled; sharding left to the "
                                "other files",
                                "{file:raw}: `distributed_type` {value:raw} не моделируется; шардирование берётся "
                                "из других файлов"),
    "config.rule.fp8": (
        "Accelerate turns the model's linear layers into FP8 ones (Transformer Engine, MS-AMP or torchao, by "
        "fp8_config.backend): fp8_linear",
        "Accelerate заменяет линейные слои модели на слои FP8 (Transformer Engine, MS-AMP или torchao, по "
        "fp8_config.backend): fp8_linear"),
    "config.rule.fp8_autocast": (
        "the operations FP8 does not cover run under bf16 autocast",
        "операции вне FP8 выполняются под autocast bf16"),
    "config.auto_deferred": ("{file:raw}: {key:raw} is auto: {field:raw} = {value:raw} from {source:raw}",
                             "{file:raw}: {key:raw} = `auto`: {field:raw} = {value:raw} из {source:raw}"),
    "config.auto_unset": ("{file:raw}: {key:raw} is auto and no TrainingArguments file sets it: gpuwork's default",
                          "{file:raw}: {key:raw} = `auto`, и ни один файл TrainingArguments его не задаёт: "
                          "значение gpuwork по умолчанию"),
    "config.weak_overridden": ("{field:raw} = {value:raw} from {file:raw}: {key:raw} yields to {chosen:raw} from "
                               "{chosen_file:raw}",
                               "{field:raw} = {value:raw} из {file:raw}: {key:raw} уступает значению {chosen:raw} "
                               "из {chosen_file:raw}"),
    "config.max_steps_wins": ("{file:raw}: max_steps is set, so {epochs_key:raw} does not decide the run's length",
                              "{file:raw}: задан `max_steps`, поэтому {epochs_key:raw} не определяет длину запуска"),
    "config.unknown_key": ("{file:raw}: unknown key {key:raw} (not a {format:@config.format} key gpuwork knows); "
                           "ignored",
                           "{file:raw}: неизвестный ключ {key:raw} (не из известных gpuwork ключей: "
                           "{format:@config.format}); пропущен"),
    "config.unknown_key_close": ("{file:raw}: unknown key {key:raw}; did you mean {close:raw}? Ignored",
                                 "{file:raw}: неизвестный ключ {key:raw}; может быть, {close:raw}? Пропущен"),
    "config.expected.model_type": ("a family name such as \"llama\"", "имя семейства, например \"llama\""),
    "config.expected.architectures": ("a list of class names such as [\"LlamaForCausalLM\"]",
                                      "список имён классов, например [\"LlamaForCausalLM\"]"),
    "config.expected.op_impl": ("\"fused\" (the torch op) or \"composite\" (written op by op)",
                                "\"fused\" (операция torch) или \"composite\" (записана поэлементными операциями)"),
}
