"""Catalog entries (code -> (English, Russian)) for the measured trial, the trace, calibration, extrapolation and their CLI verbs.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: what the measure layer says (``trial.*``, ``checkpoint.*``,
``extrapolation.*``, ``calibration.*``, ``trace.*``, ``ramp.*``), its errors (``error.trial.*``,
``error.data.*``, ``error.calibration.*``, ``error.trace.*``, ``error.report.*``), the CLI verbs ``trial``,
``compare``, ``trace``, ``models`` and ``report`` (``cli.*``) and the offline report's pages (``report.*``).
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    "cli.trace.progress": ("trace", "трассировка"),
    "cli.trace.progress_unit": ("stage", "этап"),
    # text a record held before its messages were coded (gpuwork.measure.coded): shown as it is
    "measure.text": ("{text}", "{text}"),

    # -- where the trial does not run exactly what the plan says (gpuwork.measure.runtime, distributed) ---------
    "trial.sub.one_process": (
        "gpus={gpus}, sharding={sharding:raw}: this trial runs one process on one device (multi-GPU trials run "
        "under torchrun: `gpuwork trial --nproc N`)",
        "gpus={gpus}, sharding={sharding:raw}: этот запуск идёт одним процессом на одном устройстве (запуск на "
        "нескольких GPU — через torchrun: `gpuwork trial --nproc N`)"),
    "trial.sub.attention_eager": (
        "attention {attention:raw} -> eager: {config:raw} does not support it",
        "attention {attention:raw} → eager: {config:raw} его не поддерживает"),
    "trial.sub.paged_cpu": (
        "paged-adamw-8bit runs unpaged on CPU (bitsandbytes has no paged memory there)",
        "paged-adamw-8bit на CPU работает без подкачки (у bitsandbytes там нет страничной памяти)"),
    "trial.sub.precision_cpu": (
        "precision {precision:raw} -> fp32 on CPU (16-bit matmuls are 35-40x slower on CPUs without bf16 hardware; "
        "docs/sources.md#s-cpu-bf16)",
        "точность {precision:raw} → fp32 на CPU (16-битное умножение матриц в 35–40 раз медленнее на CPU без "
        "аппаратной поддержки bf16; docs/sources.md#s-cpu-bf16)"),
    "trial.sub.no_bf16": (
        "precision {precision:raw} -> fp16 equivalent: this GPU has no bf16",
        "точность {precision:raw} → то же в fp16: этот GPU не поддерживает bf16"),
    "trial.sub.flash": ("attention flash -> sdpa: {reason:@trial.flash}", "attention flash → sdpa: {reason:@trial.flash}"),
    "trial.flash.no_cuda": ("no CUDA device", "нет устройства CUDA"),
    "trial.flash.fp32": ("flash-attention needs fp16/bf16", "flash-attention работает только в fp16/bf16"),
    "trial.flash.not_installed": ("the flash-attn package is not installed", "пакет flash-attn не установлен"),
    "trial.flash.cannot_check": ("transformers cannot check for flash-attn",
                                 "transformers не может проверить наличие flash-attn"),
    "trial.sub.offload_ddp": ("offload needs a sharded strategy: not applied with DDP",
                              "выгрузке на CPU нужно шардирование: с DDP она не применяется"),
    "trial.sub.zero1": (
        "sharding zero1 -> FSDP2 without resharding after forward (ZeRO-2-like: gradients are sharded too; PyTorch "
        "has no optimizer-only sharding for FSDP2)",
        "шардирование zero1 → FSDP2 без повторного шардирования после прямого прохода (как ZeRO-2: градиенты тоже "
        "шардируются; в PyTorch у FSDP2 нет шардирования одного оптимизатора)"),
    "trial.sub.zero2": (
        "sharding zero2 -> FSDP2 fully_shard(reshard_after_forward=False) (ZeRO-2-like)",
        "шардирование zero2 → FSDP2 fully_shard(reshard_after_forward=False) (как ZeRO-2)"),
    "trial.sub.offload_fsdp": (
        "offload -> FSDP2 CPUOffloadPolicy: parameters, gradients and the optimizer step on the CPU together",
        "выгрузка → FSDP2 CPUOffloadPolicy: параметры, градиенты и шаг оптимизатора вместе на CPU"),
    "trial.sub.offload_cpu": ("offload: nothing to offload on CPU devices (ignored)",
                              "выгрузка: на устройствах CPU выгружать нечего (пропущено)"),
    "trial.sub.gpus_processes": ("gpus={gpus} -> {processes}: the processes torchrun started",
                                 "gpus={gpus} → {processes}: столько процессов запустил torchrun"),

    # -- what the trial measured (gpuwork.measure.trial) ---------------------------------------------------------
    "trial.data_wait.bound": (
        "the {device:raw} waits for data: {share:pct} of step time is data wait (more than {threshold:pct}): add "
        "loader workers or pre-tokenize",
        "{device:raw} ждёт данные: ожидание данных — {share:pct} времени шага (больше {threshold:pct}): добавьте "
        "процессы загрузки или токенизируйте данные заранее"),
    "trial.data_wait.keeps_up": ("data loading keeps up: {share:pct} of step time is data wait",
                                 "загрузка данных успевает: ожидание данных — {share:pct} времени шага"),
    "trial.memory_cap_exceeded": (
        "memory cap exceeded after {phase:@trial.phase}: the trial used {used_mib:n1} MiB, the cap is "
        "{cap_mib:n1} MiB",
        "превышен предел памяти после {phase:@trial.phase}: запуск занял {used_mib:n1} МиБ, предел — "
        "{cap_mib:n1} МиБ"),
    "trial.phase.build": ("building the model", "построения модели"),
    "trial.phase.forward": ("forward", "прямого прохода"),
    "trial.phase.backward": ("backward", "обратного прохода"),
    "trial.phase.optimizer_step": ("optimizer step", "шага оптимизатора"),
    "trial.out_of_memory": ("out of memory ({kind:raw}): {detail:raw}", "не хватило памяти ({kind:raw}): {detail:raw}"),
    "trial.out_of_memory_bare": ("out of memory ({kind:raw})", "не хватило памяти ({kind:raw})"),
    "trial.rank_error": ("rank {rank}: {error}", "процесс {rank}: {error}"),
    "trial.rank_errors": ("{errors}", "{errors}"),
    "trial.crash": ("unexpected failure ({kind:raw}): {detail:raw}", "непредвиденный сбой ({kind:raw}): {detail:raw}"),

    # -- the checkpoint round-trip (gpuwork.measure.checkpoint) -------------------------------------------------
    "checkpoint.restored_exactly": (
        "restored {tensors} {tensors:pl:tensor|tensors} exactly",
        "восстановлено точно: {tensors} {tensors:pl:тензор|тензора|тензоров}"),
    "checkpoint.restored_fingerprints": (
        "restored {tensors} {tensors:pl:tensor|tensors} (fingerprints equal) from a distributed checkpoint",
        "из распределённого чекпойнта восстановлено {tensors} {tensors:pl:тензор|тензора|тензоров} (отпечатки "
        "совпадают)"),
    "checkpoint.verified_exact": (
        "{what}; the next {steps} losses match the uninterrupted run bit-exact",
        "{what}; следующие {steps} {steps:pl:значение|значения|значений} loss побитово совпадают с запуском без "
        "перерыва"),
    "checkpoint.verified_within": (
        "{what}; the next {steps} losses match the uninterrupted run within {rtol:g} relative",
        "{what}; следующие {steps} {steps:pl:значение|значения|значений} loss совпадают с запуском без перерыва с "
        "относительной точностью {rtol:g}"),
    "checkpoint.entries_differ": (
        "{count} saved entries differ after restore (first: {first:raw})",
        "после восстановления отличаются сохранённые записи: {count} (первые: {first:raw})"),
    "checkpoint.losses_differ": (
        "resumed losses {resumed:raw} differ from uninterrupted {uninterrupted:raw} by {diff:sci}",
        "значения loss после возобновления {resumed:raw} отличаются от запуска без перерыва {uninterrupted:raw} на "
        "{diff:sci}"),
    "checkpoint.not_verified": ("{parts}", "{parts}"),
    "checkpoint.on_rank": ("rank {rank}: {what}", "процесс {rank}: {what}"),
    "checkpoint.all_ranks": ("all {ranks} ranks: {what}", "все {ranks} {ranks:pl:процесс|процесса|процессов}: {what}"),
    "checkpoint.rank_skipped": ("a rank ran no checkpoint round-trip",
                                "один из процессов не проверил сохранение и восстановление чекпойнта"),

    # -- the ramp: what stopped the search (gpuwork.measure.trial.ramp; {x:@ramp.limit}) ------------------------
    "ramp.limit.out_of_memory": ("out of memory", "нехватка памяти"),
    "ramp.limit.max_batch_size": ("max_batch_size", "предел max_batch_size"),
    "ramp.limit.max_seq_len": ("max_seq_len", "предел max_seq_len"),
    "ramp.limit.nothing_fit": ("nothing fit", "ничего не поместилось"),
    "ramp.limit_of": ("{why:@ramp.limit}", "{why:@ramp.limit}"),

    # -- the whole run from a trial (gpuwork.measure.extrapolation) ----------------------------------------------
    "extrapolation.cpu": ("measured on a CPU: the total is this CPU's time, not a GPU's",
                          "замерено на CPU: итог — время этого CPU, а не GPU"),
    "extrapolation.linear_scaling": (
        "measured on {measured} {measured:pl:process|processes}, extrapolated to {gpus} {gpus:pl:GPU|GPUs} assuming "
        "linear scaling (communication between them not measured)",
        "замерено на {measured} {measured:pl:процессе|процессах|процессах}, пересчитано на {gpus} GPU в "
        "предположении линейного масштабирования (обмен между ними не замерялся)"),
    "extrapolation.checkpoint_estimated": (
        "the trial ran no checkpoint round-trip: checkpoint size estimated (gpuwork.estimate.disk)",
        "пробный запуск не сохранял чекпойнт: его размер оценён (gpuwork.estimate.disk)"),
    "extrapolation.unknown_gpu": ("'{device:raw}' matches no GPU of data/gpus.csv: no offers priced",
                                  "'{device:raw}' не совпадает ни с одним GPU из data/gpus.csv: предложения не оценены"),
    "extrapolation.offers_left_out": (
        "{count} {count:pl:offer|offers} left out: a node has fewer than {gpus} GPUs and no inter-node network",
        "не учтено предложений: {count} — в узле меньше {gpus} GPU, а сети между узлами нет"),
    "extrapolation.offer.interruptible": ("interruptible: preemption rework not included",
                                          "прерываемое: повторная работа после прерываний не учтена"),
    "extrapolation.offer.whole_node": (
        "the node's {billed_gpus} GPUs are rented whole; the run uses {gpus}",
        "узел с {billed_gpus} GPU арендуется целиком; запуск использует {gpus}"),

    # -- calibration (gpuwork.measure.calibration) --------------------------------------------------------------
    "calibration.cpu_memory": (
        "CPU trial: memory is the process RSS (runtime, libraries, allocator cache), not a GPU quantity: no memory "
        "factor derived",
        "запуск на CPU: память — это RSS процесса (среда выполнения, библиотеки, кэш аллокатора), а не величина "
        "GPU: поправка памяти не выводится"),
    "calibration.no_allocator_peaks": ("the record holds no CUDA allocator peaks: no memory factor derived",
                                       "в записи нет пиков аллокатора CUDA: поправка памяти не выводится"),
    "calibration.unknown_gpu": ("'{device:raw}' matches no GPU of data/gpus.csv: no time calibration",
                                "'{device:raw}' не совпадает ни с одним GPU из data/gpus.csv: калибровки времени нет"),
    "calibration.cpu_time": (
        "CPU trial: the time estimator models GPUs of data/gpus.csv only: no time calibration",
        "запуск на CPU: оценка времени моделирует только GPU из data/gpus.csv: калибровки времени нет"),
    "calibration.precision_differs": ("the trial computed in {used:raw}, the plan asks {asked:raw}",
                                      "запуск считал в {used:raw}, а в плане — {asked:raw}"),
    "calibration.no_timing": ("gpuwork.estimate.timing is not available: no time calibration",
                              "gpuwork.estimate.timing недоступен: калибровки времени нет"),


    # -- the traced step's stand-ins and categories (gpuwork.measure.trace) -------------------------------------
    "trace.stand_in.attention_dropout": (
        "attention dropout under SDPA traced as the GPU kernels store it: nothing (the CPU math fallback would keep "
        "an s x s mask)",
        "прореживание внимания под SDPA трассировано так, как его хранят ядра GPU: никак (запасной путь на CPU "
        "хранил бы квадратную маску длина × длина)"),
    "trace.stand_in.flash": (
        "attention: flash-attention 2 traced as SDPA (same saved tensors: output + logsumexp)",
        "внимание: flash-attention 2 трассировано как SDPA (сохраняются те же тензоры: выход и логарифм суммы "
        "экспонент)"),
    "trace.stand_in.qlora": (
        "qlora: bitsandbytes Linear4bit traced with a stand-in of the same storage (packed uint8 + absmax) and bnb "
        "0.50 MatMul4Bit saved tensors",
        "qlora: Linear4bit из bitsandbytes трассирован заменой с тем же хранением (упакованные uint8 + absmax) и "
        "сохраняемыми тензорами MatMul4Bit из bnb 0.50"),
    "trace.stand_in.optimizer": (
        "optimizer: bitsandbytes {optimizer:raw} traced as its state tensors (fused kernel step)",
        "оптимизатор: {optimizer:raw} из bitsandbytes трассирован как его тензоры состояний (шаг одним слитым "
        "ядром)"),
    "trace.stand_in.fsdp": (
        "sharding: {sharding:raw} traced as PyTorch FSDP2 fully_shard per block over {ranks} fake ranks (per-rank "
        "numbers)",
        "шардирование: {sharding:raw} трассировано как fully_shard из FSDP2 (PyTorch) по блокам на {ranks} "
        "фиктивных {ranks:pl:процессе|процессах|процессах} (числа на один процесс)"),
    # English keeps the category keys as they are in JSON (gpuwork trace --json)
    "trace.category.parameters": ("parameters", "параметры"),
    "trace.category.buffers": ("buffers", "буферы"),
    "trace.category.gradients": ("gradients", "градиенты"),
    "trace.category.optimizer_states": ("optimizer_states", "состояния оптимизатора"),
    "trace.category.activations": ("activations", "активации"),
    "trace.category.temporaries": ("temporaries", "временные тензоры"),
    "trace.category.sharding_buffers": ("sharding_buffers", "буферы шардирования"),

    # -- estimate vs measured in the trial panel (gpuwork.ui.trial) ---------------------------------------------
    "trial.evm.peak_allocated": ("peak allocated", "пик выделенной"),
    "trial.evm.peak_reserved": ("peak reserved", "пик зарезервированной"),
    "trial.evm.peak_memory": ("peak memory", "пик памяти"),
    "trial.evm.estimate_live": ("estimate: live tensors at the peak", "оценка: живые тензоры в пике"),
    "trial.evm.estimate_cache": ("estimate: allocated + allocator cache", "оценка: выделенная + кэш аллокатора"),
    "trial.evm.estimate_gpu": (
        "estimate: tensors alive at the peak (what a GPU's allocator would hold)",
        "оценка: тензоры, живые в пике (то, что держал бы аллокатор GPU)"),
    "trial.evm.measured_allocated": ("torch.cuda.max_memory_allocated() over the measured steps",
                                     "torch.cuda.max_memory_allocated() за шаги замера"),
    "trial.evm.measured_reserved": ("torch.cuda.max_memory_reserved() over the measured steps",
                                    "torch.cuda.max_memory_reserved() за шаги замера"),
    "trial.evm.measured_rss": (
        "CPU trial: process RSS above its value before the trial (includes the runtime's, libraries' and "
        "allocator's overhead: not a GPU quantity)",
        "запуск на CPU: RSS процесса сверх значения до запуска (с накладными расходами среды выполнения, "
        "библиотек и аллокатора: не величина GPU)"),
    "ui.trial_plan": ("Trial plan: {plan}.", "План пробного запуска: {plan}."),

    # -- errors of the measure layer ----------------------------------------------------------------------------
    "error.trial.model_type_unknown": (
        "model_type '{model_type:raw}' of {model} is not known to transformers {version:raw}: upgrade transformers "
        "or pick another model",
        "model_type '{model_type:raw}' модели {model} неизвестен transformers {version:raw}: обновите transformers "
        "или выберите другую модель"),
    "error.trial.nothing_trainable": ("method '{method:raw}' left no trainable parameter in {model}",
                                      "метод '{method:raw}' не оставил в {model} ни одного обучаемого параметра"),
    "error.trial.no_checkpointing": (
        "{model_class:raw} does not support gradient checkpointing: turn it off",
        "{model_class:raw} не поддерживает пересчёт активаций (gradient_checkpointing): выключите его"),
    "error.trial.no_blocks": (
        "cannot find the {layers:raw} transformer blocks of {model_class:raw} (method='freeze' and FSDP wrapping need "
        "them): use method full/lora, or sharding='ddp'",
        "не удаётся найти {layers:raw} блоков трансформера в {model_class:raw} (они нужны для method='freeze' и "
        "обёртки FSDP): выберите method='full' или 'lora' либо sharding='ddp'"),
    "error.trial.lora_targets": (
        "lora_targets {targets:raw} do not fit {model}: {detail:raw} (use its module names or 'all-linear')",
        "lora_targets {targets:raw} не подходят к {model}: {detail:raw} (укажите имена её модулей или 'all-linear')"),
    "error.trial.no_qlora_folder": ("internal: no folder for the 4-bit base model",
                                    "внутренняя ошибка: нет папки для 4-битной базовой модели"),
    "error.trial.optimizer": ("optimizer '{optimizer:raw}' is not supported by the trial",
                              "оптимизатор '{optimizer:raw}' пробный запуск не поддерживает"),
    "error.trial.no_cuda": (
        "device '{device:raw}' asked for, but this torch sees no CUDA GPU: use device='cpu'",
        "запрошено устройство '{device:raw}', но PyTorch не видит GPU с CUDA: укажите device='cpu'"),
    "error.trial.device": ("device '{device:raw}' is not supported: use 'cpu' or 'cuda[:N]'",
                           "устройство '{device:raw}' не поддерживается: укажите 'cpu' или 'cuda[:N]'"),
    "error.trial.no_vocab_size": (
        "the model config has no vocab_size: the trial cannot size its tokenizer",
        "в конфиге модели нет vocab_size: пробный запуск не может выбрать размер токенизатора"),
    "error.trial.record_schema": (
        "trial record schema {found:raw} is not {expected}: re-run the trial with this gpuwork version",
        "схема записи пробного запуска — {found:raw}, а нужна {expected}: повторите запуск этой версией gpuwork"),
    "error.trial.prices": (
        "price_per_hour has {prices} prices for {records} records: give one price, or one per record",
        "в price_per_hour цен: {prices}, а записей: {records}; укажите одну цену или по одной на запись"),
    "error.trial.steps": ("steps={steps:raw}: measure at least one step",
                          "steps={steps:raw}: нужен хотя бы один шаг замера"),
    "error.trial.warmup": ("warmup={warmup:raw}: use a whole number >= 0 (2 is typical)",
                           "warmup={warmup:raw}: нужно целое число ≥ 0 (обычно 2)"),
    "error.trial.memory_cap": ("memory_cap_bytes={cap:raw}: use a positive number of bytes or None",
                               "memory_cap_bytes={cap:raw}: нужно положительное число байт или None"),
    "error.trial.adapter_keys": ("adapter checkpoint has unexpected keys: {keys:raw}",
                                 "в чекпойнте адаптера лишние ключи: {keys:raw}"),
    "error.trial.checkpoint_mismatch": (
        "checkpoint does not match the model: missing {missing:raw}, unexpected {unexpected:raw}",
        "чекпойнт не соответствует модели: не хватает {missing:raw}, лишние {unexpected:raw}"),
    "error.trial.nothing_to_extrapolate": (
        "trial '{trial:raw}' has no measured step that fits: nothing to extrapolate (re-run with a smaller batch or "
        "more memory)",
        "у запуска '{trial:raw}' нет замеренного шага, который поместился: экстраполировать нечего (повторите с "
        "меньшим батчем или на большей памяти)"),
    "error.trial.plan_differs": (
        "the plan differs from the trial in {fields:raw}: the measured step time only holds for the trial's shape; "
        "run a trial with this plan",
        "план отличается от пробного запуска в {fields:raw}: замеренное время шага верно только для формы этого "
        "запуска; запустите пробу с этим планом"),
    "error.trial.eval_fraction": (
        "eval_fraction={value:raw}: use a share of training time in [0, 1), e.g. 0.05",
        "eval_fraction={value:raw}: нужна доля времени обучения из [0, 1), например 0,05"),
    "error.trial.write_speed": (
        "checkpoint_write_bytes_s must be above 0 (e.g. 0.5e9 for 0.5 GB/s)",
        "checkpoint_write_bytes_s должен быть больше 0 (например, 0.5e9 для 0,5 ГБ/с)"),
    "error.trial.margin": ("margin={value:raw} must be >= 0 (0.10 adds 10 %)",
                           "margin={value:raw}: нужно число ≥ 0 (0.10 добавляет 10 %)"),
    "error.trial.price": ("price_per_gpu_hour={value:raw} must be >= 0",
                          "price_per_gpu_hour={value:raw}: нужно число ≥ 0"),
    "error.trial.qlora_sharded": (
        "sharding='{sharding:raw}' with method='qlora': FSDP2 cannot shard bitsandbytes 4-bit weights; use "
        "sharding='ddp' for a multi-GPU QLoRA trial",
        "sharding='{sharding:raw}' с method='qlora': FSDP2 не умеет шардировать 4-битные веса bitsandbytes; для "
        "пробы QLoRA на нескольких GPU укажите sharding='ddp'"),
    "error.trial.merge_ranks": ("merge_ranks needs one record and one RankResult per rank",
                                "merge_ranks нужны одна запись и один RankResult на каждый процесс"),
    "error.trial.rank": ("rank {rank:raw}: {error}", "процесс {rank:raw}: {error}"),
    "error.trial.not_torchrun": (
        "gpuwork.measure.distributed runs under torchrun: use `gpuwork trial --nproc N`",
        "gpuwork.measure.distributed запускается через torchrun: используйте `gpuwork trial --nproc N`"),
    "error.trial.too_few_gpus": (
        "{processes} processes but only {gpus} CUDA {gpus:pl:GPU|GPUs}: use --nproc {gpus} or fewer",
        "процессов {processes}, а GPU с CUDA только {gpus}: укажите --nproc {gpus} или меньше"),
    "error.trial.nproc": ("nproc={nproc:raw}: use a whole number of processes >= 1",
                          "nproc={nproc:raw}: нужно целое число процессов ≥ 1"),
    "error.trial.nproc_device": (
        "device={device:raw}: a multi-process trial takes 'cpu', 'cuda' or None",
        "device={device:raw}: для запуска в нескольких процессах — 'cpu', 'cuda' или None"),
    "error.trial.sharding_one_process": (
        "sharding='{sharding:raw}' needs at least 2 processes: use --nproc 2 or more, or sharding='ddp'",
        "sharding='{sharding:raw}' требует хотя бы 2 процесса: укажите --nproc 2 или больше либо sharding='ddp'"),
    "error.trial.timeout": (
        "the {processes}-process trial did not finish within {timeout_s:g} s and was stopped",
        "запуск в {processes} {processes:pl:процессе|процессах|процессах} не завершился за {timeout_s:g} с и "
        "остановлен"),
    "error.trial.torchrun": (
        "torchrun exited with status {status:raw} and no record; last output: {output:raw}",
        "torchrun завершился с кодом {status:raw} без записи; последний вывод: {output:raw}"),
    "error.trial.demo_tiny_only": (
        "the demo trial runs tiny models only (tiny-llama, tiny-gpt2, ...); got '{model:raw}'",
        "демонстрационный запуск работает только с маленькими моделями (tiny-llama, tiny-gpt2, ...); получено "
        "'{model:raw}'"),
    "error.trial.demo_limit": (
        "{field:raw}={value:raw} is above the demo's limit of {limit:raw}: this trial runs on a shared CPU",
        "{field:raw}={value:raw} больше предела демонстрации ({limit:raw}): этот запуск идёт на общем CPU"),
    "error.trial.demo_steps": (
        "the demo runs at most {steps} steps and {warmup} warm-up steps",
        "демонстрация выполняет не больше {steps} {steps:pl:шага|шагов|шагов} замера и {warmup} "
        "{warmup:pl:шага|шагов|шагов} прогрева"),
    # gpuwork trial / compare: what was typed
    "error.trial.flag_steps": ("--steps must be >= 1 and --warmup >= 0", "--steps должно быть ≥ 1, а --warmup ≥ 0"),
    "error.trial.flag_memory_cap": ("--memory-cap-gib must be above 0", "--memory-cap-gib должно быть больше 0"),
    "error.trial.flag_price": ("--price-per-hour must be >= 0", "--price-per-hour должно быть ≥ 0"),
    "error.trial.flag_ramp_nproc": ("--ramp runs single-process probes: drop --nproc",
                                    "--ramp запускает пробы в одном процессе: уберите --nproc"),
    "error.trial.record_missing": ("trial record '{path:raw}' does not exist",
                                   "записи пробного запуска '{path:raw}' нет"),
    "error.trial.record_json": ("{path:raw} is not valid JSON (line {line:raw}: {detail:raw})",
                                "{path:raw} — некорректный JSON (строка {line:raw}: {detail:raw})"),
    "error.trial.record_in": ("{path:raw}: {error}", "{path:raw}: {error}"),
    "error.trial.not_a_record": ("{path:raw} is not a gpuwork trial record ({kind:raw}: {detail:raw})",
                                 "{path:raw} — не запись пробного запуска gpuwork ({kind:raw}: {detail:raw})"),

    "error.data.no_shipped_text": (
        "no shipped text found in {folder:raw}: reinstall gpuwork or pass your own .txt/.jsonl files",
        "в {folder:raw} нет поставляемого текста: переустановите gpuwork или укажите свои файлы .txt/.jsonl"),
    "error.data.no_files": (
        "no data files given: pass .txt or .jsonl files, a folder of them, or None for the shipped corpus",
        "файлы данных не заданы: укажите файлы .txt или .jsonl, папку с ними или None для встроенного корпуса"),
    "error.data.empty_folder": ("folder '{path:raw}' holds no .txt or .jsonl files",
                                "в папке '{path:raw}' нет файлов .txt или .jsonl"),
    "error.data.suffix": (
        "'{path:raw}' is not a .txt or .jsonl file: convert it to plain text or to JSON lines with a \"text\" field",
        "'{path:raw}' — не файл .txt или .jsonl: преобразуйте его в простой текст или в строки JSON с полем `text`"),
    "error.data.missing": ("data file '{path:raw}' does not exist: check the path",
                           "файла данных '{path:raw}' нет: проверьте путь"),
    "error.data.no_text": ("the data files of '{name:raw}' hold no text", "в файлах данных '{name:raw}' нет текста"),
    "error.data.not_utf8": ("'{path:raw}' is not UTF-8 text (byte {byte:raw}): re-save it as UTF-8",
                            "'{path:raw}' — не текст в UTF-8 (байт {byte:raw}): пересохраните его в UTF-8"),
    "error.data.json": ("{path:raw}, line {line:raw}: not valid JSON ({detail:raw})",
                        "{path:raw}, строка {line:raw}: некорректный JSON ({detail:raw})"),
    "error.data.no_text_field": ("{path:raw}, line {line:raw}: expected an object with a string field \"text\"",
                                 "{path:raw}, строка {line:raw}: нужен объект со строковым полем `text`"),
    "error.data.vocab_too_small": (
        "vocab_size={vocab_size:raw} is too small for a byte-level BPE tokenizer: use at least {minimum:raw}, or "
        "pass a tokenizer folder",
        "vocab_size={vocab_size:raw} слишком мал для побайтового BPE-токенизатора: нужно не меньше {minimum:raw}, "
        "или укажите папку токенизатора"),
    "error.data.special_tokens": (
        "'{path:raw}' lacks the special tokens {tokens:raw}: pass the folder of a Hugging Face tokenizer instead",
        "в '{path:raw}' нет специальных токенов {tokens:raw}: укажите вместо него папку токенизатора Hugging Face"),
    "error.data.tokenizer_missing": (
        "tokenizer folder '{path:raw}' does not exist: pass a folder with tokenizer files",
        "папки токенизатора '{path:raw}' нет: укажите папку с файлами токенизатора"),
    "error.data.tokenizer_load": (
        "cannot load a tokenizer from '{path:raw}' ({kind:raw}: {detail:raw}): it needs tokenizer.json or the files "
        "of a Hugging Face tokenizer",
        "не удалось загрузить токенизатор из '{path:raw}' ({kind:raw}: {detail:raw}): нужен tokenizer.json или "
        "файлы токенизатора Hugging Face"),
    "error.data.no_eos": (
        "the tokenizer in '{path:raw}' has neither an EOS nor a SEP token: packing needs one",
        "у токенизатора в '{path:raw}' нет ни токена EOS, ни SEP: для упаковки нужен один из них"),
    "error.data.seq_len": ("seq_len={seq_len:raw} is too short to train on: use at least 2 tokens",
                           "seq_len={seq_len:raw} — слишком мало для обучения: нужно хотя бы 2 токена"),
    "error.data.no_tokens": ("no tokens to pack: the texts are empty", "упаковывать нечего: тексты пустые"),
    "error.data.task": ("task '{task:raw}' is not supported: use causal-lm, masked-lm or seq-cls",
                        "задача '{task:raw}' не поддерживается: укажите causal-lm, masked-lm или seq-cls"),
    "error.data.no_mask": (
        "masked-lm needs a tokenizer with a mask token: use the trained tokenizer or one that defines mask_token",
        "для masked-lm нужен токенизатор с токеном маски: используйте обученный здесь токенизатор или тот, где задан "
        "mask_token"),
    "error.data.loader_args": (
        "batch_size={batch_size:raw} and workers={workers:raw}: use batch_size >= 1 and workers >= 0",
        "batch_size={batch_size:raw} и workers={workers:raw}: нужно `batch_size` ≥ 1 и `workers` ≥ 0"),
    "error.data.too_few_rows": (
        "the dataset has {rows} rows, fewer than batch_size={batch_size:raw}: pack with min_sequences=batch_size or "
        "use more text",
        "в датасете {rows} {rows:pl:строка|строки|строк} — меньше, чем batch_size={batch_size:raw}: упакуйте с "
        "min_sequences=batch_size или возьмите больше текста"),
    "error.data.no_batches": ("the loader yields no batches: the dataset is smaller than one batch",
                              "загрузчик не выдаёт батчей: датасет меньше одного батча"),
    "error.data.batches": ("batches={batches:raw}: measure at least one batch",
                           "batches={batches:raw}: нужно замерить хотя бы один батч"),
    "error.data.vocab_too_large": (
        "the tokenizer has {tokens} tokens but the model only {embeddings} embeddings: use the model's own tokenizer "
        "or let gpuwork train one (tokenizer=None)",
        "в токенизаторе {tokens} {tokens:pl:токен|токена|токенов}, а у модели только {embeddings} "
        "{embeddings:pl:эмбеддинг|эмбеддинга|эмбеддингов}: используйте токенизатор самой модели или дайте gpuwork "
        "обучить свой (tokenizer=None)"),

    "error.trace.deepspeed": (
        "sharding='{sharding:raw}' (DeepSpeed) is not traced; trace sharding='fsdp' or 'zero3' (FSDP2 full shard), or "
        "use the analytic estimate",
        "sharding='{sharding:raw}' (DeepSpeed) не трассируется; трассируйте sharding='fsdp' или 'zero3' (полное "
        "шардирование FSDP2) либо используйте аналитическую оценку"),
    "error.trace.data_dependent": (
        "fake tensors cannot run a data-dependent op ({op:raw}) in {architecture:raw}: use the analytic estimate "
        "instead",
        "на фиктивных тензорах нельзя выполнить операцию, зависящую от данных ({op:raw}), в {architecture:raw}: "
        "используйте аналитическую оценку"),
    "error.trace.method": (
        "cannot trace {architecture:raw} with method '{method:raw}': {detail:raw}; use the analytic estimate instead",
        "не удаётся трассировать {architecture:raw} с методом '{method:raw}': {detail:raw}; используйте "
        "аналитическую оценку"),
    "error.trace.process_group": (
        "a process group is already initialised in this process: run the sharded trace in a fresh process "
        "(`gpuwork trace ...`)",
        "в этом процессе уже создана группа процессов: запустите трассировку с шардированием в новом процессе "
        "(`gpuwork trace ...`)"),
    "error.trace.sharded_qlora": (
        "sharded QLoRA (FSDP over 4-bit weights) is not traced; use the analytic estimate",
        "QLoRA с шардированием (FSDP поверх 4-битных весов) не трассируется; используйте аналитическую оценку"),
    "error.trace.sharding": (
        "cannot trace {architecture:raw} with sharding '{sharding:raw}': {detail:raw}; use the analytic estimate "
        "instead",
        "не удаётся трассировать {architecture:raw} с шардированием '{sharding:raw}': {detail:raw}; используйте "
        "аналитическую оценку"),
    "error.trace.real_qlora": ("real_step_peak does not build 4-bit models: use method lora/full/freeze",
                               "real_step_peak не строит 4-битные модели: выберите method='lora', 'full' или "
                               "'freeze'"),

    "error.calibration.no_steps": (
        "trial '{trial:raw}' did not complete its steps: nothing to calibrate with (run a trial that fits)",
        "запуск '{trial:raw}' не выполнил свои шаги: калибровать нечем (запустите пробу, которая помещается)"),
    "error.calibration.json": ("{path:raw} is not valid JSON (line {line:raw}: {detail:raw}): fix or delete it",
                               "{path:raw} — некорректный JSON (строка {line:raw}: {detail:raw}): исправьте или "
                               "удалите его"),
    "error.calibration.read": ("cannot read {path:raw}: {detail:raw}", "не удалось прочитать {path:raw}: {detail:raw}"),
    "error.calibration.not_a_file": (
        "{path:raw} is not a gpuwork calibration file (no 'devices' object): fix or delete it",
        "{path:raw} — не файл калибровки gpuwork (нет объекта `devices`): исправьте или удалите его"),
    "error.calibration.schema": (
        "{path:raw} has schema {found:raw}, this gpuwork reads {expected}: delete it and calibrate again",
        "у {path:raw} схема {found:raw}, а эта версия gpuwork читает {expected}: удалите файл и откалибруйте заново"),
    "error.calibration.write": (
        "cannot write {path:raw}: {detail:raw} (set {env:raw} to a writable file)",
        "не удалось записать {path:raw}: {detail:raw} (укажите в {env:raw} файл, доступный для записи)"),
    "error.calibration.malformed": (
        "{path:raw}: an entry of '{device:raw}' is malformed ({detail:raw}): delete it",
        "{path:raw}: запись для '{device:raw}' повреждена ({detail:raw}): удалите её"),
    "error.calibration.factor": ("memory factor '{name:raw}'={value:raw} must be a number above 0",
                                 "поправка памяти '{name:raw}'={value:raw}: нужно число больше 0"),
    "error.calibration.none_stored": (
        "no memory calibration stored for '{device:raw}': run `gpuwork trial --calibrate` on that GPU first",
        "для '{device:raw}' нет сохранённой калибровки памяти: сначала запустите `gpuwork trial --calibrate` на "
        "этом GPU"),

    "error.report.notebook_missing": (
        "notebook {path:raw} is missing: the report needs the workbook's notebooks/",
        "блокнота {path:raw} нет: отчёту нужна папка `notebooks/` рабочей книги"),
    "error.report.cell_failed": ("{name:raw}: cell {cell:raw} failed: {kind:raw}: {detail:raw}",
                                 "{name:raw}: ошибка в ячейке {cell:raw}: {kind:raw}: {detail:raw}"),
    "error.report.failed": ("{name:raw}: {kind:raw}: {detail:raw}", "{name:raw}: {kind:raw}: {detail:raw}"),
    "error.report.unknown_notebooks": ("unknown notebook(s) {names:raw}: choose from {choices:raw}",
                                       "неизвестные блокноты {names:raw}: выберите из {choices:raw}"),
    "error.report.steps": ("steps={steps:raw}: the trial needs at least one measured step",
                           "steps={steps:raw}: пробному запуску нужен хотя бы один шаг замера"),
    "error.report.no_lang": ("lang={lang:raw}: choose en or ru", "lang={lang:raw}: выберите `en` или `ru`"),

    # -- gpuwork trial (gpuwork.cli.trial) ----------------------------------------------------------------------
    "cli.trial.header": (
        "gpuwork trial: {model}, {method:raw}, {precision}, {optimizer:raw}, seq {seq_len} x batch {batch} "
        "(x{grad_accum} accumulation), {processes} on {device} ({device_name:raw})",
        "gpuwork, пробный запуск: {model}, {method:raw}, {precision}, {optimizer:raw}, контекст {seq_len} × батч {batch} "
        "(накопление ×{grad_accum}), {processes} на {device} ({device_name:raw})"),
    "cli.trial.precision_asked": ("{used:raw} (asked {asked:raw})", "{used:raw} (запрошено {asked:raw})"),
    "cli.trial.one_process": ("1 process", "1 процесс"),
    "cli.trial.processes": ("{world} processes ({strategy:raw}, {backend:raw})",
                            "{world} {world:pl:процесс|процесса|процессов} ({strategy:raw}, {backend:raw})"),
    "cli.trial.cpu": ("cpu", "CPU"),
    "cli.trial.substitution": ("  substitution: {what}", "  замена: {what}"),
    "cli.trial.row.step_time": ("step time", "время шага"),
    "cli.trial.row.throughput": ("throughput", "скорость"),
    "cli.trial.row.data_wait": ("data wait", "данные"),
    "cli.trial.row.loss": ("loss", "loss"),
    "cli.trial.row.peak_memory": ("peak memory", "пик памяти"),
    "cli.trial.row.checkpoint": ("checkpoint", "чекпойнт"),
    "cli.trial.row.fits": ("fits", "помещается"),
    "cli.trial.step_time": (
        "median {median}, p90 {p90} ({steps} {steps:pl:step|steps} after {warmup} warm-up)",
        "медиана {median}, p90 {p90} (шагов замера: {steps}, прогрева: {warmup})"),
    "cli.trial.no_steps": ("no measured step completed", "ни один шаг замера не завершился"),
    "cli.trial.throughput": (
        "{tokens_s:int} tokens/s ({tokens:int} tokens per step{all_ranks})",
        "{tokens_s:int} токенов/с ({tokens:int} {tokens:pl:токен|токена|токенов} за шаг{all_ranks})"),
    "cli.trial.all_ranks": (", all ranks", ", все процессы"),
    "cli.trial.loss": ("{first} -> {last}", "{first} → {last}"),
    "cli.trial.memory_cpu": (
        "{peak} above the process's start{ranks} — process RSS (CPU memory; runtime and allocator cache included; "
        "not comparable with GPU memory); RSS peak {rss}",
        "{peak} сверх памяти процесса до запуска{ranks} — RSS процесса (память CPU, вместе со средой выполнения и "
        "кэшем аллокатора; не сравнимо с памятью GPU); пик RSS {rss}"),
    "cli.trial.memory_cuda": (
        "allocated {allocated} (torch.cuda.max_memory_allocated){ranks}, reserved {reserved} (max_memory_reserved: + "
        "the allocator's cache); the device total adds the CUDA context, not measured here",
        "выделено {allocated} (torch.cuda.max_memory_allocated){ranks}, зарезервировано {reserved} "
        "(max_memory_reserved: + кэш аллокатора); всего на устройстве добавляется контекст CUDA, здесь он не "
        "замеряется"),
    "cli.trial.highest_of": (" (highest of {ranks} ranks)",
                             " (наибольший из {ranks} {ranks:pl:процесса|процессов|процессов})"),
    "cli.trial.rank_memory": (
        "rank {rank}: peak {peak} above start, {kind} {measured}; parameters held {params}, optimizer states "
        "{states}",
        "процесс {rank}: пик {peak} сверх начального, {kind} {measured}; параметры {params}, состояния "
        "оптимизатора {states}"),
    "cli.trial.kind_allocated": ("allocated", "выделено"),
    "cli.trial.kind_rss": ("RSS", "RSS"),
    "cli.trial.checkpoint": (
        "{state}: save {save}, restore {restore} (+ rebuild {rebuild}), {size} on disk",
        "{state}: сохранение {save}, восстановление {restore} (+ пересборка {rebuild}), {size} на диске"),
    "cli.trial.verified": ("verified", "проверен"),
    "cli.trial.not_verified": ("NOT verified", "НЕ проверен"),
    "cli.trial.checkpoint_not_run": ("round-trip not run", "сохранение и восстановление не проверялись"),
    "cli.trial.fits": ("yes{cap}", "да{cap}"),
    "cli.trial.under_cap": (" (under the cap of {cap})", " (в пределах {cap})"),
    "cli.trial.does_not_fit": ("does not fit — {error}; peak reached {peak} above the start",
                               "не помещается — {error}; достигнутый пик {peak} сверх начального"),
    "cli.trial.record": ("record: {path:raw}", "запись: {path:raw}"),
    "cli.trial.no_extrapolation": ("no extrapolation: {error}", "экстраполяции нет: {error}"),
    "cli.trial.progress": ("trial", "запуск"),
    "cli.trial.progress_unit": ("step", "шаг"),
    "cli.trial.extrapolated": (
        "extrapolated to {tokens:int} tokens x {epochs:g} epoch(s) on {where}: {steps:int} steps",
        "пересчёт на {tokens:int} {tokens:pl:токен|токена|токенов} × эпох {epochs:g} на {where}: {steps:int} "
        "{steps:pl:шаг|шага|шагов}"),
    "cli.trial.where_cpu": ("{gpus} CPU process(es) like this one",
                            "{gpus} {gpus:pl:процессе|процессах|процессах} CPU, как этот"),
    "cli.trial.where_gpu": ("{gpus} {gpus:pl:GPU|GPUs}", "{gpus} GPU"),
    "cli.trial.parts": (
        "  train {train} + validation {eval} ({eval_share:pct}) + {checkpoints} checkpoint write(s) {checkpoint} "
        "({size} each at {write_gbs:g} GB/s) + margin {margin} ({margin_share:pct})",
        "  обучение {train} + валидация {eval} ({eval_share:pct}) + запись чекпойнтов ({checkpoints}) {checkpoint} "
        "(по {size} при {write_gbs:g} ГБ/с) + запас {margin} ({margin_share:pct})"),
    "cli.trial.total": ("  total {total} = {hours:n1} {unit}", "  итого {total} = {hours:n1} {unit}"),
    "cli.trial.process_hours": ("process-hours", "процессо-часов"),
    "cli.trial.gpu_hours": ("GPU-hours", "GPU-часов"),
    "cli.trial.cost": ("  cost ${cost:n2} at ${price:g} per GPU-hour", "  стоимость {cost:n2} USD по {price:g} USD "
                       "за GPU-час"),
    "cli.trial.offer": (
        "  offer {offer:raw} ({provider:raw}, {mode:@mode}, ${price:g}/GPU-h, billed {hours:n1} h x {gpus} {gpus:pl:GPU|GPUs}): "
        "${cost:n2}{notes}",
        "  предложение {offer:raw} ({provider:raw}, {mode:@mode}, {price:g} USD/GPU-ч, к оплате {hours:n1} ч × "
        "{gpus} GPU): {cost:n2} USD{notes}"),
    "cli.trial.offer_notes": (" — {notes}", " — {notes}"),
    "cli.trial.note": ("  note: {note}", "  примечание: {note}"),
    "cli.trial.calibration": ("calibration on {device:raw}{gpu}", "калибровка на {device:raw}{gpu}"),
    "cli.trial.calibration_gpu": (" ({gpu_id:raw})", " ({gpu_id:raw})"),
    "cli.trial.cal_allocated": ("  allocated peak: measured {measured}, estimated {estimated} (factor {factor:n3})",
                                "  пик выделенной: замер {measured}, оценка {estimated} (коэффициент {factor:n3})"),
    "cli.trial.cal_reserved": (
        "  reserved peak:  measured {measured}, estimated {estimated} (factor {factor:n3})",
        "  пик зарезервированной: замер {measured}, оценка {estimated} (коэффициент {factor:n3})"),
    "cli.trial.cal_step": ("  step time: measured {measured}, estimated {estimated} (factor {factor:n3})",
                           "  время шага: замер {measured}, оценка {estimated} (коэффициент {factor:n3})"),
    "cli.trial.cal_mfu": ("  MFU: measured {measured_pct:n1}%, estimator's default {estimated_pct:n1}%",
                          "  MFU: замер {measured_pct:n1} %, по умолчанию в оценке {estimated_pct:n1} %"),
    "cli.trial.calibration_saved": ("calibration saved to {path:raw}", "калибровка сохранена в {path:raw}"),
    "cli.trial.calibration_nothing": (
        "calibration: nothing to save (no memory or time factor from this device)",
        "калибровка: сохранять нечего (с этого устройства нет поправок ни памяти, ни времени)"),
    "cli.trial.calibration_skipped": ("calibration: skipped, the run does not fit",
                                      "калибровка: пропущена, запуск не помещается"),
    "cli.ramp.header": ("ramp: batch x seq_len -> fits, peak above start, median step, tokens/s",
                        "рампа: батч × seq_len → помещается, пик сверх начального, медиана шага, токенов/с"),
    "cli.ramp.fits": ("fits", "да"),
    "cli.ramp.by": ("x", "×"),
    "cli.ramp.oom": ("OOM", "OOM"),
    "cli.ramp.nothing": ("nothing fits: not even batch 1 at the plan's seq_len",
                         "ничего не помещается: даже батч 1 при seq_len плана"),
    "cli.ramp.result": (
        "largest batch {batch} (limited by {batch_why:@ramp.limit}); at that batch the longest seq_len {seq} "
        "(limited by {seq_why:@ramp.limit})",
        "наибольший батч {batch} (ограничение: {batch_why:@ramp.limit}); при этом батче наибольшая seq_len {seq} "
        "(ограничение: {seq_why:@ramp.limit})"),

    # -- gpuwork compare ---------------------------------------------------------------------------------------
    "cli.compare.trial": ("trial", "запуск"),
    "cli.compare.device": ("device", "устройство"),
    "cli.compare.gpus": ("GPUs", "GPU"),
    "cli.compare.fits": ("fits", "помещается"),
    "cli.compare.median": ("step time (median)", "время шага (медиана)"),
    "cli.compare.p90": ("step time (p90)", "время шага (p90)"),
    "cli.compare.tokens_s": ("tokens/s", "токенов/с"),
    "cli.compare.peak_memory": ("peak memory", "пик памяти"),
    "cli.compare.checkpoint": ("checkpoint verified", "чекпойнт проверен"),
    "cli.compare.price": ("price per GPU-hour", "цена за GPU-час"),
    "cli.compare.cost": ("cost per 1M tokens", "стоимость 1 млн токенов"),
    "cli.compare.yes": ("yes", "да"),
    "cli.compare.no": ("NO", "НЕТ"),
    "cli.compare.usd_price": ("${value:g}", "{value:g} USD"),
    "cli.compare.usd_cost": ("${value}", "{value} USD"),

    # -- gpuwork trace, models, estimate --calibrated (gpuwork.cli.estimate) ------------------------------------
    "cli.trace.header": (
        "gpuwork trace: {model}, {method:raw}, {precision:raw}, seq {seq_len} x batch {batch} — one step under fake "
        "tensors ({elapsed_s:n1} s)",
        "gpuwork, трассировка: {model}, {method:raw}, {precision:raw}, контекст {seq_len} × батч {batch} — один шаг на "
        "фиктивных тензорах ({elapsed_s:n1} с)"),
    "cli.trace.peak": ("peak of live tensors at {phase:@phase}, GiB:", "пик живых тензоров — на {phase:@phase}, ГиБ:"),
    "cli.trace.traced": ("traced peak allocated", "пик выделенной по трассировке"),
    "cli.trace.analytic": ("analytic estimate (same quantity)", "аналитическая оценка (та же величина)"),
    "cli.trace.difference": ("({sign}{pct:n1}%)", "({sign}{pct:n1} %)"),
    "cli.trace.stand_in": ("  stand-in: {what}", "  замена: {what}"),
    "cli.trace.fallback": ("{error}; showing the analytic estimate", "{error}; показана аналитическая оценка"),
    "cli.models.preset": ("preset", "пресет"),
    "cli.models.architecture": ("architecture", "архитектура"),
    "cli.models.parameters": ("parameters", "параметры"),
    "cli.models.active": ("active", "активные"),
    "cli.models.layers": ("layers", "слои"),
    "cli.models.context": ("context", "контекст"),
    "cli.models.wrote": ("wrote {path:raw}", "записано: {path:raw}"),
    "cli.estimate.calibrated": (
        "calibrated with trials on {device:raw} (measured/estimated: allocated x{allocated:n3}, reserved "
        "x{reserved:n3}), GiB:",
        "с калибровкой по запускам на {device:raw} (замер/оценка: выделенная ×{allocated:n3}, зарезервированная "
        "×{reserved:n3}), ГиБ:"),

    # -- gpuwork report and its pages (gpuwork.cli.report, gpuwork.ui.report) -----------------------------------
    "cli.report.done": (
        "gpuwork report: {pages} page(s) in {out:raw} ({elapsed_s:n0} s); open {index:raw}",
        "gpuwork, отчёт: {pages} {pages:pl:страница|страницы|страниц} в {out:raw} ({elapsed_s:n0} с); откройте "
        "{index:raw}"),
    "report.progress": ("gpuwork report [{i}/{n}] {name:raw}", "gpuwork, отчёт [{i}/{n}] {name:raw}"),
    "report.title": ("gpuwork report", "Отчёт gpuwork"),
    "report.page.01_sizing": ("Sizing: memory, profile, time, disk", "Расчёт: память, профиль, время, диск"),
    "report.page.02_trial": ("Trial: measured steps and checkpoint", "Пробный запуск: замеренные шаги и чекпойнт"),
    "report.page.03_offers": ("Offers and the rental request", "Предложения и заявка на аренду"),
    "report.cpu_stand_in": (
        "no CUDA GPU here: the trial runs {tiny:raw} ({method:raw}) on the CPU as a stand-in for {model}; it proves "
        "the pipeline, not the speed",
        "здесь нет GPU с CUDA: вместо {model} пробный запуск идёт на CPU с {tiny:raw} ({method:raw}); он проверяет "
        "конвейер, а не скорость"),
    # The pages' prose, one entry per markdown cell of each notebook in order (gpuwork.ui.report replaces the
    # notebooks' own cells, written for interactive use, with these). Markdown; no braces.
    "report.md.01_sizing.0": (
        "# 01 · Sizing: does the run fit, on which card, how long, how much disk?\n\n"
        "Memory is **per GPU**, in GiB (2<sup>30</sup> bytes), with three totals that answer different questions: "
        "*peak allocated* (`torch.cuda.max_memory_allocated()`), *peak reserved* (plus the allocator's cache) and "
        "*device total* (plus the CUDA context: what `nvidia-smi` shows — compare this one with a card).",
        "# 01 · Расчёт: поместится ли запуск, на какую карту, надолго ли, сколько нужно диска?\n\n"
        "Память указана **на один GPU**, в ГиБ (2<sup>30</sup> байт), с тремя итогами, которые отвечают на разные "
        "вопросы: *пик выделенной* (`torch.cuda.max_memory_allocated()`), *пик зарезервированной* (плюс кэш "
        "аллокатора) и *всего на устройстве* (плюс контекст CUDA: то, что показывает `nvidia-smi`, — именно это "
        "сравнивайте с памятью карты)."),
    "report.md.01_sizing.1": ("## The plan", "## План"),
    "report.md.01_sizing.2": (
        "## Memory per GPU\nEach bar segment is one term of the estimate (hover for its source); the markers are the "
        "three totals; dashed lines are the candidate cards' memory as `nvidia-smi` reports it.",
        "## Память на один GPU\nКаждый сегмент столбца — одно слагаемое оценки (источник — во всплывающей "
        "подсказке); маркеры — три итога; пунктир — память карт-кандидатов так, как её показывает `nvidia-smi`."),
    "report.md.01_sizing.3": (
        "## What if\nThe device total per GPU for every method as the sequence length or the micro-batch grows; a red "
        "✕ marks where a curve stops fitting a card.",
        "## Что если\nВсего на устройстве на один GPU для каждого метода при росте длины последовательности или "
        "микробатча; красный ✕ отмечает, где кривая перестаёт помещаться в карту."),
    "report.md.01_sizing.4": ("## Profile, time and disk", "## Профиль, время и диск"),
    "report.md.01_sizing.5": (
        "## Exact check\nOne real training step of this architecture under fake tensors (no GPU, no weights), next "
        "to the analytic estimate of the same quantity.",
        "## Точная проверка\nОдин настоящий шаг обучения этой архитектуры на фиктивных тензорах (без GPU и весов) "
        "рядом с аналитической оценкой той же величины."),
    "report.md.02_trial.0": (
        "# 02 · Trial: prove the configuration before renting for a month\n\n"
        "A real fine-tune of the plan's model on real text: warm-up, then a fixed number of measured steps (step "
        "time, tokens/s, peak memory, data wait), then a checkpoint saved, restored into a fresh model, verified "
        "and resumed. The record (JSON) is in the report's `trials/` folder.",
        "# 02 · Пробный запуск: проверить конфигурацию до аренды на месяц\n\n"
        "Настоящее дообучение модели плана на настоящем тексте: прогрев, затем фиксированное число шагов замера "
        "(время шага, токенов/с, пиковая память, ожидание данных), затем чекпойнт сохраняется, восстанавливается в "
        "новую модель, проверяется, и обучение продолжается. Запись (JSON) лежит в папке отчёта `trials/`."),
    "report.md.02_trial.1": ("## The trial\nThe plan the trial ran and its curves, step by step (warm-up steps in grey).",
                             "## Запуск\nПлан пробного запуска и его кривые по шагам (шаги прогрева — серым)."),
    "report.md.02_trial.2": ("## Results: speed, data, checkpoint round-trip, ramp, extrapolation",
                             "## Результаты: скорость, данные, проверка чекпойнта, рампа, экстраполяция"),
    "report.md.02_trial.3": (
        "## Estimate vs measured\nThe analytic estimate for the plan the trial really ran (CPU trials run fp32) next "
        "to what it measured.",
        "## Оценка и замер\nАналитическая оценка для плана, который действительно выполнялся (на CPU — в fp32), "
        "рядом с замером."),
    "report.md.03_offers.0": (
        "# 03 · Offers: where to rent, for how long, for how much — and the request to send\n\n"
        "Every offer of the bundled catalog (`data/catalog.csv`, illustrative dated prices) evaluated for the plan: "
        "does it fit (GPU count and sharding are raised inside a node until it does), how long the run takes, what "
        "it costs as billed, and for interruptible offers the expected preemptions, rework and the checkpoint "
        "interval that minimises lost work. The report's trial records are compared side by side.",
        "# 03 · Предложения: где арендовать, надолго ли и за сколько — и заявка провайдеру\n\n"
        "Каждое предложение встроенного каталога (`data/catalog.csv`, ориентировочные датированные цены) оценено "
        "для плана: помещается ли запуск (число GPU и шардирование растут в пределах узла, пока он не поместится), "
        "сколько он займёт, сколько стоит по счёту, а для прерываемых предложений — ожидаемые прерывания, "
        "повторная работа и интервал чекпойнтов, при котором теряется меньше всего работы. Записи пробных "
        "запусков отчёта сравниваются рядом."),
    "report.md.03_offers.1": ("## Filters and the offers table", "## Фильтры и таблица предложений"),
    "report.md.03_offers.2": ("## Cost against time", "## Стоимость и время"),
    "report.md.03_offers.3": ("## Interruptible offers: preemptions and checkpoints",
                              "## Прерываемые предложения: прерывания и чекпойнты"),
    "report.md.03_offers.4": ("## Trial records side by side", "## Записи пробных запусков рядом"),
    "report.md.03_offers.5": ("## The rental request", "## Заявка на аренду"),
}
