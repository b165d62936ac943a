"""Catalog entries "time.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "time"

ENTRIES: dict[str, tuple[str, str]] = {
    "time.derived_rates": (
        "no measured kernel rates for {gpu} in rates.csv: its datasheet figures are scaled by the typical "
        "achieved share of measured GPUs",
        "для {gpu} в rates.csv нет измеренных скоростей ядер: паспортные значения умножены на типичную "
        "достижимую долю измеренных GPU"),
    "time.no_bf16": ("{gpu} has no BF16 tensor cores: use fp16-mixed",
                     "у {gpu} нет тензорных ядер BF16: используйте fp16-mixed"),
    "time.no_tf32": (
        "{gpu} has no TF32 tensor-core figure in the catalog (no TF32 units, or none stated): tf32 is ignored and "
        "fp32 matmuls are priced at the FP32 rate",
        "для {gpu} в каталоге нет пиковой скорости TF32 на тензорных ядрах (их нет или она не указана): tf32 не "
        "учитывается, умножения матриц fp32 оцениваются по скорости FP32"),
    "time.no_fp8": (
        "{gpu} has no FP8 tensor cores (gpus.csv fp8_dense_tflops is empty): Transformer Engine and torchao's float8 "
        "training stop on it (they need compute capability 8.9 or newer), so fp8_linear cannot run there; the "
        "estimate prices the linear layers in 16 bits. Choose a GPU with FP8 (Ada, Hopper, Blackwell) or turn "
        "fp8_linear off",
        "у {gpu} нет тензорных ядер FP8 (в gpus.csv пусто в fp8_dense_tflops): Transformer Engine и float8 из "
        "torchao на нём не запускаются (нужна вычислительная способность 8.9 или выше), так что fp8_linear там "
        "невозможен; оценка считает линейные слои в 16 битах. Выберите GPU с FP8 (Ada, Hopper, Blackwell) или "
        "выключите fp8_linear"),
    "time.fp32_qlora": (
        "QLoRA in pure {precision} without autocast runs in fp32 outside its 4-bit matmuls: peft's "
        "prepare_model_for_kbit_training keeps embeddings, norms and lm_head in fp32 (kbit_upcast) and nothing casts "
        "back, so activations, attention (no flash kernel), MLP, LoRA and lm_head are fp32. HF Trainer with "
        "{flag}=True, TRL or torch.autocast: choose {mixed}; a framework that skips the upcast: turn kbit_upcast off",
        "QLoRA с чистой точностью {precision} без autocast считается в fp32 везде, кроме 4-битных умножений матриц: "
        "prepare_model_for_kbit_training (PEFT) оставляет эмбеддинги, нормировки и lm_head в fp32 (kbit_upcast), "
        "и обратно их никто не приводит, поэтому активации, внимание (без flash-ядра), MLP, LoRA и lm_head идут в "
        "fp32. HF Trainer с включённым {flag}, TRL или torch.autocast: выберите {mixed}; фреймворк, который "
        "пропускает это приведение: выключите kbit_upcast"),
    "time.adapters_sharded": (
        "LoRA with ZeRO-3/FSDP gathers the whole frozen base every micro-batch",
        "LoRA с ZeRO-3/FSDP собирает всю замороженную базу на каждом микробатче"),
    "time.kind.matmul": ("matrix multiplications", "умножения матриц"),
    "time.kind.attention": ("attention", "внимание"),
    "time.kind.memory": ("memory-bound ops (norms, activations, casts, loss)",
                         "операции, ограниченные памятью (нормировки, активации, приведения типов, потери)"),
    "time.kind.optimizer": ("optimizer (clipping, update)", "оптимизатор (ограничение градиента, обновление)"),
    "time.kind.launch_overhead": ("kernel launches (waiting on the CPU)", "запуски ядер (ожидание CPU)"),
    "time.kind.communication_exposed": ("communication not hidden by compute", "обмен, не скрытый вычислениями"),
    "time.kind.communication_contention": ("compute slowed by hidden communication (NCCL's SMs)",
                                           "вычисления, замедленные скрытым обменом (SM под NCCL)"),
    "time.kind.data_wait": ("waiting for data", "ожидание данных"),
    "time.kind.optimizer_on_cpu": ("optimizer step on the CPU", "шаг оптимизатора на CPU"),
    "time.kind.parameter_offload_pcie": ("parameters over PCIe (offload)", "параметры по PCIe (выгрузка)"),
    "time.kind.checkpoint_offload_pcie": ("checkpointed activations over PCIe, not hidden by compute",
                                          "сохранённые активации по PCIe, не скрытые вычислениями"),
    "time.kind.compute_given_mfu": ("compute at the given MFU", "вычисления при заданном MFU"),
    "time.kind.fsdp_copies": ("FSDP2 copies beside compute (all-gather copy-out, reduce-scatter copy-in)",
                              "копирования FSDP2 в потоке вычислений (после all-gather, перед reduce-scatter)"),
}
