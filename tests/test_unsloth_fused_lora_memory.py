"""Unsloth's fused LoRA autograd functions save less than peft's adapters (stacks.csv fused_lora).

LoRA_QKV saves its input X once for q, k and v; LoRA_W (o_proj) saves its input; LoRA_MLP saves X, gate and up and
recomputes act(gate) * up in backward; none saves X @ A (unsloth/kernels/fast_lora.py, docs/memory_misses.md
"Unsloth's fused LoRA functions"). Unsloth patches a group only when every linear of it carries an adapter and
lora_dropout is 0.
"""

import dataclasses

from gpuwork.estimate.memory import estimate_memory
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan

SEVEN = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _plan(**kw) -> TrainPlan:
    fields = {"model": "llama-3.2-1b", "method": "lora", "precision": "bf16", "seq_len": 1024, "batch_size": 2,
              "stack": "unsloth", "lora_targets": SEVEN, "lora_dropout": 0.0, "grad_checkpointing": False, **kw}
    return TrainPlan(**fields)


def _activations(plan: TrainPlan, fused_lora: bool = True) -> int:
    spec = resolve(plan).spec
    profile = dataclasses.replace(load_rates().stacks[Stack.UNSLOTH], fused_lora=fused_lora)
    est = estimate_memory(plan, spec, profile)
    assert est.peak_phase in ("forward", "loss backward", "block backward")  # every block's tensors still held
    return est.breakdown["activations"]


def test_a_fused_block_saves_its_inputs_gate_and_up_only():
    plan = _plan()
    spec = resolve(plan).spec
    h, inter, a, kv, d = spec.hidden_size, spec.intermediate_size, spec.num_heads, spec.num_kv_heads, spec.head_dim
    assert (h, inter, a, kv, d) == (2048, 8192, 32, 8, 64)
    tokens = plan.batch_size * plan.seq_len
    norms = 2 * (2 * h + 4)  # Fast_RMS_Layernorm: the 16-bit input and one fp32 r per row, twice
    qkv_input = 2 * h  # LoRA_QKV: X once
    attention = 2 * (a * d + 2 * kv * d) + 2 * a * d + 4 * a  # SDPA: q, k, v, output (o_proj's X), fp32 lse
    mlp = 2 * h + 2 * 2 * inter  # LoRA_MLP: X, e (gate) and g (up)
    per_block = norms + qkv_input + attention + mlp
    shared = (2 * d * 2 + 24) * tokens  # rotary cos/sin (16-bit) and int64 ids/labels
    assert _activations(plan) == spec.num_layers * per_block * tokens + shared


def test_peft_adapters_save_more_than_the_fused_functions():
    plan = _plan()
    fused, unfused = _activations(plan), _activations(plan, fused_lora=False)
    spec = resolve(plan).spec
    tokens = plan.batch_size * plan.seq_len
    # peft: lora_A of each of the 7 adapters saves an fp32 copy of its input and lora_B its r-wide output, and the
    # down projection's input act(gate) * up is saved
    assert unfused - fused >= spec.num_layers * tokens * 2 * spec.intermediate_size


def test_unsloth_patches_a_group_only_when_all_its_linears_have_adapters_and_no_dropout():
    unfused = _activations(_plan(), fused_lora=False)
    assert _activations(_plan(lora_dropout=0.05)) == _activations(_plan(lora_dropout=0.05), fused_lora=False)
    qv = _plan(lora_targets=("q_proj", "v_proj"))
    assert _activations(qv) == _activations(qv, fused_lora=False)  # k has no adapter: q, k, v stay peft's
    attention_only = _plan(lora_targets=("q_proj", "k_proj", "v_proj", "o_proj"))
    assert _activations(attention_only) < _activations(attention_only, fused_lora=False)
    mlp_only = _plan(lora_targets=("gate_proj", "up_proj", "down_proj"))
    assert _activations(mlp_only) < _activations(mlp_only, fused_lora=False)
    assert _activations(_plan()) < unfused


def test_checkpointed_plans_recompute_one_fused_block():
    plan = _plan(grad_checkpointing=True)
    spec = resolve(plan).spec
    stack = load_rates().stacks[Stack.UNSLOTH]
    fused = estimate_memory(plan, spec, stack)
    unfused = estimate_memory(plan, spec, dataclasses.replace(stack, fused_lora=False))
    assert fused.phase_peaks["block backward"] < unfused.phase_peaks["block backward"]
    assert fused.phase_peaks["forward"] == unfused.phase_peaks["forward"]  # only block inputs are kept
    assert not load_rates().stacks[Stack.HF_TRAINER].fused_lora  # peft's adapters: the eager accounting
