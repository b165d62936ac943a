"""Stack litgpt-2023 (rates_sources.md [M5]): its MLP's GELU is torch's one F.gelu kernel whatever the Hugging Face
config names (phi-1.5: gelu_new). Bytes from the shapes."""

import dataclasses
import functools
import json
from pathlib import Path

from conftest import LITGPT_LORA

from gpuwork.estimate.memory import _activations, memory_dtypes
from gpuwork.estimate.ops import StackKernels, step_ops
from gpuwork.facts.model import build_spec
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan

# microsoft/phi-1_5 as published (the held-out LitGPT cases' model) and their LoRA recipe
PHI = json.loads((Path(__file__).resolve().parent / "data" / "models" / "phi-1_5.json").read_text())
LORA = LITGPT_LORA


@functools.cache
def _phi():
    return build_spec(PHI, "phi-1_5")


def _stacks():
    return load_rates().stacks


def test_litgpt_and_the_compiled_rows_run_torch_gelu():
    stacks = _stacks()
    lit = stacks[Stack.LITGPT_2023]
    assert lit.torch_gelu
    # and the compiled stacks, whose partitioner keeps a GELU chain's input only (rates_sources.md [M9])
    compiled = (Stack.TORCH_COMPILE, Stack.TORCH_LOOP_COMPILE)
    assert all(stacks[s].torch_gelu for s in compiled)
    others = [p for s, p in stacks.items() if s is not Stack.LITGPT_2023 and s not in compiled]
    assert others and all(not p.torch_gelu for p in others)


def test_gelu_new_saves_its_input_once_under_litgpt():
    spec = _phi()
    assert spec.activation == "gelu_new" and not spec.mlp_gated
    plan = TrainPlan(model="phi-1_5", stack="litgpt-2023", **LORA)
    lit = _stacks()[Stack.LITGPT_2023]
    dt = memory_dtypes(plan, lit)
    composite = _activations(spec, plan, dt, dataclasses.replace(lit, torch_gelu=False))
    one_kernel = _activations(spec, plan, dt, lit)
    # NewGELUActivation saves four intermediate-sized tensors, F.gelu(approximate="tanh") only its input
    assert composite.per_layer_frozen - one_kernel.per_layer_frozen == 3 * dt.linear_out * spec.intermediate_size
    assert composite.per_layer_trained - one_kernel.per_layer_trained == 3 * dt.linear_out * spec.intermediate_size


def test_torch_gelu_prices_one_kernel_and_leaves_gated_mlps_alone():
    spec = _phi()
    plan = TrainPlan(model="phi-1_5", stack="litgpt-2023", **LORA)
    hf = [op.name for op in step_ops(plan, spec, StackKernels())]
    lit = [op.name for op in step_ops(plan, spec, StackKernels(torch_gelu=True))]
    assert "MLP activation (GELU, composite)" in hf and "MLP activation (GELU, composite)" not in lit
    assert "MLP activation" in lit
    llama = TrainPlan(model="llama-3.2-1b", stack="litgpt-2023", **{**LORA, "lora_targets": ["q_proj", "v_proj"]})
    lspec = resolve(llama).spec
    assert step_ops(llama, lspec, StackKernels(torch_gelu=True)) == step_ops(llama, lspec, StackKernels())
