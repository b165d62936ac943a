"""One real QLoRA step on the CPU (bitsandbytes NF4 + peft + transformers, as a Hugging Face Trainer run loads it)
against the analytic estimate: the peak, and what each block saves for backward. Under autocast (mixed precision)
the fp32 model that prepare_model_for_kbit_training leaves saves 16-bit casts of the adapter inputs and of SDPA's
q, k, v, and the lm_head keeps a 16-bit copy of its fp32 weight (docs/memory_misses.md#qlora-under-autocast)."""

from __future__ import annotations

import contextlib

import pytest

pytest.importorskip("bitsandbytes")

from conftest import tiny_qlora_model  # noqa: E402

from gpuwork import TrainPlan, estimate_memory  # noqa: E402
from gpuwork.estimate.memory import _block_activations, memory_dtypes, stack_profile  # noqa: E402
from gpuwork.facts.model import spec_for_plan  # noqa: E402
from gpuwork.measure.trace import saved_per_block, step_peak  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("name", "precision", "grad_checkpointing", "upcast"), [
    ("tiny-llama", "bf16-mixed", False, True),
    ("tiny-llama", "bf16-mixed", True, True),
    ("tiny-qwen2", "bf16-mixed", False, True),
    ("tiny-llama", "bf16", False, True),
    # kbit_upcast=False: no prepare_model_for_kbit_training (docs/memory_misses.md#the-kbit_upcast-field)
    ("tiny-llama", "bf16-mixed", False, False),
    ("tiny-qwen2", "bf16-mixed", False, False),
    ("tiny-llama", "bf16-mixed", True, False),
    ("tiny-llama", "bf16", False, False),
])
def test_real_qlora_step_matches_the_analytic_estimate(tmp_path, name, precision, grad_checkpointing, upcast):
    import torch

    batch_size, seq_len = 2, 256
    plan = TrainPlan(model=name, method="qlora", precision=precision, batch_size=batch_size, seq_len=seq_len,
                     grad_checkpointing=grad_checkpointing, lora_r=8, lora_alpha=16, lora_dropout=0.0,
                     lora_targets="all-linear", double_quant=True, kbit_upcast=upcast)
    model = tiny_qlora_model(tmp_path, name, grad_checkpointing, upcast)
    batch = {"input_ids": torch.zeros((batch_size, seq_len), dtype=torch.long),
             "labels": torch.zeros((batch_size, seq_len), dtype=torch.long)}
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if plan.precision.is_mixed else contextlib.nullcontext()

    spec = spec_for_plan(plan)
    act = _block_activations(spec, plan, memory_dtypes(plan, stack_profile(plan, spec)), stack_profile(plan, spec))
    tokens = batch_size * seq_len
    per_block = (act.checkpoint_per_layer if grad_checkpointing else act.per_layer_frozen) * tokens
    # blocks after the first (the first one's input comes from the frozen embedding and saves less); the small
    # 16-bit casts of the LoRA weights autocast makes are per block, not per token, and not modelled
    for measured in saved_per_block(model, model.base_model.model.model.layers, batch, autocast)[1:]:
        assert per_block == pytest.approx(measured, rel=0.015)

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    real = step_peak(model, optimizer, batch, autocast)["peak_bytes"]
    assert estimate_memory(plan).traceable_bytes == pytest.approx(real, rel=0.02)
