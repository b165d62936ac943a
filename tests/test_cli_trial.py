"""Tests for gpuwork.cli.trial (`gpuwork trial`, `gpuwork compare`) and scripts/gpu_check.py's CPU behaviour.

Trials are tiny (tiny-llama, seq 64, batch 2, 1 warm-up + 2 steps, one thread); messages and exit
codes are asserted, never timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpuwork.cli import main
from gpuwork.cli.trial import EXIT_DOES_NOT_FIT, register

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--model", "tiny-llama", "--precision", "fp32", "--seq-len", "64", "--batch-size", "2", "--lora-r", "8",
        "--no-progress"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here trains: one torch thread (see conftest)."""


@pytest.fixture(scope="module")
def trial_out(tmp_path_factory):
    """One LoRA trial through the CLI, with --out, a price and --calibrate into a private file."""
    out = tmp_path_factory.mktemp("trials")
    cal = out.parent / "calibration.json"
    old = os.environ.get("GPUWORK_CALIBRATION")
    os.environ["GPUWORK_CALIBRATION"] = str(cal)
    try:
        import contextlib
        import io

        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main(["trial", *TINY, "--method", "lora", "--steps", "2", "--warmup", "1", "--out", str(out),
                       "--price-per-hour", "2.5", "--dataset-tokens", "1000000", "--calibrate"])
    finally:
        if old is None:
            os.environ.pop("GPUWORK_CALIBRATION", None)
        else:
            os.environ["GPUWORK_CALIBRATION"] = old
    return rc, stdout.getvalue(), stderr.getvalue(), out, cal


@pytest.fixture(scope="module")
def russian_out(tmp_path_factory):
    """The same trial with --lang ru (and a price, --calibrate into a private file, --out)."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("trials-ru")
    old = os.environ.get("GPUWORK_CALIBRATION")
    os.environ["GPUWORK_CALIBRATION"] = str(out.parent / "calibration-ru.json")
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main(["trial", *TINY, "--method", "lora", "--precision", "bf16", "--attention", "flash", "--steps",
                       "2", "--warmup", "1", "--out", str(out), "--price-per-hour", "2.5", "--calibrate",
                       "--lang", "ru"])
    finally:
        if old is None:
            os.environ.pop("GPUWORK_CALIBRATION", None)
        else:
            os.environ["GPUWORK_CALIBRATION"] = old
    return rc, stdout.getvalue(), stderr.getvalue(), out


def _device_words() -> set[str]:
    from gpuwork.measure.trial import cpu_model

    return set(cpu_model().replace("(", " ").replace(")", " ").split())


@pytest.mark.slow
def test_a_russian_trial_prints_no_english(russian_out):
    from test_messages_measure import english_leftovers

    rc, text, err, out = russian_out
    assert rc == 0, err
    for expected in ("gpuwork, пробный запуск: tiny-llama, lora, fp32 (запрошено bf16)", "время шага  медиана",
                     "замена: точность bf16 → fp32 на CPU", "замена: attention flash → sdpa: нет устройства CUDA",
                     "загрузка данных успевает", "чекпойнт    проверен: сохранение", "помещается  да",
                     "пересчёт на 100 000 000 токенов", "стоимость", "по 2,5 USD за GPU-час", "калибровка на",
                     "калибровка: сохранять нечего"):
        assert expected in text, expected
    assert not english_leftovers(text, *_device_words()), english_leftovers(text, *_device_words())
    records = sorted(out.glob("*.json"))
    assert len(records) == 1 and f"запись: {records[0]}" in text


@pytest.mark.slow
def test_a_russian_comparison_prints_no_english(russian_out, capsys):
    from test_messages_measure import english_leftovers

    record = str(next(russian_out[3].glob("*.json")))
    assert main(["compare", record, record, "--price-per-hour", "2", "--lang", "ru"]) == 0
    text = capsys.readouterr().out
    for row in ("запуск", "время шага (медиана)", "токенов/с", "пик памяти", "стоимость 1 млн токенов"):
        assert any(line.startswith(row) for line in text.splitlines()), row
    assert "2 USD" in text and not english_leftovers(text, *_device_words()), text


@pytest.mark.slow
def test_trial_prints_the_summary_table(trial_out):
    rc, text, err, out, _ = trial_out
    assert rc == 0, err
    for expected in ("gpuwork trial: tiny-llama, lora, fp32", "step time", "median", "p90", "tokens/s",
                     "data wait", "peak memory", "process RSS", "not comparable with GPU memory",
                     "checkpoint   verified: save", "MiB on disk", "fits         yes",
                     "extrapolated to 1,000,000 tokens", "cost $", "at $2.5 per GPU-hour"):
        assert expected in text, expected
    records = sorted(out.glob("*.json"))
    assert len(records) == 1 and f"record: {records[0]}" in text


@pytest.mark.slow
def test_trial_prints_offers_billed_by_the_one_rule(trial_out):
    """The offers `gpuwork trial` prints are gpuwork.measure.extrapolation's: a 1,000-hour run on a 720-hour
    reserved offer is billed two whole periods, 1,440 hours (gpuwork.estimate.offers.billed_hours)."""
    import dataclasses

    from gpuwork.cli.trial import format_extrapolation
    from gpuwork.measure.extrapolation import extrapolate
    from gpuwork.measure.trial import TrialRecord

    record = TrialRecord.from_json(next(trial_out[3].glob("*.json")))
    env = dataclasses.replace(record.environment, device="cuda:0", device_name="NVIDIA L40S",
                              device_total_bytes=46068 * 2**20)
    gpu = dataclasses.replace(record, environment=env,
                              summary=dataclasses.replace(record.summary, median_step_time_s=3600.0))
    plan = gpu.plan.replace(dataset_tokens=gpu.summary.tokens_per_step * 1000, eval_fraction=0.0,
                            checkpoint_every_steps=2000)
    text = format_extrapolation(extrapolate(gpu, plan, margin=0.0))
    assert "1,000 steps" in text
    line = next(line for line in text.splitlines() if "nba-l40s-1x-res1m" in line)
    assert "reserved, $0.72/GPU-h, billed 1,440.0 h x 1 GPU): $1,036.80" in line


@pytest.mark.slow
def test_calibrate_on_cpu_saves_nothing_and_says_why(trial_out):
    _, text, _, _, cal = trial_out
    assert "calibration on" in text and "not a GPU quantity" in text
    assert "nothing to save" in text
    assert not cal.exists()


@pytest.mark.slow
def test_does_not_fit_exits_3_with_the_peak_reached_as_json(tmp_path, capsys):
    rc = main(["trial", *TINY, "--method", "full", "--steps", "1", "--warmup", "0", "--memory-cap-gib", "0.00001",
               "--json", "--out", str(tmp_path)])
    assert rc == EXIT_DOES_NOT_FIT == 3
    out = json.loads(capsys.readouterr().out)
    error = out["record"]["error"]  # a coded message, as TrialRecord.as_dict writes it
    assert out["record"]["fits"] is False and error["code"] == "trial.memory_cap_exceeded"
    assert error["params"]["used_mib"] > error["params"]["cap_mib"] > 0
    assert out["record"]["peak_trial_memory_bytes"] > 0 and out["extrapolation"] is None
    assert len(list(tmp_path.glob("*.json"))) == 1


@pytest.mark.slow
def test_two_processes_that_do_not_fit_print_does_not_fit(tmp_path, capsys):
    rc = main(["trial", *TINY, "--method", "full", "--steps", "1", "--warmup", "0", "--nproc", "2",
               "--memory-cap-gib", "0.00001", "--timeout-s", "300"])
    text = capsys.readouterr().out
    assert rc == 3
    assert "2 processes (ddp, gloo)" in text and "does not fit" in text and "memory cap exceeded" in text
    assert "substitution" not in text  # --gpus followed --nproc
    # torchrun stops the group when the first rank exits, so the other rank may not report
    assert "rank 0:" in text or "rank 1:" in text


@pytest.mark.slow
def test_ramp_where_nothing_fits_exits_3(capsys):
    rc = main(["trial", *TINY, "--method", "full", "--batch-size", "1", "--ramp", "--steps", "1", "--warmup", "0",
               "--memory-cap-gib", "0.00001"])
    assert rc == 3
    assert "nothing fits" in capsys.readouterr().out


@pytest.mark.slow
def test_a_russian_ramp_prints_no_english(capsys):
    from test_messages_measure import english_leftovers

    rc = main(["trial", *TINY, "--method", "lora", "--batch-size", "1", "--seq-len", "32", "--ramp", "--steps", "1",
               "--warmup", "0", "--memory-cap-gib", "0.00001", "--lang", "ru"])
    text = capsys.readouterr().out
    assert rc == 3 and "ничего не помещается: даже батч 1 при seq_len плана" in text
    assert "1 × 32" in text and not english_leftovers(text), text


@pytest.mark.slow
def test_compare_side_by_side_and_bad_files(trial_out, tmp_path, capsys):
    _, _, _, out, _ = trial_out
    record = str(next(out.glob("*.json")))
    assert main(["compare", record, record, "--price-per-hour", "2"]) == 0
    text = capsys.readouterr().out
    for row in ("trial", "step time (median)", "tokens/s", "peak memory", "cost per 1M tokens"):
        assert any(line.startswith(row) for line in text.splitlines()), row
    assert text.count("tiny-llama lora b2x64") == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1')
    assert main(["compare", record, str(bad)]) == 2
    assert main(["compare", str(tmp_path / "missing.json")]) == 2
    alien = tmp_path / "alien.json"
    alien.write_text('{"hello": "world"}')
    assert main(["compare", str(alien)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("gpuwork: error: ") for line in err)
    assert "not valid JSON" in err[0] and "does not exist" in err[1] and "alien.json" in err[2]


def test_errors_are_one_line_and_exit_2(capsys):
    assert main(["trial", *TINY, "--method", "nope"]) == 2
    assert main(["trial", *TINY, "--method", "lora", "--ramp", "--nproc", "2"]) == 2
    assert main(["trial", *TINY, "--method", "lora", "--memory-cap-gib", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("gpuwork: error: ") for line in err)
    assert "method" in err[0] and "--ramp" in err[1] and "memory-cap-gib" in err[2]
    with pytest.raises(SystemExit) as exc:
        main(["trial", "--steps", "many"])
    assert exc.value.code == 2


def test_help_documents_the_exit_codes_and_register_wires_both_commands(capsys):
    with pytest.raises(SystemExit):
        main(["trial", "--help"])
    text = capsys.readouterr().out
    assert "exit status" in text and "3  it does not fit" in text and "--nproc" in text and "--calibrate" in text
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    register(sub)
    args = parser.parse_args(["compare", "a.json", "b.json", "--price-per-hour", "1.5"])
    assert args.records == ["a.json", "b.json"] and args.price_per_hour == 1.5 and callable(args.func)
    assert parser.parse_args(["trial", "--model", "x", "--nproc", "2"]).nproc == 2


# -- scripts/gpu_check.py (never needs a GPU here) ------------------------------------------------------------


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})


def test_gpu_check_help():
    result = _script("--help")
    assert result.returncode == 0
    assert "--out" in result.stdout and "--json" in result.stdout and "llama-3.1-8b" in result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_gpu_check_without_cuda_exits_cleanly(tmp_path):
    result = _script("--out", str(tmp_path / "accuracy.md"), "--json", str(tmp_path / "gpu.json"))
    assert result.returncode == 1
    assert "no CUDA GPU" in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_until_stable_reports_the_interval_and_whether_it_converged(tmp_path, capsys):
    # a tolerance no real CPU run meets: the cap of 7 measured steps ends it, and the record says so
    rc = main(["trial", *TINY, "--method", "lora", "--until-stable", "--tolerance", "0.00001", "--steps", "6",
               "--max-steps", "7", "--warmup", "1", "--no-checkpoint", "--out", str(tmp_path),
               "--price-per-hour", "2", "--dataset-tokens", "1000000"])
    out = capsys.readouterr().out
    assert rc == 0
    from gpuwork.measure.trial import TrialRecord

    record = TrialRecord.from_json(next(tmp_path.glob("*.json")))
    st = record.stability
    assert (st.converged, st.measured_steps, st.max_steps, st.min_steps, st.tolerance) == (False, 7, 7, 6, 0.00001)
    s = record.summary
    assert s.measured_steps == 7 and s.step_time_low_s <= s.median_step_time_s <= s.step_time_high_s
    assert re.search(r"\n  interval +95 %: median in .*order statistics", out)
    assert re.search(r"\n  stability +NOT reached: \+-.* after 7 measured steps \(cap 7", out)
    assert "range at the step time's 95 % interval: " in out and "cost range $" in out


def test_until_stable_flags_are_checked_in_one_line(capsys):
    assert main(["trial", *TINY, "--method", "lora", "--until-stable", "--ramp"]) == 2
    assert main(["trial", *TINY, "--method", "lora", "--until-stable", "--tolerance", "3"]) == 2
    assert main(["trial", *TINY, "--method", "lora", "--until-stable", "--max-steps", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("gpuwork: error: ") for line in err)
    assert "drop --ramp" in err[0] and "tolerance 3.0" in err[1] and "max_steps 4" in err[2]


# -- compare: the estimate for each record's plan beside what it measured ----------------------------------------


@pytest.fixture(scope="module")
def compare_records(tmp_path_factory):
    """A real CPU record and the same record recast as measured on an H100 (see test_calibration.as_gpu)."""
    import dataclasses

    from test_calibration import as_gpu

    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    out = tmp_path_factory.mktemp("compare")
    plan = TrainPlan(model="tiny-llama", method="lora", precision="bf16-mixed", seq_len=64, batch_size=2, lora_r=8)
    cpu = run_trial(plan, steps=2, warmup=1)
    gpu = as_gpu(cpu, median_s=0.5, allocated=3 * 2**30, reserved=4 * 2**30)
    gpu = dataclasses.replace(gpu, steps=tuple(s if s.is_warmup else dataclasses.replace(s, device_total_bytes=5 * 2**30)
                                               for s in gpu.steps))
    cpu.to_json(out / "cpu.json")
    gpu.to_json(out / "h100.json")
    return cpu, gpu, out


def test_compare_puts_the_estimate_beside_a_cpu_and_an_h100_record(compare_records, capsys):
    from gpuwork.measure.calibration import calibrate
    from gpuwork.plan import TrainPlan
    from gpuwork.sizing import estimate_memory, estimate_time

    cpu, gpu, out = compare_records
    assert main(["compare", str(out / "cpu.json"), str(out / "h100.json"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["estimate"]["memory"] is None and rows[0]["estimate"]["step_time"] is None
    assert rows[0]["estimate"]["notes"][0]["code"] == "compare.cpu_no_estimate"
    plan = TrainPlan.from_dict(calibrate(gpu).plan)
    est, te = estimate_memory(plan), estimate_time(plan, "h100_sxm")
    e = rows[1]["estimate"]
    assert e["gpu_id"] == "h100_sxm" and e["stack"] == "hf-trainer"
    assert e["memory"]["allocated"]["estimated_bytes"] == est.peak_allocated_bytes
    assert e["memory"]["reserved"]["error"] == pytest.approx(4 * 2**30 / est.peak_reserved_bytes - 1)
    assert e["memory"]["device"]["measured_bytes"] == 5 * 2**30
    assert e["memory"]["device"]["error"] == pytest.approx(5 * 2**30 / est.device_total_bytes - 1)
    assert e["step_time"]["error"] == pytest.approx(0.5 / te.step_time_s - 1)
    assert e["tokens_per_s"]["estimated"] == pytest.approx(te.tokens_per_s)
    assert rows[1]["calibration"]["time"]["stack"] == "hf-trainer" and "calibration_file" not in rows[1]

    assert main(["compare", str(out / "cpu.json"), str(out / "h100.json")]) == 0
    text = capsys.readouterr().out
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    error_pct = (0.5 / te.step_time_s - 1) * 100
    assert f"(+{error_pct:,.1f}%)" in lines["step time (median): measured / estimated (error)"]
    assert "hf-trainer / h100_sxm" in lines["estimate for: stack / GPU"]
    assert "column 1: CPU trial: there is no GPU estimate to compare" in text


def test_compare_saves_each_gpu_records_calibration_and_nothing_for_a_cpu(compare_records, tmp_path, monkeypatch,
                                                                          capsys):
    from gpuwork.measure.calibration import load_calibration

    _, gpu, out = compare_records
    path = tmp_path / "calibration.json"
    monkeypatch.setenv("GPUWORK_CALIBRATION", str(path))
    assert main(["compare", str(out / "cpu.json"), str(out / "h100.json"), "--save-calibration", "--lang", "ru"]) == 0
    text = capsys.readouterr().out
    assert "столбец 1: калибровка: сохранять нечего" in text and f"столбец 2: калибровка сохранена в {path}" in text
    assert "оценка для: стек / GPU" in text and "сравнивать не с чем" in text
    device = load_calibration(gpu.environment.device_name, path)
    assert len(device.entries) == 1 and device.entries[0].time.stack == "hf-trainer"
    assert device.entries[0].memory.measured_device_bytes == 5 * 2**30
