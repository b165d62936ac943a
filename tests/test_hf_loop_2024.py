"""Stack hf-loop-2024 (rates_sources.md [M8]): a plain loop over a transformers 4.x causal LM that holds the model's
output from one forward to the next (Answer.AI fsdp_qlora train.py). The model returns its logits upcast to fp32 and
copies the shifted logits for the loss, so memory adds, to the hf-trainer-2023 row's step, one fp32 logits tensor in
every phase and two more at the forward's end; the rest of the row is hf-trainer-2023's."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.estimate import memory
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan
from gpuwork.sizing import estimate_memory

LORA = TrainPlan(model="tiny-llama", method="lora", precision="bf16", seq_len=64, batch_size=2,
                 stack="hf-loop-2024")


def test_the_row_is_hf_trainer_2023_but_for_the_loop_and_its_2024_libraries() -> None:
    stacks = load_rates().stacks
    loop, old = stacks[Stack.HF_LOOP_2024], stacks[Stack.HF_TRAINER_2023]
    assert (loop.loss_kernel, loop.adapters_fp32, loop.moe_experts) == ("eager-held", False, "loop")
    assert (loop.adapter_weights, old.adapter_weights) == ("model", "fp32")  # docs/peft_adapter_dtype.md
    differs = {f.name for f in dataclasses.fields(old) if getattr(old, f.name) != getattr(loop, f.name)}
    assert differs <= {"name", "stack", "basis", "memory_basis", "loss_kernel", "adapters_fp32", "moe_experts",
                       "adapter_weights"}
    assert "[M8]" in loop.memory_basis


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_each_phase_holds_the_returned_fp32_logits(method: str) -> None:
    loop = dataclasses.replace(LORA, method=method)
    old = dataclasses.replace(loop, stack=Stack.HF_TRAINER_2023)
    spec = resolve(loop).spec
    assert spec.vocab_size == 4096
    held = 4 * 4096 * 2 * 64  # fp32 x vocabulary x batch x sequence: 2 MiB
    assert held == 2_097_152
    # the hf-trainer-2023 row with the loop's 16-bit adapters, so that only the held output differs
    same_adapters = dataclasses.replace(load_rates().stacks[Stack.HF_TRAINER_2023], adapter_weights="model")
    was = memory.estimate_memory(old, spec, same_adapters).phase_peaks
    new = estimate_memory(loop).phase_peaks
    # the forward's end: the previous step's output, this step's fp32 logits and the shifted copy
    assert new["forward"] - was["forward"] == 3 * held
    for phase in ("loss backward", "block backward", "backward end", "optimizer step"):
        assert new[phase] - was[phase] == held, phase


def test_a_masked_lm_holds_nothing() -> None:
    plan = TrainPlan(model="tiny-bert", task="masked-lm", method="full", precision="bf16", seq_len=64)
    loop = dataclasses.replace(plan, stack=Stack.HF_LOOP_2024)
    assert estimate_memory(loop).phase_peaks == estimate_memory(
        dataclasses.replace(plan, stack=Stack.HF_TRAINER_2023)).phase_peaks
