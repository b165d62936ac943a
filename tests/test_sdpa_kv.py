"""stacks.csv sdpa_kv (rates_sources.md [M10]): on a grouped-query model, the K and V that SDPA keeps for backward are
``repeat_kv``'s copies at every query head when transformers hands SDPA a mask (its ``use_gqa_in_sdpa``) or, in
releases before that, always. The slow test runs a real transformers ``LlamaDecoderLayer`` on the CPU with and
without a mask and counts what autograd keeps."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from test_inductor_saved import BATCH, SEQ, _saved_bytes_per_token, llama_layer

from gpuwork.estimate.memory import _activations, memory_dtypes
from gpuwork.facts.rates import load_rates
from gpuwork.measure.accuracy import case_spec
from gpuwork.plan import Attention, Method, Precision, Stack, TrainPlan

# 4 query heads share 2 key/value heads (head_dim 64, hidden 256)
GQA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 704,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 1,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}


@functools.cache
def _spec():
    return case_spec("probe-gqa", GQA)


def _per_layer(stack: Stack, lengths: str = "fixed", attention: Attention = Attention.SDPA) -> int:
    plan = TrainPlan(
        model="probe-gqa",
        method=Method.FULL,
        precision=Precision.BF16,
        batch_size=BATCH,
        seq_len=SEQ,
        attention=attention,
        stack=stack,
        lengths=lengths,
    )
    profile = load_rates().stacks[stack]
    return _activations(_spec(), plan, memory_dtypes(plan, profile), profile).per_layer_trained


def _repeated() -> int:
    """Bytes per token repeat_kv's copies add: K and V at every query head instead of the key/value heads (bf16)."""
    spec = _spec()
    return 2 * 2 * (spec.num_heads - spec.num_kv_heads) * spec.head_dim


def test_the_stacks_read_their_transformers_release():
    stacks = load_rates().stacks
    assert {s for s, p in stacks.items() if p.sdpa_kv == "repeat"} == {
        Stack.HF_TRAINER_2023,
        Stack.HF_TRAINER_2024,  # the hf-trainer-2023 row but for peft's adapters
        Stack.HF_LOOP_2024,
    }
    assert {s for s, p in stacks.items() if p.sdpa_kv == "masked"} == {
        Stack.HF_TRAINER,
        Stack.HF_LIGER,
        Stack.TORCH_COMPILE,
    }


def test_repeated_kv_when_sdpa_gets_a_mask_or_the_release_always_repeats():
    fixed = _per_layer(Stack.HF_TRAINER)
    assert _per_layer(Stack.HF_TRAINER, lengths="padded") - fixed == _repeated()  # a padding mask: repeat_kv
    assert _per_layer(Stack.HF_TRAINER_2023) - fixed == _repeated()  # transformers 4.3x: repeat_kv always
    assert _per_layer(Stack.UNSLOTH, lengths="padded") == _per_layer(
        Stack.UNSLOTH
    )  # its own kernels read groups
    # flash-attention reads grouped K and V itself, whatever the stack
    flash = _per_layer(Stack.HF_TRAINER_2023, attention=Attention.FLASH)
    assert flash == _per_layer(Stack.HF_TRAINER, lengths="padded", attention=Attention.FLASH)


@pytest.mark.slow
def test_a_masked_sdpa_call_keeps_repeated_kv():
    torch = pytest.importorskip("torch")
    layer, cos, sin = llama_layer(GQA)
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).tril().expand(BATCH, 1, SEQ, SEQ).clone()
    mask[1, :, :, SEQ - 8 :] = False  # the second row padded: a mask SDPA must apply
    mask[1, :, SEQ - 8 :, 0] = True  # (padded queries still attend somewhere)
    skip = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    skip |= {t.untyped_storage().data_ptr() for t in (cos, sin, mask)}
    kwargs: dict[str, Any] = {"position_embeddings": (cos, sin)}
    grouped = _saved_bytes_per_token(layer, skip, kwargs)
    masked = _saved_bytes_per_token(layer, skip, {**kwargs, "attention_mask": mask})
    # torch turns a boolean mask into a float one of the query's dtype in each call (convert_boolean_attn_mask), a new
    # (batch, 1, seq, seq) tensor the kernel keeps: seq x 2 bytes per token and block, not priced (docs/memory_misses.md)
    converted = SEQ * 2
    assert masked - grouped - converted == _repeated()
    assert grouped == _per_layer(Stack.HF_TRAINER)
    assert masked - converted == _per_layer(Stack.HF_TRAINER, lengths="padded")
