"""A shareable plan: plan -> URL query -> plan and plan -> plan file -> plan are the identity, field by field;
bad query values give the validation layer's own message."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from gpuwork.errors import PlanError
from gpuwork.facts.planfile import load_plan
from gpuwork.plan import TrainPlan
from gpuwork.ui.share import plan_file_bytes, plan_from_query, plan_query, share_html
from gpuwork.units import parse_count, parse_size

# Every field differs from TrainPlan(), and the combination is valid.
EVERY_FIELD = TrainPlan(
    model="qwen2.5-0.5b", method="qlora", task="causal-lm", precision="fp16-mixed", optimizer="paged-adamw-8bit",
    seq_len=4096, batch_size=3, grad_accum=8, grad_checkpointing=True, recompute="ops", recompute_every=2, attention="flash",
    trainable_layers=4,
    lora_r=64, lora_alpha=16.5, lora_dropout=0.1, lora_targets=("q_proj", "k_proj", "v_proj", "o_proj"),
    quant_type="fp4", double_quant=False, kbit_upcast=False, gpus=4, sharding="zero2", shard_group_gpus=2,
    offload_optimizer=True,
    offload_params=False, optimizer_impl="fused", stack="hf-liger", dataset_tokens=123_456_789,
    dataset_bytes=987_654_321, epochs=2.5,
    eval_fraction=0.125, checkpoint_every_steps=250, checkpoints_kept=5, lengths="256:10,1000:2.5,4096:1",
    expandable_segments=True, eval_batch_size=8, eval_samples=500, eval_keep="ids", eval_accum=4,
    mlm_predictions=600, comm_overlap="on", grad_clip=False, deterministic=True,
    launch_blocking=True, tf32=True, weight_decay=0.05, input_require_grads=True)


def test_every_field_of_the_test_plan_differs_from_the_default() -> None:
    default = TrainPlan()
    same = [f.name for f in fields(TrainPlan) if getattr(EVERY_FIELD, f.name) == getattr(default, f.name)]
    # offload_params: False is its only value with QLoRA (no 4-bit parameter offload); packed_document_tokens needs
    # packed rows, not this plan's histogram (tests/test_packed_documents.py shares one); fsdp_wrap needs torch
    # FSDP, which comm_overlap refuses (tests/test_fsdp_wrap.py round-trips it); zero_sync needs zero1 with the
    # default comm_overlap (tests/test_zero_sync.py round-trips it); sdpa_backend needs attention sdpa, not this
    # plan's flash (tests/test_sdpa_backend.py round-trips it); fp8_linear refuses adapters (tests/test_fp8.py
    # round-trips it)
    assert same == ["sdpa_backend", "offload_params", "packed_document_tokens", "fsdp_wrap", "fp8_linear", "zero_sync"]


def test_plan_to_url_to_plan_is_the_identity_for_every_field() -> None:
    query = plan_query(EVERY_FIELD)
    assert plan_from_query(query) == EVERY_FIELD
    assert plan_from_query("?" + query) == EVERY_FIELD  # as location.search gives it
    assert {k for k in re.findall(r"(?:^|&)([a-z_0-9]+)=", query)} == {
        f.name for f in fields(TrainPlan)} - {"offload_params", "packed_document_tokens", "fsdp_wrap", "zero_sync",
                                             "sdpa_backend", "fp8_linear"}
    # each field alone, too (where it is valid alone): a value never depends on another one in the link
    alone = 0
    for f in fields(TrainPlan):
        try:
            one = TrainPlan().replace(**{f.name: getattr(EVERY_FIELD, f.name)})
        except PlanError:  # sharding needs gpus, offload needs sharding, recompute and recompute_every checkpointing
            continue
        alone += 1
        assert plan_from_query(plan_query(one)) == one, f.name
    assert alone >= len(fields(TrainPlan)) - 4
    assert plan_query(TrainPlan()) == "" and plan_from_query("") == TrainPlan()
    assert plan_from_query({"seq_len": ["1k", "4096"], "lang": "ru"}) == TrainPlan(seq_len=4096)  # last value wins


def test_plan_to_file_to_plan_is_the_identity(tmp_path: Path) -> None:
    data = plan_file_bytes(EVERY_FIELD)
    assert TrainPlan.from_dict(json.loads(data)) == EVERY_FIELD
    path = tmp_path / "plan.json"
    path.write_bytes(data)
    assert load_plan(path) == EVERY_FIELD  # what `gpuwork report --plan` reads
    page = share_html(EVERY_FIELD)
    assert f'href="?{plan_query(EVERY_FIELD)}"'.replace("&", "&amp;") in page
    encoded = re.search(r"base64,([A-Za-z0-9+/=]+)", page).group(1)
    assert base64.b64decode(encoded) == data


@pytest.mark.parametrize("query, field", [
    ("seq_len=abc", "seq_len"), ("batch_size=0", "batch_size"), ("epochs=-1", "epochs"),
    ("method=lorra", "method"), ("grad_checkpointing=maybe", "grad_checkpointing"), ("seq_lne=4096", "seq_lne"),
    ("dataset_bytes=lots", "dataset_bytes"), ("gpus=2.5", "gpus"), ("sharding=zero3", "sharding"),
])
def test_a_bad_query_value_names_the_field_and_the_fix(query: str, field: str) -> None:
    with pytest.raises(PlanError) as info:
        plan_from_query(query)
    assert info.value.field == field
    assert "\n" not in str(info.value)


def _error(call, *args, **kwargs) -> str:
    with pytest.raises(PlanError) as info:
        call(*args, **kwargs)
    return str(info.value)


def test_bad_query_values_say_what_the_validation_layer_says() -> None:
    """The same words as a typed form field or a plan file: one validation layer."""
    assert _error(plan_from_query, "seq_len=abc") == _error(parse_count, "abc", "seq_len", minimum=None)
    assert _error(plan_from_query, "dataset_bytes=lots") == _error(parse_size, "lots", "dataset_bytes")
    for query, data in (("batch_size=0", {"batch_size": 0}), ("method=lorra", {"method": "lorra"}),
                        ("seq_lne=4096", {"seq_lne": 4096})):
        assert _error(plan_from_query, query) == _error(TrainPlan.from_dict, data), query
    assert _error(plan_from_query, "grad_checkpointing=maybe").startswith(
        "grad_checkpointing='maybe' in the link is not true or false")


def test_the_sizing_form_round_trips_through_its_link() -> None:
    from gpuwork.ui.sizing import SizingForm

    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=1024, grad_checkpointing=True)
    form = SizingForm.from_query(plan_query(plan))
    assert form.error is None and form.plan == plan
    assert form.query() == plan_query(plan)
    assert "gpuwork-plan-download" in form.share.value and plan_query(plan).split("&")[0] in form.share.value
    form.controls["seq_len"].value = "2k"
    assert plan_from_query(form.query()) == plan.replace(seq_len=2048)  # the link follows the form (k = 1,024)
    bad = SizingForm.from_query("seq_len=abc", lang="ru")
    assert bad.result is None and bad.error.startswith("Длина последовательности: 'abc' — не количество")
