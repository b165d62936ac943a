"""Stacks torch-loop and torch-loop-compile (rates_sources.md [M7]): a plain PyTorch loop calls F.cross_entropy on the
logits' own dtype, so a pure 16-bit model keeps 16-bit log_softmax output and backward buffers where transformers'
ForCausalLMLoss upcasts them to fp32; under autocast both are fp32. Bytes from the shapes."""

import dataclasses

import pytest

from gpuwork.estimate.eval_memory import eval_forward
from gpuwork.estimate.memory import _activations, memory_dtypes
from gpuwork.estimate.ops import StackKernels, step_ops
from gpuwork.estimate.steptime import stack_kernels
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.measure.heldout import RereadError, heldout_sets, parse_sets
from gpuwork.plan import Stack, TrainPlan
from gpuwork.sizing import estimate_memory

GPT2 = dict(model="gpt2", method="scratch", seq_len=1024, batch_size=8, attention="eager", optimizer="adamw",
            optimizer_impl="fused", eval_fraction=0.0)
_TIME_COLUMNS = ("fused_norm", "fused_rope", "fused_mlp_activation", "fused_cross_entropy", "fused_lora",
                 "fuse_elementwise", "adapters_fp32", "launch", "moe_experts", "model_16bit", "torch_gelu")


def _stacks():
    return load_rates().stacks


def test_the_loop_rows_price_time_as_the_rows_they_match_and_the_loss_in_the_logits_dtype():
    stacks = _stacks()
    for loop, like in ((Stack.TORCH_LOOP, Stack.HF_TRAINER), (Stack.TORCH_LOOP_COMPILE, Stack.TORCH_COMPILE)):
        assert stacks[loop].loss_kernel == "native" and not stacks[loop].sdpa_padding_mask
        assert all(getattr(stacks[loop], c) == getattr(stacks[like], c) for c in _TIME_COLUMNS)
        assert stack_kernels(stacks[loop]).loss_logits_dtype
    assert all(p.loss_kernel != "native" for s, p in stacks.items() if s not in (Stack.TORCH_LOOP,
                                                                                   Stack.TORCH_LOOP_COMPILE))


def test_pure_bf16_loss_keeps_the_logits_dtype():
    plan = TrainPlan(precision="bf16", stack="torch-loop", **GPT2)
    spec = resolve(plan).spec
    hf, loop = _stacks()[Stack.HF_TRAINER], _stacks()[Stack.TORCH_LOOP]
    dt = memory_dtypes(plan, loop)
    eager, native = _activations(spec, plan, dt, hf), _activations(spec, plan, dt, loop)
    v = spec.vocab_size
    # log_softmax saves its output: fp32 (4 B) after the upcast, bf16 (2 B) on the loop; two backward buffers each
    assert (eager.head_logsoftmax, native.head_logsoftmax) == (4 * v, 2 * v)
    assert (eager.loss_backward, native.loss_backward) == (2 * 4 * v, 2 * 2 * v)
    assert eager.head - native.head == 2 * v and (eager.loss_bytes, native.loss_bytes) == (4, 2)
    tokens = plan.batch_size * plan.seq_len
    a = estimate_memory(dataclasses.replace(plan, stack=Stack.HF_TRAINER)).breakdown["logits_and_loss"]
    b = estimate_memory(plan).breakdown["logits_and_loss"]
    assert a - b == 3 * 2 * v * tokens  # the loss-backward peak: saved output + two buffers, 2 B less each


@pytest.mark.parametrize("precision", ["bf16-mixed", "fp32"])
def test_under_autocast_or_in_fp32_the_loop_prices_as_hf_trainer(precision):
    plan = TrainPlan(precision=precision, stack="torch-loop", **GPT2)
    hf = estimate_memory(dataclasses.replace(plan, stack=Stack.HF_TRAINER))
    loop = estimate_memory(plan)
    assert loop.breakdown["logits_and_loss"] == hf.breakdown["logits_and_loss"]
    assert loop.peak_allocated_bytes == hf.peak_allocated_bytes


def test_the_evaluation_head_has_no_upcast_on_the_loop():
    plan = TrainPlan(precision="bf16", stack="torch-loop", eval_batch_size=8, eval_samples=16, **GPT2)
    spec = resolve(plan).spec
    v = spec.vocab_size
    upcast = eval_forward(spec, plan, 2, 2, 2)
    native = eval_forward(spec, plan, 2, 2, 2, loss_bytes=2)
    assert upcast.head == (2 * spec.hidden_size, 2 * v, 4 * v, 4 * v)
    assert native.head == (2 * spec.hidden_size, 2 * v, 2 * v)
    hf = estimate_memory(dataclasses.replace(plan, stack=Stack.HF_TRAINER))
    loop = estimate_memory(plan)
    assert loop.phase_peaks["evaluation"] < hf.phase_peaks["evaluation"]
    assert "eval_segments" not in loop.breakdown


def test_the_loop_loss_moves_half_the_bytes_and_drops_the_casts():
    plan = TrainPlan(precision="bf16", stack="torch-loop", **GPT2)
    spec = resolve(plan).spec
    hf = {op.name: op for op in step_ops(plan, spec, StackKernels())}
    loop = {op.name: op for op in step_ops(plan, spec, StackKernels(loss_logits_dtype=True))}
    assert "logits to fp32" in hf and "logits to fp32" not in loop and "logits gradient cast" not in loop
    for name in ("log_softmax + nll", "loss backward (nll, log_softmax)"):
        assert loop[name].bytes * 2 == hf[name].bytes
    mixed = dataclasses.replace(plan, precision="bf16-mixed")
    assert step_ops(mixed, spec, StackKernels(loss_logits_dtype=True)) == step_ops(mixed, spec, StackKernels())


def test_a_model_config_reread_applies_to_the_case_and_names_the_key():
    case = next(c for s in heldout_sets(kind="memory") for c in s.cases
                if "step7 SDPA flash" in c.name and "LLMs-from-scratch" in c.name)
    assert case.reread is not None
    again = case.as_reread()
    assert again.model_config["activation_function"] == "gelu_pytorch_tanh"
    assert case.model_config["activation_function"] == "gelu_new"
    assert again.plan.stack is Stack.TORCH_LOOP
    assert ("model_config.activation_function", "gelu_new", "gelu_pytorch_tanh") in case.reread.changed
    assert {k: v for k, v in again.model_config.items() if k != "activation_function"} == {
        k: v for k, v in case.model_config.items() if k != "activation_function"}


@pytest.mark.parametrize("value", [{"activation_function": "gelu"}, [], {}])
def test_a_model_config_reread_needs_an_object_and_a_case_config(value):
    raw = {"name": "b", "source_id": "src", "source": "https://example.org/t", "gpu_id": "a100_80_sxm",
           "plan": {"model": "llama-3.2-1b", "method": "lora", "seq_len": 512, "batch_size": 2},
           "metric": "reserved", "predicted_bytes": 1.0,
           "reread": {"model_config": value, "why": "w", "evidence": [{"url": "https://example.org", "quote": "q"}]}}
    with pytest.raises(RereadError) as caught:
        parse_sets({"sets": [{"name": "s", "frozen_commit": "0" * 40, "cases": [raw]}]}, "memory")
    assert caught.value.field == "model_config"
    for lang in ("en", "ru"):
        assert "model_config" in caught.value.text(lang)
