"""scripts/gpu_check.py's sections on the CPU: the kernel table (tiny sizes, against an H200's op-model rates worked
by hand), the calibration and Trainer sections (slow: real training), and the Markdown they print. The GPU run
itself needs CUDA; everything here is what runs the same on a CPU."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from gpuwork.facts.rates import load_rates

torch = pytest.importorskip("torch")

from gpuwork.facts.catalog import get_gpu  # noqa: E402
from gpuwork.plan import TrainPlan  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check_script", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_the_kernel_table_runs_on_a_cpu_against_an_h200s_rates(gpu_check, one_thread) -> None:
    h200 = get_gpu("h200_sxm")
    rows = gpu_check.kernel_rows("cpu", h200, dtype="bf16", gemm_shapes=((4096, 4096, 1), (64, 32, 16)),
                                 copy_bytes=1 << 16, sdpa_shape=(1, 2, 32, 16), repeats=2)
    by = {(r["kernel"], r["shape"]): r for r in rows}
    assert [r["kernel"] for r in rows] == ["GEMM bf16", "GEMM bf16", "copy (clone)", "eager dispatch per op",
                                           "eager dispatch per kernel", "SDPA fwd (causal)", "SDPA bwd (causal)"]
    assert all(isinstance(r["measured"], float) and math.isfinite(r["measured"]) and r["measured"] > 0 for r in rows)
    assert all(r["ratio"] == pytest.approx(r["measured"] / r["model"]) for r in rows)
    # the GEMMs as price_ops prices them (estimate.gemm's shape model): k = 1 reads and writes the 4096 x 4096
    # output once, so the memory floor binds (32 MiB + 16 KiB at the H200's 4.01 TB/s copy, + 4 us per kernel)
    rates = load_rates()
    thin = by[("GEMM bf16", "4096 x 4096 x 1")]
    floor_s = rates.kernel("gemm_latency_us") * 1e-6 + (4096 * 4096 + 2 * 4096) * 2 / 4010e9
    assert thin["model"] == pytest.approx(2 * 4096 * 4096 / floor_s)
    assert thin["basis"].startswith("GEMM shape model: memory floor")
    # a 64 x 32 x 16 GEMM: one small tile in one wave, the kernel's and the wave's fixed costs dominate
    small = by[("GEMM bf16", "64 x 32 x 16")]
    assert small["model"] < 2 * 64 * 32 * 16 / (rates.kernel("gemm_latency_us") * 1e-6)
    assert "1 wave(s) on 132 SMs" in small["basis"] and "sustained_tflops 701.8 TF" in small["basis"]
    assert by[("copy (clone)", "0.0625 MiB")]["model"] == pytest.approx(4010e9)  # STREAM copy on H200 [R5]
    kernels = load_rates().kernels
    assert by[("eager dispatch per op", "1-element mul")]["model"] == pytest.approx(
        kernels["launch_overhead_eager_nograd_us"] * 1e-6)  # the bare op
    assert by[("eager dispatch per kernel", "nn.Linear fwd + bwd")]["model"] == pytest.approx(
        (kernels["launch_overhead_eager_us"] + 2 * kernels["launch_overhead_eager_backward_us"]) / 3 * 1e-6)
    # the H200 prices fused attention with the H100's measured curves (attention_curves.csv): 32 tokens lie below
    # the shortest measured length, so the curve's first point, causal, at the nearest head dim measured
    from gpuwork.facts.rates import FA2_KERNEL

    # SDPA's flash kernel is FlashAttention-2: its own rows, not FlashAttention-3's or cuDNN's of the same family
    points = [p for p in load_rates().attention_families["h100"] if p.kernel == FA2_KERNEL]
    first = {(p.attention_pass, p.causal): min((q for q in points if (q.attention_pass, q.causal) ==
                                                 (p.attention_pass, p.causal)), key=lambda q: (q.head_dim, q.seq_len))
             for p in points}
    fwd = by[("SDPA fwd (causal)", "b1 h2 s32 d16")]
    bwd = by[("SDPA bwd (causal)", "b1 h2 s32 d16")]
    assert fwd["model"] == pytest.approx(first[("fwd", True)].fraction * h200.bf16_dense_flops)
    assert f"attention_curves.csv h100 {FA2_KERNEL} fwd causal" in fwd["basis"]
    assert bwd["model"] > 0 and f"attention_curves.csv h100 {FA2_KERNEL} bwd causal" in bwd["basis"]
    lines = gpu_check.kernels_markdown(rows)
    assert lines[2].startswith("| kernel | shape | unit | measured | op model | ratio |")
    assert any(line.startswith("| GEMM bf16 | 4096 x 4096 x 1 | TFLOPS | ")
               and f"| {thin['model'] / 1e12:.1f} |" in line for line in lines)
    assert any(line.startswith("| eager dispatch per op | 1-element mul | us | ") and "| 7.20 |" in line
               for line in lines)


def test_without_a_reference_gpu_the_model_columns_stay_empty(gpu_check, one_thread) -> None:
    rows = gpu_check.kernel_rows("cpu", None, dtype="fp32", gemm_shapes=((32, 16, 8),), copy_bytes=1 << 12,
                                 sdpa_shape=(1, 1, 16, 8), repeats=2)
    gemm = rows[0]
    assert (gemm["model"], gemm["ratio"], gemm["basis"]) == (None, None, "")
    assert "| GEMM fp32 | 32 x 16 x 8 | TFLOPS | " in gpu_check.kernels_markdown(rows)[4]
    assert gpu_check.kernels_markdown(rows)[4].endswith("| - | - |  |")


def test_the_sections_are_markdown_before_the_trial_grid(gpu_check) -> None:
    kernels = [{"kernel": "GEMM bf16", "shape": "8 x 8 x 8", "unit": "TFLOPS", "measured": 2e12, "model": 4e12,
                "ratio": 0.5, "basis": "b"}]
    calibration = [{"method": "lora", "model": "m", "a": [512, 4], "b": [2048, 2], "measured_a_s": 0.1,
                    "priced_a_s": 0.09, "factor": 0.9, "measured_b_s": 0.4, "uncalibrated_b_s": 0.36,
                    "uncalibrated_error": -0.1, "calibrated_b_s": 0.4, "error": 0.0},
                   {"method": "full", "model": "m", "error_text": "RuntimeError: no rates"}]
    text = gpu_check.markdown([], None, 1.0, kernels=kernels, calibration=calibration)
    assert "## Kernels" in text and "## Calibration" in text and "## Trials" not in text
    assert "| GEMM bf16 | 8 x 8 x 8 | TFLOPS | 2.0 | 4.0 | 0.50 | b |" in text
    assert "| lora | m | 512 x 4 | 2048 x 2 | 0.1000 | 0.0900 | 0.900 | 0.4000 | 0.3600 | -10.0% | 0.4000 | +0.0% |" \
        in text
    assert "RuntimeError: no rates |" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_main_refuses_without_cuda_and_writes_nothing(gpu_check, tmp_path, capsys) -> None:
    assert gpu_check.main(["--out", str(tmp_path / "g.md"), "--sections", "kernels"]) == 1
    assert "no CUDA GPU" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_calibration_section_runs_real_trials_on_a_cpu(gpu_check, one_thread) -> None:
    from gpuwork.measure.cpu_rates import cpu_plan, measure_cpu_rates

    rates = measure_cpu_rates(shapes=((64, 256, 256),), copy_bytes=1 << 22, repeats=2)
    plan_a = cpu_plan(TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=32, batch_size=2))
    row = gpu_check.calibration_case(plan_a, plan_a.replace(seq_len=64, batch_size=1), device="cpu", gpu=rates.gpu,
                                     device_rates=rates.device, steps=2, warmup=1)
    assert row["a"] == [32, 2] and row["b"] == [64, 1]
    assert row["factor"] == pytest.approx(row["priced_a_s"] / row["measured_a_s"])
    assert row["error"] == pytest.approx(row["calibrated_b_s"] / row["measured_b_s"] - 1)
    assert row["calibrated_b_s"] == pytest.approx(row["uncalibrated_b_s"] / row["factor"])
    assert row["environment"]["device"] == "cpu"
    assert "| lora | tiny-llama | 32 x 2 | 64 x 1 |" in gpu_check.calibration_markdown([row])[4]


@pytest.mark.slow
def test_the_trainer_section_measures_a_real_trainer_on_a_cpu(gpu_check, one_thread) -> None:
    row = gpu_check.trainer_case("tiny-llama", device="cpu", seq_len=32, batch_size=2, steps=3, warmup=1,
                                 gpu=get_gpu("h200_sxm"))
    assert (row["method"], row["steps"], row["device"]) == ("lora", 3, "cpu")
    assert row["median_step_s"] > 0 and row["tokens_per_s"] == pytest.approx(64 / row["median_step_s"])
    assert row["rss_peak_bytes"] > 0 and row["cuda_peak_allocated_bytes"] is None
    assert row["estimated_step_s"] > 0  # estimate_time of the plan the callback inferred, on an H200
    line = gpu_check.trainer_markdown([row])[4]
    assert line.startswith("| lora | tiny-llama | 32 x 2 | cpu | 3 | ")
    # the priced plan, as the callback read it: on a CPU trainer_case builds the model in fp32
    assert row["plan"]["precision"] == "fp32" and row["plan"]["attention"] == "sdpa"
    assert line.endswith("| precision fp32, attention sdpa, optimizer_impl "
                         f"{row['plan']['optimizer_impl']}, grad_checkpointing False |")


def test_sdpa_rows_per_kernel_price_each_backend_as_a_plan_of_it(gpu_check, one_thread) -> None:
    """Each SDPA kernel timed alone (CUDA only in a real run; here on a CPU, where torch has FlashAttention's CPU
    kernel and no cuDNN): the flash rows against the curve of torch's own FlashAttention-2 rows, the cuDNN rows
    refused with torch's reason and no figure."""
    from gpuwork.estimate.steptime import attention_family, curve_fraction
    from gpuwork.facts.rates import TORCH_FLASH_KERNEL

    h200, rates = get_gpu("h200_sxm"), load_rates()
    rows = gpu_check._sdpa_backend_rows("cpu", h200, rates, "bf16", (1, 2, 32, 16), 2)
    assert [r["kernel"] for r in rows] == ["SDPA fwd (causal, flash only)", "SDPA bwd (causal, flash only)",
                                           "SDPA fwd (causal, cudnn only)", "SDPA bwd (causal, cudnn only)"]
    points = rates.attention_families[attention_family(h200, rates)]
    for row, name in zip(rows[:2], ("fwd", "bwd"), strict=True):
        curve = curve_fraction(points, name, True, 16, 32, None, TORCH_FLASH_KERNEL)
        assert curve is not None and row["model"] == pytest.approx(curve * h200.bf16_dense_flops)
        assert row["measured"] > 0 and row["ratio"] == pytest.approx(row["measured"] / row["model"])
        assert TORCH_FLASH_KERNEL in row["basis"]
    for row in rows[2:]:
        assert row["measured"] is None and row["model"] is None and row["basis"]


@pytest.mark.parametrize(("gpu_id", "seq", "kernel"), [("h200_sxm", 32, ""), ("h100_sxm", 4096, "sdpa:flash"),
                                                         ("h100_sxm", 3072, "sdpa:cudnn"), ("a100_80_sxm", 2048, ""),
                                                         ("rtx4090", 1024, "sdpa:flash")])
def test_the_checks_attention_rate_is_what_the_step_model_charges_an_attention_op(gpu_id, seq, kernel) -> None:
    """gpu_check's reference for a timed attention kernel is steptime.attention_flops_s, the rate price_ops
    charges: one causal op of either pass costs its FLOPs over that rate, to the last digit."""
    from gpuwork.estimate.ops import Kind, Op, Phase
    from gpuwork.estimate.steptime import attention_flops_s, price_ops
    from gpuwork.plan import Stack

    rates, gpu = load_rates(), get_gpu(gpu_id)
    device = rates.device(gpu_id)
    for attention_pass, phase in (("fwd", Phase.FORWARD), ("bwd", Phase.BACKWARD)):
        flops = 4.0 * 4096 * seq * seq * 128 * (1 if seq > 32 else 64)  # well above the per-kernel floor
        op = Op(name="attention", kind=Kind.ATTENTION, phase=phase, flops=flops, bytes=0.0, launches=1, count=1,
                m=seq, n=128, attention_pass=attention_pass, causal=True, kernel=kernel)
        rate, basis = attention_flops_s(gpu, device, rates, op)
        price = price_ops((op,), gpu, device, rates, rates.stacks[Stack.FRAMEWORK])
        assert price.by_kind["attention"] == pytest.approx(flops / rate, rel=1e-12)
        assert basis.startswith(("attention_curves.csv", "kernels.csv")) and "dense peak" in basis
