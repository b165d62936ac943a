import dataclasses
import json
import math

import pytest

from gpuwork import Method, PlanError, Precision, TrainPlan
from gpuwork.plan import OPTIONAL_FIELDS, PLAN_RANGES


def test_strings_become_enums_and_replace_validates():
    plan = TrainPlan(model="tiny-llama", method="QLoRA", precision="bf16_mixed", sharding="ddp")
    assert plan.method is Method.QLORA
    assert plan.precision is Precision.BF16_MIXED
    with pytest.raises(PlanError):
        plan.replace(batch_size=0)
    assert dataclasses.replace(plan, seq_len=512).seq_len == 512


def test_plan_is_frozen():
    plan = TrainPlan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.seq_len = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"method": "lorra"}, "method", ["lorra", "lora"]),
        ({"precision": "bf8"}, "precision", ["bf8", "allowed"]),
        ({"batch_size": -1}, "batch_size", ["batch_size=-1", ">= 1"]),
        ({"seq_len": 0}, "seq_len", ["seq_len=0"]),
        ({"batch_size": 2.5}, "batch_size", ["whole number"]),
        ({"gpus": 1, "sharding": "zero3"}, "sharding", ["needs gpus >= 2", "sharding='ddp'"]),
        ({"method": "lora", "lora_r": 0}, "lora_r", ["lora_r=0", ">= 1"]),
        ({"lora_dropout": 1.0}, "lora_dropout", ["below 1"]),
        ({"gpus": 2, "sharding": "ddp", "offload_params": True}, "offload_params", ["zero3"]),
        ({"offload_optimizer": True}, "offload_optimizer", ["ZeRO or FSDP"]),
        ({"lora_targets": ""}, "lora_targets", ["empty"]),
        ({"eval_fraction": 1.5}, "eval_fraction", ["[0, 1)"]),
        ({"epochs": 0}, "epochs", ["epochs=0"]),
        ({"grad_checkpointing": "yes"}, "grad_checkpointing", ["true or false"]),
        ({"model": ""}, "model", ["gpuwork models"]),
    ],
)
def test_invalid_values_name_field_and_fix(fields, field, words):
    with pytest.raises(PlanError) as info:
        TrainPlan(**fields)
    assert info.value.field == field
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_lora_targets_accepts_comma_string_and_all_linear():
    assert TrainPlan(lora_targets="q_proj, v_proj").lora_targets == ("q_proj", "v_proj")
    assert TrainPlan(lora_targets=["ALL_LINEAR"]).lora_targets == ("all-linear",)


def test_dict_round_trip_and_unknown_field():
    plan = TrainPlan(model="tiny-llama", method="full", lora_targets="all-linear", gpus=2, sharding="fsdp")
    assert TrainPlan.from_dict(plan.as_dict()) == plan
    with pytest.raises(PlanError) as info:
        TrainPlan.from_dict({"batchsize": 4})
    assert "batch_size" in str(info.value)


def test_tokens_per_step_counts_all_gpus():
    plan = TrainPlan(seq_len=1024, batch_size=4, grad_accum=8, gpus=2, sharding="zero2")
    assert plan.tokens_per_step == 1024 * 4 * 8 * 2


def test_plan_file_errors_name_the_file_in_both_languages(tmp_path):
    from gpuwork.facts.planfile import load_plan, read_plan_fields

    (tmp_path / "plan.json").write_text(json.dumps(TrainPlan(model="tiny-llama").as_dict()))
    assert load_plan(tmp_path / "plan.json") == TrainPlan(model="tiny-llama")
    cases = [
        (tmp_path / "nope.json", "error.planfile.missing", "does not exist", "нет"),
        (tmp_path / "broken.json", "error.planfile.bad_json", "is not valid JSON (line 2:",
         "некорректный JSON (строка 2:"),
        (tmp_path / "list.json", "error.planfile.not_object", "must hold a JSON object", "должен быть JSON-объект"),
    ]
    (tmp_path / "broken.json").write_text('{"model": "gpt2",\n "seq_len": }')
    (tmp_path / "list.json").write_text("[1, 2]")
    for path, code, english, russian in cases:
        with pytest.raises(PlanError) as info:
            read_plan_fields(path)
        assert info.value.field == "plan" and info.value.msg.code == code
        assert english in str(info.value) and str(path) in str(info.value)
        assert russian in info.value.text("ru") and str(path) in info.value.text("ru")


def test_the_0_1_0_optimizer_foreach_field_is_an_unknown_field_now():
    """0.1.0's plan files named the optimizer implementation ``optimizer_foreach``; it is ``optimizer_impl`` now and
    the old name is refused like any unknown field (no silent conversion)."""
    for value in (False, True, "no"):
        with pytest.raises(PlanError) as err:
            TrainPlan.from_dict({"optimizer_foreach": value})
        assert err.value.field == "optimizer_foreach" and err.value.msg.code == "error.plan.unknown_field_close"
    assert TrainPlan.from_dict({"optimizer_impl": "for-loop"}).optimizer_impl.value == "for-loop"


def test_optimizer_impl_selects_the_torch_kernels():
    assert TrainPlan(optimizer_impl="fused").optimizer_impl.torch_kwargs == {"fused": True}
    assert TrainPlan(optimizer_impl="for_loop").optimizer_impl.torch_kwargs == {"foreach": False}
    assert TrainPlan().optimizer_impl.torch_kwargs == {"foreach": True}
    assert TrainPlan(stack="hf_liger").stack.value == "hf-liger"


def _edge_values(bounds):
    """Values at, inside and beyond each end of a range, and the kinds of value it refuses."""
    low, high = bounds.low, bounds.high
    values = [low, high, True, False, None, "1", math.nan, math.inf, -math.inf]
    if bounds.whole:
        values += [int(low) - 1, int(high) + 1, float(low), float(high)]
    else:
        values += [math.nextafter(low, -math.inf), math.nextafter(high, math.inf), (low + high) / 2, int(high)]
    return values


@pytest.mark.parametrize("name", sorted(PLAN_RANGES))
def test_a_plan_is_refused_exactly_when_one_of_its_numbers_is_out_of_its_range(name):
    # a plan's numbers pass a quick check first; at every edge of every range it must agree with Range.problem
    bounds = PLAN_RANGES[name]
    # documents need packed rows as long as any, and a kernel that takes their boundaries
    context = {"lengths": "packed", "attention": "flash", "seq_len": bounds.high} \
        if name == "packed_document_tokens" else {}
    if name == "recompute_every":  # one block in n needs checkpointing
        context = {"grad_checkpointing": True}
    for value in _edge_values(bounds):
        expected_ok = bounds.problem(value) is None or (value is None and name in OPTIONAL_FIELDS)
        if expected_ok:
            assert getattr(TrainPlan(method="lora", **context, **{name: value}), name) == value
        else:
            with pytest.raises(PlanError) as caught:
                TrainPlan(method="lora", **context, **{name: value})
            assert caught.value.field == name, value
