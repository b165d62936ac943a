"""Structure of the bundled kernel-rate data: rates.csv, kernels.csv and their sources file.

Reads the CSVs with the csv module on purpose: the loader is separate code, and this test guards the data
itself (every GPU covered, values physical, every basis traceable to a named source)."""

import csv
import math
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "gpuwork" / "facts" / "data"
DTYPES = ("bf16", "fp16", "fp32")
PEAK_COLUMN = {"bf16": "bf16_dense_tflops", "fp16": "fp16_dense_tflops", "fp32": "fp32_tflops",
               "fp8": "fp8_dense_tflops"}
FP8_ROWS = {"h100_sxm", "h200_sxm", "b200", "gb200"}  # an fp8 row where FP8 GEMMs were measured ([G14] [G16] [G17])
RATES_HEADER = ["gpu_id", "dtype", "matmul_tflops", "matmul_basis", "mem_bw_gbs", "mem_bw_basis",
                "sm_count", "sm_basis", "sustained_tflops", "sustained_basis"]
KERNELS_HEADER = ["key", "value", "unit", "basis"]
REQUIRED_KERNEL_KEYS = (
    "launch_overhead_eager_us", "launch_overhead_graph_us", "gemm_tile_m", "gemm_tile_n",
    "flash_attn_fwd_fraction", "flash_attn_bwd_fraction", "sdpa_mem_efficient_fraction",
    "nccl_busbw_fraction_nvlink", "nccl_busbw_fraction_ib", "nccl_latency_us", "cpu_adam_params_per_s", "bnb_dequant_4bit_gbs_fraction",
    "liger_fused_ce_logits_saved", "torch_compile_elementwise_fusion",
)
TAG = re.compile(r"\[([A-Z]\d+[a-z]?)\]")


def read_csv(name: str) -> tuple[list[str], list[dict[str, str]]]:
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def defined_tags() -> set[str]:
    text = (DATA / "rates_sources.md").read_text(encoding="utf-8")
    return set(re.findall(r"^- \*\*\[([A-Z]\d+[a-z]?)\]\*\*", text, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def gpus() -> dict[str, dict[str, str]]:
    _, rows = read_csv("gpus.csv")
    return {row["gpu_id"]: row for row in rows}


@pytest.fixture(scope="module")
def rates() -> list[dict[str, str]]:
    header, rows = read_csv("rates.csv")
    assert header == RATES_HEADER
    return rows


@pytest.fixture(scope="module")
def kernels() -> dict[str, dict[str, str]]:
    header, rows = read_csv("kernels.csv")
    assert header == KERNELS_HEADER
    keys = [row["key"] for row in rows]
    assert len(keys) == len(set(keys)), "duplicate key in kernels.csv"
    return {row["key"]: row for row in rows}


def test_every_gpu_has_exactly_the_three_dtypes_and_fp8_only_where_measured(rates, gpus):
    pairs = [(row["gpu_id"], row["dtype"]) for row in rates]
    assert len(pairs) == len(set(pairs)), "duplicate (gpu_id, dtype) row"
    assert set(pairs) == {(gpu_id, dtype) for gpu_id in gpus for dtype in DTYPES} | {(g, "fp8") for g in FP8_ROWS}
    assert all(gpus[g]["fp8_dense_tflops"] for g in FP8_ROWS)  # a card with FP8 tensor cores


def test_values_are_positive_finite_and_sm_count_is_whole(rates):
    for row in rates:
        for column in ("matmul_tflops", "mem_bw_gbs", "sm_count"):
            value = float(row[column])
            assert math.isfinite(value) and value > 0, (row["gpu_id"], row["dtype"], column, row[column])
        assert float(row["sm_count"]).is_integer(), (row["gpu_id"], row["sm_count"])


def test_achievable_exceeds_the_datasheet_only_where_measured_on_a_geforce_card(rates, gpus):
    # GeForce cards run above the rated boost clock their datasheet peak is computed at (rates_sources.md rule 2)
    for row in rates:
        spec = gpus[row["gpu_id"]]
        peak_tflops = float(spec[PEAK_COLUMN[row["dtype"]]])
        if float(row["matmul_tflops"]) > peak_tflops:
            assert spec["class"] == "consumer" and row["matmul_basis"].startswith("measured:"), row["gpu_id"]
            assert float(row["matmul_tflops"]) <= 1.25 * peak_tflops, (row["gpu_id"], row["dtype"])
        assert float(row["mem_bw_gbs"]) <= float(spec["mem_bw_gbs"]), (row["gpu_id"], row["dtype"])


def test_bandwidth_and_sm_count_do_not_depend_on_dtype(rates):
    per_gpu: dict[str, set[tuple[str, str]]] = {}
    for row in rates:
        per_gpu.setdefault(row["gpu_id"], set()).add((row["mem_bw_gbs"], row["sm_count"]))
    assert {gpu_id: len(values) for gpu_id, values in per_gpu.items() if len(values) != 1} == {}


def test_every_basis_names_a_source_that_resolves(rates, kernels):
    tags = defined_tags()
    assert tags, "rates_sources.md defines no [tag]"
    bases = [row[column] for row in rates for column in ("matmul_basis", "mem_bw_basis", "sm_basis")]
    bases += [row["sustained_basis"] for row in rates if row["sustained_tflops"]]
    bases += [row["basis"] for row in kernels.values()]
    for basis in bases:
        used = set(TAG.findall(basis))
        assert used, f"basis without a source tag: {basis!r}"
        assert used <= tags, f"unresolved tags {sorted(used - tags)} in {basis!r}"


def test_derived_rows_say_so(rates):
    # A value not measured on that GPU must say how it was derived; a measured one must quote the measurement.
    for row in rates:
        for column in ("matmul_basis", "mem_bw_basis"):
            assert row[column].startswith(("measured:", "derived:")), (row["gpu_id"], row["dtype"], column)


def _long_azure_fp8_rows(tag: str, gpu_id: str) -> list[float]:
    """TFLOPS of the nine rows of one Azure cuBLASLt FP8 table whose kernels run 0.8 ms or more."""
    with open(DATA / "gemm_measurements.csv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if tag in r["source"]]
    assert len(rows) == 9 and all((r["gpu_id"], r["dtype"]) == (gpu_id, "fp8") for r in rows)
    return [float(r["tflops"]) for r in rows
            if 2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / (float(r["tflops"]) * 1e12) >= 0.8e-3]


def test_a_sustained_rate_is_below_the_large_gemm_rate_and_says_where_it_was_held(rates):
    """The sustained column (docs/gemm.md "The sustained rate"): empty, or a back-to-back figure at most the card's
    large-GEMM rate, with its basis; GH100 (H100 SXM, H200 SXM) and the A100 SXM cards carry one in both 16-bit
    dtypes, and no fp32 row does (nothing measured the SIMT units back to back)."""
    held = {(row["gpu_id"], row["dtype"]): row for row in rates if row["sustained_tflops"]}
    assert set(held) == {(g, d) for g in ("h100_sxm", "h200_sxm", "a100_80_sxm", "a100_40_sxm")
                         for d in ("bf16", "fp16")} | {(g, "fp8") for g in FP8_ROWS}
    for row in rates:
        if not row["sustained_tflops"]:
            assert not row["sustained_basis"], row["gpu_id"]
            continue
        assert 0.8 * float(row["matmul_tflops"]) < float(row["sustained_tflops"]) <= float(row["matmul_tflops"]), row
        assert row["sustained_basis"].startswith(("measured:", "derived:")), row["gpu_id"]
        assert "back to back" in row["sustained_basis"] or "warm-up" in row["sustained_basis"] \
            or "warmed" in row["sustained_basis"], row["gpu_id"]
    # the measured GH100 figure is the median of the H200 sweep's large rows (docs/measurements/h200-2026-12-04)
    import json
    import statistics
    sweep = json.loads((DATA.parents[2] / "docs" / "measurements" / "h200-2026-12-04" / "sweep.json").read_text())
    large = [r["tflops"] for r in sweep["gemm"] if r["dtype"] == "bf16" and r.get("rotated") and r["time_us"] >= 180]
    assert len(large) == 47
    assert float(held[("h200_sxm", "bf16")]["sustained_tflops"]) == round(statistics.median(large), 1)
    # the FP8 ones: the median of Azure's cuBLASLt FP8 kernels of 0.8 ms or more, on the H200 ([G16]) and the GB200
    # ([G17]); the B200 by the dense FP8 peaks' ratio
    for tag, gpu_id, long_count, cards in (("[G16]", "h200_sxm", 4, ("h100_sxm", "h200_sxm")),
                                           ("[G17]", "gb200", 2, ("gb200",))):
        long_fp8 = _long_azure_fp8_rows(tag, gpu_id)
        assert len(long_fp8) == long_count
        for card in cards:
            assert float(held[(card, "fp8")]["sustained_tflops"]) == round(statistics.median(long_fp8), 1)
    sustained = float(held[("gb200", "fp8")]["sustained_tflops"])
    assert float(held[("b200", "fp8")]["sustained_tflops"]) == pytest.approx(sustained * 4500 / 5000, abs=0.5)


def test_kernels_has_required_keys_with_finite_values(kernels):
    missing = [key for key in REQUIRED_KERNEL_KEYS if key not in kernels]
    assert missing == []
    for key, row in kernels.items():
        value = float(row["value"])
        assert math.isfinite(value), key
        assert row["unit"].strip() and row["basis"].strip(), key


def test_kernel_fractions_are_plausible(kernels):
    for key in ("flash_attn_fwd_fraction", "flash_attn_bwd_fraction", "sdpa_mem_efficient_fraction",
                "nccl_busbw_fraction_nvlink", "nccl_busbw_fraction_ib"):
        assert 0 < float(kernels[key]["value"]) <= 1, key
    assert float(kernels["launch_overhead_graph_us"]["value"]) < float(kernels["launch_overhead_eager_us"]["value"])


def test_every_stack_names_its_expert_layout_and_the_loader_refuses_another(tmp_path):
    import shutil

    from gpuwork.errors import CatalogError
    from gpuwork.facts.rates import load_rates

    header, rows = read_csv("stacks.csv")
    assert "moe_experts" in header
    layouts = {row["stack"]: row["moe_experts"] for row in rows}
    assert set(layouts.values()) <= {"fused", "loop"}
    # the default stack follows today's transformers (fused expert tensors); the 4.x loop is asked for per run
    assert layouts["hf-trainer"] == "fused"
    for name in ("rates.csv", "kernels.csv"):
        shutil.copy(DATA / name, tmp_path / name)
    text = (DATA / "stacks.csv").read_text(encoding="utf-8")
    (tmp_path / "stacks.csv").write_text(text.replace(",eager,fused,", ",eager,grouped,", 1), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_rates(tmp_path)
    assert info.value.msg["column"] == "moe_experts" and info.value.msg["value"] == "grouped"


def test_the_loader_reads_the_sustained_rate_refuses_one_above_the_large_gemm_rate_and_allows_an_older_file(
        tmp_path):
    import shutil

    from gpuwork.errors import CatalogError
    from gpuwork.facts.rates import load_rates

    header, rows = read_csv("rates.csv")
    h100 = load_rates(DATA).device("h100_sxm")
    assert h100.gemm_flops["bf16"] == h100.sustained_flops["bf16"] == 701.8e12 < h100.matmul_flops["bf16"]
    assert h100.gemm_flops["fp32"] == h100.matmul_flops["fp32"]  # no sustained fp32 row: the large-GEMM rate
    assert set(load_rates(DATA).device("b200").sustained_flops) == {"fp8"}  # no 16-bit figure held back to back

    def folder(name: str, columns: list[str], table: list[dict[str, str]]):  # the loader caches per folder
        (tmp_path / name).mkdir()
        for other in ("kernels.csv", "stacks.csv"):
            shutil.copy(DATA / other, tmp_path / name / other)
        with open(tmp_path / name / "rates.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(table)
        return tmp_path / name

    high = [dict(r, sustained_tflops="900") if (r["gpu_id"], r["dtype"]) == ("h100_sxm", "bf16") else r for r in rows]
    with pytest.raises(CatalogError) as info:
        load_rates(folder("high", header, high))
    assert info.value.msg["column"] == "sustained_tflops" and info.value.msg["value"] == "900"
    # a data folder from before the column: every GEMM at its large-GEMM rate
    older = load_rates(folder("older", header[:-2], rows)).device("h100_sxm")
    assert older.sustained_flops == {} and older.gemm_flops == older.matmul_flops
