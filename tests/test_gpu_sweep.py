"""scripts/gpu_sweep.py runs on a CPU at tiny sizes and counts what it says it counts (the GPU run is the same code)."""

import json
from types import SimpleNamespace

import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def sweep():
    return load_benchmark("gpu_sweep", "scripts")


def test_busy_time_is_the_union_of_overlapping_device_intervals(sweep):
    events = [SimpleNamespace(time_range=SimpleNamespace(start=s, end=e)) for s, e in ((0, 10), (5, 12), (20, 25))]
    assert sweep._busy_seconds(events) == pytest.approx(17e-6)  # 0-12 and 20-25 us


def test_the_gemm_rate_is_two_m_n_k_flops_over_the_kernel_time(sweep):
    for layout in ("NT", "NN", "TN"):
        row = sweep.gemm_row(32, 48, 16, "fp32", layout, device="cpu", rotate=True)
        assert row["tflops"] == pytest.approx(2 * 32 * 48 * 16 / (row["time_us"] * 1e-6) / 1e12)
        assert row["operand_sets"] > 1  # tiny operands are cycled past twice the (assumed) cache


@pytest.mark.parametrize(("kernel", "moved"), [("copy", 2), ("add", 3), ("sum", 1)])
def test_memory_rows_count_bytes_read_and_written(sweep, kernel, moved):
    rows = sweep.membw_rows(4096, kernel, device="cpu", repeats=3)
    assert [r["timing"] for r in rows] == ["batch hot", "batch", "cold"]
    for r in rows:
        assert r["bytes"] == moved * 4096
        assert r["gbs"] == pytest.approx(r["bytes"] / (r["time_us"] * 1e-6) / 1e9)


def test_the_quick_run_writes_every_section_with_its_environment(sweep, tmp_path):
    out = tmp_path / "s.json"
    assert sweep.main(["--device", "cpu", "--quick", "--json", str(out), "--commit", "abc123"]) == 0
    result = json.loads(out.read_text())
    assert result["environment"]["commit"] == "abc123" and result["environment"]["host_cpu"]
    assert {r["layout"] for r in result["gemm"]} == {"NT", "NN", "TN"}
    assert {r["kernel"] for r in result["membw"]} == {"copy", "add", "sum"}
    lora, full = result["step"]
    assert lora["method"] == "lora" and lora["trainable_params"] < full["trainable_params"]
    assert lora["aten_calls"] > 100 and lora["wall_s"] > 0
    assert {r["lora_rank"] for r in result["lora_gemm"]} == {4} and len(result["lora_gemm"]) == 6
    assert all(r["fwd_tflops"] > 0 and r["bwd_tflops"] > 0 for r in result["attention"])
    dispatch, python_loop, copy = result["host"]
    assert dispatch["per_kernel_us"] == pytest.approx((dispatch["module_forward_us"] + dispatch["module_backward_us"]) / 3)
    assert python_loop["ns"] > 0 and copy["eager_gbs"] > 0
    assert {r["path"] for r in result["gemm_paths"]} == {"eager hot", "graph hot", "eager rotated", "graph rotated"}
    text = out.with_suffix(".md").read_text()
    assert "## GEMM" in text and "## Memory-bound kernels" in text and "## Eager steps" in text
    assert "## LoRA GEMMs" in text and "## Causal SDPA" in text and "## Host" in text and "four ways" in text
    (tmp_path / "again.md").unlink(missing_ok=True)
    assert sweep.main(["--render", str(out), "--out", str(tmp_path / "again.md")]) == 0
    assert (tmp_path / "again.md").read_text() == text


def test_without_a_gpu_the_default_run_refuses_and_writes_nothing(sweep, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    assert sweep.main(["--json", str(tmp_path / "s.json")]) == 1
    assert not list(tmp_path.iterdir())


def test_step_cases_are_parsed_and_a_bad_method_is_named(sweep):
    assert sweep.parse_step_cases("tiny-llama:lora:64:2, qwen2.5-0.5b:full:128:1") == (
        ("tiny-llama", "lora", 64, 2), ("qwen2.5-0.5b", "full", 128, 1))
    with pytest.raises(ValueError, match="method must be lora or full"):
        sweep.parse_step_cases("tiny-llama:qlora:64:2")


def test_the_step_section_runs_the_cases_given(sweep, tmp_path):
    out = tmp_path / "s.json"
    assert sweep.main(["--device", "cpu", "--quick", "--sections", "step", "--json", str(out),
                       "--step-cases", "tiny-llama:full:16:2"]) == 0
    (row,) = json.loads(out.read_text())["step"]
    assert (row["model"], row["method"], row["seq_len"], row["batch_size"]) == ("tiny-llama", "full", 16, 2)


def test_the_sustained_section_runs_only_when_named_and_reports_rates_by_window(sweep, tmp_path):
    out = tmp_path / "s.json"
    assert "sustained" not in sweep.parse_args([]).sections  # seconds of GEMMs: asked for by name
    assert sweep.main(["--device", "cpu", "--quick", "--sections", "sustained", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["sustained"]
    assert (row["m"], row["n"], row["k"]) == (32, 32, 32) and row["clocks"] is None  # no nvidia-smi on a CPU
    starts = [w["start_s"] for w in row["windows"]]
    assert len(starts) >= 2 and starts == sorted(starts) and starts[0] == pytest.approx(0, abs=1e-3)
    assert all(w["tflops"] > 0 for w in row["windows"])
    assert "## One GEMM held back to back" in out.with_suffix(".md").read_text()
