"""Tests for gpuwork.estimate.timing: FLOPs per token, peaks and MFU, step time, communication, data feed,
total time, and the accuracy table against published throughputs. Numbers are worked by hand in
the comments (the FLOP convention is the module docstring's: 2/2/2 per weight, torchtitan attention)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpuwork.errors import CatalogError, PlanError
from gpuwork.estimate.timing import (
    DISK_WRITE_BYTES_S,
    LOADER_WORKER_TOKENS_S,
    TIME_MARGIN,
    matmul_params,
    peak_flops,
)
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import count_params, get_spec
from gpuwork.facts.network import load_comm_facts
from gpuwork.facts.rates import load_rates
from gpuwork.measure.accuracy import (
    PHYSICAL_LIMIT,
    time_accuracy_markdown,
    time_accuracy_page,
    time_accuracy_rows,
    time_accuracy_summary,
)
from gpuwork.measure.time_cases import TIME_CASES
from gpuwork.message import msg
from gpuwork.plan import Precision, TrainPlan
from gpuwork.sizing import checkpoint_bytes, estimate_time, flops_per_token

DOCS = Path(__file__).resolve().parent.parent / "docs"

# Llama-3.1-8B (data/model_specs.json): 8,030,261,248 params; token embedding 128,256 x 4096 =
# 525,336,576; untied lm_head of the same size; 32 layers x 32 heads x 128 head dim.
N_8B = 8_030_261_248 - 525_336_576  # = 7,504,924,672 weights that multiply activations
ATTN_8B_2048 = 12 * 32 * 32 * 128 * 2048  # = 3,221,225,472 (torchtitan 12·L·H·Q·T)
ADAPTER_8B_R16_QV = 32 * 16 * ((4096 + 4096) + (4096 + 1024))  # q: 4096->4096, v: 4096->1024 (GQA) = 6,815,744


def test_matmul_params_excludes_embeddings_and_counts_tied_heads():
    assert matmul_params(get_spec("llama-3.1-8b")) == N_8B == 7_504_924_672
    # Qwen2.5-0.5B ties lm_head to the embedding: the table is a lookup, the head is a matmul -> N = total
    qwen = get_spec("qwen2.5-0.5b")
    assert qwen.tie_embeddings
    assert matmul_params(qwen) == qwen.params_total - qwen.params_embedding + qwen.vocab_size * qwen.hidden_size
    # Mixtral: only the 2 routed experts of 8 count (active params 12,879,925,248; embeddings 131,072,000)
    assert matmul_params(get_spec("mixtral-8x7b")) == 12_879_925_248 - 131_072_000


def test_flops_full_update_worked_example():
    f = flops_per_token(TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048))
    assert f.weights == N_8B
    assert f.forward == f.backward_input == f.backward_weight == 2 * N_8B
    assert f.attention == ATTN_8B_2048
    # 6N + attention = 45,029,548,032 + 3,221,225,472 = 48,250,773,504
    assert f.total == f.model == 6 * N_8B + ATTN_8B_2048 == 48_250_773_504
    assert f.recompute == 0


def test_flops_lora_is_4n_plus_adapters():
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    assert count_params(get_spec("llama-3.1-8b"), plan).adapter == ADAPTER_8B_R16_QV == 6_815_744
    f = flops_per_token(plan)
    # forward 2(N+a) + input grads 2(N+a) + adapter weight grads 2a + attention
    # = 2*7,511,740,416*2 + 13,631,488 + 3,221,225,472 = 33,281,818,624
    assert f.backward_weight == 2 * ADAPTER_8B_R16_QV
    assert f.total == 4 * (N_8B + ADAPTER_8B_R16_QV) + 2 * ADAPTER_8B_R16_QV + ATTN_8B_2048 == 33_281_818_624
    # ≈ 4N: the NeMo convention (docs/sources.md#s-flops-lora), well below 6N
    assert f.total / (6 * N_8B + ATTN_8B_2048) == pytest.approx(0.69, abs=0.01)
    # QLoRA counts the same FLOPs; its slowness is in the MFU
    assert flops_per_token(plan.replace(method="qlora")).total == f.total


def test_flops_gradient_checkpointing_recomputes_the_blocks():
    plan = TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048, grad_checkpointing=True)
    f = flops_per_token(plan)
    blocks = N_8B - 525_336_576  # lm_head is not inside a checkpointed block: 6,979,588,096
    # +2 x blocks + attention forward 4·L·H·Q·T = 13,959,176,192 + 1,073,741,824
    assert f.recompute == 2 * blocks + 4 * 32 * 32 * 128 * 2048 == 15_032_918_016
    assert f.total == 48_250_773_504 + 15_032_918_016
    assert f.model == 48_250_773_504  # model FLOPs (for MFU) leave recompute out
    assert "recompute" in f.convention


def test_flops_freeze_stops_backward_below_the_trained_blocks():
    plan = TrainPlan(model="llama-3.1-8b", method="freeze", trainable_layers=2, seq_len=2048)
    spec = get_spec("llama-3.1-8b")
    trainable = count_params(spec, plan).trainable
    f = flops_per_token(plan)
    head = 525_336_576
    path = head + (N_8B - head) * 2 // 32  # lm_head + 2 of 32 blocks = 525,336,576 + 436,224,256
    assert f.forward == 2 * N_8B
    assert f.backward_input == 2 * path
    assert f.backward_weight == 2 * trainable
    # attention: forward in all 32 layers (4·L·H·Q·T), backward (8·H·Q·T) only in the 2 trained ones
    assert f.attention == 4 * 32 * 32 * 128 * 2048 + 8 * 2 * 32 * 128 * 2048
    assert f.total < flops_per_token(plan.replace(method="full")).total


def test_peaks_follow_the_compute_dtype():
    h100 = get_gpu("h100_sxm")
    assert peak_flops(h100, Precision.BF16_MIXED) == (989e12, "BF16 tensor, dense, FP32 accumulate")
    assert peak_flops(get_gpu("rtx4090"), Precision.FP16)[0] == 165.2e12  # FP32-accumulate rate
    value, label = peak_flops(h100, Precision.FP32)
    assert value == 67e12 and "TF32 off" in label  # non-tensor FP32: PyTorch's default for fp32 matmuls


def test_step_time_worked_example():
    """Llama-3.1-8B LoRA, seq 2048, 1 x H100 SXM, MFU 0.5 given."""
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    est = estimate_time(plan, "h100_sxm", mfu=0.5)
    # compute: 33,281,818,624 FLOPs x 2048 tokens / (989e12 x 0.5) = 6.8161e13 / 4.945e14 = 0.13784 s
    assert est.compute_s == pytest.approx(33_281_818_624 * 2048 / (989e12 * 0.5))
    assert est.compute_s == pytest.approx(0.13784, abs=1e-5)
    # optimizer (priced per operation, each max(GPU time, host dispatch)): 128 adapter tensors of one 65,536-element
    # chunk or less, so each foreach pass is one launch's blocks and its depth's tensor limit sets its kernels
    # (110, 64, 48 tensors at depths 1, 2, 3; 96 at depth 1 with a list of scalars). Clipping reads and scales the
    # fp32 gradients (12 B/param): two depth-1 passes of 2 kernels + 7 single kernels = 11; foreach AdamW at weight
    # decay 0 moves 18 adapter-sized fp32 tensors (72 B/param) in 2 + 2 + 3 + 2 + 2 + 2 + 3 = 16 kernels. Under
    # torch.no_grad the host dispatches a kernel in 7.2 us; on the GPU each kernel takes Hopper's 2.41 us fixed time
    # back to back plus its bytes. The host runs ahead of the GPU-bound forward and backward, so it has issued the
    # optimizer's 27 kernels (27 x 7.2 us = 0.19 ms) long before the GPU reaches them: the optimizer costs its GPU
    # time alone, 27 x 2.41 us + 84 B/param of adapter tensors (steptime._queued)
    rates = load_rates()
    bw, host_s = rates.device("h100_sxm").mem_bw_bytes_s, rates.kernel("launch_overhead_eager_nograd_us") * 1e-6
    t0_s = rates.kernel("membw_t0_batch_us_gh100") * 1e-6
    assert est.compute_s > 27 * host_s * 100
    assert est.optimizer_s == pytest.approx(84 * ADAPTER_8B_R16_QV / bw + 27 * t0_s)
    assert est.optimizer_s == pytest.approx(0.000262, abs=1e-6)
    assert est.comm.comm_s == 0 and est.comm.verdict == (msg("comm.single_gpu"),)
    assert est.step_time_s == pytest.approx(est.compute_s + est.optimizer_s)
    # the run: 100 M tokens / 2048 per step -> 48,829 steps; eval 5 %; 97 checkpoints of 81,788,928 B
    assert est.steps == math.ceil(100_000_000 / 2048) == 48_829
    assert est.train_s == pytest.approx(48_829 * est.step_time_s)
    assert est.eval_s == pytest.approx(0.05 * est.train_s)
    assert est.checkpoints == 48_829 // 500 == 97
    assert est.checkpoint_bytes == checkpoint_bytes(plan) == 12 * ADAPTER_8B_R16_QV  # 4 B weights + 8 B AdamW
    assert est.checkpoint_s == pytest.approx(97 * 12 * ADAPTER_8B_R16_QV / DISK_WRITE_BYTES_S)
    assert est.total_s == pytest.approx((est.train_s + est.eval_s + est.checkpoint_s) * (1 + TIME_MARGIN))
    assert est.tokens_per_s == pytest.approx(2048 / est.step_time_s)
    assert est.mfu.source == "argument"
    assert set(est.as_dict()) >= {"step_time_s", "total_s", "comm", "data", "mfu", "flops_per_token"}


def test_time_ignores_fields_it_must_not_read():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=1024, batch_size=2)
    base = estimate_time(plan, "l40s")
    other = estimate_time(plan.replace(dataset_bytes=123_456_789, checkpoints_kept=7), "l40s")
    assert other.step_time_s == base.step_time_s and other.total_s == base.total_s
    # epochs scale the run, not the step
    twice = estimate_time(plan.replace(epochs=2), "l40s")
    assert twice.step_time_s == base.step_time_s and twice.steps == math.ceil(2 * 100_000_000 / 2048)


def test_calibration_fits_the_efficiency_factor():
    plan = TrainPlan(model="llama-3.2-3b", method="lora", seq_len=768, batch_size=4, lora_r=32)
    default = estimate_time(plan, "l40s")
    slower = default.tokens_per_s * 0.8
    measured = estimate_time(plan, "l40s", calibration={"tokens_per_s": slower, "gpu_id": "l40s", "source": "PEFT"})
    assert measured.mfu.source == "calibration" and "PEFT" in measured.mfu.basis
    # calibrated from tokens/s, the model reproduces that throughput with every GPU-bound time scaled
    assert measured.tokens_per_s == pytest.approx(slower, rel=1e-6)
    assert measured.mfu.scale == pytest.approx(0.8, rel=0.01) and measured.mfu.value < default.mfu.value
    # the fitted factor prices another shape: a measurement at 768 tokens calibrates a 2,048-token plan
    longer = plan.replace(seq_len=2048)
    moved = estimate_time(longer, "l40s", calibration={"tokens_per_s": slower, "tokens_per_micro_batch": 3072})
    assert moved.mfu.scale == pytest.approx(measured.mfu.scale, rel=1e-3)
    assert moved.tokens_per_s == pytest.approx(estimate_time(longer, "l40s").tokens_per_s * 0.8, rel=0.02)
    assert estimate_time(plan, "l40s", calibration={"scale": 0.5}).mfu.scale == 0.5
    assert estimate_time(plan, "l40s", mfu=0.3, calibration={"scale": 0.5}).mfu.value == 0.3  # argument wins
    with pytest.raises(PlanError, match="measured on h100_sxm"):
        estimate_time(plan, "l40s", calibration={"scale": 0.5, "gpu_id": "h100_sxm"})
    with pytest.raises(PlanError, match="'tokens_per_s'"):
        estimate_time(plan, "l40s", calibration={"step": 1})
    with pytest.raises(PlanError, match="from 0.001 to 1") as info:  # the ends of --mfu (MFU_RANGE)
        estimate_time(plan, "l40s", mfu=1.5)
    assert info.value.field == "mfu" and info.value.msg.code == "error.time.mfu"
    assert info.value.text("ru") == "mfu=1.5: нужна доля пиковой производительности от 0,001 до 1, например 0,35"


def test_ddp_all_reduce_worked_example():
    """Qwen2.5-0.5B full bf16 on 2 x RTX 4090 (PCIe 4.0 x16, 31.5 GB/s per direction, no peer-to-peer)."""
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048, gpus=2)
    est = estimate_time(plan, "rtx4090")
    grads = 494_032_768 * 2  # bf16 gradients: 988,065,536 B
    # ring all-reduce of 25 MiB buckets (39 of 25,335,014 B), each at the busbw of the measured PCIe sweep through
    # host memory (GeForce: no peer-to-peer) with NCCL's defaults: 4.0 GB/s of a 15.75 GB/s PCIe 3.0 link on
    # 2x RTX 2080 Ti, the same share of the 4090's 31.5 GB/s PCIe 4.0 (docs/communication.md 'PCIe')
    curve = load_comm_facts().pcie_curve(False, 2)
    assert curve.curve == "autodl-2080ti-2-host"
    assert curve.efficiency == pytest.approx(4.0 / 15.75, abs=1e-3)
    plateau = 31.5e9 * curve.efficiency

    def busbw(size: float) -> float:  # the sweep's latency carried in seconds to the faster link, on 2 ranks
        return plateau / (1 + (curve.half_s * plateau * 2 / 8 / size) ** curve.exponent)

    embedding = 151_936 * 896 * 2  # the tied embedding's gradients: their own bucket, after backward
    buckets = math.ceil((grads - embedding) / (25 * 1024 * 1024))
    size = (grads - embedding) / buckets
    assert busbw(size) == pytest.approx(7.96e9, rel=0.002)  # 0.5 % below the plateau at a 25 MiB bucket
    assert est.comm.bytes_per_step == pytest.approx(grads)
    assert est.comm.bandwidth_bytes_s == pytest.approx(busbw(size))
    # 2(n-1)/n = 1 on two GPUs
    assert est.comm.comm_s == pytest.approx(buckets * size / busbw(size) + embedding / busbw(embedding))
    # buckets are all-reduced during the backward; what outlasts it (at least the last bucket) is exposed
    backward_s = est.compute_s - sum(v for k, v in est.breakdown.items() if k == "forward")  # upper bound check
    assert 0 < est.comm.exposed_s <= est.comm.comm_s and backward_s > 0
    # the hidden buckets hold NCCL's 2 PCIe channels of the 4090's 128 SMs (docs/communication.md 'Contention')
    assert est.comm.contention_s == pytest.approx((est.comm.comm_s - est.comm.exposed_s) * 2 / 128)
    assert est.step_time_s == pytest.approx(est.compute_s + est.optimizer_s + est.comm.exposed_s
                                            + est.comm.contention_s)
    assert [m.code for m in est.comm.verdict][:1] == ["comm.no_nvlink"]
    no_nvlink = est.comm.verdict[0]
    assert no_nvlink["gpu"] == "GeForce RTX 4090"
    # the exposed share of the step as its links price it (the contention is the compute's, not the link's)
    assert no_nvlink["share"] == pytest.approx(est.comm.exposed_s / (est.step_time_s - est.comm.contention_s))
    assert "comm.geforce_no_p2p" in [m.code for m in est.comm.verdict]


def test_zero3_moves_one_and_a_half_times_ddp():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048, gpus=4)
    ddp = estimate_time(plan, "h100_sxm")
    zero3 = estimate_time(plan.replace(sharding="zero3"), "h100_sxm")
    zero2 = estimate_time(plan.replace(sharding="zero2"), "h100_sxm")
    # ZeRO paper §7: ZeRO-3 = 1.5 x DDP; ZeRO-2 = DDP (reduce-scatter + all-gather)
    assert zero3.comm.bytes_per_step / ddp.comm.bytes_per_step == pytest.approx(1.5)
    assert zero2.comm.bytes_per_step == pytest.approx(ddp.comm.bytes_per_step)
    # ZeRO-3 gathers again for every micro-batch: (2 gathers x 4 micro-batches + 1 reduce-scatter) / (2 + 1) = 3x
    accum = estimate_time(plan.replace(sharding="zero3", grad_accum=4), "h100_sxm")
    assert accum.comm.bytes_per_step == pytest.approx(3 * zero3.comm.bytes_per_step)


def test_nvlink_verdict_and_scaling():
    plan = TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048, gpus=8, sharding="zero3")
    nvlink = estimate_time(plan, "h100_sxm")
    pcie = estimate_time(plan, "h100_sxm", link="pcie")
    assert nvlink.comm.verdict == (msg("comm.nvlink_needed", pcie_share=nvlink.comm.pcie_share,
                                       link_share=nvlink.comm.link_share, link="nvlink_switch"),)
    assert nvlink.comm.pcie_share > 0.10 > nvlink.comm.link_share
    assert pcie.comm.scaling_efficiency < nvlink.comm.scaling_efficiency <= 1
    assert pcie.step_time_s > nvlink.step_time_s
    assert [w.code for w in pcie.warnings] == ["comm.nvlink_needed", "comm.setup_uses_pcie"]
    assert pcie.as_dict()["warnings"][1] == {"code": "comm.setup_uses_pcie", "params": {}}
    # small gradients: PCIe is enough
    lora = estimate_time(TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, gpus=2), "a100_80_sxm")
    assert [m.code for m in lora.comm.verdict] == ["comm.pcie_enough"] and lora.comm.verdict[0]["share"] < 0.10


def test_multi_node_needs_a_network_and_uses_it():
    plan = TrainPlan(model="llama-3.1-8b", method="full", seq_len=2048, gpus=16, sharding="zero3")
    with pytest.raises(PlanError, match="needs an inter-node network"):
        estimate_time(plan, "h100_sxm", nodes=2)
    with pytest.raises(PlanError, match="nodes=20"):
        estimate_time(plan, "h100_sxm", nodes=20, network="ib-ndr-400g")
    ib = estimate_time(plan, "h100_sxm", nodes=2, network="ib-ndr-400g")
    eth = estimate_time(plan, "h100_sxm", nodes=2, network="ethernet-100g")
    # a ring over both nodes leaves each node through all its NICs: DGX H100 has 8 x 400 Gb/s (400 GB/s, above
    # the NVLink ring, which stays the bottleneck); 100 GbE is one 12.5 GB/s port for the whole node
    net_curve = load_comm_facts().curve_for("network-ring")
    assert eth.comm.bandwidth_bytes_s < 12.5e9 * net_curve.efficiency < ib.comm.bandwidth_bytes_s
    net = eth.comm.verdict[-1]
    assert net.code == "comm.network_bottleneck" and (net["nodes"], net["network"]) == (2, "ethernet-100g")
    assert net["bytes_s"] < 12.5e9 * net_curve.efficiency and 0 < net["share"] < 1
    # 8 NICs per node carry about what the NVLink ring does (~0.8 x 450 GB/s), not 1/8 of it: the NVLink ring, not
    # the network, bounds the ring over both nodes
    assert ib.comm.verdict[-1].code == "comm.network"
    assert ib.comm.bandwidth_bytes_s > 0.5 * 450e9 and ib.comm.bandwidth_bytes_s > 20 * eth.comm.bandwidth_bytes_s
    assert eth.step_time_s > ib.step_time_s
    with pytest.raises(CatalogError, match="not available on l40s") as info:
        estimate_time(plan.replace(gpus=2), "l40s", link="nvlink_switch")
    assert info.value.msg.code == "error.time.link_unavailable"
    assert info.value.text("ru").startswith("связь 'nvlink_switch' недоступна на l40s")


def test_data_feed_verdict_and_wait():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048, batch_size=4)
    fast = estimate_time(plan, "h100_sxm")
    need = fast.tokens_per_s
    assert fast.data.workers_needed == math.ceil(need / LOADER_WORKER_TOKENS_S)
    assert fast.data.token_id_bytes_per_s == pytest.approx(need * 4)  # vocab 151,936 -> uint32 ids
    slow = estimate_time(plan, "h100_sxm", loader_tokens_per_s=need / 2)
    wait = slow.data.verdict
    assert slow.data.gpus_wait and wait.code == "data.gpus_wait" and wait["loader_tokens_s"] == need / 2
    assert wait["needed_tokens_s"] == pytest.approx(need) and wait["wait_share"] == pytest.approx(0.5)
    assert wait["workers"] == fast.data.workers_needed
    assert slow.data.verdict in slow.warnings
    # the loader sets the pace: step = tokens per step / loader rate = twice the compute-bound step
    assert slow.step_time_s == pytest.approx(2 * fast.step_time_s)
    assert slow.data.wait_share == pytest.approx(0.5)
    ok = estimate_time(plan, "h100_sxm", loader_tokens_per_s=need * 2)
    assert not ok.data.gpus_wait and ok.step_time_s == fast.step_time_s
    assert ok.data.verdict.code == "data.keeps_up" and fast.data.verdict.code == "data.needed"
    assert fast.data.verdict["workers"] == fast.data.workers_needed


def test_time_accuracy_rows_cover_the_published_cases():
    rows = time_accuracy_rows()
    assert len(rows) == len(TIME_CASES) >= 30
    for row in rows:
        assert row.measured > 0 and row.predicted > 0
        assert row.error == pytest.approx(row.predicted / row.measured - 1)
        assert row.excluded == (row.utilisation > PHYSICAL_LIMIT)
        assert sum(row.breakdown.values()) == pytest.approx(1.0)
    by_name = {r.name: r for r in rows}
    # the bert-large fp32 V100 case: 8.86 samples/s of 512 tokens (docs/time_cases_sources.md, section 1)
    assert by_name["bert-large bs 4, fp32"].measured == pytest.approx(8.86 * 512)
    assert by_name["Llama-3.2-3B LoRA r32 q,v"].measured == 7174
    summary = time_accuracy_summary(rows)
    assert summary["cases"] + summary["excluded"] == len(rows) and summary["sources"] >= 6
    assert summary["gpus"][0] == 1 and summary["gpus"][1] >= 64
    # the previous model's predictions are on file for every case (scripts/previous_time_model.py)
    assert all(r.previous is not None for r in rows)


def test_docs_time_accuracy_is_current():
    text = (DOCS / "time_accuracy.md").read_text(encoding="utf-8")
    assert text == time_accuracy_page(), "regenerate: gpuwork accuracy --time --out docs/time_accuracy.md"
    assert time_accuracy_markdown() in text


def test_an_unknown_network_is_a_plan_error_in_both_languages():
    plan = TrainPlan(model="llama-3.1-8b", gpus=16, sharding="fsdp")
    with pytest.raises(PlanError) as err:
        estimate_time(plan, "h100_sxm", nodes=2, network="bogus")
    assert err.value.field == "network" and err.value.msg.code == "error.time.network_choice"
    assert "ib-ndr-400g" in str(err.value) and "не из списка" in err.value.text("ru")
