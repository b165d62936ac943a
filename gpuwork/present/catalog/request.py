"""Catalog entries "request.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "request"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the rental request (gpuwork.present.request) -----------------------------------------------------------
    "request.summary": ("{method}, {context}; {dataset}; {period}; {trial}",
                        "{method}, {context}; {dataset}; {period}; {trial}"),
    "request.method.scratch": ("Training from scratch", "Обучение с нуля"),
    "request.method.full": ("Fine-tuning, full weight update", "Дообучение, полное обновление весов"),
    "request.method.freeze": (
        "Fine-tuning of the last {k} {k:pl:layer|layers}, the rest frozen",
        "Дообучение последних {k} {k:pl:слоя|слоёв|слоёв}, остальные заморожены"),
    "request.method.lora": ("Fine-tuning, LoRA adapters", "Дообучение, LoRA-адаптеры"),
    "request.method.qlora": ("Fine-tuning, QLoRA adapters on a 4-bit base model",
                             "Дообучение, QLoRA-адаптеры на 4-битной базовой модели"),
    "request.context.in_config": ("context and batch size in the config", "контекст и батч в конфиге"),
    "request.context": (
        "context {seq_len:int} tokens, batch {batch}{accum}",
        "контекст {seq_len:int} {seq_len:pl:токен|токена|токенов}, батч {batch}{accum}"),
    "request.context.accum": (" (gradient accumulation x{grad_accum})", " (накопление градиента ×{grad_accum})"),
    "request.dataset": ("dataset {size_bytes:gb}{room}", "датасет {size_bytes:gb}{room}"),
    "request.dataset.room": (", need room for checkpoints", ", нужно место под чекпойнты"),
    "request.period": ("{period}", "срок — {period}"),
    "request.period.1": ("one day", "один день"),
    "request.period.7": ("one week", "неделя"),
    "request.period.14": ("two weeks", "две недели"),
    "request.period.30": ("one month", "месяц"),
    "request.period.60": ("two months", "два месяца"),
    "request.period.90": ("three months", "три месяца"),
    "request.period.180": ("six months", "полгода"),
    "request.period.365": ("one year", "год"),
    "request.period.days": ("{days} days", "{days} {days:pl:день|дня|дней}"),
    "request.trial.required": ("step-time test required", "требуется тест времени шага"),
    "request.trial.none": ("no step-time test needed", "тест времени шага не нужен"),
    "request.model": (
        "Model: {model} ({params:bn} B parameters, {trainable:count} trainable), precision {precision:raw}, "
        "optimizer {optimizer:raw}.",
        "Модель: {model} ({params:bn} млрд параметров, обучаемых — {trainable:count}), точность {precision:raw}, "
        "оптимизатор {optimizer:raw}."),
    "request.shape": ("{seq_len:int} tokens x batch {batch}{accum}",
                      "{seq_len:int} {seq_len:pl:токен|токена|токенов} × батч {batch}{accum}"),
    "request.shape.documents": (
        "{shape}, packed documents of ~{tokens:int} tokens, attention inside each (varlen kernel)",
        "{shape}, упакованные документы по ~{tokens:int} {tokens:pl:токену|токена|токенов}, внимание внутри каждого "
        "(varlen-ядро)"),
    "request.shape.accum": (", gradient accumulation x{grad_accum}", ", накопление ×{grad_accum}"),
    "request.shape.in_config": (
        "Context and batch: set in the training config (the estimates below assume {shape}).",
        "Контекст и батч: заданы в конфиге обучения (оценки ниже — для {shape})."),
    "request.shape.explicit": ("Context and batch: {shape}.", "Контекст и батч: {shape}."),
    "request.dataset_line": (
        "Dataset: {size_bytes:gb} (about {tokens:tokens}), {epochs:g} {epochs:pl:epoch|epochs}.",
        "Датасет: {size_bytes:gb} (около {tokens:tokens}), эпох: {epochs:g}."),
    "request.disk": (
        "Disk: at least {total_bytes:gb}, including {count} {count:pl:checkpoint|checkpoints} of {each_bytes:gb} "
        "each and a {margin:pct} margin.",
        "Диск: не меньше {total_bytes:gb} — с учётом {count} {count:pl:чекпойнта|чекпойнтов|чекпойнтов} по "
        "{each_bytes:gb} и запаса {margin:pct}."),
    "request.rental": ("Rental period: {period}{how}{start}.", "Срок аренды: {period}{how}{start}."),
    "request.rental.estimated": (" (from the estimated training time)", " (по оценке времени обучения)"),
    "request.rental.start": ("; desired start: {day:date}", "; желаемая дата начала — {day:date}"),
    "request.budget": ("Budget: up to {budget_usd:usd}.", "Бюджет: до {budget_usd:usd}."),
    "request.too_long": (
        "Note: the estimated training time (about {days} days) is longer than the rental period; more GPUs, less "
        "data or a longer period are needed.",
        "Внимание: по оценке обучение займёт около {days} {days:pl:дня|дней|дней} — дольше срока аренды; нужно "
        "больше GPU, меньше данных или более длинный срок."),
    "request.trial": (
        "Step-time test before the rental: a short run with this batch and context — a fixed number of steps; "
        "after warm-up we measure step time, peak memory and data-loading speed, and save and restore a "
        "checkpoint.",
        "Тест времени шага до аренды: короткий запуск с этим батчем и контекстом — фиксированное число шагов; "
        "после прогрева замеряем время шага, пиковую память и скорость загрузки данных, а также сохранение и "
        "восстановление чекпойнта."),
    "request.checks": ("Please check: {checks}.", "Проверить: {checks}."),
    "request.no_configuration": ("No configuration found: {reasons}.",
                                 "Подходящей конфигурации не найдено: {reasons}."),
    "request.gpu_class.01": ("GPU with {card_gb} GB", "GPU на {card_gb} ГБ"),
    "request.gpu_class.02": ("server GPU with 80 GB", "серверный GPU на 80 ГБ"),
    "request.gpu_class.server": ("server GPU with {card_gb} GB", "серверный GPU на {card_gb} ГБ"),
    "request.gpu_class.03": ("identical server GPUs with 80 GB or more each",
                             "одинаковых серверных GPU по 80 ГБ и больше"),
    "request.gpu_class.none": ("—", "—"),
    "request.suggested": (
        "Suggested configuration: {gpus} x {gpu_class} ({gpu} class{where}), {mode:@mode} — profile {profile_id:raw} "
        "\"{name}\"{sharding}.",
        "Предлагаемая конфигурация: {gpus} × {gpu_class} (класс {gpu}{where}), {mode:@mode} — профиль "
        "{profile_id:raw} «{name}»{sharding}."),
    "request.suggested.nodes": (", {nodes} nodes", ", {nodes} {nodes:pl:узел|узла|узлов}"),
    "request.suggested.sharding": (", {sharding:raw} sharding", ", шардирование {sharding:raw}"),
    "request.changes": ("Changes to the plan: {changes:list}.", "Изменения к плану: {changes:list}."),
    "request.estimates": (
        "Estimates: {memory_bytes:gib} of GPU memory per GPU of {usable_bytes:gib} usable; about {run_s:dur} of "
        "training on {gpu} (step {step_s:n2} s, {tokens_s:int} tokens/s) — estimates until the trial run "
        "measures them.",
        "Оценки: память {memory_bytes:gib} на GPU из {usable_bytes:gib} доступных; обучение около {run_s:dur} на "
        "{gpu} (шаг {step_s:n2} с, {tokens_s:int} токенов/с) — до пробного запуска это оценка."),
    "request.example": (
        "Catalog example (illustrative prices): “{offer}”, {price_usd:usd} per GPU-hour, about "
        "{cost_usd:usd}{verdict}.",
        "Пример по каталогу (цены ориентировочные): «{offer}», {price_usd:usd} за GPU-час, около "
        "{cost_usd:usd}{verdict}."),
    "request.within_budget": (" — within the budget", " — в рамках бюджета"),
    "request.over_budget": (" — over the budget", " — больше бюджета"),
    # -- the request: what the provider needs to reproduce the protocol (gpuwork.present.request) ------------------
    "request.framework": ("Software: {framework:raw}; {launch}.", "Программы: {framework:raw}; {launch}."),
    "request.launch.single": ("one GPU, one process", "один GPU, один процесс"),
    # a plain PyTorch loop in the software line (stacks torch-loop, torch-loop-compile, hf-loop-2024)
    "request.own_loop": ("own training loop", "собственный цикл обучения"),
    # plan fields that change the estimated time, stated when not the default (TrainPlan.comm_overlap, zero_sync,
    # deterministic, launch_blocking, tf32, fp8_linear, sdpa_backend), so the provider's run matches what was priced
    "request.settings": ("Run settings the estimates assume: {settings}.",
                         "Настройки запуска, из которых исходят оценки: {settings}."),
    "request.setting.comm_overlap.off": (
        "gradients reduced after backward, not overlapped with it (comm_overlap off, Megatron-LM's default)",
        "градиенты сводятся после обратного прохода, без наложения на него (comm_overlap off, как по умолчанию в "
        "Megatron-LM)"),
    "request.setting.comm_overlap.on": (
        "gradients reduced in buckets behind backward, ZeRO's parameters gathered behind forward (comm_overlap on: "
        "Megatron-LM --overlap-grad-reduce, --overlap-param-gather)",
        "градиенты сводятся корзинами за обратным проходом, параметры ZeRO собираются за прямым (comm_overlap on: "
        "Megatron-LM --overlap-grad-reduce, --overlap-param-gather)"),
    "request.setting.zero_sync.sliced": (
        "ZeRO-1 synced as nanotron does: every tensor sliced over the GPUs, the whole gradient all-reduced after "
        "backward, the updated slices all-gathered (zero_sync sliced)",
        "ZeRO-1 синхронизируется как в nanotron: каждый тензор нарезан по GPU, весь градиент сводится одним "
        "all-reduce после обратного прохода, обновлённые срезы собираются all-gather (zero_sync sliced)"),
    "request.setting.deterministic": (
        "PyTorch deterministic mode (torch.use_deterministic_algorithms(True), HF full_determinism): each new tensor "
        "is filled with NaN before it is written (deterministic)",
        "детерминированный режим PyTorch (torch.use_deterministic_algorithms(True), full_determinism в HF): каждый "
        "новый тензор заполняется нечислами до записи (deterministic)"),
    "request.setting.input_require_grads": (
        "the embeddings' output requires grad (model.enable_input_require_grads()): the backward runs through the "
        "frozen blocks too (input_require_grads)",
        "выход эмбеддингов требует градиент (model.enable_input_require_grads()): обратный проход идёт и через "
        "замороженные блоки (input_require_grads)"),
    "request.setting.launch_blocking": (
        "CUDA_LAUNCH_BLOCKING=1 in the run's environment: every kernel launch waits for the kernel, so the host's "
        "dispatch adds to the GPU time and communication does not overlap compute (launch_blocking)",
        "CUDA_LAUNCH_BLOCKING=1 в окружении запуска: каждый запуск ядра ждёт его завершения, поэтому время "
        "диспетчеризации на CPU прибавляется к времени GPU, а обмен не накладывается на вычисления (launch_blocking)"),
    "request.setting.sdpa_backend.auto": (
        "torch 2.11 or newer with the cuDNN of its own wheels, no SDPA backend forced: SDPA runs cuDNN's attention "
        "on H100, H200, B200 and GB200 (sdpa_backend auto)",
        "PyTorch 2.11 или новее с cuDNN из его собственных пакетов, бэкенд SDPA не задан: SDPA выполняет внимание "
        "cuDNN на H100, H200, B200 и GB200 (sdpa_backend auto)"),
    "request.setting.sdpa_backend.cudnn": (
        "SDPA held to cuDNN's attention (with sdpa_kernel(SDPBackend.CUDNN_ATTENTION); sdpa_backend cudnn)",
        "SDPA ограничено вниманием cuDNN (через sdpa_kernel(SDPBackend.CUDNN_ATTENTION); sdpa_backend cudnn)"),
    "request.setting.sdpa_backend.efficient": (
        "SDPA held to its memory-efficient kernel (with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION); sdpa_backend "
        "efficient)",
        "SDPA ограничено ядром memory-efficient (через sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION); sdpa_backend "
        "efficient)"),
    "request.setting.fp8_linear": (
        "the blocks' linear layers in FP8 with per-tensor scales (Transformer Engine fp8_autocast, Accelerate "
        "mixed_precision fp8 or torchao float8; the head and attention in 16 bits): the GPU needs FP8 tensor cores",
        "линейные слои блоков в FP8 с масштабом на тензор (fp8_autocast из Transformer Engine, mixed_precision fp8 в "
        "Accelerate или float8 из torchao; выходной слой и внимание в 16 битах): нужен GPU с тензорными ядрами FP8"),
    "request.setting.tf32": (
        "TF32 on for fp32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True or "
        "torch.set_float32_matmul_precision('high'); HF tf32=True): fp32 GEMMs run on the tensor cores (tf32)",
        "TF32 включён для умножений матриц fp32 (torch.backends.cuda.matmul.allow_tf32 = True или "
        "torch.set_float32_matmul_precision ниже наивысшей точности; tf32=True в HF): GEMM в fp32 идут на тензорных "
        "ядрах (tf32)"),
    "request.setting.weight_decay": (
        "the optimizer's weight decay {value:raw}; torch AdamW's foreach and for-loop updates run one more pass over "
        "the weights when it is not 0 (weight_decay {value:raw})",
        "затухание весов в оптимизаторе {value:raw}; при ненулевом значении обновления AdamW из PyTorch (foreach и "
        "цикл по тензорам) делают ещё один проход по весам (weight_decay {value:raw})"),
    "request.launch.multi": (
        "{gpus} processes via {launcher:raw}, {backend:raw} between GPUs",
        "{gpus} {gpus:pl:процесс|процесса|процессов} через {launcher:raw}, обмен между GPU — {backend:raw}"),
    "request.links.single": ("Links: one GPU, no exchange between GPUs.",
                             "Связь: один GPU, обмена между GPU нет."),
    "request.links": (
        "Links: each GPU sends {bytes_step:size} per optimizer step, {need_bytes_s:rate} per GPU on average over a "
        "{step_s:n2} s step; inside the node {link:@link}: {verdict}{between}.",
        "Связь: каждый GPU передаёт {bytes_step:size} за шаг оптимизатора, в среднем {need_bytes_s:rate} на GPU "
        "при шаге {step_s:n2} с; внутри узла {link:@link}: {verdict}{between}."),
    "request.links.between": ("; between nodes {network:@network}, at least {need_bytes_s:rate} per GPU",
                              "; между узлами {network:@network}, не меньше {need_bytes_s:rate} на GPU"),
    "request.validation": (
        "Validation: {share:pct} of the training time, about {eval_s:dur} of the {run_s:dur} run.",
        "Валидация: {share:pct} времени обучения, около {eval_s:dur} из {run_s:dur} запуска."),
    "request.trial_measured": (
        "Measured in the trial ({device:raw}, {steps} measured steps after warm-up): step {step_s:n3} s, "
        "{tokens_s:int} tokens/s, peak memory {peak_bytes:gib}, data wait {wait:pct}{checkpoint}.",
        "Замерено в пробном запуске ({device:raw}, {steps} {steps:pl:шаг|шага|шагов} после прогрева): шаг "
        "{step_s:n3} с, {tokens_s:int} токенов/с, пиковая память {peak_bytes:gib}, ожидание данных {wait:pct}"
        "{checkpoint}."),
    "request.trial_measured.checkpoint": (
        "; checkpoint of {size_bytes:size} saved in {save_s:n1} s and restored in {restore_s:n1} s",
        "; чекпойнт {size_bytes:size} сохранён за {save_s:n1} с и восстановлен за {restore_s:n1} с"),
    "request.trial_measured.failed": (
        "The trial did not complete a measured step ({device:raw}): {error}.",
        "Пробный запуск не завершил ни одного замеренного шага ({device:raw}): {error}."),
    "request.rental_mode": ("Rental mode: {reason}.", "Режим аренды: {reason}."),
    "request.suggested.sharding_state": (", {sharding} sharding", ", шардирование {sharding}"),
}
