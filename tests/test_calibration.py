"""Tests for gpuwork.measure.calibration (trial vs estimates, the user file) and
gpuwork.measure.extrapolation (the whole run from a trial, billed per offer).

One real tiny trial runs on the CPU (a few seconds); GPU records are that record with its
environment and measurements replaced, so nothing here needs a GPU. The calibration file always
lives in tmp_path.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from gpuwork import sizing
from gpuwork.estimate.offers import billed_hours
from gpuwork.estimate.timing import DISK_WRITE_BYTES_S, TIME_MARGIN
from gpuwork.facts.catalog import Mode, load_offers, match_gpu_name
from gpuwork.measure.calibration import (
    ENV_CALIBRATION,
    CalibrationError,
    apply_memory_calibration,
    calibrate,
    default_calibration_path,
    load_calibration,
    save_calibration,
)
from gpuwork.measure.extrapolation import extrapolate
from gpuwork.measure.trial import TrialError, run_trial
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def cpu_record():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared 2-core box: two OpenMP threads stall each other
    try:
        plan = TrainPlan(model="tiny-llama", method="lora", precision="bf16-mixed", seq_len=64, batch_size=2, lora_r=8)
        return run_trial(plan, steps=2, warmup=1)
    finally:
        torch.set_num_threads(before)


def as_gpu(record, name=H100, total_mib=81559, median_s=0.5, allocated=3 * 2**30, reserved=4 * 2**30):
    """The CPU record as if measured on a GPU (the measurements replaced with chosen values)."""
    env = dataclasses.replace(record.environment, device="cuda:0", device_name=name,
                              device_total_bytes=total_mib * 2**20, gpu_count=1)
    summary = dataclasses.replace(record.summary, median_step_time_s=median_s,
                                  tokens_per_s=record.summary.tokens_per_step / median_s,
                                  cuda_peak_allocated_bytes=allocated, cuda_peak_reserved_bytes=reserved,
                                  rss_peak_bytes=None)
    return dataclasses.replace(record, environment=env, summary=summary)


# -- which catalog GPU: one matcher (gpuwork.facts.catalog.match_gpu_name) for every caller -------------------


@pytest.mark.parametrize(("name", "total_mib", "gpu_id"), [
    ("NVIDIA H100 80GB HBM3", 81559, "h100_sxm"), ("NVIDIA H200", 143771, "h200_sxm"),
    ("NVIDIA A100-SXM4", 81920, "a100_80_sxm"), ("NVIDIA A100", 0, None), ("NVIDIA Mystery 9000", 1000, None),
])
def test_calibration_and_extrapolation_name_the_same_catalog_gpu(cpu_record, name, total_mib, gpu_id):
    record = as_gpu(cpu_record, name=name, total_mib=total_mib)
    matched = match_gpu_name(name, record.environment.device_total_bytes)
    assert (matched.gpu_id if matched else None) == gpu_id
    assert calibrate(record).gpu_id == gpu_id
    ext = extrapolate(record)
    assert ext.catalog_gpu_id == gpu_id and {o.gpu_id for o in ext.offers} <= {gpu_id}
    assert (ext.offers != ()) == (gpu_id is not None)


# -- calibrate ----------------------------------------------------------------------------------------------


def test_cpu_record_gives_no_memory_or_time_factor(cpu_record):
    cal = calibrate(cpu_record)
    assert cal.device_kind == "cpu" and cal.memory is None and cal.time is None and cal.gpu_id is None
    assert [n.code for n in cal.notes] == ["calibration.cpu_memory", "calibration.cpu_time",
                                           "calibration.precision_differs"]  # bf16-mixed asked, fp32 on CPU
    assert "RSS" in render(cal.notes[0]) and "not a GPU quantity" in render(cal.notes[0])
    assert "RSS процесса" in render(cal.notes[0], "ru")
    assert cal.memory_factors is None and cal.time_calibration() is None


def test_gpu_record_memory_factors_are_measured_over_estimated(cpu_record):
    record = as_gpu(cpu_record)
    before = estimate_memory(TrainPlan.from_dict(cpu_record.protocol.plan)).as_dict()
    cal = calibrate(record)
    est = estimate_memory(TrainPlan.from_dict(cal.plan))
    assert cal.gpu_id == "h100_sxm" and cal.device_kind == "cuda"
    assert cal.memory.measured_allocated_bytes == 3 * 2**30
    assert cal.memory.allocated_factor == pytest.approx(3 * 2**30 / est.peak_allocated_bytes)
    assert cal.memory.reserved_factor == pytest.approx(4 * 2**30 / est.peak_reserved_bytes)
    assert estimate_memory(TrainPlan.from_dict(cpu_record.protocol.plan)).as_dict() == before  # untouched


def test_time_calibration_reproduces_the_measured_step(cpu_record):
    from gpuwork.sizing import estimate_time

    record = as_gpu(cpu_record, median_s=0.5)
    cal = calibrate(record)
    t = cal.time
    assert t.gpu_id == "h100_sxm" and t.method_group == "lora" and t.precision == "bf16-mixed"
    assert t.measured_step_time_s == 0.5 and t.step_time_factor == pytest.approx(0.5 / t.estimated_step_time_s)
    expected_mfu = t.model_flops_per_token * record.summary.tokens_per_s / t.peak_flops_per_gpu
    assert t.measured_mfu == pytest.approx(expected_mfu)
    plan = TrainPlan.from_dict(cal.plan)
    redone = estimate_time(plan, "h100_sxm", calibration=cal.time_calibration())
    assert redone.step_time_s == pytest.approx(0.5, rel=1e-6)
    assert redone.mfu.source == "calibration"


def test_unknown_gpu_and_failed_trials(cpu_record):
    cal = calibrate(as_gpu(cpu_record, name="NVIDIA Mystery 9000"))
    assert cal.memory is not None and cal.time is None and cal.gpu_id is None
    assert msg("calibration.unknown_gpu", device="NVIDIA Mystery 9000") in cal.notes
    failed = dataclasses.replace(cpu_record, fits=False, summary=None)
    with pytest.raises(CalibrationError, match="nothing to calibrate"):
        calibrate(failed)


# -- the user file -------------------------------------------------------------------------------------------


def test_save_and_load_by_device_in_the_given_file_only(cpu_record, tmp_path):
    path = tmp_path / "cal" / "calibration.json"
    first = calibrate(as_gpu(cpu_record, allocated=3 * 2**30))
    second = calibrate(as_gpu(cpu_record, allocated=5 * 2**30))
    other = calibrate(as_gpu(cpu_record, name="NVIDIA L40S", total_mib=46068))
    for cal in (first, second, other):
        assert save_calibration(cal, path) == path
    assert sorted(p.name for p in path.parent.iterdir()) == ["calibration.json"]  # no temporary file left
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and sorted(data["devices"]) == [H100, "NVIDIA L40S"]
    assert data["devices"][H100]["gpu_id"] == "h100_sxm" and len(data["devices"][H100]["entries"]) == 2
    device = load_calibration(H100, path)
    assert device.entries == (first, second)
    factors = device.memory_factors
    assert factors["allocated"] == pytest.approx((first.memory.allocated_factor + second.memory.allocated_factor) / 2)
    assert factors["trials"] == 2
    plan = TrainPlan.from_dict(second.plan)
    assert device.time_calibration(plan) == second.time_calibration()
    assert device.time_calibration(plan.replace(method="full")) is None  # another method group
    assert load_calibration("NVIDIA B200", path) is None
    assert load_calibration(H100, tmp_path / "absent.json") is None


def test_default_path_is_user_level_and_env_overrides_it(cpu_record, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_CALIBRATION, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_calibration_path() == tmp_path / "home" / ".config" / "gpuwork" / "calibration.json"
    monkeypatch.setenv(ENV_CALIBRATION, str(tmp_path / "env.json"))
    assert default_calibration_path() == tmp_path / "env.json"
    saved = save_calibration(calibrate(as_gpu(cpu_record)))
    assert saved == tmp_path / "env.json" and load_calibration(H100) is not None
    assert not (tmp_path / "home").exists()


def test_a_broken_file_is_named_not_overwritten(tmp_path, cpu_record):
    path = tmp_path / "calibration.json"
    path.write_text("{not json")
    with pytest.raises(CalibrationError, match="not valid JSON"):
        load_calibration(H100, path)
    with pytest.raises(CalibrationError, match="not valid JSON"):
        save_calibration(calibrate(as_gpu(cpu_record)), path)
    assert path.read_text() == "{not json"
    path.write_text(json.dumps({"devices": {}, "schema_version": 99}))
    with pytest.raises(CalibrationError, match="schema"):
        load_calibration(H100, path)


def test_memory_calibration_is_applied_only_when_asked(cpu_record):
    est = estimate_memory(TrainPlan(model="llama-3.2-1b", method="lora", seq_len=1024))
    off = apply_memory_calibration(est, None)
    assert not off["calibrated"] and off["peak_reserved_bytes"] == est.peak_reserved_bytes
    on = apply_memory_calibration(est, {"allocated": 1.1, "reserved": 1.2})
    assert on["calibrated"] and on["peak_allocated_bytes"] == round(est.peak_allocated_bytes * 1.1)
    assert on["peak_reserved_bytes"] == round(est.peak_reserved_bytes * 1.2)
    assert on["device_total_bytes"] - on["peak_reserved_bytes"] == est.device_total_bytes - est.peak_reserved_bytes
    assert on["estimated"]["peak_allocated_bytes"] == est.peak_allocated_bytes  # the estimate is shown too
    cal = calibrate(as_gpu(cpu_record))
    assert apply_memory_calibration(est, cal)["factors"]["reserved"] == pytest.approx(cal.memory.reserved_factor)
    with pytest.raises(CalibrationError, match="above 0"):
        apply_memory_calibration(est, {"allocated": 0, "reserved": 1.0})


# -- extrapolation (gpuwork.measure.extrapolation.extrapolate) -------------------------------------------------------


def test_extrapolation_formula(cpu_record):
    record = as_gpu(cpu_record, median_s=0.5)
    tokens = record.summary.tokens_per_step  # 128
    plan = record.plan.replace(dataset_tokens=tokens * 10_000, epochs=1.0, checkpoint_every_steps=500,
                               eval_fraction=0.05)
    ext = extrapolate(record, plan, checkpoint_write_bytes_s=1e6, margin=0.1, price_per_gpu_hour=2.0, offers=[])
    assert ext.steps == 10_000 and ext.train_s == pytest.approx(5_000.0)
    assert ext.eval_s == pytest.approx(250.0)
    assert ext.checkpoints == 20 and ext.checkpoint_bytes == record.checkpoint.bytes_on_disk
    assert ext.checkpoint_s == pytest.approx(20 * ext.checkpoint_bytes / 1e6)
    assert ext.margin_s == pytest.approx(0.1 * (5_000 + 250 + ext.checkpoint_s))
    assert ext.total_s == pytest.approx(1.1 * (5_250 + ext.checkpoint_s))
    assert ext.cost == pytest.approx(ext.total_s / 3600 * 2.0)
    assert ext.checkpoint_bytes_measured and ext.catalog_gpu_id == "h100_sxm"
    default = extrapolate(record, plan, offers=[])
    assert default.margin == TIME_MARGIN and default.eval_fraction == 0.05 and default.cost is None
    assert default.checkpoint_write_bytes_s == DISK_WRITE_BYTES_S  # the estimator's margin and disk speed
    assert extrapolate(record, plan, eval_fraction=0.0, offers=[]).eval_s == 0.0
    four = extrapolate(record, plan.replace(gpus=4), offers=[])
    assert four.steps == 2_500 and msg("extrapolation.linear_scaling", measured=1, gpus=4) in four.notes
    assert "linear scaling" in render(four.notes[-1])


def test_extrapolation_prices_the_same_gpus_offers(cpu_record):
    record = as_gpu(cpu_record, median_s=0.5)
    plan = record.plan.replace(dataset_tokens=10**8)
    ext = extrapolate(record, plan)
    expected = {o.offer_id: o for o in load_offers() if o.gpu_id == "h100_sxm"}
    assert expected and len(ext.offers) == len(expected)
    assert ext.catalog_gpu_name == "H100 SXM"
    assert [o.cost for o in ext.offers] == sorted(o.cost for o in ext.offers)
    for o in ext.offers:
        offer = expected[o.offer_id]
        assert o.gpu_id == "h100_sxm"
        assert o.billed_hours == billed_hours(ext.total_hours, offer)
        assert o.billed_gpus == offer.gpus_per_node  # one GPU measured, the node rented whole
        assert o.cost == pytest.approx(o.billed_hours * o.billed_gpus * o.price_per_gpu_hour)
        whole = msg("extrapolation.offer.whole_node", billed_gpus=offer.gpus_per_node, gpus=1)
        assert (whole in o.notes) == (offer.gpus_per_node > 1)
        assert (msg("extrapolation.offer.interruptible") in o.notes) == (offer.mode is Mode.INTERRUPTIBLE)
    cpu = extrapolate(cpu_record, cpu_record.plan)
    assert cpu.offers == () and msg("extrapolation.cpu") in cpu.notes
    assert math.isfinite(cpu.total_s)


def test_extrapolation_refuses_another_shape_or_a_failed_trial(cpu_record):
    with pytest.raises(TrialError, match="seq_len"):
        extrapolate(cpu_record, cpu_record.plan.replace(seq_len=128))
    with pytest.raises(TrialError, match="nothing to extrapolate"):
        extrapolate(dataclasses.replace(cpu_record, fits=False, summary=None))
    with pytest.raises(TrialError, match="eval_fraction"):
        extrapolate(cpu_record, eval_fraction=1.5)


def test_a_reserved_offer_bills_whole_periods_in_the_trial_and_in_offers(cpu_record):
    """One billing rule: a 1,000-hour run on a 720-hour reserved offer pays 1,440 hours, in the trial's
    extrapolation and in the offers ranking alike."""
    offer = next(o for o in load_offers() if o.offer_id == "nba-l40s-1x-res1m")
    assert offer.mode is Mode.RESERVED and offer.min_rental_hours == 720 and offer.gpus_per_node == 1
    assert billed_hours(1000.0, offer) == 1440.0

    record = as_gpu(cpu_record, name="NVIDIA L40S", total_mib=46068, median_s=3600.0)  # an hour a step
    tokens = record.summary.tokens_per_step
    plan = record.plan.replace(dataset_tokens=tokens * 1000, epochs=1.0, eval_fraction=0.0,
                               checkpoint_every_steps=2000)
    ext = extrapolate(record, plan, margin=0.0)
    assert ext.steps == 1000 and ext.checkpoints == 0 and ext.total_hours == pytest.approx(1000.0)
    priced = {o.offer_id: o for o in ext.offers}[offer.offer_id]
    assert priced.billed_hours == 1440.0 and priced.billed_gpus == 1
    assert priced.cost == pytest.approx(1440 * offer.price_per_gpu_hour)

    base = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=1024, dataset_tokens=10**8)
    probe = sizing.evaluate_offers(base, [offer])[0]
    run = base.replace(dataset_tokens=round(base.dataset_tokens * 1000 * 3600 / probe.time.total_s))
    result = sizing.evaluate_offers(run, [offer])[0]
    assert result.fits and result.billed_gpus == 1
    assert 990 < result.time.total_s / 3600 < 1010  # a 1,000-hour run
    assert result.billed_cost_usd == pytest.approx(1440 * offer.price_per_gpu_hour)


# -- the estimate beside what a record measured (gpuwork compare) ------------------------------------------------


def _with_device_totals(record, device_bytes):
    """The record with each measured step's device total (what nvidia-smi shows) set."""
    steps = tuple(s if s.is_warmup else dataclasses.replace(s, device_total_bytes=device_bytes) for s in record.steps)
    return dataclasses.replace(record, steps=steps)


def test_beside_on_cpu_says_there_is_no_gpu_estimate(cpu_record):
    from gpuwork.measure.calibration import beside

    b = beside(cpu_record)
    assert b["device_kind"] == "cpu" and b["memory"] is None and b["step_time"] is None and b["tokens_per_s"] is None
    assert [n.code for n in b["notes"]] == ["compare.cpu_no_estimate", "calibration.precision_differs"]
    assert "no GPU estimate to compare" in render(b["notes"][0])
    assert "оценки для GPU нет" in render(b["notes"][0], "ru")


def test_beside_on_an_h100_gives_each_total_step_and_speed_with_its_error(cpu_record):
    from gpuwork.measure.calibration import beside
    from gpuwork.sizing import estimate_time

    record = _with_device_totals(as_gpu(cpu_record, median_s=0.5, allocated=3 * 2**30, reserved=4 * 2**30),
                                 5 * 2**30)
    b = beside(record)
    plan = TrainPlan.from_dict(calibrate(record).plan)
    est, te = estimate_memory(plan), estimate_time(plan, "h100_sxm")
    assert b["gpu_id"] == "h100_sxm" and b["stack"] == "hf-trainer"
    m = b["memory"]
    assert m["allocated"] == {"measured_bytes": 3 * 2**30, "estimated_bytes": est.peak_allocated_bytes,
                              "error": pytest.approx(3 * 2**30 / est.peak_allocated_bytes - 1)}
    assert m["reserved"]["error"] == pytest.approx(4 * 2**30 / est.peak_reserved_bytes - 1)
    assert m["device"] == {"measured_bytes": 5 * 2**30, "estimated_bytes": est.device_total_bytes,
                           "error": pytest.approx(5 * 2**30 / est.device_total_bytes - 1)}
    assert b["step_time"]["measured_s"] == 0.5 and b["step_time"]["estimated_s"] == pytest.approx(te.step_time_s)
    assert b["step_time"]["error"] == pytest.approx(0.5 / te.step_time_s - 1)
    tokens = record.summary.tokens_per_step / 0.5
    assert b["tokens_per_s"]["measured"] == pytest.approx(tokens)
    assert b["tokens_per_s"]["error"] == pytest.approx(tokens / te.tokens_per_s - 1)
    # a record without device totals compares the two allocator totals only
    assert beside(as_gpu(cpu_record))["memory"]["device"] is None


def test_time_calibration_applies_to_the_same_stack_only(cpu_record, tmp_path):
    path = tmp_path / "calibration.json"
    cal = calibrate(as_gpu(cpu_record))
    assert cal.time.stack == "hf-trainer"
    save_calibration(cal, path)
    device = load_calibration(H100, path)
    plan = TrainPlan.from_dict(cal.plan)
    assert device.time_calibration(plan) == cal.time_calibration()
    assert device.time_calibration(plan.replace(stack="unsloth")) is None  # measured under another stack
    # an entry saved before stacks were kept takes its plan's stack
    data = json.loads(path.read_text())
    del data["devices"][H100]["entries"][0]["time"]["stack"]
    data["devices"][H100]["entries"][0]["plan"]["stack"] = "unsloth"
    path.write_text(json.dumps(data))
    old = load_calibration(H100, path)
    assert old.time_calibration(plan) is None and old.time_calibration(plan.replace(stack="unsloth")) is not None
