"""Issue 23's small points on the real command line: Trainer optimizer names for --optimizer (one table), no
argparse abbreviations, the --from mapping in --json, --check's exit status, peft's adapter_config.json in --from,
and the [all] extra bringing PyYAML."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gpuwork.cli import build_parser
from gpuwork.facts.configs import OPTIMIZER_NAMES, import_configs

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "configs"
PEFT_LORA = CONFIGS / "peft_lora" / "adapter_config.json"
PEFT_DORA = CONFIGS / "peft_dora" / "adapter_config.json"
# a run nothing holds: 70B full fine-tuning in fp32 at 32k x 16 sequences per GPU
NO_FIT = ["--model", "llama-3.1-70b", "--method", "full", "--precision", "fp32", "--seq-len", "32768",
          "--batch-size", "16", "--dataset-tokens", "1M"]
FITS = ["--model", "llama-3.2-1b", "--method", "lora", "--dataset-tokens", "1M"]


def gpuwork(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuwork", *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def json_of(*argv: str) -> dict:
    done = gpuwork(*argv)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- --optimizer takes the Trainer's names, through the one table -------------------------------------------------


@pytest.mark.parametrize(("name", "optimizer", "impl"), [
    ("adamw_torch_fused", "adamw", "fused"),
    ("adamw_torch", "adamw", "foreach"),
    ("adamw_hf", "adamw", "for-loop"),
    ("adamw_bnb_8bit", "adamw-8bit", "foreach"),  # no implementation in the table: the plan's default stays
    ("paged_adamw_8bit", "paged-adamw-8bit", "foreach"),
    ("adafactor", "adafactor", "foreach"),
    ("lion_32bit", "lion", "foreach"),
    ("adamw-8bit", "adamw-8bit", "foreach"),  # gpuwork's own names as before
])
def test_optimizer_flag_takes_trainer_names(name: str, optimizer: str, impl: str) -> None:
    plan = json_of("estimate", "--model", "llama-3.2-1b", "--optimizer", name, "--json")["plan"]
    assert (plan["optimizer"], plan["optimizer_impl"]) == (optimizer, impl)


def test_optimizer_flag_and_impl_flag() -> None:
    """--optimizer-impl still decides the kernels when both are given."""
    plan = json_of("estimate", "--optimizer", "adamw_torch_fused", "--optimizer-impl", "for-loop", "--json")["plan"]
    assert (plan["optimizer"], plan["optimizer_impl"]) == ("adamw", "for-loop")


def test_trainer_name_gives_the_same_memory_as_the_plan_name() -> None:
    by_trainer = json_of("estimate", "--model", "llama-3.2-1b", "--method", "full", "--optimizer", "adamw_bnb_8bit",
                         "--json")["memory"]
    by_plan = json_of("estimate", "--model", "llama-3.2-1b", "--method", "full", "--optimizer", "adamw-8bit",
                      "--json")["memory"]
    assert by_trainer == by_plan


def test_nearest_optimizer_is_said_and_unknown_one_refused() -> None:
    done = gpuwork("estimate", "--optimizer", "paged_adamw_32bit")
    assert done.returncode == 0
    assert "gpuwork: warning: paged_adamw_32bit is modelled as adamw" in done.stderr
    done = gpuwork("estimate", "--optimizer", "adamw_torhc_fused")
    assert done.returncode == 2
    assert done.stderr.startswith("gpuwork: error: --optimizer adamw_torhc_fused: neither a gpuwork optimizer")
    assert "adamw_torch_fused" in done.stderr and "Traceback" not in done.stderr
    done = gpuwork("estimate", "--optimizer", "adamw_torhc_fused", "--lang", "ru")
    assert done.returncode == 2 and "это не оптимизатор gpuwork" in done.stderr


def test_one_optimizer_name_table() -> None:
    """No module but gpuwork.facts.configs spells out Trainer optimizer names (the callback reads that table)."""
    holders = []
    for path in sorted((ROOT / "gpuwork").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "adamw_torch_fused"
                                                  for k in node.keys):
                holders.append(path.relative_to(ROOT).as_posix())
    assert holders == ["gpuwork/facts/configs/optimizers.py"]
    # the callback's plan inference (measure.hf_plan, split from measure.hf) reads the Trainer's name through it
    assert "optimizer_choice" in (ROOT / "gpuwork" / "measure" / "hf_plan.py").read_text(encoding="utf-8")
    assert OPTIMIZER_NAMES["adamw_hf"][:2] == ("adamw", "for-loop")  # the two tables disagreed here
    assert OPTIMIZER_NAMES["paged_adamw"][0] == "adamw"  # and here (32-bit paged states, not 8-bit)


@pytest.mark.parametrize(("optim", "optimizer", "impl", "nearest"), [
    ("adamw_torch_fused", "adamw", "fused", False),
    ("paged_adamw_8bit", "paged-adamw-8bit", None, False),
    ("paged_adamw_32bit", "adamw", "foreach", True),  # the callback's old table had no entry: adamw, no impl
    ("sgd", "sgd", "foreach", False),
])
def test_callback_reads_args_optim_through_the_same_table(tmp_path: Path, optim: str, optimizer: str,
                                                          impl: str | None, nearest: bool) -> None:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from gpuwork.facts.model import load_config
    from gpuwork.measure.hf import infer_plan

    config, _ = load_config("tiny-llama")
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config)))
    args = transformers.TrainingArguments(output_dir=str(tmp_path), optim=optim, per_device_train_batch_size=2,
                                          report_to=[], use_cpu=True, save_strategy="no")
    plan, inferred = infer_plan(model, args, seq_len=64)
    assert plan.optimizer.value == optimizer
    assert inferred["optimizer"]["from"].startswith(f"args.optim={optim}")
    assert ("nearest" in inferred["optimizer"]["from"]) is nearest
    assert (inferred.get("optimizer_impl") or {}).get("value") == impl


# -- no abbreviations --------------------------------------------------------------------------------------------


def test_every_parser_refuses_abbreviations() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.choices and "estimate" in a.choices)
    parsers = [parser, *subparsers.choices.values()]
    assert len(parsers) > 10
    assert all(p.allow_abbrev is False for p in parsers), [p.prog for p in parsers if p.allow_abbrev]


def test_every_argparse_parser_in_the_tree_refuses_abbreviations() -> None:
    """ArgumentParser(...) and add_parser(...) in the package, scripts and benchmarks say allow_abbrev=False (the
    CLI's subparsers are gpuwork.cli.args.Parser, whose default it is)."""
    found, loose = 0, []
    for folder in ("gpuwork", "scripts", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                if name == "add_parser" and path.parent.name == "cli":
                    continue
                if name in ("ArgumentParser", "add_parser"):
                    found += 1
                    if not any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant) and k.value.value is False
                               for k in node.keywords):
                        loose.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found >= 10 and not loose, loose


def test_gpu_is_not_read_as_gpus() -> None:
    done = gpuwork("estimate", "--gpu", "h100_sxm")
    assert done.returncode == 2
    assert "unrecognized arguments: --gpu h100_sxm" in done.stderr
    done = gpuwork("estimate", "--batch", "4")  # an abbreviation of --batch-size
    assert done.returncode == 2 and "--batch" in done.stderr
    assert gpuwork("estimate", "--gpus", "2", "--sharding", "zero3").returncode == 0


# -- the --from mapping in --json -------------------------------------------------------------------------------


def test_estimate_json_carries_the_mapping() -> None:
    out = json_of("estimate", "--from", str(CONFIGS / "sft_config.yaml"), "--batch-size", "3", "--json")
    mapping = out["from"]
    assert mapping["files"] == [{"path": str(CONFIGS / "sft_config.yaml"), "format": "hf"}]
    fields = {f["field"]: f for f in mapping["fields"]}
    assert fields["seq_len"]["value"] == 4096 and fields["seq_len"]["key"] == "max_length"
    assert fields["optimizer"]["value"] == "paged-adamw-8bit"
    assert fields["model"]["rule"]["code"] == "config.rule.model_preset"
    assert fields["batch_size"]["overridden_by"] == "--batch-size" and out["plan"]["batch_size"] == 3
    defaulted = {d["field"]: d["value"] for d in mapping["defaulted"]}
    assert defaulted["gpus"] == 1 and "seq_len" not in defaulted
    assert isinstance(mapping["ignored"], list) and isinstance(mapping["notes"], list)
    assert "from" not in json_of("estimate", "--json")  # no --from, no mapping


@pytest.mark.parametrize("verb", ["plan", "advise", "fit", "request"])
def test_other_verbs_json_carry_the_mapping(verb: str) -> None:
    fmt = ["--format", "json"] if verb == "request" else ["--json"]
    out = json_of(verb, "--from", str(PEFT_LORA), "--dataset-tokens", "1M", *fmt)
    assert out["from"]["files"][0]["format"] == "peft"


def test_offers_json_with_from_is_an_object() -> None:
    out = json_of("offers", "--from", str(PEFT_LORA), "--dataset-tokens", "1M", "--limit", "2", "--json")
    assert out["from"]["files"][0]["format"] == "peft" and len(out["offers"]) == 2
    assert isinstance(json_of("offers", *FITS, "--limit", "2", "--json"), list)  # without --from: the list


# -- --check ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["plan", "offers", "advise"])
def test_check_exits_1_when_nothing_fits(verb: str) -> None:
    done = gpuwork(verb, *NO_FIT, "--check")
    assert done.returncode == 1, done.stderr
    assert "gpuwork: --check: nothing fits (exit status 1)" in done.stderr
    assert gpuwork(verb, *NO_FIT).returncode == 0  # without --check, as before
    assert gpuwork(verb, *FITS, "--check").returncode == 0
    assert gpuwork(verb, *NO_FIT, "--check", "--json").returncode == 1
    done = gpuwork(verb, *NO_FIT, "--check", "--lang", "ru")
    assert done.returncode == 1 and "ничего не подходит" in done.stderr


def test_plan_check_with_a_gpu() -> None:
    assert gpuwork("plan", *FITS, "--gpu", "h100_sxm", "--check").returncode == 0
    assert gpuwork("plan", *NO_FIT, "--gpu", "h100_sxm", "--check").returncode == 1
    out = json.loads(gpuwork("plan", *NO_FIT, "--json").stdout)
    assert out["fits"] is False


@pytest.mark.parametrize("verb", ["plan", "offers", "advise"])
def test_check_is_in_the_help(verb: str) -> None:
    assert "exit with status 1" in " ".join(gpuwork(verb, "--help").stdout.split())
    assert "завершиться с кодом 1" in " ".join(gpuwork(verb, "--help", "--lang", "ru").stdout.split())


# -- peft's adapter_config.json ----------------------------------------------------------------------------------


def test_peft_adapter_config() -> None:
    imported = import_configs([PEFT_LORA])
    assert imported.files == ((str(PEFT_LORA), "peft"),)
    assert imported.fields == {"model": "llama-3.1-8b", "method": "lora", "task": "causal-lm", "lora_r": 16,
                               "lora_alpha": 32, "lora_dropout": 0.05,
                               "lora_targets": ("o_proj", "k_proj", "q_proj", "v_proj")}
    assert imported.ignored and not [n for n in imported.notes if n.code.startswith("config.unknown_key")]


def test_peft_dora_unknown_base_and_modules_to_save_are_reported() -> None:
    imported = import_configs([PEFT_DORA])
    assert "model" not in imported.fields  # a path on the machine that trained it
    assert imported.fields["lora_targets"] == "all-linear" and imported.fields["lora_r"] == 8
    codes = {n.code: n for n in imported.notes}
    assert {"config.dora", "config.peft_base_unknown", "config.peft_modules_to_save"} <= set(codes)
    assert codes["config.peft_modules_to_save"]["modules"] == "lm_head"


def test_peft_base_as_a_local_folder(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    data = {**json.loads(PEFT_LORA.read_text(encoding="utf-8")), "base_model_name_or_path": str(base)}
    (tmp_path / "adapter_config.json").write_text(json.dumps(data), encoding="utf-8")
    assert import_configs([tmp_path / "adapter_config.json"]).fields["model"] == str(base)


def test_peft_regex_targets_and_other_peft_types(tmp_path: Path) -> None:
    data = {**json.loads(PEFT_LORA.read_text(encoding="utf-8")), "target_modules": r".*\.(q|v)_proj"}
    (tmp_path / "regex.json").write_text(json.dumps(data), encoding="utf-8")
    imported = import_configs([tmp_path / "regex.json"])
    assert "lora_targets" not in imported.fields
    assert any(n.code == "config.peft_regex" for n in imported.notes)
    (tmp_path / "ia3.json").write_text(json.dumps({"peft_type": "IA3", "target_modules": ["k_proj"]}),
                                       encoding="utf-8")
    done = gpuwork("estimate", "--from", str(tmp_path / "ia3.json"))
    assert done.returncode == 2 and "only LoRA adapters are modelled" in done.stderr


def test_peft_with_trainer_4bit_is_qlora(tmp_path: Path) -> None:
    """The adapter's lora is weak: a TrainingArguments file that loads the base in 4 bits makes it qlora."""
    (tmp_path / "args.json").write_text(json.dumps({"load_in_4bit": True, "per_device_train_batch_size": 2,
                                                    "bf16": True}), encoding="utf-8")
    imported = import_configs([PEFT_LORA, tmp_path / "args.json"])
    assert imported.fields["method"] == "qlora" and imported.fields["lora_r"] == 16


def test_peft_on_the_command_line() -> None:
    done = gpuwork("estimate", "--from", str(PEFT_DORA), "--model", "llama-3.2-1b", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["plan"]["method"] == "lora" and out["plan"]["lora_targets"] == ["all-linear"]
    assert "modules_to_save (lm_head)" in done.stderr and "peft adapter config" in done.stderr


# -- extras -----------------------------------------------------------------------------------------------------


def test_all_extra_brings_every_extra_but_test() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]

    def reached(name: str) -> set[str]:
        out = {name}
        for line in extras[name]:
            if line.startswith("gpuwork["):
                for inner in line[len("gpuwork["):line.index("]")].split(","):
                    out |= reached(inner.strip())
        return out

    assert reached("all") == set(extras) - {"test"}
    assert any(line.startswith("pyyaml") for line in extras["configs"])
