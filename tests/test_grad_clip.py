"""TrainPlan.grad_clip: whether the run calls clip_grad_norm_ before each update (docs/grad_clip.md). Off removes
the one clipping op of the step and prices nothing else differently; the config readers map each framework's own
max-norm key, with its default, to it."""

from __future__ import annotations

import json

import pytest

from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.steptime import price_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.configs import import_configs
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.facts.spec import count_params
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory, estimate_time
from gpuwork.ui.sizing import SizingForm

PLAN = TrainPlan(model="qwen2.5-0.5b", method="full", precision="bf16-mixed", seq_len=512, batch_size=4)
OFF = PLAN.replace(grad_clip=False)
CLIP = "gradient clipping"


def _names(plan: TrainPlan) -> list[str]:
    return [op.name for op in step_ops(plan, get_spec(plan.model))]


def test_the_clipping_op_is_there_only_when_the_plan_clips():
    on, off = _names(PLAN), _names(OFF)
    assert on.count(CLIP) == 1 and CLIP not in off
    assert [n for n in on if n != CLIP] == off
    assert TrainPlan().grad_clip is True  # the default keeps every earlier plan's figures


def test_the_op_reads_and_writes_the_gradients_three_times():
    op = next(o for o in step_ops(PLAN, get_spec(PLAN.model)) if o.name == CLIP)
    n = count_params(get_spec(PLAN.model), PLAN).trainable
    assert op.bytes * op.count == pytest.approx(n * 3 * 4)  # fp32 gradients of a mixed-precision full fine-tune


def test_the_step_differs_by_exactly_the_ops_price():
    gpu, rates = get_gpu("h100_sxm"), load_rates()
    stack = rates.stacks[PLAN.stack]
    on_ops = step_ops(PLAN, get_spec(PLAN.model))
    clip = tuple(o for o in on_ops if o.name == CLIP)
    on = price_ops(on_ops, gpu, rates.device(gpu.gpu_id), rates, stack)
    off = price_ops(step_ops(OFF, get_spec(OFF.model)), gpu, rates.device(gpu.gpu_id), rates, stack)
    alone = price_ops(clip, gpu, rates.device(gpu.gpu_id), rates, stack)
    assert alone.total_s > 0
    assert on.total_s - off.total_s == pytest.approx(alone.total_s, rel=1e-9)
    assert on.launches - off.launches == clip[0].launches * clip[0].count
    t_on, t_off = estimate_time(PLAN, gpu), estimate_time(OFF, gpu)
    assert t_on.step_time_s - t_off.step_time_s == pytest.approx(alone.total_s, rel=1e-6)
    for kind in ("matmul", "attention", "memory"):
        assert t_on.breakdown[kind] == pytest.approx(t_off.breakdown[kind])


def test_memory_does_not_read_it():
    on, off = estimate_memory(PLAN), estimate_memory(OFF)
    assert (on.peak_reserved_bytes, on.breakdown) == (off.peak_reserved_bytes, off.breakdown)


def test_a_non_bool_is_refused_in_both_languages():
    with pytest.raises(PlanError) as err:
        TrainPlan(grad_clip="no")
    assert err.value.field == "grad_clip"
    assert "grad_clip" in err.value.text("en") and "grad_clip" in err.value.text("ru")


def test_plan_file_round_trip_and_cli_flag():
    assert TrainPlan.from_dict(json.loads(json.dumps(OFF.as_dict()))) == OFF
    assert OFF.as_dict()["grad_clip"] is False
    parser = build_parser()
    assert plan_from_args(parser.parse_args(["estimate", "--no-grad-clip"])).grad_clip is False
    assert plan_from_args(parser.parse_args(["estimate"])).grad_clip is True


def test_the_form_sets_it_and_labels_it_in_both_languages():
    form = SizingForm({"model": "llama-3.2-1b", "method": "full"})
    box = form.controls["grad_clip"]
    assert box.value is True and form.plan.grad_clip is True
    box.value = False
    assert form.error is None and form.plan.grad_clip is False
    assert box.description == "Gradient clipping" and "clip_grad_norm_" in box.tooltip
    ru = SizingForm({"model": "llama-3.2-1b", "method": "full", "grad_clip": False}, lang="ru")
    assert ru.controls["grad_clip"].value is False
    assert ru.controls["grad_clip"].description == "Ограничение нормы градиента"


def test_the_rental_request_says_whether_clipping_was_priced():
    from gpuwork.present.request import rental_request

    assert rental_request(OFF, lang="en").fields["suggested"]["grad_clip"] is False
    assert rental_request(PLAN, lang="en").fields["suggested"]["grad_clip"] is True


def _read(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return import_configs([str(path)])


@pytest.mark.parametrize(("norm", "clips"), [("0", False), ("0.0", False), ("1.0", True), ("0.3", True)])
def test_hf_max_grad_norm_decides(tmp_path, norm, clips):
    got = _read(tmp_path, "args.json", f'{{"per_device_train_batch_size": 2, "max_grad_norm": {norm}}}')
    assert got.fields["grad_clip"] is clips


def test_hf_unset_takes_trainers_default_and_says_so(tmp_path):
    got = _read(tmp_path, "args.json", '{"per_device_train_batch_size": 2}')
    assert got.fields["grad_clip"] is True
    lines = [render(line, "en") for line in got.report()]
    assert any("grad_clip = true" in line and "max_grad_norm not set: 1.0" in line for line in lines)


def test_axolotl_unset_is_not_passed_on_so_trainer_clips(tmp_path):
    yaml = "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nsequence_len: 1024\nmicro_batch_size: 2\n"
    got = _read(tmp_path, "a.yaml", yaml)
    assert got.fields["grad_clip"] is True
    for lang, words in (("en", "axolotl passes max_grad_norm to the Trainer only when set"),
                        ("ru", "axolotl передаёт max_grad_norm в Trainer, только если он задан")):
        assert any(words in render(line, lang) for line in got.report())
    assert _read(tmp_path, "b.yaml", yaml + "max_grad_norm: 0.0\n").fields["grad_clip"] is False


def test_llamafactory_reads_max_grad_norm(tmp_path):
    yaml = ("model_name_or_path: meta-llama/Llama-3.2-1B\nstage: sft\nfinetuning_type: lora\ncutoff_len: 1024\n"
            "template: llama3\n")
    assert _read(tmp_path, "lf.yaml", yaml).fields["grad_clip"] is True
    assert _read(tmp_path, "lf0.yaml", yaml + "max_grad_norm: 0\n").fields["grad_clip"] is False


def test_a_read_config_round_trips_into_the_plan(tmp_path):
    got = _read(tmp_path, "args.json", '{"model_name_or_path": "llama-3.2-1b", "max_grad_norm": 0}')
    assert got.plan().grad_clip is False
