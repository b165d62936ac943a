"""Catalog entries "trial.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "trial"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- where the trial does not run exactly what the plan says (gpuwork.measure.runtime, distributed) ---------
    "trial.sub.one_process": (
        "gpus={gpus}, sharding={sharding:raw}: this trial runs one process on one device (multi-GPU trials run "
        "under torchrun: `gpuwork trial --nproc N`)",
        "gpus={gpus}, sharding={sharding:raw}: этот запуск идёт одним процессом на одном устройстве (запуск на "
        "нескольких GPU — через torchrun: `gpuwork trial --nproc N`)"),
    "trial.sub.attention_eager": (
        "attention {attention:raw} -> eager: {config:raw} does not support it",
        "attention {attention:raw} → eager: {config:raw} его не поддерживает"),
    # the plan's execution switches (gpuwork.measure.switches): set before CUDA starts, or not at all
    "trial.sub.switch_startup": (
        "{switch:raw}: {variable:raw}={value:raw} takes effect only when set before CUDA starts in a process, and this "
        "process started without it, so the trial ran without it (run `gpuwork trial ...` from a shell: it sets "
        "{variable:raw} before CUDA starts)",
        "{switch:raw}: {variable:raw}={value:raw} действует, только если задан до запуска CUDA в процессе, а этот "
        "процесс запущен без него, поэтому пробный запуск шёл без него (запустите `gpuwork trial ...` из командной "
        "строки: он задаёт {variable:raw} до запуска CUDA)"),
    "trial.sub.switch_cpu": (
        "{switch:raw} ({variable:raw}={value:raw}) has no effect on a CPU device: the trial ran without it",
        "{switch:raw} ({variable:raw}={value:raw}) не действует на CPU: пробный запуск шёл без него"),
    "trial.sub.cublas_late": (
        "{switch:raw}: {variable:raw} was unset and CUDA had already run in this process; the trial set it to "
        "{value:raw}, but a cuBLAS handle made before keeps its workspace, so its results may still vary (run "
        "`gpuwork trial ...` from a shell, or set {variable:raw}={value:raw} before CUDA starts)",
        "{switch:raw}: {variable:raw} не был задан, а CUDA в этом процессе уже работала; пробный запуск задал "
        "{value:raw}, но дескриптор cuBLAS, созданный раньше, сохраняет своё рабочее пространство, и его результаты "
        "могут различаться (запустите `gpuwork trial ...` из командной строки или задайте "
        "{variable:raw}={value:raw} до запуска CUDA)"),
    "trial.sub.paged_cpu": (
        "paged-adamw-8bit runs unpaged on CPU (bitsandbytes has no paged memory there)",
        "paged-adamw-8bit на CPU работает без подкачки (у bitsandbytes там нет страничной памяти)"),
    "trial.sub.mlm_every_position": (
        "mlm_predictions={n}: the trial runs transformers' masked-LM head on all {seq_len} positions, not only on "
        "the {n} masked ones that BERT pre-training scripts gather (its step time and memory include the whole head)",
        "mlm_predictions={n}: пробный запуск считает голову маскированной языковой модели из transformers на всех {seq_len} "
        "позициях, а не только на {n} замаскированных, которые отбирают скрипты предобучения BERT (время шага и память "
        "включают всю голову)"),
    "trial.sub.packed_documents": (
        "packed_document_tokens={n}: the trial attends across each whole {seq_len}-token row (its rows carry no "
        "document boundaries), so its attention time is the row's, not that of documents of {n} tokens",
        "packed_document_tokens={n}: пробный запуск считает внимание по всей строке из {seq_len} токенов (в его "
        "строках нет границ документов), поэтому время внимания — как у целой строки, а не у документов по {n} "
        "{n:pl:токену|токена|токенов}"),
    "trial.sub.precision_cpu": (
        "precision {precision:raw} -> fp32 on CPU (16-bit matmuls are 35-40x slower on CPUs without bf16 hardware; "
        "docs/sources.md#s-cpu-bf16)",
        "точность {precision:raw} → fp32 на CPU (16-битное умножение матриц в 35–40 раз медленнее на CPU без "
        "аппаратной поддержки bf16; docs/sources.md#s-cpu-bf16)"),
    "trial.sub.no_bf16": (
        "precision {precision:raw} -> fp16 equivalent: this GPU has no bf16",
        "точность {precision:raw} → то же в fp16: этот GPU не поддерживает bf16"),
    "trial.sub.flash": ("attention flash -> sdpa: {reason:@trial.flash}", "attention flash → sdpa: {reason:@trial.flash}"),
    "trial.sub.flash3": ("attention flash3 -> sdpa: {reason:@trial.flash}",
                         "attention flash3 → sdpa: {reason:@trial.flash}"),
    "trial.sub.flash4": ("attention flash4 -> sdpa: {reason:@trial.flash}",
                         "attention flash4 → sdpa: {reason:@trial.flash}"),
    "trial.sub.cudnn": ("attention cudnn -> sdpa: transformers has no cuDNN attention choice (torch picks SDPA's "
                        "backend)",
                        "attention cudnn → sdpa: в transformers нельзя выбрать внимание cuDNN (ядро SDPA выбирает "
                        "PyTorch)"),
    "trial.sub.sdpa_backend": (
        "sdpa_backend {asked:raw} -> {used:raw}: torch's checks pass {asked:raw} over for this model's attention call "
        "(docs/attention_backends.md)",
        "sdpa_backend {asked:raw} → {used:raw}: проверки PyTorch не допускают {asked:raw} для вызова внимания этой "
        "модели (docs/attention_backends.md)"),
    "trial.flash.not_hopper": ("FlashAttention-3 runs only on Hopper GPUs (compute capability 9.0)",
                               "FlashAttention-3 работает только на GPU Hopper (вычислительная способность 9.0)"),
    "trial.flash.fa3_not_installed": ("the FlashAttention-3 package (flash_attn_interface) is not installed",
                                      "пакет FlashAttention-3 (flash_attn_interface) не установлен"),
    "trial.flash.not_fa4_gpu": ("FlashAttention-4 runs only on compute capability 9.x, 10.x and 11.x (Hopper, B200, "
                                "GB200)",
                                "FlashAttention-4 работает только при вычислительной способности 9.x, 10.x и 11.x "
                                "(Hopper, B200, GB200)"),
    "trial.flash.fa4_not_installed": ("the FlashAttention-4 package (flash-attn-4, flash_attn.cute) is not installed",
                                      "пакет FlashAttention-4 (flash-attn-4, flash_attn.cute) не установлен"),
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
    # -- gradient clipping as the trial ran it (gpuwork.measure.clipping) ----------------------------------------
    "trial.clip.on": ("clip_grad_norm_ before each update at max norm {norm:g}; {last}",
                      "clip_grad_norm_ перед каждым обновлением, максимальная норма {norm:g}; {last}"),
    "trial.clip.last": ("last gradient norm {value:g}", "последняя норма градиента {value:g}"),
    "trial.clip.no_norm": ("no gradient norm recorded", "норма градиента не записана"),
    "trial.clip.off": (
        "off: the plan never clips (grad_clip off), so the trial made no clip_grad_norm_ call and measured no "
        "gradient norm",
        "нет: план не ограничивает норму градиента (grad_clip выключен), поэтому запуск не вызывал "
        "clip_grad_norm_ и не измерял норму градиента"),
    "trial.clip.not_clipped": ("not clipped; {last}", "без ограничения; {last}"),
}
