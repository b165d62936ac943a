"""Tests for the per-operation step model: gpuwork.estimate.ops (what runs) and gpuwork.estimate.steptime
(what it costs), and the scaling they give over 1 to 64 GPUs. Figures are worked by hand in the comments."""

from __future__ import annotations

import math

import pytest

from gpuwork.estimate.ops import Kind, MoeExperts, Phase, StackKernels, step_ops
from gpuwork.estimate.steptime import (
    gemm_seconds,
    host_us_per_kernel,
    memory_kernel_t0_us,
    price_ops,
    stack_kernels,
    wave_efficiency,
)
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack, TrainPlan
from gpuwork.sizing import estimate_time, flops_per_token

LLAMA_8B = "llama-3.1-8b"


def _ops(plan: TrainPlan, stack: StackKernels | None = None):
    return step_ops(plan, get_spec(plan.model), stack)


def _gemm_flops(ops) -> float:
    return sum(o.flops * o.count for o in ops if o.kind is Kind.MATMUL)


def test_a_projection_is_one_gemm_per_block_and_micro_batch():
    plan = TrainPlan(model=LLAMA_8B, method="lora", seq_len=2048, grad_accum=2)
    q = next(o for o in _ops(plan) if o.name == "self_attn.q_proj" and o.phase is Phase.FORWARD)
    # m = 2,048 tokens, n = k = 4,096: 2 x 2048 x 4096 x 4096 = 68.7 GFLOPs, 32 blocks x 2 micro-batches
    assert q.flops == 2 * 2048 * 4096 * 4096 == 68_719_476_736
    assert (q.m, q.n, q.count, q.launches) == (2048, 4096, 64, 1)
    # bf16: reads x (2 B) and W (2 B), writes y (2 B)
    assert q.bytes == 2 * 2048 * 4096 + 2 * 4096 * 4096 + 2 * 2048 * 4096


@pytest.mark.parametrize("method", ["full", "lora", "qlora", "scratch"])
def test_gemm_flops_match_the_flop_convention(method):
    """The GEMMs of the op list add up to flops_per_token less attention: 6N for a full update, 4N + 6 x
    adapters for LoRA/QLoRA (frozen base: input gradients only). N there also counts the norm weights
    (32 x 2 x 4096 + 4096 = 266,240 of 7.5 B: 0.004 %), which multiply element-wise, not in a GEMM."""
    plan = TrainPlan(model=LLAMA_8B, method=method, seq_len=1024, batch_size=2)
    f = flops_per_token(plan)
    tokens = plan.tokens_per_micro_batch
    assert _gemm_flops(_ops(plan)) == pytest.approx((f.total - f.attention) * tokens, rel=1e-4)


def test_checkpointing_adds_the_blocks_forward_again():
    plan = TrainPlan(model=LLAMA_8B, method="full", seq_len=1024)
    plain, ckpt = _ops(plan), _ops(plan.replace(grad_checkpointing=True))
    recompute = [o for o in ckpt if o.phase is Phase.RECOMPUTE]
    forward_blocks = [o for o in plain if o.phase is Phase.FORWARD and o.count == 32]
    assert sorted(o.name for o in recompute) == sorted(o.name for o in forward_blocks)
    f = flops_per_token(plan.replace(grad_checkpointing=True))
    assert _gemm_flops(ckpt) - _gemm_flops(plain) == pytest.approx((f.recompute - 4 * 32 * 32 * 128 * 1024) * 1024, rel=1e-4)


def test_frozen_weights_skip_their_gradient_and_qlora_dequantizes_three_times():
    lora = _ops(TrainPlan(model=LLAMA_8B, method="lora", seq_len=1024))
    down = next(o for o in lora if o.name == "mlp.down_proj backward")
    assert down.launches == 1  # input gradient only
    adapter = next(o for o in lora if o.name == "self_attn.q_proj LoRA A backward")
    assert adapter.launches == 2  # input and weight gradient
    qlora = _ops(TrainPlan(model=LLAMA_8B, method="qlora", seq_len=1024, grad_checkpointing=True))
    dequant = [o for o in qlora if o.name.startswith("mlp.down_proj dequantize")]
    # forward, recompute and the backward's input gradient each dequantize the 4-bit weight again
    assert sorted(o.phase.value for o in dequant) == ["backward", "forward", "recompute"]
    # double quantisation: 0.5 B packed + 2 B bf16 out + 4/64 B fp32 absmax per weight, and the absmax's own
    # dequantisation (1/64 B uint8 read, 4/64 B fp32 written, 4/16384 B of its scales) and offset add (8/64 B)
    assert dequant[0].bytes == pytest.approx(4096 * 14336 * (2.5 + (4 + 1 + 4 + 8) / 64 + 4 / 16384))
    assert dequant[0].launches == 3


def test_peft_adapters_run_in_fp32_and_the_stack_can_keep_them_16_bit():
    plan = TrainPlan(model=LLAMA_8B, method="lora", seq_len=1024)
    hf = next(o for o in _ops(plan) if o.name == "self_attn.q_proj LoRA A")
    tune = next(o for o in _ops(plan, StackKernels(adapters_fp32=False)) if o.name == "self_attn.q_proj LoRA A")
    assert (hf.dtype, tune.dtype) == ("fp32", "bf16")
    assert any("LoRA input cast" in o.name for o in _ops(plan))
    assert not any("LoRA input cast" in o.name for o in _ops(plan, StackKernels(adapters_fp32=False)))


def test_fused_stacks_launch_fewer_kernels_and_move_fewer_bytes():
    rates = load_rates()
    plan = TrainPlan(model=LLAMA_8B, method="lora", seq_len=2048)

    def totals(stack: Stack) -> tuple[int, float]:
        ops = _ops(plan, stack_kernels(rates.stacks[stack]))
        memory = [o for o in ops if o.kind is Kind.MEMORY]
        return sum(o.launches * o.count for o in ops), sum(o.bytes * o.count for o in memory)

    hf, liger, compiled = totals(Stack.HF_TRAINER), totals(Stack.HF_LIGER), totals(Stack.TORCH_COMPILE)
    assert liger[0] < hf[0] and liger[1] < hf[1]
    assert compiled[0] < liger[0] and compiled[1] < hf[1]
    # Liger's fused linear cross-entropy never stores the fp32 logits
    assert not any(o.name == "logits to fp32" for o in _ops(plan, stack_kernels(rates.stacks[Stack.HF_LIGER])))


def test_optimizer_kernels_follow_the_implementation():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=512)

    def update(impl: str):
        return next(o for o in _ops(plan.replace(optimizer_impl=impl)) if o.name == "AdamW update")

    fused, foreach, loop = update("fused"), update("foreach"), update("for-loop")
    assert fused.launches < foreach.launches < loop.launches
    assert fused.bytes < foreach.bytes  # one pass: read p, g, m, v and write p, m, v (7 tensors, not 18)
    assert fused.bytes == pytest.approx(7 / 18 * foreach.bytes)


def test_wave_quantisation_worked_example():
    # 2048 x 4096 output in 128 x 256 tiles: 256 tiles on 132 SMs = 2 waves of 132, 256 / 264 busy
    assert wave_efficiency(2048, 4096, 132, 128, 256) == pytest.approx(256 / 264)
    assert wave_efficiency(128, 256, 132, 128, 256) == pytest.approx(1 / 132)  # one tile: one SM of 132
    assert wave_efficiency(128 * 12, 256 * 11, 132, 128, 256) == 1.0


def test_each_operation_costs_its_roofline_or_its_dispatch():
    rates = load_rates()
    gpu, device = get_gpu("h100_sxm"), rates.device("h100_sxm")
    profile = rates.stacks[Stack.HF_TRAINER]
    plan = TrainPlan(model=LLAMA_8B, method="full", seq_len=4096)
    ops = _ops(plan)
    up = next(o for o in ops if o.name == "mlp.up_proj" and o.phase is Phase.FORWARD)
    # compute-bound: the GEMM model's time of 4096 x 14336 x 4096 (estimate.gemm), within a few percent of
    # its FLOPs at the bf16 rate held back to back (the sustained rate) x the 128 x 256 tile's wave efficiency
    assert price_ops((up,), gpu, device, rates, profile).total_s == pytest.approx(
        up.count * gemm_seconds(up, gpu, device, rates))
    waves = wave_efficiency(4096, 14336, device.sm_count, 128, 256)
    assert gemm_seconds(up, gpu, device, rates) == pytest.approx(up.flops / (device.gemm_flops["bf16"] * waves),
                                                                  rel=0.05)
    norm = next(o for o in ops if o.name == "norm (attention input)" and o.phase is Phase.FORWARD)
    # memory-bound: each kernel's fixed time (Hopper 4.94 us) plus its bytes at the measured bandwidth (well above
    # 8 kernels x 10 us of dispatch), the third of them in broadcast kernels at the die's strided share
    t0_s = memory_kernel_t0_us(gpu, rates)[0] * 1e-6
    share = rates.kernel("membw_strided_fraction_gh100")
    assert norm.strided_share == pytest.approx(12 / 36)
    assert price_ops((norm,), gpu, device, rates, profile).total_s == pytest.approx(
        norm.count * (norm.launches * t0_s + norm.bytes * (2 / 3 + 1 / 3 / share) / device.mem_bw_bytes_s))
    tiny = TrainPlan(model="tiny-llama", method="full", seq_len=32)
    priced = price_ops(_ops(tiny), gpu, device, rates, profile)
    # a tiny model is launch-bound: every kernel costs the host's dispatch for its phase (8-10 us), its GPU time
    # (mostly the 4.94 us fixed time of a memory-bound kernel) hides behind it
    assert priced.by_kind["launch overhead"] > 0.3 * priced.total_s
    host_s = sum(o.launches * o.count * host_us_per_kernel(o.phase, rates, profile, device) for o in _ops(tiny)) * 1e-6
    assert priced.total_s == pytest.approx(host_s, rel=0.05)


def test_the_same_plan_costs_the_same_per_gpu_compute_on_one_or_many_gpus():
    plan = TrainPlan(model=LLAMA_8B, method="full", seq_len=4096, gpus=8, sharding="fsdp")
    one = estimate_time(plan.single_gpu(), "h100_sxm")
    eight = estimate_time(plan, "h100_sxm")
    forward_backward = ("matmul", "attention", "memory", "launch overhead")
    # the optimizer step is sharded 8 ways; everything else per GPU is the same operations at the same rates
    assert {k: eight.breakdown[k] for k in ("matmul", "attention")} == \
        {k: one.breakdown[k] for k in ("matmul", "attention")}
    assert eight.optimizer_s < one.optimizer_s
    assert sum(eight.breakdown[k] for k in forward_backward) == pytest.approx(
        sum(one.breakdown[k] for k in forward_backward), rel=0.01)


SWEEP = [
    TrainPlan(model=LLAMA_8B, method="lora", seq_len=2048, gpus=2),
    TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048, batch_size=4, gpus=2),
    TrainPlan(model=LLAMA_8B, method="full", seq_len=4096, gpus=2, sharding="fsdp"),
    TrainPlan(model="llama-3.1-70b", method="qlora", seq_len=2048, gpus=2, sharding="fsdp"),
    TrainPlan(model="llama-3.2-3b", method="full", seq_len=1024, gpus=2, sharding="zero2", batch_size=2),
]


@pytest.mark.parametrize("gpu", ["h100_sxm", "a100_80_sxm", "rtx4090", "mi300x"])
@pytest.mark.parametrize("plan", SWEEP, ids=lambda p: f"{p.model}-{p.method.value}-{p.sharding.value}")
def test_no_superlinear_scaling_from_1_to_64_gpus(plan, gpu):
    """Per-GPU throughput of the forward/backward work never rises with more GPUs. Sharded plans
    (ZeRO/FSDP) also split the optimizer step n ways — a real saving (the ZeRO paper reports superlinear
    scaling from it) — so for them the rule holds with the optimizer step set aside."""
    previous = math.inf
    previous_total = math.inf
    for n in (1, 2, 4, 8, 16, 32, 64):
        p = plan.single_gpu() if n == 1 else plan.replace(gpus=n)
        nodes = max(1, n // 8)
        est = estimate_time(p, gpu, nodes=nodes, network="ib-ndr-400g" if nodes > 1 else None)
        tokens = p.tokens_per_micro_batch * p.grad_accum
        without_optimizer = tokens / (est.step_time_s - est.optimizer_s)
        assert without_optimizer <= previous * (1 + 1e-9), (n, without_optimizer, previous)
        previous = without_optimizer
        if not p.sharding.shards_params and p.sharding.value == "ddp":
            per_gpu = est.tokens_per_s / n
            assert per_gpu <= previous_total * (1 + 1e-9), (n, per_gpu, previous_total)
            previous_total = per_gpu


def test_a_gpu_without_measured_rates_gets_derived_ones_with_a_warning():
    from gpuwork.estimate.timing import derived_device
    from gpuwork.facts.catalog import load_gpus
    from gpuwork.measure.time_cases import V100_SXM2_16GB

    rates, gpus = load_rates(), load_gpus()
    est = estimate_time(TrainPlan(model="qwen2.5-0.5b", method="full", precision="fp16-mixed"), V100_SXM2_16GB)
    assert "time.derived_rates" in [w.code for w in est.warnings]
    device = derived_device(V100_SXM2_16GB, rates, gpus)
    # the median achieved/peak of the measured NVIDIA GPUs, applied to the V100's datasheet
    shares = sorted(rates.devices[g].matmul_flops["fp16"] / spec.fp16_dense_flops
                    for g, spec in gpus.items() if g in rates.devices and spec.vendor == "NVIDIA")
    assert device.matmul_flops["fp16"] == pytest.approx(125e12 * shares[len(shares) // 2])
    assert 0 < device.mem_bw_bytes_s < 900e9


def test_autocast_casts_each_fp32_input_per_linear_and_caches_weight_and_bias():
    """bert-large fp16-mixed: q, k, v and the MLP input linear each cast the fp32 norm output (autocast caches
    only leaf weights), each weight cast also casts its bias, and pure fp32 has no casts at all."""
    plan = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", precision="fp16-mixed", seq_len=512,
                     batch_size=1, attention="eager")
    spec = get_spec(plan.model)
    ops = _ops(plan)
    inputs = [o for o in ops if o.phase is Phase.FORWARD and "input cast (autocast)" in o.name
              and not o.name.startswith(("head ", "output layer"))]  # the blocks' linears (the MLM head: test_mlm_head)
    assert sorted(o.name.split(" input")[0] for o in inputs) == sorted(
        ["attention.self.query", "attention.self.key", "attention.self.value", "intermediate.dense"])
    assert all(o.count == spec.num_layers and o.bytes == 512 * 1024 * (4 + 2) for o in inputs)
    weight = next(o for o in ops if o.phase is Phase.FORWARD and o.name == "attention.self.query weight cast (autocast)")
    assert weight.launches == 2  # weight and bias
    assert not [o for o in _ops(plan.replace(precision="fp32")) if "autocast" in o.name]


def test_a_trained_bias_adds_one_reduction_kernel_to_the_backward():
    plan = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", precision="fp32", seq_len=512,
                     batch_size=1, attention="eager")
    every = [o for o in _ops(plan) if o.name.endswith("bias gradient")]
    sums = [o for o in every if not o.name.startswith(("head ", "output layer"))]  # the blocks' six linears
    assert len(sums) == 6 and all(o.kind is Kind.MEMORY and o.launches == 1 for o in sums)
    # the spec is BertForMaskedLM's: its head's transform and vocabulary biases add one reduction each
    assert sorted(o.name for o in every if o not in sums) == ["head transform bias gradient",
                                                              "output layer bias gradient"]
    query = next(o for o in sums if o.name.startswith("attention.self.query"))
    assert query.bytes == 512 * 1024 * 4 + 1024 * 4  # the fp32 output gradient read, the bias gradient written
    lora = plan.replace(method="lora", lora_targets=("query", "value"))
    assert not [o for o in _ops(lora) if o.name.endswith("bias gradient")]


def test_bert_eager_softmax_runs_in_fp32_under_autocast_only():
    """The additive mask has the parameters' dtype: fp32 under autocast, so scores are promoted and cast back."""
    base = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", seq_len=512, batch_size=1,
                     attention="eager")
    chain = {p: next(o for o in _ops(base.replace(precision=p)) if o.name == "attention softmax chain"
                     and o.phase is Phase.FORWARD) for p in ("fp16-mixed", "fp32")}
    # fp16-mixed: scale 2+2, mask add 2+4, softmax 4+4, dropout 4+4+1, cast 4+2; fp32: no cast
    assert chain["fp16-mixed"].launches == 5 and chain["fp16-mixed"].bytes == 16 * 512 * 512 * 33
    assert chain["fp32"].launches == 4 and chain["fp32"].bytes == 16 * 512 * 512 * (8 + 8 + 8 + 9)


_FUSING = [s for s in Stack if load_rates().stacks[s].fuse_elementwise]
_EAGER = [s for s in Stack if not load_rates().stacks[s].fuse_elementwise]


def _softmax_chain(ops, phase: Phase):
    return [o for o in ops if o.name.startswith("attention softmax chain") and o.phase is phase]


def test_the_fusing_stacks_are_the_compiled_and_framework_ones():
    # torch-loop-compile takes the torch-compile row's time columns (rates_sources.md [M7])
    assert set(_FUSING) == {Stack.TORCH_COMPILE, Stack.FRAMEWORK, Stack.TORCHTUNE, Stack.TORCH_LOOP_COMPILE}


@pytest.mark.parametrize("stack", _FUSING)
def test_a_fusing_stack_runs_the_eager_softmax_chain_as_one_kernel_each_way(stack):
    """Llama-style, bf16, no attention dropout: the fp32 softmax stays in registers, so the forward reads the
    2-byte scores and writes the 2-byte probabilities (4 B per element), the backward reads the probabilities and
    their gradient and writes the scores' gradient (6 B); transformers' chain moves 24 and 48 B in 4 + 4 kernels."""
    plan = TrainPlan(model="llama-3.2-1b", method="full", seq_len=512, batch_size=2, grad_accum=3, attention="eager")
    ops = _ops(plan, stack_kernels(load_rates().stacks[stack]))
    scores = 2 * 32 * 512 * 512  # batch x heads x seq x seq
    [fwd], [bwd] = _softmax_chain(ops, Phase.FORWARD), _softmax_chain(ops, Phase.BACKWARD)
    assert (fwd.launches, fwd.bytes, fwd.count) == (1, scores * 4, 16 * 3)
    assert (bwd.launches, bwd.bytes, bwd.count) == (1, scores * 6, 16 * 3)
    assert not [o for o in ops if o.name == "attention softmax chain"]


@pytest.mark.parametrize(("precision", "e"), [("fp16-mixed", 2), ("fp32", 4)])
def test_a_fused_chain_with_attention_dropout_adds_the_one_byte_mask_each_way(precision, e):
    """BERT-large (attention dropout 0.1): forward reads the scores, writes the dropped probabilities P·V reads and
    a 1-byte mask: 2e + 1; backward reads the scores (the softmax is recomputed from them and the saved row max and
    sum), the gradient and the mask and writes the scores' gradient: 3e + 1. fp32 softmax internals stay in
    registers under autocast, so fp16-mixed moves 16-bit tensors only."""
    plan = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", precision=precision, seq_len=512,
                     batch_size=1, attention="eager")
    ops = _ops(plan, stack_kernels(load_rates().stacks[Stack.FRAMEWORK]))
    [fwd], [bwd] = _softmax_chain(ops, Phase.FORWARD), _softmax_chain(ops, Phase.BACKWARD)
    assert (fwd.launches, fwd.bytes) == (1, 16 * 512 * 512 * (2 * e + 1))
    assert (bwd.launches, bwd.bytes) == (1, 16 * 512 * 512 * (3 * e + 1))


@pytest.mark.parametrize("stack", _EAGER)
def test_a_non_fusing_stack_keeps_transformers_softmax_chain(stack):
    """Llama-style bf16: scale 2+2, + mask 2+4 (fp32 out), softmax 4+4, cast 4+2: 24 B in 4 kernels forward,
    twice the bytes in as many kernels backward."""
    plan = TrainPlan(model="llama-3.2-1b", method="full", seq_len=512, batch_size=2, attention="eager")
    ops = _ops(plan, stack_kernels(load_rates().stacks[stack]))
    [fwd], [bwd] = _softmax_chain(ops, Phase.FORWARD), _softmax_chain(ops, Phase.BACKWARD)
    scores = 2 * 32 * 512 * 512
    assert (fwd.name, fwd.launches, fwd.bytes) == ("attention softmax chain", 4, scores * 24)
    assert (bwd.launches, bwd.bytes) == (4, scores * 48)


def test_for_loop_adamw_launches_seven_kernels_per_tensor():
    plan = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", precision="fp32", seq_len=512,
                     batch_size=4, attention="eager", optimizer_impl="for-loop")
    update = next(o for o in _ops(plan) if o.name == "AdamW update")
    foreach = next(o for o in _ops(plan.replace(optimizer_impl="foreach")) if o.name == "AdamW update")
    assert update.launches % 7 == 0 and update.bytes == foreach.bytes


MIXTRAL = "mixtral-8x7b"


def _experts(ops, phase=Phase.FORWARD):
    return [o for o in ops if o.phase is phase and (o.name.startswith("expert") or o.name.startswith("router"))]


def test_transformers_4_loops_over_nn_linear_experts_while_fused_tensors_run_one_gemm_per_matrix():
    # Mixtral-8x7B QLoRA, 4 x 4096 tokens: each of 8 experts gets 16384 x 2 / 8 = 4096 rows, 32 blocks
    plan = TrainPlan(model=MIXTRAL, method="qlora", seq_len=4096, batch_size=4)
    fused = _experts(_ops(plan))
    loop = _experts(_ops(plan, StackKernels(moe_experts=MoeExperts.LOOP)))
    assert {o.name for o in fused if o.kind is Kind.MATMUL} == {"expert gate_up_proj", "expert down_proj"}
    assert not any("dequantize" in o.name for o in fused)  # fused tensors are not nn.Linear: bnb skips them
    w1 = next(o for o in loop if o.name == "expert w1")
    assert (w1.m, w1.n, w1.count) == (4096, 14336, 256)
    assert w1.flops == 2 * 4096 * 14336 * 4096
    # the same GEMM FLOPs either way: w1 + w3 + w2 = gate_up + down
    assert sum(o.flops * o.count for o in loop if o.kind is Kind.MATMUL) == pytest.approx(
        sum(o.flops * o.count for o in fused if o.kind is Kind.MATMUL))
    # every expert linear is a bnb Linear4bit: dequantised (absmax dequant, offset add, 4-bit kernel: 3 kernels)
    # once per expert and block
    for name in ("expert w1", "expert w3", "expert w2"):
        dq = next(o for o in loop if o.name == f"{name} dequantize 4-bit")
        assert (dq.count, dq.launches) == (256, 3)
    # torch.where per expert waits for the GPU
    sync = next(o for o in loop if o.host_sync)
    assert (sync.count, sync.launches) == (256, 3)
    # kernels per expert on the fp32 stream of QLoRA: where 3, gather 1, w1 and w3 6 each (cast, dequantize x3,
    # GEMM, cast back), SiLU 1, product 1, w2 6, routing weights 2, index_add 1 = 27; per block the router 8 and
    # the output zeros + one-hot 2: 32 x (8 x 27 + 10) = 7,232 forward launches
    assert sum(o.launches * o.count for o in loop) == 32 * (8 * 27 + 10) == 7232
    assert sum(o.launches * o.count for o in fused) == 32 * (8 + 2 * 8 + 4 * 8)


def test_the_expert_loop_prices_its_host_waits_and_costs_more_than_fused_tensors():
    rates = load_rates()
    gpu, device = get_gpu("a100_80_sxm"), rates.device("a100_80_sxm")
    profile = rates.stacks[Stack.HF_TRAINER]
    plan = TrainPlan(model=MIXTRAL, method="lora", seq_len=4096, batch_size=2, grad_checkpointing=True,
                     attention="flash")
    loop_ops = _ops(plan, stack_kernels(profile, "loop"))
    sync = next(o for o in loop_ops if o.host_sync and o.phase is Phase.FORWARD)
    host_s = rates.kernel("launch_overhead_eager_us") * 1e-6
    t0_us, cold_us = memory_kernel_t0_us(gpu, rates)[0], memory_kernel_t0_us(gpu, rates, "cold")[0]
    assert (t0_us, cold_us) == (2.58, 8.33)  # A100: back to back, and a single launch into an idle GPU
    # its kernels back to back, and the kernel after the sync starts cold: 8.33 - 2.58 us more, once
    gpu_s = sync.bytes / device.mem_bw_bytes_s + (sync.launches * t0_us + cold_us - t0_us) * 1e-6
    # its own dispatch, its GPU time and the next kernel's dispatch, one after another
    assert price_ops((sync,), gpu, device, rates, profile).total_s == pytest.approx(
        sync.count * (gpu_s + sync.launches * host_s + host_s))
    fused_s = estimate_time(plan, gpu).step_time_s
    loop = estimate_time(plan, gpu, moe_experts="loop")
    # 3.58 s vs 3.43 s (GEMMs priced by shape in both layouts): the E-way gradient scatter and sum, syncs
    assert loop.step_time_s > 1.03 * fused_s
    assert loop.launches_per_step > 1.5 * estimate_time(plan, gpu).launches_per_step  # 17,698 vs 10,146
    # a dense model has no experts: the option changes nothing
    dense = plan.replace(model="mistral-7b")
    assert estimate_time(dense, gpu, moe_experts="loop").step_time_s == estimate_time(dense, gpu).step_time_s


def test_an_unknown_expert_layout_is_refused_with_the_choices():
    from gpuwork.errors import PlanError

    with pytest.raises(PlanError, match="moe_experts") as info:
        estimate_time(TrainPlan(model=MIXTRAL, method="lora"), "a100_80_sxm", moe_experts="grouped")
    assert info.value.field == "moe_experts" and info.value.msg["allowed"] == "fused, loop"


def _segments(*rows):
    """(phase, count, gpu_s, host_s, host_sync, serialised_s) rows as steptime._queued reads them."""
    from types import SimpleNamespace

    step = SimpleNamespace(rows=tuple((None,) * 5 + (sync,) for *_, sync, _ in rows),
                           phases=tuple(r[0] for r in rows), counts=tuple(r[1] for r in rows))
    gpu = tuple(r[2] for r in rows)
    host = tuple(r[3] for r in rows)
    one = tuple(r[5] if r[4] else max(r[2], r[3]) for r in rows)
    return step, gpu, one, host


def test_the_host_runs_ahead_of_the_gpu_within_and_across_phases():
    from gpuwork.estimate.steptime import _queued

    # forward: one long kernel (GPU 300, host 20) and ten short ones (GPU 1, host 20 each): per-op maxima would
    # charge 300 + 200; the host issues all eleven in 220 while the GPU works 310, so the forward takes 310
    step = _segments(("forward", 1, 300.0, 20.0, False, 0.0), ("forward", 10, 1.0, 20.0, False, 0.0),
                     # backward: host-bound (host 400, GPU 50); it starts with the host at 220 and the GPU at 310
                     ("backward", 1, 50.0, 400.0, False, 0.0))
    by_phase = _queued(*step)
    assert by_phase["forward"] == pytest.approx(310.0)
    assert by_phase["backward"] == pytest.approx(620.0 - 310.0)  # the GPU waits for the host's clock, 220 + 400
    assert sum(by_phase.values()) == pytest.approx(620.0)


def test_a_sync_drains_the_queue_and_recompute_shares_the_backward_segment():
    from gpuwork.estimate.steptime import _queued

    step = _segments(("forward", 1, 100.0, 10.0, False, 0.0),
                     ("forward", 1, 0.0, 0.0, True, 5.0),  # host_sync: serialised 5 after the GPU's 100
                     ("recompute", 1, 30.0, 60.0, False, 0.0), ("backward", 1, 90.0, 20.0, False, 0.0),
                     ("optimizer", 3, 1.0, 2.0, False, 0.0))
    by_phase = _queued(*step)
    assert by_phase["forward"] == pytest.approx(105.0)
    # recompute + backward from host = GPU = 105: host +80, GPU +120 -> 225; split 60 : 90 by each one's max(H, G)
    assert by_phase["recompute"] == pytest.approx(120.0 * 60 / 150)
    assert by_phase["backward"] == pytest.approx(120.0 * 90 / 150)
    # optimizer: host at 185 + 6 = 191 is behind the GPU at 225, which adds its 3
    assert by_phase["optimizer"] == pytest.approx(3.0)
