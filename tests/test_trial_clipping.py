"""The measured trial clips as the plan says (gpuwork.measure.clipping): grad_clip on -> clip_grad_norm_ at 1.0
(or the caller's norm), off -> no call and no gradient norm; records carry the absent norm as None.

Real tiny fine-tunes on CPU; clip_grad_norm_ is counted at its one seam (``torch.nn.utils.clip_grad_norm_``,
looked up by the trial step at each call)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from gpuwork.cli.trial import format_trial
from gpuwork.measure.clipping import MAX_GRAD_NORM, clip_norm, clipping_note
from gpuwork.measure.trial import TrialError, TrialRecord, run_trial
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render

STEPS, WARMUP = 2, 1


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here trains: one torch thread (see conftest)."""


def tiny(**changes) -> TrainPlan:
    base = dict(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2)
    base.update(changes)
    return TrainPlan(**base)


@pytest.fixture
def clip_calls(monkeypatch):
    """Every clip_grad_norm_ call's max_norm, and the total gradient norm just after it clipped."""
    real = torch.nn.utils.clip_grad_norm_
    calls: list[tuple[float, float]] = []

    def counted(parameters, max_norm, *args, **kwargs):
        params = list(parameters)
        norm = real(params, max_norm, *args, **kwargs)
        after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params if p.grad is not None]))
        calls.append((float(max_norm), float(after)))
        return norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", counted)
    return calls


def test_a_plan_that_never_clips_makes_no_call_and_records_no_norm(clip_calls, tmp_path):
    record = run_trial(tiny(grad_clip=False), steps=STEPS, warmup=WARMUP, checkpoint=False, out_dir=tmp_path)
    assert record.fits, record.error
    assert clip_calls == []
    assert [m.grad_norm for m in record.steps] == [None] * (STEPS + WARMUP)
    assert record.protocol.max_grad_norm is None
    assert all(math.isfinite(m.loss) for m in record.steps)
    again = TrialRecord.from_json(Path(record.saved_to))  # the absent norm survives the file (steps file included)
    assert [m.grad_norm for m in again.steps] == [None] * (STEPS + WARMUP)
    assert clipping_note(again).code == "trial.clip.off"
    en, ru = format_trial(again, "en"), format_trial(again, "ru")
    assert "clipping" in en and "measured no gradient norm" in en
    assert "клиппинг" in ru and "не измерял норму градиента" in ru


def test_a_plan_that_clips_clips_every_step_at_one(clip_calls):
    record = run_trial(tiny(), steps=STEPS, warmup=WARMUP, checkpoint=False)
    assert record.fits, record.error
    assert [limit for limit, _ in clip_calls] == [MAX_GRAD_NORM] * (STEPS + WARMUP)
    assert all(after <= MAX_GRAD_NORM * (1 + 1e-5) for _, after in clip_calls)
    # a randomly initialised model's first gradients are far above 1: the call really clipped
    assert record.steps[0].grad_norm > MAX_GRAD_NORM
    assert all(math.isfinite(m.grad_norm) for m in record.steps)
    assert record.protocol.max_grad_norm == MAX_GRAD_NORM
    note = clipping_note(record)
    assert note.code == "trial.clip.on" and note["last"].code == "trial.clip.last"
    assert "at max norm 1;" in render(note, "en")


def test_a_given_norm_wins_over_the_default_when_the_plan_clips(clip_calls):
    record = run_trial(tiny(), steps=1, warmup=0, checkpoint=False, max_grad_norm=0.25)
    assert [limit for limit, _ in clip_calls] == [0.25]
    assert record.protocol.max_grad_norm == 0.25


def test_a_norm_given_for_a_plan_that_never_clips_is_refused_naming_both():
    with pytest.raises(TrialError) as caught:
        run_trial(tiny(grad_clip=False), steps=1, warmup=0, checkpoint=False, max_grad_norm=1.0)
    assert caught.value.msg.code == "error.trial.max_grad_norm_unclipped"
    for lang in ("en", "ru"):
        text = render(caught.value.msg, lang)
        assert "max_grad_norm=1.0" in text and "grad_clip" in text


@pytest.mark.parametrize("norm", [0.0, -1.0, math.inf, math.nan, True, "1"])
def test_a_norm_that_is_not_positive_and_finite_is_refused(norm):
    with pytest.raises(TrialError) as caught:
        clip_norm(tiny(), norm)
    assert caught.value.msg.code == "error.trial.max_grad_norm"


def test_the_norm_follows_the_plan():
    assert clip_norm(tiny(), None) == 1.0
    assert clip_norm(tiny(grad_clip=False), None) is None
    assert clip_norm(tiny(), 2) == 2.0


def test_an_older_record_with_a_norm_on_every_step_still_reads(clip_calls):
    record = run_trial(tiny(), steps=1, warmup=0, checkpoint=False)
    data = json.loads(record.to_json())
    assert isinstance(data["steps"][0]["grad_norm"], float)
    again = TrialRecord.from_json(json.dumps(data))
    assert again.steps[0].grad_norm == record.steps[0].grad_norm
    data["steps"][0]["grad_norm"] = None  # a run that never clipped, clipping recorded as a norm of None
    data["protocol"]["max_grad_norm"] = None
    assert TrialRecord.from_json(json.dumps(data)).steps[0].grad_norm is None
    stripped = dataclasses.replace(record, steps=())
    assert clipping_note(stripped)["last"].code == "trial.clip.no_norm"


def test_the_cli_trial_of_a_no_grad_clip_plan_never_clips(clip_calls, tmp_path, capsys):
    from gpuwork.cli import main

    rc = main(["trial", "--model", "tiny-llama", "--method", "full", "--precision", "fp32", "--seq-len", "32",
               "--batch-size", "2", "--no-progress", "--steps", "1", "--warmup", "0", "--no-grad-clip",
               "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    assert clip_calls == []
    assert "measured no gradient norm" in capsys.readouterr().out
