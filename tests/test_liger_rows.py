"""The step model against Liger-Kernel's kernel-level rows of eager Hugging Face / torch ops (scripts/liger_rows.py,
scripts/liger_kernel_rows.csv; docs/kernels.md "Liger-Kernel's eager rows")."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

from gpuwork.facts.rates import load_rates

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "liger_rows.py"


@pytest.fixture(scope="module")
def liger():
    spec = importlib.util.spec_from_file_location("liger_rows", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["liger_rows"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ratios(liger):
    rates = load_rates()
    return [(row, liger.model_s(row, rates) / row.time_s) for row in liger.load_rows()]


def _key(row) -> tuple[str, str, str, int, str]:
    return row.gpu_id, row.kernel, row.mode, row.x, str(sorted(row.config.items()))


def test_the_rows_are_the_eager_ops_on_named_a100_and_h100(liger):
    rows = liger.load_rows()
    assert len(rows) == 207
    assert {r.gpu_id for r in rows} == {"a100_80_pcie", "a100_80_sxm", "h100_nvl", "h100_sxm"}
    assert {r.kernel for r in rows} == {"rms_norm", "layer_norm", "rope", "cross_entropy"}
    assert len({_key(r) for r in rows}) == len(rows)


# host-bound: the H100 NVL's eager RMSNorm backward at hidden 1,024 (about 12 kernels of a few us) runs at its host's
# dispatch, faster than the median of the lent H200's VM hosts the isolated-op costs come from ([K22]: 5.3-10.9 us
# per bare op across leases); the model is 58 % slow there
HOST_MISSES = {("h100_nvl", "rms_norm", "backward", 1024)}


def test_the_model_reproduces_every_covered_row_within_25_percent(ratios):
    covered = {_key(r): ratio - 1 for r, ratio in ratios if r.covered}
    assert len(covered) == 165
    assert {k: round(e, 3) for k, e in covered.items() if abs(e) > 0.25 and k[:4] not in HOST_MISSES} == {}
    assert {k[:4] for k, e in covered.items() if abs(e) > 0.25} == HOST_MISSES
    assert all(0 < e < 0.75 for k, e in covered.items() if k[:4] in HOST_MISSES)
    for kernel in ("layer_norm", "cross_entropy", "rope", "rms_norm"):  # and centred: each kernel's median within 10 %
        assert statistics.median(1 + e for k, e in covered.items() if k[1] == kernel) == pytest.approx(1, abs=0.10)


def test_one_benchmark_row_by_hand(liger):
    # A100-SXM4-80GB, torch.nn.LayerNorm forward over 4,096 fp32 rows of 16,384: two reads and a write of 4 bytes,
    # 805 MB at 1610 GB/s plus one back-to-back t0 (2.58 us) = 502.8 us; Liger measured 506.7 us
    row = next(r for r in liger.load_rows() if (r.gpu_id, r.kernel, r.mode, r.x) == ("a100_80_sxm", "layer_norm",
                                                                                         "forward", 16384))
    assert sum(op.bytes for op in liger.benchmark_ops(row)) == 4096 * 16384 * 12
    assert liger.model_s(row, load_rates()) == pytest.approx(4096 * 16384 * 12 / 1610e9 + 2.58e-6, rel=1e-3)
    assert row.time_s == pytest.approx(506.7e-6, rel=1e-3)


def test_rows_outside_the_model_say_why(ratios):
    outside = [r for r, _ in ratios if not r.covered]
    assert outside and all(r.note for r in outside)


def test_rms_norm_comes_within_its_rows_by_the_strided_share_of_its_broadcast_kernels(liger):
    # eager LlamaRMSNorm's broadcast multiplies at membw_strided_fraction (the rotary rows' figure, not fitted here):
    # with them every die's rows of 1 ms and more centre within 15 %; priced as contiguous kernels they came out
    # 5-36 % fast (docs/kernels.md "Liger-Kernel's eager rows")
    from dataclasses import replace

    rates = load_rates()
    rows = [r for r in liger.load_rows() if r.kernel == "rms_norm" and r.time_s > 1e-3]
    assert {r.gpu_id for r in rows} == {"a100_80_pcie", "a100_80_sxm", "h100_nvl"}
    for gpu_id in ("a100_80_pcie", "a100_80_sxm", "h100_nvl"):
        mine = [r for r in rows if r.gpu_id == gpu_id]
        with_share = statistics.median(liger.model_s(r, rates) / r.time_s for r in mine)
        assert with_share == pytest.approx(1, abs=0.15), gpu_id
    row = next(r for r in rows if (r.gpu_id, r.mode, r.x) == ("h100_nvl", "full", 32768))
    ops = liger.benchmark_ops(row)
    assert all(0 < op.strided_share < 1 for op in ops if "norm" in op.name)
    profile = rates.stacks[liger.Stack.HF_TRAINER]
    gpu, device = liger.get_gpu(row.gpu_id), rates.devices[row.gpu_id]
    contiguous = liger.price_ops(tuple(replace(o, strided_share=0.0, backward_strided_share=-1.0) for o in ops),
                                 gpu, device, rates, profile).total_s
    assert contiguous / row.time_s < 0.75 < liger.model_s(row, rates) / row.time_s


def test_strided_fraction_in_kernels_csv_follows_the_rule_from_the_rotary_rows(liger):
    rates = load_rates()
    derived = liger.derive_strided_fraction(liger.load_rows(), rates)
    assert set(derived) == {"ga100", "gh100"}
    for die, share in derived.items():
        assert rates.kernel(f"membw_strided_fraction_{die}") == pytest.approx(share, abs=0.001), die
    assert rates.kernel("membw_strided_fraction") == pytest.approx(statistics.median(derived.values()), abs=0.01)
