"""Which kernel torch's SDPA runs (TrainPlan.sdpa_backend, gpuwork.estimate.sdpa_backend; docs/attention_backends.md).

Sources: [K22] (gpuwork/facts/data/rates_sources.md): torch 2.11.0+cu130's SDPA on a lent H200, its FLASH_ATTENTION
backend and its default choice (cuDNN 9.19's attention), causal, bf16, 16,384 tokens a call
(docs/measurements/h200-2026-12-04/sweep2.json ``attention``; the choice by condition in sdpa_choice.md); torch's
dispatch order from aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (docs/attention_backends.md).
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.gpu_checks import attention_gpu_problem
from gpuwork.estimate.ops import Phase, step_ops
from gpuwork.estimate.sdpa_backend import SDPA_PREFIX, cudnn_first, op_kernel, sdpa_kernels
from gpuwork.estimate.steptime import curve_fraction, price_ops, stack_kernels
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.paths import data_dir
from gpuwork.facts.rates import (
    ATTENTION_CURVES_CSV,
    CUDNN_KERNEL,
    FA3_KERNEL,
    TORCH_CUDNN_KERNEL,
    TORCH_FLASH_KERNEL,
    load_rates,
)
from gpuwork.plan import Attention, Method, SdpaBackend, TrainPlan
from gpuwork.ui.share import plan_from_query, plan_query

SWEEP2 = Path(__file__).resolve().parents[1] / "docs" / "measurements" / "h200-2026-12-04" / "sweep2.json"
_BACKEND_OF = {"default": TORCH_CUDNN_KERNEL, "FLASH_ATTENTION": TORCH_FLASH_KERNEL}


def _csv_rows(kernel: str) -> list[dict[str, str]]:
    with open(Path(data_dir()) / ATTENTION_CURVES_CSV, encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f) if r["kernel"] == kernel]


def _h100_points():
    return tuple(p for p in load_rates().attention_curves if p.family == "h100")


@pytest.mark.parametrize("kernel", [TORCH_CUDNN_KERNEL, TORCH_FLASH_KERNEL])
def test_h200_rows_are_the_sweep_in_the_files_flop_count_and_load_as_their_own_curve(kernel: str) -> None:
    # gpu_sweep counts a causal call's FLOPs x (1 + 128 / s) (cpu_rates.sdpa_flops); the CSV counts half the matrix
    sweep = json.loads(SWEEP2.read_text(encoding="utf-8"))["attention"]
    measured = {(r["head_dim"], r["seq_len"], p): r[f"{p}_tflops"] for r in sweep
                if _BACKEND_OF.get(r["backend"]) == kernel for p in ("fwd", "bwd")}
    rows = _csv_rows(kernel)
    assert len(rows) == len(measured) == 20
    points = _h100_points()
    for r in rows:
        assert (r["family"], r["causal"], r["source"], r["peak_tflops"]) == ("h100", "1", "K22", "989")
        hd, seq, p = int(r["head_dim"]), int(r["seq_len"]), r["pass"]
        assert float(r["tflops"]) == pytest.approx(measured[hd, seq, p] / (1 + 128 / seq), abs=0.05)
        # one source: the curve is the rows themselves
        assert curve_fraction(points, p, True, hd, seq, kernel=kernel) * 989 == pytest.approx(float(r["tflops"]))
    # no full-matrix rows: a full-matrix pass has no curve of this kernel (pricing then takes the next kernel's)
    assert curve_fraction(points, "fwd", False, 128, 4096, kernel=kernel) is None


def test_cudnn_as_torch_runs_it_is_near_twice_its_flash_attention_2() -> None:
    points = _h100_points()
    for seq in (2048, 4096, 8192):
        cudnn = curve_fraction(points, "fwd", True, 128, seq, kernel=TORCH_CUDNN_KERNEL)
        flash = curve_fraction(points, "fwd", True, 128, seq, kernel=TORCH_FLASH_KERNEL)
        assert 1.7 < cudnn / flash < 2.0


def test_op_kernel_by_plan() -> None:
    base = TrainPlan(model="llama-3.2-1b", attention=Attention.SDPA)
    assert base.sdpa_backend is SdpaBackend.FLASH  # the default: FlashAttention-2 first
    assert op_kernel(base) == SDPA_PREFIX + "flash"
    assert op_kernel(base.replace(sdpa_backend="auto")) == SDPA_PREFIX + "auto"
    assert op_kernel(base.replace(sdpa_backend="efficient")) == SDPA_PREFIX + "efficient"
    # torch refuses cuDNN's attention under use_deterministic_algorithms (check_cudnn_deterministic)
    for backend in ("auto", "cudnn"):
        assert op_kernel(base.replace(sdpa_backend=backend, deterministic=True)) == SDPA_PREFIX + "flash"
    assert op_kernel(base.replace(attention=Attention.FLASH)) == ""
    assert op_kernel(base.replace(attention=Attention.FLASH3)) == FA3_KERNEL
    assert op_kernel(base.replace(attention=Attention.CUDNN)) == CUDNN_KERNEL


@pytest.mark.parametrize("gpu_id, first", [("h100_sxm", True), ("h100_pcie", True), ("h200_sxm", True),
                                           ("b200", True), ("gb200", True), ("a100_80_sxm", False),
                                           ("rtx4090", False), ("rtx5090", False), ("l40s", False),
                                           ("mi300x", False)])
def test_cudnn_first_by_compute_capability(gpu_id: str, first: bool) -> None:
    # check_prefer_cudnn_attention: major 9 or 10 (CUDA 12 builds: minor 0 or 3); the RTX 5090 is 12.0
    assert cudnn_first(get_gpu(gpu_id)) is first


def test_backend_resolution() -> None:
    torch_cudnn = (TORCH_CUDNN_KERNEL, CUDNN_KERNEL)
    assert sdpa_kernels(SDPA_PREFIX + "auto", True, False) == (torch_cudnn, False)
    assert sdpa_kernels(SDPA_PREFIX + "auto", True, True) == (torch_cudnn, False)  # cuDNN takes the mask
    assert sdpa_kernels(SDPA_PREFIX + "auto", False, True) == ((TORCH_FLASH_KERNEL,), True)  # flash has no mask
    assert sdpa_kernels(SDPA_PREFIX + "flash", True, False) == ((TORCH_FLASH_KERNEL,), False)
    assert sdpa_kernels(SDPA_PREFIX + "flash", True, True) == ((TORCH_FLASH_KERNEL,), True)
    assert sdpa_kernels(SDPA_PREFIX + "cudnn", False, True) == (torch_cudnn, False)
    assert sdpa_kernels(SDPA_PREFIX + "efficient", True, False) == ((TORCH_FLASH_KERNEL,), True)
    assert sdpa_kernels(FA3_KERNEL, True, False) == ((FA3_KERNEL,), False)
    assert sdpa_kernels("", True, True) == ((), True)


def _forward_attention_s(plan: TrainPlan, gpu_id: str) -> tuple[float, tuple]:
    gpu, rates = get_gpu(gpu_id), load_rates()
    profile = rates.stacks[plan.stack]
    ops = step_ops(plan, get_spec(plan.model), stack_kernels(profile))
    fused = tuple(op for op in ops if op.attention_pass and op.phase is Phase.FORWARD)
    return price_ops(fused, gpu, rates.device(gpu_id), rates, profile).by_kind["attention"], fused


def _row_tf(kernel: str, attention_pass: str, seq: int) -> float:
    (row,) = [r for r in _csv_rows(kernel) if (r["pass"], r["head_dim"], r["seq_len"]) == (attention_pass, "128",
                                                                                         str(seq))]
    return float(row["tflops"])


@pytest.mark.parametrize("backend, kernel", [("auto", TORCH_CUDNN_KERNEL), ("cudnn", TORCH_CUDNN_KERNEL),
                                             ("flash", TORCH_FLASH_KERNEL)])
def test_hand_counted_forward_attention_on_h200(backend: str, kernel: str) -> None:
    # Llama-3.1-8B at 4,096 tokens, batch 1: 32 layers x 32 heads x head dim 128. A causal forward is
    # 4 s^2 a d / 2 FLOPs at the measured rate (the row counts half the matrix; the op's diagonal blocks, x (1 + 128
    # / s), go through at the same time); the H200's dense bf16 peak is the 989 TF the row is a share of
    seq, layers, heads, head_dim = 4096, 32, 32, 128
    plan = TrainPlan(model="llama-3.1-8b", method=Method.LORA, seq_len=seq, batch_size=1, sdpa_backend=backend)
    seconds, fused = _forward_attention_s(plan, "h200_sxm")
    assert sum(op.count for op in fused) == layers
    expected = layers * 4 * seq * seq * heads * head_dim / 2 / (_row_tf(kernel, "fwd", seq) * 1e12)
    assert seconds == pytest.approx(expected, rel=1e-6)


def test_auto_is_flash_attention_2_on_an_a100_and_deterministic_runs_flash_on_hopper() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method=Method.LORA, seq_len=4096, batch_size=1)
    auto = plan.replace(sdpa_backend="auto")
    assert _forward_attention_s(auto, "a100_80_sxm")[0] == _forward_attention_s(plan, "a100_80_sxm")[0]
    assert _forward_attention_s(auto.replace(deterministic=True), "h100_sxm")[0] == pytest.approx(
        _forward_attention_s(plan.replace(deterministic=True), "h100_sxm")[0])
    assert _forward_attention_s(auto, "h100_sxm")[0] < 0.6 * _forward_attention_s(plan, "h100_sxm")[0]


def test_a_padding_mask_runs_cudnn_under_auto_and_the_memory_efficient_kernel_under_flash() -> None:
    # hf-trainer hands SDPA the padding mask (stacks.csv sdpa_padding_mask): no causal block skipping either way
    plan = TrainPlan(model="llama-3.1-8b", method=Method.LORA, seq_len=2048, batch_size=2, lengths="padded")
    auto_s, fused = _forward_attention_s(plan.replace(sdpa_backend="auto"), "h100_sxm")
    flash_s, _ = _forward_attention_s(plan, "h100_sxm")
    assert all(not op.causal and op.mem_efficient for op in fused)
    points = _h100_points()
    # [K4g]'s cuDNN full-matrix forward (no torch row without the causal mask)
    full = curve_fraction(points, "fwd", False, 128, 2048, kernel=CUDNN_KERNEL) * 989e12
    assert auto_s == pytest.approx(sum(op.flops * op.count for op in fused) / full, rel=1e-6)
    assert flash_s > 2 * auto_s


def test_plan_checks_and_sweeps() -> None:
    with pytest.raises(PlanError) as err:
        TrainPlan(attention=Attention.FLASH, sdpa_backend="cudnn")
    assert err.value.field == "sdpa_backend"
    plan = TrainPlan(sdpa_backend="auto")
    assert plan.replace(attention="flash").sdpa_backend is SdpaBackend.FLASH  # a sweep out of SDPA
    assert plan.replace(seq_len=1024).sdpa_backend is SdpaBackend.AUTO
    with pytest.raises(PlanError):
        TrainPlan(sdpa_backend="cudnnn")
    assert plan_from_query(plan_query(plan)) == plan  # the share link carries it
    assert "sdpa_backend" not in plan_query(TrainPlan())
    cudnn = TrainPlan(sdpa_backend="cudnn")
    assert attention_gpu_problem(cudnn, get_gpu("a100_80_sxm")) is None
    assert attention_gpu_problem(cudnn, get_gpu("mi300x")) is not None  # torch's cuDNN check: NVIDIA sm80-sm121
    volta = dataclasses.replace(get_gpu("a100_80_sxm"), compute_capability="7.0")
    assert attention_gpu_problem(cudnn, volta) is not None
    assert attention_gpu_problem(TrainPlan(), volta) is None


def test_the_flag_and_the_rental_request_carry_it() -> None:
    from gpuwork.cli import build_parser
    from gpuwork.cli.args import plan_from_args
    from gpuwork.present.request import rental_request

    args = build_parser().parse_args(["estimate", "--sdpa-backend", "auto"])
    assert plan_from_args(args).sdpa_backend is SdpaBackend.AUTO
    plan = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", sdpa_backend="auto")
    request = rental_request(plan, lang="en")
    assert request.fields["suggested"]["sdpa_backend"] == "auto"
    assert "sdpa_backend auto" in request.text
    assert "sdpa_backend" not in rental_request(plan.replace(sdpa_backend="flash"), lang="en").text


def test_the_form_shows_it_for_sdpa_only() -> None:
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm({"model": "llama-3.2-1b", "method": "full"})
    field = form.controls["sdpa_backend"]
    assert field.layout.display is None and [v for _, v in field.options] == ["flash", "auto", "cudnn", "efficient"]
    field.value = "auto"
    assert form.error is None and form.plan.sdpa_backend is SdpaBackend.AUTO
    form.controls["attention"].value = "flash"  # hidden: not read
    assert form.error is None and form.plan.sdpa_backend is SdpaBackend.FLASH and field.layout.display == "none"
    ru = SizingForm({"model": "llama-3.2-1b"}, lang="ru")
    assert [label for label, _ in ru.controls["sdpa_backend"].options][0] == "сначала FlashAttention-2"


def test_a_head_dim_torch_did_not_measure_takes_the_kernel_that_did() -> None:
    # Gemma-2-9B's head dim 256: torch's rows are 64 / 128, flash-attn's causal forward ([K4c]) measured 256
    from gpuwork.facts.rates import FA2_KERNEL

    seq = 4096
    plan = TrainPlan(model="gemma-2-9b", method=Method.LORA, seq_len=seq, batch_size=1)
    seconds, fused = _forward_attention_s(plan, "h100_sxm")
    assert fused and all(op.n == 256 for op in fused)
    fa2 = curve_fraction(_h100_points(), "fwd", True, 256, seq, kernel=FA2_KERNEL) * 989e12 * (1 + 128 / seq)
    assert seconds == pytest.approx(sum(op.flops * op.count for op in fused) / fa2, rel=1e-6)
    assert curve_fraction(_h100_points(), "fwd", True, 256, seq, kernel=TORCH_FLASH_KERNEL) != pytest.approx(
        fa2 / 989e12 / (1 + 128 / seq))
