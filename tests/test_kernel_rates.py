"""Memory-bound kernels (t = t0 + bytes / bw) against published timings, and the host's dispatch cost by phase.

Sources: gpuwork/facts/data/membw_measurements.csv and rates_sources.md [K12a]-[K13b]; docs/kernels.md.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from gpuwork.estimate.ops import Kind, Op, Phase
from gpuwork.estimate.steptime import host_us_per_kernel, memory_kernel_s, memory_kernel_t0_us, price_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.membw import derive_t0_us, load_membw_measurements
from gpuwork.facts.paths import bundled_data_dir
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack

DOC = Path(__file__).resolve().parents[1] / "docs" / "kernels.md"


@pytest.fixture(scope="module")
def rates():
    return load_rates()


@pytest.fixture(scope="module")
def rows():
    return load_membw_measurements()


def model_s(row, rates) -> float:
    gpu = get_gpu(row.gpu_id)
    t0_s = memory_kernel_t0_us(gpu, rates, row.timing)[0] * 1e-6  # each row against the t0 of its own timing
    return memory_kernel_s(row.bytes, 1, rates.devices[row.gpu_id].mem_bw_bytes_s, t0_s)


def test_the_model_reproduces_every_covered_row_within_10_percent(rows, rates):
    covered = [r for r in rows if r.covered]
    assert len(covered) >= 30
    errors = {(r.gpu_id, r.kernel, r.dtype, r.elements, r.source): model_s(r, rates) / r.time_s - 1 for r in covered}
    assert {k: round(e, 3) for k, e in errors.items() if abs(e) > 0.10} == {}


def test_a100_and_hopper_rows_span_tiny_to_large_kernels(rows):
    for gpu_id in ("a100_80_sxm", "h200_sxm"):
        sizes = {r.bytes for r in rows if r.gpu_id == gpu_id and r.covered}
        assert min(sizes) <= 200_000 and max(sizes) >= 500_000_000


def test_rows_outside_the_model_say_why(rows, rates):
    outside = [r for r in rows if not r.covered]
    assert outside and all(r.note for r in outside)
    # back-to-back rows whose inputs stay in L2 beat the DRAM bandwidth the model streams at: the model is slow
    # (B200 [K12d]; the H200 sweep's small graph replays [K22m])
    in_l2 = [r for r in outside if r.timing == "batch" and "L2" in r.note]
    assert {r.gpu_id for r in in_l2} == {"b200", "h200_sxm"}
    assert all(model_s(r, rates) > r.time_s for r in in_l2)


def test_the_h200_sweep_rows_leave_the_derived_t0_alone(rows, rates):
    """[K22m]: graph replays and a harness's cold floor. Back-to-back rows are covered where the eager t0 is under a
    tenth of the modelled time; covering the small ones would make a graph replay's gap the die's back-to-back t0,
    and the cold ones the harness's floor its single-launch t0."""
    mine = [r for r in rows if r.source == "K22m"]
    assert {r.kernel for r in mine} == {"pytorch-style add", "pytorch copy_"} and {r.timing for r in mine} == {
        "batch", "cold"}
    assert max(r.bytes for r in mine if r.kernel == "pytorch copy_") < 2 ** 30  # the graph's memcpy node from 1 GiB
    t0_s = memory_kernel_t0_us(get_gpu("h200_sxm"), rates, "batch")[0] * 1e-6
    for r in mine:
        assert r.covered == (r.timing == "batch" and t0_s <= model_s(r, rates) / 10), r
    assert sum(r.covered for r in mine) >= 10
    # what the rule would give with every one of them covered: about 1.1 us back to back, 23 us cold
    as_covered = tuple(replace(r, covered=True) if r.source == "K22m" else r for r in rows)
    batch, cold = derive_t0_us(as_covered, rates, "batch")["gh100"], derive_t0_us(as_covered, rates, "cold")["gh100"]
    assert 1.0 < batch < 1.2 < rates.kernel("membw_t0_batch_us_gh100")
    assert cold > 4 * rates.kernel("membw_t0_us_gh100")


@pytest.mark.parametrize(("timing", "base", "dies"), [
    ("cold", "membw_t0_us", {"ga100", "gh100", "gb100", "gb202"}),
    ("batch", "membw_t0_batch_us", {"ga100", "gh100", "gb100"}),
])
def test_each_die_t0_in_kernels_csv_follows_the_rule_from_the_rows(rows, rates, timing, base, dies):
    derived = derive_t0_us(rows, rates, timing)
    assert set(derived) == dies
    for die, t0 in derived.items():
        assert rates.kernel(f"{base}_{die}") == pytest.approx(t0, abs=0.01), die
    assert rates.kernel(base) == pytest.approx(statistics.median(derived.values()), abs=0.01)


def test_back_to_back_t0_is_the_small_row_less_its_bytes(rows, rates):
    # A100 scale fp64 2^12: 65,536 B in 2.621 us at 1610 GB/s -> 2.621 - 0.041 = 2.580 us [K12f]
    derived = derive_t0_us(rows, rates, "batch")
    assert derived["ga100"] == pytest.approx(2.621 - 65536 / 1610e9 * 1e6, abs=1e-6)
    assert derived["gh100"] == pytest.approx(2.427 - 65536 / 4010e9 * 1e6, abs=1e-6)
    assert derived["gb100"] == pytest.approx(1.996 - 393216 / 6683e9 * 1e6, abs=1e-6)
    # back to back undercuts a single launch on every die measured both ways
    cold = derive_t0_us(rows, rates, "cold")
    assert all(derived[die] < cold[die] / 2 for die in derived)


def test_gpus_take_their_die_t0_and_others_the_median(rates):
    assert memory_kernel_t0_us(get_gpu("a100_40_pcie"), rates, "cold") == (rates.kernel("membw_t0_us_ga100"),
                                                                          "membw_t0_us_ga100")
    # a step's kernels run back to back: that is the default
    assert memory_kernel_t0_us(get_gpu("a100_40_pcie"), rates) == (2.58, "membw_t0_batch_us_ga100")
    # H100 has no row of its own: the H200's GH100 die, same 132 SMs
    assert memory_kernel_t0_us(get_gpu("h100_sxm"), rates, "cold")[1] == "membw_t0_us_gh100"
    assert memory_kernel_t0_us(get_gpu("h100_sxm"), rates)[1] == "membw_t0_batch_us_gh100"
    assert memory_kernel_t0_us(get_gpu("gb200"), rates, "cold")[1] == "membw_t0_us_gb100"
    assert memory_kernel_t0_us(get_gpu("gb200"), rates)[1] == "membw_t0_batch_us_gb100"
    assert memory_kernel_t0_us(get_gpu("rtx_pro6000_bw"), rates, "cold")[1] == "membw_t0_us_gb202"
    # GB202 has no back-to-back row: the median of the three dies that have one
    assert memory_kernel_t0_us(get_gpu("rtx_pro6000_bw"), rates) == (2.41, "membw_t0_batch_us")
    for gpu_id in ("rtx4090", "rtx3090", "mi300x"):
        assert memory_kernel_t0_us(get_gpu(gpu_id), rates, "cold")[1] == "membw_t0_us"
        assert memory_kernel_t0_us(get_gpu(gpu_id), rates)[1] == "membw_t0_batch_us"


def _elementwise(nbytes: float, phase: Phase = Phase.FORWARD, launches: int = 1) -> Op:
    return Op("elementwise", Kind.MEMORY, phase, 0.0, nbytes, launches, 1)


def test_a_tiny_kernel_costs_at_least_t0_and_a_huge_one_tends_to_bytes_over_bw(rates):
    gpu, device = get_gpu("a100_80_sxm"), rates.device("a100_80_sxm")
    profile = rates.stacks[Stack.HF_TRAINER]
    t0_s = rates.kernel("membw_t0_batch_us_ga100") * 1e-6
    tiny = price_ops((_elementwise(1024),), gpu, device, rates, profile)
    assert tiny.by_kind["memory"] >= t0_s
    huge_bytes = 64e9
    huge = price_ops((_elementwise(huge_bytes),), gpu, device, rates, profile)
    assert huge.by_kind["memory"] == pytest.approx(huge_bytes / device.mem_bw_bytes_s, rel=1e-3)
    # a chain of kernels pays t0 once per kernel
    chain = price_ops((_elementwise(1024, launches=5),), gpu, device, rates, profile)
    assert chain.by_kind["memory"] == pytest.approx(5 * t0_s + 1024 / device.mem_bw_bytes_s)


@pytest.mark.parametrize(("gpu_id", "key"), [("a100_80_sxm", "membw_strided_fraction_ga100"),
                                           ("h200_sxm", "membw_strided_fraction_gh100"),
                                           ("l40s", "membw_strided_fraction")])
def test_a_strided_kernel_streams_its_bytes_at_its_die_share_of_the_bandwidth(rates, gpu_id, key):
    from dataclasses import replace

    gpu, device = get_gpu(gpu_id), rates.device(gpu_id)
    profile = rates.stacks[Stack.HF_TRAINER]
    plain = _elementwise(64e9)
    strided = replace(plain, strided_share=1.0)
    share = rates.kernel(key)
    assert 0.3 < share < 0.8
    t_plain = price_ops((plain,), gpu, device, rates, profile).by_kind["memory"]
    t_strided = price_ops((strided,), gpu, device, rates, profile).by_kind["memory"]
    t0_s = memory_kernel_t0_us(gpu, rates)[0] * 1e-6
    assert t_strided - t0_s == pytest.approx((t_plain - t0_s) / share, rel=1e-9)
    # a chain with a quarter of its bytes in strided kernels (eager RMSNorm's broadcast multiplies)
    part = price_ops((replace(plain, strided_share=0.25),), gpu, device, rates, profile).by_kind["memory"]
    assert part - t0_s == pytest.approx((t_plain - t0_s) * (0.75 + 0.25 / share), rel=1e-9)


def test_a_cpu_runs_memory_kernels_without_a_gpu_fixed_time(rates):
    from dataclasses import replace

    gpu, device = get_gpu("h100_sxm"), rates.device("h100_sxm")
    cpu = replace(device, gpu_id="cpu", synchronous=True, host_us_per_kernel=2.0)
    priced = price_ops((_elementwise(1e6),), gpu, cpu, rates, rates.stacks[Stack.HF_TRAINER])
    assert priced.total_s == pytest.approx(1e6 / cpu.mem_bw_bytes_s + 2e-6)


def test_each_phase_dispatches_at_its_measured_host_cost(rates):
    device = rates.device("h100_sxm")
    eager = rates.stacks[Stack.HF_TRAINER]
    assert eager.launch == "eager"
    fwd, rec, bwd, opt = (host_us_per_kernel(p, rates, eager, device) for p in
                          (Phase.FORWARD, Phase.RECOMPUTE, Phase.BACKWARD, Phase.OPTIMIZER))
    assert fwd == rec == rates.kernel("launch_overhead_eager_us")
    assert bwd == rates.kernel("launch_overhead_eager_backward_us")
    assert opt == rates.kernel("launch_overhead_eager_nograd_us")
    # [K22]: a bare op under no_grad < a module's forward kernel < a backward kernel run by the autograd engine
    assert opt < fwd < bwd
    # a host-bound backward kernel costs its phase's dispatch, not the forward's
    gpu = get_gpu("h100_sxm")
    one = price_ops((_elementwise(1024, Phase.BACKWARD),), gpu, device, rates, eager)
    assert one.total_s == pytest.approx(bwd * 1e-6)


def test_a_cuda_graph_and_a_measured_cpu_dispatch_are_the_same_for_every_phase(rates):
    from dataclasses import replace

    device = rates.device("h100_sxm")
    graph = replace(rates.stacks[Stack.HF_TRAINER], launch="graph")
    assert {host_us_per_kernel(p, rates, graph, device) for p in Phase} == {rates.kernel("launch_overhead_graph_us")}
    measured = replace(device, host_us_per_kernel=3.5)
    assert {host_us_per_kernel(p, rates, rates.stacks[Stack.HF_TRAINER], measured) for p in Phase} == {3.5}


def test_every_row_names_a_source_defined_in_rates_sources(rows):
    text = (bundled_data_dir() / "rates_sources.md").read_text(encoding="utf-8")
    defined = set(re.findall(r"^- \*\*\[([A-Z]\d+[a-z]?)\]\*\*", text, flags=re.MULTILINE))
    assert {r.source for r in rows} <= defined


def test_docs_table_shows_every_row_with_its_model_error(rows, rates):
    doc = DOC.read_text(encoding="utf-8")
    for r in rows:
        model_us = model_s(r, rates) * 1e6
        line = (f"| {r.gpu_id} | {r.kernel} | {r.dtype} | {r.bytes:,} | {r.timing} | {r.time_s * 1e6:.3f} | "
                f"{model_us:.3f} | {model_us / (r.time_s * 1e6) - 1:+.1%} |")
        assert line in doc, line
