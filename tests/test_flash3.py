"""FlashAttention-3 and cuDNN's attention as plan choices (attention 'flash3', 'cudnn'): priced from their own
attention_curves.csv rows [K4g][K4d], refused where they cannot run with one clear message in both languages, stored
like FlashAttention-2, offered by the CLI and the sizing tab, read from configs, and listed as substitutions by the
CPU trial."""

from __future__ import annotations

import csv
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.steptime import price_ops, stack_kernels
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.configs import import_configs
from gpuwork.facts.model import get_spec
from gpuwork.facts.paths import data_dir
from gpuwork.facts.rates import ATTENTION_CURVES_CSV, CUDNN_KERNEL, FA3_KERNEL, load_rates
from gpuwork.measure.cpu_rates import cpu_plan
from gpuwork.message import msg
from gpuwork.plan import Attention, Method, TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory, estimate_time

PLAN = dict(model="llama-3.1-8b", method=Method.LORA, seq_len=8192, batch_size=1, grad_checkpointing=True)


def _csv_tflops(kernel: str, attention_pass: str, causal: bool, head_dim: int, seq_len: int) -> float:
    """The level attention_curves.csv gives at a length several sources measured: the mean over sources of each
    source's own mean (facts.rates.attention_curves)."""
    by_source: dict[str, list[float]] = {}
    with open(Path(data_dir()) / ATTENTION_CURVES_CSV, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if (row["family"], row["kernel"], row["pass"], row["causal"], row["head_dim"], row["seq_len"]) == (
                    "h100", kernel, attention_pass, str(int(causal)), str(head_dim), str(seq_len)):
                by_source.setdefault(row["source"], []).append(float(row["tflops"]))
    means = [sum(v) / len(v) for v in by_source.values()]
    return sum(means) / len(means)


def _fused_seconds(attention: Attention, attention_pass: str, gpu_id: str = "h100_sxm") -> tuple[float, float]:
    """Seconds of the step's fused attention kernels of one pass on ``gpu_id``, and their FLOPs."""
    plan = TrainPlan(**PLAN, attention=attention)
    rates, gpu = load_rates(), get_gpu(gpu_id)
    profile = rates.stacks[plan.stack]
    ops = tuple(op for op in step_ops(plan, get_spec(plan.model), stack_kernels(profile))
                if op.attention_pass == attention_pass)
    assert ops and all(op.causal and op.m == 8192 and op.n == 128 for op in ops)
    seconds = price_ops(ops, gpu, rates.device(gpu_id), rates, profile).by_kind["attention"]
    return seconds, sum(op.flops * op.count for op in ops)


def test_flash3_forward_is_priced_from_its_own_rows() -> None:
    # causal forward, head dim 128, 8k: FA3 paper 602 TF [K4g], PR 1791 630.0 TF [K4d]; the op counts the
    # diagonal blocks too (x (1 + 128 / 8192)), the curves count causal as half the matrix
    seconds, flops = _fused_seconds(Attention.FLASH3, "fwd")
    tflops = _csv_tflops(FA3_KERNEL, "fwd", True, 128, 8192)
    assert tflops == pytest.approx((602 + 630.0) / 2)
    assert seconds == pytest.approx(flops / (tflops * 1e12 * (1 + 128 / 8192)), rel=1e-9)


def test_flash3_causal_backward_is_its_level_at_8k() -> None:
    # no causal backward chart in the paper: PR 1791's 531.6 TF at 8k is the level [K4d]
    seconds, flops = _fused_seconds(Attention.FLASH3, "bwd")
    assert seconds == pytest.approx(flops / (531.6e12 * (1 + 128 / 8192)), rel=1e-9)


def test_flash3_is_faster_than_flash2_where_attention_dominates() -> None:
    fa2, _ = _fused_seconds(Attention.FLASH, "fwd")
    fa3, _ = _fused_seconds(Attention.FLASH3, "fwd")
    fa2_tf = (333 + (284.1 + 281.4) / 2) / 2  # [K4c] and [K4d] at 8k, as test_attention_curves
    assert fa2 / fa3 == pytest.approx((602 + 630.0) / 2 / fa2_tf, rel=1e-9)


def test_flash3_on_an_a100_is_one_clear_error_in_both_languages() -> None:
    plan = TrainPlan(**PLAN, attention="flash3")
    with pytest.raises(PlanError) as info:
        estimate_time(plan, "a100_80_sxm")
    assert info.value.field == "attention"
    assert info.value.msg == msg("error.plan.flash3_gpu", gpu="A100 80GB SXM", capability="8.0")
    en, ru = info.value.text("en"), info.value.text("ru")
    assert "Hopper" in en and "attention='flash'" in en and "8.0" in en
    assert "только на GPU Hopper" in ru and "attention='flash'" in ru
    estimate_time(plan, "h200_sxm")  # Hopper: no error


def test_cudnn_is_priced_from_its_own_rows_on_h100_and_as_flash_attention_2_elsewhere() -> None:
    # causal forward, head dim 128, 8k: cuDNN 529 TF [K4g]; the A100 has no cuDNN rows: cuDNN runs the
    # FlashAttention-2 algorithm (cuDNN docs), so FlashAttention-2's A100 curve prices it
    seconds, flops = _fused_seconds(Attention.CUDNN, "fwd")
    assert _csv_tflops(CUDNN_KERNEL, "fwd", True, 128, 8192) == 529
    assert seconds == pytest.approx(flops / (529e12 * (1 + 128 / 8192)), rel=1e-9)
    assert _fused_seconds(Attention.CUDNN, "bwd", "a100_80_sxm") == _fused_seconds(Attention.FLASH, "bwd", "a100_80_sxm")


def test_cudnn_on_a_gpu_without_it_is_one_clear_error() -> None:
    plan = TrainPlan(**PLAN, attention="cudnn")
    volta = dataclasses.replace(get_gpu("a100_80_sxm"), compute_capability="7.0", display_name="a Volta card")
    for gpu, capability in ((volta, "7.0"), (get_gpu("mi300x"), "gfx942")):
        with pytest.raises(PlanError) as info:
            estimate_time(plan, gpu)
        assert info.value.field == "attention" and info.value.msg.code == "error.plan.cudnn_gpu"
        assert capability in info.value.text("en") and "8.0 (Ampere)" in info.value.text("ru")
    estimate_time(plan, "a100_80_sxm")  # compute capability 8.0: no error


@pytest.mark.parametrize("attention", ["flash3", "cudnn", "flash4"])
def test_fused_kernels_store_what_flash_stores(attention: str) -> None:
    for extra in ({}, {"method": Method.FULL, "grad_checkpointing": False}, {"precision": "fp32"}):
        fa2 = estimate_memory(TrainPlan(**{**PLAN, **extra}, attention="flash"))
        other = estimate_memory(TrainPlan(**{**PLAN, **extra}, attention=attention))
        assert other.device_total_bytes == fa2.device_total_bytes
        assert other.breakdown == fa2.breakdown


def test_the_cpu_trial_runs_sdpa_and_lists_the_substitution() -> None:
    import torch

    from gpuwork.measure.runtime import _attention

    assert cpu_plan(TrainPlan(**PLAN, attention="flash3")).attention is Attention.SDPA
    substitutions: list = []
    assert _attention(Attention.FLASH3, torch.device("cpu"), torch.bfloat16, substitutions) == "sdpa"
    assert substitutions == [msg("trial.sub.flash3", reason="no_cuda")]
    assert render(substitutions[0]) == "attention flash3 -> sdpa: no CUDA device"
    assert render(substitutions[0], "ru") == "attention flash3 → sdpa: нет устройства CUDA"
    assert cpu_plan(TrainPlan(**PLAN, attention="cudnn")).attention is Attention.SDPA
    substitutions.clear()
    assert _attention(Attention.CUDNN, torch.device("cpu"), torch.bfloat16, substitutions) == "sdpa"
    assert substitutions == [msg("trial.sub.cudnn")]
    assert render(substitutions[0]).startswith("attention cudnn -> sdpa")


@pytest.mark.parametrize("value", ["flash_attention_3", "fa3"])
def test_configs_naming_flash_attention_3_read_as_flash3(tmp_path: Path, value: str) -> None:
    example = Path(__file__).resolve().parent / "data" / "configs" / "sft_config.yaml"
    text = example.read_text()
    assert import_configs([example]).plan().attention is Attention.FLASH
    changed = tmp_path / example.name
    changed.write_text(text.replace("attn_implementation: flash_attention_2", f"attn_implementation: {value}"))
    assert import_configs([changed]).plan().attention is Attention.FLASH3


@pytest.mark.parametrize("attention", [Attention.FLASH3, Attention.CUDNN, Attention.FLASH4])
def test_the_sizing_dropdown_offers_each_kernel_in_both_languages(attention: Attention) -> None:
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm({"model": "llama-3.2-1b", "method": "lora", "seq_len": 2048})
    for lang in ("en", "ru"):
        form.set_lang(lang)
        assert attention.value in set(form.controls["attention"].options)
    form.controls["attention"].value = attention.value
    assert form.plan.attention is attention and form.error in (None, "")


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_cli_offers_and_accepts_flash3(lang: str) -> None:
    out = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--help", "--lang", lang], capture_output=True,
                         text=True, check=True)
    words = " ".join(out.stdout.split())  # argparse wraps the help
    assert "flash3 (FlashAttention-3, " + ("только Hopper" if lang == "ru" else "Hopper only") in words
    assert "cudnn (" + ("слитное внимание cuDNN" if lang == "ru" else "cuDNN's fused attention") in words
    ok = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--model", "llama-3.2-1b", "--method", "lora",
                         "--attention", "flash3"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def test_offers_and_the_fit_matrix_list_cards_that_cannot_run_the_kernel_without_pricing_them() -> None:
    from gpuwork.sizing import evaluate_offers, fit_matrix

    plan = TrainPlan(model="llama-3.2-1b", method=Method.LORA, seq_len=4096, attention="flash3")
    results = evaluate_offers(plan)
    priced = {r.offer.gpu_id for r in results if r.time is not None}
    assert priced and all(get_gpu(g).compute_capability == "9.0" for g in priced)
    refused = [r for r in results if r.offer.gpu.compute_capability != "9.0"]
    assert refused and all(r.time is None and r.fit.reason.code == "error.plan.flash3_gpu" for r in refused)
    matrix = fit_matrix(plan)
    assert not matrix.cell("a100_80_sxm", 1).fits and matrix.cell("h100_sxm", 1).fits
