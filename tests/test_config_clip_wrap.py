"""Config readers: DeepSpeed's gradient_clipping -> grad_clip, accelerate's SIZE_BASED_WRAP -> fsdp_wrap where the
model's size decides it exactly (docs/grad_clip.md, docs/configs.md 'FSDP wrap policy')."""

from __future__ import annotations

import json

import pytest

from gpuwork.errors import PlanError
from gpuwork.facts.configs import import_configs
from gpuwork.present.messages import render

ZERO2 = {"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 2}


def _write(tmp_path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data) if isinstance(data, dict) else data)
    return str(path)


def _claim(got, field: str):
    return next((c for c in got.claims if c.field == field), None)


@pytest.mark.parametrize(("value", "clips"), [(1.0, True), (0.5, True), (0.0, False), (0, False), ("1.0", True)])
def test_a_deepspeed_number_decides_with_the_engines_rule(tmp_path, value, clips):
    got = import_configs([_write(tmp_path, "ds.json", {**ZERO2, "gradient_clipping": value})])
    claim = _claim(got, "grad_clip")
    assert claim is not None and claim.value is clips and claim.key == "gradient_clipping"
    assert claim.rule is not None and claim.rule.code == "config.rule.ds_clipping"
    assert "gradient_clipping" not in dict(got.ignored).get(claim.file, ())  # read, not listed as ignored


def test_auto_takes_the_trainers_max_grad_norm(tmp_path):
    ds = _write(tmp_path, "ds.json", {**ZERO2, "gradient_clipping": "auto"})
    args = _write(tmp_path, "args.json", {"per_device_train_batch_size": 2, "max_grad_norm": 0, "deepspeed": ds})
    got = import_configs([args])
    assert got.fields["grad_clip"] is False
    assert _claim(got, "grad_clip").key == "max_grad_norm"
    deferred = [n for n in got.notes if n.code == "config.auto_deferred" and n["key"] == "gradient_clipping"]
    assert len(deferred) == 1 and deferred[0]["field"] == "grad_clip"
    # unset in the Trainer file: the Trainer's default 1.0 fills "auto"
    args = _write(tmp_path, "args1.json", {"per_device_train_batch_size": 2, "deepspeed": ds})
    assert import_configs([args]).fields["grad_clip"] is True


def test_a_stated_deepspeed_zero_and_a_stated_trainer_norm_conflict(tmp_path):
    ds = _write(tmp_path, "ds.json", {**ZERO2, "gradient_clipping": 0.0})
    args = _write(tmp_path, "args.json", {"per_device_train_batch_size": 2, "max_grad_norm": 1.0, "deepspeed": ds})
    with pytest.raises(PlanError) as caught:
        import_configs([args])
    assert caught.value.msg.code == "error.config.conflict" and caught.value.msg["field"] == "grad_clip"


def test_left_out_it_is_not_claimed_and_the_note_says_the_default_changed(tmp_path):
    got = import_configs([_write(tmp_path, "ds.json", ZERO2)])
    assert "grad_clip" not in got.fields
    note = next(n for n in got.notes if n.code == "config.ds_clipping_unset")
    assert "0.19.3" in render(note, "en") and "max_grad_norm" in render(note, "en")
    assert "0.19.3" in render(note, "ru") and "умолчание DeepSpeed" in render(note, "ru")


def test_a_word_that_is_not_a_number_is_refused(tmp_path):
    with pytest.raises(PlanError) as caught:
        import_configs([_write(tmp_path, "ds.json", {**ZERO2, "gradient_clipping": "high"})])
    assert caught.value.msg.code == "error.config.not_number"


# -- accelerate's SIZE_BASED_WRAP ------------------------------------------------------------------------------

def _fsdp_yaml(extra: str = "") -> str:
    return ("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nmixed_precision: bf16\n"
            "fsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n" + extra)


def _size_read(tmp_path, model: str, extra: str = ""):
    args = _write(tmp_path, "args.json", {"model_name_or_path": model, "per_device_train_batch_size": 2})
    return import_configs([args, _write(tmp_path, "acc.yaml", _fsdp_yaml(extra))])


def _torch_units(model, min_num_params: int) -> int:
    """Parameters torch's own size-based policy wraps below the root (FSDP1's recursion, a stand-in wrapper)."""
    import functools

    from torch.distributed.fsdp.wrap import _recursive_wrap, size_based_auto_wrap_policy

    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=min_num_params)
    _, wrapped = _recursive_wrap(model, policy, lambda m, **kw: m, set(), set(), only_wrap_children=True)
    return wrapped


def test_a_model_below_the_threshold_is_one_unit_as_torch_wraps_it(tmp_path):
    import torch
    import transformers

    from gpuwork.facts.model import load_config

    got = _size_read(tmp_path, "tiny-llama")
    claim = _claim(got, "fsdp_wrap")
    assert claim is not None and claim.value == "whole" and claim.key == "fsdp_config.fsdp_auto_wrap_policy"
    assert claim.rule.code == "config.rule.size_wrap_whole" and claim.rule["min"] == 10 ** 8
    params = claim.rule["params"]
    config, _ = load_config("tiny-llama")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    assert params == sum(p.numel() for p in model.parameters()) < 10 ** 8  # the count the policy sees
    assert _torch_units(model, 10 ** 8) == 0  # nothing below the root: 'whole'
    assert _torch_units(model, params // 20) > 0  # a threshold a block reaches: units below the root
    assert got.plan().fsdp_wrap == "whole"
    for lang in ("en", "ru"):
        assert "SIZE_BASED_WRAP" in render(claim.rule, lang)


def test_a_stated_threshold_above_the_model_is_read_from_its_key(tmp_path):
    got = _size_read(tmp_path, "tiny-llama", "  fsdp_min_num_params: 50000000\n")
    claim = _claim(got, "fsdp_wrap")
    assert claim.value == "whole" and claim.key == "fsdp_config.fsdp_min_num_params" and claim.rule["min"] == 5 * 10 ** 7


@pytest.mark.parametrize(("model", "extra"), [("llama-3.1-8b", ""), ("tiny-llama", "  fsdp_min_num_params: 1000\n")])
def test_a_model_at_or_above_the_threshold_is_left_unclaimed_with_a_note(tmp_path, model, extra):
    got = _size_read(tmp_path, model, extra)
    assert "fsdp_wrap" not in got.fields and got.plan().fsdp_wrap == "blocks"
    note = next(n for n in got.notes if n.code == "config.size_wrap_larger")
    assert note["params"] >= note["min"]
    assert "one unit per block" in render(note, "en") and "один блок на слой" in render(note, "ru")


def test_a_hub_model_is_not_counted(tmp_path):
    got = _size_read(tmp_path, "some-org/some-unlisted-model-7b")
    assert "fsdp_wrap" not in got.fields
    assert any(n.code == "config.size_wrap_unknown" for n in got.notes)


def test_a_zero_threshold_turns_the_policy_off_whatever_the_model(tmp_path):
    got = _size_read(tmp_path, "llama-3.1-8b", "  fsdp_min_num_params: 0\n")
    claim = _claim(got, "fsdp_wrap")
    assert claim.value == "whole" and claim.rule.code == "config.rule.size_wrap_zero"


def test_a_threshold_that_is_not_a_whole_number_is_refused(tmp_path):
    with pytest.raises(PlanError) as caught:
        _size_read(tmp_path, "tiny-llama", "  fsdp_min_num_params: lots\n")
    assert caught.value.msg.code == "error.config.not_whole"


def test_no_shard_reads_no_wrap(tmp_path):
    yaml = _fsdp_yaml().replace("FULL_SHARD", "NO_SHARD")  # ddp: not a torch FSDP sharding the field covers
    args = _write(tmp_path, "args.json", {"model_name_or_path": "tiny-llama", "per_device_train_batch_size": 2})
    got = import_configs([args, _write(tmp_path, "acc.yaml", yaml)])
    assert "fsdp_wrap" not in got.fields and not any(n.code.startswith("config.size_wrap") for n in got.notes)
