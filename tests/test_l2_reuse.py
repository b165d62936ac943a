"""Kernels whose inputs are still in L2 (estimate.l2_reuse; docs/kernels.md "Kernels whose inputs are still in L2";
data: gpuwork/facts/data/l2_measurements.csv, rates_sources.md [K21a], [K21b], [K12d]).

A per-tensor optimizer chain reads what the previous kernel wrote; those passes move at the GPU's measured L2 copy
rate when the kernel pair's tensors fit in a measured working set, and at the large-array bandwidth otherwise."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from gpuwork.estimate.adamw_passes import (
    FOR_LOOP_KERNELS,
    FOREACH_TENSORS_MOVED,
    OUT_OF_PLACE_KERNELS,
    OUT_OF_PLACE_TENSORS_MOVED,
)
from gpuwork.estimate.composite_ops import silu_cost, softmax_chain_cost
from gpuwork.estimate.l2_reuse import (
    FOR_LOOP_CHAIN,
    FOR_LOOP_L2,
    OUT_OF_PLACE_CHAIN,
    OUT_OF_PLACE_L2,
    ROTARY_BACKWARD,
    ROTARY_FORWARD,
    SILU_BACKWARD,
    SILU_FORWARD,
    SOFTMAX_BACKWARD,
    SOFTMAX_FORWARD,
    broadcast_bytes,
    chain_bytes,
    chain_l2,
    l2_rate,
    l2_saving_s,
    optimizer_l2_reads,
    rms_norm_chains,
    rms_norm_l2,
    rotary_l2,
    silu_l2,
    softmax_l2,
    weight_tensors,
)
from gpuwork.estimate.ops import Kind, Op, Phase, step_ops
from gpuwork.estimate.steptime import memory_kernel_t0_us, price_ops, stack_kernels
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.l2 import l2_copy_steps, load_l2_measurements
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack, TrainPlan

SOURCES = Path(__file__).resolve().parents[1] / "gpuwork" / "facts" / "data" / "rates_sources.md"
MIB = 1 << 20


@pytest.fixture(scope="module")
def rates():
    return load_rates()


def _passes(chain) -> int:
    return sum(len(reads) + len(writes) for reads, writes in chain)


def test_the_chains_are_the_counted_kernels_and_keep_16_of_35_and_9_of_18_passes_in_l2():
    assert (len(OUT_OF_PLACE_CHAIN), _passes(OUT_OF_PLACE_CHAIN)) == (OUT_OF_PLACE_KERNELS, OUT_OF_PLACE_TENSORS_MOVED)
    assert (len(FOR_LOOP_CHAIN), _passes(FOR_LOOP_CHAIN)) == (FOR_LOOP_KERNELS, FOREACH_TENSORS_MOVED)
    # counted by hand from the code (l2_reuse comments): (passes, tensors the kernel pair touches)
    assert OUT_OF_PLACE_L2 == ((3, 2), (5, 3), (8, 4))
    assert FOR_LOOP_L2 == ((4, 2), (5, 3))


def test_a_three_kernel_chain_by_hand():
    # t = f(a); u = g(t); a = h(u, a): t and u are read by the next kernel and freed, a is the kept input
    chain = ((("a",), ("t",)), (("t",), ("u",)), (("u", "a"), ("a",)))
    # t's write and read, u's write and read stay in L2 (pairs of 3 tensors); a's read and write go to DRAM
    assert chain_l2(chain, frozenset({"a"})) == ((4, 3),)
    # t = f(a); u = g(a); a = h(t, u): a's second read and u's write and read stay in L2; t, read two kernels after
    # it was written, is written to and read from DRAM
    assert chain_l2(((("a",), ("t",)), (("a",), ("u",)), (("t", "u"), ("a",))), frozenset({"a"})) == ((3, 3),)


def _op(tensor: float, l2: bool) -> Op:
    chain_bytes = 6 * tensor  # the three-kernel chain above: 6 passes, 4 of them in L2 with 3 tensors touched
    return Op("chain", Kind.MEMORY, Phase.FORWARD, 0.0, chain_bytes, 3, 1,
              l2_reads=((4 * tensor, 3 * tensor),) if l2 else ())


@pytest.mark.parametrize(("gpu_id", "tensor", "fits"), [("rtx4090", 1 * MIB, True), ("rtx4090", 32 * MIB, False),
                                                        ("h100_sxm", 8 * MIB, True), ("rtx3090", 1 * MIB, False)])
def test_a_chain_whose_tensors_fit_moves_at_the_measured_l2_rate_and_one_that_does_not_is_unchanged(
        rates, gpu_id, tensor, fits):
    gpu, device = get_gpu(gpu_id), rates.device(gpu_id)
    profile = rates.stacks[Stack.HF_TRAINER]
    bw = device.mem_bw_bytes_s
    t0_s = memory_kernel_t0_us(gpu, rates)[0] * 1e-6
    priced = price_ops((_op(tensor, True),), gpu, device, rates, profile).by_kind["memory"]
    plain = price_ops((_op(tensor, False),), gpu, device, rates, profile).by_kind["memory"]
    assert plain == pytest.approx(3 * t0_s + 6 * tensor / bw)
    if not fits:  # 96 MiB on the RTX 4090 is past its 64 MiB copy row (the 128 MiB row is below DRAM); the
        # RTX 3090 has no L2 row at all
        assert priced == pytest.approx(plain)
        return
    # RTX 4090, 3 MiB: the 4 MiB row (3,254 GB/s); H100 SXM, 24 MiB: the 32 MiB row (4,199 GB/s)
    rate = {"rtx4090": 3254.371352e9, "h100_sxm": 4199.223627e9}[gpu_id]
    assert priced == pytest.approx(3 * t0_s + 2 * tensor / bw + 4 * tensor / rate)
    assert priced < plain


def test_the_rate_is_the_row_of_the_smallest_working_set_that_holds_the_pair():
    steps = l2_copy_steps("rtx4090")
    assert l2_rate(4 * MIB, steps) == pytest.approx(3254.371352e9)
    assert l2_rate(4 * MIB + 1, steps) == pytest.approx(3645.014244e9)
    assert l2_rate(200 * MIB, steps) == 0.0
    assert l2_copy_steps("rtx3090") == ()


def test_the_measured_copy_rows_the_rule_prices_from_l2_are_reproduced_within_10_percent(rates):
    """Each [K21a] row is one kernel copying a buffer back and forth 64 times; the rule keeps 126 of its 128 passes
    in L2 (the first read and the last write stream from DRAM). Rows whose rate is not above the GPU's large-array
    bandwidth are outside the rule (the model prices them as before)."""
    pingpong = tuple(((("a",), ("b",)) if i % 2 == 0 else (("b",), ("a",))) for i in range(64))
    assert chain_l2(pingpong, frozenset()) == ((126, 2),)
    checked = {}
    for row in load_l2_measurements():
        if row.access != "copy" or row.source != "K21a":
            continue
        gpu, device = get_gpu(row.gpu_id), rates.device(row.gpu_id)
        if row.bytes_per_s <= device.mem_bw_bytes_s:
            continue
        buffer = row.footprint_bytes / 2
        op = Op("ping-pong", Kind.MEMORY, Phase.FORWARD, 0.0, 128 * buffer, 1, 1,
                l2_reads=((126 * buffer, 2 * buffer),))
        model = price_ops((op,), gpu, device, rates, rates.stacks[Stack.HF_TRAINER]).by_kind["memory"]
        measured = 128 * buffer / row.bytes_per_s
        checked[(row.gpu_id, row.footprint_bytes)] = round(model / measured - 1, 3)
    assert len(checked) == 7  # RTX 4090 4, 32, 64 MiB; H100 SXM and A100 PCIe 4, 32 MiB
    assert {k: e for k, e in checked.items() if abs(e) > 0.10} == {}


def test_every_row_names_a_source_in_rates_sources_and_copy_rows_a_catalog_gpu():
    text = SOURCES.read_text(encoding="utf-8")
    rows = load_l2_measurements()
    assert {r.source for r in rows} <= set(re.findall(r"\*\*\[(K[0-9a-z]+)\]\*\*", text))
    for row in rows:
        if row.access == "copy":
            get_gpu(row.gpu_id)


def test_only_per_tensor_loops_over_whole_weights_get_l2_passes():
    spec = get_spec("llama-2-7b")
    plan = TrainPlan(model="llama-2-7b", method="full", precision="fp32", optimizer_impl="out-of-place")
    reads = optimizer_l2_reads(spec, plan, plan.optimizer_impl, 4)
    weights = sum(elements * count for elements, count in weight_tensors(spec))
    assert sum(nbytes for nbytes, _ in reads) == pytest.approx(16 * 4 * weights)
    # the smallest working set: two q_proj-sized tensors (4,096 x 4,096 fp32, 64 MiB each)
    assert min(ws for _, ws in reads) == 2 * 4096 * 4096 * 4
    for other in (plan.replace(optimizer_impl="foreach"), plan.replace(optimizer_impl="fused"),
                  plan.replace(method="lora")):
        assert optimizer_l2_reads(spec, other, other.optimizer_impl, 4) == ()
    update = next(o for o in step_ops(plan, spec) if o.name == "AdamW update")
    assert update.l2_reads == reads


def test_a_tied_embedding_counts_once():
    spec = get_spec("qwen2.5-0.5b")
    assert spec.tie_embeddings
    assert sum(e * c for e, c in weight_tensors(spec)) <= spec.params_total


def test_the_cs336_small_staff_adamw_on_an_rtx_4090_is_priced_below_its_dram_time(rates):
    """Held-out 24's mawanli row (docs/time_misses.md): 35 passes over 128.6 M fp32 parameters are 19.7 ms at the
    912 GB/s copy rate; the source measured the optimizer at 10.0 ms. The rule moves the passes of the 9.4 MB MLP
    matrices and the 2.4 MB attention matrices to L2, not those of the 30.7 MB embeddings' four-tensor pairs."""
    plan = TrainPlan(model="gpt2", method="scratch", precision="fp32", optimizer_impl="out-of-place")
    spec = get_spec("gpt2")
    update = next(o for o in step_ops(plan, spec) if o.name == "AdamW update")
    gpu, device = get_gpu("rtx4090"), rates.device("rtx4090")
    with_l2 = price_ops((update,), gpu, device, rates, rates.stacks[Stack.HF_TRAINER]).by_kind["optimizer"]
    without = price_ops((replace(update, l2_reads=()),), gpu, device, rates,
                        rates.stacks[Stack.HF_TRAINER]).by_kind["optimizer"]
    assert with_l2 < without


@pytest.mark.parametrize(("scores_bytes", "autocast"), [(4, False), (2, False), (2, True)])
def test_the_softmax_and_silu_chains_are_the_priced_kernels(scores_bytes, autocast):
    """The kernel lists l2_reuse reads move the bytes composite_ops prices, forward and backward."""
    cost = softmax_chain_cost(scores_bytes, autocast)
    forward, backward = softmax_l2(scores_bytes, autocast, 1.0)
    assert sum(p for p, _ in forward) < cost.forward_bytes and sum(p for p, _ in backward) < cost.backward_bytes
    e, x = scores_bytes, 4 if autocast else scores_bytes
    width = {n: e for n in ("s", "a", "b", "c", "qb", "gqb", "gc", "n2", "z", "gb", "ga", "gs")}
    width |= {n: x for n in ("c32", "d", "q", "gq", "gd", "n1", "r1", "r2", "r3", "gc32")}
    width |= {"mask": 1, "rmax": 0, "rsum": 0, "gsum": 0, "gmax": 0}
    fwd, bwd = SOFTMAX_FORWARD, SOFTMAX_BACKWARD
    if not autocast:
        fwd = tuple(k for k in fwd if k[1] not in (("c32",), ("qb",)))
        bwd = tuple(k for k in bwd if k[1] not in (("gq",), ("gc",)))
    assert (chain_bytes(fwd, width), chain_bytes(bwd, width)) == (cost.forward_bytes, cost.backward_bytes)
    silu = silu_cost(2)
    w2 = dict.fromkeys(("x", "sg", "y", "g", "g1", "g2", "g3", "gx"), 2)
    assert (chain_bytes(SILU_FORWARD, w2), chain_bytes(SILU_BACKWARD, w2)) == (silu.forward_bytes, silu.backward_bytes)


def test_the_fp32_softmax_forward_by_hand():
    # scale s -> a, where(a, mask) -> b, max(b), b - max -> c, exp(c) -> d (saved), sum(d), d / sum -> q (saved):
    # a written and read by the next kernel (pair s, a, mask, b: 13 bytes an element): 8; b read by max (pair a,
    # mask, b, row max: 9): 4, and by the subtraction (pair b, c: 8): 4; c written and read by exp (pair b, c, d:
    # 12): 8; d read by the sum and by the division (pairs of d and row vectors: 8): 8. 32 of 49 bytes.
    forward, _ = softmax_l2(4, False, 1.0)
    assert forward == ((12.0, 8.0), (4.0, 9.0), (8.0, 12.0), (8.0, 13.0))
    # SiLU, bf16: sigmoid's x and s read again by the product (pair x, s, y): 4 of 10 bytes; backward: grad read
    # again by grad * x, grad * x's and sigmoid_backward's results written and read by the next kernel (pairs of 5
    # tensors): 10 of 24
    assert silu_l2(2, 1.0) == (((4.0, 6.0),), ((10.0, 10.0),))


def test_the_composite_ops_carry_their_l2_passes_both_ways():
    from test_composite_ops import COMPOSITE, CONFIG

    from gpuwork.measure.accuracy import case_spec

    plan = TrainPlan(model="tiny-cs336", method="scratch", precision="bf16-mixed", attention="eager",
                     stack="hf-trainer", seq_len=256, batch_size=4)
    ops = step_ops(plan, case_spec("tiny-cs336", {**CONFIG, **COMPOSITE}))
    chains = [o for o in ops if "(composite)" in o.name]
    assert {o.phase for o in chains} == {Phase.FORWARD, Phase.BACKWARD}
    assert chains and all(o.l2_reads for o in chains)
    assert all(sum(b for b, _ in o.l2_reads) < o.bytes for o in chains)


def test_the_h200_copy_rows_price_only_pairs_of_8_to_32_mib_from_l2(rates):
    """[K22l]: the H200 sweep's back-to-back copy_ rows, 4-128 MiB working sets. Only the 16 and 32 MiB rows beat the
    4.01 TB/s large-array copy; a pair of 8 MiB or less takes a row held down by the graph's gap between kernels, one
    of more than 32 MiB a row that spills the 60 MiB L2, and both keep the DRAM price (no saving)."""
    steps = l2_copy_steps("h200_sxm")
    assert [int(ws) // MIB for ws, _ in steps] == [4, 8, 16, 32, 64, 128]
    bw = rates.device("h200_sxm").mem_bw_bytes_s
    faster = [int(ws) // MIB for ws, rate in steps if rate > bw]
    assert faster == [16, 32]
    assert l2_rate(8 * MIB + 1, steps) == pytest.approx(4932.3e9)
    assert l2_rate(32 * MIB, steps) == pytest.approx(5714.5e9)
    for working_set in (2 * MIB, 8 * MIB, 32 * MIB + 1, 128 * MIB):
        assert l2_saving_s(((64 * MIB, working_set),), steps, bw) == 0.0
    saving = l2_saving_s(((64 * MIB, 16 * MIB),), steps, bw)
    assert saving == pytest.approx(64 * MIB / bw - 64 * MIB / 4932.3e9)
    assert all(r.l2_mb == 60 for r in load_l2_measurements() if r.source == "K22l")


# autograd's LlamaRMSNorm, counted by hand from torch's derivatives.yaml (the docstring of ops._norm_ops; the kernels
# torch records on the CPU, docs/kernels.md "Eager RMSNorm's broadcast kernels"), bytes an element and kernels:
# forward the two casts (6 + 6 in bf16), pow 8, mean 4, x * rsqrt 8, weight * x 4; backward the casts 12, the
# gradient through the weight 4, x * rsqrt's 8, the rsqrt's 16, mean's 4, pow's 28, the sum 12 and the weight's own
# gradient 8 when it trains. Broadcast kernels: x * rsqrt and weight * x; the gradient times the weight and the rsqrt,
# mean's division. fp32: no casts, every width 4.
RMS_NORM_BY_HAND = {  # (stream bytes, weight trains): forward bytes, kernels, broadcast bytes; the same backward
    (2, True): (36, 8, 12, 92, 16, 16), (2, False): (36, 8, 12, 84, 14, 16),
    (4, True): (28, 6, 16, 92, 14, 20), (4, False): (28, 6, 16, 76, 12, 20),
}


@pytest.mark.parametrize(("stream", "trains"), list(RMS_NORM_BY_HAND))
def test_the_rms_norm_chain_is_autograds_and_the_priced_op(stream, trains):
    """The kernel lists l2_reuse reads for transformers' LlamaRMSNorm move the bytes and launch the kernels of the
    hand count, with their broadcast share, forward and backward, the weight trained (full) or frozen (LoRA); the
    op ops._norm_ops prices (from these chains) carries them and their L2 passes."""
    forward_k, backward_k, width, _ = rms_norm_chains(stream, stream, trains)
    assert (chain_bytes(forward_k, width), len(forward_k), broadcast_bytes(forward_k, width),
            chain_bytes(backward_k, width), len(backward_k), broadcast_bytes(backward_k, width)) == \
        RMS_NORM_BY_HAND[(stream, trains)]
    plan = TrainPlan(model="tiny-llama", method="full" if trains else "lora", precision="bf16", seq_len=64,
                     batch_size=2, stack="hf-trainer")
    spec = get_spec("tiny-llama")
    elements = 2 * 64 * spec.hidden_size
    ops = step_ops(plan, spec)
    forward = next(o for o in ops if o.name == "norm (MLP input)")
    backward = next(o for o in ops if o.name == "norm (MLP input) backward")
    hand = RMS_NORM_BY_HAND[(2, trains)]
    assert (forward.bytes, forward.launches, backward.bytes, backward.launches) == pytest.approx(
        (hand[0] * elements, hand[1], hand[3] * elements, hand[4]))
    assert (forward.strided_share, backward.strided_share) == pytest.approx((hand[2] / hand[0], hand[5] / hand[3]))
    l2, l2_back = rms_norm_l2(2, 2, elements, trains)
    assert (forward.l2_reads, backward.l2_reads) == (l2, l2_back)
    assert sum(b for b, _ in l2) < forward.bytes and sum(b for b, _ in l2_back) < backward.bytes


def test_the_rms_norm_chain_by_hand():
    # bf16: pow reads the fp32 copy the cast just wrote (pair x, x32, sq: 10 bytes an element); the square is written
    # and read by the mean and freed (pairs of 10 and 8); x * rsqrt's fp32 product is written, read by the cast back
    # and freed (pairs of 10 and 8); the weight multiply reads the 16-bit copy just written (pair 8). The fp32 copy,
    # kept for backward and read again four kernels later, and the kept 16-bit copy go to DRAM: 22 of 36 bytes.
    forward, _ = rms_norm_l2(2, 2, 1.0, True)
    assert forward == ((10.0, 8.0), (12.0, 10.0))
    # fp32 (no casts): the square's write and read (pair x, sq, mean: 8) and the weight multiply's read of x * rsqrt
    # (pair x, y, out: 12): 12 of 28 bytes
    assert rms_norm_l2(4, 4, 1.0, True)[0] == ((8.0, 8.0), (4.0, 12.0))
    # a frozen weight drops the weight gradient's product and its reduction (4 bytes in L2 with them)
    assert sum(b for b, _ in rms_norm_l2(2, 2, 1.0, True)[1]) - sum(b for b, _ in rms_norm_l2(2, 2, 1.0, False)[1]) == 4


def test_the_rotary_chain_is_the_priced_kernels_and_by_hand():
    """transformers' apply_rotary_pos_emb: 5 kernels a tensor forward, 7 backward (ops._attention_forward prices
    10 and 14 for q and k); the chain moves 10 widths forward (the op prices 11: the cos and sin rows it reads) and
    14 backward. Forward in L2: the neg's read of q's second half (q * cos read it), the neg's, cat's and rh * sin's
    outputs each written and read by the next kernel and freed: 5.5 of 10 widths; backward 6 of 14."""
    width = {n: 0.5 for n in ("q1", "q2", "n", "grh1", "grh2", "gn")} | {"cos": 0.0, "sin": 0.0}
    assert (len(ROTARY_FORWARD), len(ROTARY_BACKWARD)) == (5, 7)
    assert (chain_bytes(ROTARY_FORWARD, width), chain_bytes(ROTARY_BACKWARD, width)) == (10.0, 14.0)
    forward, backward = rotary_l2(1, 1.0)
    assert sum(b for b, _ in forward) == 5.5 and sum(b for b, _ in backward) == 6.0
    plan = TrainPlan(model="tiny-llama", method="full", precision="bf16", seq_len=64, batch_size=2,
                     stack="hf-trainer")
    spec = get_spec("tiny-llama")
    op = next(o for o in step_ops(plan, spec) if o.name == "rotary (q, k)")
    q, k = 2 * 64 * spec.num_heads * spec.head_dim, 2 * 64 * spec.num_kv_heads * spec.head_dim
    assert op.l2_reads == rotary_l2(2, q, k)[0]
    assert sum(b for b, _ in op.l2_reads) == pytest.approx(5.5 * 2 * (q + k))


def test_a_fusing_stack_s_norm_and_rotary_carry_no_l2_passes(rates):
    plan = TrainPlan(model="tiny-llama", method="full", precision="bf16", seq_len=64, batch_size=2,
                     stack="hf-liger")
    eager = step_ops(plan, get_spec("tiny-llama"), stack_kernels(rates.stacks[Stack.HF_TRAINER]))
    fused = step_ops(plan, get_spec("tiny-llama"), stack_kernels(rates.stacks[Stack.HF_LIGER]))
    names = {o.name for o in eager if o.l2_reads}
    assert {"norm (MLP input)", "rotary (q, k)", "norm (MLP input) backward", "rotary (q, k) backward"} <= names
    assert not [o.name for o in fused if o.l2_reads and ("norm" in o.name or "rotary" in o.name)]


def test_tinyllama_s_norms_and_rotary_on_an_rtx_4090_are_priced_from_l2_where_the_pairs_fit(rates):
    """TinyLlama (hidden 2,048) at 8 x 256 tokens: the stream is 8 MiB in bf16 and the norm's pairs 32-42 MB, inside
    the RTX 4090's 64 MiB copy row (2,318 GB/s against 912 from DRAM); at 24 x 256 they are 126 MB, past every row
    above DRAM, and the norms keep the DRAM price (rotary's smallest pairs, 2.5 q-sized tensors of 25 MB, still fit).
    The RTX 3090 has no copy row: unchanged."""
    spec = get_spec("tinyllama-1.1b")
    profile = rates.stacks[Stack.HF_TRAINER]

    def memory_s(gpu_id: str, batch: int, l2: bool, kind: str = "") -> float:
        plan = TrainPlan(model="tinyllama-1.1b", method="full", precision="bf16", seq_len=256, batch_size=batch,
                         stack="hf-trainer")
        ops = tuple(o if l2 else replace(o, l2_reads=()) for o in step_ops(plan, spec)
                    if ("norm" in o.name or "rotary" in o.name) and kind in o.name)
        return price_ops(ops, get_gpu(gpu_id), rates.device(gpu_id), rates, profile).by_kind["memory"]

    assert memory_s("rtx4090", 8, True) < 0.85 * memory_s("rtx4090", 8, False)
    assert memory_s("rtx4090", 24, True, "norm") == pytest.approx(memory_s("rtx4090", 24, False, "norm"))
    assert memory_s("rtx3090", 8, True) == pytest.approx(memory_s("rtx3090", 8, False))
