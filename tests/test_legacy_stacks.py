"""The dle-pytorch stack: NVIDIA DeepLearningExamples BERT fine-tuning as its run_squad.py runs it (eager PyTorch,
apex amp O2; rates_sources.md [K16], docs/legacy_stacks.md). Kernel counts and bytes below are read from that code,
not from running the model."""

from __future__ import annotations

import pytest

from gpuwork.estimate.ops import Phase, step_ops
from gpuwork.estimate.steptime import stack_kernels
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.message import msg
from gpuwork.plan import Stack, TrainPlan
from gpuwork.present.messages import render

SQUAD = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", precision="fp16-mixed", seq_len=384,
                  batch_size=4, attention="eager")
SCORES = 4 * 16 * 384 * 384  # batch x heads x seq x seq


def _ops(plan: TrainPlan, stack: Stack):
    return step_ops(plan, get_spec(plan.model), stack_kernels(load_rates().stacks[stack]))


def _one(ops, name: str, phase: Phase):
    [op] = [o for o in ops if o.name == name and o.phase is phase]
    return op


def test_only_the_dle_stack_casts_the_model_to_16_bits():
    stacks = load_rates().stacks
    assert {s for s in Stack if stacks[s].model_16bit} == {Stack.DLE_PYTORCH}
    assert not stacks[Stack.DLE_PYTORCH].fuse_elementwise


def test_o2_runs_the_bert_chain_as_four_fp16_kernels_each_way():
    """modeling.py 359-369: / sqrt(d) 2+2, + fp16 mask 2+2, softmax 2+2, dropout 2+2+1 (its 1-byte mask): 17 B per
    score element in 4 kernels; autocast (hf-trainer) promotes to the fp32 mask and casts back: 33 B in 5; a fusing
    stack: one kernel, 2e + 1 = 5 B."""
    chain = "attention softmax chain"
    dle = _one(_ops(SQUAD, Stack.DLE_PYTORCH), chain, Phase.FORWARD)
    hf = _one(_ops(SQUAD, Stack.HF_TRAINER), chain, Phase.FORWARD)
    fused = _one(_ops(SQUAD, Stack.FRAMEWORK), chain + " (fused)", Phase.FORWARD)
    assert (dle.launches, dle.bytes) == (4, SCORES * 17)
    assert (hf.launches, hf.bytes) == (5, SCORES * 33)
    assert (fused.launches, fused.bytes) == (1, SCORES * 5)
    # each backward kernel reads the gradient and its saved input and writes one gradient: twice the bytes
    bwd = _one(_ops(SQUAD, Stack.DLE_PYTORCH), chain + " backward", Phase.BACKWARD)
    assert (bwd.launches, bwd.bytes) == (4, 2 * SCORES * 17)


def test_o2_keeps_the_residual_stream_in_fp16_and_casts_no_linear_input():
    """The fp16 stream feeds the linears as it is; the weights still cross between fp32 and fp16 once per step (O2's
    master copies, autocast's weight casts: the same count at one micro-batch)."""
    tokens, h = 4 * 384, 1024
    dle, hf = _ops(SQUAD, Stack.DLE_PYTORCH), _ops(SQUAD, Stack.HF_TRAINER)
    assert {o.bytes for o in dle if o.name == "residual add"} == {tokens * h * 3 * 2}
    assert {o.bytes for o in hf if o.name == "residual add"} == {tokens * h * 3 * 4}
    assert not [o for o in dle if "input cast" in o.name] and [o for o in hf if "input cast" in o.name]
    weight_casts = {name: sorted(o.name for o in ops if "weight cast" in o.name) for name, ops in
                    (("dle", dle), ("hf", hf))}
    assert weight_casts["dle"] == weight_casts["hf"] and weight_casts["dle"]


def test_without_mixed_precision_the_dle_stack_prices_as_eager_pytorch():
    plan = SQUAD.replace(precision="fp32")
    assert _ops(plan, Stack.DLE_PYTORCH) == _ops(plan, Stack.HF_TRAINER)


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_stack_is_named_in_each_language(lang):
    name = render(msg("stack.label", stack="dle-pytorch"), lang)
    assert "DeepLearningExamples" in name and "apex amp O2" in name
    assert name != render(msg("stack.label", stack="hf-trainer"), lang)
