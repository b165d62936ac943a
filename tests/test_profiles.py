"""Tests for gpuwork.estimate.profiles: canonical plans land in the brief's three rental profiles, with a reason
(a catalog code and its numbers) for the match and for every profile rejected. Rendered text is checked only
where the profile definitions are the brief's own words (the catalog's tests cover the rest)."""

from __future__ import annotations

import pytest

from gpuwork.estimate.offers import usable_memory_bytes
from gpuwork.estimate.profiles import PROFILES, SHORT_RUN_MAX_S, get_profile
from gpuwork.facts.catalog import Mode, get_gpu
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render, render_all
from gpuwork.sizing import estimate_memory, match_profile


def _codes(messages) -> list[str]:
    return [m.code for m in messages]


def _check_reasons(match, expected: str | None) -> None:
    """Every reason is a catalog message that renders in both languages; every other profile says why not."""
    assert (match.profile.profile_id if match.profile else None) == expected
    assert match.reasons and all(isinstance(r, Msg) for r in match.reasons)
    for lang in ("en", "ru"):
        assert all(render_all(match.reasons, lang)) and all(render_all(match.rejected.values(), lang))
    others = {p.profile_id for p in PROFILES} - ({expected} if expected else set())
    assert set(match.rejected) == others
    if match.profile:
        assert match.checks == match.profile.checks
    as_json = match.as_dict()
    assert as_json["reasons"] == [r.as_dict() for r in match.reasons]


def test_profiles_are_the_brief_ones():
    p01, p02, p03 = PROFILES
    assert (p01.profile_id, p01.mode) == ("01", Mode.ON_DEMAND) and "24-48 GB" in render(p01.gpus)
    assert (p02.profile_id, p02.mode) == ("02", Mode.RESERVED) and "80 GB" in render(p02.gpus)
    assert (p03.profile_id, p03.mode) == ("03", Mode.RESERVED) and "2+" in render(p03.gpus)
    assert render(p01.gpus, "ru") == "1 GPU на 24–48 ГБ" and render(p02.name, "ru") == "регулярное дообучение"
    assert _codes(p02.checks) == ["profile.check.checkpoints", "profile.check.data_feed"]
    assert _codes(p03.checks) == ["profile.check.sharding", "profile.check.interconnect"]
    assert "between nodes" in render(p03.checks[1]) and "data feed" in render(p02.checks[1])
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
    assert _codes(m.reasons) == ["profile.fits_small_card", "profile.short_run"]
    fits, short = m.reasons
    assert fits["card_gb"] == 48 and fits["gpu"] == "L40S" and fits["note"] is None
    assert (fits["need_bytes"], fits["usable_bytes"]) == (m.memory_per_gpu_bytes, m.usable_per_gpu_bytes)
    assert short["run_s"] == m.time.total_s and short["max_s"] == SHORT_RUN_MAX_S
    assert set(m.rejected) == {"02", "03"} and m.rejected["02"].code == "profile.reject02.oversized"


def test_small_full_update_is_a_short_check_with_the_reason():
    m = match_profile(TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048))
    _check_reasons(m, "01")
    assert m.gpu_id == "rtx4090"  # fits a 24 GB card
    note = m.reasons[0]["note"]
    assert note == msg("profile.small_model", method="full", params=494_032_768)
    # the edge: rendered in each language with its own number form
    assert "the model is small: 0.49 B parameters" in render(m.reasons[0], "en")
    assert "модель небольшая: 0,49 млрд параметров" in render(m.reasons[0], "ru")


def test_long_lora_8k_context_is_regular_fine_tuning():
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=8192, batch_size=2, grad_checkpointing=True)
    m = match_profile(plan)
    _check_reasons(m, "02")
    assert (m.gpu_id, m.gpus) == ("h100_sxm", 1)
    # 16,384 tokens per micro-batch: fp32 logits alone (16,384 x 128,256 x 4 B x ~2.5) exceed a 48 GB card
    why = m.rejected["01"]
    assert why.code == "profile.reject01.too_big_for_card" and why["card_gb"] == 48 and why["gpu"] == "L40S"
    assert why["need_bytes"] > why["usable_bytes"] == usable_memory_bytes(get_gpu("l40s"))
    assert _codes(m.reasons) == ["profile.fits_server_card", "profile.regular_run"]
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


def test_full_8b_bf16_adamw_needs_three_80gb_gpus_under_zero2():
    m = match_profile(TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", optimizer="adamw",
                                seq_len=2048))
    _check_reasons(m, "03")
    assert m.reasons[0].code == "profile.too_big_for_one" and m.reasons[0]["card_gb"] == 80
    assert m.reasons[0]["need_bytes"] == m.single_gpu_bytes
    # ZeRO-2 keeps DeepSpeed's fp32 masters and AdamW states (16 B/param, 14 sharded): 16 + 112 / n GB of model
    # states next to the activations fit an 80 GB card from n = 3
    assert (m.gpus, m.nodes, m.sharding) == (3, 1, "zero2")
    assert m.changes == (msg("change.gpus", old=1, new=3), msg("change.sharding", old="ddp", new="zero2"))
    assert render_all(m.changes) == ["gpus 1 -> 3", "sharding ddp -> zero2"]
    assert m.fitted_plan.gpus == 3 and m.memory_per_gpu_bytes <= m.usable_per_gpu_bytes
    assert m.single_gpu_bytes > m.usable_per_gpu_bytes
    assert m.reasons[-1].code == "profile.several_time"
    assert "comm.nvlink_needed" in _codes(m.reasons[-1]["verdict"]) and "NVLink" in render(m.reasons[-1])


def test_full_70b_needs_three_nodes_with_zero3():
    m = match_profile(TrainPlan(model="llama-3.1-70b", method="full", seq_len=2048, grad_checkpointing=True))
    _check_reasons(m, "03")
    # 70.6 B params x 16 B (bf16 weights and grads, ZeRO's fp32 masters and AdamW states) = 1,130 GB: 16 x 80 GB
    # would leave nothing for activations and buffers; three nodes of 8 hold it
    assert (m.gpus, m.nodes, m.sharding) == (24, 3, "zero3")
    where = m.reasons[1]["where"]
    assert where == msg("profile.where.nodes", nodes=3, per_node=8, network="ib-ndr-400g")
    assert "3 nodes of 8" in render(m.reasons[1]) and "3 узла по 8" in render(m.reasons[1], "ru")
    assert m.time.comm.nodes == 3


def test_70b_qlora_fits_one_80gb_card():
    m = match_profile(TrainPlan(model="llama-3.1-70b", method="qlora", seq_len=2048, grad_checkpointing=True))
    _check_reasons(m, "02")
    assert m.gpus == 1 and m.changes == ()
    # without checkpointing the fp32 activations of QLoRA do not fit; the match says what to change
    off = match_profile(TrainPlan(model="llama-3.1-70b", method="qlora", seq_len=2048))
    _check_reasons(off, "02")
    assert off.changes == (msg("change.grad_checkpointing_on"),)
    assert off.reasons[0].code == "profile.fits_one_with_checkpointing"
    assert off.reasons[0]["too_big"].code == "profile.too_big_for_one"
    assert off.rejected["03"].code == "profile.reject03.checkpointing_enough"


def test_long_run_leaves_the_short_check():
    m = match_profile(TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, dataset_tokens=5_000_000_000))
    _check_reasons(m, "02")
    why = m.rejected["01"]
    assert why.code == "profile.reject01.too_long" and why["run_s"] > SHORT_RUN_MAX_S == why["max_s"]
    assert "longer than a short check" in render(why) and "дольше короткой проверки" in render(why, "ru")


def test_multi_gpu_plan_and_impossible_plan():
    m = match_profile(TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, gpus=2))
    _check_reasons(m, "03")
    assert m.reasons[0].code == "profile.plan_uses_gpus" and m.reasons[0]["gpus"] == 2
    assert m.reasons[0]["one_card"].code == "profile.one_card_would_do"
    assert m.rejected["01"] == msg("profile.reject01.several_gpus")
    huge = match_profile(TrainPlan(model="llama-3.1-70b", method="full", seq_len=65536, batch_size=8,
                                   grad_checkpointing=True))
    _check_reasons(huge, None)
    assert huge.gpus == 0 and huge.time is None and huge.fitted_plan is None
    last = huge.reasons[-1]
    assert last.code == "profile.none_fits" and last["gpus"] == 64 and last["best_bytes"] > 80 * 2**30
    assert huge.rejected["03"] == last
    assert huge.as_dict()["profile"] is None
