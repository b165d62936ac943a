"""Catalog entries "error.plan.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error.plan"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- invalid plans (TrainPlan validation); values are shown as the user typed them -------------------------
    "error.plan.model": (
        "model must be a preset name, a config.json path or a hub id; got {value:raw}. Run `gpuwork models` to "
        "list presets.",
        "model — это имя пресета, путь к config.json или id на Hugging Face Hub; получено {value:raw}. Список "
        "пресетов: `gpuwork models`."),
    "error.plan.bool": ("{field:raw} must be true or false; got {value:raw}",
                        "{field:raw} — да или нет (true/false); получено {value:raw}"),
    "error.plan.lora_r": (
        "lora_r={value:raw} is not a valid LoRA rank: use a whole number >= 1 (8, 16, 32 and 64 are common)",
        "lora_r={value:raw} — не ранг LoRA: нужно целое число ≥ 1 (обычно 8, 16, 32 или 64)"),
    "error.plan.weight_decay": (
        "weight_decay={value:raw} is not a weight decay: use a number from 0 to {maximum:raw} (0.01 and 0.1 are "
        "common; 0 turns it off), or leave it unset for the framework's default",
        "weight_decay={value:raw} — не коэффициент затухания весов: нужно число от 0 до {maximum:raw} (обычно 0,01 "
        "или 0,1; 0 — без затухания) или не задавайте его: тогда действует значение фреймворка по умолчанию"),
    "error.plan.lora_dropout": ("lora_dropout={value:raw} must be below 1 (0.05 is common)",
                                "lora_dropout={value:raw} должен быть меньше 1 (обычно 0,05)"),
    "error.plan.lengths": (
        "lengths={value:raw} is not understood: use fixed, packed, padded, or a histogram such as 128:40,512:50,2048:10 "
        "(length:count)",
        "lengths={value:raw} не распознано: укажите fixed, packed, padded или гистограмму, например 128:40,512:50,2048:10 "
        "(длина:количество)"),
    "error.plan.lengths_bin": (
        "lengths: {length:raw}:{weight:raw} is not a length:count pair (a whole length of at least 1, a count above 0)",
        "lengths: {length:raw}:{weight:raw} — не пара длина:количество (целая длина не меньше 1, количество больше 0)"),
    "error.plan.eval_fraction": (
        "eval_fraction={value:raw} is a share of training time: use a value in [0, 1), e.g. 0.05",
        "eval_fraction={value:raw} — доля времени обучения: нужно значение из [0, 1), например 0,05"),
    "error.plan.flash3_gpu": (
        "attention='flash3' (FlashAttention-3) runs only on Hopper GPUs (compute capability 9.0: H100, H200, "
        "H800); {gpu} is {capability:raw}: use attention='flash' (FlashAttention-2) or 'sdpa', or a Hopper GPU",
        "attention='flash3' (FlashAttention-3) работает только на GPU Hopper (вычислительная способность 9.0: "
        "H100, H200, H800); у {gpu} — {capability:raw}: выберите attention='flash' (FlashAttention-2) или "
        "'sdpa' либо GPU Hopper"),
    "error.plan.flash4_gpu": (
        "attention='flash4' (FlashAttention-4) runs only on Hopper and data-centre Blackwell GPUs (compute capability "
        "9.x, 10.x or 11.x: H100, H200, B200, GB200); {gpu} is {capability:raw}: use attention='flash' "
        "(FlashAttention-2) or 'sdpa', or such a GPU",
        "attention='flash4' (FlashAttention-4) работает только на GPU Hopper и Blackwell для центров обработки данных "
        "(вычислительная способность 9.x, 10.x или 11.x: H100, H200, B200, GB200); у {gpu} — {capability:raw}: "
        "выберите attention='flash' (FlashAttention-2) или 'sdpa' либо такой GPU"),
    "error.plan.cudnn_gpu": (
        "attention='cudnn' (cuDNN's fused attention) needs an NVIDIA GPU of compute capability 8.0 (Ampere) or "
        "newer; {gpu} is {capability:raw}: use attention='sdpa', or such a GPU",
        "attention='cudnn' (слитное внимание cuDNN) требует GPU NVIDIA с вычислительной способностью 8.0 (Ampere) "
        "или новее; у {gpu} — {capability:raw}: выберите attention='sdpa' либо такой GPU"),
    "error.plan.sdpa_backend_attention": (
        "sdpa_backend='{value:raw}' says which kernel torch's scaled_dot_product_attention runs; attention="
        "'{attention:raw}' does not call it: leave sdpa_backend at 'flash' or use attention='sdpa'",
        "sdpa_backend='{value:raw}' задаёт, какое ядро выполняет scaled_dot_product_attention в PyTorch; при "
        "attention='{attention:raw}' она не вызывается: оставьте sdpa_backend='flash' или выберите attention='sdpa'"),
    "error.plan.sdpa_cudnn_gpu": (
        "sdpa_backend='cudnn' (cuDNN's attention through torch SDPA) needs an NVIDIA GPU of compute capability 8.0 "
        "(Ampere) or newer; {gpu} is {capability:raw}: use sdpa_backend='flash' or 'auto', or such a GPU",
        "sdpa_backend='cudnn' (внимание cuDNN через SDPA в PyTorch) требует GPU NVIDIA с вычислительной способностью "
        "8.0 (Ampere) или новее; у {gpu} — {capability:raw}: выберите sdpa_backend='flash' или 'auto' либо такой GPU"),
    "error.plan.sharding_needs_gpus": (
        "sharding='{sharding:raw}' needs gpus >= 2: set gpus or use sharding='ddp'",
        "sharding='{sharding:raw}' требует gpus ≥ 2: укажите число GPU или выберите sharding='ddp'"),
    "error.plan.shard_group": (
        "shard_group_gpus={group} does not divide gpus={gpus}: sharding='{sharding:raw}' needs equal shard groups. "
        "Set shard_group_gpus (--shard-group) to a divisor of {gpus} ({divisors:raw}; one node of 8 GPUs is the "
        "usual group), or change gpus to a multiple of {group}",
        "shard_group_gpus={group} не делит gpus={gpus}: sharding='{sharding:raw}' требует равных групп шардирования. "
        "Укажите в shard_group_gpus (--shard-group) делитель {gpus} ({divisors:raw}; обычно группа — один узел "
        "из 8 GPU) или сделайте gpus кратным {group}"),
    "error.plan.documents_need_packed": (
        "packed_document_tokens is the length of the documents packed into a row: it needs lengths='packed' "
        "(lengths is {lengths:raw}); leave it unset otherwise",
        "packed_document_tokens — длина документов, упакованных в строку: нужен lengths='packed' "
        "(сейчас lengths = {lengths:raw}); иначе оставьте его пустым"),
    "error.plan.documents_longer": (
        "packed_document_tokens={value:raw} is longer than a packed row (seq_len={seq_len:raw}): use the "
        "documents' mean length, at most seq_len",
        "packed_document_tokens={value:raw} длиннее упакованной строки (seq_len={seq_len:raw}): укажите среднюю "
        "длину документов, не больше seq_len"),
    "error.plan.documents_attention": (
        "packed_document_tokens needs a kernel that takes the documents' boundaries (attention='flash', 'flash3', "
        "'flash4' or 'cudnn': varlen / cu_seqlens); attention='{attention:raw}' computes the whole row's matrix under a "
        "block mask, no less work than attention across the row: leave it unset or pick a flash kernel",
        "packed_document_tokens требует ядра, которое принимает границы документов (attention='flash', 'flash3', "
        "'flash4' или 'cudnn': varlen / cu_seqlens); attention='{attention:raw}' считает матрицу всей строки под блочной "
        "маской — работы не меньше, чем при внимании по всей строке: оставьте его пустым или выберите flash-ядро"),
    "error.plan.comm_overlap_sharding": (
        "comm_overlap='{value:raw}' sets when DDP and ZeRO-1/2 reduce gradients; sharding='{sharding:raw}' gathers "
        "and reduce-scatters block by block, prefetched behind compute: leave comm_overlap at 'default' or use "
        "sharding 'ddp', 'zero1' or 'zero2'",
        "comm_overlap='{value:raw}' задаёт, когда DDP и ZeRO-1/2 сводят градиенты; sharding='{sharding:raw}' "
        "собирает и сводит блок за блоком с упреждением за вычислениями: оставьте comm_overlap='default' или "
        "выберите sharding 'ddp', 'zero1' или 'zero2'"),
    "error.plan.zero_sync_sharding": (
        "zero_sync='{value:raw}' is how nanotron's ZeRO-1 syncs: it runs with sharding 'zero1' and its own timing, "
        "so comm_overlap stays 'default'; this plan has sharding='{sharding:raw}', comm_overlap='{overlap:raw}': "
        "leave zero_sync at 'buckets' or use sharding 'zero1' with comm_overlap 'default'",
        "zero_sync='{value:raw}' — так синхронизирует ZeRO-1 в nanotron: только с sharding 'zero1' и со своим "
        "порядком, поэтому comm_overlap остаётся 'default'; в этом плане sharding='{sharding:raw}', "
        "comm_overlap='{overlap:raw}': оставьте zero_sync='buckets' или выберите sharding 'zero1' с comm_overlap "
        "'default'"),
    "error.plan.out_of_place_optimizer": (
        "optimizer_impl='out-of-place' is a hand-written AdamW loop; optimizer='{optimizer:raw}' has none: use "
        "optimizer='adamw' or another optimizer_impl",
        "optimizer_impl='out-of-place' — это написанный вручную цикл AdamW; для optimizer='{optimizer:raw}' такого "
        "нет: выберите optimizer='adamw' или другой optimizer_impl"),
    "error.plan.out_of_place_trial": (
        "optimizer_impl='out-of-place' is your own AdamW code, which no torch.optim setting runs: a trial cannot "
        "measure it; use 'foreach', 'fused' or 'for-loop' for the trial",
        "optimizer_impl='out-of-place' — ваш собственный код AdamW, его не запускает ни одна настройка torch.optim: "
        "пробный прогон не может его измерить; для пробного прогона выберите 'foreach', 'fused' или 'for-loop'"),
    "error.plan.fsdp_wrap_sharding": (
        "fsdp_wrap='{value:raw}' sets how torch FSDP splits the model into units; sharding='{sharding:raw}' is not "
        "torch FSDP: leave fsdp_wrap at 'blocks' or use sharding 'fsdp', 'hsdp' or 'hsdp-zero2'",
        "fsdp_wrap='{value:raw}' задаёт, как PyTorch FSDP делит модель на блоки обёртки; sharding='{sharding:raw}' "
        "— не PyTorch FSDP: оставьте fsdp_wrap='blocks' или выберите sharding 'fsdp', 'hsdp' или 'hsdp-zero2'"),
    "error.plan.fp8_adapters": (
        "fp8_linear runs the blocks' trained linear layers in FP8 (Transformer Engine, torchao float8); method "
        "'{method:raw}' trains adapters beside a frozen base, which those libraries do not run in FP8: turn "
        "fp8_linear off, or use method 'full', 'freeze' or 'scratch'",
        "fp8_linear выполняет обучаемые линейные слои блоков в FP8 (Transformer Engine, torchao float8); метод "
        "'{method:raw}' обучает адаптеры рядом с замороженной базой, а эти библиотеки не выполняют её в FP8: "
        "выключите fp8_linear или выберите метод 'full', 'freeze' или 'scratch'"),
    "error.plan.fp8_gpu": (
        "fp8_linear needs FP8 tensor cores; {gpu} (compute capability {capability:raw}) has none, and Transformer "
        "Engine and torchao's float8 training stop on it (they need 8.9 or newer): choose a GPU with FP8 (Ada, "
        "Hopper, Blackwell, MI300), or turn fp8_linear off to run this card in 16 bits",
        "для fp8_linear нужны тензорные ядра FP8; у {gpu} (вычислительная способность {capability:raw}) их нет, и "
        "Transformer Engine и float8 из torchao на нём не запускаются (нужна 8.9 или выше): выберите GPU с FP8 (Ada, "
        "Hopper, Blackwell, MI300) или выключите fp8_linear, чтобы обучать на этой карте в 16 битах"),
    "error.plan.fp8_fp32": (
        "fp8_linear casts 16-bit activations to FP8 inside an autocast region; precision 'fp32' has none: choose "
        "'bf16-mixed' (or another 16-bit precision), or turn fp8_linear off",
        "fp8_linear переводит 16-битные активации в FP8 внутри области autocast; при точности 'fp32' её нет: "
        "выберите 'bf16-mixed' (или другую 16-битную точность) или выключите fp8_linear"),
    "error.plan.recompute_needs_checkpointing": (
        "recompute='{value:raw}' chooses what gradient checkpointing re-runs, and grad_checkpointing is off: turn "
        "grad_checkpointing on, or leave recompute at 'block'",
        "recompute='{value:raw}' выбирает, что пересчитывает градиентный чекпойнтинг, а grad_checkpointing "
        "выключен: включите grad_checkpointing или оставьте recompute='block'"),
    "error.plan.recompute_unsloth": (
        "recompute='{value:raw}' is an op-level selective policy; stack '{stack:raw}' runs Unsloth's own "
        "checkpointing of whole blocks: leave recompute at 'block' or choose another stack",
        "recompute='{value:raw}' — выборочная политика по операциям; стек '{stack:raw}' использует собственный "
        "чекпойнтинг Unsloth по целым блокам: оставьте recompute='block' или выберите другой стек"),
    "error.plan.recompute_every_needs_checkpointing": (
        "recompute_every={value} checkpoints one block in {value}, and grad_checkpointing is off: turn "
        "grad_checkpointing on, or leave recompute_every at 1",
        "recompute_every={value} включает чекпойнтинг для каждого {value}-го блока, а grad_checkpointing выключен: "
        "включите grad_checkpointing или оставьте recompute_every=1"),
    "error.plan.recompute_every_unsloth": (
        "recompute_every={value} checkpoints one block in {value}; stack '{stack:raw}' runs Unsloth's own "
        "checkpointing of every block: leave recompute_every at 1 or choose another stack",
        "recompute_every={value} — чекпойнтинг каждого {value}-го блока; стек '{stack:raw}' использует собственный "
        "чекпойнтинг Unsloth для всех блоков: оставьте recompute_every=1 или выберите другой стек"),
    "error.plan.recompute_every_freeze": (
        "recompute_every={value} checkpoints one block in {value}, which gpuwork prices for methods that train "
        "every block; method 'freeze' trains only the top blocks: leave recompute_every at 1",
        "recompute_every={value} — чекпойнтинг каждого {value}-го блока; gpuwork считает его для методов, "
        "обучающих все блоки, а метод 'freeze' обучает только верхние: оставьте recompute_every=1"),
    "error.plan.recompute_traced": (
        "recompute='{value:raw}' keeps a block's matmul outputs by the order it calls them, which gpuwork knows "
        "only for its hand-written blocks; '{model_type:raw}' has a traced block: use recompute 'block'",
        "recompute='{value:raw}' хранит выходы матричных умножений блока по порядку вызова, а он известен gpuwork "
        "только для собственных моделей блоков; у '{model_type:raw}' блок трассированный: выберите "
        "recompute='block'"),
    "error.plan.offload_params": (
        "offload_params needs parameter sharding: use sharding='zero3', 'fsdp' or 'hsdp' (with gpus >= 2), or turn "
        "offload_params off",
        "offload_params требует шардирования параметров: выберите sharding='zero3', 'fsdp' или 'hsdp' (при gpus ≥ 2) "
        "или выключите offload_params"),
    "error.plan.offload_optimizer": (
        "offload_optimizer needs ZeRO or FSDP: use sharding='zero1', 'zero2', 'zero3', 'fsdp' or 'hsdp' (with gpus >= 2), "
        "or turn offload_optimizer off",
        "offload_optimizer требует ZeRO или FSDP: выберите sharding='zero1', 'zero2', 'zero3', 'fsdp' или 'hsdp' "
        "(при gpus ≥ 2) или выключите offload_optimizer"),
    "error.plan.qlora_offload": ("method='qlora' keeps 4-bit weights on the GPU: turn offload_params off",
                                 "method='qlora' держит 4-битные веса на GPU: выключите offload_params"),
    "error.plan.not_object": ("a plan must be a JSON object of fields; got {kind:raw}",
                              "план — это JSON-объект с полями; получено {kind:raw}"),
    "error.plan.unknown_field_close": ("unknown plan field '{field:raw}'. Did you mean '{close:raw}'?",
                                       "неизвестное поле плана '{field:raw}'. Может быть, '{close:raw}'?"),
    "error.plan.unknown_field": ("unknown plan field '{field:raw}'. Known fields: {known:raw}.",
                                 "неизвестное поле плана '{field:raw}'. Известные поля: {known:raw}."),
    "error.plan.unknown_choice_close": (
        "{field:raw}={value:raw} is not known; allowed: {allowed:raw} (did you mean '{close:raw}'?)",
        "{field:raw}={value:raw} — неизвестное значение; допустимы: {allowed:raw} (может быть, '{close:raw}'?)"),
    "error.plan.unknown_choice": (
        "{field:raw}={value:raw} is not known; allowed: {allowed:raw} (use one of: {allowed:raw})",
        "{field:raw}={value:raw} — неизвестное значение; выберите одно из: {allowed:raw}"),
    "error.plan.choice": ("{field:raw}={value:raw} must be one of: {allowed:raw}",
                          "{field:raw}={value:raw}: нужно одно из значений {allowed:raw}"),
    "error.plan.targets_type": (
        "lora_targets={value:raw} must be module names like ['q_proj', 'v_proj'] or 'all-linear'",
        "lora_targets={value:raw}: нужны имена модулей, например ['q_proj', 'v_proj'], или 'all-linear'"),
    "error.plan.targets_empty": (
        "lora_targets is empty: name modules like q_proj,v_proj or use 'all-linear'",
        "lora_targets пуст: перечислите модули, например q_proj,v_proj, или укажите 'all-linear'"),
    "error.plan.whole_number": ("{field:raw}={value:raw} must be a whole number >= {minimum:raw}",
                                "{field:raw}={value:raw}: нужно целое число ≥ {minimum:raw}"),
    "error.plan.too_small": ("{field:raw}={value:raw} is too small: use a whole number >= {minimum:raw}",
                             "{field:raw}={value:raw} — слишком мало: нужно целое число ≥ {minimum:raw}"),
    "error.plan.number": ("{field:raw}={value:raw} must be a number", "{field:raw}={value:raw}: нужно число"),
    "error.plan.not_finite": ("{field:raw}={value:raw} must be a finite number",
                              "{field:raw}={value:raw}: нужно конечное число"),
    "error.plan.above": ("{field:raw}={value:raw} is out of range: use a number > {minimum:raw}",
                         "{field:raw}={value:raw} вне допустимого диапазона: нужно число > {minimum:raw}"),
    "error.plan.at_least": ("{field:raw}={value:raw} is out of range: use a number >= {minimum:raw}",
                            "{field:raw}={value:raw} вне допустимого диапазона: нужно число ≥ {minimum:raw}"),
    # -- plan bounds (gpuwork.plan.TrainPlan) -----------------------------------------------------------------------
    "error.plan.too_large": (
        "{field:raw}={value:raw} is beyond any real run: use a whole number <= {maximum:int} ({why:@bound})",
        "{field:raw}={value:raw} — за пределами любого реального запуска: укажите целое число <= {maximum:int} "
        "({why:@bound})"),
    "error.plan.number_too_large": (
        "{field:raw}={value:raw} is beyond any real run: use a number <= {maximum:g} ({why:@bound})",
        "{field:raw}={value:raw} — за пределами любого реального запуска: укажите число <= {maximum:g} "
        "({why:@bound})"),
}
