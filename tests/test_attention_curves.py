"""Fused attention by sequence length: data/attention_curves.csv against the step model (docs/kernels.md).

Sources: rates_sources.md [K4c] (FA3 paper, FlashAttention-2 bars on H100 SXM5), [K4d] (flash-attention
PR 1791 benchmark, its FlashAttention-2 and FlashAttention-3 lines), [K4e] (FlashAttention-2 forward on an A100), [K4f]
(FlashAttention-2 on an RTX 4090), [K4g] (FA3 paper, FlashAttention-3 and cuDNN bars), [K4h] (FlashAttention-2 on a
B200), [K4i] (cuDNN and FlashAttention-4 on a GB200) and [K22] (torch 2.11's SDPA, its FlashAttention-2 and its default
cuDNN attention, on a lent H200). Every published row must come out within 10 % of the model's curve for its kernel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwork.errors import CatalogError
from gpuwork.estimate.ops import Phase, step_ops
from gpuwork.estimate.steptime import curve_fraction, price_ops, stack_kernels
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.paths import data_dir
from gpuwork.facts.rates import (
    ATTENTION_CURVES_CSV,
    CUDNN_KERNEL,
    FA2_KERNEL,
    FA3_KERNEL,
    FA4_KERNEL,
    TORCH_CUDNN_KERNEL,
    TORCH_FLASH_KERNEL,
    AttentionRow,
    attention_curves,
    load_rates,
    read_attention_rows,
)
from gpuwork.plan import Attention, Method, TrainPlan

H100_PEAK_TF = 989.0


def _rows() -> tuple[AttentionRow, ...]:
    return read_attention_rows(Path(data_dir()) / ATTENTION_CURVES_CSV)


def _points(family: str):
    return tuple(p for p in load_rates().attention_curves if p.family == family)


def _h100_points():
    return _points("h100")


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r.family}-{r.kernel[-1]}-{r.source}-{r.attention_pass}"
                         f"-c{int(r.causal)}-d{r.head_dim}-s{r.seq_len}-{r.fraction * H100_PEAK_TF:.1f}")
def test_every_source_row_within_10_percent(row: AttentionRow) -> None:
    model = curve_fraction(_points(row.family), row.attention_pass, row.causal, row.head_dim, row.seq_len,
                           kernel=row.kernel)
    assert model is not None
    assert abs(model / row.fraction - 1) <= 0.10


def test_sources_cover_both_tags() -> None:
    assert {r.source for r in _rows()} == {"K4c", "K4d", "K4e", "K4f", "K4g", "K4h", "K4i", "K22"}
    assert {r.family for r in _rows()} == {"h100", "a100", "rtx4090", "gb200"}
    assert {r.kernel for r in _rows()} == {FA2_KERNEL, FA3_KERNEL, FA4_KERNEL, CUDNN_KERNEL, TORCH_FLASH_KERNEL,
                                           TORCH_CUDNN_KERNEL}
    # [K22]: torch 2.11's SDPA on a lent H200 (the H100 family), causal only
    assert {(r.family, r.causal) for r in _rows() if r.kernel in (TORCH_FLASH_KERNEL, TORCH_CUDNN_KERNEL)} == {
        ("h100", True)}
    assert {r.family for r in _rows() if r.kernel == FA3_KERNEL} == {"h100"}  # FA3 runs on Hopper only
    assert {r.family for r in _rows() if r.kernel == FA4_KERNEL} == {"gb200"}  # [K4i]; no Hopper figure found
    assert {r.family for r in _rows() if r.kernel == CUDNN_KERNEL} == {"h100", "gb200"}  # [K4g], [K4i]
    assert len(_rows()) >= 100


def test_worked_example_interpolates_in_log_length() -> None:
    # steptime.curve_fraction's docstring: causal forward, head dim 128, 3,072 tokens -> 286.9 TF
    tf = curve_fraction(_h100_points(), "fwd", True, 128, 3072) * H100_PEAK_TF
    assert tf == pytest.approx(286.9, abs=0.1)


def test_level_is_the_mean_of_sources_where_both_measured() -> None:
    # causal forward, head dim 128 at 8k: FA3 paper 333; PR 1791 284.1 / 281.4 (mean 282.75); mean 307.875
    tf = curve_fraction(_h100_points(), "fwd", True, 128, 8192) * H100_PEAK_TF
    assert tf == pytest.approx((333 + (284.1 + 281.4) / 2) / 2, rel=1e-6)


def test_causal_backward_borrows_the_full_matrix_shape() -> None:
    points = _h100_points()
    causal = [curve_fraction(points, "bwd", True, 128, s) for s in (512, 2048, 8192)]
    full = [curve_fraction(points, "bwd", False, 128, s) for s in (512, 2048, 8192)]
    ratios = [c / f for c, f in zip(causal, full, strict=True)]
    assert max(ratios) == pytest.approx(min(ratios))  # same shape
    assert causal[2] * H100_PEAK_TF == pytest.approx((287.1 + 289.1) / 2, rel=1e-6)


def test_flat_beyond_the_measured_lengths_and_nearest_head_dim() -> None:
    points = _h100_points()
    assert curve_fraction(points, "fwd", False, 128, 65536) == curve_fraction(points, "fwd", False, 128, 16384)
    assert curve_fraction(points, "fwd", False, 128, 128) == curve_fraction(points, "fwd", False, 128, 512)
    assert curve_fraction(points, "fwd", False, 96, 4096) == curve_fraction(points, "fwd", False, 128, 4096)
    assert curve_fraction(points, "fwd", False, 80, 4096) == curve_fraction(points, "fwd", False, 64, 4096)
    assert curve_fraction((), "fwd", True, 128, 4096) is None


def test_combination_rule_on_made_up_rows() -> None:
    rows = (AttentionRow("x", "fwd", False, 128, 1024, 0.2, "A"), AttentionRow("x", "fwd", False, 128, 4096, 0.4, "A"),
            AttentionRow("x", "fwd", False, 128, 4096, 0.2, "B"), AttentionRow("x", "fwd", False, 128, 4096, 0.4, "B"))
    points = attention_curves(rows)
    # level at 4k: mean(0.4, mean(0.2, 0.4)) = 0.35 -> factor 0.875 on A's sweep
    assert [round(p.fraction, 6) for p in points] == [0.175, 0.35]


def _attention_seconds(seq_len: int, gpu_id: str) -> float:
    plan = TrainPlan(model="llama-3.1-8b", method=Method.LORA, seq_len=seq_len, batch_size=max(1, 8192 // seq_len),
                     attention=Attention.FLASH)
    gpu, rates = get_gpu(gpu_id), load_rates()
    profile = rates.stacks[plan.stack]
    ops = step_ops(plan, get_spec(plan.model), stack_kernels(profile))
    fused = tuple(op for op in ops if op.attention_pass and op.phase is Phase.FORWARD)
    assert fused and all(op.m == seq_len and op.n == 128 and op.causal for op in fused)
    return price_ops(fused, gpu, rates.device(gpu_id), rates, profile).by_kind["attention"]


def test_short_sequences_run_attention_slower_per_flop_on_h100() -> None:
    # same tokens per micro-batch: 512-token sequences do 1/16 of the 8k attention FLOPs but at 176.6 TF instead
    # of 307.9 (and the diagonal blocks weigh more), so they take more than 1/16 of the time
    short, long = _attention_seconds(512, "h100_sxm"), _attention_seconds(8192, "h100_sxm")
    assert short / long > 1 / 16 * 307.9 / 176.6 * 0.95


def test_a100_backward_is_its_forward_curve_times_the_fa2_paper_ratio() -> None:
    # A100 rows are forward only [K4e]: the backward is the full-matrix forward curve x 0.63 / 0.73 (kernels.csv)
    points = tuple(p for p in load_rates().attention_curves if p.family == "a100")
    kernels = load_rates().kernels
    ratio = kernels["flash_attn_bwd_fraction"] / kernels["flash_attn_fwd_fraction"]
    for seq in (512, 1024, 2048, 4096, 16384):
        fwd = curve_fraction(points, "fwd", False, 128, seq)
        assert curve_fraction(points, "bwd", True, 128, seq, ratio) == pytest.approx(fwd * ratio)
        assert curve_fraction(points, "bwd", False, 128, seq, ratio) == pytest.approx(fwd * ratio)
    assert curve_fraction(points, "bwd", False, 128, 4096) is None  # no ratio given: no backward


def test_a100_causal_attention_is_slower_per_flop_at_short_lengths() -> None:
    # causal forward 142.1 TF at 1k (and below) against 157.8 TF at 4k (and above) [K4e]: at the same tokens per
    # micro-batch, 512-token sequences do 1/16 of the 8k attention FLOPs (as the curves count them) at that rate
    short, long = _attention_seconds(512, "a100_80_sxm"), _attention_seconds(8192, "a100_80_sxm")
    at_1k, at_4k = (143.70 + 140.59) / 2, (156.27 + 159.41) / 2
    assert short / long == pytest.approx(1 / 16 * at_4k / at_1k, rel=1e-6)


def test_rtx4090_causal_forward_borrows_the_full_matrix_shape_and_no_curve_beats_the_peak() -> None:
    # [K4f]: non-causal forward at 512 / 1k / 2k (169.28 TF at 2k, above the 165.2 TF datasheet), causal only at 2k
    points = _points("rtx4090")
    assert max(p.fraction for p in points) == 1.0  # capped at the datasheet
    factor = 151.19 / 169.28  # causal / full-matrix forward at 2k, head dim 128
    assert curve_fraction(points, "fwd", True, 128, 512) * 165.2 == pytest.approx(153.14 * factor, rel=1e-6)
    assert curve_fraction(points, "fwd", True, 128, 2048) * 165.2 == pytest.approx(151.19, rel=1e-6)
    # one length and nothing to borrow: flat
    assert curve_fraction(points, "bwd", False, 128, 512) == curve_fraction(points, "bwd", False, 128, 8192)


def test_rtx4090_is_its_own_family_and_l40s_is_not() -> None:
    # the L40S (same AD102 die, full-rate fp32 accumulation) keeps the A100 curve as a share of its own peak
    from gpuwork.estimate.steptime import attention_family
    from gpuwork.facts.catalog import load_gpus
    from gpuwork.facts.rates import load_rates
    gpus, rates = load_gpus(), load_rates()
    assert attention_family(gpus["rtx4090"], rates) == "rtx4090"
    assert attention_family(gpus["l40s"], rates) == "a100"
    assert attention_family(gpus["h200_sxm"], rates) == "h100"


def test_bad_row_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / ATTENTION_CURVES_CSV
    path.write_text("family,kernel,pass,causal,head_dim,seq_len,tflops,peak_tflops,source,note\n"
                    "h100,fa2,sideways,0,128,512,300,989,K4c,\n", encoding="utf-8")
    with pytest.raises(CatalogError):
        read_attention_rows(path)


def test_flash3_curves_are_their_own_and_head_dim_256_is_measured() -> None:
    points = _h100_points()
    fa3 = [curve_fraction(points, "fwd", False, d, 16384, kernel=FA3_KERNEL) * H100_PEAK_TF for d in (64, 128, 256)]
    # [K4g] at 16k: 497 / 648 / 756 TF; head dim 128 also [K4d] at 8k (659.1 / 659.6), which lifts the 128 sweep
    assert fa3[0] == pytest.approx(497) and fa3[2] == pytest.approx(756)
    assert fa3[1] == pytest.approx(648 * (646 + (659.1 + 659.6) / 2) / 2 / 646, rel=1e-6)
    # FlashAttention-2's curve never reads FlashAttention-3's rows
    assert curve_fraction(points, "fwd", False, 128, 4096) * H100_PEAK_TF == pytest.approx(368.2, abs=0.1)
    # a family without FlashAttention-3 rows has no FlashAttention-3 curve
    assert curve_fraction(_points("a100"), "fwd", False, 128, 4096, kernel=FA3_KERNEL) is None


def test_cudnn_curve_is_its_own_and_its_causal_backward_borrows_the_full_matrix() -> None:
    points = _h100_points()
    # [K4g] cuDNN forward, head dim 128: 497 TF at 512, 595 at 16k; FlashAttention-2 309 / 370 at the same lengths
    assert curve_fraction(points, "fwd", False, 128, 512, kernel=CUDNN_KERNEL) * H100_PEAK_TF == pytest.approx(497)
    assert curve_fraction(points, "fwd", False, 128, 65536, kernel=CUDNN_KERNEL) * H100_PEAK_TF == pytest.approx(595)
    for seq in (512, 4096, 16384):  # no causal backward chart: the full-matrix backward (518 TF at 8k)
        assert curve_fraction(points, "bwd", True, 128, seq, kernel=CUDNN_KERNEL) == curve_fraction(
            points, "bwd", False, 128, seq, kernel=CUDNN_KERNEL)


def _csv_tf(family: str, kernel: str, attention_pass: str, causal: bool, seq_len: int) -> tuple[float, float]:
    """The one published row at head dim 128 (TFLOP/s, the measuring GPU's datasheet peak), read from the CSV."""
    import csv
    with open(Path(data_dir()) / ATTENTION_CURVES_CSV, encoding="utf-8", newline="") as f:
        found = [(float(r["tflops"]), float(r["peak_tflops"])) for r in csv.DictReader(f)
                 if (r["family"], r["kernel"], r["pass"], r["causal"], r["head_dim"], r["seq_len"])
                 == (family, kernel, attention_pass, str(int(causal)), "128", str(seq_len))]
    assert len(found) == 1
    return found[0]


def test_blackwell_cudnn_and_fa2_curves_are_their_own() -> None:
    points = _points("gb200")
    # [K4i] cuDNN on a GB200, causal forward 1552 TF at 8k of 2500; flat beyond 32k and below 2k
    tf, peak = _csv_tf("gb200", CUDNN_KERNEL, "fwd", True, 8192)
    assert curve_fraction(points, "fwd", True, 128, 8192, kernel=CUDNN_KERNEL) == pytest.approx(tf / peak)
    assert curve_fraction(points, "bwd", False, 128, 131072, kernel=CUDNN_KERNEL) == pytest.approx(
        curve_fraction(points, "bwd", False, 128, 32768, kernel=CUDNN_KERNEL))
    # [K4h] FlashAttention-2 on a B200, causal forward and backward from 4k on; nothing without the mask, so the
    # full-matrix passes keep the family's single fractions (kernels.csv flash_attn_*_fraction_gb200)
    tf, peak = _csv_tf("gb200", FA2_KERNEL, "bwd", True, 16384)
    assert curve_fraction(points, "bwd", True, 128, 16384) == pytest.approx(tf / peak)
    assert curve_fraction(points, "fwd", True, 128, 1024) == curve_fraction(points, "fwd", True, 128, 4096)
    assert curve_fraction(points, "fwd", False, 128, 8192) is None
    assert curve_fraction(points, "fwd", True, 128, 8192, kernel=FA3_KERNEL) is None


@pytest.mark.parametrize("attention, kernel", [(Attention.CUDNN, CUDNN_KERNEL), (Attention.FLASH, FA2_KERNEL)])
def test_b200_plan_prices_attention_from_the_blackwell_rows(attention: Attention, kernel: str) -> None:
    # a B200 plan's fused attention forward at 8k: the op's FLOPs at the row's share of the B200's own dense
    # peak, x (1 + 128 / s) for the diagonal blocks the op counts and the row does not (steptime._attention_rate)
    seq = 8192
    plan = TrainPlan(model="llama-3.1-8b", method=Method.LORA, seq_len=seq, batch_size=1, attention=attention)
    gpu, rates = get_gpu("b200"), load_rates()
    profile = rates.stacks[plan.stack]
    ops = step_ops(plan, get_spec(plan.model), stack_kernels(profile))
    fused = tuple(op for op in ops if op.attention_pass and op.phase is Phase.FORWARD)
    assert fused and all(op.m == seq and op.n == 128 and op.causal for op in fused)
    tf, peak = _csv_tf("gb200", kernel, "fwd", True, seq)
    rate = tf / peak * gpu.bf16_dense_flops * (1 + 128 / seq)
    expected = sum(op.flops * op.count for op in fused) / rate
    seconds = price_ops(fused, gpu, rates.device("b200"), rates, profile).by_kind["attention"]
    assert seconds == pytest.approx(expected, rel=1e-6)
