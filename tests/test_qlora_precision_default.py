"""A QLoRA plan whose maker names no precision is bf16-mixed (HF Trainer / TRL with bf16=True, as the config
reader reads them: gpuwork.plan.default_precision), and a pure 16-bit QLoRA plan that ``estimate.ops.fp32_qlora``
prices as the fp32 program says so (``time.fp32_qlora``) wherever time warnings are shown: the sizing tab, the
CLI's plan output, the offers' reasons and the request."""

from __future__ import annotations

import html
import itertools
import json
import re
import subprocess
import sys

import pytest

from gpuwork import TrainPlan
from gpuwork.errors import PlanError
from gpuwork.estimate.ops import fp32_qlora
from gpuwork.estimate.steptime import stack_kernels
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Method, Precision, Stack, default_precision, follow_method, plan_from_choices
from gpuwork.present.messages import render
from gpuwork.present.request import rental_request
from gpuwork.sizing import estimate_time
from gpuwork.ui.share import plan_from_query, plan_query
from gpuwork.ui.sizing import SizingForm

CODE = "time.fp32_qlora"
SMALL = TrainPlan(model="llama-3.2-1b", method="qlora", precision="bf16", seq_len=512)
CYRILLIC = re.compile("[а-яА-Я]")


def _codes(plan: TrainPlan, gpu: str = "a100_80_sxm") -> list[str]:
    return [w.code for w in estimate_time(plan, gpu).warnings]


def _applies(plan: TrainPlan) -> bool:
    return fp32_qlora(plan, stack_kernels(resolve(plan).rates.stacks[plan.stack]))


@pytest.mark.parametrize(("method", "precision", "upcast"), list(itertools.product(
    ["qlora", "lora"], ["bf16", "fp16", "bf16-mixed", "fp16-mixed", "fp32"], [True, False])))
def test_the_warning_comes_exactly_when_the_step_is_priced_in_fp32(method, precision, upcast):
    plan = SMALL.replace(method=method, precision=precision, kbit_upcast=upcast)
    codes = _codes(plan)
    assert (CODE in codes) == _applies(plan)
    # the rule itself, so that the comparison above is not between two things that never happen
    assert _applies(plan) == (method == "qlora" and precision in ("bf16", "fp16") and upcast)


@pytest.mark.parametrize("stack", [s.value for s in Stack])
def test_only_a_stack_with_peft_adapters_and_no_compiler_gets_the_warning(stack):
    plan = SMALL.replace(stack=stack)
    kernels = stack_kernels(resolve(plan).rates.stacks[plan.stack])
    assert (CODE in _codes(plan)) == (kernels.adapters_fp32 and not kernels.fuse_elementwise)
    if stack in ("hf-trainer", "hf-liger"):  # peft's own adapters, eager
        assert CODE in _codes(plan)
    if stack in ("unsloth", "torch-compile"):  # its own fp16/bf16 LoRA kernels; a compiler's fused casts
        assert CODE not in _codes(plan)


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_warning_says_what_runs_in_fp32_why_and_the_fix(lang):
    (warning,) = [w for w in estimate_time(SMALL.replace(precision="fp16"), "a100_80_sxm").warnings if w.code == CODE]
    text = render(warning, lang)
    assert "{" not in text and "Traceback" not in text
    for word in ("fp32", "lm_head", "kbit_upcast", "HF Trainer", "fp16-mixed", "autocast"):
        assert word in text
    assert "bf16" not in text  # the fix names the plan's own 16-bit type
    assert ("fp16=True" in text) == (lang == "en")
    assert bool(CYRILLIC.search(text)) == (lang == "ru")


def test_default_precision_is_bf16_mixed_for_qlora_only():
    assert default_precision("qlora") is Precision.BF16_MIXED
    for method in Method:
        if method is not Method.QLORA:
            assert default_precision(method) is TrainPlan().precision
    assert plan_from_choices({"method": "qlora"}).precision is Precision.BF16_MIXED
    assert plan_from_choices({"method": "qlora", "precision": "bf16"}).precision is Precision.BF16
    assert plan_from_choices({"method": "full"}).precision is TrainPlan().precision
    # TrainPlan itself keeps one default for every method (a program builds what it says)
    assert TrainPlan(method="qlora").precision is Precision.BF16
    with pytest.raises(PlanError) as info:
        plan_from_choices({"method": "qlorra"})
    assert info.value.field == "method" and "qlora" in str(info.value)
    # a precision somebody chose stays when the method changes; the old method's default follows the new one
    assert follow_method("bf16", "lora", "qlora") is Precision.BF16_MIXED
    assert follow_method("bf16-mixed", "qlora", "full") is Precision.BF16
    assert follow_method("fp32", "lora", "qlora") is Precision.FP32
    assert follow_method("bf16", "qlora", "lora") is Precision.BF16


def test_the_sizing_tab_follows_the_method_and_shows_the_warning():
    form = SizingForm({"model": "llama-3.2-1b", "seq_len": 512}, lang="ru")
    assert form.plan.precision is Precision.BF16 and form.plan.method is Method.LORA
    form.controls["method"].value = "qlora"
    assert form.controls["precision"].value == "bf16-mixed" and form.plan.precision is Precision.BF16_MIXED
    assert "kbit_upcast" not in html.unescape(form.details.value)
    form.controls["precision"].value = "bf16"  # the user's choice: the fp32 program, said in the details
    assert form.plan.precision is Precision.BF16
    assert "kbit_upcast" in html.unescape(form.details.value) and "выключите kbit_upcast" in \
        html.unescape(form.details.value)
    form.set_lang("en")
    assert "turn kbit_upcast off" in html.unescape(form.details.value)
    form.controls["method"].value = "full"  # a chosen precision stays
    assert form.plan.precision is Precision.BF16
    form.controls["precision"].value = "fp32"
    form.controls["method"].value = "qlora"
    assert form.plan.precision is Precision.FP32
    assert "kbit_upcast off" not in html.unescape(form.details.value)
    assert "Traceback" not in form.message.value


def test_a_form_link_or_dict_without_a_precision_gets_the_methods():
    assert SizingForm({"model": "llama-3.2-1b", "method": "qlora"}).plan.precision is Precision.BF16_MIXED
    assert SizingForm.from_query("model=llama-3.2-1b&method=qlora").plan.precision is Precision.BF16_MIXED
    pure = TrainPlan(model="llama-3.2-1b", method="qlora", precision="bf16")
    assert "precision=bf16" in plan_query(pure)
    assert plan_from_query(plan_query(pure)) == pure
    mixed = pure.replace(precision="bf16-mixed")
    assert "precision" not in plan_query(mixed) and plan_from_query(plan_query(mixed)) == mixed
    full_mixed = TrainPlan(method="full", precision="bf16-mixed")
    assert plan_from_query(plan_query(full_mixed)) == full_mixed
    # over a base plan the precision follows the method as the form's control does
    assert plan_from_query("method=qlora", base=TrainPlan()).precision is Precision.BF16_MIXED
    assert plan_from_query("method=qlora", base=TrainPlan(precision="fp16")).precision is Precision.FP16


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuwork", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def test_the_cli_defaults_qlora_to_bf16_mixed_and_warns_for_pure_bf16(tmp_path):
    done = _cli("plan", "--model", "llama-3.2-1b", "--method", "qlora", "--seq-len", "512", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["plan"]["precision"] == "bf16-mixed"
    assert CODE not in [w["code"] for w in out["time"]["warnings"]]
    done = _cli("plan", "--model", "llama-3.2-1b", "--method", "qlora", "--seq-len", "512", "--precision", "bf16",
                "--lang", "ru")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "выключите kbit_upcast" in done.stdout and "QLoRA с чистой точностью bf16" in done.stdout
    # a plan file that names no precision gets the method's; one that names it keeps it
    (tmp_path / "q.json").write_text(json.dumps({"model": "llama-3.2-1b", "method": "qlora"}))
    (tmp_path / "p.json").write_text(json.dumps({"model": "llama-3.2-1b", "method": "qlora", "precision": "bf16"}))
    for name, expected in (("q.json", "bf16-mixed"), ("p.json", "bf16")):
        done = _cli("estimate", "--plan", str(tmp_path / name), "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["plan"]["precision"] == expected
    # a --method flag over a plan file's other method: the file named no precision, so QLoRA's
    (tmp_path / "l.json").write_text(json.dumps({"model": "llama-3.2-1b", "method": "lora"}))
    done = _cli("estimate", "--plan", str(tmp_path / "l.json"), "--method", "qlora", "--json", cwd=tmp_path)
    assert json.loads(done.stdout)["plan"]["precision"] == "bf16-mixed"


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_request_names_the_fp32_program(lang):
    pure = rental_request(SMALL, lang=lang)
    text = render(next(w for w in estimate_time(SMALL, "a100_80_sxm").warnings if w.code == CODE), lang)
    assert text.split(":")[0] in pure.text
    mixed = rental_request(SMALL.replace(precision="bf16-mixed"), lang=lang)
    assert text.split(":")[0] not in mixed.text
