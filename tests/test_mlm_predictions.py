"""A masked-LM head that predicts only the masked positions (TrainPlan.mlm_predictions, BERT's
max_predictions_per_seq): the output layer and its loss run on those rows, the rest of the step is unchanged."""

from __future__ import annotations

import argparse

import pytest

from gpuwork.errors import PlanError, TraceError
from gpuwork.estimate.memory import memory_dtypes
from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.steptime import stack_kernels
from gpuwork.facts.resolve import resolve
from gpuwork.measure.heldout import heldout_sets
from gpuwork.measure.trace import trace_memory
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory, estimate_time

BERT = dict(model="bert-large-uncased", task="masked-lm", method="scratch", precision="fp16-mixed", seq_len=128,
            batch_size=256, grad_accum=2, attention="eager", stack="framework")


def _ops(plan: TrainPlan) -> dict[str, object]:
    inputs = resolve(plan)
    return {op.name: op for op in step_ops(plan, inputs.spec, stack_kernels(inputs.rates.stacks[plan.stack]))}


def test_the_output_layer_runs_on_the_masked_rows_only():
    every, masked = _ops(TrainPlan(**BERT)), _ops(TrainPlan(**BERT, mlm_predictions=20))
    # 256 sequences x 20 positions = 5,120 rows instead of 256 x 128 = 32,768; vocabulary 30,522, hidden 1,024
    assert every["output layer"].m == 32_768 and masked["output layer"].m == 5_120
    assert masked["output layer"].flops == 2 * 5_120 * 30_522 * 1_024
    assert masked["log_softmax + nll"].bytes == every["log_softmax + nll"].bytes * 20 / 128
    # the gather reads and writes the masked rows (fp16 stream); its backward zeroes the whole output and scatters
    assert masked["masked positions gather"].bytes == 5_120 * 1_024 * 2 * 2
    assert masked["masked positions gather backward (zeros, scatter)"].bytes == (32_768 + 2 * 5_120) * 1_024 * 2
    assert "masked positions gather" not in every
    # the blocks do not change
    assert masked["output.dense"] == every["output.dense"]


def test_the_masked_head_makes_the_step_shorter_by_about_the_heads_share():
    every = estimate_time(TrainPlan(**BERT), "a100_80_sxm").step_time_s
    masked = estimate_time(TrainPlan(**BERT, mlm_predictions=20), "a100_80_sxm").step_time_s
    assert 0.88 * every < masked < 0.97 * every


def test_more_predictions_than_tokens_are_cut_to_the_sequence():
    ops = _ops(TrainPlan(**BERT, mlm_predictions=1_000))
    assert ops["output layer"].m == 256 * 128


@pytest.mark.parametrize("task", ["causal-lm", "seq-cls"])
def test_other_heads_ignore_the_field(task):
    plan = TrainPlan(**{**BERT, "model": "gpt2", "task": task, "method": "full"})
    assert list(_ops(plan.replace(mlm_predictions=20))) == list(_ops(plan))
    assert _ops(plan.replace(mlm_predictions=20))["output layer"] == _ops(plan)["output layer"]


def test_the_field_is_validated_and_reaches_the_plan_from_the_cli():
    with pytest.raises(PlanError) as caught:
        TrainPlan(mlm_predictions=0)
    assert caught.value.field == "mlm_predictions"
    with pytest.raises(PlanError):
        TrainPlan(mlm_predictions=2.5)
    assert TrainPlan.from_dict({"mlm_predictions": 80}).mlm_predictions == 80
    from gpuwork.cli.args import plan_arguments, plan_from_args

    parser = argparse.ArgumentParser()
    plan_arguments(parser)
    assert plan_from_args(parser.parse_args(["--mlm-predictions", "20"])).mlm_predictions == 20
    assert plan_from_args(parser.parse_args([])).mlm_predictions is None


def test_the_dle_pre_training_cases_are_re_read_with_their_masked_positions():
    found = {}
    for held in heldout_sets():
        for case in held.cases:
            if case.source_id.startswith("nvidia-dle-bert") and "pre-training" in case.name:
                plan = case.as_reread().plan
                found.setdefault((case.source_id, plan.seq_len), set()).add(plan.mlm_predictions)
    assert found == {
        ("nvidia-dle-bert-pytorch", 128): {19}, ("nvidia-dle-bert-paddle", 128): {19},
        # LDDL-binned phase 2: its lengths are not the plan's 512, so it is not re-read (docs/time_misses.md)
        ("nvidia-dle-bert-pytorch", 512): {None},
        ("nvidia-dle-bert-tf1", 128): {20}, ("nvidia-dle-bert-tf1", 512): {80},
        ("nvidia-dle-bert-tf2", 128): {20}, ("nvidia-dle-bert-tf2", 512): {80}}


# -- memory: the head's saved tensors, logits and loss buffers on the gathered rows ---------------------------

def test_the_masked_head_keeps_its_tensors_for_the_masked_rows_only():
    plan = TrainPlan(**{**BERT, "batch_size": 32})
    every, masked = estimate_memory(plan), estimate_memory(plan.replace(mlm_predictions=20))
    spec, dt = resolve(plan).spec, memory_dtypes(plan)
    h, vocab = spec.hidden_size, spec.vocab_size
    # per row: the decoder's input (the stream), the transform's dense input and output, GELU output and LayerNorm
    # input, LayerNorm's fp32 mean and rstd, and the 16-bit log_softmax output
    saved = dt.stream * h + 4 * dt.linear_out * h + 8 + 2 * vocab
    loss_backward = 2 * 2 * vocab  # the nll and log_softmax gradients, vocabulary-wide
    fewer = 32 * (128 - 20)
    drop = {phase: every.phase_peaks[phase] - masked.phase_peaks[phase] for phase in every.phase_peaks}
    assert drop["forward"] == saved * fewer
    assert drop["loss backward"] == (saved + loss_backward) * fewer
    assert drop["block backward"] == (saved - 2 * vocab) * fewer  # log_softmax's output is gone by then
    assert drop["backward end"] == drop["optimizer step"] == 0
    assert masked.peak_allocated_bytes < every.peak_allocated_bytes


def test_memory_without_the_field_or_with_every_position_is_unchanged():
    plan = TrainPlan(**{**BERT, "batch_size": 32})
    every = estimate_memory(plan)
    assert estimate_memory(plan.replace(mlm_predictions=128)).phase_peaks == every.phase_peaks
    assert estimate_memory(plan.replace(mlm_predictions=1_000)).peak_reserved_bytes == every.peak_reserved_bytes
    gpt2 = TrainPlan(**{**BERT, "model": "gpt2", "task": "causal-lm", "method": "full", "batch_size": 8})
    assert estimate_memory(gpt2.replace(mlm_predictions=20)).phase_peaks == estimate_memory(gpt2).phase_peaks


def test_the_trace_refuses_a_gathered_masked_head():
    with pytest.raises(TraceError) as caught:
        trace_memory(TrainPlan(model="tiny-bert", method="full", seq_len=64, mlm_predictions=8))
    assert caught.value.msg.code == "error.trace.mlm_predictions"


# -- the app: a field shown for masked-LM models only ----------------------------------------------------------

def test_the_sizing_form_sets_the_field_for_masked_lm_models_only():
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm({"model": "llama-3.2-1b", "method": "full", "seq_len": 128})
    field = form.controls["mlm_predictions"]
    assert field.layout.display == "none" and field.value == ""
    field.value = "20"  # hidden: a causal LM does not read it
    assert form.error is None and form.plan.mlm_predictions is None
    form.controls["model"].value = "bert-base-uncased"
    assert field.layout.display is None and form.plan.mlm_predictions == 20
    assert "mlm_predictions=20" in form.share.value
    field.value = ""
    assert form.error is None and form.plan.mlm_predictions is None
    field.value = "0"  # the plan's bound, as the CLI says it, under the field's label
    assert form.error == "Masked positions per sequence: 0 is too small: use a whole number >= 1"
    form.set_lang("ru")
    assert field.description == "Маскированных позиций в последовательности" and "BERT" in field.placeholder
    assert form.error.startswith("Маскированных позиций в последовательности:")
    taken = SizingForm(TrainPlan(model="bert-base-uncased", method="full", seq_len=128, mlm_predictions=19))
    assert taken.controls["mlm_predictions"].value == "19" and taken.plan.mlm_predictions == 19
