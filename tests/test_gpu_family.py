"""Adding a GPU is a data change (docs/architecture.md, "Adding a GPU"): its gpus.csv row names the kernel family whose
measured attention rates apply; a row without one, or with a family the rates do not measure, is refused."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwork.errors import CatalogError
from gpuwork.estimate.steptime import attention_family, kernel_families
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.catalog import load_gpus
from gpuwork.facts.paths import bundled_data_dir
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan


def _data_with_card(tmp_path: Path, family: str) -> Path:
    """A copy of the bundled data with one more card: the H100 SXM's figures, rates and L2 copy rows under a new
    id."""
    data = tmp_path / "data"
    shutil.copytree(bundled_data_dir(), data)
    with (data / "gpus.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    card = {**next(r for r in rows if r["gpu_id"] == "h100_sxm"), "gpu_id": "newcard_x1",
            "display_name": "Newcard X1", "kernel_family": family}
    with (data / "gpus.csv").open("a", newline="", encoding="utf-8") as f:
        csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n").writerow(card)
    with (data / "rates.csv").open(newline="", encoding="utf-8") as f:
        rates = list(csv.DictReader(f))
    with (data / "rates.csv").open("a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rates[0]), lineterminator="\n")
        writer.writerows({**r, "gpu_id": "newcard_x1"} for r in rates if r["gpu_id"] == "h100_sxm")
    with (data / "l2_measurements.csv").open(newline="", encoding="utf-8") as f:
        l2 = list(csv.DictReader(f))
    with (data / "l2_measurements.csv").open("a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(l2[0]), lineterminator="\n")
        writer.writerows({**r, "gpu_id": "newcard_x1"} for r in l2 if r["gpu_id"] == "h100_sxm")
    return data


def _plan(data: Path, gpu: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUWORK_DATA": str(data)}
    return subprocess.run([sys.executable, "-m", "gpuwork", "plan", "--model", "llama-3.1-8b", "--method", "lora",
                           "--seq-len", "4096", "--gpu", gpu, "--json"],
                          capture_output=True, text=True, timeout=300, env=env)


def test_a_new_card_with_a_family_is_priced_with_that_family_end_to_end(tmp_path: Path) -> None:
    as_h100 = _plan(_data_with_card(tmp_path / "h100", "h100"), "newcard_x1")
    assert as_h100.returncode == 0, as_h100.stderr
    reference = _plan(bundled_data_dir(), "h100_sxm")
    assert reference.returncode == 0, reference.stderr
    step = json.loads(as_h100.stdout)["time"]["step_time_s"]
    assert step == pytest.approx(json.loads(reference.stdout)["time"]["step_time_s"], rel=1e-12)
    # the same figures under the A100's family: attention runs at the A100's share of the peak, a different step
    as_a100 = _plan(_data_with_card(tmp_path / "a100", "a100"), "newcard_x1")
    assert as_a100.returncode == 0, as_a100.stderr
    assert json.loads(as_a100.stdout)["time"]["step_time_s"] != pytest.approx(step, rel=1e-3)


def test_a_new_card_without_a_family_is_refused_by_name(tmp_path: Path) -> None:
    done = _plan(_data_with_card(tmp_path, ""), "newcard_x1")
    assert done.returncode != 0
    assert "kernel_family" in done.stderr and "Traceback" not in done.stderr


def test_a_card_built_in_code_without_a_family_or_with_an_unmeasured_one_is_refused() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, stack=Stack.HF_TRAINER)
    inputs = resolve(plan)
    gpu = inputs.gpu("h100_sxm")
    with pytest.raises(CatalogError) as none:
        estimate_time(plan, dataclasses.replace(gpu, kernel_family=""), inputs)
    assert none.value.msg.code == "error.rates.no_kernel_family"
    with pytest.raises(CatalogError) as unknown:
        estimate_time(plan, dataclasses.replace(gpu, kernel_family="volta"), inputs)
    assert unknown.value.msg.code == "error.rates.kernel_family"


def test_every_bundled_card_names_a_measured_family() -> None:
    rates = load_rates()
    families = kernel_families(rates)
    assert {"a100", "h100", "rtx4090"} <= set(families)
    for gpu in load_gpus().values():
        assert attention_family(gpu, rates) in families
