"""How many norms a step runs (estimate.ops, estimate.deterministic).

transformers' Gemma2DecoderLayer has four RMSNorms (input_layernorm, post_attention_layernorm,
pre_feedforward_layernorm, post_feedforward_layernorm) and Gemma2Model one final ``norm``; Llama's decoder layer
has two and its model one final ``norm``. ``ModelSpec.norms_per_sublayer`` doubles the blocks' norms only.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.estimate.deterministic import FillWidths, fill_rows
from gpuwork.estimate.ops import Phase, StackKernels, step_ops
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan

MB = 2  # micro-batches a step


def _plan(model: str, **kw) -> TrainPlan:
    return TrainPlan(model=model, method="lora", batch_size=2, seq_len=128, grad_accum=MB, **kw)


def _norms(plan: TrainPlan, spec, phase: Phase) -> dict[str, tuple[int, int, float]]:
    """name -> (norm calls, kernels, bytes) per step."""
    out = {}
    for op in step_ops(plan, spec, StackKernels()):
        if "norm" in op.name and op.phase is phase:
            out[op.name] = (op.count, op.count * op.launches, op.count * op.bytes)
    return out


@pytest.mark.parametrize(("model", "per_layer"), [("gemma-2-2b", 4), ("llama-3.2-1b", 2)])
def test_norm_calls_and_kernels_per_step(model, per_layer):
    plan = _plan(model)
    spec = resolve(plan).spec
    assert spec.norms_per_sublayer == per_layer // 2
    fwd = _norms(plan, spec, Phase.FORWARD)
    layers = spec.num_layers
    # eager RMSNorm on a bf16 stream: to fp32, pow, mean, + eps, rsqrt, x * rsqrt, back to bf16, x weight
    kernels_per_norm = 8
    assert fwd["final norm"][:2] == (MB, MB * kernels_per_norm)
    block_calls = fwd["norm (attention input)"][0] + fwd["norm (MLP input)"][0]
    assert block_calls == per_layer * layers * MB
    assert sum(calls for calls, _, _ in fwd.values()) == (per_layer * layers + 1) * MB
    assert sum(k for _, k, _ in fwd.values()) == (per_layer * layers + 1) * MB * kernels_per_norm
    # every norm reads and writes the same [tokens, hidden] stream: one call's bytes are the same everywhere
    per_call = {name: nbytes / calls for name, (calls, _, nbytes) in fwd.items()}
    assert len(set(per_call.values())) == 1
    bwd = _norms(plan, spec, Phase.BACKWARD)
    assert bwd["final norm backward"][0] == MB
    # the final norm's backward is the same chain as a block norm's (LoRA: no weight gradient), not a forward
    per_call_bwd = {name: (k / calls, nbytes / calls) for name, (calls, k, nbytes) in bwd.items()}
    assert per_call_bwd["final norm backward"] == per_call_bwd["norm (attention input) backward"]
    assert per_call_bwd["final norm backward"][1] > per_call["final norm"]


@pytest.mark.parametrize(("method", "kernels"), [("lora", 14), ("full", 16)])
def test_final_norm_weight_gradient_when_it_trains(method, kernels):
    plan = dataclasses.replace(_plan("llama-3.2-1b"), method=method)
    bwd = _norms(plan, resolve(plan).spec, Phase.BACKWARD)
    calls, k, _ = bwd["final norm backward"]
    # eager RMSNorm backward: 12 kernels, 2 for the casts on a bf16 stream, 2 for the weight's gradient
    assert k / calls == kernels


def test_sandwich_norms_double_the_blocks_only():
    plan = _plan("gemma-2-2b")
    gemma2 = resolve(plan).spec
    single = dataclasses.replace(gemma2, model_type="gemma")  # same shapes, one norm per sub-layer
    assert (gemma2.norms_per_sublayer, single.norms_per_sublayer) == (2, 1)
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        two, one = _norms(plan, gemma2, phase), _norms(plan, single, phase)
        for name in two:
            factor = 1 if name.startswith("final norm") else 2
            assert two[name] == tuple(factor * v for v in one[name]), name


def test_deterministic_fills_double_the_block_norms_only():
    plan = _plan("gemma-2-2b", deterministic=True)
    gemma2 = resolve(plan).spec
    single = dataclasses.replace(gemma2, model_type="gemma")
    t, h = plan.tokens_per_micro_batch, gemma2.hidden_size
    widths = FillWidths(s_b=2, e=2, attn_b=2)
    stack = StackKernels()

    def fills(spec) -> dict[tuple[str, Phase], float]:
        rows = fill_rows(plan, spec, step_ops(plan, spec, StackKernels()), stack, widths)
        return {(r.name, r.phase): r.bytes for r in rows}

    two, one = fills(gemma2), fills(single)
    head = [k for k in two if "embedding and head" in k[0]]
    assert head and all(two[k] == one[k] for k in head)  # one final norm either way
    # backward: the final norm's two casts' gradients (fp32 and bf16) and the bf16 logits gradient's cast
    head_bwd = t * h * (4 + 2) + t * gemma2.vocab_size * 2
    assert two[("deterministic fill: embedding and head", Phase.BACKWARD)] == pytest.approx(head_bwd)
    block_fwd = ("deterministic fill: blocks", Phase.FORWARD)
    # 2 (Llama-style) or 4 (Gemma 2) norms a block, each writing an fp32 copy and a bf16 one
    assert two[block_fwd] - one[block_fwd] == pytest.approx(2 * t * h * (4 + 2))
