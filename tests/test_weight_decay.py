"""Weight decay as a plan field (TrainPlan.weight_decay, None: the stack's default) and torch AdamW's decay pass
(estimate.optimizer_ops; docs/kernels.md "Weight decay: the extra pass"): the pass is checked against what a real
torch step dispatches on the CPU, the defaults against the installed libraries' signatures."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import record_aten_calls

from gpuwork.errors import PlanError
from gpuwork.estimate.adamw_passes import mta_launches
from gpuwork.estimate.ops import Phase, param_tensors, step_ops
from gpuwork.facts.configs import import_configs
from gpuwork.facts.model import get_spec
from gpuwork.facts.spec import count_params
from gpuwork.plan import OPTIMIZER_WEIGHT_DECAY, TRAINER_WEIGHT_DECAY, Optimizer, Stack, TrainPlan

ROOT = Path(__file__).resolve().parents[1]


def _optimizer(plan: TrainPlan):
    return {o.name: o for o in step_ops(plan, get_spec(plan.model)) if o.phase is Phase.OPTIMIZER}


def _recorded_step(torch, **kwargs):
    """The aten calls of a second AdamW step (the first creates the states) on a small model."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    model(torch.randn(2, 16)).sum().backward()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **kwargs)
    opt.step()
    calls = record_aten_calls(opt.step)
    params = {p.data_ptr() for p in model.parameters()}
    return calls, params


def _names(calls):
    return [f.overloadpacket.__name__ for f, _ in calls if not str(f).startswith("profiler")]


def test_torch_adamw_runs_one_more_pass_over_the_weights_with_decay_except_fused():
    torch = pytest.importorskip("torch")
    for impl in ({"foreach": True}, {"foreach": False}, {"fused": True}):
        off, _ = _recorded_step(torch, weight_decay=0.0, **impl)
        on, params = _recorded_step(torch, weight_decay=0.01, **impl)
        extra = list(_names(on))
        for name in _names(off):
            extra.remove(name)
        if "fused" in impl:
            assert extra == []  # _fused_adamw_ takes weight_decay as an argument
        elif impl["foreach"]:
            assert extra == ["_foreach_mul_"]  # one depth-1 pass: the weights read and written in place
            mul = next(args for f, args in on if f.overloadpacket.__name__ == "_foreach_mul_"
                       and {t.data_ptr() for t in args[0]} == params)
            assert len(mul[0]) == len(params)
        else:
            assert extra == ["mul_"] * len(params)  # param.mul_(1 - lr * weight_decay), one kernel per tensor


def test_the_decay_pass_moves_the_weights_twice_once_per_tensor_or_per_foreach_launch():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", precision="bf16", weight_decay=0.1)
    spec = get_spec(plan.model)
    n = count_params(spec, plan).trainable
    tensors = param_tensors(spec, plan, n)
    decay = _optimizer(plan)["AdamW weight decay"]
    assert decay.bytes == pytest.approx(n * 2 * 2)  # bf16 weights read and written
    assert decay.launches == mta_launches(tensors, n, 1) and decay.mta_split
    loop = _optimizer(plan.replace(optimizer_impl="for-loop"))["AdamW weight decay"]
    assert loop.launches == tensors and loop.bytes == pytest.approx(n * 2 * 2) and not loop.mta_split
    fp32 = _optimizer(plan.replace(precision="bf16-mixed"))["AdamW weight decay"]
    assert fp32.bytes == pytest.approx(n * 4 * 2)  # fp32 masters: 8 bytes per parameter


def test_no_decay_pass_at_zero_under_fused_or_out_of_place_and_the_rest_of_the_step_unchanged():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", precision="bf16", weight_decay=0.1)
    for impl in ("foreach", "for-loop", "fused", "out-of-place"):
        on, off = _optimizer(plan.replace(optimizer_impl=impl)), _optimizer(plan.replace(optimizer_impl=impl,
                                                                                         weight_decay=0.0))
        assert "AdamW weight decay" not in off
        assert ("AdamW weight decay" in on) is (impl in ("foreach", "for-loop"))
        assert {k: v for k, v in on.items() if k != "AdamW weight decay"} == off
    # 8-bit AdamW decays inside its kernel (bitsandbytes optimizer_update_8bit_blockwise(..., weight_decay, ...))
    eight = plan.replace(optimizer="adamw-8bit")
    assert _optimizer(eight) == _optimizer(eight.replace(weight_decay=0.0))


def test_an_unstated_weight_decay_is_the_stacks_default_read_from_the_libraries():
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    assert transformers.TrainingArguments.__dataclass_fields__["weight_decay"].default == TRAINER_WEIGHT_DECAY
    assert inspect.signature(torch.optim.AdamW).parameters["weight_decay"].default == \
        OPTIMIZER_WEIGHT_DECAY[Optimizer.ADAMW]
    assert inspect.signature(torch.optim.SGD).parameters["weight_decay"].default == OPTIMIZER_WEIGHT_DECAY[Optimizer.SGD]
    defaults = json.loads((ROOT / "gpuwork/facts/data/config_defaults.json").read_text())
    assert defaults["classes"]["transformers.TrainingArguments"]["fields"]["weight_decay"] == TRAINER_WEIGHT_DECAY
    assert TrainPlan().weight_decay is None and TrainPlan().weight_decay_in_effect == 0.0  # the HF Trainer's
    loop = TrainPlan(stack="torch-loop")
    assert loop.weight_decay_in_effect == 0.01 and loop.replace(optimizer="sgd").weight_decay_in_effect == 0.0
    assert loop.replace(weight_decay=0.0).weight_decay_in_effect == 0.0  # a stated value wins
    assert TrainPlan(stack=Stack.UNSLOTH, weight_decay=0.1).weight_decay_in_effect == 0.1
    # the plain torch loop prices the pass by default, the Trainer does not
    full = TrainPlan(model="qwen2.5-0.5b", method="full", precision="bf16")
    assert "AdamW weight decay" not in _optimizer(full)
    assert "AdamW weight decay" in _optimizer(full.replace(stack="torch-loop"))


@pytest.mark.parametrize("value", [-0.01, float("nan"), float("inf"), True, "0.1", 1e4])
def test_a_bad_weight_decay_is_refused_naming_the_field_and_the_fix(value):
    with pytest.raises(PlanError) as caught:
        TrainPlan(weight_decay=value)
    assert caught.value.field == "weight_decay"
    en, ru = caught.value.text("en"), caught.value.text("ru")
    assert "weight_decay=" in en and "from 0 to 1000" in en and "framework's default" in en
    assert "от 0 до 1000" in ru and "по умолчанию" in ru


def test_config_readers_fill_weight_decay(tmp_path: Path) -> None:
    args = tmp_path / "training_args.json"
    args.write_text(json.dumps({"per_device_train_batch_size": 2, "optim": "adamw_torch", "weight_decay": 0.1}))
    assert import_configs([args]).fields["weight_decay"] == 0.1
    args.write_text(json.dumps({"per_device_train_batch_size": 2, "optim": "adamw_torch"}))
    assert import_configs([args]).fields["weight_decay"] == TRAINER_WEIGHT_DECAY  # the Trainer's default
    lf = tmp_path / "lf.yaml"
    lf.write_text("model_name_or_path: meta-llama/Llama-3.2-1B\nstage: sft\nfinetuning_type: lora\n"
                  "per_device_train_batch_size: 1\nweight_decay: 0.05\n")
    assert import_configs([lf]).fields["weight_decay"] == 0.05
    ax = tmp_path / "axolotl.yaml"
    ax.write_text("base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nmicro_batch_size: 1\nsequence_len: 512\n"
                  "weight_decay: 0.02\n")
    assert import_configs([ax]).fields["weight_decay"] == 0.02


def test_gpuwork_estimate_from_a_config_prices_its_weight_decay(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    step = {}
    for wd in (0.0, 0.1):
        args = tmp_path / f"args_{wd}.json"
        args.write_text(json.dumps({"per_device_train_batch_size": 1, "optim": "adamw_torch", "bf16": True,
                                    "weight_decay": wd}))
        done = subprocess.run([sys.executable, "-m", "gpuwork", "plan", "--from", str(args), "--model",
                               "qwen2.5-0.5b", "--method", "full", "--json"], capture_output=True, text=True,
                              env=env, cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)["plan"]
        assert plan["weight_decay"] == wd and f"weight_decay = {wd}" in done.stderr
        ops = _optimizer(TrainPlan.from_dict(plan))
        step[wd] = ops.get("AdamW weight decay")
    assert step[0.0] is None and step[0.1] is not None and step[0.1].bytes > 0


def test_the_trial_builds_its_optimizer_with_the_plans_weight_decay_in_effect():
    pytest.importorskip("torch")
    import types

    import torch

    from gpuwork.measure.cpu_rates import cpu_plan
    from gpuwork.measure.runtime import _make_optimizer

    setup = types.SimpleNamespace(lr=1e-3)
    for plan, expected in ((TrainPlan(), 0.0), (TrainPlan(stack="torch-loop"), 0.01),
                           (TrainPlan(weight_decay=0.1), 0.1), (TrainPlan(optimizer="sgd", weight_decay=0.2), 0.2)):
        opt = _make_optimizer(plan, [torch.nn.Parameter(torch.ones(4))], setup)
        assert opt.param_groups[0]["weight_decay"] == expected
        # the CPU pricing runs the trial's loop as the eager hf-trainer stack: the decay stays the run's
        assert cpu_plan(plan).weight_decay_in_effect == expected


def test_the_plan_report_and_the_flag_show_the_weight_decay_priced(capsys) -> None:
    from gpuwork.cli import main

    base = ["plan", "--model", "qwen2.5-0.5b", "--method", "full", "--offers", "1"]
    assert main([*base, "--stack", "torch-loop"]) == 0
    assert "weight decay 0.01, the stack's default" in capsys.readouterr().out
    assert main([*base, "--weight-decay", "0.1", "--lang", "ru"]) == 0
    assert "затухание весов 0.1 (" in capsys.readouterr().out
    assert main(base) == 0  # the Trainer's 0, unstated: nothing to say
    assert "weight decay" not in capsys.readouterr().out
