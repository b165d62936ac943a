"""stacks.csv rope_cache (rates_sources.md [M11]): the transformers 4.x releases of late 2023 to mid 2024 build a
rotary module in every attention layer of a Llama-lineage model with cos and sin caches of max_position_embeddings x
head_dim in the load dtype, kept on the GPU with the weights and whole on every FSDP rank. Byte counts by hand from
each preset's config; the slow test checks that the installed transformers (today's, stack hf-trainer) keeps none."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.estimate.memory import estimate_memory
from gpuwork.estimate.memory_stacks import rope_cache_bytes
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan

# the fms-acceleration full fine-tune (docs/memory_misses.md): Mistral-7B in pure fp16, flash-attention 2
FULL = TrainPlan(model="mistral-7b", method="full", precision="fp16", seq_len=4096, batch_size=4,
                 grad_checkpointing=True, attention="flash", lengths="packed", stack="hf-trainer-2024")


def _caches(plan: TrainPlan) -> int:
    return rope_cache_bytes(resolve(plan).spec, plan, load_rates().stacks[plan.stack])


def _without_caches(plan: TrainPlan) -> int:
    """The plan's peak on its own stack with rope_cache set to none."""
    profile = dataclasses.replace(load_rates().stacks[plan.stack], rope_cache="none")
    return estimate_memory(plan, resolve(plan).spec, profile).peak_allocated_bytes


def test_the_rows_of_late_2023_to_mid_2024_keep_the_caches():
    stacks = load_rates().stacks
    assert {s for s, p in stacks.items() if p.rope_cache == "layer"} == {
        Stack.HF_TRAINER_2023, Stack.HF_TRAINER_2024, Stack.HF_LOOP_2024}


@pytest.mark.parametrize(("plan", "expected"), [
    # Mistral-7B: 32 layers x (cos, sin) x 32,768 positions x head_dim 128 x 2 bytes = 512 MiB
    (FULL, 32 * 2 * 32768 * 128 * 2),
    # Mixtral-8x7B: the same attention shape and max_position_embeddings
    (dataclasses.replace(FULL, model="mixtral-8x7b", method="qlora", stack="hf-trainer-2023"), 536_870_912),
    # Llama-2-70B QLoRA (fp16 compute): 80 layers x 2 x 4,096 x 128 x 2 bytes = 160 MiB
    (dataclasses.replace(FULL, model="llama-2-70b", method="qlora", stack="hf-trainer-2023"), 167_772_160),
    # mixed precision on fp32 master weights loads the model in fp32: twice the bytes
    (dataclasses.replace(FULL, precision="bf16-mixed"), 32 * 2 * 32768 * 128 * 4),
    # LoRA under mixed precision keeps its 16-bit base
    (dataclasses.replace(FULL, method="lora", precision="bf16-mixed"), 536_870_912),
    # today's transformers computes cos and sin in each forward
    (dataclasses.replace(FULL, stack="hf-trainer"), 0),
    # no rotary embedding
    (dataclasses.replace(FULL, model="gpt2", seq_len=1024), 0),
])
def test_cache_bytes_by_hand(plan, expected):
    assert _caches(plan) == expected


def test_the_caches_sit_in_every_phase_with_the_weights():
    spec = resolve(FULL).spec
    with_caches = estimate_memory(FULL, spec)
    profile = dataclasses.replace(load_rates().stacks[FULL.stack], rope_cache="none")
    without = estimate_memory(FULL, spec, profile)
    assert with_caches.breakdown["weights"] - without.breakdown["weights"] == 536_870_912
    assert all(with_caches.phase_peaks[k] - without.phase_peaks[k] == 536_870_912 for k in without.phase_peaks)


def test_fsdp_leaves_the_buffers_whole_on_every_rank():
    sharded = dataclasses.replace(FULL, gpus=2, sharding="fsdp", batch_size=2)
    assert _caches(sharded) == 536_870_912
    assert estimate_memory(sharded, resolve(sharded).spec).peak_allocated_bytes - _without_caches(sharded) \
        == 536_870_912


def test_todays_transformers_keeps_no_rotary_cache():
    """Stack hf-trainer (today's transformers) prices none: a Mistral built by the installed release registers no
    cos/sin buffer of max_position_embeddings rows."""
    transformers = pytest.importorskip("transformers")
    config = transformers.MistralConfig(vocab_size=64, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1,
                                        max_position_embeddings=32768)
    model = transformers.MistralForCausalLM(config)
    assert not [n for n, b in model.named_buffers() if b.shape[0] == config.max_position_embeddings]
    assert sum(b.numel() * b.element_size() for b in model.buffers()) < 32768
