"""QLoRA without autocast on peft's prepared model runs in fp32 outside its 4-bit GEMMs (estimate.ops.fp32_qlora,
docs/time_misses.md#qlora-without-autocast-runs-in-fp32): the step's op list against the plan, and against the dtypes
a real bitsandbytes + peft + transformers step dispatches on the CPU."""

from __future__ import annotations

import pytest

from gpuwork.estimate.ops import StackKernels, fp32_qlora, step_ops
from gpuwork.estimate.steptime import price_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack, TrainPlan

LLAMA_8B = "llama-3.1-8b"


def _plan(**changes) -> TrainPlan:
    base = dict(model=LLAMA_8B, method="qlora", precision="bf16", seq_len=2048, batch_size=1,
                lora_targets="all-linear", lora_r=8, lora_dropout=0.05, kbit_upcast=True)
    return TrainPlan(**{**base, **changes})


def _ops(plan: TrainPlan):
    return step_ops(plan, get_spec(plan.model))


def _one(ops, name: str):
    found = [o for o in ops if o.name == name and o.phase.value == "forward"]
    assert len(found) == 1, name
    return found[0]


def test_only_an_unmixed_upcast_qlora_plan_on_peft_adapters_is_fp32():
    assert fp32_qlora(_plan(), StackKernels())
    assert not fp32_qlora(_plan(precision="bf16-mixed"), StackKernels())  # autocast casts back to 16 bits
    assert not fp32_qlora(_plan(kbit_upcast=False), StackKernels())  # 16-bit norms: a 16-bit stream
    assert not fp32_qlora(_plan(method="lora"), StackKernels())
    assert not fp32_qlora(_plan(), StackKernels(adapters_fp32=False))  # a stack without peft's preparation


def test_fp32_model_runs_attention_head_and_activations_in_fp32_and_only_the_4bit_gemms_in_bf16():
    plan = _plan()
    spec = get_spec(plan.model)
    t, h, v, inter = plan.tokens_per_micro_batch, spec.hidden_size, spec.vocab_size, spec.intermediate_size
    ops = _ops(plan)
    attention = _one(ops, "attention (fused kernel)")
    assert attention.dtype == "fp32"
    head = _one(ops, "output layer")
    assert head.dtype == "fp32"
    assert head.bytes == 4 * (t * h + h * v + t * v)  # fp32 input, fp32 lm_head weight, fp32 logits
    q = _one(ops, "self_attn.q_proj")
    assert q.dtype == "bf16" and q.bytes == 2 * (t * h + h * h + t * h)  # bnb compute dtype
    # every 4-bit linear reads an fp32 input: o_proj and down_proj cast theirs too, and cast their output back
    for name, k, n in (("self_attn.o_proj", h, h), ("mlp.down_proj", inter, h)):
        assert _one(ops, f"{name} cast to compute dtype").bytes == t * k * (4 + 2)
        assert _one(ops, f"{name} cast back").bytes == t * n * (2 + 4)
    assert _one(ops, "MLP activation").bytes == t * inter * 2 * 4  # SiLU on the fp32 gate output
    # the LoRA branch meets an fp32 input with its fp32 weights: no cast around it
    assert not [o for o in ops if o.name.endswith("LoRA scale, add, cast") and o.launches == 3]


@pytest.mark.parametrize("changes", [{"precision": "bf16-mixed"}, {"kbit_upcast": False}])
def test_a_16bit_qlora_step_keeps_attention_and_head_in_16_bits(changes):
    ops = _ops(_plan(**changes))
    assert _one(ops, "attention (fused kernel)").dtype == "bf16"
    assert _one(ops, "output layer").dtype == "bf16"
    assert not [o for o in ops if o.name == "self_attn.o_proj cast to compute dtype"]


def test_flash_attention_gets_16bit_inputs_back_from_transformers():
    ops = _ops(_plan(attention="flash"))
    assert _one(ops, "attention (fused kernel)").dtype == "bf16"
    assert _one(ops, "output layer").dtype == "fp32"


def test_fp32_attention_is_priced_at_the_memory_efficient_kernels_fp32_rate():
    """The fp32 attention op and its backward go through at sdpa_mem_efficient_fraction x the fp32 peak
    (kernels.csv, gpus.csv): no flash kernel takes fp32."""
    rates, gpu = load_rates(), get_gpu("a100_80_sxm")
    plan = _plan()
    attention = [o for o in _ops(plan) if o.name.startswith("attention") and o.kind.value == "attention"]
    assert {o.dtype for o in attention} == {"fp32"} and len(attention) == 2  # the forward and its backward
    alone = price_ops(tuple(attention), gpu, rates.device("a100_80_sxm"), rates, rates.stacks[Stack.HF_TRAINER])
    rate = rates.kernel("sdpa_mem_efficient_fraction") * gpu.fp32_flops
    flops = sum(o.flops * o.count for o in attention)
    assert alone.by_kind["attention"] == pytest.approx(flops / rate, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(("precision", "upcast", "expected"), [
    ("bf16", True, "float32"), ("bf16", False, "bfloat16"), ("bf16-mixed", True, "bfloat16")])
def test_real_qlora_step_dispatches_the_dtypes_the_op_list_prices(tmp_path, precision, upcast, expected):
    """tiny Llama loaded NF4 (compute bf16), prepared with peft's prepare_model_for_kbit_training (or not), LoRA on
    every linear (conftest.tiny_qlora_model): the dtype of SDPA's query and of the logits' matmul in one forward."""
    import contextlib

    torch = pytest.importorskip("torch")
    pytest.importorskip("bitsandbytes")
    from conftest import dtype_recorder, sdpa_query, tiny_qlora_model

    from gpuwork.facts.model import load_config

    model = tiny_qlora_model(tmp_path, "tiny-llama", upcast=upcast)
    vocab = load_config("tiny-llama")[0]["vocab_size"]

    def head(name: str, args: tuple, out):  # the logits' matmul
        is_head = isinstance(out, torch.Tensor) and out.dim() >= 2 and out.shape[-1] == vocab
        return out if is_head and name.startswith(("aten.mm", "aten.addmm", "aten.bmm", "aten.matmul")) else None

    plan = _plan(model="tiny-llama", precision=precision, kbit_upcast=upcast, seq_len=64, lora_dropout=0.0)
    ops = step_ops(plan, get_spec("tiny-llama"))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if plan.precision.is_mixed else contextlib.nullcontext()
    seen = dtype_recorder(sdpa=sdpa_query, head=head)
    with seen, autocast:
        model(input_ids=torch.zeros((1, 64), dtype=torch.long))
    assert seen.seen == {"sdpa": {expected}, "head": {expected}}
    as_priced = {"float32": "fp32", "bfloat16": "bf16"}[expected]
    assert _one(ops, "attention (fused kernel)").dtype == as_priced
    assert _one(ops, "output layer").dtype == as_priced
