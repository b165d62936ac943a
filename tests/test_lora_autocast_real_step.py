"""Plain LoRA on a 16-bit base, one real step on the CPU (peft + transformers, as a Hugging Face Trainer run builds
it), against the analytic estimate. Under autocast (mixed precision) peft casts each adapter's 16-bit input to its
fp32 weights' dtype, and F.linear casts that back to 16 bit and saves the 16-bit copy: 2 bytes per element per
adapter, and lora_A's output is 16-bit (docs/memory_misses.md#lora-under-autocast). Without autocast the fp32 copy
is what lora_A saves; full fine-tuning has no adapters, so neither moves there."""

from __future__ import annotations

import contextlib

import pytest

from gpuwork import TrainPlan, estimate_memory
from gpuwork.estimate.memory import _block_activations, block_groups, memory_dtypes, stack_profile
from gpuwork.facts.model import load_config, spec_for_plan
from gpuwork.facts.rates import load_rates
from gpuwork.measure.trace import real_step_peak, saved_per_block, step_peak

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _per_block(plan: TrainPlan) -> int:
    """The estimate's bytes per token saved by one frozen block (with checkpointing: what a block keeps)."""
    spec = spec_for_plan(plan)
    profile = stack_profile(plan, spec)
    act = _block_activations(spec, plan, memory_dtypes(plan, profile), profile)
    return act.checkpoint_per_layer if plan.grad_checkpointing else act.per_layer_frozen


def test_autocast_lora_saves_a_16bit_input_copy_per_adapter():
    """Per token and block, mixed precision saves 2 bytes less per adapter input element and per lora_A output
    element than the same plan without autocast (fp32 copies there); the rest of the block is the same 16-bit."""
    plain = TrainPlan(model="tiny-llama", method="lora", precision="bf16", lora_targets="all-linear", lora_r=8)
    spec = spec_for_plan(plain)
    adapters = [lin for group in block_groups(spec).values() for lin in group]
    assert {lin.short_name for lin in adapters} == set(TARGETS)
    inputs = sum(lin.in_features for lin in adapters)
    for precision in ("bf16-mixed", "fp16-mixed"):
        mixed = plain.replace(precision=precision)
        assert _per_block(plain) - _per_block(mixed) == 2 * inputs + 2 * plain.lora_r * len(adapters)
    # a stack whose adapters are not peft's fp32 ones keeps the count it had
    unsloth = plain.replace(precision="bf16-mixed", stack="unsloth")
    assert memory_dtypes(unsloth, load_rates().stacks["unsloth"]).lora_saved == 0


def _lora_model(name: str, dtype, grad_checkpointing: bool):
    """The tiny model in 16 bit with peft's LoRA r 8 on all seven linears (adapters fp32: peft's default)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    config, _ = load_config(name)
    config = {k: v for k, v in config.items() if k != "transformers_version"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=dtype,
                                             attn_implementation="sdpa")
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS,
                                             task_type="CAUSAL_LM"))
    assert all(p.dtype == torch.float32 for p in model.parameters() if p.requires_grad)
    if grad_checkpointing:
        model.gradient_checkpointing_enable()
    model.train()
    return model


@pytest.mark.slow
@pytest.mark.parametrize(("name", "precision", "grad_checkpointing"), [
    ("tiny-llama", "bf16-mixed", False),
    ("tiny-llama", "fp16-mixed", False),
    ("tiny-qwen2", "bf16-mixed", False),
    ("tiny-llama", "bf16-mixed", True),
    ("tiny-llama", "bf16", False),
])
def test_real_lora_step_matches_the_analytic_estimate(name, precision, grad_checkpointing):
    import torch

    batch_size, seq_len = 2, 256
    plan = TrainPlan(model=name, method="lora", precision=precision, batch_size=batch_size, seq_len=seq_len,
                     grad_checkpointing=grad_checkpointing, lora_r=8, lora_alpha=16, lora_dropout=0.0,
                     lora_targets="all-linear")
    compute = torch.float16 if precision == "fp16-mixed" else torch.bfloat16
    model = _lora_model(name, compute, grad_checkpointing)
    batch = {"input_ids": torch.zeros((batch_size, seq_len), dtype=torch.long),
             "labels": torch.zeros((batch_size, seq_len), dtype=torch.long)}
    autocast = torch.autocast("cpu", dtype=compute) if plan.precision.is_mixed else contextlib.nullcontext()

    per_block = _per_block(plan) * batch_size * seq_len
    # blocks after the first (its input is the frozen embedding's output); autocast's 16-bit casts of the LoRA
    # weights are per block, not per token, and not modelled
    for measured in saved_per_block(model, model.base_model.model.model.layers, batch, autocast)[1:]:
        assert per_block == pytest.approx(measured, rel=0.015)

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    real = step_peak(model, optimizer, batch, autocast)["peak_bytes"]
    assert estimate_memory(plan).traceable_bytes == pytest.approx(real, rel=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16-mixed", "bf16"])
def test_full_fine_tuning_real_step_is_unchanged(precision):
    """No adapters, so nothing of the LoRA cast applies: the estimate still meets a real step."""
    plan = TrainPlan(model="tiny-llama", method="full", precision=precision, batch_size=2, seq_len=256)
    assert estimate_memory(plan).traceable_bytes == pytest.approx(real_step_peak(plan)["peak_bytes"], rel=0.02)
