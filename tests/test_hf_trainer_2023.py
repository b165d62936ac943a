"""Stack hf-trainer-2023 (rates_sources.md [M6]; docs/memory_bnb_releases.md): the hf-trainer row with bitsandbytes
0.43.1 or older, whose MatMul4Bit keeps each 4-bit matmul's input until backward. Memory adds exactly what the
rule (memory_stacks.kept_4bit_inputs) computes; time is hf-trainer's."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from gpuwork.cli.args import plan_arguments
from gpuwork.estimate.memory import block_groups, estimate_memory, memory_dtypes
from gpuwork.estimate.memory_stacks import kept_4bit_inputs, rope_cache_bytes
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan
from gpuwork.present.messages import text
from gpuwork.sizing import estimate_time

QLORA = TrainPlan(model="llama-3.2-1b", method="qlora", precision="bf16-mixed", seq_len=1024, batch_size=2,
                  lora_r=16, lora_dropout=0.05, lora_targets=("all-linear",), stack="hf-trainer-2023")


def _pair(plan: TrainPlan):
    """(plan under hf-trainer-2023, the same plan under hf-trainer)."""
    return plan, dataclasses.replace(plan, stack=Stack.HF_TRAINER)


def _rule(plan: TrainPlan) -> int:
    """Bytes per token per block the rule keeps, with the arguments memory.py passes it."""
    spec = resolve(plan).spec
    profile = load_rates().stacks[plan.stack]
    dt = memory_dtypes(plan, profile)
    lora_input = 0 if dt.lora_saved or dt.autocast else dt.adapter
    return kept_4bit_inputs(spec, plan, profile, block_groups(spec), (dt.stream, dt.linear_out), lora_input)


def test_the_row_is_hf_trainer_but_for_the_kept_inputs():
    stacks = load_rates().stacks
    old, hf = stacks[Stack.HF_TRAINER_2023], stacks[Stack.HF_TRAINER]
    assert (old.bnb_4bit_input, hf.bnb_4bit_input) == ("kept", "freed")
    differs = {f.name for f in dataclasses.fields(hf) if getattr(hf, f.name) != getattr(old, f.name)}
    # and its transformers release calls repeat_kv ahead of every SDPA call ([M10])
    assert (old.sdpa_kv, hf.sdpa_kv) == ("repeat", "masked")
    # and it keeps the rotary caches of transformers 4.x ([M11])
    assert (old.rope_cache, hf.rope_cache) == ("layer", "none")
    # and its transformers 4.x hooks the embeddings for PEFT only, not whenever checkpointing is on
    assert (old.embeddings_hooked, hf.embeddings_hooked) == (False, True)
    assert differs <= {"name", "stack", "basis", "memory_basis", "bnb_4bit_input", "sdpa_kv", "rope_cache",
                       "embeddings_hooked"}
    assert "[M6]" in old.memory_basis


def _repeated_kv(plan: TrainPlan) -> int:
    """Bytes per token per block that SDPA's repeated K and V add on a grouped-query model ([M10])."""
    spec = resolve(plan).spec
    dt = memory_dtypes(plan, load_rates().stacks[plan.stack])
    return 2 * (dt.attn_saved or dt.linear_out) * (spec.num_heads - spec.num_kv_heads) * spec.head_dim


def test_memory_exceeds_hf_trainer_by_the_kept_input_bytes():
    old_plan, hf_plan = _pair(QLORA)
    spec = resolve(old_plan).spec
    per_token_block = _rule(old_plan) + _repeated_kv(old_plan)
    assert _rule(old_plan) > 0 and _rule(hf_plan) == 0 and _repeated_kv(old_plan) > 0
    old, hf = estimate_memory(old_plan, spec), estimate_memory(hf_plan, spec)
    added = per_token_block * old_plan.batch_size * old_plan.seq_len * spec.num_layers
    caches = rope_cache_bytes(spec, old_plan, load_rates().stacks[old_plan.stack])
    assert caches > 0 and rope_cache_bytes(spec, hf_plan, load_rates().stacks[hf_plan.stack]) == 0
    assert old.breakdown["activations"] - hf.breakdown["activations"] == added
    assert old.breakdown["weights"] - hf.breakdown["weights"] == caches
    assert old.phase_peaks["forward"] - hf.phase_peaks["forward"] == added + caches
    assert old.peak_allocated_bytes > hf.peak_allocated_bytes


def test_a_16bit_lora_plan_is_priced_as_hf_trainer_but_for_the_rotary_caches():
    # under flash-attention, which reads grouped K/V whatever the release ([M10])
    old_plan, hf_plan = _pair(dataclasses.replace(QLORA, method="lora", attention="flash"))
    spec = resolve(old_plan).spec
    assert _rule(old_plan) == 0
    caches = rope_cache_bytes(spec, old_plan, load_rates().stacks[old_plan.stack])
    assert (estimate_memory(old_plan, spec).peak_allocated_bytes
            == estimate_memory(hf_plan, spec).peak_allocated_bytes + caches)


@pytest.mark.parametrize("method", ["qlora", "lora", "full"])
def test_time_is_hf_trainers(method):
    old_plan, hf_plan = _pair(dataclasses.replace(QLORA, method=method))
    old, hf = estimate_time(old_plan, "a100_80_sxm"), estimate_time(hf_plan, "a100_80_sxm")
    assert old.step_time_s == hf.step_time_s
    assert old.total_s == hf.total_s
    assert old.stack == "hf-trainer-2023"


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_stack_is_named_in_both_languages_and_listed(lang):
    name = text("stack.hf-trainer-2023", lang)
    assert "0.43.1" in name and name != text("stack.hf-trainer", lang)
    assert name != text("stack.hf-trainer-2023", "ru" if lang == "en" else "en")
    parser = argparse.ArgumentParser(prog="gpuwork estimate")
    plan_arguments(parser, lang)
    action = next(a for a in parser._actions if "--stack" in a.option_strings)
    assert "hf-trainer-2023" in action.help
