import csv
import json

import pytest

from gpuwork import ModelError, TrainPlan, count_params, get_spec, list_presets
from gpuwork.facts.model import build_spec, check_config, load_config, lora_target_linears
from gpuwork.facts.paths import data_dir, models_dir

PUBLISHED = {r["name"]: r for r in csv.DictReader(open(models_dir() / "index.csv"))}


def test_at_least_twenty_real_presets_and_tiny_ones():
    names = list_presets()
    real = [n for n in names if not n.startswith("tiny-")]
    assert len(real) >= 20
    for required in ("llama-2-7b", "llama-3.1-8b", "llama-3.2-1b", "mistral-7b", "mixtral-8x7b", "qwen2.5-72b",
                     "gemma-2-27b", "phi-3-mini", "gpt2", "bert-base-uncased", "bert-large-uncased", "tiny-llama"):
        assert required in names


@pytest.mark.parametrize("name", [n for n in PUBLISHED if PUBLISHED[n]["published_params"]])
def test_golden_parameter_counts_match_published_sizes(name):
    spec = get_spec(name)
    published = float(PUBLISHED[name]["published_params"])
    # Publishers round ("70B" for 68.98e9; BERT-large "340M" vs 335M counted): 2 % covers rounding.
    assert spec.params_total == pytest.approx(published, rel=0.02)


def test_exact_counts_of_well_known_models():
    # Widely reproduced exact counts (model cards / safetensors metadata).
    assert get_spec("llama-2-7b").params_total == 6_738_415_616
    assert get_spec("llama-3.1-8b").params_total == 8_030_261_248
    assert get_spec("gpt2").params_total == 124_439_808
    mixtral = get_spec("mixtral-8x7b")
    assert mixtral.params_total == pytest.approx(46.7e9, rel=0.001)
    assert mixtral.params_active == pytest.approx(12.9e9, rel=0.01)  # 2 of 8 experts per token


@pytest.mark.slow
def test_shipped_spec_cache_matches_a_fresh_meta_build():
    cached = json.loads((data_dir() / "model_specs.json").read_text())["specs"]
    for name in ("llama-3.2-1b", "gpt2", "tiny-mixtral", "gemma-2-2b"):
        config, _ = load_config(name)
        fresh = build_spec(config, name=name)
        assert cached[f"{name}|auto"] == json.loads(json.dumps(fresh.as_dict()))
    assert {key.split("|")[0] for key in cached} == set(list_presets())


def test_lora_counts_match_peft_on_a_real_model():
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, LlamaConfig

    config, _ = load_config("tiny-llama")
    model = AutoModelForCausalLM.from_config(LlamaConfig.from_dict(config))
    for targets in (["q_proj", "v_proj"], "all-linear"):
        peft_model = get_peft_model(model, LoraConfig(r=8, target_modules=targets, task_type="CAUSAL_LM"))
        real = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        plan = TrainPlan(model="tiny-llama", method="lora", lora_r=8, lora_targets=targets)
        assert count_params(get_spec("tiny-llama"), plan).trainable == real
        model = peft_model.unload()
    del torch


def test_llama2_7b_lora_r8_qv_matches_litgpt_table():
    # docs/sources.md#s-mem-lora-count: 32 layers * 2 modules * 8 * (4096 + 4096) = 4,194,304
    plan = TrainPlan(model="llama-2-7b", method="lora", lora_r=8, lora_targets="q_proj,v_proj")
    assert count_params(get_spec("llama-2-7b"), plan).trainable == 4_194_304


def test_freeze_trains_last_blocks_norm_and_head():
    spec = get_spec("tiny-llama")
    counts = count_params(spec, TrainPlan(model="tiny-llama", method="freeze", trainable_layers=1))
    assert counts.trainable == spec.params_block + spec.params_head + spec.hidden_size  # + final RMSNorm


def test_qlora_quantizes_block_linears_not_the_head():
    spec = get_spec("llama-3.1-8b")
    counts = count_params(spec, TrainPlan(model="llama-3.1-8b", method="qlora"))
    block_linear = sum(lin.count * lin.in_features * lin.out_features for lin in spec.block_linears)
    assert counts.quantized == block_linear
    assert counts.quantized < spec.params_total - spec.params_embedding - spec.params_head + 1


def test_encoder_with_classification_head():
    spec = get_spec("bert-base-uncased", "seq-cls")
    assert spec.architecture == "BertForSequenceClassification"
    counts = count_params(spec, TrainPlan(model="bert-base-uncased", task="seq-cls", method="lora",
                                          lora_targets="query,value"))
    assert counts.head_trainable == spec.params_head > 0


def test_unknown_preset_suggests_close_names():
    with pytest.raises(ModelError) as info:
        get_spec("llama-3.1-8")
    assert "llama-3.1-8b" in str(info.value)
    assert info.value.msg.code == "error.model.unknown_close" and info.value.msg["ref"] == "llama-3.1-8"
    assert info.value.text("ru") == (
        "неизвестная модель 'llama-3.1-8': это не пресет, не путь к config.json и не id на Hugging Face Hub "
        "(org/name). Может быть, llama-3.1-8b, llama-3.1-70b, llama-3.2-3b? Список пресетов: `gpuwork models`.")


def test_lora_targets_matching_nothing_lists_real_modules():
    with pytest.raises(ModelError) as info:
        lora_target_linears(get_spec("gpt2"), ("q_proj",))
    assert "c_attn" in str(info.value)
    assert info.value.msg.code == "error.model.target_not_found"
    assert "не совпадает ни с одним линейным модулем gpt2" in info.value.text("ru")


def test_lora_on_the_output_layer_is_named_as_such_not_listed_as_a_choice():
    with pytest.raises(ModelError) as info:
        lora_target_linears(get_spec("llama-2-7b"), ("q_proj", "lm_head"))
    assert info.value.msg.code == "error.model.target_is_output"
    names = info.value.msg["names"].split(", ")
    assert "q_proj" in names and "down_proj" in names and "lm_head" not in names
    assert "выходной слой llama-2-7b" in info.value.text("ru")


def test_local_config_file_and_folder(tmp_path):
    config, _ = load_config("tiny-qwen2")
    (tmp_path / "config.json").write_text(json.dumps(config))
    by_file = get_spec(str(tmp_path / "config.json"))
    by_folder = get_spec(str(tmp_path))
    assert by_file.params_total == by_folder.params_total == get_spec("tiny-qwen2").params_total


def test_malformed_config_names_the_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama",\n "hidden_size": }')
    with pytest.raises(ModelError) as info:
        get_spec(str(bad))
    assert "line 2" in str(info.value)


def test_hub_id_without_network_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError) as info:
        get_spec("some-org/some-model-that-is-not-cached")
    assert "config.json" in str(info.value)


@pytest.mark.parametrize("model_type", ["no-such-model-type", ["llama"], None])
def test_model_type_transformers_does_not_know_is_one_clear_error(model_type):
    config, _ = load_config("tiny-qwen2")
    config = {**config, "model_type": model_type}  # a list is unhashable: no lookup, the same clear error
    with pytest.raises(ModelError) as info:
        build_spec(config, "my-model")
    assert info.value.msg.code == "error.model.unknown_type"
    assert info.value.msg["model_type"] == str(model_type) and info.value.msg["name"] == "my-model"


def test_config_sizes_are_read_under_text_config_and_only_from_a_dict():
    nested = {"model_type": "m", "text_config": {"num_hidden_layers": 100_000}}
    with pytest.raises(ModelError) as info:
        check_config(nested, "vlm", complete=False)
    assert info.value.msg.code == "error.config.too_large" and info.value.msg["field"] == "num_hidden_layers"
    sizes = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}
    check_config({**sizes, "text_config": "not a dict"}, "plain")  # not a dict: the top level alone is read
    with pytest.raises(ModelError) as info:
        check_config({"text_config": "not a dict"}, "empty")
    assert info.value.msg.code == "error.config.missing_fields"


@pytest.mark.parametrize(("config", "kv_heads"), [
    # Falcon-7B's layout: multi-query without the new decoder architecture runs one key/value head
    ({"model_type": "falcon", "multi_query": True, "new_decoder_architecture": False}, 1),
    # Falcon-40B's: the new decoder architecture runs num_kv_heads groups
    ({"model_type": "falcon", "multi_query": True, "new_decoder_architecture": True, "num_kv_heads": 2}, 2),
    ({"model_type": "falcon", "multi_query": False, "new_decoder_architecture": False}, 4),
    ({"model_type": "gpt_bigcode", "multi_query": True, "n_embd": 64, "n_head": 4, "n_layer": 2}, 1),
    ({"model_type": "gpt_bigcode", "multi_query": False, "n_embd": 64, "n_head": 4, "n_layer": 2}, 4),
    ({"model_type": "llama", "num_key_value_heads": 2}, 2),
])
def test_key_value_heads_are_the_attention_modules_own(config, kv_heads):
    # the count the model class runs, whatever the config class of the installed transformers maps (Falcon's maps
    # multi_query to num_key_value_heads only from 5.25): the qkv projection's width agrees with it
    sizes = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 128,
             "intermediate_size": 128}
    spec = build_spec({**sizes, **config}, "kv-heads")
    assert spec.num_heads == 4 and spec.num_kv_heads == kv_heads
    widths = {lin.short_name: lin.out_features for lin in spec.linears}
    qkv = widths.get("query_key_value") or widths.get("c_attn")
    if qkv is not None:
        assert qkv == 64 + 2 * kv_heads * 16
