"""Catalog entries "stack.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "stack"

ENTRIES: dict[str, tuple[str, str]] = {
    # the software stack a plan is priced with (TrainPlan.stack; stacks.csv), named on every surface ("stack.label")
    "stack.hf-trainer": ("HF Trainer (eager)", "HF Trainer (PyTorch без компиляции)"),
    "stack.hf-trainer-2023": ("HF Trainer (eager), bitsandbytes 0.43.1 or older (2023 to July 2024)",
                              "HF Trainer (PyTorch без компиляции), bitsandbytes не новее 0.43.1 (2023 — июль 2024)"),
    "stack.hf-trainer-2024": ("HF Trainer (eager), peft 0.7-0.11 and bitsandbytes 0.43.1 or older (Dec 2023 to July 2024)",
                              "HF Trainer (PyTorch без компиляции), peft 0.7–0.11 и bitsandbytes не новее 0.43.1 "
                              "(декабрь 2023 — июль 2024)"),
    "stack.hf-loop-2024": ("plain loop over a transformers 4.x model (early 2024; fp32 logits kept to the next step)",
                           "простой цикл над моделью transformers 4.x (начало 2024; логиты fp32 живут до следующего шага)"),
    "stack.hf-liger": ("HF Trainer + Liger kernels", "HF Trainer с объединёнными ядрами (hf-liger)"),
    "stack.torch-compile": ("HF Trainer + torch.compile", "HF Trainer + torch.compile"),
    "stack.unsloth": ("Unsloth", "библиотека unsloth"),
    "stack.unsloth-2023-12": ("Unsloth 2023.12-2024.3", "библиотека unsloth, выпуски 2023.12-2024.3"),
    "stack.unsloth-2024-04": ("Unsloth 2024.4-2024.11", "библиотека unsloth, выпуски 2024.4-2024.11"),
    "stack.framework": ("tuned framework (torchtitan, Megatron, NeMo)",
                        "настроенный фреймворк для предобучения (framework)"),
    "stack.torchtune": ("torchtune (compiled)", "torchtune (с компиляцией)"),
    "stack.dle-pytorch": ("NVIDIA DeepLearningExamples BERT, eager PyTorch + apex amp O2",
                          "BERT из NVIDIA DeepLearningExamples: PyTorch без компиляции, apex amp O2"),
    "stack.torch-loop": ("plain PyTorch loop (eager; loss on the logits' own dtype)",
                         "простой цикл на PyTorch (без компиляции; потери в типе логитов)"),
    "stack.torch-loop-compile": ("plain PyTorch loop + torch.compile(model)",
                                 "простой цикл на PyTorch + torch.compile(model)"),
    "stack.litgpt-2023": ("Lit-GPT 2023 (Lightning Fabric)", "Lit-GPT 2023 (на Lightning Fabric)"),
    "stack.label": ("stack: {stack:@stack}", "стек: {stack:@stack}"),
}
