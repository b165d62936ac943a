"""Stack litgpt-2023 (rates_sources.md [M5]): bitsandbytes 0.41.1's MatMul4Bit keeps each 4-bit matmul's 16-bit
input until backward (ctx.tensors = (A, B); freed from 0.43.2). Bytes from the shapes."""

import dataclasses
import json
from pathlib import Path

from conftest import LITGPT_LORA

from gpuwork.estimate.memory import block_groups, estimate_memory, memory_dtypes
from gpuwork.estimate.memory_stacks import kept_4bit_inputs
from gpuwork.facts.model import build_spec
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan

# microsoft/phi-1_5 as published (the held-out LitGPT cases' model) and their LoRA recipe
PHI = json.loads((Path(__file__).resolve().parent / "data" / "models" / "phi-1_5.json").read_text())
LORA = LITGPT_LORA


def _stacks():
    return load_rates().stacks


def _kept(spec, plan, stack, lora_input=None) -> int:
    dt = memory_dtypes(plan, stack)
    lora_input = dt.adapter if lora_input is None else lora_input
    return kept_4bit_inputs(spec, plan, stack, block_groups(spec), (dt.stream, dt.linear_out), lora_input)


def test_only_the_rows_naming_an_old_bitsandbytes_keep_4bit_inputs():
    stacks = _stacks()
    # bitsandbytes 0.41.1; <= 0.43.1 ([M6]); early 2024 (fsdp_qlora's loop, [M8]); Dec 2023 - Jul 2024 (peft 0.7-0.11)
    old = (Stack.LITGPT_2023, Stack.HF_TRAINER_2023, Stack.HF_LOOP_2024, Stack.HF_TRAINER_2024)
    assert all(stacks[s].bnb_4bit_input == "kept" for s in old)
    others = [p for s, p in stacks.items() if s not in old]
    assert others and all(p.bnb_4bit_input == "freed" for p in others)


def test_bitsandbytes_0_41_keeps_each_4bit_input_once():
    plan = TrainPlan(model="llama-3.2-1b", stack="litgpt-2023", **{**LORA, "method": "qlora", "kbit_upcast": False})
    spec = resolve(plan).spec
    lit = _stacks()[Stack.LITGPT_2023]
    dt = memory_dtypes(plan, lit)
    h, inter = spec.hidden_size, spec.intermediate_size
    # attention input (q, k, v), MLP input (gate, up) and down's input; SDPA already saved o_proj's input
    per_block = dt.stream * h + dt.stream * h + dt.linear_out * inter
    assert _kept(spec, plan, lit) == per_block
    eager = dataclasses.replace(plan, attention="eager")
    q_dim = spec.num_heads * spec.head_dim
    assert _kept(spec, eager, lit) == per_block + dt.linear_out * q_dim
    # an undropped 16-bit adapter's lora_A saves q's and v's input itself: nothing more for that group
    no_drop = dataclasses.replace(plan, lora_dropout=0.0)
    assert _kept(spec, no_drop, lit, lora_input=dt.stream) == per_block - dt.stream * h
    # the peak: that many bytes per token in every block, next to the release that frees them
    freed = dataclasses.replace(lit, bnb_4bit_input="freed")
    assert _kept(spec, plan, freed) == 0
    tokens = plan.batch_size * plan.seq_len
    kept, not_kept = estimate_memory(plan, spec, lit), estimate_memory(plan, spec, freed)
    added = per_block * tokens * spec.num_layers
    assert kept.breakdown["activations"] - not_kept.breakdown["activations"] == added
    assert kept.phase_peaks["forward"] - not_kept.phase_peaks["forward"] == added
    lora = dataclasses.replace(plan, method="lora")
    assert _kept(spec, lora, lit) == 0  # no 4-bit linears


def test_phi_counts_its_one_norm_output_once():
    spec = build_spec(PHI, "phi-1_5")
    plan = TrainPlan(model="phi-1_5", stack="litgpt-2023", **{**LORA, "method": "qlora", "kbit_upcast": False})
    lit = _stacks()[Stack.LITGPT_2023]
    dt = memory_dtypes(plan, lit)
    # q, k, v, fc1 read one LayerNorm output (shared attention norm); fc2 reads the GELU output
    expected = dt.stream * spec.hidden_size + dt.linear_out * spec.intermediate_size
    assert _kept(spec, plan, lit) == expected
