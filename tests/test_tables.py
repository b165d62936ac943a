"""gpuwork.present.tables: DataFrames built from real evaluated offers, real estimates and real trial records."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import gpuwork
from gpuwork.present.messages import render
from gpuwork.present.tables import (
    MEMORY_COLUMNS,
    OFFER_COLUMNS,
    RECORD_COLUMNS,
    memory_frame,
    offers_frame,
    records_frame,
)
from gpuwork.sizing import estimate_memory, evaluate_offers
from gpuwork.units import GIB, HOUR_S

LORA_8B = gpuwork.TrainPlan(model="llama-3.1-8b", method="lora")
FULL_8B = gpuwork.TrainPlan(model="llama-3.1-8b", method="full")


@pytest.fixture(scope="module")
def full_8b_offers() -> list:
    return evaluate_offers(FULL_8B)


def test_offers_frame_has_one_row_per_offer_in_ranking_order(full_8b_offers: list) -> None:
    frame = offers_frame(full_8b_offers)
    assert tuple(frame.columns) == OFFER_COLUMNS
    assert len(frame) == len(full_8b_offers) > 0
    assert frame["offer_id"].tolist() == [r.offer.offer_id for r in full_8b_offers]
    assert frame["fits"].tolist() == [r.fits for r in full_8b_offers]
    assert frame["price_per_gpu_hour_usd"].tolist() == [r.offer.price_per_gpu_hour for r in full_8b_offers]
    assert frame["gpus_billed"].tolist() == [r.billed_gpus for r in full_8b_offers]


def test_offers_frame_rows_carry_the_fit_time_and_cost(full_8b_offers: list) -> None:
    frame = offers_frame(full_8b_offers).set_index("offer_id")
    fitting = [r for r in full_8b_offers if r.fits]
    # full fine-tuning of 8B (~82 GiB per GPU with DDP) fits some offers only by sharding over several GPUs
    assert any(r.fit.plan.gpus > 1 and r.fit.plan.sharding.value != "ddp" for r in fitting)
    for r in fitting:
        row = frame.loc[r.offer.offer_id]
        assert row["gpus_used"] == r.fit.plan.gpus and row["sharding"] == r.fit.plan.sharding.value
        assert row["expected_hours"] == pytest.approx(r.expected_total_s / HOUR_S, rel=1e-12)
        assert row["expected_cost_usd"] == pytest.approx(r.expected_cost_usd, rel=1e-12)
        assert row["gpu"] == r.offer.gpu.display_name and row["mode"] == r.offer.mode.value
        assert row["reason"] == "; ".join(render(m, "en") for m in r.reasons) and row["reason"].startswith("fits")


def test_offers_frame_leaves_run_values_missing_where_the_run_does_not_fit(full_8b_offers: list) -> None:
    frame = offers_frame(full_8b_offers)
    misfits = frame[~frame["fits"]]
    assert len(misfits) > 0  # a 24 GB card cannot hold an 8B full fine-tune on one GPU
    assert misfits["gpus_used"].isna().all() and misfits["sharding"].isna().all()
    assert misfits["expected_hours"].isna().all() and misfits["expected_cost_usd"].isna().all()
    assert misfits["reason"].str.startswith("does not fit").all()
    in_russian = offers_frame(full_8b_offers, lang="ru")
    assert in_russian["reason"].tolist() == ["; ".join(render(m, "ru") for m in r.reasons) for r in full_8b_offers]
    assert in_russian.drop(columns="reason").equals(frame.drop(columns="reason"))
    assert (in_russian["reason"] != frame["reason"]).all()
    assert str(frame["gpus_used"].dtype) == "Int64" and frame["expected_cost_usd"].dtype == float


def test_offers_frame_sorts_like_a_data_scientist_expects() -> None:
    """The cheapest fitting LoRA offer by expected cost is the one evaluate_offers ranks first by cost."""
    results = evaluate_offers(LORA_8B, sort="cost")
    frame = offers_frame(results)
    cheapest = frame[frame["fits"]].sort_values("expected_cost_usd", kind="stable").iloc[0]
    best = min((r for r in results if r.fits), key=lambda r: r.expected_cost_usd)
    assert cheapest["offer_id"] == best.offer.offer_id
    assert cheapest["expected_cost_usd"] == best.expected_cost_usd


def test_memory_frame_terms_add_up_to_the_device_total() -> None:
    estimate = estimate_memory(LORA_8B)
    frame = memory_frame(estimate)
    assert tuple(frame.columns) == MEMORY_COLUMNS
    assert frame["term"].tolist() == list(estimate.breakdown)
    assert int(frame["bytes"].sum()) == estimate.device_total_bytes
    weights = frame.set_index("term").loc["weights"]
    # the frozen bf16 base: 8,030,261,248 parameters x 2 bytes, plus the fp32 LoRA adapters
    assert weights["bytes"] == estimate.breakdown["weights"] > 8_030_261_248 * 2
    assert (frame["GiB"] == frame["bytes"] / GIB).all()
    assert frame["bytes"].dtype == "int64"


def test_gpuwork_exports_the_frames_without_importing_pandas() -> None:
    assert {"offers_frame", "records_frame", "memory_frame"} <= set(gpuwork.__all__)
    frame = gpuwork.memory_frame(estimate_memory(LORA_8B))
    assert frame.equals(memory_frame(estimate_memory(LORA_8B)))
    code = "import sys, gpuwork; gpuwork.offers_frame; print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


def test_without_pandas_the_error_says_what_to_install() -> None:
    # sys.modules["pandas"] = None makes `import pandas` fail as it does where pandas is not installed
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import gpuwork\n"
            "try:\n"
            "    gpuwork.memory_frame(gpuwork.estimate_memory(gpuwork.TrainPlan()))\n"
            "except gpuwork.GpuworkError as exc:\n"
            "    print(exc)\n"
            "    print(exc.msg.code, exc.text('ru'))\n")
    result = subprocess.run([sys.executable, "-X", "utf8", "-c", code], capture_output=True, encoding="utf-8",
                            timeout=60)
    assert result.returncode == 0, result.stderr
    english, russian = result.stdout.splitlines()
    assert "pip install 'gpuwork[workbook]'" in english
    assert russian.startswith("error.tables.pandas для таблиц gpuwork нужен pandas, а он не установлен")


# -- trial records: real tiny fine-tunes on the CPU ------------------------------------------------------

TINY = gpuwork.TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=64, batch_size=2)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory, one_thread) -> tuple:
    """A trial that fits (written as JSON) and one that runs out of a 1-byte memory cap."""
    out = tmp_path_factory.mktemp("runs")
    ok = gpuwork.run_trial(TINY, steps=2, warmup=1, out_dir=out, checkpoint=False)
    capped = gpuwork.run_trial(TINY.replace(batch_size=1), steps=2, warmup=1, memory_cap_bytes=1, checkpoint=False)
    return ok, capped


@pytest.mark.slow
def test_records_frame_has_one_row_per_record(records: tuple) -> None:
    ok, capped = records
    frame = records_frame([ok, capped])
    assert tuple(frame.columns) == RECORD_COLUMNS and len(frame) == 2
    row = frame.iloc[0]
    assert (row["model"], row["method"], row["precision"]) == ("tiny-llama", "lora", "fp32")
    assert (row["seq_len"], row["micro_batch"], row["grad_accum"], row["processes"]) == (64, 2, 1, 1)
    assert row["device"] == "cpu" and row["fits"] and row["switches"] == ""  # a plan without execution switches
    assert row["median_step_time_s"] == ok.summary.median_step_time_s > 0
    assert row["tokens_per_s"] == ok.summary.tokens_per_s == pytest.approx(2 * 64 / ok.summary.median_step_time_s)
    assert row["peak_trial_memory_bytes"] == ok.peak_trial_memory_bytes > 0
    assert row["rss_peak_bytes"] == ok.summary.rss_peak_bytes > 0
    assert pd.isna(row["cuda_peak_allocated_bytes"]) and pd.isna(row["cuda_peak_reserved_bytes"])  # on CPU
    assert pd.isna(row["error"])


@pytest.mark.slow
def test_records_frame_keeps_a_trial_that_did_not_fit(records: tuple) -> None:
    _, capped = records
    row = records_frame([capped]).iloc[0]
    assert not row["fits"] and row["micro_batch"] == 1
    assert capped.summary is None and math.isnan(row["median_step_time_s"]) and math.isnan(row["tokens_per_s"])
    assert row["error"].startswith("memory cap exceeded") and row["peak_trial_memory_bytes"] > 1


@pytest.mark.slow
def test_records_frame_reads_record_files(records: tuple) -> None:
    ok, _ = records
    path = Path(ok.saved_to)
    from_file = records_frame([path, str(path)])
    from_object = records_frame([ok])
    assert len(from_file) == 2
    assert from_file.iloc[0].drop("saved_to").equals(from_object.iloc[0].drop("saved_to"))
    with pytest.raises(TypeError, match="TrialRecord objects or paths"):
        records_frame([42])
