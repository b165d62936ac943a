"""Catalog entries "cli.help.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "cli.help"

ENTRIES: dict[str, tuple[str, str]] = {
    "cli.help.advise.summary": ("suggest changes (checkpointing, micro-batch, 8-bit optimizer, QLoRA, sharding, "
                                "shorter sequence) that make the run fit or cheaper",
                                "предложить изменения (пересчёт активаций, микробатч, 8-битный оптимизатор, QLoRA, "
                                "шардирование, короче последовательность), с которыми запуск помещается или дешевле"),
    "cli.help.advise.limit": ("how many suggestions to show (default 5)",
                              "сколько предложений показать (по умолчанию 5)"),
    "cli.help.fit.summary": ("the fit matrix: every GPU of the catalog x 1/2/4/8: fits, headroom, largest batch and "
                             "sequence, time and cost",
                             "матрица размещения: каждый GPU каталога × 1/2/4/8: помещается ли, запас, наибольшие "
                             "батч и контекст, время и стоимость"),
    "cli.help.fit.all": ("also show the rows of GPUs on which nothing fits",
                         "показать и строки GPU, на которых ничего не помещается"),
    "cli.help.fit.gpu": ("only this GPU (repeatable), e.g. --gpu rtx4090",
                         "только этот GPU (можно повторять), например --gpu rtx4090"),
    "cli.help.lang.advice": ("language of the suggestions: en or ru", "язык предложений: en или ru"),
    "cli.help.app.pages_per_visitor": (
        "at most this many open pages (tabs) per visitor, told apart by a cookie; the next tab is asked to close one, "
        "so one visitor cannot take every page (default {n})",
        "не больше стольких открытых страниц (вкладок) у одного посетителя (различаются по куки); следующую "
        "вкладку попросят закрыть одну из открытых, чтобы один посетитель не занял все страницы (по умолчанию {n})"),
    "cli.help.app.max_pages": (
        "at most this many kernels (~135 MB each: pages and the --pool) at once; the next visitor is asked to "
        "come back (default {n})",
        "не больше стольких ядер (~135 МБ каждое: страницы и --pool) одновременно; следующего посетителя "
        "попросят зайти позже (по умолчанию {n})"),
    "cli.help.app.pool": (
        "kernels that run the app before a visitor comes, so the page opens at once (0: one starts per visitor; "
        "default {n})",
        "ядра, которые заранее выполняют приложение, чтобы страница открывалась сразу (0 — ядро запускается "
        "для каждого посетителя; по умолчанию {n})"),
    "cli.help.run.from": (
        "a training config to plan from: `TrainingArguments` / `SFTConfig` (JSON or YAML), `axolotl` or "
        "`LLaMA-Factory` YAML, DeepSpeed JSON, `accelerate` YAML, peft `adapter_config.json`; repeat to combine; "
        "flags override it; the mapping is printed on stderr (and is `from` in --json)",
        "конфигурация обучения, из которой строится план: `TrainingArguments` / `SFTConfig` (JSON или YAML), YAML "
        "`axolotl` или `LLaMA-Factory`, JSON DeepSpeed, YAML `accelerate`, `adapter_config.json` `peft`; повторите "
        "флаг, чтобы объединить несколько; флаги важнее файла; соответствие полей печатается в stderr (и в --json "
        "как `from`)"),
    "cli.help.have": (
        "the cards you own, e.g. 1xrtx4090 or 2x\"A100 80GB SXM\": fit the run to them (changes for fit and speed), "
        "time only, no rental cost",
        "ваши собственные карты, например 1xrtx4090 или 2x\"A100 80GB SXM\": подогнать запуск под них (изменения "
        "ради памяти и скорости), только время, без затрат на аренду"),
    # -- argparse's own words (its gettext catalog has no Russian in most Python builds) --------------------------
    "cli.help.usage": ("usage: ", "использование: "),
    "cli.help.positionals": ("positional arguments", "позиционные аргументы"),
    "cli.help.options": ("options", "параметры"),
    "cli.help.help": ("show this help message and exit", "показать эту справку и выйти"),
    "cli.help.version": ("show program's version number and exit", "показать версию программы и выйти"),
    # -- shared by several verbs -------------------------------------------------------------------------------------
    "cli.help.gpuwork.description": ("Size a fine-tuning run before renting a GPU.",
                                     "Оценить запуск дообучения до аренды GPU."),
    "cli.help.json": ("print one JSON object", "вывести один объект JSON"),
    "cli.help.lang.report": ("language of the report (en or ru)", "язык отчёта (en или ru)"),
    "cli.help.lang.output": ("language of the output and errors (en or ru)", "язык вывода и ошибок (en или ru)"),
    "cli.help.lang.table": ("language of the table (en or ru)", "язык таблицы (en или ru)"),
    "cli.help.lang.pages": ("language of the pages and messages (en or ru)", "язык страниц и сообщений (en или ru)"),
    # -- the run: the plan flags every sizing verb takes (gpuwork.cli.args.plan_arguments) -------------------------
    "cli.help.run.title": ("the run (defaults: TrainPlan's)", "запуск (по умолчанию — как в TrainPlan)"),
    "cli.help.run.plan": ("plan.json with TrainPlan fields; flags override it",
                          "plan.json с полями TrainPlan; флаги переопределяют его"),
    "cli.help.run.model": ("preset name (see `gpuwork models`), config.json path, or hub id",
                           "имя пресета (см. `gpuwork models`), путь к config.json или идентификатор модели на хабе"),
    "cli.help.run.method": ("scratch | full | freeze | lora | qlora", "scratch | full | freeze | lora | qlora"),
    "cli.help.run.task": ("auto | causal-lm | seq-cls | masked-lm", "auto | causal-lm | seq-cls | masked-lm"),
    "cli.help.run.precision": (
        "fp32 | fp16 | bf16 | fp16-mixed | bf16-mixed; default bf16, for qlora bf16-mixed (HF Trainer / TRL with "
        "bf16=True: autocast)",
        "fp32 | fp16 | bf16 | fp16-mixed | bf16-mixed; по умолчанию bf16, для qlora bf16-mixed (HF Trainer / TRL "
        "с bf16=True: autocast)"),
    "cli.help.run.optimizer": (
        "adamw | adamw-8bit | paged-adamw-8bit | adafactor | sgd | lion, or the name Trainer, TRL or axolotl takes "
        "(adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit, ...): the same table as in --from files",
        "adamw | adamw-8bit | paged-adamw-8bit | adafactor | sgd | lion или имя, которое принимают Trainer, TRL или "
        "`axolotl` (adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit, ...): та же таблица, что для файлов --from"),
    "cli.help.run.seq_len": ("tokens per sequence", "токенов в последовательности"),
    "cli.help.run.batch_size": ("micro-batch: sequences per GPU per step",
                                "микробатч: последовательностей на GPU за шаг"),
    "cli.help.run.grad_accum": ("micro-batches per optimizer step", "микробатчей на шаг оптимизатора"),
    "cli.help.run.grad_checkpointing": ("recompute blocks in backward", "пересчитывать блоки при обратном проходе"),
    "cli.help.run.recompute": (
        "what checkpointing recomputes: block (the whole block, default) | ops (torchtitan's op-level selective "
        "policy: keeps every second matmul's and the attention kernel's outputs) | matmuls (keeps every matmul's "
        "and the attention's outputs, torch's compute-intensive example); needs --grad-checkpointing",
        "что пересчитывает чекпойнтинг: block (весь блок, по умолчанию) | ops (пооперационная выборочная политика "
        "`torchtitan`: хранит выходы каждого второго матричного умножения и ядра внимания) | matmuls (хранит "
        "выходы всех матричных умножений и внимания, пример политики из документации PyTorch); нужен "
        "--grad-checkpointing"),
    "cli.help.run.recompute_every": (
        "checkpoint one block in N: blocks 0, N, 2N, ... recompute, the others keep their activations "
        "(transformers 5's every_n_layers in the Trainer's gradient_checkpointing_kwargs; default 1: every block); "
        "needs --grad-checkpointing",
        "чекпойнтинг на каждом N-м блоке: блоки 0, N, 2N, ... пересчитываются, остальные хранят активации "
        "(every_n_layers из transformers 5 в gradient_checkpointing_kwargs у Trainer; по умолчанию 1 — все блоки); "
        "нужен --grad-checkpointing"),
    "cli.help.run.attention": ("eager | sdpa | flash (FlashAttention-2) | flash3 (FlashAttention-3, Hopper only) | "
                               "flash4 (FlashAttention-4, Hopper / B200 / GB200) | "
                               "cudnn (cuDNN's fused attention: Transformer Engine, JAX)",
                               "eager | sdpa | flash (FlashAttention-2) | flash3 (FlashAttention-3, только Hopper) | "
                               "flash4 (FlashAttention-4, Hopper / B200 / GB200) | "
                               "cudnn (слитное внимание cuDNN: TE, JAX)"),
    "cli.help.run.trainable_layers": ("method=freeze: last N blocks trained",
                                      "method=freeze: обучаются последние N блоков"),
    "cli.help.run.lora_r": ("LoRA rank", "ранг LoRA"),
    "cli.help.run.lora_alpha": ("LoRA alpha", "коэффициент альфа LoRA"),
    "cli.help.run.lora_dropout": ("LoRA dropout", "вероятность прореживания в LoRA"),
    "cli.help.run.lora_targets": ("comma-separated module names, or all-linear",
                                  "имена модулей через запятую или all-linear"),
    "cli.help.run.quant_type": ("qlora: nf4 | fp4", "qlora: nf4 | fp4"),
    "cli.help.run.double_quant": ("qlora: keep fp32 absmax constants", "qlora: хранить константы absmax в fp32"),
    "cli.help.run.kbit_upcast": (
        "qlora: the framework skips peft's fp32 upcast of embeddings, norms and lm_head, or casts them back to 16 "
        "bit (axolotl, ms-swift, TRL >= 0.27)",
        "qlora: фреймворк не повышает точность эмбеддингов, нормализаций и lm_head до fp32 или возвращает их в 16 "
        "бит (например, TRL >= 0.27)"),
    "cli.help.run.gpus": ("data-parallel GPUs", "GPU для параллелизма по данным"),
    "cli.help.run.sharding": ("ddp | zero1 | zero2 | zero3 | fsdp | hsdp (fsdp inside each shard group, "
                              "replicas across groups) | hsdp-zero2 (hsdp keeping whole weights through backward)",
                              "ddp | zero1 | zero2 | zero3 | fsdp | hsdp (fsdp внутри каждой группы шардирования, "
                              "реплики между группами) | hsdp-zero2 (hsdp с целыми весами до конца обратного "
                              "прохода)"),
    "cli.help.run.shard_group": ("hsdp / hsdp-zero2: GPUs of one shard group, a divisor of --gpus (default 8, one "
                                 "node)",
                                 "hsdp / hsdp-zero2: GPU в одной группе шардирования, делитель --gpus (по "
                                 "умолчанию 8, один узел)"),
    "cli.help.run.comm_overlap": (
        "ddp / zero1 / zero2: when gradients are reduced: default (each library's own: torch DDP buckets behind "
        "backward, DeepSpeed ZeRO after it) | off (after backward: Megatron-LM's default) | on (Megatron-LM's "
        "overlap switches: buckets behind backward, ZeRO's gather behind forward)",
        "ddp / zero1 / zero2: когда сводятся градиенты: default (как в обычной библиотеке: PyTorch DDP — корзинами "
        "за обратным проходом, ZeRO — после него) | off (после обратного прохода) | on (корзинами за обратным "
        "проходом, сбор параметров ZeRO — за прямым)"),
    "cli.help.run.zero_sync": (
        "zero1: how gradients and parameters are synced: buckets (DeepSpeed: reduce-scatter and all-gather in "
        "buckets) | sliced (nanotron: every tensor sliced over the GPUs, the whole fp32 gradient all-reduced after "
        "backward, the updated slices all-gathered and copied back one tensor and GPU at a time)",
        "zero1: как синхронизируются градиенты и параметры: buckets (DeepSpeed: градиенты сводятся и параметры "
        "собираются корзинами) | sliced (`nanotron`: каждый тензор нарезан по GPU, весь градиент fp32 сводится одним "
        "`all-reduce` после обратного прохода, обновлённые срезы собираются одним `all-gather` и копируются по одному "
        "на тензор и GPU)"),
    "cli.help.run.fsdp_wrap": (
        "fsdp / hsdp / hsdp-zero2: torch FSDP's units: blocks (one per decoder block plus the root: a transformer "
        "auto-wrap policy) | whole (the root only: auto_wrap_policy=None, NO_WRAP, or a size-based policy no "
        "block reaches): the whole model gathered before forward, its gradients "
        "reduce-scattered after backward",
        "fsdp / hsdp / hsdp-zero2: блоки обёртки PyTorch FSDP: blocks (по одному на слой декодера и корневой: "
        "политика обёртки по слоям трансформера) | whole (только корневой: без политики обёртки, NO_WRAP, или "
        "политика по размеру, которой не достигает ни один слой): вся модель собирается до "
        "прямого прохода, её градиенты сводятся после обратного"),
    "cli.help.run.sdpa_backend": (
        "attention sdpa: the kernel torch's scaled_dot_product_attention runs: flash (default: FlashAttention-2 "
        "first, the memory-efficient kernel with a mask: torch before 2.11, or a cuDNN of 9.15.0 or older) | auto "
        "(torch 2.11 on: cuDNN's on H100, H200, B200 and GB200, FlashAttention-2 elsewhere) | cudnn | efficient",
        "attention sdpa: какое ядро выполняет scaled_dot_product_attention в PyTorch: flash (по умолчанию: сначала "
        "FlashAttention-2, с маской — ядро, экономящее память: PyTorch до 2.11 или cuDNN не новее 9.15.0) | auto "
        "(PyTorch 2.11 и новее: cuDNN на H100, H200, B200 и GB200, FlashAttention-2 на остальных) | cudnn | "
        "efficient"),
    "cli.help.run.input_require_grads": (
        "the run makes the embeddings' output require grad (transformers' enable_input_require_grads, as reentrant "
        "gradient checkpointing needs; LLaMA-Factory 0.5-0.6.2): under freeze the backward runs through the frozen "
        "blocks too (their recompute and input gradients)",
        "обучение требует градиент у выхода эмбеддингов (enable_input_require_grads из transformers, как нужно "
        "реентерабельному пересчёту активаций; LLaMA-Factory 0.5-0.6.2): при заморозке обратный проход идёт и "
        "через замороженные блоки (их пересчёт и градиенты по входу)"),
    "cli.help.run.no_input_require_grads": (
        "the run leaves the embeddings' output without grad (non-reentrant checkpointing, LLaMA-Factory 0.6.3 and "
        "later, or the hook removed): under freeze the backward stops at the trained blocks and the frozen ones save "
        "nothing for it. Neither flag: as the plan's stack does (transformers 5 hooks the embeddings whenever "
        "checkpointing is on)",
        "обучение оставляет выход эмбеддингов без градиента (нереентерабельный пересчёт, LLaMA-Factory 0.6.3 и новее "
        "или снятый хук): при заморозке обратный проход останавливается на обучаемых блоках, а замороженные ничего "
        "для него не хранят. Без обоих флагов: как в стеке плана (transformers 5 вешает хук на эмбеддинги всякий раз, "
        "когда включён пересчёт активаций)"),
    "cli.help.run.grad_clip": (
        "the run never clips gradients (max_grad_norm 0 or None, torchtune's clip_grad_norm unset, a loop without "
        "clip_grad_norm_): the clipping pass is not priced",
        "обучение не ограничивает норму градиента (max_grad_norm 0 или None, clip_grad_norm в torchtune не задан, "
        "цикл без clip_grad_norm_): проход ограничения не учитывается во времени"),
    "cli.help.run.deterministic": (
        "the run calls torch.use_deterministic_algorithms(True) (HF full_determinism): torch fills each tensor it "
        "allocates natively with NaN before writing it; priced as one extra write of each such tensor",
        "обучение включает детерминированный режим PyTorch (torch.use_deterministic_algorithms, full_determinism "
        "в HF): PyTorch заполняет каждый новый тензор, который выделяет сам, нечислами до записи; во времени — "
        "лишняя запись каждого такого тензора"),
    "cli.help.run.launch_blocking": (
        "the run exports CUDA_LAUNCH_BLOCKING=1 before CUDA starts: every kernel launch waits for the kernel, so "
        "the host's dispatch adds to the GPU time and no communication overlaps compute",
        "обучение запускается с CUDA_LAUNCH_BLOCKING=1 (задана до запуска CUDA): каждый запуск ядра ждёт его "
        "завершения, поэтому диспетчеризация на CPU прибавляется к времени GPU, а обмен не накладывается на "
        "вычисления"),
    "cli.help.run.weight_decay": (
        "the optimizer's weight decay (default: the stack's: 0 under the HF Trainer, torch.optim.AdamW's 0.01 in a "
        "plain torch loop); torch AdamW's foreach and for-loop updates run one more pass over the weights when it "
        "is not 0",
        "коэффициент затухания весов оптимизатора (по умолчанию — как в стеке: 0 у HF Trainer, 0,01 у "
        "torch.optim.AdamW в обычном цикле PyTorch); при ненулевом значении обновления AdamW из PyTorch (foreach и "
        "цикл по тензорам) делают ещё один проход по весам"),
    "cli.help.run.fp8_linear": (
        "the blocks' linear layers run in FP8 with per-tensor scales (Transformer Engine's fp8_autocast, Accelerate's "
        "mixed_precision fp8, torchao float8 training): their GEMMs on the FP8 tensor cores, each input, weight and "
        "output gradient cast to FP8; full, freeze and from-scratch runs; Ada, Hopper or Blackwell GPUs",
        "линейные слои блоков работают в FP8 с масштабом на тензор (fp8_autocast из Transformer Engine, "
        "mixed_precision fp8 в Accelerate, обучение float8 в torchao): их GEMM идут на тензорных ядрах FP8, каждый "
        "вход, вес и градиент выхода переводится в FP8; полное дообучение, freeze и обучение с нуля; GPU Ada, Hopper "
        "или Blackwell"),
    "cli.help.run.tf32": (
        "the run turns TF32 on for fp32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True, "
        "torch.set_float32_matmul_precision('high'), HF tf32=True): fp32 GEMMs and bmm run on the tensor cores",
        "обучение включает TF32 для умножений матриц fp32 (torch.backends.cuda.matmul.allow_tf32 = True, "
        "torch.set_float32_matmul_precision ниже наивысшей точности, tf32=True в HF): умножения матриц fp32, в том "
        "числе пакетные, идут на тензорных ядрах"),
    "cli.help.run.offload_optimizer": ("optimizer states on CPU", "состояния оптимизатора в памяти CPU"),
    "cli.help.run.offload_params": ("parameters on CPU (zero3/fsdp/hsdp)", "параметры в памяти CPU (zero3/fsdp/hsdp)"),
    "cli.help.run.foreach": ("same as --optimizer-impl for-loop (no multi-tensor temporaries)",
                             "то же, что --optimizer-impl for-loop (без временных многотензорных буферов)"),
    "cli.help.run.optimizer_impl": ("optimizer kernels: foreach (default) | fused | for-loop | out-of-place (a "
                                    "hand-written AdamW loop of out-of-place tensor ops)",
                                    "ядра оптимизатора: foreach (по умолчанию) | fused | for-loop | out-of-place "
                                    "(написанный вручную цикл AdamW из операций с новыми тензорами)"),
    "cli.help.run.stack": ("software running the step: {stacks} (default: hf-trainer; data/stacks.csv)",
                           "программный стек шага: {stacks} (по умолчанию hf-trainer; data/stacks.csv)"),
    "cli.help.run.eval_batch_size": (
        "an in-run evaluation's micro-batch (per_device_eval_batch_size; unset: no evaluation priced in memory)",
        "микробатч оценки во время обучения (per_device_eval_batch_size; не задан — оценка не учитывается в памяти)"),
    "cli.help.run.eval_samples": ("evaluation samples per evaluation (unset: one evaluation batch)",
                                  "примеров в одной оценке (не задано — один батч оценки)"),
    "cli.help.run.eval_keep": (
        "what the evaluation keeps on the GPU per batch: loss (no compute_metrics) | logits | ids "
        "(preprocess_logits_for_metrics returns token ids)",
        "что оценка хранит на GPU для каждого батча: loss (нет compute_metrics) | logits | ids "
        "(preprocess_logits_for_metrics возвращает номера токенов)"),
    "cli.help.run.mlm_predictions": (
        "masked-LM pre-training whose head predicts only the masked positions (max_predictions_per_seq of BERT's "
        "scripts): positions per sequence (unset: the head runs on every position)",
        "предобучение маскированной языковой модели, чья голова предсказывает только маскированные позиции (max_predictions_per_seq "
        "скриптов BERT): позиций на последовательность (не задано — голова на каждой позиции)"),
    "cli.help.run.packed_document_tokens": (
        "with --lengths packed: mean tokens of the documents packed into a row when attention stays inside each "
        "(flash-attn varlen / cu_seqlens: NeMo packed SFT, TRL padding_free, torchtune PackedDataset); unset: "
        "attention across the whole row",
        "при --lengths packed: средняя длина документов в строке, если внимание не выходит за документ "
        "(ядро внимания получает границы документов, cu_seqlens); не задано — внимание по всей строке"),
    "cli.help.run.eval_accum": (
        "eval_accumulation_steps: evaluation batches whose outputs stay on the GPU before moving to the CPU "
        "(unset: until the evaluation ends)",
        "eval_accumulation_steps: батчей оценки, чьи выходы остаются на GPU до переноса на CPU "
        "(не задано — до конца оценки)"),
    "cli.help.run.lengths": (
        "sequence lengths of the data: fixed (default: every batch seq_len tokens) | packed | padded (every row "
        "padded to seq_len, the attention mask marks the padding) | a histogram LEN:COUNT,... (batches padded to "
        "their longest; reserved memory replays the CUDA caching allocator)",
        "длины последовательностей в данных: fixed (по умолчанию: каждый батч по seq_len токенов) | packed | "
        "padded (каждая строка дополнена до seq_len, маска внимания отмечает дополнение) | "
        "гистограмма ДЛИНА:КОЛИЧЕСТВО,... (батч дополняется до самой длинной; резерв считается по правилам "
        "кэширующего аллокатора CUDA)"),
    "cli.help.run.expandable_segments": (
        "the run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less cache from varying batch lengths)",
        "запуск с PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (меньше кэша от разной длины батчей)"),
    "cli.help.run.lengths_from": (
        "the lengths histogram from your data: .txt / .jsonl files through --lengths-tokenizer",
        "гистограмма длин из ваших данных: файлы .txt / .jsonl через --lengths-tokenizer"),
    "cli.help.run.lengths_tokenizer": (
        "tokenizer folder (or tokenizer.json) for --lengths-from; without it a BPE tokenizer is trained on the texts",
        "папка токенизатора (или tokenizer.json) для --lengths-from; без неё BPE-токенизатор обучается на текстах"),
    # -- estimate, trace, models, accuracy ----------------------------------------------------------------------------
    "cli.help.estimate.summary": ("per-GPU memory of a training step (analytic, instant)",
                                  "память на GPU для шага обучения (аналитически, мгновенно)"),
    "cli.help.estimate.calibrated": (
        "also show totals corrected by the calibration that `gpuwork trial --calibrate` stored for this device "
        "(off by default)",
        "также показать итоги с поправкой калибровки, которую `gpuwork trial --calibrate` сохранил для этого "
        "устройства (по умолчанию выключено)"),
    "cli.help.trace.summary": ("exact mode: trace one real step under fake tensors (seconds to a minute)",
                               "точный режим: трассировка одного настоящего шага на фиктивных тензорах (от секунд "
                               "до минуты)"),
    "cli.help.models.summary": ("list bundled model presets with exact parameter counts",
                                "список встроенных пресетов моделей с точным числом параметров"),
    "cli.help.models.rebuild": ("rebuild data/model_specs.json on the meta device",
                                "пересобрать data/model_specs.json на устройстве `meta`"),
    "cli.help.accuracy.summary": ("estimates vs published measurements (docs/accuracy.md)",
                                  "оценки в сравнении с опубликованными измерениями (docs/accuracy.md)"),
    "cli.help.accuracy.out": ("write Markdown here instead of printing it",
                              "записать Markdown в этот файл, а не выводить на экран"),
    "cli.help.accuracy.grid": ("also trace the small-model grid (minutes)",
                               "также трассировать сетку малых моделей (минуты)"),
    "cli.help.accuracy.time": ("the step-time page instead: estimates vs published training throughputs",
                               "вместо этого — страница о времени шага: оценки против опубликованных замеров"),
    "cli.help.accuracy.track_record": (
        "the held-out track record instead: gpuwork/facts/data/time_track_record.csv (CSV)",
        "вместо этого историю точности на отложенных запусках: gpuwork/facts/data/time_track_record.csv (CSV)"),
    # -- plan, offers, request ------------------------------------------------------------------------------------
    "cli.help.data.title": ("data and schedule", "данные и расписание"),
    "cli.help.data.dataset_tokens": ("tokens in one epoch (50B, 100M)", "токенов в одной эпохе (50B, 100M)"),
    "cli.help.data.dataset_bytes": ("raw dataset size (200GB); without --dataset-tokens, tokens = size / 4 B",
                                    "размер исходного датасета (200GB); без --dataset-tokens токенов = размер / "
                                    "4 байта"),
    "cli.help.data.compression_ratio": ("unpacked / downloaded size of the dataset (1 = not compressed)",
                                        "распакованный размер датасета / скачанный (1 — без сжатия)"),
    "cli.help.data.eval_fraction": ("validation time as a share of training time",
                                    "время валидации как доля времени обучения"),
    "cli.help.time.title": ("time model", "модель времени"),
    "cli.help.time.mfu": ("a fixed efficiency on the dense peak instead of the per-operation model",
                          "фиксированная доля плотного пика вместо пооперационной модели"),
    "cli.help.time.loader": ("what the data loader delivers (all GPUs)",
                             "сколько выдаёт загрузчик данных (на все GPU)"),
    "cli.help.time.disk_write": ("checkpoint write speed, GB/s (default 0.5)",
                                 "скорость записи чекпойнта, ГБ/с (по умолчанию 0.5)"),
    "cli.help.plan.summary": ("memory, profile, time, disk and offers for a run, in one report",
                              "память, профиль, время, диск и предложения для запуска в одном отчёте"),
    "cli.help.plan.gpu": ("GPU for the time estimate (default: the matched profile's card)",
                          "GPU для оценки времени (по умолчанию: карта подобранного профиля)"),
    "cli.help.plan.offers": ("cheapest fitting offers to list",
                             "сколько самых дешёвых подходящих предложений показать"),
    # --check (plan, offers, advise): exit status 1 when nothing fits, for scripts and CI
    "cli.help.check.plan": (
        "exit with status 1 when nothing fits: no hardware profile and no catalog offer holds the run (with --gpu: "
        "that GPU does not); 0 otherwise",
        "завершиться с кодом 1, если ничего не подходит: запуск не помещается ни в один профиль оборудования и ни в "
        "одно предложение каталога (с --gpu: в этот GPU); иначе 0"),
    "cli.help.check.offers": (
        "exit with status 1 when no offer (after the filters) fits the run; 0 otherwise",
        "завершиться с кодом 1, если ни одно предложение (после фильтров) не вмещает запуск; иначе 0"),
    "cli.help.check.advise": (
        "exit with status 1 when the run as it is fits no offer (the suggestions still print); 0 otherwise",
        "завершиться с кодом 1, если запуск в нынешнем виде не помещается ни в одно предложение (советы всё равно "
        "печатаются); иначе 0"),
    "cli.help.offers.summary": ("rental offers ranked for a run: fit, time and cost",
                                "предложения аренды по порядку для запуска: помещается ли, время и стоимость"),
    "cli.help.offers.title": ("filters and ranking", "фильтры и порядок"),
    "cli.help.offers.max_price": ("most USD per GPU-hour", "не больше USD за GPU-час"),
    "cli.help.offers.mode": ("on-demand | reserved | interruptible (repeatable)",
                             "on-demand | reserved | interruptible (можно повторять)"),
    "cli.help.offers.gpu_class": ("consumer | workstation | server", "consumer | workstation | server"),
    "cli.help.offers.region": ("eu | us | asia", "eu | us | asia"),
    "cli.help.offers.min_vram": ("least memory per GPU (vendor GB)", "не меньше памяти на GPU (ГБ производителя)"),
    "cli.help.offers.budget": ("drop offers whose expected cost exceeds it",
                               "отбросить предложения, чья ожидаемая стоимость больше этой"),
    "cli.help.offers.deadline_hours": ("wall-clock limit (needed by --sort deadline)",
                                       "предел времени по часам (нужен для `--sort deadline`)"),
    "cli.help.offers.preemption_rate": ("preemptions per hour on interruptible offers (default 0.05)",
                                        "прерываний в час на прерываемых предложениях (по умолчанию 0.05)"),
    "cli.help.offers.safety_margin": ("memory kept free per GPU (0.05)",
                                      "доля памяти GPU, оставляемая свободной (0.05)"),
    "cli.help.offers.catalog": ("offers CSV instead of data/catalog.csv", "CSV с предложениями вместо data/catalog.csv"),
    "cli.help.offers.all": ("also list offers the run does not fit",
                            "показать и предложения, на которых запуск не помещается"),
    "cli.help.offers.limit": ("show the first N", "показать первые N"),
    "cli.help.offers.json": ("print a JSON list", "вывести список JSON"),
    "cli.help.request.record": ("a trial record (gpuwork trial or the Trainer callback): its measured figures go "
                                "into the request", "запись пробного запуска (gpuwork trial или колбэк Trainer): "
                                "её замеры войдут в заявку"),
    "cli.help.request.summary": ("the rental request to send a provider (ru/en text or JSON)",
                                 "заявка на аренду для провайдера (текст ru/en или JSON)"),
    "cli.help.request.rent_days": ("rental period (default: from the time estimate)",
                                   "срок аренды (по умолчанию: из оценки времени)"),
    "cli.help.request.no_trial": ("do not ask for the step-time trial",
                                  "не просить пробный запуск для замера времени шага"),
    "cli.help.request.explicit_context": ("state seq length and batch instead of 'context and batch in the config'",
                                          "указать длину последовательности и батч вместо «контекст и батч в "
                                          "конфигурации»"),
    # -- trial, compare -----------------------------------------------------------------------------------------
    "cli.help.trial.summary": ("measured trial: a real fine-tune on this machine (step time, memory, checkpoint)",
                               "пробный запуск: настоящее дообучение на этой машине (время шага, память, чекпойнт)"),
    "cli.help.trial.description": (
        "Run a short real fine-tune of the plan on this machine's device (CUDA if present, else the CPU): warm-up, "
        "measured steps, checkpoint save -> restore -> verify; then extrapolate to the whole run.",
        "Коротко дообучить модель по плану на устройстве этой машины (CUDA, если есть, иначе CPU): прогрев, "
        "измеряемые шаги, сохранение чекпойнта -> восстановление -> проверка; затем экстраполяция на весь запуск."),
    "cli.help.trial.epilog": (
        "exit status:\n"
        "  0  the run fits (with --ramp: at least the smallest batch fits)\n"
        "  3  it does not fit: out of memory (or over --memory-cap-gib); the peak reached is printed\n"
        "  2  an error in the arguments, the model, the data or a file (one line on stderr)\n"
        "\n"
        "examples:\n"
        "  gpuwork trial --model tiny-llama --method lora --seq-len 64 --batch-size 2 --steps 5\n"
        "  gpuwork trial --model llama-3.1-8b --method qlora --seq-len 2048 --out trials/ --price-per-hour 2.5\n"
        "  gpuwork trial --model tiny-llama --method full --nproc 2 --sharding fsdp\n"
        "  gpuwork compare trials/*.json --price-per-hour 2.5\n",
        "код выхода:\n"
        "  0  запуск помещается (с --ramp: помещается хотя бы наименьший батч)\n"
        "  3  не помещается: не хватило памяти (или больше --memory-cap-gib); выводится достигнутый пик\n"
        "  2  ошибка в аргументах, модели, данных или файле (одна строка в stderr)\n"
        "\n"
        "примеры:\n"
        "  gpuwork trial --model tiny-llama --method lora --seq-len 64 --batch-size 2 --steps 5\n"
        "  gpuwork trial --model llama-3.1-8b --method qlora --seq-len 2048 --out trials/ --price-per-hour 2.5\n"
        "  gpuwork trial --model tiny-llama --method full --nproc 2 --sharding fsdp\n"
        "  gpuwork compare trials/*.json --price-per-hour 2.5\n"),
    "cli.help.trial.title": ("the trial", "пробный запуск"),
    "cli.help.trial.steps": ("measured optimizer steps (default 10)", "измеряемых шагов оптимизатора (по умолчанию 10)"),
    "cli.help.trial.warmup": ("warm-up steps, not measured (default 2)", "шагов прогрева, не измеряются (по умолчанию 2)"),
    "cli.help.trial.ramp": ("instead: double the batch, then seq_len, until out of memory",
                            "вместо этого: удваивать батч, затем seq_len, пока хватает памяти"),
    "cli.help.trial.out": ("write the record JSON and the checkpoint here", "записать сюда запись JSON и чекпойнт"),
    "cli.help.trial.nproc": ("processes (GPUs) under torchrun: DDP, FSDP2 with --sharding fsdp, or FSDP2 on a "
                             "replicate x shard mesh with --sharding hsdp / hsdp-zero2 and --shard-group",
                             "процессов (GPU) под torchrun: DDP, FSDP2 при --sharding fsdp или FSDP2 на сетке "
                             "реплики × шарды при --sharding hsdp / hsdp-zero2 и --shard-group"),
    "cli.help.trial.memory_cap": ("simulated device size: out of memory above this",
                                  "имитируемый объём устройства: выше него памяти не хватает"),
    "cli.help.trial.data": (".txt / .jsonl files or folders (default: shipped text)",
                            "файлы .txt / .jsonl или папки (по умолчанию: текст из пакета)"),
    "cli.help.trial.device": ("default: CUDA when present, else CPU", "по умолчанию: CUDA, если есть, иначе CPU"),
    "cli.help.trial.no_checkpoint": ("skip the checkpoint round-trip",
                                     "пропустить сохранение и восстановление чекпойнта"),
    "cli.help.trial.timeout": ("--nproc: stop the processes after this many seconds",
                               "--nproc: остановить процессы через столько секунд"),
    "cli.help.trial.price": ("price per GPU-hour, for the total cost", "цена GPU-часа, для полной стоимости"),
    "cli.help.trial.dataset_tokens": ("tokens in one epoch, for the extrapolation",
                                      "токенов в одной эпохе, для экстраполяции"),
    "cli.help.trial.epochs": ("epochs, for the extrapolation", "эпох, для экстраполяции"),
    "cli.help.trial.calibrate": (
        "compare with the estimates and save per-device factors to the calibration file "
        "($GPUWORK_CALIBRATION or ~/.config/gpuwork/calibration.json)",
        "сравнить с оценками и сохранить поправки для устройства в файл калибровки "
        "($GPUWORK_CALIBRATION или ~/.config/gpuwork/calibration.json)"),
    "cli.help.trial.json": ("print one JSON object instead of the table", "вывести один объект JSON вместо таблицы"),
    "cli.help.trial.no_progress": ("no progress bar on stderr", "без индикатора прогресса в stderr"),
    "cli.help.compare.summary": ("trial records side by side (step time, tokens/s, memory, cost)",
                                 "записи пробных запусков рядом (время шага, токены/с, память, стоимость)"),
    "cli.help.compare.records": ("trial records written by `gpuwork trial --out`",
                                 "записи пробных запусков, сохранённые `gpuwork trial --out`"),
    "cli.help.compare.price": ("price per GPU-hour, for cost per 1M tokens",
                               "цена GPU-часа, для стоимости 1 млн токенов"),
    "cli.help.compare.json": ("print the rows as JSON", "вывести строки как JSON"),
    # -- report, app --------------------------------------------------------------------------------------------
    "cli.help.report.summary": ("execute the workbook's notebooks for a plan and export offline HTML",
                                "выполнить блокноты рабочей книги для плана и выгрузить автономный HTML"),
    "cli.help.report.plan": ("plan.json with TrainPlan fields (default: TrainPlan())",
                             "plan.json с полями TrainPlan (по умолчанию: TrainPlan())"),
    "cli.help.report.out": ("report folder; nothing is written elsewhere",
                            "папка отчёта; больше ничего нигде не записывается"),
    "cli.help.report.notebooks": ("comma-separated subset of 01_sizing,02_trial,03_offers (default: all)",
                                  "часть из 01_sizing,02_trial,03_offers через запятую (по умолчанию: все)"),
    "cli.help.report.steps": ("measured steps of the trial (default 5)",
                              "измеряемых шагов пробного запуска (по умолчанию 5)"),
    "cli.help.report.timeout": ("seconds allowed per cell (default 900)", "секунд на одну ячейку (по умолчанию 900)"),
    "cli.help.report.progress": ("progress bars even when stderr is not a terminal",
                                 "индикаторы прогресса, даже когда stderr — не терминал"),
    "cli.help.report.no_progress": ("no progress bars", "без индикаторов прогресса"),
    "cli.help.app.summary": ("serve the app (notebooks/app.ipynb) with Voila on a local port",
                             "запустить приложение (notebooks/app.ipynb) в Voila на локальном порту"),
    "cli.help.app.description": (
        "Serve gpuwork's app with Voila: the sizing form, offers, the rental request and a demo trial, in a "
        "browser. Stop it with Ctrl+C.",
        "Запустить приложение gpuwork в Voila: форма оценки, предложения, заявка на аренду и демонстрационный "
        "пробный запуск — в браузере. Остановка: Ctrl+C."),
    "cli.help.app.port": ("TCP port (default {port:raw})", "TCP-порт (по умолчанию {port:raw})"),
    "cli.help.app.host": ("address to listen on (default {host:raw}: this machine only; the app has no login)",
                          "адрес, который слушать (по умолчанию {host:raw}: только эта машина; у приложения нет "
                          "входа по паролю)"),
    "cli.help.compare.save_calibration": (
        "save each record's calibration for its GPU and software stack (~/.config/gpuwork/calibration.json, or "
        "$GPUWORK_CALIBRATION); a CPU record has nothing to save",
        "сохранить калибровку каждой записи для её GPU и программного стека (~/.config/gpuwork/calibration.json "
        "или $GPUWORK_CALIBRATION); у записи с CPU сохранять нечего"),
    # -- gpuwork report --help -----------------------------------------------------------------------------------
    "cli.help.report.description": (
        "Execute the workbook's notebooks (01_sizing, 02_trial, 03_offers) for one plan and write offline HTML "
        "pages, an index.html and the trial's record into --out. Each page opens with the answer: the cards the "
        "run fits on, the recommended offer, time and cost as a range, and the risks.",
        "Выполнить блокноты рабочей книги (01_sizing, 02_trial, 03_offers) для одного плана и записать в --out "
        "автономные HTML-страницы, index.html и запись пробного запуска. Каждая страница начинается с ответа: на "
        "какие карты помещается запуск, рекомендуемое предложение, время и стоимость диапазоном и риски."),
    "cli.help.report.epilog": (
        "The plan file (--plan) is JSON with TrainPlan fields, e.g. `{{\"model\": \"llama-3.1-8b\", \"method\": "
        "\"lora\", \"seq_len\": 4096}}`; fields left out take their defaults. The app's \"Download plan\" link, "
        "the output of `gpuwork estimate --json` and a file written from TrainPlan.as_dict() all work.\n"
        "--lang chooses the language of the pages and messages (en or ru), and of this help: `gpuwork report "
        "--lang ru --help`.\n"
        "Without a CUDA GPU the trial runs a tiny model of the same family on the CPU: it proves the pipeline, "
        "not the speed. Charts load plotly.min.js from the report folder: keep the folder together.",
        "Файл плана (--plan) — JSON с полями TrainPlan, например `{{\"model\": \"llama-3.1-8b\", \"method\": "
        "\"lora\", \"seq_len\": 4096}}`; пропущенные поля берут значения по умолчанию. Подходят файл по ссылке "
        "«Скачать план» в приложении, вывод `gpuwork estimate --json` и файл из TrainPlan.as_dict().\n"
        "--lang выбирает язык страниц и сообщений (en или ru), а также этой справки: `gpuwork report --lang ru "
        "--help`.\n"
        "Без GPU с CUDA пробный запуск идёт на CPU с маленькой моделью того же семейства: он проверяет конвейер, "
        "а не скорость. Графики загружают plotly.min.js из папки отчёта: не разделяйте папку."),
    "cli.help.trial.allow_changed_data": (
        "with --resume: go on although a data file's SHA-256 differs from the record (the new record says so)",
        "с --resume: продолжить, хотя SHA-256 файла данных отличается от записи (новая запись это отметит)"),
    "cli.help.trial.resume": (
        "go on with an interrupted trial (a run id or its record's path) from its last checkpoint, with the same "
        "data order and seeds",
        "продолжить прерванный пробный запуск (идентификатор или путь к записи) с последнего чекпойнта, с тем же "
        "порядком данных и теми же начальными значениями генераторов случайных чисел"),
    "cli.help.trial.checkpoint_every": (
        "also save a resumable checkpoint in --out every N steps (default 0: only when SIGINT or SIGTERM stops "
        "the trial)",
        "сохранять чекпойнт для продолжения в --out каждые N шагов (по умолчанию 0: только когда запуск "
        "остановлен сигналом SIGINT или SIGTERM)"),
    "cli.help.trial.until_stable": (
        "instead of a fixed --steps: run until the 95-percent confidence interval of the median step time is "
        "within --tolerance of it (--steps is then the minimum, --max-steps the cap)",
        "вместо фиксированного --steps: измерять, пока 95-процентный интервал медианного времени шага не "
        "уложится в --tolerance (--steps тогда минимум, --max-steps предел)"),
    "cli.help.trial.tolerance": (
        "with --until-stable: the interval's half-width as a share of the median (default 0.03: within 3 percent)",
        "с --until-stable: полуширина интервала как доля медианы (по умолчанию 0.03: в пределах 3 процентов)"),
    "cli.help.trial.max_steps": (
        "with --until-stable: the most measured steps (default 200)",
        "с --until-stable: наибольшее число измеряемых шагов (по умолчанию 200)"),
}
