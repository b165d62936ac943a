"""A LayerNorm written op by op (config ``norm_impl: "composite"``; the from-scratch GPT of Raschka's "Build a Large
Language Model"): the kernels and bytes the time model prices against those autograd runs on the CPU, the bytes
the memory model counts against what autograd keeps, and the plan-level effect (docs/kernels.md, "Hand-written
softmax, SiLU and LayerNorm")."""

from __future__ import annotations

import pytest
from conftest import saved_bytes_per_token
from test_composite_time import KERNEL_OPS, _kernels

from gpuwork.errors import ModelError
from gpuwork.estimate.composite_ops import composite_layer_norm, layer_norm_saved
from gpuwork.estimate.l2_reuse import (
    LAYER_NORM_BACKWARD,
    LAYER_NORM_FORWARD,
    broadcast_bytes,
    chain_bytes,
    layer_norm_chains,
    layer_norm_l2,
)
from gpuwork.estimate.memory import _block_activations, stack_profile
from gpuwork.estimate.memory_dtypes import memory_dtypes
from gpuwork.estimate.ops import step_ops
from gpuwork.measure.accuracy import case_spec
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_time

HIDDEN = 64
GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": HIDDEN, "n_head": 4, "n_layer": 2,
        "n_positions": 256, "vocab_size": 512, "activation_function": "gelu_new", "attn_pdrop": 0.0,
        "embd_pdrop": 0.0, "resid_pdrop": 0.0}
COMPOSITE = {"norm_impl": "composite"}
LN_OPS = KERNEL_OPS | {"aten::mean", "aten::var", "aten::sqrt"}


def _layer_norm(torch, trains: bool):
    """The from-scratch LayerNorm, as the book writes it."""
    scale = torch.ones(HIDDEN, requires_grad=trains)
    shift = torch.zeros(HIDDEN, requires_grad=trains)

    def norm(x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return scale * ((x - mean) / torch.sqrt(var + 1e-5)) + shift

    return norm, {scale.untyped_storage().data_ptr(), shift.untyped_storage().data_ptr()}


@pytest.mark.parametrize("trains", [True, False])
def test_the_chains_are_the_kernels_autograd_runs(trains, monkeypatch):
    torch = pytest.importorskip("torch")
    import test_composite_time

    monkeypatch.setattr(test_composite_time, "KERNEL_OPS", LN_OPS)
    norm, _ = _layer_norm(torch, trains)
    x = torch.randn(2, 8, HIDDEN, requires_grad=True)
    forward, backward = _kernels(torch, norm, x, torch.randn(2, 8, HIDDEN))
    chains = layer_norm_chains(4, trains)
    assert (forward, backward) == (len(chains[0]), len(chains[1])) == (8, 21 if trains else 18)


@pytest.mark.parametrize("trains", [True, False])
def test_what_autograd_keeps_is_what_the_memory_model_counts(trains):
    torch = pytest.importorskip("torch")
    norm, params = _layer_norm(torch, trains)
    x = torch.randn(2, 8, HIDDEN, requires_grad=True)
    assert saved_bytes_per_token(norm, x, params) == layer_norm_saved(4, HIDDEN, trains)


def test_the_bytes_and_the_l2_passes_by_hand():
    # fp32, per element: mean 4, var 4, x - mean 8, the division 8, scale 8, shift 8 (the row kernels 0): 40 bytes,
    # 32 of them in broadcast kernels; backward 34 widths (29 with a frozen scale and shift)
    forward, backward, width, _ = layer_norm_chains(4, True)
    assert (chain_bytes(forward, width), broadcast_bytes(forward, width)) == (40, 32)
    assert chain_bytes(backward, width) == 136
    assert chain_bytes(layer_norm_chains(4, False)[1], width) == 116
    # var and the subtraction read x again right after mean and var read it (pairs of 4 and 8 bytes); the scale's
    # product reads the quotient the division just wrote and writes a temporary the shift's add reads and frees
    # (pairs of 12): 20 bytes. With a frozen scale the quotient is not kept, so its write stays in L2 too.
    assert layer_norm_l2(4, 1.0, True)[0] == ((4.0, 4.0), (4.0, 8.0), (12.0, 12.0))
    assert layer_norm_l2(4, 1.0, False)[0] == ((4.0, 4.0), (4.0, 8.0), (16.0, 12.0))
    assert LAYER_NORM_FORWARD[0] == (("x",), ("m",)) and LAYER_NORM_BACKWARD[-1] == (("acc", "gxm"), ("gx",))


def test_the_key_reaches_the_spec_and_changes_layer_norm_models_only():
    assert composite_layer_norm(case_spec("tiny-gpt2-composite", {**GPT2, **COMPOSITE}))
    assert not composite_layer_norm(case_spec("tiny-gpt2", GPT2))
    llama = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 512, "hidden_size": 64,
             "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4}
    assert not composite_layer_norm(case_spec("tiny-llama-composite", {**llama, **COMPOSITE}))
    with pytest.raises(ModelError):
        case_spec("tiny-gpt2-bad", {**GPT2, "norm_impl": "by hand"})


def _plan(**changes) -> TrainPlan:
    fields = {"model": "tiny-gpt2", "method": "scratch", "precision": "fp16-mixed", "attention": "eager",
              "stack": "torch-loop", "seq_len": 128, "batch_size": 4, **changes}
    return TrainPlan(**fields)


@pytest.mark.parametrize("method", ["scratch", "lora"])
def test_a_plan_prices_every_norm_op_by_op_in_time_and_memory(method):
    plan = _plan(method=method, **({"lora_targets": ["c_attn"]} if method == "lora" else {}))
    fused, composite = case_spec("tiny-gpt2", GPT2), case_spec("tiny-gpt2-composite", {**GPT2, **COMPOSITE})
    trains = method == "scratch"
    norms = [o for o in step_ops(plan, composite) if o.name.endswith("(composite)")]
    # two norms a block and the final one; the stream is fp32 under autocast, the frozen base's fp16 under LoRA
    stream = 4 if trains else 2
    assert {o.name for o in norms} == {"norm (attention input) (composite)", "norm (MLP input) (composite)",
                                       "final norm (composite)"}
    forward, backward, width, _ = layer_norm_chains(stream, trains)
    tokens = plan.batch_size * plan.seq_len
    for op in norms:
        assert op.bytes == pytest.approx(chain_bytes(forward, width) * tokens * HIDDEN)
        assert op.launches == len(forward) and op.backward_launches == len(backward)
    assert estimate_time(plan, "h100_sxm", spec=composite).step_time_s > \
        estimate_time(plan, "h100_sxm", spec=fused).step_time_s
    per_layer = []
    for spec in (fused, composite):
        profile = stack_profile(plan, spec)
        act = _block_activations(spec, plan, memory_dtypes(plan, profile), profile)
        per_layer.append(act.per_layer_trained if trains else act.per_layer_frozen)
    # each of a block's two norms keeps the centred input and (scale training) the quotient more, and its row sqrt
    # in place of the native kernel's two fp32 row values
    assert per_layer[1] - per_layer[0] == 2 * (layer_norm_saved(stream, HIDDEN, trains) - (stream * HIDDEN + 8))
