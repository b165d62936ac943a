"""The measure layer's part of the catalog (MEASURE_PREFIXES below): every code the trial, trace,
calibration and their CLI verbs use is there, the Russian texts carry no English words (technical names aside),
and records written before messages were coded still load."""

from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path

import pytest
from test_messages import _allowed_names, _english_words

from gpuwork.message import msg
from gpuwork.present.messages import CATALOG, render

# the codes the trial, trace, calibration, records and their CLI verbs and report use
MEASURE_PREFIXES = ("cli.trial.", "error.trial.", "error.data.", "report.", "cli.compare.", "trial.", "cli.trace.",
                    "error.calibration.", "trace.", "error.trace.", "cli.models.", "error.report.", "cli.ramp.",
                    "ramp.", "extrapolation.", "measure.", "checkpoint.", "calibration.", "error.resume.",
                    "cli.resume.", "error.record.")
ENTRIES = {code: (e["en"], e["ru"]) for code, e in CATALOG.items() if code.startswith(MEASURE_PREFIXES)}
ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpuwork"
# the modules whose text() / msg() codes this catalog part serves
MODULES = [*sorted((PACKAGE / "measure").glob("*.py")), *(PACKAGE / "cli" / f for f in ("trial.py", "estimate.py",
                                                                                         "report.py")),
           PACKAGE / "ui" / "trial.py", PACKAGE / "ui" / "report.py"]
# Names in these templates beyond the shared list: libraries, classes, CLI and config values a user types.
NAMES = {"bitsandbytes", "torchrun", "CPUOffloadPolicy", "absmax", "bnb", "DeepSpeed", "None", "cpu", "cuda",
         "causal-lm", "masked-lm", "seq-cls", "flash-attn", "all-linear", "tiny-llama", "tiny-gpt2", "Linear4bit",
         "RankResult", "False", "trial", "trace", "Path", "jsonl", "chmod", "u", "w", "numpy"}
# code spans (commands, keys), command-line flags and HTML tags are names too
CODE = re.compile(r"`[^`]*`|--[a-z-]+|<[^>]+>")


def english_leftovers(text: str, *names: str) -> list[str]:
    """English words in a Russian text, beyond technical names (the shared list, NAMES, presets and ``names``)."""
    from gpuwork.facts.model import list_presets

    allowed = _allowed_names() | NAMES | set(list_presets()) | set(names)
    return _english_words(CODE.sub(" ", text), allowed)


def _codes_in(path: Path) -> list[tuple[int, str]]:
    """(line, code) of each text("...") / msg("...") call with a literal code, and of f-string code families."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        first = node.args[0]
        if name not in ("text", "msg"):
            continue
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            out.append((node.lineno, first.value))
        elif isinstance(first, ast.IfExp):
            out += [(node.lineno, b.value) for b in (first.body, first.orelse) if isinstance(b, ast.Constant)]
        elif isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
            out.append((node.lineno, first.values[0].value + "*"))  # a family: f"cli.trial.row.{key}"
    return out


def test_every_code_the_measure_layer_and_its_verbs_use_is_in_the_catalog() -> None:
    seen = 0
    for path in MODULES:
        for line, code in _codes_in(path):
            where = f"{path.relative_to(ROOT)}:{line}: {code!r}"
            if code.endswith("*"):
                assert any(c.startswith(code[:-1]) for c in CATALOG), where
            else:
                assert code in CATALOG, where
            seen += 1
    assert seen > 150


def _literal_text(template: str) -> str:
    return "".join(literal for literal, *_ in string.Formatter().parse(template))


def test_the_russian_texts_have_no_english_words() -> None:
    leftovers = {code: words for code, (_en, ru) in ENTRIES.items() if (words := english_leftovers(_literal_text(ru)))}
    assert not leftovers, leftovers


def test_messages_render_numbers_in_the_language() -> None:
    cap = msg("trial.memory_cap_exceeded", phase="optimizer step", used_mib=1536.25, cap_mib=1024.0)
    assert render(cap) == "memory cap exceeded after optimizer step: the trial used 1,536.2 MiB, the cap is 1,024.0 MiB"
    assert render(cap, "ru") == ("превышен предел памяти после шага оптимизатора: запуск занял 1 536,2 МиБ, "
                                 "предел — 1 024,0 МиБ")
    wait = msg("trial.data_wait.bound", device="GPU", share=0.125, threshold=0.05)
    assert render(wait, "ru") == ("GPU ждёт данные: ожидание данных — 12 % времени шага (больше 5 %): добавьте "
                                  "процессы загрузки или токенизируйте данные заранее")
    all_ranks = msg("checkpoint.all_ranks", ranks=2, what=msg("checkpoint.verified_exact", steps=2,
                                                              what=msg("checkpoint.restored_fingerprints", tensors=21)))
    assert render(all_ranks, "ru") == ("все 2 процесса: из распределённого чекпойнта восстановлено 21 тензор "
                                       "(отпечатки совпадают); следующие 2 значения loss побитово совпадают с "
                                       "запуском без перерыва")
    assert render(msg("ramp.limit_of", why="out of memory"), "ru") == "нехватка памяти"


# -- records written before messages were coded (schema 1) ------------------------------------------------------------------


def _legacy_record() -> dict:
    """A trial record as gpuwork wrote it before messages were coded: English text in the message fields."""
    step = {"step": 1, "is_warmup": False, "loss": 8.3, "step_time_s": 1.0, "data_wait_s": 0.0, "tokens": 128,
            "tokens_per_s": 128.0, "grad_norm": 1.0, "learning_rate": 1e-3, "trial_memory_bytes": 10,
            "rss_peak_bytes": 20, "rss_after_step_bytes": 20, "cuda_peak_allocated_bytes": None,
            "cuda_peak_reserved_bytes": None}
    return {
        "schema_version": 1, "fits": True, "error": None, "peak_trial_memory_bytes": 10,
        "created_utc": "2026-01-01T00:00:00+00:00", "duration_s": 3.0, "notes": ["UserWarning: something"],
        "saved_to": None, "parallel": None, "ranks": [], "steps": [step],
        "protocol": {"model": "tiny-llama", "method": "lora", "task": "causal-lm", "steps": 1, "warmup": 0,
                     "micro_batch": 2, "grad_accum": 1, "seq_len": 64, "tokens_per_step": 128, "seed": 0,
                     "learning_rate": 1e-3, "lr_schedule": "constant", "max_grad_norm": 1.0,
                     "precision_requested": "bf16", "precision_used": "fp32", "attention_requested": "sdpa",
                     "attention_used": "sdpa", "optimizer": "adamw", "optimizer_class": "torch.optim.AdamW",
                     "grad_checkpointing": False, "params_total": 1, "params_trainable": 1, "weights": "random",
                     "dataset": {}, "tokenizer": {}, "loader_workers": 0, "memory_cap_bytes": None,
                     "substitutions": ["precision bf16 -> fp32 on CPU"],
                     "plan": {"model": "tiny-llama", "method": "lora", "seq_len": 64, "batch_size": 2}},
        "environment": {"python": "3.11", "platform": "linux", "torch": "2.13", "transformers": None, "peft": None,
                        "bitsandbytes": None, "accelerate": None, "tokenizers": None, "device": "cpu",
                        "device_name": "a CPU", "device_total_bytes": 1, "cpu_model": "a CPU",
                        "cpu_logical_cores": 2, "torch_threads": 1, "ram_total_bytes": 1},
        "summary": {"measured_steps": 1, "median_step_time_s": 1.0, "p90_step_time_s": 1.0, "mean_step_time_s": 1.0,
                    "min_step_time_s": 1.0, "tokens_per_step": 128, "tokens_per_s": 128.0, "mean_data_wait_s": 0.0,
                    "data_wait_fraction": 0.0, "data_bound": False,
                    "verdict": "data loading keeps up: 0.0% of step time is data wait", "first_loss": 8.3,
                    "last_loss": 8.3, "losses_finite": True, "peak_trial_memory_bytes": 10,
                    "cuda_peak_allocated_bytes": None, "cuda_peak_reserved_bytes": None, "rss_peak_bytes": 20,
                    "warmup_mean_step_time_s": None},
        "checkpoint": {"path": None, "files": {"a": 1}, "bytes_on_disk": 1, "save_s": 0.1, "rebuild_s": 0.1,
                       "restore_s": 0.1, "tensors_checked": 3, "tensors_equal": True,
                       "uninterrupted_losses": [8.0, 7.9], "resumed_losses": [8.0, 7.9], "max_abs_loss_diff": 0.0,
                       "loss_rtol": 0.0, "verified": True,
                       "message": "restored 3 tensors exactly; the next 2 losses match the uninterrupted run "
                                  "bit-exact"},
    }


def test_a_record_written_before_codes_is_refused_by_its_schema_version() -> None:
    """English text in the message fields is schema 1 (0.1.0): refused with the one schema line, in both languages."""
    from gpuwork.measure.record import TrialError, TrialRecord

    with pytest.raises(TrialError) as refused:
        TrialRecord.from_dict(_legacy_record())
    assert refused.value.msg.code == "error.trial.record_schema"
    assert "schema 1 is not 2" in render(refused.value.msg, "en")
    assert "схему 2" in render(refused.value.msg, "ru")


def test_a_calibration_file_written_before_codes_loads(tmp_path: Path) -> None:
    from gpuwork.measure.calibration import load_calibration

    entry = {"device_name": "NVIDIA H200", "device_kind": "cuda", "gpu_id": "h200_sxm", "trial": "t",
             "record_created_utc": "2026-01-01", "calibrated_utc": "2026-01-01", "world_size": 1, "plan": {},
             "memory": None, "time": None, "notes": ["the trial computed in fp32, the plan asks bf16"]}
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"schema_version": 1, "devices": {"NVIDIA H200": {"gpu_id": "h200_sxm",
                                                                                  "entries": [entry]}}}))
    device = load_calibration("NVIDIA H200", path)
    assert device.entries[0].notes == (msg("measure.text", text="the trial computed in fp32, the plan asks bf16"),)


# -- errors of the measure layer in the reader's language --------------------------------------------------------


def test_a_data_error_renders_in_russian(tmp_path: Path) -> None:
    from gpuwork.measure.textdata import DataError, load_texts

    with pytest.raises(DataError) as info:
        load_texts(tmp_path / "missing.txt")
    assert info.value.msg.code == "error.data.missing"
    assert str(info.value) == f"data file '{tmp_path / 'missing.txt'}' does not exist: check the path"
    assert info.value.text("ru") == f"файла данных '{tmp_path / 'missing.txt'}' нет: проверьте путь"


def test_the_cli_prints_a_measure_error_in_russian(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuwork.cli import main

    assert main(["compare", str(tmp_path / "missing.json"), "--lang", "ru"]) == 2
    err = capsys.readouterr().err
    assert err == f"gpuwork: ошибка: записи пробного запуска '{tmp_path / 'missing.json'}' нет\n"
    assert main(["trial", "--model", "tiny-llama", "--steps", "0", "--lang", "ru", "--no-progress"]) == 2
    assert "--steps 0: укажите целое число от 1 до 100 000" in capsys.readouterr().err
