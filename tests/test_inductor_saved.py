"""Stacks torch-compile and torch-loop-compile (rates_sources.md [M9]): what Inductor's min-cut partitioner keeps for
backward. The slow tests compile real transformers blocks (Llama, GPT-2) with Inductor on the CPU and count the bytes
autograd keeps (``saved_tensors_hooks``), eager and compiled, against gpuwork's block model of the hf-trainer and
torch-compile rows."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from typing import Any

import pytest
from conftest import saved_bytes_per_token

from gpuwork.estimate.memory import _activations, memory_dtypes
from gpuwork.facts.rates import load_rates
from gpuwork.measure.accuracy import case_spec
from gpuwork.plan import Attention, Method, Precision, Stack, TrainPlan

# small blocks whose sizes tell their tensors apart (2 x 96 tokens, hidden 256)
LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 704,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 1,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}
GPT2 = {
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "n_embd": 256,
    "n_head": 4,
    "n_layer": 1,
    "vocab_size": 1000,
    "n_positions": 1024,
    "attn_pdrop": 0.0,
    "resid_pdrop": 0.0,
    "embd_pdrop": 0.0,
}
BATCH, SEQ = 2, 96


@functools.cache
def _spec(name: str):
    return case_spec(name, {"probe-llama": LLAMA, "probe-gpt2": GPT2}[name])


def _per_layer(name: str, stack: Stack) -> int:
    """Bytes per token one trained block saves under ``stack`` (gpuwork's block model)."""
    plan = TrainPlan(
        model=name,
        method=Method.FULL,
        precision=Precision.BF16,
        batch_size=BATCH,
        seq_len=SEQ,
        attention=Attention.SDPA,
        stack=stack,
    )
    profile = load_rates().stacks[stack]
    return _activations(_spec(name), plan, memory_dtypes(plan, profile), profile).per_layer_trained


def test_compiled_stacks_take_inductors_saved_set():
    stacks = load_rates().stacks
    for stack in (Stack.TORCH_COMPILE, Stack.TORCH_LOOP_COMPILE):
        assert (stacks[stack].rmsnorm_saves, stacks[stack].swiglu_saved, stacks[stack].torch_gelu) == (
            "input",
            2,
            True,
        )


def test_inductor_drops_the_fp32_norm_copies_silu_and_the_gelu_chain():
    e = 2  # bf16
    llama, gpt2 = _spec("probe-llama"), _spec("probe-gpt2")
    # Llama, eager: each RMSNorm keeps an fp32 copy of its input beside the 16-bit x_hat, SiLU(gate) x up keeps gate,
    # SiLU(gate) and up. Compiled: the norms keep their 16-bit input (which eager's q/k/v and MLP inputs do not
    # duplicate) and rstd, the MLP gate and up: two fp32 hidden copies and one intermediate-sized tensor fewer
    dropped = 2 * 4 * llama.hidden_size + e * llama.intermediate_size
    assert (
        _per_layer("probe-llama", Stack.HF_TRAINER) - _per_layer("probe-llama", Stack.TORCH_COMPILE)
        == dropped
    )
    # GPT-2: gelu_new's chain keeps four intermediate-sized tensors eagerly, its input only when compiled
    assert gpt2.activation == "gelu_new"
    dropped = 3 * e * gpt2.intermediate_size
    assert (
        _per_layer("probe-gpt2", Stack.HF_TRAINER) - _per_layer("probe-gpt2", Stack.TORCH_COMPILE) == dropped
    )


def _saved_bytes_per_token(fn: Callable[..., Any], skip: set[int], kwargs: dict[str, Any]) -> float:
    """Bytes per token autograd keeps for one forward and backward of ``fn`` (a block, eager or compiled): every
    saved tensor's storage once, those in ``skip`` (parameters, the shared rotary tables) left out."""
    import torch

    x = torch.randn(BATCH, SEQ, 256, dtype=torch.bfloat16, requires_grad=True)
    return saved_bytes_per_token(lambda t: fn(t, **kwargs), x, skip,
                                 loss=lambda out: (out[0] if isinstance(out, tuple) else out).float().sum())


def _eager_and_compiled(layer, kwargs: dict[str, Any], skip: set[int]) -> tuple[float, float]:
    torch = pytest.importorskip("torch")
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("Inductor's CPU backend needs a C++ compiler")
    skip = skip | {p.untyped_storage().data_ptr() for p in layer.parameters()}
    eager = _saved_bytes_per_token(layer, skip, kwargs)
    compiled = torch.compile(layer, backend="inductor")
    _saved_bytes_per_token(compiled, skip, kwargs)  # compiles
    return eager, _saved_bytes_per_token(compiled, skip, kwargs)



def llama_layer(fields: dict[str, Any]):
    """A transformers LlamaDecoderLayer (SDPA, bf16, seeded) built from config fields, and its rotary cos/sin tables
    for BATCH x SEQ tokens."""
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(
        **{k: v for k, v in fields.items() if k not in ("model_type", "architectures")},
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    layer = LlamaDecoderLayer(config, 0).to(torch.bfloat16)
    probe = torch.zeros(BATCH, SEQ, config.hidden_size, dtype=torch.bfloat16)
    cos, sin = LlamaRotaryEmbedding(config)(probe, torch.arange(SEQ)[None].expand(BATCH, SEQ))
    return layer, cos, sin


@pytest.mark.slow
def test_a_compiled_llama_block_saves_what_the_stack_prices():
    layer, cos, sin = llama_layer(LLAMA)
    tables = {cos.untyped_storage().data_ptr(), sin.untyped_storage().data_ptr()}
    eager, inductor = _eager_and_compiled(layer, {"position_embeddings": (cos, sin)}, tables)
    assert eager == _per_layer("probe-llama", Stack.HF_TRAINER)
    assert inductor == _per_layer("probe-llama", Stack.TORCH_COMPILE)


@pytest.mark.slow
def test_a_compiled_gpt2_block_keeps_the_gelu_input_only():
    torch = pytest.importorskip("torch")
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    config = GPT2Config(
        **{k: v for k, v in GPT2.items() if k not in ("model_type", "architectures")},
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    eager, inductor = _eager_and_compiled(GPT2Block(config).to(torch.bfloat16), {}, set())
    # the two LayerNorms' mean and rstd: bf16 from the CPU kernel (8 bytes per token), counted in fp32 (16)
    stats = 8
    assert eager + stats == _per_layer("probe-gpt2", Stack.HF_TRAINER)
    assert inductor + stats == _per_layer("probe-gpt2", Stack.TORCH_COMPILE)
