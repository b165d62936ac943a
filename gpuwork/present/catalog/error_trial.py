"""Catalog entries "error.trial.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error.trial"

ENTRIES: dict[str, tuple[str, str]] = {
    "error.trial.count_limit": (
        "{field:raw}={value:int} is above {limit:int}: a trial measures a few steps, it is not the training run",
        "{field:raw}={value:int} больше {limit:int}: пробный запуск замеряет несколько шагов, это не само обучение"),
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
        "trial record schema {found:raw} is not {expected}, the one this gpuwork reads: run the trial again with "
        "this gpuwork version, or read the record with the gpuwork version that wrote it",
        "схема записи пробного запуска — {found:raw}, а эта версия gpuwork читает только схему {expected}: "
        "повторите пробный запуск этой версией gpuwork или читайте запись той версией, которая её записала"),
    "error.trial.record_no_schema": (
        "this JSON has no trial record schema version (schema_version {expected} expected): it is not a record of "
        "this gpuwork version; run the trial again with this gpuwork version",
        "в этом JSON нет версии схемы записи пробного запуска (нужна schema_version {expected}): это не запись "
        "этой версии gpuwork; повторите пробный запуск этой версией gpuwork"),
    "error.trial.prices": (
        "price_per_hour has {prices} prices for {records} records: give one price, or one per record",
        "в price_per_hour цен: {prices}, а записей: {records}; укажите одну цену или по одной на запись"),
    "error.trial.steps": ("steps={steps:raw}: measure at least one step",
                          "steps={steps:raw}: нужен хотя бы один шаг замера"),
    "error.trial.warmup": ("warmup={warmup:raw}: use a whole number >= 0 (2 is typical)",
                           "warmup={warmup:raw}: нужно целое число ≥ 0 (обычно 2)"),
    "error.trial.memory_cap": ("memory_cap_bytes={cap:raw}: use a positive number of bytes or None",
                               "memory_cap_bytes={cap:raw}: нужно положительное число байт или None"),
    "error.trial.max_grad_norm": ("max_grad_norm={value:raw}: use a positive finite norm, or None for the plan's "
                                  "(1.0 when it clips)",
                                  "max_grad_norm={value:raw}: нужна положительная конечная норма или None — тогда "
                                  "как в плане (1.0, если он ограничивает норму)"),
    "error.trial.max_grad_norm_unclipped": (
        "max_grad_norm={value:raw} is given but the plan has grad_clip off: a run that never clips has no norm to "
        "clip at; turn grad_clip on in the plan, or leave max_grad_norm unset",
        "задан max_grad_norm={value:raw}, но в плане grad_clip выключен: обучение без ограничения нормы не "
        "использует её; включите grad_clip в плане или не задавайте max_grad_norm"),
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
    "error.trial.fp8_linear": (
        "fp8_linear: the trial builds the model in plain PyTorch, without Transformer Engine's or torchao's FP8 "
        "layers, so it would time 16-bit linears, not the FP8 step the plan describes. Run the trial with fp8_linear "
        "off (its measured step calibrates the estimate, FP8 included), or time your own FP8 run with the Trainer "
        "callback",
        "fp8_linear: пробный прогон строит модель на чистом PyTorch, без слоёв FP8 из Transformer Engine или torchao, "
        "и измерил бы 16-битные линейные слои, а не шаг FP8 из плана. Запустите пробный прогон с выключенным "
        "fp8_linear (измеренный шаг калибрует оценку, и FP8 тоже) или измерьте свой запуск FP8 колбэком Trainer"),
    "error.trial.not_a_record": ("{path:raw} is not a gpuwork trial record ({kind:raw}: {detail:raw})",
                                 "{path:raw} — не запись пробного запуска gpuwork ({kind:raw}: {detail:raw})"),
    "error.trial.record_value": (
        "{field:raw} = {value:raw} is not a figure a trial can measure (it must lie between {low:raw} and "
        "{high:raw}, in {unit:@recordunit}): the record is damaged or was edited; run the trial again or correct "
        "this field",
        "{field:raw} = {value:raw} — такого значения пробный запуск дать не может (допустимо от {low:raw} до "
        "{high:raw}, единицы: {unit:@recordunit}): запись повреждена или изменена вручную; повторите пробный "
        "запуск или исправьте это поле"),
    "error.trial.record_whole": (
        "{field:raw} = {value:raw} must be a whole number from {low:raw} to {high:raw} ({unit:@recordunit}): "
        "the record is damaged or was edited; run the trial again or correct this field",
        "{field:raw} = {value:raw}: нужно целое число от {low:raw} до {high:raw} (единицы: {unit:@recordunit}); "
        "запись повреждена или изменена вручную; повторите пробный запуск или исправьте это поле"),
    "error.trial.record_steps_elsewhere": (
        "this record keeps its steps in the file {file:raw} beside it: read the record from its file "
        "(TrialRecord.from_json(Path(...))), not from its text alone",
        "шаги этой записи лежат рядом с ней в файле {file:raw}: читайте запись из её файла "
        "(TrialRecord.from_json(Path(...))), а не только её текст"),
    "error.trial.record_steps_name": (
        "{path:raw} names its steps file {name:raw}, which is not a file name in the record's own folder: "
        "the record is damaged or was edited; run the trial again",
        "{path:raw} называет файлом шагов {name:raw} — это не имя файла в папке самой записи: запись повреждена "
        "или изменена вручную; повторите пробный запуск"),
    "error.trial.record_steps_missing": (
        "{path:raw} keeps its steps in {steps:raw}, which does not exist: copy the record together with its "
        ".steps.jsonl file",
        "шаги записи {path:raw} лежат в {steps:raw}, а этого файла нет: копируйте запись вместе с её файлом "
        ".steps.jsonl"),
    "error.trial.record_steps_line": (
        "{path:raw}, line {line:int}, is not a step of a trial record ({detail:raw}): the file is damaged; "
        "run the trial again",
        "{path:raw}, строка {line:int}, — не шаг записи пробного запуска ({detail:raw}): файл повреждён; "
        "повторите пробный запуск"),
    "error.trial.record_steps_short": (
        "{path:raw} holds {found:int} steps, fewer than the {counted:int} its record counts: the file was cut "
        "short or swapped; copy the record together with its own .steps.jsonl file",
        "в {path:raw} шагов: {found:int}, меньше, чем {counted:int} по счёту записи: файл обрезан или подменён; "
        "копируйте запись вместе с её собственным файлом .steps.jsonl"),
    "error.trial.record_steps_ranks": (
        "{path:raw}: not every step has the figures of rank {rank:int}: the file is damaged; run the trial again",
        "{path:raw}: не у каждого шага есть значения процесса {rank:int}: файл повреждён; повторите пробный "
        "запуск"),
    "error.trial.record_not_object": (
        "a trial record is a JSON object with the fields gpuwork trial writes; this file holds a JSON {kind:raw}",
        "запись пробного запуска — это JSON-объект с полями, которые пишет gpuwork trial; в этом файле JSON {kind:raw}"),
    # -- writing the record and checkpoints (gpuwork.measure.records) ----------------------------------------
    "error.trial.disk_full": (
        "no space left on the disk of {folder:raw} while writing {file:raw} ({detail:raw}): free space there or "
        "choose another --out folder",
        "на диске с папкой {folder:raw} нет места, файл {file:raw} не записан ({detail:raw}): освободите место "
        "или выберите другую папку --out"),
    "error.trial.out_read_only": (
        "{folder:raw} is not writable ({detail:raw}): make it writable (chmod u+w) or choose another --out folder",
        "в папку {folder:raw} нельзя писать ({detail:raw}): разрешите запись (chmod u+w) или выберите другую "
        "папку --out"),
    "error.trial.write_failed": (
        "cannot write {file:raw} in {folder:raw} ({detail:raw}): check that folder or choose another --out folder",
        "не удалось записать {file:raw} в папку {folder:raw} ({detail:raw}): проверьте эту папку или выберите "
        "другую папку --out"),
    "error.trial.checkpoint_every": (
        "checkpoint_every={value:raw}: use a whole number of steps >= 0 (0 saves a checkpoint only when a signal "
        "stops the trial)",
        "checkpoint_every={value:raw}: укажите целое число шагов ≥ 0 (при 0 чекпойнт сохраняется, только когда "
        "запуск остановлен сигналом)"),
    "error.trial.rng_kind": (
        "the numpy random generator {kind:raw} cannot be saved in a checkpoint (only MT19937 can)",
        "генератор случайных чисел numpy {kind:raw} нельзя сохранить в чекпойнте (можно только MT19937)"),
    # -- resuming an interrupted trial (gpuwork.measure.trial.resume_point) ----------------------------------
    "error.trial.resume_not_found": (
        "no trial record '{run:raw}' (looked in {folder:raw}): give the record's path, or its run id with --out",
        "запись пробного запуска «{run:raw}» не найдена (искали в {folder:raw}): укажите путь к записи или её "
        "идентификатор вместе с --out"),
    "error.trial.resume_complete": (
        "trial {run:raw} ran to the end: there is nothing to resume",
        "пробный запуск {run:raw} завершён: продолжать нечего"),
    "error.trial.resume_ramp": (
        "--ramp starts new probes and cannot go on with trial {run:raw}: drop --ramp or drop --resume",
        "--ramp запускает новые пробы и не может продолжить пробный запуск {run:raw}: уберите --ramp или "
        "--resume"),
    "error.trial.resume_nproc": (
        "trial {run:raw} ran as {processes} {processes:pl:process|processes}, not {nproc}: each process's data "
        "depends on how many there are, so it resumes with the same number (drop --nproc or give --nproc "
        "{processes})",
        "пробный запуск {run:raw} шёл в {processes} {processes:pl:процессе|процессах|процессах}, а не в {nproc}: "
        "данные каждого процесса зависят от их числа, поэтому продолжить можно только с тем же числом (уберите "
        "--nproc или укажите --nproc {processes})"),
    "error.trial.resume_no_checkpoint": (
        "trial {run:raw} left no checkpoint in {folder:raw}: it stopped before saving one (run with "
        "--checkpoint-every N to save one every N steps)",
        "пробный запуск {run:raw} не оставил чекпойнта в папке {folder:raw}: он остановился раньше, чем сохранил "
        "его (запускайте с --checkpoint-every N, чтобы сохранять чекпойнт каждые N шагов)"),
    "error.trial.resume_unreadable": (
        "cannot resume from {folder:raw}: {what}",
        "продолжить с чекпойнта {folder:raw} нельзя: {what}"),
    "error.trial.resume_mismatch": (
        "checkpoint {folder:raw} holds step {step:raw} but its record expects {expected:raw}: the record and the "
        "checkpoint do not belong together",
        "в чекпойнте {folder:raw} сохранён шаг {step:raw}, а запись ожидает {expected:raw}: запись и чекпойнт "
        "относятся к разным запускам"),
    # -- the plan's SDPA backend (gpuwork.measure.sdpa) ---------------------------------------------------------
    "error.trial.sdpa_needs_cuda": (
        "sdpa_backend='{backend:raw}' needs a CUDA GPU; this trial runs on the CPU, where torch has only "
        "FlashAttention's CPU kernel and the `math` fallback: plan sdpa_backend `flash` or `auto`",
        "sdpa_backend='{backend:raw}' требует GPU с CUDA; этот пробный запуск идёт на CPU, где в PyTorch есть только "
        "CPU-ядро `flash` и запасное `math`: укажите в плане sdpa_backend `flash` или `auto`"),
    "error.trial.sdpa_cudnn_rocm": (
        "sdpa_backend='cudnn' needs an NVIDIA GPU: this torch is a ROCm build, without cuDNN's attention: plan "
        "sdpa_backend `flash` or `auto`",
        "sdpa_backend='cudnn' требует GPU NVIDIA: этот PyTorch собран для `ROCm`, внимания cuDNN в нём нет: укажите в "
        "плане sdpa_backend `flash` или `auto`"),
    "error.trial.sdpa_cudnn_capability": (
        "sdpa_backend='cudnn' needs compute capability 8.0 or newer; {gpu:raw} is {capability:raw}: plan "
        "sdpa_backend `flash` or `auto`",
        "sdpa_backend='cudnn' требует вычислительной способности 8.0 или выше; у {gpu:raw} она {capability:raw}: "
        "укажите в плане sdpa_backend `flash` или `auto`"),
    "error.trial.sdpa_cudnn_missing": (
        "sdpa_backend='cudnn' needs cuDNN, and this torch cannot load it (torch.backends.cudnn.is_available() is "
        "False): install a torch build with cuDNN, or plan sdpa_backend `flash` or `auto`",
        "sdpa_backend='cudnn' требует cuDNN, а этот PyTorch не может его загрузить (torch.backends.cudnn.is_available() "
        "— False): установите сборку PyTorch с cuDNN или укажите в плане sdpa_backend `flash` или `auto`"),
    "error.trial.sdpa_no_kernel": (
        "sdpa_backend='{backend:raw}' cannot run this model's attention on {device:raw} in {dtype:raw}: torch finds "
        "no kernel ({detail:raw}); nothing was run: plan sdpa_backend `auto` (torch picks) or another backend",
        "sdpa_backend='{backend:raw}' не может выполнить внимание этой модели на {device:raw} в {dtype:raw}: PyTorch "
        "не находит ядра ({detail:raw}); ничего не запускалось: укажите в плане sdpa_backend `auto` (выбирает "
        "PyTorch) или другое ядро"),
    "error.trial.sdpa_no_kernel_run": (
        "sdpa_backend='{backend:raw}': torch refused an attention call of this model during the steps ({detail:raw}): "
        "plan sdpa_backend `auto` (torch picks) or another backend; with an out folder the steps measured so far "
        "stay in its record file",
        "sdpa_backend='{backend:raw}': PyTorch отказался выполнить вызов внимания этой модели во время шагов "
        "({detail:raw}): укажите в плане sdpa_backend `auto` (выбирает PyTorch) или другое ядро; если задана папка "
        "для записей, измеренные шаги остались в файле записи"),
    # -- the step time's confidence interval and --until-stable (gpuwork.measure.stability) -------------------
    "error.trial.tolerance": (
        "tolerance {value:raw}: give a share of the median step time between 0 and 1, e.g. {default:g} for +-3 %",
        "допуск {value:raw}: укажите долю медианного времени шага от 0 до 1, например {default:g} для ±3 %"),
    "error.trial.max_steps": (
        "max_steps {value:raw}: give a whole number of measured steps, at least the {steps} of --steps",
        "max_steps {value:raw}: укажите целое число измеряемых шагов, не меньше {steps} из --steps"),
    "error.trial.until_stable_with": (
        "--until-stable measures one plan: drop {flag:raw}, or drop --until-stable and give --steps",
        "--until-stable измеряет один план: уберите {flag:raw} или уберите --until-stable и задайте --steps"),
}
