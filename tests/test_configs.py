"""Importing the user's own training configs (gpuwork.facts.configs, ``--from FILE``): each format from its example
file, a changed field changes the plan, every optimizer name, contradictions, and the CLI printing the mapping in
English and Russian."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_messages_measure import english_leftovers

from gpuwork.cli import main
from gpuwork.errors import PlanError
from gpuwork.facts.configs import (
    DEEPSPEED_OPTIMIZERS,
    OPTIMIZER_NAMES,
    detect_format,
    import_configs,
    optimizer_choice,
    read_config,
)
from gpuwork.message import Msg
from gpuwork.plan import Optimizer, OptimizerImpl, TrainPlan
from gpuwork.present.messages import CATALOG, render

# the --from importers' part of the catalog
ENTRIES = {code: (e["en"], e["ru"]) for code, e in CATALOG.items()
           if code.startswith(("config.", "error.config.", "ui.upload_", "memory.fp32_master"))}

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = Path(__file__).resolve().parent / "data" / "configs"


def _plan(*names: str, **flags) -> TrainPlan:
    return import_configs([CONFIGS / n for n in names]).plan(**flags)


# -- each format from its example file ---------------------------------------------------------------------------

EXPECTED = {
    "training_args.json": ("hf", {"precision": "bf16-mixed", "optimizer": "adamw", "optimizer_impl": "fused",
                                  "batch_size": 4, "grad_accum": 4, "grad_checkpointing": True, "epochs": 2,
                                  "checkpoint_every_steps": 200, "checkpoints_kept": 3}),
    "sft_config.yaml": ("hf", {"model": "llama-3.1-8b", "method": "lora", "precision": "bf16-mixed",
                               "optimizer": "paged-adamw-8bit", "seq_len": 4096, "batch_size": 2, "grad_accum": 8,
                               "attention": "flash", "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.05,
                               "lora_targets": ("all-linear",), "stack": "hf-liger", "checkpoints_kept": 2}),
    "axolotl_lora.yml": ("axolotl", {"model": "llama-3.2-1b", "method": "lora", "optimizer": "adamw-8bit",
                                     "seq_len": 4096, "batch_size": 2, "grad_accum": 4, "lora_r": 32,
                                     "lora_alpha": 16, "lora_targets": ("all-linear",), "attention": "flash",
                                     "grad_checkpointing": True, "epochs": 4, "checkpoint_every_steps": 100}),
    "axolotl_qlora.yml": ("axolotl", {"model": "llama-3.1-8b", "method": "qlora", "optimizer": "adamw",
                                      "precision": "bf16-mixed", "seq_len": 4096}),
    "llamafactory_lora.yaml": ("llamafactory", {"model": "qwen2.5-7b", "method": "lora", "lora_r": 8,
                                                "lora_alpha": 16, "lora_targets": ("all-linear",), "seq_len": 2048,
                                                "batch_size": 1, "grad_accum": 8, "grad_checkpointing": True,
                                                "dataset_tokens": 1000 * 2048, "epochs": 3}),
    # under DeepSpeed ZeRO, bf16: true runs DeepSpeed's bf16 mode: 16-bit weights, fp32 masters in the optimizer
    "llamafactory_full_ds3.yaml": ("llamafactory", {"method": "full", "sharding": "zero3", "gpus": 8,
                                                    "precision": "bf16", "grad_accum": 2}),
    "ds_z2_offload.json": ("deepspeed", {"sharding": "zero2", "offload_optimizer": True, "batch_size": 4,
                                         "grad_accum": 4, "gpus": 4, "precision": "bf16",
                                         "optimizer_impl": "fused"}),
    "ds_z3_config.json": ("deepspeed", {"sharding": "zero3", "gpus": 8}),
    "accelerate_fsdp.yaml": ("accelerate", {"sharding": "fsdp", "gpus": 8, "precision": "bf16-mixed"}),
    "accelerate_deepspeed.yaml": ("accelerate", {"sharding": "zero3", "gpus": 16}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_format_is_read_from_its_example_file(name: str) -> None:
    fmt, expected = EXPECTED[name]
    assert detect_format(read_config(CONFIGS / name)) == fmt
    imported = import_configs([CONFIGS / name])
    assert imported.files[0][1] == fmt
    plan = imported.plan()
    got = {key: getattr(plan, key) for key in expected}
    assert got == expected
    # every line of the report renders in both languages, and names the file for each mapped field
    for lang in ("en", "ru"):
        lines = [render(m, lang) for m in imported.report()]
        mapped = [line for line in lines if line.startswith("  ") and (" <- " in line or " ← " in line)]
        assert mapped and all(any(f"{path}: " in line for path, _fmt in imported.files) for line in mapped)


def test_the_format_comes_from_the_keys_not_the_file_name(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "ds_z2_offload.json", tmp_path / "settings.yaml")  # YAML reads JSON
    shutil.copy(CONFIGS / "axolotl_lora.yml", tmp_path / "train.txt")
    assert import_configs([tmp_path / "settings.yaml"]).files[0][1] == "deepspeed"
    assert import_configs([tmp_path / "train.txt"]).files[0][1] == "axolotl"


# -- a changed field changes the plan ---------------------------------------------------------------------------

CHANGES = [
    ("training_args.json", '"per_device_train_batch_size": 4', '"per_device_train_batch_size": 6', "batch_size", 6),
    ("training_args.json", '"optim": "adamw_torch_fused"', '"optim": "adafactor"', "optimizer", Optimizer.ADAFACTOR),
    ("sft_config.yaml", "max_length: 4096", "max_length: 1024", "seq_len", 1024),
    ("axolotl_lora.yml", "micro_batch_size: 2", "micro_batch_size: 3", "batch_size", 3),
    ("axolotl_lora.yml", "adapter: lora", "adapter:", "method", "full"),
    ("llamafactory_lora.yaml", "cutoff_len: 2048", "cutoff_len: 8192", "seq_len", 8192),
    ("llamafactory_lora.yaml", "finetuning_type: lora", "finetuning_type: freeze", "method", "freeze"),
    ("ds_z2_offload.json", '"stage": 2', '"stage": 1', "sharding", "zero1"),
    ("ds_z2_offload.json", '"train_batch_size": 64', '"train_batch_size": 128', "gpus", 8),
    ("accelerate_fsdp.yaml", "num_processes: 8", "num_processes: 4", "gpus", 4),
    ("accelerate_fsdp.yaml", "fsdp_sharding_strategy: FULL_SHARD", "fsdp_sharding_strategy: SHARD_GRAD_OP",
     "sharding", "zero2"),
    ("accelerate_deepspeed.yaml", "zero_stage: 3", "zero_stage: 2", "sharding", "zero2"),
]


@pytest.mark.parametrize(("name", "old", "new", "field", "value"), CHANGES,
                         ids=[f"{c[0]}:{c[3]}" for c in CHANGES])
def test_a_field_change_changes_the_plan(tmp_path: Path, name: str, old: str, new: str, field: str, value) -> None:
    before = _plan(name)
    text = (CONFIGS / name).read_text()
    assert text.count(old) == 1
    changed = tmp_path / name
    changed.write_text(text.replace(old, new))
    after = import_configs([changed]).plan()
    assert getattr(after, field) == value != getattr(before, field)


def test_a_full_fine_tune_of_a_model_loaded_in_bf16_is_pure_bf16(tmp_path: Path) -> None:
    text = (CONFIGS / "sft_config.yaml").read_text().replace("use_peft: true", "use_peft: false")
    (tmp_path / "full.yaml").write_text(text)
    assert import_configs([tmp_path / "full.yaml"]).plan().precision == "bf16"  # torch_dtype: bfloat16
    (tmp_path / "fp32.yaml").write_text(text.replace("torch_dtype: bfloat16\n", ""))
    assert import_configs([tmp_path / "fp32.yaml"]).plan().precision == "bf16-mixed"
    axolotl = (CONFIGS / "axolotl_lora.yml").read_text().replace("adapter: lora", "adapter:")
    (tmp_path / "axolotl_full.yml").write_text(axolotl)
    assert import_configs([tmp_path / "axolotl_full.yml"]).plan().precision == "bf16"


def test_a_hub_id_that_is_not_a_preset_is_kept(tmp_path: Path) -> None:
    text = (CONFIGS / "axolotl_lora.yml").read_text().replace("meta-llama/Llama-3.2-1B", "NousResearch/Meta-Llama-3-8B")
    (tmp_path / "a.yml").write_text(text)
    imported = import_configs([tmp_path / "a.yml"])
    assert imported.fields["model"] == "NousResearch/Meta-Llama-3-8B"
    model = next(c for c in imported.claims if c.field == "model")
    # without transformers (the core install) a hub id is kept and the rule says it needs the package
    expected = "config.rule.model_hub" if importlib.util.find_spec("transformers") else \
        "config.rule.model_hub_needs_transformers"
    assert model.rule.code == expected


def test_max_steps_sets_the_run_length(tmp_path: Path) -> None:
    data = json.loads((CONFIGS / "training_args.json").read_text())
    data["max_steps"] = 300
    (tmp_path / "args.json").write_text(json.dumps(data))
    plan = import_configs([tmp_path / "args.json"]).plan(seq_len=1024)
    # tokens per step from the files: the default seq_len 2048 x batch 4 x accumulation 4 x 1 GPU
    assert plan.dataset_tokens == 300 * 2048 * 4 * 4 and plan.epochs == 1


def test_pad_to_max_length_reads_as_rows_padded_with_a_mask(tmp_path: Path) -> None:
    """transformers' example scripts' pad_to_max_length pads every row to the length with an attention mask:
    lengths 'padded' (SDPA then runs its memory-efficient kernel, docs/time_misses.md#sdpa-with-a-padding-mask)."""
    data = json.loads((CONFIGS / "training_args.json").read_text())
    for flag, lengths in ((True, "padded"), (False, "fixed")):
        data["pad_to_max_length"] = flag
        (tmp_path / "args.json").write_text(json.dumps(data))
        imported = import_configs([tmp_path / "args.json"])
        assert imported.plan().lengths == lengths
        assert "pad_to_max_length" not in {key for _, keys in imported.ignored for key in keys}


# -- combined files ---------------------------------------------------------------------------------------------


def test_training_args_deepspeed_and_accelerate_combine() -> None:
    imported = import_configs([CONFIGS / "training_args.json", CONFIGS / "ds_z3_config.json",
                               CONFIGS / "accelerate_deepspeed.yaml"])
    plan = imported.plan()
    # DeepSpeed's bf16 mode: 16-bit weights, fp32 masters in the optimizer
    assert (plan.batch_size, plan.grad_accum, plan.sharding, plan.gpus, plan.precision) == (
        4, 4, "zero3", 16, "bf16")
    assert plan.fp32_master_weights
    # DeepSpeed's "auto" values defer to the TrainingArguments file, and the report says so
    deferred = {m["key"]: m["source"] for m in imported.notes if m.code == "config.auto_deferred"}
    assert deferred["train_micro_batch_size_per_gpu"] == str(CONFIGS / "training_args.json")
    assert deferred["gradient_accumulation_steps"] == str(CONFIGS / "training_args.json")
    assert deferred["train_batch_size"] == str(CONFIGS / "accelerate_deepspeed.yaml")


def test_a_deepspeed_file_named_by_a_training_config_is_followed() -> None:
    imported = import_configs([CONFIGS / "llamafactory_full_ds3.yaml"])
    assert [fmt for _path, fmt in imported.files] == ["llamafactory", "deepspeed"]
    assert next(c for c in imported.claims if c.field == "sharding").file == str(CONFIGS / "ds_z3_config.json")


# -- accelerate's FSDP upcast of 16-bit trainable weights ------------------------------------------------------


def _args(tmp_path: Path, name: str, **changes) -> Path:
    """The real TrainingArguments JSON (bf16 on) with ``changes``, loading the model in bf16."""
    data = {**json.loads((CONFIGS / "training_args.json").read_text()), "torch_dtype": "bfloat16", **changes}
    (tmp_path / name).write_text(json.dumps(data))
    return tmp_path / name


def _precision(*paths: Path):
    imported = import_configs(list(paths))
    return next(c for c in imported.claims if c.field == "precision"), imported


def test_fsdp_with_bf16_upcasts_a_model_loaded_in_bf16(tmp_path: Path) -> None:
    fsdp = _args(tmp_path, "fsdp.json", fsdp="full_shard auto_wrap")
    claim, imported = _precision(fsdp)
    # accelerate's prepare keeps fp32 weights, gradients and AdamW states: bf16-mixed, not bf16
    assert claim.value == "bf16-mixed" and claim.rule.code == "config.rule.fsdp_upcast"
    assert (claim.rule["dtype"], claim.rule["mixed"]) == ("bf16", "bf16")
    assert imported.fields["sharding"] == "fsdp"
    plan = imported.plan(model="llama-3.2-1b")
    assert plan.precision == "bf16-mixed" and plan.precision.is_mixed
    # without FSDP the same file trains bf16 weights, as before
    claim, _ = _precision(_args(tmp_path, "ddp.json"))
    assert (claim.value, claim.rule.code) == ("bf16", "config.rule.pure_loaded")
    # fp16 on over bf16 weights: fp32 masters with fp16 compute
    claim, _ = _precision(_args(tmp_path, "fp16.json", fsdp="full_shard auto_wrap", bf16=False, fp16=True))
    assert claim.value == "fp16-mixed" and claim.rule["mixed"] == "fp16"
    # transformers 5's spelling (fsdp: true, the strategy in fsdp_config) is FSDP too
    claim, _ = _precision(_args(tmp_path, "v5.json", fsdp=True, fsdp_config={"reshard_after_forward": True}))
    assert claim.value == "bf16-mixed"
    # no mixed precision anywhere: nothing upcasts, the weights stay 16-bit
    claim, _ = _precision(_args(tmp_path, "pure.json", fsdp="full_shard auto_wrap", bf16=False))
    assert claim.value == "bf16"
    # XLA's FSDP is not accelerate's preparation
    claim, _ = _precision(_args(tmp_path, "xla.json", fsdp="full_shard", fsdp_config={"xla": True}))
    assert claim.value == "bf16"


def test_an_accelerate_fsdp_config_upcasts_the_training_config_bf16_weights(tmp_path: Path) -> None:
    for name, changes in (("bf16_on.json", {}), ("bf16_off.json", {"bf16": False})):
        # bf16 off in the TrainingArguments: Trainer takes accelerate launch's mixed_precision (the YAML's bf16)
        claim, imported = _precision(_args(tmp_path, name, **changes), CONFIGS / "accelerate_fsdp.yaml")
        assert claim.value == "bf16-mixed" and claim.rule.code == "config.rule.fsdp_upcast", name
        assert claim.file == str(tmp_path / name)
        assert claim.rule["source"] == f"{CONFIGS / 'accelerate_fsdp.yaml'}: distributed_type"
        # accelerate's own bf16-mixed is what runs: no note that it was overridden
        assert not [m for m in imported.notes if m.code == "config.weak_overridden" and m["field"] == "precision"]
    # under DeepSpeed the same file stays DeepSpeed's bf16 mode with fp32 masters in its optimizer
    claim, _ = _precision(_args(tmp_path, "ds.json"), CONFIGS / "ds_z3_config.json")
    assert (claim.value, claim.rule.code) == ("bf16", "config.rule.pure_loaded")


def test_fsdp_upcast_leaves_adapters_and_fp32_weights_alone(tmp_path: Path) -> None:
    lora = _args(tmp_path, "lora.json", fsdp="full_shard auto_wrap", use_peft=True)
    claim, _ = _precision(lora)
    assert (claim.value, claim.rule.code) == ("bf16-mixed", "config.rule.adapter_mixed")
    # fp32 weights under FSDP's shard_grad_op: mixed as loaded, not DeepSpeed's ZeRO-2 rule
    sgo = _args(tmp_path, "sgo.json", fsdp="shard_grad_op auto_wrap", torch_dtype="float32")
    claim, imported = _precision(sgo)
    assert imported.fields["sharding"] == "zero2"
    assert (claim.value, claim.rule.code) == ("bf16-mixed", "config.rule.trainer_mixed")


def test_axolotl_and_llamafactory_under_fsdp(tmp_path: Path) -> None:
    full = (CONFIGS / "axolotl_lora.yml").read_text().replace("adapter: lora", "adapter:")
    (tmp_path / "fsdp1.yml").write_text(full + "fsdp:\n  - full_shard\n  - auto_wrap\n")
    claim, _ = _precision(tmp_path / "fsdp1.yml")
    assert claim.value == "bf16-mixed" and claim.rule.code == "config.rule.fsdp_upcast"
    # FSDP2: axolotl's own fsdp2_prepare_model replaces accelerate's and keeps the bf16 weights
    (tmp_path / "fsdp2.yml").write_text(full + "fsdp_version: 2\nfsdp_config:\n  reshard_after_forward: true\n")
    claim, _ = _precision(tmp_path / "fsdp2.yml")
    assert claim.value == "bf16" and claim.rule["second"].code == "config.rule.axolotl_fsdp2_no_upcast"
    # bf16 off: axolotl exports mixed precision "no", which wins over the accelerate YAML: no upcast
    (tmp_path / "off.yml").write_text(full.replace("bf16: auto", "bf16: false") + "bfloat16: true\n"
                                      "fsdp:\n  - full_shard\n")
    claim, _ = _precision(tmp_path / "off.yml", CONFIGS / "accelerate_fsdp.yaml")
    assert claim.value == "bf16"
    # LLaMA-Factory's pure_bf16 launched with its accelerate FSDP YAML (mixed_precision: bf16) is upcast
    lf = (CONFIGS / "llamafactory_full_ds3.yaml").read_text()
    lf = "\n".join(line for line in lf.splitlines() if not line.startswith(("deepspeed:", "bf16:")))
    (tmp_path / "lf.yaml").write_text(lf + "\npure_bf16: true\n")
    claim, _ = _precision(tmp_path / "lf.yaml")
    assert (claim.value, claim.rule.code) == ("bf16", "config.rule.lf_pure")
    claim, _ = _precision(tmp_path / "lf.yaml", CONFIGS / "accelerate_fsdp.yaml")
    assert claim.value == "bf16-mixed" and claim.rule["dtype"] == "bf16"


def test_gpuwork_plan_from_prints_the_upcast_rule_in_both_languages(tmp_path: Path) -> None:
    fsdp = _args(tmp_path, "fsdp.json", fsdp="full_shard auto_wrap")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outputs = {}
    for lang in ("en", "ru"):
        done = subprocess.run([sys.executable, "-m", "gpuwork", "plan", "--from", str(fsdp), "--model",
                               "llama-3.2-1b", "--lang", lang, "--json"], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["plan"]["precision"] == "bf16-mixed"
        outputs[lang] = next(line for line in done.stderr.splitlines() if line.startswith("  precision = "))
    assert outputs["en"] == (
        f"  precision = bf16-mixed  <- {fsdp}: torch_dtype, bf16 (loaded in bf16, but under FSDP ({fsdp}: fsdp) "
        f"with mixed precision bf16 ({fsdp}: bf16) accelerate's prepare (0.30 and later) upcasts the trained 16-bit "
        "weights to fp32: fp32 weights, gradients and optimizer states, bf16 compute)")
    assert outputs["ru"].startswith(f"  precision = bf16-mixed  ← {fsdp}: torch_dtype, bf16 (загружена в bf16, но ")
    assert "accelerate (0.30 и новее) переводит обучаемые 16-битные веса в fp32" in outputs["ru"]


# -- contradictions and bad files -------------------------------------------------------------------------------


def test_bf16_and_fp16_both_on_is_an_error_naming_the_file(tmp_path: Path) -> None:
    data = json.loads((CONFIGS / "training_args.json").read_text())
    data["fp16"] = True
    (tmp_path / "args.json").write_text(json.dumps(data))
    with pytest.raises(PlanError) as info:
        import_configs([tmp_path / "args.json"])
    assert info.value.field == "precision"
    assert str(info.value) == f"'{tmp_path / 'args.json'}': bf16 and fp16 are both on: keep one"


def test_zero3_in_deepspeed_and_fsdp_in_accelerate_contradict() -> None:
    with pytest.raises(PlanError) as info:
        import_configs([CONFIGS / "accelerate_fsdp.yaml", CONFIGS / "ds_z3_config.json"])
    message = str(info.value)
    assert info.value.field == "sharding"
    assert "fsdp in" in message and "accelerate_fsdp.yaml" in message and "zero3 in" in message
    assert "zero_optimization.stage" in message and "ds_z3_config.json" in message
    assert "согласуйте файлы" in info.value.text("ru")
    # a flag settles it: the files may then disagree about that field
    assert import_configs([CONFIGS / "accelerate_fsdp.yaml", CONFIGS / "ds_z3_config.json"],
                          overridden=["sharding", "model"]).fields["sharding"] == "fsdp"


def test_a_numeric_deepspeed_value_that_disagrees_with_training_args_is_an_error() -> None:
    with pytest.raises(PlanError) as info:  # micro-batch 4 both, accumulation 4 both: agree; now 4 vs 2
        import_configs([CONFIGS / "training_args.json", CONFIGS / "ds_z2_offload.json",
                        CONFIGS / "llamafactory_lora.yaml"])
    assert info.value.field in ("batch_size", "grad_accum")


def test_accelerate_mixed_precision_yields_to_the_training_config(tmp_path: Path) -> None:
    data = json.loads((CONFIGS / "training_args.json").read_text())
    data["bf16"], data["fp16"] = False, True
    (tmp_path / "args.json").write_text(json.dumps(data))
    imported = import_configs([tmp_path / "args.json", CONFIGS / "accelerate_fsdp.yaml"])
    assert imported.fields["precision"] == "fp16-mixed"
    assert any(m.code == "config.weak_overridden" for m in imported.notes)


def test_an_unrecognised_or_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("foo: 1\nbar: [1, 2]\n")
    with pytest.raises(PlanError) as info:
        import_configs([tmp_path / "other.yaml"])
    assert str(info.value).startswith(f"'{tmp_path / 'other.yaml'}' is not a config gpuwork reads (keys: bar, foo)")
    with pytest.raises(PlanError) as info:
        import_configs([tmp_path / "nope.json"])
    assert info.value.msg.code == "error.config.missing"
    (tmp_path / "bad.json").write_text('{"bf16": true,,}')
    with pytest.raises(PlanError) as info:
        import_configs([tmp_path / "bad.json"])
    assert info.value.msg.code == "error.config.bad_json" and info.value.msg["line"] == 1


def test_unknown_keys_are_named_with_the_closest_known_one(tmp_path: Path) -> None:
    text = (CONFIGS / "axolotl_lora.yml").read_text().replace("micro_batch_size: 2", "micro_batch_sise: 2")
    (tmp_path / "a.yml").write_text(text + "my_own_switch: true\n")
    notes = {(m.code, m["key"]): m for m in import_configs([tmp_path / "a.yml"]).notes if "key" in dict(m.params)}
    assert notes[("config.unknown_key_close", "micro_batch_sise")]["close"] == "micro_batch_size"
    assert ("config.unknown_key", "my_own_switch") in notes


def test_a_real_trainer_json_has_no_unknown_keys(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=3,
                                          gradient_accumulation_steps=5, optim="adamw_torch", save_steps=50,
                                          save_total_limit=2, gradient_checkpointing=True, use_cpu=True)
    (tmp_path / "training_args.json").write_text(args.to_json_string())
    imported = import_configs([tmp_path / "training_args.json"])
    assert [m for m in imported.notes if m.code.startswith("config.unknown")] == []
    assert {k: imported.fields[k] for k in ("batch_size", "grad_accum", "optimizer", "optimizer_impl",
                                            "checkpoint_every_steps", "checkpoints_kept", "grad_checkpointing",
                                            "precision")} == {
        "batch_size": 3, "grad_accum": 5, "optimizer": "adamw", "optimizer_impl": "foreach",
        "checkpoint_every_steps": 50, "checkpoints_kept": 2, "grad_checkpointing": True, "precision": "fp32"}
    # the TrainingArguments keys the importer reads are real TrainingArguments fields (4.x-only names aside)
    fields = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    read = {"per_device_train_batch_size", "gradient_accumulation_steps", "optim", "bf16", "fp16", "tf32",
            "gradient_checkpointing", "num_train_epochs", "max_steps", "save_steps", "save_strategy",
            "save_total_limit", "torch_compile", "use_liger_kernel", "fsdp", "deepspeed"}
    assert read <= fields


# -- optimizer names --------------------------------------------------------------------------------------------


def test_every_trainer_optimizer_name_maps() -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.training_args import OptimizerNames

    for name in OptimizerNames:
        optimizer, impl, _note = optimizer_choice(name.value)
        TrainPlan(optimizer=optimizer, optimizer_impl=impl or "foreach")  # valid plan values
    assert transformers  # the installed release's names, plus 4.x names below


@pytest.mark.parametrize(("name", "optimizer", "impl", "exact"), [
    ("adamw_torch", Optimizer.ADAMW, OptimizerImpl.FOREACH, True),
    ("adamw_torch_fused", Optimizer.ADAMW, OptimizerImpl.FUSED, True),
    ("adamw_hf", Optimizer.ADAMW, OptimizerImpl.FOR_LOOP, True),
    ("adamw_apex_fused", Optimizer.ADAMW, OptimizerImpl.FUSED, True),
    ("adamw_torch_xla", Optimizer.ADAMW, OptimizerImpl.FOREACH, False),
    ("adamw_bnb_8bit", Optimizer.ADAMW_8BIT, None, True),
    ("adamw_8bit", Optimizer.ADAMW_8BIT, None, True),
    ("paged_adamw_8bit", Optimizer.PAGED_ADAMW_8BIT, None, True),
    ("paged_adamw_32bit", Optimizer.ADAMW, OptimizerImpl.FOREACH, False),
    ("adamw_torch_4bit", Optimizer.ADAMW_8BIT, None, False),
    ("adafactor", Optimizer.ADAFACTOR, None, True),
    ("sgd", Optimizer.SGD, OptimizerImpl.FOREACH, True),
    ("lion_32bit", Optimizer.LION, None, True),
    ("lion_8bit", Optimizer.LION, None, False),
    ("paged_lion_32bit", Optimizer.LION, None, False),
    ("paged_lion_8bit", Optimizer.LION, None, False),
    ("galore_adamw", Optimizer.ADAMW, OptimizerImpl.FOREACH, False),
    ("ADAMW_TORCH_FUSED", Optimizer.ADAMW, OptimizerImpl.FUSED, True),
])
def test_the_optimizer_name_table(name: str, optimizer, impl, exact: bool) -> None:
    got_optimizer, got_impl, note = optimizer_choice(name)
    assert (got_optimizer, got_impl) == (optimizer, impl)
    assert (note is None) == exact
    if note is not None:  # says which name and which modelled choice stands in for it
        assert note["name"] == name and note["optimizer"] == optimizer
        assert render(note).startswith(f"{name} is modelled as {optimizer.value}: ")


def test_deepspeed_optimizer_types_and_unknown_names() -> None:
    assert optimizer_choice("AdamW", table=DEEPSPEED_OPTIMIZERS)[:2] == ("adamw", "fused")
    assert optimizer_choice("OneBitAdam", table=DEEPSPEED_OPTIMIZERS)[2] is not None
    with pytest.raises(PlanError) as info:
        optimizer_choice("adamw_torhc_fused", file="args.json")
    assert info.value.msg.code == "error.config.optimizer_close"
    assert "adamw_torch_fused" in str(info.value) and "args.json" in str(info.value)
    with pytest.raises(PlanError) as info:
        optimizer_choice("zzz")
    assert "set --optimizer" in str(info.value)
    assert all(v[0] in {o.value for o in Optimizer} for v in [*OPTIMIZER_NAMES.values(),
                                                               *DEEPSPEED_OPTIMIZERS.values()])


# -- the catalog section ----------------------------------------------------------------------------------------


def test_every_code_the_importer_uses_is_in_the_catalog() -> None:
    imported = import_configs([CONFIGS / "training_args.json", CONFIGS / "ds_z3_config.json",
                               CONFIGS / "accelerate_deepspeed.yaml"])
    for message in imported.report():
        for m in message.walk():
            assert m.code in CATALOG, m.code
    whys = {why for *_rest, why in [*OPTIMIZER_NAMES.values(), *DEEPSPEED_OPTIMIZERS.values()] if why}
    assert {f"config.optimizer.why.{w}" for w in whys} <= set(CATALOG)


def test_the_russian_texts_have_no_english_words() -> None:
    import string

    def literal(template: str) -> str:
        return "".join(lit for lit, *_ in string.Formatter().parse(template))

    names = {"TrainingArguments", "SFTConfig", "ModelConfig", "Trainer", "TRL", "axolotl", "LLaMA-Factory",
             "DeepSpeed", "accelerate", "peft", "autocast", "YAML", "JSON", "PyYAML", "pip", "install", "gpuwork",
             "xformers", "sdpa", "flash-attention", "NVMe", "FSDP", "ZeRO", "AdEMAMix", "GaLore", "APOLLO", "LOMO",
             "AnyPrecisionAdamW", "torchao", "bitsandbytes", "Lion", "AdamW", "SGD", "DoRA", "LoRA", "Ampere",
             "Ascend", "NPU", "XLA", "TPU", "Hugging", "Face", "Hub", "lora", "freeze", "full", "stderr", "tf32",
             "fp32", "bf16", "fp16", "GPU", "CPU", "DEEPSPEED", "HYBRID_SHARD", "dtype", "trial", "DPO", "llama",
             "LlamaForCausalLM", "torch", "composite"}
    leftovers = {code: words for code, (_en, ru) in ENTRIES.items()
                 if (words := english_leftovers(literal(ru), *names))}
    assert not leftovers, leftovers


# -- the command line -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gpuwork_plan_from_each_format_prints_the_mapping(capsys, name: str) -> None:
    names_model = any(c.field == "model" for c in import_configs([CONFIGS / name]).claims)
    model = [] if names_model else ["--model", "llama-3.1-8b"]  # a file that names no model needs --model
    assert main(["plan", "--from", str(CONFIGS / name), "--offers", "1", *model]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("Imported ") and f"{CONFIGS / name}" in err and "Understood (plan field" in err
    fmt, expected = EXPECTED[name]
    field = sorted(expected)[0]
    value = expected[field]
    shown = ",".join(value) if isinstance(value, tuple) else str(value).lower() if isinstance(value, bool) else value
    assert f"  {field} = {shown}  <- " in err
    assert "memory" in out.lower()


def test_the_cli_mapping_in_russian_and_flags_win(capsys) -> None:
    argv = ["estimate", "--from", str(CONFIGS / "training_args.json"), "--from", str(CONFIGS / "ds_z3_config.json"),
            "--from", str(CONFIGS / "accelerate_deepspeed.yaml"), "--batch-size", "2", "--lang", "ru", "--json",
            "--model", "llama-3.2-1b"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    plan = json.loads(out)["plan"]
    assert (plan["batch_size"], plan["grad_accum"], plan["sharding"], plan["gpus"]) == (2, 4, "zero3", 16)
    assert err.startswith("Прочитано 3 файла конфигурации:")
    assert "batch_size: --batch-size в командной строке важнее, чем 4 из" in err
    assert "Понято (поле плана = значение ← файл: ключ):" in err
    assert "Пропущено (не влияет на память, время, диск и стоимость):" in err


def test_the_cli_reports_a_contradiction_in_one_line(capsys) -> None:
    rc = main(["plan", "--from", str(CONFIGS / "accelerate_fsdp.yaml"), "--from", str(CONFIGS / "ds_z3_config.json"),
               "--lang", "ru", "--model", "llama-3.2-1b"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuwork: ошибка: sharding = fsdp в ") and err.count("\n") == 1


def test_request_and_offers_take_from(capsys) -> None:
    assert main(["offers", "--from", str(CONFIGS / "sft_config.yaml"), "--limit", "2"]) == 0
    assert "llama-3.1-8b" in capsys.readouterr().out
    assert main(["request", "--from", str(CONFIGS / "axolotl_qlora.yml"), "--lang", "ru"]) == 0
    out, err = capsys.readouterr()
    assert "QLoRA" in out and err.startswith("Прочитано 1 файл конфигурации:")


def test_the_command_runs_from_a_subprocess() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--from", str(CONFIGS / "sft_config.yaml"),
                           "--json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)["plan"]
    assert (plan["model"], plan["method"], plan["seq_len"], plan["optimizer"]) == (
        "llama-3.1-8b", "lora", 4096, "paged-adamw-8bit")
    assert "model = llama-3.1-8b  <- " in done.stderr and "sft_config.yaml: model_name_or_path" in done.stderr


def test_report_lines_are_messages() -> None:
    imported = import_configs([CONFIGS / "axolotl_lora.yml"])
    assert all(isinstance(m, Msg) for m in imported.report())
