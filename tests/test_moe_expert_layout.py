"""QLoRA on a MoE model by expert layout: transformers 4.x builds each expert from nn.Linear modules, which
bitsandbytes replaces by Linear4bit like any other linear ("loop"); transformers 5 fuses a layer's experts into 3-D
Parameters that it leaves in 16 bits ("fused", upcast to fp32 by peft's k-bit preparation). Memory takes the
layout from the run (``moe_experts``) or its stack (stacks.csv), and prices the weights bytes exactly."""

from __future__ import annotations

import dataclasses
import math

import pytest

from gpuwork.errors import PlanError
from gpuwork.facts.resolve import resolve
from gpuwork.facts.spec import count_params
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory

TINY = TrainPlan(model="tiny-mixtral", method="qlora")  # bf16, nf4 with double quantisation, peft's upcast
WARNING = "memory.moe_experts_unquantized"


def _nf4_dq_bytes(quantized: int) -> int:
    """Packed 4-bit weights, a uint8 absmax per 64 and an fp32 constant per 256 blocks (QLoRA §3), by hand."""
    blocks = math.ceil(quantized / 64)
    return quantized // 2 + blocks + 4 * math.ceil(blocks / 256)


def test_linear_experts_are_quantised_to_the_byte() -> None:
    spec = resolve(TINY).spec
    # tiny-mixtral: 2 layers; attention q, k, v, o of 128x128, 128x64, 128x64, 128x128; 4 experts of a fused
    # gate_up 128x896 and a down 448x128; an untied 128x4096 head and embeddings, norms
    attention = 2 * (128 * 128 + 128 * 64 + 128 * 64 + 128 * 128)
    experts = 2 * 4 * (128 * 896 + 448 * 128)
    assert (attention, experts) == (98_304, 1_376_256)
    fused, loop = count_params(spec, TINY), count_params(spec, TINY, expert_linears=True)
    assert (fused.quantized, loop.quantized) == (attention, attention + experts)
    base, adapter = loop.base, loop.adapter
    fp32_adapters = 4 * adapter
    by_hand = {"fused": _nf4_dq_bytes(attention) + 4 * (base - attention) + fp32_adapters,
               "loop": _nf4_dq_bytes(attention + experts) + 4 * (base - attention - experts) + fp32_adapters}
    assert by_hand["loop"] == 5_018_984
    for layout, expected in by_hand.items():
        assert estimate_memory(TINY, moe_experts=layout).breakdown["weights"] == expected


def test_the_layout_defaults_to_the_stack_and_only_the_fused_one_warns() -> None:
    fused, loop = estimate_memory(TINY), estimate_memory(TINY, moe_experts="loop")
    assert fused.breakdown == estimate_memory(TINY, moe_experts="fused").breakdown  # hf-trainer: "fused"
    assert loop.peak_allocated_bytes < fused.peak_allocated_bytes
    assert WARNING in {w.code for w in fused.warnings}
    assert WARNING not in {w.code for w in loop.warnings}


@pytest.mark.parametrize("plan", [dataclasses.replace(TINY, method="lora"), TrainPlan(model="tiny-llama",
                                                                                      method="qlora")])
def test_the_layout_changes_nothing_without_quantised_experts(plan: TrainPlan) -> None:
    assert estimate_memory(plan, moe_experts="loop").breakdown == estimate_memory(plan).breakdown


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(PlanError) as err:
        estimate_memory(TINY, moe_experts="scatter")
    assert err.value.field == "moe_experts"
