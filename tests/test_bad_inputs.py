"""Bad input everywhere it enters: CLI flags, plan fields, plan files, config.json files, catalog rows, the sizing
form's text fields and the unit parsers. Each case must end in gpuwork's own error (GpuworkError, or the CLI's
one line and exit status 2), never in another exception, a traceback or a silently accepted value."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError
from gpuwork.facts.catalog import data_dir, load_gpus, load_offers
from gpuwork.facts.model import CONFIG_BOUNDS, check_config, get_spec
from gpuwork.facts.planfile import load_plan
from gpuwork.plan import MAX_GPUS, MAX_SEQ_LEN, TrainPlan
from gpuwork.present.messages import render
from gpuwork.units import parse_count, parse_number, parse_size

NOT_FINITE = ("nan", "inf", "-inf")


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    """gpuwork's main in this process: (exit status, stdout, stderr); argparse's exits count as statuses."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def _one_error_line(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuwork: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])


# -- CLI flags: NaN and infinity in every float flag --------------------------------------------------------------

FLOAT_FLAGS = [
    ("estimate", "--lora-alpha"), ("estimate", "--lora-dropout"),
    ("plan", "--epochs"), ("plan", "--compression-ratio"), ("plan", "--eval-fraction"), ("plan", "--mfu"),
    ("plan", "--loader-tokens-per-s"), ("plan", "--disk-write-gbs"),
    ("offers", "--max-price"), ("offers", "--min-vram"), ("offers", "--budget"), ("offers", "--deadline-hours"),
    ("offers", "--preemption-rate"), ("offers", "--safety-margin"),
    ("request", "--budget"), ("request", "--compression-ratio"),
    ("trial", "--memory-cap-gib"), ("trial", "--timeout-s"), ("trial", "--price-per-hour"), ("trial", "--epochs"),
    ("report", "--timeout"),
]
_EXTRA = {"report": ["--out", "unused-report-folder"]}


@pytest.mark.parametrize("value", NOT_FINITE)
@pytest.mark.parametrize(("verb", "flag"), FLOAT_FLAGS, ids=[f"{v} {f}" for v, f in FLOAT_FLAGS])
def test_a_float_flag_refuses_nan_and_infinity(capsys, verb, flag, value) -> None:
    rc, out, err = _cli(capsys, [verb, *_EXTRA.get(verb, []), f"{flag}={value}"])
    _one_error_line(rc, err, flag, "finite")
    assert out == ""


# -- CLI flags: out of range ------------------------------------------------------------------------------------

RANGE_CASES = [
    (["offers", "--limit", "-3"], "--limit"),
    (["offers", "--limit", "0"], "--limit"),
    (["plan", "--offers", "-1"], "--offers"),
    (["trial", "--nproc", "0"], "--nproc"),
    (["trial", "--nproc", "-2"], "--nproc"),
    (["trial", "--nproc", "100000"], "--nproc"),
    (["trial", "--seed", "-1"], "--seed"),
    (["trial", "--timeout-s", "0"], "--timeout-s"),
    (["trial", "--dataset-tokens", "0"], "--dataset-tokens"),
    (["trial", "--epochs", "0"], "--epochs"),
    (["plan", "--compression-ratio", "0"], "--compression-ratio"),
    (["plan", "--compression-ratio", "-2"], "--compression-ratio"),
    (["plan", "--disk-write-gbs", "0"], "--disk-write-gbs"),
    (["plan", "--disk-write-gbs", "-1"], "--disk-write-gbs"),
    (["plan", "--loader-tokens-per-s", "0"], "--loader-tokens-per-s"),
    (["plan", "--epochs", "0"], "--epochs"),
    (["plan", "--epochs", "-1"], "--epochs"),
    (["plan", "--epochs", "1e9"], "--epochs"),
    (["offers", "--budget", "0"], "--budget"),
    (["offers", "--budget", "-5"], "--budget"),
    (["offers", "--deadline-hours", "0"], "--deadline-hours"),
    (["offers", "--preemption-rate", "-1"], "--preemption-rate"),
    (["offers", "--safety-margin", "1"], "--safety-margin"),
    (["offers", "--safety-margin", "-0.1"], "--safety-margin"),
    (["offers", "--max-price", "-1"], "--max-price"),
    (["offers", "--min-vram", "-8"], "--min-vram"),
    (["request", "--budget", "0"], "--budget"),
    (["request", "--rent-days", "0"], "--rent-days"),
    (["request", "--rent-days", "100000"], "--rent-days"),
    (["report", "--out", "unused", "--steps", "0"], "--steps"),
    (["report", "--out", "unused", "--timeout", "0"], "--timeout"),
]


@pytest.mark.parametrize(("argv", "flag"), RANGE_CASES, ids=[" ".join(a) for a, _ in RANGE_CASES])
def test_a_flag_out_of_range_is_one_line_naming_it(capsys, argv, flag) -> None:
    rc, out, err = _cli(capsys, argv)
    _one_error_line(rc, err, flag, "out of range")


# -- CLI: token counts and sizes, plan fields given as flags --------------------------------------------------

TEXT_CASES = [
    (["plan", "--dataset-tokens", "1e400"], "finite"),
    (["plan", "--dataset-tokens", "nan"], "finite"),
    (["plan", "--dataset-tokens", "4096.5"], "whole number"),
    (["plan", "--dataset-tokens", "200 MB"], "not a token count"),
    (["plan", "--dataset-tokens", "-5"], ">= 1"),
    (["plan", "--dataset-tokens", "lots"], "not a token count"),
    (["plan", "--dataset-tokens", "1,5"], "not a token count"),
    (["plan", "--dataset-tokens", "1e16"], "<= 1,000,000,000,000,000"),
    (["plan", "--dataset-bytes", "1e400"], "finite"),
    (["plan", "--dataset-bytes", "nan"], "finite"),
    (["plan", "--dataset-bytes=-1GB"], ">= 1"),
    (["plan", "--dataset-bytes", "20x"], "not a size"),
    (["plan", "--dataset-bytes", "GB"], "not a size"),
    (["request", "--dataset-bytes", "5 EB"], "not a size"),
    (["estimate", "--seq-len", "99999999"], f"{MAX_SEQ_LEN:,}"),
    (["estimate", "--gpus", "100000"], f"{MAX_GPUS:,}"),
    (["estimate", "--gpus", "0"], "gpus=0"),
    (["estimate", "--batch-size", "2000000"], "batch_size"),
    (["estimate", "--grad-accum", "0"], "grad_accum"),
    (["estimate", "--method", "lora", "--lora-r", "100000"], "lora_r"),
    (["estimate", "--lora-alpha", "0"], "lora_alpha"),
    (["estimate", "--lora-alpha", "1e9"], "lora_alpha"),
    (["estimate", "--lora-dropout", "1"], "lora_dropout"),
    (["estimate", "--lora-dropout", "-0.1"], "lora_dropout"),
    (["estimate", "--method", "freeze", "--trainable-layers", "0"], "trainable_layers"),
    (["plan", "--checkpoints-kept", "-1"], "checkpoints_kept"),
    (["plan", "--checkpoint-every", "0"], "checkpoint_every_steps"),
    (["plan", "--eval-fraction", "1"], "eval_fraction"),
    (["estimate", "--seq-len", "4096.5"], "--seq-len"),
]


@pytest.mark.parametrize(("argv", "words"), TEXT_CASES, ids=[" ".join(a) for a, _ in TEXT_CASES])
def test_counts_sizes_and_plan_flags_are_checked(capsys, argv, words) -> None:
    rc, out, err = _cli(capsys, argv)
    _one_error_line(rc, err, words)


def test_flag_errors_speak_russian(capsys) -> None:
    rc, _, err = _cli(capsys, ["offers", "--budget", "nan", "--lang", "ru"])
    assert rc == 2 and err.startswith("gpuwork: ошибка: аргумент --budget: 'nan' — не конечное число")
    rc, _, err = _cli(capsys, ["offers", "--limit", "-3", "--lang", "ru"])
    assert rc == 2 and "аргумент --limit: -3 вне допустимого диапазона: укажите значение от 1 до 1 000 000" in err


def test_valid_counts_still_parse(capsys) -> None:
    rc, out, err = _cli(capsys, ["plan", "--model", "llama-3.2-1b", "--dataset-tokens", "2M tokens", "--json"])
    assert rc == 0, err
    assert json.loads(out)["plan"]["dataset_tokens"] == 2_000_000


# -- CLI: files that are folders, binary, broken, incomplete ----------------------------------------------------

LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
         "max_position_embeddings": 512}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-files")
    made = {"folder": root / "a-folder", "empty_folder": root / "empty-model"}
    for path in made.values():
        path.mkdir()
    contents: dict[str, bytes | str] = {
        "binary": b"\x00\xff\xfe\x89PNG binary",
        "latin1": '{"model": "caf\xe9"}'.encode("latin-1"),
        "broken": '{"seq_len": 10',
        "array": "[1, 2, 3]",
        "empty": "",
        "nan_plan": '{"epochs": NaN}',
        "inf_plan": '{"seq_len": Infinity}',
        "float_seq": '{"seq_len": 4096.5}',
        "huge_seq": '{"seq_len": 99999999}',
        "typo_plan": '{"seq_lenn": 4096}',
        "unknown_model_plan": '{"model": "no-such-model"}',
        "no_type": json.dumps({"hidden_size": 64}),
        "partial": json.dumps({"model_type": "llama"}),
        "no_hidden": json.dumps({k: v for k, v in LLAMA.items() if k != "hidden_size"}),
        "no_vocab": json.dumps({k: v for k, v in LLAMA.items() if k != "vocab_size"}),
        "zero_layers": json.dumps({**LLAMA, "num_hidden_layers": 0}),
        "vocab_zero": json.dumps({**LLAMA, "vocab_size": 0}),
        "kv_not_dividing": json.dumps({**LLAMA, "num_key_value_heads": 3}),
        "hidden_by_heads": json.dumps({**LLAMA, "hidden_size": 66}),
        "deep": json.dumps({**LLAMA, "num_hidden_layers": 100_000}),
        "float_hidden": json.dumps({**LLAMA, "hidden_size": 64.5}),
        "string_heads": json.dumps({**LLAMA, "num_attention_heads": "4"}),
        "negative_heads": json.dumps({**LLAMA, "num_attention_heads": -4}),
        "bool_layers": json.dumps({**LLAMA, "num_hidden_layers": True}),
        "gpt2_partial": json.dumps({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "vocab_size": 100}),
    }
    for name, content in contents.items():
        path = root / f"{name}.json"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
        made[name] = path
    return made


FILE_CASES = [
    (["estimate", "--plan", "{folder}"], "is a folder"),
    (["estimate", "--plan", "{binary}"], "not a UTF-8 text file"),
    (["estimate", "--plan", "{latin1}"], "not a UTF-8 text file"),
    (["estimate", "--plan", "{broken}"], "not valid JSON"),
    (["estimate", "--plan", "{array}"], "JSON object"),
    (["estimate", "--plan", "{empty}"], "not valid JSON"),
    (["estimate", "--plan", "{nan_plan}"], "epochs"),
    (["estimate", "--plan", "{inf_plan}"], "seq_len"),
    (["estimate", "--plan", "{float_seq}"], "seq_len"),
    (["estimate", "--plan", "{huge_seq}"], "seq_len"),
    (["estimate", "--plan", "{typo_plan}"], "seq_len"),
    (["report", "--plan", "{unknown_model_plan}", "--out", "{folder}/report"], "no-such-model"),
    (["estimate", "--model", "{binary}"], "not a UTF-8 text file"),
    (["estimate", "--model", "{empty_folder}"], "has no config.json"),
    (["estimate", "--model", "{no_type}"], "model_type"),
    (["estimate", "--model", "{partial}"], "hidden_size, num_hidden_layers, num_attention_heads, vocab_size"),
    (["estimate", "--model", "{no_hidden}"], "lacks hidden_size"),
    (["estimate", "--model", "{no_vocab}"], "lacks vocab_size"),
    (["estimate", "--model", "{gpt2_partial}"], "lacks num_hidden_layers"),
    (["estimate", "--model", "{zero_layers}"], "num_hidden_layers=0"),
    (["estimate", "--model", "{vocab_zero}"], "vocab_size=0"),
    (["estimate", "--model", "{kv_not_dividing}"], "num_key_value_heads=3"),
    (["estimate", "--model", "{hidden_by_heads}"], "hidden_size=66"),
    (["estimate", "--model", "{deep}"], "num_hidden_layers=100000"),
    (["estimate", "--model", "{float_hidden}"], "hidden_size=64.5"),
    (["estimate", "--model", "{string_heads}"], "num_attention_heads='4'"),
    (["estimate", "--model", "{negative_heads}"], "num_attention_heads=-4"),
    (["estimate", "--model", "{bool_layers}"], "num_hidden_layers=True"),
    (["offers", "--catalog", "{folder}"], "is a folder"),
    (["offers", "--catalog", "{binary}"], "UTF-8"),
    (["accuracy", "--out", "{folder}/missing/accuracy.md"], "does not exist; create it first"),
]


@pytest.mark.parametrize(("argv", "words"), FILE_CASES, ids=[" ".join(a) for a, _ in FILE_CASES])
def test_bad_files_are_one_line_naming_the_file(capsys, files, argv, words) -> None:
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    rc, out, err = _cli(capsys, argv)
    _one_error_line(rc, err, words)
    assert out == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_plan_file_is_one_line(capsys, tmp_path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    plan.chmod(0)
    rc, _, err = _cli(capsys, ["estimate", "--plan", str(plan)])
    _one_error_line(rc, err, str(plan), "permission")


def test_the_top_level_handler_names_the_file_and_the_fix() -> None:
    from gpuwork.cli import file_error

    cases = [
        (IsADirectoryError(21, "Is a directory", "/data/x"), "/data/x is a folder, not a file"),
        (FileNotFoundError(2, "No such file or directory", "/nope/out.json"), "/nope/out.json does not exist"),
        (PermissionError(13, "Permission denied", "/root/x"), "no permission to use /root/x"),
        (OSError(28, "No space left on device", "/full/rec.json"), "no space left on the device to write /full"),
        (OSError(30, "Read-only file system", "/ro/rec.json"), "/ro/rec.json is on a read-only file system"),
        (OSError(5, "Input/output error", "/dev/x"), "cannot use /dev/x: Input/output error"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "not UTF-8 text"),
        (json.JSONDecodeError("Expecting value", "x", 0), "not valid JSON"),
    ]
    for exc, words in cases:
        line = render(file_error(exc), "en")
        assert words in line, line
        assert "\n" not in line and render(file_error(exc), "ru") != line


# -- TrainPlan fields -------------------------------------------------------------------------------------------

PLAN_CASES = [
    *[(field, value) for field in ("epochs", "lora_alpha", "lora_dropout", "eval_fraction")
      for value in (math.nan, math.inf, -math.inf)],
    *[(field, value) for field in ("seq_len", "batch_size", "grad_accum", "gpus", "checkpoint_every_steps",
                                   "dataset_tokens", "trainable_layers")
      for value in (0, -1, 1.5, "8", True, None, math.nan)],
    ("seq_len", MAX_SEQ_LEN + 1), ("seq_len", 99_999_999), ("gpus", MAX_GPUS + 1), ("gpus", 100_000),
    ("batch_size", 2**21), ("grad_accum", 2**21), ("trainable_layers", 100_000), ("lora_r", 100_000),
    ("lora_r", 0), ("lora_r", -8), ("lora_r", 2.5), ("lora_alpha", 0), ("lora_alpha", -16), ("lora_alpha", 1e7),
    ("lora_alpha", "32"), ("lora_dropout", 1.0), ("lora_dropout", -0.5), ("epochs", 0), ("epochs", -1),
    ("epochs", 1e6), ("eval_fraction", 1.0), ("eval_fraction", -0.1), ("dataset_tokens", 10**16),
    ("dataset_bytes", 0), ("dataset_bytes", -1), ("dataset_bytes", 10**19), ("dataset_bytes", 2.5),
    ("checkpoints_kept", -1), ("checkpoints_kept", 10**6), ("checkpoint_every_steps", 10**10),
    ("grad_checkpointing", "yes"), ("offload_optimizer", 1), ("model", ""), ("model", 7), ("method", "lorra"),
    ("precision", "bf17"), ("sharding", 3), ("lora_targets", []), ("lora_targets", 5),
]


@pytest.mark.parametrize(("field", "value"), PLAN_CASES, ids=[f"{f}={v!r}" for f, v in PLAN_CASES])
def test_a_bad_plan_field_is_a_plan_error_naming_it(field, value) -> None:
    with pytest.raises(PlanError) as info:
        TrainPlan(**{"method": "lora", field: value})
    assert info.value.field == field
    assert field in str(info.value) and "\n" not in str(info.value)
    assert info.value.text("ru") != str(info.value)  # said in Russian too


@pytest.mark.parametrize("data", [
    {"seq_len": "4096"}, {"gpus": 1e9}, {"epochs": "two"}, {"modle": "gpt2"}, {"lora_r": None, "method": "qlora"},
    {"sharding": "zero3"}, {"gpus": 2, "offload_params": True}, {"batch_size": []}, {"seq_len": {"v": 1}},
    {"dataset_tokens": 1e400},
], ids=repr)
def test_a_bad_plan_file_is_a_plan_error(tmp_path, data) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError):
        load_plan(path)


# -- config.json checks without building --------------------------------------------------------------------------

CONFIG_CASES = [
    ({"model_type": "llama"}, "lacks hidden_size"),
    ({k: v for k, v in LLAMA.items() if k != "num_attention_heads"}, "num_attention_heads"),
    ({k: v for k, v in LLAMA.items() if k != "num_hidden_layers"}, "num_hidden_layers"),
    ({**LLAMA, "num_hidden_layers": 0}, "num_hidden_layers=0"),
    ({**LLAMA, "vocab_size": 0}, "vocab_size=0"),
    ({**LLAMA, "vocab_size": 10**9}, "vocab_size=1000000000"),
    ({**LLAMA, "hidden_size": 10**7}, "hidden_size"),
    ({**LLAMA, "num_key_value_heads": 3}, "num_key_value_heads=3"),
    ({**LLAMA, "num_key_value_heads": 0}, "num_key_value_heads=0"),
    ({**LLAMA, "intermediate_size": -1}, "intermediate_size=-1"),
    ({**LLAMA, "head_dim": 0}, "head_dim=0"),
    ({**LLAMA, "num_hidden_layers": CONFIG_BOUNDS["num_hidden_layers"] + 1}, "num_hidden_layers"),
]


@pytest.mark.parametrize(("config", "words"), CONFIG_CASES, ids=[w for _, w in CONFIG_CASES])
def test_an_impossible_config_is_a_model_error(config, words) -> None:
    with pytest.raises(ModelError, match=words.replace("(", r"\(")):
        check_config(config, "config.json")


def test_a_complete_config_passes_and_builds(tmp_path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))
    check_config(LLAMA, "config.json")
    assert get_spec(str(path)).num_layers == 2


# -- catalog rows ---------------------------------------------------------------------------------------------

def _catalog_with(tmp_path: Path, file: str, column: str, value: str) -> Path:
    text = (data_dir() / file).read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    rows[1][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path = tmp_path / file
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


OFFER_CASES = [
    ("price_per_gpu_hour_usd", v) for v in ("nan", "inf", "-1", "0", "1e400", "1e9", "two", "")
] + [
    ("min_rental_hours", v) for v in ("nan", "-1", "1e9")
] + [
    ("gpu_id", "h100_sxmx"), ("gpu_id", "nosuch"), ("gpu_id", ""), ("gpus_per_node", "0"),
    ("gpus_per_node", "1.5"), ("gpus_per_node", "99999999"), ("gpus_per_node", "-8"), ("mode", "ondemand"),
    ("region", "mars"), ("as_of", "2024-13-01"), ("link", "warp"),
]


@pytest.mark.parametrize(("column", "value"), OFFER_CASES, ids=[f"{c}={v!r}" for c, v in OFFER_CASES])
def test_a_bad_offer_row_names_file_line_and_column(tmp_path, column, value) -> None:
    path = _catalog_with(tmp_path, "catalog.csv", column, value)
    with pytest.raises(CatalogError) as info:
        load_offers(path)
    text = str(info.value)
    assert text.startswith(f"catalog.csv line 2, field '{column}'"), text


GPU_CASES = [("memory_gb", v) for v in ("nan", "-80", "0", "1e6")] + [
    ("mem_bw_gbs", "inf"), ("bf16_dense_tflops", "-1"), ("fp32_tflops", "1e9"), ("tdp_w", "0"),
    ("tdp_w", "700.5"), ("pcie_gen", "9"), ("link_bw_gbs_unidir", "nan"),
]


@pytest.mark.parametrize(("column", "value"), GPU_CASES, ids=[f"{c}={v!r}" for c, v in GPU_CASES])
def test_a_bad_gpu_row_names_file_line_and_column(tmp_path, column, value) -> None:
    path = _catalog_with(tmp_path, "gpus.csv", column, value)
    with pytest.raises(CatalogError) as info:
        load_gpus(path)
    assert str(info.value).startswith(f"gpus.csv line 2, field '{column}'"), str(info.value)


# -- the sizing form's text fields ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def form():
    from gpuwork.ui.sizing import SizingForm

    made = SizingForm({"model": "llama-3.2-1b", "method": "lora", "seq_len": 1024})
    yield made
    made.close()


FORM_CASES = [
    ("seq_len", "4096.5", "whole number"), ("seq_len", "200 MB", "not a count"), ("seq_len", "nan", "finite"),
    ("seq_len", "99999999", "16,777,216"), ("seq_len", "", "not a count"), ("seq_len", "-5", "seq_len"),
    ("seq_len", "1,5", "not a count"), ("seq_len", "four", "not a count"),
    ("batch_size", "0", "batch_size"), ("batch_size", "2.5", "whole number"), ("batch_size", "1e400", "finite"),
    ("grad_accum", "x", "not a count"), ("lora_r", "16.5", "whole number"),
    ("gpus", "100000", "65,536"), ("gpus", "0", "gpus"), ("gpus", "inf", "finite"),
    ("dataset_tokens", "4096.5", "whole number"),
    ("dataset_tokens", "nan", "finite"), ("dataset_tokens", "1e16", "dataset_tokens"),
    ("epochs", "nan", "finite"), ("epochs", "inf", "finite"), ("epochs", "0", "epochs"), ("epochs", "two", "number"),
    ("epochs", "1e9", "epochs"),
]


@pytest.mark.parametrize(("name", "value", "words"), FORM_CASES, ids=[f"{n}={v!r}" for n, v, _ in FORM_CASES])
def test_a_bad_text_field_is_one_red_line(form, name, value, words) -> None:
    from gpuwork.present.messages import text

    label = text(f"ui.field.{name}", "en")  # the field as the form names it, never its attribute
    good = form.controls[name].value
    form.controls[name].value = value
    try:
        assert form.plan is None and form.error, (name, value)
        assert form.error.startswith(f"{label}: ") and name not in form.error, form.error
        assert words == name or words in form.error, form.error
        assert "gpuwork-error" in form.message.value and "Traceback" not in form.message.value
    finally:
        form.controls[name].value = good
    assert form.error is None, form.error


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("seq_len", "1e4", 10_000), ("seq_len", "4 096", 4096), ("seq_len", 8192, 8192),
    ("dataset_tokens", "2M tokens", 2_000_000), ("dataset_tokens", "1.5B", 1_500_000_000),
    ("dataset_tokens", "4k", 4000), ("epochs", "2.5", 2.5), ("epochs", 3.0, 3),
])
def test_text_fields_read_units(form, name, value, expected) -> None:
    good = form.controls[name].value
    form.controls[name].value = value
    try:
        assert form.error is None, form.error
        assert getattr(form.plan, name) == expected
    finally:
        form.controls[name].value = good


@pytest.mark.parametrize(("name", "value", "words"), [
    ("num_hidden_layers", "100000", "num_hidden_layers=100000"), ("num_hidden_layers", "0", "num_hidden_layers"),
    ("hidden_size", "2048.5", "whole number"), ("vocab_size", "0", "vocab_size"),
    ("hidden_size", "1e9", "hidden_size"), ("num_key_value_heads", "5", "num_key_value_heads"),
    ("intermediate_size", "nan", "finite"),
])
def test_manual_architecture_is_bounded(form, name, value, words) -> None:
    form.model_source.value = "manual"
    try:
        good = form.manual[name].value
        form.manual[name].value = value
        assert form.plan is None and words in form.error, form.error
        form.manual[name].value = good
        assert form.error is None, form.error
    finally:
        form.model_source.value = "preset"


# -- the unit parsers ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "x", "nan", "inf", "-inf", "1e400", "4096.5", "200 MB", "1,5", "1.5.2",
                                  "4 k tokens extra", "--3", "0x10", "1_0", True, None, [4096]])
def test_parse_count_refuses_what_it_cannot_read(text) -> None:
    with pytest.raises(PlanError):
        parse_count(text, "tokens")


@pytest.mark.parametrize("text", ["", "5 EB", "x", "nan", "1e400", "-1GB", "GB", "200 M", True])
def test_parse_size_refuses_what_it_cannot_read(text) -> None:
    with pytest.raises(PlanError):
        parse_size(text, "size")


@pytest.mark.parametrize(("text", "expected"), [
    ("4096", 4096), ("4k", 4000), ("1.5B", 1_500_000_000), ("2M tokens", 2_000_000), ("1e4", 10_000),
    ("4,096", 4096), ("4 096", 4096), ("1.1k", 1100), ("3T", 3 * 10**12), (4096, 4096), (2.0, 2),
])
def test_parse_count_reads_units(text, expected) -> None:
    assert parse_count(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("200MB", 200 * 10**6), ("1.5 GB", 1_500_000_000), ("500MiB", 500 * 2**20), ("2e11", 2 * 10**11),
    ("1 TB", 10**12), ("64 KiB", 65536), ("123", 123),
])
def test_parse_size_reads_units(text, expected) -> None:
    assert parse_size(text) == expected


def test_parse_number_checks_range() -> None:
    assert parse_number("0.5", "x", minimum=0, maximum=1) == 0.5
    for text, kwargs in (("1", {"maximum": 0.5}), ("0", {"minimum": 0, "strict": True}), ("2.5", {"integer": True}),
                         ("nan", {}), ("1 2", {})):
        with pytest.raises(PlanError):
            parse_number(text, "x", **kwargs)


# -- no traceback reaches a terminal ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["plan", "--epochs", "nan"],
    ["offers", "--limit", "-3"],
    ["estimate", "--plan", "{folder}"],
    ["estimate", "--model", "{binary}"],
    ["estimate", "--model", "{partial}"],
    ["accuracy", "--out", "{folder}/missing/accuracy.md"],
], ids=lambda a: " ".join(a))
def test_no_traceback_in_a_real_process(files, argv) -> None:
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    done = subprocess.run([sys.executable, "-m", "gpuwork", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GPUWORK_TRACEBACK": ""})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == ""


def test_an_unexpected_exception_is_one_line_exit_1(capsys, monkeypatch) -> None:
    """A bug still reaches the user as one line (with how to see the traceback), not a page of Python."""
    from gpuwork.cli import estimate

    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(estimate, "_cmd_models", broken)  # the seam: a verb's function
    rc, _, err = _cli(capsys, ["models"])
    assert rc == 1 and "internal error (ZeroDivisionError: division by zero)" in err and "GPUWORK_TRACEBACK" in err
    assert len(err.strip().splitlines()) == 1


def test_gpuwork_errors_are_the_only_kind_raised_for_plans() -> None:
    assert issubclass(PlanError, GpuworkError) and issubclass(ModelError, GpuworkError)
    assert issubclass(CatalogError, GpuworkError)
