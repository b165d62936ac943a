"""Packed rows whose attention stays inside each document (TrainPlan.packed_document_tokens, docs/packed_documents.md).

A row of seq_len tokens packed with documents of d tokens runs seq_len / d attentions of d tokens (flash-attn's
varlen kernels with cu_seqlens), priced by the attention curve at d; None keeps one attention over the row.
"""

from __future__ import annotations

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.flops import flops_per_token
from gpuwork.estimate.ops import Phase, step_ops
from gpuwork.estimate.steptime import curve_fraction, price_ops, stack_kernels
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory, estimate_time
from gpuwork.ui.share import plan_from_query, plan_query
from gpuwork.ui.sizing import SizingForm

ROW, DOC = 16384, 512
PACKED = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=ROW, lengths="packed", attention="flash",
                   packed_document_tokens=DOC)


def _attention(plan: TrainPlan, phase: Phase, gpu_id: str = "h100_sxm") -> tuple[float, float, set[int]]:
    """(FLOPs, seconds, lengths priced) of the plan's fused attention ops in one phase."""
    rates, gpu = load_rates(), get_gpu(gpu_id)
    profile = rates.stacks[plan.stack]
    ops = tuple(op for op in step_ops(plan, get_spec(plan.model), stack_kernels(profile))
                if op.attention_pass and op.phase is phase)
    price = price_ops(ops, gpu, rates.device(gpu_id), rates, profile)
    return sum(op.flops * op.count for op in ops), price.by_kind["attention"], {op.m for op in ops}


@pytest.mark.parametrize("phase", [Phase.FORWARD, Phase.BACKWARD])
def test_a_packed_row_costs_its_documents_attentions_at_their_length(phase: Phase) -> None:
    flops, seconds, lengths = _attention(PACKED, phase)
    row_flops, row_seconds, row_lengths = _attention(PACKED.replace(packed_document_tokens=None), phase)
    assert lengths == {DOC} and row_lengths == {ROW}
    # ROW / DOC causal attentions of DOC tokens: FLOPs 4 d^2 a h x (1 + 128 / d) / 2 each, against the row's
    spec = get_spec(PACKED.model)
    one_doc = 4.0 * DOC * DOC * spec.num_heads * spec.head_dim * 0.5 * (1 + 128 / DOC)
    one_row = 4.0 * ROW * ROW * spec.num_heads * spec.head_dim * 0.5 * (1 + 128 / ROW)
    assert flops / row_flops == pytest.approx(ROW / DOC * one_doc / one_row, rel=1e-12)
    # seconds: each at the H100 curve's rate at its own length (the curve's causal FLOPs are half the matrix)
    points = tuple(p for p in load_rates().attention_curves if p.family == "h100")
    pass_ = "fwd" if phase is Phase.FORWARD else "bwd"
    at_doc, at_row = (curve_fraction(points, pass_, True, spec.head_dim, n) for n in (DOC, ROW))
    assert at_doc < at_row  # short documents run the kernel below its long-sequence rate
    assert seconds / row_seconds == pytest.approx(DOC / ROW * at_row / at_doc, rel=1e-9)
    # the same as the documents as separate sequences of one micro-batch
    alone = TrainPlan(model=PACKED.model, method="lora", seq_len=DOC, batch_size=ROW // DOC, attention="flash")
    assert _attention(alone, phase)[:2] == pytest.approx((flops, seconds), rel=1e-12)


def test_model_flops_count_attention_at_the_documents_length() -> None:
    spec = get_spec(PACKED.model)
    packed, doc = flops_per_token(PACKED, spec), flops_per_token(PACKED.replace(seq_len=DOC, lengths="fixed"), spec)
    assert packed.attention == doc.attention == 12 * spec.num_layers * spec.num_heads * spec.head_dim * DOC / 2 * 2
    row = flops_per_token(PACKED.replace(packed_document_tokens=None), spec)
    assert row.attention == pytest.approx(packed.attention * ROW / DOC)
    assert estimate_time(PACKED, "h100_sxm").flops_per_token.attention == packed.attention


def test_unset_documents_keep_todays_numbers() -> None:
    whole = PACKED.replace(packed_document_tokens=None)
    assert whole.attention_span == ROW
    fixed = whole.replace(lengths="fixed")
    assert step_ops(whole, get_spec(whole.model)) == step_ops(fixed, get_spec(fixed.model))
    assert estimate_time(whole, "h100_sxm").step_time_s == estimate_time(fixed, "h100_sxm").step_time_s
    # documents as long as the row are one attention over it
    assert estimate_time(PACKED.replace(packed_document_tokens=ROW), "h100_sxm").step_time_s == \
        estimate_time(whole, "h100_sxm").step_time_s
    faster = estimate_time(PACKED, "h100_sxm")
    assert faster.step_time_s < estimate_time(whole, "h100_sxm").step_time_s


def test_flash_memory_does_not_change() -> None:
    # flash-type kernels keep O(s) state (output and logsumexp) whatever the documents
    assert estimate_memory(PACKED).peak_reserved_bytes == \
        estimate_memory(PACKED.replace(packed_document_tokens=None)).peak_reserved_bytes


@pytest.mark.parametrize("changes, code, english, russian", [
    ({"lengths": "fixed"}, "documents_need_packed", "needs lengths='packed'", "нужен lengths='packed'"),
    ({"packed_document_tokens": ROW + 1}, "documents_longer", "longer than a packed row", "длиннее упакованной"),
    ({"attention": "sdpa"}, "documents_attention", "block mask", "блочной"),
    ({"attention": "eager"}, "documents_attention", "attention='eager'", "attention='eager'"),
    ({"packed_document_tokens": 0}, "too_small", "packed_document_tokens", "packed_document_tokens"),
    ({"packed_document_tokens": 1.5}, "whole_number", "packed_document_tokens", "packed_document_tokens"),
])
def test_bad_documents_are_one_plan_error_in_both_languages(changes, code, english, russian) -> None:
    fields = {**PACKED.as_dict(), **changes}
    with pytest.raises(PlanError) as info:
        TrainPlan.from_dict(fields)
    assert info.value.field == "packed_document_tokens"
    assert info.value.msg.code == f"error.plan.{code}"
    assert english in info.value.text("en") and russian in info.value.text("ru")


def test_a_changed_row_carries_the_documents_where_they_still_apply() -> None:
    assert PACKED.replace(seq_len=256).packed_document_tokens == 256  # a document no longer than its row
    assert PACKED.replace(seq_len=4096).packed_document_tokens == DOC
    assert PACKED.replace(lengths="fixed").packed_document_tokens is None
    assert PACKED.replace(attention="sdpa").packed_document_tokens is None
    assert PACKED.replace(attention="flash3").packed_document_tokens == DOC


def test_share_link_and_plan_file_round_trip() -> None:
    assert plan_from_query(plan_query(PACKED)) == PACKED
    assert TrainPlan.from_dict(PACKED.as_dict()) == PACKED


def test_the_form_field_shows_for_packed_rows_and_round_trips() -> None:
    form = SizingForm({"model": "llama-3.2-1b", "method": "lora", "seq_len": 4096, "attention": "flash"})
    field = form.controls["packed_document_tokens"]
    assert field.layout.display == "none" and form.plan.packed_document_tokens is None
    form.controls["lengths"].value = "packed"
    assert field.layout.display is None
    field.value = 512
    assert form.error is None and form.plan.packed_document_tokens == 512 and form.plan.attention_span == 512
    assert field.placeholder.startswith("blank: attention across the whole packed row")
    form.controls["lengths"].value = "fixed"  # hidden: not read
    assert form.error is None and form.plan.packed_document_tokens is None and field.layout.display == "none"
    form.controls["lengths"].value = "packed"
    form.controls["attention"].value = "sdpa"
    assert form.plan is None and "packed_document_tokens" in form.error and "block mask" in form.error


@pytest.mark.parametrize("name, key", [("sft_config.yaml", "padding_free"), ("llamafactory_lora.yaml", "neat_packing")])
def test_a_config_that_keeps_attention_inside_examples_says_how_to_price_it(tmp_path, name, key) -> None:
    from pathlib import Path

    from gpuwork.facts.configs import import_configs
    from gpuwork.present.messages import render

    source = Path(__file__).resolve().parent / "data" / "configs" / name
    (tmp_path / name).write_text(source.read_text() + f"\n{key}: true\n")
    notes = [m for m in import_configs([tmp_path / name]).notes if m.code == "config.packed_documents"]
    assert [m["key"] for m in notes] == [key]
    assert not [m for m in import_configs([source]).notes if m.code == "config.packed_documents"]
    assert "packed_document_tokens" in render(notes[0], "en") and "средней длине" in render(notes[0], "ru")
