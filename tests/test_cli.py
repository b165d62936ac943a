import json
import os
import re
import subprocess
import sys

import pytest

from gpuwork import TrainPlan, estimate_memory


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuwork", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_estimate_json_schema_and_numbers_match_the_api():
    out = run("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--precision", "bf16", "--optimizer",
              "adamw", "--seq-len", "2048", "--batch-size", "1", "--lora-targets", "q_proj,v_proj", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"plan", "params", "memory"}
    assert set(data["params"]) == {"total", "trainable"}
    memory = data["memory"]
    for key in ("peak_allocated_bytes", "peak_reserved_bytes", "device_total_bytes", "breakdown"):
        assert key in memory
    est = estimate_memory(TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048))
    assert memory["peak_allocated_bytes"] == est.peak_allocated_bytes
    assert data["params"]["trainable"] == 6_815_744  # 32 layers x (q: 16*(4096+4096) + v: 16*(4096+1024))
    assert TrainPlan.from_dict(data["plan"]).model == "llama-3.1-8b"


def test_estimate_table_names_units_and_meanings():
    out = run("estimate", "--model", "qwen2.5-7b", "--method", "qlora", "--seq-len", "4096",
              "--grad-checkpointing")
    assert out.returncode == 0, out.stderr
    for words in ("GiB", "peak allocated", "max_memory_allocated", "reserved", "nvidia-smi", "weights"):
        assert words in out.stdout


def test_plan_file_with_flag_override(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"model": "tiny-llama", "method": "full", "seq_len": 128}))
    out = run("estimate", "--plan", str(plan), "--batch-size", "4", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["plan"]["batch_size"] == 4 and data["plan"]["method"] == "full"


def test_models_lists_presets_with_exact_counts():
    out = run("models")
    assert out.returncode == 0
    assert "llama-3.1-8b" in out.stdout and "8,030,261,248" in out.stdout


def test_seq_len_above_limit_warns_but_succeeds():
    out = run("estimate", "--model", "gpt2", "--method", "full", "--seq-len", "2048", "--attention", "eager")
    assert out.returncode == 0
    assert "warning" in out.stderr and "1024" in out.stderr


BAD_INPUTS = [
    (["--model", "llama-3.1-8"], ["unknown model", "llama-3.1-8b"]),
    (["--model", "missing/config.json"], ["does not exist"]),
    (["--method", "lorra"], ["method", "lora"]),
    (["--precision", "bf17"], ["precision"]),
    (["--optimizer", "adamw8"], ["optimizer"]),
    (["--batch-size", "-4"], ["batch_size=-4"]),
    (["--seq-len", "0"], ["seq_len=0"]),
    (["--batch-size", "four"], ["--batch-size", "invalid int"]),
    (["--grad-accum", "0"], ["grad_accum=0"]),
    (["--method", "lora", "--lora-r", "0"], ["lora_r=0"]),
    (["--model", "gpt2", "--method", "lora", "--lora-targets", "q_proj"], ["matches no linear module", "c_attn"]),
    (["--sharding", "zero3"], ["needs gpus >= 2"]),
    (["--gpus", "0"], ["gpus=0"]),
    (["--gpus", "2", "--offload-params"], ["offload_params"]),
    (["--lora-dropout", "1.5"], ["lora_dropout"]),
    (["--attention", "flash5"], ["attention"]),
    (["--task", "translation"], ["task"]),
    (["--quant-type", "int3"], ["quant_type"]),
]


@pytest.mark.parametrize(("args", "words"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_clear_line_and_exit_2(args, words):
    out = run("estimate", *args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    for word in words:
        assert word in lines[0]


def test_bad_files_are_one_line_errors(tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    no_type = tmp_path / "other.json"
    no_type.write_text(json.dumps({"hidden_size": 8}))
    bad_plan = tmp_path / "plan.json"
    bad_plan.write_text(json.dumps({"modle": "gpt2"}))
    cases = [
        (["--model", str(broken)], "not valid JSON"),
        (["--model", str(no_type)], "model_type"),
        (["--plan", str(bad_plan)], "Did you mean 'model'"),
        (["--plan", str(tmp_path / "nope.json")], "does not exist"),
    ]
    for args, words in cases:
        out = run("estimate", *args)
        assert out.returncode == 2, out
        assert len(out.stderr.strip().splitlines()) == 1 and words in out.stderr


def test_hub_id_without_network_is_one_line():
    out = run("estimate", "--model", "some-org/not-a-model", env={"HF_HUB_OFFLINE": "1"})
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "config.json" in out.stderr


def test_missing_command_is_one_line():
    out = run()
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_trace_command_json():
    out = run("trace", "--model", "tiny-llama", "--method", "lora", "--seq-len", "64", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["memory"]["peak_allocated_bytes"] > 0
    assert "stand_ins" in data["trace"]


@pytest.mark.slow
def test_trace_falls_back_to_the_estimate_when_tracing_fails():
    out = run("trace", "--model", "tiny-mixtral", "--method", "full", "--precision", "fp32", "--seq-len", "64",
              "--json")
    assert out.returncode == 0
    assert "analytic estimate" in out.stderr
    assert json.loads(out.stdout)["memory"]["peak_allocated_bytes"] > 0


def test_calibrated_totals_are_shown_only_when_asked(tmp_path):
    from gpuwork.measure.calibration import Calibration, MemoryCalibration, save_calibration

    store = tmp_path / "calibration.json"
    env = {"GPUWORK_CALIBRATION": str(store)}
    out = run("estimate", "--model", "tiny-llama", "--calibrated", "NVIDIA H200", env=env)
    assert out.returncode == 2 and "gpuwork trial --calibrate" in out.stderr
    memory = MemoryCalibration(measured_allocated_bytes=110, estimated_allocated_bytes=100, allocated_factor=1.1,
                               measured_reserved_bytes=120, estimated_reserved_bytes=100, reserved_factor=1.2)
    save_calibration(Calibration(device_name="NVIDIA H200", device_kind="cuda", gpu_id="h200_sxm", trial="t",
                                 record_created_utc="2026-11-29T00:00:00Z", calibrated_utc="2026-11-29T00:00:00Z",
                                 world_size=1, plan={}, memory=memory, time=None, notes=()), path=store)
    plain = json.loads(run("estimate", "--model", "tiny-llama", "--json", env=env).stdout)
    assert "calibrated" not in plain  # off by default
    out = run("estimate", "--model", "tiny-llama", "--json", "--calibrated", "NVIDIA H200", env=env)
    data = json.loads(out.stdout)
    allocated = data["memory"]["peak_allocated_bytes"]
    assert data["calibrated"]["peak_allocated_bytes"] == round(allocated * 1.1)
    table = run("estimate", "--model", "tiny-llama", "--calibrated", "NVIDIA H200", env=env).stdout
    assert "calibrated with trials on NVIDIA H200" in table
    russian = run("estimate", "--model", "tiny-llama", "--calibrated", "NVIDIA H200", "--lang", "ru", env=env).stdout
    assert "с калибровкой по запускам на NVIDIA H200 (замер/оценка: выделенная ×1,100" in russian
    assert "пик зарезервированной (torch max_memory_reserved)" in russian and "peak" not in russian
    missing = run("estimate", "--model", "tiny-llama", "--calibrated", "NVIDIA A100", "--lang", "ru", env=env)
    assert missing.returncode == 2
    assert missing.stderr == ("gpuwork: ошибка: для 'NVIDIA A100' нет сохранённой калибровки памяти: сначала "
                              "запустите `gpuwork trial --calibrate` на этом GPU\n")


def test_a_verb_whose_extra_is_missing_names_the_extra(tmp_path) -> None:
    """A core install has no torch: `gpuwork trace` says which extra to install, in one line, exit 2."""
    script = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
              "from gpuwork.cli import main\n"
              "sys.exit(main(['trace', '--model', 'tiny-llama']))")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'gpuwork[trial]'" in lines[0] and "Traceback" not in done.stderr


def test_estimate_speaks_russian_with_russian_numbers() -> None:
    done = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--model", "llama-3.1-8b", "--method", "lora",
                           "--lang", "ru"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "параметры: всего 8 037 076 992, обучаемых 6 815 744" in out
    assert "всего на устройстве (как в nvidia-smi)" in out and "14,98" in out
    assert "total" not in out and "weights" not in out


def test_models_speak_russian() -> None:
    from test_messages_measure import english_leftovers

    from gpuwork.facts.model import get_spec, list_presets

    out = run("models", "--lang", "ru")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("пресет") and "8 030 261 248" in out.stdout
    architectures = {get_spec(name).architecture for name in list_presets()}
    assert not english_leftovers(out.stdout, *architectures), english_leftovers(out.stdout, *architectures)


@pytest.mark.slow
def test_trace_speaks_russian() -> None:
    from test_messages_measure import english_leftovers

    out = run("trace", "--model", "tiny-llama", "--method", "qlora", "--optimizer", "adamw-8bit", "--attention",
              "flash", "--seq-len", "64", "--lang", "ru")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("gpuwork, трассировка: tiny-llama, qlora, bf16-mixed, контекст 64 × батч")
    for expected in ("пик выделенной по трассировке", "аналитическая оценка (та же величина)", "параметры",
                     "замена: qlora: Linear4bit из bitsandbytes", "замена: оптимизатор: adamw-8bit"):
        assert expected in out.stdout, expected
    assert not english_leftovers(out.stdout), english_leftovers(out.stdout)
    assert out.stderr == ""  # no library notices either


@pytest.mark.parametrize(("argv", "russian"), [
    (["estimate", "--seq-len", "abc"], "аргумент --seq-len: 'abc' — не длина последовательности"),
    (["plan", "--dataset-bytes", "200XB"], "аргумент --dataset-bytes: '200XB' — не размер"),
    (["offers", "--sort", "cheapest"], "аргумент --sort: нет такого варианта: 'cheapest'"),
    (["estimate", "--bogus", "1"], "неизвестные аргументы: --bogus 1"),
])
def test_a_bad_flag_is_reported_in_the_language_asked_for(argv, russian) -> None:
    """argparse fails before --lang is read: the parser reads it ahead and says the error in Russian too."""
    english = run(*argv)
    assert english.returncode == 2 and english.stderr.startswith("gpuwork: error: ") and "Traceback" not in english.stderr
    done = run(*argv, "--lang", "ru")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("gpuwork: ошибка: ") and russian in done.stderr and "(см. `gpuwork" in done.stderr


# -- --help in both languages -----------------------------------------------------------------------------------

RUN_FLAGS = {"--plan", "--model", "--method", "--task", "--precision", "--optimizer", "--seq-len", "--batch-size",
             "--grad-accum", "--grad-checkpointing", "--attention", "--trainable-layers", "--lora-r", "--lora-alpha",
             "--lora-dropout", "--lora-targets", "--quant-type", "--no-double-quant", "--no-kbit-upcast", "--gpus", "--sharding",
             "--shard-group", "--comm-overlap", "--fsdp-wrap", "--recompute", "--recompute-every", "--zero-sync", "--offload-optimizer", "--offload-params", "--no-foreach", "--optimizer-impl", "--stack",
             "--from", "--lengths", "--expandable-segments", "--lengths-from", "--lengths-tokenizer",
             "--eval-batch-size", "--eval-samples", "--eval-keep", "--eval-accum", "--mlm-predictions",
             "--packed-document-tokens", "--no-grad-clip", "--deterministic",
             "--launch-blocking", "--tf32", "--fp8-linear", "--weight-decay", "--sdpa-backend", "--input-require-grads",
             "--no-input-require-grads"}
DATA_FLAGS = {"--dataset-tokens", "--dataset-bytes", "--compression-ratio", "--epochs", "--eval-fraction",
              "--checkpoint-every", "--checkpoints-kept"}
TIME_FLAGS = {"--mfu", "--loader-tokens-per-s", "--disk-write-gbs"}
# verb -> (its flags, phrases of its English help as they read before the help was translated)
HELP = {
    None: ({"--help", "--version"}, ["Size a fine-tuning run before renting a GPU.", "positional arguments",
                                     "show program's version number and exit",
                                     "per-GPU memory of a training step (analytic, instant)",
                                     "execute the workbook's notebooks for a plan and export offline HTML"]),
    "estimate": (RUN_FLAGS | {"--json", "--lang", "--calibrated"},
                 ["the run (defaults: TrainPlan's):", "micro-batch: sequences per GPU per step",
                  "language of the report (en or ru)", "`gpuwork trial --calibrate` stored for this device"]),
    "trace": (RUN_FLAGS | {"--json", "--lang"}, ["print one JSON object", "optimizer kernels: foreach (default) | fused | for-loop"]),
    "models": ({"--json", "--lang", "--rebuild"}, ["rebuild data/model_specs.json on the meta device"]),
    "accuracy": ({"--out", "--grid", "--time", "--track-record"}, ["write Markdown here instead of printing it", "small-model grid (minutes)"]),
    "plan": (RUN_FLAGS | DATA_FLAGS | TIME_FLAGS | {"--gpu", "--have", "--offers", "--lang", "--json", "--check"},
             ["data and schedule:", "time model:", "tokens = size / 4 B", "cheapest fitting offers to list",
              "exit with status 1 when nothing fits"]),
    "offers": (RUN_FLAGS | DATA_FLAGS | TIME_FLAGS | {"--max-price", "--mode", "--class", "--region", "--min-vram",
                                                      "--budget", "--sort", "--deadline-hours", "--preemption-rate",
                                                      "--safety-margin", "--catalog", "--all", "--limit", "--lang",
                                                      "--json", "--check", "--have"},
               ["filters and ranking:", "on-demand | reserved | interruptible (repeatable)", "print a JSON list",
                "exit with status 1 when no offer"]),
    "request": (RUN_FLAGS | DATA_FLAGS | {"--lang", "--format", "--start-date", "--budget", "--rent-days",
                                         "--no-trial", "--explicit-context", "--record", "--have"},
                ["instead of 'context and batch in the config'", "do not ask for the step-time trial"]),
    "trial": (RUN_FLAGS | {"--steps", "--warmup", "--ramp", "--out", "--nproc", "--memory-cap-gib", "--data",
                           "--device", "--seed", "--no-checkpoint", "--timeout-s", "--price-per-hour",
                           "--dataset-tokens", "--epochs", "--calibrate", "--json", "--no-progress", "--lang", "--resume",
                           "--checkpoint-every", "--until-stable", "--tolerance", "--max-steps",
                           "--allow-changed-data"},
              ["the trial:", "exit status:", "3  it does not fit", "examples:", "warm-up, measured steps",
               "gpuwork compare trials/*.json --price-per-hour 2.5"]),
    "compare": ({"--price-per-hour", "--json", "--lang", "--save-calibration"}, ["RECORD.json", "trial records written by `gpuwork trial"]),
    "report": ({"--plan", "--out", "--notebooks", "--steps", "--timeout", "--progress", "--no-progress", "--lang"},
               ["seconds allowed per cell (default 900)", "language of the pages and messages (en or ru)"]),
    "app": ({"--port", "--host", "--max-pages", "--pool", "--pages-per-visitor"}, ["Stop it with Ctrl+C.", "TCP port (default 8866)",
                                   "(default 127.0.0.1: this machine only; the app has no login)"]),
}


@pytest.fixture
def help_of(capsys, monkeypatch):
    """verb, *extra -> what `gpuwork [verb] --help [extra]` prints (exit 0)."""
    from gpuwork.cli import main

    monkeypatch.setenv("COLUMNS", "200")

    def help_of(verb: str | None, *extra: str) -> str:
        with pytest.raises(SystemExit) as exc:
            main([*([verb] if verb else []), "--help", *extra])
        assert exc.value.code == 0
        return capsys.readouterr().out

    return help_of

# names the Russian help keeps beyond the shared list: values the help lists, programs, the example folder
HELP_NAMES = {"auto", "efficient", "all-linear", "Markdown", "Voila", "Ctrl", "TrainPlan", "stderr", "trials", "fixed", "packed",
              "padded", "True", "txt", "jsonl", "json", "BPE", "loss", "logits", "ids", "default", "off", "on", "blocks", "whole",
              "buckets", "sliced", "LLaMA-Factory", "block", "ops"}


def _options_in_usage(text: str) -> set[str]:
    usage = text.split("\n\n")[0]
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", usage))


@pytest.mark.parametrize("verb", list(HELP))
def test_english_help_is_as_it_was(verb, help_of) -> None:
    flags, phrases = HELP[verb]
    text = help_of(verb)
    assert text.startswith(f"usage: gpuwork {verb or ''}".rstrip() + " ")
    assert "\noptions:\n  -h, --help" in text and "show this help message and exit" in text
    assert _options_in_usage(text) == flags - {"--help"}
    for phrase in phrases:
        assert phrase in text, phrase
    assert help_of(verb, "--lang", "en") == text  # asking for English changes nothing
    assert not re.search("[а-яё]", text, flags=re.I)


@pytest.mark.parametrize("columns", [48, 61, 80, 97, 120])
def test_help_never_breaks_a_hyphenated_name(columns, help_of, monkeypatch) -> None:
    from gpuwork.plan import Stack

    monkeypatch.setenv("COLUMNS", str(columns))  # argparse's textwrap would break `dle-pytorch` after its hyphen
    for lang in ("en", "ru"):
        text = help_of("plan", "--lang", lang)
        assert not re.search(r"[a-z0-9]-\n", text), text
        for stack in Stack:
            assert stack.value in " ".join(text.split()), (lang, stack.value)


@pytest.mark.parametrize("verb", list(HELP))
def test_russian_help_speaks_russian(verb, help_of) -> None:
    from test_messages_measure import english_leftovers

    from gpuwork.cli import build_parser
    from gpuwork.facts.catalog import GpuClass, Mode, Region

    flags, _phrases = HELP[verb]
    text = help_of(verb, "--lang", "ru")
    assert text.startswith(f"использование: gpuwork {verb or ''}".rstrip() + " ")
    assert "\nпараметры:\n  -h, --help" in text and "показать эту справку и выйти" in text
    assert _options_in_usage(text) == flags - {"--help"}
    english = help_of(verb)
    assert set(re.findall(r"--[a-z][a-z0-9-]*", text)) == set(re.findall(r"--[a-z][a-z0-9-]*", english))
    # names a user types stay: verbs, the choices of every flag, and the values the help lists
    parser = build_parser("ru")
    verbs = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    names = set(verbs) | HELP_NAMES
    names |= {v.value for enum in (Mode, GpuClass, Region) for v in enum}
    for action in (verbs[verb] if verb else parser)._actions:
        names.update(str(choice) for choice in action.choices or ())
    words = re.sub(r"(?<![\w-])-[a-z]\b", " ", text)  # the short flag -h
    assert not english_leftovers(words, *names), english_leftovers(words, *names)


def test_help_entries_have_no_english_words_in_russian() -> None:
    """Every cli.help.* entry, not only those a --help shows by default (e.g. a placeholder's surroundings)."""
    from test_messages_measure import _literal_text, english_leftovers

    from gpuwork.facts.catalog import GpuClass, Mode, Region
    from gpuwork.present.catalog.cli_help import ENTRIES

    names = HELP_NAMES | {"en", "ru", "trial", "compare"} | {v.value for enum in (Mode, GpuClass, Region) for v in enum}
    leftovers = {code: words for code, (_en, ru) in ENTRIES.items()
                 if (words := english_leftovers(_literal_text(ru), *names))}
    assert not leftovers, leftovers
    assert all(code.startswith("cli.help.") for code in ENTRIES)
