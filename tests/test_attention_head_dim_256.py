"""FlashAttention-2 at head dim 256 on the H100 family: the FA3 paper's Fig. 5e / 5f bars (rates_sources.md [K4c]),
priced from their own attention_curves.csv rows, not from head dim 128's (docs/time_misses.md, the H100 audit)."""

from __future__ import annotations

import csv

import pytest

from gpuwork.estimate.ops import Kind, Op, Phase
from gpuwork.estimate.steptime import attention_family, curve_fraction, price_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.paths import data_dir
from gpuwork.facts.rates import ATTENTION_CURVES_CSV, load_rates
from gpuwork.plan import Stack

H100_FAMILY = ("h100_sxm", "h100_pcie", "h100_nvl", "h200_sxm")


def _fa2_rows(family: str, head_dim: int) -> dict[tuple[bool, int], float]:
    """(causal, length) -> share of the peak, from the CSV's FlashAttention-2 rows of one family and head dim."""
    with open(data_dir() / ATTENTION_CURVES_CSV, newline="", encoding="utf-8") as fh:
        return {(r["causal"] == "1", int(r["seq_len"])): float(r["tflops"]) / float(r["peak_tflops"])
                for r in csv.DictReader(fh)
                if r["family"] == family and r["kernel"] == "flash-attn 2" and r["pass"] == "fwd"
                and int(r["head_dim"]) == head_dim}


def _points(gpu_id: str):
    rates = load_rates()
    return rates.curves(attention_family(get_gpu(gpu_id), rates))


def test_the_paper_bars_are_in_the_file_with_their_source() -> None:
    rows = _fa2_rows("h100", 256)
    assert set(rows) == {(c, s) for c in (False, True) for s in (512, 1024, 2048, 4096, 8192, 16384)}
    assert rows[(False, 16384)] * 989 == pytest.approx(326) and rows[(True, 4096)] * 989 == pytest.approx(293)


@pytest.mark.parametrize("gpu_id", H100_FAMILY)
def test_every_h100_family_card_reads_the_head_dim_256_curve(gpu_id: str) -> None:
    points = _points(gpu_id)
    for (causal, length), share in _fa2_rows("h100", 256).items():
        assert curve_fraction(points, "fwd", causal, 256, length) == pytest.approx(share, rel=1e-9)
    # below head dim 128's curve (full matrix at 4k: 323 against 368 TF): 256 no longer borrows it
    assert curve_fraction(points, "fwd", False, 256, 4096) < 0.9 * curve_fraction(points, "fwd", False, 128, 4096)


def test_the_a100_family_has_no_head_dim_256_row_and_keeps_the_nearest() -> None:
    assert not _fa2_rows("a100", 256)
    points = _points("a100_80_sxm")
    assert curve_fraction(points, "fwd", True, 256, 4096) == curve_fraction(points, "fwd", True, 128, 4096)


def test_the_step_prices_a_head_dim_256_forward_at_the_measured_rate() -> None:
    rates, gpu = load_rates(), get_gpu("h100_sxm")
    flops = 4 * 16384 * 16384 * 256 * 8  # one full-matrix forward call's FLOPs (any size: the rate is per FLOP)
    op = Op(name="attention", kind=Kind.ATTENTION, phase=Phase.FORWARD, flops=flops, bytes=0.0, launches=1, count=1,
            m=16384, n=256, attention_pass="fwd")
    price = price_ops((op,), gpu, rates.device("h100_sxm"), rates, rates.stacks[Stack.FRAMEWORK])
    measured_s = flops / (_fa2_rows("h100", 256)[(False, 16384)] * gpu.bf16_dense_flops)
    assert price.by_kind["attention"] == pytest.approx(measured_s, rel=1e-9)
