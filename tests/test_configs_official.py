"""The frameworks' own example configs (tests/data/official_configs, copied as published) give the plans their
frameworks run: field by field against each file's ``.expected.json`` (written from the framework's documentation),
the source of every default shown, every example estimable; the same run through an accelerate YAML, a DeepSpeed
JSON or a TrainingArguments file gives the same plan and memory; defaults from the pinned table when the framework
is not installed; files without a model ask for ``--model``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.errors import PlanError
from gpuwork.estimate.memory import estimate_memory
from gpuwork.facts.configs import import_configs
from gpuwork.facts.configs.defaults import defaults_for, pinned
from gpuwork.facts.resolve import resolve
from gpuwork.present.messages import render

ROOT = Path(__file__).resolve().parent.parent
OFFICIAL = Path(__file__).resolve().parent / "data" / "official_configs"
CASES = sorted(OFFICIAL.rglob("*.expected.json"))
TRL = OFFICIAL / "trl" / "examples" / "accelerate_configs"
LF_DS = OFFICIAL / "llamafactory" / "examples" / "deepspeed"


def _case(expected: Path) -> tuple[Path, dict]:
    return expected.with_name(expected.name.removesuffix(".expected.json")), json.loads(expected.read_text())


def _default_source(rule):
    """The source (config.default.installed / .pinned) of the framework default a rule rests on."""
    if rule.code == "config.rule.framework_default":
        return rule["source"]
    for _name, value in rule.params:
        if hasattr(value, "code") and (found := _default_source(value)) is not None:
            return found
    return None


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (bool, int, float)) or value is None else str(value)


def test_thirty_examples_from_six_projects_each_with_its_source() -> None:
    assert len(CASES) >= 30
    projects = {p.relative_to(OFFICIAL).parts[0] for p in CASES}
    assert projects == {"trl", "alignment-handbook", "axolotl", "llamafactory", "deepspeed", "accelerate"}
    for project in projects:
        readme = (OFFICIAL / project / "README.md").read_text(encoding="utf-8")
        assert "at commit `" in readme
        for expected in CASES:
            config, _ = _case(expected)
            if config.relative_to(OFFICIAL).parts[0] == project:
                rel = config.relative_to(OFFICIAL / project).as_posix()
                assert f"| `{rel}` | https://github.com/" in readme and f"/{rel} |" in readme


@pytest.mark.parametrize("expected", CASES, ids=[str(c.relative_to(OFFICIAL)) for c in CASES])
def test_an_official_example_gives_the_plan_its_framework_runs(expected: Path) -> None:
    config, want = _case(expected)
    flags = want.get("flags", {})
    imported = import_configs([config], overridden=list(flags))
    plan = imported.plan(**flags)
    got = {name: _plain(getattr(plan, name)) for name in want["fields"]}
    assert got == want["fields"]
    if "fp32_master_weights" in want:
        assert plan.fp32_master_weights is want["fp32_master_weights"]
    claims = {c.field: c for c in imported.claims}
    for name, framework in want.get("defaults", {}).items():
        claim = claims[name]
        if framework is None:
            continue
        assert claim.default and _default_source(claim.rule)["framework"] == framework
    # the source of every default is shown in the printed mapping, in both languages
    report = [render(line, "en") for line in imported.report(flags)]
    for claim in imported.claims:
        if claim.default and claim.field not in flags:
            source = _default_source(claim.rule)
            line = next(x for x in report if x.startswith(f"  {claim.field} = "))
            assert f"{source['framework']} {source['version']} default" in line
    assert not any(n.code.startswith("config.unknown_key") for n in imported.notes), [
        render(n, "en") for n in imported.notes]
    # every example that describes a run is estimable (a hub id not bundled: the preset of its architecture)
    runnable = plan.replace(**want.get("estimate_with", {}))
    estimate = estimate_memory(runnable, resolve(runnable).spec)
    assert estimate.peak_allocated_bytes > 0
    master_noted = any(w.code == "memory.fp32_master" for w in estimate.warnings)
    assert master_noted is runnable.fp32_master_weights


def test_trl_example_takes_trl_and_trainer_defaults_and_says_which() -> None:
    imported = import_configs([OFFICIAL / "trl" / "examples" / "cli_configs" / "example_config.yaml"])
    lines = "\n".join(render(line, "en") for line in imported.report())
    trl = defaults_for("trl.SFTConfig")
    assert f"max_length not set: 1024, the TRL {trl.version} default (SFTConfig" in lines
    assert "gradient_checkpointing not set: true, the TRL" in lines
    assert "dtype not set: float32, the TRL" in lines  # ModelConfig: the weights load in fp32 under bf16 autocast
    ru = "\n".join(render(line, "ru") for line in imported.report())
    assert f"значение TRL {trl.version} по умолчанию" in ru


def test_zephyr_full_with_save_strategy_no_is_not_a_conflict(tmp_path: Path) -> None:
    """alignment-handbook's zephyr full recipe with save_strategy "no" and save_total_limit 1: one file, no clash."""
    source = OFFICIAL / "alignment-handbook" / "recipes" / "zephyr-7b-beta" / "sft" / "config_full.yaml"
    text = source.read_text().replace('save_strategy: "steps"', 'save_strategy: "no"')
    (tmp_path / "config_full.yaml").write_text(text)
    plan = import_configs([tmp_path / "config_full.yaml"]).plan()
    assert plan.checkpoints_kept == 0


def test_zephyr_full_under_the_handbooks_zero3_is_deepspeeds_bf16_mode() -> None:
    recipe = OFFICIAL / "alignment-handbook" / "recipes"
    imported = import_configs([recipe / "zephyr-7b-beta" / "sft" / "config_full.yaml",
                               recipe / "accelerate_configs" / "zero3.yaml"], overridden=[])
    plan = imported.plan()
    assert (plan.method, plan.precision, plan.sharding, plan.gpus) == ("full", "bf16", "zero3", 8)
    assert plan.fp32_master_weights
    estimate = estimate_memory(plan, resolve(plan).spec)
    counts = plan_params = resolve(plan).spec.params_total
    # ZeRO-3 shards the 2 + 2 + 12 bytes of each parameter over the 8 GPUs (ZeRO paper §3.1)
    assert estimate.breakdown["optimizer_states"] == pytest.approx(12 * plan_params / 8, rel=1e-3)
    assert estimate.breakdown["weights"] == pytest.approx(2 * counts / 8, rel=1e-3)


def _training_args(tmp_path: Path, **extra) -> Path:
    data = {"model_name_or_path": "meta-llama/Llama-3.1-8B", "torch_dtype": "bfloat16", "bf16": True,
            "per_device_train_batch_size": 2, "gradient_accumulation_steps": 4, "gradient_checkpointing": True,
            "max_seq_length": 2048, "output_dir": "out", **extra}
    path = tmp_path / f"args{len(extra)}.json"
    path.write_text(json.dumps(data))
    return path


def test_the_same_zero3_run_through_accelerate_deepspeed_or_training_args_gives_one_plan(tmp_path: Path) -> None:
    """The issue's case: the same ZeRO-3 run came out at 30.9 GiB through accelerate and 47.4 GiB through DeepSpeed."""
    args = _training_args(tmp_path)
    through_accelerate = import_configs([args, TRL / "deepspeed_zero3.yaml"], overridden=[]).plan()
    through_deepspeed = import_configs([args, LF_DS / "ds_z3_config.json"], overridden=[]).plan()
    named = _training_args(tmp_path, deepspeed=str(LF_DS / "ds_z3_config.json"))
    through_training_args = import_configs([named], overridden=[]).plan()
    assert through_accelerate == through_deepspeed == through_training_args
    assert (through_accelerate.precision, through_accelerate.sharding, through_accelerate.gpus) == ("bf16", "zero3", 8)
    memory = {estimate_memory(p, resolve(p).spec).peak_allocated_bytes
              for p in (through_accelerate, through_deepspeed, through_training_args)}
    assert len(memory) == 1


def test_accelerate_yaml_and_deepspeed_json_alone_give_the_same_memory() -> None:
    flags = {"model": "llama-3.2-3b", "method": "full"}
    via_yaml = import_configs([TRL / "deepspeed_zero3.yaml"], overridden=list(flags)).plan(**flags)
    via_json = import_configs([LF_DS / "ds_z3_config.json"], overridden=list(flags)).plan(
        **flags, precision="bf16")  # bf16 "auto" in the JSON: the training config (here a flag) decides
    assert via_yaml == via_json
    assert (estimate_memory(via_yaml, resolve(via_yaml).spec).peak_allocated_bytes
            == estimate_memory(via_json, resolve(via_json).spec).peak_allocated_bytes)


def test_a_plans_default_precision_follows_its_sharding() -> None:
    """70B full fine-tuning in bf16: FSDP keeps bf16 AdamW states (8 B/param in all), DeepSpeed ZeRO-3 16."""
    from gpuwork.plan import TrainPlan

    fsdp = TrainPlan(model="llama-3.1-70b", method="full", gpus=8, sharding="fsdp", grad_checkpointing=True)
    zero3 = fsdp.replace(sharding="zero3")
    assert not fsdp.fp32_master_weights and zero3.fp32_master_weights
    spec = resolve(fsdp).spec
    n = spec.params_total
    f, z = estimate_memory(fsdp, spec), estimate_memory(zero3, spec)
    assert f.breakdown["optimizer_states"] == pytest.approx(4 * n / 8, rel=1e-3)
    assert z.breakdown["optimizer_states"] == pytest.approx(12 * n / 8, rel=1e-3)
    note = next(w for w in z.warnings if w.code == "memory.fp32_master")
    assert note["bytes_per_param"] == 16 and "16 bytes per trained parameter" in render(note, "en")
    assert "16 байт на обучаемый параметр" in render(note, "ru")


def test_files_that_name_no_model_ask_for_model(capsys) -> None:
    with pytest.raises(PlanError) as info:
        import_configs([LF_DS / "ds_z3_config.json"], overridden=[])
    assert info.value.field == "model" and "add --model" in str(info.value)
    assert main(["plan", "--from", str(LF_DS / "ds_z3_config.json")]) == 2
    err = capsys.readouterr().err
    assert "--model" in err and err.count("\n") == 1
    assert main(["estimate", "--from", str(LF_DS / "ds_z3_config.json"), "--model", "llama-3.2-1b",
                 "--method", "full"]) == 0


def test_the_pinned_table_matches_the_installed_frameworks() -> None:
    for name in ("transformers.TrainingArguments", "trl.SFTConfig", "trl.DPOConfig", "trl.ModelConfig",
                 "peft.LoraConfig"):
        installed, table = defaults_for(name), pinned(name)
        if installed.url or installed.version != table.version:
            pytest.skip(f"{name}: installed {installed.version}, table {table.version}")
        for key, value in table.values.items():
            assert installed.get(key) == value, (name, key)
        assert table.url.startswith("https://github.com/") and f"v{table.version}/" in table.url


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}  # never the network
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)


def test_without_trl_the_defaults_come_from_the_pinned_table() -> None:
    example = OFFICIAL / "trl" / "examples" / "cli_configs" / "example_config.yaml"
    done = _python(f"""
import sys
sys.modules['trl'] = None  # as if TRL were not installed
from gpuwork.facts.configs import import_configs
from gpuwork.present.messages import render
imported = import_configs([{str(example)!r}])
print(imported.fields['seq_len'])
print('\\n'.join(render(line, 'en') for line in imported.report()))
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1024\n")
    assert "pinned table: https://github.com/huggingface/trl/blob/v" in done.stdout


def test_a_hub_id_without_transformers_blames_the_missing_package() -> None:
    done = _python("""
import sys
sys.modules['transformers'] = None  # the core install
from gpuwork.errors import GpuworkError
from gpuwork.facts.model import load_config
try:
    load_config('HuggingFaceTB/SmolLM2-1.7B')
except GpuworkError as exc:
    print(exc.msg.code)
    print(str(exc))
""")
    assert done.returncode == 0, done.stderr
    code, text = done.stdout.splitlines()[:2]
    assert code == "error.model.hub_needs_transformers"
    assert "needs transformers" in text and "network" not in text


@pytest.mark.parametrize(("text", "framework", "expected"), [
    # axolotl's config schema: sequence_len 512, micro_batch_size 1, 1 epoch, fused AdamW, no checkpointing
    ("base_model: meta-llama/Llama-3.2-1B\nadapter: lora\n", "axolotl",
     {"seq_len": 512, "batch_size": 1, "grad_accum": 1, "epochs": 1, "optimizer": "adamw",
      "optimizer_impl": "fused", "grad_checkpointing": False, "method": "lora"}),
    # LLaMA-Factory: LoRA rank 8 on all linear layers, cutoff 2048; Trainer's batch 8 and 3 epochs
    ("model_name_or_path: meta-llama/Llama-3.2-1B\nstage: sft\ntemplate: llama3\n", "LLaMA-Factory",
     {"method": "lora", "lora_r": 8, "lora_alpha": 16, "lora_targets": ("all-linear",), "seq_len": 2048,
      "grad_checkpointing": True, "batch_size": 8, "epochs": 3, "precision": "fp32"}),
])
def test_a_minimal_file_takes_its_frameworks_defaults(tmp_path: Path, text: str, framework: str,
                                                      expected: dict) -> None:
    (tmp_path / "run.yaml").write_text(text)
    imported = import_configs([tmp_path / "run.yaml"], overridden=[])
    plan = imported.plan()
    assert {k: getattr(plan, k) for k in expected} == expected
    sources = {c.field: _default_source(c.rule) for c in imported.claims if c.default}
    frameworks = {name: source["framework"] for name, source in sources.items() if source is not None}
    own = {"seq_len", "lora_r", "lora_alpha", "lora_targets", "grad_checkpointing"} & set(frameworks)
    assert own and all(frameworks[name] == framework for name in own)
    if framework == "LLaMA-Factory":  # the Trainer settings come from transformers' TrainingArguments
        assert frameworks["batch_size"] == frameworks["epochs"] == "transformers"


def test_in_the_core_install_a_hub_id_in_a_config_names_the_missing_package() -> None:
    recipe = OFFICIAL / "alignment-handbook" / "recipes" / "smollm2" / "sft" / "config.yaml"
    done = _python(f"""
import sys
sys.modules['transformers'] = None  # the core install
from gpuwork.facts.configs import import_configs
from gpuwork.present.messages import render
claim = next(c for c in import_configs([{str(recipe)!r}]).claims if c.field == 'model')
print(claim.rule.code)
print(render(claim.rule, 'en'))
""")
    assert done.returncode == 0, done.stderr
    code, text = done.stdout.splitlines()[:2]
    assert code == "config.rule.model_hub_needs_transformers" and "needs transformers" in text
    assert "network" not in text
