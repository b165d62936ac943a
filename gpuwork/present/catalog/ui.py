"""Catalog entries "ui.*" except ui.cmp.*, ui.compare.*, ui.field.* (their own files): code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "ui"

ENTRIES: dict[str, tuple[str, str]] = {
    "ui.title": ("GPU sizing for fine-tuning", "Подбор GPU для дообучения"),
    "ui.intro": (
        "Will a fine-tuning run fit, on which card, for how long and for how much? <b>Sizing</b>: pick a model (a "
        "preset, your config.json, or the architecture by hand) and the training setup; the charts show the memory "
        "<b>per GPU</b> term by term and what happens as the sequence or the batch grows. <b>Offers</b>: rental "
        "offers ranked for the plan. <b>Request</b>: the text to send a provider. <b>Demo trial</b>: a tiny real "
        "fine-tune on this server's CPU.",
        "Поместится ли дообучение, на какую карту, надолго ли и за сколько? <b>Расчёт</b>: выберите модель "
        "(пресет, свой config.json или архитектуру вручную) и параметры обучения; графики показывают память "
        "<b>на один GPU</b> по слагаемым и её рост с длиной последовательности и батчем. <b>Предложения</b>: "
        "предложения аренды для плана. <b>Заявка</b>: текст для провайдера. <b>Пробный запуск</b>: маленькое "
        "настоящее дообучение на CPU этого сервера."),
    "ui.model_source": ("Model from", "Модель из"),
    "ui.src_preset": ("preset", "пресет"),
    "ui.src_upload": ("upload", "загрузка"),
    "ui.src_manual": ("manual", "вручную"),
    "ui.model": ("Model", "Модель"),
    "ui.upload": ("Upload config.json or training configs", "Загрузить config.json или конфиги обучения"),
    "ui.hidden_size": ("Hidden size", "Скрытый размер"),
    "ui.num_hidden_layers": ("Layers", "Слои"),
    "ui.num_attention_heads": ("Heads", "Головы внимания"),
    "ui.num_key_value_heads": ("KV heads", "KV-головы"),
    "ui.intermediate_size": ("MLP intermediate", "Промежуточный MLP"),
    "ui.vocab_size": ("Vocabulary", "Словарь"),
    "ui.method": ("Method", "Метод"),
    "ui.precision": ("Precision", "Точность"),
    "ui.optimizer": ("Optimizer", "Оптимизатор"),
    "ui.seq_len": ("Sequence length", "Длина последов."),
    "ui.batch_size": ("Micro-batch", "Микробатч"),
    "ui.grad_accum": ("Grad accumulation", "Накопление град."),
    "ui.grad_checkpointing": ("Gradient checkpointing", "Пересчёт активаций"),
    "ui.attention": ("Attention", "Внимание"),
    "ui.sdpa_backend": ("SDPA kernel", "Ядро SDPA"),
    "ui.input_require_grads": ("Backward via frozen blocks", "Обратный проход по замороженным"),
    "ui.lora_r": ("LoRA rank r", "Ранг LoRA"),
    "ui.stack": ("Software stack", "Программный стек"),
    "ui.lengths": ("Sequence lengths", "Длины последов."),
    "ui.lora_targets": ("LoRA targets", "Модули LoRA"),
    "ui.kbit_upcast": ("fp32 embeddings, norms, head", "Эмбеддинги, нормы, голова в fp32"),
    "ui.gpus": ("GPUs", "Число GPU"),
    "ui.sharding": ("Sharding", "Шардирование"),
    "ui.shard_group_gpus": ("GPUs per shard group", "GPU в группе шардирования"),
    "ui.comm_overlap": ("Gradient sync", "Синхронизация градиентов"),
    "ui.fsdp_wrap": ("FSDP units", "Блоки обёртки FSDP"),
    "ui.recompute": ("Recomputes", "Пересчитывает"),
    "ui.recompute_every": ("Checkpoint one block in", "Чекпойнтинг на каждом N-м блоке"),
    "ui.grad_clip": ("Gradient clipping", "Ограничение нормы градиента"),
    "ui.deterministic": ("Deterministic mode", "Детерминированный режим"),
    "ui.launch_blocking": ("Blocking launches", "Блокирующие запуски ядер"),
    "ui.tf32": ("TF32 matmuls", "Умножения матриц в TF32"),
    "ui.fp8_linear": ("FP8 linear layers", "Линейные слои в FP8"),
    "ui.dataset_tokens": ("Dataset, tokens", "Датасет, токенов"),
    "ui.epochs": ("Epochs", "Эпохи"),
    "ui.eval_batch_size": ("Eval batch", "Батч оценки"),
    "ui.eval_samples": ("Eval samples", "Примеров оценки"),
    "ui.eval_keep": ("Eval keeps", "Оценка хранит"),
    "ui.eval_accum": ("Eval accumulation", "Накопление оценки"),
    "ui.mlm_predictions": ("Masked positions per sequence", "Маскированных позиций в последовательности"),
    "ui.packed_document_tokens": ("Document tokens", "Токенов в документе"),
    "ui.eval_keep_loss": ("the loss only", "только loss"),
    "ui.eval_keep_logits": ("all logits", "все логиты"),
    "ui.eval_keep_ids": ("token ids (argmax)", "номера самых вероятных токенов"),
    "ui.candidates": ("Compare with cards", "Сравнить с картами"),
    "ui.axis": ("What if", "Что если"),
    "ui.axis_seq_len": ("sequence length", "длина последовательности"),
    "ui.axis_batch_size": ("micro-batch", "микробатч"),
    "ui.verify": ("Verify exactly (trace one step)", "Проверить точно (трассировка шага)"),
    "ui.h_model": ("Model", "Модель"),
    "ui.h_training": ("Training", "Обучение"),
    "ui.h_gpus": ("GPUs and data", "GPU и данные"),
    "ui.h_totals": ("Totals per GPU", "Итоги на один GPU"),
    "ui.h_profile": ("Rental profile", "Профиль аренды"),
    "ui.h_time": ("Time", "Время"),
    "ui.h_disk": ("Disk", "Диск"),
    "ui.h_verify": ("Exact check", "Точная проверка"),
    "ui.h_results": ("Results", "Результаты"),
    "ui.h_compare": ("Trial records side by side", "Записи пробных запусков рядом"),
    "ui.h_interruptible": ("Interruptible offers: preemptions and checkpoints",
                           "Прерываемые предложения: прерывания и чекпойнты"),
    "ui.h_offers": ("Offers", "Предложения"),
    "ui.h_request": ("Rental request", "Заявка на аренду"),
    "ui.total": ("Total", "Итог"),
    "ui.gib": ("GiB", "ГиБ"),
    "ui.meaning": ("What it counts", "Что считает"),
    "ui.term": ("Term", "Слагаемое"),
    "ui.source": ("Source", "Источник"),
    "ui.peak_at": ("The peak comes during the <b>{phase:@phase}</b>.", "Пик памяти — на <b>{phase:@phase}</b>."),
    "ui.params": ("Parameters: {total:int} total, {trainable:int} trainable.",
                  "Параметры: всего {total:int}, обучаемых {trainable:int}."),
    "ui.host": ("Offloaded to CPU RAM (not on the GPU): {host_bytes:gib}",
                "Выгружено в оперативную память CPU (не на GPU): {host_bytes:gib}"),
    "ui.gib_note": ("GiB = 2<sup>30</sup> bytes; GB = 10<sup>9</sup> bytes.",
                    "ГиБ = 2<sup>30</sup> байт; ГБ = 10<sup>9</sup> байт."),
    "ui.no_profile": ("No profile fits this plan.", "Ни один профиль не подходит этому плану."),
    "ui.profile": ("Profile {id:raw} “{name}”: {gpus} × {gpu} ({mode:@mode}).",
                   "Профиль {id:raw} «{name}»: {gpus} × {gpu} ({mode:@mode})."),
    "ui.not_profile": ("not {id:raw}: {why}", "не {id:raw}: {why}"),
    "ui.check": ("check: {what}", "проверить: {what}"),
    "ui.changes": ("changes to the plan: {what:list}", "изменения плана: {what:list}"),
    "ui.time_line": (
        "On {gpus} × {gpu}: step {step_s:n3} s, {tokens_s:int} tokens/s, {steps:int} steps; training {train_s:dur} + "
        "eval {eval_s:dur} + checkpoints {checkpoint_s:dur} + margin {margin_s:dur} = <b>{total_s:dur}</b> "
        "({gpu_hours:int} GPU-hours).",
        "На {gpus} × {gpu}: шаг {step_s:n3} с, {tokens_s:int} токенов/с, {steps:int} {steps:pl:шаг|шага|шагов}; "
        "обучение {train_s:dur} + валидация {eval_s:dur} + чекпойнты {checkpoint_s:dur} + запас {margin_s:dur} = "
        "<b>{total_s:dur}</b> ({gpu_hours:int} GPU-часов)."),
    "ui.peak": ("Peak: {peak}, {tflops:g} TFLOPS per GPU.", "Пик: {peak}, {tflops:g} TFLOPS на GPU."),
    "ui.mfu": ("Efficiency (MFU) {mfu:n2}: {note}.", "Эффективность (MFU) {mfu:n2}: {note}."),
    "ui.step_parts": ("Where one step goes on one GPU ({stack:@stack}, {gpu}; seconds and share of the step):",
                      "Из чего состоит шаг на одном GPU ({stack:@stack}, {gpu}; секунды и доля шага):"),
    "ui.step_part": ("{seconds:n3} s", "{seconds:n3} с"),
    "ui.scaling_line": ("Tokens/s per GPU on 1, 2, … 64 × {gpu} (8 per node, InfiniBand NDR 400G between nodes): "
                        "{points:list}.",
                        "Токенов/с на GPU для 1, 2, … 64 × {gpu} (по 8 в узле, между узлами InfiniBand NDR 400G): "
                        "{points:list}."),
    "ui.disk_total": ("Recommended disk: <b>{total_bytes:size}</b> (lines below + {margin_bytes:size} margin).",
                      "Рекомендуемый диск: <b>{total_bytes:size}</b> (строки ниже + запас {margin_bytes:size})."),
    "ui.verify_hint": (
        "Runs one real training step of this model under fake tensors (no GPU, no weights): seconds to a minute.",
        "Один настоящий шаг обучения этой модели на фиктивных тензорах (без GPU и весов): от секунд до минуты."),
    "ui.tracing": ("Tracing one step under fake tensors… (seconds to a minute)",
                   "Трассировка шага на фиктивных тензорах… (от секунд до минуты)"),
    "ui.traced": ("Traced peak allocated", "Пик выделенной по трассировке"),
    "ui.analytic": ("Analytic estimate (same quantity, no cuBLAS workspace)",
                    "Аналитическая оценка (та же величина, без рабочей области cuBLAS)"),
    "ui.difference": ("Difference", "Разница"),
    "ui.traced_phase": ("traced peak in {traced:@phase}; estimate's peak in {analytic:@phase}",
                        "пик трассировки — на {traced:@phase}; пик оценки — на {analytic:@phase}"),
    "ui.trace_plan": ("Plan traced: {plan}", "Трассированный план: {plan}"),
    "ui.stand_in": ("stand-in: {what}", "замена: {what}"),
    "ui.category": ("Category", "Категория"),
    "ui.invalid": ("Fix the input above to see the estimate.", "Исправьте ввод выше, чтобы увидеть оценку."),
    "ui.building": ("Building {name} on the meta device…", "Строим {name} без весов (устройство meta)…"),
    "ui.busy": ("Another action is still running: wait for it to finish.",
                "Предыдущее действие ещё выполняется: дождитесь его окончания."),
    "ui.upload_first": ("upload a config.json first (the file from the model's Hugging Face page)",
                        "сначала загрузите config.json (файл со страницы модели на Hugging Face)"),
    "ui.not_estimated": ("{what:@ui.part} could not be estimated: {error}", "{what:@ui.part}: оценка не удалась: {error}"),
    "ui.part.profile": ("profile", "профиль"),
    "ui.part.disk": ("disk", "диск"),
    "ui.error": ("Error: {error}", "Ошибка: {error}"),
    "ui.unexpected": (
        "unexpected error ({error}); this is a bug in gpuwork, please report it with the values you entered",
        "непредвиденная ошибка ({error}); это ошибка в gpuwork, сообщите о ней вместе с введёнными значениями"),
    "ui.must_be_positive": ("{what}: {value} must be a number >= 0", "{what}: {value} — нужно число не меньше 0"),
    "ui.must_be_one": ("{what}: {value} must be at least 1", "{what}: {value} — нужно не меньше 1"),
    "ui.bad_record": ("{name} is not a gpuwork trial record ({error})",
                      "{name} — не запись пробного запуска gpuwork ({error})"),
    "ui.cannot_read_record": ("cannot read trial record {name}: {error}",
                              "не удалось прочитать запись пробного запуска {name}: {error}"),
    # trial
    "ui.steps": ("Measured steps", "Шагов замера"),
    "ui.warmup": ("Warm-up steps", "Шагов прогрева"),
    "ui.ramp": ("Also ramp (largest batch / seq that fits)", "Ещё и рампа (наибольший батч / длина)"),
    "ui.run": ("Run trial", "Запустить"),
    "ui.stop": ("Stop", "Стоп"),
    "ui.progress": ("Progress", "Ход"),
    "ui.trial_ready": ("Ready: {plan}. Press “Run trial”.", "Готово к запуску: {plan}. Нажмите «Запустить»."),
    "ui.trial_building": ("Building the model and the data…", "Строим модель и данные…"),
    "ui.trial_step": ("Step {step}/{total}: loss {loss:n3}, {time:n3} s, {tps:int} tokens/s",
                      "Шаг {step}/{total}: loss {loss:n3}, {time:n3} с, {tps:int} токенов/с"),
    "ui.trial_stopped": ("Stopped after {n} {n:pl:step|steps}: no record (a stopped trial proves nothing).",
                         "Остановлено после {n} {n:pl:шага|шагов|шагов}: записи нет (остановленный запуск ничего не "
                         "доказывает)."),
    "ui.trial_done": ("Done: {n} measured {n:pl:step|steps} in {s:n1} s.",
                      "Готово: {n} {n:pl:шаг|шага|шагов} замера за {s:n1} с."),
    "ui.trial_busy": ("A demo trial is already running on this machine: try again in a minute.",
                      "На этой машине уже идёт демонстрационный запуск: попробуйте через минуту."),
    "ui.trial_oom": ("Out of memory: {error}. Peak reached {mib} MiB.", "Не хватило памяти: {error}. Достигнутый пик {mib} МиБ."),
    "ui.summary": (
        "Median step {median:n3} s (p90 {p90:n3} s), {tps:int} tokens/s, peak trial memory {mib:int} MiB on "
        "{device}; loss {first:n3} → {last:n3}.",
        "Медиана шага {median:n3} с (p90 {p90:n3} с), {tps:int} токенов/с, пик памяти запуска {mib:int} МиБ на "
        "{device}; loss {first:n3} → {last:n3}."),
    "ui.data_verdict": ("Data: {verdict}.", "Данные: {verdict}."),
    "ui.checkpoint": (
        "Checkpoint round-trip: {verdict} — {message} ({size} on disk, save {save:n2} s, restore {restore:n2} s).",
        "Чекпойнт: {verdict} — {message} ({size} на диске, сохранение {save:n2} с, восстановление {restore:n2} с)."),
    "ui.verified": ("verified", "проверен"),
    "ui.not_verified": ("NOT verified", "НЕ проверен"),
    "ui.ramp_line": (
        "Ramp: largest micro-batch {batch} at seq {seq0} ({why_b}); longest seq {seq} at that batch ({why_s}); "
        "{n} probes.",
        "Рампа: наибольший микробатч {batch} при длине {seq0} ({why_b}); наибольшая длина {seq} при этом батче "
        "({why_s}); проб: {n}."),
    "ui.ramp_none": ("Ramp: nothing fit.", "Рампа: ничего не поместилось."),
    "ui.extrapolation": ("Whole run on {gpus} × {gpu} at the measured speed: {total} ({steps} steps).",
                         "Весь запуск на {gpus} × {gpu} при замеренной скорости: {total} (шагов: {steps})."),
    "ui.no_extrapolation": (
        "Extrapolation to the whole run needs a trial on a GPU listed in data/gpus.csv; this trial ran on {device}: "
        "it proves the pipeline, not the speed.",
        "Экстраполяция на весь запуск требует пробного запуска на GPU из data/gpus.csv; этот запуск шёл на "
        "{device}: он проверяет конвейер, а не скорость."),
    "ui.saved": ("Record saved: <code>{path}</code>", "Запись сохранена: <code>{path}</code>"),
    "ui.not_saved": ("Record not saved (no output folder set).", "Запись не сохранена (папка не задана)."),
    "ui.substitutions": ("Substitutions: {what}", "Замены: {what}"),
    "ui.sdpa": ("Attention: SDPA, kernel {used:raw} (the plan's sdpa_backend: {asked:raw})",
                "Внимание: SDPA, ядро {used:raw} (sdpa_backend в плане: {asked:raw})"),
    "ui.switches": ("Execution switches the trial ran under: {what}", "Переключатели выполнения в пробном запуске: {what}"),
    "ui.demo_note": (
        "Demo: tiny models on this machine's CPU, at most {steps} steps, sequence {seq}, batch {batch}; one trial "
        "at a time.",
        "Демонстрация: маленькие модели на CPU этой машины, не больше {steps} шагов, длина {seq}, батч {batch}; "
        "по одному запуску."),
    # offers
    "ui.modes": ("Rental mode", "Режим аренды"),
    "ui.classes": ("GPU class", "Класс GPU"),
    "ui.regions": ("Region", "Регион"),
    "ui.max_price": ("Max $/GPU-hour", "Макс. $/GPU-час"),
    "ui.min_vram": ("Min GB per GPU", "Мин. ГБ на GPU"),
    "ui.budget": ("Budget, USD", "Бюджет, USD"),
    "ui.sort": ("Sort by", "Сортировать"),
    "ui.include_unfit": ("Show offers that do not fit", "Показывать неподходящие"),
    "ui.preemption_rate": ("Preemptions per hour", "Прерываний в час"),
    "ui.limit": ("Rows", "Строк"),
    "ui.sort_cost": ("expected cost", "ожидаемая стоимость"),
    "ui.sort_time": ("expected time", "ожидаемое время"),
    "ui.sort_price": ("price per GPU-hour", "цена GPU-часа"),
    "ui.sort_vram": ("GPU memory", "память GPU"),
    "ui.zero_any": ("0 = any", "0 = любой"),
    "ui.gpu_class.consumer": ("consumer", "потребительский"),
    "ui.gpu_class.workstation": ("workstation", "рабочая станция"),
    "ui.gpu_class.server": ("server", "серверный"),
    "ui.region.eu": ("eu", "Европа"),
    "ui.region.us": ("us", "США"),
    "ui.region.asia": ("asia", "Азия"),
    "ui.mode_option": ("{value:@mode}", "{value:@mode}"),
    "ui.method_option": ("{value:@ui.method}", "{value:@ui.method}"),
    "ui.method.scratch": ("scratch", "обучение с нуля"),
    "ui.method.full": ("full", "полное обновление"),
    "ui.method.freeze": ("freeze", "заморозка слоёв"),
    "ui.method.lora": ("lora", "LoRA"),
    "ui.method.qlora": ("qlora", "QLoRA"),
    "ui.lora_targets_hint": ("q_proj,v_proj or all-linear", "q_proj,v_proj или all-linear"),
    "ui.kbit_upcast_hint": (
        "QLoRA: peft's prepare_model_for_kbit_training keeps embeddings, norms and lm_head in fp32. Clear it when "
        "the framework skips that or casts them back to 16 bit (axolotl, ms-swift, TRL 0.27 and later)",
        "QLoRA: prepare_model_for_kbit_training держит эмбеддинги, нормализации и lm_head в fp32. Снимите "
        "флажок, если фреймворк это пропускает или возвращает их в 16 бит (например, TRL 0.27 и новее)"),
    "ui.eval_batch_size_hint": ("blank: no evaluation during training", "пусто — без оценки во время обучения"),
    "ui.eval_samples_hint": ("blank: one evaluation batch", "пусто — один батч оценки"),
    "ui.eval_accum_hint": ("blank: outputs stay on the GPU to the end", "пусто — выходы на GPU до конца оценки"),
    "ui.mlm_predictions_hint": ("blank: the head predicts every position; BERT pre-training scripts: 20 of 128",
                                "пусто — голова предсказывает все позиции; скрипты предобучения BERT: 20 из 128"),
    "ui.packed_document_tokens_hint": (
        "blank: attention across the whole packed row; a length: attention stays inside each document of about "
        "that many tokens (flash-attn varlen, TRL padding_free, NeMo packed SFT)",
        "пусто — внимание по всей упакованной строке; число — внимание внутри каждого документа примерно такой "
        "длины (ядра внимания, которым передают границы документов)"),
    "ui.comm_overlap_hint": (
        "default: each library's own (torch DDP buckets behind backward, DeepSpeed ZeRO after it); after backward: "
        "Megatron-LM's default; overlapped: Megatron-LM --overlap-grad-reduce --overlap-param-gather",
        "по умолчанию — как в обычной библиотеке (корзины PyTorch DDP за обратным проходом, ZeRO — после него); "
        "после обратного прохода — всё сведение после него; с перекрытием — корзины за обратным проходом, сбор "
        "параметров ZeRO — за прямым"),
    "ui.grad_clip_hint": (
        "clip_grad_norm_ before each update (HF Trainer max_grad_norm 1.0, nanoGPT grad_clip 1.0); off: the run "
        "never clips (torchtune without clip_grad_norm, max_grad_norm 0)",
        "clip_grad_norm_ перед каждым обновлением (max_grad_norm 1.0 в HF Trainer); "
        "выключено — обучение не ограничивает норму (torchtune без clip_grad_norm, max_grad_norm 0)"),
    "ui.recompute_hint": (
        "what gradient checkpointing runs again in backward: the whole block (Hugging Face, torchtitan mode 'full'), "
        "or torchtitan's op-level selective policy (mode 'selective', option 'op'), which keeps the outputs of "
        "every second matmul and of the attention kernel and recomputes the rest, or a policy that keeps every "
        "matmul's and the attention's outputs (torch's compute-intensive example): more memory, less time",
        "что градиентный чекпойнтинг пересчитывает при обратном проходе: весь блок (Hugging Face, полный режим "
        "torchtitan), выборочно по операциям, как в выборочном режиме torchtitan (хранятся выходы каждого "
        "второго матричного умножения и ядра внимания, остальное пересчитывается), или всё, кроме матричных "
        "умножений и внимания (пример политики из документации PyTorch): больше памяти, меньше времени"),
    "ui.recompute_every_hint": (
        "checkpointing on one block in N (blocks 0, N, 2N, ...), the others keep their activations: transformers "
        "5's every_n_layers, passed in the Trainer's gradient_checkpointing_kwargs; 1 checkpoints every block. A "
        "larger N keeps more memory and recomputes less",
        "чекпойнтинг на каждом N-м блоке (блоки 0, N, 2N, ...), остальные хранят активации: параметр "
        "every_n_layers из transformers 5, передаётся в gradient_checkpointing_kwargs у Trainer; 1 — все блоки. "
        "Чем больше N, тем больше памяти и тем меньше пересчёта"),
    "ui.fsdp_wrap_hint": (
        "per block: a transformer auto-wrap policy (TRANSFORMER_BASED_WRAP, the Trainer's default); whole model: no "
        "wrap policy (NO_WRAP, auto_wrap_policy=None) or a size-based one no block reaches: everything gathered "
        "before forward, reduced after backward",
        "по слоям — политика обёртки по слоям трансформера (TRANSFORMER_BASED_WRAP, по умолчанию в Trainer); вся "
        "модель — без политики обёртки (NO_WRAP) или политика по размеру, которой не достигает ни один слой: всё "
        "собирается до прямого прохода и сводится после обратного"),
    "ui.deterministic_hint": (
        "torch.use_deterministic_algorithms(True) or the Trainer's full_determinism: torch fills every tensor it "
        "allocates with NaN first; priced as one extra write of each",
        "детерминированный режим PyTorch (torch.use_deterministic_algorithms) или full_determinism в Trainer: "
        "PyTorch сначала заполняет каждый новый тензор нечислами; во времени — лишняя запись каждого"),
    "ui.launch_blocking_hint": (
        "CUDA_LAUNCH_BLOCKING=1 set before CUDA starts: every kernel launch waits for the kernel; the host's "
        "dispatch adds to the GPU time and communication is not hidden behind compute",
        "CUDA_LAUNCH_BLOCKING=1, заданная до запуска CUDA: каждый запуск ядра ждёт его завершения; "
        "диспетчеризация на CPU прибавляется к времени GPU, обмен не прячется за вычислениями"),
    "ui.fp8_linear_hint": (
        "the blocks' linear layers in FP8 with per-tensor scales (Transformer Engine, Accelerate mixed_precision "
        "fp8, torchao float8): faster GEMMs, a cast of each input, weight and output gradient, FP8 inputs kept for "
        "backward; full, freeze or from-scratch runs on an Ada, Hopper or Blackwell GPU",
        "линейные слои блоков в FP8 с масштабом на тензор (Transformer Engine, mixed_precision fp8 в Accelerate, "
        "float8 из torchao): GEMM быстрее, каждый вход, вес и градиент выхода переводится в FP8, для обратного "
        "прохода хранятся входы в FP8; полное дообучение, freeze или обучение с нуля на GPU Ada, Hopper или "
        "Blackwell"),
    "ui.tf32_hint": (
        "fp32 matmuls on the TF32 tensor cores: torch.backends.cuda.matmul.allow_tf32 = True, "
        "torch.set_float32_matmul_precision('high') or HF tf32=True; off is PyTorch's default. Changes only fp32 "
        "GEMMs and bmm, not bf16/fp16 ones",
        "умножения матриц fp32 на тензорных ядрах TF32: включённый torch.backends.cuda.matmul.allow_tf32, "
        "torch.set_float32_matmul_precision ниже наивысшей точности или параметр tf32 в HF; по умолчанию в PyTorch "
        "выключено. Меняет только умножения матриц fp32 (и пакетные), не bf16/fp16"),
    "ui.sdpa_backend_hint": (
        "which kernel torch's scaled_dot_product_attention runs: FlashAttention-2 first (torch before 2.11, or a "
        "cuDNN of 9.15.0 or older), torch's own choice from 2.11 (cuDNN's attention on H100, H200, B200 and GB200), "
        "or one backend held",
        "какое ядро выполняет scaled_dot_product_attention в PyTorch: сначала FlashAttention-2 (PyTorch до 2.11 или "
        "cuDNN не новее 9.15.0), собственный выбор PyTorch с 2.11 (внимание cuDNN на H100, H200, B200 и GB200) или "
        "один заданный бэкенд"),
    "ui.sdpa_backend_flash": ("FlashAttention-2 first", "сначала FlashAttention-2"),
    "ui.sdpa_backend_auto": ("torch 2.11+ choice", "выбор PyTorch 2.11+"),
    "ui.sdpa_backend_cudnn": ("cuDNN", "cuDNN"),
    "ui.sdpa_backend_efficient": ("memory-efficient", "экономное по памяти"),
    "ui.input_require_grads_hint": (
        "freeze only: whether the embeddings' output requires grad (model.enable_input_require_grads()), so that "
        "the backward runs through every frozen block too: their recompute under checkpointing and their input "
        "gradients, never their weight gradients. As the stack does: transformers 5 (hf-trainer, hf-liger) turns it "
        "on whenever gradient checkpointing is on, older stacks leave it off; on: e.g. LLaMA-Factory 0.5-0.6.2's "
        "freeze-tuning with checkpointing; off: the backward stops at the lowest trained block",
        "только для заморозки слоёв: требует ли выход эмбеддингов градиент (model.enable_input_require_grads()), "
        "так что обратный проход идёт и через все замороженные блоки: их пересчёт при пересчёте активаций и "
        "градиенты по их входам, но не градиенты их весов. Как в стеке: transformers 5 (hf-trainer, hf-liger) "
        "включает это всякий раз, когда включён пересчёт активаций, более старые стеки не включают; включено: "
        "например, заморозка слоёв в LLaMA-Factory 0.5-0.6.2 с пересчётом активаций; выключено: обратный проход "
        "останавливается на нижнем обучаемом блоке"),
    "ui.input_require_grads_stack": ("as the stack does", "как в стеке"),
    "ui.input_require_grads_on": ("on", "включено"),
    "ui.input_require_grads_off": ("off", "выключено"),
    "ui.recompute_block": ("the whole block", "весь блок"),
    "ui.recompute_ops": ("op-level selective (torchtitan)", "выборочно по операциям (torchtitan)"),
    "ui.recompute_matmuls": ("every matmul kept (torch's example policy)",
                             "хранить все матричные умножения (пример PyTorch)"),
    "ui.fsdp_wrap_blocks": ("per block", "по слоям"),
    "ui.fsdp_wrap_whole": ("whole model", "вся модель"),
    "ui.comm_overlap_default": ("library default", "как в библиотеке"),
    "ui.comm_overlap_off": ("after backward", "после обратного прохода"),
    "ui.comm_overlap_on": ("overlapped", "с перекрытием"),
    "ui.lengths_hint": ("fixed, packed, padded or 128:40,512:50 (length:count)",
                        "fixed, packed, padded или 128:40,512:50 (длина:число)"),
    "ui.class_option": ("{value:@ui.gpu_class}", "{value:@ui.gpu_class}"),
    "ui.region_option": ("{value:@ui.region}", "{value:@ui.region}"),
    "ui.col_offer": ("Offer", "Предложение"),
    "ui.col_gpu": ("GPU", "GPU"),
    "ui.col_mode": ("Mode", "Режим"),
    "ui.col_region": ("Region", "Регион"),
    "ui.col_price": ("$/GPU-h", "$/GPU-ч"),
    "ui.col_gpus": ("GPUs used / billed", "GPU: занято / оплачено"),
    "ui.col_sharding": ("Sharding", "Шардирование"),
    "ui.col_time": ("Expected time", "Ожидаемое время"),
    "ui.col_cost": ("Expected cost", "Ожидаемая стоимость"),
    "ui.col_notes": ("Notes", "Примечания"),
    "ui.col_uninterrupted": ("Without preemptions", "Без прерываний"),
    "ui.col_preemptions": ("Expected preemptions", "Ожидаемых прерываний"),
    "ui.col_rework": ("Rework", "Переделка"),
    "ui.col_interval": ("Checkpoint every (now)", "Чекпойнт каждые (сейчас)"),
    "ui.col_recommended": ("Recommended", "Рекомендуется"),
    "ui.recommended": ("{interval_s:dur} (~{steps:int} {steps:pl:step|steps})",
                       "{interval_s:dur} (~{steps:int} {steps:pl:шаг|шага|шагов})"),
    "ui.preemptions": ("~{preemptions:n1} preemptions", "~{preemptions:n1} прерываний"),
    "ui.misses_deadline": ("misses the deadline", "не успевает к сроку"),
    "ui.no_offers": ("No offer passes the filters.", "Ни одно предложение не проходит фильтры."),
    "ui.none_interruptible": ("No fitting interruptible offer.", "Нет подходящих прерываемых предложений."),
    "ui.offers_note": ("Prices are illustrative dated snapshots from data/catalog.csv, not quotes.",
                       "Цены — ориентировочные датированные снимки из data/catalog.csv, не оферта."),
    "ui.yes": ("yes", "да"),
    "ui.no": ("no", "нет"),
    "ui.records": ("Trial records (.json)", "Записи запусков (.json)"),
    "ui.record_price": ("Price, $/hour (0 = none)", "Цена, $/час (0 = нет)"),
    "ui.no_records": ("No trial records yet: run a trial or upload its JSON record.",
                      "Записей пока нет: запустите пробный запуск или загрузите его JSON."),
    "ui.pick_one": ("pick at least one {what}", "выберите хотя бы один вариант: {what}"),
    # request
    "ui.req_lang": ("Language", "Язык"),
    "ui.start_date": ("Start date", "Дата начала"),
    "ui.date_hint": ("YYYY-MM-DD (optional)", "ГГГГ-ММ-ДД (необязательно)"),
    "ui.rent_days": ("Rent period, days", "Срок аренды, дней"),
    "ui.days_hint": ("0 = from the estimate", "0 = по оценке"),
    "ui.trial_required": ("Ask for a step-time trial", "Просить тест времени шага"),
    "ui.explicit_context": ("State seq length and batch", "Указать длину и батч"),
    "ui.dataset_gb": ("Dataset size, GB", "Размер датасета, ГБ"),
    "ui.gb_hint": ("0 = from tokens", "0 = по токенам"),
    "ui.download_txt": ("Download the request (.txt)", "Скачать заявку (.txt)"),
    "ui.download_json": ("Download as JSON", "Скачать как JSON"),
    "ui.copy_hint": ("Select the text and copy it, or download it.", "Выделите текст и скопируйте его или скачайте."),
    # app
    "ui.plan_caption": (
        "{model}, {method:raw}, {precision:raw}, {optimizer:raw}, seq {seq_len:int} × batch {batch} (×{grad_accum}), "
        "{gpus} {gpus:pl:GPU|GPUs}, {sharding:raw}",
        "{model}, {method:raw}, {precision:raw}, {optimizer:raw}, контекст {seq_len:int} × батч {batch} "
        "(×{grad_accum}), {gpus} GPU, {sharding:raw}"),
    "ui.tab_sizing": ("Sizing", "Расчёт"),
    "ui.tab_offers": ("Offers", "Предложения"),
    "ui.tab_request": ("Request", "Заявка"),
    "ui.tab_trial": ("Demo trial", "Пробный запуск"),
    "ui.language": ("Language", "Язык"),
    "ui.plan_field": ("field", "поле"),
    "ui.plan_value": ("value", "значение"),
    # each language is named in itself, in both modes: that is how a reader finds their own
    "ui.lang_name.en": ("English", "English"),
    "ui.lang_name.ru": ("Русский", "Русский"),
    # -- the waiting line of expensive actions (gpuwork.ui.queue) ---------------------------------------------
    "ui.queue_waiting": (
        "Waiting ({n} ahead): this server runs one heavy action at a time; it starts by itself.",
        "Ожидание (впереди: {n}): сервер выполняет тяжёлые действия по одному; запуск начнётся сам."),
    "ui.queue_full": (
        "The server is busy ({places} actions already waiting): try again in a few minutes.",
        "Сервер занят (уже ждут действий: {places}): попробуйте через несколько минут."),
    "ui.queue_cancelled": ("Cancelled while waiting for its turn.", "Отменено во время ожидания очереди."),
    # -- what the served app says instead of a server's internals (gpuwork.ui.common.friendly) -----------------
    "ui.app_unexpected": (
        "unexpected error (reference {ref:raw}): this is a bug in gpuwork; the server's log has the details under "
        "that reference",
        "непредвиденная ошибка (код {ref:raw}): это ошибка в gpuwork; подробности — в журнале сервера под этим "
        "кодом"),
    # -- the sizing form's upload (gpuwork.ui.sizing.parse_upload) -----------------------------------------------
    "ui.upload_reference": (
        "{key:raw} names {path:raw}, which was not uploaded: select it together with this file to read it",
        "{key:raw} указывает на {path:raw}, но этот файл не загружен: выберите его вместе с этим файлом"),
    "ui.upload_unrecognised": (
        "{name:raw} is neither a model's config.json (it has no 'model_type' key) nor a training config gpuwork "
        "reads (keys: {keys:raw}): upload a config.json, or a TrainingArguments / SFTConfig, axolotl, LLaMA-Factory, "
        "DeepSpeed or accelerate config",
        "{name:raw} — не config.json модели (в нём нет ключа 'model_type') и не конфигурация обучения, которую "
        "читает gpuwork (ключи: {keys:raw}): загрузите config.json или конфигурацию TrainingArguments / SFTConfig, "
        "axolotl, LLaMA-Factory, DeepSpeed или accelerate"),
    "ui.upload_two_models": (
        "{first:raw} and {second:raw} are both model configs (config.json): upload one model at a time",
        "{first:raw} и {second:raw} — обе конфигурации модели (config.json): загружайте по одной модели"),
    "ui.upload_too_complex": (
        "{name:raw} holds more than {limit:int} values once its YAML aliases are expanded: upload the config "
        "without aliases",
        "в {name:raw} больше {limit:int} значений после раскрытия ссылок YAML: загрузите конфигурацию без ссылок"),
    "ui.upload_model_none": ("The configs name no model; the form sizes {kept:raw}",
                             "В конфигурациях модель не указана; форма считает {kept:raw}"),
    "ui.upload_model_kept": (
        "The configs name the model {model:raw}, which is not a bundled preset; the form sizes {kept:raw}: upload "
        "that model's config.json together with the configs to size it",
        "В конфигурациях указана модель {model:raw}, её нет среди встроенных заготовок; форма считает {kept:raw}: "
        "чтобы посчитать эту модель, загрузите её config.json вместе с конфигурациями"),
    "ui.have": ("My cards (N×GPU)", "Свои карты (N×GPU)"),
    "ui.have_hint": (
        "the cards you own, e.g. 1xrtx4090: every tab fits the run to them; time only, no rental cost. Empty: rent",
        "ваши собственные карты, например 1xrtx4090: все вкладки подгоняют запуск под них; только время, без затрат "
        "на аренду. Пусто — аренда"),
    # -- live curves of a measured run, and the estimate beside a record in the trial panel (gpuwork.ui.trial) --
    "ui.live.waiting": ("Waiting for the first step of the run…", "Ждём первый шаг запуска…"),
    "ui.live.step": ("Step {step}: loss {loss:n3}, {time:n3} s, {tps:int} tokens/s",
                     "Шаг {step}: loss {loss:n3}, {time:n3} с, {tps:int} токенов/с"),
    "ui.live.step_warmup": ("Step {step} (warm-up): loss {loss:n3}, {time:n3} s, {tps:int} tokens/s",
                            "Шаг {step} (прогрев): loss {loss:n3}, {time:n3} с, {tps:int} токенов/с"),
    "ui.trial_loaded": ("Record {label:raw}: {n} measured {n:pl:step|steps} on {device:raw}.",
                        "Запись {label:raw}: {n} {n:pl:шаг|шага|шагов} замера на {device:raw}."),
    "ui.beside.title": (
        "The estimate for exactly this configuration (stack {stack:raw}, GPU {gpu:raw}) beside what was measured",
        "Оценка ровно для этой конфигурации (стек {stack:raw}, GPU {gpu:raw}) рядом с замером"),
    "ui.beside.title_no_gpu": (
        "The estimate for exactly this configuration (stack {stack:raw}) beside what was measured",
        "Оценка ровно для этой конфигурации (стек {stack:raw}) рядом с замером"),
    "ui.beside.quantity": ("Quantity", "Величина"),
    "ui.beside.measured": ("Measured", "Замер"),
    "ui.beside.estimated": ("Estimated", "Оценка"),
    "ui.beside.error": ("Error (measured / estimated − 1)", "Ошибка (замер / оценка − 1)"),
    "ui.beside.error_value": ("{sign:raw}{pct:n1}%", "{sign:raw}{pct:n1} %"),
    "ui.beside.allocated": ("allocated peak (torch.cuda.max_memory_allocated)",
                            "пик выделенной памяти (torch.cuda.max_memory_allocated)"),
    "ui.beside.reserved": ("reserved peak (torch.cuda.max_memory_reserved)",
                           "пик зарезервированной памяти (torch.cuda.max_memory_reserved)"),
    "ui.beside.device": ("device total (what nvidia-smi shows)", "всего на устройстве (как показывает nvidia-smi)"),
    "ui.beside.step": ("step time (median)", "время шага (медиана)"),
    "ui.beside.tokens": ("tokens/s", "токенов/с"),
    # a field's value in a message: "Sequence length: 'abc' is not a count: ..."
    "ui.field_problem": ("{label}: {problem:raw}", "{label}: {problem:raw}"),
    # -- the dataset: tokens, a size or a file of documents -------------------------------------------------------
    "ui.dataset": ("Dataset (tokens or size)", "Датасет (токены или размер)"),
    "ui.dataset_hint": ("e.g. 50M tokens, 200 MB or 1.5 GB", "например 50M токенов, 200 MB или 1.5 GB"),
    "ui.dataset_from_size": (
        "{size:raw} of text ≈ {tokens:int} tokens at {ratio:g} bytes per token (a stated average for English "
        "text; upload the documents to count them with the model's tokenizer).",
        "{size:raw} текста ≈ {tokens:int} токенов при {ratio:g} байта на токен (принятое среднее для "
        "английского текста; загрузите документы, чтобы посчитать их токенизатором модели)."),
    "ui.documents": ("Documents", "Документы"),
    "ui.documents_hint": (
        "A file of documents (.txt, .jsonl, .json, .md, .csv): its tokens are counted.",
        "Файл с документами (.txt, .jsonl, .json, .md, .csv): в нём будут посчитаны токены."),
    "ui.documents_counted": (
        "{name:raw}: {documents:int} documents, {size:raw}, {tokens:int} tokens counted with the tokenizer of "
        "{model:raw}.",
        "{name:raw}: документов {documents:int}, {size:raw}, {tokens:int} токенов по токенизатору "
        "{model:raw}."),
    "ui.documents_ratio": (
        "{name:raw}: {documents:int} documents, {size:raw} ≈ {tokens:int} tokens at {ratio:g} bytes per "
        "token (no tokenizer of {model:raw} on this machine: a stated average for English text).",
        "{name:raw}: документов {documents:int}, {size:raw} ≈ {tokens:int} токенов при {ratio:g} байта на "
        "токен (токенизатора {model:raw} на этой машине нет: принятое среднее для английского текста)."),
    "ui.documents_empty": ("{name:raw} holds no text: upload a file of documents.",
                           "В {name:raw} нет текста: загрузите файл с документами."),
    "ui.documents_too_large": (
        "{name:raw} is larger than {limit:raw}: type its size instead (e.g. 2 GB); the tokens are then "
        "estimated at the stated bytes per token.",
        "{name:raw} больше {limit:raw}: введите его размер (например 2 GB); токены тогда оцениваются по "
        "принятому числу байт на токен."),
    # -- the rental period -------------------------------------------------------------------------------------------
    "ui.rent_days_range": (
        "Rent period {value:raw} days: use a whole number from 1 to {maximum:int} days (0 = from the run's time).",
        "Срок аренды {value:raw} дн.: укажите целое число от 1 до {maximum:int} дней (0 — по времени запуска)."),
    # -- the owned cards in the profile line ---------------------------------------------------------------------------
    "ui.profile_own": ("Profile {id:raw} “{name}”: {gpus} × {gpu} (your own cards, no rental).",
                       "Профиль {id:raw} «{name}»: {gpus} × {gpu} (ваши карты, без аренды)."),
    # -- the language switch ---------------------------------------------------------------------------------------------
    "ui.lang_label": ("Language", "Язык"),
    # -- links --------------------------------------------------------------------------------------------------------------
    "ui.link_hub_preset": (
        "{model:raw} is a Hugging Face Hub id: sized as the bundled preset {preset:raw}, the same architecture.",
        "{model:raw} — id на Hugging Face Hub: расчёт по встроенному пресету {preset:raw} с той же архитектурой."),
    # -- the All GPUs tab: the one answer above the matrix of the plan as written -------------------------------
    "ui.fit_as_written": (
        "The table below is the plan as written on every card (its count and sharding as needed); the answer above "
        "may include a change (see Advice).",
        "Таблица ниже — план как он задан, на каждой карте (число GPU и шардирование — по необходимости); ответ выше "
        "может включать изменение (см. «Советы»)."),
    "ui.trial_plan": ("Trial plan: {plan}.", "План пробного запуска: {plan}."),
    # -- one card's memory, three numbers (gpuwork.ui.sizing.memory_units_html) ---------------------------------
    "ui.memory_units": (
        "One card, three numbers: {gpu} is sold as <b>{card_gb} GB</b> (10<sup>9</sup> bytes); nvidia-smi shows "
        "<b>{total_bytes:gib} total</b> (GiB = 2<sup>30</sup> bytes, after what the driver keeps); gpuwork plans "
        "with <b>{usable_bytes:gib} usable</b>, the total less {margin:pct} kept free for fragmentation, "
        "communication buffers and other processes. Compare the <i>device total</i> with the usable figure.",
        "Одна карта — три числа: {gpu} продаётся как <b>{card_gb} ГБ</b> (10<sup>9</sup> байт); nvidia-smi "
        "показывает <b>всего {total_bytes:gib}</b> (ГиБ = 2<sup>30</sup> байт, за вычетом того, что держит "
        "драйвер); gpuwork считает доступными <b>{usable_bytes:gib}</b> — всего за вычетом {margin:pct} запаса на "
        "фрагментацию, буферы обмена и другие процессы. Сравнивайте <i>всего на устройстве</i> с доступной "
        "памятью."),
    # -- a shareable plan (gpuwork.ui.share, the sizing form) -------------------------------------------------
    "ui.share.link": ("Link to this plan", "Ссылка на этот план"),
    "ui.share.download": ("Download plan (.json)", "Скачать план (.json)"),
    "ui.share.hint": (
        "The link and the file reproduce this plan: open the link, or pass the file to `gpuwork report --plan`.",
        "Ссылка и файл воспроизводят этот план: откройте ссылку или передайте файл в отчёт gpuwork."),
    "ui.share.local_model": (
        "The model is a local config file: the link works on this machine only.",
        "Модель — локальный файл конфигурации: ссылка работает только на этой машине."),
    # -- the offers panel --------------------------------------------------------------------------------------
    "ui.col_provider": ("Provider", "Провайдер"),
    # -- the trial notebook ------------------------------------------------------------------------------------
    "ui.trial_background": (
        "The trial runs in the background: the kernel stays free, so Stop works, also after Run All.",
        "Пробный запуск идёт в фоне: ядро свободно, поэтому «Стоп» работает, в том числе после «Run All»."),
    # -- tabs -------------------------------------------------------------------------------------------------------
    "ui.tab_advice": ("Advice", "Советы"),
    "ui.tab_fit": ("All GPUs", "Все GPU"),
    # -- one state: every tab says the plan is invalid instead of showing another plan's results ---------------
    "ui.invalid_tab": (
        "No results: the plan on the Sizing tab is invalid ({error:raw}). Fix it there; every tab follows.",
        "Результатов нет: план на вкладке «Расчёт» неверен ({error:raw}). Исправьте его там — все вкладки "
        "обновятся."),
    # -- the advisor --------------------------------------------------------------------------------------------
    "ui.h_advice": ("What to change", "Что изменить"),
    "ui.advice_intro": (
        "The standard memory savers (gradient checkpointing, a smaller micro-batch with more accumulation, an 8-bit "
        "optimizer, QLoRA, sharding or offload on several GPUs, a shorter sequence), tried one at a time and in "
        "pairs, each priced on its cheapest fitting offer with the Offers tab's filters. Apply sets the form to the "
        "changed plan; the offers and the request follow.",
        "Стандартные способы сэкономить память (пересчёт активаций, меньший микробатч с накоплением градиента, "
        "8-битный оптимизатор, QLoRA, шардирование или выгрузка на нескольких GPU, более короткая "
        "последовательность) по одному и парами; каждый оценён на самом дешёвом подходящем предложении с "
        "фильтрами вкладки «Предложения». «Применить» переносит изменённый план в форму; предложения и заявка "
        "следуют за ним."),
    "ui.apply": ("Apply", "Применить"),
    "ui.apply_hint": ("Set the form to this plan", "Перенести этот план в форму"),
    "ui.applied": ("Applied: {changes:list}.", "Применено: {changes:list}."),
    # -- the fit matrix -------------------------------------------------------------------------------------------
    "ui.h_fit": ("The plan on every GPU of the catalog, 1, 2, 4 and 8 of each",
                 "План на каждом GPU каталога: по 1, 2, 4 и 8 штук"),
    "ui.fit_intro": (
        "Memory per GPU against the usable memory (the card's total less the safety margin); headroom is what is "
        "left; the largest micro-batch (at this sequence) and the longest sequence (at this micro-batch) that fit; "
        "time and cost of the whole run on the cheapest offer with that many GPUs, else at the catalog's typical "
        "price.",
        "Память на GPU против доступной (полный объём карты минус запас); запас — что остаётся; наибольший "
        "микробатч (при этой последовательности) и самая длинная последовательность (при этом микробатче), которые "
        "помещаются; время и стоимость всего запуска на самом дешёвом предложении с таким числом GPU, иначе по "
        "типичной цене каталога."),
    "ui.fit_col_offer": ("offer", "предложение"),
    "ui.fit_col_gpus": ("GPUs", "кол-во"),
    "ui.fit_rows": ("{fits} of {cells} combinations fit.", "Помещается: {fits} из {cells} сочетаний."),
}
