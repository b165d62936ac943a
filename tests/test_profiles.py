"""Tests for gpuwork.estimate.profiles: canonical plans land in the brief's three rental profiles, with reasons in
English and Russian for the match and for every profile rejected."""

from __future__ import annotations

import re

import pytest

from gpuwork.estimate.offers import usable_memory_bytes
from gpuwork.estimate.profiles import PROFILES, SHORT_RUN_MAX_S, get_profile
from gpuwork.facts.catalog import Mode, get_gpu
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory, match_profile

CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)


def _check_reasons(match, expected: str | None) -> None:
    """Reasons exist in both languages; every other profile says why not."""
    assert (match.profile.profile_id if match.profile else None) == expected
    assert match.reasons and len(match.reasons) == len(match.reasons_ru)
    assert all(CYRILLIC.search(r) for r in match.reasons_ru)
    others = {p.profile_id for p in PROFILES} - ({expected} if expected else set())
    assert set(match.rejected) == others == set(match.rejected_ru)
    assert all(CYRILLIC.search(r) for r in match.rejected_ru.values())
    if match.profile:
        assert match.checks == match.profile.checks_en and match.checks_ru == match.profile.checks_ru


def test_profiles_are_the_brief_ones():
    p01, p02, p03 = PROFILES
    assert (p01.profile_id, p01.mode) == ("01", Mode.ON_DEMAND) and "24-48 GB" in p01.gpus_en
    assert (p02.profile_id, p02.mode) == ("02", Mode.RESERVED) and "80 GB" in p02.gpus_en
    assert (p03.profile_id, p03.mode) == ("03", Mode.RESERVED) and "2+" in p03.gpus_en
    assert any("checkpoint" in c for c in p02.checks_en) and any("data feed" in c for c in p02.checks_en)
    assert any("sharding" in c for c in p03.checks_en) and any("between nodes" in c for c in p03.checks_en)
    assert get_profile("02") is p02
    with pytest.raises(KeyError):
        get_profile("04")


def test_qlora_8b_is_a_short_check_on_a_48gb_card():
    m = match_profile(TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048))
    _check_reasons(m, "01")
    # ~29 GiB: more than a 24 GB RTX 4090 gives (22.8 GiB usable), less than a 48 GB L40S (42.7 GiB)
    assert m.gpu_id == "l40s" and m.gpus == 1
    assert usable_memory_bytes(get_gpu("rtx4090")) < m.memory_per_gpu_bytes < m.usable_per_gpu_bytes
    assert m.time.total_s < SHORT_RUN_MAX_S
    assert "48 GB" in m.reasons[0] and "48 ГБ" in m.reasons_ru[0]
    assert "short run" in m.reasons[1] and "почасовая аренда" in m.reasons_ru[1]


def test_small_full_update_is_a_short_check_with_the_reason():
    m = match_profile(TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048))
    _check_reasons(m, "01")
    assert m.gpu_id == "rtx4090"  # fits a 24 GB card
    assert "the model is small: 0.49 B parameters" in m.reasons[0]
    assert "модель небольшая: 0,49 млрд параметров" in m.reasons_ru[0]


def test_long_lora_8k_context_is_regular_fine_tuning():
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=8192, batch_size=2, grad_checkpointing=True)
    m = match_profile(plan)
    _check_reasons(m, "02")
    assert (m.gpu_id, m.gpus) == ("h100_sxm", 1)
    # 16,384 tokens per micro-batch: fp32 logits alone (16,384 x 128,256 x 4 B x ~2.5) exceed a 48 GB card
    assert "48 GB" in m.rejected["01"] and "48 ГБ" in m.rejected_ru["01"]
    assert m.memory_per_gpu_bytes == estimate_memory(plan).device_total_bytes


def test_lora_8k_batch_4_is_borderline_on_80gb():
    """32,768 tokens per micro-batch needs ~77 GiB with checkpointing: above the 75.7 GiB usable with the 5 %
    safety margin (-> two GPUs, profile 03), below the 79.6 GiB nvidia-smi total (-> profile 02 without it)."""
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=8192, batch_size=4, grad_checkpointing=True)
    need = estimate_memory(plan).device_total_bytes
    h100 = get_gpu("h100_sxm")
    assert usable_memory_bytes(h100) < need < h100.memory_total_bytes
    assert match_profile(plan).profile.profile_id == "03"
    m = match_profile(plan, safety_margin=0.0)
    _check_reasons(m, "02")


def test_full_8b_bf16_adamw_needs_two_80gb_gpus():
    m = match_profile(TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", optimizer="adamw",
                                seq_len=2048))
    _check_reasons(m, "03")
    assert "one 80 GB card is not enough" in m.reasons[0]
    assert (m.gpus, m.nodes, m.sharding) == (2, 1, "zero2")
    assert m.changes == ("gpus 1 -> 2", "sharding ddp -> zero2")
    assert m.fitted_plan.gpus == 2 and m.memory_per_gpu_bytes <= m.usable_per_gpu_bytes
    assert m.single_gpu_bytes > m.usable_per_gpu_bytes
    assert "NVLink" in m.reasons[-1]


def test_full_70b_needs_two_nodes_with_zero3():
    m = match_profile(TrainPlan(model="llama-3.1-70b", method="full", seq_len=2048, grad_checkpointing=True))
    _check_reasons(m, "03")
    # 70.6 B params x 8 B (bf16 weights, grads, AdamW states) = 565 GB: 8 x 80 GB cannot hold it
    assert (m.gpus, m.nodes, m.sharding) == (16, 2, "zero3")
    assert "2 nodes of 8" in m.reasons[1] and "2 узла по 8" in m.reasons_ru[1]
    assert m.time.comm.nodes == 2


def test_70b_qlora_fits_one_80gb_card():
    m = match_profile(TrainPlan(model="llama-3.1-70b", method="qlora", seq_len=2048, grad_checkpointing=True))
    _check_reasons(m, "02")
    assert m.gpus == 1 and m.changes == ()
    # without checkpointing the fp32 activations of QLoRA do not fit; the match says what to change
    off = match_profile(TrainPlan(model="llama-3.1-70b", method="qlora", seq_len=2048))
    _check_reasons(off, "02")
    assert off.changes == ("grad_checkpointing off -> on",)
    assert "gradient checkpointing" in off.reasons[0] and "gradient checkpointing" in off.reasons_ru[0]


def test_long_run_leaves_the_short_check():
    m = match_profile(TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, dataset_tokens=5_000_000_000))
    _check_reasons(m, "02")
    assert "longer than a short check" in m.rejected["01"] and "дольше короткой проверки" in m.rejected_ru["01"]


def test_multi_gpu_plan_and_impossible_plan():
    m = match_profile(TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, gpus=2))
    _check_reasons(m, "03")
    assert "the plan uses 2 GPUs" in m.reasons[0] and "one 80 GB card would hold it" in m.reasons[0]
    huge = match_profile(TrainPlan(model="llama-3.1-70b", method="full", seq_len=65536, batch_size=8,
                                   grad_checkpointing=True))
    _check_reasons(huge, None)
    assert huge.gpus == 0 and huge.time is None and huge.fitted_plan is None
    assert "do not fit" in huge.reasons[-1] and "не помещается" in huge.reasons_ru[-1]
    assert huge.as_dict()["profile"] is None
