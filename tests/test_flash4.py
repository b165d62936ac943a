"""FlashAttention-4 as a plan choice (attention 'flash4'): priced from its own attention_curves.csv rows on Blackwell
[K4i], refused off compute capability 9.x-11.x with one clear message in both languages, stored like FlashAttention-2,
offered by the CLI and the sizing tab, read from configs, and listed as a substitution by the CPU trial."""

from __future__ import annotations

import csv
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
from gpuwork.facts.rates import ATTENTION_CURVES_CSV, FA4_KERNEL, load_rates
from gpuwork.measure.calibration import _plan_as_run
from gpuwork.measure.cpu_rates import cpu_plan
from gpuwork.message import msg
from gpuwork.plan import Attention, Method, TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_time

PLAN = dict(model="llama-3.1-8b", method=Method.LORA, seq_len=8192, batch_size=1, grad_checkpointing=True)


def _row_share(attention_pass: str, causal: bool, seq_len: int) -> float:
    """The one FlashAttention-4 row at head dim 128 as a share of its GPU's datasheet peak, read from the CSV."""
    with open(Path(data_dir()) / ATTENTION_CURVES_CSV, encoding="utf-8", newline="") as f:
        found = [float(r["tflops"]) / float(r["peak_tflops"]) for r in csv.DictReader(f)
                 if (r["family"], r["kernel"], r["pass"], r["causal"], r["head_dim"], r["seq_len"])
                 == ("gb200", FA4_KERNEL, attention_pass, str(int(causal)), "128", str(seq_len))]
    assert len(found) == 1
    return found[0]


def _fused_seconds(attention: Attention, attention_pass: str, gpu_id: str) -> tuple[float, float]:
    """Seconds of the step's fused attention kernels of one pass on ``gpu_id``, and their FLOPs."""
    plan = TrainPlan(**PLAN, attention=attention)
    rates, gpu = load_rates(), get_gpu(gpu_id)
    profile = rates.stacks[plan.stack]
    ops = tuple(op for op in step_ops(plan, get_spec(plan.model), stack_kernels(profile))
                if op.attention_pass == attention_pass)
    assert ops and all(op.causal and op.m == 8192 and op.n == 128 for op in ops)
    seconds = price_ops(ops, gpu, rates.device(gpu_id), rates, profile).by_kind["attention"]
    return seconds, sum(op.flops * op.count for op in ops)


@pytest.mark.parametrize("attention_pass", ["fwd", "bwd"])
@pytest.mark.parametrize("gpu_id", ["b200", "gb200"])
def test_flash4_on_blackwell_is_priced_from_its_own_rows(attention_pass: str, gpu_id: str) -> None:
    # causal, head dim 128, 8k on a GB200 [K4i], as a share of each card's own dense peak; the op counts the
    # diagonal blocks too (x (1 + 128 / 8192)), the rows count causal as half the matrix
    seconds, flops = _fused_seconds(Attention.FLASH4, attention_pass, gpu_id)
    rate = _row_share(attention_pass, True, 8192) * get_gpu(gpu_id).bf16_dense_flops * (1 + 128 / 8192)
    assert seconds == pytest.approx(flops / rate, rel=1e-9)
    fa2, _ = _fused_seconds(Attention.FLASH, attention_pass, gpu_id)
    assert fa2 > 2.5 * seconds  # FlashAttention-2 reaches 0.14-0.18 of a B200's peak [K4h], FA4 0.55-0.64


def test_flash4_on_hopper_runs_and_takes_flash_attention_2s_curve() -> None:
    # FlashAttention-4 builds for Hopper too, but no Hopper figure of it was found: FlashAttention-2's H100 curve
    assert _fused_seconds(Attention.FLASH4, "fwd", "h100_sxm") == _fused_seconds(Attention.FLASH, "fwd", "h100_sxm")


@pytest.mark.parametrize("gpu_id, capability", [("a100_80_sxm", "8.0"), ("rtx5090", "12.0"), ("mi300x", "gfx942")])
def test_flash4_off_its_gpus_is_one_clear_error_in_both_languages(gpu_id: str, capability: str) -> None:
    plan = TrainPlan(**PLAN, attention="flash4")
    with pytest.raises(PlanError) as info:
        estimate_time(plan, gpu_id)
    assert info.value.field == "attention"
    assert info.value.msg == msg("error.plan.flash4_gpu", gpu=get_gpu(gpu_id).display_name, capability=capability)
    en, ru = info.value.text("en"), info.value.text("ru")
    assert "9.x, 10.x or 11.x" in en and "attention='flash'" in en and capability in en
    assert "9.x, 10.x или 11.x" in ru and "attention='flash'" in ru and capability in ru
    for ok in ("h100_sxm", "b200", "gb200"):
        estimate_time(plan, ok)


# its memory and the sizing dropdown: tests/test_flash3.py, with flash3 and cudnn


def test_the_cpu_trial_runs_sdpa_and_lists_the_substitution() -> None:
    import torch

    from gpuwork.measure.runtime import _attention

    assert cpu_plan(TrainPlan(**PLAN, attention="flash4")).attention is Attention.SDPA
    substitutions: list = []
    assert _attention(Attention.FLASH4, torch.device("cpu"), torch.bfloat16, substitutions) == "sdpa"
    assert substitutions == [msg("trial.sub.flash4", reason="no_cuda")]
    assert render(substitutions[0]) == "attention flash4 -> sdpa: no CUDA device"
    assert render(substitutions[0], "ru") == "attention flash4 → sdpa: нет устройства CUDA"
    for reason in ("not_fa4_gpu", "fa4_not_installed"):
        text = render(msg("trial.sub.flash4", reason=reason))
        assert "FlashAttention-4" in text and "FlashAttention-4" in render(msg("trial.sub.flash4", reason=reason), "ru")


@pytest.mark.parametrize("value", ["flash_attention_4", "fa4"])
def test_configs_naming_flash_attention_4_read_as_flash4(tmp_path: Path, value: str) -> None:
    example = Path(__file__).resolve().parent / "data" / "configs" / "sft_config.yaml"
    changed = tmp_path / example.name
    changed.write_text(example.read_text().replace("attn_implementation: flash_attention_2",
                                                   f"attn_implementation: {value}"))
    assert import_configs([changed]).plan().attention is Attention.FLASH4


def test_a_trial_that_ran_flash_attention_4_is_read_back_as_flash4() -> None:
    from types import SimpleNamespace
    # calibration reads the plan a trial ran from the attention it used (transformers' name for FA4 included)
    record = SimpleNamespace(plan=TrainPlan(**PLAN, attention="sdpa"), world_size=1, source="gpuwork trial",
                             environment=SimpleNamespace(switches=()),
                             protocol=SimpleNamespace(attention_used="flash_attention_4"))
    assert _plan_as_run(record, None).attention is Attention.FLASH4


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_cli_offers_and_accepts_flash4(lang: str) -> None:
    out = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--help", "--lang", lang], capture_output=True,
                         text=True, check=True)
    assert "flash4 (FlashAttention-4, Hopper / B200 / GB200)" in " ".join(out.stdout.split())
    ok = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--model", "llama-3.2-1b", "--method", "lora",
                         "--attention", "flash4"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def test_offers_list_cards_that_cannot_run_flash4_without_pricing_them() -> None:
    from gpuwork.sizing import evaluate_offers

    plan = TrainPlan(model="llama-3.2-1b", method=Method.LORA, seq_len=4096, attention="flash4")
    results = evaluate_offers(plan)
    priced = {r.offer.gpu.compute_capability for r in results if r.time is not None}
    assert priced and priced <= {"9.0", "10.0"}
    refused = [r for r in results if r.offer.gpu.compute_capability.split(".")[0] not in ("9", "10", "11")]
    assert refused and all(r.time is None and r.fit.reason.code == "error.plan.flash4_gpu" for r in refused)
