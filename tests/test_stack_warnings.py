"""Warnings for what the software stack does to memory: bitsandbytes leaves fused MoE experts unquantised.

The estimate already counts the experts of a Mixtral QLoRA run in fp32 (transformers 5 fuses each layer's
experts into one Parameter, not nn.Linear, so bitsandbytes skips them and peft's k-bit preparation upcasts
them); these tests check that it also says so, with the numbers, in the estimate, the CLI and the app.
"""

from __future__ import annotations

import html

import pytest

from gpuwork.cli import main
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.sizing import estimate_memory

CODE = "memory.moe_experts_unquantized"
GIB = 2**30


def _expert_params(plan: TrainPlan) -> int:
    spec = resolve(plan).spec
    return sum(lin.count * lin.params for lin in spec.linears if lin.experts > 1)


def test_qlora_on_fused_experts_warns_with_the_unquantised_bytes() -> None:
    plan = TrainPlan(model="mixtral-8x7b", method="qlora")
    est = estimate_memory(plan)
    [warning] = [w for w in est.warnings if w.code == CODE]
    experts = _expert_params(plan)
    assert experts == warning["params"] and 45e9 < experts < 45.2e9  # 32 layers x 8 experts x 3 x 4096 x 14336
    assert warning["expert_bytes"] == 4 * experts and warning["nf4_bytes"] == experts // 2
    # the estimate's weights hold them in fp32: more than the experts' own fp32 bytes, the rest is 4-bit
    assert est.breakdown["weights"] > 4 * experts
    assert render(warning, "en").startswith("bitsandbytes leaves mixtral-8x7b's fused MoE expert tensors "
                                            "unquantised (45.10 B parameters")
    assert "168.0 GiB of weights where 4-bit would take 21.0 GiB" in render(warning, "en")
    assert "168,0 ГиБ весов вместо 21,0 ГиБ в 4 битах" in render(warning, "ru")


@pytest.mark.parametrize("plan", [TrainPlan(model="mixtral-8x7b", method="lora"),
                                  TrainPlan(model="tiny-llama", method="qlora"),
                                  TrainPlan(model="llama-3.1-8b", method="qlora")])
def test_no_warning_where_the_stack_quantises_everything(plan: TrainPlan) -> None:
    assert CODE not in {w.code for w in estimate_memory(plan).warnings}


def test_the_tiny_moe_preset_warns_too() -> None:
    est = estimate_memory(TrainPlan(model="tiny-mixtral", method="qlora", precision="fp32"))
    assert CODE in {w.code for w in est.warnings}


@pytest.mark.parametrize(("lang", "expected"), [("en", "bitsandbytes leaves mixtral-8x7b's fused MoE expert"),
                                                ("ru", "bitsandbytes не квантует объединённые тензоры экспертов")])
def test_the_cli_estimate_prints_the_warning(lang: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "mixtral-8x7b", "--method", "qlora", "--lang", lang]) == 0
    err = capsys.readouterr().err
    assert expected in err and err.count(expected) == 1


def test_the_app_shows_the_warning() -> None:
    from gpuwork.ui.app import build_app

    app = build_app({"model": "mixtral-8x7b", "method": "qlora"})
    assert "fused MoE expert tensors unquantised" in html.unescape(app.sizing.totals.value)
    app.sizing.controls["method"].value = "lora"
    assert "fused MoE expert" not in html.unescape(app.sizing.totals.value)
    app.sizing.controls["method"].value = "qlora"
    app.set_lang("ru")
    assert "не квантует объединённые тензоры экспертов MoE" in html.unescape(app.sizing.totals.value)
